/*
 * sum.c — codelet, perf model and submit helper of the elementwise sum of k operands (1 <= k <=
 * 64), e.g. the reconstruction d = sum of the parties' masked shares. StarPU 1.3 here has
 * STARPU_NMAXBUFS = 8, so the codelet has STARPU_VARIABLE_NBUFFERS and the task carries its
 * handles in dyn_handles via STARPU_DATA_MODE_ARRAY. CPU body in cpu/sum.c.
 */
#include "config.h"

#include "codelets/codelets_internal.h"
#ifdef VEIL_USE_CUDA
#include "codelets/cuda/cuda_internal.h"
#endif

#include "base/base_internal.h"
#include "base/trace.h"
#include "net/idle.h"

#include <string.h>

static struct starpu_perfmodel sum_model = {
    .type = STARPU_HISTORY_BASED, .symbol = "veil_sum", .size_base = veil_codelet_size_base};

/* The CUDA body (codelets/cuda/) is registered when the StarPU found has CUDA (VEIL_USE_CUDA). */
struct starpu_codelet veil_sum_cl = {
    .cpu_funcs = {veil_sum_cpu},
    .cpu_funcs_name = {"veil_sum_cpu"},
#ifdef VEIL_USE_CUDA
    .cuda_funcs = {veil_sum_cuda},
    .cuda_flags = {STARPU_CUDA_ASYNC},
#endif
    .nbuffers = STARPU_VARIABLE_NBUFFERS,
    .model = &sum_model,
    .name = "veil_sum",
};

static struct starpu_perfmodel xor_sum_model = {
    .type = STARPU_HISTORY_BASED, .symbol = "veil_xor_sum", .size_base = veil_codelet_size_base};

struct starpu_codelet veil_xor_sum_cl = {
    .cpu_funcs = {veil_xor_sum_cpu},
    .cpu_funcs_name = {"veil_xor_sum_cpu"},
#ifdef VEIL_USE_CUDA
    .cuda_funcs = {veil_xor_sum_cuda},
    .cuda_flags = {STARPU_CUDA_ASYNC},
#endif
    .nbuffers = STARPU_VARIABLE_NBUFFERS,
    .model = &xor_sum_model,
    .name = "veil_xor_sum",
};

/* Validates k operands against out and submits cl (sum or XOR-sum) over them. */
static int submit_k(struct starpu_codelet *cl, const char *op, const starpu_data_handle_t *in,
                    int k, starpu_data_handle_t out, int priority)
{
    struct starpu_data_descr descr[VEIL_SUM_MAX_OPERANDS + 1];
    size_t n, ni;
    int rc;
    char what[48];

    if (in == NULL)
        return veil_error(VEIL_ERR_INVAL, "%s: operand array is NULL", op);
    if (k < 1 || k > VEIL_SUM_MAX_OPERANDS)
        return veil_error(VEIL_ERR_INVAL, "%s: %d operands, expected 1 to %d", op, k,
                          VEIL_SUM_MAX_OPERANDS);
    snprintf(what, sizeof(what), "%s: output", op);
    if ((rc = veil_codelet_check_vector(out, what, &n)) != VEIL_OK)
        return rc;
    descr[0].handle = out;
    descr[0].mode = STARPU_W;
    for (int i = 0; i < k; i++) {
        snprintf(what, sizeof(what), "%s: operand %d", op, i);
        if ((rc = veil_codelet_check_vector(in[i], what, &ni)) != VEIL_OK)
            return rc;
        if (in[i] == out)
            return veil_error(VEIL_ERR_INVAL, "%s: operand %d is the output handle", op, i);
        if (ni != n)
            return veil_error(VEIL_ERR_SHAPE, "%s: operand %d has %zu elements, output %zu", op, i,
                              ni, n);
        descr[i + 1].handle = in[i];
        descr[i + 1].mode = STARPU_R;
    }
    rc = starpu_task_insert(cl, STARPU_DATA_MODE_ARRAY, descr, k + 1, STARPU_PRIORITY, priority,
                            STARPU_EXECUTE_ON_WORKER, veil_place_worker(out), VEIL_TRACE_TASK, 0);
    veil_net_idle_kick(); /* it may be ready: resume paused workers */
    if (rc != 0)
        return veil_error(VEIL_ERR_STARPU, "%s: starpu_task_insert failed (%s)", op, strerror(-rc));
    return VEIL_OK;
}

int veil_task_sum(const starpu_data_handle_t *in, int k, starpu_data_handle_t out, int priority)
{
    return submit_k(&veil_sum_cl, "sum", in, k, out, priority);
}

int veil_task_xor_sum(const starpu_data_handle_t *in, int k, starpu_data_handle_t out, int priority)
{
    return submit_k(&veil_xor_sum_cl, "xor_sum", in, k, out, priority);
}

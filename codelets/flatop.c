/*
 * flatop.c — codelet, perf model and submit helper of the flat relayout operations (contract in
 * flatop_internal.h). The handle lists can be long (one handle per tile), so the codelet has
 * STARPU_VARIABLE_NBUFFERS and the task carries its handles in dyn_handles. CPU body in
 * cpu/flatop.c, CUDA body in cuda/flatop.cu (registered with VEIL_USE_CUDA).
 */
#include "config.h"

#include "codelets/flatop_internal.h"

#include "base/base_internal.h"
#include "base/trace.h"
#include "codelets/codelets_internal.h"
#include "codelets/cuda/cuda_internal.h"
#include "net/idle.h"

#include <stdlib.h>
#include <string.h>

static struct starpu_perfmodel flatop_model = {
    .type = STARPU_HISTORY_BASED, .symbol = "veil_flatop", .size_base = veil_codelet_size_base};

struct starpu_codelet veil_flatop_cl = {
    .cpu_funcs = {veil_flatop_cpu},
    .cpu_funcs_name = {"veil_flatop_cpu"},
#ifdef VEIL_USE_CUDA
    .cuda_funcs = {veil_flatop_cuda},
    .cuda_flags = {STARPU_CUDA_ASYNC},
#endif
    .nbuffers = STARPU_VARIABLE_NBUFFERS,
    .model = &flatop_model,
    .name = "veil_flatop",
};

static int total_len(const starpu_data_handle_t *h, int n, const char *what, size_t *len)
{
    *len = 0;
    for (int i = 0; i < n; i++) {
        size_t ni;
        int rc = veil_codelet_check_vector(h[i], what, &ni);
        if (rc != VEIL_OK)
            return rc;
        *len += ni;
    }
    return VEIL_OK;
}

int veil_task_flatop(const struct veil_flatop_args *a, const starpu_data_handle_t *out,
                     const starpu_data_handle_t *in, int priority)
{
    size_t lout, lin;
    int rc;
    if (!a || !out || !in || a->nout < 1 || a->nin < 1)
        return veil_error(VEIL_ERR_INVAL, "flatop: NULL argument or empty handle list");
    if (a->kind < 0 || a->kind >= VEIL_FLATOP_KIND_COUNT)
        return veil_error(VEIL_ERR_INVAL, "flatop: unknown operation %d", a->kind);
    if ((rc = total_len(out, a->nout, "flatop: output", &lout)) != VEIL_OK ||
        (rc = total_len(in, a->nin, "flatop: input", &lin)) != VEIL_OK)
        return rc;
    if (a->kind != VEIL_FLATOP_COPY && a->k < 1)
        return veil_error(VEIL_ERR_INVAL, "flatop: k must be at least 1");
    if ((a->kind == VEIL_FLATOP_REPLICATE || a->kind == VEIL_FLATOP_WSUM ||
         a->kind == VEIL_FLATOP_INTERLEAVE) &&
        a->k > VEIL_FLATOP_MAX_COPIES)
        return veil_error(VEIL_ERR_INVAL, "flatop: %llu copies, at most %d",
                          (unsigned long long)a->k, VEIL_FLATOP_MAX_COPIES);
    int ok;
    uint64_t row = 0;
    switch (a->kind) {
    case VEIL_FLATOP_COPY:
        ok = lout == lin;
        break;
    case VEIL_FLATOP_TILE:
        ok = lin > 0 && lout % (a->k * lin) == 0;
        break;
    case VEIL_FLATOP_FOLD:
        ok = lout > 0 && lin % (a->k * lout) == 0;
        break;
    case VEIL_FLATOP_INTERLEAVE:
        for (uint64_t p = 0; p < a->k; p++)
            row += a->c[p];
        ok = row > 0 && lout == lin && lin % row == 0;
        break;
    case VEIL_FLATOP_SLICE:
        ok = a->c[0] > 0 && a->c[1] + a->k <= a->c[0] && lin % a->c[0] == 0 &&
             lout == lin / a->c[0] * a->k;
        break;
    case VEIL_FLATOP_ROWSUM:
    case VEIL_FLATOP_WSUM:
        ok = lin / a->k == lout && lin % a->k == 0;
        break;
    default:
        ok = lout / a->k == lin && lout % a->k == 0;
        break;
    }
    if (!ok)
        return veil_error(VEIL_ERR_SHAPE,
                          "flatop: %zu output and %zu input words do not fit "
                          "operation %d with k = %llu",
                          lout, lin, a->kind, (unsigned long long)a->k);
    for (int i = 0; i < a->nout; i++)
        for (int j = 0; j < a->nin; j++)
            if (out[i] == in[j])
                return veil_error(VEIL_ERR_INVAL, "flatop: a handle is both input and output");
    struct starpu_data_descr *d = malloc(sizeof *d * (size_t)(a->nout + a->nin));
    if (!d)
        return veil_error(VEIL_ERR_NOMEM, "flatop: out of memory");
    for (int i = 0; i < a->nout; i++) {
        d[i].handle = out[i];
        d[i].mode = STARPU_W;
    }
    for (int j = 0; j < a->nin; j++) {
        d[a->nout + j].handle = in[j];
        d[a->nout + j].mode = STARPU_R;
    }
    rc = starpu_task_insert(&veil_flatop_cl, STARPU_DATA_MODE_ARRAY, d, a->nout + a->nin,
                            STARPU_VALUE, a, sizeof *a, STARPU_PRIORITY, priority,
                            STARPU_EXECUTE_ON_WORKER, veil_place_worker(out[0]), VEIL_TRACE_TASK, 0);
    veil_net_idle_kick(); /* it may be ready: resume paused workers */
    free(d);
    if (rc != 0)
        return veil_error(VEIL_ERR_STARPU, "flatop: starpu_task_insert failed (%s)", strerror(-rc));
    return VEIL_OK;
}

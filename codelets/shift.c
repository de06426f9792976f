/*
 * shift.c — codelets, perf models and submit helpers of the shifts by a public amount k in
 * [0, 63]: logical left, logical right, arithmetic right. CPU bodies are in cpu/elementwise.c,
 * the element math in elementwise_common.h.
 */
#include "config.h"

#include "codelets/codelets_internal.h"
#ifdef VEIL_USE_CUDA
#include "codelets/cuda/cuda_internal.h"
#endif

#include "base/base_internal.h"

static struct starpu_perfmodel shl_model = {
    .type = STARPU_HISTORY_BASED, .symbol = "veil_shl", .size_base = veil_codelet_size_base};
static struct starpu_perfmodel shr_model = {
    .type = STARPU_HISTORY_BASED, .symbol = "veil_shr", .size_base = veil_codelet_size_base};
static struct starpu_perfmodel sar_model = {
    .type = STARPU_HISTORY_BASED, .symbol = "veil_sar", .size_base = veil_codelet_size_base};

/* CUDA bodies (codelets/cuda/) are registered when the StarPU found has CUDA (VEIL_USE_CUDA). */
struct starpu_codelet veil_shl_cl = {
    .cpu_funcs = {veil_shl_cpu},
    .cpu_funcs_name = {"veil_shl_cpu"},
#ifdef VEIL_USE_CUDA
    .cuda_funcs = {veil_shl_cuda},
    .cuda_flags = {STARPU_CUDA_ASYNC},
#endif
    .nbuffers = 2,
    .modes = {STARPU_R, STARPU_W},
    .model = &shl_model,
    .name = "veil_shl",
};

struct starpu_codelet veil_shr_cl = {
    .cpu_funcs = {veil_shr_cpu},
    .cpu_funcs_name = {"veil_shr_cpu"},
#ifdef VEIL_USE_CUDA
    .cuda_funcs = {veil_shr_cuda},
    .cuda_flags = {STARPU_CUDA_ASYNC},
#endif
    .nbuffers = 2,
    .modes = {STARPU_R, STARPU_W},
    .model = &shr_model,
    .name = "veil_shr",
};

struct starpu_codelet veil_sar_cl = {
    .cpu_funcs = {veil_sar_cpu},
    .cpu_funcs_name = {"veil_sar_cpu"},
#ifdef VEIL_USE_CUDA
    .cuda_funcs = {veil_sar_cuda},
    .cuda_flags = {STARPU_CUDA_ASYNC},
#endif
    .nbuffers = 2,
    .modes = {STARPU_R, STARPU_W},
    .model = &sar_model,
    .name = "veil_sar",
};

/* A shift by 64 or more is undefined in C and meaningless on one word: refuse it here. */
static int submit_shift(struct starpu_codelet *cl, const char *name, starpu_data_handle_t a,
                        unsigned k, starpu_data_handle_t out, int priority)
{
    if (k > 63)
        return veil_error(VEIL_ERR_INVAL, "%s: shift amount %u is out of range [0, 63]", name, k);
    return veil_codelet_submit_elementwise(cl, name, a, NULL, out, 1, k, priority);
}

int veil_task_shl(starpu_data_handle_t a, unsigned k, starpu_data_handle_t out, int priority)
{
    return submit_shift(&veil_shl_cl, "shl", a, k, out, priority);
}

int veil_task_shr(starpu_data_handle_t a, unsigned k, starpu_data_handle_t out, int priority)
{
    return submit_shift(&veil_shr_cl, "shr", a, k, out, priority);
}

int veil_task_sar(starpu_data_handle_t a, unsigned k, starpu_data_handle_t out, int priority)
{
    return submit_shift(&veil_sar_cl, "sar", a, k, out, priority);
}

/*
 * bitwise.c — codelets, perf models and submit helpers of the bitwise operations on 64-bit words
 * (binary shares): xor, and, not, and xor/and with a public word mask. CPU bodies are in
 * cpu/elementwise.c, the element math in elementwise_common.h.
 */
#include "config.h"

#include "codelets/codelets_internal.h"
#ifdef VEIL_USE_CUDA
#include "codelets/cuda/cuda_internal.h"
#endif

static struct starpu_perfmodel xor_model = {
    .type = STARPU_HISTORY_BASED, .symbol = "veil_xor", .size_base = veil_codelet_size_base};
static struct starpu_perfmodel and_model = {
    .type = STARPU_HISTORY_BASED, .symbol = "veil_and", .size_base = veil_codelet_size_base};
static struct starpu_perfmodel not_model = {
    .type = STARPU_HISTORY_BASED, .symbol = "veil_not", .size_base = veil_codelet_size_base};
static struct starpu_perfmodel xor_mask_model = {
    .type = STARPU_HISTORY_BASED, .symbol = "veil_xor_mask", .size_base = veil_codelet_size_base};
static struct starpu_perfmodel and_mask_model = {
    .type = STARPU_HISTORY_BASED, .symbol = "veil_and_mask", .size_base = veil_codelet_size_base};

/* CUDA bodies (codelets/cuda/) are registered when the StarPU found has CUDA (VEIL_USE_CUDA). */
struct starpu_codelet veil_xor_cl = {
    .cpu_funcs = {veil_xor_cpu},
    .cpu_funcs_name = {"veil_xor_cpu"},
#ifdef VEIL_USE_CUDA
    .cuda_funcs = {veil_xor_cuda},
    .cuda_flags = {STARPU_CUDA_ASYNC},
#endif
    .nbuffers = 3,
    .modes = {STARPU_R, STARPU_R, STARPU_W},
    .model = &xor_model,
    .name = "veil_xor",
};

struct starpu_codelet veil_and_cl = {
    .cpu_funcs = {veil_and_cpu},
    .cpu_funcs_name = {"veil_and_cpu"},
#ifdef VEIL_USE_CUDA
    .cuda_funcs = {veil_and_cuda},
    .cuda_flags = {STARPU_CUDA_ASYNC},
#endif
    .nbuffers = 3,
    .modes = {STARPU_R, STARPU_R, STARPU_W},
    .model = &and_model,
    .name = "veil_and",
};

struct starpu_codelet veil_not_cl = {
    .cpu_funcs = {veil_not_cpu},
    .cpu_funcs_name = {"veil_not_cpu"},
#ifdef VEIL_USE_CUDA
    .cuda_funcs = {veil_not_cuda},
    .cuda_flags = {STARPU_CUDA_ASYNC},
#endif
    .nbuffers = 2,
    .modes = {STARPU_R, STARPU_W},
    .model = &not_model,
    .name = "veil_not",
};

struct starpu_codelet veil_xor_mask_cl = {
    .cpu_funcs = {veil_xor_mask_cpu},
    .cpu_funcs_name = {"veil_xor_mask_cpu"},
#ifdef VEIL_USE_CUDA
    .cuda_funcs = {veil_xor_mask_cuda},
    .cuda_flags = {STARPU_CUDA_ASYNC},
#endif
    .nbuffers = 2,
    .modes = {STARPU_R, STARPU_W},
    .model = &xor_mask_model,
    .name = "veil_xor_mask",
};

struct starpu_codelet veil_and_mask_cl = {
    .cpu_funcs = {veil_and_mask_cpu},
    .cpu_funcs_name = {"veil_and_mask_cpu"},
#ifdef VEIL_USE_CUDA
    .cuda_funcs = {veil_and_mask_cuda},
    .cuda_flags = {STARPU_CUDA_ASYNC},
#endif
    .nbuffers = 2,
    .modes = {STARPU_R, STARPU_W},
    .model = &and_mask_model,
    .name = "veil_and_mask",
};

int veil_task_xor(starpu_data_handle_t a, starpu_data_handle_t b, starpu_data_handle_t out,
                  int priority)
{
    return veil_codelet_submit_elementwise(&veil_xor_cl, "xor", a, b, out, 0, 0, priority);
}

int veil_task_and(starpu_data_handle_t a, starpu_data_handle_t b, starpu_data_handle_t out,
                  int priority)
{
    return veil_codelet_submit_elementwise(&veil_and_cl, "and", a, b, out, 0, 0, priority);
}

int veil_task_not(starpu_data_handle_t a, starpu_data_handle_t out, int priority)
{
    return veil_codelet_submit_elementwise(&veil_not_cl, "not", a, NULL, out, 0, 0, priority);
}

int veil_task_xor_mask(starpu_data_handle_t a, uint64_t mask, starpu_data_handle_t out,
                       int priority)
{
    return veil_codelet_submit_elementwise(&veil_xor_mask_cl, "xor_mask", a, NULL, out, 1, mask,
                                           priority);
}

int veil_task_and_mask(starpu_data_handle_t a, uint64_t mask, starpu_data_handle_t out,
                       int priority)
{
    return veil_codelet_submit_elementwise(&veil_and_mask_cl, "and_mask", a, NULL, out, 1, mask,
                                           priority);
}

/*
 * ring_arith.c — codelets, perf models and submit helpers of the elementwise ring operations
 * over Z_2^64: add, sub, neg, elementwise product, product by a public scalar, and addition of
 * a public scalar. CPU bodies are in cpu/elementwise.c, the element math in
 * elementwise_common.h.
 */
#include "config.h"

#include "codelets/codelets_internal.h"
#ifdef VEIL_USE_CUDA
#include "codelets/cuda/cuda_internal.h"
#endif

static struct starpu_perfmodel add_model = {
    .type = STARPU_HISTORY_BASED, .symbol = "veil_add", .size_base = veil_codelet_size_base};
static struct starpu_perfmodel sub_model = {
    .type = STARPU_HISTORY_BASED, .symbol = "veil_sub", .size_base = veil_codelet_size_base};
static struct starpu_perfmodel neg_model = {
    .type = STARPU_HISTORY_BASED, .symbol = "veil_neg", .size_base = veil_codelet_size_base};
static struct starpu_perfmodel mul_model = {
    .type = STARPU_HISTORY_BASED, .symbol = "veil_mul", .size_base = veil_codelet_size_base};
static struct starpu_perfmodel mul_scalar_model = {
    .type = STARPU_HISTORY_BASED, .symbol = "veil_mul_scalar", .size_base = veil_codelet_size_base};
static struct starpu_perfmodel add_scalar_model = {
    .type = STARPU_HISTORY_BASED, .symbol = "veil_add_scalar", .size_base = veil_codelet_size_base};

/* CUDA bodies (codelets/cuda/) are registered when the StarPU found has CUDA (VEIL_USE_CUDA). */
struct starpu_codelet veil_add_cl = {
    .cpu_funcs = {veil_add_cpu},
    .cpu_funcs_name = {"veil_add_cpu"},
#ifdef VEIL_USE_CUDA
    .cuda_funcs = {veil_add_cuda},
    .cuda_flags = {STARPU_CUDA_ASYNC},
#endif
    .nbuffers = 3,
    .modes = {STARPU_R, STARPU_R, STARPU_W},
    .model = &add_model,
    .name = "veil_add",
};

struct starpu_codelet veil_sub_cl = {
    .cpu_funcs = {veil_sub_cpu},
    .cpu_funcs_name = {"veil_sub_cpu"},
#ifdef VEIL_USE_CUDA
    .cuda_funcs = {veil_sub_cuda},
    .cuda_flags = {STARPU_CUDA_ASYNC},
#endif
    .nbuffers = 3,
    .modes = {STARPU_R, STARPU_R, STARPU_W},
    .model = &sub_model,
    .name = "veil_sub",
};

struct starpu_codelet veil_neg_cl = {
    .cpu_funcs = {veil_neg_cpu},
    .cpu_funcs_name = {"veil_neg_cpu"},
#ifdef VEIL_USE_CUDA
    .cuda_funcs = {veil_neg_cuda},
    .cuda_flags = {STARPU_CUDA_ASYNC},
#endif
    .nbuffers = 2,
    .modes = {STARPU_R, STARPU_W},
    .model = &neg_model,
    .name = "veil_neg",
};

struct starpu_codelet veil_mul_cl = {
    .cpu_funcs = {veil_mul_cpu},
    .cpu_funcs_name = {"veil_mul_cpu"},
#ifdef VEIL_USE_CUDA
    .cuda_funcs = {veil_mul_cuda},
    .cuda_flags = {STARPU_CUDA_ASYNC},
#endif
    .nbuffers = 3,
    .modes = {STARPU_R, STARPU_R, STARPU_W},
    .model = &mul_model,
    .name = "veil_mul",
};

struct starpu_codelet veil_mul_scalar_cl = {
    .cpu_funcs = {veil_mul_scalar_cpu},
    .cpu_funcs_name = {"veil_mul_scalar_cpu"},
#ifdef VEIL_USE_CUDA
    .cuda_funcs = {veil_mul_scalar_cuda},
    .cuda_flags = {STARPU_CUDA_ASYNC},
#endif
    .nbuffers = 2,
    .modes = {STARPU_R, STARPU_W},
    .model = &mul_scalar_model,
    .name = "veil_mul_scalar",
};

struct starpu_codelet veil_add_scalar_cl = {
    .cpu_funcs = {veil_add_scalar_cpu},
    .cpu_funcs_name = {"veil_add_scalar_cpu"},
#ifdef VEIL_USE_CUDA
    .cuda_funcs = {veil_add_scalar_cuda},
    .cuda_flags = {STARPU_CUDA_ASYNC},
#endif
    .nbuffers = 2,
    .modes = {STARPU_R, STARPU_W},
    .model = &add_scalar_model,
    .name = "veil_add_scalar",
};

int veil_task_add(starpu_data_handle_t a, starpu_data_handle_t b, starpu_data_handle_t out,
                  int priority)
{
    return veil_codelet_submit_elementwise(&veil_add_cl, "add", a, b, out, 0, 0, priority);
}

int veil_task_sub(starpu_data_handle_t a, starpu_data_handle_t b, starpu_data_handle_t out,
                  int priority)
{
    return veil_codelet_submit_elementwise(&veil_sub_cl, "sub", a, b, out, 0, 0, priority);
}

int veil_task_neg(starpu_data_handle_t a, starpu_data_handle_t out, int priority)
{
    return veil_codelet_submit_elementwise(&veil_neg_cl, "neg", a, NULL, out, 0, 0, priority);
}

int veil_task_mul(starpu_data_handle_t a, starpu_data_handle_t b, starpu_data_handle_t out,
                  int priority)
{
    return veil_codelet_submit_elementwise(&veil_mul_cl, "mul", a, b, out, 0, 0, priority);
}

int veil_task_mul_scalar(starpu_data_handle_t a, uint64_t s, starpu_data_handle_t out, int priority)
{
    return veil_codelet_submit_elementwise(&veil_mul_scalar_cl, "mul_scalar", a, NULL, out, 1, s,
                                           priority);
}

int veil_task_add_scalar(starpu_data_handle_t a, uint64_t s, starpu_data_handle_t out, int priority)
{
    return veil_codelet_submit_elementwise(&veil_add_scalar_cl, "add_scalar", a, NULL, out, 1, s,
                                           priority);
}

/*
 * pool_codelets.c — the small local codelets of the pooling protocols (pool.c): the
 * rearrangements no composition of the generic codelets does in one pass (concatenation, pair
 * differences, the operands and winners of a tournament level, the one-hot argmax, window
 * gathers and the backward scatter-add, and the row-wise picks of the pairwise maximum). Declared
 * in pool_internal.h; their element math is pool_common.h, shared with the CUDA bodies in
 * tasks/cuda/pool.cu.
 */
#include "config.h"
#include "base/base_internal.h"
#include "tasks/compare_internal.h"
#include "tasks/pool_internal.h"
#ifdef VEIL_USE_CUDA
#include "tasks/cuda/pool_cuda_internal.h"
#endif

#include <string.h>

#define PTR(i) ((uint64_t *)STARPU_VECTOR_GET_PTR(buffers[i]))
#define NX(i) STARPU_VECTOR_GET_NX(buffers[i])

/* out W, then the input tiles R (variable): out = their concatenation. */
static void concat_cpu(void *buffers[], void *cl_arg)
{
    const int *nin = veil_cmp_arg(cl_arg);
    uint64_t *out = PTR(0);
    size_t at = 0;
    for (int i = 0; i < *nin; i++) {
        memcpy(out + at, PTR(1 + i), NX(1 + i) * 8);
        at += NX(1 + i);
    }
}

/* V (rows x kl) -> D (rows x p): D[r, j] = V[r, 2j] - V[r, 2j + 1]. */
static void diff_cpu(void *buffers[], void *cl_arg)
{
    const struct veil_pool_tour_arg *a = veil_cmp_arg(cl_arg);
    const uint64_t *v = PTR(0);
    uint64_t *d = PTR(1);
    const size_t p = a->kl / 2;
    for (size_t r = 0; r < a->rows; r++)
        for (size_t j = 0; j < p; j++)
            d[r * p + j] = veil_pool_diff_at(a, v, r, j);
}

/* beta (rows x p), D (rows x p), OH (rows x k) -> X, Y (rows x m): per row, D against beta, then
 * the covered prefix of OH against the beta of the pair covering each position. */
static void prep_cpu(void *buffers[], void *cl_arg)
{
    const struct veil_pool_tour_arg *a = veil_cmp_arg(cl_arg);
    const uint64_t *beta = PTR(0), *d = PTR(1), *oh = PTR(2);
    uint64_t *x = PTR(3), *y = PTR(4);
    const size_t p = a->kl / 2, cov = a->m - p;
    for (size_t r = 0; r < a->rows; r++) {
        uint64_t *xr = x + r * a->m, *yr = y + r * a->m;
        for (size_t j = 0; j < p; j++)
            veil_pool_prep_pair(a, beta, d, r, j, &xr[j], &yr[j]);
        for (size_t q = 0; q < cov; q++)
            veil_pool_prep_cov(a, beta, oh, r, q, &xr[p + q], &yr[p + q]);
    }
}

/* V (rows x kl), W (rows x m), D, f -> V' (rows x ceil(kl / 2)): with b = [D >= 0] =
 * f ? beta : 1 - beta and W = D beta, b D = f ? W : D - W and V'[j] = V[2j + 1] + b D. */
static void combv_cpu(void *buffers[], void *cl_arg)
{
    const struct veil_pool_tour_arg *a = veil_cmp_arg(cl_arg);
    const uint64_t *v = PTR(0), *w = PTR(1), *d = PTR(2), *f = PTR(3);
    uint64_t *o = PTR(4);
    const size_t p = a->kl / 2, kn = (a->kl + 1) / 2;
    for (size_t r = 0; r < a->rows; r++) {
        for (size_t j = 0; j < p; j++)
            o[r * kn + j] = veil_pool_combv_pair(a, v, w, d, f, r, j);
        if (a->kl % 2)
            o[r * kn + p] = veil_pool_combv_last(a, v, r);
    }
}

/* Level 0: f, beta (rows x p) -> OH' (rows x k): b on the left of a pair, 1 - b on the right,
 * 1 for a candidate passing through (the constants at party 0). */
static void oh0_cpu(void *buffers[], void *cl_arg)
{
    const struct veil_pool_tour_arg *a = veil_cmp_arg(cl_arg);
    const uint64_t *f = PTR(0), *beta = PTR(1);
    uint64_t *o = PTR(2);
    for (size_t r = 0; r < a->rows; r++)
        for (size_t q = 0; q < a->k; q++)
            o[r * a->k + q] = veil_pool_oh0_at(a, f, beta, r, q);
}

/* Level >= 1: OH (rows x k), W (rows x m), f -> OH': b oh on a pair's left range, oh - b oh on
 * its right range (b oh = f ? W : oh - W), oh elsewhere. */
static void oh_cpu(void *buffers[], void *cl_arg)
{
    const struct veil_pool_tour_arg *a = veil_cmp_arg(cl_arg);
    const uint64_t *oh = PTR(0), *w = PTR(1), *f = PTR(2);
    uint64_t *o = PTR(3);
    for (size_t r = 0; r < a->rows; r++)
        for (size_t q = 0; q < a->k; q++)
            o[r * a->k + q] = veil_pool_oh_at(a, oh, w, f, r, q);
}

/* Window rearrangements (enum veil_pool_win_mode): GATHER x -> X (rows x kk); SUM x -> S (rows);
 * EXPAND dy (rows) -> E (rows x kk); SCATTER P (rows x kk) -> dx (zeroed, then each entry added
 * to its pixel: one pass over P, where the CUDA body gathers per pixel). */
static void win_cpu(void *buffers[], void *cl_arg)
{
    const struct veil_pool_win_arg *a = veil_cmp_arg(cl_arg);
    const uint64_t *in = PTR(0);
    uint64_t *out = PTR(1);
    const size_t k = a->k, kk = k * k;
    if (a->mode == VEIL_POOL_WIN_SCATTER)
        memset(out, 0, NX(1) * 8);
    size_t r = 0;
    for (size_t bc = 0; bc < a->batch * a->c; bc++)
        for (size_t y = 0; y < a->oh; y++)
            for (size_t x = 0; x < a->ow; x++, r++) {
                const size_t base = veil_pool_win_base(a, bc, y, x);
                uint64_t *row = out + r * kk;       /* GATHER, EXPAND */
                const uint64_t *prow = in + r * kk; /* SCATTER */
                switch (a->mode) {
                case VEIL_POOL_WIN_GATHER:
                    for (size_t i = 0; i < k; i++)
                        for (size_t j = 0; j < k; j++)
                            row[i * k + j] = in[veil_pool_win_pixel(a, base, i, j)];
                    break;
                case VEIL_POOL_WIN_SUM:
                    out[r] = veil_pool_win_sum(a, in, base);
                    break;
                case VEIL_POOL_WIN_EXPAND:
                    for (size_t e = 0; e < kk; e++)
                        row[e] = in[r];
                    break;
                default:
                    for (size_t i = 0; i < k; i++)
                        for (size_t j = 0; j < k; j++)
                            out[veil_pool_win_pixel(a, base, i, j)] += prow[i * k + j];
                    break;
                }
            }
}

/* The sources R, then out W: out[r, c] = veil_pool_pick_at over the sources. */
static void pick_cpu(void *buffers[], void *cl_arg)
{
    const struct veil_pool_pick_arg *a = veil_cmp_arg(cl_arg);
    const uint64_t *src[VEIL_POOL_PICK_SRC] = {NULL};
    for (int s = 0; s < a->nsrc; s++)
        src[s] = PTR(s);
    uint64_t *out = PTR(a->nsrc);
    for (size_t r = 0; r < a->rows; r++)
        for (size_t c = 0; c < a->out_row; c++)
            out[r * a->out_row + c] = veil_pool_pick_at(a, src, r, c);
}

static struct starpu_perfmodel concat_model = {.type = STARPU_HISTORY_BASED,
                                               .symbol = "veil_pool_concat"};
static struct starpu_perfmodel diff_model = {.type = STARPU_HISTORY_BASED,
                                             .symbol = "veil_pool_diff"};
static struct starpu_perfmodel prep_model = {.type = STARPU_HISTORY_BASED,
                                             .symbol = "veil_pool_prep"};
static struct starpu_perfmodel combv_model = {.type = STARPU_HISTORY_BASED,
                                              .symbol = "veil_pool_combv"};
static struct starpu_perfmodel oh0_model = {.type = STARPU_HISTORY_BASED,
                                            .symbol = "veil_pool_oh0"};
static struct starpu_perfmodel oh_model = {.type = STARPU_HISTORY_BASED, .symbol = "veil_pool_oh"};
static struct starpu_perfmodel pick_model = {.type = STARPU_HISTORY_BASED,
                                             .symbol = "veil_pool_pick"};
static struct starpu_perfmodel win_model = {.type = STARPU_HISTORY_BASED,
                                            .symbol = "veil_pool_window"};

/* CUDA bodies (tasks/cuda/pool.cu) are registered when the StarPU found has CUDA. */
struct starpu_codelet veil_pool_concat_cl = {
    .cpu_funcs = {concat_cpu},
    .cpu_funcs_name = {"concat_cpu"},
#ifdef VEIL_USE_CUDA
    .cuda_funcs = {veil_pool_concat_cuda},
    .cuda_flags = {STARPU_CUDA_ASYNC},
#endif
    .nbuffers = STARPU_VARIABLE_NBUFFERS,
    .model = &concat_model,
    .name = "veil_pool_concat"};
struct starpu_codelet veil_pool_diff_cl = {
    .cpu_funcs = {diff_cpu},
    .cpu_funcs_name = {"diff_cpu"},
#ifdef VEIL_USE_CUDA
    .cuda_funcs = {veil_pool_diff_cuda},
    .cuda_flags = {STARPU_CUDA_ASYNC},
#endif
    .nbuffers = 2,
    .modes = {STARPU_R, STARPU_W},
    .model = &diff_model,
    .name = "veil_pool_diff"};
struct starpu_codelet veil_pool_prep_cl = {
    .cpu_funcs = {prep_cpu},
    .cpu_funcs_name = {"prep_cpu"},
#ifdef VEIL_USE_CUDA
    .cuda_funcs = {veil_pool_prep_cuda},
    .cuda_flags = {STARPU_CUDA_ASYNC},
#endif
    .nbuffers = 5,
    .modes = {STARPU_R, STARPU_R, STARPU_R, STARPU_W, STARPU_W},
    .model = &prep_model,
    .name = "veil_pool_prep"};
struct starpu_codelet veil_pool_combv_cl = {
    .cpu_funcs = {combv_cpu},
    .cpu_funcs_name = {"combv_cpu"},
#ifdef VEIL_USE_CUDA
    .cuda_funcs = {veil_pool_combv_cuda},
    .cuda_flags = {STARPU_CUDA_ASYNC},
#endif
    .nbuffers = 5,
    .modes = {STARPU_R, STARPU_R, STARPU_R, STARPU_R, STARPU_W},
    .model = &combv_model,
    .name = "veil_pool_combv"};
struct starpu_codelet veil_pool_oh0_cl = {
    .cpu_funcs = {oh0_cpu},
    .cpu_funcs_name = {"oh0_cpu"},
#ifdef VEIL_USE_CUDA
    .cuda_funcs = {veil_pool_oh0_cuda},
    .cuda_flags = {STARPU_CUDA_ASYNC},
#endif
    .nbuffers = 3,
    .modes = {STARPU_R, STARPU_R, STARPU_W},
    .model = &oh0_model,
    .name = "veil_pool_oh0"};
struct starpu_codelet veil_pool_oh_cl = {
    .cpu_funcs = {oh_cpu},
    .cpu_funcs_name = {"oh_cpu"},
#ifdef VEIL_USE_CUDA
    .cuda_funcs = {veil_pool_oh_cuda},
    .cuda_flags = {STARPU_CUDA_ASYNC},
#endif
    .nbuffers = 4,
    .modes = {STARPU_R, STARPU_R, STARPU_R, STARPU_W},
    .model = &oh_model,
    .name = "veil_pool_oh"};
struct starpu_codelet veil_pool_win_cl = {
    .cpu_funcs = {win_cpu},
    .cpu_funcs_name = {"win_cpu"},
#ifdef VEIL_USE_CUDA
    .cuda_funcs = {veil_pool_win_cuda},
    .cuda_flags = {STARPU_CUDA_ASYNC},
#endif
    .nbuffers = 2,
    .modes = {STARPU_R, STARPU_W},
    .model = &win_model,
    .name = "veil_pool_window"};
struct starpu_codelet veil_pool_pick_cl = {.cpu_funcs = {pick_cpu},
                                           .cpu_funcs_name = {"pick_cpu"},
#ifdef VEIL_USE_CUDA
                                           .cuda_funcs = {veil_pool_pick_cuda},
                                           .cuda_flags = {STARPU_CUDA_ASYNC},
#endif
                                           .nbuffers = STARPU_VARIABLE_NBUFFERS,
                                           .model = &pick_model,
                                           .name = "veil_pool_pick"};

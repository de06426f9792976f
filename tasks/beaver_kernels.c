/*
 * beaver_kernels.c — three local kernels the Beaver-family protocols need and no composition
 * of the existing codelets does in one pass over vector handles: a batched strided GEMM (the
 * protocol tensors are vector handles, veil_task_gemm wants matrix handles; convolution needs one
 * product per image over slices of one handle), an axis swap (regrouping images for the
 * convolution's backward products, transposes) and the truncation protocol's fused local step
 * (seven elementwise tasks otherwise), the elementwise product's local step z = c + d b + a e
 * (+ d e) in one pass (three or four tasks otherwise), and the block sum that puts a product split
 * over devices back together. Codelet, perf model and CPU body of each are here; the CUDA bodies
 * are in cuda/beaver_kernels.cu (registered with VEIL_USE_CUDA), the truncation's element math in
 * trunc_common.h.
 */
#include "config.h"
#include "base/base_internal.h"
#include "base/trace.h"
#include "codelets/codelets_internal.h"
#include "codelets/gemm_internal.h"
#include "tasks/beaver_internal.h"
#include "tasks/cuda/beaver_cuda_internal.h"
#include "tasks/trunc_common.h"
#include "net/idle.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The end of every submit helper here: paused workers resumed (the task may be ready), a failed
 * insert reported in op's words. */
static int submitted(int rc, const char *op)
{
    veil_net_idle_kick();
    if (rc != 0)
        return veil_error(VEIL_ERR_STARPU, "%s: starpu_task_insert failed (%s)", op, strerror(-rc));
    return VEIL_OK;
}

/* ---- batched GEMM ------------------------------------------------------------------------- */

/*
 * Products that share A (a convolution's weights against each image's columns) with few columns
 * each run as one product over several images' columns side by side: VGG16's 2 x 2 layers at
 * CIFAR-10 shapes have 4 output positions per image, which fill half of one of the GEMM kernel's
 * 8-lane vectors; two images fill it. Up to 24 columns (the AVX-512 kernel's tile) per product;
 * only for n <= 12 that is not a multiple of 8 (the rest fill their vectors already) and C per
 * image (sc != 0). The images' columns are copied into a scratch B, the product lands in a
 * scratch C and is stored or added into each image's C; both scratches hold shares and are wiped.
 * Returns 0 (nothing done) when the scratch cannot be allocated: the caller loops per image.
 * It pays with the AVX2 kernel too, though 4 columns fill its 4-lane tile (Zen 3, thread CPU
 * clock, best of 10: two 512 x 4 x 4608 products 3.8-4.3 ms, one 512 x 8 x 4608 with the copies
 * and wipes 3.1-3.5 ms; the portable kernel 15.7-16.7 against 7.9 ms).
 */
#define MERGE_MAX_N 12
#define MERGE_COLS 24

static int bgemm_merges(const struct veil_bgemm_args *g)
{
    return g->sa == 0 && !g->trans_b && g->sc != 0 && g->batch > 1 && g->n <= MERGE_MAX_N &&
           g->n % 8 != 0;
}

static int bgemm_merged(const struct veil_bgemm_args *g, const uint64_t *a, size_t lda,
                        const uint64_t *b, size_t ldb, uint64_t *c)
{
    const size_t n = g->n, per = MERGE_COLS / n < g->batch ? MERGE_COLS / n : g->batch;
    const size_t bwords = g->k * per * n, cwords = g->m * per * n;
    uint64_t *bm = malloc(bwords * 8), *cm = malloc(cwords * 8);
    if (!bm || !cm) {
        free(bm);
        free(cm);
        return 0;
    }
    for (size_t i0 = 0; i0 < g->batch; i0 += per) {
        const size_t gi = g->batch - i0 < per ? g->batch - i0 : per, w = gi * n;
        for (size_t p = 0; p < g->k; p++)
            for (size_t j = 0; j < gi; j++)
                memcpy(bm + p * w + j * n, b + g->ob + (i0 + j) * g->sb + p * ldb, n * 8);
        veil_gemm_u64(g->trans_a, 0, g->m, w, g->k, a + g->oa, lda, bm, w, 0, cm, w);
        for (size_t j = 0; j < gi; j++) {
            uint64_t *ci = c + (i0 + j) * g->sc;
            const int acc = veil_bgemm_adds(g, i0 + j);
            for (size_t r = 0; r < g->m; r++)
                for (size_t col = 0; col < n; col++)
                    ci[r * n + col] = (acc ? ci[r * n + col] : 0) + cm[r * w + j * n + col];
        }
    }
    veil_wipe(bm, bwords * 8);
    veil_wipe(cm, cwords * 8);
    free(bm);
    free(cm);
    return 1;
}

static void bgemm_cpu(void *buffers[], void *cl_arg)
{
    struct veil_bgemm_args g;
    starpu_codelet_unpack_args(cl_arg, &g);
    const uint64_t *a = (const uint64_t *)STARPU_VECTOR_GET_PTR(buffers[0]);
    const uint64_t *b = (const uint64_t *)STARPU_VECTOR_GET_PTR(buffers[1]);
    uint64_t *c = (uint64_t *)STARPU_VECTOR_GET_PTR(buffers[2]);
    const size_t lda = veil_bgemm_lda(&g), ldb = veil_bgemm_ldb(&g);
    if (bgemm_merges(&g) && bgemm_merged(&g, a, lda, b, ldb, c))
        return;
    for (size_t i = 0; i < g.batch; i++) {
        const int acc = veil_bgemm_adds(&g, i);
        veil_gemm_u64(g.trans_a, g.trans_b, g.m, g.n, g.k, a + g.oa + i * g.sa, lda,
                      b + g.ob + i * g.sb, ldb, acc, c + i * g.sc, g.n);
    }
}

static size_t bgemm_size_base(struct starpu_task *task, unsigned nimpl)
{
    (void)nimpl;
    struct veil_bgemm_args g;
    starpu_codelet_unpack_args(task->cl_arg, &g);
    return g.m * g.n * g.k * g.batch;
}

static struct starpu_perfmodel bgemm_model = {
    .type = STARPU_HISTORY_BASED, .symbol = "veil_bgemm", .size_base = bgemm_size_base};

struct starpu_codelet veil_bgemm_cl = {
    .cpu_funcs = {bgemm_cpu},
#ifdef VEIL_USE_CUDA
    .cuda_funcs = {veil_bgemm_cuda},
    .cuda_flags = {STARPU_CUDA_ASYNC},
#endif
    .nbuffers = 3,
    .modes = {STARPU_R, STARPU_R, STARPU_W},
    .model = &bgemm_model,
    .name = "veil_bgemm",
};

struct starpu_codelet veil_bgemm_acc_cl = {
    .cpu_funcs = {bgemm_cpu},
#ifdef VEIL_USE_CUDA
    .cuda_funcs = {veil_bgemm_cuda},
    .cuda_flags = {STARPU_CUDA_ASYNC},
#endif
    .nbuffers = 3,
    .modes = {STARPU_R, STARPU_R, STARPU_RW},
    .model = &bgemm_model,
    .name = "veil_bgemm_acc",
};

/* Whether `have` elements hold an operand of rows x cols (row pitch ld, 0: cols) at offset o,
 * repeated batch times at stride s. */
static int spans(size_t have, size_t rows, size_t cols, size_t ld, size_t o, size_t batch, size_t s)
{
    size_t one = (rows - 1) * (ld ? ld : cols) + cols;
    return (ld == 0 || ld >= cols) && have >= o + (batch - 1) * s + one;
}

int veil_task_bgemm(starpu_data_handle_t a, starpu_data_handle_t b, starpu_data_handle_t c,
                    const struct veil_bgemm_args *g, int priority)
{
    size_t na, nb, nc;
    int rc;
    if ((rc = veil_codelet_check_vector(a, "bgemm: A", &na)) != VEIL_OK ||
        (rc = veil_codelet_check_vector(b, "bgemm: B", &nb)) != VEIL_OK ||
        (rc = veil_codelet_check_vector(c, "bgemm: C", &nc)) != VEIL_OK)
        return rc;
    if (c == a || c == b)
        return veil_error(VEIL_ERR_INVAL, "bgemm: C must differ from A and B");
    if (g->batch < 1 || g->m < 1 || g->n < 1 || g->k < 1)
        return veil_error(VEIL_ERR_SHAPE, "bgemm: empty product (%zu x %zu x %zu, batch %zu)", g->m,
                          g->k, g->n, g->batch);
    const size_t ar = g->trans_a ? g->k : g->m, ac = g->trans_a ? g->m : g->k;
    const size_t br = g->trans_b ? g->n : g->k, bc = g->trans_b ? g->k : g->n;
    if (!spans(na, ar, ac, g->lda, g->oa, g->batch, g->sa) ||
        !spans(nb, br, bc, g->ldb, g->ob, g->batch, g->sb) ||
        !spans(nc, g->m, g->n, 0, 0, g->batch, g->sc))
        return veil_error(VEIL_ERR_SHAPE,
                          "bgemm: operands of %zu, %zu, %zu elements do not hold "
                          "%zu products of %zu x %zu by %zu x %zu",
                          na, nb, nc, g->batch, g->m, g->k, g->k, g->n);
    rc = starpu_task_insert(g->accumulate ? &veil_bgemm_acc_cl : &veil_bgemm_cl, STARPU_R, a,
                            STARPU_R, b, g->accumulate ? STARPU_RW : STARPU_W, c, STARPU_VALUE, g,
                            sizeof *g, STARPU_PRIORITY, priority, STARPU_EXECUTE_ON_WORKER,
                            veil_place_worker_work(c, (uint64_t)g->batch * g->m * g->n * g->k),
                            VEIL_TRACE_TASK, 0);
    return submitted(rc, "bgemm");
}

/* ---- block sum (a split product put back together) --------------------------------------- */

static void block_sum_cpu(void *buffers[], void *cl_arg)
{
    const struct veil_block_sum_args *a = cl_arg; /* raw argument block (cl_arg_free) */
    uint64_t *out = (uint64_t *)STARPU_VECTOR_GET_PTR(buffers[0]);
    const uint64_t *base = (const uint64_t *)STARPU_VECTOR_GET_PTR(buffers[1]);
    memcpy(out, base, a->B * a->R * a->C * sizeof *out);
    for (int p = 0; p < a->nparts; p++) {
        const struct veil_block *k = &a->blk[p];
        const uint64_t *src = (const uint64_t *)STARPU_VECTOR_GET_PTR(buffers[2 + p]);
        for (size_t b = 0; b < k->nb; b++)
            for (size_t r = 0; r < k->nr; r++) {
                uint64_t *o = out + ((k->b0 + b) * a->R + k->r0 + r) * a->C + k->c0;
                const uint64_t *s = src + (b * k->nr + r) * k->nc;
                for (size_t c = 0; c < k->nc; c++)
                    o[c] += s[c];
            }
    }
}

static struct starpu_perfmodel block_sum_model = {
    .type = STARPU_HISTORY_BASED, .symbol = "veil_block_sum", .size_base = veil_codelet_size_base};

struct starpu_codelet veil_block_sum_cl = {
    .cpu_funcs = {block_sum_cpu},
#ifdef VEIL_USE_CUDA
    .cuda_funcs = {veil_block_sum_cuda},
    .cuda_flags = {STARPU_CUDA_ASYNC},
#endif
    .nbuffers = STARPU_VARIABLE_NBUFFERS,
    .model = &block_sum_model,
    .name = "veil_block_sum",
};

int veil_task_block_sum(starpu_data_handle_t base, const starpu_data_handle_t *parts,
                        const struct veil_block_sum_args *args, starpu_data_handle_t out,
                        int priority)
{
    size_t nbase, nout, np;
    int rc;
    if ((rc = veil_codelet_check_vector(base, "block_sum: base", &nbase)) != VEIL_OK ||
        (rc = veil_codelet_check_vector(out, "block_sum: output", &nout)) != VEIL_OK)
        return rc;
    if (args->nparts < 1 || args->nparts > VEIL_BLOCK_MAX)
        return veil_error(VEIL_ERR_INVAL, "block_sum: %d parts, expected 1 to %d", args->nparts,
                          VEIL_BLOCK_MAX);
    const size_t total = args->B * args->R * args->C;
    if (nbase != total || nout != total || out == base)
        return veil_error(VEIL_ERR_SHAPE, "block_sum: base %zu and output %zu elements for %zu",
                          nbase, nout, total);
    struct starpu_data_descr d[VEIL_BLOCK_MAX + 2];
    d[0] = (struct starpu_data_descr){.handle = out, .mode = STARPU_W};
    d[1] = (struct starpu_data_descr){.handle = base, .mode = STARPU_R};
    for (int p = 0; p < args->nparts; p++) {
        const struct veil_block *k = &args->blk[p];
        if ((rc = veil_codelet_check_vector(parts[p], "block_sum: part", &np)) != VEIL_OK)
            return rc;
        if (parts[p] == out || np != k->nb * k->nr * k->nc || k->b0 + k->nb > args->B ||
            k->r0 + k->nr > args->R || k->c0 + k->nc > args->C)
            return veil_error(VEIL_ERR_SHAPE, "block_sum: part %d (%zu elements) does not fit", p,
                              np);
        d[2 + p] = (struct starpu_data_descr){.handle = parts[p], .mode = STARPU_R};
    }
    struct veil_block_sum_args *copy = malloc(sizeof *copy);
    if (!copy)
        return veil_error(VEIL_ERR_NOMEM, "block_sum: out of memory");
    *copy = *args;
    rc = starpu_task_insert(&veil_block_sum_cl, STARPU_DATA_MODE_ARRAY, d, args->nparts + 2,
                            STARPU_CL_ARGS, copy, sizeof *copy, STARPU_PRIORITY, priority,
                            STARPU_EXECUTE_ON_WORKER, veil_place_worker(out), VEIL_TRACE_TASK, 0);
    /* on failure the copy belongs to the task already (STARPU_CL_ARGS): not freed here */
    return submitted(rc, "block_sum");
}

/* ---- axis swap ---------------------------------------------------------------------------- */

struct swap_args {
    size_t p[4];
};

static void swap_cpu(void *buffers[], void *cl_arg)
{
    struct swap_args s;
    starpu_codelet_unpack_args(cl_arg, &s);
    const uint64_t *in = (const uint64_t *)STARPU_VECTOR_GET_PTR(buffers[0]);
    uint64_t *out = (uint64_t *)STARPU_VECTOR_GET_PTR(buffers[1]);
    const size_t p1 = s.p[1], p2 = s.p[2], p3 = s.p[3];
    for (size_t i0 = 0; i0 < s.p[0]; i0++) {
        const uint64_t *ib = in + i0 * p1 * p2 * p3;
        uint64_t *ob = out + i0 * p1 * p2 * p3;
        if (p3 == 1) { /* a plain transpose, in cache-sized tiles */
            veil_transpose_u64(ib, p1, p2, p2, ob, p1);
            continue;
        }
        for (size_t i1 = 0; i1 < p1; i1++)
            for (size_t i2 = 0; i2 < p2; i2++)
                memcpy(ob + (i2 * p1 + i1) * p3, ib + (i1 * p2 + i2) * p3, p3 * 8);
    }
}

static struct starpu_perfmodel swap_model = {
    .type = STARPU_HISTORY_BASED, .symbol = "veil_swap_axes", .size_base = veil_codelet_size_base};

struct starpu_codelet veil_swap_axes_cl = {
    .cpu_funcs = {swap_cpu},
#ifdef VEIL_USE_CUDA
    .cuda_funcs = {veil_swap_axes_cuda},
    .cuda_flags = {STARPU_CUDA_ASYNC},
#endif
    .nbuffers = 2,
    .modes = {STARPU_R, STARPU_W},
    .model = &swap_model,
    .name = "veil_swap_axes",
};

int veil_task_swap_axes(starpu_data_handle_t in, starpu_data_handle_t out, const size_t p[4],
                        int priority)
{
    size_t ni, no;
    int rc;
    if ((rc = veil_codelet_check_vector(in, "swap_axes: input", &ni)) != VEIL_OK ||
        (rc = veil_codelet_check_vector(out, "swap_axes: output", &no)) != VEIL_OK)
        return rc;
    struct swap_args s;
    memcpy(s.p, p, sizeof s.p);
    if (ni != no || ni != p[0] * p[1] * p[2] * p[3] || in == out)
        return veil_error(VEIL_ERR_SHAPE,
                          "swap_axes: %zu and %zu elements for a %zu x %zu x %zu "
                          "x %zu tensor (distinct handles)",
                          ni, no, p[0], p[1], p[2], p[3]);
    rc = starpu_task_insert(&veil_swap_axes_cl, STARPU_R, in, STARPU_W, out, STARPU_VALUE, &s,
                            sizeof s, STARPU_PRIORITY, priority, STARPU_EXECUTE_ON_WORKER,
                            veil_place_worker(out), VEIL_TRACE_TASK, 0);
    return submitted(rc, "swap_axes");
}

/* ---- truncation's local step -------------------------------------------------------------- */

static void trunc_finish_cpu(void *buffers[], void *cl_arg)
{
    unsigned f;
    int party0;
    starpu_codelet_unpack_args(cl_arg, &f, &party0);
    const uint64_t *c = (const uint64_t *)STARPU_VECTOR_GET_PTR(buffers[0]);
    const uint64_t *rhi = (const uint64_t *)STARPU_VECTOR_GET_PTR(buffers[1]);
    const uint64_t *r63 = (const uint64_t *)STARPU_VECTOR_GET_PTR(buffers[2]);
    uint64_t *out = (uint64_t *)STARPU_VECTOR_GET_PTR(buffers[3]);
    const size_t n = STARPU_VECTOR_GET_NX(buffers[3]);
    const uint64_t p0 = party0 ? UINT64_MAX : 0;
    for (size_t i = 0; i < n; i++)
        out[i] = veil_trunc_finish_elem(c[i], rhi[i], r63[i], f, p0);
}

static struct starpu_perfmodel trunc_model = {.type = STARPU_HISTORY_BASED,
                                              .symbol = "veil_trunc_finish",
                                              .size_base = veil_codelet_size_base};

struct starpu_codelet veil_trunc_finish_cl = {
    .cpu_funcs = {trunc_finish_cpu},
#ifdef VEIL_USE_CUDA
    .cuda_funcs = {veil_trunc_finish_cuda},
    .cuda_flags = {STARPU_CUDA_ASYNC},
#endif
    .nbuffers = 4,
    .modes = {STARPU_R, STARPU_R, STARPU_R, STARPU_W},
    .model = &trunc_model,
    .name = "veil_trunc_finish",
};

int veil_task_trunc_finish(starpu_data_handle_t copen, starpu_data_handle_t rhi,
                           starpu_data_handle_t r63, starpu_data_handle_t out, unsigned f,
                           int party0, int priority)
{
    size_t n0, n1, n2, n3;
    int rc;
    if ((rc = veil_codelet_check_vector(copen, "trunc: opened value", &n0)) != VEIL_OK ||
        (rc = veil_codelet_check_vector(rhi, "trunc: r_hi", &n1)) != VEIL_OK ||
        (rc = veil_codelet_check_vector(r63, "trunc: r_63", &n2)) != VEIL_OK ||
        (rc = veil_codelet_check_vector(out, "trunc: output", &n3)) != VEIL_OK)
        return rc;
    if (n0 != n1 || n0 != n2 || n0 != n3)
        return veil_error(VEIL_ERR_SHAPE, "trunc: tiles of %zu, %zu, %zu, %zu elements", n0, n1, n2,
                          n3);
    if (f < 1 || f > 62)
        return veil_error(VEIL_ERR_INVAL, "trunc: f = %u, use 1 to 62", f);
    rc = starpu_task_insert(&veil_trunc_finish_cl, STARPU_R, copen, STARPU_R, rhi, STARPU_R, r63,
                            STARPU_W, out, STARPU_VALUE, &f, sizeof f, STARPU_VALUE, &party0,
                            sizeof party0, STARPU_PRIORITY, priority, STARPU_EXECUTE_ON_WORKER,
                            veil_place_worker(out), VEIL_TRACE_TASK, 0);
    return submitted(rc, "trunc");
}

/* ---- the elementwise product's local step ------------------------------------------------- */

static void beaver_z(uint64_t *restrict z, const uint64_t *c, const uint64_t *d, const uint64_t *b,
                     const uint64_t *a, const uint64_t *e, size_t n, int with_de)
{
    if (with_de)
        for (size_t i = 0; i < n; i++)
            z[i] = c[i] + d[i] * b[i] + a[i] * e[i] + d[i] * e[i];
    else
        for (size_t i = 0; i < n; i++)
            z[i] = c[i] + d[i] * b[i] + a[i] * e[i];
}

#define VEC(i) ((const uint64_t *)STARPU_VECTOR_GET_PTR(buffers[i]))

static void beaver_z_cpu(void *buffers[], void *cl_arg)
{
    int with_de;
    starpu_codelet_unpack_args(cl_arg, &with_de);
    beaver_z((uint64_t *)STARPU_VECTOR_GET_PTR(buffers[0]), VEC(1), VEC(2), VEC(3), VEC(4), VEC(5),
             STARPU_VECTOR_GET_NX(buffers[0]), with_de);
}

/* The same step with d and e packed in one buffer (de: d, then e; n words each). */
static void beaver_z_pair_cpu(void *buffers[], void *cl_arg)
{
    int with_de;
    starpu_codelet_unpack_args(cl_arg, &with_de);
    const size_t n = STARPU_VECTOR_GET_NX(buffers[0]);
    beaver_z((uint64_t *)STARPU_VECTOR_GET_PTR(buffers[0]), VEC(1), VEC(2), VEC(3), VEC(4),
             VEC(2) + n, n, with_de);
}

/* de = (x - a, y - b): the two masked terms of a product, packed into one message. */
static void sub_pair_cpu(void *buffers[], void *cl_arg)
{
    (void)cl_arg;
    const size_t n = STARPU_VECTOR_GET_NX(buffers[1]);
    uint64_t *restrict de = (uint64_t *)STARPU_VECTOR_GET_PTR(buffers[0]);
    const uint64_t *x = VEC(1), *a = VEC(2), *y = VEC(3), *b = VEC(4);
    for (size_t i = 0; i < n; i++) {
        de[i] = x[i] - a[i];
        de[n + i] = y[i] - b[i];
    }
}

#undef VEC

static struct starpu_perfmodel beaver_z_model = {
    .type = STARPU_HISTORY_BASED, .symbol = "veil_beaver_z", .size_base = veil_codelet_size_base};

struct starpu_codelet veil_beaver_z_cl = {
    .cpu_funcs = {beaver_z_cpu},
#ifdef VEIL_USE_CUDA
    .cuda_funcs = {veil_beaver_z_cuda},
    .cuda_flags = {STARPU_CUDA_ASYNC},
#endif
    .nbuffers = 6,
    .modes = {STARPU_W, STARPU_R, STARPU_R, STARPU_R, STARPU_R, STARPU_R},
    .model = &beaver_z_model,
    .name = "veil_beaver_z",
};

static struct starpu_perfmodel beaver_z_pair_model = {.type = STARPU_HISTORY_BASED,
                                                      .symbol = "veil_beaver_z_pair",
                                                      .size_base = veil_codelet_size_base};

struct starpu_codelet veil_beaver_z_pair_cl = {
    .cpu_funcs = {beaver_z_pair_cpu},
#ifdef VEIL_USE_CUDA
    .cuda_funcs = {veil_beaver_z_pair_cuda},
    .cuda_flags = {STARPU_CUDA_ASYNC},
#endif
    .nbuffers = 5,
    .modes = {STARPU_W, STARPU_R, STARPU_R, STARPU_R, STARPU_R},
    .model = &beaver_z_pair_model,
    .name = "veil_beaver_z_pair",
};

static struct starpu_perfmodel sub_pair_model = {
    .type = STARPU_HISTORY_BASED, .symbol = "veil_sub_pair", .size_base = veil_codelet_size_base};

struct starpu_codelet veil_sub_pair_cl = {
    .cpu_funcs = {sub_pair_cpu},
#ifdef VEIL_USE_CUDA
    .cuda_funcs = {veil_sub_pair_cuda},
    .cuda_flags = {STARPU_CUDA_ASYNC},
#endif
    .nbuffers = 5,
    .modes = {STARPU_W, STARPU_R, STARPU_R, STARPU_R, STARPU_R},
    .model = &sub_pair_model,
    .name = "veil_sub_pair",
};

/* Checks that the k handles of in (named by names) are vectors of n words each, none of them
 * out; *n == 0 takes the first one's length, else it is ref's. VEIL_OK or the error. */
static int check_inputs(const char *const *names, const starpu_data_handle_t *in, int k,
                        starpu_data_handle_t out, const char *ref, size_t *n)
{
    for (int i = 0; i < k; i++) {
        char what[32];
        size_t ni;
        int rc;
        snprintf(what, sizeof what, "mul: %s", names[i]);
        if ((rc = veil_codelet_check_vector(in[i], what, &ni)) != VEIL_OK)
            return rc;
        if (in[i] == out)
            return veil_error(VEIL_ERR_INVAL, "mul: %s is the output handle", names[i]);
        if (*n == 0)
            *n = ni;
        else if (ni != *n)
            return veil_error(VEIL_ERR_SHAPE, "mul: %s has %zu elements, %s %zu", names[i], ni, ref,
                              *n);
    }
    return VEIL_OK;
}

/* The packed d and e: a vector of twice n words that is not out. */
static int check_pair(starpu_data_handle_t de, starpu_data_handle_t out, size_t n)
{
    size_t nde;
    int rc = veil_codelet_check_vector(de, "mul: d and e", &nde);
    if (rc == VEIL_OK && de == out)
        rc = veil_error(VEIL_ERR_INVAL, "mul: d and e is the output handle");
    if (rc == VEIL_OK && nde != 2 * n)
        rc = veil_error(VEIL_ERR_SHAPE, "mul: d and e hold %zu elements, not twice %zu", nde, n);
    return rc;
}

int veil_task_sub_pair(starpu_data_handle_t x, starpu_data_handle_t a, starpu_data_handle_t y,
                       starpu_data_handle_t b, starpu_data_handle_t de, int priority)
{
    static const char *const names[4] = {"x", "a", "y", "b"};
    const starpu_data_handle_t in[4] = {x, a, y, b};
    size_t n = 0;
    int rc;
    if ((rc = check_inputs(names, in, 4, de, "x", &n)) != VEIL_OK ||
        (rc = check_pair(de, NULL, n)) != VEIL_OK)
        return rc;
    rc = starpu_task_insert(&veil_sub_pair_cl, STARPU_W, de, STARPU_R, x, STARPU_R, a, STARPU_R, y,
                            STARPU_R, b, STARPU_PRIORITY, priority, STARPU_EXECUTE_ON_WORKER,
                            veil_place_worker(de), VEIL_TRACE_TASK, 0);
    return submitted(rc, "mul");
}

int veil_task_beaver_z_pair(starpu_data_handle_t c, starpu_data_handle_t de, starpu_data_handle_t b,
                            starpu_data_handle_t a, int with_de, starpu_data_handle_t z,
                            int priority)
{
    static const char *const names[3] = {"c", "b", "a"};
    const starpu_data_handle_t in[3] = {c, b, a};
    size_t n;
    int rc;
    if ((rc = veil_codelet_check_vector(z, "mul: z", &n)) != VEIL_OK ||
        (rc = check_inputs(names, in, 3, z, "z", &n)) != VEIL_OK ||
        (rc = check_pair(de, z, n)) != VEIL_OK)
        return rc;
    with_de = with_de != 0;
    rc = starpu_task_insert(&veil_beaver_z_pair_cl, STARPU_W, z, STARPU_R, c, STARPU_R, de,
                            STARPU_R, b, STARPU_R, a, STARPU_VALUE, &with_de, sizeof with_de,
                            STARPU_PRIORITY, priority, STARPU_EXECUTE_ON_WORKER,
                            veil_place_worker(z), VEIL_TRACE_TASK, 0);
    return submitted(rc, "mul");
}

int veil_task_beaver_z(starpu_data_handle_t c, starpu_data_handle_t d, starpu_data_handle_t b,
                       starpu_data_handle_t a, starpu_data_handle_t e, int with_de,
                       starpu_data_handle_t z, int priority)
{
    static const char *const names[5] = {"c", "d", "b", "a", "e"};
    const starpu_data_handle_t in[5] = {c, d, b, a, e};
    size_t n;
    int rc;
    if ((rc = veil_codelet_check_vector(z, "mul: z", &n)) != VEIL_OK ||
        (rc = check_inputs(names, in, 5, z, "z", &n)) != VEIL_OK)
        return rc;
    with_de = with_de != 0;
    rc = starpu_task_insert(&veil_beaver_z_cl, STARPU_W, z, STARPU_R, c, STARPU_R, d, STARPU_R, b,
                            STARPU_R, a, STARPU_R, e, STARPU_VALUE, &with_de, sizeof with_de,
                            STARPU_PRIORITY, priority, STARPU_EXECUTE_ON_WORKER,
                            veil_place_worker(z), VEIL_TRACE_TASK, 0);
    return submitted(rc, "mul");
}

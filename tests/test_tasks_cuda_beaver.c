/* Tests the CUDA bodies of the Beaver-family codelets (tasks/beaver_kernels.c) against their CPU
 * bodies and a plain-loop oracle, bit for bit: the batched GEMM (all transposes, padded leading
 * dimensions, offsets, batch strides including 0, overwrite and accumulate, sc == 0 summing the
 * batch; first on the integer kernel (no cuBLAS handle), then on the limb split after
 * starpu_cublas_init), the block sum (one to VEIL_BLOCK_MAX overlapping parts), the axis swap
 * (p3 == 1 and p3 > 1), the truncation's local step (f = 1, 16, 62, party0 0 and 1, ring edge
 * values) and the elementwise product's (with and without d e; unpacked, and packed with its
 * masked-term subtraction, sub_pair). (The flat relayout codelet of
 * codelets/flatop.c is checked in test_codelets_backend with every other codelet of codelets/.)
 * Sizes cross warp, block and GEMM tile boundaries. Each task runs on a copy of the codelet
 * restricted to one architecture (where = STARPU_CUDA, then STARPU_CPU). Skips (77) when Veil was
 * built without VEIL_USE_CUDA or StarPU finds no CUDA worker. */
#include "config.h"

#include "codelets/reference.h"
#include "tasks/beaver_internal.h"
#include "test_util.h"

#include <stdlib.h>
#include <string.h>

#ifdef VEIL_USE_CUDA
#include <starpu_cublas_v2.h>

static const uint32_t arch[2] = {STARPU_CUDA, STARPU_CPU};
static const char *const arch_name[2] = {"CUDA", "CPU"};
static const char *gemm_path = "integer"; /* which CUDA GEMM the bgemm body takes now */

/* Arguments of one task: up to two STARPU_VALUE items, or a raw cl_arg block (copied to the heap
 * and freed by StarPU). */
struct targs {
    const void *v[2];
    size_t size[2];
    int nv;
    const void *raw;
    size_t raw_size;
};

/* Runs one task of a copy of orig restricted to where on the handles of d[0..nd) (t: its by-value
 * arguments, NULL for none) and waits. */
static void run(const struct starpu_codelet *orig, uint32_t where, struct starpu_data_descr *d,
                int nd, const struct targs *t)
{
    struct starpu_codelet cl = *orig;
    int rc;
    cl.where = where;
    cl.model = NULL;
    if (t == NULL) { /* no argument */
        rc = starpu_task_insert(&cl, STARPU_DATA_MODE_ARRAY, d, nd, 0);
    } else if (t->raw != NULL) {
        void *copy = malloc(t->raw_size);
        if (copy == NULL) {
            VT_CHECK(0, "out of memory");
            return;
        }
        memcpy(copy, t->raw, t->raw_size);
        rc = starpu_task_insert(&cl, STARPU_DATA_MODE_ARRAY, d, nd, STARPU_CL_ARGS, copy,
                                t->raw_size, 0);
    } else if (t->nv == 2) {
        rc = starpu_task_insert(&cl, STARPU_DATA_MODE_ARRAY, d, nd, STARPU_VALUE, t->v[0],
                                t->size[0], STARPU_VALUE, t->v[1], t->size[1], 0);
    } else {
        rc = starpu_task_insert(&cl, STARPU_DATA_MODE_ARRAY, d, nd, STARPU_VALUE, t->v[0],
                                t->size[0], 0);
    }
    VT_CHECK(rc == 0, "task %s on %s: submit %d", orig->name, where == STARPU_CUDA ? "CUDA" : "CPU",
             rc);
    starpu_task_wait_for_all();
}

static struct starpu_data_descr vec(uint64_t *p, size_t n, enum starpu_data_access_mode mode)
{
    struct starpu_data_descr d;
    starpu_vector_data_register(&d.handle, STARPU_MAIN_RAM, (uintptr_t)p, n, sizeof(uint64_t));
    d.mode = mode;
    return d;
}

static void unregister_all(struct starpu_data_descr *d, int nd)
{
    for (int i = 0; i < nd; i++)
        starpu_data_unregister(d[i].handle);
}

/* Words of rows x cols at row pitch ld starting at offset o, repeated batch times at stride s. */
static size_t span(size_t rows, size_t cols, size_t ld, size_t o, size_t batch, size_t s)
{
    return o + (batch - 1) * s + (rows - 1) * ld + cols;
}

/* ---- batched GEMM ------------------------------------------------------------------------- */

static void bgemm_oracle(const struct veil_bgemm_args *g, const uint64_t *a, const uint64_t *b,
                         uint64_t *c)
{
    const size_t lda = g->lda ? g->lda : g->trans_a ? g->m : g->k;
    const size_t ldb = g->ldb ? g->ldb : g->trans_b ? g->k : g->n;
    for (size_t i = 0; i < g->batch; i++) {
        const uint64_t *ai = a + g->oa + i * g->sa, *bi = b + g->ob + i * g->sb;
        uint64_t *ci = c + i * g->sc;
        int acc = g->accumulate || (g->sc == 0 && i > 0);
        for (size_t r = 0; r < g->m; r++)
            for (size_t col = 0; col < g->n; col++) {
                uint64_t s = 0;
                for (size_t p = 0; p < g->k; p++)
                    s += (g->trans_a ? ai[p * lda + r] : ai[r * lda + p]) *
                         (g->trans_b ? bi[col * ldb + p] : bi[p * ldb + col]);
                ci[r * g->n + col] = acc ? ci[r * g->n + col] + s : s;
            }
    }
}

/* One product configuration: pad > 0 pads the rows of A and B (ld = cols + pad), else dense
 * (ld 0); gap separates the batch's operands; sc_mode 0: C's sum the batch into one (sc == 0),
 * 1: dense C's, 2: C's with gaps (accumulate only: a written C leaves gaps undefined). */
static void check_bgemm(size_t m, size_t n, size_t k, size_t batch, int ta, int tb, int acc,
                        size_t pad, size_t oa, size_t ob, int shared_a, int shared_b, int sc_mode,
                        uint64_t tag)
{
    struct veil_bgemm_args g;
    memset(&g, 0, sizeof g);
    g.m = m, g.n = n, g.k = k, g.trans_a = ta, g.trans_b = tb, g.accumulate = acc;
    g.batch = batch, g.oa = oa, g.ob = ob;
    const size_t ar = ta ? k : m, ac = ta ? m : k, br = tb ? n : k, bc = tb ? k : n;
    g.lda = pad ? ac + pad : 0;
    g.ldb = pad ? bc + pad : 0;
    const size_t lda = g.lda ? g.lda : ac, ldb = g.ldb ? g.ldb : bc;
    g.sa = shared_a ? 0 : ar * lda + 5;
    g.sb = shared_b ? 0 : br * ldb + 1;
    g.sc = sc_mode == 0 ? 0 : sc_mode == 1 ? m * n : m * n + 3;
    const size_t na = span(ar, ac, lda, oa, batch, g.sa), nb = span(br, bc, ldb, ob, batch, g.sb);
    const size_t nc = span(m, n, n, 0, batch, g.sc);
    uint64_t *a = malloc(na * 8), *b = malloc(nb * 8), *c0 = malloc(nc * 8), *c = malloc(nc * 8);
    uint64_t *want = malloc(nc * 8);
    if (!a || !b || !c0 || !c || !want) {
        VT_CHECK(0, "out of memory");
        goto done;
    }
    veil_test_random(tag * 4 + 1, a, na);
    veil_test_random(tag * 4 + 2, b, nb);
    veil_test_mix_edges(a, b, na < nb ? na : nb);
    veil_test_random(tag * 4 + 3, c0, nc);
    memcpy(want, c0, nc * 8);
    bgemm_oracle(&g, a, b, want);
    for (int w = 0; w < 2; w++) {
        struct starpu_data_descr d[3];
        memcpy(c, c0, nc * 8);
        d[0] = vec(a, na, STARPU_R);
        d[1] = vec(b, nb, STARPU_R);
        d[2] = vec(c, nc, acc ? STARPU_RW : STARPU_W);
        struct targs t = {.v = {&g}, .size = {sizeof g}, .nv = 1};
        run(acc ? &veil_bgemm_acc_cl : &veil_bgemm_cl, arch[w], d, 3, &t);
        unregister_all(d, 3);
        char what[160];
        snprintf(what, sizeof what,
                 "bgemm %zux%zux%zu batch %zu ta %d tb %d acc %d pad %zu o %zu/%zu sa %zu sb %zu "
                 "sc %zu (%s%s%s)",
                 m, n, k, batch, ta, tb, acc, pad, oa, ob, g.sa, g.sb, g.sc, arch_name[w],
                 w == 0 ? ", " : "", w == 0 ? gemm_path : "");
        veil_test_compare_u64(what, c, want, nc);
    }
done:
    free(a), free(b), free(c0), free(c), free(want);
}

static void check_bgemm_all(void)
{
    uint64_t tag = 1;
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++)
            for (int acc = 0; acc < 2; acc++) {
                /* crossing the integer kernel's 16 x 16 tiles, padded rows, offsets */
                check_bgemm(17, 33, 19, 3, ta, tb, acc, 2, 5, 3, 0, 0, acc ? 2 : 1, tag++);
                /* the batch summed into one C */
                check_bgemm(17, 33, 19, 3, ta, tb, acc, 1, 0, 7, 0, 0, 0, tag++);
            }
    /* dense operands, one product; shared A (a weight against a batch of images) and shared B */
    check_bgemm(16, 16, 16, 1, 0, 0, 0, 0, 0, 0, 0, 0, 1, tag++);
    check_bgemm(1, 1, 1, 1, 0, 0, 1, 0, 0, 0, 0, 0, 2, tag++);
    check_bgemm(8, 65, 27, 4, 0, 0, 0, 0, 0, 0, 1, 0, 1, tag++);
    check_bgemm(31, 9, 40, 5, 1, 0, 1, 3, 2, 0, 0, 1, 0, tag++);
    check_bgemm(64, 100, 300, 2, 0, 1, 0, 0, 11, 0, 0, 0, 1, tag++);
}

/* ---- block sum ---------------------------------------------------------------------------- */

static void check_block_sum(size_t B, size_t R, size_t C, const struct veil_block *blk, int nparts,
                            uint64_t tag)
{
    struct veil_block_sum_args args;
    memset(&args, 0, sizeof args);
    args.B = B, args.R = R, args.C = C, args.nparts = nparts;
    const size_t total = B * R * C;
    uint64_t *base = malloc(total * 8), *out = malloc(total * 8), *want = malloc(total * 8);
    uint64_t *part[VEIL_BLOCK_MAX] = {NULL};
    int ok = base && out && want;
    for (int p = 0; p < nparts; p++) {
        args.blk[p] = blk[p];
        part[p] = malloc(blk[p].nb * blk[p].nr * blk[p].nc * 8);
        ok = ok && part[p];
    }
    if (!ok) {
        VT_CHECK(0, "out of memory");
        goto done;
    }
    veil_test_random(tag * 64, base, total);
    veil_test_mix_edges(base, NULL, total);
    memcpy(want, base, total * 8);
    for (int p = 0; p < nparts; p++) {
        const struct veil_block *k = &blk[p];
        veil_test_random(tag * 64 + 1 + (uint64_t)p, part[p], k->nb * k->nr * k->nc);
        veil_test_mix_edges(part[p], NULL, k->nb * k->nr * k->nc);
        for (size_t b = 0; b < k->nb; b++)
            for (size_t r = 0; r < k->nr; r++)
                for (size_t c = 0; c < k->nc; c++)
                    want[((k->b0 + b) * R + k->r0 + r) * C + k->c0 + c] +=
                        part[p][(b * k->nr + r) * k->nc + c];
    }
    for (int w = 0; w < 2; w++) {
        struct starpu_data_descr d[VEIL_BLOCK_MAX + 2];
        memset(out, 0xa5, total * 8);
        d[0] = vec(out, total, STARPU_W);
        d[1] = vec(base, total, STARPU_R);
        for (int p = 0; p < nparts; p++)
            d[2 + p] = vec(part[p], blk[p].nb * blk[p].nr * blk[p].nc, STARPU_R);
        struct targs t = {.raw = &args, .raw_size = sizeof args};
        run(&veil_block_sum_cl, arch[w], d, nparts + 2, &t);
        unregister_all(d, nparts + 2);
        char what[96];
        snprintf(what, sizeof what, "block_sum %zux%zux%zu, %d parts (%s)", B, R, C, nparts,
                 arch_name[w]);
        veil_test_compare_u64(what, out, want, total);
    }
done:
    free(base), free(out), free(want);
    for (int p = 0; p < nparts; p++)
        free(part[p]);
}

static void check_block_sum_all(void)
{
    /* a full-size part (an inner-dimension split), a block, a corner word and a block
     * overlapping the second */
    static const struct veil_block four[] = {
        {0, 3, 0, 37, 0, 41}, {1, 2, 5, 20, 3, 33}, {2, 1, 36, 1, 40, 1}, {1, 1, 10, 10, 10, 10}};
    check_block_sum(3, 37, 41, four, 4, 1);
    static const struct veil_block one[] = {{0, 1, 0, 1, 0, 1}};
    check_block_sum(1, 1, 1, one, 1, 2);
    check_block_sum(3, 37, 41, four + 1, 1, 3);
    /* VEIL_BLOCK_MAX parts: a 4 x 8 grid of row x column blocks of a 2 x 64 x 96 output, every
     * other one covering its right neighbour too */
    struct veil_block grid[VEIL_BLOCK_MAX];
    for (int p = 0; p < VEIL_BLOCK_MAX; p++) {
        size_t i = (size_t)p / 8, j = (size_t)p % 8;
        grid[p] = (struct veil_block){0, 2, i * 16, 16, j * 12, p % 2 == 0 && j < 7 ? 24 : 12};
    }
    check_block_sum(2, 64, 96, grid, VEIL_BLOCK_MAX, 4);
}

/* ---- axis swap ---------------------------------------------------------------------------- */

static void check_swap(size_t p0, size_t p1, size_t p2, size_t p3, uint64_t tag)
{
    const size_t p[4] = {p0, p1, p2, p3}, n = p0 * p1 * p2 * p3;
    uint64_t *in = malloc(n * 8), *out = malloc(n * 8), *want = malloc(n * 8);
    if (!in || !out || !want) {
        VT_CHECK(0, "out of memory");
        goto done;
    }
    veil_test_random(tag, in, n);
    veil_test_mix_edges(in, NULL, n);
    veil_ref_swap_axes(p, in, want);
    for (int w = 0; w < 2; w++) {
        struct starpu_data_descr d[2];
        memset(out, 0xa5, n * 8);
        d[0] = vec(in, n, STARPU_R);
        d[1] = vec(out, n, STARPU_W);
        struct targs t = {.v = {p}, .size = {sizeof p}, .nv = 1};
        run(&veil_swap_axes_cl, arch[w], d, 2, &t);
        unregister_all(d, 2);
        char what[96];
        snprintf(what, sizeof what, "swap_axes %zux%zux%zux%zu (%s)", p0, p1, p2, p3, arch_name[w]);
        veil_test_compare_u64(what, out, want, n);
    }
done:
    free(in), free(out), free(want);
}

static void check_swap_all(void)
{
    check_swap(1, 1, 1, 1, 1);
    check_swap(1, 33, 70, 1, 2);   /* a transpose */
    check_swap(3, 5, 7, 1, 3);     /* a batched transpose */
    check_swap(1, 300, 129, 1, 4); /* more words than one grid pass of small blocks */
    check_swap(2, 3, 4, 5, 5);
    check_swap(4, 17, 9, 32, 6); /* (b, oc, hw) regroupings */
    check_swap(2, 64, 1, 3, 7);
    check_swap(5, 1, 8, 33, 8);
}

/* ---- truncation's local step -------------------------------------------------------------- */

static void check_trunc(size_t n, unsigned f, int party0, uint64_t tag)
{
    uint64_t *c = malloc(n * 8), *rhi = malloc(n * 8), *r63 = malloc(n * 8);
    uint64_t *out = malloc(n * 8), *want = malloc(n * 8);
    if (!c || !rhi || !r63 || !out || !want) {
        VT_CHECK(0, "out of memory");
        goto done;
    }
    veil_test_random(tag * 3, c, n);
    veil_test_random(tag * 3 + 1, rhi, n);
    veil_test_random(tag * 3 + 2, r63, n);
    veil_test_mix_edges(c, r63, n);
    veil_test_mix_edges(rhi, NULL, n);
    /* the contract of veil_task_trunc_finish, written out independently of trunc_common.h */
    for (size_t i = 0; i < n; i++) {
        uint64_t cc = c[i] + (UINT64_C(1) << 62);
        uint64_t top = party0 ? (cc >> f) - (UINT64_C(1) << (62 - f)) : 0;
        uint64_t wrap = (1 - (cc >> 63)) * r63[i];
        want[i] = top - rhi[i] + (wrap << (64 - f));
    }
    for (int w = 0; w < 2; w++) {
        struct starpu_data_descr d[4];
        memset(out, 0xa5, n * 8);
        d[0] = vec(c, n, STARPU_R);
        d[1] = vec(rhi, n, STARPU_R);
        d[2] = vec(r63, n, STARPU_R);
        d[3] = vec(out, n, STARPU_W);
        struct targs t = {.v = {&f, &party0}, .size = {sizeof f, sizeof party0}, .nv = 2};
        run(&veil_trunc_finish_cl, arch[w], d, 4, &t);
        unregister_all(d, 4);
        char what[96];
        snprintf(what, sizeof what, "trunc_finish n=%zu f=%u party0=%d (%s)", n, f, party0,
                 arch_name[w]);
        veil_test_compare_u64(what, out, want, n);
    }
done:
    free(c), free(rhi), free(r63), free(out), free(want);
}

static void check_trunc_all(void)
{
    static const size_t sizes[] = {1, 25, 255, 256, 257, 100003};
    static const unsigned fs[] = {1, 16, 62};
    uint64_t tag = 1;
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
        for (size_t i = 0; i < 3; i++)
            for (int party0 = 0; party0 < 2; party0++)
                check_trunc(sizes[s], fs[i], party0, tag++);
}

/* ---- the elementwise product's local step ------------------------------------------------ */

static void check_beaver_z(size_t n, int with_de, uint64_t tag)
{
    uint64_t *v[5], *out = malloc(n * 8), *want = malloc(n * 8);
    int ok = out && want;
    for (int t = 0; t < 5; t++)
        ok = (v[t] = malloc(n * 8)) != NULL && ok;
    if (!ok) {
        VT_CHECK(0, "out of memory");
        goto done;
    }
    for (int t = 0; t < 5; t++)
        veil_test_random(tag * 5 + (uint64_t)t, v[t], n);
    veil_test_mix_edges(v[1], v[2], n);
    veil_test_mix_edges(v[3], v[4], n);
    /* z = c + d b + a e (+ d e), written out independently of the bodies */
    for (size_t i = 0; i < n; i++)
        want[i] =
            v[0][i] + v[1][i] * v[2][i] + v[3][i] * v[4][i] + (with_de ? v[1][i] * v[4][i] : 0);
    for (int w = 0; w < 2; w++) {
        struct starpu_data_descr d[6];
        memset(out, 0xa5, n * 8);
        d[0] = vec(out, n, STARPU_W);
        for (int t = 0; t < 5; t++)
            d[1 + t] = vec(v[t], n, STARPU_R);
        struct targs ta = {.v = {&with_de}, .size = {sizeof with_de}, .nv = 1};
        run(&veil_beaver_z_cl, arch[w], d, 6, &ta);
        unregister_all(d, 6);
        char what[96];
        snprintf(what, sizeof what, "beaver_z n=%zu with_de=%d (%s)", n, with_de, arch_name[w]);
        veil_test_compare_u64(what, out, want, n);
    }
done:
    for (int t = 0; t < 5; t++)
        free(v[t]);
    free(out), free(want);
}

/* The packed twins a product uses: de = (x - a, y - b) (sub_pair), then the step reading d and e
 * from de (beaver_z_pair), on both architectures against the host's words. */
static void check_pair(size_t n, int with_de, uint64_t tag)
{
    uint64_t *v[5], *de = malloc(2 * n * 8), *de_want = malloc(2 * n * 8), *out = malloc(n * 8),
                    *want = malloc(n * 8);
    int ok = de && de_want && out && want;
    for (int t = 0; t < 5; t++)
        ok = (v[t] = malloc(n * 8)) != NULL && ok;
    if (!ok) {
        VT_CHECK(0, "out of memory");
        goto done;
    }
    for (int t = 0; t < 5; t++) /* c, x, a, y, b */
        veil_test_random(tag * 7 + (uint64_t)t, v[t], n);
    veil_test_mix_edges(v[1], v[3], n);
    for (size_t i = 0; i < n; i++) {
        de_want[i] = v[1][i] - v[2][i];
        de_want[n + i] = v[3][i] - v[4][i];
        const uint64_t d = de_want[i], e = de_want[n + i];
        want[i] = v[0][i] + d * v[4][i] + v[2][i] * e + (with_de ? d * e : 0);
    }
    for (int w = 0; w < 2; w++) {
        char what[96];
        struct starpu_data_descr d[5];
        memset(de, 0xa5, 2 * n * 8);
        d[0] = vec(de, 2 * n, STARPU_W);
        for (int t = 1; t < 5; t++)
            d[t] = vec(v[t], n, STARPU_R);
        run(&veil_sub_pair_cl, arch[w], d, 5, NULL);
        unregister_all(d, 5);
        snprintf(what, sizeof what, "sub_pair n=%zu (%s)", n, arch_name[w]);
        veil_test_compare_u64(what, de, de_want, 2 * n);
        memset(out, 0xa5, n * 8);
        d[0] = vec(out, n, STARPU_W);
        d[1] = vec(v[0], n, STARPU_R);
        d[2] = vec(de, 2 * n, STARPU_R);
        d[3] = vec(v[4], n, STARPU_R); /* b */
        d[4] = vec(v[2], n, STARPU_R); /* a */
        struct targs ta = {.v = {&with_de}, .size = {sizeof with_de}, .nv = 1};
        run(&veil_beaver_z_pair_cl, arch[w], d, 5, &ta);
        unregister_all(d, 5);
        snprintf(what, sizeof what, "beaver_z_pair n=%zu with_de=%d (%s)", n, with_de,
                 arch_name[w]);
        veil_test_compare_u64(what, out, want, n);
    }
done:
    for (int t = 0; t < 5; t++)
        free(v[t]);
    free(de), free(de_want), free(out), free(want);
}

static void check_beaver_z_all(void)
{
    static const size_t sizes[] = {1, 25, 255, 256, 257, 100003};
    uint64_t tag = 1;
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
        for (int with_de = 0; with_de < 2; with_de++) {
            check_beaver_z(sizes[s], with_de, tag);
            check_pair(sizes[s], with_de, tag++);
        }
}

int main(void)
{
    int rc = veil_test_starpu_start();
    if (rc != 0)
        return rc;
    if (starpu_cuda_worker_get_count() == 0) {
        veil_test_log("SKIP: no CUDA worker");
        veil_test_starpu_stop();
        return 77;
    }
    /* without starpu_cublas_init the workers have no cuBLAS handle: the integer kernel */
    check_bgemm_all();
    starpu_cublas_init();
    gemm_path = "limb/cuBLAS";
    check_bgemm_all();
    starpu_cublas_shutdown();
    check_block_sum_all();
    check_swap_all();
    check_trunc_all();
    check_beaver_z_all();
    veil_test_starpu_stop();
    return veil_test_status();
}

#else /* !VEIL_USE_CUDA */

int main(void)
{
    veil_test_log("SKIP: built without VEIL_USE_CUDA (no CUDA-enabled StarPU)");
    return 77;
}

#endif

/* Tests every codelet of codelets/ as ggml's test-backend-ops does: one table row per codelet
 * (how to build its inputs, its plaintext reference from codelets/reference.c or a plain loop),
 * run at every size of a list (1, odd sizes, warp / vector / 64-bit-word / 32-wide tile / 2048-word
 * chunk boundaries, 100003) on inputs that mix the ring's edge values (0, 1, 2, 2^63 - 1, 2^63,
 * 2^64 - 2, 2^64 - 1, every pair of them in a and b) into seeded random words, with by-value
 * parameters at their edges too (0, 1, 2, 2^63, 2^64 - 1, a random odd word; shift amounts 0, 1,
 * 2, 31, 32, 62, 63). Each case runs the CPU body as a StarPU task and compares it with the
 * reference, then, when a CUDA worker exists, every CUDA implementation the codelet registers (both
 * GEMM bodies: limb split on cuBLAS and the integer kernel) against the CPU output, bit for bit.
 * Outputs are prefilled with a different pattern per run, so an unwritten word shows. Rows: the
 * fifteen elementwise codelets, bit pack / unpack / bit-slicing (both directions, partial blocks),
 * the k-operand sum and XOR-sum (k = 1, 2, 7, 64), im2col / col2im (padding, strides, overlapping
 * windows), transpose (padded leading dimensions), GEMM (all transposes, padded leading dimensions,
 * overwrite and accumulate, an inner dimension of 2^19 + 5 all-ones words that makes the limb body
 * cut k into two chunks) and every flat relayout kind on one and several tiles per side. Size 0 is
 * not a case: the submit helpers refuse empty vectors (test_codelets_ring_arith and the other
 * per-family tests check the refusals). Exits 77 only when StarPU cannot start. */
#include "config.h"

#include "codelets/codelets_internal.h"
#include "codelets/flatop_internal.h"
#include "codelets/gemm_internal.h"
#include "codelets/limb_common.h"
#include "codelets/reference.h"
#include "test_util.h"

#include <stdlib.h>
#include <string.h>

typedef void (*body_fn)(void *buffers[], void *cl_arg);

static int have_cuda;            /* VEIL_USE_CUDA and StarPU found a CUDA worker */
static long runs_cpu, runs_cuda; /* cases run per architecture */

/* ---- running one task ------------------------------------------------------------------------ */

/* By-value arguments of a task: up to three STARPU_VALUE items. */
struct targs {
    const void *v[3];
    size_t size[3];
    int nv;
};

/* Runs one task of a copy of orig restricted to where (and, for CUDA, to the one implementation
 * body) on the handles and modes of d[0..nd), and waits. */
static void run(const struct starpu_codelet *orig, uint32_t where, body_fn body,
                struct starpu_data_descr *d, int nd, const struct targs *t)
{
    struct starpu_codelet cl = *orig;
    int rc;
    cl.where = where;
    cl.model = NULL;
    if (where == STARPU_CUDA) {
        memset(cl.cuda_funcs, 0, sizeof(cl.cuda_funcs));
        cl.cuda_funcs[0] = body;
    }
    if (t == NULL || t->nv == 0)
        rc = starpu_task_insert(&cl, STARPU_DATA_MODE_ARRAY, d, nd, 0);
    else if (t->nv == 1)
        rc = starpu_task_insert(&cl, STARPU_DATA_MODE_ARRAY, d, nd, STARPU_VALUE, t->v[0],
                                t->size[0], 0);
    else if (t->nv == 2)
        rc = starpu_task_insert(&cl, STARPU_DATA_MODE_ARRAY, d, nd, STARPU_VALUE, t->v[0],
                                t->size[0], STARPU_VALUE, t->v[1], t->size[1], 0);
    else
        rc = starpu_task_insert(&cl, STARPU_DATA_MODE_ARRAY, d, nd, STARPU_VALUE, t->v[0],
                                t->size[0], STARPU_VALUE, t->v[1], t->size[1], STARPU_VALUE,
                                t->v[2], t->size[2], 0);
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

static struct starpu_data_descr mat(uint64_t *p, size_t rows, size_t cols, size_t ld,
                                    enum starpu_data_access_mode mode)
{
    struct starpu_data_descr d;
    starpu_matrix_data_register(&d.handle, STARPU_MAIN_RAM, (uintptr_t)p, (uint32_t)ld,
                                (uint32_t)cols, (uint32_t)rows, sizeof(uint64_t));
    d.mode = mode;
    return d;
}

static void unregister_all(struct starpu_data_descr *d, int nd)
{
    for (int i = 0; i < nd; i++)
        starpu_data_unregister(d[i].handle);
}

/*
 * One case: launch(ctx, where, body, out) runs the codelet once and leaves its out_len result
 * words (dense) in out. The CPU run is compared with want, then every CUDA implementation of cl
 * with the CPU run.
 */
typedef void (*launch_fn)(const void *ctx, uint32_t where, body_fn body, uint64_t *out);

static void check(const char *what, const struct starpu_codelet *cl, launch_fn launch,
                  const void *ctx, size_t out_len, const uint64_t *want)
{
    uint64_t *cpu = malloc(out_len * 8 + 8), *gpu = malloc(out_len * 8 + 8);
    char label[192];
    if (cpu == NULL || gpu == NULL) {
        VT_CHECK(0, "out of memory");
        goto done;
    }
    memset(cpu, 0xa5, out_len * 8);
    launch(ctx, STARPU_CPU, NULL, cpu);
    snprintf(label, sizeof(label), "%s (CPU vs reference)", what);
    veil_test_compare_u64(label, cpu, want, out_len);
    runs_cpu++;
    for (int i = 0; have_cuda && i < STARPU_MAXIMPLEMENTATIONS && cl->cuda_funcs[i] != NULL; i++) {
        memset(gpu, 0x5a, out_len * 8);
        launch(ctx, STARPU_CUDA, cl->cuda_funcs[i], gpu);
        snprintf(label, sizeof(label), "%s (CUDA implementation %d vs CPU)", what, i);
        veil_test_compare_u64(label, gpu, cpu, out_len);
        runs_cuda++;
    }
done:
    free(cpu);
    free(gpu);
}

/* ---- vector codelets: inputs in[0..nin), one output, first or last in the buffer list ------- */

struct vcase {
    const struct starpu_codelet *cl;
    uint64_t *const *in;
    const size_t *in_len;
    int nin;
    size_t out_len;
    int out_first;
    struct targs t;
};

static void launch_vec(const void *ctx, uint32_t where, body_fn body, uint64_t *out)
{
    const struct vcase *c = ctx;
    struct starpu_data_descr d[VEIL_SUM_MAX_OPERANDS + 1];
    int o = c->out_first ? 0 : c->nin;
    for (int i = 0; i < c->nin; i++)
        d[c->out_first ? i + 1 : i] = vec(c->in[i], c->in_len[i], STARPU_R);
    d[o] = vec(out, c->out_len, STARPU_W);
    run(c->cl, where, body, d, c->nin + 1, &c->t);
    unregister_all(d, c->nin + 1);
}

static void check_vec(const char *what, const struct vcase *c, const uint64_t *want)
{
    check(what, c->cl, launch_vec, c, c->out_len, want);
}

/* ---- the elementwise rows ------------------------------------------------------------------- */

typedef void (*ref2_fn)(size_t, const uint64_t *, const uint64_t *, uint64_t *);
typedef void (*ref1_fn)(size_t, const uint64_t *, uint64_t *);
typedef void (*refp_fn)(size_t, const uint64_t *, uint64_t, uint64_t *);

static void ref_shl(size_t n, const uint64_t *a, uint64_t k, uint64_t *out)
{
    veil_ref_shl(n, a, (unsigned)k, out);
}
static void ref_shr(size_t n, const uint64_t *a, uint64_t k, uint64_t *out)
{
    veil_ref_shr(n, a, (unsigned)k, out);
}
static void ref_sar(size_t n, const uint64_t *a, uint64_t k, uint64_t *out)
{
    veil_ref_sar(n, a, (unsigned)k, out);
}
static void ref_bit_extract(size_t n, const uint64_t *a, uint64_t k, uint64_t *out)
{
    veil_ref_bit_extract(n, a, (unsigned)k, out);
}

enum param { NONE, WORD, SHIFT };

/* One elementwise codelet: exactly one of ref2 (reads b), ref1, refp (by-value parameter). */
struct ew_row {
    const char *name;
    struct starpu_codelet *cl;
    ref2_fn ref2;
    ref1_fn ref1;
    refp_fn refp;
    enum param param;
};

static const struct ew_row ew_rows[] = {
    {"add", &veil_add_cl, veil_ref_add, NULL, NULL, NONE},
    {"sub", &veil_sub_cl, veil_ref_sub, NULL, NULL, NONE},
    {"mul", &veil_mul_cl, veil_ref_mul, NULL, NULL, NONE},
    {"xor", &veil_xor_cl, veil_ref_xor, NULL, NULL, NONE},
    {"and", &veil_and_cl, veil_ref_and, NULL, NULL, NONE},
    {"neg", &veil_neg_cl, NULL, veil_ref_neg, NULL, NONE},
    {"not", &veil_not_cl, NULL, veil_ref_not, NULL, NONE},
    {"mul_scalar", &veil_mul_scalar_cl, NULL, NULL, veil_ref_mul_scalar, WORD},
    {"add_scalar", &veil_add_scalar_cl, NULL, NULL, veil_ref_add_scalar, WORD},
    {"xor_mask", &veil_xor_mask_cl, NULL, NULL, veil_ref_xor_mask, WORD},
    {"and_mask", &veil_and_mask_cl, NULL, NULL, veil_ref_and_mask, WORD},
    {"shl", &veil_shl_cl, NULL, NULL, ref_shl, SHIFT},
    {"shr", &veil_shr_cl, NULL, NULL, ref_shr, SHIFT},
    {"sar", &veil_sar_cl, NULL, NULL, ref_sar, SHIFT},
    {"bit_extract", &veil_bit_extract_cl, NULL, NULL, ref_bit_extract, SHIFT},
};
#define NEW (sizeof(ew_rows) / sizeof(ew_rows[0]))

static const uint64_t word_params[] = {
    0, 1, 2, UINT64_C(1) << 63, UINT64_MAX, UINT64_C(0x9e3779b97f4a7c15)};
static const uint64_t shift_params[] = {0, 1, 2, 31, 32, 62, 63};

static void check_elementwise(size_t n, uint64_t *a, uint64_t *b, uint64_t *want)
{
    uint64_t *const in[2] = {a, b};
    const size_t len[2] = {n, n};
    char what[96];
    for (size_t r = 0; r < NEW; r++) {
        const struct ew_row *row = &ew_rows[r];
        struct vcase c = {
            .cl = row->cl, .in = in, .in_len = len, .nin = row->ref2 ? 2 : 1, .out_len = n};
        if (row->param == NONE) {
            if (row->ref2)
                row->ref2(n, a, b, want);
            else
                row->ref1(n, a, want);
            snprintf(what, sizeof(what), "%s n=%zu", row->name, n);
            check_vec(what, &c, want);
            continue;
        }
        const uint64_t *ps = row->param == WORD ? word_params : shift_params;
        size_t np = row->param == WORD ? sizeof(word_params) / 8 : sizeof(shift_params) / 8;
        for (size_t i = 0; i < np; i++) {
            uint64_t p = ps[i];
            row->refp(n, a, p, want);
            c.t = (struct targs){.v = {&p}, .size = {sizeof(p)}, .nv = 1};
            snprintf(what, sizeof(what), "%s n=%zu p=%#llx", row->name, n, (unsigned long long)p);
            check_vec(what, &c, want);
        }
    }
}

/* ---- bits, sums ------------------------------------------------------------------------------ */

static void check_bits(size_t n, uint64_t *a, uint64_t *want)
{
    size_t nw = (n + 63) / 64, nblk = 64 * nw;
    uint64_t *packed = calloc(nw, 8), *sliced = calloc(nblk, 8);
    char what[96];
    if (packed == NULL || sliced == NULL) {
        VT_CHECK(0, "out of memory");
        goto done;
    }
    uint64_t *const in[1] = {a};
    const size_t len[1] = {n};
    for (size_t t = 0; t < sizeof(shift_params) / 8; t++) {
        uint64_t k = shift_params[t];
        struct vcase c = {&veil_bit_pack_cl, in, len, 1, nw, 0, {{&k}, {sizeof(k)}, 1}};
        veil_ref_bit_pack(n, a, (unsigned)k, want);
        snprintf(what, sizeof(what), "bit_pack n=%zu k=%llu", n, (unsigned long long)k);
        check_vec(what, &c, want);
        if (t == 3)
            memcpy(packed, want, nw * 8);
    }
    uint64_t *const pin[1] = {packed};
    const size_t plen[1] = {nw};
    struct vcase cu = {&veil_bit_unpack_cl, pin, plen, 1, n, 0, {{NULL}, {0}, 0}};
    veil_ref_bit_unpack(n, packed, want);
    snprintf(what, sizeof(what), "bit_unpack n=%zu", n);
    check_vec(what, &cu, want);

    struct vcase cs = {&veil_bitslice_cl, in, len, 1, nblk, 0, {{NULL}, {0}, 0}};
    veil_ref_bitslice(n, a, nblk, want);
    snprintf(what, sizeof(what), "bitslice n=%zu -> %zu", n, nblk);
    check_vec(what, &cs, want);
    memcpy(sliced, want, nblk * 8);
    uint64_t *const sin[1] = {sliced};
    const size_t slen[1] = {nblk};
    struct vcase cb = {&veil_bitslice_cl, sin, slen, 1, n, 0, {{NULL}, {0}, 0}};
    veil_ref_bitslice(nblk, sliced, n, want);
    snprintf(what, sizeof(what), "bitslice %zu -> n=%zu", nblk, n);
    check_vec(what, &cb, want);
done:
    free(packed);
    free(sliced);
}

static void check_sum(size_t n, uint64_t *a, uint64_t *b, uint64_t *want)
{
    static const int ks[] = {1, 2, 7, VEIL_SUM_MAX_OPERANDS};
    uint64_t *in[VEIL_SUM_MAX_OPERANDS];
    size_t len[VEIL_SUM_MAX_OPERANDS];
    char what[96];
    for (size_t t = 0; t < sizeof(ks) / sizeof(ks[0]); t++) {
        int k = ks[t];
        for (int i = 0; i < k; i++) {
            in[i] = i % 2 ? b : a; /* repeated operands are allowed */
            len[i] = n;
        }
        struct vcase c = {&veil_sum_cl, in, len, k, n, 1, {{NULL}, {0}, 0}};
        veil_ref_sum((size_t)k, n, (const uint64_t *const *)in, want);
        snprintf(what, sizeof(what), "sum k=%d n=%zu", k, n);
        check_vec(what, &c, want);
        c.cl = &veil_xor_sum_cl;
        veil_ref_xor_sum((size_t)k, n, (const uint64_t *const *)in, want);
        snprintf(what, sizeof(what), "xor_sum k=%d n=%zu", k, n);
        check_vec(what, &c, want);
    }
}

/* ---- im2col / col2im ------------------------------------------------------------------------- */

static void check_im2col(void)
{
    static const struct veil_im2col_geom geoms[] = {
        {1, 1, 1, 1, 1, 1, 1, 1, 0, 0}, {1, 1, 5, 5, 3, 3, 1, 1, 1, 1},
        {2, 3, 7, 6, 3, 2, 2, 1, 1, 0}, {1, 2, 9, 9, 4, 4, 3, 3, 2, 3},
        {3, 4, 8, 8, 2, 2, 2, 2, 0, 0}, {1, 3, 33, 31, 5, 3, 1, 2, 2, 1},
    };
    char what[128];
    for (size_t t = 0; t < sizeof(geoms) / sizeof(geoms[0]); t++) {
        const struct veil_im2col_geom *g = &geoms[t];
        size_t oh, ow, il, cl;
        VT_CHECK(veil_im2col_geom_check(g, &oh, &ow, &il, &cl) == VEIL_OK, "geometry %zu", t);
        uint64_t *img = malloc(il * 8), *cols = malloc(cl * 8), *want = malloc((il + cl) * 8);
        if (img == NULL || cols == NULL || want == NULL) {
            VT_CHECK(0, "out of memory");
        } else {
            veil_test_random(900 + t, img, il);
            veil_test_random(950 + t, cols, cl);
            veil_test_mix_edges(img, cols, il < cl ? il : cl);
            uint64_t *const iin[1] = {img}, *const cin[1] = {cols};
            const size_t ilen[1] = {il}, clen[1] = {cl};
            struct vcase c = {&veil_im2col_cl, iin, ilen, 1, cl, 0, {{g}, {sizeof(*g)}, 1}};
            veil_ref_im2col(g, img, want);
            snprintf(what, sizeof(what), "im2col geometry %zu", t);
            check_vec(what, &c, want);
            struct vcase d = {&veil_col2im_cl, cin, clen, 1, il, 0, {{g}, {sizeof(*g)}, 1}};
            veil_ref_col2im(g, cols, want);
            snprintf(what, sizeof(what), "col2im geometry %zu", t);
            check_vec(what, &d, want);
        }
        free(img);
        free(cols);
        free(want);
    }
}

/* ---- transpose ------------------------------------------------------------------------------- */

struct tcase {
    const uint64_t *in; /* rows x cols at row pitch cols + pad */
    size_t rows, cols, pad;
};

static void launch_transpose(const void *ctx, uint32_t where, body_fn body, uint64_t *out)
{
    const struct tcase *c = ctx;
    size_t ld_in = c->cols + c->pad, ld_out = c->rows + c->pad;
    uint64_t *padded = malloc(c->cols * ld_out * 8);
    if (padded == NULL) {
        VT_CHECK(0, "out of memory");
        return;
    }
    memset(padded, 0x77, c->cols * ld_out * 8);
    struct starpu_data_descr d[2] = {mat((uint64_t *)c->in, c->rows, c->cols, ld_in, STARPU_R),
                                     mat(padded, c->cols, c->rows, ld_out, STARPU_W)};
    run(&veil_transpose_cl, where, body, d, 2, NULL);
    unregister_all(d, 2);
    for (size_t r = 0; r < c->cols; r++)
        memcpy(out + r * c->rows, padded + r * ld_out, c->rows * 8);
    free(padded);
}

static void check_transpose(size_t rows, size_t cols, size_t pad)
{
    size_t ld_in = cols + pad;
    uint64_t *in = malloc(rows * ld_in * 8), *dense = malloc(rows * cols * 8);
    uint64_t *want = malloc(rows * cols * 8);
    char what[96];
    if (!in || !dense || !want) {
        VT_CHECK(0, "out of memory");
        goto done;
    }
    veil_test_random(77 + rows * 1000 + cols, in, rows * ld_in);
    veil_test_mix_edges(in, NULL, rows * ld_in);
    for (size_t r = 0; r < rows; r++)
        memcpy(dense + r * cols, in + r * ld_in, cols * 8);
    veil_ref_transpose(rows, cols, dense, want);
    struct tcase c = {in, rows, cols, pad};
    snprintf(what, sizeof(what), "transpose %zux%zu pad %zu", rows, cols, pad);
    check(what, &veil_transpose_cl, launch_transpose, &c, rows * cols, want);
done:
    free(in), free(dense), free(want);
}

/* ---- GEMM ------------------------------------------------------------------------------------ */

struct gcase {
    int ta, tb, acc;
    size_t m, n, k, ar, ac, lda, br, bc, ldb, ldc;
    const uint64_t *a, *b, *c0; /* c0: C's initial value, m x ldc */
};

static void launch_gemm(const void *ctx, uint32_t where, body_fn body, uint64_t *out)
{
    const struct gcase *g = ctx;
    uint64_t *c = malloc(g->m * g->ldc * 8);
    if (c == NULL) {
        VT_CHECK(0, "out of memory");
        return;
    }
    memcpy(c, g->c0, g->m * g->ldc * 8);
    struct starpu_data_descr d[3] = {mat((uint64_t *)g->a, g->ar, g->ac, g->lda, STARPU_R),
                                     mat((uint64_t *)g->b, g->br, g->bc, g->ldb, STARPU_R),
                                     mat(c, g->m, g->n, g->ldc, g->acc ? STARPU_RW : STARPU_W)};
    struct targs t = {{&g->ta, &g->tb, &g->acc}, {sizeof(int), sizeof(int), sizeof(int)}, 3};
    run(g->acc ? &veil_gemm_acc_cl : &veil_gemm_cl, where, body, d, 3, &t);
    unregister_all(d, 3);
    for (size_t r = 0; r < g->m; r++)
        memcpy(out + r * g->n, c + r * g->ldc, g->n * 8);
    free(c);
}

/* C (=|+=) op(A) op(B) for m x n x k under the four transposes, overwrite and accumulate, with
 * padded leading dimensions; all_ones: every word of A and B is 2^64 - 1. */
static void check_gemm(size_t m, size_t n, size_t k, int all_ones, uint64_t tag)
{
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++)
            for (int acc = 0; acc < 2; acc++) {
                struct gcase g = {.ta = ta, .tb = tb, .acc = acc, .m = m, .n = n, .k = k};
                g.ar = ta ? k : m, g.ac = ta ? m : k, g.br = tb ? n : k, g.bc = tb ? k : n;
                g.lda = g.ac + 1, g.ldb = g.bc + 2, g.ldc = n + 3;
                uint64_t *a = malloc(g.ar * g.lda * 8), *b = malloc(g.br * g.ldb * 8);
                uint64_t *c0 = malloc(m * g.ldc * 8), *oa = malloc(m * k * 8);
                uint64_t *ob = malloc(k * n * 8), *want = malloc(m * n * 8);
                if (!a || !b || !c0 || !oa || !ob || !want) {
                    VT_CHECK(0, "out of memory");
                    goto next;
                }
                if (all_ones) {
                    memset(a, 0xff, g.ar * g.lda * 8);
                    memset(b, 0xff, g.br * g.ldb * 8);
                } else {
                    veil_test_random(tag * 8 + 1, a, g.ar * g.lda);
                    veil_test_random(tag * 8 + 2, b, g.br * g.ldb);
                    veil_test_mix_edges(a, b,
                                        g.ar * g.lda < g.br * g.ldb ? g.ar * g.lda : g.br * g.ldb);
                }
                veil_test_random(tag * 8 + 3, c0, m * g.ldc);
                for (size_t r = 0; r < m; r++)
                    for (size_t p = 0; p < k; p++)
                        oa[r * k + p] = ta ? a[p * g.lda + r] : a[r * g.lda + p];
                for (size_t p = 0; p < k; p++)
                    for (size_t col = 0; col < n; col++)
                        ob[p * n + col] = tb ? b[col * g.ldb + p] : b[p * g.ldb + col];
                veil_ref_gemm(m, n, k, oa, ob, want);
                if (acc)
                    for (size_t r = 0; r < m; r++)
                        for (size_t col = 0; col < n; col++)
                            want[r * n + col] += c0[r * g.ldc + col];
                g.a = a, g.b = b, g.c0 = c0;
                char what[128];
                snprintf(what, sizeof(what), "gemm m=%zu n=%zu k=%zu ta=%d tb=%d acc=%d", m, n, k,
                         ta, tb, acc);
                check(what, acc ? &veil_gemm_acc_cl : &veil_gemm_cl, launch_gemm, &g, m * n, want);
            next:
                free(a), free(b), free(c0), free(oa), free(ob), free(want);
            }
}

/* ---- flat relayout --------------------------------------------------------------------------- */

#define MAXT 8

/* The contract of flatop_internal.h on flat vectors. */
static void flatop_oracle(const struct veil_flatop_args *a, const uint64_t *in, size_t lin,
                          uint64_t *out, size_t lout)
{
    const uint64_t k = a->k;
    switch (a->kind) {
    case VEIL_FLATOP_COPY:
        memcpy(out, in, lout * 8);
        break;
    case VEIL_FLATOP_ROWSUM:
        for (size_t r = 0; r < lout; r++) {
            out[r] = 0;
            for (size_t j = 0; j < k; j++)
                out[r] += in[r * k + j];
        }
        break;
    case VEIL_FLATOP_BCAST:
        for (size_t i = 0; i < lout; i++)
            out[i] = in[i / k];
        break;
    case VEIL_FLATOP_REPLICATE:
        for (size_t i = 0; i < lout; i++)
            out[i] = in[i % lin] + (a->add_const ? a->c[i / lin] : 0);
        break;
    case VEIL_FLATOP_WSUM:
        for (size_t e = 0; e < lout; e++) {
            out[e] = a->add_const ? a->c0 : 0;
            for (size_t i = 0; i < k; i++)
                out[e] += a->c[i] * in[i * lout + e];
        }
        break;
    case VEIL_FLATOP_TILE:
        for (size_t i = 0; i < lout; i++)
            out[i] = in[(i / k) % lin];
        break;
    case VEIL_FLATOP_FOLD:
        memset(out, 0, lout * 8);
        for (size_t i = 0; i < lin; i++)
            out[(i / k) % lout] += in[i];
        break;
    case VEIL_FLATOP_INTERLEAVE: {
        uint64_t row = 0;
        for (size_t p = 0; p < k; p++)
            row += a->c[p];
        const size_t rows = lin / row;
        size_t o = 0, start = 0;
        for (size_t p = 0; p < k; start += rows * a->c[p], o += a->c[p], p++)
            for (size_t r = 0; r < rows; r++)
                for (size_t j = 0, at = r * row + o; j < a->c[p]; j++)
                    out[at + j] = in[start + r * a->c[p] + j];
        break;
    }
    case VEIL_FLATOP_SLICE:
        for (size_t r = 0; r < lout / k; r++)
            for (size_t j = 0; j < k; j++)
                out[r * k + j] = in[r * a->c[0] + a->c[1] + j];
        break;
    default:
        break;
    }
}

/* n words registered as tiles of the given lengths (the last takes the rest); ncuts 0: one
 * tile. */
static int tiles(uint64_t *p, size_t n, const size_t *cuts, int ncuts,
                 enum starpu_data_access_mode mode, struct starpu_data_descr *d)
{
    int nt = 0;
    size_t off = 0;
    for (int i = 0; i <= ncuts && off < n && nt < MAXT; i++) {
        size_t len = i < ncuts && cuts[i] < n - off ? cuts[i] : n - off;
        d[nt++] = vec(p + off, len, mode);
        off += len;
    }
    return nt;
}

struct fcase {
    struct veil_flatop_args a;
    uint64_t *in;
    size_t lin, lout;
    int tiling; /* bit 0: several output tiles; bit 1: several input tiles */
};

static void launch_flatop(const void *ctx, uint32_t where, body_fn body, uint64_t *out)
{
    static const size_t cut_in[] = {1, 300, 257, 31};
    const struct fcase *c = ctx;
    const size_t cut_out[] = {c->lout / 3 + 1, 1, 64, 3}; /* several tiles from 2 words on */
    struct veil_flatop_args a = c->a;
    struct starpu_data_descr d[2 * MAXT];
    a.nout = tiles(out, c->lout, cut_out, c->tiling & 1 ? 4 : 0, STARPU_W, d);
    a.nin = tiles(c->in, c->lin, cut_in, c->tiling & 2 ? 4 : 0, STARPU_R, d + a.nout);
    struct targs t = {{&a}, {sizeof(a)}, 1};
    run(&veil_flatop_cl, where, body, d, a.nout + a.nin, &t);
    unregister_all(d, a.nout + a.nin);
}

/* Runs a on lin input words and lout output words under four tilings: one tile each, several
 * each (cut unevenly, boundaries inside rows and periods), and the two mixes. */
static void check_flatop(struct veil_flatop_args a, size_t lin, size_t lout, uint64_t tag)
{
    uint64_t *in = malloc(lin * 8), *want = malloc(lout * 8);
    if (!in || !want) {
        VT_CHECK(0, "out of memory");
        goto done;
    }
    veil_test_random(tag, in, lin);
    veil_test_mix_edges(in, NULL, lin);
    flatop_oracle(&a, in, lin, want, lout);
    for (int tiling = 0; tiling < 4; tiling++) {
        struct fcase c = {a, in, lin, lout, tiling};
        char what[128];
        snprintf(what, sizeof what, "flatop kind %d k=%llu add_const %d %zu -> %zu, tiling %d",
                 a.kind, (unsigned long long)a.k, a.add_const, lin, lout, tiling);
        check(what, &veil_flatop_cl, launch_flatop, &c, lout, want);
    }
done:
    free(in), free(want);
}

static void check_flatop_all(void)
{
    struct veil_flatop_args a;
    uint64_t tag = 1;
    for (int add = 0; add < 2; add++) {
        memset(&a, 0, sizeof a);
        a.add_const = add;
        a.c0 = UINT64_MAX - 6;
        veil_test_random(500 + (uint64_t)add, a.c, VEIL_FLATOP_MAX_COPIES);
        a.c[1] = 0, a.c[2] = 1, a.c[3] = UINT64_C(1) << 63, a.c[4] = UINT64_MAX;

        a.kind = VEIL_FLATOP_COPY;
        check_flatop(a, 1000, 1000, tag++);
        check_flatop(a, 1, 1, tag++);
        a.kind = VEIL_FLATOP_ROWSUM;
        a.k = 33;
        check_flatop(a, 33 * 40, 40, tag++);
        a.k = 1;
        check_flatop(a, 257, 257, tag++);
        a.k = 1000; /* long rows: one block per output word */
        check_flatop(a, 1000 * 7, 7, tag++);
        a.k = 256;
        check_flatop(a, 256 * 3, 3, tag++);
        a.kind = VEIL_FLATOP_BCAST;
        a.k = 7;
        check_flatop(a, 150, 1050, tag++);
        a.kind = VEIL_FLATOP_REPLICATE;
        a.k = 5;
        check_flatop(a, 301, 5 * 301, tag++);
        a.k = VEIL_FLATOP_MAX_COPIES;
        check_flatop(a, 9, 9 * VEIL_FLATOP_MAX_COPIES, tag++);
        a.kind = VEIL_FLATOP_WSUM;
        a.k = 4;
        check_flatop(a, 4 * 263, 263, tag++);
        a.k = VEIL_FLATOP_MAX_COPIES;
        check_flatop(a, 5 * VEIL_FLATOP_MAX_COPIES, 5, tag++);
        a.kind = VEIL_FLATOP_TILE;
        a.k = 3;
        check_flatop(a, 50, 2 * 3 * 50, tag++);
        a.k = 1;
        check_flatop(a, 64, 64 * 17, tag++);
        a.kind = VEIL_FLATOP_FOLD;
        a.k = 3;
        check_flatop(a, 4 * 3 * 50, 50, tag++);
        a.k = 1;
        check_flatop(a, 64 * 17, 64, tag++);
        check_flatop(a, 3 * 400, 3, tag++); /* many periods: one block per output word */
        a.k = 5;
        check_flatop(a, 5 * 2 * 100, 2, tag++);
        a.kind = VEIL_FLATOP_INTERLEAVE;
        a.k = 4; /* parts of 2, 0, 5 and 1 words per row, 40 rows */
        uint64_t saved[4];
        memcpy(saved, a.c, sizeof saved);
        a.c[0] = 2, a.c[1] = 0, a.c[2] = 5, a.c[3] = 1;
        check_flatop(a, 8 * 40, 8 * 40, tag++);
        a.k = 3; /* a trailing empty part */
        a.c[0] = 3, a.c[1] = 70, a.c[2] = 0;
        check_flatop(a, 73 * 9, 73 * 9, tag++);
        a.k = 1;
        check_flatop(a, 3 * 100, 3 * 100, tag++);
        a.kind = VEIL_FLATOP_SLICE;
        a.k = 5; /* columns [2, 7) of rows of 9 */
        a.c[0] = 9, a.c[1] = 2;
        check_flatop(a, 9 * 61, 5 * 61, tag++);
        a.k = 9; /* whole rows */
        a.c[0] = 9, a.c[1] = 0;
        check_flatop(a, 9 * 61, 9 * 61, tag++);
        memcpy(a.c, saved, sizeof saved);
    }
}

/* ---- the table's sizes and edge values ------------------------------------------------------- */

/* The edge values; every pair (edge[i], edge[j]) occurs once in a and b when n >= 49. */
static const uint64_t edge[] = {
    0, 1, 2, (UINT64_C(1) << 63) - 1, UINT64_C(1) << 63, UINT64_MAX - 1, UINT64_MAX};
#define NEDGE (sizeof(edge) / sizeof(edge[0]))

static void mix_edges(uint64_t *a, uint64_t *b, size_t n)
{
    for (size_t t = 0; t < n && t < NEDGE * NEDGE; t++) {
        a[t] = edge[t % NEDGE];
        b[t] = edge[t / NEDGE];
    }
}

int main(void)
{
    int rc = veil_test_starpu_start();
    if (rc != 0)
        return rc;
#ifdef VEIL_USE_CUDA
    have_cuda = starpu_cuda_worker_get_count() > 0;
    if (have_cuda)
        starpu_cublas_init();
#endif
    if (!have_cuda)
        veil_test_log("no CUDA worker: CPU bodies against the reference only");
    static const size_t sizes[] = {1,  2,  3,   7,    31,   32,   33,   49,   63,
                                   64, 65, 257, 1000, 2047, 2048, 2049, 4099, 100003};
    for (size_t t = 0; t < sizeof(sizes) / sizeof(sizes[0]); t++) {
        size_t n = sizes[t], nblk = 64 * ((n + 63) / 64);
        uint64_t *a = malloc(nblk * 8), *b = malloc(nblk * 8), *want = malloc(nblk * 8);
        if (a == NULL || b == NULL || want == NULL) {
            VT_CHECK(0, "out of memory");
        } else {
            veil_test_random(10 + t, a, n);
            veil_test_random(20 + t, b, n);
            mix_edges(a, b, n);
            check_elementwise(n, a, b, want);
            check_bits(n, a, want);
            check_sum(n, a, b, want);
        }
        free(a), free(b), free(want);
    }
    check_im2col();
    static const size_t tshapes[][3] = {{1, 1, 0},   {1, 100, 0}, {100, 1, 2}, {31, 33, 0},
                                        {32, 32, 0}, {33, 70, 3}, {64, 64, 1}, {300, 129, 1}};
    for (size_t s = 0; s < sizeof(tshapes) / sizeof(tshapes[0]); s++)
        check_transpose(tshapes[s][0], tshapes[s][1], tshapes[s][2]);
    static const size_t gshapes[][3] = {{1, 1, 1},     {3, 5, 7},      {16, 16, 16}, {17, 15, 33},
                                        {64, 48, 100}, {129, 70, 257}, {5, 3, 3000}};
    for (size_t s = 0; s < sizeof(gshapes) / sizeof(gshapes[0]); s++)
        check_gemm(gshapes[s][0], gshapes[s][1], gshapes[s][2], 0, s + 1);
    check_gemm(2, 3, VEIL_LIMB_GEMM_KMAX + 5, 1, 99);
    check_flatop_all();
#ifdef VEIL_USE_CUDA
    if (have_cuda)
        starpu_cublas_shutdown();
#endif
    veil_test_log("%ld CPU runs against the reference, %ld CUDA runs against the CPU", runs_cpu,
                  runs_cuda);
    veil_test_starpu_stop();
    return veil_test_status();
}

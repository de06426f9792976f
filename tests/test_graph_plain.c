/* Tests the plaintext executor's forward ops (veil_plain_run and the internal executor), op by op
 * on tiny shapes: DOUBLE mode against naive double loops written here; FIXED mode bit for bit
 * against the fixed-point sequence of graph_internal.h computed here (floor truncation; the
 * nonlinear steps through tasks/nonlinear_ref.h's models); and FIXED against DOUBLE within stated
 * bounds: linear layers on inputs that are multiples of 2^-10 (exact at f = 16) differ only by
 * the floor of each truncation, 0 <= double - fixed < 1 ulp per truncation, nonlinear ones within
 * the error bounds of tasks/nonlinear.h (softmax 3.3e-4 on these rows, GELU 4.5e-4, inverse
 * square root 1.1e-4 relative to the normalised value). Also the saved state of relu, maxpool
 * (first maximum on ties), layer norm and softmax, and frac_bits other than 16. */
#include "config.h"

#include "graph/plain/plain_internal.h"
#include "tasks/nonlinear.h"
#include "tasks/nonlinear_ref.h"
#include "test_graph_plain_util.h"
#include "test_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define F 16
#define ULP (1.0 / 65536)
#define MAXN (1 << 18)

static double xs[MAXN], ws[MAXN], bs[MAXN], gs[MAXN];
static double outd[MAXN], outf[MAXN], refd[MAXN];
static uint64_t wx[MAXN], ww[MAXN], wb[MAXN], wg[MAXN], refw[MAXN];

/* Runs g in both modes into outd / outf; counts a failure when either run fails. */
static void run_both(veil_graph_t *g, const struct veil_feed *feeds, size_t nf, const char *what)
{
    int rc = tg_run(g, VEIL_PLAIN_DOUBLE, feeds, nf, outd);
    VT_CHECK(rc == VEIL_OK, "%s: DOUBLE run: %s", what, veil_last_error());
    rc = tg_run(g, VEIL_PLAIN_FIXED, feeds, nf, outf);
    VT_CHECK(rc == VEIL_OK, "%s: FIXED run: %s", what, veil_last_error());
}

static void check_close(const char *what, const double *got, const double *want, size_t n,
                        double tol)
{
    for (size_t i = 0; i < n; i++)
        if (!(fabs(got[i] - want[i]) <= tol)) {
            VT_CHECK(0, "%s: element %zu: got %.9g, want %.9g (tolerance %g)", what, i, got[i],
                     want[i], tol);
            return;
        }
}

/* FIXED output (decoded) equals the words want exactly. */
static void check_words(const char *what, const double *got, const uint64_t *want, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (got[i] != tg_dec(want[i], F)) {
            VT_CHECK(0, "%s: FIXED element %zu: got %.9g, the sequence gives %.9g", what, i,
                     got[i], tg_dec(want[i], F));
            return;
        }
}

/* 0 <= double - fixed < k ulps (floor truncations of exact products). */
static void check_floor(const char *what, const double *fixed, const double *dbl, size_t n, int k)
{
    for (size_t i = 0; i < n; i++) {
        double d = dbl[i] - fixed[i];
        if (!(d >= 0 && d < k * ULP)) {
            VT_CHECK(0, "%s: element %zu: double %.9g - fixed %.9g = %g ulp, want [0, %d)", what,
                     i, dbl[i], fixed[i], d / ULP, k);
            return;
        }
    }
}

static void test_dense(int with_bias)
{
    const size_t b = 3, in = 4, o = 5;
    veil_graph_t *g = veil_graph_new("dense");
    veil_node_t *x = veil_input(g, "x", 0, 2, (size_t[]){b, in});
    veil_node_t *w = veil_param(g, "w", 1, 2, (size_t[]){in, o});
    veil_node_t *bias = with_bias ? veil_param(g, "b", 1, 1, (size_t[]){o}) : NULL;
    veil_reveal(g, veil_dense(g, "fc", x, w, bias), 0);
    tg_fill(xs, b * in, 2, 1);
    tg_fill(ws, in * o, 1, 2);
    tg_fill(bs, o, 1, 3);
    struct veil_feed feeds[3] = {{"x", xs, b * in}, {"w", ws, in * o}, {"b", bs, o}};
    run_both(g, feeds, with_bias ? 3 : 2, "dense");
    tg_dense_d(b, in, o, xs, ws, with_bias ? bs : NULL, refd);
    check_close("dense DOUBLE", outd, refd, b * o, 1e-12);
    tg_enc_array(xs, b * in, F, wx);
    tg_enc_array(ws, in * o, F, ww);
    tg_enc_array(bs, o, F, wb);
    tg_dense_w(b, in, o, wx, ww, with_bias ? wb : NULL, F, refw);
    check_words("dense", outf, refw, b * o);
    check_floor("dense FIXED vs DOUBLE", outf, outd, b * o, 1);
    veil_graph_destroy(&g);
}

static void test_matmul(void)
{
    const size_t m = 3, k = 4, n = 2;
    veil_graph_t *g = veil_graph_new("mm");
    veil_node_t *a = veil_input(g, "a", 0, 2, (size_t[]){m, k});
    veil_node_t *bb = veil_input(g, "b", 1, 2, (size_t[]){k, n});
    veil_reveal(g, veil_matmul(g, "mm", a, bb), 0);
    tg_fill(xs, m * k, 3, 4);
    tg_fill(ws, k * n, 3, 5);
    struct veil_feed feeds[2] = {{"a", xs, m * k}, {"b", ws, k * n}};
    run_both(g, feeds, 2, "matmul");
    tg_dense_d(m, k, n, xs, ws, NULL, refd);
    check_close("matmul DOUBLE", outd, refd, m * n, 1e-12);
    tg_enc_array(xs, m * k, F, wx);
    tg_enc_array(ws, k * n, F, ww);
    tg_dense_w(m, k, n, wx, ww, NULL, F, refw);
    check_words("matmul", outf, refw, m * n);
    check_floor("matmul FIXED vs DOUBLE", outf, outd, m * n, 1);
    veil_graph_destroy(&g);
}

static void test_conv(struct tg_conv cg, int with_bias)
{
    tg_conv_geom(&cg);
    const size_t nx = cg.b * cg.c * cg.h * cg.w, nw = cg.o * cg.c * cg.kh * cg.kw;
    const size_t ny = cg.b * cg.o * cg.oh * cg.ow;
    char what[96];
    snprintf(what, sizeof what, "conv2d k%zux%zu s%zu p%zu%s", cg.kh, cg.kw, cg.stride, cg.pad,
             with_bias ? " bias" : "");
    veil_graph_t *g = veil_graph_new("conv");
    veil_node_t *x = veil_input(g, "x", 0, 4, (size_t[]){cg.b, cg.c, cg.h, cg.w});
    veil_node_t *w = veil_param(g, "w", 1, 4, (size_t[]){cg.o, cg.c, cg.kh, cg.kw});
    veil_node_t *bias = with_bias ? veil_param(g, "b", 1, 1, (size_t[]){cg.o}) : NULL;
    veil_node_t *y = veil_conv2d(g, "conv", x, w, bias, (int)cg.stride, (int)cg.pad);
    veil_reveal(g, y, 0);
    VT_CHECK(veil_node_numel(y) == ny, "%s: shape", what);
    tg_fill(xs, nx, 2, 6);
    tg_fill(ws, nw, 1, 7);
    tg_fill(bs, cg.o, 1, 8);
    struct veil_feed feeds[3] = {{"x", xs, nx}, {"w", ws, nw}, {"b", bs, cg.o}};
    run_both(g, feeds, with_bias ? 3 : 2, what);
    tg_conv_d(&cg, xs, ws, with_bias ? bs : NULL, refd);
    check_close(what, outd, refd, ny, 1e-12);
    tg_enc_array(xs, nx, F, wx);
    tg_enc_array(ws, nw, F, ww);
    tg_enc_array(bs, cg.o, F, wb);
    tg_conv_w(&cg, wx, ww, with_bias ? wb : NULL, F, refw);
    check_words(what, outf, refw, ny);
    check_floor(what, outf, outd, ny, 1);
    veil_graph_destroy(&g);
}

static void test_relu_scale(void)
{
    const size_t n = 24;
    veil_graph_t *g = veil_graph_new("ew");
    veil_node_t *x = veil_input(g, "x", 0, 2, (size_t[]){4, 6});
    veil_reveal(g, veil_relu(g, "r", x), 0);
    tg_fill(xs, n, 3, 9);
    xs[0] = 0.0;
    xs[1] = -ULP;
    xs[2] = ULP;
    struct veil_feed feeds[1] = {{"x", xs, n}};
    run_both(g, feeds, 1, "relu");
    for (size_t i = 0; i < n; i++)
        refd[i] = xs[i] > 0 ? xs[i] : 0;
    check_close("relu DOUBLE", outd, refd, n, 0);
    check_close("relu FIXED", outf, refd, n, 0);
    veil_graph_destroy(&g);

    const double cs[3] = {3.0, -0.3, 0.125};
    for (int t = 0; t < 3; t++) {
        g = veil_graph_new("scale");
        x = veil_input(g, "x", 0, 1, (size_t[]){n});
        veil_reveal(g, veil_scale(g, "s", x, cs[t]), 0);
        run_both(g, feeds, 1, "scale");
        for (size_t i = 0; i < n; i++) {
            refd[i] = xs[i] * cs[t];
            refw[i] = t == 0 ? tg_enc(xs[i], F) * 3 : tg_tr(tg_enc(xs[i], F) * tg_enc(cs[t], F), F);
        }
        check_close("scale DOUBLE", outd, refd, n, 1e-15);
        check_words("scale", outf, refw, n);
        /* -0.3 is not exact: its encoding's error (<= 2^-17) times |x| <= 3, plus the floor */
        check_close("scale FIXED vs DOUBLE", outf, outd, n, 3 * ULP / 2 + ULP);
        veil_graph_destroy(&g);
    }
}

static void test_pools(void)
{
    const size_t b = 2, c = 2, h = 6, w = 7, nx = b * c * h * w;
    const size_t ks[3] = {2, 3, 3}, ss[3] = {2, 1, 2};
    tg_fill(xs, nx, 2, 10);
    for (size_t i = 0; i < nx; i++)
        xs[i] = round(xs[i] * 4) / 4; /* coarse values: many ties */
    tg_enc_array(xs, nx, F, wx);
    struct veil_feed feeds[1] = {{"x", xs, nx}};
    for (int t = 0; t < 3; t++) {
        const size_t k = ks[t], s = ss[t], oh = (h - k) / s + 1, ow = (w - k) / s + 1;
        const size_t ny = b * c * oh * ow;
        char what[64];
        for (int avg = 0; avg < 2; avg++) {
            snprintf(what, sizeof what, "%s k%zu s%zu", avg ? "avgpool" : "maxpool", k, s);
            veil_graph_t *g = veil_graph_new("pool");
            veil_node_t *x = veil_input(g, "x", 0, 4, (size_t[]){b, c, h, w});
            veil_reveal(g, avg ? veil_avgpool2d(g, "p", x, (int)k, (int)s)
                               : veil_maxpool2d(g, "p", x, (int)k, (int)s), 0);
            run_both(g, feeds, 1, what);
            if (!avg) {
                tg_maxpool(b * c, h, w, k, s, xs, NULL, refd, NULL);
                check_close(what, outd, refd, ny, 0);
                check_close(what, outf, refd, ny, 0);
            } else {
                /* the secure protocol's constant: round(2^f / k^2) (tasks/pool.c) */
                const uint64_t inv = ((UINT64_C(1) << F) + k * k / 2) / (k * k);
                for (size_t p = 0; p < b * c; p++)
                    for (size_t i = 0; i < oh; i++)
                        for (size_t j = 0; j < ow; j++) {
                            double sd = 0;
                            uint64_t sw = 0;
                            for (size_t a = 0; a < k; a++)
                                for (size_t e = 0; e < k; e++) {
                                    sd += xs[(p * h + i * s + a) * w + j * s + e];
                                    sw += wx[(p * h + i * s + a) * w + j * s + e];
                                }
                            refd[(p * oh + i) * ow + j] = sd / (double)(k * k);
                            refw[(p * oh + i) * ow + j] = tg_tr(sw * inv, F);
                        }
                check_close(what, outd, refd, ny, 1e-15);
                check_words(what, outf, refw, ny);
                /* the constant's rounding (<= 2^-17 relative to 2^-f... times |sum| <= 18) */
                check_close(what, outf, outd, ny, 18 * ULP / 2 + ULP);
            }
            veil_graph_destroy(&g);
        }
    }
    /* global average pool over 3 x 5: enc(1/15) */
    veil_graph_t *g = veil_graph_new("gap");
    veil_node_t *x = veil_input(g, "x", 0, 4, (size_t[]){2, 3, 3, 5});
    veil_reveal(g, veil_global_avgpool(g, "gap", x), 0);
    struct veil_feed f2[1] = {{"x", xs, 90}};
    run_both(g, f2, 1, "global_avgpool");
    const uint64_t inv = tg_enc(1.0 / 15, F);
    for (size_t p = 0; p < 6; p++) {
        double sd = 0;
        uint64_t sw = 0;
        for (size_t t = 0; t < 15; t++) {
            sd += xs[p * 15 + t];
            sw += wx[p * 15 + t];
        }
        refd[p] = sd / 15;
        refw[p] = tg_tr(sw * inv, F);
    }
    check_close("global_avgpool DOUBLE", outd, refd, 6, 1e-15);
    check_words("global_avgpool", outf, refw, 6);
    check_close("global_avgpool FIXED vs DOUBLE", outf, outd, 6, 30 * ULP / 2 + ULP);
    veil_graph_destroy(&g);
}

static void test_rearrange(void)
{
    /* flatten, add, concat on axis 1 of 3-D tensors (one a constant), concat on axis 0,
     * transpose */
    tg_fill(xs, 12, 2, 11);
    tg_fill(ws, 12, 2, 12);
    tg_fill(bs, 4, 2, 13);
    veil_graph_t *g = veil_graph_new("re");
    veil_node_t *a = veil_input(g, "a", 0, 3, (size_t[]){2, 3, 2});
    veil_node_t *b = veil_input(g, "b", 0, 3, (size_t[]){2, 3, 2});
    veil_node_t *c = veil_constant(g, "c", 3, (size_t[]){2, 1, 2}, bs);
    veil_node_t *sum = veil_add(g, "sum", a, b);
    veil_node_t *cat = veil_concat(g, "cat", sum, c, 1);             /* (2, 4, 2) */
    veil_node_t *flat = veil_flatten(g, "flat", cat);                /* (2, 8) */
    veil_node_t *t = veil_transpose(g, "t", flat);                   /* (8, 2) */
    veil_node_t *cat0 = veil_concat(g, "cat0", t, t, 0);             /* (16, 2) */
    veil_reveal(g, cat0, 0);
    struct veil_feed feeds[2] = {{"a", xs, 12}, {"b", ws, 12}};
    run_both(g, feeds, 2, "rearrange");
    double catv[16];
    for (size_t n = 0; n < 2; n++)
        for (size_t r = 0; r < 4; r++)
            for (size_t k = 0; k < 2; k++)
                catv[(n * 4 + r) * 2 + k] =
                    r < 3 ? xs[(n * 3 + r) * 2 + k] + ws[(n * 3 + r) * 2 + k] : bs[n * 2 + k];
    for (size_t i = 0; i < 8; i++)
        for (size_t j = 0; j < 2; j++)
            refd[i * 2 + j] = refd[16 + i * 2 + j] = catv[j * 8 + i];
    check_close("rearrange DOUBLE", outd, refd, 32, 0);
    check_close("rearrange FIXED", outf, refd, 32, 0);
    veil_graph_destroy(&g);
}

static void test_layernorm(void)
{
    const size_t rows = 5, d = 8, n = rows * d;
    tg_fill(xs, n, 3, 14);
    for (size_t j = 0; j < d; j++) {
        xs[3 * d + j] = 7.25;                             /* a constant row gives beta */
        xs[4 * d + j] = 30000 + 5 * sin(1.0 + (double)j); /* a large mean */
    }
    tg_fill(gs, d, 1, 15);
    tg_fill(bs, d, 1, 16);
    for (size_t j = 0; j < d; j++)
        gs[j] += 1.0;
    const double eps = 1e-3;
    veil_graph_t *g = veil_graph_new("ln");
    veil_node_t *x = veil_input(g, "x", 0, 2, (size_t[]){rows, d});
    veil_node_t *gm = veil_param(g, "gamma", 1, 1, (size_t[]){d});
    veil_node_t *bt = veil_param(g, "beta", 1, 1, (size_t[]){d});
    veil_reveal(g, veil_layernorm(g, "ln", x, gm, bt, eps), 0);
    struct veil_feed feeds[3] = {{"x", xs, n}, {"gamma", gs, d}, {"beta", bs, d}};
    run_both(g, feeds, 3, "layernorm");
    tg_enc_array(xs, n, F, wx);
    tg_enc_array(gs, d, F, wg);
    tg_enc_array(bs, d, F, wb);
    for (size_t r = 0; r < rows; r++) {
        double mean = 0, var = 0;
        for (size_t j = 0; j < d; j++)
            mean += xs[r * d + j] / d;
        for (size_t j = 0; j < d; j++)
            var += (xs[r * d + j] - mean) * (xs[r * d + j] - mean) / d;
        for (size_t j = 0; j < d; j++)
            refd[r * d + j] = (xs[r * d + j] - mean) / sqrt(var + eps) * gs[j] + bs[j];
        /* the fixed-point sequence */
        uint64_t s = 0, ss = 0, xc[8], v, rr;
        for (size_t j = 0; j < d; j++)
            s += wx[r * d + j] - wx[r * d];
        uint64_t mw = tg_tr(s * tg_enc(1.0 / d, VEIL_LN_MEAN_BITS), VEIL_LN_MEAN_BITS);
        for (size_t j = 0; j < d; j++) {
            xc[j] = wx[r * d + j] - wx[r * d] - mw;
            ss += xc[j] * xc[j];
        }
        v = tg_tr(tg_tr(ss, F) * tg_enc(1.0 / d, F), F) + tg_enc(eps, F);
        veil_ref_inv_sqrt_range(1, &v, VEIL_ISQRT_LO, VEIL_ISQRT_HI, F, NULL, &rr);
        for (size_t j = 0; j < d; j++)
            refw[r * d + j] = tg_tr(tg_tr(xc[j] * rr, F) * wg[j], F) + wb[j];
    }
    check_close("layernorm DOUBLE", outd, refd, n, 1e-12);
    check_words("layernorm", outf, refw, n);
    /* xhat within |xhat| 2.5e-4 (relative error of 1/sigma) + a few ulps, times |gamma| <= 2 */
    check_close("layernorm FIXED vs DOUBLE", outf, outd, n, 2e-3);
    for (size_t j = 0; j < d; j++)
        VT_CHECK(fabs(outf[3 * d + j] - bs[j]) < 1e-4, "constant row: %g, beta %g",
                 outf[3 * d + j], bs[j]);
    veil_graph_destroy(&g);
}

static void test_softmax_gelu(void)
{
    const size_t rows = 4, k = 10, n = rows * k;
    tg_fill(xs, n, 4, 17);
    tg_enc_array(xs, n, F, wx);
    veil_graph_t *g = veil_graph_new("sm");
    veil_node_t *x = veil_input(g, "x", 0, 2, (size_t[]){rows, k});
    veil_reveal(g, veil_softmax(g, "sm", x), 0);
    struct veil_feed feeds[1] = {{"x", xs, n}};
    run_both(g, feeds, 1, "softmax");
    for (size_t r = 0; r < rows; r++) {
        double s = 0;
        for (size_t j = 0; j < k; j++)
            s += exp(xs[r * k + j]);
        for (size_t j = 0; j < k; j++)
            refd[r * k + j] = exp(xs[r * k + j]) / s;
    }
    veil_ref_softmax_lastdim(rows, k, wx, F, NULL, refw);
    check_close("softmax DOUBLE", outd, refd, n, 1e-12);
    check_words("softmax", outf, refw, n);
    check_close("softmax FIXED vs DOUBLE", outf, outd, n, 3.3e-4); /* nonlinear.h: 3.3e-4 */
    veil_graph_destroy(&g);

    const size_t ng = 200;
    tg_fill(xs, ng, 5, 18);
    xs[0] = 0;
    xs[1] = 3.45;
    xs[2] = -3.45;
    tg_enc_array(xs, ng, F, wx);
    g = veil_graph_new("gelu");
    x = veil_input(g, "x", 0, 1, (size_t[]){ng});
    veil_reveal(g, veil_gelu(g, "gelu", x), 0);
    feeds[0].numel = ng;
    run_both(g, feeds, 1, "gelu");
    for (size_t i = 0; i < ng; i++)
        refd[i] = xs[i] * 0.5 * (1 + erf(xs[i] / sqrt(2.0)));
    veil_ref_gelu(ng, wx, F, NULL, refw);
    check_close("gelu DOUBLE", outd, refd, ng, 1e-15);
    check_words("gelu", outf, refw, ng);
    check_close("gelu FIXED vs DOUBLE", outf, outd, ng, 1.0e-3 + 2 * ULP); /* nonlinear.h */
    veil_graph_destroy(&g);
}

static void test_argmax_xent(void)
{
    /* rows with ties: the first maximum wins */
    double v[24] = {1, 3, 3, 0, -1, 2,   -5, -4, -4, -6, -4, -9,  0, 0, 0, 0, 0, 0,
                    0.5, 0.25, 0.75, 0.75 + ULP, 0.75, -1};
    const double want[4] = {1, 1, 0, 3};
    veil_graph_t *g = veil_graph_new("am");
    veil_node_t *x = veil_input(g, "x", 0, 2, (size_t[]){4, 6});
    veil_reveal(g, veil_argmax(g, "am", x), 0);
    struct veil_feed feeds[2] = {{"x", v, 24}, {"y", NULL, 0}};
    run_both(g, feeds, 1, "argmax");
    check_close("argmax DOUBLE", outd, want, 4, 0);
    check_close("argmax FIXED", outf, want, 4, 0);
    veil_graph_destroy(&g);

    /* 1-D input: one index */
    g = veil_graph_new("am1");
    x = veil_input(g, "x", 0, 1, (size_t[]){6});
    veil_reveal(g, veil_argmax(g, "am", x), 0);
    feeds[0].values = v + 18;
    feeds[0].numel = 6;
    run_both(g, feeds, 1, "argmax 1-D");
    check_close("argmax 1-D", outd, want + 3, 1, 0);
    check_close("argmax 1-D FIXED", outf, want + 3, 1, 0);
    veil_graph_destroy(&g);

    /* cross-entropy of (3, 4) logits with one-hot labels */
    const size_t b = 3, c = 4;
    double lab[12] = {0, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 1};
    tg_fill(xs, b * c, 3, 19);
    g = veil_graph_new("xent");
    x = veil_input(g, "logits", 0, 2, (size_t[]){b, c});
    veil_node_t *y = veil_input(g, "labels", 1, 2, (size_t[]){b, c});
    veil_reveal(g, veil_softmax_cross_entropy(g, "loss", x, y), 0);
    feeds[0] = (struct veil_feed){"logits", xs, b * c};
    feeds[1] = (struct veil_feed){"labels", lab, b * c};
    run_both(g, feeds, 2, "softmax_cross_entropy");
    double loss = 0;
    for (size_t r = 0; r < b; r++) {
        double s = 0;
        for (size_t j = 0; j < c; j++)
            s += exp(xs[r * c + j]);
        for (size_t j = 0; j < c; j++)
            loss -= lab[r * c + j] * log(exp(xs[r * c + j]) / s) / b;
    }
    check_close("xent DOUBLE", outd, &loss, 1, 1e-12);
    /* softmax error <= 3e-4 absolute on s >= exp(-6)/4: relative <= 0.5, log error bounded */
    check_close("xent FIXED", outf, &loss, 1, 2e-2);
    veil_graph_destroy(&g);
}

/* The saved state of relu, maxpool, layernorm and softmax, through the internal executor with
 * the nodes marked saved (as a backward op would). */
static void test_saved_state(void)
{
    veil_graph_t *g = veil_graph_new("saved");
    veil_node_t *x = veil_input(g, "x", 0, 4, (size_t[]){1, 1, 4, 4});
    veil_node_t *r = veil_relu(g, "relu", x);
    veil_node_t *mp = veil_maxpool2d(g, "mp", r, 2, 2);                  /* (1, 1, 2, 2) */
    veil_node_t *fl = veil_flatten(g, "fl", mp);                         /* (1, 4) */
    veil_node_t *gm = veil_param(g, "gamma", 0, 1, (size_t[]){4});
    veil_node_t *bt = veil_param(g, "beta", 0, 1, (size_t[]){4});
    veil_node_t *ln = veil_layernorm(g, "ln", fl, gm, bt, 1e-2);
    veil_node_t *sm = veil_softmax(g, "sm", ln);
    veil_reveal(g, sm, 0);
    veil_plan_t *p = veil_compile(g, NULL);
    VT_CHECK(p != NULL, "compile: %s", veil_last_error());
    if (!p) {
        veil_graph_destroy(&g);
        return;
    }
    const int ir = veil_plan_find(p, "relu"), imp = veil_plan_find(p, "mp");
    const int iln = veil_plan_find(p, "ln"), ism = veil_plan_find(p, "sm");
    p->nodes[ir].saved = p->nodes[imp].saved = p->nodes[iln].saved = p->nodes[ism].saved = 1;
    /* windows after relu: {2, 2 | 1, 0}: tie at positions 0, 1 -> 0; {0, 0 | 0, 0} -> 0;
     * {1, 3 | 3, 3} -> 1; {0.5, 0.5 | 0.5, 0.75} -> 3; pooled row {2, 0, 3, 0.75} */
    double img[16] = {2, 2, -1, 0,  1, 0, 0, -3,  1, 3, 0.5, 0.5,  3, 3, 0.5, 0.75};
    double gv[4] = {1, 2, 0.5, 1}, bv[4] = {0, 0.25, -0.5, 1};
    const size_t want_at[4] = {0, 0, 1, 3};
    for (int mode = 0; mode < 2; mode++) {
        struct veil_plain_exec e;
        double *vals[16] = {0};
        struct veil_feed feeds[3] = {{"x", img, 16}, {"gamma", gv, 4}, {"beta", bv, 4}};
        int rc = veil_plain_exec_init(&e, p, (enum veil_plain_mode)mode);
        VT_CHECK(rc == VEIL_OK && p->count <= 16, "init");
        rc = veil_plan_bind(p, -1, feeds, 3, vals);
        VT_CHECK(rc == VEIL_OK, "bind: %s", veil_last_error());
        rc = veil_plain_exec_bind(&e, vals);
        VT_CHECK(rc == VEIL_OK, "exec bind: %s", veil_last_error());
        veil_plan_values_free(p, vals);
        rc = veil_plain_exec_run(&e, 0, p->count, 0);
        VT_CHECK(rc == VEIL_OK, "run: %s", veil_last_error());
        const int fx = mode == VEIL_PLAIN_FIXED;
#define AUX(i, k, j) (fx ? (double)e.waux[i][k][j] : e.daux[i][k][j])
#define AUXR(i, k, j) (fx ? tg_dec(e.waux[i][k][j], F) : e.daux[i][k][j])
        VT_CHECK(e.aux_numel[ir][0] == 16 && e.aux_numel[imp][0] == 16, "aux sizes");
        for (size_t i = 0; rc == VEIL_OK && i < 16; i++)
            VT_CHECK(AUX(ir, 0, i) == (img[i] >= 0), "relu mask %zu (mode %d)", i, mode);
        for (size_t w = 0; rc == VEIL_OK && w < 4; w++)
            for (size_t t = 0; t < 4; t++)
                VT_CHECK(AUX(imp, 0, w * 4 + t) == (t == want_at[w]),
                         "maxpool route window %zu position %zu (mode %d)", w, t, mode);
        /* layer norm: xhat and 1/sigma of the pooled row */
        const double row[4] = {2, 0, 3, 0.75};
        double mean = (2 + 0 + 3 + 0.75) / 4, var = 0;
        for (size_t j = 0; j < 4; j++)
            var += (row[j] - mean) * (row[j] - mean) / 4;
        const double inv = 1 / sqrt(var + 1e-2);
        VT_CHECK(rc == VEIL_OK && e.aux_numel[iln][0] == 4 && e.aux_numel[iln][1] == 1,
                 "layernorm aux sizes");
        for (size_t j = 0; rc == VEIL_OK && j < 4; j++)
            VT_CHECK(fabs(AUXR(iln, 0, j) - (row[j] - mean) * inv) <= (fx ? 1e-3 : 1e-12),
                     "layernorm xhat %zu (mode %d): %g", j, mode, AUXR(iln, 0, j));
        VT_CHECK(rc == VEIL_OK && fabs(AUXR(iln, 1, 0) - inv) <= (fx ? 2e-4 : 1e-12),
                 "layernorm 1/sigma (mode %d)", mode);
        double smv[4];
        rc = veil_plain_exec_get(&e, ism, smv);
        VT_CHECK(rc == VEIL_OK && e.aux_numel[ism][0] == 4, "softmax aux");
        for (size_t j = 0; rc == VEIL_OK && j < 4; j++)
            VT_CHECK(AUXR(ism, 0, j) == smv[j], "softmax saved output %zu", j);
#undef AUX
#undef AUXR
        veil_plain_exec_fini(&e);
    }
    veil_plan_destroy(&p);
    veil_graph_destroy(&g);
}

/* frac_bits 12: encodings and truncations follow the plan's f. */
static void test_frac_bits(void)
{
    const int f = 12;
    veil_graph_t *g = veil_graph_new("f12");
    veil_node_t *x = veil_input(g, "x", 0, 2, (size_t[]){2, 3});
    veil_node_t *w = veil_param(g, "w", 0, 2, (size_t[]){3, 2});
    veil_reveal(g, veil_dense(g, "fc", x, w, NULL), 0);
    struct veil_compile_options o;
    veil_compile_options_defaults(&o);
    o.frac_bits = f;
    veil_plan_t *p = veil_compile(g, &o);
    VT_CHECK(p != NULL, "compile f=12: %s", veil_last_error());
    tg_fill(xs, 6, 2, 20);
    tg_fill(ws, 6, 2, 21);
    struct veil_feed feeds[2] = {{"x", xs, 6}, {"w", ws, 6}};
    double *outs[1] = {outf};
    VT_CHECK(p && veil_plain_run(p, VEIL_PLAIN_FIXED, feeds, 2, outs) == VEIL_OK, "run f=12: %s",
             veil_last_error());
    tg_enc_array(xs, 6, f, wx);
    tg_enc_array(ws, 6, f, ww);
    tg_dense_w(2, 3, 2, wx, ww, NULL, f, refw);
    for (size_t i = 0; i < 4; i++)
        VT_CHECK(outf[i] == tg_dec(refw[i], f), "f=12 element %zu: %g vs %g", i, outf[i],
                 tg_dec(refw[i], f));
    veil_plan_destroy(&p);
    veil_graph_destroy(&g);

    /* nonlinear models outside their fractional-bit range are refused by name (layer norm's
     * inverse square root over [2^-8, 2^8) needs f >= 16, the GELU polynomial f <= 22) */
    const int bad_f[2] = {12, 24};
    for (int t = 0; t < 2; t++) {
        g = veil_graph_new("flimit");
        x = veil_input(g, "x", 0, 2, (size_t[]){1, 4});
        if (t == 0) {
            veil_node_t *gm = veil_param(g, "gamma", 0, 1, (size_t[]){4});
            veil_node_t *bt = veil_param(g, "beta", 0, 1, (size_t[]){4});
            veil_reveal(g, veil_layernorm(g, "norm", x, gm, bt, 1e-3), 0);
        } else {
            veil_reveal(g, veil_gelu(g, "act", x), 0);
        }
        o.frac_bits = bad_f[t];
        p = veil_compile(g, &o);
        VT_CHECK(p != NULL, "compile f=%d: %s", bad_f[t], veil_last_error());
        struct veil_feed f3[3] = {{"x", xs, 4}, {"gamma", ws, 4}, {"beta", ws, 4}};
        int rc = p ? veil_plain_run(p, VEIL_PLAIN_FIXED, f3, 3, outs) : VEIL_ERR_INVAL;
        VT_CHECK(rc == VEIL_ERR_UNSUPPORTED && strstr(veil_last_error(), t ? "'act'" : "'norm'"),
                 "f=%d refused by name: %d %s", bad_f[t], rc, veil_last_error());
        VT_CHECK(p && veil_plain_run(p, VEIL_PLAIN_DOUBLE, f3, 3, outs) == VEIL_OK,
                 "DOUBLE mode has no such limit: %s", veil_last_error());
        veil_plan_destroy(&p);
        veil_graph_destroy(&g);
    }
}

int main(void)
{
    test_dense(1);
    test_dense(0);
    test_matmul();
    test_conv((struct tg_conv){.b = 2, .c = 2, .h = 5, .w = 5, .o = 3, .kh = 3, .kw = 3,
                               .stride = 2, .pad = 1}, 1);
    test_conv((struct tg_conv){.b = 1, .c = 3, .h = 6, .w = 7, .o = 2, .kh = 2, .kw = 3,
                               .stride = 1, .pad = 0}, 0);
    test_conv((struct tg_conv){.b = 2, .c = 1, .h = 8, .w = 8, .o = 4, .kh = 5, .kw = 5,
                               .stride = 1, .pad = 2}, 1);
    /* 16 x 3 x 3 taps over 96 x 96 outputs: more than the executor's im2col buffer holds, so it
     * works in bands of output rows */
    test_conv((struct tg_conv){.b = 1, .c = 16, .h = 96, .w = 96, .o = 2, .kh = 3, .kw = 3,
                               .stride = 1, .pad = 1}, 1);
    test_relu_scale();
    test_pools();
    test_rearrange();
    test_layernorm();
    test_softmax_gelu();
    test_argmax_xent();
    test_saved_state();
    test_frac_bits();
    return veil_test_status();
}

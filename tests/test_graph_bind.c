/* Tests binding feeds to a plan (veil_plan_bind, veil_plain_run): a missing feed, a wrong element
 * count, NaN, infinity, a duplicate feed and (FIXED mode) a value outside the fixed-point range
 * each fail with the right status and a message naming the leaf; a party binds only what it owns;
 * batch normalisation folded into a conv2d (synthetic bias) and a dense layer (own bias) gives
 * W' = W s, b' = (b - mean) s + beta and the same outputs as the unfolded formula; an unfolded
 * batch norm, a bad variance and an op without a plaintext evaluation are refused by name.
 * Plans with batch norm are built by hand (the fold markings compile.c's fold.c stage sets), and
 * also through veil_compile when this build folds. */
#include "config.h"

#include "graph/plain/plain_internal.h"
#include "test_graph_plain_util.h"
#include "test_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define F 16

/* A plan copied from g's nodes as veil_compile would (no folding, no liveness: nothing freed). */
static veil_plan_t *hand_plan(const veil_graph_t *g)
{
    veil_plan_t *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    veil_compile_options_defaults(&p->opts);
    snprintf(p->model, sizeof p->model, "%s", g->name);
    p->loss = -1;
    p->count = p->nforward = g->count;
    p->nodes = calloc(g->count, sizeof *p->nodes);
    if (!p->nodes) {
        free(p);
        return NULL;
    }
    for (size_t i = 0; i < g->count; i++) {
        p->nodes[i] = *g->nodes[i];
        p->nodes[i].cvalues = NULL;
        p->nodes[i].last_use = -1;
    }
    if (veil_plan_index(p) != VEIL_OK)
        veil_plan_destroy(&p);
    return p;
}

/* Expects status want and a message containing both needles. */
static void expect(int rc, int want, const char *n1, const char *n2, const char *what)
{
    const char *msg = veil_last_error();
    VT_CHECK(rc == want, "%s: status %d (%s), want %d", what, rc, msg, want);
    VT_CHECK(n1 == NULL || strstr(msg, n1), "%s: message does not name '%s': %s", what, n1, msg);
    VT_CHECK(n2 == NULL || strstr(msg, n2), "%s: message does not say '%s': %s", what, n2, msg);
    veil_test_log("%s: %s", what, msg);
}

static void test_feed_errors(void)
{
    veil_graph_t *g = veil_graph_new("bind");
    veil_node_t *x = veil_input(g, "image", 0, 2, (size_t[]){2, 3});
    veil_node_t *w = veil_param(g, "fc.weight", 1, 2, (size_t[]){3, 2});
    veil_reveal(g, veil_dense(g, "fc", x, w, NULL), 0);
    veil_plan_t *p = veil_compile(g, NULL);
    VT_CHECK(p != NULL, "compile: %s", veil_last_error());
    if (!p)
        return;
    double xv[6] = {1, 2, 3, 4, 5, 6}, wv[6] = {1, 0, 0, 1, 1, 1}, out[4];
    double *outs[1] = {out};
    struct veil_feed ok[3] = {{"image", xv, 6}, {"fc.weight", wv, 6}, {"unused", NULL, 0}};
    for (int mode = 0; mode < 2; mode++) {
        int rc = veil_plain_run(p, (enum veil_plain_mode)mode, ok, 3, outs);
        VT_CHECK(rc == VEIL_OK && out[0] == 4 && out[3] == 11, "good feeds (mode %d): %s", mode,
                 veil_last_error());
    }
    expect(veil_plain_run(p, VEIL_PLAIN_DOUBLE, ok + 1, 1, outs), VEIL_ERR_INVAL, "'image'",
           "6 values", "missing input");
    expect(veil_plain_run(p, VEIL_PLAIN_FIXED, ok, 1, outs), VEIL_ERR_INVAL, "'fc.weight'",
           "no feed", "missing parameter");
    struct veil_feed bad[2] = {{"image", xv, 5}, {"fc.weight", wv, 6}};
    expect(veil_plain_run(p, VEIL_PLAIN_DOUBLE, bad, 2, outs), VEIL_ERR_INVAL, "'image'",
           "give 6", "wrong numel");
    double nanv[6] = {1, 2, NAN, 4, 5, 6}, infv[6] = {1, 2, 3, 4, -INFINITY, 6};
    bad[0] = (struct veil_feed){"image", xv, 6};
    bad[1] = (struct veil_feed){"fc.weight", nanv, 6};
    expect(veil_plain_run(p, VEIL_PLAIN_DOUBLE, bad, 2, outs), VEIL_ERR_INVAL, "'fc.weight'",
           "NaN", "NaN");
    bad[1].values = infv;
    expect(veil_plain_run(p, VEIL_PLAIN_FIXED, bad, 2, outs), VEIL_ERR_INVAL, "'fc.weight'",
           "infinite", "infinity");
    bad[1].values = NULL;
    expect(veil_plain_run(p, VEIL_PLAIN_FIXED, bad, 2, outs), VEIL_ERR_INVAL, "'fc.weight'",
           "NULL", "NULL values");
    /* 1e15 is a double but beyond 2^46, the range at f = 16 */
    double big[6] = {1, 2, 3, 1e15, 5, 6};
    bad[0] = (struct veil_feed){"image", big, 6};
    bad[1] = (struct veil_feed){"fc.weight", wv, 6};
    expect(veil_plain_run(p, VEIL_PLAIN_FIXED, bad, 2, outs), VEIL_ERR_RANGE, "'image'",
           "fixed point", "out of range in FIXED mode");
    VT_CHECK(veil_plain_run(p, VEIL_PLAIN_DOUBLE, bad, 2, outs) == VEIL_OK,
             "DOUBLE mode takes 1e15: %s", veil_last_error());
    struct veil_feed dup[3] = {{"image", xv, 6}, {"fc.weight", wv, 6}, {"image", xv, 6}};
    expect(veil_plain_run(p, VEIL_PLAIN_DOUBLE, dup, 3, outs), VEIL_ERR_INVAL, "'image'", "twice",
           "duplicate feed");
    double *nobuf[1] = {NULL};
    expect(veil_plain_run(p, VEIL_PLAIN_DOUBLE, ok, 2, nobuf), VEIL_ERR_INVAL, "'fc'", "buffer",
           "missing output buffer");
    expect(veil_plain_run(p, VEIL_PLAIN_MODE_COUNT, ok, 2, outs), VEIL_ERR_INVAL, NULL, "mode",
           "bad mode");

    /* a party binds only its own leaves: party 1 needs no image */
    double *vals[8] = {0};
    int rc = veil_plan_bind(p, 1, ok + 1, 1, vals);
    const int ix = veil_plan_find(p, "image"), iw = veil_plan_find(p, "fc.weight");
    VT_CHECK(rc == VEIL_OK && !vals[ix] && vals[iw] && vals[iw][3] == 1, "party 1 bind: %s",
             veil_last_error());
    veil_plan_values_free(p, vals);
    VT_CHECK(vals[iw] == NULL, "values_free clears the table");
    expect(veil_plan_bind(p, 0, ok + 1, 1, vals), VEIL_ERR_INVAL, "'image'", "no feed",
           "party 0 bind without its image");
    VT_CHECK(vals[iw] == NULL && vals[ix] == NULL, "a failed bind leaves nothing allocated");
    veil_plan_destroy(&p);
    veil_graph_destroy(&g);

    /* a constant beyond the fixed-point range: fine in DOUBLE, refused by name in FIXED */
    g = veil_graph_new("const");
    double cv[2] = {1.0, -3e14};
    veil_node_t *in = veil_input(g, "in", 0, 1, (size_t[]){2});
    veil_reveal(g, veil_add(g, "sum", in, veil_constant(g, "offset", 1, (size_t[]){2}, cv)), 0);
    p = veil_compile(g, NULL);
    VT_CHECK(p != NULL, "compile: %s", veil_last_error());
    struct veil_feed one[1] = {{"in", xv, 2}};
    VT_CHECK(p && veil_plain_run(p, VEIL_PLAIN_DOUBLE, one, 1, outs) == VEIL_OK &&
                 out[0] == 2 && out[1] == 2 - 3e14,
             "constant in DOUBLE: %s", veil_last_error());
    expect(veil_plain_run(p, VEIL_PLAIN_FIXED, one, 1, outs), VEIL_ERR_RANGE, "'offset'",
           "fixed point", "constant out of range in FIXED mode");
    veil_plan_destroy(&p);
    veil_graph_destroy(&g);
}

/* x (2, 2, 4, 4) -> conv 3x3 (3 out, no bias: a synthetic one) -> bn1 -> relu -> flatten ->
 * dense (own bias) -> bn2 -> output. */
struct bn_net {
    veil_graph_t *g;
    double x[64], w1[54], w2[48 * 4], b2[4];
    double bn1[4][3], bn2[4][4]; /* gamma, beta, mean, var */
};

static const char *bn_names[2][4] = {{"bn1.gamma", "bn1.beta", "bn1.mean", "bn1.var"},
                                     {"bn2.gamma", "bn2.beta", "bn2.mean", "bn2.var"}};

static void bn_build(struct bn_net *t, int with_synthetic)
{
    veil_graph_t *g = t->g = veil_graph_new("bn");
    veil_node_t *x = veil_input(g, "x", 0, 4, (size_t[]){2, 2, 4, 4});
    veil_node_t *w1 = veil_param(g, "c1.w", 1, 4, (size_t[]){3, 2, 3, 3});
    veil_node_t *fb = with_synthetic ? veil_param(g, "bn1.folded_bias", 1, 1, (size_t[]){3})
                                     : NULL;
    veil_node_t *c1 = veil_conv2d(g, "c1", x, w1, fb, 1, 1);              /* (2, 3, 4, 4) */
    veil_node_t *p1[4], *p2[4];
    for (int i = 0; i < 4; i++)
        p1[i] = veil_param(g, bn_names[0][i], 1, 1, (size_t[]){3});
    veil_node_t *n1 = veil_batchnorm(g, "bn1", c1, p1[0], p1[1], p1[2], p1[3], 1e-3);
    veil_node_t *fl = veil_flatten(g, "fl", veil_relu(g, "r1", n1));       /* (2, 48) */
    veil_node_t *w2 = veil_param(g, "fc.w", 1, 2, (size_t[]){48, 4});
    veil_node_t *b2 = veil_param(g, "fc.b", 1, 1, (size_t[]){4});
    veil_node_t *fc = veil_dense(g, "fc", fl, w2, b2);
    for (int i = 0; i < 4; i++)
        p2[i] = veil_param(g, bn_names[1][i], 1, 1, (size_t[]){4});
    veil_node_t *n2 = veil_batchnorm(g, "bn2", fc, p2[0], p2[1], p2[2], p2[3], 1e-5);
    veil_reveal(g, n2, 0);
    VT_CHECK(veil_graph_status(g) == VEIL_OK, "bn graph: %s", veil_graph_error(g));
    tg_fill(t->x, 64, 2, 30);
    tg_fill(t->w1, 54, 0.5, 31);
    tg_fill(t->w2, 192, 0.25, 32);
    tg_fill(t->b2, 4, 1, 33);
    for (int i = 0; i < 4; i++) {
        tg_fill(t->bn1[i], 3, 1, 40 + (uint64_t)i);
        tg_fill(t->bn2[i], 4, 1, 50 + (uint64_t)i);
    }
    for (int c = 0; c < 3; c++)
        t->bn1[3][c] = fabs(t->bn1[3][c]) + 0.1;
    for (int c = 0; c < 4; c++)
        t->bn2[3][c] = fabs(t->bn2[3][c]) + 0.1;
}

static size_t bn_feeds(struct bn_net *t, struct veil_feed *fd)
{
    size_t k = 0;
    fd[k++] = (struct veil_feed){"x", t->x, 64};
    fd[k++] = (struct veil_feed){"c1.w", t->w1, 54};
    fd[k++] = (struct veil_feed){"fc.w", t->w2, 192};
    fd[k++] = (struct veil_feed){"fc.b", t->b2, 4};
    for (int i = 0; i < 4; i++) {
        fd[k++] = (struct veil_feed){bn_names[0][i], t->bn1[i], 3};
        fd[k++] = (struct veil_feed){bn_names[1][i], t->bn2[i], 4};
    }
    return k;
}

/* The unfolded network in double. */
static void bn_reference(const struct bn_net *t, double *out)
{
    struct tg_conv cg = {.b = 2, .c = 2, .h = 4, .w = 4, .o = 3, .kh = 3, .kw = 3, .stride = 1,
                         .pad = 1};
    tg_conv_geom(&cg);
    double y1[96], y2[8];
    tg_conv_d(&cg, t->x, t->w1, NULL, y1);
    for (size_t i = 0; i < 96; i++) {
        size_t c = (i / 16) % 3;
        double v = t->bn1[0][c] * (y1[i] - t->bn1[2][c]) / sqrt(t->bn1[3][c] + 1e-3) +
                   t->bn1[1][c];
        y1[i] = v > 0 ? v : 0;
    }
    tg_dense_d(2, 48, 4, y1, t->w2, t->b2, y2);
    for (size_t i = 0; i < 8; i++) {
        size_t c = i % 4;
        out[i] = t->bn2[0][c] * (y2[i] - t->bn2[2][c]) / sqrt(t->bn2[3][c] + 1e-5) + t->bn2[1][c];
    }
}

/* Marks p as fold.c does. */
static void mark_folded(veil_plan_t *p)
{
    int c1 = veil_plan_find(p, "c1"), bn1 = veil_plan_find(p, "bn1");
    int fc = veil_plan_find(p, "fc"), bn2 = veil_plan_find(p, "bn2");
    p->nodes[veil_plan_find(p, "bn1.folded_bias")].synthetic = 1;
    p->nodes[c1].fold_bn = bn1;
    p->nodes[bn1].folded_into = c1;
    p->nodes[fc].fold_bn = bn2;
    p->nodes[bn2].folded_into = fc;
}

static void check_bn_plan(veil_plan_t *p, struct bn_net *t, const char *what)
{
    struct veil_feed fd[16];
    size_t nf = bn_feeds(t, fd);
    double want[8], got[8];
    double *outs[1] = {got};
    bn_reference(t, want);
    int rc = veil_plain_run(p, VEIL_PLAIN_DOUBLE, fd, nf, outs);
    VT_CHECK(rc == VEIL_OK, "%s DOUBLE: %s", what, veil_last_error());
    for (int i = 0; rc == VEIL_OK && i < 8; i++)
        VT_CHECK(fabs(got[i] - want[i]) <= 1e-10 * (1 + fabs(want[i])), "%s DOUBLE %d: %.12g vs "
                 "%.12g", what, i, got[i], want[i]);
    rc = veil_plain_run(p, VEIL_PLAIN_FIXED, fd, nf, outs);
    VT_CHECK(rc == VEIL_OK, "%s FIXED: %s", what, veil_last_error());
    /* folded weights are rounded to 2^-17 each: over 18 and 48 terms of |x| <= 2 the error stays
     * far below 0.01 (the bound of the whole two-layer chain) */
    for (int i = 0; rc == VEIL_OK && i < 8; i++)
        VT_CHECK(fabs(got[i] - want[i]) <= 1e-2, "%s FIXED %d: %.6g vs %.6g", what, i, got[i],
                 want[i]);
}

static void test_fold(void)
{
    struct bn_net t;
    bn_build(&t, 1);
    veil_plan_t *p = hand_plan(t.g);
    VT_CHECK(p != NULL, "hand plan");
    if (!p)
        return;
    mark_folded(p);
    check_bn_plan(p, &t, "folded by hand");

    /* the folded values themselves, at the weight owner (party 1) */
    struct veil_feed fd[16];
    size_t nf = bn_feeds(&t, fd);
    double *vals[32] = {0};
    int rc = veil_plan_bind(p, 1, fd + 1, nf - 1, vals); /* party 1 needs no x */
    VT_CHECK(rc == VEIL_OK && p->count <= 32, "bind at the weight owner: %s", veil_last_error());
    const double *w1 = vals[veil_plan_find(p, "c1.w")];
    const double *fb = vals[veil_plan_find(p, "bn1.folded_bias")];
    const double *w2 = vals[veil_plan_find(p, "fc.w")], *b2 = vals[veil_plan_find(p, "fc.b")];
    VT_CHECK(rc == VEIL_OK && w1 && fb && w2 && b2 && !vals[veil_plan_find(p, "x")],
             "folded arrays present");
    for (size_t i = 0; rc == VEIL_OK && i < 54; i++) {
        size_t o = i / 18; /* OIHW: output channel = dim 0 */
        double s = t.bn1[0][o] / sqrt(t.bn1[3][o] + 1e-3);
        VT_CHECK(w1[i] == t.w1[i] * s, "conv W' %zu", i);
    }
    for (size_t o = 0; rc == VEIL_OK && o < 3; o++) {
        double s = t.bn1[0][o] / sqrt(t.bn1[3][o] + 1e-3);
        VT_CHECK(fb[o] == (0 - t.bn1[2][o]) * s + t.bn1[1][o], "synthetic b' %zu", o);
    }
    for (size_t i = 0; rc == VEIL_OK && i < 192; i++) {
        size_t o = i % 4; /* (in, out): channel = column */
        double s = t.bn2[0][o] / sqrt(t.bn2[3][o] + 1e-5);
        VT_CHECK(w2[i] == t.w2[i] * s, "dense W' %zu", i);
    }
    for (size_t o = 0; rc == VEIL_OK && o < 4; o++) {
        double s = t.bn2[0][o] / sqrt(t.bn2[3][o] + 1e-5);
        VT_CHECK(b2[o] == (t.b2[o] - t.bn2[2][o]) * s + t.bn2[1][o], "dense b' %zu", o);
    }
    veil_plan_values_free(p, vals);
    /* party 0 holds only x: nothing folded there */
    rc = veil_plan_bind(p, 0, fd, 1, vals);
    VT_CHECK(rc == VEIL_OK && vals[veil_plan_find(p, "x")] && !vals[veil_plan_find(p, "c1.w")],
             "bind at party 0: %s", veil_last_error());
    veil_plan_values_free(p, vals);

    /* a variance below -eps */
    double neg[3] = {0.5, -1.0, 0.5};
    for (size_t k = 0; k < nf; k++)
        if (strcmp(fd[k].name, "bn1.var") == 0)
            fd[k].values = neg;
    double out[8], *outs[1] = {out};
    expect(veil_plain_run(p, VEIL_PLAIN_DOUBLE, fd, nf, outs), VEIL_ERR_INVAL, "'bn1'", "var",
           "negative variance");
    nf = bn_feeds(&t, fd);

    /* the same batch norms not folded: refused by name */
    int bn1 = veil_plan_find(p, "bn1");
    p->nodes[bn1].folded_into = -1;
    p->nodes[veil_plan_find(p, "c1")].fold_bn = -1;
    p->nodes[veil_plan_find(p, "bn1.folded_bias")].synthetic = 0;
    double zero[3] = {0, 0, 0};
    fd[nf++] = (struct veil_feed){"bn1.folded_bias", zero, 3};
    expect(veil_plain_run(p, VEIL_PLAIN_FIXED, fd, nf, outs), VEIL_ERR_UNSUPPORTED, "'bn1'",
           "not folded", "unfolded batch norm");

    /* an op without a plaintext evaluation */
    p->nodes[bn1].op = VEIL_OP_COUNT;
    expect(veil_plain_run(p, VEIL_PLAIN_DOUBLE, fd, nf, outs), VEIL_ERR_UNSUPPORTED, "'bn1'",
           "no plaintext evaluation", "op without evaluation");
    veil_plan_destroy(&p);
    veil_graph_destroy(&t.g);

    /* through veil_compile, when this build folds (fold.c): the same outputs */
    bn_build(&t, 0);
    p = veil_compile(t.g, NULL);
    if (p) {
        check_bn_plan(p, &t, "folded by veil_compile");
        veil_plan_destroy(&p);
    } else {
        veil_test_log("veil_compile does not fold batch norm in this build: %s",
                      veil_last_error());
    }
    veil_graph_destroy(&t.g);
}

int main(void)
{
    test_feed_errors();
    test_fold();
    return veil_test_status();
}

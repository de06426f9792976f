/* Tests the range check before deployment (veil_plain_check_ranges, include/veil/graph.h): a dense
 * layer whose inputs are near the feed range (30000 of +-32768) with an inner dimension of 64 and
 * weights of 1000 sums to 1.92e9, beyond the 2^30 a sum of products may reach before its
 * truncation at f = 16 (the secure truncation's |x| < 2^62 words: the secure run wraps it
 * silently), and is reported OVER at that node with the exact sum, while its input is NEAR and
 * everything else OK; the secure run (N = 2) of that model indeed returns wrong sums (off by
 * multiples of 2^32) where the plaintext FIXED run, exact to 2^63 words, gives 1.92e9; a row whose
 * positive and negative products cancel has a final sum of 0 (OK, and the secure run gives 0 to
 * one ulp) and a largest partial sum of 9.6e8; a softmax row spread of 102 (beyond exp's domain,
 * 64) is NEAR, 3 is OK; a reciprocal of -1 is OVER (the fixed-point run refuses it) and the node
 * reading it UNREACHED, a reciprocal of values in [0.5, 4] OK; a div by 0 is OVER at its divisor
 * (the quotients of the other elements measured), a feed of 1e15 (beyond the encoder) OVER and
 * refused, the div after it UNREACHED; a layer-norm row of variance 800 is OK (rows are scaled
 * into the inverse square root's domain), one of d var >= 2^46 OVER at its d x variance (the
 * row scale's sum of squares wraps), a constant row measures 0; an exp of 20 is OVER
 * and one of 1 NEAR; a well-scaled conv / pool / dense / layer norm / gelu / softmax model is all
 * OK over two runs, which the report accumulates. Bad input: NULL arguments, a missing feed
 * (named), a report of another plan. The printed table names the OVER node and the summary.
 */
#include "config.h"

#include "test_graph_plain_util.h"
#include "test_graph_util.h"
#include "test_mpc_util.h"
#include "test_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The row of node's quantity, or NULL (a failure counted). */
static const struct veil_range_check *row(const veil_range_report_t *r, const char *node,
                                          const char *quantity)
{
    for (size_t i = 0; i < veil_range_report_count(r); i++) {
        const struct veil_range_check *c = veil_range_report_get(r, i);
        if (!strcmp(c->node, node) && !strcmp(c->quantity, quantity))
            return c;
    }
    VT_CHECK(0, "no row for %s's %s", node, quantity);
    return NULL;
}

static void expect(const veil_range_report_t *r, const char *node, const char *quantity, int v)
{
    const struct veil_range_check *c = row(r, node, quantity);
    VT_CHECK(!c || c->verdict == v, "%s's %s: %s, expected %s (max %g, limit %g, %s)", node,
             quantity, c ? veil_range_verdict_name(c->verdict) : "?", veil_range_verdict_name(v),
             c ? c->max : 0, c ? c->limit : 0, c ? c->note : "");
}

static veil_plan_t *compile(veil_graph_t *g)
{
    veil_plan_t *p = veil_compile(g, NULL);
    VT_CHECK(p != NULL, "compile: %s", veil_last_error());
    return p;
}

/* One check run of p into a new report; NULL (a failure counted) when it fails. */
static veil_range_report_t *check(const veil_plan_t *p, const struct veil_feed *f, size_t n)
{
    veil_range_report_t *r = NULL;
    int rc = veil_plain_check_ranges(p, f, n, &r);
    VT_CHECK(rc == VEIL_OK && r, "check: %s", veil_last_error());
    if (r && veil_test_verbose())
        veil_range_report_print(r, stderr);
    return r;
}

/* The secure run of p (N = 2, a dealer) on f: output 0 of party 1 into y (n values); 0, or 1
 * after counting a failure. */
struct shared {
    double y[3][64];
    struct veil_run_stats stats[4];
};
static struct shared *sh;

static int secure(const veil_plan_t *p, const struct veil_feed *f, size_t nf, double *y, size_t n)
{
    struct veil_test_graph_step st = {
        .plan = p, .feeds = f, .nfeeds = nf, .y = &sh->y[0][0], .y_stride = 64, .stats = sh->stats};
    struct veil_test_graph_opts o = {.nparties = 2, .dealer = 1};
    memset(sh, 0, sizeof *sh);
    if (veil_test_graph_run(&o, veil_test_graph_step_child, &st, NULL) != VEIL_OK) {
        VT_CHECK(0, "the secure run failed");
        return 1;
    }
    memcpy(y, sh->y[1], n * sizeof *y);
    return 0;
}

static void test_dense_overflow(void)
{
    veil_graph_t *g = veil_graph_new("ovf");
    const size_t xd[2] = {1, 64}, wd[2] = {64, 64};
    veil_node_t *x = veil_input(g, "x", 1, 2, xd), *w = veil_param(g, "w", 0, 2, wd);
    veil_reveal(g, veil_relu(g, "act", veil_dense(g, "fc", x, w, NULL)), VEIL_ALL_PARTIES);
    veil_plan_t *p = compile(g);
    static double xv[64], wv[64 * 64], y[64];
    for (size_t i = 0; i < 64 * 64; i++)
        wv[i] = 1000;
    for (size_t i = 0; i < 64; i++)
        xv[i] = 30000;
    struct veil_feed f[2] = {{"x", xv, 64}, {"w", wv, 64 * 64}};
    veil_range_report_t *r = p ? check(p, f, 2) : NULL;
    if (r) {
        const struct veil_range_check *c = row(r, "fc", "accumulation");
        VT_CHECK(c && c->max == 1.92e9 && c->min == 1.92e9 && c->peak == 1.92e9 &&
                     c->limit == ldexp(1, 30) && c->count == 64 && c->margin < 0,
                 "fc: max %g min %g peak %g limit %g count %zu margin %g", c ? c->max : 0,
                 c ? c->min : 0, c ? c->peak : 0, c ? c->limit : 0, c ? c->count : 0,
                 c ? c->margin : 0);
        expect(r, "fc", "accumulation", VEIL_RANGE_OVER);
        expect(r, "x", "value", VEIL_RANGE_NEAR);
        expect(r, "w", "value", VEIL_RANGE_OK);
        expect(r, "fc", "value", VEIL_RANGE_OK);
        expect(r, "act", "value", VEIL_RANGE_OK);
        VT_CHECK(veil_range_report_worst(r) == VEIL_RANGE_OVER &&
                     veil_range_report_tally(r, VEIL_RANGE_OVER) == 1,
                 "worst %d, %zu OVER", veil_range_report_worst(r),
                 veil_range_report_tally(r, VEIL_RANGE_OVER));
        /* the table names the node, and the summary says what follows */
        FILE *t = tmpfile();
        char buf[8192] = "";
        if (t) {
            veil_range_report_print(r, t);
            rewind(t);
            buf[fread(buf, 1, sizeof buf - 1, t)] = '\0';
            fclose(t);
        }
        VT_CHECK(strstr(buf, "\nfc ") && strstr(buf, "accumulation") &&
                     strstr(buf, "OVER\n    fc: a sum of products passes 2^62") &&
                     strstr(buf, "summary: 3 OK, 1 NEAR, 1 OVER, 0 UNREACHED"),
                 "printed table:\n%s", buf);
    }
    veil_range_report_destroy(&r);
    /* what OVER means: the plaintext FIXED run, whose floor truncation holds up to 2^63 words,
     * gives 1.92e9, but the secure truncation (|x| < 2^62 words) wraps: off by multiples of
     * 2^(64-2f) = 4.3e9 (each output wrong with probability about 0.4; 64 outputs) */
    double *outs[1] = {y};
    VT_CHECK(p && veil_plain_run(p, VEIL_PLAIN_FIXED, f, 2, outs) == VEIL_OK && y[0] == 1.92e9,
             "plain FIXED: %g", y[0]);
    int off = 0;
    if (p && secure(p, f, 2, y, 64) == 0)
        for (size_t i = 0; i < 64; i++)
            off += fabs(y[i] - 1.92e9) > 1e9;
    VT_CHECK(off > 0, "the secure run did not wrap any of the 64 sums");
    veil_test_log("secure run: %d of 64 outputs wrapped", off);
    /* +30000 on the first 32 inputs, -30000 on the others: the final sum is 0 (OK, and the secure
     * run gives 0 to its truncation's ulp), the largest partial 32 * 3e7 */
    for (size_t i = 32; i < 64; i++)
        xv[i] = -30000;
    r = p ? check(p, f, 2) : NULL;
    if (r) {
        const struct veil_range_check *c = row(r, "fc", "accumulation");
        VT_CHECK(c && c->max_abs == 0 && c->peak == 9.6e8 && c->verdict == VEIL_RANGE_OK,
                 "cancelling row: max_abs %g peak %g", c ? c->max_abs : 0, c ? c->peak : 0);
    }
    veil_range_report_destroy(&r);
    if (p && secure(p, f, 2, y, 64) == 0)
        for (size_t i = 0; i < 64; i++)
            VT_CHECK(fabs(y[i]) <= ldexp(1, -16), "cancelling row, secure: %g", y[i]);
    veil_plan_destroy(&p);
    veil_graph_destroy(&g);
}

static void test_softmax_spread(void)
{
    veil_graph_t *g = veil_graph_new("sm");
    const size_t xd[2] = {3, 4};
    veil_reveal(g, veil_softmax(g, "sm", veil_input(g, "x", 1, 2, xd)), 1);
    veil_plan_t *p = compile(g);
    double xv[12] = {0, 1, 2, 3, 0, -100, 1, 2, 5, 5, 5, 5};
    struct veil_feed f[1] = {{"x", xv, 12}};
    veil_range_report_t *r = p ? check(p, f, 1) : NULL;
    if (r) {
        const struct veil_range_check *c = row(r, "sm", "row spread");
        VT_CHECK(c && c->max == 102 && c->min == 0 && c->count == 3 &&
                     c->verdict == VEIL_RANGE_NEAR && strstr(c->note, "exact 0"),
                 "softmax spread: max %g min %g count %zu verdict %d note '%s'", c ? c->max : 0,
                 c ? c->min : 0, c ? c->count : 0, c ? c->verdict : -1, c ? c->note : "");
        expect(r, "sm", "value", VEIL_RANGE_OK);
        VT_CHECK(veil_range_report_worst(r) == VEIL_RANGE_NEAR, "worst %d",
                 veil_range_report_worst(r));
    }
    veil_range_report_destroy(&r);
    xv[5] = -1; /* spread 3 */
    r = p ? check(p, f, 1) : NULL;
    if (r)
        expect(r, "sm", "row spread", VEIL_RANGE_OK);
    veil_range_report_destroy(&r);
    veil_plan_destroy(&p);
    veil_graph_destroy(&g);
}

static void test_reciprocal_domain(void)
{
    veil_graph_t *g = veil_graph_new("rc");
    const size_t xd[2] = {1, 4};
    veil_node_t *rc = veil_reciprocal(g, "r", veil_input(g, "x", 1, 2, xd));
    veil_reveal(g, veil_scale(g, "twice", rc, 2.0), 1);
    veil_plan_t *p = compile(g);
    double xv[4] = {0.5, 2, -1, 4};
    struct veil_feed f[1] = {{"x", xv, 4}};
    veil_range_report_t *r = p ? check(p, f, 1) : NULL;
    if (r) {
        const struct veil_range_check *c = row(r, "r", "input");
        VT_CHECK(c && c->min == -1 && c->max == 4 && c->lo == ldexp(1, -16) && c->limit == 32768 &&
                     c->verdict == VEIL_RANGE_OVER && strstr(c->note, "refused"),
                 "reciprocal input: min %g lo %g verdict %d note '%s'", c ? c->min : 0,
                 c ? c->lo : 0, c ? c->verdict : -1, c ? c->note : "");
        expect(r, "r", "value", VEIL_RANGE_UNREACHED);
        expect(r, "twice", "value", VEIL_RANGE_UNREACHED);
        VT_CHECK(veil_range_report_worst(r) == VEIL_RANGE_OVER, "worst %d",
                 veil_range_report_worst(r));
    }
    veil_range_report_destroy(&r);
    xv[2] = 1;
    r = p ? check(p, f, 1) : NULL;
    if (r) {
        VT_CHECK(veil_range_report_worst(r) == VEIL_RANGE_OK, "in-domain reciprocal: worst %d",
                 veil_range_report_worst(r));
        const struct veil_range_check *c = row(r, "twice", "value");
        VT_CHECK(c && fabs(c->max - 4) < 1e-3 && fabs(c->min - 0.5) < 1e-3,
                 "2/x over [0.5, 4]: [%g, %g]", c ? c->min : 0, c ? c->max : 0);
    }
    veil_range_report_destroy(&r);
    veil_plan_destroy(&p);
    veil_graph_destroy(&g);
}

/* div by 0: the divisor OVER (the fixed-point run refuses it), the quotients of the other
 * elements measured, the value not reached; a feed beyond the encoder's 2^46: the leaf OVER,
 * refused, and the div not reached. */
static void test_div_and_encoder(void)
{
    veil_graph_t *g = veil_graph_new("dv");
    const size_t d[2] = {1, 3};
    veil_node_t *q = veil_div(g, "q", veil_input(g, "a", 1, 2, d), veil_input(g, "b", 1, 2, d));
    veil_reveal(g, q, 1);
    veil_plan_t *p = compile(g);
    double av[3] = {1, 2, 3}, bv[3] = {0.5, 0, 2};
    struct veil_feed f[2] = {{"a", av, 3}, {"b", bv, 3}};
    veil_range_report_t *r = p ? check(p, f, 2) : NULL;
    if (r) {
        expect(r, "q", "divisor", VEIL_RANGE_OVER);
        const struct veil_range_check *c = row(r, "q", "quotient");
        VT_CHECK(c && c->count == 2 && c->max == 2 && c->verdict == VEIL_RANGE_OK,
                 "quotient: count %zu max %g verdict %d", c ? c->count : 0, c ? c->max : 0,
                 c ? c->verdict : -1);
        expect(r, "q", "value", VEIL_RANGE_UNREACHED);
    }
    veil_range_report_destroy(&r);
    av[0] = 1e15;
    bv[1] = 1;
    r = p ? check(p, f, 2) : NULL;
    if (r) {
        const struct veil_range_check *c = row(r, "a", "value");
        VT_CHECK(c && c->verdict == VEIL_RANGE_OVER && strstr(c->note, "encoder"),
                 "a feed of 1e15: verdict %d note '%s'", c ? c->verdict : -1, c ? c->note : "");
        expect(r, "b", "value", VEIL_RANGE_OK);
        expect(r, "q", "divisor", VEIL_RANGE_UNREACHED);
        expect(r, "q", "value", VEIL_RANGE_UNREACHED);
    }
    veil_range_report_destroy(&r);
    veil_plan_destroy(&p);
    veil_graph_destroy(&g);
}

static void test_layernorm_exp(void)
{
    veil_graph_t *g = veil_graph_new("ln");
    const size_t xd[2] = {3, 8}, gd[1] = {8}, ed[2] = {1, 2};
    veil_node_t *gm = veil_param(g, "gamma", 0, 1, gd), *bt = veil_param(g, "beta", 0, 1, gd);
    veil_reveal(g, veil_layernorm(g, "ln", veil_input(g, "x", 1, 2, xd), gm, bt, 1e-5), 1);
    veil_reveal(g, veil_exp(g, "e", veil_input(g, "z", 1, 2, ed)), 1);
    veil_plan_t *p = compile(g);
    double xv[24] = {1, -1, 0.5, 0, 2,  -2,  0.25, 0,  /* variance about 1.3 */
                     0, 40, -40, 0, 40, -40, 0,    0,  /* variance 800 */
                     7, 7,  7,   7, 7,  7,   7,    7}; /* constant: gives beta */
    double gv[8] = {1, 1, 1, 1, 1, 1, 1, 1}, bv[8] = {0}, zv[2] = {20, -3};
    struct veil_feed f[4] = {{"x", xv, 24}, {"gamma", gv, 8}, {"beta", bv, 8}, {"z", zv, 2}};
    veil_range_report_t *r = p ? check(p, f, 4) : NULL;
    if (r) {
        /* d var per row: 10.24 (about 1.3 x 8), 6400 (800 x 8: right since rows are scaled
         * into the inverse square root's domain) and 0 (the constant row) */
        const struct veil_range_check *c = row(r, "ln", "d x variance");
        VT_CHECK(c && fabs(c->max - 6400) < 1 && c->min == 0 && c->count == 3 &&
                     c->verdict == VEIL_RANGE_OK,
                 "layer norm d x variance: [%g, %g] count %zu verdict %d", c ? c->min : 0,
                 c ? c->max : 0, c ? c->count : 0, c ? c->verdict : -1);
        expect(r, "ln", "row spread", VEIL_RANGE_OK);
        expect(r, "e", "input", VEIL_RANGE_OVER);
    }
    veil_range_report_destroy(&r);
    for (size_t j = 8; j < 16; j++)
        xv[j] /= 8; /* variance 12.5 */
    zv[0] = 1;      /* accurate only on [-64, 0] */
    r = p ? check(p, f, 4) : NULL;
    if (r) {
        expect(r, "ln", "d x variance", VEIL_RANGE_OK);
        expect(r, "e", "input", VEIL_RANGE_NEAR);
        expect(r, "e", "value", VEIL_RANGE_OK);
    }
    veil_range_report_destroy(&r);
    for (size_t j = 8; j < 16; j++)
        xv[j] = j % 2 ? 4e6 : -4e6; /* d var = 1.28e14, beyond 2^46 = 7.04e13 */
    r = p ? check(p, f, 4) : NULL;
    if (r) {
        expect(r, "ln", "d x variance", VEIL_RANGE_OVER);
        expect(r, "ln", "row spread", VEIL_RANGE_OVER);
    }
    veil_range_report_destroy(&r);
    veil_plan_destroy(&p);
    veil_graph_destroy(&g);
}

/* conv, relu, maxpool, flatten, dense, layer norm, gelu, scale, dense, softmax on values of
 * ordinary size: every row OK, over two runs accumulated in one report. */
static void test_well_scaled(void)
{
    veil_graph_t *g = veil_graph_new("fine");
    const size_t xd[4] = {2, 1, 8, 8}, cw[4] = {4, 1, 3, 3}, cb[1] = {4}, w1[2] = {64, 16};
    const size_t b1[1] = {16}, w2[2] = {16, 4};
    veil_node_t *x = veil_input(g, "x", 1, 4, xd);
    veil_node_t *h = veil_conv2d(g, "conv", x, veil_param(g, "cw", 0, 4, cw),
                                 veil_param(g, "cb", 0, 1, cb), 1, 1);
    h = veil_maxpool2d(g, "pool", veil_relu(g, "relu", h), 2, 2);
    h = veil_dense(g, "fc1", veil_flatten(g, "flat", h), veil_param(g, "w1", 0, 2, w1),
                   veil_param(g, "b1", 0, 1, b1));
    h = veil_layernorm(g, "ln", h, veil_param(g, "gamma", 0, 1, b1),
                       veil_param(g, "beta", 0, 1, b1), 1e-5);
    h = veil_scale(g, "half", veil_gelu(g, "gelu", h), 0.5);
    veil_reveal(
        g, veil_softmax(g, "prob", veil_dense(g, "fc2", h, veil_param(g, "w2", 0, 2, w2), NULL)),
        1);
    veil_plan_t *p = compile(g);
    static double xv[128], cwv[36], cbv[4], w1v[1024], b1v[16], gv[16], bv[16], w2v[64];
    tg_fill(cwv, 36, 0.5, 2);
    tg_fill(cbv, 4, 0.1, 3);
    tg_fill(w1v, 1024, 0.3, 4);
    tg_fill(b1v, 16, 0.1, 5);
    tg_fill(gv, 16, 1.0, 6);
    tg_fill(bv, 16, 0.2, 7);
    tg_fill(w2v, 64, 0.5, 8);
    struct veil_feed f[9] = {{"x", xv, 128},    {"cw", cwv, 36}, {"cb", cbv, 4},
                             {"w1", w1v, 1024}, {"b1", b1v, 16}, {"gamma", gv, 16},
                             {"beta", bv, 16},  {"w2", w2v, 64}, {"unused", xv, 1}};
    veil_range_report_t *r = NULL;
    for (int run = 0; p && run < 2; run++) {
        tg_fill(xv, 128, 1.0, 10 + (uint64_t)run);
        int rc = veil_plain_check_ranges(p, f, 9, &r);
        VT_CHECK(rc == VEIL_OK, "run %d: %s", run, veil_last_error());
    }
    if (r) {
        if (veil_test_verbose())
            veil_range_report_print(r, stderr);
        VT_CHECK(veil_range_report_runs(r) == 2, "%zu runs", veil_range_report_runs(r));
        for (size_t i = 0; i < veil_range_report_count(r); i++) {
            const struct veil_range_check *c = veil_range_report_get(r, i);
            VT_CHECK(c->verdict == VEIL_RANGE_OK && c->count > 0, "%s's %s: %s (max %g): %s",
                     c->node, c->quantity, veil_range_verdict_name(c->verdict), c->max_abs,
                     c->note);
        }
        const struct veil_range_check *c = row(r, "conv", "accumulation");
        VT_CHECK(c && c->count == 2 * 2 * 4 * 8 * 8, "conv: %zu sums", c ? c->count : 0);
        c = row(r, "ln", "d x variance");
        VT_CHECK(c && c->count == 2 * 2, "layer norm: %zu rows", c ? c->count : 0);
        c = row(r, "half", "product");
        VT_CHECK(c != NULL, "scale by 0.5 has a product row");
        VT_CHECK(veil_range_report_worst(r) == VEIL_RANGE_OK, "worst %d",
                 veil_range_report_worst(r));
    }
    /* bad input */
    VT_CHECK(veil_plain_check_ranges(NULL, f, 9, &r) == VEIL_ERR_INVAL, "NULL plan accepted");
    VT_CHECK(p && veil_plain_check_ranges(p, f, 9, NULL) == VEIL_ERR_INVAL, "NULL report");
    veil_range_report_t *fresh = NULL;
    VT_CHECK(p && veil_plain_check_ranges(p, f + 1, 8, &fresh) == VEIL_ERR_INVAL &&
                 strstr(veil_last_error(), "'x'") && !fresh,
             "missing feed: %s", veil_last_error());
    veil_plan_t *other = compile(g);
    VT_CHECK(other && r && veil_plain_check_ranges(other, f, 9, &r) == VEIL_ERR_INVAL &&
                 strstr(veil_last_error(), "another plan"),
             "a report of another plan: %s", veil_last_error());
    veil_plan_destroy(&other);
    veil_range_report_destroy(&r);
    veil_range_report_destroy(&r); /* NULL-safe */
    veil_plan_destroy(&p);
    veil_graph_destroy(&g);
}

int main(void)
{
    sh = veil_test_mpc_shared(sizeof *sh);
    if (!sh)
        return 1;
    test_dense_overflow();
    test_softmax_spread();
    test_reciprocal_domain();
    test_div_and_encoder();
    test_layernorm_exp();
    test_well_scaled();
    veil_test_mpc_shared_free(sh, sizeof *sh);
    return veil_test_status();
}

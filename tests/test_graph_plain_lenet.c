/* Tests a small LeNet-like network end to end on the plaintext executor (conv2d, relu, maxpool,
 * conv2d with padding, relu, maxpool, flatten, dense, relu, dense, argmax; two outputs): DOUBLE
 * against the network computed here with naive loops, FIXED bit for bit against the fixed-point
 * sequence computed here, FIXED within a propagated error bound of DOUBLE (each layer adds at
 * most one ulp of floor truncation to an error that the next layer multiplies by its largest
 * absolute row sum of weights), argmax consistent with the logits, and the executor's liveness:
 * with free_dead, intermediates are released after their last reader while leaves and outputs
 * stay, and re-binding new inputs to the same executor gives a fresh run's results. */
#include "config.h"

#include "graph/plain/plain_internal.h"
#include "test_graph_plain_util.h"
#include "test_util.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define F 16
#define ULP (1.0 / 65536)
#define B 3

static double x[B * 144], w1[4 * 25], b1[4], w2[6 * 4 * 9], b2[6], w3[24 * 10], b3[10];
static double w4[10 * 5], b4[5];

static veil_graph_t *build(void)
{
    veil_graph_t *g = veil_graph_new("lenet-mini");
    veil_node_t *in = veil_input(g, "image", 0, 4, (size_t[]){B, 1, 12, 12});
    veil_node_t *c1 = veil_conv2d(g, "c1", in, veil_param(g, "c1.w", 1, 4, (size_t[]){4, 1, 5, 5}),
                                  veil_param(g, "c1.b", 1, 1, (size_t[]){4}), 1, 0);
    veil_node_t *p1 = veil_maxpool2d(g, "p1", veil_relu(g, "r1", c1), 2, 2);
    veil_node_t *c2 = veil_conv2d(g, "c2", p1, veil_param(g, "c2.w", 1, 4, (size_t[]){6, 4, 3, 3}),
                                  veil_param(g, "c2.b", 1, 1, (size_t[]){6}), 1, 1);
    veil_node_t *p2 = veil_maxpool2d(g, "p2", veil_relu(g, "r2", c2), 2, 2);
    veil_node_t *fl = veil_flatten(g, "flat", p2);
    veil_node_t *d1 = veil_dense(g, "fc1", fl, veil_param(g, "fc1.w", 1, 2, (size_t[]){24, 10}),
                                 veil_param(g, "fc1.b", 1, 1, (size_t[]){10}));
    veil_node_t *d2 = veil_dense(g, "fc2", veil_relu(g, "r3", d1),
                                 veil_param(g, "fc2.w", 1, 2, (size_t[]){10, 5}),
                                 veil_param(g, "fc2.b", 1, 1, (size_t[]){5}));
    veil_reveal(g, d2, 0);
    veil_reveal(g, veil_argmax(g, "pred", d2), 0);
    VT_CHECK(veil_graph_status(g) == VEIL_OK, "graph: %s", veil_graph_error(g));
    return g;
}

static size_t feeds(struct veil_feed *fd, const double *image)
{
    size_t k = 0;
    fd[k++] = (struct veil_feed){"image", image, B * 144};
    fd[k++] = (struct veil_feed){"c1.w", w1, 100};
    fd[k++] = (struct veil_feed){"c1.b", b1, 4};
    fd[k++] = (struct veil_feed){"c2.w", w2, 216};
    fd[k++] = (struct veil_feed){"c2.b", b2, 6};
    fd[k++] = (struct veil_feed){"fc1.w", w3, 240};
    fd[k++] = (struct veil_feed){"fc1.b", b3, 10};
    fd[k++] = (struct veil_feed){"fc2.w", w4, 50};
    fd[k++] = (struct veil_feed){"fc2.b", b4, 5};
    return k;
}

static void relu_d(double *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        v[i] = v[i] > 0 ? v[i] : 0;
}

static void relu_w(uint64_t *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        v[i] = (int64_t)v[i] >= 0 ? v[i] : 0;
}

/* The network in double (wmode 0) or in the fixed-point sequence (wmode 1, out as decoded). */
static void reference(const double *image, int wmode, double *logits)
{
    struct tg_conv g1 = {.b = B, .c = 1, .h = 12, .w = 12, .o = 4, .kh = 5, .kw = 5, .stride = 1};
    struct tg_conv g2 = {.b = B, .c = 4, .h = 4, .w = 4, .o = 6, .kh = 3, .kw = 3, .stride = 1,
                         .pad = 1};
    tg_conv_geom(&g1);
    tg_conv_geom(&g2);
    if (!wmode) {
        double a1[B * 256], q1[B * 64], a2[B * 96], q2[B * 24], a3[B * 10];
        tg_conv_d(&g1, image, w1, b1, a1);
        relu_d(a1, B * 256);
        tg_maxpool(B * 4, 8, 8, 2, 2, a1, NULL, q1, NULL);
        tg_conv_d(&g2, q1, w2, b2, a2);
        relu_d(a2, B * 96);
        tg_maxpool(B * 6, 4, 4, 2, 2, a2, NULL, q2, NULL);
        tg_dense_d(B, 24, 10, q2, w3, b3, a3);
        relu_d(a3, B * 10);
        tg_dense_d(B, 10, 5, a3, w4, b4, logits);
        return;
    }
    static uint64_t xi[B * 144], e1[100], eb1[4], e2[216], eb2[6], e3[240], eb3[10], e4[50], eb4[5];
    uint64_t a1[B * 256], q1[B * 64], a2[B * 96], q2[B * 24], a3[B * 10], out[B * 5];
    tg_enc_array(image, B * 144, F, xi);
    tg_enc_array(w1, 100, F, e1);
    tg_enc_array(b1, 4, F, eb1);
    tg_enc_array(w2, 216, F, e2);
    tg_enc_array(b2, 6, F, eb2);
    tg_enc_array(w3, 240, F, e3);
    tg_enc_array(b3, 10, F, eb3);
    tg_enc_array(w4, 50, F, e4);
    tg_enc_array(b4, 5, F, eb4);
    tg_conv_w(&g1, xi, e1, eb1, F, a1);
    relu_w(a1, B * 256);
    tg_maxpool(B * 4, 8, 8, 2, 2, NULL, a1, NULL, q1);
    tg_conv_w(&g2, q1, e2, eb2, F, a2);
    relu_w(a2, B * 96);
    tg_maxpool(B * 6, 4, 4, 2, 2, NULL, a2, NULL, q2);
    tg_dense_w(B, 24, 10, q2, e3, eb3, F, a3);
    relu_w(a3, B * 10);
    tg_dense_w(B, 10, 5, a3, e4, eb4, F, out);
    for (size_t i = 0; i < B * 5; i++)
        logits[i] = tg_dec(out[i], F);
}

/* Largest absolute row sum over output channels: how much a layer can multiply an input error.
 * w holds `outs` groups; element i of the weight belongs to output (i / per) % outs for conv
 * (OIHW, per = C KH KW) or i % outs for dense (in, out). */
static double gain(const double *w, size_t n, size_t outs, size_t per, int dense)
{
    double worst = 0;
    for (size_t o = 0; o < outs; o++) {
        double s = 0;
        for (size_t i = 0; i < n; i++)
            if ((dense ? i % outs : i / per) == o)
                s += fabs(w[i]);
        worst = s > worst ? s : worst;
    }
    return worst;
}

static size_t argmax_row(const double *v, size_t k)
{
    size_t best = 0;
    for (size_t j = 1; j < k; j++)
        if (v[j] > v[best])
            best = j;
    return best;
}

int main(void)
{
    tg_fill(x, B * 144, 1, 60);
    tg_fill(w1, 100, 0.5, 61);
    tg_fill(b1, 4, 0.25, 62);
    tg_fill(w2, 216, 0.5, 63);
    tg_fill(b2, 6, 0.25, 64);
    tg_fill(w3, 240, 0.5, 65);
    tg_fill(b3, 10, 0.25, 66);
    tg_fill(w4, 50, 0.5, 67);
    tg_fill(b4, 5, 0.25, 68);
    veil_graph_t *g = build();
    veil_plan_t *p = veil_compile(g, NULL);
    VT_CHECK(p != NULL, "compile: %s", veil_last_error());
    if (!p)
        return veil_test_status();
    VT_CHECK(veil_plan_output_count(p) == 2 && veil_plan_output_numel(p, 0) == B * 5 &&
             veil_plan_output_numel(p, 1) == B, "outputs");
    struct veil_feed fd[9];
    size_t nf = feeds(fd, x);
    double ld[B * 5], pd[B], lf[B * 5], pf[B], want[B * 5], wantf[B * 5];
    double *od[2] = {ld, pd}, *of[2] = {lf, pf};
    VT_CHECK(veil_plain_run(p, VEIL_PLAIN_DOUBLE, fd, nf, od) == VEIL_OK, "DOUBLE: %s",
             veil_last_error());
    VT_CHECK(veil_plain_run(p, VEIL_PLAIN_FIXED, fd, nf, of) == VEIL_OK, "FIXED: %s",
             veil_last_error());
    reference(x, 0, want);
    reference(x, 1, wantf);
    double bound = ULP;                                    /* c1's truncation */
    bound = gain(w2, 216, 6, 36, 0) * bound + ULP;         /* c2 */
    bound = gain(w3, 240, 10, 0, 1) * bound + ULP;         /* fc1 */
    bound = gain(w4, 50, 5, 0, 1) * bound + ULP;           /* fc2 */
    veil_test_log("FIXED vs DOUBLE bound %g (%g ulp)", bound, bound / ULP);
    double worst = 0;
    for (size_t i = 0; i < B * 5; i++) {
        VT_CHECK(fabs(ld[i] - want[i]) <= 1e-12, "DOUBLE logit %zu: %.12g vs %.12g", i, ld[i],
                 want[i]);
        VT_CHECK(lf[i] == wantf[i], "FIXED logit %zu: %.9g, the sequence gives %.9g", i, lf[i],
                 wantf[i]);
        VT_CHECK(fabs(lf[i] - ld[i]) <= bound, "logit %zu: FIXED %.9g vs DOUBLE %.9g beyond %g", i,
                 lf[i], ld[i], bound);
        worst = fmax(worst, fabs(lf[i] - ld[i]));
    }
    veil_test_log("worst FIXED - DOUBLE: %g (%g ulp)", worst, worst / ULP);
    for (size_t r = 0; r < B; r++) {
        VT_CHECK(pd[r] == (double)argmax_row(ld + r * 5, 5), "DOUBLE argmax row %zu", r);
        VT_CHECK(pf[r] == (double)argmax_row(lf + r * 5, 5), "FIXED argmax row %zu", r);
    }

    /* liveness and re-binding through the internal executor */
    struct veil_plain_exec e;
    double *vals[64] = {0};
    VT_CHECK(p->count <= 64, "plan size");
    VT_CHECK(veil_plain_exec_init(&e, p, VEIL_PLAIN_FIXED) == VEIL_OK, "init");
    VT_CHECK(veil_plan_bind(p, -1, fd, nf, vals) == VEIL_OK, "bind: %s", veil_last_error());
    VT_CHECK(veil_plain_exec_bind(&e, vals) == VEIL_OK, "exec bind");
    veil_plan_values_free(p, vals);
    VT_CHECK(veil_plain_exec_run(&e, 0, p->count, 1) == VEIL_OK, "run: %s", veil_last_error());
    const int ic1 = veil_plan_find(p, "c1"), ifl = veil_plan_find(p, "flat");
    const int iw = veil_plan_find(p, "c1.w"), iout = p->outputs[0];
    VT_CHECK(e.w[ic1] == NULL && e.w[ifl] == NULL, "intermediates freed after their last use");
    VT_CHECK(e.w[iw] != NULL && e.w[iout] != NULL && e.w[p->outputs[1]] != NULL,
             "leaves and outputs kept");
    double got[B * 5], x2[B * 144];
    VT_CHECK(veil_plain_exec_get(&e, iout, got) == VEIL_OK && memcmp(got, lf, sizeof got) == 0,
             "get equals veil_plain_run");
    VT_CHECK(veil_plain_exec_get(&e, ic1, got) == VEIL_ERR_STATE &&
                 strstr(veil_last_error(), "'c1'"),
             "reading a freed node is an error naming it: %s", veil_last_error());
    tg_fill(x2, B * 144, 1, 70);
    struct veil_feed one[1] = {{"image", x2, B * 144}};
    const int ix = veil_plan_find(p, "image");
    VT_CHECK(veil_plan_bind(p, 0, one, 1, vals) == VEIL_OK && vals[ix] && !vals[iw],
             "bind image only: %s", veil_last_error());
    VT_CHECK(veil_plain_exec_bind(&e, vals) == VEIL_OK, "rebind");
    veil_plan_values_free(p, vals);
    VT_CHECK(veil_plain_exec_run(&e, 0, p->count, 1) == VEIL_OK, "second run: %s",
             veil_last_error());
    VT_CHECK(veil_plain_exec_get(&e, iout, got) == VEIL_OK, "get after second run");
    reference(x2, 1, wantf);
    VT_CHECK(memcmp(got, wantf, sizeof got) == 0, "second run with the new image");
    veil_plain_exec_fini(&e);
    veil_plan_destroy(&p);
    veil_graph_destroy(&g);
    return veil_test_status();
}

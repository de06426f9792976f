/* Tests the DSL's exp op (veil_exp, graph/op_elementwise.c) at every stage. Forward: the secure
 * run with N = 2 and 3 parties and the plaintext FIXED executor against exp in double over the
 * protocol's accepted domain [-64, 0] (tolerance 1e-4, tasks/nonlinear.h gives 7.3e-5 at f = 16),
 * below it over [-112, -64) where the protocol documents a result within 1.6e-5 of exp(x)
 * (tolerance 2e-5), and over [0, 2] where it documents a relative error of x^3 / 24576
 * (tolerance 1e-3 relative plus 1e-4); the run's rounds and bytes against the protocol's
 * formula (14 rounds, 112 (N-1) bytes per element, plus sharing the input and revealing y).
 * Backward: a dense layer followed by exp and the loss, trained one step: the plan holds the
 * MUL(dy, y) the gradient rule emits; the plaintext DOUBLE gradient of the weight equals the
 * analytic x^T (dlogits * e); FIXED and a secure step with N = 2 end with the same weights within
 * a stated tolerance. Bad input: a NULL operand propagates (NULL, no error recorded), an operand
 * of another graph is refused by name, and frac_bits beyond the protocol's headroom is refused
 * by name in the plaintext FIXED executor. */
#include "config.h"
#include "graph/graph_internal.h"
#include "test_graph_util.h"
#include "test_mpc_util.h"
#include "test_util.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NX 288 /* 200 points of [-64, 0], 56 of [-112, -64), 32 of [0, 2] */
#define MAXPROC 4
#define B 8    /* training batch */
#define DIN 4
#define DOUT 3

struct shared {
    double y[MAXPROC][NX];
    struct veil_run_stats stats[MAXPROC];
    double w[MAXPROC][DIN * DOUT]; /* the weights after a secure step */
};

static struct shared *sh;

static double xs[NX];

static void fill_inputs(void)
{
    for (int i = 0; i < 200; i++)
        xs[i] = -64.0 + 64.0 * i / 199.0;
    for (int i = 0; i < 56; i++)
        xs[200 + i] = -112.0 + 48.0 * i / 56.0;
    for (int i = 0; i < 32; i++)
        xs[256 + i] = 2.0 * i / 31.0;
}

/* The tolerance for input x (see the first comment). */
static double tol_of(double x)
{
    if (x < -64.0)
        return 2e-5;
    if (x <= 0.0)
        return 1e-4;
    return 1e-3 * exp(x) + 1e-4;
}

/* The largest error of got against exp over xs, each within its tolerance. */
static void check_forward(const char *what, const double *got)
{
    double worst = 0;
    for (int i = 0; i < NX; i++) {
        double e = fabs(got[i] - exp(xs[i]));
        VT_CHECK(e <= tol_of(xs[i]), "%s: exp(%.4f) = %.6g, want %.6g (error %.3g > %.3g)", what,
                 xs[i], got[i], exp(xs[i]), e, tol_of(xs[i]));
        if (xs[i] <= 0 && xs[i] >= -64 && e > worst)
            worst = e;
    }
    veil_test_log("%s: max error over [-64, 0] %.3g", what, worst);
}

static void test_forward(void)
{
    veil_graph_t *g = veil_graph_new("exp");
    size_t dims[2] = {1, NX};
    veil_node_t *x = veil_input(g, "x", 1, 2, dims);
    veil_node_t *y = veil_exp(g, "y", x);
    VT_CHECK(y && veil_reveal(g, y, VEIL_ALL_PARTIES) == VEIL_OK, "build: %s", veil_last_error());
    veil_plan_t *p = veil_compile(g, NULL);
    VT_CHECK(p, "compile: %s", veil_last_error());
    if (!p) {
        veil_graph_destroy(&g);
        return;
    }
    struct veil_feed f[1] = {{"x", xs, NX}};
    double out[NX], *outs[1] = {out};
    VT_CHECK(veil_plain_run(p, VEIL_PLAIN_DOUBLE, f, 1, outs) == VEIL_OK, "plain double: %s",
             veil_last_error());
    for (int i = 0; i < NX; i++)
        VT_CHECK(out[i] == exp(xs[i]), "plain double: exp(%g)", xs[i]);
    VT_CHECK(veil_plain_run(p, VEIL_PLAIN_FIXED, f, 1, outs) == VEIL_OK, "plain fixed: %s",
             veil_last_error());
    check_forward("plain fixed", out);

    struct veil_test_graph_step st = {.plan = p, .feeds = f, .nfeeds = 1, .train = 0,
                                      .param = "w", .y = &sh->y[0][0], .w = &sh->w[0][0],
                                      .y_stride = NX, .w_stride = DIN * DOUT, .stats = sh->stats};
    for (int n = 2; n <= 3; n++) {
        memset(sh, 0, sizeof *sh);
        struct veil_test_graph_opts o = {.nparties = n, .dealer = 1};
        if (veil_test_graph_run(&o, veil_test_graph_step_child, &st, NULL) != VEIL_OK) {
            VT_CHECK(0, "exp N=%d: the secure run failed", n);
            continue;
        }
        const uint64_t w = 8 * (uint64_t)(n - 1);
        for (int q = 0; q < n; q++) {
            char what[64];
            snprintf(what, sizeof what, "secure N=%d party %d", n, q);
            check_forward(what, sh->y[q]);
            /* exp: 7 (square + trunc), 112 (N-1) bytes per element; reveal to all: one word
             * per element to each peer; sharing x: its owner sends one word per element */
            const struct veil_run_stats *s = &sh->stats[q];
            uint64_t want = w * NX * 14 + w * NX + (q == 1 ? w * NX : 0);
            VT_CHECK(s->bytes_sent == want && s->rounds == 16,
                     "%s: sent %" PRIu64 " bytes in %" PRIu64 " rounds; expected %" PRIu64
                     " in 16", what, s->bytes_sent, s->rounds, want);
        }
    }
    veil_plan_destroy(&p);
    veil_graph_destroy(&g);
}

/* ---- backward ------------------------------------------------------------------------------- */

static double tx[B * DIN], tw[DIN * DOUT], tl[B * DOUT];

static veil_plan_t *train_plan(veil_graph_t **gp, int frac_bits)
{
    veil_graph_t *g = veil_graph_new("exp_train");
    size_t xd[2] = {B, DIN}, wd[2] = {DIN, DOUT}, ld[2] = {B, DOUT};
    veil_node_t *x = veil_input(g, "x", 1, 2, xd);
    veil_node_t *w = veil_param(g, "w", 0, 2, wd);
    veil_node_t *lab = veil_input(g, "labels", 1, 2, ld);
    veil_node_t *h = veil_dense(g, "h", x, w, NULL);
    veil_node_t *e = veil_exp(g, "e", h);
    veil_softmax_cross_entropy(g, "loss", e, lab);
    struct veil_compile_options o;
    veil_compile_options_defaults(&o);
    o.training = 1;
    o.lr = 0.5;
    o.momentum = 0;
    if (frac_bits)
        o.frac_bits = frac_bits;
    *gp = g;
    return veil_compile(g, &o);
}

static void test_backward(void)
{
    for (int i = 0; i < B * DIN; i++)
        tx[i] = 0.25 * sin(1.0 + i);
    for (int i = 0; i < DIN * DOUT; i++)
        tw[i] = 0.5 * cos(2.0 + 3 * i);
    for (int r = 0; r < B; r++)
        tl[r * DOUT + r % DOUT] = 1.0;
    veil_graph_t *g = NULL;
    veil_plan_t *p = train_plan(&g, 0);
    VT_CHECK(p, "compile training: %s", veil_last_error());
    if (!p) {
        veil_graph_destroy(&g);
        return;
    }
    /* the gradient rule's node: "e.dx" = MUL(dy, e) */
    int dx = veil_plan_find(p, "e.dx"), e = veil_plan_find(p, "e");
    VT_CHECK(dx >= 0 && p->nodes[dx].op == VEIL_OP_MUL && p->nodes[dx].in[1] == e,
             "the plan has e.dx = MUL(dy, e)");

    /* analytic dW = x^T (dlogits * e), dlogits = (softmax(e) - labels) / B */
    double ev[B * DOUT], gz[B * DOUT], want[DIN * DOUT] = {0};
    for (int r = 0; r < B; r++) {
        double s = 0;
        for (int c = 0; c < DOUT; c++) {
            double hv = 0;
            for (int k = 0; k < DIN; k++)
                hv += tx[r * DIN + k] * tw[k * DOUT + c];
            ev[r * DOUT + c] = exp(hv);
            s += exp(ev[r * DOUT + c]);
        }
        for (int c = 0; c < DOUT; c++) {
            double sm = exp(ev[r * DOUT + c]) / s;
            gz[r * DOUT + c] = (sm - tl[r * DOUT + c]) / B * ev[r * DOUT + c];
        }
    }
    for (int k = 0; k < DIN; k++)
        for (int c = 0; c < DOUT; c++)
            for (int r = 0; r < B; r++)
                want[k * DOUT + c] += tx[r * DIN + k] * gz[r * DOUT + c];

    struct veil_feed params[1] = {{"w", tw, DIN * DOUT}};
    struct veil_feed feeds[3] = {{"x", tx, B * DIN}, {"labels", tl, B * DOUT}, {"w", tw, DIN * DOUT}};
    double wfix[DIN * DOUT];
    for (int mode = 0; mode < 2; mode++) {
        veil_plain_trainer_t *t =
            veil_plain_trainer_new(p, mode ? VEIL_PLAIN_FIXED : VEIL_PLAIN_DOUBLE, params, 1);
        double grad[DIN * DOUT], wnew[DIN * DOUT];
        int ok = t && veil_plain_trainer_step(t, feeds, 2, NULL) == VEIL_OK &&
                 veil_plain_trainer_grad(t, "w", grad) == VEIL_OK &&
                 veil_plain_trainer_param(t, "w", wnew) == VEIL_OK;
        VT_CHECK(ok, "plain trainer (%s): %s", mode ? "fixed" : "double", veil_last_error());
        for (int k = 0; ok && k < DIN * DOUT; k++) {
            const double tol = mode ? 1e-3 : 1e-12;
            VT_CHECK(fabs(grad[k] - want[k]) <= tol, "plain %s: dW[%d] = %.6g, analytic %.6g",
                     mode ? "fixed" : "double", k, grad[k], want[k]);
            if (mode)
                wfix[k] = wnew[k];
        }
        veil_plain_trainer_destroy(&t);
    }

    /* one secure step with N = 2 ends with the FIXED trainer's weights (the truncations' 0/+1
     * ulps apart: 1e-3 is some 65 ulps at f = 16) */
    struct veil_test_graph_step st = {.plan = p, .feeds = feeds, .nfeeds = 3, .train = 1,
                                      .param = "w", .y = &sh->y[0][0], .w = &sh->w[0][0],
                                      .y_stride = NX, .w_stride = DIN * DOUT, .stats = sh->stats};
    memset(sh, 0, sizeof *sh);
    struct veil_test_graph_opts o = {.nparties = 2, .dealer = 1};
    if (veil_test_graph_run(&o, veil_test_graph_step_child, &st, NULL) != VEIL_OK) {
        VT_CHECK(0, "exp training N=2: the secure step failed");
    } else {
        for (int q = 0; q < 2; q++)
            for (int k = 0; k < DIN * DOUT; k++)
                VT_CHECK(fabs(sh->w[q][k] - wfix[k]) <= 1e-3,
                         "secure step party %d: w[%d] = %.6g, plain fixed %.6g", q, k,
                         sh->w[q][k], wfix[k]);
    }
    veil_plan_destroy(&p);
    veil_graph_destroy(&g);

    /* frac_bits beyond the exp protocol's headroom: refused by name (plaintext FIXED) */
    p = train_plan(&g, 24);
    if (p) {
        veil_plain_trainer_t *t = veil_plain_trainer_new(p, VEIL_PLAIN_FIXED, params, 1);
        int rc = t ? veil_plain_trainer_step(t, feeds, 2, NULL) : VEIL_ERR_STATE;
        VT_CHECK(rc == VEIL_ERR_UNSUPPORTED && strstr(veil_last_error(), "'e'") &&
                     strstr(veil_last_error(), "frac_bits"),
                 "f = 24: want UNSUPPORTED naming 'e' and frac_bits; got %d %s", rc,
                 veil_last_error());
        veil_plain_trainer_destroy(&t);
        veil_plan_destroy(&p);
    }
    veil_graph_destroy(&g);
}

static void test_bad_input(void)
{
    veil_graph_t *g = veil_graph_new("bad");
    veil_graph_t *h = veil_graph_new("other");
    size_t dims[1] = {4};
    VT_CHECK(veil_exp(g, "y", NULL) == NULL && veil_graph_status(g) == VEIL_OK,
             "a NULL operand propagates without an error");
    VT_CHECK(veil_exp(NULL, "y", NULL) == NULL, "a NULL graph gives NULL");
    veil_node_t *x = veil_input(h, "x", 0, 1, dims);
    VT_CHECK(veil_exp(g, "y", x) == NULL && veil_graph_status(g) == VEIL_ERR_INVAL &&
                 strstr(veil_graph_error(g), "exp 'y'") &&
                 strstr(veil_graph_error(g), "another graph"),
             "an operand of another graph is refused by name: %s", veil_graph_error(g));
    veil_graph_destroy(&g);
    veil_graph_destroy(&h);
}

int main(void)
{
    sh = veil_test_mpc_shared(sizeof *sh);
    if (!sh)
        return 1;
    fill_inputs();
    test_bad_input();
    test_forward();
    test_backward();
    veil_test_mpc_shared_free(sh, sizeof *sh);
    return veil_test_status();
}

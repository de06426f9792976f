/* Tests the DSL's nonlinear ops (graph/op_nonlinear.c: veil_reciprocal, veil_div, veil_sqrt,
 * veil_rsqrt, veil_sigmoid, veil_tanh) at every stage. Forward, per op: the plaintext DOUBLE
 * executor equals libm; the plaintext FIXED executor and the secure run with N = 2 and N = 3
 * agree with double references over the op's whole accepted domain, edges included (the
 * domain's ends, 2^-16 steps inside them, 0 and +-2^-16 for sigmoid and tanh, and their largest
 * accepted inputs +-(2^15 - 2^-16); for rsqrt and sqrt also every power of two in [2^-15, 2^14]
 * and the ulp below it, and the ulp above every power of four), within the tolerances of TOL
 * below (the errors documented in include/veil/graph.h); each run's rounds and bytes equal the
 * protocol's formula (veil_reciprocal_norm_cost, veil_rsqrt_norm_cost, veil_sigmoid_cost) plus
 * sharing the inputs and revealing the output. The sigmoid / tanh model is also swept at 1-ulp
 * steps over [-20, 20], the inverse square root's model (tasks/rsqrt_norm.h) over every octave
 * of the DSL's range and of Adam's (about 4100 points an octave, floor and random truncations)
 * against 2^-16 |y| + 1 ulp. Zero and negative inputs of rsqrt and sqrt: the FIXED run refuses
 * them (VEIL_ERR_RANGE naming the node), the secure run (N = 2) returns for x = 0 the documented
 * finite rsqrt(0) = 1.5 c0 2^8 = 604.31 and sqrt(0) = 0 (within 2 ulps). Backward, per op: dense -> op -> softmax cross
 * entropy trained one step: the DOUBLE trainer's weight gradient matches central differences of
 * the DOUBLE loss, the FIXED trainer's the DOUBLE one, and a secure N = 2 step ends with the FIXED
 * trainer's weights. Inputs outside an op's domain are not refused (secret values are not
 * checked); bad graph input is: div with unequal shapes is VEIL_ERR_SHAPE naming the node, a NULL
 * operand propagates without an error. */
#include "config.h"
#include "graph/graph_internal.h"
#include "tasks/nonlinear.h"
#include "tasks/nonlinear_sigmoid.h"
#include "tasks/reciprocal_norm.h"
#include "tasks/rsqrt_norm.h"
#include "test_graph_util.h"
#include "test_mpc_util.h"
#include "test_util.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NX 128
#define MAXPROC 4
#define B 8
#define DIN 4
#define DOUT 3

enum { RECIP, DIV, RSQRT, SQRT, SIGMOID, TANH, NOPS };
static const char *names[NOPS] = {"reciprocal", "div", "rsqrt", "sqrt", "sigmoid", "tanh"};

struct shared {
    double y[MAXPROC][NX];
    struct veil_run_stats stats[MAXPROC];
    double w[MAXPROC][DIN * DOUT];
};

static struct shared *sh;
static double xs[NX], ys[NX]; /* ys: the divisor of div */
static double worst[NOPS][3]; /* fixed, secure N=2, secure N=3 */

static double ref_raw(int op, double x, double y)
{
    switch (op) {
    case RECIP: return 1.0 / x;
    case DIV: return x / y;
    case RSQRT: return 1.0 / sqrt(x);
    case SQRT: return sqrt(x);
    case SIGMOID: return 1.0 / (1.0 + exp(-x));
    default: return tanh(x);
    }
}

/* The double reference at the inputs as the API encodes them (f = 16). */
static double ref(int op, double x, double y)
{
    return ref_raw(op, ldexp(round(ldexp(x, 16)), -16), ldexp(round(ldexp(y, 16)), -16));
}

/* TOL: the allowed absolute error at (x, y) (include/veil/graph.h's figures with a margin). */
static double tol(int op, double x, double y)
{
    switch (op) {
    case RECIP: return ldexp(1.0 / x, -12) + ldexp(1.0, -15);
    case DIV: return ldexp(fabs(x / y), -12) + ldexp(1.0 + fabs(x), -15);
    case RSQRT: return ldexp(1.0 / sqrt(x), -15) + ldexp(1.0, -15);
    case SQRT: return ldexp(sqrt(x), -15) + ldexp(1.0, -15);
    case SIGMOID: return 1e-4;
    default: return 2e-4;
    }
}

/* The op's accepted domain, edges first, then a log or linear sweep. */
static void fill(int op)
{
    const double u = ldexp(1.0, -16);
    int k = 0;
    if (op == RECIP || op == DIV) { /* every positive accepted input: [2^-16, 2^15) */
        const double e[] = {u, 2 * u, 3 * u, 32768.0 - u, 1.0, 1.0 - u, 1.0 + u, 1024.0, 0.5};
        for (size_t i = 0; i < sizeof e / sizeof e[0]; i++)
            xs[k++] = e[i];
        while (k < NX)
            xs[k] = pow(2.0, -16.0 + 31.0 * (k - 9) / (NX - 9)), k++;
        if (op == DIV) /* |x / y| < 2^17: x * (1/y) must fit the ring */
            for (int i = 0; i < NX; i++) {
                ys[i] = xs[i];
                xs[i] = i < 4 ? (i % 2 ? -1 : 1) * (i < 2 ? u : 1.0)
                              : (ys[i] < 1 ? 1.0 : 1000.0) * sin(1.0 + i);
            }
    } else if (op == RSQRT || op == SQRT) { /* the same domain, every octave's edges */
        const double e[] = {u, 2 * u, 3 * u, 32768.0 - u, 1.0 + u};
        for (size_t i = 0; i < sizeof e / sizeof e[0]; i++)
            xs[k++] = e[i];
        for (int j = -15; j <= 14; j++) {
            xs[k++] = ldexp(1.0, j);
            xs[k++] = ldexp(1.0, j) - u;
        }
        for (int j = -7; j <= 7; j++)
            xs[k++] = ldexp(1.0, 2 * j) + u;
        const int k0 = k;
        while (k < NX)
            xs[k] = pow(2.0, -16.0 + 31.0 * (k - k0 + 0.5) / (NX - k0)), k++;
    } else {
        const double e[] = {0.0,  u,     -u,    16.0,   -16.0, 8.0, -8.0, 32768.0 - u,
                            -32768.0 + u, 1000.0, -1000.0};
        for (size_t i = 0; i < sizeof e / sizeof e[0]; i++)
            xs[k++] = e[i];
        const int k0 = k;
        while (k < NX)
            xs[k] = -20.0 + 40.0 * (k - k0) / (NX - 1 - k0), k++;
    }
}

static double worst_rel[NOPS]; /* relative, where the reference is at least 2^-4 */

static double check(int op, const char *what, const double *got)
{
    double w = 0;
    for (int i = 0; i < NX; i++) {
        const double want = ref(op, xs[i], ys[i]), e = fabs(got[i] - want);
        VT_CHECK(e <= tol(op, xs[i], ys[i]), "%s %s: at (%.9g, %.9g) got %.9g want %.9g (error "
                 "%.3g > %.3g)", names[op], what, xs[i], ys[i], got[i], want, e,
                 tol(op, xs[i], ys[i]));
        if (e > w)
            w = e;
        if (fabs(want) >= 0.0625 && e / fabs(want) > worst_rel[op])
            worst_rel[op] = e / fabs(want);
    }
    return w;
}

static veil_node_t *build(veil_graph_t *g, int op, const char *name, veil_node_t *x,
                          veil_node_t *y)
{
    switch (op) {
    case RECIP: return veil_reciprocal(g, name, x);
    case DIV: return veil_div(g, name, x, y);
    case RSQRT: return veil_rsqrt(g, name, x);
    case SQRT: return veil_sqrt(g, name, x);
    case SIGMOID: return veil_sigmoid(g, name, x);
    default: return veil_tanh(g, name, x);
    }
}

/* The op's own rounds and bytes per party at N parties on n elements. */
static void op_cost(int op, int n, size_t numel, uint64_t *r, uint64_t *b)
{
    switch (op) {
    case RECIP:
    case DIV:
        veil_reciprocal_norm_cost(n, numel, 16, -16, VEIL_RECIP_NORM_HI, r, b);
        break;
    case RSQRT:
    case SQRT:
        veil_rsqrt_norm_cost(n, numel, 16, -16, VEIL_RSQRT_NORM_HI, r, b);
        break;
    default:
        veil_sigmoid_cost(n, numel, r, b);
    }
    if (op == DIV || op == SQRT) { /* one product and one truncation */
        *r += 2;
        *b += 24 * (uint64_t)(n - 1) * numel;
    }
}

static void test_forward(int op)
{
    fill(op);
    veil_graph_t *g = veil_graph_new(names[op]);
    size_t dims[2] = {1, NX};
    veil_node_t *x = veil_input(g, "x", 1, 2, dims);
    veil_node_t *d = op == DIV ? veil_input(g, "d", 1, 2, dims) : NULL;
    veil_node_t *y = build(g, op, "y", x, d);
    VT_CHECK(y && veil_reveal(g, y, VEIL_ALL_PARTIES) == VEIL_OK, "build: %s", veil_last_error());
    veil_plan_t *p = veil_compile(g, NULL);
    VT_CHECK(p, "compile: %s", veil_last_error());
    if (!p) {
        veil_graph_destroy(&g);
        return;
    }
    struct veil_feed f[2] = {{"x", xs, NX}, {"d", ys, NX}};
    const size_t nf = op == DIV ? 2 : 1;
    double out[NX], *outs[1] = {out};
    VT_CHECK(veil_plain_run(p, VEIL_PLAIN_DOUBLE, f, nf, outs) == VEIL_OK, "plain double: %s",
             veil_last_error());
    for (int i = 0; i < NX; i++)
        VT_CHECK(out[i] == ref_raw(op, xs[i], ys[i]), "%s plain double at %g", names[op], xs[i]);
    VT_CHECK(veil_plain_run(p, VEIL_PLAIN_FIXED, f, nf, outs) == VEIL_OK, "plain fixed: %s",
             veil_last_error());
    worst[op][0] = check(op, "plain fixed", out);

    struct veil_test_graph_step st = {.plan = p, .feeds = f, .nfeeds = nf, .train = 0,
                                      .param = "w", .y = &sh->y[0][0], .w = &sh->w[0][0],
                                      .y_stride = NX, .w_stride = DIN * DOUT, .stats = sh->stats};
    for (int n = 2; n <= 3; n++) {
        memset(sh, 0, sizeof *sh);
        struct veil_test_graph_opts o = {.nparties = n, .dealer = 1};
        if (veil_test_graph_run(&o, veil_test_graph_step_child, &st, NULL) != VEIL_OK) {
            VT_CHECK(0, "%s N=%d: the secure run failed", names[op], n);
            continue;
        }
        uint64_t r, b;
        op_cost(op, n, NX, &r, &b);
        const uint64_t w = 8 * (uint64_t)(n - 1);
        for (int q = 0; q < n; q++) {
            char what[64];
            snprintf(what, sizeof what, "secure N=%d party %d", n, q);
            const double e = check(op, what, sh->y[q]);
            if (e > worst[op][n - 1])
                worst[op][n - 1] = e;
            /* plus: revealing y to all (one word per element to each peer), sharing the inputs
             * (their owner, party 1, sends one word per element and input) */
            const struct veil_run_stats *s = &sh->stats[q];
            const uint64_t want = b + w * NX + (q == 1 ? nf * w * NX : 0);
            /* rounds: one per shared input, one for the reveal */
            VT_CHECK(s->bytes_sent == want && s->rounds == r + nf + 1,
                     "%s %s: sent %" PRIu64 " bytes in %" PRIu64 " rounds; expected %" PRIu64
                     " in %" PRIu64, names[op], what, s->bytes_sent, s->rounds, want, r + nf + 1);
        }
    }
    veil_test_log("%s: max abs error fixed %.3g, secure N=2 %.3g, N=3 %.3g; max relative %.3g "
                  "where |y| >= 2^-4", names[op], worst[op][0], worst[op][1], worst[op][2],
                  worst_rel[op]);
    veil_plan_destroy(&p);
    veil_graph_destroy(&g);
}

/* The sigmoid / tanh model at every 2^-16 step of [-20, 20] (floor truncations). */
static void test_model_sweep(void)
{
    const int f = 16;
    const int64_t lim = (int64_t)20 << f;
    for (int t = 0; t < 2; t++) {
        double w = 0;
        for (int64_t v = -lim; v <= lim; v++) {
            uint64_t xw = (uint64_t)v, yw;
            veil_ref_sigmoid_tanh(1, &xw, f, t, NULL, &yw);
            const double x = ldexp((double)v, -f), y = ldexp((double)(int64_t)yw, -f);
            const double e = fabs(y - (t ? tanh(x) : 1.0 / (1.0 + exp(-x))));
            if (e > w)
                w = e;
        }
        VT_CHECK(w <= (t ? 2e-4 : 1e-4), "%s model: max error %.3g over [-20, 20]",
                 t ? "tanh" : "sigmoid", w);
        veil_test_log("%s model: max error %.3g over [-20, 20] at 1-ulp steps",
                      t ? "tanh" : "sigmoid", w);
    }
}

/* The inverse square root's model over every octave of [2^lo, 2^hi) at f = 16, output at
 * f + xb bits, with floor truncations and with random ones: within 2^-16 |y| + 1 ulp. */
static void test_rsqrt_model_sweep(void)
{
    static const int cfg[3][3] = {{-16, VEIL_RSQRT_NORM_HI, 0}, /* the DSL's rsqrt */
                                  {-16, VEIL_RSQRT_NORM_HI, VEIL_SQRT_NORM_BITS}, /* sqrt's */
                                  {-8, 24, 8}};                                  /* Adam's */
    const int f = 16;
    for (int c = 0; c < 3; c++) {
        const int lo = cfg[c][0], hi = cfg[c][1], xb = cfg[c][2];
        size_t n = 0;
        for (int64_t v = (int64_t)1 << (f + lo); v < (int64_t)1 << (f + hi); v += 1 + v / 4099)
            n++;
        uint64_t *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y);
        VT_CHECK(x && y, "out of memory");
        if (!x || !y) {
            free(x);
            free(y);
            return;
        }
        n = 0;
        for (int64_t v = (int64_t)1 << (f + lo); v < (int64_t)1 << (f + hi); v += 1 + v / 4099)
            x[n++] = (uint64_t)v;
        double w = 0;
        uint64_t state = 0x2545f4914f6cdd1dULL;
        for (int pass = 0; pass < 2; pass++) {
            veil_ref_rsqrt_norm(n, x, lo, hi, f, xb, pass ? &state : NULL, y);
            for (size_t i = 0; i < n; i++) {
                const double r = 1.0 / sqrt(ldexp((double)x[i], -f));
                const double e = fabs(ldexp((double)(int64_t)y[i], -(f + xb)) - r);
                const double rel = (e - ldexp(1.0, -(f + xb))) / r;
                VT_CHECK(rel <= ldexp(1.0, -16), "rsqrt model [2^%d, 2^%d) +%d bits at %.9g: "
                         "error %.3g > 2^-16 |y| + 1 ulp", lo, hi, xb,
                         ldexp((double)x[i], -f), e);
                if (rel > w)
                    w = rel;
            }
        }
        veil_test_log("rsqrt model over [2^%d, 2^%d), +%d bits: %zu points, max error %.3g |y| "
                      "+ 1 ulp", lo, hi, xb, n, w);
        free(x);
        free(y);
    }
}

/* Zero and negative inputs of rsqrt and sqrt: refused by the FIXED run; the secure run's result
 * at 0 is the documented one (tasks/rsqrt_norm.h). */
static void test_zero(void)
{
    static const double xz[4] = {0.0, 1.0, 0.25, 2.0}, xn[4] = {1.0, 2.0, 3.0, -1.0};
    for (int op = RSQRT; op <= SQRT; op++) {
        veil_graph_t *g = veil_graph_new("zero");
        size_t dims[2] = {1, 4};
        veil_node_t *y = build(g, op, "y", veil_input(g, "x", 1, 2, dims), NULL);
        VT_CHECK(y && veil_reveal(g, y, VEIL_ALL_PARTIES) == VEIL_OK, "build: %s",
                 veil_last_error());
        veil_plan_t *p = veil_compile(g, NULL);
        VT_CHECK(p, "compile: %s", veil_last_error());
        if (!p) {
            veil_graph_destroy(&g);
            continue;
        }
        double out[4], *outs[1] = {out};
        struct veil_feed fz[1] = {{"x", xz, 4}}, fn[1] = {{"x", xn, 4}};
        int rc = veil_plain_run(p, VEIL_PLAIN_FIXED, fz, 1, outs);
        VT_CHECK(rc == VEIL_ERR_RANGE && strstr(veil_last_error(), "'y'") &&
                     strstr(veil_last_error(), "element 0"),
                 "%s of 0: plain fixed returned %d (%s), not VEIL_ERR_RANGE naming 'y'",
                 names[op], rc, veil_last_error());
        rc = veil_plain_run(p, VEIL_PLAIN_FIXED, fn, 1, outs);
        VT_CHECK(rc == VEIL_ERR_RANGE && strstr(veil_last_error(), "element 3"),
                 "%s of -1: plain fixed returned %d (%s), not VEIL_ERR_RANGE", names[op], rc,
                 veil_last_error());
        struct veil_test_graph_step st = {.plan = p, .feeds = fz, .nfeeds = 1, .train = 0,
                                          .param = "w", .y = &sh->y[0][0], .w = &sh->w[0][0],
                                          .y_stride = NX, .w_stride = DIN * DOUT,
                                          .stats = sh->stats};
        memset(sh, 0, sizeof *sh);
        struct veil_test_graph_opts o = {.nparties = 2, .dealer = 1};
        if (veil_test_graph_run(&o, veil_test_graph_step_child, &st, NULL) != VEIL_OK) {
            VT_CHECK(0, "%s of 0, N=2: the secure run failed", names[op]);
        } else {
            for (int q = 0; q < 2; q++) {
                const double z = sh->y[q][0];
                VT_CHECK(op == RSQRT ? fabs(z - 604.31) <= 0.01 : z >= 0 && z <= ldexp(1.0, -15),
                         "%s(0) secure party %d = %.9g, not the documented %s", names[op], q, z,
                         op == RSQRT ? "604.31" : "0");
                for (int i = 1; i < 4; i++)
                    VT_CHECK(fabs(sh->y[q][i] - ref(op, xz[i], 0)) <= tol(op, xz[i], 0),
                             "%s(%g) beside a 0: %.9g", names[op], xz[i], sh->y[q][i]);
            }
            veil_test_log("%s(0) in the secure run: %.9g", names[op], sh->y[0][0]);
        }
        veil_plan_destroy(&p);
        veil_graph_destroy(&g);
    }
}

/* ---- backward ------------------------------------------------------------------------------ */

static double tx[B * DIN], tw[DIN * DOUT], tl[B * DOUT], tn[B * DOUT];

/* dense (h in [1.2, 5.6], inside every domain) -> op -> softmax cross entropy */
static veil_plan_t *train_plan(veil_graph_t **gp, int op)
{
    veil_graph_t *g = veil_graph_new("nl_train");
    size_t xd[2] = {B, DIN}, wd[2] = {DIN, DOUT}, ld[2] = {B, DOUT};
    veil_node_t *x = veil_input(g, "x", 1, 2, xd);
    veil_node_t *w = veil_param(g, "w", 0, 2, wd);
    veil_node_t *lab = veil_input(g, "labels", 1, 2, ld);
    veil_node_t *num = op == DIV ? veil_input(g, "num", 1, 2, ld) : NULL;
    veil_node_t *h = veil_dense(g, "h", x, w, NULL);
    veil_node_t *e = build(g, op, "e", op == DIV ? num : h, op == DIV ? h : NULL);
    veil_softmax_cross_entropy(g, "loss", e, lab);
    struct veil_compile_options o;
    veil_compile_options_defaults(&o);
    o.training = 1;
    o.lr = 0.5;
    o.momentum = 0;
    *gp = g;
    return veil_compile(g, &o);
}

static int plain_step(const veil_plan_t *p, int fixed, const double *w, double *grad,
                      double *wnew, double *loss)
{
    struct veil_feed params[1] = {{"w", w, DIN * DOUT}};
    struct veil_feed feeds[3] = {{"x", tx, B * DIN}, {"labels", tl, B * DOUT},
                                 {"num", tn, B * DOUT}};
    veil_plain_trainer_t *t =
        veil_plain_trainer_new(p, fixed ? VEIL_PLAIN_FIXED : VEIL_PLAIN_DOUBLE, params, 1);
    const size_t nf = veil_plan_find(p, "num") >= 0 ? 3 : 2;
    int ok = t && veil_plain_trainer_step(t, feeds, nf, loss) == VEIL_OK &&
             (!grad || veil_plain_trainer_grad(t, "w", grad) == VEIL_OK) &&
             (!wnew || veil_plain_trainer_param(t, "w", wnew) == VEIL_OK);
    veil_plain_trainer_destroy(&t);
    return ok;
}

static void test_backward(int op)
{
    for (int i = 0; i < B * DIN; i++)
        tx[i] = 1.5 + 0.5 * sin(1.0 + i);
    for (int i = 0; i < DIN * DOUT; i++)
        tw[i] = 0.5 + 0.2 * cos(2.0 + 3 * i);
    for (int i = 0; i < B * DOUT; i++)
        tn[i] = 2.0 * sin(0.5 + i);
    memset(tl, 0, sizeof tl);
    for (int r = 0; r < B; r++)
        tl[r * DOUT + r % DOUT] = 1.0;
    veil_graph_t *g = NULL;
    veil_plan_t *p = train_plan(&g, op);
    VT_CHECK(p, "%s: compile training: %s", names[op], veil_last_error());
    if (!p) {
        veil_graph_destroy(&g);
        return;
    }
    double gd[DIN * DOUT], gf[DIN * DOUT], wfix[DIN * DOUT], loss;
    int ok = plain_step(p, 0, tw, gd, NULL, &loss) && plain_step(p, 1, tw, gf, wfix, NULL);
    VT_CHECK(ok, "%s: plain trainer: %s", names[op], veil_last_error());
    /* central differences of the DOUBLE loss */
    for (int k = 0; ok && k < DIN * DOUT; k++) {
        double wp[DIN * DOUT], lp, lm;
        const double hh = 1e-5;
        memcpy(wp, tw, sizeof wp);
        wp[k] += hh;
        ok = plain_step(p, 0, wp, NULL, NULL, &lp);
        wp[k] -= 2 * hh;
        ok = ok && plain_step(p, 0, wp, NULL, NULL, &lm);
        const double num = (lp - lm) / (2 * hh);
        VT_CHECK(ok && fabs(num - gd[k]) <= 1e-6 + 1e-4 * fabs(num),
                 "%s: double dW[%d] = %.9g, central difference %.9g", names[op], k, gd[k], num);
        VT_CHECK(fabs(gf[k] - gd[k]) <= 1e-3, "%s: fixed dW[%d] = %.6g, double %.6g", names[op],
                 k, gf[k], gd[k]);
    }
    struct veil_feed feeds[4] = {{"x", tx, B * DIN}, {"labels", tl, B * DOUT},
                                 {"w", tw, DIN * DOUT}, {"num", tn, B * DOUT}};
    struct veil_test_graph_step st = {.plan = p, .feeds = feeds, .nfeeds = op == DIV ? 4 : 3,
                                      .train = 1,
                                      .param = "w", .y = &sh->y[0][0], .w = &sh->w[0][0],
                                      .y_stride = NX, .w_stride = DIN * DOUT, .stats = sh->stats};
    memset(sh, 0, sizeof *sh);
    struct veil_test_graph_opts o = {.nparties = 2, .dealer = 1};
    if (veil_test_graph_run(&o, veil_test_graph_step_child, &st, NULL) != VEIL_OK) {
        VT_CHECK(0, "%s training N=2: the secure step failed", names[op]);
    } else {
        for (int q = 0; q < 2; q++)
            for (int k = 0; k < DIN * DOUT; k++)
                VT_CHECK(fabs(sh->w[q][k] - wfix[k]) <= 1e-3,
                         "%s secure step party %d: w[%d] = %.6g, plain fixed %.6g", names[op], q,
                         k, sh->w[q][k], wfix[k]);
    }
    veil_plan_destroy(&p);
    veil_graph_destroy(&g);
}

static void test_bad_input(void)
{
    veil_graph_t *g = veil_graph_new("bad");
    size_t d4[1] = {4}, d5[1] = {5};
    VT_CHECK(veil_sigmoid(g, "y", NULL) == NULL && veil_div(g, "z", NULL, NULL) == NULL &&
                 veil_graph_status(g) == VEIL_OK,
             "a NULL operand propagates without an error");
    veil_node_t *a = veil_input(g, "a", 0, 1, d4), *b = veil_input(g, "b", 0, 1, d5);
    VT_CHECK(veil_div(g, "q", a, b) == NULL && veil_graph_status(g) == VEIL_ERR_SHAPE &&
                 strstr(veil_graph_error(g), "div 'q'"),
             "div of unequal shapes refused by name: %s", veil_graph_error(g));
    veil_graph_destroy(&g);
}

int main(void)
{
    sh = veil_test_mpc_shared(sizeof *sh);
    if (!sh)
        return 1;
    test_bad_input();
    test_model_sweep();
    test_rsqrt_model_sweep();
    test_zero();
    for (int op = 0; op < NOPS; op++)
        test_forward(op);
    for (int op = 0; op < NOPS; op++)
        test_backward(op);
    veil_test_mpc_shared_free(sh, sizeof *sh);
    return veil_test_status();
}

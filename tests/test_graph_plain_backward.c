/* Tests the plaintext backward pass, SGD update and trainer (veil_plain_trainer_*). DOUBLE
 * gradients of every trainable layer (dense with and without bias, conv2d stride 1/2 pad 0/1 with
 * and without bias, relu, maxpool 2x2 and overlapping 3x3 stride 1, avgpool, global avgpool,
 * flatten, residual add, concat, scale, layer norm, matmul + transpose + softmax attention,
 * softmax cross-entropy) against central finite differences of the DOUBLE loss (step 1e-6,
 * |analytic - fd| <= 1e-5 max(|fd|, 1e-2)); FIXED gradients (f = 16) against DOUBLE within the
 * bounds stated at FIXED_TOL; SGD with momentum and weight decay over two steps against a hand
 * computation (DOUBLE, 1e-12) and against the documented ring sequence bit for bit (FIXED), as
 * are the FIXED layer norm, softmax and loss gradients (recomputed from their operands); an
 * MLP trained on a separable problem in both modes (the loss falls, trainer_run equals
 * veil_plain_run at the trained parameters, FIXED follows DOUBLE); and bad input (no training, a
 * missing parameter or label feed, a parameter fed to a step, a gradient before any step). */
#include "config.h"

#include "graph/plain/plain_internal.h"
#include "tasks/nonlinear_ref.h"
#include "test_graph_plain_util.h"
#include "test_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define F 16
#define MAXL 24
#define MAXV 4096

/* The leaves of the network being built: values per name, parameters and inputs. */
struct leaf {
    const char *name;
    size_t numel;
    int is_param;
    double v[MAXV];
};
static struct leaf leaves[MAXL];
static int nleaves;
static int jitter; /* 1: off-grid values (no ties, for finite differences); 0: multiples of 2^-10 */

static struct leaf *add_leaf(const char *name, size_t numel, int is_param)
{
    struct leaf *l = &leaves[nleaves++];
    l->name = name;
    l->numel = numel;
    l->is_param = is_param;
    return l;
}

static veil_node_t *param(veil_graph_t *g, const char *name, int ndim, const size_t *dims,
                          double amp, double offset)
{
    veil_node_t *n = veil_param(g, name, 1, ndim, dims);
    struct leaf *l = add_leaf(name, veil_node_numel(n), 1);
    tg_fill(l->v, l->numel, amp, (uint64_t)nleaves * 977 + 13);
    for (size_t k = 0; k < l->numel; k++)
        l->v[k] += offset + (jitter ? 1e-4 * sin(1.0 + 3.7 * (double)k + nleaves) : 0.0);
    return n;
}

static veil_node_t *input(veil_graph_t *g, const char *name, int ndim, const size_t *dims)
{
    veil_node_t *n = veil_input(g, name, 0, ndim, dims);
    struct leaf *l = add_leaf(name, veil_node_numel(n), 0);
    tg_fill(l->v, l->numel, 1.0, (uint64_t)nleaves * 131 + 7);
    for (size_t k = 0; k < l->numel; k++)
        l->v[k] += jitter ? 1e-4 * cos(2.0 + 1.3 * (double)k) : 0.0;
    return n;
}

/* One-hot labels (b, c), class (3 i + 1) mod c, and the loss, revealed as output 0. */
static veil_node_t *loss(veil_graph_t *g, veil_node_t *logits, size_t b, size_t c)
{
    veil_node_t *y = veil_input(g, "labels", 0, 2, (size_t[]){b, c});
    struct leaf *l = add_leaf("labels", b * c, 0);
    for (size_t i = 0; i < b * c; i++)
        l->v[i] = (i % c) == (3 * (i / c) + 1) % c;
    veil_node_t *L = veil_softmax_cross_entropy(g, "loss", logits, y);
    veil_reveal(g, L, VEIL_ALL_PARTIES);
    return L;
}

static size_t feeds_of(struct veil_feed *f, int params, int inputs)
{
    size_t n = 0;
    for (int i = 0; i < nleaves; i++)
        if (leaves[i].is_param ? params : inputs)
            f[n++] = (struct veil_feed){leaves[i].name, leaves[i].v, leaves[i].numel};
    return n;
}

/* ---- the networks ---------------------------------------------------------------------------- */

/* dense + bias, relu, scale, dense without bias. */
static void net_mlp(veil_graph_t *g)
{
    veil_node_t *x = input(g, "x", 2, (size_t[]){4, 6});
    veil_node_t *h = veil_dense(g, "d1", x, param(g, "w1", 2, (size_t[]){6, 5}, 0.5, 0),
                                param(g, "b1", 1, (size_t[]){5}, 0.2, 0));
    h = veil_scale(g, "sc", veil_relu(g, "r1", h), 0.75);
    loss(g, veil_dense(g, "d2", h, param(g, "w2", 2, (size_t[]){5, 3}, 0.5, 0), NULL), 4, 3);
}

/* conv s1 p1 + bias, relu, maxpool 2x2, conv s2 p0 without bias, flatten, dense + bias. */
static void net_conv(veil_graph_t *g)
{
    veil_node_t *x = input(g, "x", 4, (size_t[]){2, 2, 6, 6});
    veil_node_t *c = veil_conv2d(g, "c1", x, param(g, "k1", 4, (size_t[]){3, 2, 3, 3}, 0.4, 0),
                                 param(g, "kb1", 1, (size_t[]){3}, 0.2, 0), 1, 1);
    c = veil_maxpool2d(g, "mp", veil_relu(g, "r1", c), 2, 2); /* (2,3,3,3) */
    c = veil_conv2d(g, "c2", c, param(g, "k2", 4, (size_t[]){4, 3, 2, 2}, 0.4, 0), NULL, 2, 0);
    c = veil_flatten(g, "fl", c); /* (2,4) */
    loss(g,
         veil_dense(g, "fc", c, param(g, "w", 2, (size_t[]){4, 3}, 0.5, 0),
                    param(g, "b", 1, (size_t[]){3}, 0.2, 0)),
         2, 3);
}

/* conv s1 p0, relu, overlapping maxpool 3x3 s1, conv s1 p1, residual add (the pool output has
 * two consumers), conv s2 p1 + bias, global avgpool; avgpool 2x2 of the sum, flatten, concat. */
static void net_pool(veil_graph_t *g)
{
    veil_node_t *x = input(g, "x", 4, (size_t[]){2, 2, 7, 7});
    veil_node_t *c = veil_conv2d(g, "c1", x, param(g, "k1", 4, (size_t[]){3, 2, 2, 2}, 0.4, 0),
                                 param(g, "kb1", 1, (size_t[]){3}, 0.2, 0), 1, 0); /* 6x6 */
    veil_node_t *m = veil_maxpool2d(g, "mp", veil_relu(g, "r1", c), 3, 1);         /* 4x4 */
    veil_node_t *c2 =
        veil_conv2d(g, "c2", m, param(g, "k2", 4, (size_t[]){3, 3, 3, 3}, 0.3, 0), NULL, 1, 1);
    veil_node_t *s = veil_add(g, "res", m, c2);
    veil_node_t *c3 = veil_conv2d(g, "c3", s, param(g, "k3", 4, (size_t[]){4, 3, 3, 3}, 0.3, 0),
                                  param(g, "kb3", 1, (size_t[]){4}, 0.2, 0), 2, 1); /* 2x2 */
    veil_node_t *ga = veil_global_avgpool(g, "gap", c3);                            /* (2,4) */
    veil_node_t *av = veil_flatten(g, "fl", veil_avgpool2d(g, "ap", s, 2, 2));      /* (2,12) */
    veil_node_t *cat = veil_concat(g, "cat", ga, av, 1);                            /* (2,16) */
    loss(g,
         veil_dense(g, "fc", cat, param(g, "w", 2, (size_t[]){16, 3}, 0.4, 0),
                    param(g, "b", 1, (size_t[]){3}, 0.2, 0)),
         2, 3);
}

/* Attention: q k^T (transpose), scale, softmax, times v, residual, layer norm, dense. */
static void net_attn(veil_graph_t *g)
{
    veil_node_t *x = input(g, "x", 2, (size_t[]){4, 6});
    veil_node_t *q = veil_dense(g, "q", x, param(g, "wq", 2, (size_t[]){6, 6}, 0.5, 0), NULL);
    veil_node_t *k = veil_dense(g, "k", x, param(g, "wk", 2, (size_t[]){6, 6}, 0.5, 0), NULL);
    veil_node_t *v = veil_dense(g, "v", x, param(g, "wv", 2, (size_t[]){6, 6}, 0.5, 0), NULL);
    veil_node_t *a = veil_matmul(g, "qk", q, veil_transpose(g, "kt", k));
    a = veil_softmax(g, "sm", veil_scale(g, "sc", a, 1.0 / sqrt(6.0)));
    veil_node_t *o = veil_add(g, "res", veil_matmul(g, "av", a, v), x);
    o = veil_layernorm(g, "ln", o, param(g, "gamma", 1, (size_t[]){6}, 0.3, 1.0),
                       param(g, "beta", 1, (size_t[]){6}, 0.2, 0), 1e-5);
    loss(g,
         veil_dense(g, "fc", o, param(g, "w", 2, (size_t[]){6, 3}, 0.5, 0),
                    param(g, "b", 1, (size_t[]){3}, 0.2, 0)),
         4, 3);
}

struct net {
    const char *name;
    void (*build)(veil_graph_t *g);
    double fixed_tol; /* FIXED_TOL: max |fixed - double| over the gradients, absolute */
};

/*
 * FIXED_TOL. Inputs and parameters are multiples of 2^-10, exact at f = 16, so FIXED differs from
 * DOUBLE only by (1) the floor truncations: each truncated entry is low by [0, 1) ulp (2^-16 =
 * 1.5e-5), and a weight gradient sums fan-in such entries times activations of size ~1 (72 terms
 * for the pool net's first conv, B OH OW = 2 x 36), so about fan-in/2 ulps per truncating layer
 * on the way back, ~1e-3 for the pool net, under 1e-4 for the others; (2) the softmax
 * approximation (tasks/nonlinear.h, 2e-4 absolute per entry), which XENT_GRAD passes on divided
 * by the batch. Bounds: 2e-3 for the small nets, 3e-3 for the conv nets. Measured maxima
 * (VEIL_TEST_VERBOSE=1): mlp 5.3e-5, conv 6.2e-5, pool 9.8e-4, attn 8.0e-5.
 */
static const struct net nets[] = {
    {"mlp", net_mlp, 2e-3},
    {"conv", net_conv, 3e-3},
    {"pool", net_pool, 3e-3},
    {"attn", net_attn, 3e-3},
};

static veil_plan_t *compile_net(const struct net *nt, veil_graph_t **gp)
{
    nleaves = 0;
    veil_graph_t *g = veil_graph_new(nt->name);
    nt->build(g);
    struct veil_compile_options o;
    veil_compile_options_defaults(&o);
    o.training = 1;
    veil_plan_t *p = veil_compile(g, &o);
    VT_CHECK(p != NULL, "%s: compile: %s", nt->name, veil_last_error());
    *gp = g;
    return p;
}

/* The gradients of every parameter (concatenated in leaf order) after one step in mode. */
static int grads(const veil_plan_t *p, enum veil_plain_mode mode, double *out, double *lossv)
{
    struct veil_feed f[MAXL];
    size_t np = feeds_of(f, 1, 0);
    veil_plain_trainer_t *t = veil_plain_trainer_new(p, mode, f, np);
    if (!t)
        return VEIL_ERR_INVAL;
    size_t ni = feeds_of(f, 0, 1);
    int rc = veil_plain_trainer_step(t, f, ni, lossv);
    for (int i = 0; rc == VEIL_OK && i < nleaves; i++)
        if (leaves[i].is_param) {
            rc = veil_plain_trainer_grad(t, leaves[i].name, out);
            out += leaves[i].numel;
        }
    veil_plain_trainer_destroy(&t);
    return rc;
}

static double run_loss(const veil_plan_t *p)
{
    struct veil_feed f[MAXL];
    size_t n = feeds_of(f, 1, 1);
    double l = NAN, *outs[1] = {&l};
    int rc = veil_plain_run(p, VEIL_PLAIN_DOUBLE, f, n, outs);
    VT_CHECK(rc == VEIL_OK, "veil_plain_run: %s", veil_last_error());
    return l;
}

static double ga[8 * MAXV], gf[8 * MAXV];

static void test_finite_differences(const struct net *nt)
{
    jitter = 1;
    veil_graph_t *g;
    veil_plan_t *p = compile_net(nt, &g);
    double l0;
    if (!p)
        goto done;
    int rc = grads(p, VEIL_PLAIN_DOUBLE, ga, &l0);
    VT_CHECK(rc == VEIL_OK, "%s: DOUBLE step: %s", nt->name, veil_last_error());
    VT_CHECK(fabs(run_loss(p) - l0) < 1e-12, "%s: trainer loss %.17g differs from veil_plain_run's",
             nt->name, l0);
    const double h = 1e-6;
    double worst = 0, gmax = 0;
    size_t at = 0;
    for (int i = 0; rc == VEIL_OK && i < nleaves; i++) {
        if (!leaves[i].is_param)
            continue;
        for (size_t k = 0; k < leaves[i].numel; k++, at++) {
            double v = leaves[i].v[k];
            leaves[i].v[k] = v + h;
            double lp = run_loss(p);
            leaves[i].v[k] = v - h;
            double lm = run_loss(p);
            leaves[i].v[k] = v;
            double fd = (lp - lm) / (2 * h), err = fabs(ga[at] - fd);
            double tol = 1e-5 * fmax(fabs(fd), 1e-2);
            worst = fmax(worst, err / tol);
            gmax = fmax(gmax, fabs(fd));
            if (!(err <= tol)) {
                VT_CHECK(0, "%s: d loss / d %s[%zu]: backward %.10g, finite difference %.10g",
                         nt->name, leaves[i].name, k, ga[at], fd);
                rc = VEIL_ERR_RANGE;
            }
        }
    }
    veil_test_log("%s: %zu gradient entries (largest %.3g) match finite differences (worst "
                  "%.2g of the tolerance)",
                  nt->name, at, gmax, worst);
done:
    veil_plan_destroy(&p);
    veil_graph_destroy(&g);
}

static void test_fixed_vs_double(const struct net *nt)
{
    jitter = 0;
    veil_graph_t *g;
    veil_plan_t *p = compile_net(nt, &g);
    double ld, lf;
    if (!p)
        goto done;
    int rc = grads(p, VEIL_PLAIN_DOUBLE, ga, &ld);
    VT_CHECK(rc == VEIL_OK, "%s: DOUBLE step: %s", nt->name, veil_last_error());
    rc = grads(p, VEIL_PLAIN_FIXED, gf, &lf);
    VT_CHECK(rc == VEIL_OK, "%s: FIXED step: %s", nt->name, veil_last_error());
    double worst = 0;
    size_t at = 0;
    for (int i = 0; rc == VEIL_OK && i < nleaves; i++)
        for (size_t k = 0; leaves[i].is_param && k < leaves[i].numel; k++, at++) {
            double err = fabs(gf[at] - ga[at]);
            worst = fmax(worst, err);
            if (!(err <= nt->fixed_tol)) {
                VT_CHECK(0, "%s: gradient %s[%zu]: FIXED %.8g, DOUBLE %.8g (bound %g)", nt->name,
                         leaves[i].name, k, gf[at], ga[at], nt->fixed_tol);
                rc = VEIL_ERR_RANGE;
            }
        }
    VT_CHECK(fabs(lf - ld) < 1e-3, "%s: FIXED loss %g, DOUBLE %g", nt->name, lf, ld);
    veil_test_log("%s: FIXED gradients within %.3g of DOUBLE (bound %g)", nt->name, worst,
                  nt->fixed_tol);
    /* round-to-nearest truncation: as close to DOUBLE, and not the floor run's words */
    static double gn[8 * MAXV];
    double ln, worst_n = 0;
    size_t differ = 0;
    rc = grads(p, VEIL_PLAIN_FIXED_NEAREST, gn, &ln);
    VT_CHECK(rc == VEIL_OK, "%s: FIXED_NEAREST step: %s", nt->name, veil_last_error());
    for (size_t k = 0; rc == VEIL_OK && k < at; k++) {
        worst_n = fmax(worst_n, fabs(gn[k] - ga[k]));
        differ += gn[k] != gf[k];
    }
    VT_CHECK(rc != VEIL_OK || worst_n <= nt->fixed_tol, "%s: FIXED_NEAREST gradients %.3g from "
             "DOUBLE (bound %g)", nt->name, worst_n, nt->fixed_tol);
    VT_CHECK(rc != VEIL_OK || differ > 0, "%s: FIXED_NEAREST equals FIXED everywhere", nt->name);
    veil_test_log("%s: FIXED_NEAREST gradients within %.3g of DOUBLE; %zu of %zu differ from "
                  "floor's", nt->name, worst_n, differ, at);
done:
    veil_plan_destroy(&p);
    veil_graph_destroy(&g);
}

/* ---- FIXED sequences bit for bit ------------------------------------------------------------ */

/* Recomputes the FIXED LAYERNORM_GRAD, SOFTMAX_GRAD and XENT_GRAD nodes of the attention net from
 * their operands and saved state, as graph_internal.h's BACKWARD FIXED-POINT SEQUENCES say,
 * through the internal executor (nothing freed, so every operand can be read back). */
static void test_sequences(void)
{
    jitter = 0;
    veil_graph_t *g;
    veil_plan_t *p = compile_net(&nets[3], &g);
    struct veil_plain_exec e;
    memset(&e, 0, sizeof e);
    struct veil_feed f[MAXL];
    size_t n = feeds_of(f, 1, 1);
    double **vals = p ? calloc(p->count, sizeof *vals) : NULL;
    int rc = vals ? veil_plain_exec_init(&e, p, VEIL_PLAIN_FIXED) : VEIL_ERR_INVAL;
    if (rc == VEIL_OK) {
        rc = veil_plan_bind(p, -1, f, n, vals);
        rc = rc == VEIL_OK ? veil_plain_exec_bind(&e, vals) : rc;
        rc = rc == VEIL_OK ? veil_plain_exec_run(&e, 0, p->count, 0) : rc;
        veil_plan_values_free(p, vals);
    }
    free(vals);
    VT_CHECK(rc == VEIL_OK, "sequences: %s", veil_last_error());
    int seen = 0;
    for (size_t i = 0; rc == VEIL_OK && i < p->count; i++) {
        const struct veil_node *nd = &p->nodes[i], *fw = nd->fwd >= 0 ? &p->nodes[nd->fwd] : NULL;
        const size_t d = nd->dims[nd->ndim - 1], rows = nd->numel / d;
        uint64_t want[64];
        if (nd->numel > 64)
            continue;
        if (nd->op == VEIL_OP_LAYERNORM_GRAD) {
            /* gamma as bound: its array holds the updated value once the walk is over */
            uint64_t gm[64];
            for (int l = 0; l < nleaves; l++)
                if (strcmp(leaves[l].name, "gamma") == 0)
                    tg_enc_array(leaves[l].v, d, F, gm);
            const uint64_t *dy = e.w[nd->in[0]], *xh = e.waux[fw->index][0];
            const uint64_t inv = tg_enc(1.0 / (double)d, F);
            for (size_t r = 0; r < rows; r++) {
                uint64_t gg[64], s1 = 0, s2 = 0;
                for (size_t j = 0; j < d; j++) {
                    gg[j] = tg_tr(dy[r * d + j] * gm[j], F);
                    s1 += gg[j];
                    s2 += gg[j] * xh[r * d + j];
                }
                uint64_t m1 = tg_tr(s1 * inv, F), m2 = tg_tr(tg_tr(s2, F) * inv, F);
                for (size_t j = 0; j < d; j++)
                    want[r * d + j] = tg_tr(
                        e.waux[fw->index][1][r] * (gg[j] - m1 - tg_tr(xh[r * d + j] * m2, F)), F);
            }
        } else if (nd->op == VEIL_OP_SOFTMAX_GRAD) {
            const uint64_t *dy = e.w[nd->in[0]], *sm = e.waux[fw->index][0];
            for (size_t r = 0; r < rows; r++) {
                uint64_t q = 0;
                for (size_t j = 0; j < d; j++)
                    q += tg_tr(dy[r * d + j] * sm[r * d + j], F);
                for (size_t j = 0; j < d; j++)
                    want[r * d + j] = tg_tr(sm[r * d + j] * (dy[r * d + j] - q), F);
            }
        } else if (nd->op == VEIL_OP_XENT_GRAD) {
            for (size_t k = 0; k < nd->numel; k++)
                want[k] = tg_tr((e.waux[fw->index][0][k] - e.w[fw->in[1]][k]) *
                                    tg_enc(1.0 / (double)nd->dims[0], F),
                                F);
        } else {
            continue;
        }
        seen++;
        veil_test_compare_u64(nd->name, e.w[i], want, nd->numel);
    }
    VT_CHECK(rc != VEIL_OK || seen == 3, "sequences: %d of the 3 nodes checked", seen);
    veil_plain_exec_fini(&e);
    veil_plan_destroy(&p);
    veil_graph_destroy(&g);
}

/* ---- SGD against hand computations ----------------------------------------------------------- */

#define SB 2
#define SI 3
#define SC 2
static const double lr = 0.125, mom = 0.875, wd = 0.0625;

/* w (SI, SC) -> dW of the mean cross-entropy of softmax(x w) (double). */
static void hand_grad_d(const double *x, const double *y, const double *w, double *dw)
{
    double gl[SB * SC];
    for (size_t i = 0; i < SB; i++) {
        double z[SC], mx = -INFINITY, s = 0;
        for (size_t j = 0; j < SC; j++) {
            z[j] = 0;
            for (size_t k = 0; k < SI; k++)
                z[j] += x[i * SI + k] * w[k * SC + j];
            mx = fmax(mx, z[j]);
        }
        for (size_t j = 0; j < SC; j++)
            s += exp(z[j] - mx);
        for (size_t j = 0; j < SC; j++)
            gl[i * SC + j] = (exp(z[j] - mx) / s - y[i * SC + j]) / SB;
    }
    for (size_t k = 0; k < SI; k++)
        for (size_t j = 0; j < SC; j++) {
            dw[k * SC + j] = 0;
            for (size_t i = 0; i < SB; i++)
                dw[k * SC + j] += x[i * SI + k] * gl[i * SC + j];
        }
}

/* The ring sequence: logits = trunc(x . w); s = veil_ref_softmax_lastdim; g = trunc((s - y) *
 * enc(1/B)); dW = trunc(x^T . g). */
static void hand_grad_w(const uint64_t *x, const uint64_t *y, const uint64_t *w, uint64_t *dw)
{
    uint64_t z[SB * SC], s[SB * SC], gl[SB * SC];
    tg_dense_w(SB, SI, SC, x, w, NULL, F, z);
    veil_ref_softmax_lastdim(SB, SC, z, F, NULL, s);
    for (size_t i = 0; i < SB * SC; i++)
        gl[i] = tg_tr((s[i] - y[i]) * tg_enc(1.0 / SB, F), F);
    for (size_t k = 0; k < SI; k++)
        for (size_t j = 0; j < SC; j++) {
            uint64_t a = 0;
            for (size_t i = 0; i < SB; i++)
                a += x[i * SI + k] * gl[i * SC + j];
            dw[k * SC + j] = tg_tr(a, F);
        }
}

static void test_sgd(enum veil_plain_mode mode)
{
    double x[SB * SI], y[SB * SC] = {1, 0, 0, 1}, w[SI * SC], got[SI * SC];
    tg_fill(x, SB * SI, 1.0, 5);
    tg_fill(w, SI * SC, 0.5, 6);
    veil_graph_t *g = veil_graph_new("sgd");
    veil_node_t *z = veil_dense(g, "d", veil_input(g, "x", 0, 2, (size_t[]){SB, SI}),
                                veil_param(g, "w", 1, 2, (size_t[]){SI, SC}), NULL);
    veil_softmax_cross_entropy(g, "loss", z, veil_input(g, "y", 0, 2, (size_t[]){SB, SC}));
    struct veil_compile_options o;
    veil_compile_options_defaults(&o);
    o.training = 1;
    o.lr = lr;
    o.momentum = mom;
    o.weight_decay = wd;
    veil_plan_t *p = veil_compile(g, &o);
    VT_CHECK(p != NULL, "sgd: compile: %s", veil_last_error());
    struct veil_feed pf[1] = {{"w", w, SI * SC}}, in[2] = {{"x", x, SB * SI}, {"y", y, SB * SC}};
    veil_plain_trainer_t *t = p ? veil_plain_trainer_new(p, mode, pf, 1) : NULL;
    VT_CHECK(t != NULL, "sgd: trainer_new: %s", veil_last_error());
    /* the hand computation, in doubles or in ring words */
    double wh[SI * SC], vd[SI * SC] = {0}, dwd[SI * SC];
    uint64_t xw[SB * SI], yw[SB * SC], ww[SI * SC], vw[SI * SC] = {0}, dww[SI * SC];
    memcpy(wh, w, sizeof w);
    tg_enc_array(x, SB * SI, F, xw);
    tg_enc_array(y, SB * SC, F, yw);
    tg_enc_array(w, SI * SC, F, ww);
    for (int step = 0; t && step < 2; step++) {
        int rc = veil_plain_trainer_step(t, in, 2, NULL);
        VT_CHECK(rc == VEIL_OK, "sgd: step %d: %s", step, veil_last_error());
        if (mode == VEIL_PLAIN_DOUBLE) {
            hand_grad_d(x, y, wh, dwd);
            for (size_t k = 0; k < SI * SC; k++) {
                vd[k] = mom * vd[k] + dwd[k] + wd * wh[k];
                wh[k] -= lr * vd[k];
            }
        } else {
            hand_grad_w(xw, yw, ww, dww);
            for (size_t k = 0; k < SI * SC; k++) {
                vw[k] = tg_tr(vw[k] * tg_enc(mom, F), F) + dww[k] + tg_tr(ww[k] * tg_enc(wd, F), F);
                ww[k] -= tg_tr(vw[k] * tg_enc(lr, F), F);
            }
        }
        VT_CHECK(veil_plain_trainer_param(t, "w", got) == VEIL_OK, "sgd: param: %s",
                 veil_last_error());
        for (size_t k = 0; k < SI * SC; k++) {
            double want = mode == VEIL_PLAIN_DOUBLE ? wh[k] : tg_dec(ww[k], F);
            double tol = mode == VEIL_PLAIN_DOUBLE ? 1e-12 : 0.0;
            VT_CHECK(fabs(got[k] - want) <= tol, "sgd %s step %d: w[%zu] = %.17g, want %.17g",
                     mode == VEIL_PLAIN_DOUBLE ? "DOUBLE" : "FIXED", step, k, got[k], want);
        }
        VT_CHECK(veil_plain_trainer_grad(t, "w", got) == VEIL_OK, "sgd: grad: %s",
                 veil_last_error());
        for (size_t k = 0; k < SI * SC; k++) {
            double want = mode == VEIL_PLAIN_DOUBLE ? dwd[k] : tg_dec(dww[k], F);
            VT_CHECK(fabs(got[k] - want) <= (mode == VEIL_PLAIN_DOUBLE ? 1e-12 : 0.0),
                     "sgd step %d: dw[%zu] = %.17g, want %.17g", step, k, got[k], want);
        }
    }
    veil_plain_trainer_destroy(&t);
    veil_plan_destroy(&p);
    veil_graph_destroy(&g);
}

/* ---- training an MLP ------------------------------------------------------------------------- */

#define TB 16
#define TSTEPS 40

static void test_train(void)
{
    double x[TB * 4], y[TB * 2], w1[32], b1[8] = {0}, w2[16], b2[2] = {0}, ld[TSTEPS], lf[TSTEPS];
    tg_fill(x, TB * 4, 1.0, 21);
    tg_fill(w1, 32, 0.5, 22);
    tg_fill(w2, 16, 0.5, 23);
    for (size_t i = 0; i < TB; i++) {
        int c = x[i * 4] + x[i * 4 + 1] > 0;
        y[i * 2] = !c;
        y[i * 2 + 1] = c;
    }
    veil_graph_t *g = veil_graph_new("mlp");
    veil_node_t *xi = veil_input(g, "x", 0, 2, (size_t[]){TB, 4});
    veil_node_t *h = veil_relu(g, "r",
                               veil_dense(g, "d1", xi, veil_param(g, "w1", 1, 2, (size_t[]){4, 8}),
                                          veil_param(g, "b1", 1, 1, (size_t[]){8})));
    veil_node_t *z = veil_dense(g, "d2", h, veil_param(g, "w2", 1, 2, (size_t[]){8, 2}),
                                veil_param(g, "b2", 1, 1, (size_t[]){2}));
    veil_reveal(g, z, VEIL_ALL_PARTIES);
    veil_softmax_cross_entropy(g, "loss", z, veil_input(g, "y", 0, 2, (size_t[]){TB, 2}));
    struct veil_compile_options o;
    veil_compile_options_defaults(&o);
    o.training = 1;
    o.lr = 0.1;
    veil_plan_t *p = veil_compile(g, &o);
    VT_CHECK(p != NULL, "train: compile: %s", veil_last_error());
    struct veil_feed pf[8] = {{"w1", w1, 32}, {"b1", b1, 8}, {"w2", w2, 16}, {"b2", b2, 2}};
    struct veil_feed in[2] = {{"x", x, TB * 4}, {"y", y, TB * 2}};
    for (int m = 0; p && m < 2; m++) {
        enum veil_plain_mode mode = m ? VEIL_PLAIN_FIXED : VEIL_PLAIN_DOUBLE;
        double *l = m ? lf : ld;
        veil_plain_trainer_t *t = veil_plain_trainer_new(p, mode, pf, 4);
        VT_CHECK(t != NULL, "train: trainer_new: %s", veil_last_error());
        for (int s = 0; t && s < TSTEPS; s++)
            VT_CHECK(veil_plain_trainer_step(t, in, 2, &l[s]) == VEIL_OK, "train: step %d: %s", s,
                     veil_last_error());
        VT_CHECK(l[TSTEPS - 1] < 0.25 * l[0], "train %s: loss %g -> %g, want a fall by 4x",
                 m ? "FIXED" : "DOUBLE", l[0], l[TSTEPS - 1]);
        veil_test_log("train %s: loss %.4f -> %.4f in %d steps", m ? "FIXED" : "DOUBLE", l[0],
                      l[TSTEPS - 1], TSTEPS);
        /* inference with the trained parameters (no labels needed) equals veil_plain_run */
        double tw[4][32], out1[TB * 2], out2[TB * 2], *o1[1] = {out1}, *o2[1] = {out2};
        struct veil_feed all[6] = {
            {"w1", tw[0], 32}, {"b1", tw[1], 8}, {"w2", tw[2], 16}, {"b2", tw[3], 2}, in[0], in[1]};
        for (int k = 0; t && k < 4; k++)
            VT_CHECK(veil_plain_trainer_param(t, pf[k].name, tw[k]) == VEIL_OK, "param %s",
                     pf[k].name);
        int rc = t ? veil_plain_trainer_run(t, in, 1, o1) : VEIL_ERR_INVAL;
        VT_CHECK(rc == VEIL_OK, "train: trainer_run: %s", veil_last_error());
        rc = veil_plain_run(p, mode, all, 6, o2);
        VT_CHECK(rc == VEIL_OK, "train: veil_plain_run: %s", veil_last_error());
        VT_CHECK(memcmp(out1, out2, sizeof out1) == 0,
                 "train %s: trainer_run differs from "
                 "veil_plain_run at the trained parameters",
                 m ? "FIXED" : "DOUBLE");
        veil_plain_trainer_destroy(&t);
    }
    for (int s = 0; p && s < TSTEPS; s++)
        VT_CHECK(fabs(lf[s] - ld[s]) < 0.01, "train: step %d: FIXED loss %g, DOUBLE %g", s, lf[s],
                 ld[s]);
    veil_plan_destroy(&p);
    veil_graph_destroy(&g);
}

/* ---- bad input ------------------------------------------------------------------------------- */

static void test_bad_input(void)
{
    double x[8] = {0}, y[4] = {1, 0, 0, 1}, w[8] = {0}, gr[8];
    veil_graph_t *g = veil_graph_new("bad");
    veil_node_t *z = veil_dense(g, "d", veil_input(g, "x", 0, 2, (size_t[]){2, 4}),
                                veil_param(g, "w", 1, 2, (size_t[]){4, 2}), NULL);
    veil_reveal(g, z, VEIL_ALL_PARTIES);
    veil_softmax_cross_entropy(g, "loss", z, veil_input(g, "y", 0, 2, (size_t[]){2, 2}));
    veil_plan_t *inf = veil_compile(g, NULL);
    struct veil_compile_options o;
    veil_compile_options_defaults(&o);
    o.training = 1;
    veil_plan_t *p = veil_compile(g, &o);
    struct veil_feed pf[1] = {{"w", w, 8}}, in[2] = {{"x", x, 8}, {"y", y, 4}};
    VT_CHECK(inf && p, "bad: compile: %s", veil_last_error());
    veil_plain_trainer_t *t = veil_plain_trainer_new(inf, VEIL_PLAIN_DOUBLE, pf, 1);
    VT_CHECK(!t && strstr(veil_last_error(), "training"), "bad: a plan without training: '%s'",
             veil_last_error());
    t = veil_plain_trainer_new(p, VEIL_PLAIN_FIXED, NULL, 0);
    VT_CHECK(!t && strstr(veil_last_error(), "'w'"), "bad: missing parameter: '%s'",
             veil_last_error());
    t = veil_plain_trainer_new(p, VEIL_PLAIN_FIXED, in, 1);
    VT_CHECK(!t && strstr(veil_last_error(), "'x'"), "bad: an input as a parameter: '%s'",
             veil_last_error());
    t = veil_plain_trainer_new(p, VEIL_PLAIN_FIXED, pf, 1);
    VT_CHECK(t != NULL, "bad: trainer_new: %s", veil_last_error());
    int rc = veil_plain_trainer_grad(t, "w", gr);
    VT_CHECK(rc == VEIL_ERR_STATE, "bad: a gradient before any step: %d", rc);
    rc = veil_plain_trainer_step(t, in, 1, NULL);
    VT_CHECK(rc == VEIL_ERR_INVAL && strstr(veil_last_error(), "'y'"),
             "bad: missing labels: %d "
             "'%s'",
             rc, veil_last_error());
    struct veil_feed three[3] = {in[0], in[1], pf[0]};
    rc = veil_plain_trainer_step(t, three, 3, NULL);
    VT_CHECK(rc == VEIL_ERR_INVAL && strstr(veil_last_error(), "'w'"),
             "bad: a parameter fed to "
             "a step: %d '%s'",
             rc, veil_last_error());
    rc = veil_plain_trainer_param(t, "x", gr);
    VT_CHECK(rc == VEIL_ERR_INVAL, "bad: param of an input: %d", rc);
    VT_CHECK(veil_plain_trainer_step(t, in, 2, NULL) == VEIL_OK,
             "bad: a good step after the bad "
             "ones: %s",
             veil_last_error());
    veil_plain_trainer_destroy(&t);
    veil_plain_trainer_destroy(&t); /* NULL-safe */
    veil_plan_destroy(&inf);
    veil_plan_destroy(&p);
    veil_graph_destroy(&g);
}

int main(void)
{
    for (size_t i = 0; i < sizeof nets / sizeof nets[0]; i++) {
        test_finite_differences(&nets[i]);
        test_fixed_vs_double(&nets[i]);
    }
    test_sequences();
    test_sgd(VEIL_PLAIN_DOUBLE);
    test_sgd(VEIL_PLAIN_FIXED);
    test_train();
    test_bad_input();
    return veil_test_status();
}

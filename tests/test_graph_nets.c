/*
 * test_graph_nets.c — the networks, feeds and references the secure-executor tests share (see
 * test_graph_nets.h).
 */
#include "config.h"
#include "test_graph_nets.h"
#include "test_util.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

int veil_test_net_weight_stationary;
int veil_test_net_microbatches = 1;
int veil_test_net_lookahead = VEIL_LOOKAHEAD_UNBOUNDED;
int veil_test_net_serialized;

static uint64_t rng = 0x9e3779b97f4a7c15u;
static double uniform(double lo, double hi)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return lo + (hi - lo) * (double)(rng >> 11) / 9007199254740992.0;
}

void veil_test_net_feed(struct veil_test_net *t, const char *name, size_t numel, double lo,
                        double hi)
{
    double *v = malloc(numel * sizeof *v);
    for (size_t i = 0; v && i < numel; i++)
        v[i] = uniform(lo, hi);
    VT_CHECK(v != NULL, "feed '%s': out of memory", name);
    t->feeds[t->nfeeds++] = (struct veil_feed){.name = name, .values = v, .numel = numel};
}

veil_plan_t *veil_test_net_compile(veil_graph_t *g, int frac_bits)
{
    struct veil_compile_options o;
    veil_compile_options_defaults(&o);
    o.frac_bits = frac_bits;
    o.weight_stationary = veil_test_net_weight_stationary;
    o.microbatches = veil_test_net_microbatches;
    o.lookahead = veil_test_net_lookahead;
    o.serialized = veil_test_net_serialized;
    o.tile = 128;
    veil_plan_t *p = veil_compile(g, &o);
    VT_CHECK(p != NULL, "compile '%s': %s", veil_graph_name(g), veil_last_error());
    return p;
}

void veil_test_net_mlp(struct veil_test_net *t)
{
    veil_graph_t *g = veil_graph_new("mlp");
    size_t dx[2] = {4, 20}, dw1[2] = {20, 16}, db1[1] = {16}, dw2[2] = {16, 10}, db2[1] = {10};
    veil_node_t *x = veil_input(g, "x", 1, 2, dx);
    veil_node_t *h = veil_relu(
        g, NULL,
        veil_dense(g, "fc1", x, veil_param(g, "w1", 0, 2, dw1), veil_param(g, "b1", 0, 1, db1)));
    veil_node_t *y =
        veil_dense(g, "fc2", h, veil_param(g, "w2", 0, 2, dw2), veil_param(g, "b2", 0, 1, db2));
    veil_reveal(g, y, VEIL_ALL_PARTIES);
    veil_reveal(g, veil_argmax(g, "class", y), 1);
    t->name = "mlp";
    t->plan = veil_test_net_compile(g, 16);
    veil_graph_destroy(&g);
    veil_test_net_feed(t, "x", 80, -2, 2);
    veil_test_net_feed(t, "w1", 320, -0.5, 0.5);
    veil_test_net_feed(t, "b1", 16, -0.1, 0.1);
    veil_test_net_feed(t, "w2", 160, -0.5, 0.5);
    veil_test_net_feed(t, "b2", 10, -0.1, 0.1);
    t->tol = 1e-3;
}

void veil_test_net_cnn(struct veil_test_net *t)
{
    veil_graph_t *g = veil_graph_new("cnn");
    size_t dx[4] = {2, 2, 10, 10}, dw1[4] = {4, 2, 3, 3}, d4[1] = {4}, dw2[4] = {6, 4, 3, 3};
    size_t dwd[2] = {100, 6};
    veil_node_t *x = veil_input(g, "x", 1, 4, dx);
    veil_node_t *c1 = veil_conv2d(g, "c1", x, veil_param(g, "w1", 0, 4, dw1),
                                  veil_param(g, "b1", 0, 1, d4), 1, 1);
    veil_node_t *bn = veil_batchnorm(
        g, "bn", c1, veil_param(g, "gamma", 0, 1, d4), veil_param(g, "beta", 0, 1, d4),
        veil_param(g, "mean", 0, 1, d4), veil_param(g, "var", 0, 1, d4), 1e-5);
    veil_node_t *r = veil_relu(g, "r", bn);
    veil_node_t *mp = veil_maxpool2d(g, "mp", r, 2, 2);
    veil_node_t *c2 = veil_conv2d(g, "c2", mp, veil_param(g, "w2", 0, 4, dw2), NULL, 2, 1);
    veil_node_t *ga = veil_global_avgpool(g, "gap", c2);
    veil_node_t *ap = veil_flatten(g, "flat", veil_avgpool2d(g, "ap", r, 2, 2));
    veil_node_t *d = veil_dense(g, "fc", ap, veil_param(g, "wd", 0, 2, dwd), NULL);
    veil_reveal(g, veil_add(g, "sum", ga, d), VEIL_ALL_PARTIES);
    veil_reveal(g, mp, 0);
    t->name = "cnn";
    t->plan = veil_test_net_compile(g, 16);
    veil_graph_destroy(&g);
    veil_test_net_feed(t, "x", 400, -1, 1);
    veil_test_net_feed(t, "w1", 72, -0.5, 0.5);
    veil_test_net_feed(t, "b1", 4, -0.1, 0.1);
    veil_test_net_feed(t, "gamma", 4, 0.5, 1.5);
    veil_test_net_feed(t, "beta", 4, -0.2, 0.2);
    veil_test_net_feed(t, "mean", 4, -0.1, 0.1);
    veil_test_net_feed(t, "var", 4, 0.5, 2);
    veil_test_net_feed(t, "w2", 216, -0.5, 0.5);
    veil_test_net_feed(t, "wd", 600, -0.2, 0.2);
    t->tol = 1e-3;
}

/*
 * Two ReLUs, each read only by a max pool with more windows than the pairwise rule takes, so each
 * runs after its pool (graph/secure/lower_forward.c): a 2 x 2 pool (2,304 windows) and a 3 x 3
 * pool of stride 2 (overlapping windows, 1,200 of them). The biases leave windows whose values
 * are all negative. The pooled maps are revealed by their global averages (the outputs' size
 * limit).
 */
void veil_test_net_relu_pool(struct veil_test_net *t)
{
    veil_graph_t *g = veil_graph_new("relu_pool");
    size_t dx[4] = {16, 2, 12, 12}, dw[4] = {4, 2, 3, 3}, db[1] = {4};
    veil_node_t *x = veil_input(g, "x", 1, 4, dx);
    veil_node_t *c1 =
        veil_conv2d(g, "c1", x, veil_param(g, "w1", 0, 4, dw), veil_param(g, "b1", 0, 1, db), 1, 1);
    veil_node_t *p1 = veil_maxpool2d(g, "p1", veil_relu(g, "r1", c1), 2, 2);
    veil_node_t *c2 =
        veil_conv2d(g, "c2", x, veil_param(g, "w2", 0, 4, dw), veil_param(g, "b2", 0, 1, db), 1, 1);
    veil_node_t *p2 = veil_maxpool2d(g, "p2", veil_relu(g, "r2", c2), 3, 2);
    veil_reveal(g, veil_global_avgpool(g, "g1", p1), VEIL_ALL_PARTIES);
    veil_reveal(g, veil_global_avgpool(g, "g2", p2), 1);
    t->name = "relu_pool";
    t->plan = veil_test_net_compile(g, 16);
    veil_graph_destroy(&g);
    veil_test_net_feed(t, "x", 4608, -1, 1);
    veil_test_net_feed(t, "w1", 72, -0.5, 0.5);
    veil_test_net_feed(t, "b1", 4, -1.5, 0.1);
    veil_test_net_feed(t, "w2", 72, -0.5, 0.5);
    veil_test_net_feed(t, "b2", 4, -1.5, 0.1);
    t->tol = 1e-3;
}

void veil_test_net_relu_maxpool(struct veil_test_net *t, size_t batch)
{
    veil_graph_t *g = veil_graph_new("relu_maxpool");
    size_t dx[4] = {batch, 16, 16, 16};
    veil_node_t *x = veil_input(g, "x", 1, 4, dx);
    veil_node_t *p = veil_maxpool2d(g, "p", veil_relu(g, "r", x), 2, 2);
    veil_reveal(g, veil_global_avgpool(g, "g", p), VEIL_ALL_PARTIES);
    t->name = "relu_maxpool";
    t->plan = veil_test_net_compile(g, 16);
    veil_graph_destroy(&g);
    veil_test_net_feed(t, "x", batch * 4096, -1, 1);
    t->tol = 1e-3;
}

void veil_test_net_wide_relu(struct veil_test_net *t, size_t hidden)
{
    veil_graph_t *g = veil_graph_new("wide_relu");
    size_t dx[2] = {1, 4}, d1[2] = {4, hidden}, d2[2] = {hidden, 1};
    veil_node_t *h = veil_relu(
        g, "r",
        veil_dense(g, "fc1", veil_input(g, "x", 1, 2, dx), veil_param(g, "w1", 0, 2, d1), NULL));
    veil_reveal(g, veil_dense(g, "fc2", h, veil_param(g, "w2", 0, 2, d2), NULL), VEIL_ALL_PARTIES);
    t->name = hidden > 16384 ? "wide_relu" : "narrow_relu";
    t->plan = veil_test_net_compile(g, 16);
    veil_graph_destroy(&g);
    veil_test_net_feed(t, "x", 4, -1, 1);
    veil_test_net_feed(t, "w1", 4 * hidden, -1, 1);
    veil_test_net_feed(t, "w2", hidden, -0.01, 0.01);
    t->tol = 1e-2; /* a 1-ulp truncation error on each of the hidden values, times |w2| */
}

void veil_test_net_attention(struct veil_test_net *t)
{
    veil_graph_t *g = veil_graph_new("attention");
    size_t dx[2] = {6, 8}, dw[2] = {8, 8}, d8[1] = {8};
    veil_node_t *x = veil_input(g, "x", 1, 2, dx);
    veil_node_t *q = veil_dense(g, "q", x, veil_param(g, "wq", 0, 2, dw), NULL);
    veil_node_t *k = veil_dense(g, "k", x, veil_param(g, "wk", 0, 2, dw), NULL);
    veil_node_t *v = veil_dense(g, "v", x, veil_param(g, "wv", 0, 2, dw), NULL);
    veil_node_t *s =
        veil_scale(g, "s", veil_matmul(g, "qk", q, veil_transpose(g, "kt", k)), 1.0 / sqrt(8.0));
    veil_node_t *o = veil_matmul(g, "pv", veil_softmax(g, "p", s), v);
    veil_node_t *ln =
        veil_layernorm(g, "ln", veil_add(g, "res", x, o), veil_param(g, "gamma", 0, 1, d8),
                       veil_param(g, "beta", 0, 1, d8), 1e-5);
    veil_node_t *c = veil_concat(g, "cat", veil_gelu(g, "gelu", ln), x, 1);
    veil_reveal(g, veil_scale(g, "twice", c, 2.0), VEIL_ALL_PARTIES);
    t->name = "attention";
    t->plan = veil_test_net_compile(g, 16);
    veil_graph_destroy(&g);
    veil_test_net_feed(t, "x", 48, -1, 1);
    veil_test_net_feed(t, "wq", 64, -0.5, 0.5);
    veil_test_net_feed(t, "wk", 64, -0.5, 0.5);
    veil_test_net_feed(t, "wv", 64, -0.5, 0.5);
    veil_test_net_feed(t, "gamma", 8, 0.5, 1.5);
    veil_test_net_feed(t, "beta", 8, -0.2, 0.2);
    t->tol = 5e-3;
}

/* x (3, 5) of party 1 times w (5, 4) of party 0, revealed to all: the cost check. */
veil_plan_t *veil_test_net_linear_plan(int x_owner, int frac_bits)
{
    veil_graph_t *g = veil_graph_new("linear");
    size_t dx[2] = {3, 5}, dw[2] = {5, 4};
    veil_node_t *y =
        veil_dense(g, "fc", veil_input(g, "x", x_owner, 2, dx), veil_param(g, "w", 0, 2, dw), NULL);
    veil_reveal(g, y, VEIL_ALL_PARTIES);
    veil_plan_t *p = veil_test_net_compile(g, frac_bits);
    veil_graph_destroy(&g);
    return p;
}

void veil_test_net_linear(struct veil_test_net *t)
{
    t->name = "linear";
    t->plan = veil_test_net_linear_plan(1, 16);
    veil_test_net_feed(t, "x", 15, -2, 2);
    veil_test_net_feed(t, "w", 20, -1, 1);
    t->tol = 1e-4;
}

void veil_test_net_reference(struct veil_test_net *t)
{
    const veil_plan_t *p = t->plan;
    for (size_t k = 0; k < veil_plan_output_count(p); k++) {
        VT_CHECK(veil_plan_output_numel(p, k) <= 256, "output too large for the test buffers");
        t->want[k] = calloc(veil_plan_output_numel(p, k), sizeof(double));
    }
    int rc = veil_plain_run(p, VEIL_PLAIN_FIXED, t->feeds, t->nfeeds, t->want);
    VT_CHECK(rc == VEIL_OK, "%s: plaintext reference: %s", t->name, veil_last_error());
}

veil_graph_t *veil_test_train_mlp(const char *name)
{
    veil_graph_t *g = veil_graph_new(name);
    size_t dx[2] = {8, 6}, dw1[2] = {6, 5}, db1[1] = {5}, dw2[2] = {5, 3}, dl[2] = {8, 3};
    veil_node_t *h = veil_relu(g, NULL,
                               veil_dense(g, "fc1", veil_input(g, "x", 1, 2, dx),
                                          veil_param(g, "w1", 0, 2, dw1),
                                          veil_param(g, "b1", 0, 1, db1)));
    veil_node_t *y = veil_dense(g, "fc2", h, veil_param(g, "w2", 0, 2, dw2), NULL);
    veil_softmax_cross_entropy(g, "loss", y, veil_input(g, "labels", 1, 2, dl));
    return g;
}

void veil_test_train_mlp_values(uint64_t s, double *x, double *w1, double *b1, double *w2)
{
    for (size_t i = 0; i < 48; i++)
        x[i] = (double)((s = s * 6364136223846793005ull + 1) >> 40) / 16777216.0 * 2 - 1;
    for (size_t i = 0; i < 30; i++)
        w1[i] = (double)((s = s * 6364136223846793005ull + 1) >> 40) / 16777216.0 - 0.5;
    for (size_t i = 0; i < 15; i++)
        w2[i] = (double)((s = s * 6364136223846793005ull + 1) >> 40) / 16777216.0 - 0.5;
    for (size_t i = 0; i < 5; i++)
        b1[i] = 0.01 * (double)i;
}

void veil_test_net_free(struct veil_test_net *t)
{
    veil_plan_destroy(&t->plan);
    veil_plan_destroy(&t->other);
    for (size_t f = 0; f < t->nfeeds; f++)
        free((void *)t->feeds[f].values);
    for (int k = 0; k < VEIL_TEST_NET_MAXOUT; k++)
        free(t->want[k]);
    t->nfeeds = 0;
}

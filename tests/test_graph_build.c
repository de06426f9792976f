/*
 * test_graph_build.c — the DSL builders: shape inference of every builder on typical networks
 * (LeNet, a residual block, an attention block: q k^T scaled, softmax, times v), automatic names
 * and lookups; then every error path of graph.c and op_layers.c (wrong shapes, bad stride, pad
 * and window, duplicate and unusable names, owners out of range, bad leaves and constants, bad
 * reveals), each checked for: NULL result, the status, a message naming the layer, the first
 * error kept while later builders (given NULL or not) return NULL quietly, and veil_compile
 * returning that error through veil_last_error. Bad compile options and graphs without output
 * are refused by veil_compile with a message.
 */
#include "config.h"
#include "test_util.h"

#include "veil/graph.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* A leaf of up to 4 dimensions (zeros end the shape). */
static veil_node_t *leaf(veil_graph_t *g, int param, const char *name, int owner, size_t d0,
                         size_t d1, size_t d2, size_t d3)
{
    size_t dims[4] = {d0, d1, d2, d3};
    int ndim = 0;
    while (ndim < 4 && dims[ndim])
        ndim++;
    return param ? veil_param(g, name, owner, ndim, dims) : veil_input(g, name, owner, ndim, dims);
}
#define IN(g, name, ...) leaf(g, 0, name, 0, __VA_ARGS__)
#define PAR(g, name, ...) leaf(g, 1, name, 1, __VA_ARGS__)

/* Checks n's shape against the listed dimensions (zeros end it). */
static void shape_is(const veil_node_t *n, int line, size_t d0, size_t d1, size_t d2, size_t d3)
{
    size_t want[4] = {d0, d1, d2, d3};
    int ndim = 0;
    while (ndim < 4 && want[ndim])
        ndim++;
    VT_CHECK(n != NULL, "line %d: node is NULL", line);
    if (!n)
        return;
    int ok = veil_node_ndim(n) == ndim;
    size_t numel = 1;
    for (int i = 0; ok && i < ndim; i++) {
        ok = veil_node_dim(n, i) == want[i];
        numel *= want[i];
    }
    ok = ok && veil_node_numel(n) == numel;
    VT_CHECK(ok, "line %d: '%s' has ndim %d [%zu,%zu,%zu,%zu], want ndim %d [%zu,%zu,%zu,%zu]",
             line, veil_node_name(n), veil_node_ndim(n), veil_node_dim(n, 0), veil_node_dim(n, 1),
             veil_node_dim(n, 2), veil_node_dim(n, 3), ndim, d0, d1, d2, d3);
}
#define SHAPE_IS(n, ...) shape_is(n, __LINE__, __VA_ARGS__)
#define S4(a, b, c, d) a, b, c, d
#define S3(a, b, c) a, b, c, 0
#define S2(a, b) a, b, 0, 0
#define S1(a) a, 0, 0, 0

static void op_is(const veil_node_t *n, const char *op, int line)
{
    VT_CHECK(n && strcmp(veil_node_op(n), op) == 0, "line %d: op '%s', want '%s'", line,
             n ? veil_node_op(n) : "(null)", op);
}

static void test_lenet(void)
{
    veil_graph_t *g = veil_graph_new("lenet");
    VT_CHECK(g && strcmp(veil_graph_name(g), "lenet") == 0, "graph name");
    veil_node_t *x = IN(g, "x", S4(2, 1, 28, 28));
    veil_node_t *c1 = veil_conv2d(g, "c1", x, PAR(g, "c1.w", S4(6, 1, 5, 5)),
                                  PAR(g, "c1.b", S1(6)), 1, 2);
    SHAPE_IS(c1, S4(2, 6, 28, 28));
    op_is(c1, "conv2d", __LINE__);
    veil_node_t *r1 = veil_relu(g, NULL, c1);
    SHAPE_IS(r1, S4(2, 6, 28, 28));
    VT_CHECK(r1 && strcmp(veil_node_name(r1), "relu4") == 0, "automatic name '%s'",
             veil_node_name(r1));
    veil_node_t *p1 = veil_maxpool2d(g, "p1", r1, 2, 2);
    SHAPE_IS(p1, S4(2, 6, 14, 14));
    op_is(p1, "maxpool2d", __LINE__);
    veil_node_t *c2 = veil_conv2d(g, "c2", p1, PAR(g, "c2.w", S4(16, 6, 5, 5)), NULL, 1, 0);
    SHAPE_IS(c2, S4(2, 16, 10, 10));
    veil_node_t *p2 = veil_avgpool2d(g, "p2", veil_relu(g, "r2", c2), 2, 2);
    SHAPE_IS(p2, S4(2, 16, 5, 5));
    op_is(p2, "avgpool2d", __LINE__);
    veil_node_t *f = veil_flatten(g, "flat", p2);
    SHAPE_IS(f, S2(2, 400));
    op_is(f, "reshape", __LINE__);
    veil_node_t *d1 = veil_dense(g, "fc1", f, PAR(g, "fc1.w", S2(400, 120)),
                                 PAR(g, "fc1.b", S1(120)));
    SHAPE_IS(d1, S2(2, 120));
    veil_node_t *d2 = veil_dense(g, "fc2", veil_relu(g, "r3", d1), PAR(g, "fc2.w", S2(120, 84)),
                                 NULL);
    SHAPE_IS(d2, S2(2, 84));
    veil_node_t *logits = veil_dense(g, "fc3", veil_relu(g, "r4", d2),
                                     PAR(g, "fc3.w", S2(84, 10)), PAR(g, "fc3.b", S1(10)));
    SHAPE_IS(logits, S2(2, 10));
    SHAPE_IS(veil_softmax(g, "prob", logits), S2(2, 10));
    veil_node_t *am = veil_argmax(g, "pred", logits);
    SHAPE_IS(am, S1(2));
    op_is(am, "argmax", __LINE__);
    veil_node_t *loss = veil_softmax_cross_entropy(g, "loss", logits, IN(g, "y", S2(2, 10)));
    SHAPE_IS(loss, S1(1));
    op_is(loss, "softmax_cross_entropy", __LINE__);
    VT_CHECK(veil_reveal(g, am, 0) == VEIL_OK, "reveal");
    VT_CHECK(veil_graph_status(g) == VEIL_OK, "status %d: %s", veil_graph_status(g),
             veil_graph_error(g));
    VT_CHECK(strcmp(veil_graph_error(g), "") == 0, "error set: %s", veil_graph_error(g));
    VT_CHECK(veil_graph_find(g, "fc2") == d2 && veil_graph_find(g, "nope") == NULL, "find");
    VT_CHECK(veil_graph_node_count(g) == 25, "node count %zu", veil_graph_node_count(g));
    /* The argmax of a 1-D tensor is a single value. */
    SHAPE_IS(veil_argmax(g, "am1", IN(g, "v", S1(5))), S1(1));
    veil_plan_t *p = veil_compile(g, NULL);
    VT_CHECK(p != NULL, "compile: %s", veil_last_error());
    VT_CHECK(veil_plan_output_count(p) == 1 && veil_plan_output_numel(p, 0) == 2 &&
                 strcmp(veil_plan_output_name(p, 0), "pred") == 0 && veil_plan_output_to(p, 0) == 0,
             "plan output");
    veil_graph_destroy(&g);
    VT_CHECK(g == NULL, "destroy sets NULL");
    /* The plan outlives its graph. */
    VT_CHECK(veil_plan_leaf_count(p) == 11, "leaves %zu", veil_plan_leaf_count(p));
    int params = 0;
    for (size_t i = 0; i < veil_plan_leaf_count(p); i++)
        params += veil_plan_leaf_is_param(p, i);
    VT_CHECK(params == 8, "params %d", params);
    if (veil_test_verbose())
        veil_plan_print(p, stderr);
    veil_plan_destroy(&p);
    VT_CHECK(p == NULL, "plan destroy sets NULL");
}

static void test_residual(void)
{
    veil_graph_t *g = veil_graph_new(NULL);
    VT_CHECK(strcmp(veil_graph_name(g), "model") == 0, "default name '%s'", veil_graph_name(g));
    veil_node_t *x = IN(g, "x", S4(1, 8, 6, 6));
    veil_node_t *a = veil_conv2d(g, "ca", x, PAR(g, "ca.w", S4(8, 8, 3, 3)), NULL, 1, 1);
    SHAPE_IS(a, S4(1, 8, 6, 6));
    veil_node_t *bn = veil_batchnorm(g, "bn", a, PAR(g, "bn.g", S1(8)), PAR(g, "bn.b", S1(8)),
                                     PAR(g, "bn.m", S1(8)), PAR(g, "bn.v", S1(8)), 1e-5);
    SHAPE_IS(bn, S4(1, 8, 6, 6));
    op_is(bn, "batchnorm", __LINE__);
    veil_node_t *b = veil_conv2d(g, "cb", veil_relu(g, "ra", bn), PAR(g, "cb.w", S4(8, 8, 3, 3)),
                                 PAR(g, "cb.b", S1(8)), 1, 1);
    veil_node_t *sum = veil_add(g, "res", x, b);
    SHAPE_IS(sum, S4(1, 8, 6, 6));
    veil_node_t *gp = veil_global_avgpool(g, "gap", veil_relu(g, "rb", sum));
    SHAPE_IS(gp, S2(1, 8));
    op_is(gp, "global_avgpool", __LINE__);
    veil_node_t *cat = veil_concat(g, "cat", gp, IN(g, "side", S2(1, 3)), 1);
    SHAPE_IS(cat, S2(1, 11));
    SHAPE_IS(veil_concat(g, "cat0", x, x, 0), S4(2, 8, 6, 6));
    /* Strided, padded convolution and overlapping pools. */
    veil_node_t *s = veil_conv2d(g, "cs", IN(g, "img", S4(1, 3, 7, 7)),
                                 PAR(g, "cs.w", S4(4, 3, 3, 3)), NULL, 2, 1);
    SHAPE_IS(s, S4(1, 4, 4, 4));
    SHAPE_IS(veil_maxpool2d(g, "mp", s, 3, 1), S4(1, 4, 2, 2));
    SHAPE_IS(veil_avgpool2d(g, "ap", s, 2, 3), S4(1, 4, 1, 1));
    veil_node_t *nb = veil_batchnorm(g, "bn2", veil_dense(g, "d", cat, PAR(g, "d.w", S2(11, 5)),
                                                          NULL),
                                     PAR(g, "g2", S1(5)), PAR(g, "b2", S1(5)), PAR(g, "m2", S1(5)),
                                     PAR(g, "v2", S1(5)), 1e-3);
    SHAPE_IS(nb, S2(1, 5));
    VT_CHECK(veil_reveal(g, nb, VEIL_ALL_PARTIES) == VEIL_OK, "reveal");
    VT_CHECK(veil_graph_status(g) == VEIL_OK, "status: %s", veil_graph_error(g));
    veil_graph_destroy(&g);
}

static void test_attention(void)
{
    veil_graph_t *g = veil_graph_new("attn");
    veil_node_t *x = IN(g, "x", S2(4, 16));
    veil_node_t *q = veil_dense(g, "q", x, PAR(g, "wq", S2(16, 8)), NULL);
    veil_node_t *k = veil_dense(g, "k", x, PAR(g, "wk", S2(16, 8)), NULL);
    veil_node_t *v = veil_dense(g, "v", x, PAR(g, "wv", S2(16, 8)), NULL);
    veil_node_t *kt = veil_transpose(g, "kt", k);
    SHAPE_IS(kt, S2(8, 4));
    op_is(kt, "transpose", __LINE__);
    veil_node_t *s = veil_matmul(g, "s", q, kt);
    SHAPE_IS(s, S2(4, 4));
    op_is(s, "matmul", __LINE__);
    veil_node_t *sc = veil_scale(g, "scaled", s, 1.0 / sqrt(8.0));
    SHAPE_IS(sc, S2(4, 4));
    op_is(sc, "scale", __LINE__);
    veil_node_t *att = veil_softmax(g, "att", sc);
    SHAPE_IS(att, S2(4, 4));
    veil_node_t *o = veil_matmul(g, "o", att, v);
    SHAPE_IS(o, S2(4, 8));
    veil_node_t *ln = veil_layernorm(g, "ln", o, PAR(g, "ln.g", S1(8)), PAR(g, "ln.b", S1(8)),
                                     1e-5);
    SHAPE_IS(ln, S2(4, 8));
    op_is(ln, "layernorm", __LINE__);
    veil_node_t *ge = veil_gelu(g, "gelu", ln);
    SHAPE_IS(ge, S2(4, 8));
    op_is(ge, "gelu", __LINE__);
    size_t d3[3] = {2, 2, 8};
    veil_node_t *r = veil_reshape(g, "r3", ge, 3, d3);
    SHAPE_IS(r, S3(2, 2, 8));
    SHAPE_IS(veil_layernorm(g, "ln3", r, PAR(g, "ln3.g", S1(8)), PAR(g, "ln3.b", S1(8)), 1e-5),
             S3(2, 2, 8));
    SHAPE_IS(veil_softmax(g, "sm3", r), S3(2, 2, 8));
    SHAPE_IS(veil_scale(g, "twice", r, 2.0), S3(2, 2, 8));
    double cv[3] = {1, 2, 3};
    size_t cd[1] = {3};
    veil_node_t *c = veil_constant(g, "c", 1, cd, cv);
    SHAPE_IS(c, S1(3));
    op_is(c, "constant", __LINE__);
    VT_CHECK(veil_reveal(g, o, 1) == VEIL_OK, "reveal");
    VT_CHECK(veil_graph_status(g) == VEIL_OK, "status: %s", veil_graph_error(g));
    veil_graph_destroy(&g);
}

/* ---- errors ---------------------------------------------------------------------------------- */

/*
 * n came from a builder that must have failed on g with status and a message containing the
 * needles (NULL ends them). Then: later builders return NULL and keep the first message, and
 * veil_compile fails with that status and message. Destroys g.
 */
static void expect_fail(veil_graph_t *g, const veil_node_t *n, int status, int line,
                        const char *n1, const char *n2)
{
    VT_CHECK(n == NULL, "line %d: builder succeeded ('%s')", line, veil_node_name(n));
    VT_CHECK(veil_graph_status(g) == status, "line %d: status %d (%s), want %d", line,
             veil_graph_status(g), veil_graph_error(g), status);
    char first[512];
    snprintf(first, sizeof first, "%s", veil_graph_error(g));
    veil_test_log("line %d: %s", line, first);
    VT_CHECK(n1 == NULL || strstr(first, n1), "line %d: message '%s' lacks '%s'", line, first,
             n1);
    VT_CHECK(n2 == NULL || strstr(first, n2), "line %d: message '%s' lacks '%s'", line, first,
             n2);
    /* NULL propagates quietly; a valid builder after the failure returns NULL too. */
    VT_CHECK(veil_relu(g, "after", NULL) == NULL, "line %d: relu(NULL)", line);
    VT_CHECK(IN(g, "fresh_leaf", S2(2, 2)) == NULL, "line %d: a leaf after the failure", line);
    veil_node_t *x = veil_graph_find(g, "x");
    if (x)
        VT_CHECK(veil_relu(g, "after2", x) == NULL, "line %d: relu after the failure", line);
    VT_CHECK(strcmp(veil_graph_error(g), first) == 0, "line %d: first error replaced by '%s'",
             line, veil_graph_error(g));
    VT_CHECK(veil_graph_status(g) == status, "line %d: status changed", line);
    if (x)
        VT_CHECK(veil_reveal(g, x, 0) == status, "line %d: reveal on a failed graph", line);
    veil_plan_t *p = veil_compile(g, NULL);
    VT_CHECK(p == NULL, "line %d: compiled a failed graph", line);
    VT_CHECK(strcmp(veil_last_error(), first) == 0, "line %d: veil_last_error '%s' is not '%s'",
             line, veil_last_error(), first);
    veil_plan_destroy(&p);
    veil_graph_destroy(&g);
}
#define FAIL2(g, expr, status, n1, n2) expect_fail(g, expr, status, __LINE__, n1, n2)

/* A fresh graph with x (2, 3, 8, 8), w (4, 3, 3, 3), v (2, 5), m (5, 7). */
static veil_graph_t *fresh(void)
{
    veil_graph_t *g = veil_graph_new("err");
    IN(g, "x", S4(2, 3, 8, 8));
    PAR(g, "w", S4(4, 3, 3, 3));
    IN(g, "v", S2(2, 5));
    PAR(g, "m", S2(5, 7));
    return g;
}
#define N(name) veil_graph_find(g, name)

static void test_layer_errors(void)
{
    veil_graph_t *g;
    /* dense */
    g = fresh();
    FAIL2(g, veil_dense(g, "fc", N("x"), N("m"), NULL), VEIL_ERR_SHAPE, "dense 'fc'", "2-D");
    g = fresh();
    FAIL2(g, veil_dense(g, "fc", N("v"), PAR(g, "m2", S2(4, 7)), NULL), VEIL_ERR_SHAPE,
          "dense 'fc'", "(5, out)");
    g = fresh();
    FAIL2(g, veil_dense(g, "fc", N("v"), N("m"), PAR(g, "b", S1(5))), VEIL_ERR_SHAPE, "dense 'fc'",
          "bias");
    g = fresh();
    FAIL2(g, veil_dense(g, NULL, N("x"), N("m"), NULL), VEIL_ERR_SHAPE, "dense 'dense'", NULL);
    /* conv2d */
    g = fresh();
    FAIL2(g, veil_conv2d(g, "cv", N("v"), N("w"), NULL, 1, 0), VEIL_ERR_SHAPE, "conv2d 'cv'",
          "NCHW");
    g = fresh();
    FAIL2(g, veil_conv2d(g, "cv", N("x"), N("m"), NULL, 1, 0), VEIL_ERR_SHAPE, "conv2d 'cv'",
          "OIHW");
    g = fresh();
    FAIL2(g, veil_conv2d(g, "cv", N("x"), PAR(g, "w1", S4(4, 1, 3, 3)), NULL, 1, 0),
          VEIL_ERR_SHAPE, "conv2d 'cv'", "3 channels, weight expects 1");
    g = fresh();
    FAIL2(g, veil_conv2d(g, "cv", N("x"), N("w"), NULL, 0, 0), VEIL_ERR_INVAL, "conv2d 'cv'",
          "stride 0");
    g = fresh();
    FAIL2(g, veil_conv2d(g, "cv", N("x"), N("w"), NULL, 1, 3), VEIL_ERR_INVAL, "conv2d 'cv'",
          "padding 3");
    g = fresh();
    FAIL2(g, veil_conv2d(g, "cv", N("x"), N("w"), NULL, 1, -1), VEIL_ERR_INVAL, "conv2d 'cv'",
          "padding -1");
    g = fresh();
    FAIL2(g, veil_conv2d(g, "cv", N("x"), PAR(g, "w9", S4(4, 3, 9, 9)), NULL, 1, 0),
          VEIL_ERR_SHAPE, "conv2d 'cv'", "larger than the padded input");
    g = fresh();
    FAIL2(g, veil_conv2d(g, "cv", N("x"), N("w"), PAR(g, "b", S1(3)), 1, 0), VEIL_ERR_SHAPE,
          "conv2d 'cv'", "bias");
    /* pools */
    g = fresh();
    FAIL2(g, veil_maxpool2d(g, "mp", N("v"), 2, 2), VEIL_ERR_SHAPE, "maxpool2d 'mp'", "NCHW");
    g = fresh();
    FAIL2(g, veil_maxpool2d(g, "mp", N("x"), 0, 2), VEIL_ERR_INVAL, "maxpool2d 'mp'", "window 0");
    g = fresh();
    FAIL2(g, veil_avgpool2d(g, "ap", N("x"), 2, 0), VEIL_ERR_INVAL, "avgpool2d 'ap'", "stride 0");
    g = fresh();
    FAIL2(g, veil_avgpool2d(g, "ap", N("x"), 9, 1), VEIL_ERR_SHAPE, "avgpool2d 'ap'",
          "larger than");
    g = fresh();
    FAIL2(g, veil_global_avgpool(g, "gp", N("v")), VEIL_ERR_SHAPE, "global_avgpool 'gp'", "NCHW");
    /* reshape, flatten */
    g = fresh();
    size_t d6[1] = {6};
    FAIL2(g, veil_reshape(g, "rs", N("v"), 1, d6), VEIL_ERR_SHAPE, "reshape 'rs'",
          "10 elements");
    g = fresh();
    FAIL2(g, veil_reshape(g, "rs", N("v"), 0, d6), VEIL_ERR_SHAPE, "reshape 'rs'", "0 dimensions");
    g = fresh();
    FAIL2(g, veil_reshape(g, "rs", N("v"), 9, d6), VEIL_ERR_SHAPE, "reshape 'rs'", "9 dimensions");
    g = fresh();
    FAIL2(g, veil_reshape(g, "rs", N("v"), 1, NULL), VEIL_ERR_SHAPE, "reshape 'rs'", NULL);
    g = fresh();
    FAIL2(g, veil_flatten(g, "fl", IN(g, "one", S1(4))), VEIL_ERR_SHAPE, "flatten 'fl'", "1-D");
    /* add, concat */
    g = fresh();
    FAIL2(g, veil_add(g, "sum", N("v"), N("m")), VEIL_ERR_SHAPE, "add 'sum'", "[2,5]");
    g = fresh();
    FAIL2(g, veil_concat(g, "cat", N("v"), N("x"), 0), VEIL_ERR_SHAPE, "concat 'cat'",
          "equal rank");
    g = fresh();
    FAIL2(g, veil_concat(g, "cat", N("v"), N("v"), 2), VEIL_ERR_SHAPE, "concat 'cat'", "axis 2");
    g = fresh();
    FAIL2(g, veil_concat(g, "cat", N("v"), N("v"), -1), VEIL_ERR_SHAPE, "concat 'cat'", NULL);
    g = fresh();
    FAIL2(g, veil_concat(g, "cat", N("v"), IN(g, "u", S2(3, 4)), 0), VEIL_ERR_SHAPE, "concat 'cat'",
          "dimension 1");
    /* batchnorm */
    g = fresh();
    veil_node_t *p3[4];
    for (int i = 0; i < 4; i++) {
        char nm[8];
        snprintf(nm, sizeof nm, "p%d", i);
        p3[i] = PAR(g, nm, S1(3));
    }
    FAIL2(g, veil_batchnorm(g, "bn", IN(g, "t3", S3(2, 3, 4)), p3[0], p3[1], p3[2], p3[3], 1e-5),
          VEIL_ERR_SHAPE, "batchnorm 'bn'", "NCHW");
    g = fresh();
    for (int i = 0; i < 4; i++) {
        char nm[8];
        snprintf(nm, sizeof nm, "p%d", i);
        p3[i] = PAR(g, nm, S1(i == 2 ? 4 : 3));
    }
    FAIL2(g, veil_batchnorm(g, "bn", N("x"), p3[0], p3[1], p3[2], p3[3], 1e-5), VEIL_ERR_SHAPE,
          "batchnorm 'bn'", "mean has shape [4]");
    g = fresh();
    for (int i = 0; i < 4; i++) {
        char nm[8];
        snprintf(nm, sizeof nm, "p%d", i);
        p3[i] = i == 3 ? IN(g, nm, S1(3)) : PAR(g, nm, S1(3));
    }
    FAIL2(g, veil_batchnorm(g, "bn", N("x"), p3[0], p3[1], p3[2], p3[3], 1e-5), VEIL_ERR_INVAL,
          "batchnorm 'bn'", "var must be a parameter");
    g = fresh();
    for (int i = 0; i < 4; i++) {
        char nm[8];
        snprintf(nm, sizeof nm, "p%d", i);
        p3[i] = PAR(g, nm, S1(3));
    }
    FAIL2(g, veil_batchnorm(g, "bn", N("x"), p3[0], p3[1], p3[2], p3[3], 0.0), VEIL_ERR_INVAL,
          "batchnorm 'bn'", "eps");
    /* layernorm */
    g = fresh();
    FAIL2(g, veil_layernorm(g, "ln", N("v"), PAR(g, "g", S1(4)), PAR(g, "b", S1(5)), 1e-5),
          VEIL_ERR_SHAPE, "layernorm 'ln'", "gamma and beta");
    g = fresh();
    FAIL2(g, veil_layernorm(g, "ln", IN(g, "o", S2(3, 1)), PAR(g, "g", S1(1)), PAR(g, "b", S1(1)),
                            1e-5),
          VEIL_ERR_SHAPE, "layernorm 'ln'", "2 or more");
    g = fresh();
    FAIL2(g, veil_layernorm(g, "ln", N("v"), PAR(g, "g", S1(5)), PAR(g, "b", S1(5)), NAN),
          VEIL_ERR_INVAL, "layernorm 'ln'", "eps");
    /* matmul, transpose, scale, softmax, cross-entropy */
    g = fresh();
    FAIL2(g, veil_matmul(g, "mm", N("m"), N("v")), VEIL_ERR_SHAPE, "matmul 'mm'", "(k, n)");
    g = fresh();
    FAIL2(g, veil_matmul(g, "mm", N("x"), N("m")), VEIL_ERR_SHAPE, "matmul 'mm'", NULL);
    g = fresh();
    FAIL2(g, veil_transpose(g, "tr", N("x")), VEIL_ERR_SHAPE, "transpose 'tr'", "2-D");
    g = fresh();
    FAIL2(g, veil_scale(g, "sc", N("v"), INFINITY), VEIL_ERR_RANGE, "scale 'sc'", "factor");
    g = fresh();
    FAIL2(g, veil_scale(g, "sc", N("v"), -70000.0), VEIL_ERR_RANGE, "scale 'sc'", "65536");
    g = fresh();
    FAIL2(g, veil_softmax(g, "sm", IN(g, "wide", S2(1, 70000))), VEIL_ERR_SHAPE, "softmax 'sm'",
          "65535");
    g = fresh();
    FAIL2(g, veil_softmax_cross_entropy(g, "xe", N("v"), IN(g, "lab", S2(2, 4))), VEIL_ERR_SHAPE,
          "softmax_cross_entropy 'xe'", "one-hot");
    g = fresh();
    FAIL2(g, veil_softmax_cross_entropy(g, "xe", N("x"), N("x")), VEIL_ERR_SHAPE,
          "softmax_cross_entropy 'xe'", NULL);
}

static void test_graph_errors(void)
{
    veil_graph_t *g;
    /* Names: duplicate, empty, too long, spaces, quotes, backslash. */
    g = fresh();
    FAIL2(g, veil_relu(g, "v", N("x")), VEIL_ERR_INVAL, "relu 'v'", "already used");
    g = fresh();
    FAIL2(g, IN(g, "x", S1(3)), VEIL_ERR_INVAL, "input 'x'", "already used");
    g = fresh();
    FAIL2(g, veil_relu(g, "", N("x")), VEIL_ERR_INVAL, "relu", "not usable");
    g = fresh();
    char longname[100];
    memset(longname, 'a', 64);
    longname[64] = '\0';
    FAIL2(g, veil_relu(g, longname, N("x")), VEIL_ERR_INVAL, "relu", "63 printable");
    g = fresh();
    FAIL2(g, veil_relu(g, "two words", N("x")), VEIL_ERR_INVAL, "relu", "two words");
    g = fresh();
    FAIL2(g, veil_relu(g, "q\"uote", N("x")), VEIL_ERR_INVAL, "relu", "not usable");
    g = fresh();
    FAIL2(g, veil_relu(g, "back\\slash", N("x")), VEIL_ERR_INVAL, "relu", "not usable");
    /* Owners. */
    g = fresh();
    FAIL2(g, leaf(g, 0, "in", -1, S1(3)), VEIL_ERR_INVAL, "input 'in'", "owner -1");
    g = fresh();
    FAIL2(g, leaf(g, 1, "par", 63, S1(3)), VEIL_ERR_INVAL, "param 'par'", "owner 63");
    /* Leaf shapes. */
    g = fresh();
    size_t dims9[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    FAIL2(g, veil_input(g, "nine", 0, 9, dims9), VEIL_ERR_SHAPE, "input 'nine'", "9 dimensions");
    g = fresh();
    FAIL2(g, veil_param(g, "none", 0, 0, dims9), VEIL_ERR_SHAPE, "param 'none'", "0 dimensions");
    g = fresh();
    FAIL2(g, veil_param(g, "nodims", 0, 2, NULL), VEIL_ERR_SHAPE, "param 'nodims'", NULL);
    g = fresh();
    size_t dz[2] = {3, 0};
    FAIL2(g, veil_input(g, "zero", 0, 2, dz), VEIL_ERR_SHAPE, "input 'zero'", "dimension 1 is 0");
    g = fresh();
    size_t dbig[2] = {(size_t)1 << 30, (size_t)1 << 20};
    FAIL2(g, veil_input(g, "big", 0, 2, dbig), VEIL_ERR_SHAPE, "input 'big'", "2^40");
    /* Constants. */
    g = fresh();
    size_t d2[1] = {2};
    FAIL2(g, veil_constant(g, "k", 1, d2, NULL), VEIL_ERR_INVAL, "constant 'k'", "no values");
    g = fresh();
    double bad[2] = {1.0, NAN};
    FAIL2(g, veil_constant(g, "k", 1, d2, bad), VEIL_ERR_INVAL, "constant 'k'", "element 1");
    /* An operand from another graph. */
    g = fresh();
    veil_graph_t *h = veil_graph_new("other");
    veil_node_t *foreign = IN(h, "y", S2(2, 5));
    FAIL2(g, veil_add(g, "mix", N("v"), foreign), VEIL_ERR_INVAL, "add 'mix'", "another graph");
    veil_graph_destroy(&h);
    /* A NULL operand alone is quiet: no error recorded, the graph stays usable. */
    g = fresh();
    VT_CHECK(veil_dense(g, "fc", NULL, N("m"), NULL) == NULL, "dense(NULL)");
    VT_CHECK(veil_add(g, "a", N("v"), NULL) == NULL, "add(., NULL)");
    VT_CHECK(veil_graph_status(g) == VEIL_OK && veil_graph_error(g)[0] == '\0',
             "a NULL operand recorded an error: %s", veil_graph_error(g));
    /* Then two failures: the first message is the one kept. */
    VT_CHECK(veil_relu(g, "r", N("x")) != NULL, "relu");
    veil_node_t *bad1 = veil_transpose(g, "first_bad", N("x"));
    VT_CHECK(veil_matmul(g, "second_bad", N("m"), N("v")) == NULL, "second failure");
    FAIL2(g, bad1, VEIL_ERR_SHAPE, "transpose 'first_bad'", NULL);
    /* Reveals. */
    g = fresh();
    VT_CHECK(veil_reveal(NULL, N("x"), 0) == VEIL_ERR_INVAL, "reveal on no graph");
    VT_CHECK(veil_reveal(g, NULL, 0) == VEIL_ERR_INVAL &&
                 strstr(veil_last_error(), "no node") != NULL,
             "reveal NULL: %s", veil_last_error());
    veil_graph_destroy(&g);
    g = fresh();
    VT_CHECK(veil_reveal(g, N("x"), 63) == VEIL_ERR_INVAL &&
                 strstr(veil_last_error(), "veil_reveal 'x'") != NULL,
             "reveal to 63: %s", veil_last_error());
    veil_graph_destroy(&g);
    g = fresh();
    VT_CHECK(veil_reveal(g, N("x"), 0) == VEIL_OK, "reveal");
    VT_CHECK(veil_reveal(g, N("x"), 1) == VEIL_ERR_INVAL &&
                 strstr(veil_last_error(), "already revealed") != NULL,
             "second reveal: %s", veil_last_error());
    veil_graph_destroy(&g);
    g = fresh();
    VT_CHECK(veil_reveal(g, N("m"), 0) == VEIL_ERR_INVAL &&
                 strstr(veil_last_error(), "veil_reveal 'm'") &&
                 strstr(veil_last_error(), "parameter"),
             "reveal a parameter: %s", veil_last_error());
    VT_CHECK(veil_compile(g, NULL) == NULL && strstr(veil_last_error(), "veil_reveal 'm'"),
             "compile after a bad reveal: %s", veil_last_error());
    veil_graph_destroy(&g);
    /* NULL graph queries. */
    VT_CHECK(veil_graph_status(NULL) == VEIL_ERR_INVAL && veil_graph_node_count(NULL) == 0 &&
                 veil_graph_find(NULL, "x") == NULL && veil_relu(NULL, "r", NULL) == NULL,
             "NULL graph");
    veil_graph_destroy(NULL);
}

static void compile_fails(veil_graph_t *g, const struct veil_compile_options *o,
                          const char *needle, int line)
{
    veil_plan_t *p = veil_compile(g, o);
    VT_CHECK(p == NULL, "line %d: compiled", line);
    VT_CHECK(veil_last_error() && strstr(veil_last_error(), needle), "line %d: '%s' lacks '%s'",
             line, veil_last_error(), needle);
    veil_test_log("line %d: %s", line, veil_last_error());
    veil_plan_destroy(&p);
}

static void test_compile_refusals(void)
{
    VT_CHECK(veil_compile(NULL, NULL) == NULL && strstr(veil_last_error(), "no graph"),
             "NULL graph");
    /* No output. */
    veil_graph_t *g = fresh();
    veil_node_t *r = veil_relu(g, "r", N("v"));
    compile_fails(g, NULL, "veil_reveal", __LINE__);
    VT_CHECK(strstr(veil_last_error(), "'err'") != NULL, "names the graph: %s",
             veil_last_error());
    VT_CHECK(veil_reveal(g, r, 0) == VEIL_OK, "reveal");
    /* Bad options, one at a time. */
    struct veil_compile_options o;
    struct {
        int field;
        long long value;
        const char *needle;
    } cases[] = {
        {0, 4, "frac_bits 4"},    {0, 30, "frac_bits 30"},   {1, 100, "tile 100"},
        {1, 32, "multiple of 64"}, {2, 0, "microbatches 0"}, {2, 65, "microbatches 65"},
        {3, -2, "lookahead -2"},  {4, 2, "serialized"},       {5, 3, "weight_stationary"},
        {6, 2, "training must be"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        veil_compile_options_defaults(&o);
        switch (cases[i].field) {
        case 0: o.frac_bits = (int)cases[i].value; break;
        case 1: o.tile = (size_t)cases[i].value; break;
        case 2: o.microbatches = (int)cases[i].value; break;
        case 3: o.lookahead = (int)cases[i].value; break;
        case 4: o.serialized = (int)cases[i].value; break;
        case 5: o.weight_stationary = (int)cases[i].value; break;
        default: o.training = (int)cases[i].value; break;
        }
        veil_plan_t *p = veil_compile(g, &o);
        VT_CHECK(p == NULL && strstr(veil_last_error(), cases[i].needle), "option case %zu: %s",
                 i, veil_last_error());
        veil_plan_destroy(&p);
    }
    /* Training without a loss. */
    veil_compile_options_defaults(&o);
    o.training = 1;
    compile_fails(g, &o, "no loss", __LINE__);
    /* Defaults compile. */
    veil_compile_options_defaults(&o);
    VT_CHECK(o.frac_bits == 16 && o.microbatches == 1 && o.lookahead == VEIL_LOOKAHEAD_UNBOUNDED && o.lr == 0.01 &&
                 o.momentum == 0.9 && o.weight_decay == 0.0 && o.training == 0,
             "defaults");
    veil_plan_t *p = veil_compile(g, &o);
    VT_CHECK(p != NULL, "compile: %s", veil_last_error());
    veil_plan_destroy(&p);
    veil_graph_destroy(&g);
}

int main(void)
{
    test_lenet();
    test_residual();
    test_attention();
    test_layer_errors();
    test_graph_errors();
    test_compile_refusals();
    return veil_test_status();
}

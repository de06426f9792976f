/*
 * test_graph_compile.c — the compiler's passes, checked on the plan's internal structure: the
 * digest (equal for equal graphs and options, different when a shape, a name, an owner or an
 * option changes); liveness (each node's last_use is its last reader, through operands or saved
 * state) and critical-path priorities; batch-norm folding (fold fields, the synthetic bias inserted
 * before its producer with every reference renumbered and the order still topological, and the
 * refusals: producer not conv2d/dense, producer read elsewhere, parameters of another owner, ...);
 * autodiff structure for an MLP, a CNN, a residual block, tied weights and an attention-like block
 * (the expected backward ops with the right operands and shapes, gradient sums, no gradient for
 * inputs, one SGD_UPDATE per parameter with the parameter's shape; a gelu's GELU_GRAD with its
 * input and saved state); ops without gradient refused by name; the learning-rate, SGD-option and
 * batch-size refusals. Gradient values are checked against finite differences by the executors'
 * tests.
 */
#include "config.h"
#include "test_util.h"

#include "graph/graph_internal.h"
#include "veil/graph.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

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
#define S4(a, b, c, d) a, b, c, d
#define S3(a, b, c) a, b, c, 0
#define S2(a, b) a, b, 0, 0
#define S1(a) a, 0, 0, 0

/* ---- structural invariants ------------------------------------------------------------------ */

static int same_shape(const struct veil_node *a, const struct veil_node *b)
{
    if (a->ndim != b->ndim)
        return 0;
    for (int i = 0; i < a->ndim; i++)
        if (a->dims[i] != b->dims[i])
            return 0;
    return 1;
}

/* Every node's index is its position, operands and saved-state references point backwards, the
 * optional-operand slots past nin are -1, and fold references are mutual. */
static void check_topological(const veil_plan_t *p, const char *what)
{
    for (size_t i = 0; i < p->count; i++) {
        const struct veil_node *n = &p->nodes[i];
        VT_CHECK(n->index == (int)i, "%s: node %zu '%s' has index %d", what, i, n->name, n->index);
        for (int j = 0; j < VEIL_NODE_MAX_IN; j++) {
            if (j < n->nin)
                VT_CHECK(n->in[j] >= 0 && n->in[j] < (int)i, "%s: '%s' operand %d is %d", what,
                         n->name, j, n->in[j]);
            else
                VT_CHECK(n->in[j] == -1, "%s: '%s' slot %d past nin is %d", what, n->name, j,
                         n->in[j]);
        }
        VT_CHECK(n->fwd < (int)i, "%s: '%s' fwd %d", what, n->name, n->fwd);
        if (n->folded_into >= 0)
            VT_CHECK(p->nodes[n->folded_into].fold_bn == (int)i, "%s: '%s' fold not mutual", what,
                     n->name);
        for (size_t k = i + 1; k < p->count; k++)
            VT_CHECK(strcmp(n->name, p->nodes[k].name) != 0, "%s: name '%s' twice", what, n->name);
    }
}

/* last_use is the last reader (operand or fwd; XENT_GRAD also reads its loss's labels); saved is
 * set exactly on nodes some backward op reads through fwd; priorities never increase along an
 * edge. */
static void check_liveness(const veil_plan_t *p, const char *what)
{
    for (size_t i = 0; i < p->count; i++) {
        int last = -1, saved = 0;
        for (size_t k = i + 1; k < p->count; k++) {
            const struct veil_node *n = &p->nodes[k];
            int reads = n->fwd == (int)i;
            saved |= reads;
            for (int j = 0; j < n->nin; j++)
                reads |= n->in[j] == (int)i;
            if (n->op == VEIL_OP_XENT_GRAD && p->nodes[n->fwd].in[1] == (int)i)
                reads = 1;
            if (reads)
                last = (int)k;
        }
        VT_CHECK(p->nodes[i].last_use == last, "%s: '%s' last_use %d, want %d", what,
                 p->nodes[i].name, p->nodes[i].last_use, last);
        VT_CHECK(p->nodes[i].saved == saved, "%s: '%s' saved %d, want %d", what,
                 p->nodes[i].name, p->nodes[i].saved, saved);
    }
    for (size_t k = 0; k < p->count; k++) {
        const struct veil_node *n = &p->nodes[k];
        for (int j = -1; j < n->nin; j++) {
            int s = j < 0 ? n->fwd : n->in[j];
            if (s >= 0)
                VT_CHECK(p->nodes[s].priority >= n->priority, "%s: priority of '%s' (%g) below "
                         "its reader '%s' (%g)", what, p->nodes[s].name, p->nodes[s].priority,
                         n->name, n->priority);
        }
    }
}

/* Training plans: backward nodes after nforward only, gradients shaped like what they are the
 * gradient of, none for inputs and constants, and exactly one SGD_UPDATE per parameter that
 * reaches the loss, with the parameter's shape and the options' hyper-parameters. */
static void check_training(const veil_plan_t *p, size_t nforward, const char *what)
{
    check_topological(p, what);
    check_liveness(p, what);
    VT_CHECK(p->nforward == nforward, "%s: nforward %zu, want %zu", what, p->nforward, nforward);
    VT_CHECK(p->loss >= 0 && p->nodes[p->loss].op == VEIL_OP_SOFTMAX_XENT, "%s: loss", what);
    for (size_t i = 0; i < p->count; i++) {
        const struct veil_node *n = &p->nodes[i];
        if (i < p->nforward) {
            VT_CHECK(!veil_op_is(n->op, VEIL_OPF_BACKWARD) && n->grad_of < 0 && n->fwd < 0,
                     "%s: forward node '%s' looks backward", what, n->name);
            continue;
        }
        VT_CHECK(veil_op_is(n->op, VEIL_OPF_BACKWARD) || n->op == VEIL_OP_RESHAPE ||
                     n->op == VEIL_OP_TRANSPOSE || n->op == VEIL_OP_ADD || n->op == VEIL_OP_SCALE,
                 "%s: backward node '%s' has op %s", what, n->name, veil_op_name(n->op));
        if (n->op == VEIL_OP_SGD_UPDATE)
            continue;
        VT_CHECK(n->grad_of >= 0 && n->grad_of < (int)p->nforward, "%s: '%s' grad_of %d", what,
                 n->name, n->grad_of);
        if (n->grad_of < 0)
            continue;
        const struct veil_node *of = &p->nodes[n->grad_of];
        VT_CHECK(of->op != VEIL_OP_INPUT && of->op != VEIL_OP_CONST,
                 "%s: '%s' is a gradient of %s '%s'", what, n->name, veil_op_name(of->op),
                 of->name);
        if (n->op == VEIL_OP_RESHAPE)
            VT_CHECK(n->numel == of->numel, "%s: reshape '%s' numel", what, n->name);
        else
            VT_CHECK(same_shape(n, of), "%s: '%s' not shaped like '%s'", what, n->name, of->name);
    }
    for (size_t i = 0; i < p->nforward; i++) {
        if (p->nodes[i].op != VEIL_OP_PARAM)
            continue;
        int updates = 0;
        for (size_t k = p->nforward; k < p->count; k++) {
            const struct veil_node *u = &p->nodes[k];
            if (u->op != VEIL_OP_SGD_UPDATE || u->in[0] != (int)i)
                continue;
            updates++;
            const struct veil_node *gr = &p->nodes[u->in[1]];
            VT_CHECK(u->nin == 2 && same_shape(gr, &p->nodes[i]) && same_shape(u, &p->nodes[i]),
                     "%s: update of '%s' has gradient '%s' of another shape", what,
                     p->nodes[i].name, gr->name);
            VT_CHECK(gr->grad_of == (int)i, "%s: update of '%s' reads '%s', the gradient of %d",
                     what, p->nodes[i].name, gr->name, gr->grad_of);
            VT_CHECK(u->a.lr == p->opts.lr && u->a.momentum == p->opts.momentum &&
                         u->a.weight_decay == p->opts.weight_decay,
                     "%s: update of '%s' attrs", what, p->nodes[i].name);
        }
        VT_CHECK(updates == 1, "%s: parameter '%s' has %d updates", what, p->nodes[i].name,
                 updates);
    }
}

/* The node called name: checks its op and shape (zeros end it); returns its index or -1. */
static int expect(const veil_plan_t *p, const char *name, enum veil_op op, int line, size_t d0,
                  size_t d1, size_t d2, size_t d3)
{
    int i = veil_plan_find(p, name);
    VT_CHECK(i >= 0, "line %d: no node '%s'", line, name);
    if (i < 0)
        return -1;
    const struct veil_node *n = &p->nodes[i];
    struct veil_node want;
    memset(&want, 0, sizeof want);
    size_t dims[4] = {d0, d1, d2, d3};
    int ndim = 0;
    while (ndim < 4 && dims[ndim])
        ndim++;
    veil_node_set_shape(&want, ndim, dims);
    VT_CHECK(n->op == op, "line %d: '%s' is %s, want %s", line, name, veil_op_name(n->op),
             veil_op_name(op));
    VT_CHECK(same_shape(n, &want), "line %d: '%s' has the wrong shape", line, name);
    return i;
}
#define EXPECT(p, name, op, ...) expect(p, name, VEIL_OP_##op, __LINE__, __VA_ARGS__)
#define IDX(p, name) veil_plan_find(p, name)

static void expect_in(const veil_plan_t *p, int i, int j, const char *name, int line)
{
    if (i < 0)
        return;
    const struct veil_node *n = &p->nodes[i];
    int ok = j < n->nin && n->in[j] >= 0 && strcmp(p->nodes[n->in[j]].name, name) == 0;
    VT_CHECK(ok, "line %d: '%s' operand %d is '%s', want '%s'", line, n->name, j,
             j < n->nin && n->in[j] >= 0 ? p->nodes[n->in[j]].name : "-", name);
}
#define EXPECT_IN(p, i, j, name) expect_in(p, i, j, name, __LINE__)

static void expect_fwd(const veil_plan_t *p, int i, const char *name, int line)
{
    if (i < 0)
        return;
    int f = p->nodes[i].fwd;
    VT_CHECK(f >= 0 && strcmp(p->nodes[f].name, name) == 0, "line %d: '%s' fwd is '%s', want '%s'",
             line, p->nodes[i].name, f >= 0 ? p->nodes[f].name : "-", name);
}
#define EXPECT_FWD(p, i, name) expect_fwd(p, i, name, __LINE__)

static veil_plan_t *compile_train(veil_graph_t *g)
{
    struct veil_compile_options o;
    veil_compile_options_defaults(&o);
    o.training = 1;
    veil_plan_t *p = veil_compile(g, &o);
    VT_CHECK(p != NULL, "training compile of '%s': %s", veil_graph_name(g), veil_last_error());
    if (p && veil_test_verbose())
        veil_plan_print(p, stderr);
    return p;
}

/* Compiling g with o must fail with a message containing both needles. */
static void refused(veil_graph_t *g, const struct veil_compile_options *o, const char *n1,
                    const char *n2, int line)
{
    veil_plan_t *p = veil_compile(g, o);
    const char *e = veil_last_error();
    VT_CHECK(p == NULL, "line %d: compiled", line);
    VT_CHECK(strstr(e, n1) && (!n2 || strstr(e, n2)), "line %d: '%s' lacks '%s' / '%s'", line, e,
             n1, n2 ? n2 : "");
    veil_test_log("line %d: %s", line, e);
    veil_plan_destroy(&p);
}
#define REFUSED(g, o, n1, n2) refused(g, o, n1, n2, __LINE__)

/* ---- digest -------------------------------------------------------------------------------- */

/* x (4, 8) -> dense fc1 (hidden) -> relu -> dense fc2 (3) -> loss; fc2 revealed. */
static veil_graph_t *mlp(size_t batch, size_t hidden, const char *fc1, int owner)
{
    veil_graph_t *g = veil_graph_new("mlp");
    veil_node_t *x = IN(g, "x", S2(batch, 8));
    veil_node_t *h = veil_dense(g, fc1, x, leaf(g, 1, "w1", owner, S2(8, hidden)),
                                PAR(g, "b1", S1(hidden)));
    veil_node_t *r = veil_relu(g, "r1", h);
    veil_node_t *l = veil_dense(g, "fc2", r, PAR(g, "w2", S2(hidden, 3)), PAR(g, "b2", S1(3)));
    veil_softmax_cross_entropy(g, "loss", l, IN(g, "labels", S2(batch, 3)));
    veil_reveal(g, l, 0);
    VT_CHECK(veil_graph_status(g) == VEIL_OK, "mlp: %s", veil_graph_error(g));
    return g;
}

static int digest_equal(veil_graph_t *g1, const struct veil_compile_options *o1,
                        veil_graph_t *g2, const struct veil_compile_options *o2)
{
    veil_plan_t *p1 = veil_compile(g1, o1), *p2 = veil_compile(g2, o2);
    VT_CHECK(p1 && p2, "digest compile: %s", veil_last_error());
    int eq = p1 && p2 && memcmp(veil_plan_digest(p1), veil_plan_digest(p2), 32) == 0;
    veil_plan_destroy(&p1);
    veil_plan_destroy(&p2);
    return eq;
}

static void test_digest(void)
{
    veil_graph_t *a = mlp(4, 6, "fc1", 1), *b = mlp(4, 6, "fc1", 1);
    veil_graph_t *hid = mlp(4, 7, "fc1", 1), *nam = mlp(4, 6, "fc1b", 1);
    veil_graph_t *own = mlp(4, 6, "fc1", 2);
    veil_graph_t *bat = mlp(5, 6, "fc1", 1);
    struct veil_compile_options o, o2;
    veil_compile_options_defaults(&o);
    VT_CHECK(digest_equal(a, &o, a, &o), "same graph compiled twice");
    VT_CHECK(digest_equal(a, NULL, b, &o), "equal graphs, defaults given or not");
    VT_CHECK(!digest_equal(a, &o, hid, &o), "hidden width not in the digest");
    VT_CHECK(!digest_equal(a, &o, bat, &o), "batch not in the digest");
    VT_CHECK(!digest_equal(a, &o, nam, &o), "layer name not in the digest");
    VT_CHECK(!digest_equal(a, &o, own, &o), "owner not in the digest");
    o2 = o;
    o2.frac_bits = 20;
    VT_CHECK(!digest_equal(a, &o, a, &o2), "frac_bits not in the digest");
    o2 = o;
    o2.microbatches = 2;
    VT_CHECK(!digest_equal(a, &o, a, &o2), "microbatches not in the digest");
    o2 = o;
    o2.tile = 4096;
    VT_CHECK(!digest_equal(a, &o, a, &o2), "tile not in the digest");
    o2 = o;
    o2.training = 1;
    VT_CHECK(!digest_equal(a, &o, a, &o2), "training not in the digest");
    /* The SGD options count only when training. */
    o2 = o;
    o2.lr = 0.02;
    VT_CHECK(digest_equal(a, &o, a, &o2), "an unused learning rate changed the digest");
    struct veil_compile_options t = o;
    t.training = 1;
    o2 = t;
    o2.lr = 0.02;
    VT_CHECK(!digest_equal(a, &t, a, &o2), "lr not in the training digest");
    o2 = t;
    o2.momentum = 0.5;
    VT_CHECK(!digest_equal(a, &t, a, &o2), "momentum not in the training digest");
    o2 = t;
    o2.weight_decay = 0.01;
    VT_CHECK(!digest_equal(a, &t, a, &o2), "weight decay not in the training digest");
    VT_CHECK(digest_equal(a, &t, b, &t), "equal training plans differ");
    veil_graph_destroy(&a);
    veil_graph_destroy(&b);
    veil_graph_destroy(&hid);
    veil_graph_destroy(&nam);
    veil_graph_destroy(&own);
    veil_graph_destroy(&bat);
}

/* ---- liveness ------------------------------------------------------------------------------ */

static void test_liveness(void)
{
    veil_graph_t *g = veil_graph_new("live");
    veil_node_t *x = IN(g, "x", S2(2, 4));
    veil_node_t *r1 = veil_relu(g, "r1", x);
    veil_node_t *r2 = veil_relu(g, "r2", r1);
    veil_node_t *s = veil_add(g, "s", r1, r2);
    veil_node_t *r3 = veil_relu(g, "r3", s);
    veil_node_t *t = veil_transpose(g, "t", r1);
    veil_reveal(g, r3, 0);
    veil_reveal(g, t, 1);
    veil_plan_t *p = veil_compile(g, NULL);
    VT_CHECK(p != NULL, "compile: %s", veil_last_error());
    if (p) {
        check_topological(p, "live");
        check_liveness(p, "live");
        VT_CHECK(p->nodes[IDX(p, "r1")].last_use == IDX(p, "t"), "r1 lives until t");
        VT_CHECK(p->nodes[IDX(p, "r2")].last_use == IDX(p, "s"), "r2 lives until s");
        VT_CHECK(p->nodes[IDX(p, "s")].last_use == IDX(p, "r3"), "s lives until r3");
        VT_CHECK(p->nodes[IDX(p, "r3")].last_use == -1, "r3 has no reader");
        VT_CHECK(p->nodes[IDX(p, "x")].last_use == IDX(p, "r1"), "x lives until r1");
        /* The chain x r1 r2 s r3 has three communicating nodes after r1's own. */
        VT_CHECK(p->nodes[IDX(p, "r1")].priority > p->nodes[IDX(p, "r3")].priority &&
                     p->nodes[IDX(p, "r1")].priority > p->nodes[IDX(p, "t")].priority,
                 "r1 starts the critical path");
        VT_CHECK(veil_plan_output_count(p) == 2 && strcmp(veil_plan_output_name(p, 0), "r3") == 0
                     && strcmp(veil_plan_output_name(p, 1), "t") == 0 &&
                     veil_plan_output_to(p, 1) == 1 && veil_plan_output_numel(p, 1) == 8,
                 "outputs");
    }
    veil_plan_destroy(&p);
    veil_graph_destroy(&g);
}

/* ---- batch-norm folding -------------------------------------------------------------------- */

/* A batch norm over c channels named name, its parameters owned by owner. */
static veil_node_t *bn(veil_graph_t *g, const char *name, veil_node_t *x, size_t c, int owner)
{
    veil_node_t *q[4];
    const char *what[4] = {"gamma", "beta", "mean", "var"};
    for (int i = 0; i < 4; i++) {
        char nm[64];
        snprintf(nm, sizeof nm, "%s.%s", name, what[i]);
        q[i] = leaf(g, 1, nm, owner, c, 0, 0, 0);
    }
    return veil_batchnorm(g, name, x, q[0], q[1], q[2], q[3], 1e-5);
}

static void test_fold(void)
{
    /* A conv2d without bias: the synthetic bias goes right before it. */
    veil_graph_t *g = veil_graph_new("fold");
    veil_node_t *x = IN(g, "x", S4(1, 2, 5, 5));
    veil_reveal(g, veil_relu(g, "pre", x), 0);
    veil_node_t *c = veil_conv2d(g, "c", x, PAR(g, "w", S4(3, 2, 3, 3)), NULL, 1, 1);
    veil_node_t *r = veil_relu(g, "r", bn(g, "bn1", c, 3, 1));
    veil_node_t *d = veil_dense(g, "d", IN(g, "v", S2(2, 4)), PAR(g, "dw", S2(4, 3)),
                                PAR(g, "db", S1(3)));
    veil_node_t *bd = bn(g, "bn2", d, 3, 1);
    veil_reveal(g, r, VEIL_ALL_PARTIES);
    veil_reveal(g, bd, 1);
    size_t gcount = veil_graph_node_count(g);
    veil_plan_t *p = veil_compile(g, NULL);
    VT_CHECK(p != NULL, "fold compile: %s", veil_last_error());
    if (p) {
        if (veil_test_verbose())
            veil_plan_print(p, stderr);
        check_topological(p, "fold");
        check_liveness(p, "fold");
        VT_CHECK(p->count == gcount + 1 && p->nforward == p->count, "one node inserted (%zu/%zu)",
                 p->count, gcount);
        int bias = EXPECT(p, "bn1.folded_bias", PARAM, S1(3));
        int ci = IDX(p, "c"), b1 = IDX(p, "bn1"), di = IDX(p, "d"), b2 = IDX(p, "bn2");
        VT_CHECK(bias >= 0 && bias == ci - 1, "the bias (%d) sits right before conv c (%d)", bias,
                 ci);
        if (bias >= 0) {
            const struct veil_node *bn_ = &p->nodes[bias];
            VT_CHECK(bn_->synthetic == 1 && bn_->owner == 1 && bn_->output < 0,
                     "synthetic bias fields");
        }
        VT_CHECK(p->nodes[ci].nin == 3 && p->nodes[ci].in[2] == bias, "conv reads the bias");
        EXPECT_IN(p, ci, 0, "x");
        EXPECT_IN(p, ci, 1, "w");
        EXPECT_IN(p, b1, 0, "c");
        EXPECT_IN(p, b1, 4, "bn1.var");
        EXPECT_IN(p, IDX(p, "r"), 0, "bn1"); /* consumers keep reading the batch norm */
        VT_CHECK(p->nodes[b1].folded_into == ci && p->nodes[ci].fold_bn == b1, "bn1 fold fields");
        VT_CHECK(p->nodes[b2].folded_into == di && p->nodes[di].fold_bn == b2, "bn2 fold fields");
        VT_CHECK(p->nodes[di].nin == 3, "dense keeps its own bias");
        EXPECT_IN(p, di, 2, "db");
        VT_CHECK(veil_plan_output_count(p) == 3 && strcmp(veil_plan_output_name(p, 0), "pre") == 0
                     && strcmp(veil_plan_output_name(p, 1), "r") == 0 &&
                     strcmp(veil_plan_output_name(p, 2), "bn2") == 0 &&
                     veil_plan_output_to(p, 2) == 1,
                 "output order kept");
        int found = 0;
        for (size_t i = 0; i < veil_plan_leaf_count(p); i++)
            if (strcmp(veil_plan_leaf_name(p, i), "bn1.folded_bias") == 0)
                found = veil_plan_leaf_is_param(p, i) && veil_plan_leaf_owner(p, i) == 1 &&
                        veil_plan_leaf_numel(p, i) == 3;
        VT_CHECK(found, "the synthetic bias is a parameter leaf of the weight owner");
        for (size_t i = 0; i < p->count; i++)
            if (p->nodes[i].op == VEIL_OP_CONV2D || p->nodes[i].op == VEIL_OP_DENSE)
                VT_CHECK(p->nodes[i].fold_bn >= 0, "'%s' not folded", p->nodes[i].name);
    }
    veil_plan_destroy(&p);
    veil_graph_destroy(&g);

    /* A taken name: the synthetic bias gets another one; a dense layer without bias too. */
    g = veil_graph_new("fold2");
    IN(g, "bn.folded_bias", S1(1));
    veil_node_t *dd = veil_dense(g, "dd", IN(g, "v", S2(2, 4)), PAR(g, "w", S2(4, 3)), NULL);
    veil_reveal(g, bn(g, "bn", dd, 3, 1), 0);
    p = veil_compile(g, NULL);
    VT_CHECK(p != NULL, "fold2 compile: %s", veil_last_error());
    if (p) {
        check_topological(p, "fold2");
        int b = EXPECT(p, "bn.folded_bias~2", PARAM, S1(3));
        VT_CHECK(b >= 0 && p->nodes[IDX(p, "dd")].in[2] == b && p->nodes[b].synthetic,
                 "renamed synthetic bias");
        EXPECT(p, "bn.folded_bias", INPUT, S1(1));
    }
    veil_plan_destroy(&p);
    veil_graph_destroy(&g);

    /* Refusals. */
    struct {
        int kind;
        const char *n1, *n2;
    } cases[] = {
        {0, "batchnorm 'bn'", "follows relu 'act'"},
        {1, "batchnorm 'bn'", "also read by relu 'other'"},
        {2, "batchnorm 'bn'", "belongs to party 0"},
        {3, "batchnorm 'bn'", "is revealed"},
        {4, "batchnorm 'bn'", "not a parameter"},
        {5, "batchnorm 'bn'", "also read by conv2d 'c2'"},
        {6, "batchnorm 'bn'", "bias 'cb' of conv2d 'c' is a parameter (party 0)"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        g = veil_graph_new("refuse");
        x = IN(g, "x", S4(1, 2, 5, 5));
        veil_node_t *w = cases[k].kind == 4 ? IN(g, "w", S4(3, 2, 3, 3))
                                            : PAR(g, "w", S4(3, 2, 3, 3));
        veil_node_t *cb = cases[k].kind == 6 ? leaf(g, 1, "cb", 0, S1(3)) : NULL;
        c = veil_conv2d(g, "c", x, w, cb, 1, 1);
        veil_node_t *in = c;
        if (cases[k].kind == 0)
            in = veil_relu(g, "act", c);
        if (cases[k].kind == 1)
            veil_reveal(g, veil_relu(g, "other", c), 0);
        if (cases[k].kind == 3)
            veil_reveal(g, c, 0);
        if (cases[k].kind == 5)
            veil_reveal(g, veil_conv2d(g, "c2", x, w, NULL, 1, 1), 0);
        veil_reveal(g, bn(g, "bn", in, 3, cases[k].kind == 2 ? 0 : 1), 1);
        VT_CHECK(veil_graph_status(g) == VEIL_OK, "refusal %zu graph: %s", k, veil_graph_error(g));
        REFUSED(g, NULL, cases[k].n1, cases[k].n2);
        veil_graph_destroy(&g);
    }
}

/* ---- autodiff ------------------------------------------------------------------------------ */

static void test_mlp_backward(void)
{
    veil_graph_t *g = mlp(4, 6, "fc1", 1);
    veil_plan_t *p = compile_train(g);
    if (p) {
        check_training(p, veil_graph_node_count(g), "mlp");
        int dl = EXPECT(p, "loss.dlogits", XENT_GRAD, S2(4, 3));
        EXPECT_FWD(p, dl, "loss");
        VT_CHECK(dl < 0 || p->nodes[dl].nin == 0, "XENT_GRAD has no operands");
        int i = EXPECT(p, "fc2.dx", MATMUL_NT, S2(4, 6));
        EXPECT_IN(p, i, 0, "loss.dlogits");
        EXPECT_IN(p, i, 1, "w2");
        i = EXPECT(p, "fc2.dw", MATMUL_TN, S2(6, 3));
        EXPECT_IN(p, i, 0, "r1");
        EXPECT_IN(p, i, 1, "loss.dlogits");
        i = EXPECT(p, "fc2.db", SUM_ROWS, S1(3));
        EXPECT_IN(p, i, 0, "loss.dlogits");
        i = EXPECT(p, "r1.dx", RELU_GRAD, S2(4, 6));
        EXPECT_IN(p, i, 0, "fc2.dx");
        EXPECT_FWD(p, i, "r1");
        i = EXPECT(p, "fc1.dw", MATMUL_TN, S2(8, 6));
        EXPECT_IN(p, i, 0, "x");
        EXPECT_IN(p, i, 1, "r1.dx");
        EXPECT(p, "fc1.db", SUM_ROWS, S1(6));
        VT_CHECK(IDX(p, "fc1.dx") < 0, "a gradient for the input");
        i = EXPECT(p, "w1.update", SGD_UPDATE, S2(8, 6));
        EXPECT_IN(p, i, 0, "w1");
        EXPECT_IN(p, i, 1, "fc1.dw");
        VT_CHECK(i < 0 || (p->nodes[i].a.lr == 0.01 && p->nodes[i].a.momentum == 0.9),
                 "update attrs");
        EXPECT(p, "b2.update", SGD_UPDATE, S1(3));
        /* 10 forward, 7 gradients, 4 updates. */
        VT_CHECK(p->count == 21, "mlp plan has %zu nodes", p->count);
        VT_CHECK(p->nodes[IDX(p, "labels")].last_use == dl, "labels live until the xent gradient");
        VT_CHECK(p->nodes[IDX(p, "r1")].saved && p->nodes[IDX(p, "loss")].saved, "saved flags");
        VT_CHECK(veil_plan_output_count(p) == 1 && strcmp(veil_plan_output_name(p, 0), "fc2") == 0,
                 "output kept");
    }
    veil_plan_destroy(&p);
    veil_graph_destroy(&g);
}

static void test_cnn_backward(void)
{
    veil_graph_t *g = veil_graph_new("cnn");
    veil_node_t *x = IN(g, "x", S4(2, 1, 6, 6));
    veil_node_t *c1 = veil_conv2d(g, "c1", x, PAR(g, "c1.w", S4(2, 1, 3, 3)),
                                  PAR(g, "c1.b", S1(2)), 1, 1);
    veil_node_t *p1 = veil_maxpool2d(g, "p1", veil_relu(g, "r1", c1), 2, 2);
    veil_node_t *c2 = veil_conv2d(g, "c2", p1, PAR(g, "c2.w", S4(2, 2, 3, 3)), NULL, 1, 1);
    veil_node_t *ap = veil_avgpool2d(g, "ap", c2, 2, 1);
    veil_node_t *f = veil_flatten(g, "flat", ap);
    veil_node_t *l = veil_dense(g, "fc", f, PAR(g, "fc.w", S2(8, 3)), NULL);
    veil_softmax_cross_entropy(g, "loss", l, IN(g, "y", S2(2, 3)));
    VT_CHECK(veil_graph_status(g) == VEIL_OK, "cnn: %s", veil_graph_error(g));
    veil_plan_t *p = compile_train(g);
    if (p) {
        check_training(p, veil_graph_node_count(g), "cnn");
        int i = EXPECT(p, "fc.dx", MATMUL_NT, S2(2, 8));
        i = EXPECT(p, "flat.dx", RESHAPE, S4(2, 2, 2, 2));
        EXPECT_IN(p, i, 0, "fc.dx");
        i = EXPECT(p, "ap.dx", AVGPOOL_GRAD, S4(2, 2, 3, 3));
        EXPECT_FWD(p, i, "ap");
        VT_CHECK(i < 0 || (p->nodes[i].a.k == 2 && p->nodes[i].a.stride == 1), "avgpool attrs");
        i = EXPECT(p, "c2.dx", CONV_GRAD_INPUT, S4(2, 2, 3, 3));
        EXPECT_IN(p, i, 0, "c2.w");
        EXPECT_IN(p, i, 1, "ap.dx");
        EXPECT_FWD(p, i, "c2");
        VT_CHECK(i < 0 || (p->nodes[i].a.stride == 1 && p->nodes[i].a.pad == 1), "conv attrs");
        i = EXPECT(p, "c2.dw", CONV_GRAD_WEIGHT, S4(2, 2, 3, 3));
        EXPECT_IN(p, i, 0, "p1");
        EXPECT_IN(p, i, 1, "ap.dx");
        VT_CHECK(IDX(p, "c2.db") < 0, "a gradient for an absent bias");
        i = EXPECT(p, "p1.dx", MAXPOOL_GRAD, S4(2, 2, 6, 6));
        EXPECT_FWD(p, i, "p1");
        i = EXPECT(p, "r1.dx", RELU_GRAD, S4(2, 2, 6, 6));
        i = EXPECT(p, "c1.dw", CONV_GRAD_WEIGHT, S4(2, 1, 3, 3));
        EXPECT_IN(p, i, 0, "x");
        EXPECT_IN(p, i, 1, "r1.dx");
        EXPECT_FWD(p, i, "c1");
        i = EXPECT(p, "c1.db", SUM_CHANNELS, S1(2));
        EXPECT_IN(p, i, 0, "r1.dx");
        VT_CHECK(IDX(p, "c1.dx") < 0, "the first layer's dx was built");
        EXPECT(p, "c1.w.update", SGD_UPDATE, S4(2, 1, 3, 3));
    }
    veil_plan_destroy(&p);
    veil_graph_destroy(&g);

    /* Global average pooling. */
    g = veil_graph_new("gap");
    x = IN(g, "x", S4(2, 3, 4, 4));
    c1 = veil_conv2d(g, "c", x, PAR(g, "cw", S4(2, 3, 1, 1)), NULL, 1, 0);
    l = veil_dense(g, "fc", veil_global_avgpool(g, "gap", c1), PAR(g, "fw", S2(2, 2)), NULL);
    veil_softmax_cross_entropy(g, "loss", l, IN(g, "y", S2(2, 2)));
    p = compile_train(g);
    if (p) {
        check_training(p, veil_graph_node_count(g), "gap");
        int i = EXPECT(p, "gap.dx", GAVGPOOL_GRAD, S4(2, 2, 4, 4));
        EXPECT_IN(p, i, 0, "fc.dx");
        EXPECT_FWD(p, i, "gap");
    }
    veil_plan_destroy(&p);
    veil_graph_destroy(&g);
}

static void test_sums(void)
{
    /* A residual connection: r feeds d2 and the add, so its gradient is a sum. */
    veil_graph_t *g = veil_graph_new("res");
    veil_node_t *x = IN(g, "x", S2(4, 6));
    veil_node_t *r = veil_relu(g, "r", veil_dense(g, "d1", x, PAR(g, "w1", S2(6, 6)), NULL));
    veil_node_t *d2 = veil_dense(g, "d2", r, PAR(g, "w2", S2(6, 6)), NULL);
    veil_node_t *s = veil_add(g, "s", r, d2);
    veil_node_t *l = veil_dense(g, "d3", s, PAR(g, "w3", S2(6, 3)), NULL);
    veil_softmax_cross_entropy(g, "loss", l, IN(g, "y", S2(4, 3)));
    veil_plan_t *p = compile_train(g);
    if (p) {
        check_training(p, veil_graph_node_count(g), "res");
        int sum = EXPECT(p, "r.grad", ADD, S2(4, 6));
        int a = sum >= 0 ? p->nodes[sum].in[0] : -1, b = sum >= 0 ? p->nodes[sum].in[1] : -1;
        VT_CHECK(sum >= 0 && ((a == IDX(p, "d2.dx") && b == IDX(p, "d3.dx")) ||
                              (b == IDX(p, "d2.dx") && a == IDX(p, "d3.dx"))),
                 "r.grad sums d2.dx and d3.dx");
        VT_CHECK(sum < 0 || p->nodes[sum].grad_of == IDX(p, "r"), "r.grad grad_of");
        int i = EXPECT(p, "d2.dw", MATMUL_TN, S2(6, 6));
        EXPECT_IN(p, i, 1, "d3.dx"); /* the add passes its gradient through */
        i = EXPECT(p, "r.dx", RELU_GRAD, S2(4, 6));
        EXPECT_IN(p, i, 0, "r.grad");
    }
    veil_plan_destroy(&p);
    veil_graph_destroy(&g);

    /* Tied weights: one parameter read by two layers gets one summed gradient, one update. */
    g = veil_graph_new("tied");
    x = IN(g, "x", S2(4, 6));
    veil_node_t *w = PAR(g, "w", S2(6, 6));
    veil_node_t *h = veil_relu(g, "h", veil_dense(g, "l1", x, w, NULL));
    veil_node_t *h2 = veil_dense(g, "l2", h, w, NULL);
    l = veil_dense(g, "out", h2, PAR(g, "wo", S2(6, 2)), NULL);
    veil_softmax_cross_entropy(g, "loss", l, IN(g, "y", S2(4, 2)));
    p = compile_train(g);
    if (p) {
        check_training(p, veil_graph_node_count(g), "tied");
        int sum = EXPECT(p, "w.grad", ADD, S2(6, 6));
        int u = EXPECT(p, "w.update", SGD_UPDATE, S2(6, 6));
        VT_CHECK(u < 0 || p->nodes[u].in[1] == sum, "the update reads the summed gradient");
    }
    veil_plan_destroy(&p);
    veil_graph_destroy(&g);

    /* Three contributions (x + x + relu(x), one gradient read three times): partial sums. */
    g = veil_graph_new("three");
    x = IN(g, "x", S2(2, 3));
    veil_node_t *y = veil_dense(g, "y", x, PAR(g, "w", S2(3, 3)), NULL);
    s = veil_add(g, "s", veil_add(g, "t", y, y), veil_relu(g, "ry", y));
    veil_softmax_cross_entropy(g, "loss", s, IN(g, "lab", S2(2, 3)));
    p = compile_train(g);
    if (p) {
        check_training(p, veil_graph_node_count(g), "three");
        int part = EXPECT(p, "y.grad_part1", ADD, S2(2, 3));
        int sum = EXPECT(p, "y.grad", ADD, S2(2, 3));
        VT_CHECK(sum < 0 || part < 0 || p->nodes[sum].in[0] == part, "the sum chains its parts");
        EXPECT_IN(p, IDX(p, "y.dw"), 1, "y.grad");
    }
    veil_plan_destroy(&p);
    veil_graph_destroy(&g);

    /* Names too long for a suffix are shortened and made unique with "~k". */
    char longname[64];
    memset(longname, 'L', 62);
    longname[62] = '\0';
    g = veil_graph_new("long");
    l = veil_dense(g, longname, IN(g, "x", S2(2, 3)), PAR(g, "w", S2(3, 3)), NULL);
    veil_softmax_cross_entropy(g, "loss", l, IN(g, "y", S2(2, 3)));
    p = compile_train(g);
    if (p) {
        check_training(p, veil_graph_node_count(g), "long");
        int found = 0;
        for (size_t i = p->nforward; i < p->count; i++) {
            const char *nm = p->nodes[i].name;
            size_t len = strlen(nm);
            VT_CHECK(len > 0 && len < VEIL_NODE_NAME_MAX, "name length %zu", len);
            if (p->nodes[i].op == VEIL_OP_MATMUL_TN)
                found = len == VEIL_NODE_NAME_MAX - 1 && strcmp(nm + len - 5, ".dw~2") == 0 &&
                        strncmp(nm, longname, 58) == 0;
        }
        VT_CHECK(found, "shortened name of the weight gradient");
    }
    veil_plan_destroy(&p);
    veil_graph_destroy(&g);
}

static void test_attention_backward(void)
{
    veil_graph_t *g = veil_graph_new("attn");
    veil_node_t *x = IN(g, "x", S2(4, 8));
    veil_node_t *q = veil_dense(g, "q", x, PAR(g, "wq", S2(8, 8)), NULL);
    veil_node_t *k = veil_dense(g, "k", x, PAR(g, "wk", S2(8, 8)), NULL);
    veil_node_t *v = veil_dense(g, "v", x, PAR(g, "wv", S2(8, 8)), NULL);
    veil_node_t *s = veil_matmul(g, "s", q, veil_transpose(g, "kt", k));
    veil_node_t *a = veil_softmax(g, "a", veil_scale(g, "sc", s, 0.5));
    veil_node_t *o = veil_matmul(g, "o", a, v);
    veil_node_t *cat = veil_concat(g, "cat", o, q, 1);
    size_t d3[3] = {2, 2, 16}, d2[2] = {4, 16};
    veil_node_t *ln = veil_layernorm(g, "ln", veil_reshape(g, "r3", cat, 3, d3),
                                     PAR(g, "ln.g", S1(16)), PAR(g, "ln.b", S1(16)), 1e-5);
    veil_node_t *l = veil_dense(g, "out", veil_reshape(g, "r2", ln, 2, d2),
                                PAR(g, "wo", S2(16, 3)), NULL);
    veil_softmax_cross_entropy(g, "loss", l, IN(g, "y", S2(4, 3)));
    VT_CHECK(veil_graph_status(g) == VEIL_OK, "attn: %s", veil_graph_error(g));
    veil_plan_t *p = compile_train(g);
    if (p) {
        check_training(p, veil_graph_node_count(g), "attn");
        int i = EXPECT(p, "r2.dx", RESHAPE, S3(2, 2, 16));
        i = EXPECT(p, "ln.dx", LAYERNORM_GRAD, S3(2, 2, 16));
        EXPECT_IN(p, i, 0, "r2.dx");
        EXPECT_FWD(p, i, "ln");
        i = EXPECT(p, "ln.dgamma", LAYERNORM_GRAD_GAMMA, S1(16));
        EXPECT_FWD(p, i, "ln");
        i = EXPECT(p, "ln.dbeta_rows", RESHAPE, S2(4, 16));
        EXPECT_IN(p, i, 0, "r2.dx");
        i = EXPECT(p, "ln.dbeta", SUM_ROWS, S1(16));
        EXPECT_IN(p, i, 0, "ln.dbeta_rows");
        EXPECT(p, "r3.dx", RESHAPE, S2(4, 16));
        i = EXPECT(p, "cat.da", SLICE, S2(4, 8));
        VT_CHECK(i < 0 || (p->nodes[i].a.axis == 1 && p->nodes[i].a.start == 0), "slice a");
        i = EXPECT(p, "cat.db", SLICE, S2(4, 8));
        VT_CHECK(i < 0 || (p->nodes[i].a.axis == 1 && p->nodes[i].a.start == 8), "slice b");
        i = EXPECT(p, "o.da", MATMUL_NT, S2(4, 4));
        EXPECT_IN(p, i, 0, "cat.da");
        EXPECT_IN(p, i, 1, "v");
        i = EXPECT(p, "o.db", MATMUL_TN, S2(4, 8));
        EXPECT_IN(p, i, 0, "a");
        EXPECT_IN(p, i, 1, "cat.da");
        i = EXPECT(p, "a.dx", SOFTMAX_GRAD, S2(4, 4));
        EXPECT_FWD(p, i, "a");
        i = EXPECT(p, "sc.dx", SCALE, S2(4, 4));
        VT_CHECK(i < 0 || p->nodes[i].a.c == 0.5, "scale factor");
        i = EXPECT(p, "s.da", MATMUL_NT, S2(4, 8));
        EXPECT_IN(p, i, 1, "kt");
        i = EXPECT(p, "s.db", MATMUL_TN, S2(8, 4));
        EXPECT_IN(p, i, 0, "q");
        i = EXPECT(p, "kt.dx", TRANSPOSE, S2(4, 8));
        EXPECT_IN(p, i, 0, "s.db");
        i = EXPECT(p, "q.grad", ADD, S2(4, 8));
        i = EXPECT(p, "q.dw", MATMUL_TN, S2(8, 8));
        EXPECT_IN(p, i, 1, "q.grad");
        EXPECT(p, "ln.g.update", SGD_UPDATE, S1(16));
        EXPECT(p, "ln.b.update", SGD_UPDATE, S1(16));
        VT_CHECK(IDX(p, "q.dx") < 0 && IDX(p, "x.grad") < 0, "no gradient for the input");
    }
    veil_plan_destroy(&p);
    veil_graph_destroy(&g);
}

/* x -> [pre] -> dense d1 -> [mid] -> dense d2 -> loss, pre and mid optional. */
static veil_graph_t *chain(const char *pre, const char *mid, size_t batch, int bnorm)
{
    veil_graph_t *g = veil_graph_new("chain");
    veil_node_t *x = IN(g, "x", S2(batch, 4));
    if (pre)
        x = veil_gelu(g, pre, x);
    veil_node_t *h = veil_dense(g, "d1", x, PAR(g, "w1", S2(4, 4)), NULL);
    if (bnorm)
        h = bn(g, "bn", h, 4, 1);
    if (mid)
        h = veil_gelu(g, mid, h);
    veil_node_t *l = veil_dense(g, "d2", h, PAR(g, "w2", S2(4, 2)), NULL);
    veil_softmax_cross_entropy(g, "loss", l, IN(g, "y", S2(batch, 2)));
    veil_reveal(g, l, 0);
    VT_CHECK(veil_graph_status(g) == VEIL_OK, "chain: %s", veil_graph_error(g));
    return g;
}

static void test_unsupported(void)
{
    struct veil_compile_options t;
    veil_compile_options_defaults(&t);
    t.training = 1;
    /* A gelu on the trained path gets GELU_GRAD(dy, its input), reading its saved state. */
    veil_graph_t *g = chain(NULL, "act", 4, 0);
    veil_plan_t *p = compile_train(g);
    if (p) {
        int i = EXPECT(p, "act.dx", GELU_GRAD, S2(4, 4));
        EXPECT_IN(p, i, 1, "d1");
        EXPECT_FWD(p, i, "act");
        VT_CHECK(p->nodes[IDX(p, "act")].saved && p->nodes[IDX(p, "d1")].last_use >= i,
                 "gelu state saved, its input alive until act.dx");
    }
    veil_plan_destroy(&p);
    veil_graph_destroy(&g);
    g = chain(NULL, NULL, 4, 1);
    REFUSED(g, &t, "batchnorm 'bn'", "no gradient");
    p = veil_compile(g, NULL);
    VT_CHECK(p != NULL, "batch norm compiles for inference: %s", veil_last_error());
    veil_plan_destroy(&p);
    veil_graph_destroy(&g);
    /* Off the trained path (before every parameter), a gelu needs no gradient. */
    g = chain("pre", NULL, 4, 0);
    p = compile_train(g);
    if (p) {
        check_training(p, veil_graph_node_count(g), "pre-gelu");
        for (size_t i = p->nforward; i < p->count; i++)
            VT_CHECK(p->nodes[i].grad_of != IDX(p, "pre"), "gradient for 'pre'");
        VT_CHECK(IDX(p, "d1.dx") < 0, "d1.dx built");
    }
    veil_plan_destroy(&p);
    veil_graph_destroy(&g);

    /* Two losses; labels computed from a parameter; no parameter before the loss. */
    g = veil_graph_new("two");
    veil_node_t *x = IN(g, "x", S2(2, 3));
    veil_node_t *l = veil_dense(g, "d", x, PAR(g, "w", S2(3, 3)), NULL);
    veil_softmax_cross_entropy(g, "l1", l, IN(g, "y1", S2(2, 3)));
    veil_softmax_cross_entropy(g, "l2", l, IN(g, "y2", S2(2, 3)));
    REFUSED(g, &t, "2 losses", "'l1'");
    veil_graph_destroy(&g);
    g = veil_graph_new("lab");
    x = IN(g, "x", S2(2, 3));
    l = veil_dense(g, "d", x, PAR(g, "w", S2(3, 3)), NULL);
    veil_softmax_cross_entropy(g, "l", l, veil_dense(g, "fake", x, PAR(g, "wl", S2(3, 3)), NULL));
    REFUSED(g, &t, "labels 'fake'", "softmax_cross_entropy 'l'");
    veil_graph_destroy(&g);
    g = veil_graph_new("none");
    x = IN(g, "x", S2(2, 3));
    veil_softmax_cross_entropy(g, "l", veil_relu(g, "r", x), IN(g, "y", S2(2, 3)));
    PAR(g, "unused", S1(3));
    REFUSED(g, &t, "no parameter reaches", "'r'");
    veil_graph_destroy(&g);
}

static void test_option_refusals(void)
{
    veil_graph_t *g = chain(NULL, NULL, 4, 0);
    struct veil_compile_options t, o;
    veil_compile_options_defaults(&t);
    t.training = 1;
    o = t;
    o.lr = 1e-7;
    REFUSED(&*g, &o, "learning rate 1e-07 is below what 16 fractional bits can represent",
            "use a larger rate or more frac_bits");
    o.training = 0;
    veil_plan_t *p = veil_compile(g, &o);
    VT_CHECK(p != NULL, "an unused learning rate is not checked: %s", veil_last_error());
    veil_plan_destroy(&p);
    o = t;
    o.lr = 1e-4;
    REFUSED(g, &o, "learning rate 0.0001", "16 fractional bits");
    o.frac_bits = 20;
    p = veil_compile(g, &o);
    VT_CHECK(p != NULL, "lr 1e-4 at 20 bits: %s", veil_last_error());
    veil_plan_destroy(&p);
    double bad_lr[] = {0.0, -0.1, 1.5, NAN};
    for (size_t i = 0; i < 4; i++) {
        o = t;
        o.lr = bad_lr[i];
        REFUSED(g, &o, "learning rate", "(0, 1]");
    }
    double bad_m[] = {1.0, -0.1, NAN};
    for (size_t i = 0; i < 3; i++) {
        o = t;
        o.momentum = bad_m[i];
        REFUSED(g, &o, "momentum", "[0, 1)");
    }
    o = t;
    o.momentum = 1e-6;
    REFUSED(g, &o, "momentum 1e-06 is below", "frac_bits");
    o = t;
    o.weight_decay = 0.2;
    REFUSED(g, &o, "weight decay 0.2", "[0, 0.1]");
    o.weight_decay = 1e-6;
    REFUSED(g, &o, "weight decay 1e-06 is below", "frac_bits");
    o = t;
    o.weight_stationary = 1;
    REFUSED(g, &o, "weight_stationary", "training");
    o = t;
    o.momentum = 0.0;
    o.weight_decay = 0.01;
    o.lr = 1.0;
    p = veil_compile(g, &o);
    VT_CHECK(p != NULL, "momentum 0, decay 0.01, lr 1: %s", veil_last_error());
    if (p)
        check_training(p, veil_graph_node_count(g), "sgd-options");
    veil_plan_destroy(&p);
    veil_graph_destroy(&g);

    /* Batch size: XENT_GRAD's 1/B must be at least 16 ulps: B <= 264 at 12 bits. */
    o = t;
    o.frac_bits = 12;
    o.lr = 0.05;
    g = chain(NULL, NULL, 300, 0);
    REFUSED(g, &o, "batch size 300", "at most 264");
    veil_graph_destroy(&g);
    g = chain(NULL, NULL, 264, 0);
    p = veil_compile(g, &o);
    VT_CHECK(p != NULL, "batch 264 at 12 bits: %s", veil_last_error());
    veil_plan_destroy(&p);
    veil_graph_destroy(&g);
}

int main(void)
{
    test_digest();
    test_liveness();
    test_fold();
    test_mlp_backward();
    test_cnn_backward();
    test_sums();
    test_attention_backward();
    test_unsupported();
    test_option_refusals();
    return veil_test_status();
}

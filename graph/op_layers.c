/*
 * op_layers.c — the DSL's layer builders and their shape inference. Each builder checks its
 * operands' shapes and its options, records the first error on the graph with a message that
 * names the layer and says what to change, and returns the new node (or NULL). The semantics of
 * every op are in include/veil/graph.h and graph/graph_internal.h.
 */
#include "config.h"

#include "base/base_internal.h"
#include "graph/graph_internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define SHAPE(n, buf) veil_shape_str((n)->ndim, (n)->dims, buf, sizeof buf)

/* The name a message uses for a layer being built (its given name, or the op). */
static const char *nm(const char *name, enum veil_op op)
{
    return name ? name : veil_op_name(op);
}

/* Common prologue: NULL graph / earlier error / NULL operand => NULL. */
static int usable(veil_graph_t *g, int nin, veil_node_t *const *in)
{
    if (!g || g->status != VEIL_OK)
        return 0;
    for (int i = 0; i < nin; i++)
        if (!in[i])
            return 0;
    return 1;
}

static veil_node_t *make(veil_graph_t *g, enum veil_op op, const char *name, int nin,
                         veil_node_t *const *in, int ndim, const size_t *dims)
{
    struct veil_node *n = veil_graph_add_node(g, op, name, nin, in);
    if (n)
        veil_node_set_shape(n, ndim, dims);
    return n;
}

veil_node_t *veil_dense(veil_graph_t *g, const char *name, veil_node_t *x, veil_node_t *w,
                        veil_node_t *b)
{
    veil_node_t *in[3] = {x, w, b};
    if (!usable(g, 2, in))
        return NULL;
    char s1[96], s2[96];
    const char *l = nm(name, VEIL_OP_DENSE);
    if (x->ndim != 2)
        return veil_graph_fail(g, VEIL_ERR_SHAPE, "dense '%s': input has shape %s; give a 2-D "
                               "(batch, features) input (flatten images first)", l, SHAPE(x, s1));
    if (w->ndim != 2 || w->dims[0] != x->dims[1])
        return veil_graph_fail(g, VEIL_ERR_SHAPE, "dense '%s': input has %zu features but the "
                               "weight has shape %s; the weight must be (%zu, out)", l, x->dims[1],
                               SHAPE(w, s2), x->dims[1]);
    if (b && (b->ndim != 1 || b->dims[0] != w->dims[1]))
        return veil_graph_fail(g, VEIL_ERR_SHAPE, "dense '%s': bias has shape %s; it must be (%zu)",
                               l, SHAPE(b, s1), w->dims[1]);
    size_t dims[2] = {x->dims[0], w->dims[1]};
    struct veil_node *n = make(g, VEIL_OP_DENSE, name, b ? 3 : 2, in, 2, dims);
    return n;
}

veil_node_t *veil_conv2d(veil_graph_t *g, const char *name, veil_node_t *x, veil_node_t *w,
                         veil_node_t *b, int stride, int pad)
{
    veil_node_t *in[3] = {x, w, b};
    if (!usable(g, 2, in))
        return NULL;
    char s1[96], s2[96];
    const char *l = nm(name, VEIL_OP_CONV2D);
    if (x->ndim != 4)
        return veil_graph_fail(g, VEIL_ERR_SHAPE, "conv2d '%s': input has shape %s; give NCHW "
                               "(batch, channels, height, width)", l, SHAPE(x, s1));
    if (w->ndim != 4)
        return veil_graph_fail(g, VEIL_ERR_SHAPE, "conv2d '%s': weight has shape %s; give OIHW "
                               "(out channels, in channels, kh, kw)", l, SHAPE(w, s1));
    if (w->dims[1] != x->dims[1])
        return veil_graph_fail(g, VEIL_ERR_SHAPE, "conv2d '%s': input has %zu channels, weight "
                               "expects %zu (groups other than 1 are not supported)", l,
                               x->dims[1], w->dims[1]);
    if (stride < 1)
        return veil_graph_fail(g, VEIL_ERR_INVAL, "conv2d '%s': stride %d; give 1 or more", l,
                               stride);
    if (pad < 0 || (size_t)pad >= w->dims[2] || (size_t)pad >= w->dims[3])
        return veil_graph_fail(g, VEIL_ERR_INVAL, "conv2d '%s': padding %d; give 0 to kernel "
                               "size - 1 (%zu)", l, pad, (w->dims[2] < w->dims[3] ? w->dims[2]
                                                                               : w->dims[3]) - 1);
    size_t hp = x->dims[2] + 2 * (size_t)pad, wp = x->dims[3] + 2 * (size_t)pad;
    if (w->dims[2] > hp || w->dims[3] > wp)
        return veil_graph_fail(g, VEIL_ERR_SHAPE, "conv2d '%s': kernel %zux%zu is larger than the "
                               "padded input %zux%zu", l, w->dims[2], w->dims[3], hp, wp);
    if (b && (b->ndim != 1 || b->dims[0] != w->dims[0]))
        return veil_graph_fail(g, VEIL_ERR_SHAPE, "conv2d '%s': bias has shape %s; it must be "
                               "(%zu)", l, SHAPE(b, s2), w->dims[0]);
    size_t dims[4] = {x->dims[0], w->dims[0], (hp - w->dims[2]) / (size_t)stride + 1,
                      (wp - w->dims[3]) / (size_t)stride + 1};
    struct veil_node *n = make(g, VEIL_OP_CONV2D, name, b ? 3 : 2, in, 4, dims);
    if (n) {
        n->a.stride = stride;
        n->a.pad = pad;
    }
    return n;
}

static veil_node_t *unary(veil_graph_t *g, enum veil_op op, const char *name, veil_node_t *x)
{
    veil_node_t *in[1] = {x};
    if (!usable(g, 1, in))
        return NULL;
    return make(g, op, name, 1, in, x->ndim, x->dims);
}

veil_node_t *veil_relu(veil_graph_t *g, const char *name, veil_node_t *x)
{
    return unary(g, VEIL_OP_RELU, name, x);
}

veil_node_t *veil_gelu(veil_graph_t *g, const char *name, veil_node_t *x)
{
    return unary(g, VEIL_OP_GELU, name, x);
}

static veil_node_t *pool(veil_graph_t *g, enum veil_op op, const char *name, veil_node_t *x, int k,
                         int stride)
{
    veil_node_t *in[1] = {x};
    if (!usable(g, 1, in))
        return NULL;
    char s1[96];
    const char *l = nm(name, op);
    if (x->ndim != 4)
        return veil_graph_fail(g, VEIL_ERR_SHAPE, "%s '%s': input has shape %s; give NCHW",
                               veil_op_name(op), l, SHAPE(x, s1));
    if (k < 1 || stride < 1)
        return veil_graph_fail(g, VEIL_ERR_INVAL, "%s '%s': window %d, stride %d; give 1 or more",
                               veil_op_name(op), l, k, stride);
    if ((size_t)k > x->dims[2] || (size_t)k > x->dims[3])
        return veil_graph_fail(g, VEIL_ERR_SHAPE, "%s '%s': window %dx%d is larger than the "
                               "%zux%zu image", veil_op_name(op), l, k, k, x->dims[2], x->dims[3]);
    size_t dims[4] = {x->dims[0], x->dims[1], (x->dims[2] - (size_t)k) / (size_t)stride + 1,
                      (x->dims[3] - (size_t)k) / (size_t)stride + 1};
    struct veil_node *n = make(g, op, name, 1, in, 4, dims);
    if (n) {
        n->a.k = k;
        n->a.stride = stride;
    }
    return n;
}

veil_node_t *veil_maxpool2d(veil_graph_t *g, const char *name, veil_node_t *x, int k, int stride)
{
    return pool(g, VEIL_OP_MAXPOOL, name, x, k, stride);
}

veil_node_t *veil_avgpool2d(veil_graph_t *g, const char *name, veil_node_t *x, int k, int stride)
{
    return pool(g, VEIL_OP_AVGPOOL, name, x, k, stride);
}

veil_node_t *veil_global_avgpool(veil_graph_t *g, const char *name, veil_node_t *x)
{
    veil_node_t *in[1] = {x};
    if (!usable(g, 1, in))
        return NULL;
    char s1[96];
    if (x->ndim != 4)
        return veil_graph_fail(g, VEIL_ERR_SHAPE, "global_avgpool '%s': input has shape %s; give "
                               "NCHW", nm(name, VEIL_OP_GAVGPOOL), SHAPE(x, s1));
    size_t dims[2] = {x->dims[0], x->dims[1]};
    return make(g, VEIL_OP_GAVGPOOL, name, 1, in, 2, dims);
}

veil_node_t *veil_reshape(veil_graph_t *g, const char *name, veil_node_t *x, int ndim,
                          const size_t *dims)
{
    veil_node_t *in[1] = {x};
    if (!usable(g, 1, in))
        return NULL;
    const char *l = nm(name, VEIL_OP_RESHAPE);
    if (ndim < 1 || ndim > VEIL_MAX_DIMS || !dims)
        return veil_graph_fail(g, VEIL_ERR_SHAPE, "reshape '%s': %d dimensions; give 1 to %d", l,
                               ndim, VEIL_MAX_DIMS);
    size_t numel = 1;
    for (int i = 0; i < ndim; i++)
        numel *= dims[i];
    char s1[96], s2[96];
    if (numel != x->numel)
        return veil_graph_fail(g, VEIL_ERR_SHAPE, "reshape '%s': %s has %zu elements, the new "
                               "shape %s has %zu", l, SHAPE(x, s1), x->numel,
                               veil_shape_str(ndim, dims, s2, sizeof s2), numel);
    return make(g, VEIL_OP_RESHAPE, name, 1, in, ndim, dims);
}

veil_node_t *veil_flatten(veil_graph_t *g, const char *name, veil_node_t *x)
{
    if (!x || !g || g->status != VEIL_OK)
        return NULL;
    size_t dims[2] = {x->dims[0], x->dims[0] ? x->numel / x->dims[0] : 0};
    if (x->ndim < 2)
        return veil_graph_fail(g, VEIL_ERR_SHAPE, "flatten '%s': input is 1-D; flatten keeps the "
                               "batch dimension and needs 2 or more", nm(name, VEIL_OP_RESHAPE));
    return veil_reshape(g, name, x, 2, dims);
}

static int same_shape(const struct veil_node *a, const struct veil_node *b)
{
    if (a->ndim != b->ndim)
        return 0;
    for (int i = 0; i < a->ndim; i++)
        if (a->dims[i] != b->dims[i])
            return 0;
    return 1;
}

veil_node_t *veil_add(veil_graph_t *g, const char *name, veil_node_t *a, veil_node_t *b)
{
    veil_node_t *in[2] = {a, b};
    if (!usable(g, 2, in))
        return NULL;
    char s1[96], s2[96];
    if (!same_shape(a, b))
        return veil_graph_fail(g, VEIL_ERR_SHAPE, "add '%s': shapes %s and %s differ; add needs "
                               "equal shapes (no broadcasting)", nm(name, VEIL_OP_ADD),
                               SHAPE(a, s1), SHAPE(b, s2));
    return make(g, VEIL_OP_ADD, name, 2, in, a->ndim, a->dims);
}

veil_node_t *veil_concat(veil_graph_t *g, const char *name, veil_node_t *a, veil_node_t *b,
                         int axis)
{
    veil_node_t *in[2] = {a, b};
    if (!usable(g, 2, in))
        return NULL;
    char s1[96], s2[96];
    const char *l = nm(name, VEIL_OP_CONCAT);
    if (a->ndim != b->ndim || axis < 0 || axis >= a->ndim)
        return veil_graph_fail(g, VEIL_ERR_SHAPE, "concat '%s': shapes %s and %s, axis %d; give "
                               "tensors of equal rank and an axis below it", l, SHAPE(a, s1),
                               SHAPE(b, s2), axis);
    for (int i = 0; i < a->ndim; i++)
        if (i != axis && a->dims[i] != b->dims[i])
            return veil_graph_fail(g, VEIL_ERR_SHAPE, "concat '%s': shapes %s and %s differ in "
                                   "dimension %d (only axis %d may differ)", l, SHAPE(a, s1),
                                   SHAPE(b, s2), i, axis);
    size_t dims[VEIL_MAX_DIMS];
    memcpy(dims, a->dims, sizeof dims);
    dims[axis] += b->dims[axis];
    struct veil_node *n = make(g, VEIL_OP_CONCAT, name, 2, in, a->ndim, dims);
    if (n)
        n->a.axis = axis;
    return n;
}

static int vec_of(const struct veil_node *p, size_t c)
{
    return p->ndim == 1 && p->dims[0] == c;
}

veil_node_t *veil_batchnorm(veil_graph_t *g, const char *name, veil_node_t *x, veil_node_t *gamma,
                            veil_node_t *beta, veil_node_t *mean, veil_node_t *var, double eps)
{
    veil_node_t *in[5] = {x, gamma, beta, mean, var};
    if (!usable(g, 5, in))
        return NULL;
    const char *l = nm(name, VEIL_OP_BATCHNORM);
    char s1[96];
    if (x->ndim != 2 && x->ndim != 4)
        return veil_graph_fail(g, VEIL_ERR_SHAPE, "batchnorm '%s': input has shape %s; give "
                               "(batch, C) or NCHW", l, SHAPE(x, s1));
    size_t c = x->dims[1];
    const char *what[4] = {"gamma", "beta", "mean", "var"};
    for (int i = 1; i < 5; i++) {
        if (!vec_of(in[i], c))
            return veil_graph_fail(g, VEIL_ERR_SHAPE, "batchnorm '%s': %s has shape %s; it must be "
                                   "(%zu), one per channel", l, what[i - 1], SHAPE(in[i], s1), c);
        if (in[i]->op != VEIL_OP_PARAM)
            return veil_graph_fail(g, VEIL_ERR_INVAL, "batchnorm '%s': %s must be a parameter "
                                   "(veil_param) so the compiler can fold it", l, what[i - 1]);
    }
    if (!(eps > 0) || !isfinite(eps))
        return veil_graph_fail(g, VEIL_ERR_INVAL, "batchnorm '%s': eps %g; give a small positive "
                               "number such as 1e-5", l, eps);
    struct veil_node *n = make(g, VEIL_OP_BATCHNORM, name, 5, in, x->ndim, x->dims);
    if (n)
        n->a.eps = eps;
    return n;
}

veil_node_t *veil_layernorm(veil_graph_t *g, const char *name, veil_node_t *x, veil_node_t *gamma,
                            veil_node_t *beta, double eps)
{
    veil_node_t *in[3] = {x, gamma, beta};
    if (!usable(g, 3, in))
        return NULL;
    const char *l = nm(name, VEIL_OP_LAYERNORM);
    char s1[96];
    size_t d = x->dims[x->ndim - 1];
    if (!vec_of(gamma, d) || !vec_of(beta, d))
        return veil_graph_fail(g, VEIL_ERR_SHAPE, "layernorm '%s': gamma and beta must be (%zu), "
                               "the last dimension of the input %s", l, d, SHAPE(x, s1));
    if (d < 2)
        return veil_graph_fail(g, VEIL_ERR_SHAPE, "layernorm '%s': the last dimension is %zu; "
                               "normalising needs 2 or more", l, d);
    if (!(eps > 0) || !isfinite(eps))
        return veil_graph_fail(g, VEIL_ERR_INVAL, "layernorm '%s': eps %g; give a small positive "
                               "number such as 1e-5", l, eps);
    struct veil_node *n = make(g, VEIL_OP_LAYERNORM, name, 3, in, x->ndim, x->dims);
    if (n)
        n->a.eps = eps;
    return n;
}

veil_node_t *veil_matmul(veil_graph_t *g, const char *name, veil_node_t *a, veil_node_t *b)
{
    veil_node_t *in[2] = {a, b};
    if (!usable(g, 2, in))
        return NULL;
    char s1[96], s2[96];
    if (a->ndim != 2 || b->ndim != 2 || a->dims[1] != b->dims[0])
        return veil_graph_fail(g, VEIL_ERR_SHAPE, "matmul '%s': shapes %s and %s; give (m, k) and "
                               "(k, n)", nm(name, VEIL_OP_MATMUL), SHAPE(a, s1), SHAPE(b, s2));
    size_t dims[2] = {a->dims[0], b->dims[1]};
    return make(g, VEIL_OP_MATMUL, name, 2, in, 2, dims);
}

veil_node_t *veil_transpose(veil_graph_t *g, const char *name, veil_node_t *x)
{
    veil_node_t *in[1] = {x};
    if (!usable(g, 1, in))
        return NULL;
    char s1[96];
    if (x->ndim != 2)
        return veil_graph_fail(g, VEIL_ERR_SHAPE, "transpose '%s': input has shape %s; give a "
                               "2-D tensor", nm(name, VEIL_OP_TRANSPOSE), SHAPE(x, s1));
    size_t dims[2] = {x->dims[1], x->dims[0]};
    return make(g, VEIL_OP_TRANSPOSE, name, 1, in, 2, dims);
}

veil_node_t *veil_scale(veil_graph_t *g, const char *name, veil_node_t *x, double c)
{
    if (g && g->status == VEIL_OK && x && (!isfinite(c) || fabs(c) >= 65536.0))
        return veil_graph_fail(g, VEIL_ERR_RANGE, "scale '%s': factor %g; give a finite factor "
                               "below 65536 in magnitude", nm(name, VEIL_OP_SCALE), c);
    struct veil_node *n = unary(g, VEIL_OP_SCALE, name, x);
    if (n)
        n->a.c = c;
    return n;
}

veil_node_t *veil_softmax(veil_graph_t *g, const char *name, veil_node_t *x)
{
    if (g && g->status == VEIL_OK && x && (x->dims[x->ndim - 1] >= 65536))
        return veil_graph_fail(g, VEIL_ERR_SHAPE, "softmax '%s': last dimension %zu; the secure "
                               "softmax supports up to 65535", nm(name, VEIL_OP_SOFTMAX),
                               x->dims[x->ndim - 1]);
    return unary(g, VEIL_OP_SOFTMAX, name, x);
}

veil_node_t *veil_argmax(veil_graph_t *g, const char *name, veil_node_t *x)
{
    veil_node_t *in[1] = {x};
    if (!usable(g, 1, in))
        return NULL;
    size_t dims[VEIL_MAX_DIMS];
    int ndim = x->ndim - 1;
    if (ndim == 0) {
        dims[0] = 1;
        ndim = 1;
    } else {
        memcpy(dims, x->dims, (size_t)ndim * sizeof dims[0]);
    }
    return make(g, VEIL_OP_ARGMAX, name, 1, in, ndim, dims);
}

veil_node_t *veil_softmax_cross_entropy(veil_graph_t *g, const char *name, veil_node_t *logits,
                                        veil_node_t *labels)
{
    veil_node_t *in[2] = {logits, labels};
    if (!usable(g, 2, in))
        return NULL;
    char s1[96], s2[96];
    const char *l = nm(name, VEIL_OP_SOFTMAX_XENT);
    if (logits->ndim != 2 || !same_shape(logits, labels))
        return veil_graph_fail(g, VEIL_ERR_SHAPE, "softmax_cross_entropy '%s': logits %s and "
                               "labels %s; give two (batch, classes) tensors, labels one-hot", l,
                               SHAPE(logits, s1), SHAPE(labels, s2));
    size_t dims[1] = {1};
    return make(g, VEIL_OP_SOFTMAX_XENT, name, 2, in, 1, dims);
}

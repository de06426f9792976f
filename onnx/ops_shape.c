/*
 * ops_shape.c — the ops that reshape or move elements: Reshape, Flatten, Squeeze, Unsqueeze
 * (reshapes), Transpose (the DSL's 2-D transpose, else an index map), Concat, Slice, Pad
 * (constant, reflect, edge), Gather with public indices, Split, Tile, Expand, DepthToSpace,
 * SpaceToDepth, and the linear reductions ReduceSum and ReduceMean. Every index map becomes a
 * product with a public 0/1 matrix (linmap.c); on public inputs (shapes, axes) the result is
 * computed at load instead.
 */
#include "config.h"

#include "onnx/onnx_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int public_value(const struct ox_value *v)
{
    return v->cval || (v->init >= 0 && v->is_int);
}

/* Output k = x moved by idx (idx[j] < 0: fill); idx owned (freed here). */
int ox_move(struct veil_onnx_model *m, const Onnx__NodeProto *n, size_t k, struct ox_value *x,
            int ndim, const size_t *dims, long *idx, double fill)
{
    if (!idx)
        return ox_fail(m, VEIL_ERR_NOMEM, "out of memory");
    size_t total = 1;
    for (int i = 0; i < ndim; i++)
        total *= dims[i];
    int rc;
    if (public_value(x)) {
        const double *c = ox_public(m, x);
        double *v = c ? malloc((total ? total : 1) * sizeof *v) : NULL;
        for (size_t j = 0; v && j < total; j++)
            v[j] = idx[j] < 0 ? fill : c[idx[j]];
        rc = c ? ox_out_const(m, n, k, ndim, dims, v, x->is_int) : VEIL_ERR_FORMAT;
        free(idx);
        return rc;
    }
    veil_node_t *y = ox_gather(m, ox_node(m, x), ndim, dims, idx);
    char b[64], b1[64];
    if (y && fill != 0) {
        double *c = malloc(total * sizeof *c);
        size_t d[VEIL_MAX_DIMS];
        int nd = ox_dsl_shape(ndim, dims, d);
        for (size_t j = 0; c && j < total; j++)
            c[j] = idx[j] < 0 ? fill : 0;
        y = c ? veil_add(m->g, ox_name(m, NULL, b1), y,
                         veil_constant(m->g, ox_name(m, NULL, b), nd, d, c))
              : NULL;
        free(c);
    }
    free(idx);
    if (y)
        y = ox_reshape(m, y, ndim, dims, ox_out_name(m, n, k, b));
    return ox_out(m, n, k, y, ndim, dims);
}

static long *identity_index(size_t total)
{
    long *idx = malloc((total ? total : 1) * sizeof *idx);
    for (size_t j = 0; idx && j < total; j++)
        idx[j] = (long)j;
    return idx;
}

/* Axes from attribute "axes" (opset < 13 or < since) or input 1. */
static int axes_of(struct veil_onnx_model *m, const Onnx__NodeProto *n, int since, int rank,
                   int *axes, int *count)
{
    *count = 0;
    if (m->opset < since) {
        size_t c;
        const int64_t *a = ox_attr_ints(n, "axes", &c);
        for (size_t i = 0; i < c && i < VEIL_MAX_DIMS; i++)
            if (ox_axis(m, a[i], rank, &axes[(*count)++]) != VEIL_OK)
                return VEIL_ERR_FORMAT;
        return c > VEIL_MAX_DIMS ? ox_fail(m, VEIL_ERR_UNSUPPORTED, "too many axes") : VEIL_OK;
    }
    if (!ox_in(m, n, 1))
        return VEIL_OK;
    size_t c;
    const double *a = ox_ints(m, n, 1, &c);
    if (!a)
        return VEIL_ERR_FORMAT;
    if (c > VEIL_MAX_DIMS)
        return ox_fail(m, VEIL_ERR_UNSUPPORTED, "too many axes");
    for (size_t i = 0; i < c; i++)
        if (ox_axis(m, (int64_t)a[i], rank, &axes[(*count)++]) != VEIL_OK)
            return VEIL_ERR_FORMAT;
    return VEIL_OK;
}

int ox_op_reshape(struct veil_onnx_model *m, const Onnx__NodeProto *n, int kind)
{
    struct ox_value *x = ox_in(m, n, 0);
    if (!x)
        return ox_fail(m, VEIL_ERR_FORMAT, "input 0 missing");
    int nd = 0;
    size_t d[VEIL_MAX_DIMS + 1];
    if (kind == OX_RESHAPE) {
        size_t c;
        const double *s = ox_ints(m, n, 1, &c);
        if (!s)
            return VEIL_ERR_FORMAT;
        if (c > VEIL_MAX_DIMS)
            return ox_fail(m, VEIL_ERR_UNSUPPORTED, "rank %zu", c);
        int infer = -1, allowzero = (int)ox_attr_int(n, "allowzero", 0);
        size_t known = 1;
        for (size_t i = 0; i < c; i++) {
            if (s[i] == -1 && infer < 0) {
                infer = (int)i;
                d[i] = 1;
                continue;
            }
            if (s[i] == 0 && !allowzero && i < (size_t)x->ndim)
                d[i] = x->dims[i];
            else if (s[i] >= 1 && s[i] <= (double)OX_MAX_NUMEL && known <= OX_MAX_NUMEL)
                d[i] = (size_t)s[i];
            else
                return ox_fail(m, s[i] == 0 ? VEIL_ERR_UNSUPPORTED : VEIL_ERR_SHAPE,
                               "shape entry %zu is %g (empty tensors are not supported)", i, s[i]);
            known *= d[i];
        }
        if (infer >= 0) {
            if (!known || x->numel % known)
                return ox_fail(m, VEIL_ERR_SHAPE, "cannot infer -1: %zu elements", x->numel);
            d[infer] = x->numel / known;
        }
        nd = (int)c;
    } else if (kind == OX_FLATTEN) {
        int64_t a = ox_attr_int(n, "axis", 1);
        a = a < 0 ? a + x->ndim : a;
        if (a < 0 || a > x->ndim)
            return ox_fail(m, VEIL_ERR_FORMAT, "axis out of range");
        d[0] = d[1] = 1;
        for (int i = 0; i < x->ndim; i++)
            d[i >= a] *= x->dims[i];
        nd = 2;
    } else if (kind == OX_SQUEEZE) {
        int axes[VEIL_MAX_DIMS], c;
        if (axes_of(m, n, 13, x->ndim, axes, &c) != VEIL_OK)
            return VEIL_ERR_FORMAT;
        for (int i = 0; i < x->ndim; i++) {
            int drop = 0;
            for (int j = 0; j < c; j++)
                drop |= axes[j] == i;
            if (c && drop && x->dims[i] != 1)
                return ox_fail(m, VEIL_ERR_SHAPE, "axis %d has size %zu, not 1", i, x->dims[i]);
            if (!(c ? drop : x->dims[i] == 1))
                d[nd++] = x->dims[i];
        }
    } else {
        int axes[VEIL_MAX_DIMS], c, r;
        size_t cc;
        if (m->opset < 13)
            ox_attr_ints(n, "axes", &cc);
        else if (!ox_ints(m, n, 1, &cc))
            return VEIL_ERR_FORMAT;
        r = x->ndim + (int)cc;
        if (r > VEIL_MAX_DIMS || !cc)
            return ox_fail(m, VEIL_ERR_UNSUPPORTED, "rank %d", r);
        if (axes_of(m, n, 13, r, axes, &c) != VEIL_OK)
            return VEIL_ERR_FORMAT;
        for (int i = 0, k = 0; i < r; i++) {
            int ins = 0;
            for (int j = 0; j < c; j++)
                ins |= axes[j] == i;
            d[nd++] = ins ? 1 : x->dims[k++];
        }
    }
    size_t total = 1;
    for (int i = 0; i < nd; i++)
        total *= d[i];
    if (total != x->numel)
        return ox_fail(m, VEIL_ERR_SHAPE, "%zu elements cannot take a shape of %zu", x->numel,
                       total);
    return ox_move(m, n, 0, x, nd, d, identity_index(total), 0);
}

int ox_op_transpose(struct veil_onnx_model *m, const Onnx__NodeProto *n)
{
    struct ox_value *x = ox_in(m, n, 0);
    if (!x)
        return ox_fail(m, VEIL_ERR_FORMAT, "input 0 missing");
    size_t c;
    const int64_t *p = ox_attr_ints(n, "perm", &c);
    int perm[VEIL_MAX_DIMS], seen[VEIL_MAX_DIMS] = {0};
    if (c && c != (size_t)x->ndim)
        return ox_fail(m, VEIL_ERR_FORMAT, "perm has %zu entries for rank %d", c, x->ndim);
    for (int i = 0; i < x->ndim; i++) {
        perm[i] = c ? (int)p[i] : x->ndim - 1 - i;
        if (perm[i] < 0 || perm[i] >= x->ndim || seen[perm[i]]++)
            return ox_fail(m, VEIL_ERR_FORMAT, "perm is not a permutation");
    }
    size_t od[VEIL_MAX_DIMS];
    if (x->ndim == 2 && perm[0] == 1 && !public_value(x)) {
        char b[64];
        veil_node_t *xn = ox_node(m, x);
        od[0] = x->dims[1], od[1] = x->dims[0];
        return ox_out(m, n, 0, xn ? veil_transpose(m->g, ox_out_name(m, n, 0, b), xn) : NULL, 2,
                      od);
    }
    long *idx = ox_transpose_index(x->ndim, x->dims, perm, od);
    return ox_move(m, n, 0, x, x->ndim, od, idx, 0);
}

int ox_op_concat(struct veil_onnx_model *m, const Onnx__NodeProto *n)
{
    struct ox_value *x0 = ox_in(m, n, 0);
    if (!x0 || x0->ndim < 1)
        return ox_fail(m, VEIL_ERR_FORMAT, "needs tensors of rank 1 or more");
    int a;
    if (!ox_attr(n, "axis"))
        return ox_fail(m, VEIL_ERR_FORMAT, "attribute axis is required");
    if (ox_axis(m, ox_attr_int(n, "axis", 0), x0->ndim, &a) != VEIL_OK)
        return VEIL_ERR_FORMAT;
    size_t od[VEIL_MAX_DIMS];
    memcpy(od, x0->dims, sizeof od);
    od[a] = 0;
    int all_public = 1, is_int = 1;
    for (size_t k = 0; k < n->n_input; k++) {
        struct ox_value *v = ox_in(m, n, k);
        if (!v || v->ndim != x0->ndim)
            return ox_fail(m, VEIL_ERR_SHAPE, "input %zu is missing or of another rank", k);
        for (int i = 0; i < v->ndim; i++)
            if (i != a && v->dims[i] != x0->dims[i])
                return ox_fail(m, VEIL_ERR_SHAPE, "input %zu differs in dimension %d", k, i);
        od[a] += v->dims[a];
        all_public &= public_value(v);
        is_int &= v->is_int;
    }
    size_t total = 1, outer = 1;
    for (int i = 0; i < x0->ndim; i++)
        total *= od[i];
    for (int i = 0; i < a; i++)
        outer *= od[i];
    if (all_public) {
        double *r = malloc(total * sizeof *r);
        if (!r)
            return ox_fail(m, VEIL_ERR_NOMEM, "out of memory");
        size_t off = 0, row = total / outer;
        for (size_t k = 0; k < n->n_input; k++) {
            struct ox_value *v = ox_in(m, n, k);
            const double *c = ox_public(m, v);
            size_t vr = v->numel / outer;
            for (size_t o = 0; c && o < outer; o++)
                memcpy(r + o * row + off, c + o * vr, vr * sizeof *r);
            if (!c) {
                free(r);
                return VEIL_ERR_FORMAT;
            }
            off += vr;
        }
        return ox_out_const(m, n, 0, x0->ndim, od, r, is_int);
    }
    veil_node_t *acc = NULL;
    char b[64];
    for (size_t k = 0; k < n->n_input; k++) {
        veil_node_t *v = ox_node(m, ox_in(m, n, k));
        if (!v)
            return VEIL_ERR_FORMAT;
        acc = k == 0
                  ? v
                  : veil_concat(m->g,
                                k + 1 == n->n_input ? ox_out_name(m, n, 0, b) : ox_name(m, NULL, b),
                                acc, v, a);
        if (!acc)
            return ox_graph_fail(m);
    }
    if (n->n_input == 1)
        acc = ox_reshape(m, acc, x0->ndim, od, ox_out_name(m, n, 0, b));
    return ox_out(m, n, 0, acc, x0->ndim, od);
}

/*
 * linmap.c — the ONNX ops that only move, copy or drop elements (Transpose of 3 or more
 * dimensions, Slice, Pad, Expand, Tile, broadcasting a secret operand, ...) have no DSL builder of
 * their own, but each is a linear map y = x M with a public 0/1 matrix M: one dense layer with a
 * constant weight, exact in fixed point (x times 2^f, truncated back). Index maps that are the
 * identity become reshapes. M has numel(x) x numel(y) entries; larger than the option max_linmap
 * is refused with a message saying so. Also the numpy broadcasting rules.
 */
#include "config.h"

#include "onnx/onnx_internal.h"

#include <stdlib.h>
#include <string.h>

veil_node_t *ox_linmap(struct veil_onnx_model *m, veil_node_t *x, int ndim, const size_t *dims,
                       const double *M)
{
    if (!x)
        return NULL;
    size_t nin = veil_node_numel(x), nout = 1, d[VEIL_MAX_DIMS];
    for (int i = 0; i < ndim; i++)
        nout *= dims[i];
    int nd = ox_dsl_shape(ndim, dims, d);
    char b1[64], b2[64], b3[64], b4[64];
    size_t row[2] = {1, nin}, wd[2] = {nin, nout};
    veil_node_t *r = veil_reshape(m->g, ox_name(m, NULL, b1), x, 2, row);
    veil_node_t *w = veil_constant(m->g, ox_name(m, NULL, b2), 2, wd, M);
    veil_node_t *y = veil_dense(m->g, ox_name(m, NULL, b3), r, w, NULL);
    y = veil_reshape(m->g, ox_name(m, NULL, b4), y, nd, d);
    if (!y)
        ox_graph_fail(m);
    return y;
}

veil_node_t *ox_gather(struct veil_onnx_model *m, veil_node_t *x, int ndim, const size_t *dims,
                       const long *idx)
{
    if (!x)
        return NULL;
    size_t nin = veil_node_numel(x), nout = 1, d[VEIL_MAX_DIMS];
    for (int i = 0; i < ndim; i++)
        nout *= dims[i];
    int nd = ox_dsl_shape(ndim, dims, d);
    int identity = nin == nout;
    for (size_t j = 0; j < nout && identity; j++)
        identity = idx[j] == (long)j;
    char b1[64];
    if (identity) {
        int same = veil_node_ndim(x) == nd;
        for (int i = 0; i < nd && same; i++)
            same = veil_node_dim(x, i) == d[i];
        if (same)
            return x;
        veil_node_t *y = veil_reshape(m->g, ox_name(m, NULL, b1), x, nd, d);
        if (!y)
            ox_graph_fail(m);
        return y;
    }
    if (nout && nin > m->o.max_linmap / nout) {
        ox_fail(m, VEIL_ERR_UNSUPPORTED,
                "moving elements of a %zu-element tensor into %zu "
                "would take a %zu x %zu constant matrix, more than max_linmap (%zu) allows",
                nin, nout, nin, nout, m->o.max_linmap);
        return NULL;
    }
    double *M = calloc(nin * nout, sizeof *M);
    if (!M) {
        ox_fail(m, VEIL_ERR_NOMEM, "out of memory");
        return NULL;
    }
    for (size_t j = 0; j < nout; j++)
        if (idx[j] >= 0)
            M[(size_t)idx[j] * nout + j] = 1.0;
    veil_node_t *y = ox_linmap(m, x, ndim, dims, M);
    free(M);
    return y;
}

int ox_broadcast_shape(struct veil_onnx_model *m, int na, const size_t *a, int nb, const size_t *b,
                       int *nout, size_t *out)
{
    int n = na > nb ? na : nb;
    for (int i = 0; i < n; i++) {
        size_t da = i < n - na ? 1 : a[i - (n - na)], db = i < n - nb ? 1 : b[i - (n - nb)];
        if (da != db && da != 1 && db != 1)
            return ox_fail(m, VEIL_ERR_SHAPE,
                           "shapes do not broadcast (dimension %d: %zu and "
                           "%zu)",
                           i, da, db);
        out[i] = da == 1 ? db : da;
    }
    *nout = n;
    return 0;
}

long *ox_broadcast_index(int n, const size_t *d, int nout, const size_t *dout)
{
    size_t total = 1;
    for (int i = 0; i < nout; i++)
        total *= dout[i];
    long *idx = malloc((total ? total : 1) * sizeof *idx);
    if (!idx)
        return NULL;
    size_t o[VEIL_MAX_DIMS] = {0};
    for (size_t j = 0; j < total; j++) {
        long k = 0;
        for (int i = 0; i < n; i++) {
            size_t oi = o[nout - n + i];
            k = k * (long)d[i] + (long)(d[i] == 1 ? 0 : oi);
        }
        idx[j] = k;
        for (int i = nout - 1; i >= 0; i--) {
            if (++o[i] < dout[i])
                break;
            o[i] = 0;
        }
    }
    return idx;
}

long *ox_transpose_index(int n, const size_t *d, const int *perm, size_t *dout)
{
    size_t total = 1, stride[VEIL_MAX_DIMS];
    for (int i = n - 1; i >= 0; i--) {
        stride[i] = total;
        total *= d[i];
    }
    for (int i = 0; i < n; i++)
        dout[i] = d[perm[i]];
    long *idx = malloc((total ? total : 1) * sizeof *idx);
    if (!idx)
        return NULL;
    size_t o[VEIL_MAX_DIMS] = {0};
    for (size_t j = 0; j < total; j++) {
        size_t k = 0;
        for (int i = 0; i < n; i++)
            k += o[i] * stride[perm[i]];
        idx[j] = (long)k;
        for (int i = n - 1; i >= 0; i--) {
            if (++o[i] < dout[i])
                break;
            o[i] = 0;
        }
    }
    return idx;
}

veil_node_t *ox_broadcast(struct veil_onnx_model *m, struct ox_value *v, int ndim,
                          const size_t *dims)
{
    int same = v->ndim == ndim;
    for (int i = 0; i < ndim && same; i++)
        same = v->dims[i] == dims[i];
    if (same || (v->numel == 1 && ndim == 0))
        return ox_node(m, v);
    for (int i = 0; i < v->ndim; i++) { /* unidirectional: v's dims are 1 or the target's */
        size_t t = i < v->ndim - ndim ? 0 : dims[i - (v->ndim - ndim)];
        if (v->ndim > ndim || (v->dims[i] != 1 && v->dims[i] != t)) {
            ox_fail(m, VEIL_ERR_SHAPE, "'%.60s' does not broadcast to the %d-D result", v->name,
                    ndim);
            return NULL;
        }
    }
    long *idx = ox_broadcast_index(v->ndim, v->dims, ndim, dims);
    if (!idx) {
        ox_fail(m, VEIL_ERR_NOMEM, "out of memory");
        return NULL;
    }
    size_t total = 1, d[VEIL_MAX_DIMS];
    for (int i = 0; i < ndim; i++)
        total *= dims[i];
    veil_node_t *y = NULL;
    if (v->cval || (v->init >= 0 && v->is_int)) { /* public: expand the numbers */
        const double *c = ox_public(m, v);
        double *e = c ? malloc(total * sizeof *e) : NULL;
        if (e) {
            for (size_t j = 0; j < total; j++)
                e[j] = c[idx[j]];
            char b[64];
            int nd = ox_dsl_shape(ndim, dims, d);
            y = veil_constant(m->g, ox_name(m, NULL, b), nd, d, e);
            if (!y)
                ox_graph_fail(m);
        } else if (c) {
            ox_fail(m, VEIL_ERR_NOMEM, "out of memory");
        }
        free(e);
    } else if (v->init >= 0) { /* the model owner's: a parameter with the expanded values */
        double *c = NULL;
        if (ox_init_values(m, v->init, &c) == VEIL_OK) {
            m->usage[v->init] = OX_AS_PARAM;
            double *e = c ? malloc(total * sizeof *e) : NULL;
            if (e)
                for (size_t j = 0; j < total; j++)
                    e[j] = c[idx[j]];
            if (!c || e)
                y = ox_param(m, v->name, ndim, dims, e);
            else
                ox_fail(m, VEIL_ERR_NOMEM, "out of memory");
            free(e);
            free(c);
        }
    } else {
        y = ox_gather(m, ox_node(m, v), ndim, dims, idx);
    }
    free(idx);
    return y;
}

/*
 * ops_elem.c — the unary and constant ops: Identity, Dropout (inference), Relu, Neg, Exp,
 * Sigmoid, Tanh, Reciprocal, Sqrt (the DSL's ops, with their domains), Abs
 * (relu(x) + relu(-x)), LeakyRelu and PRelu with a public slope (relu(x) - a relu(-x)), Clip
 * (lo + relu(x - lo) - relu(x - hi): exact), Constant, ConstantOfShape and Shape (public numbers
 * computed at load).
 */
#include "config.h"

#include "onnx/onnx_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Identity, Dropout (inference: its mask output is refused), Relu, Neg, Abs, LeakyRelu. */
int ox_op_unary(struct veil_onnx_model *m, const Onnx__NodeProto *n, const char *op)
{
    struct ox_value *x = ox_in(m, n, 0);
    if (!x)
        return ox_fail(m, VEIL_ERR_FORMAT, "input 0 missing");
    char buf[64], b1[64], b2[64];
    const char *name = ox_out_name(m, n, 0, buf);
    if (!strcmp(op, "Dropout")) {
        if (n->n_output > 1 && n->output[1] && *n->output[1])
            return ox_fail(m, VEIL_ERR_UNSUPPORTED,
                           "the mask output is not computed "
                           "(inference only)");
        struct ox_value *tm = ox_in(m, n, 2);
        const double *t = tm ? ox_public(m, tm) : NULL;
        if ((tm && !t) || (t && t[0] != 0) || ox_attr_int(n, "is_test", 1) == 0)
            return ox_fail(m, VEIL_ERR_UNSUPPORTED,
                           "training mode is not supported (inference "
                           "only)");
    }
    if (!strcmp(op, "Identity") || !strcmp(op, "Dropout")) {
        if (ox_is_public(x)) {
            const double *c = ox_public(m, x);
            double *v = c ? malloc(x->numel * sizeof *v) : NULL;
            if (v)
                memcpy(v, c, x->numel * sizeof *v);
            return c ? ox_out_const(m, n, 0, x->ndim, x->dims, v, x->is_int) : VEIL_ERR_FORMAT;
        }
        return ox_out(m, n, 0, ox_node(m, x), x->ndim, x->dims);
    }
    veil_node_t *xn = ox_node(m, x), *y = NULL;
    if (!xn)
        return VEIL_ERR_FORMAT;
    if (!strcmp(op, "Relu")) {
        y = veil_relu(m->g, name, xn);
    } else if (!strcmp(op, "Neg")) {
        y = veil_scale(m->g, name, xn, -1.0);
    } else if (!strcmp(op, "Exp")) { /* the DSL's range: accurate on [-64, 0] (veil/graph.h) */
        y = veil_exp(m->g, name, xn);
    } else if (!strcmp(op, "Sigmoid")) { /* every accepted x, saturating (veil/graph.h) */
        y = veil_sigmoid(m->g, name, xn);
    } else if (!strcmp(op, "Tanh")) {
        y = veil_tanh(m->g, name, xn);
    } else if (!strcmp(op, "Reciprocal")) { /* x in [2^-16, 2^15) */
        y = veil_reciprocal(m->g, name, xn);
    } else if (!strcmp(op, "Sqrt")) { /* x in [2^-f, 2^15) */
        y = veil_sqrt(m->g, name, xn);
    } else if (!strcmp(op, "Abs")) { /* relu(x) + relu(-x) */
        y = veil_add(m->g, name, veil_relu(m->g, ox_name(m, NULL, b1), xn),
                     veil_relu(m->g, ox_name(m, NULL, b2),
                               veil_scale(m->g, ox_name(m, NULL, b2), xn, -1.0)));
    } else { /* LeakyRelu: relu(x) - alpha relu(-x) */
        double alpha = ox_attr_float(n, "alpha", 0.01);
        veil_node_t *neg =
            veil_relu(m->g, ox_name(m, NULL, b1), veil_scale(m->g, ox_name(m, NULL, b2), xn, -1.0));
        y = veil_add(m->g, name, veil_relu(m->g, ox_name(m, NULL, b2), xn),
                     veil_scale(m->g, ox_name(m, NULL, b1), neg, -alpha));
    }
    return ox_out(m, n, 0, y, x->ndim, x->dims);
}

/* PRelu with a public slope: relu(x) - slope * relu(-x). */
int ox_op_prelu(struct veil_onnx_model *m, const Onnx__NodeProto *n)
{
    struct ox_value *x = ox_in(m, n, 0), *s = ox_in(m, n, 1);
    if (!x || !s)
        return ox_fail(m, VEIL_ERR_FORMAT, "needs X and slope");
    const double *sv = ox_public(m, s);
    veil_node_t *xn = ox_node(m, x);
    if (!sv || !xn)
        return VEIL_ERR_FORMAT;
    int nd;
    size_t dims[VEIL_MAX_DIMS];
    if (ox_broadcast_shape(m, x->ndim, x->dims, s->ndim, s->dims, &nd, dims) != VEIL_OK)
        return VEIL_ERR_SHAPE;
    if (nd != x->ndim || memcmp(dims, x->dims, sizeof(size_t) * (size_t)nd))
        return ox_fail(m, VEIL_ERR_SHAPE, "slope must broadcast to X's shape");
    double *neg = malloc(s->numel * sizeof *neg);
    if (!neg)
        return ox_fail(m, VEIL_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < s->numel; i++)
        neg[i] = -sv[i];
    char b1[64], b2[64];
    veil_node_t *r =
        veil_relu(m->g, ox_name(m, NULL, b1), veil_scale(m->g, ox_name(m, NULL, b2), xn, -1.0));
    veil_node_t *t = r ? ox_mul_const(m, r, x->ndim, x->dims, neg, s->ndim, s->dims, NULL) : NULL;
    free(neg);
    veil_node_t *y =
        t ? veil_add(m->g, ox_out_name(m, n, 0, b1), veil_relu(m->g, ox_name(m, NULL, b2), xn), t)
          : NULL;
    return ox_out(m, n, 0, y, x->ndim, x->dims);
}

/* Clip(x, lo, hi) = lo + relu(x - lo) - relu(x - hi): exact. */
int ox_op_clip(struct veil_onnx_model *m, const Onnx__NodeProto *n)
{
    struct ox_value *x = ox_in(m, n, 0);
    if (!x)
        return ox_fail(m, VEIL_ERR_FORMAT, "input 0 missing");
    double lo = -INFINITY, hi = INFINITY;
    if (m->opset < 11) {
        lo = ox_attr_float(n, "min", -INFINITY);
        hi = ox_attr_float(n, "max", INFINITY);
    } else {
        struct ox_value *a = ox_in(m, n, 1), *b = ox_in(m, n, 2);
        const double *av = a ? ox_public(m, a) : NULL, *bv = b ? ox_public(m, b) : NULL;
        if ((a && !av) || (b && !bv))
            return VEIL_ERR_UNSUPPORTED;
        if (av)
            lo = av[0];
        if (bv)
            hi = bv[0];
    }
    veil_node_t *xn = ox_node(m, x);
    if (!xn)
        return VEIL_ERR_FORMAT;
    size_t d[VEIL_MAX_DIMS], total = x->numel;
    int nd = ox_dsl_shape(x->ndim, x->dims, d);
    double *c = malloc(total * sizeof *c);
    if (!c)
        return ox_fail(m, VEIL_ERR_NOMEM, "out of memory");
    char b1[64], b2[64], b3[64];
    veil_node_t *y = xn;
    if (lo > hi) { /* ONNX: every element becomes max */
        for (size_t i = 0; i < total; i++)
            c[i] = hi;
        y = veil_constant(m->g, ox_name(m, NULL, b1), nd, d, c);
        y = veil_reshape(m->g, ox_out_name(m, n, 0, b2), y, nd, d);
        free(c);
        return ox_out(m, n, 0, y, x->ndim, x->dims);
    }
    if (isfinite(hi)) { /* x - relu(x - hi) */
        for (size_t i = 0; i < total; i++)
            c[i] = -hi;
        veil_node_t *r = veil_relu(m->g, ox_name(m, NULL, b1),
                                   veil_add(m->g, ox_name(m, NULL, b2), y,
                                            veil_constant(m->g, ox_name(m, NULL, b3), nd, d, c)));
        y = veil_add(m->g, ox_name(m, NULL, b1), y, veil_scale(m->g, ox_name(m, NULL, b2), r, -1));
    }
    if (isfinite(lo)) { /* lo + relu(y - lo) */
        for (size_t i = 0; i < total; i++)
            c[i] = -lo;
        veil_node_t *r = veil_relu(m->g, ox_name(m, NULL, b1),
                                   veil_add(m->g, ox_name(m, NULL, b2), y,
                                            veil_constant(m->g, ox_name(m, NULL, b3), nd, d, c)));
        for (size_t i = 0; i < total; i++)
            c[i] = lo;
        y = veil_add(m->g, ox_name(m, NULL, b1), r,
                     veil_constant(m->g, ox_name(m, NULL, b3), nd, d, c));
    }
    free(c);
    y = veil_reshape(m->g, ox_out_name(m, n, 0, b1), y, nd, d);
    return ox_out(m, n, 0, y, x->ndim, x->dims);
}

/* Constant: value (tensor), value_float(s), value_int(s). */
int ox_op_constant(struct veil_onnx_model *m, const Onnx__NodeProto *n)
{
    const Onnx__AttributeProto *a;
    size_t one = 1;
    if ((a = ox_attr(n, "value")) && a->t) {
        double *v = NULL;
        int present = 1, nd;
        size_t dims[VEIL_MAX_DIMS], numel;
        char what[160];
        snprintf(what, sizeof what, "%s: Constant '%.100s'", m->path, n->output[0]);
        int rc = ox_tensor_shape(a->t, what, &nd, dims, &numel);
        if (rc == VEIL_OK)
            rc = ox_tensor_values(a->t, m->dir, what, &v, &present);
        if (rc != VEIL_OK)
            return rc;
        if (!present)
            return ox_fail(m, VEIL_ERR_FORMAT, "the constant tensor has no data");
        return ox_out_const(m, n, 0, nd, dims, v,
                            a->t->has_data_type && ox_is_int_type(a->t->data_type));
    }
    double *v;
    if ((a = ox_attr(n, "value_float")) && a->has_f) {
        if ((v = malloc(sizeof *v)))
            v[0] = a->f;
        return ox_out_const(m, n, 0, 0, &one, v, 0);
    }
    if ((a = ox_attr(n, "value_int")) && a->has_i) {
        if ((v = malloc(sizeof *v)))
            v[0] = (double)a->i;
        return ox_out_const(m, n, 0, 0, &one, v, 1);
    }
    if ((a = ox_attr(n, "value_floats")) || (a = ox_attr(n, "value_ints"))) {
        size_t k = a->n_floats ? a->n_floats : a->n_ints;
        if (!k)
            return ox_fail(m, VEIL_ERR_UNSUPPORTED, "empty constant");
        if ((v = malloc(k * sizeof *v)))
            for (size_t i = 0; i < k; i++)
                v[i] = a->n_floats ? a->floats[i] : (double)a->ints[i];
        return ox_out_const(m, n, 0, 1, &k, v, a->n_ints > 0);
    }
    return ox_fail(m, VEIL_ERR_UNSUPPORTED,
                   "only numeric value, value_float(s) and "
                   "value_int(s) constants are read");
}

int ox_op_shape(struct veil_onnx_model *m, const Onnx__NodeProto *n)
{
    struct ox_value *x = ox_in(m, n, 0);
    if (!x)
        return ox_fail(m, VEIL_ERR_FORMAT, "input 0 missing");
    int64_t r = x->ndim, s = ox_attr_int(n, "start", 0), e = ox_attr_int(n, "end", r);
    s = s < 0 ? s + r : s;
    e = e < 0 ? e + r : e;
    s = s < 0 ? 0 : s > r ? r : s;
    e = e < 0 ? 0 : e > r ? r : e;
    size_t k = e > s ? (size_t)(e - s) : 0;
    if (!k)
        return ox_fail(m, VEIL_ERR_UNSUPPORTED, "an empty shape");
    double *v = malloc(k * sizeof *v);
    for (size_t i = 0; v && i < k; i++)
        v[i] = (double)x->dims[s + (int64_t)i];
    return ox_out_const(m, n, 0, 1, &k, v, 1);
}

int ox_op_constant_of_shape(struct veil_onnx_model *m, const Onnx__NodeProto *n)
{
    size_t k, dims[VEIL_MAX_DIMS], total = 1;
    const double *s = ox_ints(m, n, 0, &k);
    if (!s)
        return VEIL_ERR_FORMAT;
    if (k > VEIL_MAX_DIMS)
        return ox_fail(m, VEIL_ERR_UNSUPPORTED, "rank %zu", k);
    for (size_t i = 0; i < k; i++) {
        if (!(s[i] >= 1) || s[i] > (double)(OX_MAX_NUMEL / total))
            return ox_fail(m, VEIL_ERR_UNSUPPORTED, "dimension %g", s[i]);
        dims[i] = (size_t)s[i];
        total *= dims[i];
    }
    double val = 0;
    int is_int = 0;
    const Onnx__AttributeProto *a = ox_attr(n, "value");
    if (a && a->t) {
        double *v;
        int present;
        if (ox_tensor_values(a->t, NULL, "ConstantOfShape value", &v, &present) != VEIL_OK)
            return VEIL_ERR_FORMAT;
        val = present && v ? v[0] : 0;
        is_int = a->t->has_data_type && ox_is_int_type(a->t->data_type);
        free(v);
    }
    double *v = malloc(total * sizeof *v);
    for (size_t i = 0; v && i < total; i++)
        v[i] = val;
    return ox_out_const(m, n, 0, (int)k, dims, v, is_int);
}

/* Erf(x / sqrt 2): the first step of GELU's pattern (ox_gelu_step finishes it). */
int ox_op_erf(struct veil_onnx_model *m, const Onnx__NodeProto *n)
{
    struct ox_value *u = ox_in(m, n, 0);
    if (!u)
        return ox_fail(m, VEIL_ERR_FORMAT, "input 0 missing");
    if (!u->src || fabs(u->factor - M_SQRT1_2) > 1e-4)
        return ox_fail(m, VEIL_ERR_UNSUPPORTED,
                       "Erf is imported only inside GELU's pattern x * "
                       "0.5 * (1 + erf(x / sqrt(2))); its input here is not x / sqrt(2)");
    struct ox_value *v = ox_define(m, n->output[0], u->ndim, u->dims, 0);
    if (!v)
        return VEIL_ERR_FORMAT;
    v->gelu = 1;
    v->gelu_x = u->src;
    return VEIL_OK;
}

static int gelu_def(struct veil_onnx_model *m, const Onnx__NodeProto *n, struct ox_value *p,
                    int stage)
{
    struct ox_value *v = ox_define(m, n->output[0], p->ndim, p->dims, 0);
    if (!v)
        return VEIL_ERR_FORMAT;
    v->gelu = stage;
    v->gelu_x = p->gelu_x;
    return VEIL_OK;
}

int ox_gelu_step(struct veil_onnx_model *m, const Onnx__NodeProto *n, int is_mul,
                 struct ox_value *a, struct ox_value *b, int *handled)
{
    *handled = 0;
    struct ox_value *p = a->gelu ? a : b, *o = a->gelu ? b : a;
    if (!p->gelu || o->gelu)
        return VEIL_OK;
    *handled = 1;
    const double *c = (o->cval || o->init >= 0) && o->numel == 1 ? ox_public(m, o) : NULL;
    char buf[64];
    if (!is_mul && p->gelu == 1 && c && fabs(c[0] - 1) < 1e-6) /* 1 + erf */
        return gelu_def(m, n, p, 2);
    if (is_mul && p->gelu == 2 && o->node == p->gelu_x) /* x (1 + erf) */
        return gelu_def(m, n, p, 3);
    int half = (is_mul && p->gelu == 3 && c && fabs(c[0] - 0.5) < 1e-6) ||
               (is_mul && p->gelu == 2 && o->src == p->gelu_x && fabs(o->factor - 0.5) < 1e-6);
    if (half) {
        size_t d[VEIL_MAX_DIMS];
        for (int i = 0; i < p->ndim; i++)
            d[i] = p->dims[i];
        return ox_out(m, n, 0, veil_gelu(m->g, ox_out_name(m, n, 0, buf), p->gelu_x), p->ndim, d);
    }
    return ox_fail(m, VEIL_ERR_UNSUPPORTED,
                   "Erf is imported only inside GELU's pattern x * 0.5 "
                   "* (1 + erf(x / sqrt(2))); this node does not continue it");
}

/* ArgMax / ArgMin (first index; select_last_index 1 is refused): the DSL's argmax over the last
 * axis, after moving the axis there; ArgMin is the argmax of -x. */
int ox_op_argmax(struct veil_onnx_model *m, const Onnx__NodeProto *n, int is_min)
{
    struct ox_value *x = ox_in(m, n, 0);
    if (!x || x->ndim < 1)
        return ox_fail(m, VEIL_ERR_FORMAT, "needs a tensor of rank 1 or more");
    if (ox_attr_int(n, "select_last_index", 0))
        return ox_fail(m, VEIL_ERR_UNSUPPORTED,
                       "select_last_index 1 (the DSL's argmax gives the "
                       "first maximum)");
    int a;
    if (ox_axis(m, ox_attr_int(n, "axis", 0), x->ndim, &a) != VEIL_OK)
        return VEIL_ERR_FORMAT;
    int keep = (int)ox_attr_int(n, "keepdims", 1), perm[VEIL_MAX_DIMS], k = 0, nd = 0;
    size_t td[VEIL_MAX_DIMS], od[VEIL_MAX_DIMS];
    for (int i = 0; i < x->ndim; i++)
        if (i != a)
            perm[k++] = i;
    perm[k] = a;
    for (int i = 0; i < x->ndim; i++)
        if (i != a || keep)
            od[nd++] = i == a ? 1 : x->dims[i];
    veil_node_t *xn = ox_node(m, x);
    if (!xn)
        return VEIL_ERR_FORMAT;
    char b1[64], b2[64];
    if (is_min && !(xn = veil_scale(m->g, ox_name(m, NULL, b1), xn, -1.0)))
        return ox_graph_fail(m);
    long *idx = ox_transpose_index(x->ndim, x->dims, perm, td);
    if (!idx)
        return ox_fail(m, VEIL_ERR_NOMEM, "out of memory");
    veil_node_t *t = ox_gather(m, xn, x->ndim, td, idx);
    free(idx);
    if (t && x->ndim == 1) {
        size_t d2[2] = {1, x->dims[0]};
        t = ox_reshape(m, t, 2, d2, NULL);
    }
    veil_node_t *y = t ? veil_argmax(m->g, ox_name(m, NULL, b1), t) : NULL;
    if (!y)
        return veil_graph_status(m->g) ? ox_graph_fail(m) : VEIL_ERR_FORMAT;
    return ox_out(m, n, 0, ox_reshape(m, y, nd, od, ox_out_name(m, n, 0, b2)), nd, od);
}

/* Cast: between real types the identity (fixed point holds every such value to 2^-f); public
 * numbers are converted at load (integers truncated, bools 0/1); a secret cast to an integer
 * type is refused. */
int ox_op_cast(struct veil_onnx_model *m, const Onnx__NodeProto *n)
{
    struct ox_value *x = ox_in(m, n, 0);
    if (!x)
        return ox_fail(m, VEIL_ERR_FORMAT, "input 0 missing");
    int to = (int)ox_attr_int(n, "to", 0), to_int = ox_is_int_type(to);
    if (to == ONNX__TENSOR_PROTO__DATA_TYPE__STRING || to == 0)
        return ox_fail(m, VEIL_ERR_UNSUPPORTED, "cast to type %d", to);
    if (ox_is_public(x)) {
        const double *c = ox_public(m, x);
        double *v = c ? malloc(x->numel * sizeof *v) : NULL;
        for (size_t i = 0; v && i < x->numel; i++)
            v[i] = to == ONNX__TENSOR_PROTO__DATA_TYPE__BOOL ? (c[i] != 0)
                   : to_int                                  ? trunc(c[i])
                                                             : c[i];
        return c ? ox_out_const(m, n, 0, x->ndim, x->dims, v, to_int) : VEIL_ERR_FORMAT;
    }
    if (to_int)
        return ox_fail(m, VEIL_ERR_UNSUPPORTED,
                       "a cast of a secret tensor to integer type %d "
                       "(rounding is not imported)",
                       to);
    return ox_out(m, n, 0, ox_node(m, x), x->ndim, x->dims);
}

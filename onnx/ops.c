/*
 * ops.c — importing one ONNX node: the table of supported op types and their dispatch, the
 * helpers every op file uses (inputs, attributes, defining outputs, products by public numbers),
 * and the binary elementwise ops with numpy broadcasting: Add, Sub, Mul and Div (by public
 * numbers), Sum, Mean, Max, Min (max(a, b) = b + relu(a - b): exact); public operands are folded
 * at load.
 */
#include "config.h"

#include "onnx/onnx_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct ox_value *ox_in(struct veil_onnx_model *m, const Onnx__NodeProto *n, size_t k)
{
    if (k >= n->n_input || !n->input[k] || !*n->input[k])
        return NULL;
    return ox_find(m, n->input[k]);
}

const Onnx__AttributeProto *ox_attr(const Onnx__NodeProto *n, const char *name)
{
    for (size_t i = 0; i < n->n_attribute; i++)
        if (n->attribute[i]->name && !strcmp(n->attribute[i]->name, name))
            return n->attribute[i];
    return NULL;
}

int64_t ox_attr_int(const Onnx__NodeProto *n, const char *name, int64_t def)
{
    const Onnx__AttributeProto *a = ox_attr(n, name);
    return a && a->has_i ? a->i : def;
}

double ox_attr_float(const Onnx__NodeProto *n, const char *name, double def)
{
    const Onnx__AttributeProto *a = ox_attr(n, name);
    return a && a->has_f ? a->f : def;
}

const int64_t *ox_attr_ints(const Onnx__NodeProto *n, const char *name, size_t *count)
{
    const Onnx__AttributeProto *a = ox_attr(n, name);
    *count = a ? a->n_ints : 0;
    return a ? a->ints : NULL;
}

const char *ox_out_name(struct veil_onnx_model *m, const Onnx__NodeProto *n, size_t k, char *buf)
{
    return ox_name(m, k < n->n_output ? n->output[k] : NULL, buf);
}

int ox_out(struct veil_onnx_model *m, const Onnx__NodeProto *n, size_t k, veil_node_t *node,
           int ndim, const size_t *dims)
{
    if (!node)
        return veil_graph_status(m->g) != 0 ? ox_graph_fail(m) : VEIL_ERR_INVAL;
    if (k >= n->n_output)
        return ox_fail(m, VEIL_ERR_FORMAT, "has no output %zu", k);
    size_t numel = 1;
    for (int i = 0; i < ndim; i++)
        numel *= dims[i];
    if (numel != veil_node_numel(node))
        return ox_fail(m, VEIL_ERR_SHAPE, "internal: output has %zu elements, shape says %zu",
                       veil_node_numel(node), numel);
    struct ox_value *v = ox_define(m, n->output[k], ndim, dims, 0);
    if (!v)
        return VEIL_ERR_FORMAT;
    v->node = node;
    if (k == 0)
        m->recs[m->nrecs - 1].result = node;
    return VEIL_OK;
}

int ox_out_const(struct veil_onnx_model *m, const Onnx__NodeProto *n, size_t k, int ndim,
                 const size_t *dims, double *vals, int is_int)
{
    if (!vals)
        return ox_fail(m, VEIL_ERR_NOMEM, "out of memory");
    struct ox_value *v = k < n->n_output ? ox_define(m, n->output[k], ndim, dims, is_int) : NULL;
    if (!v) {
        free(vals);
        return VEIL_ERR_FORMAT;
    }
    v->cval = vals;
    return VEIL_OK;
}

veil_node_t *ox_reshape(struct veil_onnx_model *m, veil_node_t *x, int ndim, const size_t *dims,
                        const char *name)
{
    size_t d[VEIL_MAX_DIMS];
    int nd = ox_dsl_shape(ndim, dims, d);
    char b[64];
    veil_node_t *y = veil_reshape(m->g, name ? name : ox_name(m, NULL, b), x, nd, d);
    if (!y)
        ox_graph_fail(m);
    return y;
}

int ox_axis(struct veil_onnx_model *m, int64_t axis, int ndim, int *out)
{
    if (axis < -(int64_t)ndim || axis >= (int64_t)(ndim ? ndim : 1))
        return ox_fail(m, VEIL_ERR_FORMAT, "axis %lld is out of range for rank %d", (long long)axis,
                       ndim);
    *out = (int)(axis < 0 ? axis + ndim : axis);
    return VEIL_OK;
}

const double *ox_ints(struct veil_onnx_model *m, const Onnx__NodeProto *n, size_t k, size_t *count)
{
    struct ox_value *v = ox_in(m, n, k);
    if (!v) {
        ox_fail(m, VEIL_ERR_FORMAT, "input %zu is missing", k);
        return NULL;
    }
    *count = v->numel;
    return ox_public(m, v);
}

veil_node_t *ox_mul_const(struct veil_onnx_model *m, veil_node_t *x, int ndim, const size_t *dims,
                          const double *c, int cnd, const size_t *cdims, const char *name)
{
    size_t cn = 1, n = 1;
    for (int i = 0; i < cnd; i++)
        cn *= cdims[i];
    for (int i = 0; i < ndim; i++)
        n *= dims[i];
    int uniform = 1;
    for (size_t i = 1; i < cn && uniform; i++)
        uniform = c[i] == c[0];
    char b[64];
    if (uniform) {
        veil_node_t *y = veil_scale(m->g, name ? name : ox_name(m, NULL, b), x, c[0]);
        if (!y)
            ox_graph_fail(m);
        return y;
    }
    long *idx = ox_broadcast_index(cnd, cdims, ndim, dims);
    if (!idx) {
        ox_fail(m, VEIL_ERR_NOMEM, "out of memory");
        return NULL;
    }
    veil_node_t *y = NULL;
    if (n > m->o.max_linmap / n) {
        ox_fail(m, VEIL_ERR_UNSUPPORTED,
                "an elementwise product of %zu elements by a public "
                "tensor would take a %zu x %zu diagonal matrix, more than max_linmap",
                n, n, n);
    } else {
        double *M = calloc(n * n, sizeof *M);
        if (M) {
            for (size_t j = 0; j < n; j++)
                M[j * n + j] = c[idx[j]];
            y = ox_linmap(m, x, ndim, dims, M);
        } else {
            ox_fail(m, VEIL_ERR_NOMEM, "out of memory");
        }
        free(M);
    }
    free(idx);
    return y;
}

/* ---- elementwise ---------------------------------------------------------------------------- */

int ox_is_public(const struct ox_value *v)
{
    return v->cval || (v->init >= 0 && v->is_int);
}

/* A multiplier: public numbers, or an initializer read as public numbers (kept by strip). */
static int can_pub(const struct ox_value *v)
{
    return v->cval || v->init >= 0;
}

/* A public constant node: v's numbers broadcast to (ndim, dims), times factor. */
static veil_node_t *pub_node(struct veil_onnx_model *m, struct ox_value *v, int ndim,
                             const size_t *dims, double factor)
{
    const double *c = ox_public(m, v);
    long *idx = c ? ox_broadcast_index(v->ndim, v->dims, ndim, dims) : NULL;
    size_t total = 1, d[VEIL_MAX_DIMS];
    for (int i = 0; i < ndim; i++)
        total *= dims[i];
    double *e = idx ? malloc(total * sizeof *e) : NULL;
    veil_node_t *y = NULL;
    if (e) {
        for (size_t j = 0; j < total; j++)
            e[j] = factor * c[idx[j]];
        char b[64];
        int nd = ox_dsl_shape(ndim, dims, d);
        if (!(y = veil_constant(m->g, ox_name(m, NULL, b), nd, d, e)))
            ox_graph_fail(m);
    } else if (c) {
        ox_fail(m, VEIL_ERR_NOMEM, "out of memory");
    }
    free(idx);
    free(e);
    return y;
}

enum { B_ADD, B_SUB, B_MUL, B_DIV, B_MAX, B_MIN };

static double fold(int kind, double a, double b, int is_int)
{
    switch (kind) {
    case B_DIV:
        return is_int ? trunc(a / b) : a / b;
    case B_ADD:
        return a + b;
    case B_SUB:
        return a - b;
    case B_MUL:
        return a * b;
    case B_MAX:
        return a > b ? a : b;
    default:
        return a < b ? a : b;
    }
}

/* a (kind) b with numpy broadcasting, into a new node (or public numbers via *cout). */
static int binary(struct veil_onnx_model *m, const Onnx__NodeProto *n, struct ox_value *a,
                  struct ox_value *b, int kind, veil_node_t **out, int *nd, size_t *dims,
                  double **cout, const char *name)
{
    *out = NULL;
    *cout = NULL;
    int rc = ox_broadcast_shape(m, a->ndim, a->dims, b->ndim, b->dims, nd, dims);
    if (rc != VEIL_OK)
        return rc;
    size_t total = 1;
    for (int i = 0; i < *nd; i++)
        total *= dims[i];
    if (ox_is_public(a) && ox_is_public(b)) {
        const double *ca = ox_public(m, a), *cb = ox_public(m, b);
        long *ia = ox_broadcast_index(a->ndim, a->dims, *nd, dims);
        long *ib = ox_broadcast_index(b->ndim, b->dims, *nd, dims);
        double *r = malloc(total * sizeof *r);
        if (ca && cb && ia && ib && r)
            for (size_t j = 0; j < total; j++)
                r[j] = fold(kind, ca[ia[j]], cb[ib[j]], a->is_int && b->is_int);
        free(ia);
        free(ib);
        if (!ca || !cb) {
            free(r);
            return VEIL_ERR_FORMAT;
        }
        *cout = r;
        return r ? VEIL_OK : ox_fail(m, VEIL_ERR_NOMEM, "out of memory");
    }
    char b1[64], b2[64];
    if (kind == B_MUL || kind == B_DIV) {
        struct ox_value *x = a, *c = b;
        if (kind == B_MUL && !can_pub(b) && can_pub(a))
            x = b, c = a;
        if (!can_pub(c))
            return ox_fail(m, VEIL_ERR_UNSUPPORTED,
                           "%s of two secret tensors ('%.60s', "
                           "'%.60s'): Veil multiplies only by public constants here",
                           kind == B_MUL ? "Mul" : "Div", a->name, b->name);
        const double *cv = ox_public(m, c);
        if (!cv)
            return VEIL_ERR_FORMAT;
        double *f = malloc(c->numel * sizeof *f);
        if (!f)
            return ox_fail(m, VEIL_ERR_NOMEM, "out of memory");
        for (size_t i = 0; i < c->numel; i++) {
            if (kind == B_DIV && cv[i] == 0) {
                free(f);
                return ox_fail(m, VEIL_ERR_INVAL, "division by zero");
            }
            f[i] = kind == B_DIV ? 1.0 / cv[i] : cv[i];
        }
        veil_node_t *xn = ox_broadcast(m, x, *nd, dims);
        *out = xn ? ox_mul_const(m, xn, *nd, dims, f, c->ndim, c->dims, name) : NULL;
        free(f);
        return *out ? VEIL_OK : VEIL_ERR_INVAL;
    }
    veil_node_t *an =
        ox_is_public(a) ? pub_node(m, a, *nd, dims, 1) : ox_broadcast(m, a, *nd, dims);
    veil_node_t *bn = NULL;
    if (kind == B_SUB || kind == B_MAX || kind == B_MIN) {
        bn = ox_is_public(b)
                 ? pub_node(m, b, *nd, dims, -1)
                 : veil_scale(m->g, ox_name(m, NULL, b1), ox_broadcast(m, b, *nd, dims), -1.0);
        if (kind == B_SUB) {
            *out = veil_add(m->g, name, an, bn);
        } else { /* max = b + relu(a - b); min = a - relu(a - b) */
            veil_node_t *r =
                veil_relu(m->g, ox_name(m, NULL, b1), veil_add(m->g, ox_name(m, NULL, b2), an, bn));
            if (kind == B_MAX) {
                veil_node_t *bp =
                    ox_is_public(b) ? pub_node(m, b, *nd, dims, 1) : ox_broadcast(m, b, *nd, dims);
                *out = veil_add(m->g, name, bp, r);
            } else {
                *out = veil_add(m->g, name, an, veil_scale(m->g, ox_name(m, NULL, b2), r, -1.0));
            }
        }
    } else {
        bn = ox_is_public(b) ? pub_node(m, b, *nd, dims, 1) : ox_broadcast(m, b, *nd, dims);
        *out = veil_add(m->g, name, an, bn);
    }
    return *out ? VEIL_OK : ox_graph_fail(m);
}

static int op_binary(struct veil_onnx_model *m, const Onnx__NodeProto *n, int kind)
{
    if (n->n_input < 1)
        return ox_fail(m, VEIL_ERR_FORMAT, "no inputs");
    if (n->n_input > 2 && kind != B_ADD && kind != B_MAX && kind != B_MIN)
        return ox_fail(m, VEIL_ERR_FORMAT, "%zu inputs; expected 2", n->n_input);
    struct ox_value *a = ox_in(m, n, 0);
    if (!a)
        return ox_fail(m, VEIL_ERR_FORMAT, "input 0 missing");
    if (n->n_input == 2 && ox_in(m, n, 1) && (kind == B_ADD || kind == B_MUL)) {
        int handled, rc = ox_gelu_step(m, n, kind == B_MUL, a, ox_in(m, n, 1), &handled);
        if (handled)
            return rc;
    }
    char buf[64];
    struct ox_value tmp; /* the running result of a chain (Sum, Max, Min of 3 or more) */
    double *held = NULL; /* its public numbers, owned here */
    for (size_t k = 1; k < n->n_input; k++) {
        struct ox_value *b = ox_in(m, n, k);
        if (!b) {
            free(held);
            return ox_fail(m, VEIL_ERR_FORMAT, "input %zu missing", k);
        }
        veil_node_t *y;
        int nd;
        size_t dims[VEIL_MAX_DIMS];
        double *c;
        const int last = k + 1 == n->n_input;
        int rc = binary(m, n, a, b, kind, &y, &nd, dims, &c,
                        last ? ox_out_name(m, n, 0, buf) : ox_name(m, NULL, buf));
        int is_int = a->is_int && b->is_int;
        free(held);
        held = NULL;
        if (rc != VEIL_OK)
            return rc;
        if (last) {
            rc = c ? ox_out_const(m, n, 0, nd, dims, c, is_int) : ox_out(m, n, 0, y, nd, dims);
            struct ox_value *o = rc == VEIL_OK && !c && (kind == B_MUL || kind == B_DIV)
                                     ? ox_find(m, n->output[0])
                                     : NULL;
            int swap = kind == B_MUL && !can_pub(b) && can_pub(a);
            struct ox_value *x = swap ? b : a, *f = swap ? a : b;
            if (o && f->numel == 1 && !x->gelu && x->node) { /* x times a number: for GELU */
                const double *fv = ox_public(m, f);
                o->src = x->node;
                o->factor = fv ? (kind == B_DIV ? 1.0 / fv[0] : fv[0]) : 0;
            }
            return rc;
        }
        memset(&tmp, 0, sizeof tmp);
        tmp.name = "(partial result)";
        tmp.ndim = nd;
        memcpy(tmp.dims, dims, sizeof dims);
        tmp.numel = 1;
        for (int i = 0; i < nd; i++)
            tmp.numel *= dims[i];
        tmp.init = -1;
        tmp.node = y;
        tmp.cval = held = c;
        tmp.is_int = is_int;
        a = &tmp;
    }
    /* one input: the identity */
    return ox_out(m, n, 0, ox_node(m, a), a->ndim, a->dims);
}

static int op_mean(struct veil_onnx_model *m, const Onnx__NodeProto *n)
{
    int rc = op_binary(m, n, B_ADD);
    if (rc != VEIL_OK || n->n_input < 2)
        return rc;
    struct ox_value *s = ox_find(m, n->output[0]);
    if (s->cval) {
        for (size_t i = 0; i < s->numel; i++)
            s->cval[i] /= (double)n->n_input;
        return VEIL_OK;
    }
    /* rename: the sum keeps the output's value entry, its node becomes the scaled one */
    char b[64];
    s->node = veil_scale(m->g, ox_name(m, NULL, b), s->node, 1.0 / (double)n->n_input);
    m->recs[m->nrecs - 1].result = s->node;
    return s->node ? VEIL_OK : ox_graph_fail(m);
}

/* ---- the table ------------------------------------------------------------------------------ */

/* clang-format off */
static const char *const supported[] = {
    "Abs", "Add", "ArgMax", "ArgMin", "AveragePool", "BatchNormalization", "Cast", "Clip",
    "Concat", "Constant", "ConstantOfShape", "Conv", "DepthToSpace", "Div", "Dropout",
    "Erf (in GELU's pattern)", "Exp", "Expand", "Flatten", "Gather", "Gemm", "GlobalAveragePool",
    "Identity", "LayerNormalization", "LeakyRelu", "MatMul", "Max", "MaxPool", "Mean", "Min",
    "Mul", "Neg", "Pad", "PRelu", "Reciprocal", "ReduceMax", "ReduceMean", "ReduceMin",
    "ReduceSum", "Relu", "Reshape", "Shape", "Sigmoid", "Slice", "Softmax", "SpaceToDepth",
    "Split", "Sqrt", "Squeeze", "Sub", "Sum", "Tanh", "Tile", "Transpose", "Unsqueeze", NULL};
/* clang-format on */

const char *veil_onnx_supported_ops(void)
{
    static char list[1024];
    if (!list[0])
        for (size_t i = 0; supported[i]; i++) {
            strcat(list, supported[i]);
            if (supported[i + 1])
                strcat(list, ", ");
        }
    return list;
}

static int nsupported(void)
{
    int k = 0;
    while (supported[k])
        k++;
    return k;
}

int ox_op_supported(const char *op)
{
    for (size_t i = 0; supported[i]; i++)
        if (!strcmp(op, supported[i]) || (!strcmp(op, "Erf") && !strncmp(supported[i], "Erf ", 4)))
            return 1;
    return 0;
}

/* One comparison per op type: a flat dispatch, long only because the table is. */
int ox_import_node(struct veil_onnx_model *m, const Onnx__NodeProto *n)
{
    const char *op = n->op_type ? n->op_type : "";
    m->recs[m->nrecs++] = (struct ox_node_rec){op, n->name ? n->name : "", NULL};
    if (n->domain && *n->domain && strcmp(n->domain, "ai.onnx"))
        return ox_fail(m, VEIL_ERR_UNSUPPORTED,
                       "domain '%.60s' is not supported (only ONNX's "
                       "default domain)",
                       n->domain);
    if (!ox_op_supported(op))
        return ox_fail(m, VEIL_ERR_UNSUPPORTED,
                       "op type %.60s is not supported (the %d op types Veil imports: "
                       "veil_onnx_supported_ops(), veil-onnx --help)",
                       op, nsupported());
    if (!n->n_output)
        return ox_fail(m, VEIL_ERR_FORMAT, "no outputs");
    for (size_t k = 1; k < n->n_output; k++)
        if (strcmp(op, "Split") && strcmp(op, "Dropout") && n->output[k] && *n->output[k])
            return ox_fail(m, VEIL_ERR_UNSUPPORTED,
                           "output %zu ('%.60s') is not computed by "
                           "Veil",
                           k, n->output[k]);
    if (!strcmp(op, "Add") || !strcmp(op, "Sum"))
        return op_binary(m, n, B_ADD);
    if (!strcmp(op, "Sub"))
        return op_binary(m, n, B_SUB);
    if (!strcmp(op, "Mul"))
        return op_binary(m, n, B_MUL);
    if (!strcmp(op, "Div"))
        return op_binary(m, n, B_DIV);
    if (!strcmp(op, "Max"))
        return op_binary(m, n, B_MAX);
    if (!strcmp(op, "Min"))
        return op_binary(m, n, B_MIN);
    if (!strcmp(op, "Mean"))
        return op_mean(m, n);
    if (!strcmp(op, "PRelu"))
        return ox_op_prelu(m, n);
    if (!strcmp(op, "Clip"))
        return ox_op_clip(m, n);
    if (!strcmp(op, "Constant"))
        return ox_op_constant(m, n);
    if (!strcmp(op, "ArgMax") || !strcmp(op, "ArgMin"))
        return ox_op_argmax(m, n, op[4] == 'i');
    if (!strcmp(op, "Cast"))
        return ox_op_cast(m, n);
    if (!strcmp(op, "Erf"))
        return ox_op_erf(m, n);
    if (!strcmp(op, "ConstantOfShape"))
        return ox_op_constant_of_shape(m, n);
    if (!strcmp(op, "Shape"))
        return ox_op_shape(m, n);
    if (!strcmp(op, "Gemm"))
        return ox_op_gemm(m, n);
    if (!strcmp(op, "MatMul"))
        return ox_op_matmul(m, n);
    if (!strcmp(op, "Conv"))
        return ox_op_conv(m, n);
    if (!strcmp(op, "MaxPool") || !strcmp(op, "AveragePool"))
        return ox_op_pool(m, n, op[0] == 'A');
    if (!strcmp(op, "GlobalAveragePool"))
        return ox_op_gap(m, n);
    if (!strcmp(op, "BatchNormalization"))
        return ox_op_batchnorm(m, n);
    if (!strcmp(op, "Softmax"))
        return ox_op_softmax(m, n);
    if (!strcmp(op, "LayerNormalization"))
        return ox_op_layernorm(m, n);
    if (!strcmp(op, "Reshape"))
        return ox_op_reshape(m, n, OX_RESHAPE);
    if (!strcmp(op, "Flatten"))
        return ox_op_reshape(m, n, OX_FLATTEN);
    if (!strcmp(op, "Squeeze"))
        return ox_op_reshape(m, n, OX_SQUEEZE);
    if (!strcmp(op, "Unsqueeze"))
        return ox_op_reshape(m, n, OX_UNSQUEEZE);
    if (!strcmp(op, "Transpose"))
        return ox_op_transpose(m, n);
    if (!strcmp(op, "Concat"))
        return ox_op_concat(m, n);
    if (!strcmp(op, "Slice"))
        return ox_op_slice(m, n);
    if (!strcmp(op, "Pad"))
        return ox_op_pad(m, n);
    if (!strcmp(op, "Gather"))
        return ox_op_gather(m, n);
    if (!strcmp(op, "Split"))
        return ox_op_split(m, n);
    if (!strcmp(op, "Tile"))
        return ox_op_tile(m, n);
    if (!strcmp(op, "Expand"))
        return ox_op_expand(m, n);
    if (!strcmp(op, "DepthToSpace") || !strcmp(op, "SpaceToDepth"))
        return ox_op_space(m, n, op[0] == 'S');
    if (!strcmp(op, "ReduceSum") || !strcmp(op, "ReduceMean") || !strcmp(op, "ReduceMax") ||
        !strcmp(op, "ReduceMin"))
        return ox_op_reduce(m, n, op[6] == 'S' ? 0 : op[7] == 'e' ? 1 : op[7] == 'a' ? 2 : 3);
    return ox_op_unary(m, n, op);
}

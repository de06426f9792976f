/*
 * ops_nn.c — the layers: Gemm and MatMul (dense or matmul layers; a weight initializer becomes a
 * parameter in the DSL's (in, out) layout, transposed and scaled by alpha at load), Conv (2-D,
 * group 1, dilation 1, equal strides; unequal padding by an explicit zero pad), MaxPool and
 * AveragePool (square windows, equal strides; AveragePool's padding either way of
 * count_include_pad), GlobalAveragePool, BatchNormalization (folded into the convolution or
 * dense layer before it), Softmax (the axis rule of the node's opset: before 13 the input is
 * coerced to 2-D at axis, from 13 one axis), LayerNormalization.
 */
#include "config.h"

#include "onnx/onnx_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* A weight matrix (k, n) from v: an initializer becomes a parameter with its values transposed
 * (trans) and scaled; anything else a node, transposed by the DSL. *scaled tells whether alpha
 * was folded. */
static veil_node_t *weight(struct veil_onnx_model *m, struct ox_value *v, int trans, double alpha,
                           int *scaled)
{
    *scaled = 0;
    if (v->ndim != 2) {
        ox_fail(m, VEIL_ERR_SHAPE, "'%.60s' must be 2-D", v->name);
        return NULL;
    }
    if (v->init >= 0 && !v->is_int && !v->cval) {
        double *vals = NULL;
        if (ox_init_values(m, v->init, &vals) != VEIL_OK)
            return NULL;
        m->usage[v->init] = OX_AS_PARAM;
        size_t r = v->dims[0], c = v->dims[1], d[2] = {trans ? c : r, trans ? r : c};
        double *w = vals ? malloc(r * c * sizeof *w) : NULL;
        if (vals && !w) {
            free(vals);
            ox_fail(m, VEIL_ERR_NOMEM, "out of memory");
            return NULL;
        }
        for (size_t i = 0; w && i < r; i++)
            for (size_t j = 0; j < c; j++)
                w[trans ? j * r + i : i * c + j] = alpha * vals[i * c + j];
        veil_node_t *p = ox_param(m, v->name, 2, d, w);
        free(vals);
        free(w);
        *scaled = 1;
        return p;
    }
    veil_node_t *x = ox_node(m, v);
    char b[64];
    if (x && trans && !(x = veil_transpose(m->g, ox_name(m, NULL, b), x)))
        ox_graph_fail(m);
    return x;
}

int ox_op_gemm(struct veil_onnx_model *m, const Onnx__NodeProto *n)
{
    struct ox_value *a = ox_in(m, n, 0), *b = ox_in(m, n, 1), *c = ox_in(m, n, 2);
    if (!a || !b)
        return ox_fail(m, VEIL_ERR_FORMAT, "needs A and B");
    int ta = (int)ox_attr_int(n, "transA", 0), tb = (int)ox_attr_int(n, "transB", 0);
    double alpha = ox_attr_float(n, "alpha", 1.0), beta = ox_attr_float(n, "beta", 1.0);
    if (a->ndim != 2 || b->ndim != 2)
        return ox_fail(m, VEIL_ERR_SHAPE, "A and B must be 2-D");
    size_t M = ta ? a->dims[1] : a->dims[0], K = ta ? a->dims[0] : a->dims[1];
    size_t K2 = tb ? b->dims[1] : b->dims[0], N = tb ? b->dims[0] : b->dims[1];
    if (K != K2)
        return ox_fail(m, VEIL_ERR_SHAPE, "A has %zu columns, B %zu rows (after transposes)", K,
                       K2);
    char buf[64], b1[64];
    int scaled;
    veil_node_t *an = ox_node(m, a);
    if (an && ta && !(an = veil_transpose(m->g, ox_name(m, NULL, b1), an)))
        return ox_graph_fail(m);
    veil_node_t *bn = an ? weight(m, b, tb, alpha, &scaled) : NULL;
    if (!bn)
        return VEIL_ERR_FORMAT;
    size_t od[2] = {M, N};
    veil_node_t *bias = NULL;
    /* C of shape (N) or (1, N), the model owner's: the dense layer's bias, times beta */
    int c_row = c && c->numel == N && (c->ndim == 1 || (c->ndim == 2 && c->dims[0] == 1));
    if (c && beta != 0 && c_row && c->init >= 0 && !c->is_int && scaled) {
        double *vals = NULL;
        if (ox_init_values(m, c->init, &vals) != VEIL_OK)
            return VEIL_ERR_FORMAT;
        m->usage[c->init] = OX_AS_PARAM;
        for (size_t i = 0; vals && i < N; i++)
            vals[i] *= beta;
        bias = ox_param(m, c->name, 1, &N, vals);
        free(vals);
        if (!bias)
            return VEIL_ERR_FORMAT;
    }
    int last = !(c && beta != 0 && !bias) && (scaled || alpha == 1.0);
    veil_node_t *y =
        veil_dense(m->g, last ? ox_out_name(m, n, 0, buf) : ox_name(m, NULL, buf), an, bn, bias);
    if (y && !scaled && alpha != 1.0)
        y = veil_scale(m->g,
                       c && beta != 0 && !bias ? ox_name(m, NULL, b1) : ox_out_name(m, n, 0, b1), y,
                       alpha);
    if (y && c && beta != 0 && !bias) {
        veil_node_t *cn = ox_broadcast(m, c, 2, od);
        if (cn && beta != 1.0)
            cn = veil_scale(m->g, ox_name(m, NULL, b1), cn, beta);
        if (!cn)
            return veil_graph_status(m->g) ? ox_graph_fail(m) : VEIL_ERR_SHAPE;
        y = veil_add(m->g, ox_out_name(m, n, 0, buf), y, cn);
    }
    return ox_out(m, n, 0, y, 2, od);
}

/* One 2-D product a (r, k) . b (k, c): dense when b is the model owner's initializer. */
static veil_node_t *product(struct veil_onnx_model *m, veil_node_t *a, struct ox_value *bv,
                            veil_node_t *bn, const char *name)
{
    int scaled;
    if (!bn && bv->init >= 0 && !bv->is_int) {
        veil_node_t *w = weight(m, bv, 0, 1.0, &scaled);
        return w ? veil_dense(m->g, name, a, w, NULL) : NULL;
    }
    if (!bn)
        bn = ox_node(m, bv);
    return bn ? veil_matmul(m->g, name, a, bn) : NULL;
}

int ox_op_matmul(struct veil_onnx_model *m, const Onnx__NodeProto *n)
{
    struct ox_value *a = ox_in(m, n, 0), *b = ox_in(m, n, 1);
    if (!a || !b)
        return ox_fail(m, VEIL_ERR_FORMAT, "needs A and B");
    if (a->ndim < 1 || b->ndim < 1)
        return ox_fail(m, VEIL_ERR_SHAPE, "scalars cannot be multiplied as matrices");
    size_t K = a->dims[a->ndim - 1], Kb = b->ndim == 1 ? b->dims[0] : b->dims[b->ndim - 2];
    size_t N = b->ndim == 1 ? 1 : b->dims[b->ndim - 1];
    if (K != Kb)
        return ox_fail(m, VEIL_ERR_SHAPE, "A's last dimension %zu differs from B's rows %zu", K,
                       Kb);
    /* output shape: batch dims of A (B 2-D), M, N, with 1-D operands' dimension dropped */
    int nd = 0;
    size_t od[VEIL_MAX_DIMS];
    char buf[64], b1[64];
    if (b->ndim <= 2) {
        for (int i = 0; i < a->ndim - 1; i++)
            od[nd++] = a->dims[i];
        if (b->ndim == 2)
            od[nd++] = N;
        size_t rows = a->numel / K, ad[2] = {rows, K}, bd[2] = {K, N};
        veil_node_t *an = ox_node(m, a), *bn = NULL;
        if (an && a->ndim != 2)
            an = ox_reshape(m, an, 2, ad, NULL);
        if (b->ndim == 1 && an) {
            bn = ox_node(m, b);
            bn = bn ? ox_reshape(m, bn, 2, bd, NULL) : NULL;
            if (!bn)
                return VEIL_ERR_FORMAT;
        }
        if (!an)
            return VEIL_ERR_FORMAT;
        int direct = a->ndim == 2 && b->ndim == 2;
        veil_node_t *y =
            product(m, an, b, bn, direct ? ox_out_name(m, n, 0, buf) : ox_name(m, NULL, buf));
        if (y && !direct)
            y = ox_reshape(m, y, nd, od, ox_out_name(m, n, 0, b1));
        return ox_out(m, n, 0, y, nd, od);
    }
    /* batched: B has 3 or more dimensions; one product per batch, gathered and concatenated */
    size_t M = a->ndim == 1 ? 1 : a->dims[a->ndim - 2];
    int abn = a->ndim > 2 ? a->ndim - 2 : 0, bbn = b->ndim - 2, bnd;
    size_t bdims[VEIL_MAX_DIMS];
    if (ox_broadcast_shape(m, abn, a->dims, bbn, b->dims, &bnd, bdims) != VEIL_OK)
        return VEIL_ERR_SHAPE;
    size_t batches = 1;
    for (int i = 0; i < bnd; i++)
        od[nd++] = bdims[i], batches *= bdims[i];
    if (a->ndim > 1)
        od[nd++] = M;
    od[nd++] = N;
    /* full operands broadcast to (batch..., M, K) and (batch..., K, N) */
    size_t fa[VEIL_MAX_DIMS], fb[VEIL_MAX_DIMS];
    memcpy(fa, bdims, sizeof(size_t) * (size_t)bnd);
    memcpy(fb, bdims, sizeof(size_t) * (size_t)bnd);
    fa[bnd] = M, fa[bnd + 1] = K, fb[bnd] = K, fb[bnd + 1] = N;
    size_t ad2[VEIL_MAX_DIMS];
    int and2 = a->ndim == 1 ? 2 : a->ndim;
    if (a->ndim == 1)
        ad2[0] = 1, ad2[1] = K;
    else
        memcpy(ad2, a->dims, sizeof ad2);
    long *ia = ox_broadcast_index(and2, ad2, bnd + 2, fa);
    long *ib = ox_broadcast_index(b->ndim, b->dims, bnd + 2, fb);
    long *sel = malloc((M * K > K * N ? M * K : K * N) * sizeof *sel);
    veil_node_t *an = ox_node(m, a), *bn = ox_node(m, b), *acc = NULL;
    int rc = ia && ib && sel ? VEIL_OK : ox_fail(m, VEIL_ERR_NOMEM, "out of memory");
    if (!an || !bn)
        rc = VEIL_ERR_FORMAT;
    for (size_t t = 0; t < batches && rc == VEIL_OK; t++) {
        size_t sa[2] = {M, K}, sb[2] = {K, N};
        for (size_t j = 0; j < M * K; j++)
            sel[j] = ia[t * M * K + j];
        veil_node_t *x = ox_gather(m, an, 2, sa, sel);
        for (size_t j = 0; j < K * N; j++)
            sel[j] = ib[t * K * N + j];
        veil_node_t *w = ox_gather(m, bn, 2, sb, sel);
        veil_node_t *y = x && w ? veil_matmul(m->g, ox_name(m, NULL, b1), x, w) : NULL;
        acc = !y ? NULL : acc ? veil_concat(m->g, ox_name(m, NULL, b1), acc, y, 0) : y;
        if (!acc)
            rc = veil_graph_status(m->g) ? ox_graph_fail(m) : VEIL_ERR_FORMAT;
    }
    free(ia);
    free(ib);
    free(sel);
    if (rc != VEIL_OK)
        return rc;
    return ox_out(m, n, 0, ox_reshape(m, acc, nd, od, ox_out_name(m, n, 0, buf)), nd, od);
}

/* Spatial padding (begin, end per axis) and output size of a 2-D window op. */
static int window(struct veil_onnx_model *m, const Onnx__NodeProto *n, const size_t *in,
                  const size_t *k, const size_t *s, size_t *pb, size_t *pe, int ceil_mode)
{
    size_t np;
    const int64_t *pads = ox_attr_ints(n, "pads", &np);
    const Onnx__AttributeProto *ap = ox_attr(n, "auto_pad");
    char mode[16] = "NOTSET";
    if (ap && ap->has_s && ap->s.len < sizeof mode) {
        memcpy(mode, ap->s.data, ap->s.len);
        mode[ap->s.len] = 0;
    }
    for (int i = 0; i < 2; i++) {
        pb[i] = pe[i] = 0;
        if (!strcmp(mode, "SAME_UPPER") || !strcmp(mode, "SAME_LOWER")) {
            size_t out = (in[i] + s[i] - 1) / s[i];
            size_t need = (out - 1) * s[i] + k[i], total = need > in[i] ? need - in[i] : 0;
            pb[i] = mode[5] == 'U' ? total / 2 : total - total / 2;
            pe[i] = total - pb[i];
        } else if (!strcmp(mode, "NOTSET") && np) {
            if (np != 4 || pads[i] < 0 || pads[i + 2] < 0 || pads[i] > 1024 || pads[i + 2] > 1024)
                return ox_fail(m, VEIL_ERR_UNSUPPORTED, "pads must be 4 values in 0..1024");
            pb[i] = (size_t)pads[i];
            pe[i] = (size_t)pads[i + 2];
        } else if (strcmp(mode, "NOTSET") && strcmp(mode, "VALID")) {
            return ox_fail(m, VEIL_ERR_FORMAT, "auto_pad '%s' unknown", mode);
        }
        if (in[i] + pb[i] + pe[i] < k[i])
            return ox_fail(m, VEIL_ERR_SHAPE, "window %zu is larger than the padded input %zu",
                           k[i], in[i] + pb[i] + pe[i]);
        size_t span = in[i] + pb[i] + pe[i] - k[i];
        if (ceil_mode && span % s[i])
            return ox_fail(m, VEIL_ERR_UNSUPPORTED,
                           "ceil_mode 1 where it changes the output "
                           "size");
    }
    return VEIL_OK;
}

/* Explicit zero padding of NCHW x: (pb, pe) on H and W. */
static veil_node_t *zero_pad(struct veil_onnx_model *m, veil_node_t *x, const size_t *d,
                             const size_t *pb, const size_t *pe, size_t *od)
{
    od[0] = d[0], od[1] = d[1], od[2] = d[2] + pb[0] + pe[0], od[3] = d[3] + pb[1] + pe[1];
    size_t total = od[0] * od[1] * od[2] * od[3];
    long *idx = malloc(total * sizeof *idx);
    if (!idx) {
        ox_fail(m, VEIL_ERR_NOMEM, "out of memory");
        return NULL;
    }
    size_t j = 0;
    for (size_t b = 0; b < od[0] * od[1]; b++)
        for (size_t h = 0; h < od[2]; h++)
            for (size_t w = 0; w < od[3]; w++, j++) {
                long ih = (long)h - (long)pb[0], iw = (long)w - (long)pb[1];
                idx[j] = ih < 0 || iw < 0 || ih >= (long)d[2] || iw >= (long)d[3]
                             ? -1
                             : (long)((b * d[2] + (size_t)ih) * d[3] + (size_t)iw);
            }
    veil_node_t *y = ox_gather(m, x, 4, od, idx);
    free(idx);
    return y;
}

int ox_op_conv(struct veil_onnx_model *m, const Onnx__NodeProto *n)
{
    struct ox_value *x = ox_in(m, n, 0), *w = ox_in(m, n, 1), *b = ox_in(m, n, 2);
    if (!x || !w)
        return ox_fail(m, VEIL_ERR_FORMAT, "needs X and W");
    if (x->ndim != 4 || w->ndim != 4)
        return ox_fail(m, VEIL_ERR_UNSUPPORTED,
                       "only 2-D convolutions (NCHW input, OIHW "
                       "weight) are supported");
    if (ox_attr_int(n, "group", 1) != 1)
        return ox_fail(m, VEIL_ERR_UNSUPPORTED, "group %lld; only group 1 is supported",
                       (long long)ox_attr_int(n, "group", 1));
    size_t nd_, ns;
    const int64_t *dil = ox_attr_ints(n, "dilations", &nd_), *st = ox_attr_ints(n, "strides", &ns);
    for (size_t i = 0; i < nd_; i++)
        if (dil[i] != 1)
            return ox_fail(m, VEIL_ERR_UNSUPPORTED, "dilation %lld; only 1 is supported",
                           (long long)dil[i]);
    size_t s[2] = {ns == 2 ? (size_t)st[0] : 1, ns == 2 ? (size_t)st[1] : 1};
    if (ns && (ns != 2 || st[0] < 1 || st[0] != st[1] || st[0] > 1024))
        return ox_fail(m, VEIL_ERR_UNSUPPORTED, "strides must be equal (square), 1..1024");
    size_t k[2] = {w->dims[2], w->dims[3]}, pb[2], pe[2];
    if (w->dims[1] != x->dims[1])
        return ox_fail(m, VEIL_ERR_SHAPE, "X has %zu channels, W expects %zu", x->dims[1],
                       w->dims[1]);
    int rc = window(m, n, x->dims + 2, k, s, pb, pe, 0);
    if (rc != VEIL_OK)
        return rc;
    veil_node_t *xn = ox_node(m, x), *wn = ox_node(m, w), *bn = b ? ox_node(m, b) : NULL;
    if (!xn || !wn || (b && !bn))
        return VEIL_ERR_FORMAT;
    int pad = (int)pb[0];
    if (pb[0] != pe[0] || pb[1] != pe[1] || pb[0] != pb[1] || pb[0] >= k[0] || pb[0] >= k[1]) {
        size_t pd[4];
        if (!(xn = zero_pad(m, xn, x->dims, pb, pe, pd)))
            return VEIL_ERR_UNSUPPORTED;
        pad = 0;
    }
    char buf[64];
    veil_node_t *y = veil_conv2d(m->g, ox_out_name(m, n, 0, buf), xn, wn, bn, (int)s[0], pad);
    if (!y)
        return ox_graph_fail(m);
    size_t od[4];
    for (int i = 0; i < 4; i++)
        od[i] = veil_node_dim(y, i);
    return ox_out(m, n, 0, y, 4, od);
}

int ox_op_pool(struct veil_onnx_model *m, const Onnx__NodeProto *n, int is_avg)
{
    struct ox_value *x = ox_in(m, n, 0);
    if (!x)
        return ox_fail(m, VEIL_ERR_FORMAT, "input 0 missing");
    if (n->n_output > 1 && n->output[1] && *n->output[1])
        return ox_fail(m, VEIL_ERR_UNSUPPORTED, "the Indices output is not computed");
    size_t nk, ns, ndl;
    const int64_t *ks = ox_attr_ints(n, "kernel_shape", &nk), *st = ox_attr_ints(n, "strides", &ns);
    const int64_t *dil = ox_attr_ints(n, "dilations", &ndl);
    if (x->ndim != 4 || nk != 2)
        return ox_fail(m, VEIL_ERR_UNSUPPORTED, "only 2-D pooling (NCHW) is supported");
    if (ks[0] != ks[1] || ks[0] < 1 || ks[0] > 1024)
        return ox_fail(m, VEIL_ERR_UNSUPPORTED, "window %lldx%lld; only square windows",
                       (long long)ks[0], (long long)ks[1]);
    for (size_t i = 0; i < ndl; i++)
        if (dil[i] != 1)
            return ox_fail(m, VEIL_ERR_UNSUPPORTED, "dilations other than 1");
    if (ns && (ns != 2 || st[0] != st[1] || st[0] < 1 || st[0] > 1024))
        return ox_fail(m, VEIL_ERR_UNSUPPORTED, "strides must be equal (square), 1..1024");
    size_t k[2] = {(size_t)ks[0], (size_t)ks[1]},
           s[2] = {ns ? (size_t)st[0] : 1, ns ? (size_t)st[0] : 1};
    size_t pb[2], pe[2];
    int rc = window(m, n, x->dims + 2, k, s, pb, pe, (int)ox_attr_int(n, "ceil_mode", 0));
    if (rc != VEIL_OK)
        return rc;
    int padded = pb[0] || pb[1] || pe[0] || pe[1];
    if (padded && !is_avg)
        return ox_fail(m, VEIL_ERR_UNSUPPORTED,
                       "MaxPool with padding (its -inf padding has no "
                       "exact fixed-point form)");
    veil_node_t *xn = ox_node(m, x);
    if (!xn)
        return VEIL_ERR_FORMAT;
    size_t pd[4] = {x->dims[0], x->dims[1], x->dims[2], x->dims[3]};
    if (padded && !(xn = zero_pad(m, xn, x->dims, pb, pe, pd)))
        return VEIL_ERR_UNSUPPORTED;
    int exclude = padded && !ox_attr_int(n, "count_include_pad", 0);
    char buf[64];
    const char *name = exclude ? ox_name(m, NULL, buf) : ox_out_name(m, n, 0, buf);
    veil_node_t *y = is_avg ? veil_avgpool2d(m->g, name, xn, (int)k[0], (int)s[0])
                            : veil_maxpool2d(m->g, name, xn, (int)k[0], (int)s[0]);
    if (!y)
        return ox_graph_fail(m);
    size_t od[4];
    for (int i = 0; i < 4; i++)
        od[i] = veil_node_dim(y, i);
    if (exclude) { /* rescale each window by k^2 / (its elements inside the input) */
        double *c = malloc(od[2] * od[3] * sizeof *c);
        if (!c)
            return ox_fail(m, VEIL_ERR_NOMEM, "out of memory");
        for (size_t i = 0; i < od[2]; i++)
            for (size_t j = 0; j < od[3]; j++) {
                long h0 = (long)(i * s[0]) - (long)pb[0], w0 = (long)(j * s[1]) - (long)pb[1];
                long h1 = h0 + (long)k[0], w1 = w0 + (long)k[1];
                h0 = h0 < 0 ? 0 : h0, w0 = w0 < 0 ? 0 : w0;
                h1 = h1 > (long)x->dims[2] ? (long)x->dims[2] : h1;
                w1 = w1 > (long)x->dims[3] ? (long)x->dims[3] : w1;
                c[i * od[3] + j] = (double)(k[0] * k[1]) / (double)((h1 - h0) * (w1 - w0));
            }
        y = ox_mul_const(m, y, 4, od, c, 2, od + 2, ox_out_name(m, n, 0, buf));
        free(c);
    }
    return ox_out(m, n, 0, y, 4, od);
}

int ox_op_gap(struct veil_onnx_model *m, const Onnx__NodeProto *n)
{
    struct ox_value *x = ox_in(m, n, 0);
    if (!x || x->ndim != 4)
        return ox_fail(m, VEIL_ERR_UNSUPPORTED, "only NCHW input is supported");
    char b[64];
    veil_node_t *xn = ox_node(m, x);
    veil_node_t *y = xn ? veil_global_avgpool(m->g, ox_name(m, NULL, b), xn) : NULL;
    size_t od[4] = {x->dims[0], x->dims[1], 1, 1};
    if (!y)
        return veil_graph_status(m->g) ? ox_graph_fail(m) : VEIL_ERR_FORMAT;
    return ox_out(m, n, 0, ox_reshape(m, y, 4, od, ox_out_name(m, n, 0, b)), 4, od);
}

static const char *op_of(struct ox_value *v)
{
    return v->node ? veil_node_op(v->node) : "";
}

int ox_op_batchnorm(struct veil_onnx_model *m, const Onnx__NodeProto *n)
{
    struct ox_value *in[5];
    for (size_t i = 0; i < 5; i++)
        if (!(in[i] = ox_in(m, n, i)))
            return ox_fail(m, VEIL_ERR_FORMAT, "needs X, scale, B, mean and var");
    struct ox_value *x = in[0];
    if (ox_attr_int(n, "training_mode", 0) || (m->opset < 9 && !ox_attr_int(n, "spatial", 1)))
        return ox_fail(m, VEIL_ERR_UNSUPPORTED, "only inference with per-channel statistics");
    if (x->ndim < 2)
        return ox_fail(m, VEIL_ERR_SHAPE, "X must have a channel axis");
    size_t C = x->dims[1];
    for (int i = 1; i < 5; i++)
        if (in[i]->numel != C)
            return ox_fail(m, VEIL_ERR_SHAPE, "'%.60s' has %zu values, X has %zu channels",
                           in[i]->name, in[i]->numel, C);
    double eps = ox_attr_float(n, "epsilon", 1e-5);
    char buf[64];
    int all_init = 1, all_public = 1;
    for (int i = 1; i < 5; i++) {
        all_init &= in[i]->init >= 0 && !in[i]->cval && !in[i]->is_int;
        all_public &= in[i]->cval != NULL;
    }
    veil_node_t *xn = ox_node(m, x);
    if (!xn)
        return VEIL_ERR_FORMAT;
    if (all_init && (!strcmp(op_of(x), "conv2d") || !strcmp(op_of(x), "dense")) &&
        (x->ndim == 2 || x->ndim == 4)) {
        veil_node_t *p[4];
        for (int i = 0; i < 4; i++) {
            double *v = NULL;
            if (ox_init_values(m, in[i + 1]->init, &v) != VEIL_OK)
                return VEIL_ERR_FORMAT;
            m->usage[in[i + 1]->init] = OX_AS_PARAM;
            p[i] = ox_param(m, in[i + 1]->name, 1, &C, v);
            free(v);
            if (!p[i])
                return VEIL_ERR_FORMAT;
        }
        veil_node_t *y =
            veil_batchnorm(m->g, ox_out_name(m, n, 0, buf), xn, p[0], p[1], p[2], p[3], eps);
        return ox_out(m, n, 0, y, x->ndim, x->dims);
    }
    if (!all_public)
        return ox_fail(m, VEIL_ERR_UNSUPPORTED,
                       "batch normalisation is folded into the "
                       "convolution or dense layer before it, with its statistics as "
                       "initializers; here X comes from a '%s' node or the statistics are not "
                       "initializers",
                       *op_of(x) ? op_of(x) : "graph input");
    size_t cd[VEIL_MAX_DIMS];
    cd[0] = C;
    for (int i = 1; i < x->ndim - 1; i++)
        cd[i] = 1;
    double *a = malloc(C * sizeof *a), *b = malloc(x->numel * sizeof *b);
    if (!a || !b) {
        free(a);
        free(b);
        return ox_fail(m, VEIL_ERR_NOMEM, "out of memory");
    }
    size_t inner = x->numel / x->dims[0] / C;
    for (size_t c = 0; c < C; c++)
        a[c] = in[1]->cval[c] / sqrt(in[4]->cval[c] + eps);
    for (size_t i = 0; i < x->numel; i++) {
        size_t c = (i / inner) % C;
        b[i] = in[2]->cval[c] - in[3]->cval[c] * a[c];
    }
    veil_node_t *y = ox_mul_const(m, xn, x->ndim, x->dims, a, x->ndim - 1, cd, NULL);
    size_t d[VEIL_MAX_DIMS];
    int nd = ox_dsl_shape(x->ndim, x->dims, d);
    char b1[64];
    y = y ? veil_add(m->g, ox_out_name(m, n, 0, buf), y,
                     veil_constant(m->g, ox_name(m, NULL, b1), nd, d, b))
          : NULL;
    free(a);
    free(b);
    return ox_out(m, n, 0, y, x->ndim, x->dims);
}

int ox_op_softmax(struct veil_onnx_model *m, const Onnx__NodeProto *n)
{
    struct ox_value *x = ox_in(m, n, 0);
    if (!x || x->ndim < 1)
        return ox_fail(m, VEIL_ERR_FORMAT, "needs a tensor input");
    int a, rc = ox_axis(m, ox_attr_int(n, "axis", m->opset < 13 ? 1 : -1), x->ndim, &a);
    if (rc != VEIL_OK)
        return rc;
    veil_node_t *xn = ox_node(m, x), *y;
    if (!xn)
        return VEIL_ERR_FORMAT;
    char buf[64], b1[64];
    if (a == x->ndim - 1)
        return ox_out(m, n, 0, veil_softmax(m->g, ox_out_name(m, n, 0, buf), xn), x->ndim, x->dims);
    if (m->opset < 13) { /* coerced to 2-D: (prod dims[:a], prod dims[a:]) */
        size_t d2[2] = {1, 1};
        for (int i = 0; i < x->ndim; i++)
            d2[i >= a] *= x->dims[i];
        y = ox_reshape(m, xn, 2, d2, NULL);
        y = y ? veil_softmax(m->g, ox_name(m, NULL, b1), y) : NULL;
        y = y ? ox_reshape(m, y, x->ndim, x->dims, ox_out_name(m, n, 0, buf)) : NULL;
        return ox_out(m, n, 0, y, x->ndim, x->dims);
    }
    int perm[VEIL_MAX_DIMS], inv[VEIL_MAX_DIMS], k = 0;
    for (int i = 0; i < x->ndim; i++)
        if (i != a)
            perm[k++] = i;
    perm[k] = a;
    for (int i = 0; i < x->ndim; i++)
        inv[perm[i]] = i;
    size_t td[VEIL_MAX_DIMS], bd[VEIL_MAX_DIMS];
    long *fwd = ox_transpose_index(x->ndim, x->dims, perm, td);
    long *back = ox_transpose_index(x->ndim, td, inv, bd);
    y = fwd && back ? ox_gather(m, xn, x->ndim, td, fwd) : NULL;
    y = y ? veil_softmax(m->g, ox_name(m, NULL, b1), y) : NULL;
    y = y ? ox_gather(m, y, x->ndim, bd, back) : NULL;
    y = y ? ox_reshape(m, y, x->ndim, bd, ox_out_name(m, n, 0, buf)) : NULL;
    free(fwd);
    free(back);
    if (!y && veil_graph_status(m->g) == VEIL_OK && (!fwd || !back))
        return ox_fail(m, VEIL_ERR_NOMEM, "out of memory");
    return ox_out(m, n, 0, y, x->ndim, x->dims);
}

int ox_op_layernorm(struct veil_onnx_model *m, const Onnx__NodeProto *n)
{
    struct ox_value *x = ox_in(m, n, 0), *s = ox_in(m, n, 1), *b = ox_in(m, n, 2);
    if (!x || !s || x->ndim < 1)
        return ox_fail(m, VEIL_ERR_FORMAT, "needs X and Scale");
    int a, rc = ox_axis(m, ox_attr_int(n, "axis", -1), x->ndim, &a);
    if (rc != VEIL_OK)
        return rc;
    size_t D = 1;
    for (int i = a; i < x->ndim; i++)
        D *= x->dims[i];
    if (s->numel != D || (b && b->numel != D))
        return ox_fail(m, VEIL_ERR_SHAPE,
                       "Scale and B must have the %zu elements of the "
                       "normalised axes",
                       D);
    veil_node_t *xn = ox_node(m, x), *g = ox_node(m, s), *bn = NULL;
    if (!xn || !g)
        return VEIL_ERR_FORMAT;
    char buf[64], b1[64];
    if (b) {
        bn = ox_node(m, b);
    } else {
        double *z = calloc(D, sizeof *z);
        bn = z ? veil_constant(m->g, ox_name(m, NULL, b1), 1, &D, z) : NULL;
        free(z);
    }
    if (g && veil_node_ndim(g) != 1)
        g = ox_reshape(m, g, 1, &D, NULL);
    if (bn && veil_node_ndim(bn) != 1)
        bn = ox_reshape(m, bn, 1, &D, NULL);
    double eps = ox_attr_float(n, "epsilon", 1e-5);
    if (a == x->ndim - 1)
        return ox_out(m, n, 0, veil_layernorm(m->g, ox_out_name(m, n, 0, buf), xn, g, bn, eps),
                      x->ndim, x->dims);
    size_t d2[2] = {x->numel / D, D};
    veil_node_t *y = ox_reshape(m, xn, 2, d2, NULL);
    y = y ? veil_layernorm(m->g, ox_name(m, NULL, b1), y, g, bn, eps) : NULL;
    y = y ? ox_reshape(m, y, x->ndim, x->dims, ox_out_name(m, n, 0, buf)) : NULL;
    return ox_out(m, n, 0, y, x->ndim, x->dims);
}

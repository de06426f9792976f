/*
 * ops_move.c — ops that pick elements by position, each an index map over the output's
 * positions (ops_shape.c's ox_move turns it into a gather, or computes it on public inputs):
 * Slice (opset 10's inputs or the older attributes, negative steps, ONNX's clamping), Pad
 * (constant, reflect, edge; negative pads crop), Gather (public indices), Split, Tile, Expand,
 * DepthToSpace (DCR and CRD), SpaceToDepth; and the linear reductions ReduceSum and ReduceMean
 * (one product by a public matrix of ones, or 1/count).
 */
#include "config.h"

#include "onnx/onnx_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Maps every output position o (row-major over od) to an input position, via f (-1: none). */
typedef long (*pos_fn)(const size_t *o, const size_t *in, void *ctx);

static long *index_map(int ond, const size_t *od, int ind, const size_t *id, pos_fn f, void *ctx)
{
    size_t total = 1;
    for (int i = 0; i < ond; i++)
        total *= od[i];
    long *idx = malloc((total ? total : 1) * sizeof *idx);
    size_t o[VEIL_MAX_DIMS] = {0}, ip[VEIL_MAX_DIMS];
    (void)ind;
    for (size_t j = 0; idx && j < total; j++) {
        long k = f(o, ip, ctx);
        idx[j] = k;
        for (int i = ond - 1; i >= 0; i--) {
            if (++o[i] < od[i])
                break;
            o[i] = 0;
        }
    }
    (void)id;
    return idx;
}

static long flat(int nd, const size_t *d, const size_t *p)
{
    long k = 0;
    for (int i = 0; i < nd; i++)
        k = k * (long)d[i] + (long)p[i];
    return k;
}

/* ---- Slice, Pad, Tile, Expand: per-axis maps ---- */
struct axis_ctx {
    int nd;
    const size_t *d;
    long start[VEIL_MAX_DIMS], step[VEIL_MAX_DIMS];
    int mode; /* 0 affine (slice), 1 pad constant, 2 reflect, 3 edge, 4 modulo (tile), 5 bcast */
};

static long axis_pos(const size_t *o, const size_t *in, void *vctx)
{
    struct axis_ctx *c = vctx;
    size_t *p = (size_t *)in;
    for (int i = 0; i < c->nd; i++) {
        long d = (long)c->d[i], v;
        if (c->mode == 4)
            v = (long)o[i] % d;
        else if (c->mode == 5)
            v = d == 1 ? 0 : (long)o[i];
        else
            v = c->start[i] + (long)o[i] * c->step[i];
        if (c->mode == 2 && d > 1) {
            long period = 2 * (d - 1);
            v = ((v % period) + period) % period;
            v = v >= d ? period - v : v;
        } else if (c->mode == 2 || c->mode == 3) {
            v = v < 0 ? 0 : v >= d ? d - 1 : v;
        }
        if (v < 0 || v >= d)
            return -1;
        p[i] = (size_t)v;
    }
    return flat(c->nd, c->d, p);
}

int ox_op_slice(struct veil_onnx_model *m, const Onnx__NodeProto *n)
{
    struct ox_value *x = ox_in(m, n, 0);
    if (!x || x->ndim < 1)
        return ox_fail(m, VEIL_ERR_FORMAT, "needs a tensor of rank 1 or more");
    size_t ns, ne, na = 0, nt = 0;
    const double *s = NULL, *e = NULL, *a = NULL, *t = NULL;
    double buf[4][VEIL_MAX_DIMS];
    if (m->opset < 10) {
        const int64_t *as = ox_attr_ints(n, "starts", &ns), *ae = ox_attr_ints(n, "ends", &ne);
        const int64_t *aa = ox_attr_ints(n, "axes", &na);
        if (ns > VEIL_MAX_DIMS || ne != ns || (na && na != ns))
            return ox_fail(m, VEIL_ERR_FORMAT, "starts, ends and axes differ in length");
        for (size_t i = 0; i < ns; i++)
            buf[0][i] = (double)as[i], buf[1][i] = (double)ae[i],
            buf[2][i] = na ? (double)aa[i] : (double)i;
        s = buf[0], e = buf[1], a = buf[2];
        na = ns;
    } else {
        s = ox_ints(m, n, 1, &ns);
        e = s ? ox_ints(m, n, 2, &ne) : NULL;
        if (!s || !e)
            return VEIL_ERR_FORMAT;
        if (ox_in(m, n, 3) && !(a = ox_ints(m, n, 3, &na)))
            return VEIL_ERR_FORMAT;
        if (ox_in(m, n, 4) && !(t = ox_ints(m, n, 4, &nt)))
            return VEIL_ERR_FORMAT;
        if (ne != ns || (a && na != ns) || (t && nt != ns) || ns > VEIL_MAX_DIMS)
            return ox_fail(m, VEIL_ERR_FORMAT, "starts, ends, axes and steps differ in length");
    }
    struct axis_ctx c = {.nd = x->ndim, .d = x->dims, .mode = 0};
    size_t od[VEIL_MAX_DIMS];
    for (int i = 0; i < x->ndim; i++)
        c.start[i] = 0, c.step[i] = 1, od[i] = x->dims[i];
    for (size_t k = 0; k < ns; k++) {
        int ax;
        if (ox_axis(m, a ? (int64_t)a[k] : (int64_t)k, x->ndim, &ax) != VEIL_OK)
            return VEIL_ERR_FORMAT;
        double d = (double)x->dims[ax], st = t ? t[k] : 1, b = s[k], en = e[k];
        if (st == 0 || !isfinite(st))
            return ox_fail(m, VEIL_ERR_FORMAT, "step 0");
        b = b < 0 ? b + d : b;
        en = en < 0 ? en + d : en;
        if (st > 0) {
            b = fmin(fmax(b, 0), d);
            en = fmin(fmax(en, 0), d);
        } else {
            b = fmin(fmax(b, 0), d - 1);
            en = fmin(fmax(en, -1), d - 1);
        }
        double cnt = st > 0 ? ceil((en - b) / st) : ceil((b - en) / -st);
        if (cnt < 1)
            return ox_fail(m, VEIL_ERR_UNSUPPORTED, "the slice of axis %d is empty", ax);
        c.start[ax] = (long)b;
        c.step[ax] = (long)fmax(fmin(st, 1e15), -1e15);
        od[ax] = (size_t)cnt;
    }
    return ox_move(m, n, 0, x, x->ndim, od, index_map(x->ndim, od, x->ndim, x->dims, axis_pos, &c),
                   0);
}

int ox_op_pad(struct veil_onnx_model *m, const Onnx__NodeProto *n)
{
    struct ox_value *x = ox_in(m, n, 0);
    if (!x || x->ndim < 1)
        return ox_fail(m, VEIL_ERR_FORMAT, "needs a tensor of rank 1 or more");
    char mode[16] = "constant";
    const Onnx__AttributeProto *am = ox_attr(n, "mode");
    if (am && am->has_s && am->s.len < sizeof mode) {
        memcpy(mode, am->s.data, am->s.len);
        mode[am->s.len] = 0;
    }
    double pads[2 * VEIL_MAX_DIMS], value = 0;
    size_t np;
    if (m->opset < 11) {
        const int64_t *p = ox_attr_ints(n, "pads", &np);
        for (size_t i = 0; i < np && i < 2 * VEIL_MAX_DIMS; i++)
            pads[i] = (double)p[i];
        value = ox_attr_float(n, "value", 0);
    } else {
        const double *p = ox_ints(m, n, 1, &np);
        if (!p)
            return VEIL_ERR_FORMAT;
        for (size_t i = 0; i < np && i < 2 * VEIL_MAX_DIMS; i++)
            pads[i] = p[i];
        if (ox_in(m, n, 2)) {
            const double *v = ox_public(m, ox_in(m, n, 2));
            if (!v)
                return VEIL_ERR_FORMAT;
            value = v[0];
        }
        if (ox_in(m, n, 3))
            return ox_fail(m, VEIL_ERR_UNSUPPORTED, "the axes input");
    }
    if (np != 2 * (size_t)x->ndim)
        return ox_fail(m, VEIL_ERR_FORMAT, "pads has %zu values for rank %d", np, x->ndim);
    struct axis_ctx c = {.nd = x->ndim, .d = x->dims};
    c.mode = !strcmp(mode, "constant")  ? 1
             : !strcmp(mode, "reflect") ? 2
             : !strcmp(mode, "edge")    ? 3
                                        : -1;
    if (c.mode < 0)
        return ox_fail(m, VEIL_ERR_UNSUPPORTED, "mode '%s'", mode);
    size_t od[VEIL_MAX_DIMS];
    for (int i = 0; i < x->ndim; i++) {
        double o = (double)x->dims[i] + pads[i] + pads[i + x->ndim];
        if (fabs(pads[i]) > 1e6 || fabs(pads[i + x->ndim]) > 1e6 || o < 1)
            return ox_fail(m, VEIL_ERR_UNSUPPORTED, "pads of axis %d leave %g elements", i, o);
        if (c.mode == 2 &&
            (pads[i] >= (double)x->dims[i] || pads[i + x->ndim] >= (double)x->dims[i]))
            return ox_fail(m, VEIL_ERR_UNSUPPORTED, "reflect pads larger than the axis");
        od[i] = (size_t)o;
        c.start[i] = -(long)pads[i];
        c.step[i] = 1;
    }
    return ox_move(m, n, 0, x, x->ndim, od, index_map(x->ndim, od, x->ndim, x->dims, axis_pos, &c),
                   c.mode == 1 ? value : 0);
}

int ox_op_tile(struct veil_onnx_model *m, const Onnx__NodeProto *n)
{
    struct ox_value *x = ox_in(m, n, 0);
    size_t nr;
    const double *r = x ? ox_ints(m, n, 1, &nr) : NULL;
    if (!r)
        return x ? VEIL_ERR_FORMAT : ox_fail(m, VEIL_ERR_FORMAT, "input 0 missing");
    if (nr != (size_t)x->ndim)
        return ox_fail(m, VEIL_ERR_FORMAT, "repeats has %zu values for rank %d", nr, x->ndim);
    size_t od[VEIL_MAX_DIMS];
    for (int i = 0; i < x->ndim; i++) {
        if (!(r[i] >= 1 && r[i] <= 1e6))
            return ox_fail(m, VEIL_ERR_UNSUPPORTED, "repeat %g", r[i]);
        od[i] = x->dims[i] * (size_t)r[i];
    }
    struct axis_ctx c = {.nd = x->ndim, .d = x->dims, .mode = 4};
    return ox_move(m, n, 0, x, x->ndim, od, index_map(x->ndim, od, x->ndim, x->dims, axis_pos, &c),
                   0);
}

int ox_op_expand(struct veil_onnx_model *m, const Onnx__NodeProto *n)
{
    struct ox_value *x = ox_in(m, n, 0);
    size_t ns;
    const double *s = x ? ox_ints(m, n, 1, &ns) : NULL;
    if (!s)
        return x ? VEIL_ERR_FORMAT : ox_fail(m, VEIL_ERR_FORMAT, "input 0 missing");
    if (ns > VEIL_MAX_DIMS)
        return ox_fail(m, VEIL_ERR_UNSUPPORTED, "rank %zu", ns);
    size_t sd[VEIL_MAX_DIMS], od[VEIL_MAX_DIMS];
    for (size_t i = 0; i < ns; i++) {
        if (!(s[i] >= 1 && s[i] <= (double)OX_MAX_NUMEL))
            return ox_fail(m, VEIL_ERR_UNSUPPORTED, "shape entry %g", s[i]);
        sd[i] = (size_t)s[i];
    }
    int nd;
    if (ox_broadcast_shape(m, x->ndim, x->dims, (int)ns, sd, &nd, od) != VEIL_OK)
        return VEIL_ERR_SHAPE;
    return ox_move(m, n, 0, x, nd, od, ox_broadcast_index(x->ndim, x->dims, nd, od), 0);
}

/* ---- Gather, Split, DepthToSpace / SpaceToDepth ---- */
int ox_op_gather(struct veil_onnx_model *m, const Onnx__NodeProto *n)
{
    struct ox_value *x = ox_in(m, n, 0), *iv = ox_in(m, n, 1);
    if (!x || !iv || x->ndim < 1)
        return ox_fail(m, VEIL_ERR_FORMAT, "needs data of rank 1 or more and indices");
    int a;
    if (ox_axis(m, ox_attr_int(n, "axis", 0), x->ndim, &a) != VEIL_OK)
        return VEIL_ERR_FORMAT;
    const double *ind = ox_public(m, iv);
    if (!ind)
        return VEIL_ERR_UNSUPPORTED;
    int nd = x->ndim - 1 + iv->ndim;
    if (nd > VEIL_MAX_DIMS || nd < 0)
        return ox_fail(m, VEIL_ERR_UNSUPPORTED, "result rank %d", nd);
    size_t od[VEIL_MAX_DIMS], outer = 1, inner = 1, d = x->dims[a];
    int k = 0;
    for (int i = 0; i < a; i++)
        od[k++] = x->dims[i], outer *= x->dims[i];
    for (int i = 0; i < iv->ndim; i++)
        od[k++] = iv->dims[i];
    for (int i = a + 1; i < x->ndim; i++)
        od[k++] = x->dims[i], inner *= x->dims[i];
    for (size_t j = 0; j < iv->numel; j++)
        if (!(ind[j] >= -(double)d && ind[j] < (double)d))
            return ox_fail(m, VEIL_ERR_RANGE, "index %g out of range for size %zu", ind[j], d);
    size_t total = outer * iv->numel * inner;
    long *idx = malloc((total ? total : 1) * sizeof *idx);
    for (size_t o = 0, j = 0; idx && o < outer; o++)
        for (size_t q = 0; q < iv->numel; q++) {
            long r = (long)ind[q] < 0 ? (long)ind[q] + (long)d : (long)ind[q];
            for (size_t i = 0; i < inner; i++, j++)
                idx[j] = (long)((o * d + (size_t)r) * inner + i);
        }
    return ox_move(m, n, 0, x, nd, od, idx, 0);
}

int ox_op_split(struct veil_onnx_model *m, const Onnx__NodeProto *n)
{
    struct ox_value *x = ox_in(m, n, 0);
    if (!x || x->ndim < 1)
        return ox_fail(m, VEIL_ERR_FORMAT, "needs a tensor of rank 1 or more");
    int a;
    if (ox_axis(m, ox_attr_int(n, "axis", 0), x->ndim, &a) != VEIL_OK)
        return VEIL_ERR_FORMAT;
    size_t no = n->n_output, parts[64], ns = 0;
    if (no > 64)
        return ox_fail(m, VEIL_ERR_UNSUPPORTED, "%zu outputs", no);
    if (m->opset < 13) {
        const int64_t *s = ox_attr_ints(n, "split", &ns);
        for (size_t i = 0; i < ns && i < 64; i++)
            parts[i] = s[i] > 0 ? (size_t)s[i] : 0;
    } else if (ox_in(m, n, 1)) {
        const double *s = ox_ints(m, n, 1, &ns);
        if (!s)
            return VEIL_ERR_FORMAT;
        for (size_t i = 0; i < ns && i < 64; i++)
            parts[i] = s[i] > 0 ? (size_t)s[i] : 0;
    }
    if (!ns) {
        if (x->dims[a] % no)
            return ox_fail(m, VEIL_ERR_SHAPE, "axis of %zu does not split in %zu", x->dims[a], no);
        for (size_t i = 0; i < no; i++)
            parts[i] = x->dims[a] / no;
        ns = no;
    }
    size_t sum = 0;
    for (size_t i = 0; i < ns; i++)
        sum += parts[i];
    if (ns != no || sum != x->dims[a])
        return ox_fail(m, VEIL_ERR_SHAPE, "split sizes do not cover the axis (%zu outputs)", no);
    size_t off = 0;
    for (size_t k = 0; k < no; k++) {
        if (!parts[k])
            return ox_fail(m, VEIL_ERR_UNSUPPORTED, "an empty part");
        struct axis_ctx c = {.nd = x->ndim, .d = x->dims, .mode = 0};
        size_t od[VEIL_MAX_DIMS];
        for (int i = 0; i < x->ndim; i++)
            c.start[i] = 0, c.step[i] = 1, od[i] = x->dims[i];
        c.start[a] = (long)off;
        od[a] = parts[k];
        off += parts[k];
        if (!n->output[k] || !*n->output[k])
            continue;
        int rc = ox_move(m, n, k, x, x->ndim, od,
                         index_map(x->ndim, od, x->ndim, x->dims, axis_pos, &c), 0);
        if (rc != VEIL_OK)
            return rc;
    }
    return VEIL_OK;
}

int ox_op_space(struct veil_onnx_model *m, const Onnx__NodeProto *n, int to_depth)
{
    struct ox_value *x = ox_in(m, n, 0);
    if (!x || x->ndim != 4)
        return ox_fail(m, VEIL_ERR_UNSUPPORTED, "needs an NCHW input");
    int64_t b = ox_attr_int(n, "blocksize", 0);
    if (b < 1 || b > 64)
        return ox_fail(m, VEIL_ERR_FORMAT, "blocksize %lld", (long long)b);
    const Onnx__AttributeProto *am = ox_attr(n, "mode");
    int crd = am && am->has_s && am->s.len == 3 && !memcmp(am->s.data, "CRD", 3);
    size_t B = (size_t)b, N = x->dims[0], C = x->dims[1], H = x->dims[2], W = x->dims[3], od[4];
    if (to_depth ? (H % B || W % B) : C % (B * B))
        return ox_fail(m, VEIL_ERR_SHAPE, "sizes do not divide by the block");
    if (to_depth)
        od[0] = N, od[1] = C * B * B, od[2] = H / B, od[3] = W / B;
    else
        od[0] = N, od[1] = C / (B * B), od[2] = H * B, od[3] = W * B;
    long *idx = malloc(x->numel * sizeof *idx);
    size_t j = 0, Cs = to_depth ? C : od[1];
    for (size_t n0 = 0; idx && n0 < od[0]; n0++)
        for (size_t c = 0; c < od[1]; c++)
            for (size_t h = 0; h < od[2]; h++)
                for (size_t w = 0; w < od[3]; w++, j++) {
                    size_t ic, ih, iw;
                    if (to_depth) { /* out channel c = (i b + k) C + c' */
                        size_t blk = c / Cs, cc = c % Cs;
                        ic = cc, ih = h * B + blk / B, iw = w * B + blk % B;
                    } else {
                        size_t i = h % B, k = w % B;
                        ic = crd ? c * B * B + i * B + k : (i * B + k) * Cs + c;
                        ih = h / B, iw = w / B;
                    }
                    idx[j] = (long)(((n0 * C + ic) * H + ih) * W + iw);
                }
    return ox_move(m, n, 0, x, 4, od, idx, 0);
}

/* max (or min) over the groups of map: the k-th member of every group gathered, then folded
 * pairwise with max(a, b) = b + relu(a - b) (min: a - relu(a - b)); exact. */
static veil_node_t *reduce_extreme(struct veil_onnx_model *m, struct ox_value *x, const long *map,
                                   size_t nout, size_t cnt, int is_min, int nd, const size_t *od)
{
    long *idx = malloc(nout * cnt * sizeof *idx);
    size_t *seen = calloc(nout, sizeof *seen);
    veil_node_t *xn = ox_node(m, x), *acc = NULL;
    if (!idx || !seen) {
        ox_fail(m, VEIL_ERR_NOMEM, "out of memory");
        xn = NULL;
    }
    for (size_t i = 0; xn && i < x->numel; i++) { /* idx[k * nout + o]: k-th member of group o */
        size_t o = (size_t)map[i];
        idx[seen[o]++ * nout + o] = (long)i;
    }
    char b1[64], b2[64], b3[64];
    for (size_t k = 0; xn && k < cnt; k++) {
        veil_node_t *v = ox_gather(m, xn, nd, od, idx + k * nout);
        if (!v || !acc) {
            acc = v;
            if (!v)
                break;
            continue;
        }
        veil_node_t *d = veil_add(m->g, ox_name(m, NULL, b1), acc,
                                  veil_scale(m->g, ox_name(m, NULL, b2), v, -1.0));
        veil_node_t *r = veil_relu(m->g, ox_name(m, NULL, b3), d);
        acc = is_min ? veil_add(m->g, ox_name(m, NULL, b1), acc,
                                veil_scale(m->g, ox_name(m, NULL, b2), r, -1.0))
                     : veil_add(m->g, ox_name(m, NULL, b1), v, r);
        if (!acc) {
            ox_graph_fail(m);
            break;
        }
    }
    free(idx);
    free(seen);
    return acc;
}

int ox_op_reduce(struct veil_onnx_model *m, const Onnx__NodeProto *n, int kind)
{
    int mean = kind == 1;
    struct ox_value *x = ox_in(m, n, 0);
    if (!x || x->ndim < 1)
        return ox_fail(m, VEIL_ERR_FORMAT, "needs a tensor of rank 1 or more");
    int axes[VEIL_MAX_DIMS], na = 0, red[VEIL_MAX_DIMS] = {0};
    int keep = (int)ox_attr_int(n, "keepdims", 1);
    int since = kind ? 18 : 13;
    if (m->opset < since) {
        size_t c;
        const int64_t *a = ox_attr_ints(n, "axes", &c);
        for (size_t i = 0; i < c && i < VEIL_MAX_DIMS; i++)
            if (ox_axis(m, a[i], x->ndim, &axes[na++]) != VEIL_OK)
                return VEIL_ERR_FORMAT;
    } else if (ox_in(m, n, 1)) {
        size_t c;
        const double *a = ox_ints(m, n, 1, &c);
        if (!a)
            return VEIL_ERR_FORMAT;
        for (size_t i = 0; i < c && i < VEIL_MAX_DIMS; i++)
            if (ox_axis(m, (int64_t)a[i], x->ndim, &axes[na++]) != VEIL_OK)
                return VEIL_ERR_FORMAT;
    }
    if (!na && ox_attr_int(n, "noop_with_empty_axes", 0)) {
        size_t total = x->numel;
        long *idx = malloc(total * sizeof *idx);
        for (size_t j = 0; idx && j < total; j++)
            idx[j] = (long)j;
        return ox_move(m, n, 0, x, x->ndim, x->dims, idx, 0);
    }
    for (int i = 0; i < x->ndim; i++)
        red[i] = !na;
    for (int i = 0; i < na; i++)
        red[axes[i]] = 1;
    size_t od[VEIL_MAX_DIMS], kd[VEIL_MAX_DIMS], cnt = 1, nout = 1;
    int nd = 0;
    for (int i = 0; i < x->ndim; i++) {
        kd[i] = red[i] ? 1 : x->dims[i];
        cnt *= red[i] ? x->dims[i] : 1;
        nout *= kd[i];
        if (keep || !red[i])
            od[nd++] = kd[i];
    }
    double f = mean ? 1.0 / (double)cnt : 1.0;
    long *map = ox_broadcast_index(x->ndim, kd, x->ndim, x->dims); /* input pos -> output pos */
    if (!map)
        return ox_fail(m, VEIL_ERR_NOMEM, "out of memory");
    if (x->cval || (x->init >= 0 && x->is_int)) {
        const double *c = ox_public(m, x);
        double *r = c ? calloc(nout, sizeof *r) : NULL;
        char *first = calloc(nout, 1);
        for (size_t i = 0; r && first && i < x->numel; i++) {
            double *o = &r[map[i]];
            if (kind < 2)
                *o += f * c[i];
            else if (!first[map[i]]++ || (kind == 2 ? c[i] > *o : c[i] < *o))
                *o = c[i];
        }
        free(first);
        free(map);
        return c ? ox_out_const(m, n, 0, nd, od, r, x->is_int) : VEIL_ERR_FORMAT;
    }
    if (kind >= 2) {
        veil_node_t *y = reduce_extreme(m, x, map, nout, cnt, kind == 3, nd, od);
        free(map);
        char b[64];
        if (y)
            y = ox_reshape(m, y, nd, od, ox_out_name(m, n, 0, b));
        return ox_out(m, n, 0, y, nd, od);
    }
    if (nout && x->numel > m->o.max_linmap / nout) {
        free(map);
        return ox_fail(m, VEIL_ERR_UNSUPPORTED,
                       "a %zu x %zu reduction matrix is more than "
                       "max_linmap",
                       x->numel, nout);
    }
    double *M = calloc(x->numel * nout, sizeof *M);
    for (size_t i = 0; M && i < x->numel; i++)
        M[i * nout + (size_t)map[i]] = f;
    free(map);
    if (!M)
        return ox_fail(m, VEIL_ERR_NOMEM, "out of memory");
    veil_node_t *xn = ox_node(m, x), *y = xn ? ox_linmap(m, xn, nd, od, M) : NULL;
    free(M);
    char b[64];
    if (y)
        y = ox_reshape(m, y, nd, od, ox_out_name(m, n, 0, b));
    return ox_out(m, n, 0, y, nd, od);
}

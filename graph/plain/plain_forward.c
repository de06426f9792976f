/*
 * plain_forward.c — plaintext evaluation of the forward ops that are products or rearrangements
 * (dense, conv2d, matmul, scale, pooling, relu, reshape, add, concat, transpose, folded batch
 * norm), each a row's `plain` in the op table (graph/ops.c). DOUBLE mode is IEEE arithmetic; FIXED mode performs the ring
 * operations of graph_internal.h's FIXED-POINT SEQUENCES, with floor truncation by f after each
 * product, so that the secure run differs only by its truncation's 0/1 ulp. Products of matrices
 * go through the ring GEMM (codelets/gemm_internal.h: exact, the naive loop's bits) in FIXED mode
 * and through cache-friendly loops in DOUBLE mode. The nonlinear ops are in plain_forward_nn.c.
 */
#include "config.h"

#include "base/base_internal.h"
#include "codelets/gemm_internal.h"
#include "graph/plain/plain_ops_internal.h"

#include <stdlib.h>
#include <string.h>


/* Rearranging ops copy 8-byte elements without looking at the mode. */
_Static_assert(sizeof(double) == sizeof(uint64_t), "doubles and ring words are both 8 bytes");

int veil_plain_alloc(struct veil_plain_exec *e, const struct veil_node *n)
{
    size_t count = n->numel ? n->numel : 1;
    if (IS_FIXED(e))
        e->w[n->index] = malloc(count * sizeof(uint64_t));
    else
        e->d[n->index] = malloc(count * sizeof(double));
    if (IS_FIXED(e) ? !e->w[n->index] : !e->d[n->index])
        return veil_error(VEIL_ERR_NOMEM, "plain run: %s '%s': out of memory (%zu elements)",
                          veil_op_name(n->op), n->name, n->numel);
    return VEIL_OK;
}

int veil_plain_alloc_aux(struct veil_plain_exec *e, const struct veil_node *n, int k, size_t numel)
{
    size_t count = numel ? numel : 1;
    int i = n->index;
    free(e->daux[i][k]);
    free(e->waux[i][k]);
    e->daux[i][k] = NULL;
    e->waux[i][k] = NULL;
    if (IS_FIXED(e))
        e->waux[i][k] = calloc(count, sizeof(uint64_t));
    else
        e->daux[i][k] = calloc(count, sizeof(double));
    if (IS_FIXED(e) ? !e->waux[i][k] : !e->daux[i][k])
        return veil_error(VEIL_ERR_NOMEM, "plain run: %s '%s': out of memory saving state",
                          veil_op_name(n->op), n->name);
    e->aux_numel[i][k] = numel;
    return VEIL_OK;
}

/* Node i's value as untyped 8-byte elements (either mode). */
static void *val(const struct veil_plain_exec *e, int i)
{
    return IS_FIXED(e) ? (void *)e->w[i] : (void *)e->d[i];
}

/* ---- dense, matmul, conv2d ------------------------------------------------------------------ */

/* c (m, n) = a (m, k) . b (k, n) in doubles, b and c with row strides ldb and ldc; i-k-j order
 * so the inner loop streams rows, four columns a step so that -O2 (GCC's very-cheap vectoriser,
 * which will not add a remainder loop) still turns it into vector code. */
static void dgemm(size_t m, size_t n, size_t k, const double *restrict a,
                  const double *restrict b, size_t ldb, double *restrict c, size_t ldc)
{
    const size_t n4 = n & ~(size_t)3;
    for (size_t i = 0; i < m; i++) {
        double *restrict ci = c + i * ldc;
        for (size_t j = 0; j < n; j++)
            ci[j] = 0.0;
        for (size_t l = 0; l < k; l++) {
            const double av = a[i * k + l];
            const double *restrict bl = b + l * ldb;
            for (size_t j = 0; j < n4; j += 4) {
                ci[j] += av * bl[j];
                ci[j + 1] += av * bl[j + 1];
                ci[j + 2] += av * bl[j + 2];
                ci[j + 3] += av * bl[j + 3];
            }
            for (size_t j = n4; j < n; j++)
                ci[j] += av * bl[j];
        }
    }
}

void veil_plain_dgemm(int trans_a, int trans_b, size_t m, size_t n, size_t k, const double *a,
                      size_t lda, const double *b, size_t ldb, int accumulate, double *c,
                      size_t ldc)
{
    if (!trans_a && !trans_b && !accumulate && lda == k) {
        dgemm(m, n, k, a, b, ldb, c, ldc);
        return;
    }
    /* The backward pass's transposed products: plain loops, i-l-j so that c's rows stream. */
    for (size_t i = 0; i < m; i++) {
        double *ci = c + i * ldc;
        if (!accumulate)
            for (size_t j = 0; j < n; j++)
                ci[j] = 0.0;
        for (size_t l = 0; l < k; l++) {
            const double av = trans_a ? a[l * lda + i] : a[i * lda + l];
            if (trans_b)
                for (size_t j = 0; j < n; j++)
                    ci[j] += av * b[j * ldb + l];
            else
                for (size_t j = 0; j < n; j++)
                    ci[j] += av * b[l * ldb + j];
        }
    }
}

/* y (m, n) = trunc(a . b) (FIXED) or a . b (DOUBLE), a and b node values. */
static void product(struct veil_plain_exec *e, const struct veil_node *n, size_t m, size_t nn,
                    size_t k, int ia, int ib)
{
    if (IS_FIXED(e)) {
        uint64_t *y = e->w[n->index];
        veil_gemm_u64(0, 0, m, nn, k, e->w[ia], k, e->w[ib], nn, 0, y, nn);
        for (size_t i = 0; i < m * nn; i++)
            y[i] = veil_plain_trunc(e, y[i], e->f);
    } else {
        dgemm(m, nn, k, e->d[ia], e->d[ib], nn, e->d[n->index], nn);
    }
}

int veil_plain_dense(struct veil_plain_exec *e, const struct veil_node *n)
{
    const struct veil_node *x = &e->p->nodes[n->in[0]], *w = &e->p->nodes[n->in[1]];
    const size_t b = x->dims[0], in = x->dims[1], out = w->dims[1];
    int rc = veil_plain_alloc(e, n);
    if (rc != VEIL_OK)
        return rc;
    product(e, n, b, out, in, x->index, w->index);
    int bi = n->nin > 2 ? n->in[2] : -1;
    if (bi >= 0) {
        for (size_t i = 0; i < b; i++)
            for (size_t j = 0; j < out; j++) {
                if (IS_FIXED(e))
                    e->w[n->index][i * out + j] += e->w[bi][j];
                else
                    e->d[n->index][i * out + j] += e->d[bi][j];
            }
    }
    return VEIL_OK;
}

int veil_plain_matmul(struct veil_plain_exec *e, const struct veil_node *n)
{
    const struct veil_node *a = &e->p->nodes[n->in[0]];
    int rc = veil_plain_alloc(e, n);
    if (rc != VEIL_OK)
        return rc;
    product(e, n, a->dims[0], n->dims[1], a->dims[1], n->in[0], n->in[1]);
    return VEIL_OK;
}

/* im2col and its adjoint col2im, one typed copy per mode (no type punning between doubles and
 * words); contracts in plain_ops_internal.h. */
#define DEFINE_IM2COL(fn, T)                                                                      \
    void fn(const struct veil_plain_conv_geom *g, const T *x, size_t r0, size_t r1, T *cols)      \
    {                                                                                             \
        const size_t cw = (r1 - r0) * g->ow;                                                      \
        for (size_t c = 0; c < g->c; c++)                                                         \
            for (size_t ki = 0; ki < g->kh; ki++)                                                 \
                for (size_t kj = 0; kj < g->kw; kj++) {                                           \
                    T *row = cols + ((c * g->kh + ki) * g->kw + kj) * cw;                         \
                    for (size_t oi = r0; oi < r1; oi++) {                                         \
                        long ii = (long)(oi * g->stride + ki) - (long)g->pad;                     \
                        T *r = row + (oi - r0) * g->ow;                                           \
                        if (ii < 0 || ii >= (long)g->h) {                                         \
                            for (size_t oj = 0; oj < g->ow; oj++)                                 \
                                r[oj] = 0;                                                        \
                            continue;                                                             \
                        }                                                                         \
                        const T *xr = x + (c * g->h + (size_t)ii) * g->w;                         \
                        for (size_t oj = 0; oj < g->ow; oj++) {                                   \
                            long jj = (long)(oj * g->stride + kj) - (long)g->pad;                 \
                            r[oj] = jj < 0 || jj >= (long)g->w ? 0 : xr[jj];                      \
                        }                                                                         \
                    }                                                                             \
                }                                                                                 \
    }
DEFINE_IM2COL(veil_plain_im2col_w, uint64_t)
DEFINE_IM2COL(veil_plain_im2col_d, double)

#define DEFINE_COL2IM(fn, T)                                                                      \
    void fn(const struct veil_plain_conv_geom *g, const T *cols, size_t r0, size_t r1, T *x)      \
    {                                                                                             \
        const size_t cw = (r1 - r0) * g->ow;                                                      \
        for (size_t c = 0; c < g->c; c++)                                                         \
            for (size_t ki = 0; ki < g->kh; ki++)                                                 \
                for (size_t kj = 0; kj < g->kw; kj++) {                                           \
                    const T *row = cols + ((c * g->kh + ki) * g->kw + kj) * cw;                   \
                    for (size_t oi = r0; oi < r1; oi++) {                                         \
                        long ii = (long)(oi * g->stride + ki) - (long)g->pad;                     \
                        if (ii < 0 || ii >= (long)g->h)                                           \
                            continue;                                                             \
                        const T *r = row + (oi - r0) * g->ow;                                     \
                        T *xr = x + (c * g->h + (size_t)ii) * g->w;                               \
                        for (size_t oj = 0; oj < g->ow; oj++) {                                   \
                            long jj = (long)(oj * g->stride + kj) - (long)g->pad;                 \
                            if (jj >= 0 && jj < (long)g->w)                                       \
                                xr[jj] += r[oj];                                                  \
                        }                                                                         \
                    }                                                                             \
                }                                                                                 \
    }
DEFINE_COL2IM(veil_plain_col2im_w, uint64_t)
DEFINE_COL2IM(veil_plain_col2im_d, double)

int veil_plain_conv2d(struct veil_plain_exec *e, const struct veil_node *n)
{
    const struct veil_node *x = &e->p->nodes[n->in[0]], *w = &e->p->nodes[n->in[1]];
    struct veil_plain_conv_geom g = {x->dims[1], x->dims[2], x->dims[3],
                                     w->dims[2], w->dims[3], n->dims[2],
                                     n->dims[3], (size_t)n->a.stride, (size_t)n->a.pad};
    const size_t batch = x->dims[0], o = w->dims[0], ckk = g.c * g.kh * g.kw, ohw = g.oh * g.ow;
    size_t band = VEIL_PLAIN_COLS_MAX / (ckk * g.ow); /* output rows per im2col band */
    band = band < 1 ? 1 : band > g.oh ? g.oh : band;
    int rc = veil_plain_alloc(e, n);
    if (rc != VEIL_OK)
        return rc;
    void *cols = malloc(ckk * band * g.ow * sizeof(uint64_t));
    if (!cols)
        return veil_error(VEIL_ERR_NOMEM, "plain run: conv2d '%s': out of memory", n->name);
    const int bi = n->nin > 2 ? n->in[2] : -1;
    const size_t chw = g.c * g.h * g.w;
    for (size_t b = 0; b < batch; b++) {
        for (size_t r0 = 0; r0 < g.oh; r0 += band) {
            const size_t r1 = r0 + band < g.oh ? r0 + band : g.oh, cw = (r1 - r0) * g.ow;
            /* y[oc][r0 OW ..] for every output channel oc: row stride OH OW */
            if (IS_FIXED(e)) {
                veil_plain_im2col_w(&g, e->w[x->index] + b * chw, r0, r1, cols);
                veil_gemm_u64(0, 0, o, cw, ckk, e->w[w->index], ckk, cols, cw, 0,
                              e->w[n->index] + b * o * ohw + r0 * g.ow, ohw);
            } else {
                veil_plain_im2col_d(&g, e->d[x->index] + b * chw, r0, r1, cols);
                dgemm(o, cw, ckk, e->d[w->index], cols, cw,
                      e->d[n->index] + b * o * ohw + r0 * g.ow, ohw);
            }
        }
        for (size_t oc = 0; oc < o; oc++) {
            const size_t base = (b * o + oc) * ohw;
            if (IS_FIXED(e)) {
                const uint64_t bias = bi >= 0 ? e->w[bi][oc] : 0;
                for (size_t j = 0; j < ohw; j++)
                    e->w[n->index][base + j] = veil_plain_trunc(e, e->w[n->index][base + j], e->f) +
                                               bias;
            } else if (bi >= 0) {
                for (size_t j = 0; j < ohw; j++)
                    e->d[n->index][base + j] += e->d[bi][oc];
            }
        }
    }
    free(cols);
    return VEIL_OK;
}

/* ---- elementwise and pooling ---------------------------------------------------------------- */

int veil_plain_relu(struct veil_plain_exec *e, const struct veil_node *n)
{
    int rc = veil_plain_alloc(e, n);
    if (rc == VEIL_OK && n->saved)
        rc = veil_plain_alloc_aux(e, n, 0, n->numel);
    if (rc != VEIL_OK)
        return rc;
    const int i = n->index, xi = n->in[0];
    for (size_t k = 0; k < n->numel; k++) {
        int pos = IS_FIXED(e) ? (int64_t)e->w[xi][k] >= 0 : e->d[xi][k] >= 0.0;
        if (IS_FIXED(e))
            e->w[i][k] = pos ? e->w[xi][k] : 0;
        else
            e->d[i][k] = pos ? e->d[xi][k] : 0.0;
        if (n->saved) {
            if (IS_FIXED(e))
                e->waux[i][0][k] = (uint64_t)pos;
            else
                e->daux[i][0][k] = pos;
        }
    }
    return VEIL_OK;
}

struct pool_geom {
    size_t planes, h, w, oh, ow, k, s;
};

/* Max over each k x k window of planes of h x w, and the one-hot route of the first maximum
 * (strictly greater replaces: ties keep the lower window position, as the secure tournament). */
#define DEFINE_MAXPOOL(fn, T, KEY)                                                                \
    static void fn(const struct pool_geom *g, const T *x, T *y, T *route)                         \
    {                                                                                             \
        const size_t kk = g->k * g->k;                                                            \
        for (size_t pl = 0; pl < g->planes; pl++)                                                 \
            for (size_t oi = 0; oi < g->oh; oi++)                                                 \
                for (size_t oj = 0; oj < g->ow; oj++) {                                           \
                    const size_t out = (pl * g->oh + oi) * g->ow + oj;                            \
                    const T *base = x + (pl * g->h + oi * g->s) * g->w + oj * g->s;               \
                    T best = base[0];                                                             \
                    size_t at = 0;                                                                \
                    for (size_t a = 0; a < g->k; a++)                                             \
                        for (size_t c = 0; c < g->k; c++)                                         \
                            if (KEY(base[a * g->w + c]) > KEY(best)) {                            \
                                best = base[a * g->w + c];                                        \
                                at = a * g->k + c;                                                \
                            }                                                                     \
                    y[out] = best;                                                                \
                    if (route)                                                                    \
                        route[out * kk + at] = 1;                                                 \
                }                                                                                 \
    }
#define SIGNED_KEY(v) ((int64_t)(v))
#define DOUBLE_KEY(v) (v)
DEFINE_MAXPOOL(maxpool_w, uint64_t, SIGNED_KEY)
DEFINE_MAXPOOL(maxpool_d, double, DOUBLE_KEY)

/* Window sums: FIXED y = trunc(sum * round(2^f / k^2)) (tasks/pool.c's constant), DOUBLE the
 * mean. */
static void avgpool(const struct pool_geom *g, struct veil_plain_exec *e, int xi, int yi)
{
    const size_t kk = g->k * g->k;
    const uint64_t inv = ((UINT64_C(1) << e->f) + kk / 2) / kk;
    for (size_t pl = 0; pl < g->planes; pl++)
        for (size_t oi = 0; oi < g->oh; oi++)
            for (size_t oj = 0; oj < g->ow; oj++) {
                const size_t out = (pl * g->oh + oi) * g->ow + oj;
                const size_t first = (pl * g->h + oi * g->s) * g->w + oj * g->s;
                uint64_t ws = 0;
                double ds = 0.0;
                for (size_t a = 0; a < g->k; a++)
                    for (size_t c = 0; c < g->k; c++) {
                        if (IS_FIXED(e))
                            ws += e->w[xi][first + a * g->w + c];
                        else
                            ds += e->d[xi][first + a * g->w + c];
                    }
                if (IS_FIXED(e))
                    e->w[yi][out] = veil_plain_trunc(e, ws * inv, e->f);
                else
                    e->d[yi][out] = ds / (double)kk;
            }
}

int veil_plain_pool(struct veil_plain_exec *e, const struct veil_node *n)
{
    const struct veil_node *x = &e->p->nodes[n->in[0]];
    const struct pool_geom g = {x->dims[0] * x->dims[1], x->dims[2], x->dims[3], n->dims[2],
                                n->dims[3], (size_t)n->a.k, (size_t)n->a.stride};
    const int maxp = n->op == VEIL_OP_MAXPOOL, route = maxp && n->saved, i = n->index;
    int rc = veil_plain_alloc(e, n);
    if (rc == VEIL_OK && route)
        rc = veil_plain_alloc_aux(e, n, 0, n->numel * g.k * g.k);
    if (rc != VEIL_OK)
        return rc;
    if (!maxp)
        avgpool(&g, e, x->index, i);
    else if (IS_FIXED(e))
        maxpool_w(&g, e->w[x->index], e->w[i], route ? e->waux[i][0] : NULL);
    else
        maxpool_d(&g, e->d[x->index], e->d[i], route ? e->daux[i][0] : NULL);
    return VEIL_OK;
}

int veil_plain_gavgpool(struct veil_plain_exec *e, const struct veil_node *n)
{
    const struct veil_node *x = &e->p->nodes[n->in[0]];
    const size_t hw = x->dims[2] * x->dims[3];
    int rc = veil_plain_alloc(e, n);
    if (rc != VEIL_OK)
        return rc;
    const uint64_t inv = veil_plain_enc(1.0 / (double)hw, e->f);
    for (size_t pl = 0; pl < n->numel; pl++) {
        if (IS_FIXED(e)) {
            uint64_t s = 0;
            for (size_t t = 0; t < hw; t++)
                s += e->w[x->index][pl * hw + t];
            e->w[n->index][pl] = veil_plain_trunc(e, s * inv, e->f);
        } else {
            double s = 0.0;
            for (size_t t = 0; t < hw; t++)
                s += e->d[x->index][pl * hw + t];
            e->d[n->index][pl] = s / (double)hw;
        }
    }
    return VEIL_OK;
}

int veil_plain_scale(struct veil_plain_exec *e, const struct veil_node *n)
{
    int rc = veil_plain_alloc(e, n);
    if (rc != VEIL_OK)
        return rc;
    const int i = n->index, xi = n->in[0];
    const double c = n->a.c;
    if (!IS_FIXED(e)) {
        for (size_t k = 0; k < n->numel; k++)
            e->d[i][k] = e->d[xi][k] * c;
    } else if (c == nearbyint(c)) {
        const uint64_t ci = (uint64_t)(int64_t)c; /* an integer factor needs no truncation */
        for (size_t k = 0; k < n->numel; k++)
            e->w[i][k] = e->w[xi][k] * ci;
    } else {
        const uint64_t ce = veil_plain_enc(c, e->f);
        for (size_t k = 0; k < n->numel; k++)
            e->w[i][k] = veil_plain_trunc(e, e->w[xi][k] * ce, e->f);
    }
    return VEIL_OK;
}

int veil_plain_add(struct veil_plain_exec *e, const struct veil_node *n)
{
    int rc = veil_plain_alloc(e, n);
    if (rc != VEIL_OK)
        return rc;
    const int i = n->index, a = n->in[0], b = n->in[1];
    for (size_t k = 0; k < n->numel; k++) {
        if (IS_FIXED(e))
            e->w[i][k] = e->w[a][k] + e->w[b][k];
        else
            e->d[i][k] = e->d[a][k] + e->d[b][k];
    }
    return VEIL_OK;
}

/* ---- rearrangements (exact in both modes: 8-byte elements copied bytewise) ------------------ */

/* RESHAPE, and a folded BATCHNORM, which reads as its producer (already folded at bind time). */
int veil_plain_copy(struct veil_plain_exec *e, const struct veil_node *n)
{
    if (n->op == VEIL_OP_BATCHNORM && n->folded_into < 0)
        return veil_error(VEIL_ERR_UNSUPPORTED, "plain run: batchnorm '%s' was not folded into a "
                          "conv2d or dense layer; the executors only run folded batch norms",
                          n->name);
    int rc = veil_plain_alloc(e, n);
    if (rc == VEIL_OK)
        memcpy(val(e, n->index), val(e, n->in[0]), n->numel * sizeof(uint64_t));
    return rc;
}

int veil_plain_concat(struct veil_plain_exec *e, const struct veil_node *n)
{
    const struct veil_node *a = &e->p->nodes[n->in[0]], *b = &e->p->nodes[n->in[1]];
    size_t outer = 1, inner = 1;
    for (int d = 0; d < n->a.axis; d++)
        outer *= n->dims[d];
    for (int d = n->a.axis + 1; d < n->ndim; d++)
        inner *= n->dims[d];
    const size_t ca = a->dims[n->a.axis] * inner, cb = b->dims[n->a.axis] * inner;
    int rc = veil_plain_alloc(e, n);
    if (rc != VEIL_OK)
        return rc;
    unsigned char *y = val(e, n->index);
    const unsigned char *av = val(e, a->index), *bv = val(e, b->index);
    for (size_t o = 0; o < outer; o++) {
        memcpy(y + o * (ca + cb) * 8, av + o * ca * 8, ca * 8);
        memcpy(y + (o * (ca + cb) + ca) * 8, bv + o * cb * 8, cb * 8);
    }
    return VEIL_OK;
}

int veil_plain_transpose(struct veil_plain_exec *e, const struct veil_node *n)
{
    const size_t r = n->dims[1], c = n->dims[0]; /* input is (r, c) */
    int rc = veil_plain_alloc(e, n);
    if (rc != VEIL_OK)
        return rc;
    unsigned char *y = val(e, n->index);
    const unsigned char *x = val(e, n->in[0]);
    for (size_t i = 0; i < r; i++)
        for (size_t j = 0; j < c; j++)
            memcpy(y + (j * r + i) * 8, x + (i * c + j) * 8, 8);
    return VEIL_OK;
}

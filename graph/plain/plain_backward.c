/*
 * plain_backward.c — plaintext evaluation of the backward ops that are products, sums or
 * rearrangements (matmul_nt/tn, sum_rows/channels, the conv2d input and weight gradients, the
 * relu/pool gradients, slice) and of the SGD update (each a row's `plain` in the op table,
 * graph/ops.c; MUL's is in op_elementwise.c); the normalisation, softmax and loss gradients are
 * in plain_backward_nn.c. DOUBLE mode is the real
 * derivative; FIXED mode performs graph_internal.h's BACKWARD FIXED-POINT SEQUENCES with floor
 * truncation, the ring operations the secure lowering mirrors step for step. Products go through
 * the forward file's helpers (ring GEMM, im2col/col2im bands, veil_plain_dgemm).
 */
#include "config.h"

#include "base/base_internal.h"
#include "codelets/gemm_internal.h"
#include "graph/plain/plain_ops_internal.h"

#include <stdlib.h>
#include <string.h>


/* Allocates n's value zero-filled (scatters and accumulations add into it). */
static int alloc_zero(struct veil_plain_exec *e, const struct veil_node *n)
{
    int rc = veil_plain_alloc(e, n);
    if (rc == VEIL_OK)
        memset(IS_FIXED(e) ? (void *)e->w[n->index] : (void *)e->d[n->index], 0,
               (n->numel ? n->numel : 1) * sizeof(uint64_t));
    return rc;
}

/* Floor truncation of every word of node n's value (FIXED only). */
static void trunc_all(struct veil_plain_exec *e, const struct veil_node *n)
{
    if (IS_FIXED(e))
        for (size_t k = 0; k < n->numel; k++)
            e->w[n->index][k] = veil_plain_trunc(e, e->w[n->index][k], e->f);
}

/* ---- matrix products and sums ---------------------------------------------------------------- */

/* MATMUL_NT: (m, k) . (n, k)^T; MATMUL_TN: (k, m)^T . (k, n); one truncation per entry. */
int veil_plain_matmul_grad(struct veil_plain_exec *e, const struct veil_node *n)
{
    const struct veil_node *a = &e->p->nodes[n->in[0]], *b = &e->p->nodes[n->in[1]];
    const int tn = n->op == VEIL_OP_MATMUL_TN;
    const size_t m = n->dims[0], nn = n->dims[1], k = tn ? a->dims[0] : a->dims[1];
    int rc = veil_plain_alloc(e, n);
    if (rc != VEIL_OK)
        return rc;
    if (IS_FIXED(e)) {
        veil_gemm_u64(tn, !tn, m, nn, k, e->w[a->index], a->dims[1], e->w[b->index], b->dims[1], 0,
                      e->w[n->index], nn);
        trunc_all(e, n);
    } else {
        veil_plain_dgemm(tn, !tn, m, nn, k, e->d[a->index], a->dims[1], e->d[b->index], b->dims[1],
                         0, e->d[n->index], nn);
    }
    return VEIL_OK;
}

/* SUM_ROWS (r, c) -> (c) and SUM_CHANNELS (B, C, H, W) -> (C): exact sums. */
int veil_plain_sum(struct veil_plain_exec *e, const struct veil_node *n)
{
    const struct veil_node *x = &e->p->nodes[n->in[0]];
    const size_t c = n->numel, outer = x->dims[0];
    const size_t inner = n->op == VEIL_OP_SUM_ROWS ? 1 : x->dims[2] * x->dims[3];
    int rc = alloc_zero(e, n);
    if (rc != VEIL_OK)
        return rc;
    for (size_t o = 0; o < outer; o++)
        for (size_t j = 0; j < c; j++)
            for (size_t t = 0; t < inner; t++) {
                const size_t src = (o * c + j) * inner + t;
                if (IS_FIXED(e))
                    e->w[n->index][j] += e->w[x->index][src];
                else
                    e->d[n->index][j] += e->d[x->index][src];
            }
    return VEIL_OK;
}

/* ---- convolution ----------------------------------------------------------------------------- */

/* Geometry of conv node c (x (B, C, H, W), w (O, C, KH, KW), y (B, O, OH, OW)); *band output rows
 * per im2col band. */
static struct veil_plain_conv_geom conv_geom(const veil_plan_t *p, const struct veil_node *c,
                                             size_t *band)
{
    const struct veil_node *x = &p->nodes[c->in[0]], *w = &p->nodes[c->in[1]];
    struct veil_plain_conv_geom g;
    g.c = x->dims[1], g.h = x->dims[2], g.w = x->dims[3], g.kh = w->dims[2], g.kw = w->dims[3];
    g.oh = c->dims[2], g.ow = c->dims[3], g.stride = (size_t)c->a.stride, g.pad = (size_t)c->a.pad;
    size_t b = VEIL_PLAIN_COLS_MAX / (g.c * g.kh * g.kw * g.ow);
    *band = b < 1 ? 1 : b > g.oh ? g.oh : b;
    return g;
}

/* CONV_GRAD_INPUT: dx_b = col2im(W^T . dY_b) exactly for every image, then one truncation;
 * CONV_GRAD_WEIGHT: dW = sum_b dY_b . im2col(x_b)^T exactly, then one truncation. Both a band of
 * output rows at a time (the forward's im2col bands). */
int veil_plain_conv_grad(struct veil_plain_exec *e, const struct veil_node *n)
{
    const struct veil_node *c = &e->p->nodes[n->fwd];
    const int gi = n->op == VEIL_OP_CONV_GRAD_INPUT;
    const int xi = c->in[0], wi = gi ? n->in[0] : c->in[1], dyi = n->in[1], oi = n->index;
    size_t band;
    const struct veil_plain_conv_geom g = conv_geom(e->p, c, &band);
    const size_t batch = c->dims[0], o = c->dims[1], ckk = g.c * g.kh * g.kw;
    const size_t ohw = g.oh * g.ow, chw = g.c * g.h * g.w;
    int rc = alloc_zero(e, n);
    if (rc != VEIL_OK)
        return rc;
    void *cols = malloc(ckk * band * g.ow * sizeof(uint64_t));
    if (!cols)
        return veil_error(VEIL_ERR_NOMEM, "plain run: %s '%s': out of memory", veil_op_name(n->op),
                          n->name);
    for (size_t b = 0; b < batch; b++)
        for (size_t r0 = 0; r0 < g.oh; r0 += band) {
            const size_t r1 = r0 + band < g.oh ? r0 + band : g.oh, cw = (r1 - r0) * g.ow;
            const size_t dy0 = b * o * ohw + r0 * g.ow; /* dY_b's band: (O, cw), row stride OHW */
            if (IS_FIXED(e) && gi) {
                veil_gemm_u64(1, 0, ckk, cw, o, e->w[wi], ckk, e->w[dyi] + dy0, ohw, 0, cols, cw);
                veil_plain_col2im_w(&g, cols, r0, r1, e->w[oi] + b * chw);
            } else if (IS_FIXED(e)) {
                veil_plain_im2col_w(&g, e->w[xi] + b * chw, r0, r1, cols);
                veil_gemm_u64(0, 1, o, ckk, cw, e->w[dyi] + dy0, ohw, cols, cw, 1, e->w[oi], ckk);
            } else if (gi) {
                veil_plain_dgemm(1, 0, ckk, cw, o, e->d[wi], ckk, e->d[dyi] + dy0, ohw, 0, cols,
                                 cw);
                veil_plain_col2im_d(&g, cols, r0, r1, e->d[oi] + b * chw);
            } else {
                veil_plain_im2col_d(&g, e->d[xi] + b * chw, r0, r1, cols);
                veil_plain_dgemm(0, 1, o, ckk, cw, e->d[dyi] + dy0, ohw, cols, cw, 1, e->d[oi],
                                 ckk);
            }
        }
    free(cols);
    trunc_all(e, n);
    return VEIL_OK;
}

/* ---- relu and pooling ------------------------------------------------------------------------ */

/* dy * mask, the mask an integer 0/1: no truncation. */
int veil_plain_relu_grad(struct veil_plain_exec *e, const struct veil_node *n)
{
    const int i = n->index, dy = n->in[0], r = n->fwd;
    int rc = veil_plain_alloc(e, n);
    if (rc != VEIL_OK)
        return rc;
    for (size_t k = 0; k < n->numel; k++) {
        if (IS_FIXED(e))
            e->w[i][k] = e->w[dy][k] * e->waux[r][0][k];
        else
            e->d[i][k] = e->d[dy][k] * e->daux[r][0][k];
    }
    return VEIL_OK;
}

/* MAXPOOL_GRAD: dx[window tap] += dy * route (0/1, exact); AVGPOOL_GRAD: t = trunc(dy *
 * round(2^f / k^2)) (DOUBLE dy / k^2) added to every tap of the window. Overlapping windows add;
 * pixels outside every window get 0. */
int veil_plain_pool_grad(struct veil_plain_exec *e, const struct veil_node *n)
{
    const struct veil_node *pn = &e->p->nodes[n->fwd];
    const size_t planes = pn->dims[0] * pn->dims[1], oh = pn->dims[2], ow = pn->dims[3];
    const size_t h = n->dims[2], w = n->dims[3], k = (size_t)pn->a.k, s = (size_t)pn->a.stride;
    const size_t kk = k * k;
    const int maxp = n->op == VEIL_OP_MAXPOOL_GRAD, i = n->index, dy = n->in[0], r = n->fwd;
    const uint64_t inv = ((UINT64_C(1) << e->f) + kk / 2) / kk; /* the forward's constant */
    int rc = alloc_zero(e, n);
    if (rc != VEIL_OK)
        return rc;
    for (size_t pl = 0; pl < planes; pl++)
        for (size_t y = 0; y < oh; y++)
            for (size_t x = 0; x < ow; x++) {
                const size_t out = (pl * oh + y) * ow + x, first = (pl * h + y * s) * w + x * s;
                const uint64_t tw =
                    IS_FIXED(e) && !maxp ? veil_plain_trunc(e, e->w[dy][out] * inv, e->f) : 0;
                for (size_t a = 0; a < k; a++)
                    for (size_t c = 0; c < k; c++) {
                        const size_t at = first + a * w + c, t = out * kk + a * k + c;
                        if (IS_FIXED(e))
                            e->w[i][at] += maxp ? e->w[dy][out] * e->waux[r][0][t] : tw;
                        else
                            e->d[i][at] += maxp ? e->d[dy][out] * e->daux[r][0][t]
                                                : e->d[dy][out] / (double)kk;
                    }
            }
    return VEIL_OK;
}

/* dx (B, C, H, W) = broadcast of trunc(dy * enc(1 / (H W))) (the forward's constant). */
int veil_plain_gavgpool_grad(struct veil_plain_exec *e, const struct veil_node *n)
{
    const size_t hw = n->dims[2] * n->dims[3], planes = n->dims[0] * n->dims[1];
    const int i = n->index, dy = n->in[0];
    const uint64_t inv = veil_plain_enc(1.0 / (double)hw, e->f);
    int rc = veil_plain_alloc(e, n);
    if (rc != VEIL_OK)
        return rc;
    for (size_t pl = 0; pl < planes; pl++) {
        const uint64_t tw = IS_FIXED(e) ? veil_plain_trunc(e, e->w[dy][pl] * inv, e->f) : 0;
        const double td = IS_FIXED(e) ? 0.0 : e->d[dy][pl] / (double)hw;
        for (size_t t = 0; t < hw; t++) {
            if (IS_FIXED(e))
                e->w[i][pl * hw + t] = tw;
            else
                e->d[i][pl * hw + t] = td;
        }
    }
    return VEIL_OK;
}

/* ---- slice ---------------------------------------------------------------------------------- */

/* The part [start, start + dims[axis]) of in[0] along axis (8-byte elements, either mode). */
int veil_plain_slice(struct veil_plain_exec *e, const struct veil_node *n)
{
    const struct veil_node *x = &e->p->nodes[n->in[0]];
    const int ax = n->a.axis;
    size_t outer = 1, inner = 1;
    for (int d = 0; d < ax; d++)
        outer *= n->dims[d];
    for (int d = ax + 1; d < n->ndim; d++)
        inner *= n->dims[d];
    const size_t part = n->dims[ax] * inner, whole = x->dims[ax] * inner;
    if (n->a.start + n->dims[ax] > x->dims[ax])
        return veil_error(VEIL_ERR_STATE,
                          "plain run: slice '%s': [%zu, %zu) is outside axis %d "
                          "of '%s' (%zu)",
                          n->name, n->a.start, n->a.start + n->dims[ax], ax, x->name, x->dims[ax]);
    int rc = veil_plain_alloc(e, n);
    if (rc != VEIL_OK)
        return rc;
    unsigned char *y = IS_FIXED(e) ? (void *)e->w[n->index] : (void *)e->d[n->index];
    const unsigned char *xv = IS_FIXED(e) ? (void *)e->w[x->index] : (void *)e->d[x->index];
    for (size_t o = 0; o < outer; o++)
        memcpy(y + o * part * 8, xv + (o * whole + n->a.start * inner) * 8, part * 8);
    return VEIL_OK;
}

/* ---- SGD update ------------------------------------------------------------------------------ */

/* The gradient copy of PARAM p (allocated once, numel entries). */
static void *grad_slot(struct veil_plain_exec *e, int p, size_t numel)
{
    if (IS_FIXED(e)) {
        if (!e->gw[p])
            e->gw[p] = malloc(numel * sizeof(uint64_t));
        return e->gw[p];
    }
    if (!e->gd[p])
        e->gd[p] = malloc(numel * sizeof(double));
    return e->gd[p];
}

/*
 * v = momentum v + g + weight_decay w; w' = w - lr v, in place in the parameter's array. FIXED:
 * v = trunc(v * enc(momentum)) + g + trunc(w * enc(weight_decay)) (a term is skipped when its
 * coefficient is 0), then w' = w - trunc(v * enc(lr)). Velocity starts at 0 (first use). The
 * node holds no value (plain_internal.h); the applied gradient is copied for the trainer.
 */
int veil_plain_sgd_update(struct veil_plain_exec *e, const struct veil_node *n)
{
    const int p = n->in[0], g = n->in[1];
    const size_t count = n->numel ? n->numel : 1;
    const double mom = n->a.momentum, wd = n->a.weight_decay, lr = n->a.lr;
    const int gm = n->a.grad_mul > 1 ? n->a.grad_mul : 1;
    void *gs = grad_slot(e, p, count);
    if (IS_FIXED(e) && !e->vw[p])
        e->vw[p] = calloc(count, sizeof(uint64_t));
    if (!IS_FIXED(e) && !e->vd[p])
        e->vd[p] = calloc(count, sizeof(double));
    if (!gs || (IS_FIXED(e) ? !e->vw[p] : !e->vd[p]))
        return veil_error(VEIL_ERR_NOMEM, "plain run: sgd_update '%s': out of memory", n->name);
    if (!IS_FIXED(e)) {
        double *w = e->d[p], *v = e->vd[p];
        const double *gr = e->d[g];
        double *ga = gs;
        for (size_t k = 0; k < n->numel; k++) {
            ga[k] = (double)gm * gr[k];
            v[k] = mom * v[k] + ga[k] + wd * w[k];
            w[k] -= lr * v[k];
        }
        return VEIL_OK;
    }
    const int f = e->f;
    const uint64_t em = veil_plain_enc(mom, f), ewd = veil_plain_enc(wd, f);
    const uint64_t elr = veil_plain_enc(lr, f);
    uint64_t *w = e->w[p], *v = e->vw[p];
    const uint64_t *gr = e->w[g];
    uint64_t *ga = gs;
    for (size_t k = 0; k < n->numel; k++) {
        ga[k] = (uint64_t)gm * gr[k]; /* exact in the ring: a public integer */
        uint64_t nv = ga[k];
        if (mom != 0.0)
            nv += veil_plain_trunc(e, v[k] * em, f);
        if (wd != 0.0)
            nv += veil_plain_trunc(e, w[k] * ewd, f);
        v[k] = nv;
        w[k] -= veil_plain_trunc(e, nv * elr, f);
    }
    return VEIL_OK;
}

int veil_plain_exec_average_replicas(struct veil_plain_exec *e)
{
    const veil_plan_t *p = e->p;
    const int r = p->opts.microbatches, f = e->f;
    const uint64_t inv = veil_plain_enc(1.0 / r, f);
    for (size_t i = 0; i < p->count; i++) {
        const struct veil_node *n = &p->nodes[i];
        int reps[VEIL_MAX_REPLICAS], nr;
        int rc = veil_plan_replicas(p, i, reps, &nr);
        if (rc != VEIL_OK)
            return veil_error(rc, "plain run: %s", veil_last_error());
        if (nr == 0)
            continue;
        for (size_t k = 0; k < n->numel; k++) {
            if (IS_FIXED(e)) {
                uint64_t sum = 0;
                for (int q = 0; q < nr; q++)
                    sum += e->w[reps[q]][k];
                const uint64_t a = veil_plain_trunc(e, sum * inv, f);
                for (int q = 0; q < nr; q++)
                    e->w[reps[q]][k] = a;
            } else {
                double sum = 0.0;
                for (int q = 0; q < nr; q++)
                    sum += e->d[reps[q]][k];
                const double a = sum * (1.0 / r);
                for (int q = 0; q < nr; q++)
                    e->d[reps[q]][k] = a;
            }
        }
    }
    return VEIL_OK;
}

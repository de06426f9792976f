/*
 * lower_backward.c — secure lowerings of the backward ops and the SGD update, each a row's `lower`
 * in the op table (graph/ops.c; MUL's is in op_elementwise.c), the replicas' weight averaging and
 * the opt-in loss reveal (semantics and the BACKWARD FIXED-POINT SEQUENCES in graph_internal.h,
 * the lowering contract in exec_internal.h). Each mirrors the plaintext FIXED executor (plain_backward.c, plain_backward_nn.c) step for
 * step: products of two secrets are exact Beaver products followed by one veil_mpc_trunc,
 * products by the forward's 0/1 masks and routes are Beaver products without truncation,
 * products by public reals go through veil_exec_scale, and sums, broadcasts and scatters are
 * local. The secure result therefore equals the plaintext FIXED one up to the secure
 * truncation's 0/+1 ulp per truncation (and what those ulps become downstream).
 */
#include "config.h"

#include "base/base_internal.h"
#include "graph/secure/exec_internal.h"
#include "tasks/beaver.h"
#include "tasks/gelu.h"
#include "tasks/nonlinear_internal.h"
#include "tasks/pool.h"
#include "tasks/trunc.h"

#include <string.h>

#define VAL(x, i) (&(x)->val[(i)])

/* Releases every tensor of a list (empty ones are fine). */
static void release_all(struct veil_exec *x, struct veil_sec *t, int n)
{
    for (int i = 0; i < n; i++)
        veil_mpc_release(x->m, &t[i]);
}

/* A shape-only tensor (no data) with n's shape tiled by tile: the `like` of the layout helpers. */
static struct veil_sec shape_of(const struct veil_node *n, size_t tile)
{
    struct veil_sec s;
    memset(&s, 0, sizeof s);
    s.kind = VEIL_SHARE_ARITH;
    s.ndim = n->ndim;
    memcpy(s.dims, n->dims, sizeof s.dims);
    s.numel = n->numel;
    s.tile = tile;
    return s;
}

/* ---- products ------------------------------------------------------------------------------ */

/* a . b^T (MATMUL_NT) or a^T . b (MATMUL_TN); arg: the node. */
static int matmul_grad_protocol(struct veil_exec *x, const struct veil_sec *a,
                                const struct veil_sec *b, const void *arg, struct veil_sec *y)
{
    const struct veil_node *n = arg;
    return n->op == VEIL_OP_MATMUL_NT ? veil_mpc_matmul_nt(x->m, a, b, y)
                                      : veil_mpc_matmul_tn(x->m, a, b, y);
}

/* MATMUL_NT y = trunc(a . b^T), MATMUL_TN y = trunc(a^T . b): one trunc per entry. */
int veil_lower_matmul_grad(struct veil_exec *x, const struct veil_node *n)
{
    return veil_exec_product(x, VAL(x, n->in[0]), VAL(x, n->in[1]), matmul_grad_protocol, n,
                             VAL(x, n->index));
}

/* The convolution geometry of conv node c. */
static struct veil_conv_geom conv_geom(const struct veil_exec *x, const struct veil_node *c)
{
    const struct veil_node *xn = &x->p->nodes[c->in[0]], *wn = &x->p->nodes[c->in[1]];
    struct veil_conv_geom g = {xn->dims[0], xn->dims[1],         xn->dims[2],
                               xn->dims[3], wn->dims[0],         wn->dims[2],
                               wn->dims[3], (size_t)c->a.stride, (size_t)c->a.pad};
    return g;
}

/* The input or weight gradient of the convolution node n->fwd; arg: the node. */
static int conv_grad_protocol(struct veil_exec *x, const struct veil_sec *a,
                              const struct veil_sec *b, const void *arg, struct veil_sec *y)
{
    const struct veil_node *n = arg;
    const struct veil_conv_geom g = conv_geom(x, &x->p->nodes[n->fwd]);
    return n->op == VEIL_OP_CONV_GRAD_INPUT ? veil_mpc_conv2d_grad_input(x->m, a, b, &g, y)
                                            : veil_mpc_conv2d_grad_weight(x->m, a, b, &g, y);
}

/* CONV_GRAD_INPUT dx = trunc(col2im(W^T . dY)), CONV_GRAD_WEIGHT dW = trunc(sum_b dY_b .
 * im2col(x_b)^T): the protocols are exact in the ring, one truncation per element after. */
int veil_lower_conv_grad(struct veil_exec *x, const struct veil_node *n)
{
    return veil_exec_product(x, VAL(x, n->in[0]), VAL(x, n->in[1]), conv_grad_protocol, n,
                             VAL(x, n->index));
}

/* ---- sums and rearrangements ---------------------------------------------------------------- */

/* SUM_ROWS (r, c) -> (c), SUM_CHANNELS (B, C, H, W) -> (C): exact local sums. */
int veil_lower_sum(struct veil_exec *x, const struct veil_node *n)
{
    const struct veil_node *in = &x->p->nodes[n->in[0]];
    const size_t k = n->op == VEIL_OP_SUM_ROWS ? 1 : in->dims[2] * in->dims[3];
    return veil_exec_fold(x, VAL(x, n->in[0]), k, n->ndim, n->dims, VAL(x, n->index));
}

/* SLICE: the part [start, start + dims[axis]) of in[0] along axis (a concat's gradient). */
int veil_lower_slice(struct veil_exec *x, const struct veil_node *n)
{
    const struct veil_node *in = &x->p->nodes[n->in[0]];
    const int ax = n->a.axis;
    size_t inner = 1;
    for (int d = ax + 1; d < n->ndim; d++)
        inner *= n->dims[d];
    if (n->a.start + n->dims[ax] > in->dims[ax])
        return veil_error(VEIL_ERR_STATE, "slice [%zu, %zu) is outside axis %d of '%s' (%zu)",
                          n->a.start, n->a.start + n->dims[ax], ax, in->name, in->dims[ax]);
    struct veil_sec *y = VAL(x, n->index);
    int rc = veil_sec_init(x->m, y, VEIL_SHARE_ARITH, n->ndim, n->dims, x->tile);
    if (rc != VEIL_OK)
        return rc;
    struct veil_flatop_args a;
    memset(&a, 0, sizeof a);
    a.kind = VEIL_FLATOP_SLICE;
    a.k = n->dims[ax] * inner;
    a.c[0] = in->dims[ax] * inner;
    a.c[1] = n->a.start * inner;
    struct veil_sec *outs[1] = {y};
    const struct veil_sec *ins[1] = {VAL(x, n->in[0])};
    return veil_nl_flat(x->m, a, outs, 1, ins, 1);
}

/* ---- relu and pooling ----------------------------------------------------------------------- */

/* RELU_GRAD dx = dy * mask: the mask is 0/1 (not encoded), so no truncation. */
int veil_lower_relu_grad(struct veil_exec *x, const struct veil_node *n)
{
    const struct veil_sec *mask = &x->aux[n->fwd][0];
    if (mask->numel != n->numel)
        return veil_error(VEIL_ERR_STATE, "the relu '%s' kept no mask (not run this step)",
                          x->p->nodes[n->fwd].name);
    struct veil_sec t;
    const struct veil_sec *dy;
    int rc = veil_exec_like_layout(x, VAL(x, n->in[0]), mask, &t, &dy);
    if (rc == VEIL_OK)
        rc = veil_mpc_mul(x->m, dy, mask, VAL(x, n->index));
    veil_mpc_release(x->m, &t);
    return rc;
}

/* GELU_GRAD dx = dy GELU'(x) (tasks/gelu.h) from the gelu's saved bits and v, laid out like v. */
int veil_lower_gelu_grad(struct veil_exec *x, const struct veil_node *n)
{
    const struct veil_sec *bits = &x->aux[n->fwd][0], *v = &x->aux[n->fwd][1];
    if (v->numel != n->numel || bits->numel != 2 * n->numel)
        return veil_error(VEIL_ERR_STATE, "the gelu '%s' kept no state (not run this step)",
                          x->p->nodes[n->fwd].name);
    struct veil_sec t[2];
    memset(t, 0, sizeof t);
    const struct veil_sec *dy, *xv;
    int rc = veil_exec_like_layout(x, VAL(x, n->in[0]), v, &t[0], &dy);
    if (rc == VEIL_OK)
        rc = veil_exec_like_layout(x, VAL(x, n->in[1]), v, &t[1], &xv);
    if (rc == VEIL_OK)
        rc = veil_mpc_gelu_grad(x->m, dy, xv, bits, v, VAL(x, n->index));
    release_all(x, t, 2);
    return rc;
}

/* MAXPOOL_GRAD (route * dy scattered, exact) and AVGPOOL_GRAD (trunc(dy * q) scattered). */
int veil_lower_pool_grad(struct veil_exec *x, const struct veil_node *n)
{
    const struct veil_node *pn = &x->p->nodes[n->fwd];
    struct veil_pool_geom g = {n->dims[0],      n->dims[1],           n->dims[2], n->dims[3],
                               (size_t)pn->a.k, (size_t)pn->a.stride, 0,          0};
    struct veil_sec *y = VAL(x, n->index);
    int rc;
    if (n->op == VEIL_OP_MAXPOOL_GRAD) {
        const struct veil_sec *route = &x->aux[n->fwd][0];
        if (route->numel != pn->numel * g.k * g.k)
            return veil_error(VEIL_ERR_STATE, "the maxpool '%s' kept no route (not run this "
                              "step)", pn->name);
        rc = veil_mpc_maxpool2d_backward(x->m, route, VAL(x, n->in[0]), &g, y);
    } else {
        rc = veil_mpc_avgpool2d_backward(x->m, VAL(x, n->in[0]), &g, y);
    }
    return rc == VEIL_OK ? veil_exec_retile(x, y) : rc;
}

/* GAVGPOOL_GRAD dx[b, c, :, :] = trunc(dy[b, c] * enc(1/(H W))), broadcast over the pixels. */
int veil_lower_gavgpool_grad(struct veil_exec *x, const struct veil_node *n)
{
    const size_t hw = n->dims[2] * n->dims[3];
    const struct veil_sec like = shape_of(n, x->tile);
    struct veil_sec t;
    int rc = veil_exec_scale(x, VAL(x, n->in[0]), 1.0 / (double)hw, &t);
    if (rc == VEIL_OK)
        rc = veil_exec_broadcast(x, &t, hw, &like, VAL(x, n->index));
    veil_mpc_release(x->m, &t);
    return rc;
}

/* ---- normalisation, softmax, loss ----------------------------------------------------------- */

/*
 * LAYERNORM_GRAD, per row of d: g = trunc(dy * gamma); m1 = trunc(sum(g) * enc(1/d));
 * m2 = trunc(trunc(sum(g * xhat)) * enc(1/d)); u = g - m1 - trunc(xhat * m2); dx = trunc(r * u).
 * Everything is laid out like the saved xhat.
 */
int veil_lower_layernorm_grad(struct veil_exec *x, const struct veil_node *n)
{
    const struct veil_node *ln = &x->p->nodes[n->fwd];
    const struct veil_sec *xhat = &x->aux[n->fwd][0], *r = &x->aux[n->fwd][1];
    const size_t d = n->dims[n->ndim - 1], rows = n->numel / d, rdims[1] = {rows};
    if (xhat->numel != n->numel || r->numel != rows)
        return veil_error(VEIL_ERR_STATE, "the layer norm '%s' kept no state (not run this "
                          "step)", ln->name);
    enum { DY, BG, G, S1, M1, P, S2, M2, BM2, Q, BM1, U0, U, BR, NT };
    struct veil_sec t[NT];
    memset(t, 0, sizeof t);
    const struct veil_sec *dy;
    veil_mpc_t *m = x->m;
    int rc = veil_exec_like_layout(x, VAL(x, n->in[0]), xhat, &t[DY], &dy);
    if (rc == VEIL_OK)
        rc = veil_exec_broadcast(x, VAL(x, ln->in[1]), 1, xhat, &t[BG]);
    if (rc == VEIL_OK)
        rc = veil_exec_mul_trunc(x, dy, &t[BG], &t[G]);
    if (rc == VEIL_OK)
        rc = veil_exec_rowsum(x, &t[G], d, 1, rdims, &t[S1]);
    if (rc == VEIL_OK)
        rc = veil_exec_scale(x, &t[S1], 1.0 / (double)d, &t[M1]);
    if (rc == VEIL_OK)
        rc = veil_mpc_mul(m, &t[G], xhat, &t[P]);
    if (rc == VEIL_OK)
        rc = veil_exec_rowsum(x, &t[P], d, 1, rdims, &t[S2]);
    if (rc == VEIL_OK)
        rc = veil_exec_trunc_inplace(x, &t[S2]);
    if (rc == VEIL_OK)
        rc = veil_exec_scale(x, &t[S2], 1.0 / (double)d, &t[M2]);
    if (rc == VEIL_OK)
        rc = veil_exec_broadcast(x, &t[M2], d, xhat, &t[BM2]);
    if (rc == VEIL_OK)
        rc = veil_exec_mul_trunc(x, xhat, &t[BM2], &t[Q]);
    if (rc == VEIL_OK)
        rc = veil_exec_broadcast(x, &t[M1], d, xhat, &t[BM1]);
    if (rc == VEIL_OK)
        rc = veil_mpc_sub(m, &t[G], &t[BM1], &t[U0]);
    if (rc == VEIL_OK)
        rc = veil_mpc_sub(m, &t[U0], &t[Q], &t[U]);
    if (rc == VEIL_OK)
        rc = veil_exec_broadcast(x, r, d, xhat, &t[BR]);
    if (rc == VEIL_OK)
        rc = veil_exec_mul_trunc(x, &t[BR], &t[U], VAL(x, n->index));
    release_all(x, t, NT);
    return rc;
}

/* LAYERNORM_GRAD_GAMMA dgamma_j = trunc(sum over rows of dy * xhat): one truncation. */
int veil_lower_layernorm_grad_gamma(struct veil_exec *x, const struct veil_node *n)
{
    const struct veil_sec *xhat = &x->aux[n->fwd][0];
    if (xhat->numel != x->p->nodes[n->fwd].numel)
        return veil_error(VEIL_ERR_STATE, "the layer norm '%s' kept no state (not run this "
                          "step)", x->p->nodes[n->fwd].name);
    struct veil_sec t[2];
    memset(t, 0, sizeof t);
    const struct veil_sec *dy;
    struct veil_sec *y = VAL(x, n->index);
    int rc = veil_exec_like_layout(x, VAL(x, n->in[0]), xhat, &t[0], &dy);
    if (rc == VEIL_OK)
        rc = veil_mpc_mul(x->m, dy, xhat, &t[1]);
    if (rc == VEIL_OK)
        rc = veil_exec_fold(x, &t[1], 1, n->ndim, n->dims, y);
    if (rc == VEIL_OK)
        rc = veil_exec_trunc_inplace(x, y);
    release_all(x, t, 2);
    return rc;
}

/* SOFTMAX_GRAD t = trunc(dy * s); q = rowsum(t); dx = trunc(s * (dy - bcast(q))). */
int veil_lower_softmax_grad(struct veil_exec *x, const struct veil_node *n)
{
    const struct veil_sec *s = &x->aux[n->fwd][0];
    const size_t k = n->dims[n->ndim - 1], rdims[1] = {n->numel / k};
    if (s->numel != n->numel)
        return veil_error(VEIL_ERR_STATE, "the softmax '%s' kept no output (not run this step)",
                          x->p->nodes[n->fwd].name);
    enum { DY, T, Q, BQ, D, NT };
    struct veil_sec t[NT];
    memset(t, 0, sizeof t);
    const struct veil_sec *dy;
    int rc = veil_exec_like_layout(x, VAL(x, n->in[0]), s, &t[DY], &dy);
    if (rc == VEIL_OK)
        rc = veil_exec_mul_trunc(x, dy, s, &t[T]);
    if (rc == VEIL_OK)
        rc = veil_exec_rowsum(x, &t[T], k, 1, rdims, &t[Q]);
    if (rc == VEIL_OK)
        rc = veil_exec_broadcast(x, &t[Q], k, s, &t[BQ]);
    if (rc == VEIL_OK)
        rc = veil_mpc_sub(x->m, dy, &t[BQ], &t[D]);
    if (rc == VEIL_OK)
        rc = veil_exec_mul_trunc(x, s, &t[D], VAL(x, n->index));
    release_all(x, t, NT);
    return rc;
}

/* XENT_GRAD dlogits = trunc((s - labels) * enc(1/B)), s the loss's saved softmax. */
int veil_lower_xent_grad(struct veil_exec *x, const struct veil_node *n)
{
    const struct veil_node *loss = &x->p->nodes[n->fwd];
    const struct veil_sec *s = &x->aux[n->fwd][0];
    if (s->numel != n->numel || VAL(x, loss->in[1])->numel != n->numel)
        return veil_error(VEIL_ERR_STATE, "the loss '%s' was not computed in this step",
                          loss->name);
    struct veil_sec t[2];
    memset(t, 0, sizeof t);
    const struct veil_sec *lab;
    int rc = veil_exec_like_layout(x, VAL(x, loss->in[1]), s, &t[0], &lab);
    if (rc == VEIL_OK)
        rc = veil_mpc_sub(x->m, s, lab, &t[1]);
    if (rc == VEIL_OK)
        rc = veil_exec_scale(x, &t[1], 1.0 / (double)n->dims[0], VAL(x, n->index));
    release_all(x, t, 2);
    return rc;
}

/* ---- SGD ------------------------------------------------------------------------------------- */

/*
 * v = trunc(v * enc(momentum)) + g + trunc(w * enc(weight_decay)) (terms with a zero
 * coefficient skipped; v starts as a zero sharing, whose truncated product is exactly 0 as in
 * the plaintext); w' = w - trunc(v * enc(lr)). w' replaces the parameter's tensor (the old one
 * released: the backward ops reading w were all lowered before, autodiff.c) and v is kept in
 * x->velocity, both with the parameter's layout.
 */
int veil_lower_sgd_update(struct veil_exec *x, const struct veil_node *n)
{
    const int pi = n->in[0];
    struct veil_sec *w = VAL(x, pi), *v = &x->velocity[pi];
    enum { G, GM, MV, A1, WD, NV, DW, W1, NT };
    struct veil_sec t[NT];
    memset(t, 0, sizeof t);
    const struct veil_sec *g;
    int rc = VEIL_OK;
    if (v->numel == 0)
        rc = veil_exec_public_share(x, w->ndim, w->dims, w->tile, NULL, v);
    if (rc == VEIL_OK)
        rc = veil_exec_like_layout(x, VAL(x, n->in[1]), w, &t[G], &g);
    /* weight averaging: R g, a product by a public integer (exact, no truncation) */
    if (rc == VEIL_OK && n->a.grad_mul > 1) {
        rc = veil_exec_scale(x, g, (double)n->a.grad_mul, &t[GM]);
        g = &t[GM];
    }
    const struct veil_sec *acc = g;
    if (rc == VEIL_OK && n->a.momentum != 0.0) {
        rc = veil_exec_scale(x, v, n->a.momentum, &t[MV]);
        if (rc == VEIL_OK)
            rc = veil_mpc_add(x->m, &t[MV], acc, &t[A1]);
        acc = &t[A1];
    }
    if (rc == VEIL_OK && n->a.weight_decay != 0.0) {
        rc = veil_exec_scale(x, w, n->a.weight_decay, &t[WD]);
        if (rc == VEIL_OK)
            rc = veil_mpc_add(x->m, acc, &t[WD], &t[NV]);
    } else if (rc == VEIL_OK) {
        rc = veil_exec_copy(x, acc, acc->ndim, acc->dims, acc->tile, &t[NV]);
    }
    if (rc == VEIL_OK)
        rc = veil_exec_scale(x, &t[NV], n->a.lr, &t[DW]);
    if (rc == VEIL_OK)
        rc = veil_mpc_sub(x->m, w, &t[DW], &t[W1]);
    if (rc == VEIL_OK) {
        veil_mpc_release(x->m, w);
        *w = t[W1];
        veil_mpc_release(x->m, v);
        *v = t[NV];
        memset(&t[W1], 0, sizeof t[W1]);
        memset(&t[NV], 0, sizeof t[NV]);
    }
    release_all(x, t, NT);
    return rc;
}

int veil_exec_average_replicas(struct veil_exec *x)
{
    const veil_plan_t *p = x->p;
    const int r = p->opts.microbatches;
    int rc = VEIL_OK;
    for (size_t i = 0; i < p->count && rc == VEIL_OK; i++) {
        int reps[VEIL_MAX_REPLICAS], nr;
        if ((rc = veil_plan_replicas(p, i, reps, &nr)) != VEIL_OK)
            return veil_error(rc, "secure run: %s", veil_last_error());
        if (nr == 0)
            continue;
        struct veil_sec *w0 = VAL(x, reps[0]);
        enum { SUM, NEXT, LIKE, AVG, NT };
        struct veil_sec t[NT];
        memset(t, 0, sizeof t);
        rc = veil_exec_copy(x, w0, w0->ndim, w0->dims, w0->tile, &t[SUM]);
        for (int q = 1; q < nr && rc == VEIL_OK; q++) {
            const struct veil_sec *wq;
            rc = veil_exec_like_layout(x, VAL(x, reps[q]), w0, &t[LIKE], &wq);
            if (rc == VEIL_OK)
                rc = veil_mpc_add(x->m, &t[SUM], wq, &t[NEXT]);
            if (rc == VEIL_OK) {
                veil_mpc_release(x->m, &t[SUM]);
                t[SUM] = t[NEXT];
                memset(&t[NEXT], 0, sizeof t[NEXT]);
            }
            veil_mpc_release(x->m, &t[LIKE]);
        }
        if (rc == VEIL_OK)
            rc = veil_exec_scale(x, &t[SUM], 1.0 / r, &t[AVG]);
        /* every replica takes its own copy of the mean, in its own layout */
        for (int q = 0; q < nr && rc == VEIL_OK; q++) {
            struct veil_sec *wq = VAL(x, reps[q]), nw;
            memset(&nw, 0, sizeof nw);
            rc = veil_exec_copy(x, &t[AVG], wq->ndim, wq->dims, wq->tile, &nw);
            if (rc == VEIL_OK) {
                veil_mpc_release(x->m, wq);
                *wq = nw;
            }
        }
        release_all(x, t, NT);
    }
    return rc;
}

int veil_exec_reveal_true_prob(struct veil_exec *x, const struct veil_node *n, int to,
                               struct veil_pub *out)
{
    const struct veil_sec *s = &x->aux[n->index][0];
    const size_t k = s->dims[s->ndim - 1], rdims[1] = {s->numel / k};
    struct veil_sec t[3];
    memset(t, 0, sizeof t);
    const struct veil_sec *lab;
    int rc = veil_exec_like_layout(x, VAL(x, n->in[1]), s, &t[0], &lab);
    if (rc == VEIL_OK)
        rc = veil_mpc_mul(x->m, s, lab, &t[1]);
    if (rc == VEIL_OK)
        rc = veil_exec_rowsum(x, &t[1], k, 1, rdims, &t[2]);
    if (rc == VEIL_OK)
        rc = veil_exec_trunc_inplace(x, &t[2]);
    veil_mpc_release(x->m, out);
    if (rc == VEIL_OK)
        rc = veil_mpc_reveal(x->m, &t[2], to, out);
    release_all(x, t, 3);
    return rc;
}

/*
 * lower_forward.c — secure lowerings of the linear, pooling and rearranging forward ops, each a
 * row's `lower` in the op table (graph/ops.c; contract in exec_internal.h). Each follows graph_internal.h's FIXED-POINT
 * SEQUENCES step for step, so the secure run equals the plaintext FIXED executor up to the
 * secure truncation's 0/1 ulp per truncation: products are exact Beaver products
 * (tasks/beaver.h, tasks/wstat.h when weights are stationary), then one truncation
 * (tasks/trunc.h), then the bias. The nonlinear ops are in lower_nn.c.
 */
#include "config.h"

#include "base/base_internal.h"
#include "graph/secure/exec_internal.h"
#include "tasks/beaver.h"
#include "tasks/beaver_internal.h"
#include "tasks/compare.h"
#include "tasks/nonlinear_internal.h"
#include "tasks/pool.h"
#include "tasks/trunc.h"

#include <string.h>

#define VAL(x, i) (&(x)->val[(i)])

/* The weight-stationary state of weight node w (a PARAM), initialised at its first use, or NULL
 * when the option is off or w is not a parameter. */
static struct veil_mpc_wstat *wstat_of(struct veil_exec *x, int w, int *rc)
{
    *rc = VEIL_OK;
    if (!x->ws || x->p->nodes[w].op != VEIL_OP_PARAM)
        return NULL;
    struct veil_mpc_wstat *ws = &x->ws[w];
    if (!ws->m)
        *rc = veil_mpc_wstat_init(x->m, ws, (uint64_t)w);
    return *rc == VEIL_OK ? ws : NULL;
}

/* z = a . b; arg: the weight-stationary state of b, or NULL. */
static int matmul_protocol(struct veil_exec *x, const struct veil_sec *a, const struct veil_sec *b,
                           const void *arg, struct veil_sec *z)
{
    struct veil_mpc_wstat *ws = (struct veil_mpc_wstat *)arg;
    return ws ? veil_mpc_matmul_ws(x->m, a, b, ws, z) : veil_mpc_matmul(x->m, a, b, z);
}

/* z = trunc(a . b) for 2-D a (m, k) and b (k, n), tiled; ws: weight-stationary state of b. */
static int matmul_trunc(struct veil_exec *x, const struct veil_sec *a, const struct veil_sec *b,
                        struct veil_mpc_wstat *ws, struct veil_sec *z)
{
    return veil_exec_product(x, a, b, matmul_protocol, ws, z);
}

/* u = p + bias 2^f (floor(u / 2^f) = floor(p / 2^f) + bias), the untruncated value of linear node
 * n whose product is p (consumed: released, or moved into u without a bias). */
static int untruncated_value(struct veil_exec *x, const struct veil_node *n, struct veil_sec *p,
                             size_t inner, struct veil_sec *u)
{
    struct veil_sec bb = {0}, bs = {0};
    const struct veil_sec *bias = n->nin > 2 && n->in[2] >= 0 ? VAL(x, n->in[2]) : NULL;
    int rc = VEIL_OK;
    if (bias) {
        if ((rc = veil_exec_broadcast(x, bias, inner, p, &bb)) == VEIL_OK &&
            (rc = veil_mpc_mul_scalar(x->m, &bb, (uint64_t)1 << x->frac_bits, &bs)) == VEIL_OK)
            rc = veil_mpc_add(x->m, p, &bs, u);
    } else {
        *u = *p;
        memset(p, 0, sizeof *p);
    }
    veil_mpc_release(x->m, p);
    veil_mpc_release(x->m, &bb);
    veil_mpc_release(x->m, &bs);
    return rc;
}

/*
 * A linear layer whose ReLU runs inside a pairwise pool and compares the untruncated value
 * (veil_lower_shares_trunc): p = the product (untruncated), y = trunc(p) + bias with the
 * truncation's round unmarked (its open travels in the LTZ's first round), u = p + bias 2^f in
 * x->aux[n][0] (the same sign as y but where y = 0, whose ReLU is 0 either way). Every pipeline
 * setting computes the same words; serialized runs count the truncation's round.
 */
static int linear_shared(struct veil_exec *x, const struct veil_node *n, veil_exec_product_fn fn,
                         const void *arg, size_t inner)
{
    struct veil_sec p = {0};
    struct veil_sec *y = VAL(x, n->index);
    const struct veil_sec *bias = n->nin > 2 && n->in[2] >= 0 ? VAL(x, n->in[2]) : NULL;
    int rc = veil_exec_product_raw(x, VAL(x, n->in[0]), VAL(x, n->in[1]), fn, arg, &p);
    /* serialized, a barrier follows this node: the truncation's round is a round of its own */
    if (rc == VEIL_OK)
        rc = x->p->opts.serialized ? veil_mpc_trunc(x->m, &p, x->frac_bits, y)
                                   : veil_mpc_trunc_unmarked(x->m, &p, x->frac_bits, y);
    if (rc == VEIL_OK && bias)
        rc = veil_exec_add_broadcast(x, y, bias, inner);
    if (rc == VEIL_OK)
        return untruncated_value(x, n, &p, inner, &x->aux[n->index][0]);
    veil_mpc_release(x->m, &p);
    return rc;
}

/*
 * A linear layer read only by a ReLU outside a pairwise pool (hands_untruncated): its value is
 * the untruncated u = p + bias 2^f, which the ReLU, or the max pool before it, takes;
 * veil_mpc_relu_trunc truncates inside the ReLU's rounds. A pool compares u, and only the pooled
 * values are truncated: floor(max u / 2^f) = max floor(u / 2^f), floor being monotone and the
 * bias one per channel; the same values as truncating first, up to the truncation's 0/1 ulp.
 */
static int linear_untruncated(struct veil_exec *x, const struct veil_node *n,
                              veil_exec_product_fn fn, const void *arg, size_t inner)
{
    struct veil_sec p = {0};
    int rc = veil_exec_product_raw(x, VAL(x, n->in[0]), VAL(x, n->in[1]), fn, arg, &p);
    if (rc == VEIL_OK)
        return untruncated_value(x, n, &p, inner, VAL(x, n->index));
    veil_mpc_release(x->m, &p);
    return rc;
}

static int hands_untruncated(const struct veil_exec *x, const struct veil_node *n);

int veil_lower_dense(struct veil_exec *x, const struct veil_node *n)
{
    int rc;
    struct veil_mpc_wstat *ws = wstat_of(x, n->in[1], &rc);
    struct veil_sec *y = VAL(x, n->index);
    if (rc == VEIL_OK && hands_untruncated(x, n))
        return linear_untruncated(x, n, matmul_protocol, ws, 1);
    if (rc == VEIL_OK && veil_lower_shares_trunc(x, n))
        return linear_shared(x, n, matmul_protocol, ws, 1);
    if (rc == VEIL_OK)
        rc = matmul_trunc(x, VAL(x, n->in[0]), VAL(x, n->in[1]), ws, y);
    if (rc == VEIL_OK && n->nin > 2 && n->in[2] >= 0)
        rc = veil_exec_add_broadcast(x, y, VAL(x, n->in[2]), 1);
    return rc;
}

int veil_lower_matmul(struct veil_exec *x, const struct veil_node *n)
{
    return matmul_trunc(x, VAL(x, n->in[0]), VAL(x, n->in[1]), NULL, VAL(x, n->index));
}

struct conv_args {
    struct veil_conv_geom g;
    struct veil_mpc_wstat *ws; /* weight-stationary state of the weight, or NULL */
};

static int conv_protocol(struct veil_exec *x, const struct veil_sec *in, const struct veil_sec *w,
                         const void *arg, struct veil_sec *y)
{
    const struct conv_args *c = arg;
    return c->ws ? veil_mpc_conv2d_ws(x->m, in, w, &c->g, c->ws, y)
                 : veil_mpc_conv2d(x->m, in, w, &c->g, y);
}

int veil_lower_conv2d(struct veil_exec *x, const struct veil_node *n)
{
    const struct veil_node *xn = &x->p->nodes[n->in[0]], *wn = &x->p->nodes[n->in[1]];
    struct conv_args c = {.g = {xn->dims[0], xn->dims[1], xn->dims[2], xn->dims[3], wn->dims[0],
                                wn->dims[2], wn->dims[3], (size_t)n->a.stride, (size_t)n->a.pad}};
    int rc;
    c.ws = wstat_of(x, n->in[1], &rc);
    struct veil_sec *y = VAL(x, n->index);
    if (rc == VEIL_OK && hands_untruncated(x, n))
        return linear_untruncated(x, n, conv_protocol, &c, n->dims[2] * n->dims[3]);
    if (rc == VEIL_OK && veil_lower_shares_trunc(x, n))
        return linear_shared(x, n, conv_protocol, &c, n->dims[2] * n->dims[3]);
    if (rc == VEIL_OK)
        rc = veil_exec_product(x, VAL(x, n->in[0]), VAL(x, n->in[1]), conv_protocol, &c, y);
    if (rc == VEIL_OK && n->nin > 2 && n->in[2] >= 0)
        rc = veil_exec_add_broadcast(x, y, VAL(x, n->in[2]), n->dims[2] * n->dims[3]);
    return rc;
}

int veil_lower_prime_weights(struct veil_exec *x)
{
    int rc = VEIL_OK, primed = 0;
    for (size_t i = 0; x->ws && i < x->p->nforward && rc == VEIL_OK; i++) {
        const struct veil_node *n = &x->p->nodes[i];
        if (n->op != VEIL_OP_DENSE && n->op != VEIL_OP_CONV2D)
            continue;
        struct veil_mpc_wstat *ws = wstat_of(x, n->in[1], &rc);
        if (!ws || veil_mpc_wstat_bound(ws))
            continue;
        /* an item of the weight: only its kind, weight id and mask size matter here */
        const struct veil_node *xn = &x->p->nodes[n->in[0]], *wn = &x->p->nodes[n->in[1]];
        const uint64_t wid = ws->wid;
        const struct veil_preproc_item like =
            n->op == VEIL_OP_DENSE
                ? veil_preproc_item_matmul_ws(0, 1, wn->dims[0], wn->dims[1], wid)
                : veil_preproc_item_conv_ws(0, xn->dims[0], xn->dims[1], xn->dims[2], xn->dims[3],
                                            wn->dims[0], wn->dims[2], wn->dims[3],
                                            (size_t)n->a.stride, (size_t)n->a.pad, wid);
        rc = veil_mpc_wstat_prime(x->m, ws, VAL(x, n->in[1]), &like);
        primed = 1;
    }
    if (rc == VEIL_OK && primed)
        veil_mpc_round(x->m); /* every weight's E = W - B in one round */
    return rc;
}

/* 1 when no node before n's last reader reads n (that reader is its only one). */
static int read_once(const veil_plan_t *p, const struct veil_node *n)
{
    for (int i = n->index + 1; i < n->last_use; i++)
        for (int k = 0; k < p->nodes[i].nin; k++)
            if (p->nodes[i].in[k] == n->index)
                return 0;
    return 1;
}

/* The window count of maxpool node pn, over every micro-batch (veil_exec_batch_rows). */
static size_t pool_rows(const struct veil_exec *x, const struct veil_node *pn)
{
    return veil_exec_batch_rows(x, pn, pn->dims[0] * pn->dims[1] * pn->dims[2] * pn->dims[3]);
}

/*
 * The max pool that ReLU node r's value goes to alone, or NULL: r is that pool's operand and read
 * by nothing else, neither r nor the pool keeps state for a backward pass, r is no output, r is
 * its own operand's last reader (the operand moves into r's slot). Such a ReLU is computed by or
 * after the pool (relu_fused, relu_after_pool), never before it.
 */
static const struct veil_node *relu_pool(const struct veil_exec *x, const struct veil_node *r)
{
    const veil_plan_t *p = x->p;
    if (r->op != VEIL_OP_RELU || r->saved || r->output >= 0 || r->last_use < 0)
        return NULL;
    const struct veil_node *src = &p->nodes[r->in[0]], *pn = &p->nodes[r->last_use];
    if (src->last_use != r->index || src->op == VEIL_OP_PARAM || src->saved)
        return NULL;
    if (pn->op != VEIL_OP_MAXPOOL || pn->saved || pn->in[0] != r->index || !read_once(p, r))
        return NULL;
    return pn;
}

/* 1 when the pairwise rule takes max pool pn's windows with the constant 0 beside them. */
static int pool_takes_zero(const struct veil_exec *x, const struct veil_node *pn)
{
    const size_t kk = (size_t)pn->a.k * (size_t)pn->a.k;
    return veil_pool_pairwise_pays(pool_rows(x, pn), kk + 1);
}

/* 1 when ReLU node r runs inside its max pool as max(0, window max) (pool.h, PAIRWISE). */
static int relu_fused(const struct veil_exec *x, const struct veil_node *r)
{
    const struct veil_node *pn = relu_pool(x, r);
    return pn && pool_takes_zero(x, pn);
}

/*
 * 1 when ReLU node r runs after its max pool instead (the windows too many for the pairwise
 * rule): the pool compares r's operand and the ReLU takes the pool's output, relu(window max) =
 * window max of the ReLUs (both monotone), the same words with k k times fewer values through
 * the ReLU's comparison. A linear layer before hands the pool its untruncated value
 * (hands_untruncated), and only the pooled values are truncated, inside the ReLU.
 */
static int relu_after_pool(const struct veil_exec *x, const struct veil_node *r)
{
    const struct veil_node *pn = relu_pool(x, r);
    return pn && !pool_takes_zero(x, pn);
}

/* The ReLU that linear node n (dense, conv2d) is read by alone, in inference (neither keeps state
 * for a backward pass, n is no output), or NULL. */
static const struct veil_node *only_relu(const struct veil_exec *x, const struct veil_node *n)
{
    const veil_plan_t *p = x->p;
    if ((n->op != VEIL_OP_DENSE && n->op != VEIL_OP_CONV2D) || n->saved || n->output >= 0 ||
        n->last_use < 0)
        return NULL;
    const struct veil_node *r = &p->nodes[n->last_use];
    return r->op == VEIL_OP_RELU && r->in[0] == n->index && !r->saved && read_once(p, n) ? r : NULL;
}

/* 1 when linear node n is read only by a ReLU that does not run inside a pairwise pool: n hands
 * it, or the max pool the ReLU runs after, its untruncated value (linear_untruncated), and the
 * ReLU truncates with no round of its own (veil_mpc_relu_trunc). */
static int hands_untruncated(const struct veil_exec *x, const struct veil_node *n)
{
    const struct veil_node *r = only_relu(x, n);
    return r && !relu_fused(x, r);
}

int veil_lower_shares_trunc(const struct veil_exec *x, const struct veil_node *n)
{
    const struct veil_node *r = only_relu(x, n);
    return r && relu_fused(x, r);
}

int veil_lower_no_barrier_after(const struct veil_exec *x, const struct veil_node *n)
{
    return veil_lower_shares_trunc(x, n) ||
           (relu_fused(x, n) && veil_lower_shares_trunc(x, &x->p->nodes[n->in[0]]));
}

int veil_lower_relu(struct veil_exec *x, const struct veil_node *n)
{
    const struct veil_node *src = &x->p->nodes[n->in[0]];
    if (relu_pool(x, n)) { /* the pool computes it or is followed by it: hand the operand (and
                            * u, when fused) over unchanged */
        struct veil_sec *in = VAL(x, n->in[0]);
        *VAL(x, n->index) = *in;
        memset(in, 0, sizeof *in);
        if (veil_lower_shares_trunc(x, src)) {
            struct veil_sec *u = &x->aux[src->index][0];
            x->aux[n->index][0] = *u;
            memset(u, 0, sizeof *u);
        }
        return VEIL_OK;
    }
    if (hands_untruncated(x, src)) /* relu(trunc(u)), the truncation inside the ReLU's rounds */
        return veil_mpc_relu_trunc(x->m, VAL(x, n->in[0]), x->frac_bits, VAL(x, n->index));
    return veil_mpc_relu(x->m, VAL(x, n->in[0]), VAL(x, n->index),
                         n->saved ? &x->aux[n->index][0] : NULL);
}

int veil_lower_pool(struct veil_exec *x, const struct veil_node *n)
{
    const struct veil_node *xn = &x->p->nodes[n->in[0]];
    struct veil_pool_geom g = {xn->dims[0],    xn->dims[1],         xn->dims[2], xn->dims[3],
                               (size_t)n->a.k, (size_t)n->a.stride, 0,           0};
    /* fewer rounds for more bytes where the windows are few (pool.h, PAIRWISE); a ReLU before
     * it in the same rounds, its operand still the ReLU's input (relu_fused) */
    g.relu = n->op == VEIL_OP_MAXPOOL && relu_fused(x, xn);
    const int relu_after = n->op == VEIL_OP_MAXPOOL && relu_after_pool(x, xn);
    g.pairwise =
        g.relu || (n->op == VEIL_OP_MAXPOOL && veil_pool_pairwise_pays(pool_rows(x, n), g.k * g.k));
    struct veil_sec *y = VAL(x, n->index);
    /* the linear layer's untruncated value, moved along by the ReLU */
    const struct veil_sec *u =
        g.relu && veil_lower_shares_trunc(x, &x->p->nodes[xn->in[0]]) ? &x->aux[n->in[0]][0] : NULL;
    if (relu_after) { /* the pool of the ReLU's operand, retiled, then the ReLU */
        struct veil_sec t = {0};
        int rc = veil_mpc_maxpool2d(x->m, VAL(x, n->in[0]), &g, &t, NULL);
        if (rc == VEIL_OK)
            rc = veil_exec_retile(x, &t);
        if (rc == VEIL_OK && hands_untruncated(x, &x->p->nodes[xn->in[0]]))
            rc = veil_mpc_relu_trunc(x->m, &t, x->frac_bits, y); /* pooled u: relu(trunc) */
        else if (rc == VEIL_OK)
            rc = veil_mpc_relu(x->m, &t, y, NULL);
        veil_mpc_release(x->m, &t);
        return rc;
    }
    int rc = n->op != VEIL_OP_MAXPOOL ? veil_mpc_avgpool2d(x->m, VAL(x, n->in[0]), &g, y)
             : u && u->numel          ? veil_mpc_maxpool2d_relu_of(x->m, u, VAL(x, n->in[0]), &g, y)
                                      : veil_mpc_maxpool2d(x->m, VAL(x, n->in[0]), &g, y,
                                                  n->saved ? &x->aux[n->index][0] : NULL);
    return rc == VEIL_OK ? veil_exec_retile(x, y) : rc;
}

int veil_lower_gavgpool(struct veil_exec *x, const struct veil_node *n)
{
    const struct veil_node *xn = &x->p->nodes[n->in[0]];
    const size_t hw = xn->dims[2] * xn->dims[3];
    struct veil_sec s;
    int rc = veil_exec_rowsum(x, VAL(x, n->in[0]), hw, n->ndim, n->dims, &s);
    if (rc == VEIL_OK)
        rc = veil_exec_scale(x, &s, 1.0 / (double)hw, VAL(x, n->index));
    veil_mpc_release(x->m, &s);
    return rc;
}

int veil_lower_scale(struct veil_exec *x, const struct veil_node *n)
{
    return veil_exec_scale(x, VAL(x, n->in[0]), n->a.c, VAL(x, n->index));
}

/* RESHAPE and a folded BATCHNORM (its producer already carries the folded weights): the same
 * words with another shape. When this node is the operand's last reader (and the operand is not
 * a parameter), the tensor moves instead of being copied. */
int veil_lower_reshape(struct veil_exec *x, const struct veil_node *n)
{
    if (n->op == VEIL_OP_BATCHNORM && n->folded_into < 0)
        return veil_error(VEIL_ERR_UNSUPPORTED,
                          "secure run: batchnorm '%s' was not folded into a "
                          "conv2d or dense layer; the executors only run folded batch norms",
                          n->name);
    const struct veil_node *src = &x->p->nodes[n->in[0]];
    struct veil_sec *in = VAL(x, n->in[0]), *y = VAL(x, n->index);
    if (src->last_use == n->index && src->op != VEIL_OP_PARAM && !src->saved) {
        *y = *in;
        memset(in, 0, sizeof *in);
        y->ndim = n->ndim;
        memset(y->dims, 0, sizeof y->dims);
        memcpy(y->dims, n->dims, sizeof n->dims[0] * (size_t)n->ndim);
        return VEIL_OK;
    }
    return veil_exec_copy(x, in, n->ndim, n->dims, in->tile, y);
}

int veil_lower_add(struct veil_exec *x, const struct veil_node *n)
{
    const struct veil_sec *a = VAL(x, n->in[0]), *b = VAL(x, n->in[1]);
    struct veil_sec tb;
    memset(&tb, 0, sizeof tb);
    int rc = VEIL_OK;
    if (!veil_sec_same_layout(a, b)) {
        rc = veil_exec_relayout(x, b, a, &tb);
        b = &tb;
    }
    if (rc == VEIL_OK)
        rc = veil_mpc_add(x->m, a, b, VAL(x, n->index));
    veil_mpc_release(x->m, &tb);
    return rc;
}

int veil_lower_concat(struct veil_exec *x, const struct veil_node *n)
{
    const struct veil_node *an = &x->p->nodes[n->in[0]], *bn = &x->p->nodes[n->in[1]];
    size_t inner = 1;
    for (int d = n->a.axis + 1; d < n->ndim; d++)
        inner *= n->dims[d];
    struct veil_sec *y = VAL(x, n->index);
    int rc = veil_sec_init(x->m, y, VEIL_SHARE_ARITH, n->ndim, n->dims, x->tile);
    if (rc != VEIL_OK)
        return rc;
    struct veil_flatop_args a;
    memset(&a, 0, sizeof a);
    a.kind = VEIL_FLATOP_INTERLEAVE;
    a.k = 2;
    a.c[0] = an->dims[n->a.axis] * inner;
    a.c[1] = bn->dims[n->a.axis] * inner;
    struct veil_sec *outs[1] = {y};
    const struct veil_sec *ins[2] = {VAL(x, n->in[0]), VAL(x, n->in[1])};
    return veil_nl_flat(x->m, a, outs, 1, ins, 2);
}

int veil_lower_transpose(struct veil_exec *x, const struct veil_node *n)
{
    const size_t r = n->dims[1], c = n->dims[0]; /* the input is (r, c) */
    struct veil_sec tmp, *y = VAL(x, n->index);
    const struct veil_sec *s;
    int rc = veil_exec_single(x, VAL(x, n->in[0]), &tmp, &s);
    if (rc == VEIL_OK)
        rc = veil_sec_init(x->m, y, s->kind, n->ndim, n->dims, SIZE_MAX);
    if (rc == VEIL_OK && veil_mpc_computes(x->m)) {
        const size_t p[4] = {1, r, c, 1};
        rc = veil_task_swap_axes(s->h[0], y->h[0], p, veil_mpc_priority(x->m));
    }
    veil_mpc_release(x->m, &tmp);
    return rc == VEIL_OK ? veil_exec_retile(x, y) : rc;
}

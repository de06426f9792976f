/*
 * op_nonlinear.c — the DSL's nonlinear elementwise ops (Veil issue 17), every stage of each in
 * this file as op_elementwise.c does for EXP: RECIPROCAL y = 1/x, RSQRT y = 1/sqrt(x), SQRT
 * y = x * rsqrt(x), DIV z = x / y (both secret: z = x * (1/y)), SIGMOID and TANH. Each has its
 * builder, its plaintext evaluation in both modes (DOUBLE: libm; FIXED: the protocol's ring
 * sequence, tasks/nonlinear_ref.h and nonlinear_sigmoid.h, with floor truncations), its secure
 * lowering (tasks/nonlinear.h, nonlinear_sigmoid.h) and its gradient rule, written with the
 * existing MUL, SCALE and ADD ops (and, for SQRT and DIV, a second RSQRT / RECIPROCAL node in the
 * backward pass rather than a saved internal value). Domains (the protocols' ranges; nothing
 * checks secret values, an input outside them gives the protocol's wrong value): reciprocal and
 * the divisor of div in [2^-f, 2^15) (tasks/reciprocal_norm.h), rsqrt and sqrt in [2^-f, 2^15)
 * (tasks/rsqrt_norm.h; sqrt = trunc_(f+8)(x rsqrt(x)) with rsqrt at f + 8 bits, so that its
 * relative error holds up to 2^15), both every positive input the feeds accept; sigmoid and tanh
 * everywhere.
 */
#include "config.h"

#include "base/base_internal.h"
#include "graph/graph_internal.h"
#include "graph/plain/plain_ops_internal.h"
#include "graph/secure/exec_internal.h"
#include "tasks/beaver.h"
#include "tasks/nonlinear.h"
#include "tasks/nonlinear_ref.h"
#include "tasks/nonlinear_sigmoid.h"
#include "tasks/reciprocal_norm.h"
#include "tasks/rsqrt_norm.h"
#include "tasks/trunc.h"

#include <math.h>

/* ---- builders ----------------------------------------------------------------------------- */

static veil_node_t *unary(veil_graph_t *g, enum veil_op op, const char *name, veil_node_t *x)
{
    veil_node_t *in[1] = {x};
    struct veil_node *n = veil_graph_add_node(g, op, name, 1, in);
    if (n)
        veil_node_set_shape(n, x->ndim, x->dims);
    return n;
}

veil_node_t *veil_reciprocal(veil_graph_t *g, const char *name, veil_node_t *x)
{
    return unary(g, VEIL_OP_RECIPROCAL, name, x);
}
veil_node_t *veil_rsqrt(veil_graph_t *g, const char *name, veil_node_t *x)
{
    return unary(g, VEIL_OP_RSQRT, name, x);
}
veil_node_t *veil_sqrt(veil_graph_t *g, const char *name, veil_node_t *x)
{
    return unary(g, VEIL_OP_SQRT, name, x);
}
veil_node_t *veil_sigmoid(veil_graph_t *g, const char *name, veil_node_t *x)
{
    return unary(g, VEIL_OP_SIGMOID, name, x);
}
veil_node_t *veil_tanh(veil_graph_t *g, const char *name, veil_node_t *x)
{
    return unary(g, VEIL_OP_TANH, name, x);
}

veil_node_t *veil_div(veil_graph_t *g, const char *name, veil_node_t *x, veil_node_t *y)
{
    if (!g || !x || !y)
        return NULL;
    int same = x->ndim == y->ndim;
    for (int i = 0; same && i < x->ndim; i++)
        same = x->dims[i] == y->dims[i];
    if (!same)
        return veil_graph_fail(g, VEIL_ERR_SHAPE, "div '%s': the operands' shapes differ; div "
                               "needs equal shapes (no broadcasting)", name ? name : "div");
    veil_node_t *in[2] = {x, y};
    struct veil_node *n = veil_graph_add_node(g, VEIL_OP_DIV, name, 2, in);
    if (n)
        veil_node_set_shape(n, x->ndim, x->dims);
    return n;
}

/* ---- plaintext ---------------------------------------------------------------------------- */

/* The FIXED sequences need the protocols' limits at f (reciprocal_norm.h, rsqrt_norm.h). */
static int fixed_ok(const struct veil_plain_exec *e, const struct veil_node *n, int recip)
{
    if (recip)
        return veil_reciprocal_norm_check(n->name, e->f, -e->f, VEIL_RECIP_NORM_HI);
    return veil_rsqrt_norm_check(n->name, e->f, -e->f, VEIL_RSQRT_NORM_HI,
                                 n->op == VEIL_OP_SQRT ? VEIL_SQRT_NORM_BITS : 0);
}

/* The fixed-point run sees the values the protocol would not: an input of reciprocal, div's
 * divisor, sqrt or rsqrt outside [2^lo, 2^hi) would give a wrong number there, so the plaintext
 * run says so (VEIL_ERR_RANGE) instead of modelling it. */
static int check_domain(const struct veil_plain_exec *e, const struct veil_node *n,
                        const uint64_t *src, int lo, int hi)
{
    const int64_t min = (int64_t)1 << (e->f + lo), lim = (int64_t)1 << (e->f + hi);
    for (size_t k = 0; k < n->numel; k++) {
        const int64_t v = (int64_t)src[k];
        if (v < min || v >= lim)
            return veil_error(VEIL_ERR_RANGE, "plain run: %s '%s': element %zu is %g, outside "
                              "the op's domain [2^%d, 2^%d)", veil_op_name(n->op), n->name, k,
                              ldexp((double)v, -e->f), lo, hi);
    }
    return VEIL_OK;
}

static int plain_nonlinear(struct veil_plain_exec *e, const struct veil_node *n)
{
    const int i = n->index, a = n->in[0], b = n->nin > 1 ? n->in[1] : -1;
    const int recip = n->op == VEIL_OP_RECIPROCAL || n->op == VEIL_OP_DIV;
    const int sig = n->op == VEIL_OP_SIGMOID || n->op == VEIL_OP_TANH;
    int rc = veil_plain_alloc(e, n);
    if (rc != VEIL_OK)
        return rc;
    if (!IS_FIXED(e)) {
        for (size_t k = 0; k < n->numel; k++) {
            const double v = e->d[a][k];
            double r = 0;
            switch (n->op) {
            case VEIL_OP_RECIPROCAL: r = 1.0 / v; break;
            case VEIL_OP_RSQRT: r = 1.0 / sqrt(v); break;
            case VEIL_OP_SQRT: r = sqrt(v); break;
            case VEIL_OP_DIV: r = v / e->d[b][k]; break;
            case VEIL_OP_SIGMOID: r = 1.0 / (1.0 + exp(-v)); break;
            default: r = tanh(v); break;
            }
            e->d[i][k] = r;
        }
        return VEIL_OK;
    }
    if (sig) {
        if (2 * (e->f + VEIL_EXP_SQUARINGS + VEIL_EXP_GUARD) + 6 > 62)
            return veil_error(VEIL_ERR_UNSUPPORTED, "plain run: %s '%s': %d fractional bits leave "
                              "no headroom for exp's base; use frac_bits <= %d",
                              veil_op_name(n->op), n->name, e->f,
                              28 - VEIL_EXP_SQUARINGS - VEIL_EXP_GUARD);
        veil_ref_sigmoid_tanh(n->numel, e->w[a], e->f, n->op == VEIL_OP_TANH, NULL, e->w[i]);
        return VEIL_OK;
    }
    if ((rc = fixed_ok(e, n, recip)) != VEIL_OK)
        return rc;
    const uint64_t *src = n->op == VEIL_OP_DIV ? e->w[b] : e->w[a];
    if ((rc = check_domain(e, n, src, -e->f, recip ? VEIL_RECIP_NORM_HI : VEIL_RSQRT_NORM_HI)) !=
        VEIL_OK)
        return rc;
    /* sqrt: rsqrt at f + 8 bits, then trunc_(f+8)(x r); div: trunc_f(x (1/y)) */
    const int xb = n->op == VEIL_OP_SQRT ? VEIL_SQRT_NORM_BITS : 0;
    if (recip)
        veil_ref_reciprocal_norm(n->numel, src, -e->f, VEIL_RECIP_NORM_HI, e->f, NULL, e->w[i]);
    else
        veil_ref_rsqrt_norm(n->numel, src, -e->f, VEIL_RSQRT_NORM_HI, e->f, xb, NULL, e->w[i]);
    if (n->op == VEIL_OP_SQRT || n->op == VEIL_OP_DIV)
        for (size_t k = 0; k < n->numel; k++)
            e->w[i][k] = veil_plain_trunc(e, e->w[a][k] * e->w[i][k], e->f + xb);
    return VEIL_OK;
}

/* ---- secure lowering ---------------------------------------------------------------------- */

static int lower_nonlinear(struct veil_exec *x, const struct veil_node *n)
{
    struct veil_sec *a = &x->val[n->in[0]], *y = &x->val[n->index];
    const int f = veil_mpc_frac_bits(x->m);
    switch (n->op) {
    case VEIL_OP_RECIPROCAL:
        return veil_mpc_reciprocal_norm(x->m, a, -f, VEIL_RECIP_NORM_HI, y);
    case VEIL_OP_RSQRT: return veil_mpc_rsqrt_norm(x->m, a, -f, VEIL_RSQRT_NORM_HI, 0, y);
    case VEIL_OP_SIGMOID: return veil_mpc_sigmoid_tanh(x->m, a, 0, y);
    case VEIL_OP_TANH: return veil_mpc_sigmoid_tanh(x->m, a, 1, y);
    default: break;
    }
    /* SQRT = trunc_(f+8)(x * rsqrt(x)) with rsqrt at f + 8 bits; DIV = trunc_f(x * (1 / y)) */
    struct veil_sec r = {0}, p = {0};
    int rc;
    if (n->op == VEIL_OP_SQRT) {
        rc = veil_mpc_rsqrt_norm(x->m, a, -f, VEIL_RSQRT_NORM_HI, VEIL_SQRT_NORM_BITS, &r);
        if (rc == VEIL_OK)
            rc = veil_mpc_mul(x->m, a, &r, &p);
        if (rc == VEIL_OK)
            rc = veil_mpc_trunc(x->m, &p, f + VEIL_SQRT_NORM_BITS, y);
    } else {
        rc = veil_mpc_reciprocal_norm(x->m, &x->val[n->in[1]], -f, VEIL_RECIP_NORM_HI, &r);
        if (rc == VEIL_OK)
            rc = veil_exec_mul_trunc(x, a, &r, y);
    }
    veil_mpc_release(x->m, &r);
    veil_mpc_release(x->m, &p);
    return rc;
}

/* ---- gradients ---------------------------------------------------------------------------- */

/* One backward node like node `like`: op over (p, q) (q < 0: unary), SCALE's factor c. */
static int emit(struct veil_ad *a, enum veil_op op, int base, const char *suffix, int p, int q,
                int like, double c, int grad_of)
{
    if (p < 0 || (q < 0 && (op == VEIL_OP_MUL || op == VEIL_OP_ADD)))
        return -1;
    struct veil_node_attrs at = {0};
    at.c = c;
    int in[2] = {p, q};
    return veil_ad_emit_like(a, op, base, suffix, q < 0 ? 1 : 2, in, like, &at, -1, grad_of);
}

/* reciprocal: dx = -dy y^2; rsqrt: dx = -dy y^3 / 2; sqrt: dx = dy rsqrt(x) / 2 (rsqrt
 * recomputed); sigmoid: dx = dy (y - y^2); tanh: dx = dy - dy y^2. */
static int grad_unary(struct veil_ad *a, int i, int gy)
{
    const struct veil_node n = veil_ad_plan(a)->nodes[i];
    const int x = n.in[0];
    if (!veil_ad_needs(a, x))
        return VEIL_OK;
    int t, g;
    switch (n.op) {
    case VEIL_OP_RECIPROCAL:
        t = emit(a, VEIL_OP_MUL, i, ".dx1", gy, i, x, 0, -1);
        t = emit(a, VEIL_OP_MUL, i, ".dx2", t, i, x, 0, -1);
        g = emit(a, VEIL_OP_SCALE, i, ".dx", t, -1, x, -1.0, x);
        break;
    case VEIL_OP_RSQRT:
        t = emit(a, VEIL_OP_MUL, i, ".dx1", gy, i, x, 0, -1);
        t = emit(a, VEIL_OP_MUL, i, ".dx2", t, i, x, 0, -1);
        t = emit(a, VEIL_OP_MUL, i, ".dx3", t, i, x, 0, -1);
        g = emit(a, VEIL_OP_SCALE, i, ".dx", t, -1, x, -0.5, x);
        break;
    case VEIL_OP_SQRT:
        t = emit(a, VEIL_OP_RSQRT, i, ".dx1", x, -1, x, 0, -1);
        t = emit(a, VEIL_OP_MUL, i, ".dx2", gy, t, x, 0, -1);
        g = emit(a, VEIL_OP_SCALE, i, ".dx", t, -1, x, 0.5, x);
        break;
    case VEIL_OP_SIGMOID:
        t = emit(a, VEIL_OP_MUL, i, ".dx1", i, i, x, 0, -1);
        t = emit(a, VEIL_OP_SCALE, i, ".dx2", t, -1, x, -1.0, -1);
        t = emit(a, VEIL_OP_ADD, i, ".dx3", i, t, x, 0, -1);
        g = emit(a, VEIL_OP_MUL, i, ".dx", gy, t, x, 0, x);
        break;
    default: /* TANH */
        t = emit(a, VEIL_OP_MUL, i, ".dx1", i, i, x, 0, -1);
        t = emit(a, VEIL_OP_MUL, i, ".dx2", gy, t, x, 0, -1);
        t = emit(a, VEIL_OP_SCALE, i, ".dx3", t, -1, x, -1.0, -1);
        g = emit(a, VEIL_OP_ADD, i, ".dx", gy, t, x, 0, x);
        break;
    }
    return veil_ad_contrib(a, x, g);
}

/* z = x / y: dx = dy (1/y) (a RECIPROCAL of y in the backward pass), dy' = -dx z. */
static int grad_div(struct veil_ad *a, int i, int gy)
{
    const struct veil_node n = veil_ad_plan(a)->nodes[i];
    const int x = n.in[0], y = n.in[1];
    const int nx = veil_ad_needs(a, x), ny = veil_ad_needs(a, y);
    if (!nx && !ny)
        return VEIL_OK;
    int r = emit(a, VEIL_OP_RECIPROCAL, i, ".dr", y, -1, y, 0, -1);
    int gx = emit(a, VEIL_OP_MUL, i, ".dx", gy, r, x, 0, nx ? x : -1);
    int rc = VEIL_OK;
    if (nx)
        rc = veil_ad_contrib(a, x, gx);
    if (rc == VEIL_OK && ny) {
        int t = emit(a, VEIL_OP_MUL, i, ".dy1", gx, i, y, 0, -1);
        rc = veil_ad_contrib(a, y, emit(a, VEIL_OP_SCALE, i, ".dy", t, -1, y, -1.0, y));
    }
    return rc;
}

/* ---- descriptors (passes: about two elementwise passes per round) ------------------------- */

#define NL_DESC(id, nm, nin, rounds, gradfn)                                                      \
    const struct veil_op_desc veil_opd_##id = {                                                   \
        .name = nm,                                                                               \
        .nin_min = nin,                                                                           \
        .nin_max = nin,                                                                           \
        .flags = VEIL_OPF_ELEMENTWISE,                                                            \
        .region = VEIL_REGION_OTHER,                                                              \
        .passes = 2 * (rounds),                                                                   \
        .plain = plain_nonlinear,                                                                 \
        .lower = lower_nonlinear,                                                                 \
        .grad = gradfn,                                                                           \
    };

NL_DESC(reciprocal, "reciprocal", 1, VEIL_RECIP_NORM_ROUNDS, grad_unary)
NL_DESC(rsqrt, "rsqrt", 1, VEIL_RSQRT_NORM_ROUNDS, grad_unary)
NL_DESC(sqrt, "sqrt", 1, VEIL_RSQRT_NORM_ROUNDS + 2, grad_unary)
NL_DESC(div, "div", 2, VEIL_RECIP_NORM_ROUNDS + 2, grad_div)
NL_DESC(sigmoid, "sigmoid", 1, VEIL_SIGMOID_ROUNDS, grad_unary)
NL_DESC(tanh, "tanh", 1, VEIL_SIGMOID_ROUNDS, grad_unary)

/*
 * op_elementwise.c — elementwise ops whose every stage lives in this one file, each with its
 * descriptor (a row of the op table, graph_internal.h): the plaintext evaluation in both modes
 * (DOUBLE and the FIXED ring sequence of graph_internal.h), the secure lowering, and for
 * forward ops the DSL builder and the gradient rule. MUL, the general product trunc(a * b) of
 * two same-shaped secrets (a backward op: autodiff's products of a gradient by a saved value);
 * EXP, y = exp(x) (the protocol of tasks/nonlinear.h), whose gradient is MUL(dy, y).
 */
#include "config.h"

#include "base/base_internal.h"
#include "graph/secure/exec_internal.h"
#include "graph/graph_internal.h"
#include "graph/plain/plain_ops_internal.h"
#include "tasks/nonlinear.h"
#include "tasks/nonlinear_ref.h"

#include <math.h>

/* ---- MUL: y = trunc(a * b) ------------------------------------------------------------------ */

static int plain_mul(struct veil_plain_exec *e, const struct veil_node *n)
{
    const int i = n->index, a = n->in[0], b = n->in[1];
    int rc = veil_plain_alloc(e, n);
    if (rc != VEIL_OK)
        return rc;
    for (size_t k = 0; k < n->numel; k++) {
        if (IS_FIXED(e))
            e->w[i][k] = veil_plain_trunc(e, e->w[a][k] * e->w[b][k], e->f);
        else
            e->d[i][k] = e->d[a][k] * e->d[b][k];
    }
    return VEIL_OK;
}

/* A Beaver product, then the truncation by f. */
static int lower_mul(struct veil_exec *x, const struct veil_node *n)
{
    return veil_exec_mul_trunc(x, &x->val[n->in[0]], &x->val[n->in[1]], &x->val[n->index]);
}

const struct veil_op_desc veil_opd_mul = {
    .name = "mul",
    .nin_min = 2,
    .nin_max = 2,
    .flags = VEIL_OPF_BACKWARD | VEIL_OPF_ELEMENTWISE,
    .region = VEIL_REGION_OTHER,
    .passes = 2,
    .plain = plain_mul,
    .lower = lower_mul,
};

/* ---- EXP: y = exp(x) ------------------------------------------------------------------------ */

veil_node_t *veil_exp(veil_graph_t *g, const char *name, veil_node_t *x)
{
    veil_node_t *in[1] = {x};
    struct veil_node *n = veil_graph_add_node(g, VEIL_OP_EXP, name, 1, in);
    if (n)
        veil_node_set_shape(n, x->ndim, x->dims);
    return n;
}

/* The protocol's condition on f (tasks/exp.c): the base at f + squarings + guard bits, squared,
 * must fit the ring with 6 bits to spare. */
static int exp_frac_ok(int f)
{
    return 2 * (f + VEIL_EXP_SQUARINGS + VEIL_EXP_GUARD) + 6 <= 62;
}

/* DOUBLE: exp; FIXED: the protocol's ring sequence with floor truncations (veil_ref_exp). */
static int plain_exp(struct veil_plain_exec *e, const struct veil_node *n)
{
    const int i = n->index, xi = n->in[0];
    if (IS_FIXED(e) && !exp_frac_ok(e->f))
        return veil_error(VEIL_ERR_UNSUPPORTED, "plain run: exp '%s': %d fractional bits leave no "
                          "headroom for the exp protocol's base; use frac_bits <= %d", n->name,
                          e->f, 28 - VEIL_EXP_SQUARINGS - VEIL_EXP_GUARD);
    int rc = veil_plain_alloc(e, n);
    if (rc != VEIL_OK)
        return rc;
    if (IS_FIXED(e)) {
        veil_ref_exp(n->numel, e->w[xi], e->f, NULL, e->w[i]);
    } else {
        for (size_t k = 0; k < n->numel; k++)
            e->d[i][k] = exp(e->d[xi][k]);
    }
    return VEIL_OK;
}

static int lower_exp(struct veil_exec *x, const struct veil_node *n)
{
    return veil_mpc_exp(x->m, &x->val[n->in[0]], &x->val[n->index]);
}

/* dx = trunc(dy * y): a MUL of the gradient by the forward's own output (kept alive by it). */
static int grad_exp(struct veil_ad *a, int i, int gy)
{
    const int x = veil_ad_plan(a)->nodes[i].in[0];
    if (!veil_ad_needs(a, x))
        return VEIL_OK;
    int in[2] = {gy, i};
    return veil_ad_contrib(a, x, veil_ad_emit_like(a, VEIL_OP_MUL, i, ".dx", 2, in, x, NULL, -1,
                                                   x));
}

/* Cost: 7 rounds of a square and a truncation, about two elementwise passes each. */
const struct veil_op_desc veil_opd_exp = {
    .name = "exp",
    .nin_min = 1,
    .nin_max = 1,
    .flags = VEIL_OPF_ELEMENTWISE,
    .region = VEIL_REGION_OTHER,
    .passes = 16,
    .plain = plain_exp,
    .lower = lower_exp,
    .grad = grad_exp,
};

/*
 * op_elementwise.c — elementwise ops whose every stage lives in this one file, each with its
 * descriptor (a row of the op table, graph_internal.h): the plaintext evaluation in both modes
 * (DOUBLE and the FIXED ring sequence of graph_internal.h), the secure lowering, and for
 * forward ops the DSL builder and the gradient rule. MUL, the general product trunc(a * b) of
 * two same-shaped secrets (a backward op: autodiff's products of a gradient by a saved value).
 */
#include "config.h"

#include "base/base_internal.h"
#include "graph/exec_internal.h"
#include "graph/graph_internal.h"
#include "graph/plain_ops_internal.h"

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
    .flags = VEIL_OPF_BACKWARD | VEIL_OPF_ELEMENTWISE,
    .region = VEIL_REGION_OTHER,
    .passes = 2,
    .plain = plain_mul,
    .lower = lower_mul,
};

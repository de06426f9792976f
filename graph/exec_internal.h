/*
 * exec_internal.h — the secure executor's internal structure, shared by party.c (session),
 * run.c (the walk over the plan: leaves shared, nodes lowered in order, outputs revealed,
 * temporaries released after their last use), lower_forward.c (one lowering per forward op) and
 * lower_backward.c (backward ops and the SGD update). Never installed.
 *
 * LOWERING. A lowering turns one plan node into protocol calls of tasks/ (SPMD: every party and
 * the dealer call it with the same shapes; it submits and returns, never waits). It reads its
 * operands from x->val[in] and initialises x->val[n->index]; state a backward op will need (the
 * ReLU mask, the max-pool route, layer norm's xhat and 1/sigma, the softmax output) goes in
 * x->aux[n->index][0..VEIL_EXEC_MAX_AUX-1] when n->saved is set. run.c releases val and aux of a
 * node after the node at its last_use has been lowered (never parameters or outputs).
 */
#ifndef VEIL_GRAPH_EXEC_INTERNAL_H
#define VEIL_GRAPH_EXEC_INTERNAL_H

#include "graph/graph_internal.h"
#include "tasks/mpc.h"

#define VEIL_EXEC_MAX_AUX 3

struct veil_exec {
    veil_mpc_t *m;
    const veil_plan_t *p;
    struct veil_sec *val;                      /* p->count tensors (shares; public for CONST) */
    struct veil_sec (*aux)[VEIL_EXEC_MAX_AUX]; /* p->count x VEIL_EXEC_MAX_AUX saved tensors */
    struct veil_sec *velocity;                 /* SGD momentum per node (PARAM nodes), persistent */
    int frac_bits;
    size_t tile;                               /* elementwise tile (multiple of 64) */
};

/** One op's lowering; VEIL_OK or an error with a message naming the node. */
typedef int (*veil_lower_fn)(struct veil_exec *x, const struct veil_node *n);

/** The lowering of op (forward ops in lower_forward.c, backward ones in lower_backward.c), or
 * NULL when the op has none (leaves, folded batch norms are handled by run.c). */
veil_lower_fn veil_lower_forward(enum veil_op op);
veil_lower_fn veil_lower_backward(enum veil_op op);

/** The fixed-point encoding of a public real c at f bits, as a ring word (round half away). */
uint64_t veil_exec_fixed(double c, int f);

#endif

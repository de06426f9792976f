/*
 * plain_internal.h — the plaintext executor's internal structure, shared by plain.c (the walk,
 * veil_plain_run), plain_forward.c (forward ops), plain_backward.c (backward ops, SGD update)
 * and the plaintext trainer. Never installed.
 *
 * Two modes: DOUBLE keeps every node as numel doubles in e->d[i]; FIXED keeps ring words in
 * e->w[i] (fixed point, f = e->f fractional bits) and performs exactly the ring operations of
 * the secure lowering (graph_internal.h, FIXED-POINT SEQUENCES) with floor truncation. Saved
 * state a backward op reads (ReLU mask, max-pool route, layer norm xhat and 1/sigma, softmax
 * output) goes in e->daux / e->waux [node][0..VEIL_PLAIN_MAX_AUX-1], each with its element count
 * in e->aux_numel. Parameters' values are bound in e->d / e->w before the walk and survive it
 * (the trainer updates them in place through SGD_UPDATE; velocity in e->vd / e->vw per PARAM;
 * ADAM_UPDATE: first moment there, second moment in e->sd / e->sw).
 *
 * SGD_UPDATE writes w' into the parameter's own array (e->d / e->w [in[0]]) and holds no value
 * itself (nothing reads it); it keeps a copy of the gradient it applied in e->gd / e->gw [the
 * PARAM's index] (the trainer's veil_plain_trainer_grad), since the gradient node is freed after
 * its last reader, the update; with grad_mul R (weight averaging) the applied R g.
 */
#ifndef VEIL_GRAPH_PLAIN_INTERNAL_H
#define VEIL_GRAPH_PLAIN_INTERNAL_H

#include "graph/graph_internal.h"

#define VEIL_PLAIN_MAX_AUX 3

struct veil_plain_exec {
    const veil_plan_t *p;
    enum veil_plain_mode mode;
    int f;
    double **d;                              /* DOUBLE: p->count arrays (NULL until computed) */
    uint64_t **w;                            /* FIXED */
    double *(*daux)[VEIL_PLAIN_MAX_AUX];
    uint64_t *(*waux)[VEIL_PLAIN_MAX_AUX];
    size_t (*aux_numel)[VEIL_PLAIN_MAX_AUX];
    double **vd;                             /* SGD velocity per PARAM node (DOUBLE) */
    uint64_t **vw;                           /* (FIXED) */
    double **gd;                             /* last applied gradient per PARAM (DOUBLE) */
    uint64_t **gw;                           /* (FIXED) */
    double **sd;                             /* ADAM_UPDATE: second moment per PARAM (DOUBLE; its
                                                first moment is in vd) */
    uint64_t **sw;                           /* (FIXED) */
    uint64_t step;                           /* the training step being run, 1, 2, ... (Adam's
                                                bias corrections); set by the trainer */
};

/* Each op's evaluation is its descriptor's `plain` (graph_internal.h, graph/ops.c); leaves are
 * bound, not evaluated. */

/** Allocates e's tables for p in mode (all arrays NULL). */
int veil_plain_exec_init(struct veil_plain_exec *e, const veil_plan_t *p, enum veil_plain_mode mode);
/** Binds leaf values (doubles per node index, as veil_plan_bind returns; FIXED mode encodes them
 * with veil_fixed_encode and fails with VEIL_ERR_RANGE naming the leaf when one does not fit)
 * for every node whose values[i] is non-NULL, replacing what was bound before. */
int veil_plain_exec_bind(struct veil_plain_exec *e, double *const *values);
/** Evaluates nodes [from, to) in order; frees each temporary after its last use when
 * free_dead is set (never leaves or outputs). */
int veil_plain_exec_run(struct veil_plain_exec *e, size_t from, size_t to, int free_dead);
/** Weight averaging (graph_internal.h, WEIGHT AVERAGING): every parameter's replicas replaced
 * by their mean, in the mode's arithmetic (FIXED: trunc(sum * enc(1/R))). VEIL_OK or
 * VEIL_ERR_STATE for a plan whose replicas do not match its micro-batches. */
int veil_plain_exec_average_replicas(struct veil_plain_exec *e);
/** Node i's value as doubles (decoded in FIXED mode) into out (numel entries). */
int veil_plain_exec_get(const struct veil_plain_exec *e, int i, double *out);
/** Frees every array and the tables. */
void veil_plain_exec_fini(struct veil_plain_exec *e);

#endif

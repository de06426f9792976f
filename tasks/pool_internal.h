/*
 * pool_internal.h — the pooling protocols' local codelets (pool_codelets.c), reachable beyond
 * it so that pool.c can submit them and the tests can run each body on one architecture
 * (tests/test_tasks_cuda_pool.c). Their argument blocks (a plain copy of struct
 * veil_pool_tour_arg or veil_pool_win_arg, as veil_cmp_submit packs it) and element math are in
 * pool_common.h.
 */
#ifndef VEIL_TASKS_POOL_INTERNAL_H
#define VEIL_TASKS_POOL_INTERNAL_H

#include "tasks/mpc.h"
#include "tasks/pool_common.h"

#include <starpu.h>

/** out W, then n input tiles R (STARPU_VARIABLE_NBUFFERS; argument: int n): out = the inputs
 * concatenated in order. */
extern struct starpu_codelet veil_pool_concat_cl;
/** V (rows x kl) R, D (rows x p) W: pair differences (veil_pool_diff_at). */
extern struct starpu_codelet veil_pool_diff_cl;
/** beta (rows x p), D (rows x p), OH (rows x k) R; X, Y (rows x m) W: the product operands of a
 * level with argmax (veil_pool_prep_pair, veil_pool_prep_cov). */
extern struct starpu_codelet veil_pool_prep_cl;
/** V (rows x kl), W (rows x m), D (rows x p), f (packed, ceil(rows p / 64)) R; V' (rows x
 * ceil(kl / 2)) W: the winners (veil_pool_combv_pair, veil_pool_combv_last). */
extern struct starpu_codelet veil_pool_combv_cl;
/** f, beta (rows x p) R; OH' (rows x k) W: level 0's one-hot (veil_pool_oh0_at). */
extern struct starpu_codelet veil_pool_oh0_cl;
/** OH (rows x k), W (rows x m), f R; OH' (rows x k) W: a later level's one-hot
 * (veil_pool_oh_at). */
extern struct starpu_codelet veil_pool_oh_cl;
/** in R, out W: the window rearrangements of enum veil_pool_win_mode. */
extern struct starpu_codelet veil_pool_win_cl;
/** The nsrc sources R, then out W (STARPU_VARIABLE_NBUFFERS; argument: struct
 * veil_pool_pick_arg): the row-wise picks of max_pairwise.c (veil_pool_pick_at). */
extern struct starpu_codelet veil_pool_pick_cl;

/** The pairwise protocol (max_pairwise.c) over in (rows x k, one handle, borrowed), the
 * candidates compared by cmp (same layout; NULL: in itself) and the winner's in taken; results
 * single-handle 1-D; max or onehot NULL when not wanted (not both). */
int veil_pool_pairwise(veil_mpc_t *m, const struct veil_sec *in, const struct veil_sec *cmp,
                       size_t rows, size_t k, struct veil_sec *max, struct veil_sec *onehot);
/** max = the row's winner by cmp (NULL: in) among its k candidates and 0, its in (0 for the 0):
 * max(0, the maximum of each row) when cmp is NULL (k + 1 <= VEIL_PAIRWISE_MAX_K). */
int veil_pool_pairwise_relu(veil_mpc_t *m, const struct veil_sec *in, const struct veil_sec *cmp,
                            size_t rows, size_t k, struct veil_sec *max);

#endif /* VEIL_TASKS_POOL_INTERNAL_H */

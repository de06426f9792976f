/*
 * exec_internal.h — the secure executor's internal structure, shared by party.c (the session:
 * StarPU, network, protocol context, statistics), run.c (the walk over the plan: leaves shared,
 * nodes lowered in order, outputs revealed, temporaries released after their last use),
 * lower_forward.c / lower_nn.c (one lowering per forward op), lower_util.c (layout helpers the
 * lowerings share) and lower_backward.c (backward ops and the SGD update); the op table
 * (graph/ops.c) names each op's lowering. Never installed.
 *
 * LOWERING. A lowering turns one plan node into protocol calls of tasks/ (SPMD: every party, the
 * dealer and a recorder call it with the same shapes; it submits and returns, never waits). It
 * reads its operands from x->val[in] and initialises x->val[n->index]; state a backward op will
 * need (the ReLU mask, the max-pool route, layer norm's xhat and 1/sigma, the softmax output,
 * GELU's comparison bits and v) goes in x->aux[n->index][0..VEIL_EXEC_MAX_AUX-1] when n->saved
 * is set, with the layouts of graph/plain/plain_ops_internal.h (SAVED STATE). run.c releases val
 * and aux of a node after the node at its last_use has been lowered (never parameters, which
 * persist across runs).
 *
 * LAYOUTS. Tensors are tiled by x->tile elements (a multiple of 64: the comparison circuit's
 * packing), except where a protocol needs one handle (matrix products, convolutions, transposes:
 * veil_exec_single makes a one-handle copy when the operand is tiled) or produces one (pooling,
 * products: veil_exec_retile splits a large one-handle result so that the elementwise protocols
 * after it pipeline per tile). Leaves that feed a product are shared as one handle.
 */
#ifndef VEIL_GRAPH_EXEC_INTERNAL_H
#define VEIL_GRAPH_EXEC_INTERNAL_H

#include "graph/graph_internal.h"
#include "tasks/mpc.h"
#include "tasks/wstat.h"

struct veil_place;

#define VEIL_EXEC_MAX_AUX 3

struct veil_exec {
    veil_mpc_t *m;
    const veil_plan_t *p;
    struct veil_sec *val;                      /* p->count tensors (shares; public for CONST) */
    struct veil_sec (*aux)[VEIL_EXEC_MAX_AUX]; /* p->count x VEIL_EXEC_MAX_AUX saved tensors */
    struct veil_sec *velocity;                 /* SGD momentum per node (PARAM nodes), persistent;
                                                  Adam's first moment */
    struct veil_sec *moment2;                  /* Adam's second moment (PARAM nodes), persistent */
    struct veil_mpc_wstat *ws;                 /* weight-stationary state per PARAM node used as a
                                                  product's weight (NULL when the option is off) */
    int frac_bits;
    size_t tile; /* elementwise tile (multiple of 64) */
    int loss_to;  /* training, opt-in: reveal each example's probability of its true class to
                     this party (VEIL_ALL_PARTIES: all) right after the loss; < -1: never */
    struct veil_pub loss_rev; /* that reveal (B values) at the receivers */
    int average;  /* weight averaging: a training walk ends by averaging every parameter's
                     replicas (veil_exec_average_replicas); set per walk by its caller */
    uint64_t step; /* training: the step this walk is, 1, 2, ... (Adam's bias corrections); set
                      per walk by its caller */
    struct veil_place *place; /* per node: where its tasks run (placement.c); NULL: anywhere */
    int *copy; /* per node: the micro-batch copy it belongs to (veil_placement_microbatch_of),
                  -1 for none; NULL when the plan has no micro-batches */
    /* lookahead.c: markers of the last linear nodes submitted (a ring of lookahead + 1 slots),
     * each one's completion flag (set by its callback), and the number of linear nodes
     * submitted in this walk */
    struct starpu_task *markers[VEIL_LOOKAHEAD_MAX + 1];
    int marker_done[VEIL_LOOKAHEAD_MAX + 1];
    size_t nlinear;
};

/* ---- lookahead.c: the bound of the inter-linear pipeline ------------------------------------ */

/** Before lowering n: with lookahead L >= 0 and n a linear node (its op's region
 * VEIL_REGION_LINEAR in the op table), waits until the linear node
 * L + 1 places earlier in the walk has finished. VEIL_OK or a StarPU error. */
int veil_lookahead_before(struct veil_exec *x, const struct veil_node *n);
/** After lowering n: with L >= 0 and n linear, submits the marker that finishes with n. */
int veil_lookahead_after(struct veil_exec *x, const struct veil_node *n);
/** At the end of a walk (also after an error): waits for and frees every marker left. */
int veil_lookahead_drain(struct veil_exec *x);

/* The lowerings of the op table's rows (graph/ops.c; contract: veil_lower_fn in
 * graph_internal.h). lower_forward.c: */
int veil_lower_dense(struct veil_exec *x, const struct veil_node *n);
/* A weight-stationary plan's warm start (veil_party_prepare, once the parameters are shared):
 * opens E = W - B for the weight of every forward dense and conv2d node that will use a weight
 * state (tasks/wstat.h, veil_mpc_wstat_prime), in one round, so the first run opens D alone. */
int veil_lower_prime_weights(struct veil_exec *x);
int veil_lower_matmul(struct veil_exec *x, const struct veil_node *n);
int veil_lower_conv2d(struct veil_exec *x, const struct veil_node *n);
int veil_lower_relu(struct veil_exec *x, const struct veil_node *n);
/**
 * 1 when linear node n (dense, conv2d) gives its only reader, a ReLU that runs inside a pairwise
 * max pool (inference), its untruncated value too (in x->aux[n][0]), so that the pool's LTZ starts
 * with n's truncation (veil_mpc_maxpool2d_relu_of): one round less (not in a serialized run,
 * whose barrier after n makes the truncation's round one of its own; the words computed are the
 * same). A linear layer read only by any other ReLU (inference) hands it, or the max pool it runs
 * after, the untruncated value alone, which veil_mpc_relu_trunc truncates inside the ReLU's
 * rounds (lower_forward.c).
 */
int veil_lower_shares_trunc(const struct veil_exec *x, const struct veil_node *n);
/** 1 when an unmarked truncation submitted at or before node n travels in a later node's first
 * round (n shares its truncation, or n is a ReLU run inside its pool that carries one): the
 * walk's memory barrier waits for a later node. */
int veil_lower_no_barrier_after(const struct veil_exec *x, const struct veil_node *n);
int veil_lower_pool(struct veil_exec *x, const struct veil_node *n);
int veil_lower_gavgpool(struct veil_exec *x, const struct veil_node *n);
int veil_lower_scale(struct veil_exec *x, const struct veil_node *n);
int veil_lower_reshape(struct veil_exec *x, const struct veil_node *n);
int veil_lower_add(struct veil_exec *x, const struct veil_node *n);
int veil_lower_concat(struct veil_exec *x, const struct veil_node *n);
int veil_lower_transpose(struct veil_exec *x, const struct veil_node *n);
/* lower_backward.c: */
int veil_lower_matmul_grad(struct veil_exec *x, const struct veil_node *n);
int veil_lower_conv_grad(struct veil_exec *x, const struct veil_node *n);
int veil_lower_sum(struct veil_exec *x, const struct veil_node *n);
int veil_lower_slice(struct veil_exec *x, const struct veil_node *n);
int veil_lower_relu_grad(struct veil_exec *x, const struct veil_node *n);
int veil_lower_gelu_grad(struct veil_exec *x, const struct veil_node *n);
int veil_lower_pool_grad(struct veil_exec *x, const struct veil_node *n);
int veil_lower_gavgpool_grad(struct veil_exec *x, const struct veil_node *n);
int veil_lower_layernorm_grad(struct veil_exec *x, const struct veil_node *n);
int veil_lower_layernorm_grad_gamma(struct veil_exec *x, const struct veil_node *n);
int veil_lower_softmax_grad(struct veil_exec *x, const struct veil_node *n);
int veil_lower_xent_grad(struct veil_exec *x, const struct veil_node *n);
int veil_lower_sgd_update(struct veil_exec *x, const struct veil_node *n);

/* ---- run.c --------------------------------------------------------------------------------- */

/** Allocates x's tables for p over context m (tensors empty). VEIL_ERR_NOMEM. */
int veil_exec_init(struct veil_exec *x, const veil_plan_t *p, veil_mpc_t *m);
/** Releases every tensor (parameters and weight-stationary states included) and the tables. */
void veil_exec_fini(struct veil_exec *x);
/**
 * The share buffers a computing party allocates in the first run (a training plan's first step)
 * after veil_party_prepare, as a RECORDER that does what prepare does and then walks that run sees
 * them (tasks/mpc_allocs.c): their sizes in bytes into *bytes (malloc'd, the caller frees it) and
 * their count into *n. VEIL_OK or the error (then *bytes NULL, *n 0).
 */
int veil_plan_run_buffers(const veil_plan_t *p, int nparties, size_t **bytes, size_t *n);
/**
 * One walk of nodes [0, end) of x->p (end: p->nforward for inference, p->count for a training
 * step): shares this party's INPUT values (values[i]: numel doubles per leaf it owns, NULL
 * elsewhere; ignored at the dealer and a recorder), shares PARAMs whose x->val is still empty
 * (the first run), materialises constants, lowers every other node in order, reveals each
 * output into revealed[k] (initialised here at the receivers) and releases temporaries after
 * their last use. Submits and returns; the caller waits. Errors name the node.
 */
int veil_exec_walk(struct veil_exec *x, size_t end, double *const *values,
                   struct veil_pub *revealed);
/**
 * Shares every PARAM of x->p whose x->val is still empty, in plan order, exactly as the first
 * walk would (same priority, placement, trace region and tile), so a later walk finds them shared
 * and skips them: veil_party_prepare. values as veil_exec_walk's (the parameters this party
 * owns). Submits and returns; the caller waits. Errors name the parameter.
 */
int veil_exec_share_params(struct veil_exec *x, double *const *values);
/** The tile of the value a leaf is shared with: one handle when a product reads it. */
size_t veil_exec_leaf_tile(const struct veil_exec *x, int leaf);

/* ---- placement.c: where each node's tasks run ------------------------------------------------ */

/* Cost-model constants (seconds): one 64-bit multiply-add of a local GEMM, one element of one
 * elementwise pass, one task's submission and dispatch. Orders of magnitude measured on a 2-core
 * x86 VM (ring GEMM ~1 GMAC/s, elementwise ~1 ns per element, empty task 2-3 us). */
#define VEIL_PLACE_MAC_S 1e-9
#define VEIL_PLACE_ELEM_S 1e-9
#define VEIL_PLACE_TASK_S 3e-6

/**
 * The modelled time (s) of one run of p (the forward pass, or the training step when the plan
 * trains) under placement mode (not AUTO) over ndev devices (group: HYBRID's group size, 0: all;
 * force: TP's split). Per node: elementwise passes over its elements spread over min(tiles, D)
 * devices; a product's three local GEMMs (m k n multiply-adds each) over its blocks, plus the sum
 * of the parts and, for TP, the elements the split chooser says move. PP: the bubble-model time
 * of the best partition (one micro-batch). < 0 when no pipeline partition exists.
 * node_s: NULL, or the calibrated single-device seconds of every node (veil_placement_calibrate);
 * then each node costs node_s[i] times the model's time under mode over its single-device time.
 */
double veil_placement_model(const veil_plan_t *p, enum veil_placement mode, int ndev, int group,
                            enum veil_tp_force force, const double *node_s);
/** The placement of least modelled time over ndev devices (ties: the earlier in the enum's
 * order; node_s as above); times[m] receives each one's time when not NULL (times[AUTO]: the
 * chosen one's). */
enum veil_placement veil_placement_choose(const veil_plan_t *p, int ndev, int group,
                                          const double *node_s,
                                          double times[VEIL_PLACEMENT_COUNT]);
/**
 * The pipeline partition of nodes [0, end) of p over ndev devices: the computing nodes, in plan
 * order, are the layers of sched/partition.c's dynamic programme (costs: node_s[i] when given,
 * else the model's, elementwise tile `tile`); stage[i] receives node i's stage for i < end
 * (leaves go with the next computing node). Returns the partition's modelled time, < 0 when
 * none exists (or out of memory).
 */
double veil_placement_pipeline(const veil_plan_t *p, size_t end, int ndev, size_t tile,
                               const double *node_s, int *stage);
/**
 * Calibration: node_s[i] (p->count entries) receives the seconds of task time the trace recorder
 * holds for node i in run index `run` (each task counted by its StarPU profiling start and end
 * times, attributed to the node whose lowering submitted it), for the nodes [0, end) that run
 * walked; the later nodes (a training plan's backward after an inference run) get the model's
 * single-device time scaled by measured / modelled over the walked ones. VEIL_ERR_STATE when the
 * run recorded no task time, VEIL_ERR_NOMEM.
 */
int veil_placement_calibrate(const veil_plan_t *p, int run, size_t end, double *node_s);
/**
 * The micro-batch copy (graph_internal.h, microbatch.c) each node of p computes for: mb[i] = j
 * for copy j's slices of the batch (and of the loss's gradient), for replica j of a parameter
 * under weight averaging, and for every node whose operands (and forward node) belong to copy j
 * alone; -1 for the rest (shared parameters, concatenations, the loss, gradient sums over the
 * copies). Returns how many computing nodes belong to a copy (0 without micro-batches).
 */
int veil_placement_microbatch_of(const veil_plan_t *p, int *mb);
/**
 * Fills x->place for every node of x->p: mode (not AUTO) over the StarPU workers
 * workers[0..ndev) (PP's partition from node_s when given, see above). DP with at least as many
 * micro-batches as devices places each copy whole on one device (copy j on device j mod D: the
 * batch split across devices, each training its own replica under weight averaging) and spreads
 * only the shared nodes. VEIL_ERR_INVAL (bad count,
 * no pipeline partition), VEIL_ERR_NOMEM.
 */
int veil_exec_place(struct veil_exec *x, enum veil_placement mode, const int *workers, int ndev,
                    int group, enum veil_tp_force force, const double *node_s);

/* ---- lower_util.c: helpers of the lowerings ---------------------------------------------------
 */

/**
 * *out = in when in is one handle; else tmp becomes a one-handle copy of in (a flat copy task)
 * and *out = tmp. The caller releases tmp (empty when unused).
 */
int veil_exec_single(struct veil_exec *x, const struct veil_sec *in, struct veil_sec *tmp,
                     const struct veil_sec **out);
/** Replaces a one-handle *t larger than a tile by a copy tiled by x->tile (the old one released).
 */
int veil_exec_retile(struct veil_exec *x, struct veil_sec *t);
/** out = a copy of in with shape (ndim, dims) (same element count) tiled by tile (0: x->tile). */
int veil_exec_copy(struct veil_exec *x, const struct veil_sec *in, int ndim, const size_t *dims,
                   size_t tile, struct veil_sec *out);
/** out = in with its layout (shape and tiling) changed to like's (same element count). */
int veil_exec_relayout(struct veil_exec *x, const struct veil_sec *in, const struct veil_sec *like,
                       struct veil_sec *out);
/**
 * Broadcast: out (shape and tiling of like) holds b periodically, each element of b repeated
 * inner times (out[i] = b[(i / inner) % |b|]): a dense bias over rows (inner 1), a conv bias
 * over pixels (inner = OH OW), gamma and beta of a layer norm over rows.
 */
int veil_exec_broadcast(struct veil_exec *x, const struct veil_sec *b, size_t inner,
                        const struct veil_sec *like, struct veil_sec *out);
/** *y = *y + broadcast(b, inner) (y replaced; the old one released). */
int veil_exec_add_broadcast(struct veil_exec *x, struct veil_sec *y, const struct veil_sec *b,
                            size_t inner);
/** *t = trunc(*t) by the fractional bits (t replaced; the old one released). */
int veil_exec_trunc_inplace(struct veil_exec *x, struct veil_sec *t);
/** A Beaver product protocol on single-handle operands: y = a (op) b; arg is the caller's. */
typedef int (*veil_exec_product_fn)(struct veil_exec *x, const struct veil_sec *a,
                                    const struct veil_sec *b, const void *arg,
                                    struct veil_sec *y);
/**
 * The steps every product lowering shares: a and b as single handles (veil_exec_single), the
 * protocol fn, the copies released, then *y retiled (veil_exec_retile) and truncated.
 */
int veil_exec_product(struct veil_exec *x, const struct veil_sec *a, const struct veil_sec *b,
                      veil_exec_product_fn fn, const void *arg, struct veil_sec *y);
/** veil_exec_product without the truncation: *y retiled, at twice the fractional bits. */
int veil_exec_product_raw(struct veil_exec *x, const struct veil_sec *a, const struct veil_sec *b,
                          veil_exec_product_fn fn, const void *arg, struct veil_sec *y);
/** out = trunc(in * enc(c)) for a public real c (no truncation when c is an integer). */
int veil_exec_scale(struct veil_exec *x, const struct veil_sec *in, double c, struct veil_sec *out);
/** out (rows) = the sums of in's rows of k elements (local). */
int veil_exec_rowsum(struct veil_exec *x, const struct veil_sec *in, size_t k, int ndim,
                     const size_t *dims, struct veil_sec *out);
/** out (shape ndim, dims, tiled by x->tile) = TILE's adjoint: out[j] = the sum of in[i] over
 * (i / k) % |out| = j (local): column sums of a (rows, c) gradient (k 1), per-channel sums of an
 * NCHW one (k = H W). */
int veil_exec_fold(struct veil_exec *x, const struct veil_sec *in, size_t k, int ndim,
                   const size_t *dims, struct veil_sec *out);
/** *out = in when it has like's layout; else tmp becomes a relayout copy of in and *out = tmp.
 * The caller releases tmp (empty when unused). */
int veil_exec_like_layout(struct veil_exec *x, const struct veil_sec *in,
                          const struct veil_sec *like, struct veil_sec *tmp,
                          const struct veil_sec **out);
/** out = trunc(a * b) elementwise (a Beaver product, then the truncation by f), b relaid out
 * like a when needed; out has a's layout. */
int veil_exec_mul_trunc(struct veil_exec *x, const struct veil_sec *a, const struct veil_sec *b,
                        struct veil_sec *out);
/** A public tensor shaped and tiled like `like` holding words (numel, copied; NULL: zeros) at a
 * party (shape only elsewhere). Added to a sharing, it enters at party 0 only: see
 * veil_exec_public_share. */
int veil_exec_public(struct veil_exec *x, const struct veil_sec *like, const uint64_t *words,
                     struct veil_pub *out);
/** A sharing of public words (numel) with the given shape and tile: party 0 holds the words, the
 * others zero (no communication). */
int veil_exec_public_share(struct veil_exec *x, int ndim, const size_t *dims, size_t tile,
                           const uint64_t *words, struct veil_sec *out);

/** The fixed-point encoding of a public real c at f bits, as a ring word (round half away). */
uint64_t veil_exec_fixed(double c, int f);
/**
 * The rows a size rule (pool.h, PAIRWISE) weighs for node n, which has `rows` of them: all the
 * micro-batches' when n belongs to a micro-batch copy (their rounds overlap, their bytes add up),
 * so a micro-batched plan picks the forms the unsplit batch would.
 */
size_t veil_exec_batch_rows(const struct veil_exec *x, const struct veil_node *n, size_t rows);

/* ---- lower_backward.c ----------------------------------------------------------------------- */

/** Weight averaging (graph_internal.h, WEIGHT AVERAGING): every parameter's replicas replaced
 * by trunc(sum * enc(1/R)) (local sums, one product by a public constant and one truncation per
 * parameter); velocities untouched. Submits and returns. */
int veil_exec_average_replicas(struct veil_exec *x);
/** The per-example probability of the true class of loss node n, p_r = sum_j s_rj label_rj (one
 * Beaver product of the saved softmax and the labels, a local row sum, one truncation), revealed
 * to party `to` into *out (B values at the receivers). */
int veil_exec_reveal_true_prob(struct veil_exec *x, const struct veil_node *n, int to,
                               struct veil_pub *out);

/* ---- lower_nn.c: nonlinear forward lowerings (rows of the op table, graph/ops.c) ------------ */
int veil_lower_layernorm(struct veil_exec *x, const struct veil_node *n);
int veil_lower_softmax(struct veil_exec *x, const struct veil_node *n);
int veil_lower_gelu(struct veil_exec *x, const struct veil_node *n);
int veil_lower_argmax(struct veil_exec *x, const struct veil_node *n);
int veil_lower_softmax_xent(struct veil_exec *x, const struct veil_node *n);

#endif

/*
 * pool.h — maximum over the last dimension (tournament tree, optional one-hot argmax), max and
 * average pooling over NCHW images with square k x k windows, and max pooling's backward pass
 * (internal). SPMD like every protocol (compare.h).
 *
 * MAX OVER THE LAST DIMENSION (rows of k): a tournament: level l pairs the k_l candidates of each
 * row (2j, 2j+1) (an odd last one passes through), b = [v_2j - v_2j+1 >= 0] by one batched LTZ
 * over rows * floor(k_l / 2) differences, then the products b (v_2j - v_2j+1) and, when the
 * one-hot argmax is asked for, b * oh for every original position under a compared pair (the
 * one-hot vector oh of a candidate lives on the contiguous range of original positions its
 * subtree covers; level 0's oh is the constant 1, so level 0 needs no product for it).
 * v' = v_2j+1 + b (v_2j - v_2j+1); oh' = b oh on the left range, oh - b oh on the right one.
 * Ties go to the lower index. Where only b (v_2j - v_2j+1) is wanted (level 0, or no argmax) the
 * product is local: the LTZ opened d - r, and an RBETA item holds [r b] (compare.h); otherwise
 * ONE batched Beaver product computes them all, its opens in the LTZ's first round.
 *   levels L = ceil(log2 k); rounds 4 L (k = 1: 0 rounds);
 *   bytes per party, R rows, p_l = floor(k_l / 2) pairs at level l, c_l = original positions
 *   under the pairs of level l (0 at level 0 or without argmax), LTZ of n = R p_l elements in one
 *   tile (W_l = ceil(R p_l / 64)):
 *     sum over l of (N-1) * 8 * (R p_l + 36 W_l + (c_l > 0 ? 2 R (p_l + c_l) : 0)).
 * MAXPOOL k x k, stride s: windows gathered locally into (B C OH OW, k k) then the above with
 * k k candidates; 2 x 2: 2 levels, 8 rounds (target <= 20; 3 x 3: 4 levels, 16) and, per
 * window at N = 2 with 64 | R, 14.69 words = 117.5 B with the route (4.69 words = 37.5 B
 * without: level 0 2 R + 36 (2R/64), level 1 11 R (R without) + 36 (R/64)); the route
 * (one-hot over each window) serves the backward pass: dx = scatter-add of route * dy (1 Beaver
 * round, bytes (N-1) * 16 * B C OH OW k k). AVGPOOL: local window sum, times the fixed-point
 * constant round(2^f / k^2), then veil_mpc_trunc by f (1 round, its own bytes): error at most 1 ulp
 * beyond the constant's rounding.
 *
 * PAIRWISE (max_lastdim_pairwise, and maxpool2d with g->pairwise): rounds for bytes. Every pair
 * i < j of a row is compared by ONE batched LTZ over R k (k - 1) / 2 differences v_i - v_j
 * (b = [v_i < v_j]); candidate i wins iff each of its k - 1 factors [v_i >= v_j] (j > i: 1 - b)
 * and [v_j < v_i] (j < i: b) is 1 (ties to the lower index, as the tournament); per candidate and
 * output its factors and, for the maximum, v_i are multiplied: batched Beaver products pair them
 * up (one round per level) while more than 5 remain, then the last 2 to 5 are multiplied in ONE
 * round (veil_mpc_prodk, tasks/prodk_common.h: dealer-made products of their masks);
 * max = sum_i v_i [i wins], one-hot_i = [i wins] (padded with the constant 1 when both are asked
 * for). g = k with the maximum, k - 1 for the one-hot alone;
 * G = k groups per output asked for:
 *   rounds 4 + L + 1, L the tree levels (m_0 = g, m_l+1 = ceil(m_l / 2) while m_l > 5), the 1
 *   when g >= 2 (2 x 2 maxpool 5 instead of the tournament's 8; 3 x 3 6 instead of 16; argmax
 *   over 10 classes 6 instead of 16);
 *   bytes per party (N-1) * 8 * (n + 36 ceil(n / 64) + sum over the tree levels of
 *   2 R G floor(m_l / 2) + R G m_L), n = R k (k - 1) / 2 (veil_pool_pairwise_cost); the dealer
 *   sends (2^m_L - m_L - 1) R G words for the last product: 2 x 2 maxpool at N = 2 203 B per
 *   window against the tournament's 37.5.
 * With g->relu, maxpool2d computes max(0, window max) = maxpool(relu(x)) over the k k taps and the
 * constant 0 (k k + 1 candidates, the maximum alone; the 0 needs no value group, its product
 * being 0, so G = k k): a ReLU followed by a 2 x 2 pool in 5 rounds instead of 4 + 5 (4 + 8 with
 * the tournament), 285 B per window at N = 2 (veil_pool_pairwise_relu_cost), the dealer's last
 * product 832 B.
 * It pays where rounds cost more than bytes (small batches); veil_pool_pairwise_pays is the rule
 * the graph lowering applies: 3 <= k <= VEIL_PAIRWISE_MAX_K and R k (k - 1) / 2 <=
 * VEIL_PAIRWISE_MAX_PAIRS, R the rows of the whole batch in a micro-batched plan
 * (veil_exec_batch_rows). The results are the tournament's, bit for bit.
 *
 * Outputs are single-handle tensors (tile = numel): pooling's work is rearrangement plus a few
 * batched protocol calls; inputs may be tiled in any way.
 */
#ifndef VEIL_TASKS_POOL_H
#define VEIL_TASKS_POOL_H

#include "tasks/mpc.h"

/**
 * max (...) = max over the last dimension of x (..., k), k >= 1; argmax_onehot (may be NULL)
 * receives (..., k) arithmetic 0/1 shares with a single 1 at the (first) maximum of each row.
 * Values compared as signed 64-bit; differences must not overflow (|x| < 2^62).
 */
int veil_mpc_max_lastdim(veil_mpc_t *m, const struct veil_sec *x, struct veil_sec *max,
                         struct veil_sec *argmax_onehot);

/** Rows of at most this many candidates, and at most this many compared pairs per call, take the
 * pairwise protocol under veil_pool_pairwise_pays. */
#define VEIL_PAIRWISE_MAX_K 10
#define VEIL_PAIRWISE_MAX_PAIRS 16384

/** veil_mpc_max_lastdim's results (bit for bit) by the pairwise protocol: 2 <= k <=
 * VEIL_PAIRWISE_MAX_K (VEIL_ERR_INVAL otherwise); either output may be NULL but not both. */
int veil_mpc_max_lastdim_pairwise(veil_mpc_t *m, const struct veil_sec *x, struct veil_sec *max,
                                  struct veil_sec *argmax_onehot);

/** 1 when rows of k candidates, rows of them, should take the pairwise protocol (fewer rounds
 * for at most VEIL_PAIRWISE_MAX_PAIRS compared pairs: k >= 3, where it saves rounds). */
int veil_pool_pairwise_pays(size_t rows, size_t k);

/** The pairwise protocol's rounds and bytes per party (N = nparties) for rows of k. */
void veil_pool_pairwise_cost(size_t rows, size_t k, int want_max, int want_onehot, int nparties,
                             uint64_t *rounds, uint64_t *bytes);

/** The same for max(0, the maximum of rows of k) (g->relu): k + 1 candidates, k value groups. */
void veil_pool_pairwise_relu_cost(size_t rows, size_t k, int nparties, uint64_t *rounds,
                                  uint64_t *bytes);

struct veil_pool_geom {
    size_t batch, c, h, w, k, stride;
    int pairwise; /* maxpool2d: 1 = the pairwise protocol (k * k <= VEIL_PAIRWISE_MAX_K) */
    int relu;     /* maxpool2d with pairwise, no route: y = max(0, window max), the ReLU before
                     the pool in the same rounds (k * k + 1 <= VEIL_PAIRWISE_MAX_K candidates) */
};

/**
 * y (batch, c, oh, ow) = max over each k x k window (oh = (h - k) / stride + 1, likewise ow) of
 * x (batch, c, h, w) (x's shape must be exactly that). route (may be NULL) receives the one-hot
 * (batch, c, oh, ow, k * k) of each window's maximum (training). VEIL_ERR_INVAL for k = 0,
 * stride = 0 or a window larger than the image; VEIL_ERR_SHAPE when x does not match g.
 */
int veil_mpc_maxpool2d(veil_mpc_t *m, const struct veil_sec *x, const struct veil_pool_geom *g,
                       struct veil_sec *y, struct veil_sec *route);

/**
 * The fused ReLU + max pool (g->relu and g->pairwise) with the windows compared by s (the shape
 * of x) and the winner's x taken: y = x_w [s_w >= 0], w the first maximum of s in the window.
 * With s = u (a linear layer's untruncated value plus its bias times 2^f) and x = trunc(u), the
 * LTZ starts with the truncation's open (veil_mpc_trunc_unmarked): one round less than pooling
 * x; y is then within the truncation's 1 ulp of max(0, window max of x). Costs as g->relu.
 */
int veil_mpc_maxpool2d_relu_of(veil_mpc_t *m, const struct veil_sec *s, const struct veil_sec *x,
                               const struct veil_pool_geom *g, struct veil_sec *y);

/** dx (batch, c, h, w) = sum over windows of route * dy scattered back to the window's pixels. */
int veil_mpc_maxpool2d_backward(veil_mpc_t *m, const struct veil_sec *route,
                                const struct veil_sec *dy, const struct veil_pool_geom *g,
                                struct veil_sec *dx);

/** y (batch, c, oh, ow) = mean of each k x k window (fixed point with f fractional bits). */
int veil_mpc_avgpool2d(veil_mpc_t *m, const struct veil_sec *x, const struct veil_pool_geom *g,
                       struct veil_sec *y);
/**
 * dx (batch, c, h, w): t = trunc(dy * round(2^f / k^2)) (the forward's constant) added to every
 * pixel of each window (overlapping windows add; pixels outside every window get 0). dy has
 * batch c oh ow elements. Rounds 1 (the truncation); bytes 8 (N-1) |dy|; the scatter is local.
 */
int veil_mpc_avgpool2d_backward(veil_mpc_t *m, const struct veil_sec *dy,
                                const struct veil_pool_geom *g, struct veil_sec *dx);

#endif

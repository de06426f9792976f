/*
 * nonlinear.h — secure nonlinear functions on fixed-point shares (Veil issue 4): exp,
 * reciprocal, inverse square root, softmax over the last dimension, GELU. f = veil_mpc_frac_bits
 * fractional bits (16 by default; the figures below are for f = 16). Every function follows the
 * protocol rules of mpc.h (SPMD, material first, nothing waits, validation before submission)
 * and is built from the Beaver, truncation and comparison protocols (tasks/beaver.h, trunc.h,
 * compare.h, pool.h) plus local work; the plaintext model of each, step for step, is in
 * tasks/nonlinear_ref.h.
 *
 * COSTS. Rounds are veil_mpc_round() marks, the count net's counters see; every call runs its
 * sub-protocols one after the other, so marks are also the latency in rounds. Bytes are what
 * each party sends (summed over its peers), n = numel, N parties; with the primitive costs
 *   mul / square / trunc: 1 round each, (N-1) 16 n / (N-1) 8 n / (N-1) 8 n bytes,
 *   ltz:  R_ltz rounds, B_ltz(n) bytes (tasks/compare.h),
 *   max over rows of k: R_max(k) rounds, B_max(rows, k) bytes (tasks/pool.h),
 * the formulas are given in each contract and computed by veil_nl_cost().
 *
 * ERRORS measured (model over the whole range at 1-ulp steps, and the protocols at N = 2, 3 in
 * tests/test_tasks_nonlinear*.c) are absolute unless said otherwise; the truncation protocol's
 * 1-ulp error is included.
 */
#ifndef VEIL_TASKS_NONLINEAR_H
#define VEIL_TASKS_NONLINEAR_H

#include "tasks/mpc.h"

#include <stdint.h>

/* ---- parameters (changing one changes the error and cost figures below) */
/** exp: squarings n of (1 + t + t^2/2)^(2^n), t = x / 2^n, and guard bits of the schedule. */
#define VEIL_EXP_SQUARINGS 6
#define VEIL_EXP_GUARD 2
/** reciprocal / inverse square root: start segments per octave and Newton iterations. */
#define VEIL_RECIP_STEPS 8
#define VEIL_RECIP_ITERS 2
#define VEIL_RECIP_LO 0 /* default range [2^LO, 2^HI) */
#define VEIL_RECIP_HI 10
#define VEIL_ISQRT_STEPS 8
#define VEIL_ISQRT_ITERS 2
#define VEIL_ISQRT_LO (-8)
#define VEIL_ISQRT_HI 8
/** GELU: cut a (0 below -a, x above a), polynomial precision and the scale of 1/a^2. */
#define VEIL_GELU_CUT 3.45
#define VEIL_GELU_FRAC 24
#define VEIL_GELU_CV_BITS 20

/**
 * y = exp(x), elementwise. Method: t = x / 2^6 is exact at 24 fractional bits (a local shift),
 * the base b = 1 + t + t^2/2 (one square + one truncation), then 6 squarings b <- b^2, each a
 * square and a truncation, with a precision that falls from 24 to 16 bits so that the early
 * steps, whose error the later squarings multiply by 2^(6-k), carry more bits.
 * Range: x in [-64, 0] (softmax after max subtraction): max abs error 1.2e-4 (model, measured);
 * for x in [-112, -64] the result is still below 1 ulp (error < 2e-5); below about -112 the base
 * passes its minimum and the result is WRONG (grows back to 1 at x = -128). For x in (0, 8] the
 * relative error grows like x^3 / 24576 (2% at x = 8); above about 19 the ring overflows.
 * Rounds 14 = 7 (square + trunc). Bytes per party: 7 * 2 * 8 (N-1) n = 112 (N-1) n.
 */
int veil_mpc_exp(veil_mpc_t *m, const struct veil_sec *x, struct veil_sec *y);

/**
 * y = 1 / x, elementwise, for x in [2^lo, 2^hi) (default [1, 1024) via veil_mpc_reciprocal).
 * Method: K = 4 (hi - lo) - 1 comparisons x < 2^(lo + i/4), all in one ltz call over a stacked
 * tensor of K n words, pick the start 2/(a + b) of the quarter-octave [a, b) holding x (a local
 * linear form of the comparison bits: relative error at most 0.043), then 2 Newton iterations
 * y <- y (2 - x y) (relative error 0.043^4 = 3.5e-6, below the fixed-point rounding).
 * Error (f = 16): about 4 ulp of y + 3.5e-6 relative. Outside the range: a start off by more
 * than a factor 2 makes Newton diverge; x <= 0 is not supported.
 * Range limits: -f/2 <= lo < hi <= 24 - f/2, K <= 128. VEIL_ERR_INVAL otherwise.
 * Rounds: R_ltz + 8. Bytes: B_ltz(K n) + 2 * (16 + 8 + 16 + 8) (N-1) n = B_ltz(K n) + 96 (N-1) n.
 */
int veil_mpc_reciprocal_range(veil_mpc_t *m, const struct veil_sec *x, int lo, int hi,
                              struct veil_sec *y);
int veil_mpc_reciprocal(veil_mpc_t *m, const struct veil_sec *x, struct veil_sec *y);

/**
 * y = 1 / sqrt(x), elementwise, for x in [2^lo, 2^hi) (default [2^-8, 2^8): layer-norm
 * variances). Start as for the reciprocal (constant 2/(sqrt a + sqrt b) per quarter octave,
 * relative error 0.022 at most... see the test for the measured figure), then 2 Newton
 * iterations y <- y (3 - x y^2) / 2 (three products each, the /2 folded into the last
 * truncation). Rounds: R_ltz + 12. Bytes: B_ltz(K n) + 2 * (8 + 8 + 16 + 8 + 16 + 8) (N-1) n
 * = B_ltz(K n) + 128 (N-1) n, K = 4 (hi - lo) - 1.
 */
int veil_mpc_inv_sqrt_range(veil_mpc_t *m, const struct veil_sec *x, int lo, int hi,
                            struct veil_sec *y);
int veil_mpc_inv_sqrt(veil_mpc_t *m, const struct veil_sec *x, struct veil_sec *y);

/**
 * y = softmax(x) over the last dimension (k = dims[ndim-1] >= 1, rows = numel / k): subtract
 * the row max (veil_mpc_max_lastdim), exp, row sum (local), reciprocal of the sums over
 * [1, 2^(floor(log2 k) + 1)) (K = 4 (floor(log2 k) + 1) - 1 comparisons per ROW), multiply
 * (mul + trunc). Valid while every x - max(row) >= -112 (exp's range). Rounds:
 * R_max(k) + 14 + (R_ltz + 8) + 2. Bytes: B_max(rows, k) + 112 (N-1) n + B_ltz(K rows)
 * + 96 (N-1) rows + 24 (N-1) n.
 */
int veil_mpc_softmax_lastdim(veil_mpc_t *m, const struct veil_sec *x, struct veil_sec *y);

/**
 * y = GELU(x) = x Phi(x), elementwise. Method (chosen over x sigmoid(1.702 x), whose
 * approximation error alone is 2.0e-2 and which needs exp and a reciprocal: about 14 + R_ltz +
 * 8 + 2 rounds): 0 for x < -a, x for x >= a, and on [-a, a) the polynomial
 * x/2 + sum_{i<=5} C_i v^i, v = x^2/a^2, a = 3.45, evaluated by Horner at 24 fractional bits.
 * The two comparisons [x < -a], [x < a] run in one ltz call (2n words), in the DAG beside the
 * polynomial; the select y = x + [x<a] (P - x) - [x<-a] P is one Beaver product over 2n words
 * (bits times values: no truncation). Error: max abs 1.1e-3 (model), for |x| < 2^14.
 * Rounds: R_ltz + 11 = R_ltz + square + trunc (v and the first Horner step, stacked) + 4 (mul
 * + trunc) + mul. Bytes: B_ltz(2n) + (8 + 16 + 4 * 24 + 32) (N-1) n = B_ltz(2n) + 152 (N-1) n.
 */
int veil_mpc_gelu(veil_mpc_t *m, const struct veil_sec *x, struct veil_sec *y);

/** Which function veil_nl_cost describes. */
enum veil_nl_op { VEIL_NL_EXP, VEIL_NL_RECIP, VEIL_NL_ISQRT, VEIL_NL_SOFTMAX, VEIL_NL_GELU };

/**
 * The formulas above: rounds and bytes each party sends for op on n elements (for SOFTMAX,
 * rows = n / k rows of k; for RECIP / ISQRT, the range [2^lo, 2^hi); other ops ignore k, lo,
 * hi) with N parties. Returns VEIL_OK or VEIL_ERR_INVAL.
 */
int veil_nl_cost(enum veil_nl_op op, int nparties, size_t n, size_t k, int lo, int hi,
                 uint64_t *rounds, uint64_t *bytes);

#endif

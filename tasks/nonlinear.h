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
 *   ltz:  R_ltz = 4 rounds, B_ltz(w) = 8 (N-1) (w + 36 ceil(w/64)) bytes (tasks/compare.h),
 *   max over rows of k: R_max(k) = 4 ceil(log2 k) rounds, B_max(rows, k) bytes (tasks/pool.h),
 * the formulas are given in each contract and computed by veil_nl_cost().
 *
 * ERRORS measured (model over the whole range at 1-ulp steps, and the protocols at N = 2, 3, 4 in
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
/** softmax: terms with x - max(row) < -FLOOR are set to an exact 0 (exp's domain is [-64, 0]). */
#define VEIL_SOFTMAX_FLOOR 64
/** GELU: cut a (0 below -a, x above a), polynomial precision and the scale of 1/a^2. */
#define VEIL_GELU_CUT 3.7
#define VEIL_GELU_DEG 6 /* polynomial degree in v = x^2 / a^2 */
#define VEIL_GELU_FRAC 24
#define VEIL_GELU_CV_BITS 20

/*
 * SUMMARY (f = 16; bytes per element each party sends at N = 2, multiply by N-1 otherwise;
 * errors: worst over the range, model at 1-ulp steps / protocol tests at N = 2, 3):
 *   function          range              rounds          bytes/el      max abs error
 *   exp               [-64, 0]           14              112           7.3e-5 / 6.6e-5
 *   reciprocal        [1, 1024)          10 = 4 + 6      1067.5        1.8e-5 / 1.5e-5
 *     (range [1, 16): same rounds, 467.5 bytes)
 *   inv_sqrt          [2^-8, 2^8)        14 = 4 + 10     1715.5        1.1e-4 / 9.3e-5
 *   softmax, k = 10   any row            47 = 16+5+14+10+2 222.5     3.8e-4 (edge rows)
 *   softmax, k = 128  any row            59 = 28+5+14+10+2 183.7     2.2e-3 (edge rows)
 *   gelu              |x| < 2^14         17 = 4 + 13     201           4.5e-4 / 4.5e-4
 * Row sums of softmax: |sum - 1| <= 1.1e-4 (k = 10), 7.6e-4 (k = 128, model worst case).
 * CrypTen for comparison: softmax over 10 about 94 rounds; exp 8 (1 + x/256) squarings.
 * Reciprocal and inverse square root spend bytes (one 64-bit comparison per threshold and
 * element) to save rounds; where they serve softmax or layer norm they run once per ROW, so the
 * bytes per element of the row are small. Narrow the range with the _range variants to cut bytes
 * proportionally (8 thresholds per octave).
 */

/**
 * y = exp(x), elementwise. Method: t = x / 2^6 is exact at 24 fractional bits (a local shift),
 * the base b = 1 + t + t^2/2 (one square + one truncation), then 6 squarings b <- b^2, each a
 * square and a truncation, with a precision that falls from 24 to 16 bits so that the early
 * steps, whose error the later squarings multiply by 2^(6-k), carry more bits.
 * Range: x in [-64, 0] (softmax after max subtraction): max abs error 7.3e-5 (relative 1.5e-3
 * where y > 0.05); for x in [-112, -64] the result stays within 1.6e-5 of exp(x) (about 0);
 * below about -112 the base passes its minimum and the result is WRONG (back near 1 at
 * x = -128). For x > 0 the relative error grows like x^3 / 24576 (1.9% at x = 8, 13% at 16);
 * from x = 16.6 (exp(x) 2^38 >= 2^62 in the last square) the ring overflows and the result is
 * garbage. Rounds 14 = 7 (square + trunc). Bytes: 112 (N-1) n.
 */
int veil_mpc_exp(veil_mpc_t *m, const struct veil_sec *x, struct veil_sec *y);

/**
 * y = 1 / x, elementwise, for x in [2^lo, 2^hi) (veil_mpc_reciprocal: [1, 1024)). Method:
 * K = 8 (hi - lo) - 1 comparisons x < 2^(lo + i/8), all in one ltz call over a stacked tensor of
 * K n words; the start 2/(a + b) of the eighth of an octave [a, b) holding x is a local linear
 * form of the comparison bits (relative error at most 0.043); then 2 Newton iterations
 * y <- y (2 - x y) (0.043^4 = 3.5e-6 relative, below the rounding). x y stays at 2f bits, so an
 * iteration is mul, mul, trunc. Error: max abs 1.8e-5 over [1, 1024) (relative 3e-4 where
 * y > 0.05). Outside the range the start is off: below 2^lo the result is too small by about
 * (1 - x / 2^lo)^4 relative; above about 1.9 * 2^hi Newton diverges; x <= 0 is not
 * supported. Limits: -f/2 <= lo < hi <= 24 - f/2 and K <= 128, VEIL_ERR_INVAL otherwise.
 * Rounds: R_ltz + 6 = 10. Bytes: B_ltz(K n) + 80 (N-1) n, with
 * B_ltz(w) = 8 (N-1) (w + 36 ceil(w / 64)) (tasks/compare.h).
 */
int veil_mpc_reciprocal_range(veil_mpc_t *m, const struct veil_sec *x, int lo, int hi,
                              struct veil_sec *y);
int veil_mpc_reciprocal(veil_mpc_t *m, const struct veil_sec *x, struct veil_sec *y);

/**
 * y = 1 / sqrt(x), elementwise, for x in [2^lo, 2^hi) (veil_mpc_inv_sqrt: [2^-8, 2^8), layer
 * norm variances). Start as for the reciprocal (constant 2/(sqrt a + sqrt b) per eighth of an
 * octave, relative error at most 0.022), then 2 Newton iterations y <- y (3 - x y^2) / 2:
 * x y at 2f bits, (x y) y truncated by 2f, y (3 - .) truncated by f + 1 (mul, mul, trunc, mul,
 * trunc). Error: max abs 1.1e-4 (at x near 2^-8, where y = 16; relative 2.5e-4 overall,
 * 2.3e-5 abs for x >= 1). Limits as for the reciprocal. Rounds: R_ltz + 10 = 14.
 * Bytes: B_ltz(K n) + 128 (N-1) n, K = 8 (hi - lo) - 1.
 */
int veil_mpc_inv_sqrt_range(veil_mpc_t *m, const struct veil_sec *x, int lo, int hi,
                            struct veil_sec *y);
int veil_mpc_inv_sqrt(veil_mpc_t *m, const struct veil_sec *x, struct veil_sec *y);

/**
 * y = softmax(x) over the last dimension (k = dims[ndim-1] >= 1, rows = numel / k; a last
 * dimension of 0 is VEIL_ERR_SHAPE): subtract the row max (veil_mpc_max_lastdim, no argmax),
 * exp, then every term with x - max(row) < -VEIL_SOFTMAX_FLOOR = -64 (below exp's domain) set
 * to an exact 0 (one ltz on n words beside the exp, one product of the bits with the terms, exact
 * whatever exp made of them), row sum (local), reciprocal of the sums over [1, 2^h),
 * h = floor(log2 k) + 1 (every sum lies in [1, k]: its largest term is exp(0)), then e * (1/s)
 * (mul + trunc); k < 2^16 (VEIL_ERR_INVAL beyond: the reciprocal's range limit). Valid for every
 * row of values in the ring's range (any spread; spread below 2^62 words). Error: at most about
 * (k + 1) 7.3e-5 abs: exp's absolute error (7.3e-5) is the same for equal terms, so it adds up in
 * the row sum; measured worst (model on edge rows: [0, d, d, ...], half 0 half d, d over
 * [-70, 0]) 9.5e-5 (k = 2), 3.8e-4 (k = 10), 2.2e-3 (k = 128, 64 terms near exp(-6)); random
 * logits over [-12, 12]: 2.0e-4 (k = 10), 1.1e-4 (k = 128). The bound follows exp's accuracy, not
 * the reciprocal's (an exp with relative error would make it independent of k). Rounds:
 * R_max(k) + R_ltz + 14 + 1 + (R_ltz + 6) + 2 with R_max(k) = 4 ceil(log2 k): 47 for k = 10, 59
 * for k = 128. Bytes: B_max(rows, k) + B_ltz(n) + 112 (N-1) n + 16 (N-1) n + B_ltz(K rows)
 * + 80 (N-1) rows + 24 (N-1) n, K = 8 h - 1, B_max from tasks/pool.h.
 */
int veil_mpc_softmax_lastdim(veil_mpc_t *m, const struct veil_sec *x, struct veil_sec *y);

/**
 * y = GELU(x) = x Phi(x), elementwise. Method (chosen over x sigmoid(1.702 x), whose
 * approximation error alone is 2.0e-2 and which needs exp, a reciprocal and a sign test: about
 * 14 + 10 + 4 rounds): 0 for x < -a, x for x >= a, and on [-a, a) the polynomial
 * x/2 + sum_{1<=i<=6} C_i v^i, v = x^2/a^2, a = 3.7, evaluated by Horner at 24 fractional bits;
 * C_0 = 0, so GELU(0) = 0 (exactly, but for the truncations' 1-ulp error).
 * The two comparisons [x < -a], [x < a] run in one ltz call (2n words), in the DAG beside the
 * polynomial; the select y = x + [x<a] (P - x) - [x<-a] P is one Beaver product over 2n words
 * (bits times values: no truncation). Error: max abs 4.5e-4 (fit 4.2e-4 inside, cut x Phi(-a) =
 * 4.0e-4 outside), for |x| < 2^14. Rounds: R_ltz + 2 DEG + 1 = 17 (square, one stacked trunc for
 * v and the first Horner step, 5 (mul + trunc), the select mul). Bytes:
 * B_ltz(2n) + (32 + 24 DEG) (N-1) n = B_ltz(2n) + 176 (N-1) n.
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

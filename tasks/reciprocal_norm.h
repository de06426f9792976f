/*
 * reciprocal_norm.h — secure reciprocal by normalisation over every positive input the API
 * accepts (internal; Veil issue 17), and its plaintext model. The DSL's veil_reciprocal and
 * veil_div use it; veil_mpc_reciprocal (tasks/nonlinear.h, [1, 1024), 14 rounds, 3052 B) stays
 * for softmax.
 *
 * METHOD over [2^lo, 2^hi) (default lo = -f, hi = 15: every positive value the feeds accept):
 *   1. the octave bits c_i = [x < 2^i], i = lo+1 .. hi-1 (K = hi - lo - 1 of them; the one-hot
 *      octave e of x is c_{e+1} - c_e) from ONE bit-sliced circuit over the masked bits of x
 *      (veil_nl_octave_bits, tasks/octave_bits.c): x's bits from a prefix carry network, then a
 *      suffix AND (f = 16, the DSL's range: 184 AND gates per 64 elements in 10 levels, 12
 *      rounds with the open and the B2A);
 *   2. locally, two secret powers of two as linear forms of the bits: S1 = 2^(G - e) with
 *      G = hi - 1 and S2 = 2^(f - e) (fixed point at f bits);
 *   3. m = x S1 = (x / 2^e) 2^(f + G), in [1, 2) (1 product, no truncation);
 *   4. one truncation of the stacked pair (m, 24/17 - 8/17 m) to 20 fractional bits: m and the
 *      linear start y0 of 1/m (relative error at most 1/17) (1 round);
 *   5. two Newton steps y (2 - m y) at 20 bits (1/17^4 = 1.2e-5 relative; 6 rounds);
 *   6. 1/x = trunc(y S2, 20) (2 rounds).
 * Rounds (L + 2) + 10 = 22 at f = 16 (L: the circuit's AND levels). Bytes per party: the octave
 * bits' 8 (N-1) (n + 2 A W + K W) (A AND gates, W = ceil(n / 64), veil_octave_bits_cost) plus
 * 136 (N-1) n: at N = 2, f = 16 and 64 | n, 193.75 B per element over [2^-16, 2^15) (K = 30;
 * one comparison per octave, as before, cost 1264.75 B), 163.6 B over [1, 1024) (21 rounds).
 * Error (f = 16, measured by tests/test_graph_nonlinear.c at N = 2, 3 and the plaintext
 * model): relative 2^-14 plus one ulp (2^-16) absolute; the test asserts 2^-12 |1/x| + 2^-15.
 * Outside the range: x >= 2^hi gives m >= 2 and Newton diverges from about m = 2.8 (the octave
 * bits read x as an (f + hi)-bit word: from 2^(f + hi) on, the high bits are lost); x < 2^lo is
 * treated as in the lowest octave (too small a result); x <= 0 is not supported. Needs
 * hi - 1 <= f, f + hi - 1 <= 40 and f <= 20 (VEIL_ERR_UNSUPPORTED otherwise); lo >= -f, K in
 * [1, 128].
 */
#ifndef VEIL_TASKS_RECIPROCAL_NORM_H
#define VEIL_TASKS_RECIPROCAL_NORM_H

#include "tasks/mpc.h"

#include <stddef.h>
#include <stdint.h>

#define VEIL_RECIP_NORM_HI 15
/** Rounds after the octave bits, and the total at f = 16 over the DSL's range (12 + 10). */
#define VEIL_RECIP_NORM_ROUNDS_AFTER 10
#define VEIL_RECIP_NORM_ROUNDS 22

/** y = 1 / x over [2^lo, 2^hi) (y initialised here like x). Costs and limits above. */
int veil_mpc_reciprocal_norm(veil_mpc_t *m, const struct veil_sec *x, int lo, int hi,
                             struct veil_sec *y);

/** The costs above for n elements, N parties, range [2^lo, 2^hi). */
void veil_reciprocal_norm_cost(int nparties, size_t n, int f, int lo, int hi, uint64_t *rounds,
                               uint64_t *bytes);

/** VEIL_OK when f, lo, hi meet the limits above; VEIL_ERR_UNSUPPORTED with a message naming op
 * otherwise. */
int veil_reciprocal_norm_check(const char *op, int f, int lo, int hi);

/** Plaintext model (floor truncations when state is NULL); y must not overlap x. */
void veil_ref_reciprocal_norm(size_t n, const uint64_t *x, int lo, int hi, int f,
                              uint64_t *state, uint64_t *y);

#endif

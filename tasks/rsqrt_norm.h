/*
 * rsqrt_norm.h — secure inverse square root by normalisation over every positive input the API
 * accepts (internal; Veil issue 17), and its plaintext model. The DSL's veil_rsqrt and veil_sqrt
 * (sqrt(x) = x rsqrt(x)) and the Adam update (graph/op_adam.c) use it; veil_mpc_inv_sqrt
 * (tasks/nonlinear.h, a table over [2^-8, 2^8)) stays for layer norm, whose rows are scaled into
 * that range first.
 *
 * METHOD over [2^lo, 2^hi) (the DSL: lo = -f, hi = 15, every positive value the feeds accept),
 * output y = 1/sqrt(x) at f + xb fractional bits (xb = 0 for rsqrt; sqrt and Adam take more):
 *   1. the octave bits c_i = [x < 2^i], i = lo+1 .. hi-1 (K = hi - lo - 1) from ONE bit-sliced
 *      circuit (veil_nl_octave_bits, tasks/octave_bits.c; reciprocal_norm.h step 1); the octave
 *      e of x (x in [2^e, 2^(e+1))) is known to
 *      the bits, so every public function g(e) is a local linear form of them:
 *      g(e) = g(hi - 1) + sum_i c_i (g(i - 1) - g(i));
 *   2. locally, S1 = 2^(hi - 1 - e) and S2 = round(2^(T - e/2) (1 + 2^-17)) at T = 38 -
 *      ceil(-lo / 2) bits. Scaling x by 2^-e (not by an even power: m in [1, 2), not [1/4, 1))
 *      halves the polynomial's interval; the odd octaves' sqrt(1/2) rides in S2's encoding
 *      (relative 2^-21 at worst), and (1 + 2^-17) centres Newton's one-sided error;
 *   3. mq = x S1 = m 2^(f + hi - 1), m = x / 2^e in [1, 2) (1 product, no truncation);
 *   4. one truncation of the stacked pair (m, u = sqrt(c2) m) to P = 20 bits (1 round);
 *   5. y0 = u^2 + c1 m + c0 at 2P bits, the minimax quadratic for 1/sqrt(m) on [1, 2) (relative
 *      error 3.5e-3): one square (1 round);
 *   6. m y0 at 3P bits (1 product), then one truncation of the stacked pair (m y0, y0 2^P) by
 *      2P (1 round);
 *   7. one product of the stacked pairs (m y0, S2) (y0, y0), one truncation of both by P: m y0^2
 *      at P bits and yS = y0 S2 at T bits (2 rounds);
 *   8. Newton's step y0 (3 - m y0^2) / 2 scaled by S2, directly:
 *      y = trunc(yS (3 - m y0^2), P + 1 + T - f - xb) (2 rounds); one step takes the quadratic's
 *      3.5e-3 to 1.82e-5 (3/2 e^2), centred to +-9.1e-6 by S2's factor.
 * Rounds (L + 2) + 9 = 21 at f = 16 over the DSL's range (L: the octave circuit's AND levels,
 * 10 there). Bytes per party: the octave bits' 8 (N-1) (n + 2 A W + K W) (veil_octave_bits_cost)
 * plus 144 (N-1) n: at N = 2, f = 16 and 64 | n, 201.75 B per element over [2^-16, 2^15)
 * (K = 30; with one comparison per octave it was 1272.75 B).
 * Error: relative 1.21e-5 (below 2^-16) plus one ulp of the output (2^-(f+xb)), measured by
 * tests/test_graph_nonlinear.c's sweep of the plaintext model over every octave of [2^-16, 2^15)
 * (xb = 0 and 8) and of [2^-8, 2^24) (xb = 8), floor and random truncations, which asserts
 * 2^-16 |y| + 1 ulp; the secure runs (N = 2, 3, f = 16, the DSL's rsqrt and sqrt over their
 * whole domain and every octave's edges) are asserted within 2^-15 |y| + 2^-15.
 * OUTSIDE THE RANGE (nothing checks secret values): x >= 2^hi gives m >= 2, a wrong value
 * (Newton from a start that is too small for m beyond about 5, then one that wraps); x < 2^lo
 * is treated as in the lowest octave (m < 1, a too-small result); x = 0 gives m = 0, y0 = c0
 * and y = 1.5 c0 2^(-lo/2) (1.5 c0 = 2.3606: 604.3 at lo = -16, within an ulp or two), a
 * finite number and no error; x < 0 gives an unspecified value. Limits (VEIL_ERR_UNSUPPORTED
 * otherwise): K in [1, 128], lo >= -f, f + hi - 1 <= 58, hi <= 2 T - 41 (S2 keeps 21 bits),
 * 0 <= xb and f + xb <= P + T, f in [1, 30].
 */
#ifndef VEIL_TASKS_RSQRT_NORM_H
#define VEIL_TASKS_RSQRT_NORM_H

#include "tasks/mpc.h"

#include <stddef.h>
#include <stdint.h>

/** The DSL's range [2^-f, 2^VEIL_RSQRT_NORM_HI) (reciprocal_norm.h's). */
#define VEIL_RSQRT_NORM_HI 15
/** Rounds after the octave bits, and the total at f = 16 over the DSL's range (12 + 9). */
#define VEIL_RSQRT_NORM_ROUNDS_AFTER 9
#define VEIL_RSQRT_NORM_ROUNDS 21
/** Extra fractional bits of rsqrt inside the DSL's sqrt: sqrt(x) = trunc_(f+8)(x rsqrt(x)). */
#define VEIL_SQRT_NORM_BITS 8

/** y = 1 / sqrt(x) at f + xb fractional bits over [2^lo, 2^hi) (y initialised here like x).
 * Costs and limits above. */
int veil_mpc_rsqrt_norm(veil_mpc_t *m, const struct veil_sec *x, int lo, int hi, int xb,
                        struct veil_sec *y);

/** The costs above for n elements, N parties, range [2^lo, 2^hi) (any xb). */
void veil_rsqrt_norm_cost(int nparties, size_t n, int f, int lo, int hi, uint64_t *rounds,
                          uint64_t *bytes);

/** VEIL_OK when f, lo, hi, xb meet the limits above; VEIL_ERR_UNSUPPORTED with a message naming
 * op otherwise. */
int veil_rsqrt_norm_check(const char *op, int f, int lo, int hi, int xb);

/** Plaintext model (floor truncations when state is NULL); y must not overlap x. Inputs at f
 * bits, outputs at f + xb bits. */
void veil_ref_rsqrt_norm(size_t n, const uint64_t *x, int lo, int hi, int f, int xb,
                         uint64_t *state, uint64_t *y);

#endif

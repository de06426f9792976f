/*
 * nonlinear_sigmoid.h — secure logistic sigmoid and tanh on fixed-point shares (internal; Veil
 * issue 17), correct over the WHOLE ring range a fixed-point tensor may hold, saturating at the
 * ends, and their plaintext fixed-point models (same ring steps, the secure truncation modelled
 * as floor plus a 0/1 error, as tasks/nonlinear_ref.h does for the other functions).
 *
 * METHOD (sigmoid; tanh(x) = 2 sigmoid(2 x) - 1 runs the same steps with the clamp at 8 and v
 * doubled locally after step 3, so that 2 x, which could wrap, is never formed):
 *   1. one ltz call over the stacked 3 n words (x + 16, x - 16, x): b1 = [x < -16],
 *      b2 = [x < 16], s = [x < 0] (4 rounds);
 *   2. one Beaver product of those bits with x replicated three times (bits are 0/1 integers, so
 *      no truncation): p1 = b1 x, p2 = b2 x, p3 = s x (1 round);
 *   3. locally, with c = b2 - b1 = [|x| < 16] and c s = s - b1:
 *      v = -min(|x|, 16) = -16 + 16 c - (p1 + p2 - 2 p3), in [-16, 0];
 *   4. e = exp(v) (veil_mpc_exp: accurate on [-64, 0]; 14 rounds);
 *   5. r = 1 / (1 + e), the denominator in [1, 2]: a linear start 24/17 - (8/17) d (relative
 *      error at most 1/17, one truncation) and two Newton steps y (2 - d y) (1/17^4 = 1.2e-5)
 *      (7 rounds); r = sigmoid(|x|) (saturated at |x| >= 16: 1 - e^-16 = 1 - 1.1e-7);
 *   6. sigmoid(x) = s ? 1 - r : r = r + s (1 - 2 r), a bit times a value (1 round).
 * Rounds 27 = 4 + 1 + 14 + 1 + 6 + 1. Bytes per party: (N-1) (B_ltz(3 n) / (N-1) + 264 n) with
 * B_ltz(w) = 8 (N-1) (w + 36 ceil(w / 64)) (tasks/compare.h): 301.5 B per element at N = 2 when
 * 64 divides n. Domain: every x a fixed-point word holds (|x| < 2^(62 - f)), which includes every
 * input the secure feeds accept (|x| < 2^15); no input is refused. Error (f = 16, measured by
 * tests/test_graph_nonlinear.c): the model at every 1-ulp step of [-20, 20] sigmoid 7.0e-5,
 * tanh 1.41e-4 max abs; the protocol at N = 2, 3 over [-20, 20] and the ends +-(2^15 - 2^-16)
 * 7.0e-5 and 1.37e-4; the test asserts 1e-4 and 2e-4.
 */
#ifndef VEIL_TASKS_NONLINEAR_SIGMOID_H
#define VEIL_TASKS_NONLINEAR_SIGMOID_H

#include "tasks/mpc.h"

#include <stddef.h>
#include <stdint.h>

/** Saturation point (|x| beyond it computes as |x| = 16) and rounds of either function. */
#define VEIL_SIGMOID_CLAMP 16
#define VEIL_SIGMOID_ROUNDS 27

/** y = sigmoid(x) (is_tanh = 0: 1 / (1 + exp(-x))) or tanh(x) (is_tanh = 1), elementwise; y is
 * initialised here like x. VEIL_ERR_INVAL for a non-arithmetic or NULL tensor,
 * VEIL_ERR_UNSUPPORTED for f > 20 (exp's headroom). Costs above. */
int veil_mpc_sigmoid_tanh(veil_mpc_t *m, const struct veil_sec *x, int is_tanh, struct veil_sec *y);

/** The costs above: rounds and bytes each party sends for n elements with N parties. */
void veil_sigmoid_cost(int nparties, size_t n, uint64_t *rounds, uint64_t *bytes);

/** Plaintext model of veil_mpc_sigmoid_tanh on n words at f fractional bits (state: the
 * truncation error stream, NULL for floor). y must not overlap x. */
void veil_ref_sigmoid_tanh(size_t n, const uint64_t *x, int f, int is_tanh, uint64_t *state,
                           uint64_t *y);

#endif

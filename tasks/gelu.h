/*
 * gelu.h — GELU for training (Veil issue 17): the forward protocol of nonlinear.h keeping the
 * state its backward pass reuses, and the backward pass dx = dy GELU'(x) on shares, with its
 * plaintext model and cost formulas (internal; the DSL's GELU_GRAD op, graph_internal.h).
 *
 * METHOD. GELU'(x) = Phi(x) + x phi(x), built on the forward's piecewise structure and its cut
 * a = VEIL_GELU_CUT: 0 below -a, 1 from a on, and between them 1/2 + x Q(v) with the forward's
 * v = x^2 / a^2 (at VEIL_GELU_FRAC = 24 bits) and Q a degree-VEIL_GELU_GRAD_DEG polynomial
 * (minimax fit of (GELU'(x) - 1/2) / x on [0, a], Lawson iterations; fit error 5.4e-4). The
 * forward's comparison bits [x < -a; x < a] and v are reused (veil_mpc_gelu_saved keeps them), so
 * the backward pass needs no comparison. Sequence (the plaintext FIXED executor runs the same ring
 * operations with floor truncations; d_j = Q's coefficients at F = 24 bits; trunc_s = by s bits):
 *   w = trunc_f(dy * x)                               (in parallel with Horner)
 *   acc = trunc_F(v * d_6) + d_5; acc = trunc_F(v * acc) + d_j for j = 4 .. 0
 *   u = trunc_F(w * acc + dy 2^(F-1))                 (= dy GELU'(x) on [-a, a))
 *   dx = dy + [x < a] (u - dy) - [x < -a] u           (one Beaver product of [blo; bhi] with
 *                                                      [u; u - dy]: exact, no truncation)
 * Outside [-a, a) u is meaningless (even wrapped), but the select cancels it exactly: dx = 0
 * below -a and dx = dy from a on.
 *
 * ERROR (f = 16; measured by tests/test_tasks_gelu_grad.c: the model at every 2^-16 step of
 * [-8, 8] with dy = 1, the protocol at N = 2, 3 over |x| < 2^14 with edges 0, +-2^-16, +-a and
 * the largest inputs): |dx - dy GELU'(x)| <= 1.5e-3 |dy| + 2^-15 (1 + |dy|). The bound is the
 * cut's: GELU'(a) - 1 = -GELU'(-a) = 1.46e-3 at a = 3.7 (the fit inside gives 5.4e-4). A cut of
 * its own (a second comparison, 4 rounds and B_ltz(2n) more) could lower it to the fit's error;
 * sharing the forward's bits was preferred: a gradient factor off by 1.5e-3 where GELU' is
 * within 1.5e-3 of 0 or 1 does not change training (the test's secure step matches the
 * plaintext trainer), and the backward pass costs no comparison.
 * DOMAIN: |x| < 2^14 (the forward's), |dy| < 2^10 (dy x and w acc then fit the truncation's
 * range).
 *
 * COSTS (N parties, n elements, bytes each party sends): rounds 2 DEG + 4 = 16 (mul + trunc for
 * w, one trunc, DEG - 1 (mul + trunc), mul + trunc for u, the select's mul); bytes
 * (64 + 24 DEG) (N-1) n = 208 (N-1) n. The forward with its state kept costs what
 * veil_mpc_gelu costs (nonlinear.h): it only keeps two of its temporaries.
 */
#ifndef VEIL_TASKS_GELU_H
#define VEIL_TASKS_GELU_H

#include "tasks/mpc.h"

#include <stddef.h>
#include <stdint.h>

/** Degree of Q in v (the backward polynomial). */
#define VEIL_GELU_GRAD_DEG 6

/**
 * y = GELU(x) exactly as veil_mpc_gelu (same protocol, same result), keeping the backward pass's
 * state: *bits (2 numel words, [x < -a] then [x < a], integers 0/1 as arithmetic shares, laid out
 * for ltz) and *v (like x: x^2 / a^2 at VEIL_GELU_FRAC bits). bits and v are initialised here and
 * owned by the caller (veil_mpc_release); on error they are left empty.
 */
int veil_mpc_gelu_saved(veil_mpc_t *m, const struct veil_sec *x, struct veil_sec *y,
                        struct veil_sec *bits, struct veil_sec *v);

/**
 * dx = dy GELU'(x) by the sequence above, from the forward's x, bits and v (veil_mpc_gelu_saved).
 * dy, x and v must have the same shape and layout; dx is initialised like x. VEIL_ERR_INVAL on
 * NULL or mismatched operands (before anything is submitted), VEIL_ERR_UNSUPPORTED when
 * f > VEIL_GELU_FRAC - 2.
 */
int veil_mpc_gelu_grad(veil_mpc_t *m, const struct veil_sec *dy, const struct veil_sec *x,
                       const struct veil_sec *bits, const struct veil_sec *v, struct veil_sec *dx);

/** The costs above for n elements and N parties. */
void veil_gelu_grad_cost(int nparties, size_t n, uint64_t *rounds, uint64_t *bytes);

/** Plaintext model of veil_mpc_gelu_grad on n words (f fractional bits): v and the bits
 * recomputed from x as the forward does (veil_ref_gelu); state as in nonlinear_ref.h (NULL:
 * floor). dx must not overlap dy or x. */
void veil_ref_gelu_grad(size_t n, const uint64_t *dy, const uint64_t *x, int f, uint64_t *state,
                        uint64_t *dx);

/** GELU'(x) = Phi(x) + x phi(x) in double. */
double veil_ref_gelu_grad_f64(double x);

#endif

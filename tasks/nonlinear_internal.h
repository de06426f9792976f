/*
 * nonlinear_internal.h — pieces the nonlinear protocol files share (exp.c, reciprocal.c,
 * softmax.c, gelu.c; implemented in nonlinear_util.c): argument checks, the flat relayout of
 * whole tensors (stack, split, row sum, row broadcast), multiply-then-truncate compositions, and
 * the comparison-based start of the Newton methods.
 */
#ifndef VEIL_TASKS_NONLINEAR_INTERNAL_H
#define VEIL_TASKS_NONLINEAR_INTERNAL_H

#include "codelets/flatop_internal.h"
#include "tasks/mpc.h"
#include "tasks/nonlinear_ref.h"

/** Checks that x is a non-empty arithmetic tensor and y is not NULL (VEIL_ERR_INVAL naming op). */
int veil_nl_check_unary(const char *op, const struct veil_sec *x, const struct veil_sec *y);

/**
 * One flat relayout task over whole tensors (a->nout / a->nin are set here from the counts):
 * outs[0..nouts) are written (already initialised), ins[0..nins) read. a->add_const is kept only
 * at party 0. Nothing happens at a context that does not compute. Returns as veil_task_flatop.
 */
int veil_nl_flat(veil_mpc_t *m, struct veil_flatop_args a, struct veil_sec *const *outs, int nouts,
                 const struct veil_sec *const *ins, int nins);
/** A flat copy: stacks i0 and i1 into o0 (nouts 1, nins 2) or splits i0 into o0 and o1 (nouts 2,
 * nins 1), row-major, by veil_nl_flat. */
int veil_nl_copy2(veil_mpc_t *m, struct veil_sec *o0, struct veil_sec *o1, int nouts,
                  const struct veil_sec *i0, const struct veil_sec *i1, int nins);

/** Tile for stacked tensors that go through ltz: the context's tile rounded down to a multiple
 * of 64 (at least 64), as ltz requires. */
size_t veil_nl_stack_tile(const veil_mpc_t *m);

/** The octave bits of x over [2^lo, 2^hi): *bits (initialised here, k = hi - lo - 1 numel-long
 *  blocks stacked, the stack tile) holds c_i = [x < 2^(lo + 1 + i)] for i < k, arithmetic 0/1
 *  shares, for x read as an (f + hi)-bit word (exact for x in [0, 2^(f + hi))), from one
 *  bit-sliced circuit (octave_bits.c, bitcirc.h): costs veil_octave_bits_cost with p0 = f + lo + 1
 *  and p1 = f + hi - 1. Needs 1 <= p0 <= p1 <= 62 and k <= 128 (VEIL_ERR_UNSUPPORTED otherwise;
 *  the callers' range checks keep inside). */
int veil_nl_octave_bits(veil_mpc_t *m, const struct veil_sec *x, int lo, int hi,
                        struct veil_sec *bits);
/** Rounds and bytes per party of veil_nl_octave_bits for n elements, N parties and the bit
 *  positions p0..p1: rounds L + 2, bytes (N-1) 8 (n + 2 A W + k W) with L the circuit's AND
 *  levels, A its AND gates, W = ceil(n / 64) and k = p1 - p0 + 1 (0 and 0 outside the limits). */
void veil_octave_bits_cost(int nparties, size_t n, int p0, int p1, uint64_t *rounds,
                           uint64_t *bytes);
/** The plaintext model of an octave bit: [x < 2^p] for x read as a (p1 + 1)-bit word (bits of x
 *  above p1 ignored), as the circuit computes it. */
static inline uint64_t veil_nl_octave_bit_model(uint64_t x, int p, int p1)
{
    const uint64_t low = p1 >= 63 ? x : x & ((UINT64_C(2) << p1) - 1);
    return low < (UINT64_C(1) << p);
}
/** *out (initialised here, like `like`) = c0 + sum_{i<k} c[i] bits_i for k stacked blocks of
 *  0/1 shares (local): a public function of an octave as a linear form in the bits of
 *  veil_nl_octave_bits, or of layer norm's scale bits. */
int veil_nl_bits_wsum(veil_mpc_t *m, const struct veil_sec *like, const struct veil_sec *bits,
                        int k, uint64_t c0, const uint64_t *c, struct veil_sec *out);

/** Bytes each party sends per other party for an ltz over n words in tiles that are multiples
 *  of 64 (the cost formulas' comparison term). */
uint64_t veil_nl_ltz_bytes(uint64_t n);

/** z = (x * y) >> s and z = (x * x) >> s: a Beaver product then a truncation (2 rounds). */
int veil_nl_mul_trunc(veil_mpc_t *m, const struct veil_sec *x, const struct veil_sec *y, int s,
                      struct veil_sec *z);
int veil_nl_square_trunc(veil_mpc_t *m, const struct veil_sec *x, int s, struct veil_sec *z);

/** z = c - x for a public ring constant c (local). */
int veil_nl_rsub_scalar(veil_mpc_t *m, const struct veil_sec *x, uint64_t c, struct veil_sec *z);

/**
 * Newton's method for 1 / d: cur <- cur (2 - d cur), iters >= 1 times, d and cur with `bits`
 * fractional bits, one truncation by 2 bits per step (3 rounds a step). Consumes *cur (released
 * whatever happens); the last step's result goes to y.
 */
int veil_nl_recip_newton(veil_mpc_t *m, const struct veil_sec *d, struct veil_sec *cur, int bits,
                         int iters, struct veil_sec *y);

/**
 * The start y0 of a Newton method from tab (nonlinear_ref.h): x replicated k times minus the
 * thresholds (one tensor of k numel words), one ltz call on it, then the linear form of the
 * comparison bits. y0 is initialised like x. Rounds R_ltz; bytes B_ltz(k numel).
 */
int veil_nl_start(veil_mpc_t *m, const struct veil_sec *x, const struct veil_nl_table *tab,
                  struct veil_sec *y0);

#endif

/*
 * trunc.h — truncation of fixed-point shares without probabilistic large errors (Veil issue 4):
 * z = x >> f with one opening, from a TRUNC item (r, r >> f, r >> 63; tasks/preproc.h), and the
 * fixed-point product built on it.
 *
 * PROTOCOL (N parties, arithmetic shares over Z_2^64). Open c = x + r + 2^62 (party 0 adds the
 * constant; here every party adds it to the opened x + r locally, which is the same public
 * value), then locally
 *     z = c_hi - [r_hi] + (1 - c_63) [r_63] 2^(64-f) - 2^(62-f)       (c_hi, constant: party 0)
 * where c_hi = c >> f and c_63 = c >> 63. For |x| < 2^62, x + 2^62 lies in [0, 2^63), so the
 * only wrap-around of c = (x + 2^62) + r happens exactly when r_63 = 1 and c_63 = 0, which the
 * third term repairs; the result is floor(x / 2^f) or that plus 1 (the borrow of the low f bits),
 * never a large error: error at most 1 ulp, always. Rounds 1; bytes per party 8 (N-1) numel.
 *
 * INPUT RANGE. |x| < 2^62 (as a signed ring element) is the caller's contract: it cannot be
 * checked without revealing x. Sharing-time checks enforce it for inputs: veil_fixed_encode
 * refuses reals with |v| >= 2^(62-f), i.e. encodings outside exactly this range. A product of two
 * fixed-point reals a, b holds a b 2^(2f) before truncation, so mul_fixed is in range when
 * |a b| < 2^(62 - 2f) (about 1.07e9 for f = 16) — stricter than the result's own encodable range
 * 2^(62-f), so callers multiplying large values scale one operand down first. Outside the range
 * the result is off by a multiple of 2^(64-f) (undetected).
 */
#ifndef VEIL_TASKS_TRUNC_H
#define VEIL_TASKS_TRUNC_H

#include "tasks/mpc.h"

/**
 * z = x >> f (arithmetic, signed), within 1 ulp (z - floor(x / 2^f) in {0, 1}), for |x| < 2^62.
 * x arithmetic; z gets its layout. f in [1, 62] (VEIL_ERR_INVAL otherwise, before anything is
 * submitted). Rounds 1; bytes per party 8 (N-1) numel.
 */
int veil_mpc_trunc(veil_mpc_t *m, const struct veil_sec *x, int f, struct veil_sec *z);
/** veil_mpc_trunc WITHOUT marking its round: for a caller whose next step's first round starts
 * from the same operand at the same time (its open travels in that round, e.g. a ReLU's LTZ on
 * the untruncated value, veil_mpc_relu_of), so the two take one round of latency. */
int veil_mpc_trunc_unmarked(veil_mpc_t *m, const struct veil_sec *x, int f, struct veil_sec *z);

/**
 * z = x * y in fixed point: veil_mpc_mul then veil_mpc_trunc by veil_mpc_frac_bits(m) (no
 * truncation when f = 0). Rounds 2; bytes per party 8 (N-1) numel (2 + 1). Same shape rules as
 * veil_mpc_mul; the product must satisfy trunc's input range.
 */
int veil_mpc_mul_fixed(veil_mpc_t *m, const struct veil_sec *x, const struct veil_sec *y,
                       struct veil_sec *z);

#endif

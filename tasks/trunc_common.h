/*
 * trunc_common.h — element math of the truncation protocol's local step (veil_task_trunc_finish,
 * tasks/beaver_kernels.c), shared by its CPU body and its CUDA body (tasks/cuda/beaver_kernels.cu)
 * so that the CPU protocol tests exercise exactly the arithmetic the GPU runs.
 */
#ifndef VEIL_TASKS_TRUNC_COMMON_H
#define VEIL_TASKS_TRUNC_COMMON_H

#include "codelets/hd_common.h"

#include <stdint.h>

/* The opened value is shifted by 2^62 so that a secret in (-2^62, 2^62) becomes non-negative and
 * its top bit tells whether the masked sum wrapped. */
#define VEIL_TRUNC_OFFSET (UINT64_C(1) << 62)

/*
 * One output word: with c = copen + 2^62, [party0] ((c >> f) - 2^(62-f)) - r_hi +
 * ((1 - c_63) r_63) << (64 - f). p0 is all ones at party 0 and 0 elsewhere; f in [1, 62], so
 * both shifts stay below 64.
 */
static inline VEIL_HD uint64_t veil_trunc_finish_elem(uint64_t copen, uint64_t rhi, uint64_t r63,
                                                      unsigned f, uint64_t p0)
{
    uint64_t c = copen + VEIL_TRUNC_OFFSET;
    uint64_t wrap = ((~c) >> 63) * r63;
    return (((c >> f) - (VEIL_TRUNC_OFFSET >> f)) & p0) - rhi + (wrap << (64 - f));
}

/*
 * The truncation of a value whose LTZ opened c = x - r (the opposite sign of the mask), and its
 * product with the LTZ's bit b (veil_mpc_relu_trunc, tasks/relu.c; CPU and CUDA bodies). With
 * c' = c + 2^62, x + 2^62 = c' + r - w 2^64, where w = c'_63 OR r_63 = c'_63 + (1 - c'_63) r_63
 * (x + 2^62 < 2^63 for |x| < 2^62), so floor(x / 2^f) = c'_hi + r_hi + carry - w 2^(64-f) -
 * 2^(62-f), carry the 0/1 carry of the low f bits. z takes 1 for the carry: z - floor(x / 2^f) =
 * 1 - carry in {0, 1}, truncation's contract. Linear in [r_hi] and [r_63] with the public
 * a = c'_hi + 1 - 2^(62-f) - c'_63 2^(64-f) and k = (1 - c'_63) 2^(64-f):
 *     z = a [party0] + [r_hi] - k [r_63],   z b = a [b] + [r_hi b] - k [r_63 b].
 * p0 is all ones at party 0 and 0 elsewhere; f in [1, 62].
 */
static inline VEIL_HD void veil_trunc_neg_elem(uint64_t c, uint64_t rhi, uint64_t r63, uint64_t b,
                                               uint64_t rhib, uint64_t r63b, unsigned f,
                                               uint64_t p0, uint64_t *z, uint64_t *zb)
{
    const uint64_t cp = c + VEIL_TRUNC_OFFSET, c63 = cp >> 63;
    const uint64_t a = (cp >> f) + 1 - (VEIL_TRUNC_OFFSET >> f) - (c63 << (64 - f));
    const uint64_t k = (1 - c63) << (64 - f);
    *z = (a & p0) + rhi - k * r63;
    *zb = a * b + rhib - k * r63b;
}

#endif /* VEIL_TASKS_TRUNC_COMMON_H */

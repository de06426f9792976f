/*
 * limb_common.h — element math of the limb-split Z_2^64 GEMM, shared by the plain-C version
 * (codelets/limb_gemm.c) and the cuBLAS version (codelets/cuda/gemm.cu): splitting a word into
 * four 16-bit limbs held exactly in doubles, and recombining the four per-shift partial products
 * mod 2^64.
 *
 * Why it is exact: a = sum_i a_i 2^(16i), b = sum_j b_j 2^(16j) with limbs < 2^16, so
 * a * b = sum_{i+j<=3} a_i b_j 2^(16(i+j)) mod 2^64 (pairs with i + j >= 4 vanish mod 2^64):
 * 10 limb-pair products. The GEMM accumulates, per shift level s = i + j, the at most 4 pair
 * products of that level over the inner dimension into one double: every term is a non-negative
 * integer below 2^32, so every partial sum, in any order, is an integer at most
 * 4 * kc * (2^16 - 1)^2 < 4 * kc * 2^32, exactly representable while that is <= 2^53, i.e. for
 * kc <= 2^19 = VEIL_LIMB_GEMM_KMAX. Longer inner dimensions are cut into chunks of at most that
 * many and the chunk results are added in the ring. (One pair product alone would allow 2^21.)
 */
#ifndef VEIL_LIMB_COMMON_H
#define VEIL_LIMB_COMMON_H

#include "codelets/hd_common.h"

#include <stdint.h>

/** Largest inner-dimension chunk whose per-level double sums stay exact (see above). */
#define VEIL_LIMB_GEMM_KMAX ((size_t)1 << 19)

/** Limb l in [0, 3] of x (bits 16l .. 16l + 15) as an exact double. */
static inline VEIL_HD double veil_limb_of(uint64_t x, unsigned l)
{
    return (double)((x >> (16 * l)) & 0xFFFFu);
}

/**
 * sum_s d[s] * 2^(16s) mod 2^64 for the four per-level sums d[s], each an exact integer in
 * [0, 2^53] (converted exactly to uint64_t; the shifts drop what is >= 2^64).
 */
static inline VEIL_HD uint64_t veil_limb_combine(double d0, double d1, double d2, double d3)
{
    return (uint64_t)d0 + ((uint64_t)d1 << 16) + ((uint64_t)d2 << 32) + ((uint64_t)d3 << 48);
}

#endif /* VEIL_LIMB_COMMON_H */

/*
 * shift_common.h — element math of the shift and bit codelets, shared by the CPU bodies and the
 * CUDA bodies: arithmetic shift right written without relying on the implementation-defined >>
 * of negative signed integers.
 */
#ifndef VEIL_SHIFT_COMMON_H
#define VEIL_SHIFT_COMMON_H

#include "codelets/hd_common.h"

#include <stdint.h>

/*
 * Arithmetic shift right by k in [0, 63]: with m all ones when x is negative (as int64_t),
 * x ^ m is non-negative, its logical shift is exact, and ^ m restores the sign bits.
 */
static inline VEIL_HD uint64_t veil_sar_elem(uint64_t x, unsigned k)
{
    uint64_t m = 0 - (x >> 63);
    return ((x ^ m) >> k) ^ m;
}

#endif /* VEIL_SHIFT_COMMON_H */

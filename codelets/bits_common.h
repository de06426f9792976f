/*
 * bits_common.h — element math of the bit codelets shared by the CPU bodies and the CUDA
 * bodies: the in-place 64x64 bit-matrix transpose used for bit-slicing.
 */
#ifndef VEIL_BITS_COMMON_H
#define VEIL_BITS_COMMON_H

#include "codelets/shift_common.h"

#include <stdint.h>

/*
 * Transposes the 64x64 bit matrix m in place, where entry (r, c) is bit c of m[r]: afterwards bit
 * c of m[r] is the former bit r of m[c]. Recursive block swap (Hacker's Delight 7-3, with bit 0
 * as column 0): at level j the upper-right j x j blocks (high columns of rows with bit j clear)
 * trade places with the lower-left ones (low columns of rows k | j). 6 levels x 32 swaps.
 */
/* Its body for a word type T with the shifts and bitwise operators of uint64_t: uint64_t here,
 * a vector of eight (eight matrices at once) in tasks/compare_leaf8.c. */
#define VEIL_TRANSPOSE64_BODY(T, m)                                                                \
    do {                                                                                           \
        uint64_t mask_ = 0x00000000FFFFFFFFull;                                                    \
        for (unsigned j_ = 32; j_ != 0; j_ >>= 1, mask_ ^= mask_ << j_) {                          \
            for (unsigned k_ = 0; k_ < 64; k_ = ((k_ | j_) + 1) & ~j_) {                           \
                T t_ = (((m)[k_] >> j_) ^ (m)[k_ | j_]) & mask_;                                   \
                (m)[k_] ^= t_ << j_;                                                               \
                (m)[k_ | j_] ^= t_;                                                                \
            }                                                                                      \
        }                                                                                          \
    } while (0)

static inline VEIL_HD void veil_transpose64(uint64_t m[64])
{
    VEIL_TRANSPOSE64_BODY(uint64_t, m);
}

#endif /* VEIL_BITS_COMMON_H */

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
static inline VEIL_HD void veil_transpose64(uint64_t m[64])
{
    uint64_t mask = 0x00000000FFFFFFFFull;
    for (unsigned j = 32; j != 0; j >>= 1, mask ^= mask << j) {
        for (unsigned k = 0; k < 64; k = ((k | j) + 1) & ~j) {
            uint64_t t = ((m[k] >> j) ^ m[k | j]) & mask;
            m[k] ^= t << j;
            m[k | j] ^= t;
        }
    }
}

#endif /* VEIL_BITS_COMMON_H */

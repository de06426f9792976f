/*
 * test_cmp_oracle.h — the CMPPROD oracle the comparison tests share: the dealer's products of the
 * bits of its mask r, computed from their definition (not from the dealer's code), for the tests
 * of the leaf groups on the CPU (test_tasks_carry4) and on a GPU (test_tasks_cuda_compare).
 */
#ifndef VEIL_TEST_CMP_ORACLE_H
#define VEIL_TEST_CMP_ORACLE_H

#include "tasks/carry4_common.h"

#include <stdint.h>

/* One 64-element block: rt[i] is bit i of the block's 64 masks, bit-sliced (bit j of rt[i] is
 * bit i of element j). pi (VEIL_C4_LEAF_WORDS words) receives, for each leaf group j (words 4 j
 * .. 4 j + 3 of rt), the AND of every subset T of 2 to 4 of its words at row
 * j VEIL_C4_LEAF_PRODS + veil_prodk_row(T). */
static inline void veil_test_leaf_products(const uint64_t *rt, uint64_t *pi)
{
    for (int j = 0; j < VEIL_C4_LEAF_GROUPS; j++)
        for (unsigned t = 3; t < 16; t++)
            if (t & (t - 1)) {
                uint64_t v = ~UINT64_C(0);
                for (int q = 0; q < 4; q++)
                    if (t >> q & 1)
                        v &= rt[4 * j + q];
                pi[j * VEIL_C4_LEAF_PRODS + veil_prodk_row(t)] = v;
            }
}

#endif /* VEIL_TEST_CMP_ORACLE_H */

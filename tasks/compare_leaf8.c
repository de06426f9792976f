/*
 * compare_leaf8.c — the LTZ leaf step (compare.c's leaf codelet) for eight 64-element blocks at
 * once on the CPU: each uint64_t lane of a vector of eight holds one block's word, so the two
 * 64x64 bit transposes and the 16 level-0 groups of each block (all bitwise word math, the same
 * for every block) run as vector operations (GCC vector extensions, compiled for AVX-512, AVX2
 * and the baseline and picked at load time by target_clones). The words are the ones
 * veil_cmp_slice_block, veil_cmp_leaf_groups and veil_cmp_leaf_p give block by block
 * (compare_common.h, carry4_common.h); tests/test_tasks_carry4.c compares the two on random
 * blocks. veil_cmp_slice8 is the slicing alone, for the octave-bits circuit's leaf
 * (octave_bits.c), whose level-0 gates then run block by block.
 */
#include "config.h"
#include "base/base_internal.h"
#include "tasks/carry4_common.h"
#include "tasks/compare_internal.h"

#include <string.h>

/* *v = the words p[0], p[stride], ..., p[7 stride]: one word of each of eight blocks. */
static inline void gather(veil_u64x8 *v, const uint64_t *p, size_t stride)
{
    *v = (veil_u64x8){p[0],          p[stride],     p[2 * stride], p[3 * stride],
                      p[4 * stride], p[5 * stride], p[6 * stride], p[7 * stride]};
}

static inline void store(uint64_t *p, const veil_u64x8 *v)
{
    memcpy(p, v, sizeof *v); /* eight consecutive words, any alignment */
}

/* veil_transpose64 (bits_common.h) on eight matrices, one per lane. */
static inline void transpose8(veil_u64x8 m[64])
{
    VEIL_TRANSPOSE64_BODY(veil_u64x8, m);
}

/* veil_c4_leaf_group (carry4_common.h) on eight blocks: c the public bits of the group's nm
 * members, s their shares, pi the first of the group's products (word row of block b0 + k at
 * pi[row + k * stride]). */
#define PI_ROW8_(dst, row) gather(&(dst), pi + (row), stride)
static inline void leaf_group8(const veil_u64x8 *c, const veil_u64x8 *s, const uint64_t *pi,
                               size_t stride, int nm, const veil_u64x8 *pub, veil_u64x8 *G,
                               veil_u64x8 *P)
{
    const veil_u64x8 zero = {0};
    VEIL_C4_LEAF_GROUP_BODY(veil_u64x8, zero, c, s, nm, *pub, G, P, PI_ROW8_);
}
#undef PI_ROW8_

VEIL_CPU_CLONES void veil_cmp_leaf8(const uint64_t *c, const uint64_t *r, const uint64_t *pr,
                                    uint64_t pub, uint64_t *st, uint64_t *top, size_t nb, size_t b0)
{
    veil_u64x8 ct[64], rt[64];
    const uint64_t *cb = c + 64 * b0, *rb = r + 64 * b0;
    for (int i = 0; i < 64; i++) {
        gather(&ct[i], cb + i, 64);
        gather(&rt[i], rb + i, 64);
    }
    transpose8(ct);
    transpose8(rt);
    const veil_u64x8 vpub = (veil_u64x8){0} + pub;
    const uint64_t *pb = pr + b0 * VEIL_C4_LEAF_WORDS;
    for (int j = 0; j < VEIL_C4_LEAF_GROUPS; j++) {
        veil_u64x8 G, P;
        leaf_group8(ct + 4 * j, rt + 4 * j, pb + j * VEIL_C4_LEAF_PRODS, VEIL_C4_LEAF_WORDS,
                    j == VEIL_C4_LEAF_GROUPS - 1 ? 3 : 4, &vpub, &G, &P);
        store(st + (size_t)j * nb + b0, &G);
        store(st + (size_t)(VEIL_C4_LEAF_GROUPS + j) * nb + b0, &P);
    }
    const veil_u64x8 t = (ct[63] & vpub) ^ rt[63];
    store(top + b0, &t);
}

VEIL_CPU_CLONES void veil_cmp_slice8(const uint64_t *c, const uint64_t *r, size_t b0,
                                     uint64_t ct[8][64], uint64_t rt[8][64])
{
    veil_u64x8 vc[64], vr[64];
    for (int i = 0; i < 64; i++) {
        gather(&vc[i], c + 64 * b0 + i, 64);
        gather(&vr[i], r + 64 * b0 + i, 64);
    }
    transpose8(vc);
    transpose8(vr);
    for (int i = 0; i < 64; i++)
        for (int k = 0; k < 8; k++) {
            ct[k][i] = vc[i][k];
            rt[k][i] = vr[i][k];
        }
}

/*
 * compare_common.h — the word math of the comparison family's local codelets, shared by their CPU
 * bodies (compare.c, and_gates.c, relu.c, b2a.c) and their CUDA bodies (cuda/compare.cu): the
 * by-value argument blocks the submit helpers pack, the shape of each level of the carry circuit
 * and which state rows feed each AND operand and each combined row, the leaf (g, p) formulas,
 * the AND-triple finish, the ReLU finish, and the B2A mask and finish. One inline function is
 * the math of both bodies, so the CPU protocol tests exercise exactly what the GPU computes.
 */
#ifndef VEIL_TASKS_COMPARE_COMMON_H
#define VEIL_TASKS_COMPARE_COMMON_H

#include "codelets/hd_common.h"

#include <stddef.h>
#include <stdint.h>

/* ---- argument blocks (veil_cmp_submit copies them raw: cl_arg points at the struct) ---- */

/** The argument block of a veil_cmp_submit task: it hands the caller's struct over as a plain
 * copy (cl_arg_free), so the block is the struct itself, on the host side of either body. */
static inline const void *veil_cmp_arg(void *cl_arg)
{
    return cl_arg;
}

/** Leaf, AND finish, ReLU finish, B2A finish: whether this party adds the public terms. */
struct veil_cmp_party_arg {
    int party0;
};

/** Prepare / combine: the circuit level l (0-based, 0..VEIL_CMP_LEVELS-1). */
struct veil_cmp_level_arg {
    int l;
};

/** B2A mask of one tile. */
struct veil_b2a_mask_arg {
    size_t offset; /* first word of this tile in the BIT item's packed part */
    size_t nbits;  /* elements of this tile (the tail of the last word is cleared) */
};

/* ---- the carry circuit ---------------------------------------------------------------- */

#define VEIL_CMP_LEAVES 63 /* bits 0..62 feed the carry into bit 63 */
#define VEIL_CMP_LEVELS 6  /* 63 -> 32 -> 16 -> 8 -> 4 -> 2 -> 1 groups */

/*
 * Groups, pairs and AND words (per 64-element block) of circuit level l. A state holds G rows
 * 0..k-1 then P rows k..2k-1, nb words (one per block) each.
 */
struct veil_cmp_level {
    int k;     /* groups entering the level */
    int pairs; /* floor(k / 2) */
    int knext; /* ceil(k / 2) */
    int last;  /* knext == 1: no P needed */
    int words; /* AND gates (words per block): pairs G, plus pairs - 1 P unless last */
};

static inline VEIL_HD struct veil_cmp_level veil_cmp_level_of(int l)
{
    struct veil_cmp_level v;
    v.k = VEIL_CMP_LEAVES;
    for (int i = 0; i < l; i++)
        v.k = (v.k + 1) / 2;
    v.pairs = v.k / 2;
    v.knext = (v.k + 1) / 2;
    v.last = v.knext == 1;
    v.words = v.pairs + (v.last ? 0 : v.pairs - 1);
    return v;
}

/* Rows of the combined state: G only at the last level. */
static inline VEIL_HD int veil_cmp_comb_rows(const struct veil_cmp_level *v)
{
    return v->last ? 1 : 2 * v->knext;
}

/*
 * The state rows of AND gate w (w < v->words): x = P of the upper group of the pair, y = G of the
 * lower group (the first pairs gates) or its P (the others, pairs 1..pairs-1: the lowest group's
 * P is never needed).
 */
static inline VEIL_HD void veil_cmp_prep_src(const struct veil_cmp_level *v, int w, int *xrow,
                                             int *yrow)
{
    if (w < v->pairs) {
        *xrow = v->k + 2 * w + 1;
        *yrow = 2 * w;
    } else {
        const int j = w - v->pairs + 1;
        *xrow = v->k + 2 * j + 1;
        *yrow = v->k + 2 * j;
    }
}

/*
 * Where row `row` of the combined state comes from: the XOR of state row *strow and AND result
 * row *zrow, either being -1 for "absent" (both absent: zero). G of pair j is g_{2j+1} ^ (p_{2j+1}
 * & g_{2j}), P of pair j >= 1 is the AND p_{2j+1} & p_{2j}, the lowest pair's P is unused (zero),
 * and an odd group out is copied.
 */
static inline VEIL_HD void veil_cmp_comb_src(const struct veil_cmp_level *v, int row, int *strow,
                                             int *zrow)
{
    const int p = row >= v->knext, j = p ? row - v->knext : row;
    *strow = -1;
    *zrow = -1;
    if (j == v->pairs) { /* k odd: the last group passes through */
        *strow = (p ? v->k : 0) + v->k - 1;
    } else if (!p) {
        *strow = 2 * j + 1;
        *zrow = j;
    } else if (j > 0) {
        *zrow = v->pairs + j - 1;
    }
}

/* Leaves: bit i of c (public) and of this party's XOR share r of the mask. Generate is c & r
 * (c is public, so each party ANDs its own share); propagate c ^ r takes c at party 0 only
 * (pub = all ones there, zero elsewhere). */
static inline VEIL_HD uint64_t veil_cmp_leaf_g(uint64_t ct, uint64_t rt)
{
    return ct & rt;
}

static inline VEIL_HD uint64_t veil_cmp_leaf_p(uint64_t ct, uint64_t rt, uint64_t pub)
{
    return (ct & pub) ^ rt;
}

/* ---- AND gates, ReLU, B2A ------------------------------------------------------------ */

/* z = c ^ (d & b) ^ (e & a) ^ (d & e at party 0: de all ones there, zero elsewhere). */
static inline VEIL_HD uint64_t veil_and_finish_word(uint64_t d, uint64_t e, uint64_t a, uint64_t b,
                                                    uint64_t c, uint64_t de)
{
    return c ^ (d & b) ^ (e & a) ^ (d & e & de);
}

/* Bit i of a packed bit vector. */
static inline VEIL_HD uint64_t veil_cmp_packed_bit(const uint64_t *f, size_t i)
{
    return (f[i / 64] >> (i % 64)) & 1;
}

/* [x < 0] = f ^ beta: f = 1 -> [x >= 0] = beta, y = x beta = w; f = 0 -> [x >= 0] = 1 - beta,
 * y = x - w (one = 1 at party 0, 0 elsewhere). */
static inline VEIL_HD uint64_t veil_relu_fin_y(uint64_t fi, uint64_t w, uint64_t x)
{
    return fi ? w : x - w;
}

static inline VEIL_HD uint64_t veil_relu_fin_mask(uint64_t fi, uint64_t beta, uint64_t one)
{
    return fi ? beta : one - beta;
}

/* Bits of the last word of an nbits-element tile that hold elements (all when nbits % 64 == 0):
 * the padding is cleared so that the opened word reveals nothing past the tile. */
static inline VEIL_HD uint64_t veil_b2a_tail_mask(size_t nbits)
{
    return nbits % 64 ? (UINT64_C(1) << (nbits % 64)) - 1 : ~UINT64_C(0);
}

/* [bit] = e ^ [b] as an arithmetic share: e = 0 -> [b]; e = 1 -> 1 - [b] (one at party 0). */
static inline VEIL_HD uint64_t veil_b2a_fin_elem(uint64_t ei, uint64_t b, uint64_t one)
{
    return ei ? one - b : b;
}

#endif /* VEIL_TASKS_COMPARE_COMMON_H */

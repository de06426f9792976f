/*
 * compare_common.h — the word math of the comparison family's local codelets, shared by their CPU
 * bodies (compare.c, and_gates.c, relu.c, b2a.c) and their CUDA bodies (cuda/compare.cu): the
 * by-value argument blocks the submit helpers pack, the shape of each level of the carry circuit
 * and which state rows feed each group's inputs (the group's math is carry4_common.h), the leaf
 * (g, p) formulas, the AND-triple finish, the ReLU finish, and the B2A mask and finish. One inline
 * function is the math of both bodies, so the CPU protocol tests exercise exactly what the GPU
 * computes.
 */
#ifndef VEIL_TASKS_COMPARE_COMMON_H
#define VEIL_TASKS_COMPARE_COMMON_H

#include "codelets/hd_common.h"
#include "tasks/carry4_common.h"

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

/** The truncation inside a ReLU (veil_mpc_relu_trunc): whether this party is party 0, and the
 * shift f in [1, 62]. */
struct veil_relu_trunc_arg {
    int party0;
    int f;
};

/** Gather / group: the circuit level l (0-based, 0..VEIL_CMP_LEVELS-1) and whether this party
 * adds the public terms. */
struct veil_cmp_level_arg {
    int l;
    int party0;
};

/** One-round product of k factors (prodk.c). */
struct veil_prodk_arg {
    int k;
    int party0;
};

/** B2A mask of one tile. */
struct veil_b2a_mask_arg {
    size_t offset; /* first word of this tile in the BIT item's packed part */
    size_t nbits;  /* elements of this tile (the tail of the last word is cleared) */
};

/* ---- the carry circuit ---------------------------------------------------------------- */

#define VEIL_CMP_LEAVES 63 /* bits 0..62 feed the carry into bit 63 */
#define VEIL_CMP_LEVELS 3  /* 63 -> 16 -> 4 -> 1 groups, 4-to-1 (carry4_common.h) */

/*
 * Groups of circuit level l. A state holds G rows 0..k-1 then P rows k..2k-1, nb words (one per
 * 64-element block) each; group j of the level combines rows 4j .. 4j + 3 (4j + 3 the most
 * significant); members past k are the identity (G = 0, P = 1). The level's records (the
 * CARRY4 item's elements) are w = j * nb + b, group j of block b.
 */
struct veil_cmp_level {
    int k;     /* groups entering the level */
    int knext; /* ceil(k / 4) groups leaving it */
    int last;  /* knext == 1: only G is needed */
};

static inline VEIL_HD struct veil_cmp_level veil_cmp_level_of(int l)
{
    struct veil_cmp_level v;
    v.k = VEIL_CMP_LEAVES;
    for (int i = 0; i < l; i++)
        v.k = (v.k + VEIL_C4_FANIN - 1) / VEIL_C4_FANIN;
    v.knext = (v.k + VEIL_C4_FANIN - 1) / VEIL_C4_FANIN;
    v.last = v.knext == 1;
    return v;
}

/* Rows of the next state: G only at the last level. */
static inline VEIL_HD int veil_cmp_next_rows(const struct veil_cmp_level *v)
{
    return v->last ? 1 : 2 * v->knext;
}

/* The state row of input i (record order, carry4_common.h) of group j, or -1 for a member past k
 * (the identity: G = 0, P = 1); *is_p says whether it is a P. */
static inline VEIL_HD int veil_cmp_gather_row(const struct veil_cmp_level *v, int j, int i,
                                              int *is_p)
{
    /* member of each input: P3 P2 P1 G0 G1 G2 P0 */
    const int member = i == VEIL_C4_P3   ? 3
                       : i == VEIL_C4_P2 ? 2
                       : i == VEIL_C4_P1 ? 1
                       : i == VEIL_C4_G0 ? 0
                       : i == VEIL_C4_G1 ? 1
                       : i == VEIL_C4_G2 ? 2
                                         : 0;
    const int q = VEIL_C4_FANIN * j + member;
    *is_p = i <= VEIL_C4_P1 || i == VEIL_C4_P0;
    return q >= v->k ? -1 : *is_p ? v->k + q : q;
}

/* This party's share of input i of group j, block b, from the state st (nb words per row); pub is
 * all ones at party 0 and 0 elsewhere (the padding's P). */
static inline VEIL_HD uint64_t veil_cmp_gather_word(const struct veil_cmp_level *v,
                                                    const uint64_t *st, size_t nb, int j, int i,
                                                    size_t b, uint64_t pub)
{
    int is_p;
    const int row = veil_cmp_gather_row(v, j, i, &is_p);
    if (row < 0)
        return is_p ? pub : 0;
    return st[(size_t)row * nb + b];
}

/* This party's share of G3 (the linear term) of group j, block b: 0 past k. */
static inline VEIL_HD uint64_t veil_cmp_top_g(const struct veil_cmp_level *v, const uint64_t *st,
                                              size_t nb, int j, size_t b)
{
    const int q = VEIL_C4_FANIN * j + 3;
    return q < v->k ? st[(size_t)q * nb + b] : 0;
}

/* Group j of level v at block b (record w = j nb + b): its G into row j and, but at the last
 * level, its P into row knext + j of the next state out, from the opened record e, this party's
 * CARRY4 shares a, pr and the state st (for G3). */
static inline VEIL_HD void veil_cmp_group_record(const struct veil_cmp_level *v, const uint64_t *e,
                                                 const uint64_t *a, const uint64_t *pr,
                                                 const uint64_t *st, uint64_t *out, size_t nb,
                                                 int j, size_t b, uint64_t pub)
{
    const size_t w = (size_t)j * nb + b;
    uint64_t G, P;
    veil_c4_group(e + w * VEIL_C4_INPUTS, a + w * VEIL_C4_INPUTS, pr + w * VEIL_C4_PRODS,
                  veil_cmp_top_g(v, st, nb, j, b), pub, &G, &P);
    out[w] = G;
    if (!v->last)
        out[((size_t)v->knext + (size_t)j) * nb + b] = P;
}

/* The propagate bit of position i from c (public) and this party's share r of the mask bit: c ^ r
 * takes c at party 0 only (pub = all ones there, zero elsewhere). Bit 63's is the sign's "top". */
static inline VEIL_HD uint64_t veil_cmp_leaf_p(uint64_t ct, uint64_t rt, uint64_t pub)
{
    return (ct & pub) ^ rt;
}

/* The leaves and level 0 of one 64-element block, local (carry4_common.h): ct, rt the block's
 * bit-sliced words of c and of this party's mask share, pi its 176 CMPPROD words; writes G rows
 * 0..15 and P rows 16..31 of the level-1 state st (nb words per row) at block b. */
static inline VEIL_HD void veil_cmp_leaf_groups(const uint64_t *ct, const uint64_t *rt,
                                                const uint64_t *pi, uint64_t pub, uint64_t *st,
                                                size_t nb, size_t b)
{
    for (int j = 0; j < VEIL_C4_LEAF_GROUPS; j++) {
        uint64_t G, P;
        veil_c4_leaf_group(ct + 4 * j, rt + 4 * j, pi + j * VEIL_C4_LEAF_PRODS,
                           j == VEIL_C4_LEAF_GROUPS - 1 ? 3 : 4, pub, &G, &P);
        st[(size_t)j * nb + b] = G;
        st[(size_t)(VEIL_C4_LEAF_GROUPS + j) * nb + b] = P;
    }
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

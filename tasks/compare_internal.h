/*
 * compare_internal.h — what the comparison family's files (and_gates.c, compare.c, b2a.c,
 * relu.c, pool.c) share beyond tasks/compare.h and tasks/pool.h: the binary AND gate layer on
 * bit-sliced words, B2A of bits that are already packed 64 to a word, the ring product used by
 * ReLU / select / max, small codelet plumbing, and the family's local codelets (their word math
 * in compare_common.h, their CUDA bodies in cuda/compare.cu).
 */
#ifndef VEIL_TASKS_COMPARE_INTERNAL_H
#define VEIL_TASKS_COMPARE_INTERNAL_H

#include "codelets/bits_common.h"
#include "tasks/compare_common.h"
#include "tasks/mpc.h"

#include <starpu.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/** Block b of a tile of n elements bit-sliced (host bodies): ct[i] and rt[i] get bit i of
 * elements 64 b .. 64 b + 63 of c and r (zeros past n). */
static inline void veil_cmp_slice_block(const uint64_t *c, const uint64_t *r, size_t n, size_t b,
                                        uint64_t ct[64], uint64_t rt[64])
{
    const size_t base = b * 64, cnt = n - base < 64 ? n - base : 64;
    memset(ct, 0, 64 * sizeof *ct);
    memset(rt, 0, 64 * sizeof *rt);
    memcpy(ct, c + base, cnt * 8);
    memcpy(rt, r + base, cnt * 8);
    veil_transpose64(ct);
    veil_transpose64(rt);
}

/**
 * The leaf codelet's words for the eight full blocks b0 .. b0 + 7 of a tile (64 (b0 + 8) <= its
 * elements): c, r the tile's public c and mask share, pr its CMPPROD words (176 per block), pub
 * all ones at party 0 and 0 elsewhere; writes rows 0..31 of the level-1 state st (nb words per
 * row) and top at those blocks. The same words as veil_cmp_slice_block + veil_cmp_leaf_groups +
 * veil_cmp_leaf_p block by block, as vector operations (compare_leaf8.c).
 */
void veil_cmp_leaf8(const uint64_t *c, const uint64_t *r, const uint64_t *pr, uint64_t pub,
                    uint64_t *st, uint64_t *top, size_t nb, size_t b0);

/** veil_cmp_slice_block for the eight full blocks b0 .. b0 + 7 of a tile at once (compare_leaf8.c):
 * ct[k], rt[k] are block b0 + k's words. */
void veil_cmp_slice8(const uint64_t *c, const uint64_t *r, size_t b0, uint64_t ct[8][64],
                     uint64_t rt[8][64]);

/**
 * Tiling of a packed / bit-sliced companion of x with `per_block` words per 64-element block:
 * x's tile must be a multiple of 64 or x a single tile (VEIL_ERR_INVAL otherwise, naming op).
 * On success *tile = per_block * ceil(x->tile / 64) and *numel = per_block * W.
 */
int veil_cmp_sliced_layout(const char *op, const struct veil_sec *x, size_t per_block,
                           size_t *numel, size_t *tile);
/** *t (initialised here): a 1-D binary tensor of per_block words per 64-element block of x,
 * tiled alike (veil_cmp_sliced_layout's layout; its error names op). */
int veil_cmp_sliced(veil_mpc_t *m, const char *op, const struct veil_sec *x, size_t per_block,
                    struct veil_sec *t);

/**
 * z = x AND y on binary shares (1-D tensors, same layout; 64 gates per word) with one AND item
 * of x->numel words tiled like x: opens d = x ^ a and e = y ^ b together per tile, then
 * z = c ^ (d & b) ^ (e & a) ^ (d & e at party 0). Rounds 1 (marked here); bytes per party
 * (N-1) * 16 * numel. SPMD (the dealer runs it too: it only serves the item).
 */
int veil_mpc_and(veil_mpc_t *m, const struct veil_sec *x, const struct veil_sec *y,
                 struct veil_sec *z);

/** What LTZ opened first, kept for a local product with its bit (veil_cmp_x_beta): c = x - r
 * (public, tiled like x) and the index of the CMPMASK item r comes from. */
struct veil_cmp_opened {
    struct veil_pub c;
    struct veil_sec r63; /* the CMPMASK item's [r >> 63] (LTZ folds the sign bit in binary) */
    uint64_t mask_index;
};

/**
 * LTZ up to its last opening: requests CMPMASK(n), CMPPROD and BIT(n) (tiled like x), opens
 * c = x - r (round 1), runs the carry circuit (level 0 local, levels 1 and 2 in rounds 2 and 3)
 * and opens f = msb ^ b packed (round 4); marks those 4 rounds. Afterwards [x < 0] = f XOR beta bit
 * by bit, where f (public, *f, laid out by veil_cmp_sliced_layout with 1 word per block) and beta =
 * bit->part[VEIL_PRE_BIT_A] (arithmetic 0/1, tiled like x). A caller finishes locally once f is
 * public; its products with beta either open in round 1 (unmarked, veil_cmp_mul_unmarked) or,
 * for x * beta itself, are local from c (keep, veil_cmp_x_beta): that is how ReLU and max cost
 * LTZ's 4 rounds. keep may be NULL; otherwise it receives c and the mask's [r >> 63] part
 * (release them with veil_cmp_opened_release). Release *bit with veil_mpc_mat_release, *f
 * with veil_mpc_release.
 */
int veil_cmp_ltz_open(veil_mpc_t *m, const struct veil_sec *x, struct veil_mpc_mat *bit,
                      struct veil_pub *f, struct veil_cmp_opened *keep);
/** Releases what veil_cmp_ltz_open kept in *o (c and [r >> 63]); an empty *o is a no-op. */
void veil_cmp_opened_release(veil_mpc_t *m, struct veil_cmp_opened *o);

/**
 * w = x * beta for the operand x of a veil_cmp_ltz_open that kept *opened and returned *bit,
 * with no message: x = c + r, so x beta = c [beta] + [r beta], and an RBETA item (r of the
 * CMPMASK item, beta of the BIT item, tasks/preproc.h) holds [r beta]. w is initialised 1-D, tiled
 * like x. Two local tasks per tile; the dealer sends n words (a Beaver product's n as well, but
 * the parties store n words instead of 3 n and open nothing).
 */
int veil_cmp_x_beta(veil_mpc_t *m, const struct veil_sec *x, const struct veil_cmp_opened *opened,
                    const struct veil_mpc_mat *bit, struct veil_sec *w);

/**
 * The opening step of B2A: given packed bits (binary; laid out by veil_cmp_sliced_layout for
 * a tensor like `like`) and a BIT item for like->numel elements tiled like `like`, opens
 * f = bits ^ b (packed; 1 round, marked here). Bytes per party (N-1) * 8 * W.
 */
int veil_cmp_b2a_open(veil_mpc_t *m, const struct veil_sec *packed, const struct veil_sec *like,
                      const struct veil_mpc_mat *bit, struct veil_pub *f);

/** The local end of B2A: out (initialised like `like`) = f XOR beta = f ? 1 - beta : beta. */
int veil_cmp_b2a_finish(veil_mpc_t *m, const struct veil_pub *f, const struct veil_mpc_mat *bit,
                        const struct veil_sec *like, struct veil_sec *out);

/**
 * Beaver product z = x * y (arithmetic, same numel and tiling; z initialised 1-D like x) with a
 * BEAVER item, WITHOUT marking a round: the caller's opens travel in a round it marks.
 * Bytes per party (N-1) * 16 * numel.
 */
int veil_cmp_mul_unmarked(veil_mpc_t *m, const struct veil_sec *x, const struct veil_sec *y,
                          struct veil_sec *z);

/**
 * z[w] = the product of x[k w .. k w + k - 1] (arithmetic, one tile, records of k factors,
 * 2 <= k <= 5) in ONE round (prodk_common.h) with a PRODK item: opens x - a. z: n = numel / k
 * elements, one tile. Rounds 1 (marked here); bytes per party (N-1) * 8 * k * n; the dealer
 * sends (2^k - k - 1) n words. VEIL_ERR_INVAL for another k or layout.
 */
int veil_mpc_prodk(veil_mpc_t *m, const struct veil_sec *x, int k, struct veil_sec *z);

/** A 1-D view of x (same handles, not owned). */
struct veil_sec veil_cmp_flat(const struct veil_sec *x);

/**
 * Submits one task of cl over nh handles (modes[i], or the codelet's modes when modes is NULL)
 * with one by-value argument block (copied; may be NULL), at m's current priority.
 * VEIL_ERR_STARPU naming name.
 */
int veil_cmp_submit(veil_mpc_t *m, struct starpu_codelet *cl, const char *name,
                    const starpu_data_handle_t *h,
                    const enum starpu_data_access_mode *modes, int nh, const void *arg,
                    size_t arg_size);

/*
 * The local codelets of the family (vectors of uint64_t; argument blocks of compare_common.h,
 * passed raw as veil_cmp_submit does). CPU bodies and, with VEIL_USE_CUDA, CUDA bodies.
 * B = 64-element blocks of the tile (one word each), T = elements of the tile.
 */
/** c (public, T), r (share, T), pr (the CMPPROD item's tile, 176 B) -> state of level 1 (G rows
 * 0..15 | P rows 16..31, B words each), top (B); struct veil_cmp_party_arg. */
extern struct starpu_codelet veil_cmp_leaf_cl;
/** state of level l (2k rows) -> its records (7 words per group and block, record w = j B + b,
 * carry4_common.h's order); veil_cmp_level_arg. */
extern struct starpu_codelet veil_cmp_gather_cl;
/** e (opened records), a, pr (the CARRY4 item's parts), state of level l -> next state
 * (veil_cmp_next_rows rows); veil_cmp_level_arg. */
extern struct starpu_codelet veil_cmp_group_cl;
/** d, e (opened), a, b, c (AND triple) -> z; struct veil_cmp_party_arg. */
extern struct starpu_codelet veil_and_finish_cl;
/** e (opened records of k), a (masks), pr (products) -> z (one per record); veil_prodk_arg. */
extern struct starpu_codelet veil_prodk_cl;
/** f (packed, public), beta, w = x beta, x -> y = x [x >= 0], mask; veil_cmp_party_arg. */
extern struct starpu_codelet veil_relu_fin_cl;
/** The truncation inside veil_mpc_relu_trunc (c, r_hi, r_63, beta, r_hi beta, r_63 beta -> z,
 * z beta; struct veil_relu_trunc_arg by value). */
extern struct starpu_codelet veil_relu_trunc_cl;
/** packed tile, whole packed BIT part -> e = packed ^ part[offset..], tail cleared;
 * struct veil_b2a_mask_arg. */
extern struct starpu_codelet veil_b2a_mask_cl;
/** e (packed, public), [b] -> [bit] = e ^ [b] arithmetically; struct veil_cmp_party_arg. */
extern struct starpu_codelet veil_b2a_fin_cl;

#endif

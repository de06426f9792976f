/*
 * compare_internal.h — what the comparison family's files (and_gates.c, compare.c, b2a.c,
 * relu.c, pool.c) share beyond tasks/compare.h and tasks/pool.h: the binary AND gate layer on
 * bit-sliced words, B2A of bits that are already packed 64 to a word, the ring product used by
 * ReLU / select / max, and small codelet plumbing.
 */
#ifndef VEIL_TASKS_COMPARE_INTERNAL_H
#define VEIL_TASKS_COMPARE_INTERNAL_H

#include "tasks/mpc.h"

#include <starpu.h>
#include <stddef.h>
#include <stdint.h>

/** Words of packed bits for a tensor of numel elements tiled by tile (padding per tile):
 * W = sum over tiles of ceil(tile_numel / 64). */
size_t veil_cmp_packed_words(size_t numel, size_t tile);

/**
 * Tiling of a packed / bit-sliced companion of x with `per_block` words per 64-element block:
 * x's tile must be a multiple of 64 or x a single tile (VEIL_ERR_INVAL otherwise, naming op).
 * On success *tile = per_block * ceil(x->tile / 64) and *numel = per_block * W.
 */
int veil_cmp_sliced_layout(const char *op, const struct veil_sec *x, size_t per_block,
                           size_t *numel, size_t *tile);

/**
 * z = x AND y on binary shares (1-D tensors, same layout; 64 gates per word) with one AND item
 * of x->numel words tiled like x: opens d = x ^ a and e = y ^ b together per tile, then
 * z = c ^ (d & b) ^ (e & a) ^ (d & e at party 0). Rounds 1 (marked here); bytes per party
 * (N-1) * 16 * numel. SPMD (the dealer runs it too: it only serves the item).
 */
int veil_mpc_and(veil_mpc_t *m, const struct veil_sec *x, const struct veil_sec *y,
                 struct veil_sec *z);

/**
 * B2A of packed bits: packed (binary, bit j of word w of tile t = element 64 w + j of tile t of
 * the result, laid out by veil_cmp_sliced_layout with 1 word per block) becomes arithmetic 0/1
 * shares in *out (initialised here with ndim/dims and tile). One BIT item (numel = product of
 * dims): open e = bits ^ b packed (1 round, marked here), then [bit] = e + [b] - 2 e [b].
 * Bytes per party (N-1) * 8 * W.
 */
int veil_cmp_b2a_packed(veil_mpc_t *m, const struct veil_sec *packed, int ndim,
                        const size_t *dims, size_t tile, struct veil_sec *out);

/**
 * Submits one task of cl over nh handles (modes[i], or the codelet's modes when modes is NULL)
 * with one by-value argument block (copied; may be NULL). VEIL_ERR_STARPU naming name.
 */
int veil_cmp_submit(struct starpu_codelet *cl, const char *name, const starpu_data_handle_t *h,
                    const enum starpu_data_access_mode *modes, int nh, const void *arg,
                    size_t arg_size);

/** The argument block of a task, as veil_cmp_submit packed it. */
const void *veil_cmp_arg(void *cl_arg);

#endif

/*
 * flatop_internal.h — the "flat" relayout codelet (internal): one task that reads a tensor given
 * as a list of tile handles (one flat vector once concatenated) and writes another list of tile
 * handles, for the operations whose element mapping crosses tile boundaries: copy (concatenate,
 * split, retile), row sums and row broadcasts over the last dimension, replication with a
 * per-copy public offset, a weighted sum of stacked copies, periodic tiling (a bias broadcast
 * over rows or pixels), interleaving of several tensors row by row (concatenation along an axis),
 * the slice of every row (its adjoint) and the periodic fold (TILE's adjoint: column and
 * channel sums of gradients). Used by the nonlinear protocols
 * (tasks/exp.c, reciprocal.c, softmax.c, gelu.c), whose inputs keep the caller's tiling while
 * rows or stacked operands do not line up with it. No composition of the elementwise codelets
 * does these (they need same-length handles), hence this codelet.
 *
 * The task touches every tile of both lists (no per-tile pipelining): it is a gather/scatter of
 * a few words per element, cheap next to the communication around it.
 */
#ifndef VEIL_CODELETS_FLATOP_INTERNAL_H
#define VEIL_CODELETS_FLATOP_INTERNAL_H

#include <starpu.h>
#include <stddef.h>
#include <stdint.h>

/** Most stacked copies of a REPLICATE / WSUM operation. */
#define VEIL_FLATOP_MAX_COPIES 128

enum veil_flatop_kind {
    VEIL_FLATOP_COPY,      /* out = in (total lengths equal) */
    VEIL_FLATOP_ROWSUM,    /* out[r] = sum_j in[r k + j]; len(in) = k len(out) */
    VEIL_FLATOP_BCAST,     /* out[r k + j] = in[r]; len(out) = k len(in) */
    VEIL_FLATOP_REPLICATE, /* out[i n + e] = in[e] + c[i], i < k; n = len(in), len(out) = k n */
    VEIL_FLATOP_WSUM,      /* out[e] = c0 + sum_{i<k} c[i] in[i n + e]; len(in) = k len(out) */
    VEIL_FLATOP_TILE,      /* out[i] = in[(i / k) % len(in)]; len(out) a multiple of k len(in) */
    VEIL_FLATOP_INTERLEAVE, /* k parts stacked in the input, part p holding R rows of c[p]
                              words: out row r = part 0's row r, part 1's row r, ...;
                              len(out) = len(in) = R sum c[p] */
    VEIL_FLATOP_SLICE,     /* out[r k + j] = in[r c[0] + c[1] + j], j < k: columns
                              [c[1], c[1] + k) of rows of c[0] words; len(in) = R c[0],
                              len(out) = R k */
    VEIL_FLATOP_FOLD,      /* TILE's adjoint: out[j] = sum of in[i] over (i / k) % len(out) = j;
                              len(in) a multiple of k len(out) (column sums, per-channel sums) */
    VEIL_FLATOP_KIND_COUNT
};

/** Parameters, passed by value. REPLICATE adds c[i] and WSUM adds c0 only when add_const is 1
 * (a public constant enters one party's share only); WSUM always multiplies by c[i]. TILE,
 * INTERLEAVE and SLICE only move words (add_const ignored). */
struct veil_flatop_args {
    int kind;
    int nout, nin; /* buffers: the nout output tiles (W) first, then the nin input tiles (R) */
    uint64_t k;    /* row length or number of copies */
    int add_const;
    uint64_t c0;
    uint64_t c[VEIL_FLATOP_MAX_COPIES];
};

/** The codelet (buffers: nout outputs W, then nin inputs R; struct veil_flatop_args by value)
 * and its CPU body (cpu/flatop.c). */
extern struct starpu_codelet veil_flatop_cl;
void veil_flatop_cpu(void *buffers[], void *cl_arg);

/**
 * Validates (vector handles of uint64_t, lengths consistent with the kind, k in range, no
 * handle both read and written) and submits one task. a->nout / a->nin give the counts of out /
 * in. Returns VEIL_OK, VEIL_ERR_INVAL, VEIL_ERR_SHAPE, VEIL_ERR_NOMEM or VEIL_ERR_STARPU with a
 * message.
 */
int veil_task_flatop(const struct veil_flatop_args *a, const starpu_data_handle_t *out,
                     const starpu_data_handle_t *in, int priority);

#endif

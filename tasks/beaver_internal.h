/*
 * beaver_internal.h — what the Beaver-family protocol files (beaver.c, matmul.c, conv.c,
 * trunc.c, wstat.c) share: four local kernels as StarPU tasks on vector handles (a batched
 * strided GEMM, a block sum, an axis swap, the truncation protocol's final local step;
 * beaver_kernels.c) and the secure matrix product and convolution on already-validated tensors
 * (matmul.c, conv.c), with the hooks the weight-stationary forms need (a _WS item, a kept E).
 */
#ifndef VEIL_TASKS_BEAVER_INTERNAL_H
#define VEIL_TASKS_BEAVER_INTERNAL_H

#include "tasks/beaver.h"
#include "tasks/mpc.h"

#include <starpu.h>
#include <stddef.h>
#include <stdint.h>

/** Batched strided row-major product on vector handles (all uint64_t, dense rows). */
struct veil_bgemm_args {
    size_t m, n, k; /* op(A) is m x k, op(B) k x n, C m x n */
    int trans_a, trans_b;
    int accumulate;    /* 0: C = ..., 1: C += ... */
    size_t batch;      /* >= 1 products */
    size_t sa, sb, sc; /* element strides between the batch's operands; sc == 0 sums the batch
                          into one C (the first product overwrites unless accumulate) */
    size_t oa, ob;     /* element offsets of the first A and B (a sub-block of a larger one) */
    size_t lda, ldb;   /* row pitches of A and B; 0: dense rows (op(A)'s k or m, B's n or k) */
};

/* The CPU and CUDA bodies' reading of the arguments: row pitches with their defaults, and
 * whether product i adds into C (accumulate, or a batch summed into one C after its first). */
static inline size_t veil_bgemm_lda(const struct veil_bgemm_args *g)
{
    return g->lda ? g->lda : g->trans_a ? g->m : g->k;
}
static inline size_t veil_bgemm_ldb(const struct veil_bgemm_args *g)
{
    return g->ldb ? g->ldb : g->trans_b ? g->k : g->n;
}
static inline int veil_bgemm_adds(const struct veil_bgemm_args *g, size_t i)
{
    return g->accumulate || (g->sc == 0 && i > 0);
}

/**
 * Submits one task computing, for i < batch, C[i sc] (=|+=) op(A[i sa]) op(B[i sb]) mod 2^64
 * with veil_gemm_u64. Checks the handles' lengths cover the batch (VEIL_ERR_SHAPE) before
 * submitting. VEIL_ERR_STARPU if StarPU refuses the task.
 */
int veil_task_bgemm(starpu_data_handle_t a, starpu_data_handle_t b, starpu_data_handle_t c,
                    const struct veil_bgemm_args *args, int priority);

/** One block of a block sum: the part is a dense (nb, nr, nc) tensor added at (b0, r0, c0) of a
 * (B, R, C) output. */
struct veil_block {
    size_t b0, nb, r0, nr, c0, nc;
};
#define VEIL_BLOCK_MAX 32
struct veil_block_sum_args {
    size_t B, R, C;
    int nparts;
    struct veil_block blk[VEIL_BLOCK_MAX];
};

/**
 * out = base + the parts, each added at its block (blocks may overlap: an inner-dimension split
 * gives full-size partial products). base and out hold B R C elements, part i nb nr nc; at most
 * VEIL_BLOCK_MAX parts. How a product split over devices is put back together: ring addition is
 * exact and commutative, so the sum equals the unsplit product bit for bit.
 */
int veil_task_block_sum(starpu_data_handle_t base, const starpu_data_handle_t *parts,
                        const struct veil_block_sum_args *args, starpu_data_handle_t out,
                        int priority);

/**
 * out = in with the two middle axes swapped: in is (p0, p1, p2, p3) row-major, out
 * (p0, p2, p1, p3). Covers a transpose (1, r, c, 1), a batched transpose (b, r, c, 1) and
 * (b, oc, hw) <-> (oc, b, hw) regroupings. Both vectors hold p0 p1 p2 p3 elements.
 */
int veil_task_swap_axes(starpu_data_handle_t in, starpu_data_handle_t out, const size_t p[4],
                        int priority);

/**
 * The local step of the truncation protocol (trunc.c): with c = copen + 2^62 (copen the opened
 * x + r), out = [party0] ((c >> f) - 2^(62-f)) - r_hi + ((1 - c_63) r_63) << (64 - f).
 * f in [1, 62]. Same-length vectors.
 */
int veil_task_trunc_finish(starpu_data_handle_t copen, starpu_data_handle_t rhi,
                           starpu_data_handle_t r63, starpu_data_handle_t out, unsigned f,
                           int party0, int priority);

/**
 * A Beaver product's local step in one task: z = c + d b + a e (+ d e when with_de: party 0's
 * share), elementwise mod 2^64, for the opened d = x - a and e = y - b and this party's shares a,
 * b, c (a square passes b = a and e = d). All vectors of one length, z distinct from the inputs
 * (inputs may repeat).
 */
int veil_task_beaver_z(starpu_data_handle_t c, starpu_data_handle_t d, starpu_data_handle_t b,
                       starpu_data_handle_t a, starpu_data_handle_t e, int with_de,
                       starpu_data_handle_t z, int priority);

/**
 * A product's two masked terms packed for one message per peer (veil_mpc_mul, tasks/beaver.c):
 * de = (x - a, y - b), de twice the length of the others.
 */
int veil_task_sub_pair(starpu_data_handle_t x, starpu_data_handle_t a, starpu_data_handle_t y,
                       starpu_data_handle_t b, starpu_data_handle_t de, int priority);
/** veil_task_beaver_z with the opened d and e packed in de (d, then e). */
int veil_task_beaver_z_pair(starpu_data_handle_t c, starpu_data_handle_t de, starpu_data_handle_t b,
                            starpu_data_handle_t a, int with_de, starpu_data_handle_t z,
                            int priority);

/**
 * The codelets behind the five kernels above (CPU bodies in beaver_kernels.c, CUDA bodies in
 * cuda/beaver_kernels.cu), visible so that tests can run one body on one architecture. Buffers
 * and arguments as the submit helpers pack them: bgemm (C written) and bgemm_acc (C read and
 * written): A, B, C and a struct veil_bgemm_args by value; block_sum: out, base, then the parts,
 * a raw struct veil_block_sum_args as cl_arg (STARPU_VARIABLE_NBUFFERS); swap_axes: in, out and
 * size_t p[4] by value; trunc_finish: copen, r_hi, r_63, out, then unsigned f and int party0;
 * beaver_z: z, c, d, b, a, e, then int with_de; beaver_z_pair: z, c, de, b, a, then int
 * with_de; sub_pair: de, x, a, y, b.
 */
extern struct starpu_codelet veil_bgemm_cl, veil_bgemm_acc_cl, veil_block_sum_cl, veil_swap_axes_cl,
    veil_trunc_finish_cl, veil_beaver_z_cl, veil_beaver_z_pair_cl, veil_sub_pair_cl;

/**
 * Secure z = x . y (x a x b, y b x c, one handle each) with one MATMUL triple: validated
 * already by the caller (2-D arithmetic one-tile tensors with matching inner dimension); z is
 * initialised here (a x c, one handle). Rounds 1; bytes per party 8 (N-1)(ab + bc).
 */
int veil_mpc_matmul_core(veil_mpc_t *m, const struct veil_sec *x, const struct veil_sec *y,
                         struct veil_sec *z);

/**
 * The Beaver matrix product behind veil_mpc_matmul and veil_mpc_matmul_ws (tasks/wstat.h), on
 * operands already validated (veil_mpc_matmul_check). wid NULL: a MATMUL item; otherwise a
 * MATMUL_WS item for weight id *wid (B is the session's mask of y). e_keep NULL: E = y - B is
 * opened into a temporary. e_keep empty (data NULL, e.g. zeroed): E is opened into it and the
 * caller owns it (at a party; at the dealer / a recorder it stays empty). e_keep holding E
 * (opened by an earlier call for the same B): y is not opened, E is used as is. b_keep (with
 * wid only, else NULL): this party's share of B, kept from the first call as
 * veil_mpc_ws_material says. z is initialised here. Rounds 1; bytes 8 (N-1)(ab + bc), or
 * 8 (N-1) ab when E is reused.
 */
int veil_mpc_matmul_beaver(veil_mpc_t *m, const struct veil_sec *x, const struct veil_sec *y,
                           const uint64_t *wid, struct veil_pub *e_keep, struct veil_sec *b_keep,
                           struct veil_sec *z);

/** veil_mpc_matmul's validation with op naming the caller in messages (2-D arithmetic one-tile
 * x and y, matching inner dimension, z non-NULL): VEIL_OK or the error with a message. */
int veil_mpc_matmul_check(const char *op, const struct veil_sec *x, const struct veil_sec *y,
                          const struct veil_sec *z);

/** veil_mpc_conv2d's validation (geometry, x and w 4-D one-tile arithmetic of g's shapes, y
 * non-NULL), op naming the caller in messages. */
int veil_mpc_conv2d_check(const char *op, const struct veil_sec *x, const struct veil_sec *w,
                          const struct veil_conv_geom *g, const struct veil_sec *y);

/**
 * The Beaver convolution behind veil_mpc_conv2d and veil_mpc_conv2d_ws, on operands validated by
 * veil_mpc_conv2d_check: a CONV item (wid NULL) or a CONV_WS item for *wid; e_keep and b_keep
 * as for veil_mpc_matmul_beaver (E = w - B, weight-shaped). Rounds 1; bytes 8 (N-1)(|x| + |w|),
 * or 8 (N-1) |x| when E is reused.
 */
int veil_mpc_conv2d_beaver(veil_mpc_t *m, const struct veil_sec *x, const struct veil_sec *w,
                           const struct veil_conv_geom *g, const uint64_t *wid,
                           struct veil_pub *e_keep, struct veil_sec *b_keep, struct veil_sec *y);

/**
 * The material of a Beaver product (tile: one handle per part). A weight-stationary product
 * (b_keep non-NULL) keeps this party's share of its weight mask B from its first call in *b_keep:
 * every item of the weight carries the same B words (tasks/preproc.h), so a later call's material
 * leaves B out (veil_mpc_material_skip: neither expanded nor read) and lends the kept share to
 * the product as its part B. After the product's tasks are submitted, veil_mpc_ws_settle.
 */
int veil_mpc_ws_material(veil_mpc_t *m, struct veil_preproc_item item, struct veil_sec *b_keep,
                         struct veil_mpc_mat *mat);
/** Before *mat is released (rc: the product's outcome so far): takes a lent B back out of *mat;
 *  on a first call that succeeded at a party, moves the item's B into *b_keep (the submitted
 *  tasks read it; the keeper releases it, tasks/wstat.c). Nothing without b_keep. */
void veil_mpc_ws_settle(struct veil_mpc_mat *mat, struct veil_sec *b_keep, int rc);

/**
 * How many blocks the local products of a (rows x cols, inner dimension inner) product are split
 * into under the calling thread's placement (codelets_internal.h, struct veil_place): row blocks
 * *pr, column blocks *pc, inner slices *pk, clamped to the dimensions and to VEIL_BLOCK_MAX / 2
 * blocks in all; 1, 1, 1 without a split. Convolutions read rows as images, cols as output
 * channels (no inner split).
 */
void veil_mpc_product_split(size_t rows, size_t cols, size_t inner, int *pr, int *pc, int *pk);

/** A view of material part p with the shape of like (same numel and tiling): shares p's
 * handles, never released itself. */
struct veil_sec veil_mpc_part_view(const struct veil_sec *p, const struct veil_sec *like);

/** The operands of a product's two local terms A E and D B (a matmul's or a conv2d's: ma and
 * mb the mask parts viewed with x's and y's shapes, d and e the opened D and E). Party 0 also
 * adds D E, and A E + D E = (A + D) E, D B + D E = D (B + E) exactly (mod 2^64): party 0 sums
 * the smaller pair into *tmp (one elementwise task, the size of x or of y) and uses it in place
 * of A or B, so every party runs two products instead of party 0 three. B + E (y not larger
 * than x) keeps A E ready before D lands; (A + D) E waits for D, like the D E it replaces. *ua
 * and *ub are the operands to multiply by E and D (ma and mb at the other parties, whose *tmp
 * stays empty); the caller releases *tmp (never *ua or *ub) once the products are submitted. */
int veil_mpc_fold_de(veil_mpc_t *m, const struct veil_sec *ma, starpu_data_handle_t d,
                     const struct veil_sec *mb, starpu_data_handle_t e, struct veil_sec *tmp,
                     struct veil_sec *ua, struct veil_sec *ub);

/** Moves material part p (its buffer and handles) into *out with the shape (ndim, dims) of the
 * same element count, and clears p, so that the material's release leaves it alone: a product
 * accumulates its local terms onto the correction part C and returns C itself, with no
 * temporaries and no sum task. */
void veil_mpc_part_adopt(struct veil_sec *p, int ndim, const size_t *dims, struct veil_sec *out);

/**
 * veil_mpc_mul without its round mark: for protocols whose Beaver opens travel in a round they
 * already counted (the comparison family sends them with LTZ's first round). Same contract.
 */
int veil_mpc_mul_unmarked(veil_mpc_t *m, const struct veil_sec *x, const struct veil_sec *y,
                          struct veil_sec *z);

#endif

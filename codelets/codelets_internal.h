/*
 * codelets_internal.h — the StarPU codelets of Veil's local (non-communicating) primitives over
 * the ring Z_2^64, their CPU bodies, and the submit helpers the protocol layer (tasks/) calls.
 * Codelets know nothing of parties or the network: every operation here is a pure function of
 * its buffers and by-value parameters, exact in ring arithmetic (uint64_t, wrap-around).
 *
 * Data interfaces (all elements are uint64_t; the helpers check the element size):
 *  - flat elementwise data: starpu_vector handles (starpu_vector_data_register, elemsize 8);
 *  - 2-D data (transpose): starpu_matrix handles, row-major: StarPU's nx is the number of
 *    columns (contiguous), ny the number of rows, ld >= nx the row pitch in elements.
 * Output handles must be distinct from input handles (no in-place variants).
 *
 * Submit helpers: validate handles and parameters BEFORE submitting, so bad input returns an
 * error and never reaches a task body; then submit one task (starpu_task_insert, parameters by
 * value, STARPU_PRIORITY passed through, VEIL_TRACE_TASK: base/trace.h's completion callback
 * while a party traces, nothing otherwise) and return at once (asynchronous, data-driven ordering
 * by StarPU's sequential consistency). Return VEIL_OK; VEIL_ERR_INVAL for a NULL/non-vector
 * handle, a wrong element size or a bad parameter; VEIL_ERR_SHAPE when handle sizes disagree;
 * VEIL_ERR_STARPU when submission fails. The message is recorded with veil_error(). Thread-safe
 * as starpu_task_insert is; call after starpu_init.
 *
 * The GEMM codelet (codelets/gemm.c) is written separately; its declarations join this header.
 */
#ifndef VEIL_CODELETS_INTERNAL_H
#define VEIL_CODELETS_INTERNAL_H

#include "codelets/im2col_common.h"

#include <starpu.h>
#include <stddef.h>
#include <stdint.h>

/* ---------------------------------------------------------------------------------------------
 * Codelets. Buffer order is the order of the submit helper's handle parameters, except
 * veil_sum_cl (see veil_task_sum). Parameters travel packed with STARPU_VALUE in the order the
 * helper documents; CPU bodies read them with starpu_codelet_unpack_args.
 */
extern struct starpu_codelet veil_add_cl;         /* a R, b R, out W */
extern struct starpu_codelet veil_sub_cl;         /* a R, b R, out W */
extern struct starpu_codelet veil_neg_cl;         /* a R, out W */
extern struct starpu_codelet veil_mul_cl;         /* a R, b R, out W (elementwise product) */
extern struct starpu_codelet veil_mul_scalar_cl;  /* a R, out W; uint64_t s */
extern struct starpu_codelet veil_add_scalar_cl;  /* a R, out W; uint64_t s */
extern struct starpu_codelet veil_xor_cl;         /* a R, b R, out W */
extern struct starpu_codelet veil_and_cl;         /* a R, b R, out W */
extern struct starpu_codelet veil_not_cl;         /* a R, out W */
extern struct starpu_codelet veil_xor_mask_cl;    /* a R, out W; uint64_t mask */
extern struct starpu_codelet veil_and_mask_cl;    /* a R, out W; uint64_t mask */
extern struct starpu_codelet veil_shl_cl;         /* a R, out W; uint64_t k */
extern struct starpu_codelet veil_shr_cl;         /* a R, out W; uint64_t k */
extern struct starpu_codelet veil_sar_cl;         /* a R, out W; uint64_t k */
extern struct starpu_codelet veil_bit_extract_cl; /* a R, out W; uint64_t k */
extern struct starpu_codelet veil_bit_pack_cl;    /* a R, out W; uint64_t k */
extern struct starpu_codelet veil_bit_unpack_cl;  /* words R, out W */
extern struct starpu_codelet veil_bitslice_cl;    /* a R, out W */
extern struct starpu_codelet veil_sum_cl;         /* out W, in_0..in_{k-1} R (variable) */
extern struct starpu_codelet veil_xor_sum_cl;     /* same buffers, XOR instead of + */
extern struct starpu_codelet veil_im2col_cl;      /* image R, cols W; struct veil_im2col_geom */
extern struct starpu_codelet veil_col2im_cl;      /* cols R, image W; struct veil_im2col_geom */
extern struct starpu_codelet veil_transpose_cl;   /* in R (matrix), out W (matrix) */

/* ---------------------------------------------------------------------------------------------
 * CPU bodies (codelets/cpu/). Signature of every StarPU CPU function.
 */
void veil_add_cpu(void *buffers[], void *cl_arg);
void veil_sub_cpu(void *buffers[], void *cl_arg);
void veil_neg_cpu(void *buffers[], void *cl_arg);
void veil_mul_cpu(void *buffers[], void *cl_arg);
void veil_mul_scalar_cpu(void *buffers[], void *cl_arg);
void veil_add_scalar_cpu(void *buffers[], void *cl_arg);
void veil_xor_cpu(void *buffers[], void *cl_arg);
void veil_and_cpu(void *buffers[], void *cl_arg);
void veil_not_cpu(void *buffers[], void *cl_arg);
void veil_xor_mask_cpu(void *buffers[], void *cl_arg);
void veil_and_mask_cpu(void *buffers[], void *cl_arg);
void veil_shl_cpu(void *buffers[], void *cl_arg);
void veil_shr_cpu(void *buffers[], void *cl_arg);
void veil_sar_cpu(void *buffers[], void *cl_arg);
void veil_bit_extract_cpu(void *buffers[], void *cl_arg);
void veil_bit_pack_cpu(void *buffers[], void *cl_arg);
void veil_bit_unpack_cpu(void *buffers[], void *cl_arg);
void veil_bitslice_cpu(void *buffers[], void *cl_arg);
void veil_sum_cpu(void *buffers[], void *cl_arg);
void veil_xor_sum_cpu(void *buffers[], void *cl_arg);
void veil_im2col_cpu(void *buffers[], void *cl_arg);
void veil_col2im_cpu(void *buffers[], void *cl_arg);
void veil_transpose_cpu(void *buffers[], void *cl_arg);

/** out (cols x rows, row stride ld_out) = the transpose of in (rows x cols, row stride ld_in),
 *  in 32 x 32 tiles; in and out must not overlap. */
void veil_transpose_u64(const uint64_t *in, size_t rows, size_t cols, size_t ld_in, uint64_t *out,
                        size_t ld_out);

/* ---------------------------------------------------------------------------------------------
 * Shared codelet plumbing (codelets/submit.c).
 */

/** Perf-model size base: the total number of 64-bit elements over all the task's buffers. */
size_t veil_codelet_size_base(struct starpu_task *task, unsigned nimpl);

/**
 * Checks that h is a non-NULL vector handle of uint64_t elements and stores its element count
 * in *n. what names the operand in the error message. VEIL_ERR_INVAL otherwise.
 */
int veil_codelet_check_vector(starpu_data_handle_t h, const char *what, size_t *n);

/**
 * Validates and submits an elementwise task on same-length vectors: a R, then b R for a codelet
 * of 3 buffers (b NULL there is VEIL_ERR_INVAL; b is ignored for 2-buffer codelets), then out W.
 * When has_param, the uint64_t param is packed with STARPU_VALUE. name is the operation's name
 * for messages. Returns as the submit helpers do.
 */
int veil_codelet_submit_elementwise(struct starpu_codelet *cl, const char *name,
                                    starpu_data_handle_t a, starpu_data_handle_t b,
                                    starpu_data_handle_t out, int has_param, uint64_t param,
                                    int priority);

/* ---------------------------------------------------------------------------------------------
 * Ring arithmetic (codelets/ring_arith.c). All vectors of the same length n >= 1.
 */

/** out = a + b (mod 2^64), elementwise. */
int veil_task_add(starpu_data_handle_t a, starpu_data_handle_t b, starpu_data_handle_t out,
                  int priority);
/** out = a - b (mod 2^64), elementwise. */
int veil_task_sub(starpu_data_handle_t a, starpu_data_handle_t b, starpu_data_handle_t out,
                  int priority);
/** out = -a (mod 2^64), elementwise. */
int veil_task_neg(starpu_data_handle_t a, starpu_data_handle_t out, int priority);
/** out = a * b (mod 2^64), elementwise product with a public (or local) tensor b. */
int veil_task_mul(starpu_data_handle_t a, starpu_data_handle_t b, starpu_data_handle_t out,
                  int priority);
/** out = s * a (mod 2^64) for a public scalar s. */
int veil_task_mul_scalar(starpu_data_handle_t a, uint64_t s, starpu_data_handle_t out,
                         int priority);
/** out = a + s (mod 2^64) for a public scalar s (a public constant enters at party 0 only). */
int veil_task_add_scalar(starpu_data_handle_t a, uint64_t s, starpu_data_handle_t out,
                         int priority);

/* ---------------------------------------------------------------------------------------------
 * Bitwise (codelets/bitwise.c). All vectors of the same length n >= 1.
 */

/** out = a ^ b. */
int veil_task_xor(starpu_data_handle_t a, starpu_data_handle_t b, starpu_data_handle_t out,
                  int priority);
/** out = a & b. */
int veil_task_and(starpu_data_handle_t a, starpu_data_handle_t b, starpu_data_handle_t out,
                  int priority);
/** out = ~a. */
int veil_task_not(starpu_data_handle_t a, starpu_data_handle_t out, int priority);
/** out = a ^ mask for a public 64-bit word mask. */
int veil_task_xor_mask(starpu_data_handle_t a, uint64_t mask, starpu_data_handle_t out,
                       int priority);
/** out = a & mask for a public 64-bit word mask. */
int veil_task_and_mask(starpu_data_handle_t a, uint64_t mask, starpu_data_handle_t out,
                       int priority);

/* ---------------------------------------------------------------------------------------------
 * Shifts (codelets/shift.c). k in [0, 63] (VEIL_ERR_INVAL otherwise); same-length vectors.
 */

/** out = a << k (logical). */
int veil_task_shl(starpu_data_handle_t a, unsigned k, starpu_data_handle_t out, int priority);
/** out = a >> k (logical: zeros enter at the top). */
int veil_task_shr(starpu_data_handle_t a, unsigned k, starpu_data_handle_t out, int priority);
/** out = a >> k (arithmetic: a read as two's-complement int64_t, the sign bit is copied). */
int veil_task_sar(starpu_data_handle_t a, unsigned k, starpu_data_handle_t out, int priority);

/* ---------------------------------------------------------------------------------------------
 * Bits (codelets/bits.c). k in [0, 63].
 */

/** out[i] = (a[i] >> k) & 1; same-length vectors. */
int veil_task_bit_extract(starpu_data_handle_t a, unsigned k, starpu_data_handle_t out,
                          int priority);
/**
 * Packs bit k of n elements: bit (j mod 64) of out[j / 64] = bit k of a[j]; the tail of the last
 * word is zero. a has n >= 1 elements, out exactly ceil(n / 64) words.
 */
int veil_task_bit_pack(starpu_data_handle_t a, unsigned k, starpu_data_handle_t out, int priority);
/**
 * Inverse of bit_pack: out[j] = (words[j / 64] >> (j mod 64)) & 1 for j < n, where out has n >= 1
 * elements and words exactly ceil(n / 64). Bits of the last word past n are ignored.
 */
int veil_task_bit_unpack(starpu_data_handle_t words, starpu_data_handle_t out, int priority);
/**
 * Bit-slices blocks of 64 words (a 64x64 bit-matrix transpose per block): for block t,
 * bit j of out[64t + b] = bit b of a[64t + j]. Elements of a past its end read as zero; words of
 * out past its end are not written. a and out must have the same number of 64-word blocks
 * (ceil(len / 64)), so the same call slices (a: n words, out: 64 * ceil(n / 64)) and un-slices
 * (a: 64 * ceil(n / 64), out: n); the transpose is its own inverse.
 */
int veil_task_bitslice(starpu_data_handle_t a, starpu_data_handle_t out, int priority);

/* ---------------------------------------------------------------------------------------------
 * Sum of k operands (codelets/sum.c).
 */
#define VEIL_SUM_MAX_OPERANDS 64

/**
 * out = in[0] + ... + in[k-1] (mod 2^64), elementwise; 1 <= k <= VEIL_SUM_MAX_OPERANDS, all
 * vectors of the same length, out distinct from every input (inputs may repeat). The task's
 * buffers are out (W) then the k inputs (R): veil_sum_cl has STARPU_VARIABLE_NBUFFERS.
 */
int veil_task_sum(const starpu_data_handle_t *in, int k, starpu_data_handle_t out, int priority);
/** out = in_0 XOR ... XOR in_{k-1} (binary shares); same contract as veil_task_sum. */
int veil_task_xor_sum(const starpu_data_handle_t *in, int k, starpu_data_handle_t out,
                      int priority);

/* ---------------------------------------------------------------------------------------------
 * im2col / col2im (codelets/im2col.c) for NCHW images, dilation 1, zero padding.
 */

/* struct veil_im2col_geom is in im2col_common.h. */

/**
 * Checks g (every size >= 1, padding smaller than the kernel, output size >= 1, element counts
 * that fit in size_t) and returns, if non-NULL, oh = (h + 2ph - kh) / sh + 1,
 * ow = (w + 2pw - kw) / sw + 1, image_len = n*c*h*w and cols_len = n*(c*kh*kw)*(oh*ow).
 * VEIL_ERR_INVAL with a message naming the bad field.
 */
int veil_im2col_geom_check(const struct veil_im2col_geom *g, size_t *oh, size_t *ow,
                           size_t *image_len, size_t *cols_len);
/**
 * cols = im2col(image): per image b, a row-major (c*kh*kw) x (oh*ow) matrix,
 * cols[b][(ci*kh + i)*kw + j][y*ow + x] = image[b][ci][y*sh - ph + i][x*sw - pw + j], zero where
 * the index falls in the padding. image and cols are vectors of image_len and cols_len elements.
 */
int veil_task_im2col(starpu_data_handle_t image, starpu_data_handle_t cols,
                     const struct veil_im2col_geom *g, int priority);
/**
 * image = col2im(cols), the adjoint of im2col: image is zeroed, then every cols entry is added
 * to the image element it was copied from (entries that came from padding are dropped), so
 * <im2col(x), y> = <x, col2im(y)> in the ring. Used by the convolution backward pass.
 */
int veil_task_col2im(starpu_data_handle_t cols, starpu_data_handle_t image,
                     const struct veil_im2col_geom *g, int priority);

/* ---------------------------------------------------------------------------------------------
 * Transpose (codelets/transpose.c).
 */

/**
 * out = in^T for matrix handles of uint64_t: in has ny rows of nx elements, out must have nx rows
 * of ny elements (out's StarPU nx == in's ny and out's ny == in's nx); any ld >= nx.
 */
int veil_task_transpose(starpu_data_handle_t in, starpu_data_handle_t out, int priority);

/* ---------------------------------------------------------------------------------------------
 * Placement (codelets/place.c): which StarPU worker runs the tasks the calling thread submits.
 */
#define VEIL_PLACE_MAX_DEV 16

/**
 * A placement: ndev devices (StarPU worker ids dev[0..ndev)); ndev 0 lets the scheduler choose.
 * spread 0 pins every task to dev[0]; spread 1 pins a task to dev[t mod ndev] where t is the
 * tile index tagged on the handle it writes (veil_place_tag). The product split (rows, cols,
 * inner: counts >= 1, 0 read as 1) tells the Beaver products how many blocks of their local
 * GEMMs to submit (tasks/matmul.c, tasks/conv.c); the codelets ignore it.
 */
struct veil_place {
    int ndev;
    int dev[VEIL_PLACE_MAX_DEV];
    int spread;
    int rows, cols, inner;
};

/** Sets the calling thread's placement (copied; NULL or ndev out of range: none). */
void veil_place_set(const struct veil_place *p);
/** The calling thread's placement (ndev 0 when none). */
const struct veil_place *veil_place_get(void);
/** Tags handle h as tile `tile` of its tensor (StarPU user data; untagged handles are tile 0). */
void veil_place_tag(starpu_data_handle_t h, int tile);
/** The tile index tagged on h (0 when untagged). */
int veil_place_tile_of(starpu_data_handle_t h);
/**
 * The worker a task writing `out` must run on under the calling thread's placement, -1 for any
 * (the value STARPU_EXECUTE_ON_WORKER reads as "no pinning"). Counts the pinned task. With no
 * placement: veil_place_small_on_cpu's CPU worker for a small output when CUDA workers exist.
 */
int veil_place_worker(starpu_data_handle_t out);
/** veil_place_worker for a product of `work` multiply-adds (m n k, times the batch): with no
 *  placement, one of at least VEIL_PLACE_GPU_MIN_WORK is the scheduler's to place whatever the
 *  size of its output. */
int veil_place_worker_work(starpu_data_handle_t out, uint64_t work);
/** veil_place_worker for a task built by hand (starpu_task_create, its codelet set): sets
 * workerid and execute_on_a_specific_worker when the placement pins it to a worker that has a
 * body for the codelet; a CPU-only codelet under a GPU placement is left to the scheduler. */
void veil_place_pin_task(struct starpu_task *task, starpu_data_handle_t out);
/** Outputs smaller than this run on a CPU worker when no placement is set and the process has
 *  CUDA workers (place.c), unless the task is a product of at least VEIL_PLACE_GPU_MIN_WORK
 *  multiply-adds. */
#define VEIL_PLACE_GPU_MIN_BYTES ((size_t)1 << 20)
#define VEIL_PLACE_GPU_MIN_WORK (UINT64_C(1) << 22)
/** The rule behind it, as a function of its inputs (for tests): the CPU worker (cpu_ids[tile mod
 *  ncpu]) an output of `bytes` in tile `tile` of a task of `work` multiply-adds (0: not a
 *  product) runs on in a process with ncuda CUDA workers and the ncpu CPU workers cpu_ids, or -1
 *  for the scheduler's choice. Not counted as pinned. */
int veil_place_small_on_cpu(size_t bytes, uint64_t work, int tile, int ncuda, const int *cpu_ids,
                            int ncpu);
/** Tasks this process pinned to worker so far (all threads). */
unsigned long long veil_place_pinned(int worker);

/* ---- marker.c: a task that does nothing and completes with the last writer of its handles -- */
extern struct starpu_codelet veil_lookahead_marker_cl; /* n handles R; runs nowhere */
/** Submits a marker reading h[0..n) (n > 0) with priority, not detached: *out is the task to
 * starpu_task_wait for; done(done_arg) (may be NULL) is its callback, run when it completes.
 * VEIL_ERR_INVAL, VEIL_ERR_NOMEM, VEIL_ERR_STARPU (*out NULL). */
int veil_task_marker(const starpu_data_handle_t *h, int n, int priority, void (*done)(void *),
                     void *done_arg, struct starpu_task **out);

#endif /* VEIL_CODELETS_INTERNAL_H */

/*
 * plain_ops_internal.h — helpers shared by the plaintext executor's op files (plain_forward.c:
 * linear and rearranging ops; plain_forward_nn.c: normalisation, softmax, GELU,
 * argmax, the loss; plain_backward.c and plain_backward_nn.c: their gradients): value allocation
 * per mode, the floor truncation, the encoding of public constants, the double GEMM and the
 * im2col/col2im bands, and the nonlinear evaluations. Never installed.
 *
 * SAVED STATE (e->daux / e->waux [node][slot], element count in e->aux_numel; DOUBLE mode holds
 * doubles, FIXED mode ring words), written when n->saved is set (SOFTMAX_XENT: always):
 *   RELU         [0] mask [x >= 0], numel entries, 0 or 1 (an integer, NOT encoded: dy * mask
 *                needs no truncation)
 *   MAXPOOL      [0] route (B, C, OH, OW, k*k): one-hot of each window's first maximum, 0 or 1
 *                (integers, not encoded), window positions row-major (ki, kj)
 *   LAYERNORM    [0] xhat (numel, fixed point f bits) and [1] r = 1/sigma (rows = numel / d,
 *                fixed point f bits)
 *   SOFTMAX      [0] the output s (numel, fixed point)
 *   GELU         secure run only (the plaintext GELU_GRAD recomputes them from the gelu's input):
 *                [0] the comparison bits [x < -a] then [x < a] (2 numel, integers 0/1, laid out
 *                for ltz) and [1] v = x^2 / a^2 (numel, VEIL_GELU_FRAC bits), tasks/gelu.h
 *   SOFTMAX_XENT [0] s = softmax(logits) (B, C, fixed point)
 */
#ifndef VEIL_GRAPH_PLAIN_OPS_INTERNAL_H
#define VEIL_GRAPH_PLAIN_OPS_INTERNAL_H

#include "graph/plain/plain_internal.h"

#include <math.h>
#include <stdint.h>

/** The ring-arithmetic modes (VEIL_PLAIN_FIXED and VEIL_PLAIN_FIXED_NEAREST). */
#define IS_FIXED(e) ((e)->mode != VEIL_PLAIN_DOUBLE)

/** x / 2^s on the signed word, the plaintext truncation: floor (arithmetic shift) in
 * VEIL_PLAIN_FIXED, to nearest with ties up in VEIL_PLAIN_FIXED_NEAREST. */
static inline uint64_t veil_plain_trunc(const struct veil_plain_exec *e, uint64_t x, int s)
{
    if (e->mode == VEIL_PLAIN_FIXED_NEAREST && s > 0)
        x += UINT64_C(1) << (s - 1);
    return (uint64_t)((int64_t)x >> s);
}

/** enc(c) = round(c 2^f), ties away from zero, as a ring word (public constants). */
static inline uint64_t veil_plain_enc(double c, int f)
{
    return (uint64_t)(int64_t)llround(ldexp(c, f));
}

/** Allocates node n's value array (numel doubles or words, per e->mode; contents undefined).
 * VEIL_OK or VEIL_ERR_NOMEM naming the node. */
int veil_plain_alloc(struct veil_plain_exec *e, const struct veil_node *n);
/** Allocates saved-state slot k of node n with numel entries (per mode, zero-filled). */
int veil_plain_alloc_aux(struct veil_plain_exec *e, const struct veil_node *n, int k,
                         size_t numel);

/** C (=|+=) op(A) . op(B) in doubles, the conventions of veil_gemm_u64 (codelets/gemm_internal.h):
 * row-major, op(A) m x k (A^T when trans_a), op(B) k x n, leading dimensions lda, ldb, ldc. */
void veil_plain_dgemm(int trans_a, int trans_b, size_t m, size_t n, size_t k, const double *a,
                      size_t lda, const double *b, size_t ldb, int accumulate, double *c,
                      size_t ldc);

/* Convolution geometry of one image: channels, input size, kernel, output size, stride, pad. */
struct veil_plain_conv_geom {
    size_t c, h, w, kh, kw, oh, ow, stride, pad;
};

/* The im2col buffer holds at most this many elements (8 MiB): large images are done a band of
 * output rows at a time. */
#define VEIL_PLAIN_COLS_MAX ((size_t)1 << 20)

/** cols (C KH KW, (r1 - r0) OW) of one image x (C, H, W): the input under each kernel tap for
 * output rows [r0, r1), 0 in the padding (codelets' im2col layout restricted to a band). */
void veil_plain_im2col_w(const struct veil_plain_conv_geom *g, const uint64_t *x, size_t r0,
                         size_t r1, uint64_t *cols);
void veil_plain_im2col_d(const struct veil_plain_conv_geom *g, const double *x, size_t r0,
                         size_t r1, double *cols);
/** The adjoint for the same band: adds every cols entry into x (C, H, W) where im2col took it
 * from (padding taps dropped); x is NOT zeroed first, so bands accumulate. */
void veil_plain_col2im_w(const struct veil_plain_conv_geom *g, const uint64_t *cols, size_t r0,
                         size_t r1, uint64_t *x);
void veil_plain_col2im_d(const struct veil_plain_conv_geom *g, const double *cols, size_t r0,
                         size_t r1, double *x);

/* The evaluations of the op table's rows (graph/ops.c; contract: veil_plain_fn).
 * plain_forward.c: */
int veil_plain_dense(struct veil_plain_exec *e, const struct veil_node *n);
int veil_plain_matmul(struct veil_plain_exec *e, const struct veil_node *n);
int veil_plain_conv2d(struct veil_plain_exec *e, const struct veil_node *n);
int veil_plain_relu(struct veil_plain_exec *e, const struct veil_node *n);
int veil_plain_pool(struct veil_plain_exec *e, const struct veil_node *n);
int veil_plain_gavgpool(struct veil_plain_exec *e, const struct veil_node *n);
int veil_plain_scale(struct veil_plain_exec *e, const struct veil_node *n);
int veil_plain_add(struct veil_plain_exec *e, const struct veil_node *n);
int veil_plain_copy(struct veil_plain_exec *e, const struct veil_node *n);
int veil_plain_concat(struct veil_plain_exec *e, const struct veil_node *n);
int veil_plain_transpose(struct veil_plain_exec *e, const struct veil_node *n);
/* plain_backward.c: */
int veil_plain_matmul_grad(struct veil_plain_exec *e, const struct veil_node *n);
int veil_plain_sum(struct veil_plain_exec *e, const struct veil_node *n);
int veil_plain_conv_grad(struct veil_plain_exec *e, const struct veil_node *n);
int veil_plain_relu_grad(struct veil_plain_exec *e, const struct veil_node *n);
int veil_plain_pool_grad(struct veil_plain_exec *e, const struct veil_node *n);
int veil_plain_gavgpool_grad(struct veil_plain_exec *e, const struct veil_node *n);
int veil_plain_slice(struct veil_plain_exec *e, const struct veil_node *n);
int veil_plain_sgd_update(struct veil_plain_exec *e, const struct veil_node *n);
/* plain_forward_nn.c: forward evaluations (contract: veil_plain_fn). */
int veil_plain_layernorm(struct veil_plain_exec *e, const struct veil_node *n);
int veil_plain_softmax(struct veil_plain_exec *e, const struct veil_node *n);
int veil_plain_gelu(struct veil_plain_exec *e, const struct veil_node *n);
int veil_plain_argmax(struct veil_plain_exec *e, const struct veil_node *n);
int veil_plain_softmax_xent(struct veil_plain_exec *e, const struct veil_node *n);
/* Row r (d elements along the last dimension) of node x's fixed-point value, in reals: its
 * spread (max - min; softmax's and layer norm's) and d times its variance (layer norm's). The
 * executor refuses a layer norm row beyond VEIL_LN_SPREAD_BITS / VEIL_LN_DVAR_BITS with them,
 * plain_ranges.c reports them. */
double veil_plain_row_spread(const struct veil_plain_exec *e, const struct veil_node *x,
                             size_t r, size_t d);
double veil_plain_row_dvar(const struct veil_plain_exec *e, const struct veil_node *x, size_t r,
                           size_t d);

/* plain_backward_nn.c: backward evaluations (contract: veil_plain_fn). */
int veil_plain_layernorm_grad(struct veil_plain_exec *e, const struct veil_node *n);
int veil_plain_layernorm_grad_gamma(struct veil_plain_exec *e, const struct veil_node *n);
int veil_plain_softmax_grad(struct veil_plain_exec *e, const struct veil_node *n);
int veil_plain_gelu_grad(struct veil_plain_exec *e, const struct veil_node *n);
int veil_plain_xent_grad(struct veil_plain_exec *e, const struct veil_node *n);

#endif

/*
 * reference.h — the plaintext oracle: a straightforward, obviously-correct loop for every local
 * primitive of Veil, written independently of the optimised codelet bodies, against which every
 * test compares. Ring versions are exact in Z_2^64 (uint64_t, wrap-around); the _f64 versions
 * give the real-number meaning where one exists. No StarPU, no allocation, no error paths:
 * callers pass valid sizes (n >= 1 unless stated, k in [0, 63] for shifts, a geometry that
 * veil_im2col_geom_check accepts). Output arrays must not overlap inputs. Speed is not a goal.
 */
#ifndef VEIL_REFERENCE_H
#define VEIL_REFERENCE_H

#include "codelets/im2col_common.h"

#include <stddef.h>
#include <stdint.h>

/* ---- ring arithmetic, elementwise over n elements */
void veil_ref_add(size_t n, const uint64_t *a, const uint64_t *b, uint64_t *out);
void veil_ref_sub(size_t n, const uint64_t *a, const uint64_t *b, uint64_t *out);
void veil_ref_neg(size_t n, const uint64_t *a, uint64_t *out);
/** out[i] = a[i] * b[i] mod 2^64. */
void veil_ref_mul(size_t n, const uint64_t *a, const uint64_t *b, uint64_t *out);
void veil_ref_mul_scalar(size_t n, const uint64_t *a, uint64_t s, uint64_t *out);
void veil_ref_add_scalar(size_t n, const uint64_t *a, uint64_t s, uint64_t *out);

/* ---- bitwise */
void veil_ref_xor(size_t n, const uint64_t *a, const uint64_t *b, uint64_t *out);
void veil_ref_and(size_t n, const uint64_t *a, const uint64_t *b, uint64_t *out);
void veil_ref_not(size_t n, const uint64_t *a, uint64_t *out);
void veil_ref_xor_mask(size_t n, const uint64_t *a, uint64_t mask, uint64_t *out);
void veil_ref_and_mask(size_t n, const uint64_t *a, uint64_t mask, uint64_t *out);

/* ---- shifts by k in [0, 63], defined bit by bit: bit j of the result is bit j - k (shl),
 * bit j + k (shr, zero past 63) or bit min(j + k, 63) (sar) of the input. */
void veil_ref_shl(size_t n, const uint64_t *a, unsigned k, uint64_t *out);
void veil_ref_shr(size_t n, const uint64_t *a, unsigned k, uint64_t *out);
void veil_ref_sar(size_t n, const uint64_t *a, unsigned k, uint64_t *out);

/* ---- bits */
/** out[i] = bit k of a[i] (0 or 1). */
void veil_ref_bit_extract(size_t n, const uint64_t *a, unsigned k, uint64_t *out);
/** out has ceil(n / 64) words: bit (j mod 64) of out[j / 64] = bit k of a[j]; tail bits zero. */
void veil_ref_bit_pack(size_t n, const uint64_t *a, unsigned k, uint64_t *out);
/** out[j] = bit (j mod 64) of words[j / 64], for j < n. */
void veil_ref_bit_unpack(size_t n, const uint64_t *words, uint64_t *out);
/**
 * Bit-slicing, 64x64 bit-matrix transpose per block of 64 words: for j, b < 64 and block t,
 * bit j of out[64t + b] = bit b of a[64t + j], with a read as zero past na and out written only
 * below nout. ceil(na / 64) must equal ceil(nout / 64).
 */
void veil_ref_bitslice(size_t na, const uint64_t *a, size_t nout, uint64_t *out);

/* ---- sum of k >= 1 operands: out[i] = in[0][i] + ... + in[k-1][i] */
void veil_ref_sum(size_t k, size_t n, const uint64_t *const *in, uint64_t *out);
/** out = XOR of the k inputs. */
void veil_ref_xor_sum(size_t k, size_t n, const uint64_t *const *in, uint64_t *out);

/* ---- im2col / col2im (layouts as veil_task_im2col documents; g must be valid) */
/** cols[b][(ci*kh + i)*kw + j][y*ow + x] = image[b][ci][y*sh + i - ph][x*sw + j - pw] or 0. */
void veil_ref_im2col(const struct veil_im2col_geom *g, const uint64_t *image, uint64_t *cols);
/** The adjoint: image = 0, then each cols entry is added where im2col took it from. */
void veil_ref_col2im(const struct veil_im2col_geom *g, const uint64_t *cols, uint64_t *image);

/* ---- transpose of a row-major rows x cols matrix into cols x rows */
void veil_ref_transpose(size_t rows, size_t cols, const uint64_t *in, uint64_t *out);

/* ---- axis swap: a p[0] x p[1] x p[2] x p[3] tensor into p[0] x p[2] x p[1] x p[3] */
void veil_ref_swap_axes(const size_t p[4], const uint64_t *in, uint64_t *out);

/* ---- GEMM: row-major C (m x n) = A (m x k) . B (k x n), overwriting C; mod 2^64 */
void veil_ref_gemm(size_t m, size_t n, size_t k, const uint64_t *a, const uint64_t *b, uint64_t *c);

/**
 * Fixed-point product of two ring elements with f fractional bits, f in [0, 63]: the ring
 * product a * b mod 2^64, then an arithmetic shift right by f, i.e. floor(p / 2^f) where p is the
 * product read as a two's-complement int64_t (rounds toward minus infinity). This is what a
 * plaintext fixed-point multiply computes when |a * b| < 2^63 as reals; the truncation protocols
 * must land within 1 ulp of it.
 */
uint64_t veil_ref_fixed_mul(uint64_t a, uint64_t b, int f);

/* ---- double-precision meanings of the ops that have one */
void veil_ref_add_f64(size_t n, const double *a, const double *b, double *out);
void veil_ref_sub_f64(size_t n, const double *a, const double *b, double *out);
void veil_ref_neg_f64(size_t n, const double *a, double *out);
void veil_ref_mul_f64(size_t n, const double *a, const double *b, double *out);
void veil_ref_mul_scalar_f64(size_t n, const double *a, double s, double *out);
void veil_ref_add_scalar_f64(size_t n, const double *a, double s, double *out);
void veil_ref_sum_f64(size_t k, size_t n, const double *const *in, double *out);
void veil_ref_im2col_f64(const struct veil_im2col_geom *g, const double *image, double *cols);
void veil_ref_col2im_f64(const struct veil_im2col_geom *g, const double *cols, double *image);
void veil_ref_transpose_f64(size_t rows, size_t cols, const double *in, double *out);
void veil_ref_gemm_f64(size_t m, size_t n, size_t k, const double *a, const double *b, double *c);

#endif /* VEIL_REFERENCE_H */

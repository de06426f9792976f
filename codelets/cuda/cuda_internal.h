/*
 * cuda/cuda_internal.h — the CUDA side of the codelets: the StarPU CUDA bodies (registered as
 * .cuda_funcs by codelets/<prim>.c when VEIL_USE_CUDA is defined) and the plain launchers the
 * bodies call. The kernels and launchers are compiled whenever configure finds nvcc, so the CUDA
 * code is built (not run) on machines without a GPU or without a CUDA-enabled StarPU; the bodies
 * exist only with VEIL_USE_CUDA.
 *
 * Every body reads its buffers and by-value arguments exactly as its CPU twin does (see
 * codelets_internal.h / gemm_internal.h), launches on starpu_cuda_get_local_stream(), checks
 * cudaGetLastError() (a failed launch is reported through STARPU_CUDA_REPORT_ERROR, StarPU's
 * convention for a broken device) and returns without synchronising: the codelets carry
 * STARPU_CUDA_ASYNC. Results are bit for bit those of the CPU bodies.
 */
#ifndef VEIL_CODELETS_CUDA_INTERNAL_H
#define VEIL_CODELETS_CUDA_INTERNAL_H

#include "codelets/elementwise_common.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifdef VEIL_USE_CUDA
/* StarPU CUDA bodies (codelets/cuda/<family>.cu). */
void veil_add_cuda(void *buffers[], void *cl_arg);
void veil_sub_cuda(void *buffers[], void *cl_arg);
void veil_neg_cuda(void *buffers[], void *cl_arg);
void veil_mul_cuda(void *buffers[], void *cl_arg);
void veil_mul_scalar_cuda(void *buffers[], void *cl_arg);
void veil_add_scalar_cuda(void *buffers[], void *cl_arg);
void veil_xor_cuda(void *buffers[], void *cl_arg);
void veil_and_cuda(void *buffers[], void *cl_arg);
void veil_not_cuda(void *buffers[], void *cl_arg);
void veil_xor_mask_cuda(void *buffers[], void *cl_arg);
void veil_and_mask_cuda(void *buffers[], void *cl_arg);
void veil_shl_cuda(void *buffers[], void *cl_arg);
void veil_shr_cuda(void *buffers[], void *cl_arg);
void veil_sar_cuda(void *buffers[], void *cl_arg);
void veil_bit_extract_cuda(void *buffers[], void *cl_arg);
void veil_bit_pack_cuda(void *buffers[], void *cl_arg);
void veil_bit_unpack_cuda(void *buffers[], void *cl_arg);
void veil_bitslice_cuda(void *buffers[], void *cl_arg);
void veil_sum_cuda(void *buffers[], void *cl_arg);
void veil_xor_sum_cuda(void *buffers[], void *cl_arg);
void veil_im2col_cuda(void *buffers[], void *cl_arg);
void veil_col2im_cuda(void *buffers[], void *cl_arg);
void veil_transpose_cuda(void *buffers[], void *cl_arg);
/**
 * GEMM bodies (codelets/cuda/gemm.cu), same buffers and arguments as veil_gemm_cpu.
 * veil_gemm_cuda: limb split + 10 cuBLAS DGEMMs per inner chunk of at most VEIL_LIMB_GEMM_KMAX,
 * on StarPU's per-worker cuBLAS handle (the application calls starpu_cublas_init() after
 * starpu_init); falls back to the integer kernel when no handle exists or the workspace cannot
 * be allocated. veil_gemm_int_cuda: a tiled 64-bit integer multiply-add kernel. Both are
 * registered (implementations 0 and 1), so a model-based scheduler picks the faster per size.
 */
void veil_gemm_cuda(void *buffers[], void *cl_arg);
void veil_gemm_int_cuda(void *buffers[], void *cl_arg);
/** Flat relayout body (cuda/flatop.cu), same buffers and arguments as veil_flatop_cpu. */
void veil_flatop_cuda(void *buffers[], void *cl_arg);
#endif

#if defined(__CUDACC__) || defined(CUDART_VERSION)
/* Launchers: enqueue on stream s and return cudaGetLastError() (no synchronisation). Pointers
 * are device pointers. Declared for CUDA sources and for C files that include
 * cuda_runtime_api.h first (bench/bench_gemm_cuda.c). */
/** out[i] = veil_ew_apply(op, a[i], y) with y = b[i] (binary ops), p (parameter ops) or unused
 * (unary ops), i < n; operation codes and element math in elementwise_common.h. */
cudaError_t veil_cuda_elementwise(enum veil_ew_op op, const uint64_t *a, const uint64_t *b,
                                  uint64_t p, uint64_t *out, size_t n, cudaStream_t s);
/** Packs bit k of a[0..n) into ceil(n / 64) words at out (cuda/bits.cu). */
cudaError_t veil_cuda_bit_pack(const uint64_t *a, size_t n, unsigned k, uint64_t *out,
                               cudaStream_t s);
/** out[j] = bit (j mod 64) of words[j / 64], j < n. */
cudaError_t veil_cuda_bit_unpack(const uint64_t *words, uint64_t *out, size_t n, cudaStream_t s);
/** 64 x 64 bit transpose per block of 64 words (veil_task_bitslice's contract). */
cudaError_t veil_cuda_bitslice(const uint64_t *a, size_t na, uint64_t *out, size_t nout,
                               cudaStream_t s);
/** out = in[0] + ... + in[k-1], 1 <= k <= 64 (cuda/sum.cu). */
cudaError_t veil_cuda_sum(const uint64_t *const *in, unsigned k, uint64_t *out, size_t n,
                          cudaStream_t s);
cudaError_t veil_cuda_xor_sum(const uint64_t *const *in, unsigned k, uint64_t *out, size_t n,
                              cudaStream_t s);
struct veil_im2col_geom;
/** im2col / col2im for a geometry that veil_im2col_geom_check accepts (cuda/im2col.cu). */
cudaError_t veil_cuda_im2col(const struct veil_im2col_geom *g, const uint64_t *image,
                             uint64_t *cols, cudaStream_t s);
cudaError_t veil_cuda_col2im(const struct veil_im2col_geom *g, const uint64_t *cols,
                             uint64_t *image, cudaStream_t s);
/** out (cols x rows, row stride ld_out) = in^T, in rows x cols with row stride ld_in. */
cudaError_t veil_cuda_transpose(const uint64_t *in, size_t rows, size_t cols, size_t ld_in,
                                uint64_t *out, size_t ld_out, cudaStream_t s);
/**
 * C (=|+=) op(A) op(B) mod 2^64 on the device, veil_gemm_u64's conventions (cuda/gemm.cu).
 * veil_cuda_gemm_int: tiled 64-bit integer kernel. veil_cuda_gemm_limb: limb split + cuBLAS
 * DGEMMs on handle (a cublasHandle_t, passed as void * to keep cuBLAS out of this header) with
 * stream-ordered workspace (cudaMallocAsync); returns cudaErrorUnknown if a cuBLAS call fails.
 */
cudaError_t veil_cuda_gemm_int(int trans_a, int trans_b, size_t m, size_t n, size_t k,
                               const uint64_t *a, size_t lda, const uint64_t *b, size_t ldb,
                               int accumulate, uint64_t *c, size_t ldc, cudaStream_t s);
cudaError_t veil_cuda_gemm_limb(void *handle, int trans_a, int trans_b, size_t m, size_t n,
                                size_t k, const uint64_t *a, size_t lda, const uint64_t *b,
                                size_t ldb, int accumulate, uint64_t *c, size_t ldc,
                                cudaStream_t s);
#ifdef VEIL_USE_CUDA
/**
 * The GEMM of veil_gemm_cuda for any CUDA body running on a StarPU CUDA worker: the limb split on
 * the worker's cuBLAS handle (starpu_cublas_get_local_handle()), falling back to the integer
 * kernel as veil_cuda_gemm_limb does (no handle: starpu_cublas_init() not called; no workspace).
 */
cudaError_t veil_cuda_gemm_worker(int trans_a, int trans_b, size_t m, size_t n, size_t k,
                                  const uint64_t *a, size_t lda, const uint64_t *b, size_t ldb,
                                  int accumulate, uint64_t *c, size_t ldc, cudaStream_t s);
#endif
struct veil_flatop_args;
/**
 * One flat relayout (flatop_internal.h's contract for a->kind, a->k, a->c, a->c0, a->add_const)
 * from the lin words at in to the lout words at out, both contiguous (cuda/flatop.cu); a->nout and
 * a->nin are ignored. in and out must not overlap.
 */
cudaError_t veil_cuda_flatop(const struct veil_flatop_args *a, const uint64_t *in, size_t lin,
                             uint64_t *out, size_t lout, cudaStream_t s);
#endif

#ifdef __cplusplus
}
#endif

#endif /* VEIL_CODELETS_CUDA_INTERNAL_H */

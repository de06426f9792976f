/*
 * cuda/beaver_cuda_internal.h — the CUDA side of the Beaver-family codelets
 * (tasks/beaver_kernels.c): the StarPU CUDA bodies of the batched GEMM, the block sum, the axis
 * swap and the truncation's local step (registered as .cuda_funcs when VEIL_USE_CUDA is defined),
 * and the plain launchers they call (compiled whenever configure finds nvcc). Each body reads its
 * buffers and by-value arguments exactly as its CPU twin, launches on
 * starpu_cuda_get_local_stream() without synchronising (STARPU_CUDA_ASYNC) and gives bit for bit
 * the CPU result.
 */
#ifndef VEIL_TASKS_CUDA_BEAVER_CUDA_INTERNAL_H
#define VEIL_TASKS_CUDA_BEAVER_CUDA_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifdef VEIL_USE_CUDA
/** Bodies of veil_bgemm_cl and veil_bgemm_acc_cl (one per batch item: veil_cuda_gemm_worker),
 * veil_block_sum_cl, veil_swap_axes_cl, veil_trunc_finish_cl, veil_beaver_z_cl and its packed
 * twins veil_beaver_z_pair_cl and veil_sub_pair_cl. */
void veil_bgemm_cuda(void *buffers[], void *cl_arg);
void veil_block_sum_cuda(void *buffers[], void *cl_arg);
void veil_swap_axes_cuda(void *buffers[], void *cl_arg);
void veil_trunc_finish_cuda(void *buffers[], void *cl_arg);
void veil_beaver_z_cuda(void *buffers[], void *cl_arg);
void veil_beaver_z_pair_cuda(void *buffers[], void *cl_arg);
void veil_sub_pair_cuda(void *buffers[], void *cl_arg);
#endif

#ifdef __CUDACC__
/* Launchers: enqueue on stream s and return cudaGetLastError(); device pointers. */
struct veil_block;
/** out (B, R, C row-major; B implied) += part at block k: the dense (nb, nr, nc) part is added at
 * (b0, r0, c0). */
cudaError_t veil_cuda_block_add(const struct veil_block *k, size_t R, size_t C,
                                const uint64_t *part, uint64_t *out, cudaStream_t s);
/** out (p0, p2, p1, p3) = in (p0, p1, p2, p3) with the middle axes swapped; in != out. */
cudaError_t veil_cuda_swap_axes(const size_t p[4], const uint64_t *in, uint64_t *out,
                                cudaStream_t s);
/** out[i] = veil_trunc_finish_elem(c[i], rhi[i], r63[i], f, party0 ? ~0 : 0), i < n; f in
 * [1, 62]. */
cudaError_t veil_cuda_trunc_finish(const uint64_t *c, const uint64_t *rhi, const uint64_t *r63,
                                   uint64_t *out, size_t n, unsigned f, int party0, cudaStream_t s);
/** z[i] = c[i] + d[i] b[i] + a[i] e[i] (+ d[i] e[i] when with_de), mod 2^64, i < n. */
cudaError_t veil_cuda_beaver_z(const uint64_t *c, const uint64_t *d, const uint64_t *b,
                               const uint64_t *a, const uint64_t *e, int with_de, uint64_t *z,
                               size_t n, cudaStream_t s);
#endif

#ifdef __cplusplus
}
#endif

#endif /* VEIL_TASKS_CUDA_BEAVER_CUDA_INTERNAL_H */

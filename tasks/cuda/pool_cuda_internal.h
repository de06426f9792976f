/*
 * cuda/pool_cuda_internal.h — the CUDA side of pool.c's local codelets: the StarPU CUDA bodies
 * (registered by tasks/pool.c when VEIL_USE_CUDA is defined) and, for nvcc, the launchers they
 * call. Each body reads its buffers and argument block exactly as its CPU twin in pool.c does,
 * launches on starpu_cuda_get_local_stream() without synchronising (STARPU_CUDA_ASYNC) and gives
 * the CPU result bit for bit; the element math is pool_common.h's.
 */
#ifndef VEIL_TASKS_CUDA_POOL_CUDA_INTERNAL_H
#define VEIL_TASKS_CUDA_POOL_CUDA_INTERNAL_H

#include "tasks/pool_common.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifdef VEIL_USE_CUDA
/* StarPU CUDA bodies: same buffers and arguments as veil_pool_<name>_cl's CPU body. */
void veil_pool_concat_cuda(void *buffers[], void *cl_arg);
void veil_pool_diff_cuda(void *buffers[], void *cl_arg);
void veil_pool_prep_cuda(void *buffers[], void *cl_arg);
void veil_pool_combv_cuda(void *buffers[], void *cl_arg);
void veil_pool_oh0_cuda(void *buffers[], void *cl_arg);
void veil_pool_oh_cuda(void *buffers[], void *cl_arg);
void veil_pool_win_cuda(void *buffers[], void *cl_arg);
void veil_pool_pick_cuda(void *buffers[], void *cl_arg);
#endif

#ifdef __CUDACC__
/* Launchers: enqueue on stream s and return cudaGetLastError() (no synchronisation); device
 * pointers, layouts as pool_internal.h documents for each codelet. */
cudaError_t veil_cuda_pool_diff(const struct veil_pool_tour_arg *a, const uint64_t *v, uint64_t *d,
                                cudaStream_t s);
cudaError_t veil_cuda_pool_prep(const struct veil_pool_tour_arg *a, const uint64_t *beta,
                                const uint64_t *d, const uint64_t *oh, uint64_t *x, uint64_t *y,
                                cudaStream_t s);
cudaError_t veil_cuda_pool_combv(const struct veil_pool_tour_arg *a, const uint64_t *v,
                                 const uint64_t *w, const uint64_t *d, const uint64_t *f,
                                 uint64_t *o, cudaStream_t s);
cudaError_t veil_cuda_pool_oh0(const struct veil_pool_tour_arg *a, const uint64_t *f,
                               const uint64_t *beta, uint64_t *o, cudaStream_t s);
cudaError_t veil_cuda_pool_oh(const struct veil_pool_tour_arg *a, const uint64_t *oh,
                              const uint64_t *w, const uint64_t *f, uint64_t *o, cudaStream_t s);
/* out_len: the output's length (the image for SCATTER, whose pixels all get written). */
cudaError_t veil_cuda_pool_win(const struct veil_pool_win_arg *a, const uint64_t *in, uint64_t *out,
                               size_t out_len, cudaStream_t s);
/* src: a->nsrc device pointers. */
cudaError_t veil_cuda_pool_pick(const struct veil_pool_pick_arg *a, const uint64_t *const *src,
                                uint64_t *out, cudaStream_t s);
#endif

#ifdef __cplusplus
}
#endif

#endif /* VEIL_TASKS_CUDA_POOL_CUDA_INTERNAL_H */

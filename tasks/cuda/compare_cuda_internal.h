/*
 * cuda/compare_cuda_internal.h — the CUDA side of the comparison family's local codelets
 * (tasks/compare.c, and_gates.c, relu.c, b2a.c): the StarPU CUDA bodies, registered as
 * .cuda_funcs when VEIL_USE_CUDA is defined, and the launchers they call, compiled whenever
 * configure finds nvcc. Every body reads the same buffers and raw argument block
 * (compare_common.h) as its CPU twin, launches on starpu_cuda_get_local_stream(), checks the
 * launch and returns without synchronising (STARPU_CUDA_ASYNC); results are bit for bit those
 * of the CPU bodies.
 */
#ifndef VEIL_TASKS_CUDA_COMPARE_CUDA_INTERNAL_H
#define VEIL_TASKS_CUDA_COMPARE_CUDA_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifdef VEIL_USE_CUDA
/* StarPU CUDA bodies (cuda/compare.cu). */
void veil_cmp_leaf_cuda(void *buffers[], void *cl_arg);
void veil_cmp_gather_cuda(void *buffers[], void *cl_arg);
void veil_cmp_group_cuda(void *buffers[], void *cl_arg);
void veil_prodk_cuda(void *buffers[], void *cl_arg);
void veil_and_finish_cuda(void *buffers[], void *cl_arg);
void veil_relu_fin_cuda(void *buffers[], void *cl_arg);
void veil_relu_trunc_cuda(void *buffers[], void *cl_arg);
void veil_b2a_mask_cuda(void *buffers[], void *cl_arg);
void veil_b2a_fin_cuda(void *buffers[], void *cl_arg);
#endif

#ifdef __CUDACC__
/* Launchers: enqueue on stream s and return cudaGetLastError() (no synchronisation); device
 * pointers; the contracts of the CPU bodies of the same name. */
/** Leaves and level-0 groups of nb blocks of c, r (n elements, zero past n) with the CMPPROD
 * words pr (176 per block) into the level-1 state (32 rows) and top. */
cudaError_t veil_cuda_cmp_leaf(const uint64_t *c, const uint64_t *r, size_t n, const uint64_t *pr,
                               uint64_t *state, uint64_t *top, size_t nb, int party0,
                               cudaStream_t s);
/** Records (7 words per group and block, nb blocks) of circuit level l from its state. */
cudaError_t veil_cuda_cmp_gather(int l, const uint64_t *state, uint64_t *rec, size_t nb, int party0,
                                 cudaStream_t s);
/** Next state (veil_cmp_next_rows rows of nb) of level l from the opened records e, the CARRY4
 * parts a and pr, and its state. */
cudaError_t veil_cuda_cmp_group(int l, const uint64_t *e, const uint64_t *a, const uint64_t *pr,
                                const uint64_t *state, uint64_t *out, size_t nb, int party0,
                                cudaStream_t s);
/** z[w] = the product of record w's k factors (prodk_common.h), w < n. */
cudaError_t veil_cuda_prodk(const uint64_t *e, const uint64_t *a, const uint64_t *pr, uint64_t *z,
                            size_t n, int k, int party0, cudaStream_t s);
/** z[i] = c ^ (d & b) ^ (e & a) ^ (d & e at party 0), i < n. */
cudaError_t veil_cuda_and_finish(const uint64_t *d, const uint64_t *e, const uint64_t *a,
                                 const uint64_t *b, const uint64_t *c, uint64_t *z, size_t n,
                                 int party0, cudaStream_t s);
/** y, mask (n elements) of ReLU from packed f, beta, w = x beta and x. */
cudaError_t veil_cuda_relu_fin(const uint64_t *f, const uint64_t *beta, const uint64_t *w,
                               const uint64_t *x, uint64_t *y, uint64_t *mask, size_t n, int party0,
                               cudaStream_t s);
/** z, zb (n elements) of the truncation inside a ReLU from the LTZ's open c and the CMPTRUNC /
 * CMPMASK / BIT parts (veil_trunc_neg_elem, trunc_common.h). */
cudaError_t veil_cuda_relu_trunc(const uint64_t *c, const uint64_t *rhi, const uint64_t *r63,
                                 const uint64_t *beta, const uint64_t *rhib, const uint64_t *r63b,
                                 uint64_t *z, uint64_t *zb, size_t n, int f, int party0,
                                 cudaStream_t s);
/** e[i] = in[i] ^ bp[offset + i], i < nw, the last word cut to nbits. */
cudaError_t veil_cuda_b2a_mask(const uint64_t *in, const uint64_t *bp, size_t offset, size_t nbits,
                               uint64_t *e, size_t nw, cudaStream_t s);
/** out[i] = bit i of e ? one - b[i] : b[i] (one = 1 at party 0), i < n. */
cudaError_t veil_cuda_b2a_fin(const uint64_t *e, const uint64_t *b, uint64_t *out, size_t n,
                              int party0, cudaStream_t s);
#endif

#ifdef __cplusplus
}
#endif

#endif /* VEIL_TASKS_CUDA_COMPARE_CUDA_INTERNAL_H */

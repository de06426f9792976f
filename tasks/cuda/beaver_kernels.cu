/*
 * cuda/beaver_kernels.cu — CUDA kernels and StarPU CUDA bodies of the Beaver-family codelets of
 * tasks/beaver_kernels.c: the batched strided GEMM (one device GEMM per batch item, the GEMM
 * codelet's own choice between the limb split on cuBLAS and the integer kernel), the block sum (a
 * device copy of the base, then one kernel per part), the axis swap, the truncation's local step
 * (on the element math of trunc_common.h) and the elementwise product's (one kernel each). Every body reads its
 * buffers and arguments as its CPU twin does and gives bit for bit the same words.
 */
#include "config.h"

#include "codelets/cuda/cuda_common.cuh"
#include "tasks/cuda/beaver_cuda_internal.h"
#include "tasks/trunc_common.h"

#include <starpu.h>

extern "C" {
#include "tasks/beaver_internal.h"
}

/* out[((b0 + b) R + r0 + r) C + c0 + c] += part[(b nr + r) nc + c]. Blocks may overlap, so each
 * part is its own launch: launches on one stream run in order and no two threads of one launch
 * touch the same word. */
__global__ void block_add_kernel(struct veil_block k, size_t R, size_t C,
                                 const uint64_t *__restrict__ part, uint64_t *__restrict__ out)
{
    size_t stride = (size_t)gridDim.x * blockDim.x, n = k.nb * k.nr * k.nc;
    for (size_t e = (size_t)blockIdx.x * blockDim.x + threadIdx.x; e < n; e += stride) {
        size_t c = e % k.nc, t = e / k.nc, r = t % k.nr, b = t / k.nr;
        out[((k.b0 + b) * R + k.r0 + r) * C + k.c0 + c] += part[e];
    }
}

extern "C" cudaError_t veil_cuda_block_add(const struct veil_block *k, size_t R, size_t C,
                                           const uint64_t *part, uint64_t *out, cudaStream_t s)
{
    size_t n = k->nb * k->nr * k->nc;
    if (n == 0)
        return cudaSuccess;
    block_add_kernel<<<veil_cuda_blocks(n), VEIL_CUDA_THREADS, 0, s>>>(*k, R, C, part, out);
    return cudaGetLastError();
}

/* One thread per output word (writes coalesced): output (i0, i2, i1, i3) reads input
 * (i0, i1, i2, i3); with p3 > 1 consecutive threads also read consecutive words. */
__global__ void swap_axes_kernel(size_t p0, size_t p1, size_t p2, size_t p3,
                                 const uint64_t *__restrict__ in, uint64_t *__restrict__ out)
{
    size_t stride = (size_t)gridDim.x * blockDim.x, n = p0 * p1 * p2 * p3;
    for (size_t o = (size_t)blockIdx.x * blockDim.x + threadIdx.x; o < n; o += stride) {
        size_t i3 = o % p3, t = o / p3, i1 = t % p1;
        t /= p1;
        size_t i2 = t % p2, i0 = t / p2;
        out[o] = in[((i0 * p1 + i1) * p2 + i2) * p3 + i3];
    }
}

extern "C" cudaError_t veil_cuda_swap_axes(const size_t p[4], const uint64_t *in, uint64_t *out,
                                           cudaStream_t s)
{
    size_t n = p[0] * p[1] * p[2] * p[3];
    if (n == 0)
        return cudaSuccess;
    swap_axes_kernel<<<veil_cuda_blocks(n), VEIL_CUDA_THREADS, 0, s>>>(p[0], p[1], p[2], p[3], in,
                                                                       out);
    return cudaGetLastError();
}

__global__ void trunc_finish_kernel(const uint64_t *__restrict__ c,
                                    const uint64_t *__restrict__ rhi,
                                    const uint64_t *__restrict__ r63, uint64_t *__restrict__ out,
                                    size_t n, unsigned f, uint64_t p0)
{
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        out[i] = veil_trunc_finish_elem(c[i], rhi[i], r63[i], f, p0);
}

extern "C" cudaError_t veil_cuda_trunc_finish(const uint64_t *c, const uint64_t *rhi,
                                              const uint64_t *r63, uint64_t *out, size_t n,
                                              unsigned f, int party0, cudaStream_t s)
{
    if (n == 0)
        return cudaSuccess;
    trunc_finish_kernel<<<veil_cuda_blocks(n), VEIL_CUDA_THREADS, 0, s>>>(c, rhi, r63, out, n, f,
                                                                          party0 ? UINT64_MAX : 0);
    return cudaGetLastError();
}

__global__ void beaver_z_kernel(const uint64_t *__restrict__ c, const uint64_t *__restrict__ d,
                                const uint64_t *__restrict__ b, const uint64_t *__restrict__ a,
                                const uint64_t *__restrict__ e, int with_de,
                                uint64_t *__restrict__ z, size_t n)
{
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        uint64_t v = c[i] + d[i] * b[i] + a[i] * e[i];
        z[i] = with_de ? v + d[i] * e[i] : v;
    }
}

extern "C" cudaError_t veil_cuda_beaver_z(const uint64_t *c, const uint64_t *d, const uint64_t *b,
                                          const uint64_t *a, const uint64_t *e, int with_de,
                                          uint64_t *z, size_t n, cudaStream_t s)
{
    if (n == 0)
        return cudaSuccess;
    beaver_z_kernel<<<veil_cuda_blocks(n), VEIL_CUDA_THREADS, 0, s>>>(c, d, b, a, e, with_de, z,
                                                                      n);
    return cudaGetLastError();
}

#ifdef VEIL_USE_CUDA
/* The batch runs as consecutive GEMMs on the worker's stream: with sc == 0 every item adds into
 * the same C, which the stream orders (item i > 0 accumulates, as on the CPU). */
extern "C" void veil_bgemm_cuda(void *buffers[], void *cl_arg)
{
    struct veil_bgemm_args g;
    starpu_codelet_unpack_args(cl_arg, &g);
    const uint64_t *a = (const uint64_t *)STARPU_VECTOR_GET_PTR(buffers[0]);
    const uint64_t *b = (const uint64_t *)STARPU_VECTOR_GET_PTR(buffers[1]);
    uint64_t *c = (uint64_t *)STARPU_VECTOR_GET_PTR(buffers[2]);
    const size_t lda = veil_bgemm_lda(&g), ldb = veil_bgemm_ldb(&g);
    cudaStream_t s = starpu_cuda_get_local_stream();
    for (size_t i = 0; i < g.batch; i++) {
        const int acc = veil_bgemm_adds(&g, i);
        VEIL_CUDA_BODY_CHECK(veil_cuda_gemm_worker(g.trans_a, g.trans_b, g.m, g.n, g.k,
                                                   a + g.oa + i * g.sa, lda, b + g.ob + i * g.sb,
                                                   ldb, acc, c + i * g.sc, g.n, s));
    }
}

extern "C" void veil_block_sum_cuda(void *buffers[], void *cl_arg)
{
    const struct veil_block_sum_args *a = (const struct veil_block_sum_args *)cl_arg;
    uint64_t *out = (uint64_t *)STARPU_VECTOR_GET_PTR(buffers[0]);
    const uint64_t *base = (const uint64_t *)STARPU_VECTOR_GET_PTR(buffers[1]);
    const size_t total = a->B * a->R * a->C;
    cudaStream_t s = starpu_cuda_get_local_stream();
    if (total > 0)
        VEIL_CUDA_BODY_CHECK(
            cudaMemcpyAsync(out, base, total * sizeof *out, cudaMemcpyDeviceToDevice, s));
    for (int p = 0; p < a->nparts; p++)
        VEIL_CUDA_BODY_CHECK(
            veil_cuda_block_add(&a->blk[p], a->R, a->C,
                                (const uint64_t *)STARPU_VECTOR_GET_PTR(buffers[2 + p]), out, s));
}

extern "C" void veil_swap_axes_cuda(void *buffers[], void *cl_arg)
{
    size_t p[4]; /* veil_task_swap_axes packs the four extents as one value */
    starpu_codelet_unpack_args(cl_arg, p);
    VEIL_CUDA_BODY_CHECK(veil_cuda_swap_axes(p, (const uint64_t *)STARPU_VECTOR_GET_PTR(buffers[0]),
                                             (uint64_t *)STARPU_VECTOR_GET_PTR(buffers[1]),
                                             starpu_cuda_get_local_stream()));
}

extern "C" void veil_trunc_finish_cuda(void *buffers[], void *cl_arg)
{
    unsigned f;
    int party0;
    starpu_codelet_unpack_args(cl_arg, &f, &party0);
    VEIL_CUDA_BODY_CHECK(veil_cuda_trunc_finish((const uint64_t *)STARPU_VECTOR_GET_PTR(buffers[0]),
                                                (const uint64_t *)STARPU_VECTOR_GET_PTR(buffers[1]),
                                                (const uint64_t *)STARPU_VECTOR_GET_PTR(buffers[2]),
                                                (uint64_t *)STARPU_VECTOR_GET_PTR(buffers[3]),
                                                STARPU_VECTOR_GET_NX(buffers[3]), f, party0,
                                                starpu_cuda_get_local_stream()));
}

extern "C" void veil_beaver_z_cuda(void *buffers[], void *cl_arg)
{
    int with_de;
    starpu_codelet_unpack_args(cl_arg, &with_de);
#define V(i) ((const uint64_t *)STARPU_VECTOR_GET_PTR(buffers[i]))
    VEIL_CUDA_BODY_CHECK(veil_cuda_beaver_z(V(1), V(2), V(3), V(4), V(5), with_de,
                                            (uint64_t *)STARPU_VECTOR_GET_PTR(buffers[0]),
                                            STARPU_VECTOR_GET_NX(buffers[0]),
                                            starpu_cuda_get_local_stream()));
#undef V
}

extern "C" void veil_beaver_z_pair_cuda(void *buffers[], void *cl_arg)
{
    int with_de;
    starpu_codelet_unpack_args(cl_arg, &with_de);
    const size_t n = STARPU_VECTOR_GET_NX(buffers[0]);
#define V(i) ((const uint64_t *)STARPU_VECTOR_GET_PTR(buffers[i]))
    VEIL_CUDA_BODY_CHECK(veil_cuda_beaver_z(V(1), V(2), V(3), V(4), V(2) + n, with_de,
                                            (uint64_t *)STARPU_VECTOR_GET_PTR(buffers[0]), n,
                                            starpu_cuda_get_local_stream()));
#undef V
}

extern "C" void veil_sub_pair_cuda(void *buffers[], void *cl_arg)
{
    (void)cl_arg;
    const size_t n = STARPU_VECTOR_GET_NX(buffers[1]);
    uint64_t *de = (uint64_t *)STARPU_VECTOR_GET_PTR(buffers[0]);
    const cudaStream_t s = starpu_cuda_get_local_stream();
#define V(i) ((const uint64_t *)STARPU_VECTOR_GET_PTR(buffers[i]))
    VEIL_CUDA_BODY_CHECK(veil_cuda_elementwise(VEIL_EW_SUB, V(1), V(2), 0, de, n, s));
    VEIL_CUDA_BODY_CHECK(veil_cuda_elementwise(VEIL_EW_SUB, V(3), V(4), 0, de + n, n, s));
#undef V
}

#endif /* VEIL_USE_CUDA */

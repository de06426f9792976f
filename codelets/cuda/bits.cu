/*
 * cuda/bits.cu — CUDA kernels and StarPU CUDA bodies of bit packing, unpacking and bit-slicing
 * (bit extraction is an elementwise op: cuda/elementwise.cu). Packing uses warp ballots (32 bits
 * per warp vote, two warps per output word); bit-slicing stages each 64-word block in shared
 * memory and builds output word b from bit b of the 64 inputs, the transpose that
 * veil_transpose64 (bits_common.h) computes on the CPU, laid out for 64 threads.
 */
#include "config.h"

#include "codelets/cuda/cuda_common.cuh"

/* out[w], w < ceil(n / 64): bit j = bit s of a[64w + j] (0 past n). Threads cover 64 * nwords
 * elements exactly (a multiple of 32), so every warp votes with all lanes; lane 0 of each warp
 * writes one 32-bit half of a word (little-endian: even warp = low half). */
__global__ void bit_pack_kernel(const uint64_t *__restrict__ a, unsigned s, size_t n,
                                uint32_t *__restrict__ out32, size_t nelem)
{
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < nelem; i += stride) {
        int bit = i < n ? (int)((a[i] >> s) & 1) : 0;
        unsigned vote = __ballot_sync(0xFFFFFFFFu, bit);
        if ((threadIdx.x & 31) == 0)
            out32[i / 32] = vote;
    }
}

__global__ void bit_unpack_kernel(const uint64_t *__restrict__ words, uint64_t *__restrict__ out,
                                  size_t n)
{
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t j = (size_t)blockIdx.x * blockDim.x + threadIdx.x; j < n; j += stride)
        out[j] = (words[j / 64] >> (j % 64)) & 1;
}

/* One block of 64 threads per 64-word block t: bit j of out[64t + b] = bit b of a[64t + j]; a
 * reads as zero past na, out is written only below nout. */
__global__ void bitslice_kernel(const uint64_t *__restrict__ a, size_t na,
                                uint64_t *__restrict__ out, size_t nout, size_t nblocks)
{
    __shared__ uint64_t m[64];
    for (size_t t = blockIdx.x; t < nblocks; t += gridDim.x) {
        size_t idx = 64 * t + threadIdx.x;
        m[threadIdx.x] = idx < na ? a[idx] : 0;
        __syncthreads();
        uint64_t w = 0;
        unsigned b = threadIdx.x;
        for (unsigned j = 0; j < 64; j++)
            w |= ((m[j] >> b) & 1) << j;
        if (idx < nout)
            out[idx] = w;
        __syncthreads();
    }
}

/* Launchers (enqueue on s, return cudaGetLastError()). */
extern "C" cudaError_t veil_cuda_bit_pack(const uint64_t *a, size_t n, unsigned k, uint64_t *out,
                                          cudaStream_t s)
{
    size_t nelem = 64 * ((n + 63) / 64);
    if (n == 0)
        return cudaSuccess;
    bit_pack_kernel<<<veil_cuda_blocks(nelem), VEIL_CUDA_THREADS, 0, s>>>(a, k & 63, n,
                                                                          (uint32_t *)out, nelem);
    return cudaGetLastError();
}

extern "C" cudaError_t veil_cuda_bit_unpack(const uint64_t *words, uint64_t *out, size_t n,
                                            cudaStream_t s)
{
    if (n == 0)
        return cudaSuccess;
    bit_unpack_kernel<<<veil_cuda_blocks(n), VEIL_CUDA_THREADS, 0, s>>>(words, out, n);
    return cudaGetLastError();
}

extern "C" cudaError_t veil_cuda_bitslice(const uint64_t *a, size_t na, uint64_t *out, size_t nout,
                                          cudaStream_t s)
{
    size_t nblocks = ((na > nout ? na : nout) + 63) / 64;
    if (nblocks == 0)
        return cudaSuccess;
    unsigned grid = nblocks > 65535 ? 65535u : (unsigned)nblocks;
    bitslice_kernel<<<grid, 64, 0, s>>>(a, na, out, nout, nblocks);
    return cudaGetLastError();
}

#ifdef VEIL_USE_CUDA
extern "C" void veil_bit_pack_cuda(void *buffers[], void *cl_arg)
{
    uint64_t k;
    starpu_codelet_unpack_args(cl_arg, &k);
    VEIL_CUDA_BODY_CHECK(veil_cuda_bit_pack((const uint64_t *)STARPU_VECTOR_GET_PTR(buffers[0]),
                                            STARPU_VECTOR_GET_NX(buffers[0]), (unsigned)k,
                                            (uint64_t *)STARPU_VECTOR_GET_PTR(buffers[1]),
                                            starpu_cuda_get_local_stream()));
}

extern "C" void veil_bit_unpack_cuda(void *buffers[], void *cl_arg)
{
    VEIL_CUDA_BODY_CHECK(veil_cuda_bit_unpack((const uint64_t *)STARPU_VECTOR_GET_PTR(buffers[0]),
                                              (uint64_t *)STARPU_VECTOR_GET_PTR(buffers[1]),
                                              STARPU_VECTOR_GET_NX(buffers[1]),
                                              starpu_cuda_get_local_stream()));
}

extern "C" void veil_bitslice_cuda(void *buffers[], void *cl_arg)
{
    VEIL_CUDA_BODY_CHECK(veil_cuda_bitslice(
        (const uint64_t *)STARPU_VECTOR_GET_PTR(buffers[0]), STARPU_VECTOR_GET_NX(buffers[0]),
        (uint64_t *)STARPU_VECTOR_GET_PTR(buffers[1]), STARPU_VECTOR_GET_NX(buffers[1]),
        starpu_cuda_get_local_stream()));
}
#endif /* VEIL_USE_CUDA */

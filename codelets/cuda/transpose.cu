/*
 * cuda/transpose.cu — CUDA kernel and StarPU CUDA body of the matrix transpose (row-major StarPU
 * matrix handles, any ld): 32 x 32 tiles staged in shared memory so that both the reads and the
 * writes are coalesced; the tile row is padded by one word against bank conflicts.
 */
#include "config.h"

#include "codelets/cuda/cuda_common.cuh"

#define TILE 32
#define ROWS 8 /* a block is TILE x ROWS threads; each thread moves TILE / ROWS words */

/* out (cols x rows, row stride ld_out) = in^T, in being rows x cols with row stride ld_in. */
__global__ void transpose_kernel(const uint64_t *__restrict__ in, size_t rows, size_t cols,
                                 size_t ld_in, uint64_t *__restrict__ out, size_t ld_out)
{
    __shared__ uint64_t tile[TILE][TILE + 1];
    size_t c0 = (size_t)blockIdx.x * TILE, r0 = (size_t)blockIdx.y * TILE;
    for (unsigned dy = threadIdx.y; dy < TILE; dy += ROWS) {
        size_t r = r0 + dy, c = c0 + threadIdx.x;
        if (r < rows && c < cols)
            tile[dy][threadIdx.x] = in[r * ld_in + c];
    }
    __syncthreads();
    for (unsigned dy = threadIdx.y; dy < TILE; dy += ROWS) {
        size_t c = c0 + dy, r = r0 + threadIdx.x; /* out row c, column r */
        if (r < rows && c < cols)
            out[c * ld_out + r] = tile[threadIdx.x][dy];
    }
}

extern "C" cudaError_t veil_cuda_transpose(const uint64_t *in, size_t rows, size_t cols,
                                           size_t ld_in, uint64_t *out, size_t ld_out,
                                           cudaStream_t s)
{
    if (rows == 0 || cols == 0)
        return cudaSuccess;
    size_t gx = (cols + TILE - 1) / TILE, gy = (rows + TILE - 1) / TILE;
    if (gx > 0x7FFFFFFF || gy > 65535)
        return cudaErrorInvalidValue; /* > 2 M rows in one tile: never produced by the tiler */
    transpose_kernel<<<dim3((unsigned)gx, (unsigned)gy), dim3(TILE, ROWS), 0, s>>>(
        in, rows, cols, ld_in, out, ld_out);
    return cudaGetLastError();
}

#ifdef VEIL_USE_CUDA
extern "C" void veil_transpose_cuda(void *buffers[], void *cl_arg)
{
    VEIL_CUDA_BODY_CHECK(veil_cuda_transpose(
        (const uint64_t *)STARPU_MATRIX_GET_PTR(buffers[0]), STARPU_MATRIX_GET_NY(buffers[0]),
        STARPU_MATRIX_GET_NX(buffers[0]), STARPU_MATRIX_GET_LD(buffers[0]),
        (uint64_t *)STARPU_MATRIX_GET_PTR(buffers[1]), STARPU_MATRIX_GET_LD(buffers[1]),
        starpu_cuda_get_local_stream()));
}
#endif /* VEIL_USE_CUDA */

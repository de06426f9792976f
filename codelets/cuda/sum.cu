/*
 * cuda/sum.cu — CUDA kernels and StarPU CUDA bodies of the k-operand sum, out = in_0 + ... +
 * in_{k-1} (mod 2^64), and XOR-sum, out = in_0 ^ ... ^ in_{k-1}. The k <= VEIL_SUM_MAX_OPERANDS
 * input pointers travel by value in the kernel's parameter block (64 pointers = 512 bytes, well
 * inside the 4 KiB limit). The StarPU bodies call the launchers, as in the other .cu files.
 */
#include "config.h"

#include "codelets/cuda/cuda_common.cuh"

#define MAX_OPERANDS 64 /* VEIL_SUM_MAX_OPERANDS (codelets_internal.h is C/StarPU-only) */

struct operands {
    const uint64_t *in[MAX_OPERANDS];
    unsigned k;
};

__global__ void sum_kernel(struct operands ops, uint64_t *__restrict__ out, size_t n, int xor_op)
{
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        uint64_t acc = ops.in[0][i];
        for (unsigned t = 1; t < ops.k; t++)
            acc = xor_op ? acc ^ ops.in[t][i] : acc + ops.in[t][i];
        out[i] = acc;
    }
}

static cudaError_t launch(const uint64_t *const *in, unsigned k, uint64_t *out, size_t n,
                          cudaStream_t s, int xor_op)
{
    struct operands ops;
    if (k < 1 || k > MAX_OPERANDS)
        return cudaErrorInvalidValue;
    if (n == 0)
        return cudaSuccess;
    for (unsigned t = 0; t < k; t++)
        ops.in[t] = in[t];
    ops.k = k;
    sum_kernel<<<veil_cuda_blocks(n), VEIL_CUDA_THREADS, 0, s>>>(ops, out, n, xor_op);
    return cudaGetLastError();
}

/* out[i] = sum over t < k of in[t][i]; 1 <= k <= 64 (cudaErrorInvalidValue otherwise). */
extern "C" cudaError_t veil_cuda_sum(const uint64_t *const *in, unsigned k, uint64_t *out, size_t n,
                                     cudaStream_t s)
{
    return launch(in, k, out, n, s, 0);
}

/* out[i] = XOR over t < k of in[t][i]; 1 <= k <= 64. */
extern "C" cudaError_t veil_cuda_xor_sum(const uint64_t *const *in, unsigned k, uint64_t *out,
                                         size_t n, cudaStream_t s)
{
    return launch(in, k, out, n, s, 1);
}

#ifdef VEIL_USE_CUDA
static void body(void *buffers[], int xor_op)
{
    const uint64_t *in[MAX_OPERANDS];
    unsigned nbuf = STARPU_TASK_GET_NBUFFERS(starpu_task_get_current());
    unsigned k = nbuf - 1;
    for (unsigned t = 0; t < k && t < MAX_OPERANDS; t++)
        in[t] = (const uint64_t *)STARPU_VECTOR_GET_PTR(buffers[t + 1]);
    VEIL_CUDA_BODY_CHECK((xor_op ? veil_cuda_xor_sum : veil_cuda_sum)(
        in, k, (uint64_t *)STARPU_VECTOR_GET_PTR(buffers[0]), STARPU_VECTOR_GET_NX(buffers[0]),
        starpu_cuda_get_local_stream()));
}

extern "C" void veil_sum_cuda(void *buffers[], void *cl_arg)
{
    body(buffers, 0);
}

extern "C" void veil_xor_sum_cuda(void *buffers[], void *cl_arg)
{
    body(buffers, 1);
}
#endif /* VEIL_USE_CUDA */

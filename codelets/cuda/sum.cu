/*
 * cuda/sum.cu — CUDA kernels and StarPU CUDA bodies of the k-operand sum, out = in_0 + ... +
 * in_{k-1} (mod 2^64), XOR-sum, out = in_0 ^ ... ^ in_{k-1}, and the Beaver product's last step
 * z = c + d b + a e (+ d e). The k <= VEIL_SUM_MAX_OPERANDS
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

/* z = c + d b + a e (+ d e when with_de), mod 2^64. */
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
#endif /* VEIL_USE_CUDA */

/*
 * cuda/elementwise.cu — CUDA kernels and StarPU CUDA bodies of the elementwise families: ring
 * arithmetic (add, sub, neg, mul, mul_scalar, add_scalar), bitwise (xor, and, not, xor_mask,
 * and_mask), shifts (shl, shr, sar) and bit extraction. One kernel template per operation, a
 * grid-stride loop, the arithmetic shift shared with the CPU body (shift_common.h).
 */
#include "config.h"

#include "codelets/cuda/cuda_common.cuh"
#include "codelets/shift_common.h"

template <int OP> __device__ __forceinline__ uint64_t apply(uint64_t x, uint64_t y)
{
    switch (OP) {
    case VEIL_CUDA_ADD:
        return x + y;
    case VEIL_CUDA_SUB:
        return x - y;
    case VEIL_CUDA_MUL:
        return x * y;
    case VEIL_CUDA_XOR:
        return x ^ y;
    case VEIL_CUDA_AND:
        return x & y;
    case VEIL_CUDA_NEG:
        return 0 - x;
    case VEIL_CUDA_NOT:
        return ~x;
    case VEIL_CUDA_MUL_SCALAR:
        return x * y;
    case VEIL_CUDA_ADD_SCALAR:
        return x + y;
    case VEIL_CUDA_XOR_MASK:
        return x ^ y;
    case VEIL_CUDA_AND_MASK:
        return x & y;
    case VEIL_CUDA_SHL:
        return x << (unsigned)(y & 63);
    case VEIL_CUDA_SHR:
        return x >> (unsigned)(y & 63);
    case VEIL_CUDA_SAR:
        return veil_sar_elem(x, (unsigned)(y & 63));
    default:
        return (x >> (unsigned)(y & 63)) & 1; /* VEIL_CUDA_BIT_EXTRACT */
    }
}

/* Binary ops read b[i]; the others use the by-value parameter p (ignored by unary ops). */
template <int OP>
__global__ void elementwise_kernel(const uint64_t *__restrict__ a, const uint64_t *__restrict__ b,
                                   uint64_t p, uint64_t *__restrict__ out, size_t n)
{
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        out[i] = apply<OP>(a[i], OP <= VEIL_CUDA_AND ? b[i] : p);
}

template <int OP>
static void launch(const uint64_t *a, const uint64_t *b, uint64_t p, uint64_t *out, size_t n,
                   cudaStream_t s)
{
    elementwise_kernel<OP><<<veil_cuda_blocks(n), VEIL_CUDA_THREADS, 0, s>>>(a, b, p, out, n);
}

extern "C" cudaError_t veil_cuda_elementwise(enum veil_cuda_op op, const uint64_t *a,
                                             const uint64_t *b, uint64_t p, uint64_t *out, size_t n,
                                             cudaStream_t s)
{
    if (n == 0)
        return cudaSuccess;
    switch (op) {
    case VEIL_CUDA_ADD:
        launch<VEIL_CUDA_ADD>(a, b, p, out, n, s);
        break;
    case VEIL_CUDA_SUB:
        launch<VEIL_CUDA_SUB>(a, b, p, out, n, s);
        break;
    case VEIL_CUDA_MUL:
        launch<VEIL_CUDA_MUL>(a, b, p, out, n, s);
        break;
    case VEIL_CUDA_XOR:
        launch<VEIL_CUDA_XOR>(a, b, p, out, n, s);
        break;
    case VEIL_CUDA_AND:
        launch<VEIL_CUDA_AND>(a, b, p, out, n, s);
        break;
    case VEIL_CUDA_NEG:
        launch<VEIL_CUDA_NEG>(a, b, p, out, n, s);
        break;
    case VEIL_CUDA_NOT:
        launch<VEIL_CUDA_NOT>(a, b, p, out, n, s);
        break;
    case VEIL_CUDA_MUL_SCALAR:
        launch<VEIL_CUDA_MUL_SCALAR>(a, b, p, out, n, s);
        break;
    case VEIL_CUDA_ADD_SCALAR:
        launch<VEIL_CUDA_ADD_SCALAR>(a, b, p, out, n, s);
        break;
    case VEIL_CUDA_XOR_MASK:
        launch<VEIL_CUDA_XOR_MASK>(a, b, p, out, n, s);
        break;
    case VEIL_CUDA_AND_MASK:
        launch<VEIL_CUDA_AND_MASK>(a, b, p, out, n, s);
        break;
    case VEIL_CUDA_SHL:
        launch<VEIL_CUDA_SHL>(a, b, p, out, n, s);
        break;
    case VEIL_CUDA_SHR:
        launch<VEIL_CUDA_SHR>(a, b, p, out, n, s);
        break;
    case VEIL_CUDA_SAR:
        launch<VEIL_CUDA_SAR>(a, b, p, out, n, s);
        break;
    case VEIL_CUDA_BIT_EXTRACT:
        launch<VEIL_CUDA_BIT_EXTRACT>(a, b, p, out, n, s);
        break;
    default:
        return cudaErrorInvalidValue;
    }
    return cudaGetLastError();
}

#ifdef VEIL_USE_CUDA
/* Binary body: buffers a, b, out. */
static void binary_body(enum veil_cuda_op op, void *buffers[])
{
    VEIL_CUDA_BODY_CHECK(
        veil_cuda_elementwise(op, (const uint64_t *)STARPU_VECTOR_GET_PTR(buffers[0]),
                              (const uint64_t *)STARPU_VECTOR_GET_PTR(buffers[1]), 0,
                              (uint64_t *)STARPU_VECTOR_GET_PTR(buffers[2]),
                              STARPU_VECTOR_GET_NX(buffers[0]), starpu_cuda_get_local_stream()));
}

/* Unary body (buffers a, out); with_param reads the uint64_t argument packed by the helper. */
static void unary_body(enum veil_cuda_op op, void *buffers[], void *cl_arg, int with_param)
{
    uint64_t p = 0;
    if (with_param)
        starpu_codelet_unpack_args(cl_arg, &p);
    VEIL_CUDA_BODY_CHECK(
        veil_cuda_elementwise(op, (const uint64_t *)STARPU_VECTOR_GET_PTR(buffers[0]), NULL, p,
                              (uint64_t *)STARPU_VECTOR_GET_PTR(buffers[1]),
                              STARPU_VECTOR_GET_NX(buffers[0]), starpu_cuda_get_local_stream()));
}

extern "C" void veil_add_cuda(void *buffers[], void *cl_arg)
{
    binary_body(VEIL_CUDA_ADD, buffers);
}
extern "C" void veil_sub_cuda(void *buffers[], void *cl_arg)
{
    binary_body(VEIL_CUDA_SUB, buffers);
}
extern "C" void veil_mul_cuda(void *buffers[], void *cl_arg)
{
    binary_body(VEIL_CUDA_MUL, buffers);
}
extern "C" void veil_xor_cuda(void *buffers[], void *cl_arg)
{
    binary_body(VEIL_CUDA_XOR, buffers);
}
extern "C" void veil_and_cuda(void *buffers[], void *cl_arg)
{
    binary_body(VEIL_CUDA_AND, buffers);
}
extern "C" void veil_neg_cuda(void *buffers[], void *cl_arg)
{
    unary_body(VEIL_CUDA_NEG, buffers, cl_arg, 0);
}
extern "C" void veil_not_cuda(void *buffers[], void *cl_arg)
{
    unary_body(VEIL_CUDA_NOT, buffers, cl_arg, 0);
}
extern "C" void veil_mul_scalar_cuda(void *buffers[], void *cl_arg)
{
    unary_body(VEIL_CUDA_MUL_SCALAR, buffers, cl_arg, 1);
}
extern "C" void veil_add_scalar_cuda(void *buffers[], void *cl_arg)
{
    unary_body(VEIL_CUDA_ADD_SCALAR, buffers, cl_arg, 1);
}
extern "C" void veil_xor_mask_cuda(void *buffers[], void *cl_arg)
{
    unary_body(VEIL_CUDA_XOR_MASK, buffers, cl_arg, 1);
}
extern "C" void veil_and_mask_cuda(void *buffers[], void *cl_arg)
{
    unary_body(VEIL_CUDA_AND_MASK, buffers, cl_arg, 1);
}
extern "C" void veil_shl_cuda(void *buffers[], void *cl_arg)
{
    unary_body(VEIL_CUDA_SHL, buffers, cl_arg, 1);
}
extern "C" void veil_shr_cuda(void *buffers[], void *cl_arg)
{
    unary_body(VEIL_CUDA_SHR, buffers, cl_arg, 1);
}
extern "C" void veil_sar_cuda(void *buffers[], void *cl_arg)
{
    unary_body(VEIL_CUDA_SAR, buffers, cl_arg, 1);
}
extern "C" void veil_bit_extract_cuda(void *buffers[], void *cl_arg)
{
    unary_body(VEIL_CUDA_BIT_EXTRACT, buffers, cl_arg, 1);
}
#endif /* VEIL_USE_CUDA */

/*
 * cuda/elementwise.cu — CUDA kernels and StarPU CUDA bodies of the elementwise families: ring
 * arithmetic (add, sub, neg, mul, mul_scalar, add_scalar), bitwise (xor, and, not, xor_mask,
 * and_mask), shifts (shl, shr, sar) and bit extraction. One kernel template instantiated per
 * operation, a grid-stride loop over the element math the CPU bodies run too
 * (elementwise_common.h's veil_ew_apply).
 */
#include "config.h"

#include "codelets/cuda/cuda_common.cuh"
#include "codelets/elementwise_common.h"

/* Binary ops read b[i]; the others use the by-value parameter p (ignored by unary ops). OP is a
 * template constant, so veil_ew_apply's switch folds away in each instance. */
template <enum veil_ew_op OP>
__global__ void elementwise_kernel(const uint64_t *__restrict__ a, const uint64_t *__restrict__ b,
                                   uint64_t p, uint64_t *__restrict__ out, size_t n)
{
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        out[i] = veil_ew_apply(OP, a[i], veil_ew_binary(OP) ? b[i] : p);
}

template <enum veil_ew_op OP>
static void launch(const uint64_t *a, const uint64_t *b, uint64_t p, uint64_t *out, size_t n,
                   cudaStream_t s)
{
    elementwise_kernel<OP><<<veil_cuda_blocks(n), VEIL_CUDA_THREADS, 0, s>>>(a, b, p, out, n);
}

extern "C" cudaError_t veil_cuda_elementwise(enum veil_ew_op op, const uint64_t *a,
                                             const uint64_t *b, uint64_t p, uint64_t *out, size_t n,
                                             cudaStream_t s)
{
    if (n == 0)
        return cudaSuccess;
    switch (op) {
    case VEIL_EW_ADD:
        launch<VEIL_EW_ADD>(a, b, p, out, n, s);
        break;
    case VEIL_EW_SUB:
        launch<VEIL_EW_SUB>(a, b, p, out, n, s);
        break;
    case VEIL_EW_MUL:
        launch<VEIL_EW_MUL>(a, b, p, out, n, s);
        break;
    case VEIL_EW_XOR:
        launch<VEIL_EW_XOR>(a, b, p, out, n, s);
        break;
    case VEIL_EW_AND:
        launch<VEIL_EW_AND>(a, b, p, out, n, s);
        break;
    case VEIL_EW_NEG:
        launch<VEIL_EW_NEG>(a, b, p, out, n, s);
        break;
    case VEIL_EW_NOT:
        launch<VEIL_EW_NOT>(a, b, p, out, n, s);
        break;
    case VEIL_EW_MUL_SCALAR:
        launch<VEIL_EW_MUL_SCALAR>(a, b, p, out, n, s);
        break;
    case VEIL_EW_ADD_SCALAR:
        launch<VEIL_EW_ADD_SCALAR>(a, b, p, out, n, s);
        break;
    case VEIL_EW_XOR_MASK:
        launch<VEIL_EW_XOR_MASK>(a, b, p, out, n, s);
        break;
    case VEIL_EW_AND_MASK:
        launch<VEIL_EW_AND_MASK>(a, b, p, out, n, s);
        break;
    case VEIL_EW_SHL:
        launch<VEIL_EW_SHL>(a, b, p, out, n, s);
        break;
    case VEIL_EW_SHR:
        launch<VEIL_EW_SHR>(a, b, p, out, n, s);
        break;
    case VEIL_EW_SAR:
        launch<VEIL_EW_SAR>(a, b, p, out, n, s);
        break;
    case VEIL_EW_BIT_EXTRACT:
        launch<VEIL_EW_BIT_EXTRACT>(a, b, p, out, n, s);
        break;
    default:
        return cudaErrorInvalidValue;
    }
    return cudaGetLastError();
}

#ifdef VEIL_USE_CUDA
/* The body of every elementwise codelet: buffers a, b, out for the binary ops, a, out for the
 * others; the parameter ops read the uint64_t packed by the submit helper (as the CPU bodies do).
 */
static void body(enum veil_ew_op op, void *buffers[], void *cl_arg)
{
    uint64_t p = 0;
    if (veil_ew_has_param(op))
        starpu_codelet_unpack_args(cl_arg, &p);
    int bin = veil_ew_binary(op);
    VEIL_CUDA_BODY_CHECK(
        veil_cuda_elementwise(op, (const uint64_t *)STARPU_VECTOR_GET_PTR(buffers[0]),
                              bin ? (const uint64_t *)STARPU_VECTOR_GET_PTR(buffers[1]) : NULL, p,
                              (uint64_t *)STARPU_VECTOR_GET_PTR(buffers[bin ? 2 : 1]),
                              STARPU_VECTOR_GET_NX(buffers[0]), starpu_cuda_get_local_stream()));
}

extern "C" void veil_add_cuda(void *buffers[], void *cl_arg)
{
    body(VEIL_EW_ADD, buffers, cl_arg);
}
extern "C" void veil_sub_cuda(void *buffers[], void *cl_arg)
{
    body(VEIL_EW_SUB, buffers, cl_arg);
}
extern "C" void veil_mul_cuda(void *buffers[], void *cl_arg)
{
    body(VEIL_EW_MUL, buffers, cl_arg);
}
extern "C" void veil_xor_cuda(void *buffers[], void *cl_arg)
{
    body(VEIL_EW_XOR, buffers, cl_arg);
}
extern "C" void veil_and_cuda(void *buffers[], void *cl_arg)
{
    body(VEIL_EW_AND, buffers, cl_arg);
}
extern "C" void veil_neg_cuda(void *buffers[], void *cl_arg)
{
    body(VEIL_EW_NEG, buffers, cl_arg);
}
extern "C" void veil_not_cuda(void *buffers[], void *cl_arg)
{
    body(VEIL_EW_NOT, buffers, cl_arg);
}
extern "C" void veil_mul_scalar_cuda(void *buffers[], void *cl_arg)
{
    body(VEIL_EW_MUL_SCALAR, buffers, cl_arg);
}
extern "C" void veil_add_scalar_cuda(void *buffers[], void *cl_arg)
{
    body(VEIL_EW_ADD_SCALAR, buffers, cl_arg);
}
extern "C" void veil_xor_mask_cuda(void *buffers[], void *cl_arg)
{
    body(VEIL_EW_XOR_MASK, buffers, cl_arg);
}
extern "C" void veil_and_mask_cuda(void *buffers[], void *cl_arg)
{
    body(VEIL_EW_AND_MASK, buffers, cl_arg);
}
extern "C" void veil_shl_cuda(void *buffers[], void *cl_arg)
{
    body(VEIL_EW_SHL, buffers, cl_arg);
}
extern "C" void veil_shr_cuda(void *buffers[], void *cl_arg)
{
    body(VEIL_EW_SHR, buffers, cl_arg);
}
extern "C" void veil_sar_cuda(void *buffers[], void *cl_arg)
{
    body(VEIL_EW_SAR, buffers, cl_arg);
}
extern "C" void veil_bit_extract_cuda(void *buffers[], void *cl_arg)
{
    body(VEIL_EW_BIT_EXTRACT, buffers, cl_arg);
}
#endif /* VEIL_USE_CUDA */

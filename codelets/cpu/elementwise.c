/*
 * cpu/elementwise.c — CPU bodies of the fifteen elementwise codelets: ring arithmetic (add, sub,
 * neg, mul, mul_scalar, add_scalar), bitwise (xor, and, not, xor_mask, and_mask), shifts (shl,
 * shr, sar) and bit extraction. One loop driver, map(), runs the element math of
 * elementwise_common.h (the same function the CUDA kernels run) over the buffers; each body calls
 * it with a constant operation code, so after inlining every body is one plain loop that gcc
 * vectorises (vectorize.h). Unsigned arithmetic wraps mod 2^64 by definition in C. Shift amounts
 * arrive by value, checked to be in [0, 63] by the submit helper.
 */
#include "config.h"

#include "codelets/cpu/vectorize.h"

#include "codelets/codelets_internal.h"
#include "codelets/elementwise_common.h"

/*
 * out[i] = veil_ew_apply(op, a[i], y) over the task's vectors: y = b[i] for the binary ops
 * (buffers a, b, out), the by-value uint64_t for the parameter ops and 0 for the unary ops
 * (buffers a, out). Always inlined, so that op is a constant and the switch folds away.
 */
static inline __attribute__((always_inline)) void map(enum veil_ew_op op, void *buffers[],
                                                      void *cl_arg)
{
    /*
     * Two copies of the parameter, so that gcc's vectoriser (its "cheap" cost model, vectorize.h)
     * decides as it did for the separate bodies this driver replaced: p is address-taken and
     * reloaded in the loop, which makes the model vectorise the product by a parameter (SSE2
     * emulation of the 64-bit product); the shifts vectorise only when their amount is a register
     * value, the copy k. The generated loops are those of the former bodies, instruction for
     * instruction.
     */
    uint64_t p = 0;
    if (veil_ew_has_param(op))
        starpu_codelet_unpack_args(cl_arg, &p);
    const uint64_t k = p;
    size_t n = STARPU_VECTOR_GET_NX(buffers[0]);
    const uint64_t *restrict a = (const uint64_t *)STARPU_VECTOR_GET_PTR(buffers[0]);
    if (veil_ew_binary(op)) {
        const uint64_t *restrict b = (const uint64_t *)STARPU_VECTOR_GET_PTR(buffers[1]);
        uint64_t *restrict out = (uint64_t *)STARPU_VECTOR_GET_PTR(buffers[2]);
        for (size_t i = 0; i < n; i++)
            out[i] = veil_ew_apply(op, a[i], b[i]);
    } else {
        uint64_t *restrict out = (uint64_t *)STARPU_VECTOR_GET_PTR(buffers[1]);
        for (size_t i = 0; i < n; i++)
            out[i] = veil_ew_apply(op, a[i], veil_ew_shift(op) ? k : p);
    }
}

void veil_add_cpu(void *buffers[], void *cl_arg)
{
    map(VEIL_EW_ADD, buffers, cl_arg);
}

void veil_sub_cpu(void *buffers[], void *cl_arg)
{
    map(VEIL_EW_SUB, buffers, cl_arg);
}

void veil_neg_cpu(void *buffers[], void *cl_arg)
{
    map(VEIL_EW_NEG, buffers, cl_arg);
}

void veil_mul_cpu(void *buffers[], void *cl_arg)
{
    map(VEIL_EW_MUL, buffers, cl_arg);
}

void veil_mul_scalar_cpu(void *buffers[], void *cl_arg)
{
    map(VEIL_EW_MUL_SCALAR, buffers, cl_arg);
}

void veil_add_scalar_cpu(void *buffers[], void *cl_arg)
{
    map(VEIL_EW_ADD_SCALAR, buffers, cl_arg);
}

void veil_xor_cpu(void *buffers[], void *cl_arg)
{
    map(VEIL_EW_XOR, buffers, cl_arg);
}

void veil_and_cpu(void *buffers[], void *cl_arg)
{
    map(VEIL_EW_AND, buffers, cl_arg);
}

void veil_not_cpu(void *buffers[], void *cl_arg)
{
    map(VEIL_EW_NOT, buffers, cl_arg);
}

void veil_xor_mask_cpu(void *buffers[], void *cl_arg)
{
    map(VEIL_EW_XOR_MASK, buffers, cl_arg);
}

void veil_and_mask_cpu(void *buffers[], void *cl_arg)
{
    map(VEIL_EW_AND_MASK, buffers, cl_arg);
}

void veil_shl_cpu(void *buffers[], void *cl_arg)
{
    map(VEIL_EW_SHL, buffers, cl_arg);
}

void veil_shr_cpu(void *buffers[], void *cl_arg)
{
    map(VEIL_EW_SHR, buffers, cl_arg);
}

void veil_sar_cpu(void *buffers[], void *cl_arg)
{
    map(VEIL_EW_SAR, buffers, cl_arg);
}

void veil_bit_extract_cpu(void *buffers[], void *cl_arg)
{
    map(VEIL_EW_BIT_EXTRACT, buffers, cl_arg);
}

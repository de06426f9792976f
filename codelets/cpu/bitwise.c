/*
 * cpu/bitwise.c — CPU bodies of the bitwise word operations (xor, and, not, xor/and with a
 * public mask): one vectorisable loop each.
 */
#include "config.h"

#include "codelets/cpu/vectorize.h"

#include "codelets/codelets_internal.h"

void veil_xor_cpu(void *buffers[], void *cl_arg)
{
    (void)cl_arg;
    size_t n = STARPU_VECTOR_GET_NX(buffers[0]);
    const uint64_t *restrict a = (const uint64_t *)STARPU_VECTOR_GET_PTR(buffers[0]);
    const uint64_t *restrict b = (const uint64_t *)STARPU_VECTOR_GET_PTR(buffers[1]);
    uint64_t *restrict out = (uint64_t *)STARPU_VECTOR_GET_PTR(buffers[2]);
    for (size_t i = 0; i < n; i++)
        out[i] = a[i] ^ b[i];
}

void veil_and_cpu(void *buffers[], void *cl_arg)
{
    (void)cl_arg;
    size_t n = STARPU_VECTOR_GET_NX(buffers[0]);
    const uint64_t *restrict a = (const uint64_t *)STARPU_VECTOR_GET_PTR(buffers[0]);
    const uint64_t *restrict b = (const uint64_t *)STARPU_VECTOR_GET_PTR(buffers[1]);
    uint64_t *restrict out = (uint64_t *)STARPU_VECTOR_GET_PTR(buffers[2]);
    for (size_t i = 0; i < n; i++)
        out[i] = a[i] & b[i];
}

void veil_not_cpu(void *buffers[], void *cl_arg)
{
    (void)cl_arg;
    size_t n = STARPU_VECTOR_GET_NX(buffers[0]);
    const uint64_t *restrict a = (const uint64_t *)STARPU_VECTOR_GET_PTR(buffers[0]);
    uint64_t *restrict out = (uint64_t *)STARPU_VECTOR_GET_PTR(buffers[1]);
    for (size_t i = 0; i < n; i++)
        out[i] = ~a[i];
}

void veil_xor_mask_cpu(void *buffers[], void *cl_arg)
{
    uint64_t mask;
    starpu_codelet_unpack_args(cl_arg, &mask);
    size_t n = STARPU_VECTOR_GET_NX(buffers[0]);
    const uint64_t *restrict a = (const uint64_t *)STARPU_VECTOR_GET_PTR(buffers[0]);
    uint64_t *restrict out = (uint64_t *)STARPU_VECTOR_GET_PTR(buffers[1]);
    for (size_t i = 0; i < n; i++)
        out[i] = a[i] ^ mask;
}

void veil_and_mask_cpu(void *buffers[], void *cl_arg)
{
    uint64_t mask;
    starpu_codelet_unpack_args(cl_arg, &mask);
    size_t n = STARPU_VECTOR_GET_NX(buffers[0]);
    const uint64_t *restrict a = (const uint64_t *)STARPU_VECTOR_GET_PTR(buffers[0]);
    uint64_t *restrict out = (uint64_t *)STARPU_VECTOR_GET_PTR(buffers[1]);
    for (size_t i = 0; i < n; i++)
        out[i] = a[i] & mask;
}

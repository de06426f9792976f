/*
 * cpu/ring_arith.c — CPU bodies of the elementwise ring operations (add, sub, neg, product,
 * product by a scalar, addition of a scalar). Unsigned arithmetic wraps mod 2^64 by definition
 * in C, so each body is one plain loop that gcc vectorises.
 */
#include "config.h"

#include "codelets/cpu/vectorize.h"

#include "codelets/codelets_internal.h"

void veil_add_cpu(void *buffers[], void *cl_arg)
{
    (void)cl_arg;
    size_t n = STARPU_VECTOR_GET_NX(buffers[0]);
    const uint64_t *restrict a = (const uint64_t *)STARPU_VECTOR_GET_PTR(buffers[0]);
    const uint64_t *restrict b = (const uint64_t *)STARPU_VECTOR_GET_PTR(buffers[1]);
    uint64_t *restrict out = (uint64_t *)STARPU_VECTOR_GET_PTR(buffers[2]);
    for (size_t i = 0; i < n; i++)
        out[i] = a[i] + b[i];
}

void veil_sub_cpu(void *buffers[], void *cl_arg)
{
    (void)cl_arg;
    size_t n = STARPU_VECTOR_GET_NX(buffers[0]);
    const uint64_t *restrict a = (const uint64_t *)STARPU_VECTOR_GET_PTR(buffers[0]);
    const uint64_t *restrict b = (const uint64_t *)STARPU_VECTOR_GET_PTR(buffers[1]);
    uint64_t *restrict out = (uint64_t *)STARPU_VECTOR_GET_PTR(buffers[2]);
    for (size_t i = 0; i < n; i++)
        out[i] = a[i] - b[i];
}

void veil_neg_cpu(void *buffers[], void *cl_arg)
{
    (void)cl_arg;
    size_t n = STARPU_VECTOR_GET_NX(buffers[0]);
    const uint64_t *restrict a = (const uint64_t *)STARPU_VECTOR_GET_PTR(buffers[0]);
    uint64_t *restrict out = (uint64_t *)STARPU_VECTOR_GET_PTR(buffers[1]);
    for (size_t i = 0; i < n; i++)
        out[i] = 0 - a[i];
}

void veil_mul_cpu(void *buffers[], void *cl_arg)
{
    (void)cl_arg;
    size_t n = STARPU_VECTOR_GET_NX(buffers[0]);
    const uint64_t *restrict a = (const uint64_t *)STARPU_VECTOR_GET_PTR(buffers[0]);
    const uint64_t *restrict b = (const uint64_t *)STARPU_VECTOR_GET_PTR(buffers[1]);
    uint64_t *restrict out = (uint64_t *)STARPU_VECTOR_GET_PTR(buffers[2]);
    for (size_t i = 0; i < n; i++)
        out[i] = a[i] * b[i];
}

void veil_mul_scalar_cpu(void *buffers[], void *cl_arg)
{
    uint64_t s;
    starpu_codelet_unpack_args(cl_arg, &s);
    size_t n = STARPU_VECTOR_GET_NX(buffers[0]);
    const uint64_t *restrict a = (const uint64_t *)STARPU_VECTOR_GET_PTR(buffers[0]);
    uint64_t *restrict out = (uint64_t *)STARPU_VECTOR_GET_PTR(buffers[1]);
    for (size_t i = 0; i < n; i++)
        out[i] = a[i] * s;
}

void veil_add_scalar_cpu(void *buffers[], void *cl_arg)
{
    uint64_t s;
    starpu_codelet_unpack_args(cl_arg, &s);
    size_t n = STARPU_VECTOR_GET_NX(buffers[0]);
    const uint64_t *restrict a = (const uint64_t *)STARPU_VECTOR_GET_PTR(buffers[0]);
    uint64_t *restrict out = (uint64_t *)STARPU_VECTOR_GET_PTR(buffers[1]);
    for (size_t i = 0; i < n; i++)
        out[i] = a[i] + s;
}

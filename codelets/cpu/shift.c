/*
 * cpu/shift.c — CPU bodies of the shifts (logical left / right, arithmetic right). The amount k
 * arrives by value and was checked to be in [0, 63] by the submit helper.
 */
#include "config.h"

#include "codelets/cpu/vectorize.h"

#include "codelets/codelets_internal.h"
#include "codelets/shift_common.h"

void veil_shl_cpu(void *buffers[], void *cl_arg)
{
    uint64_t k;
    starpu_codelet_unpack_args(cl_arg, &k);
    size_t n = STARPU_VECTOR_GET_NX(buffers[0]);
    const uint64_t *restrict a = (const uint64_t *)STARPU_VECTOR_GET_PTR(buffers[0]);
    uint64_t *restrict out = (uint64_t *)STARPU_VECTOR_GET_PTR(buffers[1]);
    unsigned s = (unsigned)(k & 63);
    for (size_t i = 0; i < n; i++)
        out[i] = a[i] << s;
}

void veil_shr_cpu(void *buffers[], void *cl_arg)
{
    uint64_t k;
    starpu_codelet_unpack_args(cl_arg, &k);
    size_t n = STARPU_VECTOR_GET_NX(buffers[0]);
    const uint64_t *restrict a = (const uint64_t *)STARPU_VECTOR_GET_PTR(buffers[0]);
    uint64_t *restrict out = (uint64_t *)STARPU_VECTOR_GET_PTR(buffers[1]);
    unsigned s = (unsigned)(k & 63);
    for (size_t i = 0; i < n; i++)
        out[i] = a[i] >> s;
}

void veil_sar_cpu(void *buffers[], void *cl_arg)
{
    uint64_t k;
    starpu_codelet_unpack_args(cl_arg, &k);
    size_t n = STARPU_VECTOR_GET_NX(buffers[0]);
    const uint64_t *restrict a = (const uint64_t *)STARPU_VECTOR_GET_PTR(buffers[0]);
    uint64_t *restrict out = (uint64_t *)STARPU_VECTOR_GET_PTR(buffers[1]);
    unsigned s = (unsigned)(k & 63);
    for (size_t i = 0; i < n; i++)
        out[i] = veil_sar_elem(a[i], s);
}

/*
 * cpu/sum.c — CPU bodies of the k-operand sum (buffers: out, then the k inputs; chunks of 2048
 * words, a 16 KiB accumulator in L1, so that out is written once, not once per operand) and of
 * the Beaver product's last step z = c + d b + a e (+ d e), one pass over its six vectors.
 */
#include "config.h"

#include "codelets/cpu/vectorize.h"

#include "codelets/codelets_internal.h"

#define CHUNK 2048

static inline void sum_k(void *buffers[], int xor)
{
    struct starpu_task *task = starpu_task_get_current();
    unsigned nbuf = STARPU_TASK_GET_NBUFFERS(task);
    size_t n = STARPU_VECTOR_GET_NX(buffers[0]);
    uint64_t *restrict out = (uint64_t *)STARPU_VECTOR_GET_PTR(buffers[0]);

    for (size_t base = 0; base < n; base += CHUNK) {
        size_t len = n - base < CHUNK ? n - base : CHUNK;
        uint64_t acc[CHUNK];
        const uint64_t *restrict x = (const uint64_t *)STARPU_VECTOR_GET_PTR(buffers[1]) + base;
        for (size_t i = 0; i < len; i++)
            acc[i] = x[i];
        for (unsigned t = 2; t < nbuf; t++) {
            const uint64_t *restrict y = (const uint64_t *)STARPU_VECTOR_GET_PTR(buffers[t]) + base;
            for (size_t i = 0; i < len; i++)
                acc[i] = xor ? acc[i] ^ y[i] : acc[i] + y[i];
        }
        for (size_t i = 0; i < len; i++)
            out[base + i] = acc[i];
    }
}

void veil_sum_cpu(void *buffers[], void *cl_arg)
{
    (void)cl_arg;
    sum_k(buffers, 0);
}

void veil_xor_sum_cpu(void *buffers[], void *cl_arg)
{
    (void)cl_arg;
    sum_k(buffers, 1);
}

void veil_beaver_z_cpu(void *buffers[], void *cl_arg)
{
    int with_de;
    starpu_codelet_unpack_args(cl_arg, &with_de);
    const size_t n = STARPU_VECTOR_GET_NX(buffers[0]);
    uint64_t *restrict z = (uint64_t *)STARPU_VECTOR_GET_PTR(buffers[0]);
    const uint64_t *c = (const uint64_t *)STARPU_VECTOR_GET_PTR(buffers[1]);
    const uint64_t *d = (const uint64_t *)STARPU_VECTOR_GET_PTR(buffers[2]);
    const uint64_t *b = (const uint64_t *)STARPU_VECTOR_GET_PTR(buffers[3]);
    const uint64_t *a = (const uint64_t *)STARPU_VECTOR_GET_PTR(buffers[4]);
    const uint64_t *e = (const uint64_t *)STARPU_VECTOR_GET_PTR(buffers[5]);
    if (with_de)
        for (size_t i = 0; i < n; i++)
            z[i] = c[i] + d[i] * b[i] + a[i] * e[i] + d[i] * e[i];
    else
        for (size_t i = 0; i < n; i++)
            z[i] = c[i] + d[i] * b[i] + a[i] * e[i];
}

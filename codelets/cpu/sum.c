/*
 * cpu/sum.c — CPU body of the k-operand sum. Buffers: out, then the k inputs. Works on chunks
 * of 2048 words (16 KiB accumulator, in L1) so that out is written once, not once per operand.
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

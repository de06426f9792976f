/*
 * cpu/bits.c — CPU bodies of bit packing / unpacking and bit-slicing (bit extraction, an
 * elementwise operation, is in cpu/elementwise.c). Lengths were checked by the submit helpers
 * (pack: out = ceil(n / 64) words; bitslice: equal block counts), so the bodies only read within
 * each buffer's own length.
 */
#include "config.h"

#include "codelets/cpu/vectorize.h"

#include "codelets/bits_common.h"
#include "codelets/codelets_internal.h"

#include <string.h>

void veil_bit_pack_cpu(void *buffers[], void *cl_arg)
{
    uint64_t k;
    starpu_codelet_unpack_args(cl_arg, &k);
    size_t n = STARPU_VECTOR_GET_NX(buffers[0]);
    const uint64_t *restrict a = (const uint64_t *)STARPU_VECTOR_GET_PTR(buffers[0]);
    uint64_t *restrict out = (uint64_t *)STARPU_VECTOR_GET_PTR(buffers[1]);
    unsigned s = (unsigned)(k & 63);
    size_t full = n / 64;
    for (size_t w = 0; w < full; w++) {
        const uint64_t *x = a + 64 * w;
        uint64_t acc = 0;
        for (unsigned j = 0; j < 64; j++)
            acc |= ((x[j] >> s) & 1) << j;
        out[w] = acc;
    }
    if (n % 64 != 0) {
        const uint64_t *x = a + 64 * full;
        uint64_t acc = 0;
        for (unsigned j = 0; j < n % 64; j++)
            acc |= ((x[j] >> s) & 1) << j;
        out[full] = acc;
    }
}

void veil_bit_unpack_cpu(void *buffers[], void *cl_arg)
{
    (void)cl_arg;
    const uint64_t *restrict words = (const uint64_t *)STARPU_VECTOR_GET_PTR(buffers[0]);
    size_t n = STARPU_VECTOR_GET_NX(buffers[1]);
    uint64_t *restrict out = (uint64_t *)STARPU_VECTOR_GET_PTR(buffers[1]);
    for (size_t j = 0; j < n; j++)
        out[j] = (words[j / 64] >> (j % 64)) & 1;
}

void veil_bitslice_cpu(void *buffers[], void *cl_arg)
{
    (void)cl_arg;
    size_t na = STARPU_VECTOR_GET_NX(buffers[0]);
    const uint64_t *restrict a = (const uint64_t *)STARPU_VECTOR_GET_PTR(buffers[0]);
    size_t nout = STARPU_VECTOR_GET_NX(buffers[1]);
    uint64_t *restrict out = (uint64_t *)STARPU_VECTOR_GET_PTR(buffers[1]);
    uint64_t m[64];
    for (size_t base = 0; base < na || base < nout; base += 64) {
        size_t rin = na > base ? na - base : 0;
        size_t rout = nout > base ? nout - base : 0;
        if (rin >= 64) {
            memcpy(m, a + base, sizeof(m));
        } else {
            memset(m, 0, sizeof(m));
            memcpy(m, a + base, rin * sizeof(uint64_t));
        }
        veil_transpose64(m);
        memcpy(out + base, m, (rout < 64 ? rout : 64) * sizeof(uint64_t));
    }
}

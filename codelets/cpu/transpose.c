/*
 * cpu/transpose.c — CPU body of the matrix transpose, in square tiles so that both the rows read
 * and the rows written stay in cache (a 32 x 32 tile of 8-byte words is 8 KiB); the same loop
 * serves the axis swap of the Beaver kernels (tasks/beaver_kernels.c).
 */
#include "config.h"

#include "codelets/cpu/vectorize.h"

#include "codelets/codelets_internal.h"

#define TILE 32

void veil_transpose_u64(const uint64_t *restrict in, size_t rows, size_t cols, size_t ld_in,
                        uint64_t *restrict out, size_t ld_out)
{
    for (size_t r0 = 0; r0 < rows; r0 += TILE) {
        size_t r1 = r0 + TILE < rows ? r0 + TILE : rows;
        for (size_t c0 = 0; c0 < cols; c0 += TILE) {
            size_t c1 = c0 + TILE < cols ? c0 + TILE : cols;
            for (size_t c = c0; c < c1; c++)
                for (size_t r = r0; r < r1; r++)
                    out[c * ld_out + r] = in[r * ld_in + c];
        }
    }
}

void veil_transpose_cpu(void *buffers[], void *cl_arg)
{
    (void)cl_arg;
    veil_transpose_u64(
        (const uint64_t *)STARPU_MATRIX_GET_PTR(buffers[0]), STARPU_MATRIX_GET_NY(buffers[0]),
        STARPU_MATRIX_GET_NX(buffers[0]), STARPU_MATRIX_GET_LD(buffers[0]),
        (uint64_t *)STARPU_MATRIX_GET_PTR(buffers[1]), STARPU_MATRIX_GET_LD(buffers[1]));
}

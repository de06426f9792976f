/*
 * cuda/cuda_common.cuh — helpers shared by the .cu files: launch geometry for grid-stride loops
 * and the check every StarPU CUDA body runs after its launches. Included only by nvcc.
 */
#ifndef VEIL_CODELETS_CUDA_COMMON_CUH
#define VEIL_CODELETS_CUDA_COMMON_CUH

#include "codelets/cuda/cuda_internal.h"

#include <cuda_runtime.h>
#include <stddef.h>
#include <stdint.h>

#ifdef VEIL_USE_CUDA
#include <starpu.h>
#endif

/* Threads per block of the 1-D kernels. */
#define VEIL_CUDA_THREADS 256

/* Blocks for n elements, one per thread, capped: kernels loop with a grid stride beyond. */
static inline unsigned veil_cuda_blocks(size_t n)
{
    size_t b = (n + VEIL_CUDA_THREADS - 1) / VEIL_CUDA_THREADS;
    if (b == 0)
        b = 1;
    return b > 65535 ? 65535u : (unsigned)b;
}

#ifdef VEIL_USE_CUDA
/* A launch that fails means a broken device or driver, not bad input (the submit helpers checked
 * everything): StarPU's convention is to report and abort. */
#define VEIL_CUDA_BODY_CHECK(expr)                                                                 \
    do {                                                                                           \
        cudaError_t veil_cuda_status_ = (expr);                                                    \
        if (veil_cuda_status_ != cudaSuccess)                                                      \
            STARPU_CUDA_REPORT_ERROR(veil_cuda_status_);                                           \
    } while (0)
#endif

#endif /* VEIL_CODELETS_CUDA_COMMON_CUH */

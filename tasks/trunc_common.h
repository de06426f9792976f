/*
 * trunc_common.h — element math of the truncation protocol's local step (veil_task_trunc_finish,
 * tasks/beaver_kernels.c), shared by its CPU body and its CUDA body (tasks/cuda/beaver_kernels.cu)
 * so that the CPU protocol tests exercise exactly the arithmetic the GPU runs.
 */
#ifndef VEIL_TASKS_TRUNC_COMMON_H
#define VEIL_TASKS_TRUNC_COMMON_H

#include "codelets/hd_common.h"

#include <stdint.h>

/* The opened value is shifted by 2^62 so that a secret in (-2^62, 2^62) becomes non-negative and
 * its top bit tells whether the masked sum wrapped. */
#define VEIL_TRUNC_OFFSET (UINT64_C(1) << 62)

/*
 * One output word: with c = copen + 2^62, [party0] ((c >> f) - 2^(62-f)) - r_hi +
 * ((1 - c_63) r_63) << (64 - f). p0 is all ones at party 0 and 0 elsewhere; f in [1, 62], so
 * both shifts stay below 64.
 */
static inline VEIL_HD uint64_t veil_trunc_finish_elem(uint64_t copen, uint64_t rhi, uint64_t r63,
                                                      unsigned f, uint64_t p0)
{
    uint64_t c = copen + VEIL_TRUNC_OFFSET;
    uint64_t wrap = ((~c) >> 63) * r63;
    return (((c >> f) - (VEIL_TRUNC_OFFSET >> f)) & p0) - rhi + (wrap << (64 - f));
}

#endif /* VEIL_TASKS_TRUNC_COMMON_H */

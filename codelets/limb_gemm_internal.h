/*
 * limb_gemm_internal.h — the limb-split Z_2^64 GEMM written in plain C (codelets/limb_gemm.c):
 * the same decomposition the GPU body runs with cuBLAS DGEMMs (codelets/cuda/gemm.cu), with a
 * double-precision GEMM loop on the CPU, so that `make check` verifies the arithmetic bit for bit
 * against the exact ring GEMM on machines without a GPU. Not a fast path: the CPU uses
 * veil_gemm_u64.
 */
#ifndef VEIL_LIMB_GEMM_INTERNAL_H
#define VEIL_LIMB_GEMM_INTERNAL_H

#include "codelets/limb_common.h"

#include <stddef.h>
#include <stdint.h>

/**
 * C (=|+=) op(A) * op(B) mod 2^64, with the conventions of veil_gemm_u64 (row-major; op(A) is
 * m x k, A itself or the transpose of the k x m matrix at a; likewise op(B) k x n; leading
 * dimensions at least the row lengths; C must not overlap A or B), computed as 10 limb-pair
 * double GEMMs accumulated per shift level and recombined mod 2^64 (limb_common.h). kchunk is the
 * inner-dimension chunk: 0 means VEIL_LIMB_GEMM_KMAX; larger values are clamped to it (tests
 * pass small ones to exercise the chunking). Returns VEIL_OK, VEIL_ERR_NOMEM if the
 * 4mk + 4kn + 4mn doubles of workspace cannot be allocated (C untouched), VEIL_ERR_RANGE when
 * those sizes overflow size_t. Reentrant.
 */
int veil_limb_gemm_u64(int trans_a, int trans_b, size_t m, size_t n, size_t k, const uint64_t *a,
                       size_t lda, const uint64_t *b, size_t ldb, int accumulate, uint64_t *c,
                       size_t ldc, size_t kchunk);

#endif /* VEIL_LIMB_GEMM_INTERNAL_H */

/*
 * gemm_internal.h — the Z_2^64 matrix product: the CPU kernel (codelets/cpu/gemm.c), the StarPU
 * codelets and their submit helper (codelets/gemm.c). Internal to libveil; never installed.
 *
 * Matrix convention, everywhere in Veil: matrices are row-major. A StarPU matrix handle
 * (starpu_matrix interface) is read as a row-major matrix of `ny` rows and `nx` columns whose
 * rows start `ld` elements apart: StarPU's nx is the contiguous dimension. Register an R x C
 * row-major array p with row stride ld as
 *     starpu_matrix_data_register(&h, STARPU_MAIN_RAM, (uintptr_t)p, ld, C, R, sizeof(uint64_t));
 */
#ifndef VEIL_CODELETS_GEMM_INTERNAL_H
#define VEIL_CODELETS_GEMM_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include <starpu.h>

/**
 * C (=|+=) op(A) * op(B) modulo 2^64, all matrices row-major.
 *
 * op(A) is m x k: A itself (m rows, k columns, row stride lda) when trans_a == 0, or the
 * transpose of the k x m matrix stored at a (row stride lda) when trans_a != 0. op(B) is k x n,
 * likewise with trans_b and ldb. C is m x n with row stride ldc. accumulate != 0 adds the
 * product to C; accumulate == 0 overwrites C (C is then not read, so it may hold anything).
 * Any of m, n, k may be 0 (k == 0 sets C to 0 unless accumulating). Leading dimensions must be
 * at least the row lengths they describe (not checked here: the callers validate). C must not
 * overlap A or B. The result is exact: bit for bit the naive triple loop's.
 *
 * Single-threaded (parallelism comes from StarPU running many tiles at once); reentrant.
 * Uses the AVX-512 microkernel when the CPU has AVX-512F/DQ, else the AVX2 one when it has
 * AVX2, else the portable one; veil_gemm_force_kernel or env
 * VEIL_GEMM_KERNEL=avx512|avx2|generic|unblocked chooses another that the CPU supports. Packs
 * into a per-thread buffer kept for the next call (at most 6.8 MB; freed when the thread exits
 * or by veil_gemm_release_buffers); the AVX-512 and AVX2 kernels read A in place, unpacked, when
 * A is not transposed and C has at most 384 (AVX-512) or 32 (AVX2) columns
 * (veil_gemm_reads_a_in_place). Never fails: if that buffer cannot be allocated it falls back to
 * an unblocked loop (slower, same result).
 */
void veil_gemm_u64(int trans_a, int trans_b, size_t m, size_t n, size_t k, const uint64_t *a,
                   size_t lda, const uint64_t *b, size_t ldb, int accumulate, uint64_t *c,
                   size_t ldc);

/** Whether veil_gemm_u64 with the kernel it would use now reads op(A) in place rather than packing
 *  it (A not transposed, n at most 384 with the AVX-512 kernel, 32 with the AVX2 one), for
 *  tests. */
int veil_gemm_reads_a_in_place(int trans_a, size_t n);

/** on != 0: every later product packs A, as before the in-place path existed (tests compare the
 *  two paths, bench_gemm --conv times them); 0 restores the default. Thread-safe. */
void veil_gemm_pack_a_always(int on);

/** Frees the calling thread's packing buffer now (threads that exit free theirs anyway). */
void veil_gemm_release_buffers(void);

/**
 * Forces the microkernel named "avx512", "avx2" or "generic" (or "unblocked": the fallback loop
 * without packing, for tests) for later calls in every thread, or restores automatic selection
 * (name NULL or "auto"), for tests and benchmarks. Overrides
 * VEIL_GEMM_KERNEL. Returns VEIL_OK, or VEIL_ERR_UNSUPPORTED (nothing changed) when the name is
 * unknown or the CPU cannot run that kernel. Thread-safe (an atomic pointer); a product already
 * running finishes with the kernel it started with.
 */
int veil_gemm_force_kernel(const char *name);

/** veil_gemm_force_kernel("generic") when on != 0, veil_gemm_force_kernel(NULL) otherwise. */
void veil_gemm_force_generic(int on);

/** Name of the kernel veil_gemm_u64 would use now: "avx512", "avx2", "generic", "unblocked". */
const char *veil_gemm_kernel_name(void);

/**
 * The GEMM codelets. Buffers: 0 = A (STARPU_R), 1 = B (STARPU_R), 2 = C; arguments packed
 * with STARPU_VALUE: int trans_a, int trans_b, int accumulate. veil_gemm_cl has C in STARPU_W
 * (overwrite: StarPU need not fetch C's old value); veil_gemm_acc_cl has C in STARPU_RW
 * (accumulate). Both share the history-based perf model "veil_gemm" with a footprint of
 * (m, n, k). Use veil_task_gemm rather than inserting them by hand.
 */
extern struct starpu_codelet veil_gemm_cl;
extern struct starpu_codelet veil_gemm_acc_cl;

/** The CPU body of both GEMM codelets (StarPU signature). */
void veil_gemm_cpu(void *buffers[], void *cl_arg);

/**
 * Submits C (=|+=) op(A) * op(B) as one StarPU task on row-major matrix handles of uint64_t
 * (convention above). Checks that a, b, c are distinct non-NULL matrix handles of 8-byte
 * elements and that op(A) is m x k, op(B) is k x n and C is m x n; returns VEIL_ERR_SHAPE (with a
 * message naming the dimensions) or VEIL_ERR_INVAL before submitting anything when not.
 * accumulate != 0 submits veil_gemm_acc_cl (C read-write), else veil_gemm_cl (C write-only).
 * priority is the StarPU task priority. Returns VEIL_OK once submitted, VEIL_ERR_STARPU if
 * StarPU refuses the task. Asynchronous: the handles' sequential consistency orders the task.
 * Thread-safe as StarPU's task submission is.
 */
int veil_task_gemm(starpu_data_handle_t a, starpu_data_handle_t b, starpu_data_handle_t c,
                   int trans_a, int trans_b, int accumulate, int priority);

#endif

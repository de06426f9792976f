/*
 * cpu/gemm_kernels.h — the microkernels of the CPU Z_2^64 matrix product (cpu/gemm_kernels.c) as
 * the driver (cpu/gemm.c) sees them: each kernel's tile functions, register tile and cache blocks.
 * Internal to libveil; never installed.
 */
#ifndef VEIL_CODELETS_CPU_GEMM_KERNELS_H
#define VEIL_CODELETS_CPU_GEMM_KERNELS_H

#include <stddef.h>
#include <stdint.h>

/*
 * Microkernel: pa is a kc x mr micro-panel of op(A) (mr values per step), pb a kc x nr
 * micro-panel of op(B) (nr values per step), pb aligned for the kernel's vector loads. Computes the
 * mr x nr tile P = pa^T pb and stores C = P (load_c == 0) or C += P (load_c != 0), C row-major with
 * row stride ldc (any alignment).
 */
typedef void (*veil_gemm_ukr_fn)(size_t kc, const uint64_t *pa, const uint64_t *pb, int load_c,
                                 uint64_t *c, size_t ldc);

/* The same for an edge tile: stores only rows [0, rows) and columns [0, cols) of C. */
typedef void (*veil_gemm_edge_fn)(size_t kc, const uint64_t *pa, const uint64_t *pb, int load_c,
                                  uint64_t *c, size_t ldc, size_t rows, size_t cols);

/* The same tile with op(A) read in place instead of from a micro-panel: ar[i] points at row i's
 * first element of the kc slice (A[i][p] = ar[i][p]); rows past `rows` may repeat a valid row. */
typedef void (*veil_gemm_in_place_fn)(size_t kc, const uint64_t *const *ar, const uint64_t *pb,
                                      int load_c, uint64_t *c, size_t ldc, size_t rows,
                                      size_t cols);

struct veil_gemm_kernel {
    const char *name;
    veil_gemm_ukr_fn ukr;
    veil_gemm_edge_fn edge;         /* NULL: the driver computes edge tiles aside with ukr */
    veil_gemm_in_place_fn in_place; /* NULL: A is always packed */
    size_t in_place_cols;           /* the widest C whose A is read in place (measured) */
    size_t mr, nr;                  /* register tile */
    size_t mc, kc, nc;              /* cache blocks: mc a multiple of mr, nc of nr */
};

/* The largest tile of any kernel, for the edge-tile scratch buffer. */
#define VEIL_GEMM_MAX_MR 8
#define VEIL_GEMM_MAX_NR 24

/** The portable kernel (every CPU runs it). */
extern const struct veil_gemm_kernel veil_gemm_kernel_generic;

/** Every kernel, fastest first: AVX-512, AVX2 (x86-64 builds), portable, then the unblocked
 *  fallback (no tile functions: never chosen automatically, forced by tests). */
extern const struct veil_gemm_kernel *const veil_gemm_kernels[];
extern const size_t veil_gemm_nkernels;

/** Whether this CPU runs kr (its instruction set extensions). */
int veil_gemm_cpu_has(const struct veil_gemm_kernel *kr);

#endif

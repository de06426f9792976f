/*
 * cpu/gemm_kernels.c — the microkernels of the CPU Z_2^64 matrix product (the driver, packing and
 * kernel selection are in cpu/gemm.c): AVX-512 (8 exact 64-bit low products per vpmullq) when the
 * CPU has AVX-512F/DQ, AVX2 (64-bit products from 32-bit multiplies) on other x86-64 CPUs that
 * have it, and portable C everywhere else. Wrap-around is the ring's arithmetic, so every kernel
 * is exact and they agree bit for bit.
 */
#include "config.h"
#include "codelets/cpu/gemm_kernels.h"

#include <stddef.h>

#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
#define HAVE_X86_KERNELS 1
#include <immintrin.h>
#else
#define HAVE_X86_KERNELS 0
#endif

/* ---------------------------------------------------------------------------------------------
 * Portable microkernel: 4 x 8, plain C. Unrolling the two inner loops lets the compiler keep the
 * accumulators in registers (x86-64 spills part of them) and vectorise where the target has a
 * 64-bit vector multiply; on x86-64 gcc emits 32 scalar imul per step, 1.7 MACs per cycle
 * measured on Zen 5, twice the rolled loop's read-modify-write of accumulators in memory.
 */
#define GEN_MR 4
#define GEN_NR 8

static void ukr_generic(size_t kc, const uint64_t *restrict pa, const uint64_t *restrict pb,
                        int load_c, uint64_t *restrict c, size_t ldc)
{
    uint64_t acc[GEN_MR][GEN_NR] = {{0}};
    for (size_t p = 0; p < kc; p++) {
#pragma GCC unroll 4
        for (size_t i = 0; i < GEN_MR; i++) {
            uint64_t ai = pa[i];
#pragma GCC unroll 8
            for (size_t j = 0; j < GEN_NR; j++)
                acc[i][j] += ai * pb[j];
        }
        pa += GEN_MR;
        pb += GEN_NR;
    }
    for (size_t i = 0; i < GEN_MR; i++)
        for (size_t j = 0; j < GEN_NR; j++)
            c[i * ldc + j] = (load_c ? c[i * ldc + j] : 0) + acc[i][j];
}

/*
 * Block sizes of the portable kernel: conventional, not tuned. It runs scalar 64-bit multiplies
 * (7 GMAC/s at 4.2 GHz), so it is compute-bound and any blocking that keeps the packed panels in
 * L2 does.
 */
const struct veil_gemm_kernel veil_gemm_kernel_generic = {.name = "generic",
                                                          .ukr = ukr_generic,
                                                          .mr = GEN_MR,
                                                          .nr = GEN_NR,
                                                          .mc = 128,
                                                          .kc = 256,
                                                          .nc = 1536};

#if HAVE_X86_KERNELS
/* ---------------------------------------------------------------------------------------------
 * AVX-512 microkernel: 8 x 24 tile = 24 zmm accumulators; per k step 3 loads of B, 8 broadcast
 * loads of A (vpbroadcastq from memory) and 24 vpmullq + 24 vpaddq. The
 * accumulators' dependency chains are the 1-cycle adds, so 24 independent multiplies per step
 * keep the multipliers busy. On the Zen 5 development machine vpmullq zmm issues 2 per cycle,
 * as vfmadd231pd zmm does (8.4 G instructions/s each at 4.2 GHz, measured with 12 independent
 * registers): the hardware bound of a 64-bit MAC, 67 GMAC/s per core, equals DGEMM's FMA bound,
 * and the extra vpaddq goes to the other vector ports. (On Intel cores vpmullq is 3 uops and
 * the bound is about a third of DGEMM's.)
 */
#define AVX_MR 8
#define AVX_NR 24

/*
 * The tile body, instantiated (always inlined, nv and the masks constant) for full tiles and for
 * right-edge tiles of 1 or 2 vectors. Computes nv column vectors of the 8-row tile and stores
 * rows [0, rows) of them; the last vector's lanes are masked by last_mask. Edge tiles thus write
 * straight into C without computing the padding's vectors. A's values come from the micro-panel
 * pa, or with ar (in place) from ar[i][p]: an instantiation has one of them NULL, a constant, so
 * the test folds away.
 */
__attribute__((target("avx512f,avx512dq"), always_inline)) static inline void
avx512_tile(size_t kc, const uint64_t *restrict pa, const uint64_t *const *ar,
            const uint64_t *restrict pb, int load_c, uint64_t *restrict c, size_t ldc, const int nv,
            size_t rows, __mmask8 last_mask)
{
    __m512i acc[AVX_MR][3];
#pragma GCC unroll 8
    for (int i = 0; i < AVX_MR; i++)
        acc[i][0] = acc[i][1] = acc[i][2] = _mm512_setzero_si512();

    for (size_t p = 0; p < kc; p++) {
        __m512i b[3];
#pragma GCC unroll 3
        for (int j = 0; j < nv; j++)
            b[j] = _mm512_load_si512((const void *)(pb + 8 * j));
#pragma GCC unroll 8
        for (int i = 0; i < AVX_MR; i++) {
            __m512i ai = _mm512_set1_epi64((long long)(ar ? ar[i][p] : pa[p * AVX_MR + i]));
#pragma GCC unroll 3
            for (int j = 0; j < nv; j++)
                acc[i][j] = _mm512_add_epi64(acc[i][j], _mm512_mullo_epi64(ai, b[j]));
        }
        pb += AVX_NR;
    }

#pragma GCC unroll 8
    for (int i = 0; i < AVX_MR; i++) {
        if ((size_t)i >= rows)
            break;
        uint64_t *ci = c + (size_t)i * ldc;
#pragma GCC unroll 3
        for (int j = 0; j < nv; j++) {
            __mmask8 mask = j == nv - 1 ? last_mask : 0xff;
            __m512i v = acc[i][j];
            if (load_c)
                v = _mm512_add_epi64(v, _mm512_maskz_loadu_epi64(mask, ci + 8 * j));
            _mm512_mask_storeu_epi64(ci + 8 * j, mask, v);
        }
    }
}

__attribute__((target("avx512f,avx512dq"))) static void
ukr_avx512(size_t kc, const uint64_t *restrict pa, const uint64_t *restrict pb, int load_c,
           uint64_t *restrict c, size_t ldc)
{
    avx512_tile(kc, pa, NULL, pb, load_c, c, ldc, 3, AVX_MR, 0xff);
}

/* A tile of any width up to 24 columns: the vectors it needs, the last one masked. */
__attribute__((target("avx512f,avx512dq"), always_inline)) static inline void
avx512_tile_cols(size_t kc, const uint64_t *restrict pa, const uint64_t *const *ar,
                 const uint64_t *restrict pb, int load_c, uint64_t *restrict c, size_t ldc,
                 size_t rows, size_t cols)
{
    __mmask8 last = (__mmask8)(0xffu >> (7 - (cols - 1) % 8));
    if (cols <= 8)
        avx512_tile(kc, pa, ar, pb, load_c, c, ldc, 1, rows, last);
    else if (cols <= 16)
        avx512_tile(kc, pa, ar, pb, load_c, c, ldc, 2, rows, last);
    else
        avx512_tile(kc, pa, ar, pb, load_c, c, ldc, 3, rows, last);
}

__attribute__((target("avx512f,avx512dq"))) static void
edge_avx512(size_t kc, const uint64_t *restrict pa, const uint64_t *restrict pb, int load_c,
            uint64_t *restrict c, size_t ldc, size_t rows, size_t cols)
{
    avx512_tile_cols(kc, pa, NULL, pb, load_c, c, ldc, rows, cols);
}

__attribute__((target("avx512f,avx512dq"))) static void
in_place_avx512(size_t kc, const uint64_t *const *ar, const uint64_t *restrict pb, int load_c,
                uint64_t *restrict c, size_t ldc, size_t rows, size_t cols)
{
    avx512_tile_cols(kc, NULL, ar, pb, load_c, c, ldc, rows, cols);
}

/*
 * Cache blocks, measured (bench/README.md; 1024^2 and 2048^2, 4.2 GHz Zen 5, 48 KiB L1d, 1 MiB
 * L2): a deep kc matters most. Each tile loads and stores its 8 x 24 block of C once per kc
 * slice, and at kc = 128 that traffic held the kernel near 38 GMAC/s; kc = 512 to 1024 gave
 * 53-55 GMAC/s whatever mc (64..192) and nc (1536..6144). So kc = 512: the 8 x kc panel of A
 * (32 KiB) stays in L1, the kc x 24 micro-panels of B (96 KiB each) and the mc x kc block of A
 * (128 x 512: 512 KiB) stream from L2, and the kc x nc panel of B (6 MiB) lives in L3; the
 * smallest measured nc keeps the per-thread packing buffer small. A is read in place up to 16
 * column tiles (cpu/gemm.c, veil_gemm_reads_a_in_place).
 */
static const struct veil_gemm_kernel kernel_avx512 = {.name = "avx512",
                                                      .ukr = ukr_avx512,
                                                      .edge = edge_avx512,
                                                      .in_place = in_place_avx512,
                                                      .in_place_cols = 16 * AVX_NR,
                                                      .mr = AVX_MR,
                                                      .nr = AVX_NR,
                                                      .mc = 128,
                                                      .kc = 512,
                                                      .nc = 1536};

/* ---------------------------------------------------------------------------------------------
 * AVX2 microkernel, for x86-64 CPUs without AVX-512DQ. AVX2 has no 64-bit low multiply; with
 * a = ah 2^32 + al and b = bh 2^32 + bl, a b mod 2^64 = al bl + ((al bh + ah bl) mod 2^32) 2^32.
 * vpmuludq gives al bl exactly; the cross terms only matter mod 2^32, so one vpmulld of a with b's
 * halves swapped gives al bh in the low and ah bl in the high 32-bit half of each lane. These are
 * summed over k with 32-bit adds (no carry from one half into the other), and at the end
 * (low + high) mod 2^32 goes into the upper half. So 2 multiplies per 4 products instead of the
 * textbook 3 vpmuludq (measured in L1 on Zen 5: 12.6 against 8.1 GMAC/s). 4 x 4 tile: 8
 * accumulators in the 16 ymm registers; 6 x 4 spilled and ran at 8.8.
 */
#define AVX2_MR 4
#define AVX2_NR 4

/*
 * The tile body, instantiated (always inlined) for full tiles from micro-panels (rows and cols
 * constant 4) and for tiles reading A in place (ar: row i's values from ar[i][p]; rows past
 * `rows` repeat a valid row and are not stored; columns past `cols` are masked off at the store).
 */
__attribute__((target("avx2"), always_inline)) static inline void
avx2_tile(size_t kc, const uint64_t *restrict pa, const uint64_t *const *ar,
          const uint64_t *restrict pb, int load_c, uint64_t *restrict c, size_t ldc, size_t rows,
          size_t cols)
{
    __m256i lo[AVX2_MR], cross[AVX2_MR];
#pragma GCC unroll 4
    for (int i = 0; i < AVX2_MR; i++)
        lo[i] = cross[i] = _mm256_setzero_si256();

    for (size_t p = 0; p < kc; p++) {
        __m256i b = _mm256_load_si256((const __m256i *)pb);
        __m256i b_swapped = _mm256_shuffle_epi32(b, 0xb1); /* (bh, bl) in each lane */
#pragma GCC unroll 4
        for (int i = 0; i < AVX2_MR; i++) {
            __m256i a = _mm256_set1_epi64x((long long)(ar ? ar[i][p] : pa[p * AVX2_MR + i]));
            lo[i] = _mm256_add_epi64(lo[i], _mm256_mul_epu32(a, b));
            cross[i] = _mm256_add_epi32(cross[i], _mm256_mullo_epi32(a, b_swapped));
        }
        pb += AVX2_NR;
    }

    const __m256i high_half = _mm256_set1_epi64x((long long)0xffffffff00000000u);
    const __m256i mask =
        _mm256_cmpgt_epi64(_mm256_set1_epi64x((long long)cols), _mm256_setr_epi64x(0, 1, 2, 3));
#pragma GCC unroll 4
    for (int i = 0; i < AVX2_MR; i++) {
        if ((size_t)i >= rows)
            break;
        /* Upper half of cross + (cross << 32) is (low + high) mod 2^32; its lower half goes. */
        __m256i hi = _mm256_add_epi32(cross[i], _mm256_slli_epi64(cross[i], 32));
        __m256i v = _mm256_add_epi64(lo[i], _mm256_and_si256(hi, high_half));
        long long *ci = (long long *)(c + (size_t)i * ldc);
        if (cols == AVX2_NR) {
            if (load_c)
                v = _mm256_add_epi64(v, _mm256_loadu_si256((const __m256i *)ci));
            _mm256_storeu_si256((__m256i *)ci, v);
        } else {
            if (load_c)
                v = _mm256_add_epi64(v, _mm256_maskload_epi64(ci, mask));
            _mm256_maskstore_epi64(ci, mask, v);
        }
    }
}

__attribute__((target("avx2"))) static void ukr_avx2(size_t kc, const uint64_t *restrict pa,
                                                     const uint64_t *restrict pb, int load_c,
                                                     uint64_t *restrict c, size_t ldc)
{
    avx2_tile(kc, pa, NULL, pb, load_c, c, ldc, AVX2_MR, AVX2_NR);
}

__attribute__((target("avx2"))) static void in_place_avx2(size_t kc, const uint64_t *const *ar,
                                                          const uint64_t *restrict pb, int load_c,
                                                          uint64_t *restrict c, size_t ldc,
                                                          size_t rows, size_t cols)
{
    avx2_tile(kc, NULL, ar, pb, load_c, c, ldc, rows, cols);
}

/* Cache blocks: the 4 x kc and kc x 4 micro-panels (8 KiB each at kc = 256) stay in L1, the
 * mc x kc block of A (256 KiB) in L2. Measured flat: mc/kc = 64..256/256..1024 all gave
 * 10.5-11 GMAC/s at 512^3 and 1024^3. A is read in place up to 8 column tiles (32 columns):
 * on the 2-vCPU AMD EPYC (Zen 3) VM, best of 7 timings on the thread's CPU clock, packed
 * against in place, 512 x n x 2304: n = 4 1.20 -> 0.63 ms, 16 3.03 -> 2.72, 32 6.13 -> 5.87,
 * 48 7.78 -> 7.86, 64 9.90 -> 10.08; 128 x n x 576 and 256 x n x 1152 alike (1.8x at n = 4,
 * 1.04x at 32, 0.96-0.98x from 64 up). */
static const struct veil_gemm_kernel kernel_avx2 = {.name = "avx2",
                                                    .ukr = ukr_avx2,
                                                    .in_place = in_place_avx2,
                                                    .in_place_cols = 8 * AVX2_NR,
                                                    .mr = AVX2_MR,
                                                    .nr = AVX2_NR,
                                                    .mc = 128,
                                                    .kc = 256,
                                                    .nc = 1536};

int veil_gemm_cpu_has(const struct veil_gemm_kernel *kr)
{
    __builtin_cpu_init();
    if (kr == &kernel_avx512)
        return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq");
    if (kr == &kernel_avx2)
        return __builtin_cpu_supports("avx2");
    return 1;
}
#else
/* Without the x86 kernels, every kernel listed is portable C. */
int veil_gemm_cpu_has(const struct veil_gemm_kernel *kr)
{
    (void)kr;
    return 1;
}
#endif

/* Not a microkernel: the unblocked loop veil_gemm_u64 falls back to when memory is short, listed
 * (after generic, so never chosen automatically) so that tests can force and check it. */
static const struct veil_gemm_kernel kernel_unblocked = {.name = "unblocked"};

const struct veil_gemm_kernel *const veil_gemm_kernels[] = {
#if HAVE_X86_KERNELS
    &kernel_avx512,
    &kernel_avx2,
#endif
    &veil_gemm_kernel_generic,
    &kernel_unblocked,
};
const size_t veil_gemm_nkernels = sizeof veil_gemm_kernels / sizeof *veil_gemm_kernels;

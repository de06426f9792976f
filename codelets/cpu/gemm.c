/*
 * cpu/gemm.c — the CPU kernel of the Z_2^64 matrix product, C (=|+=) op(A) * op(B) mod 2^64.
 *
 * The structure is BLIS's: three cache-blocking loops (nc columns of B, kc-deep slices of the
 * inner dimension, mc rows of A), each block packed into contiguous micro-panels (zero-padded
 * to whole tiles, transposes resolved while packing), then two register-blocking loops that
 * call a microkernel computing an mr x nr tile of C in registers over the kc slice. Three
 * microkernels share the driver, chosen at run time: AVX-512 (8 exact 64-bit low products per
 * vpmullq) when the CPU has AVX-512F/DQ, AVX2 (64-bit products from 32-bit multiplies) on
 * other x86-64 CPUs that have it, and portable C everywhere else.
 * Wrap-around is the ring's arithmetic, so every path is exact and they agree bit for bit.
 */
#include "config.h"
#include "codelets/gemm_internal.h"
#include "base/base_internal.h"
#include "base/env.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
#define HAVE_X86_KERNELS 1
#include <immintrin.h>
#else
#define HAVE_X86_KERNELS 0
#endif

/*
 * Microkernel: pa is a kc x mr micro-panel of op(A) (mr values per step), pb a kc x nr
 * micro-panel of op(B) (nr values per step), pb aligned for the kernel's vector loads. Computes the
 * mr x nr tile P = pa^T pb and stores C = P (load_c == 0) or C += P (load_c != 0), C row-major with
 * row stride ldc (any alignment).
 */
typedef void (*ukernel_fn)(size_t kc, const uint64_t *pa, const uint64_t *pb, int load_c,
                           uint64_t *c, size_t ldc);

/* The same for an edge tile: stores only rows [0, rows) and columns [0, cols) of C. */
typedef void (*edge_fn)(size_t kc, const uint64_t *pa, const uint64_t *pb, int load_c, uint64_t *c,
                        size_t ldc, size_t rows, size_t cols);

struct kernel {
    const char *name;
    ukernel_fn ukr;
    edge_fn edge;      /* NULL: the driver computes edge tiles aside with ukr */
    size_t mr, nr;     /* register tile */
    size_t mc, kc, nc; /* cache blocks: mc a multiple of mr, nc of nr */
};

/* The largest tile of any kernel, for the edge-tile scratch buffer. */
#define MAX_MR 8
#define MAX_NR 24

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
static const struct kernel kernel_generic = {.name = "generic",
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
 * straight into C without computing the padding's vectors.
 */
__attribute__((target("avx512f,avx512dq"), always_inline)) static inline void
avx512_tile(size_t kc, const uint64_t *restrict pa, const uint64_t *restrict pb, int load_c,
            uint64_t *restrict c, size_t ldc, const int nv, size_t rows, __mmask8 last_mask)
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
            __m512i ai = _mm512_set1_epi64((long long)pa[i]);
#pragma GCC unroll 3
            for (int j = 0; j < nv; j++)
                acc[i][j] = _mm512_add_epi64(acc[i][j], _mm512_mullo_epi64(ai, b[j]));
        }
        pa += AVX_MR;
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
    avx512_tile(kc, pa, pb, load_c, c, ldc, 3, AVX_MR, 0xff);
}

__attribute__((target("avx512f,avx512dq"))) static void
edge_avx512(size_t kc, const uint64_t *restrict pa, const uint64_t *restrict pb, int load_c,
            uint64_t *restrict c, size_t ldc, size_t rows, size_t cols)
{
    __mmask8 last = (__mmask8)(0xffu >> (7 - (cols - 1) % 8));
    if (cols <= 8)
        avx512_tile(kc, pa, pb, load_c, c, ldc, 1, rows, last);
    else if (cols <= 16)
        avx512_tile(kc, pa, pb, load_c, c, ldc, 2, rows, last);
    else
        avx512_tile(kc, pa, pb, load_c, c, ldc, 3, rows, last);
}

/*
 * Cache blocks, measured (bench/README.md; 1024^2 and 2048^2, 4.2 GHz Zen 5, 48 KiB L1d, 1 MiB
 * L2): a deep kc matters most. Each tile loads and stores its 8 x 24 block of C once per kc
 * slice, and at kc = 128 that traffic held the kernel near 38 GMAC/s; kc = 512 to 1024 gave
 * 53-55 GMAC/s whatever mc (64..192) and nc (1536..6144). So kc = 512: the 8 x kc panel of A
 * (32 KiB) stays in L1, the kc x 24 micro-panels of B (96 KiB each) and the mc x kc block of A
 * (128 x 512: 512 KiB) stream from L2, and the kc x nc panel of B (6 MiB) lives in L3; the
 * smallest measured nc keeps the per-thread packing buffer small.
 */
static const struct kernel kernel_avx512 = {.name = "avx512",
                                            .ukr = ukr_avx512,
                                            .edge = edge_avx512,
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

__attribute__((target("avx2"))) static void ukr_avx2(size_t kc, const uint64_t *restrict pa,
                                                     const uint64_t *restrict pb, int load_c,
                                                     uint64_t *restrict c, size_t ldc)
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
            __m256i a = _mm256_set1_epi64x((long long)pa[i]);
            lo[i] = _mm256_add_epi64(lo[i], _mm256_mul_epu32(a, b));
            cross[i] = _mm256_add_epi32(cross[i], _mm256_mullo_epi32(a, b_swapped));
        }
        pa += AVX2_MR;
        pb += AVX2_NR;
    }

    const __m256i high_half = _mm256_set1_epi64x((long long)0xffffffff00000000u);
#pragma GCC unroll 4
    for (int i = 0; i < AVX2_MR; i++) {
        /* Upper half of cross + (cross << 32) is (low + high) mod 2^32; its lower half goes. */
        __m256i hi = _mm256_add_epi32(cross[i], _mm256_slli_epi64(cross[i], 32));
        __m256i v = _mm256_add_epi64(lo[i], _mm256_and_si256(hi, high_half));
        __m256i *ci = (__m256i *)(c + (size_t)i * ldc);
        if (load_c)
            v = _mm256_add_epi64(v, _mm256_loadu_si256(ci));
        _mm256_storeu_si256(ci, v);
    }
}

/* Cache blocks: the 4 x kc and kc x 4 micro-panels (8 KiB each at kc = 256) stay in L1, the
 * mc x kc block of A (256 KiB) in L2. Measured flat: mc/kc = 64..256/256..1024 all gave
 * 10.5-11 GMAC/s at 512^3 and 1024^3. */
static const struct kernel kernel_avx2 = {.name = "avx2",
                                          .ukr = ukr_avx2,
                                          .mr = AVX2_MR,
                                          .nr = AVX2_NR,
                                          .mc = 128,
                                          .kc = 256,
                                          .nc = 1536};

static int cpu_has(const struct kernel *kr)
{
    __builtin_cpu_init();
    if (kr == &kernel_avx512)
        return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq");
    if (kr == &kernel_avx2)
        return __builtin_cpu_supports("avx2");
    return 1;
}
#else
/* Without the x86 kernels, every kernel listed below is portable C. */
static int cpu_has(const struct kernel *kr)
{
    (void)kr;
    return 1;
}
#endif

/* ---------------------------------------------------------------------------------------------
 * Kernel selection: the fastest the CPU runs, unless forced (tests cover every path; benchmarks
 * compare them).
 */
/* Not a microkernel: the unblocked loop veil_gemm_u64 falls back to when memory is short, listed
 * (after generic, so never chosen automatically) so that tests can force and check it. */
static const struct kernel kernel_unblocked = {.name = "unblocked"};

static const struct kernel *const kernels[] = {
#if HAVE_X86_KERNELS
    &kernel_avx512,
    &kernel_avx2,
#endif
    &kernel_generic,
    &kernel_unblocked,
};
#define NKERNELS (sizeof kernels / sizeof *kernels)

static _Atomic(const struct kernel *) forced; /* NULL: automatic */
static pthread_once_t env_once = PTHREAD_ONCE_INIT;
static const struct kernel *env_kernel;

static const struct kernel *find_kernel(const char *name)
{
    for (size_t i = 0; i < NKERNELS; i++)
        if (strcmp(kernels[i]->name, name) == 0 && cpu_has(kernels[i]))
            return kernels[i];
    return NULL;
}

static void read_env(void)
{
    const char *s = veil_env_get("VEIL_GEMM_KERNEL");
    if (s && *s && strcmp(s, "auto") != 0) {
        env_kernel = find_kernel(s);
        if (!env_kernel)
            VEIL_LOG_WARN("VEIL_GEMM_KERNEL=%s: no such GEMM kernel on this CPU (avx512, avx2, "
                          "generic, unblocked); using the fastest available",
                          s);
    }
}

int veil_gemm_force_kernel(const char *name)
{
    if (!name || strcmp(name, "auto") == 0) {
        atomic_store(&forced, NULL);
        return VEIL_OK;
    }
    const struct kernel *kr = find_kernel(name);
    if (!kr)
        return veil_error(VEIL_ERR_UNSUPPORTED,
                          "gemm: kernel '%s' is unknown or not supported by this CPU", name);
    atomic_store(&forced, kr);
    return VEIL_OK;
}

void veil_gemm_force_generic(int on)
{
    atomic_store(&forced, on ? &kernel_generic : NULL);
}

static const struct kernel *select_kernel(void)
{
    const struct kernel *kr = atomic_load_explicit(&forced, memory_order_relaxed);
    if (kr)
        return kr;
    pthread_once(&env_once, read_env);
    if (env_kernel)
        return env_kernel;
    for (size_t i = 0; i < NKERNELS; i++)
        if (cpu_has(kernels[i]))
            return kernels[i];
    return &kernel_generic;
}

const char *veil_gemm_kernel_name(void)
{
    return select_kernel()->name;
}

/* ---------------------------------------------------------------------------------------------
 * Packing. op(A)[i][p] and op(B)[p][j] resolve the transposes here, so the microkernels see one
 * layout. Rows or columns past the matrix edge are packed as zeros: they add nothing to the
 * tile, and the driver discards the padded part of an edge tile.
 */

/* Packs op(A)[i0 .. i0+mb) x [p0 .. p0+kb) as micro-panels of mr rows:
 * pa[(i / mr) * kb * mr + p * mr + i % mr] = op(A)[i0 + i][p0 + p]. */
static void pack_a(size_t mr, int trans, const uint64_t *a, size_t lda, size_t i0, size_t mb,
                   size_t p0, size_t kb, uint64_t *restrict pa)
{
    for (size_t ir = 0; ir < mb; ir += mr) {
        size_t rows = mb - ir < mr ? mb - ir : mr;
        if (!trans) {
            /* p outer: contiguous writes, mr read streams (the other order, one row at a time,
             * made packing 6% of a 2048^3 product instead of 3.6%). */
            const uint64_t *src = a + (i0 + ir) * lda + p0;
            for (size_t p = 0; p < kb; p++)
                for (size_t r = 0; r < rows; r++)
                    pa[p * mr + r] = src[r * lda + p];
        } else {
            for (size_t p = 0; p < kb; p++) {
                const uint64_t *src = a + (p0 + p) * lda + i0 + ir;
                for (size_t r = 0; r < rows; r++)
                    pa[p * mr + r] = src[r];
            }
        }
        for (size_t r = rows; r < mr; r++)
            for (size_t p = 0; p < kb; p++)
                pa[p * mr + r] = 0;
        pa += kb * mr;
    }
}

/* Packs op(B)[p0 .. p0+kb) x [j0 .. j0+nb) as micro-panels of nr columns. */
static void pack_b(size_t nr, int trans, const uint64_t *b, size_t ldb, size_t p0, size_t kb,
                   size_t j0, size_t nb, uint64_t *restrict pb)
{
    for (size_t jr = 0; jr < nb; jr += nr) {
        size_t cols = nb - jr < nr ? nb - jr : nr;
        if (!trans) {
            for (size_t p = 0; p < kb; p++) {
                const uint64_t *src = b + (p0 + p) * ldb + j0 + jr;
                for (size_t j = 0; j < cols; j++)
                    pb[p * nr + j] = src[j];
            }
        } else {
            for (size_t j = 0; j < cols; j++) {
                const uint64_t *src = b + (j0 + jr + j) * ldb + p0;
                for (size_t p = 0; p < kb; p++)
                    pb[p * nr + j] = src[p];
            }
        }
        for (size_t p = 0; p < kb; p++)
            for (size_t j = cols; j < nr; j++)
                pb[p * nr + j] = 0;
        pb += kb * nr;
    }
}

/* ---------------------------------------------------------------------------------------------
 * Packing buffers: one per thread, grown on demand and kept until the thread exits (StarPU
 * workers live as long as StarPU). Allocating them per call cost up to a third of the time of
 * a 128^3 product (glibc may serve blocks of 128 KiB and up by mmap, page faults included) and
 * made the timings depend on what ran before. At most (mc kc + kc nc) words: 6.8 MB for the
 * AVX-512 kernel, less for the others.
 */
struct pack_cache {
    size_t words;
    uint64_t *data;
};

static pthread_once_t pack_once = PTHREAD_ONCE_INIT;
static pthread_key_t pack_key;
static int pack_key_ok;

static void pack_cache_free(void *p)
{
    struct pack_cache *pc = p;
    if (pc) {
        veil_aligned_free(pc->data);
        free(pc);
    }
}

static void pack_key_create(void)
{
    pack_key_ok = pthread_key_create(&pack_key, pack_cache_free) == 0;
}

/* The calling thread's buffer of at least `words` words, or NULL when memory is short. */
static uint64_t *pack_buffer(size_t words)
{
    pthread_once(&pack_once, pack_key_create);
    if (!pack_key_ok)
        return NULL;
    struct pack_cache *pc = pthread_getspecific(pack_key);
    if (!pc) {
        pc = calloc(1, sizeof *pc);
        if (!pc)
            return NULL;
        if (pthread_setspecific(pack_key, pc) != 0) {
            free(pc);
            return NULL;
        }
    }
    if (pc->words < words) {
        veil_aligned_free(pc->data);
        pc->data = veil_aligned_alloc(words * sizeof *pc->data);
        pc->words = pc->data ? words : 0;
    }
    return pc->data;
}

void veil_gemm_release_buffers(void)
{
    pthread_once(&pack_once, pack_key_create);
    if (!pack_key_ok)
        return;
    pack_cache_free(pthread_getspecific(pack_key));
    pthread_setspecific(pack_key, NULL);
}

/* ---------------------------------------------------------------------------------------------
 * Drivers.
 */

/* The unblocked product, used only when the packing buffer cannot be allocated (or when forced
 * by name, for tests). */
static void gemm_direct(int trans_a, int trans_b, size_t m, size_t n, size_t k, const uint64_t *a,
                        size_t lda, const uint64_t *b, size_t ldb, int accumulate, uint64_t *c,
                        size_t ldc)
{
    for (size_t i = 0; i < m; i++) {
        for (size_t j = 0; j < n; j++) {
            uint64_t s = accumulate ? c[i * ldc + j] : 0;
            for (size_t p = 0; p < k; p++) {
                uint64_t x = trans_a ? a[p * lda + i] : a[i * lda + p];
                uint64_t y = trans_b ? b[j * ldb + p] : b[p * ldb + j];
                s += x * y;
            }
            c[i * ldc + j] = s;
        }
    }
}

static size_t min_sz(size_t x, size_t y)
{
    return x < y ? x : y;
}

static size_t round_up(size_t x, size_t to)
{
    return (x + to - 1) / to * to;
}

void veil_gemm_u64(int trans_a, int trans_b, size_t m, size_t n, size_t k, const uint64_t *a,
                   size_t lda, const uint64_t *b, size_t ldb, int accumulate, uint64_t *c,
                   size_t ldc)
{
    if (m == 0 || n == 0)
        return;
    if (k == 0) {
        if (!accumulate)
            for (size_t i = 0; i < m; i++)
                memset(c + i * ldc, 0, n * sizeof *c);
        return;
    }

    const struct kernel *kr = select_kernel();
    if (!kr->ukr) {
        gemm_direct(trans_a, trans_b, m, n, k, a, lda, b, ldb, accumulate, c, ldc);
        return;
    }
    size_t mr = kr->mr, nr = kr->nr;
    size_t kc_max = min_sz(k, kr->kc);
    size_t mc_max = min_sz(round_up(m, mr), kr->mc);
    size_t nc_max = min_sz(round_up(n, nr), kr->nc);
    /* A's block first, then B's panel at the next 64-byte boundary. */
    size_t a_words = round_up(mc_max * kc_max, 8);
    uint64_t *pa = pack_buffer(a_words + kc_max * nc_max);
    if (!pa) {
        gemm_direct(trans_a, trans_b, m, n, k, a, lda, b, ldb, accumulate, c, ldc);
        return;
    }
    uint64_t *pb = pa + a_words;
    _Alignas(64) uint64_t edge[MAX_MR * MAX_NR];

    for (size_t jc = 0; jc < n; jc += kr->nc) {
        size_t nb = min_sz(kr->nc, n - jc);
        for (size_t pc = 0; pc < k; pc += kr->kc) {
            size_t kb = min_sz(kr->kc, k - pc);
            /* The first slice overwrites C unless the caller accumulates; later ones add. */
            int load_c = accumulate || pc > 0;
            pack_b(nr, trans_b, b, ldb, pc, kb, jc, nb, pb);
            for (size_t ic = 0; ic < m; ic += kr->mc) {
                size_t mb = min_sz(kr->mc, m - ic);
                pack_a(mr, trans_a, a, lda, ic, mb, pc, kb, pa);
                for (size_t jr = 0; jr < nb; jr += nr) {
                    size_t cols = min_sz(nr, nb - jr);
                    for (size_t ir = 0; ir < mb; ir += mr) {
                        size_t rows = min_sz(mr, mb - ir);
                        uint64_t *ct = c + (ic + ir) * ldc + jc + jr;
                        const uint64_t *pat = pa + ir * kb, *pbt = pb + jr * kb;
                        if (rows == mr && cols == nr) {
                            kr->ukr(kb, pat, pbt, load_c, ct, ldc);
                            continue;
                        }
                        if (kr->edge) {
                            kr->edge(kb, pat, pbt, load_c, ct, ldc, rows, cols);
                            continue;
                        }
                        /* Edge tile: compute the padded tile aside, keep its valid part. */
                        kr->ukr(kb, pat, pbt, 0, edge, nr);
                        for (size_t i = 0; i < rows; i++)
                            for (size_t j = 0; j < cols; j++)
                                ct[i * ldc + j] = (load_c ? ct[i * ldc + j] : 0) + edge[i * nr + j];
                    }
                }
            }
        }
    }
}

/*
 * cpu/gemm.c — the CPU Z_2^64 matrix product, C (=|+=) op(A) * op(B) mod 2^64: kernel selection,
 * packing and the driver; the microkernels are in cpu/gemm_kernels.c.
 *
 * The structure is BLIS's: three cache-blocking loops (nc columns of B, kc-deep slices of the
 * inner dimension, mc rows of A), each block packed into contiguous micro-panels (zero-padded
 * to whole tiles, transposes resolved while packing), then two register-blocking loops that
 * call a microkernel computing an mr x nr tile of C in registers over the kc slice. A product
 * with few columns reads A in place instead of packing it (veil_gemm_reads_a_in_place). The
 * kernel is chosen at run time, the fastest the CPU has; every path is exact and they agree bit
 * for bit.
 */
#include "config.h"
#include "codelets/gemm_internal.h"
#include "codelets/cpu/gemm_kernels.h"
#include "base/base_internal.h"
#include "base/env.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------------------------------------
 * Kernel selection: the fastest the CPU runs, unless forced (tests cover every path; benchmarks
 * compare them).
 */

static _Atomic(const struct veil_gemm_kernel *) forced; /* NULL: automatic */
static pthread_once_t env_once = PTHREAD_ONCE_INIT;
static const struct veil_gemm_kernel *env_kernel;

static const struct veil_gemm_kernel *find_kernel(const char *name)
{
    for (size_t i = 0; i < veil_gemm_nkernels; i++)
        if (strcmp(veil_gemm_kernels[i]->name, name) == 0 &&
            veil_gemm_cpu_has(veil_gemm_kernels[i]))
            return veil_gemm_kernels[i];
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
    const struct veil_gemm_kernel *kr = find_kernel(name);
    if (!kr)
        return veil_error(VEIL_ERR_UNSUPPORTED,
                          "gemm: kernel '%s' is unknown or not supported by this CPU", name);
    atomic_store(&forced, kr);
    return VEIL_OK;
}

void veil_gemm_force_generic(int on)
{
    atomic_store(&forced, on ? &veil_gemm_kernel_generic : NULL);
}

static const struct veil_gemm_kernel *select_kernel(void)
{
    const struct veil_gemm_kernel *kr = atomic_load_explicit(&forced, memory_order_relaxed);
    if (kr)
        return kr;
    pthread_once(&env_once, read_env);
    if (env_kernel)
        return env_kernel;
    for (size_t i = 0; i < veil_gemm_nkernels; i++)
        if (veil_gemm_cpu_has(veil_gemm_kernels[i]))
            return veil_gemm_kernels[i];
    return &veil_gemm_kernel_generic;
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

/* dst[0 .. n) = src[0 .. n): a constant-size copy for the kernels' tile widths (inlined as a few
 * vector moves), a loop otherwise. A loop over a run-time count compiles to a libc memmove call
 * per row: for the AVX2 kernel's 4-word rows that call was 7 % of LeNet-5's batch-100 samples. */
static inline void copy_words(uint64_t *restrict dst, const uint64_t *restrict src, size_t n)
{
    switch (n) {
    case 4:
        memcpy(dst, src, 4 * sizeof *dst);
        return;
    case 8:
        memcpy(dst, src, 8 * sizeof *dst);
        return;
    case 24:
        memcpy(dst, src, 24 * sizeof *dst);
        return;
    default:
        for (size_t j = 0; j < n; j++)
            dst[j] = src[j];
    }
}

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
            for (size_t p = 0; p < kb; p++)
                copy_words(pa + p * mr, a + (p0 + p) * lda + i0 + ir, rows);
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
            for (size_t p = 0; p < kb; p++)
                copy_words(pb + p * nr, b + (p0 + p) * ldb + j0 + jr, cols);
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

/*
 * Whether the product reads op(A) in place (the kernel's in-place tile) instead of packing it. The
 * packing of A costs a copy of every block of A per product, amortised over the product's column
 * tiles: a convolution's weights (A: out channels x in channels x 3 x 3) against a deep layer's few
 * output positions (VGG16 at CIFAR-10 shapes: n = 16 or 4 per image) spent more time packing A
 * than multiplying. Read in place, each micro-panel of A streams from 8 rows of A once per
 * column tile. Measured on the 2-vCPU Intel Xeon (AVX-512) VM, best of 3 x 7 timings on the
 * thread's CPU clock: 512 x 16 x 4608 5.27 -> 3.76 ms, 512 x 4 x 4608 3.59 -> 2.07 ms,
 * 256 x 64 x 2304 4.06 -> 3.64 ms, 0-3 % faster at 128 x 288..384 x 1152, and 0-12 % slower
 * from n = 512 (22 column tiles) up, where each micro-panel of A serves many tiles. So each
 * kernel with an in-place tile reads A in place up to the width measured for it (in_place_cols:
 * AVX-512 16 column tiles, AVX2 8; bench_gemm --conv, bench/README.md). A transposed A (its rows
 * are A's columns) is always packed.
 */

static atomic_int pack_a_always; /* tests and benchmarks: no in-place reading of A */

void veil_gemm_pack_a_always(int on)
{
    atomic_store(&pack_a_always, on != 0);
}

static int reads_a_in_place(const struct veil_gemm_kernel *kr, int trans_a, size_t n)
{
    return kr->in_place && !trans_a && n <= kr->in_place_cols &&
           !atomic_load_explicit(&pack_a_always, memory_order_relaxed);
}

int veil_gemm_reads_a_in_place(int trans_a, size_t n)
{
    return reads_a_in_place(select_kernel(), trans_a, n);
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

    const struct veil_gemm_kernel *kr = select_kernel();
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
    _Alignas(64) uint64_t edge[VEIL_GEMM_MAX_MR * VEIL_GEMM_MAX_NR];
    const int in_place = reads_a_in_place(kr, trans_a, n);

    for (size_t jc = 0; jc < n; jc += kr->nc) {
        size_t nb = min_sz(kr->nc, n - jc);
        for (size_t pc = 0; pc < k; pc += kr->kc) {
            size_t kb = min_sz(kr->kc, k - pc);
            /* The first slice overwrites C unless the caller accumulates; later ones add. */
            int load_c = accumulate || pc > 0;
            pack_b(nr, trans_b, b, ldb, pc, kb, jc, nb, pb);
            for (size_t ic = 0; ic < m; ic += kr->mc) {
                size_t mb = min_sz(kr->mc, m - ic);
                if (!in_place)
                    pack_a(mr, trans_a, a, lda, ic, mb, pc, kb, pa);
                for (size_t jr = 0; jr < nb; jr += nr) {
                    size_t cols = min_sz(nr, nb - jr);
                    for (size_t ir = 0; ir < mb; ir += mr) {
                        size_t rows = min_sz(mr, mb - ir);
                        uint64_t *ct = c + (ic + ir) * ldc + jc + jr;
                        const uint64_t *pat = pa + ir * kb, *pbt = pb + jr * kb;
                        if (in_place) {
                            const uint64_t *ar[VEIL_GEMM_MAX_MR];
                            for (size_t i = 0; i < mr; i++)
                                ar[i] = a + (ic + ir + (i < rows ? i : 0)) * lda + pc;
                            kr->in_place(kb, ar, pbt, load_c, ct, ldc, rows, cols);
                            continue;
                        }
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

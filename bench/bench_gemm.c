/*
 * bench_gemm.c — speed of the Z_2^64 matrix product on one core: multiply-adds per second
 * (GMAC/s) of a naive triple loop, of veil_gemm_u64 with each of its microkernels (AVX-512,
 * AVX2, portable C; "skipped" when the CPU lacks one), and of OpenBLAS's DGEMM on the same shapes
 * as the yardstick (when configure found OpenBLAS). Everything runs single-threaded (OpenBLAS is
 * set to one thread). Each figure is the best of several timed batches of calls after one warm-up
 * call. Prints a markdown table (bench/README.md).
 *
 * Usage: bench_gemm [--wall] [MAX_SIZE]
 *        bench_gemm [--wall] --conv
 * Square sizes 64 .. MAX_SIZE (default 2048) and 512 x 1024 x 1024. --conv times instead the
 * per-image products of VGG16's 13 convolutions at CIFAR-10 shapes (out channels x output
 * positions x in channels . 9) with the default kernel, A packed (veil_gemm_pack_a_always) against
 * the default (A read in place where veil_gemm_reads_a_in_place says so), and their sum per image.
 * Calls are timed with the thread's CPU clock (CLOCK_THREAD_CPUTIME_ID), so time the scheduler
 * gives to other processes on a shared machine is not counted; --wall times them with the monotonic
 * wall clock instead.
 */
#include "config.h"
#include "codelets/gemm_internal.h"
#include "base/base_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef VEIL_BENCH_OPENBLAS
#include <cblas.h>
#endif

/* The naive loop takes about a second at 512^3; above that it is skipped. */
#define NAIVE_MAX_MACS (512.0 * 512 * 512)
/* Repeat a measurement until this much time is spent (at least MIN_REPS samples of at least
 * SAMPLE_SECONDS each). */
#define MIN_SECONDS 0.5
#define MIN_REPS 3
#define SAMPLE_SECONDS 0.02

enum variant { NAIVE, VEIL_AVX512, VEIL_AVX2, VEIL_GENERIC, DGEMM, NVARIANTS };
static const char *const kernel_of[NVARIANTS] = {NULL, "avx512", "avx2", "generic", NULL};

struct problem {
    size_t m, n, k;
    uint64_t *a, *b, *c;
    double *da, *db, *dc;
};

static int use_wall_clock;

/* Seconds on the clock chosen for the timings (see Usage). */
static double clock_now(void)
{
    if (use_wall_clock)
        return veil_now();
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static uint64_t rng_state = 0x2545f4914f6cdd1du;
static uint64_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static void naive_gemm(size_t m, size_t n, size_t k, const uint64_t *a, const uint64_t *b,
                       uint64_t *c)
{
    for (size_t i = 0; i < m; i++)
        for (size_t j = 0; j < n; j++) {
            uint64_t s = 0;
            for (size_t p = 0; p < k; p++)
                s += a[i * k + p] * b[p * n + j];
            c[i * n + j] = s;
        }
}

static void run_once(enum variant v, struct problem *p)
{
    switch (v) {
    case NAIVE:
        naive_gemm(p->m, p->n, p->k, p->a, p->b, p->c);
        break;
    case VEIL_AVX512:
    case VEIL_AVX2:
    case VEIL_GENERIC:
        veil_gemm_u64(0, 0, p->m, p->n, p->k, p->a, p->k, p->b, p->n, 0, p->c, p->n);
        break;
    case DGEMM:
#ifdef VEIL_BENCH_OPENBLAS
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)p->m, (int)p->n, (int)p->k, 1.0,
                    p->da, (int)p->k, p->db, (int)p->n, 0.0, p->dc, (int)p->n);
#endif
        break;
    default:
        break;
    }
}

/* Calls per sample: one warm-up call of v on p, timed, then enough calls for SAMPLE_SECONDS. */
static long calls_per_sample(enum variant v, struct problem *p)
{
    double t0 = clock_now();
    run_once(v, p);
    double once = clock_now() - t0;
    return once >= SAMPLE_SECONDS ? 1 : (long)(SAMPLE_SECONDS / (once + 1e-9)) + 1;
}

/* Seconds per call over one sample of `batch` calls. */
static double sample(enum variant v, struct problem *p, long batch)
{
    double t0 = clock_now();
    for (long i = 0; i < batch; i++)
        run_once(v, p);
    return (clock_now() - t0) / (double)batch;
}

/*
 * Best GMAC/s over samples after a warm-up call; -1 when the CPU lacks the kernel. A sample is a
 * batch of calls lasting at least SAMPLE_SECONDS, timed as a whole: the thread CPU clock of
 * these VMs is not precise to the microsecond (single 5 us calls read less CPU than wall time),
 * and the minimum over many short readings would be biased low.
 */
static double measure(enum variant v, struct problem *p)
{
    if (kernel_of[v] && veil_gemm_force_kernel(kernel_of[v]) != VEIL_OK)
        return -1;
    double macs = (double)p->m * p->n * p->k, best = 1e30, spent = 0;
    const long batch = calls_per_sample(v, p);
    for (int rep = 0; rep < MIN_REPS || spent < MIN_SECONDS; rep++) {
        double t = sample(v, p, batch);
        spent += t * (double)batch;
        if (t < best)
            best = t;
    }
    return macs / best / 1e9;
}

#if defined(__x86_64__) && defined(__GNUC__)
/*
 * The hardware bound: instruction throughput of vpmullq zmm (8 exact 64-bit low products) and of
 * vfmadd231pd zmm (DGEMM's 8 FMAs), each on 12 independent registers so latency does not count,
 * and the clock from a chain of dependent 1-cycle adds. Inline assembly, so the compiler can
 * neither hoist nor fold the loop-invariant operations.
 */
#define ON12(op)                                                                                   \
    op("%%zmm0") op("%%zmm1") op("%%zmm2") op("%%zmm3") op("%%zmm4") op("%%zmm5") op("%%zmm6")     \
        op("%%zmm7") op("%%zmm8") op("%%zmm9") op("%%zmm10") op("%%zmm11")
#define VPMULLQ(r) "vpmullq %%zmm30, %%zmm31, " r "\n\t"
#define VFMADD(r) "vfmadd231pd %%zmm30, %%zmm31, " r "\n\t"
#define ADD8                                                                                       \
    "add $1, %%rcx\n\tadd $1, %%rcx\n\tadd $1, %%rcx\n\tadd $1, %%rcx\n\t"                         \
    "add $1, %%rcx\n\tadd $1, %%rcx\n\tadd $1, %%rcx\n\tadd $1, %%rcx\n\t"

/* Best seconds of three runs of one of the loops above (the first also warms the clock up). */
static double time_loop(int which, long loops)
{
    double best = 1e30;
    for (int rep = 0; rep < 3; rep++) {
        double t0 = clock_now();
        if (which == 0)
            __asm__ volatile("mov %0, %%rax\n1:\n\t" ON12(VPMULLQ) "dec %%rax\n\tjnz 1b"
                             :
                             : "r"(loops)
                             : "rax", "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6",
                               "xmm7", "xmm8", "xmm9", "xmm10", "xmm11", "memory");
        else if (which == 1)
            __asm__ volatile("mov %0, %%rax\n1:\n\t" ON12(VFMADD) "dec %%rax\n\tjnz 1b"
                             :
                             : "r"(loops)
                             : "rax", "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6",
                               "xmm7", "xmm8", "xmm9", "xmm10", "xmm11", "memory");
        else
            __asm__ volatile("mov %0, %%rax\n1:\n\t" ADD8 ADD8 "dec %%rax\n\tjnz 1b"
                             :
                             : "r"(loops)
                             : "rax", "rcx", "memory");
        double t = clock_now() - t0;
        if (t < best)
            best = t;
    }
    return best;
}

static void print_peak(void)
{
    const long loops = 50000000;
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("avx512f") || !__builtin_cpu_supports("avx512dq")) {
        printf("hardware bound: no AVX-512DQ on this CPU, not measured\n");
        return;
    }
    double mul = loops * 12.0 / time_loop(0, loops) / 1e9;
    double fma = loops * 12.0 / time_loop(1, loops) / 1e9;
    double ghz = loops * 16.0 / time_loop(2, loops) / 1e9;
    printf("clock ~%.2f GHz; vpmullq zmm %.2f G/s (%.2f per cycle), vfmadd231pd zmm %.2f G/s "
           "(%.2f per cycle)\n",
           ghz, mul, mul / ghz, fma, fma / ghz);
    printf("hardware bound: 64-bit MAC %.1f GMAC/s (8 x vpmullq rate), DGEMM %.1f GMAC/s "
           "(8 x FMA rate)\n",
           8 * mul, 8 * fma);
}
#else
static void print_peak(void)
{
    printf("hardware bound: not measured on this architecture\n");
}
#endif

static void print_load(const char *when)
{
    FILE *f = fopen("/proc/loadavg", "r");
    char line[128] = "unknown\n";
    if (f) {
        if (!fgets(line, sizeof line, f))
            strcpy(line, "unknown\n");
        fclose(f);
    }
    printf("load average %s: %s", when, line);
}

static void print_cell(double gmacs)
{
    if (gmacs < 0)
        printf(" %12s |", "skipped");
    else
        printf(" %12.2f |", gmacs);
}

/* Seconds per call of the default kernel on p, A packed (t[0]) and as by default (t[1]): the
 * best of samples that alternate between the two, so that a noisy stretch of the machine falls
 * on both alike (each sample a batch of calls as measure()'s). */
static void time_packed_and_default(struct problem *p, double t[2])
{
    veil_gemm_pack_a_always(1);
    const long batch = calls_per_sample(VEIL_AVX512, p); /* no kernel forced: the default */
    double spent = 0;
    t[0] = t[1] = 1e30;
    for (int rep = 0; rep < 2 * MIN_REPS || spent < 2 * MIN_SECONDS; rep++) {
        const int packed = rep % 2 == 0;
        veil_gemm_pack_a_always(packed);
        double dt = sample(VEIL_AVX512, p, batch);
        spent += dt * (double)batch;
        if (dt < t[!packed])
            t[!packed] = dt;
    }
    veil_gemm_pack_a_always(0);
}

/* --conv: VGG16's convolutions at CIFAR-10 shapes, one image, A packed against the default. */
static int bench_conv(void)
{
    static const struct {
        size_t m, n, k;
        int count;
    } conv[] = {{64, 1024, 27, 1},   {64, 1024, 576, 1}, {128, 256, 576, 1},
                {128, 256, 1152, 1}, {256, 64, 1152, 1}, {256, 64, 2304, 2},
                {512, 16, 2304, 1},  {512, 16, 4608, 2}, {512, 4, 4608, 3}};
    double total[2] = {0, 0};
    printf("Veil kernel selected by default: %s\n", veil_gemm_kernel_name());
    printf("timed with the %s\n", use_wall_clock ? "wall clock (--wall)" : "thread's CPU clock");
    print_load("before");
    printf("\n| m x n x k | layers | A packed ms | default ms | A read | packed / default |\n");
    printf("|---|---:|---:|---:|---|---:|\n");
    for (size_t s = 0; s < sizeof conv / sizeof *conv; s++) {
        struct problem p = {.m = conv[s].m, .n = conv[s].n, .k = conv[s].k};
        size_t na = p.m * p.k, nb = p.k * p.n, nc = p.m * p.n;
        p.a = veil_aligned_alloc(na * 8);
        p.b = veil_aligned_alloc(nb * 8);
        p.c = veil_aligned_alloc(nc * 8);
        uint64_t *packed = malloc(nc * 8);
        if (!p.a || !p.b || !p.c || !packed) {
            fprintf(stderr, "out of memory at %zu x %zu x %zu\n", p.m, p.n, p.k);
            return 1;
        }
        for (size_t i = 0; i < na; i++)
            p.a[i] = rnd();
        for (size_t i = 0; i < nb; i++)
            p.b[i] = rnd();
        double t[2];
        veil_gemm_pack_a_always(1);
        run_once(VEIL_AVX512, &p);
        memcpy(packed, p.c, nc * 8);
        veil_gemm_pack_a_always(0);
        run_once(VEIL_AVX512, &p);
        if (memcmp(packed, p.c, nc * 8) != 0) {
            fprintf(stderr, "%zu x %zu x %zu: A packed and the default differ\n", p.m, p.n, p.k);
            return 1;
        }
        time_packed_and_default(&p, t);
        for (int i = 0; i < 2; i++)
            total[i] += t[i] * conv[s].count;
        printf("| %zu x %zu x %zu | %d | %.3f | %.3f | %s | %.2f |\n", p.m, p.n, p.k, conv[s].count,
               t[0] * 1e3, t[1] * 1e3, veil_gemm_reads_a_in_place(0, p.n) ? "in place" : "packed",
               t[0] / t[1]);
        fflush(stdout);
        veil_aligned_free(p.a);
        veil_aligned_free(p.b);
        veil_aligned_free(p.c);
        free(packed);
    }
    printf("| all 13, one image | 13 | %.3f | %.3f | | %.2f |\n\n", total[0] * 1e3, total[1] * 1e3,
           total[0] / total[1]);
    veil_gemm_release_buffers();
    print_load("after");
    return 0;
}

int main(int argc, char **argv)
{
    int arg = 1;
    if (arg < argc && strcmp(argv[arg], "--wall") == 0) {
        use_wall_clock = 1;
        arg++;
    }
    if (arg < argc && strcmp(argv[arg], "--conv") == 0)
        return bench_conv();
    size_t max = arg < argc ? strtoul(argv[arg], NULL, 10) : 2048;
    struct problem shapes[16];
    int nshapes = 0;
    for (size_t s = 64; s <= max && nshapes < 15; s *= 2)
        shapes[nshapes++] = (struct problem){.m = s, .n = s, .k = s};
    shapes[nshapes++] = (struct problem){.m = 512, .n = 1024, .k = 1024};

#ifdef VEIL_BENCH_OPENBLAS
    openblas_set_num_threads(1);
    printf("OpenBLAS: %s, 1 thread\n", openblas_get_config());
#else
    printf("OpenBLAS: not found by configure, DGEMM column skipped\n");
#endif
    printf("Veil kernel selected by default: %s\n", veil_gemm_kernel_name());
    printf("timed with the %s\n", use_wall_clock ? "wall clock (--wall)" : "thread's CPU clock");
    print_peak();
    print_load("before");
    printf("\n| m x n x k | naive | Veil avx512 | Veil avx2 | Veil generic | OpenBLAS DGEMM |"
           " avx512 / DGEMM |\n");
    printf("|---|---:|---:|---:|---:|---:|---:|\n");

    for (int s = 0; s < nshapes; s++) {
        struct problem *p = &shapes[s];
        size_t na = p->m * p->k, nb = p->k * p->n, nc = p->m * p->n;
        p->a = veil_aligned_alloc(na * 8);
        p->b = veil_aligned_alloc(nb * 8);
        p->c = veil_aligned_alloc(nc * 8);
        p->da = veil_aligned_alloc(na * 8);
        p->db = veil_aligned_alloc(nb * 8);
        p->dc = veil_aligned_alloc(nc * 8);
        uint64_t *check = malloc(nc * 8);
        if (!p->a || !p->b || !p->c || !p->da || !p->db || !p->dc || !check) {
            fprintf(stderr, "out of memory at %zu x %zu x %zu\n", p->m, p->n, p->k);
            return 1;
        }
        for (size_t i = 0; i < na; i++) {
            p->a[i] = rnd();
            p->da[i] = (double)(p->a[i] >> 11) * 0x1p-53;
        }
        for (size_t i = 0; i < nb; i++) {
            p->b[i] = rnd();
            p->db[i] = (double)(p->b[i] >> 11) * 0x1p-53;
        }

        double r[NVARIANTS];
        double macs = (double)p->m * p->n * p->k;
        r[NAIVE] = macs <= NAIVE_MAX_MACS ? measure(NAIVE, p) : -1;
        if (r[NAIVE] >= 0)
            memcpy(check, p->c, nc * 8);
        for (int v = VEIL_AVX512; v <= VEIL_GENERIC; v++) {
            memset(p->c, 0, nc * 8);
            r[v] = measure(v, p);
            if (r[NAIVE] >= 0 && r[v] >= 0 && memcmp(check, p->c, nc * 8) != 0) {
                fprintf(stderr, "%s result differs from the naive loop\n", kernel_of[v]);
                return 1;
            }
        }
#ifdef VEIL_BENCH_OPENBLAS
        r[DGEMM] = measure(DGEMM, p);
#else
        r[DGEMM] = -1;
#endif
        printf("| %zu x %zu x %zu |", p->m, p->n, p->k);
        for (int v = 0; v < NVARIANTS; v++)
            print_cell(r[v]);
        if (r[VEIL_AVX512] > 0 && r[DGEMM] > 0)
            printf(" %.2f |\n", r[VEIL_AVX512] / r[DGEMM]);
        else
            printf(" - |\n");
        fflush(stdout);

        veil_aligned_free(p->a);
        veil_aligned_free(p->b);
        veil_aligned_free(p->c);
        veil_aligned_free(p->da);
        veil_aligned_free(p->db);
        veil_aligned_free(p->dc);
        free(check);
    }
    veil_gemm_force_kernel(NULL);
    veil_gemm_release_buffers();
    printf("\n");
    print_load("after");
    printf("naive: textbook i-j-p loop, skipped above 512^3 multiply-adds.\n");
    return 0;
}

/*
 * bench_gemm_cuda.c — the Z_2^64 matrix product on one GPU against cuBLAS DGEMM of the same shape:
 * Veil's two CUDA implementations (the limb split on cuBLAS DGEMMs, veil_cuda_gemm_limb, and the
 * tiled 64-bit integer kernel, veil_cuda_gemm_int) and cublasDgemm itself (default math mode), on
 * device-resident square matrices. Prints a markdown table (bench/README-gpu.md): tera-operations
 * per second counting 2 m n k (a multiply and an add per term, as for DGEMM's FLOP/s) and the ratio
 * of each ring GEMM to DGEMM. Before timing, each size checks both ring GEMMs against a CPU
 * evaluation of 64 random entries (at the first size, every entry against veil_gemm_u64): a
 * figure is printed only for a product that is right.
 *
 * Usage: bench_gemm_cuda [MAX_SIZE]   sizes 512, 1024, ... up to MAX_SIZE (default 8192)
 * Each figure is the median of at least 5 timed calls (CUDA events on one stream, after one
 * warm-up call), more until 0.5 s is spent; the spread (min..max) follows in brackets.
 * Exit status: 0 measured, 1 a wrong result or a CUDA error, 2 bad arguments, 77 no CUDA device.
 */
#include "config.h"
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include "codelets/cuda/cuda_internal.h"
#include "codelets/gemm_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MIN_CALLS 5
#define MAX_CALLS 50
#define MIN_SECONDS 0.5
#define SPOT_CHECKS 64

enum impl { LIMB, INT, DGEMM, NIMPL };
static const char *const impl_name[NIMPL] = {"ring, limb split + cuBLAS", "ring, integer kernel",
                                             "cuBLAS DGEMM"};

struct dev {
    cublasHandle_t h;
    cudaStream_t s;
    uint64_t *a, *b, *c;
    double *da, *db, *dc;
};

static uint64_t rng_state = 0x9e3779b97f4a7c15u;
static uint64_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static int cuda_ok(cudaError_t e, const char *what)
{
    if (e == cudaSuccess)
        return 1;
    fprintf(stderr, "bench_gemm_cuda: %s: %s\n", what, cudaGetErrorString(e));
    return 0;
}

static int run_once(enum impl which, struct dev *d, size_t n)
{
    const double one = 1.0, zero = 0.0;
    switch (which) {
    case LIMB:
        return cuda_ok(veil_cuda_gemm_limb(d->h, 0, 0, n, n, n, d->a, n, d->b, n, 0, d->c, n, d->s),
                       "veil_cuda_gemm_limb");
    case INT:
        return cuda_ok(veil_cuda_gemm_int(0, 0, n, n, n, d->a, n, d->b, n, 0, d->c, n, d->s),
                       "veil_cuda_gemm_int");
    case DGEMM:
        if (cublasDgemm(d->h, CUBLAS_OP_N, CUBLAS_OP_N, (int)n, (int)n, (int)n, &one, d->db, (int)n,
                        d->da, (int)n, &zero, d->dc, (int)n) != CUBLAS_STATUS_SUCCESS) {
            fprintf(stderr, "bench_gemm_cuda: cublasDgemm failed\n");
            return 0;
        }
        return 1;
    default:
        return 0;
    }
}

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

/* Median, min and max milliseconds of timed calls; 0 on a CUDA error. */
static int measure(enum impl which, struct dev *d, size_t n, double ms[3])
{
    double t[MAX_CALLS], spent = 0;
    int calls = 0;
    cudaEvent_t e0, e1;
    if (!cuda_ok(cudaEventCreate(&e0), "cudaEventCreate") ||
        !cuda_ok(cudaEventCreate(&e1), "cudaEventCreate"))
        return 0;
    int ok = run_once(which, d, n) && cuda_ok(cudaStreamSynchronize(d->s), "warm-up");
    while (ok && calls < MAX_CALLS && (calls < MIN_CALLS || spent < MIN_SECONDS * 1e3)) {
        float f = 0;
        ok = cuda_ok(cudaEventRecord(e0, d->s), "cudaEventRecord") && run_once(which, d, n) &&
             cuda_ok(cudaEventRecord(e1, d->s), "cudaEventRecord") &&
             cuda_ok(cudaEventSynchronize(e1), "cudaEventSynchronize") &&
             cuda_ok(cudaEventElapsedTime(&f, e0, e1), "cudaEventElapsedTime");
        t[calls++] = f;
        spent += f;
    }
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    if (!ok)
        return 0;
    qsort(t, (size_t)calls, sizeof t[0], cmp_double);
    ms[0] = t[calls / 2];
    ms[1] = t[0];
    ms[2] = t[calls - 1];
    return 1;
}

/* Both ring GEMMs of a (n x n) b against the CPU: every entry (full) or SPOT_CHECKS random ones. */
static int check(struct dev *d, size_t n, const uint64_t *a, const uint64_t *b, int full)
{
    size_t words = n * n;
    uint64_t *got = malloc(words * sizeof *got), *want = full ? malloc(words * sizeof *want) : NULL;
    int ok = got != NULL && (!full || want != NULL);
    if (ok && full)
        veil_gemm_u64(0, 0, n, n, n, a, n, b, n, 0, want, n);
    for (int which = LIMB; ok && which <= INT; which++) {
        ok = cuda_ok(cudaMemset(d->c, 0, words * sizeof(uint64_t)), "cudaMemset") &&
             run_once((enum impl)which, d, n) &&
             cuda_ok(cudaStreamSynchronize(d->s), "cudaStreamSynchronize") &&
             cuda_ok(cudaMemcpy(got, d->c, words * sizeof *got, cudaMemcpyDeviceToHost),
                     "cudaMemcpy");
        if (ok && full && memcmp(got, want, words * sizeof *got) != 0) {
            fprintf(stderr, "bench_gemm_cuda: %s differs from veil_gemm_u64 at n = %zu\n",
                    impl_name[which], n);
            ok = 0;
        }
        for (int s = 0; ok && !full && s < SPOT_CHECKS; s++) {
            size_t i = rnd() % n, j = rnd() % n;
            uint64_t v = 0;
            for (size_t p = 0; p < n; p++)
                v += a[i * n + p] * b[p * n + j];
            if (got[i * n + j] != v) {
                fprintf(stderr, "bench_gemm_cuda: %s wrong at (%zu, %zu), n = %zu\n",
                        impl_name[which], i, j, n);
                ok = 0;
            }
        }
    }
    free(got);
    free(want);
    return ok;
}

/* Fills the device operands of size n (ring words and doubles in [-1, 1)) and checks the ring
 * products; 0 on an error. */
static int prepare(struct dev *d, size_t n, int full)
{
    size_t words = n * n;
    uint64_t *a = malloc(words * sizeof *a), *b = malloc(words * sizeof *b);
    double *x = malloc(words * sizeof *x);
    int ok = a && b && x;
    for (size_t i = 0; ok && i < words; i++) {
        a[i] = rnd();
        b[i] = rnd();
    }
    for (size_t i = 0; ok && i < words; i++)
        x[i] = (double)(int64_t)rnd() / 9.3e18;
    ok = ok && cuda_ok(cudaMemcpy(d->a, a, words * 8, cudaMemcpyHostToDevice), "cudaMemcpy") &&
         cuda_ok(cudaMemcpy(d->b, b, words * 8, cudaMemcpyHostToDevice), "cudaMemcpy") &&
         cuda_ok(cudaMemcpy(d->da, x, words * 8, cudaMemcpyHostToDevice), "cudaMemcpy") &&
         cuda_ok(cudaMemcpy(d->db, x, words * 8, cudaMemcpyHostToDevice), "cudaMemcpy") &&
         check(d, n, a, b, full);
    free(a);
    free(b);
    free(x);
    return ok;
}

int main(int argc, char **argv)
{
    size_t max = 8192;
    if (argc > 2 || (argc == 2 && (sscanf(argv[1], "%zu", &max) != 1 || max < 512 || max > 32768))) {
        fprintf(stderr, "usage: %s [MAX_SIZE]   (512 <= MAX_SIZE <= 32768)\n", argv[0]);
        return 2;
    }
    int count = 0;
    struct cudaDeviceProp prop;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
        fprintf(stderr, "bench_gemm_cuda: no CUDA device: nothing to measure\n");
        return 77;
    }
    struct dev d;
    memset(&d, 0, sizeof d);
    size_t bytes = max * max * 8;
    if (!cuda_ok(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties") ||
        !cuda_ok(cudaStreamCreate(&d.s), "cudaStreamCreate") ||
        cublasCreate(&d.h) != CUBLAS_STATUS_SUCCESS || cublasSetStream(d.h, d.s) != 0 ||
        !cuda_ok(cudaMalloc((void **)&d.a, bytes), "cudaMalloc") ||
        !cuda_ok(cudaMalloc((void **)&d.b, bytes), "cudaMalloc") ||
        !cuda_ok(cudaMalloc((void **)&d.c, bytes), "cudaMalloc") ||
        !cuda_ok(cudaMalloc((void **)&d.da, bytes), "cudaMalloc") ||
        !cuda_ok(cudaMalloc((void **)&d.db, bytes), "cudaMalloc") ||
        !cuda_ok(cudaMalloc((void **)&d.dc, bytes), "cudaMalloc"))
        return 1;
    int rt = 0;
    cudaRuntimeGetVersion(&rt);
    printf("# %s, %d SMs, CUDA runtime %d.%d; cuBLAS DGEMM in its default math mode\n", prop.name,
           prop.multiProcessorCount, rt / 1000, rt % 1000 / 10);
    printf("| n | implementation | ms (min..max) | TOP/s | vs DGEMM |\n|---|---|---|---|---|\n");
    int status = 0;
    for (size_t n = 512; n <= max && status == 0; n *= 2) {
        if (!prepare(&d, n, n == 512)) {
            status = 1;
            break;
        }
        double ms[NIMPL][3], ops = 2.0 * (double)n * n * n;
        for (int w = 0; w < NIMPL && status == 0; w++)
            if (!measure((enum impl)w, &d, n, ms[w]))
                status = 1;
        for (int w = 0; w < NIMPL && status == 0; w++)
            printf("| %zu | %s | %.3f (%.3f..%.3f) | %.2f | %.3f |\n", n, impl_name[w], ms[w][0],
                   ms[w][1], ms[w][2], ops / (ms[w][0] * 1e-3) / 1e12, ms[DGEMM][0] / ms[w][0]);
        fflush(stdout);
    }
    cudaFree(d.a);
    cudaFree(d.b);
    cudaFree(d.c);
    cudaFree(d.da);
    cudaFree(d.db);
    cudaFree(d.dc);
    cublasDestroy(d.h);
    cudaStreamDestroy(d.s);
    return status;
}

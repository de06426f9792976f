/*
 * bench_wipe.c — what wiping a run's released tensors costs: N buffers of S bytes (default 150 of
 * 3.7 MB, about what LeNet-5 at batch 100 releases per run at each party), zeroed by
 * explicit_bzero (cached stores) and by veil_wipe (non-temporal stores from
 * VEIL_WIPE_STREAMING_MIN bytes on), alone and followed by a pass that writes every buffer again
 * (the next run's producers). One thread; the best and the median of R repetitions.
 *
 *   bench/bench_wipe [-n N] [-s BYTES] [-r R]
 *
 * Prints one line per method: ms for the wipes, ms for wipes plus the write pass, and GB/s of the
 * wipes. Figures: bench/README-latency.md.
 */
#include "config.h"
#include "base/base_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void wipe_bzero(void *p, size_t n)
{
    explicit_bzero(p, n);
}

/* Best and median of r timings of wiping every buffer (and writing them again when rewrite). */
static void measure(void (*wipe)(void *, size_t), unsigned char **b, int n, size_t s, int r,
                    int rewrite, double *best, double *median)
{
    double *t = malloc((size_t)r * sizeof *t);
    if (!t) {
        fprintf(stderr, "bench_wipe: out of memory\n");
        exit(1);
    }
    for (int k = 0; k < r; k++) {
        for (int i = 0; i < n; i++)
            memset(b[i], 0x5a, s); /* the shares the wipe overwrites */
        const double t0 = veil_now();
        for (int i = 0; i < n; i++)
            wipe(b[i], s);
        if (rewrite)
            for (int i = 0; i < n; i++)
                memset(b[i], 0x33, s);
        t[k] = veil_now() - t0;
    }
    qsort(t, (size_t)r, sizeof *t, cmp_double);
    *best = t[0];
    *median = t[r / 2];
    free(t);
}

int main(int argc, char **argv)
{
    int n = 150, r = 9, c;
    long long s = 3763200;
    while ((c = getopt(argc, argv, "n:s:r:")) != -1) {
        if (c == 'n')
            n = atoi(optarg);
        else if (c == 's')
            s = atoll(optarg);
        else if (c == 'r')
            r = atoi(optarg);
        else {
            fprintf(stderr, "usage: %s [-n N] [-s BYTES] [-r R]\n", argv[0]);
            return 2;
        }
    }
    if (n < 1 || n > 100000 || s < 1 || s > (1LL << 32) || r < 1 || r > 1000) {
        fprintf(stderr, "bench_wipe: -n 1..100000, -s 1..2^32, -r 1..1000\n");
        return 2;
    }
    unsigned char **b = calloc((size_t)n, sizeof *b);
    for (int i = 0; b && i < n; i++)
        if (!(b[i] = veil_aligned_alloc((size_t)s))) {
            fprintf(stderr, "bench_wipe: out of memory for %d buffers of %lld bytes\n", n, s);
            return 1;
        }
    if (!b)
        return 1;
    printf("%d buffers of %lld bytes (%.0f MB), best and median of %d; streaming from %zu bytes\n",
           n, s, (double)n * (double)s / 1e6, r, (size_t)VEIL_WIPE_STREAMING_MIN);
    printf("%-14s %9s %9s %14s %14s %8s\n", "method", "wipe ms", "median", "+write ms", "median",
           "GB/s");
    const struct {
        const char *name;
        void (*fn)(void *, size_t);
    } m[] = {{"explicit_bzero", wipe_bzero}, {"veil_wipe", veil_wipe}};
    for (size_t k = 0; k < sizeof m / sizeof m[0]; k++) {
        double wb, wm, rb, rm;
        measure(m[k].fn, b, n, (size_t)s, r, 0, &wb, &wm);
        measure(m[k].fn, b, n, (size_t)s, r, 1, &rb, &rm);
        printf("%-14s %9.1f %9.1f %14.1f %14.1f %8.1f\n", m[k].name, 1e3 * wb, 1e3 * wm, 1e3 * rb,
               1e3 * rm, (double)n * (double)s / wb / 1e9);
    }
    for (int i = 0; i < n; i++)
        veil_aligned_free(b[i]);
    free(b);
    return 0;
}

/*
 * bench_im2col.c — the CPU im2col body (codelets/cpu/im2col.c) alone, on one thread, for the
 * geometries Veil's models run: LeNet-5's two convolutions at batch 100, two VGG16 layers at
 * batch 2 (the first wide one and a 4 x 4 one: short rows), and a stride-2 layer. The image and
 * the column buffer are written once before timing (no page faults in the figures); the best and
 * the median of R calls.
 *
 *   bench/bench_im2col [-r R]
 *
 * Prints one line per geometry: the column matrix's size, best and median ms, and GB/s written.
 * Figures: bench/README-latency.md.
 */
#include "config.h"
#include "base/base_internal.h"
#include "codelets/codelets_internal.h"

#include <starpu.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    int r = 15, opt;
    while ((opt = getopt(argc, argv, "r:")) != -1) {
        if (opt == 'r' && atoi(optarg) > 0) {
            r = atoi(optarg);
        } else {
            fprintf(stderr, "usage: %s [-r REPETITIONS]\n", argv[0]);
            return 2;
        }
    }
    static const struct {
        const char *name;
        struct veil_im2col_geom g; /* n c h w kh kw sh sw ph pw */
    } cases[] = {
        {"lenet conv1 b100", {100, 1, 28, 28, 5, 5, 1, 1, 2, 2}},
        {"lenet conv2 b100", {100, 6, 14, 14, 5, 5, 1, 1, 0, 0}},
        {"vgg16 64x32x32 b2", {2, 64, 32, 32, 3, 3, 1, 1, 1, 1}},
        {"vgg16 512x4x4 b2", {2, 512, 4, 4, 3, 3, 1, 1, 1, 1}},
        {"stride 2 16x28x28 b8", {8, 16, 28, 28, 3, 3, 2, 2, 1, 1}},
    };
    double *t = malloc((size_t)r * sizeof *t);
    if (!t)
        return 1;
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        struct veil_im2col_geom g = cases[k].g;
        size_t ni, nc;
        if (veil_im2col_geom_check(&g, NULL, NULL, &ni, &nc) != VEIL_OK) {
            fprintf(stderr, "bench_im2col: %s\n", veil_last_error());
            return 1;
        }
        uint64_t *x = malloc(ni * 8), *c = malloc(nc * 8);
        void *arg = NULL;
        size_t arg_size = 0;
        if (!x || !c) {
            fprintf(stderr, "bench_im2col: out of memory\n");
            return 1;
        }
        for (size_t i = 0; i < ni; i++)
            x[i] = i * 0x9e3779b97f4a7c15u;
        memset(c, 0, nc * 8);
        struct starpu_vector_interface in = {.id = STARPU_VECTOR_INTERFACE_ID,
                                             .ptr = (uintptr_t)x,
                                             .nx = (uint32_t)ni,
                                             .elemsize = 8},
                                       out = {.id = STARPU_VECTOR_INTERFACE_ID,
                                              .ptr = (uintptr_t)c,
                                              .nx = (uint32_t)nc,
                                              .elemsize = 8};
        void *buffers[2] = {&in, &out};
        starpu_codelet_pack_args(&arg, &arg_size, STARPU_VALUE, &g, sizeof g, 0);
        for (int i = 0; i < r; i++) {
            double t0 = veil_now();
            veil_im2col_cpu(buffers, arg);
            t[i] = veil_now() - t0;
        }
        qsort(t, (size_t)r, sizeof *t, cmp_double);
        printf("%-22s %7.1f MB  best %7.3f ms  median %7.3f ms  %5.2f GB/s\n", cases[k].name,
               (double)nc * 8 / 1e6, t[0] * 1e3, t[r / 2] * 1e3, (double)nc * 8 / t[0] / 1e9);
        free(arg);
        free(x);
        free(c);
    }
    free(t);
    return 0;
}

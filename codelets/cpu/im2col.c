/*
 * cpu/im2col.c — CPU bodies of im2col and col2im. The geometry arrives by value and was checked
 * by veil_im2col_geom_check, so every index below is in range. For each column-matrix row
 * (channel, kernel offset) and output row, the image row is either all padding (zeros) or
 * read/accumulated with a per-column bounds test.
 */
#include "config.h"

#include "codelets/cpu/vectorize.h"

#include "codelets/codelets_internal.h"

#include <string.h>

/* Output geometry, recomputed from the checked parameters (cheap; keeps the arguments small). */
static void out_size(const struct veil_im2col_geom *g, size_t *oh, size_t *ow)
{
    *oh = ((size_t)g->h + 2 * (size_t)g->ph - g->kh) / g->sh + 1;
    *ow = ((size_t)g->w + 2 * (size_t)g->pw - g->kw) / g->sw + 1;
}

void veil_im2col_cpu(void *buffers[], void *cl_arg)
{
    struct veil_im2col_geom g;
    starpu_codelet_unpack_args(cl_arg, &g);
    const uint64_t *restrict image = (const uint64_t *)STARPU_VECTOR_GET_PTR(buffers[0]);
    uint64_t *restrict cols = (uint64_t *)STARPU_VECTOR_GET_PTR(buffers[1]);
    size_t oh, ow;
    out_size(&g, &oh, &ow);
    size_t plane = oh * ow;
    size_t rows = (size_t)g.c * g.kh * g.kw;

    for (size_t b = 0; b < g.n; b++) {
        const uint64_t *img = image + b * g.c * g.h * g.w;
        uint64_t *col = cols + b * rows * plane;
        for (size_t ci = 0; ci < g.c; ci++) {
            for (size_t i = 0; i < g.kh; i++) {
                for (size_t j = 0; j < g.kw; j++) {
                    uint64_t *dst = col + ((ci * g.kh + i) * g.kw + j) * plane;
                    for (size_t y = 0; y < oh; y++) {
                        uint64_t *d = dst + y * ow;
                        /* iy = y*sh + i - ph, kept unsigned: out of range wraps to huge. */
                        size_t iy = y * g.sh + i - g.ph;
                        if (y * g.sh + i < g.ph || iy >= g.h) {
                            memset(d, 0, ow * sizeof(uint64_t));
                            continue;
                        }
                        const uint64_t *src = img + (ci * g.h + iy) * g.w;
                        for (size_t x = 0; x < ow; x++) {
                            size_t ixp = x * g.sw + j; /* ix + pw */
                            d[x] = (ixp >= g.pw && ixp - g.pw < g.w) ? src[ixp - g.pw] : 0;
                        }
                    }
                }
            }
        }
    }
}

void veil_col2im_cpu(void *buffers[], void *cl_arg)
{
    struct veil_im2col_geom g;
    starpu_codelet_unpack_args(cl_arg, &g);
    const uint64_t *restrict cols = (const uint64_t *)STARPU_VECTOR_GET_PTR(buffers[0]);
    uint64_t *restrict image = (uint64_t *)STARPU_VECTOR_GET_PTR(buffers[1]);
    size_t image_len = STARPU_VECTOR_GET_NX(buffers[1]);
    size_t oh, ow;
    out_size(&g, &oh, &ow);
    size_t plane = oh * ow;
    size_t rows = (size_t)g.c * g.kh * g.kw;

    memset(image, 0, image_len * sizeof(uint64_t));
    for (size_t b = 0; b < g.n; b++) {
        uint64_t *img = image + b * g.c * g.h * g.w;
        const uint64_t *col = cols + b * rows * plane;
        for (size_t ci = 0; ci < g.c; ci++) {
            for (size_t i = 0; i < g.kh; i++) {
                for (size_t j = 0; j < g.kw; j++) {
                    const uint64_t *src = col + ((ci * g.kh + i) * g.kw + j) * plane;
                    for (size_t y = 0; y < oh; y++) {
                        size_t iy = y * g.sh + i - g.ph;
                        if (y * g.sh + i < g.ph || iy >= g.h)
                            continue;
                        const uint64_t *s = src + y * ow;
                        uint64_t *dst = img + (ci * g.h + iy) * g.w;
                        for (size_t x = 0; x < ow; x++) {
                            size_t ixp = x * g.sw + j;
                            if (ixp >= g.pw && ixp - g.pw < g.w)
                                dst[ixp - g.pw] += s[x];
                        }
                    }
                }
            }
        }
    }
}

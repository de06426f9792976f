/*
 * cpu/im2col.c — CPU bodies of im2col and col2im. The geometry arrives by value and was checked
 * by veil_im2col_geom_check, so every index below is in range. For each column-matrix row
 * (channel, kernel offset) and output row, the image row is either all padding (zeros) or
 * read/accumulated over the run of output columns whose image column is inside the image (found
 * once per kernel column; a copy when the stride is 1), with zeros on either side.
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

/*
 * The output columns x in [*lo, *hi) of kernel column j read the image: their padded column
 * x*sw + j lies in [pw, pw + w). Columns before *lo and from *hi on read padding.
 */
static void inside_cols(const struct veil_im2col_geom *g, size_t ow, size_t j, size_t *lo,
                        size_t *hi)
{
    size_t sw = g->sw, pw = g->pw, end = (size_t)g->w + pw; /* padded columns [pw, end) */
    size_t a = j >= pw ? 0 : (pw - j + sw - 1) / sw;
    size_t b = end <= j ? 0 : (end - j + sw - 1) / sw;
    if (b > ow)
        b = ow;
    if (a > b)
        a = b;
    *lo = a;
    *hi = b;
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
                    size_t lo, hi;
                    inside_cols(&g, ow, j, &lo, &hi);
                    for (size_t y = 0; y < oh; y++) {
                        uint64_t *d = dst + y * ow;
                        /* iy = y*sh + i - ph, kept unsigned: out of range wraps to huge. */
                        size_t iy = y * g.sh + i - g.ph;
                        if (y * g.sh + i < g.ph || iy >= g.h || lo == hi) {
                            memset(d, 0, ow * sizeof(uint64_t));
                            continue;
                        }
                        /* img[at + x*sw] is image column x*sw + j - pw, x in [lo, hi); at
                         * itself may wrap (unsigned), at + lo*sw does not */
                        size_t at = (ci * g.h + iy) * g.w + j - g.pw;
                        for (size_t x = 0; x < lo; x++)
                            d[x] = 0;
                        if (g.sw == 1) { /* rows are short (tens of words): loops, not calls */
                            const uint64_t *src = img + (at + lo);
                            for (size_t x = 0; x < hi - lo; x++)
                                d[lo + x] = src[x];
                        } else {
                            for (size_t x = lo; x < hi; x++)
                                d[x] = img[at + x * g.sw];
                        }
                        for (size_t x = hi; x < ow; x++)
                            d[x] = 0;
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
                    size_t lo, hi;
                    inside_cols(&g, ow, j, &lo, &hi);
                    if (lo == hi)
                        continue;
                    for (size_t y = 0; y < oh; y++) {
                        size_t iy = y * g.sh + i - g.ph;
                        if (y * g.sh + i < g.ph || iy >= g.h)
                            continue;
                        const uint64_t *s = src + y * ow;
                        /* img[at + x*sw] is image column x*sw + j - pw, x in [lo, hi) */
                        size_t at = (ci * g.h + iy) * g.w + j - g.pw;
                        for (size_t x = lo; x < hi; x++)
                            img[at + x * g.sw] += s[x];
                    }
                }
            }
        }
    }
}

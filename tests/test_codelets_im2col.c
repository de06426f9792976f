/* Tests im2col and col2im run as StarPU tasks against the reference, bit for bit, on random
 * images (with edge values) for several NCHW geometries (1x1 kernels, padding, unequal strides and
 * kernel sides, output 1x1, a batch, kernel columns that read only padding), checks the adjoint
 * identity <im2col(x), y> = <x, col2im(y)> in Z_2^64 on the tasks' results, checks the reference
 * layout on a hand-computed example, and that invalid geometry (zero sizes, zero stride, padding >=
 * kernel, kernel larger than the padded image, NULL) and handles of the wrong length are refused
 * before submission. */
#include "config.h"

#include "codelets/codelets_internal.h"
#include "codelets/reference.h"
#include "test_util.h"

#include <stdlib.h>
#include <string.h>

static const struct veil_im2col_geom geoms[] = {
    /* n  c  h   w  kh kw sh sw ph pw */
    {1, 1, 1, 1, 1, 1, 1, 1, 0, 0},  {2, 3, 5, 7, 3, 3, 1, 1, 1, 1},
    {1, 2, 8, 6, 2, 3, 2, 2, 1, 2},  {3, 1, 4, 4, 4, 4, 1, 1, 0, 0},
    {1, 4, 9, 10, 3, 2, 3, 2, 2, 1}, {2, 1, 28, 28, 5, 5, 1, 1, 2, 2},
    {1, 3, 7, 5, 1, 1, 2, 3, 0, 0},  {1, 2, 3, 1, 2, 3, 1, 3, 1, 2},
    {2, 2, 7, 9, 3, 4, 2, 3, 2, 3},
};

static uint64_t dot(const uint64_t *a, const uint64_t *b, size_t n)
{
    uint64_t s = 0;
    for (size_t i = 0; i < n; i++)
        s += a[i] * b[i];
    return s;
}

static void check(size_t gi)
{
    const struct veil_im2col_geom *g = &geoms[gi];
    size_t oh, ow, ni, nc;
    char what[64];
    VT_CHECK(veil_im2col_geom_check(g, &oh, &ow, &ni, &nc) == VEIL_OK, "geometry %zu: %s", gi,
             veil_last_error());
    uint64_t *x = malloc(ni * 8), *cols = malloc(nc * 8), *want_c = malloc(nc * 8);
    uint64_t *y = malloc(nc * 8), *img = malloc(ni * 8), *want_i = malloc(ni * 8);
    if (!x || !cols || !want_c || !y || !img || !want_i) {
        fprintf(stderr, "FAIL: out of memory\n");
        veil_test_failures++;
        goto done;
    }
    veil_test_random(11000 + gi, x, ni);
    veil_test_random(12000 + gi, y, nc);
    veil_test_mix_edges(x, NULL, ni);
    veil_test_mix_edges(y, NULL, nc);
    memset(cols, 0xa5, nc * 8);
    memset(img, 0xa5, ni * 8);
    starpu_data_handle_t hx = veil_test_vec(x, ni), hc = veil_test_vec(cols, nc),
                         hy = veil_test_vec(y, nc), hi = veil_test_vec(img, ni);
    VT_CHECK(veil_task_im2col(hx, hc, g, 0) == VEIL_OK, "im2col: %s", veil_last_error());
    VT_CHECK(veil_task_col2im(hy, hi, g, 0) == VEIL_OK, "col2im: %s", veil_last_error());
    starpu_task_wait_for_all();
    starpu_data_unregister(hx);
    starpu_data_unregister(hc);
    starpu_data_unregister(hy);
    starpu_data_unregister(hi);

    veil_ref_im2col(g, x, want_c);
    snprintf(what, sizeof(what), "im2col geometry %zu", gi);
    veil_test_compare_u64(what, cols, want_c, nc);
    veil_ref_col2im(g, y, want_i);
    snprintf(what, sizeof(what), "col2im geometry %zu", gi);
    veil_test_compare_u64(what, img, want_i, ni);
    uint64_t lhs = dot(cols, y, nc), rhs = dot(x, img, ni);
    VT_CHECK(lhs == rhs, "geometry %zu: <im2col(x), y> = %llx, <x, col2im(y)> = %llx", gi,
             (unsigned long long)lhs, (unsigned long long)rhs);
done:
    free(x);
    free(cols);
    free(want_c);
    free(y);
    free(img);
    free(want_i);
}

/* 1 image, 1 channel, 3x3 image 1..9, 2x2 kernel, stride 1, padding 1: output 4x4 per row. */
static void check_layout(void)
{
    const struct veil_im2col_geom g = {1, 1, 3, 3, 2, 2, 1, 1, 1, 1};
    uint64_t x[9], cols[4 * 16];
    for (int i = 0; i < 9; i++)
        x[i] = (uint64_t)i + 1;
    veil_ref_im2col(&g, x, cols);
    /* Row (i=0, j=0): the top-left kernel tap sees image[y-1][x-1]. */
    static const uint64_t row0[16] = {0, 0, 0, 0, 0, 1, 2, 3, 0, 4, 5, 6, 0, 7, 8, 9};
    /* Row (i=1, j=1): the bottom-right tap sees image[y][x]. */
    static const uint64_t row3[16] = {1, 2, 3, 0, 4, 5, 6, 0, 7, 8, 9, 0, 0, 0, 0, 0};
    veil_test_compare_u64("reference im2col row 0", cols, row0, 16);
    veil_test_compare_u64("reference im2col row 3", cols + 48, row3, 16);
}

static void check_bad_input(void)
{
    const struct veil_im2col_geom ok = {1, 2, 5, 5, 3, 3, 1, 1, 1, 1};
    struct veil_im2col_geom g;
    uint64_t x[50] = {0}, c[450] = {0}, c2[449] = {0};
    starpu_data_handle_t hx = veil_test_vec(x, 50), hc = veil_test_vec(c, 450),
                         hc_short = veil_test_vec(c2, 449);
    size_t nc = 0;
    VT_CHECK(veil_im2col_geom_check(&ok, NULL, NULL, NULL, &nc) == VEIL_OK && nc == 450,
             "valid geometry: %zu columns", nc);

    g = ok, g.kh = 0;
    VT_CHECK(veil_task_im2col(hx, hc, &g, 0) == VEIL_ERR_INVAL, "kernel height 0");
    g = ok, g.sw = 0;
    VT_CHECK(veil_task_im2col(hx, hc, &g, 0) == VEIL_ERR_INVAL, "stride 0");
    g = ok, g.ph = 3;
    VT_CHECK(veil_task_im2col(hx, hc, &g, 0) == VEIL_ERR_INVAL, "padding = kernel");
    g = ok, g.n = 0;
    VT_CHECK(veil_task_col2im(hc, hx, &g, 0) == VEIL_ERR_INVAL, "batch 0");
    g = ok, g.h = 1, g.kh = 4, g.ph = 1;
    VT_CHECK(veil_task_im2col(hx, hc, &g, 0) == VEIL_ERR_INVAL, "kernel larger than image");
    g = ok, g.n = UINT32_MAX, g.c = UINT32_MAX, g.h = UINT32_MAX, g.w = UINT32_MAX;
    VT_CHECK(veil_task_im2col(hx, hc, &g, 0) == VEIL_ERR_INVAL, "overflowing sizes");
    VT_CHECK(veil_task_im2col(hx, hc, NULL, 0) == VEIL_ERR_INVAL, "NULL geometry");
    VT_CHECK(veil_task_im2col(hx, hc_short, &ok, 0) == VEIL_ERR_SHAPE, "cols too short");
    VT_CHECK(veil_task_col2im(hx, hc, &ok, 0) == VEIL_ERR_SHAPE, "col2im arguments swapped");
    starpu_task_wait_for_all();
    starpu_data_unregister(hx);
    starpu_data_unregister(hc);
    starpu_data_unregister(hc_short);
}

int main(void)
{
    int rc = veil_test_starpu_start();
    if (rc != 0)
        return rc;
    check_layout();
    for (size_t gi = 0; gi < sizeof(geoms) / sizeof(geoms[0]); gi++)
        check(gi);
    check_bad_input();
    veil_test_starpu_stop();
    return veil_test_status();
}

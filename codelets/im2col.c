/*
 * im2col.c — codelets, perf models and submit helpers of im2col (NCHW image to the per-image
 * (C*kh*kw) x (OH*OW) column matrix that turns a convolution into a GEMM) and of its adjoint
 * col2im (the convolution backward pass), plus the geometry check both share. Zero padding,
 * dilation 1. CPU bodies are in cpu/im2col.c.
 */
#include "config.h"

#include "codelets/codelets_internal.h"
#ifdef VEIL_USE_CUDA
#include "codelets/cuda/cuda_internal.h"
#endif

#include "base/base_internal.h"
#include "base/trace.h"
#include "net/idle.h"

#include <string.h>

/*
 * History footprint: the buffers' element counts do not pin the cost down (the same sizes fit
 * several geometries), so hash the geometry the task carries by value as well.
 */
static uint32_t geom_footprint(struct starpu_task *task)
{
    struct veil_im2col_geom g;
    starpu_codelet_unpack_args(task->cl_arg, &g);
    return starpu_hash_crc32c_be_n(&g, sizeof(g), starpu_task_data_footprint(task));
}

static struct starpu_perfmodel im2col_model = {
    .type = STARPU_HISTORY_BASED,
    .symbol = "veil_im2col",
    .size_base = veil_codelet_size_base,
    .footprint = geom_footprint,
};
static struct starpu_perfmodel col2im_model = {
    .type = STARPU_HISTORY_BASED,
    .symbol = "veil_col2im",
    .size_base = veil_codelet_size_base,
    .footprint = geom_footprint,
};

/* CUDA bodies (codelets/cuda/) are registered when the StarPU found has CUDA (VEIL_USE_CUDA). */
struct starpu_codelet veil_im2col_cl = {
    .cpu_funcs = {veil_im2col_cpu},
    .cpu_funcs_name = {"veil_im2col_cpu"},
#ifdef VEIL_USE_CUDA
    .cuda_funcs = {veil_im2col_cuda},
    .cuda_flags = {STARPU_CUDA_ASYNC},
#endif
    .nbuffers = 2,
    .modes = {STARPU_R, STARPU_W},
    .model = &im2col_model,
    .name = "veil_im2col",
};

struct starpu_codelet veil_col2im_cl = {
    .cpu_funcs = {veil_col2im_cpu},
    .cpu_funcs_name = {"veil_col2im_cpu"},
#ifdef VEIL_USE_CUDA
    .cuda_funcs = {veil_col2im_cuda},
    .cuda_flags = {STARPU_CUDA_ASYNC},
#endif
    .nbuffers = 2,
    .modes = {STARPU_R, STARPU_W},
    .model = &col2im_model,
    .name = "veil_col2im",
};

/* a * b into *r; 0 on overflow of size_t. */
static int mul_ok(size_t a, size_t b, size_t *r)
{
    return !__builtin_mul_overflow(a, b, r);
}

int veil_im2col_geom_check(const struct veil_im2col_geom *g, size_t *oh, size_t *ow,
                           size_t *image_len, size_t *cols_len)
{
    if (g == NULL)
        return veil_error(VEIL_ERR_INVAL, "im2col: geometry is NULL");
    if (g->n == 0 || g->c == 0 || g->h == 0 || g->w == 0)
        return veil_error(VEIL_ERR_INVAL, "im2col: image size n=%u c=%u h=%u w=%u has a zero", g->n,
                          g->c, g->h, g->w);
    if (g->kh == 0 || g->kw == 0)
        return veil_error(VEIL_ERR_INVAL, "im2col: kernel %ux%u has a zero side", g->kh, g->kw);
    if (g->sh == 0 || g->sw == 0)
        return veil_error(VEIL_ERR_INVAL, "im2col: stride %ux%u has a zero", g->sh, g->sw);
    if (g->ph >= g->kh || g->pw >= g->kw)
        return veil_error(VEIL_ERR_INVAL,
                          "im2col: padding %ux%u must be smaller than the kernel %ux%u", g->ph,
                          g->pw, g->kh, g->kw);
    uint64_t hp = (uint64_t)g->h + 2 * (uint64_t)g->ph;
    uint64_t wp = (uint64_t)g->w + 2 * (uint64_t)g->pw;
    if (hp < g->kh || wp < g->kw)
        return veil_error(VEIL_ERR_INVAL,
                          "im2col: kernel %ux%u is larger than the padded image %llux%llu "
                          "(output would be empty)",
                          g->kh, g->kw, (unsigned long long)hp, (unsigned long long)wp);
    size_t o_h = (size_t)((hp - g->kh) / g->sh + 1);
    size_t o_w = (size_t)((wp - g->kw) / g->sw + 1);
    size_t img, rows, cols, plane, bytes;
    /* Every element count, and its size in bytes, must fit in size_t. */
    if (!mul_ok(g->n, g->c, &img) || !mul_ok(img, g->h, &img) || !mul_ok(img, g->w, &img) ||
        !mul_ok(g->c, g->kh, &rows) || !mul_ok(rows, g->kw, &rows) || !mul_ok(o_h, o_w, &plane) ||
        !mul_ok(rows, plane, &cols) || !mul_ok(cols, g->n, &cols) ||
        !mul_ok(img, sizeof(uint64_t), &bytes) || !mul_ok(cols, sizeof(uint64_t), &bytes))
        return veil_error(VEIL_ERR_INVAL, "im2col: geometry is too large for this machine");
    if (oh)
        *oh = o_h;
    if (ow)
        *ow = o_w;
    if (image_len)
        *image_len = img;
    if (cols_len)
        *cols_len = cols;
    return VEIL_OK;
}

static int submit(struct starpu_codelet *cl, const char *name, starpu_data_handle_t in,
                  starpu_data_handle_t out, const struct veil_im2col_geom *g, int forward,
                  int priority)
{
    size_t image_len, cols_len, nin, nout;
    int rc;
    char what[48];

    if ((rc = veil_im2col_geom_check(g, NULL, NULL, &image_len, &cols_len)) != VEIL_OK)
        return rc;
    snprintf(what, sizeof(what), "%s: input", name);
    if ((rc = veil_codelet_check_vector(in, what, &nin)) != VEIL_OK)
        return rc;
    snprintf(what, sizeof(what), "%s: output", name);
    if ((rc = veil_codelet_check_vector(out, what, &nout)) != VEIL_OK)
        return rc;
    if (in == out)
        return veil_error(VEIL_ERR_INVAL, "%s: the output handle must differ from the input", name);
    size_t want_in = forward ? image_len : cols_len;
    size_t want_out = forward ? cols_len : image_len;
    if (nin != want_in || nout != want_out)
        return veil_error(VEIL_ERR_SHAPE,
                          "%s: geometry needs %zu input and %zu output elements, handles have "
                          "%zu and %zu",
                          name, want_in, want_out, nin, nout);
    struct veil_im2col_geom geom = *g;
    rc = starpu_task_insert(cl, STARPU_R, in, STARPU_W, out, STARPU_VALUE, &geom, sizeof(geom),
                            STARPU_PRIORITY, priority, STARPU_EXECUTE_ON_WORKER,
                            veil_place_worker(out), VEIL_TRACE_TASK, 0);
    veil_net_idle_kick(); /* it may be ready: resume paused workers */
    if (rc != 0)
        return veil_error(VEIL_ERR_STARPU, "%s: starpu_task_insert failed (%s)", name,
                          strerror(-rc));
    return VEIL_OK;
}

int veil_task_im2col(starpu_data_handle_t image, starpu_data_handle_t cols,
                     const struct veil_im2col_geom *g, int priority)
{
    return submit(&veil_im2col_cl, "im2col", image, cols, g, 1, priority);
}

int veil_task_col2im(starpu_data_handle_t cols, starpu_data_handle_t image,
                     const struct veil_im2col_geom *g, int priority)
{
    return submit(&veil_col2im_cl, "col2im", cols, image, g, 0, priority);
}

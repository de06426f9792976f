/*
 * pool.c — max over the last dimension by a tournament tree (with the one-hot argmax carried
 * down the tree in the same rounds), max / average pooling and max pooling's backward pass
 * (protocols and costs in pool.h). The rearrangements (pair differences, window gathers, the
 * backward scatter-add) are small local codelets in pool_codelets.c (declared in
 * pool_internal.h, their element math in pool_common.h, their CUDA bodies in
 * tasks/cuda/pool.cu): no composition of the generic codelets does a strided gather in one pass.
 */
#include "config.h"
#include "base/base_internal.h"
#include "codelets/codelets_internal.h"
#include "tasks/beaver.h"
#include "tasks/compare.h"
#include "tasks/compare_internal.h"
#include "tasks/pool.h"
#include "tasks/pool_internal.h"
#include "tasks/trunc.h"

#include <stdlib.h>
#include <string.h>

/* ---- helpers -------------------------------------------------------------------------- */

/* A single-handle 1-D arithmetic tensor of n elements. */
static int flat_new(veil_mpc_t *m, size_t n, struct veil_sec *t)
{
    const size_t dims[1] = {n};
    return veil_sec_init(m, t, VEIL_SHARE_ARITH, 1, dims, SIZE_MAX);
}

/* Gives t the shape dims (same element count; the single handle is unchanged). */
static void reshape(struct veil_sec *t, int ndim, const size_t *dims)
{
    t->ndim = ndim;
    memset(t->dims, 0, sizeof t->dims);
    for (int i = 0; i < ndim; i++)
        t->dims[i] = dims[i];
}

/* *out = x as one handle: a copy of x's tiles when it has several, else x's own handle
 * (*owned = 0: not to be released). */
static int single(veil_mpc_t *m, const struct veil_sec *x, struct veil_sec *out, int *owned)
{
    if (x->ntiles == 1) {
        *out = *x;
        *owned = 0;
        return VEIL_OK;
    }
    *owned = 1;
    int rc = flat_new(m, x->numel, out);
    if (rc != VEIL_OK || !veil_mpc_computes(m))
        return rc;
    const int nin = x->ntiles;
    starpu_data_handle_t *h = malloc(sizeof *h * (size_t)(nin + 1));
    enum starpu_data_access_mode *md = malloc(sizeof *md * (size_t)(nin + 1));
    if (!h || !md) {
        free(h);
        free(md);
        return veil_error(VEIL_ERR_NOMEM, "pool: out of memory");
    }
    h[0] = out->h[0];
    md[0] = STARPU_W;
    for (int i = 0; i < nin; i++) {
        h[1 + i] = x->h[i];
        md[1 + i] = STARPU_R;
    }
    rc = veil_cmp_submit(m, &veil_pool_concat_cl, "pool", h, md, nin + 1, &nin, sizeof nin);
    free(h);
    free(md);
    return rc;
}

static struct veil_sec flat_view(const struct veil_sec *x)
{
    struct veil_sec v = *x;
    reshape(&v, 1, &x->numel);
    return v;
}

static int submit2(veil_mpc_t *m, struct starpu_codelet *cl, starpu_data_handle_t a,
                   starpu_data_handle_t b, const void *arg, size_t size)
{
    if (!veil_mpc_computes(m))
        return VEIL_OK;
    const starpu_data_handle_t h[2] = {a, b};
    return veil_cmp_submit(m, cl, cl->name, h, NULL, 2, arg, size);
}

#define H(t) (veil_mpc_computes(m) ? (t).h[0] : NULL)

/* ---- max over the last dimension ------------------------------------------------------ */

/* A copy of the single-handle tensor src into a new single-handle 1-D tensor. */
static int copy_new(veil_mpc_t *m, const struct veil_sec *src, struct veil_sec *out)
{
    int rc = flat_new(m, src->numel, out);
    if (rc == VEIL_OK && veil_mpc_computes(m))
        rc = veil_task_add_scalar(src->h[0], 0, out->h[0], veil_mpc_priority(m));
    return rc;
}

/* The tournament over in (rows x k, one handle, borrowed); results single-handle 1-D. */
static int tournament(veil_mpc_t *m, const struct veil_sec *in, size_t rows, size_t k,
                      struct veil_sec *max, struct veil_sec *onehot)
{
    struct veil_sec cur = *in, oh = {0};
    int owned = 0, rc = VEIL_OK;
    const int p0 = veil_mpc_self(m) == 0;
    if (k == 1 && onehot) { /* a single candidate wins everywhere: oh = 1 */
        struct veil_sec zero = {0};
        if ((rc = flat_new(m, rows, &zero)) == VEIL_OK)
            rc = veil_mpc_add_scalar(m, &zero, 1, &oh);
        veil_mpc_release(m, &zero);
    }
    size_t kl = k, s = 1;
    for (int l = 0; kl > 1 && rc == VEIL_OK; l++, s *= 2) {
        const size_t p = kl / 2, kn = (kl + 1) / 2;
        const size_t cov = onehot && l > 0 ? (2 * p * s < k ? 2 * p * s : k) : 0;
        const size_t mrow = p + cov;
        struct veil_pool_tour_arg a = {
            .rows = rows, .kl = kl, .k = k, .m = mrow, .s = s, .party0 = p0};
        struct veil_mpc_mat bit = {0};
        struct veil_sec d = {0}, f = {0}, x = {0}, y = {0}, w = {0}, v2 = {0}, oh2 = {0};
        struct veil_cmp_opened c = {0};
        if ((rc = flat_new(m, rows * p, &d)) == VEIL_OK)
            rc = submit2(m, &veil_pool_diff_cl, H(cur), H(d), &a, sizeof a);
        /* [d < 0] = f ^ beta; d beta alone is local (LTZ opened d - r), products with the
         * one-hot vectors go out in the LTZ's first round */
        if (rc == VEIL_OK)
            rc = veil_cmp_ltz_open(m, &d, &bit, &f, cov ? NULL : &c);
        struct veil_sec *beta = &bit.part[VEIL_PRE_BIT_A];
        if (rc == VEIL_OK && cov) {
            if ((rc = flat_new(m, rows * mrow, &x)) == VEIL_OK &&
                (rc = flat_new(m, rows * mrow, &y)) == VEIL_OK && veil_mpc_computes(m)) {
                const starpu_data_handle_t h[5] = {beta->h[0], d.h[0], oh.h[0], x.h[0], y.h[0]};
                rc = veil_cmp_submit(m, &veil_pool_prep_cl, "max", h, NULL, 5, &a, sizeof a);
            }
            if (rc == VEIL_OK)
                rc = veil_cmp_mul_unmarked(m, &x, &y, &w);
        } else if (rc == VEIL_OK) {
            rc = veil_cmp_x_beta(m, &d, &c, &bit, &w);
        }
        if (rc == VEIL_OK && (rc = flat_new(m, rows * kn, &v2)) == VEIL_OK &&
            veil_mpc_computes(m)) {
            const starpu_data_handle_t h[5] = {cur.h[0], w.h[0], d.h[0], f.h[0], v2.h[0]};
            rc = veil_cmp_submit(m, &veil_pool_combv_cl, "max", h, NULL, 5, &a, sizeof a);
        }
        if (rc == VEIL_OK && onehot && (rc = flat_new(m, rows * k, &oh2)) == VEIL_OK &&
            veil_mpc_computes(m)) {
            if (l == 0) {
                const starpu_data_handle_t h[3] = {f.h[0], beta->h[0], oh2.h[0]};
                rc = veil_cmp_submit(m, &veil_pool_oh0_cl, "max", h, NULL, 3, &a, sizeof a);
            } else {
                const starpu_data_handle_t h[4] = {oh.h[0], w.h[0], f.h[0], oh2.h[0]};
                rc = veil_cmp_submit(m, &veil_pool_oh_cl, "max", h, NULL, 4, &a, sizeof a);
            }
        }
        struct veil_sec *tmp[] = {&d, &f, &x, &y, &w, &oh};
        for (size_t i = 0; i < sizeof tmp / sizeof tmp[0]; i++)
            veil_mpc_release(m, tmp[i]);
        veil_cmp_opened_release(m, &c);
        veil_mpc_mat_release(m, &bit);
        if (owned)
            veil_mpc_release(m, &cur);
        cur = v2;
        owned = 1;
        oh = oh2;
        kl = kn;
    }
    if (rc == VEIL_OK && !owned) { /* k == 1: the maximum is the input itself */
        struct veil_sec c = {0};
        rc = copy_new(m, &cur, &c);
        cur = c;
        owned = 1;
    }
    if (rc != VEIL_OK) {
        if (owned)
            veil_mpc_release(m, &cur);
        veil_mpc_release(m, &oh);
        return rc;
    }
    *max = cur;
    if (onehot)
        *onehot = oh;
    else
        veil_mpc_release(m, &oh);
    return VEIL_OK;
}

static int max_lastdim(veil_mpc_t *m, const struct veil_sec *x, struct veil_sec *max,
                       struct veil_sec *argmax_onehot, int pairwise)
{
    if (!m || !x || (!max && !argmax_onehot) || (!max && !pairwise))
        return veil_error(VEIL_ERR_INVAL, "max_lastdim: NULL argument");
    if (max)
        memset(max, 0, sizeof *max);
    if (argmax_onehot)
        memset(argmax_onehot, 0, sizeof *argmax_onehot);
    if (x->kind != VEIL_SHARE_ARITH || x->ndim < 1)
        return veil_error(VEIL_ERR_INVAL, "max_lastdim: the input must be an arithmetic sharing "
                                          "with at least one dimension");
    const size_t k = x->dims[x->ndim - 1], rows = x->numel / k;
    struct veil_sec src = {0};
    int owned = 0;
    int rc = single(m, x, &src, &owned);
    if (rc == VEIL_OK)
        rc = pairwise ? veil_pool_pairwise(m, &src, NULL, rows, k, max, argmax_onehot)
                      : tournament(m, &src, rows, k, max, argmax_onehot);
    if (owned)
        veil_mpc_release(m, &src);
    if (rc != VEIL_OK)
        return rc;
    const size_t one[1] = {1};
    if (max && x->ndim > 1)
        reshape(max, x->ndim - 1, x->dims);
    else if (max)
        reshape(max, 1, one);
    if (argmax_onehot)
        reshape(argmax_onehot, x->ndim, x->dims);
    return VEIL_OK;
}

int veil_mpc_max_lastdim(veil_mpc_t *m, const struct veil_sec *x, struct veil_sec *max,
                         struct veil_sec *argmax_onehot)
{
    return max_lastdim(m, x, max, argmax_onehot, 0);
}

int veil_mpc_max_lastdim_pairwise(veil_mpc_t *m, const struct veil_sec *x, struct veil_sec *max,
                                  struct veil_sec *argmax_onehot)
{
    return max_lastdim(m, x, max, argmax_onehot, 1);
}

/* ---- pooling -------------------------------------------------------------------------- */

/* Validates g against x (NULL: not checked) and fills the window arguments. */
static int geom(const char *op, const struct veil_sec *x, const struct veil_pool_geom *g,
                struct veil_pool_win_arg *a)
{
    if (!g)
        return veil_error(VEIL_ERR_INVAL, "%s: NULL geometry", op);
    if (!g->batch || !g->c || !g->h || !g->w)
        return veil_error(VEIL_ERR_INVAL, "%s: every image dimension must be >= 1", op);
    if (g->k == 0 || g->stride == 0)
        return veil_error(VEIL_ERR_INVAL, "%s: window k = %zu and stride %zu must be >= 1", op,
                          g->k, g->stride);
    if (g->k > g->h || g->k > g->w)
        return veil_error(VEIL_ERR_INVAL,
                          "%s: a %zu x %zu window is larger than the %zu x %zu "
                          "image",
                          op, g->k, g->k, g->h, g->w);
    memset(a, 0, sizeof *a);
    a->batch = g->batch;
    a->c = g->c;
    a->h = g->h;
    a->w = g->w;
    a->k = g->k;
    a->stride = g->stride;
    a->oh = (g->h - g->k) / g->stride + 1;
    a->ow = (g->w - g->k) / g->stride + 1;
    if (x && (x->ndim != 4 || x->dims[0] != g->batch || x->dims[1] != g->c || x->dims[2] != g->h ||
              x->dims[3] != g->w))
        return veil_error(VEIL_ERR_SHAPE,
                          "%s: the input must be (batch %zu, c %zu, h %zu, w %zu) "
                          "as the geometry says",
                          op, g->batch, g->c, g->h, g->w);
    if (x && x->kind != VEIL_SHARE_ARITH)
        return veil_error(VEIL_ERR_INVAL, "%s: the input must be an arithmetic sharing", op);
    return VEIL_OK;
}

/* out (n elements, one handle) = the window codelet in mode over x (any tiling). */
static int windows(veil_mpc_t *m, const struct veil_sec *x, struct veil_pool_win_arg *a,
                   enum veil_pool_win_mode mode, size_t n, struct veil_sec *out)
{
    struct veil_sec src = {0};
    int owned = 0;
    a->mode = mode;
    int rc = single(m, x, &src, &owned);
    if (rc == VEIL_OK && (rc = flat_new(m, n, out)) == VEIL_OK)
        rc = submit2(m, &veil_pool_win_cl, H(src), H(*out), a, sizeof *a);
    if (owned)
        veil_mpc_release(m, &src);
    return rc;
}

/* Max pooling of x, its windows compared by s (NULL: x itself). */
static int maxpool(veil_mpc_t *m, const struct veil_sec *s, const struct veil_sec *x,
                   const struct veil_pool_geom *g, struct veil_sec *y, struct veil_sec *route)
{
    if (!m || !x || !y)
        return veil_error(VEIL_ERR_INVAL, "maxpool2d: NULL argument");
    memset(y, 0, sizeof *y);
    if (route)
        memset(route, 0, sizeof *route);
    struct veil_pool_win_arg a;
    int rc = geom("maxpool2d", x, g, &a);
    if (rc != VEIL_OK)
        return rc;
    const size_t kk = g->k * g->k, rows = g->batch * g->c * a.oh * a.ow;
    const size_t cand = kk + (g->relu ? 1 : 0);
    if (g->relu && (!g->pairwise || route))
        return veil_error(VEIL_ERR_INVAL, "maxpool2d: the fused ReLU needs the pairwise protocol "
                                          "and no route");
    if (g->pairwise && cand > VEIL_PAIRWISE_MAX_K)
        return veil_error(VEIL_ERR_INVAL,
                          "maxpool2d: a %zu x %zu window has %zu candidates; the "
                          "pairwise protocol takes at most %d",
                          g->k, g->k, cand, VEIL_PAIRWISE_MAX_K);
    struct veil_pool_win_arg as;
    if (s && !g->relu)
        return veil_error(VEIL_ERR_INVAL,
                          "maxpool2d: a separate comparison operand needs the fused ReLU");
    if (s && (rc = geom("maxpool2d", s, g, &as)) != VEIL_OK)
        return rc;
    struct veil_sec win = {0}, swin = {0};
    if ((rc = windows(m, x, &a, VEIL_POOL_WIN_GATHER, rows * kk, &win)) == VEIL_OK && s)
        rc = windows(m, s, &a, VEIL_POOL_WIN_GATHER, rows * kk, &swin);
    if (rc == VEIL_OK)
        rc = g->relu       ? veil_pool_pairwise_relu(m, &win, s ? &swin : NULL, rows, kk, y)
             : g->pairwise ? veil_pool_pairwise(m, &win, NULL, rows, kk, y, route)
                           : tournament(m, &win, rows, kk, y, route);
    veil_mpc_release(m, &win);
    veil_mpc_release(m, &swin);
    if (rc != VEIL_OK)
        return rc;
    const size_t dims[5] = {g->batch, g->c, a.oh, a.ow, kk};
    reshape(y, 4, dims);
    if (route)
        reshape(route, 5, dims);
    return VEIL_OK;
}

int veil_mpc_maxpool2d(veil_mpc_t *m, const struct veil_sec *x, const struct veil_pool_geom *g,
                       struct veil_sec *y, struct veil_sec *route)
{
    return maxpool(m, NULL, x, g, y, route);
}

int veil_mpc_maxpool2d_relu_of(veil_mpc_t *m, const struct veil_sec *s, const struct veil_sec *x,
                               const struct veil_pool_geom *g, struct veil_sec *y)
{
    return maxpool(m, s, x, g, y, NULL);
}

int veil_mpc_maxpool2d_backward(veil_mpc_t *m, const struct veil_sec *route,
                                const struct veil_sec *dy, const struct veil_pool_geom *g,
                                struct veil_sec *dx)
{
    if (!m || !route || !dy || !dx)
        return veil_error(VEIL_ERR_INVAL, "maxpool2d_backward: NULL argument");
    memset(dx, 0, sizeof *dx);
    struct veil_pool_win_arg a;
    int rc = geom("maxpool2d_backward", NULL, g, &a);
    if (rc != VEIL_OK)
        return rc;
    const size_t kk = g->k * g->k, rows = g->batch * g->c * a.oh * a.ow;
    if (route->numel != rows * kk || dy->numel != rows)
        return veil_error(VEIL_ERR_SHAPE,
                          "maxpool2d_backward: route has %zu elements and dy "
                          "%zu; the geometry needs %zu and %zu",
                          route->numel, dy->numel, rows * kk, rows);
    struct veil_sec r1 = {0}, dys = {0}, e = {0}, pr = {0};
    int owned = 0, dys_owned = 0;
    if ((rc = single(m, route, &r1, &owned)) != VEIL_OK)
        return rc;
    const struct veil_sec rf = flat_view(&r1);
    /* dy repeated over each window, one product with the route, then the scatter-add. */
    a.mode = VEIL_POOL_WIN_EXPAND;
    if ((rc = single(m, dy, &dys, &dys_owned)) == VEIL_OK &&
        (rc = flat_new(m, rows * kk, &e)) == VEIL_OK)
        rc = submit2(m, &veil_pool_win_cl, H(dys), H(e), &a, sizeof a);
    if (rc == VEIL_OK)
        rc = veil_mpc_mul(m, &rf, &e, &pr);
    a.mode = VEIL_POOL_WIN_SCATTER;
    if (rc == VEIL_OK && (rc = flat_new(m, g->batch * g->c * g->h * g->w, dx)) == VEIL_OK)
        rc = submit2(m, &veil_pool_win_cl, H(pr), H(*dx), &a, sizeof a);
    if (owned)
        veil_mpc_release(m, &r1);
    if (dys_owned)
        veil_mpc_release(m, &dys);
    veil_mpc_release(m, &e);
    veil_mpc_release(m, &pr);
    if (rc != VEIL_OK)
        return rc;
    const size_t dims[4] = {g->batch, g->c, g->h, g->w};
    reshape(dx, 4, dims);
    return VEIL_OK;
}

int veil_mpc_avgpool2d(veil_mpc_t *m, const struct veil_sec *x, const struct veil_pool_geom *g,
                       struct veil_sec *y)
{
    if (!m || !x || !y)
        return veil_error(VEIL_ERR_INVAL, "avgpool2d: NULL argument");
    memset(y, 0, sizeof *y);
    struct veil_pool_win_arg a;
    int rc = geom("avgpool2d", x, g, &a);
    if (rc != VEIL_OK)
        return rc;
    const int f = veil_mpc_frac_bits(m);
    if (f < 1)
        return veil_error(VEIL_ERR_INVAL,
                          "avgpool2d: needs fixed point with f >= 1 fractional "
                          "bits (f = %d)",
                          f);
    const size_t kk = g->k * g->k, rows = g->batch * g->c * a.oh * a.ow;
    /* 1 / k^2 in fixed point, rounded to nearest. */
    const uint64_t inv = ((UINT64_C(1) << f) + kk / 2) / kk;
    struct veil_sec sum = {0}, scaled = {0};
    if ((rc = windows(m, x, &a, VEIL_POOL_WIN_SUM, rows, &sum)) == VEIL_OK)
        rc = veil_mpc_mul_scalar(m, &sum, inv, &scaled);
    if (rc == VEIL_OK)
        rc = veil_mpc_trunc(m, &scaled, f, y);
    veil_mpc_release(m, &sum);
    veil_mpc_release(m, &scaled);
    if (rc != VEIL_OK)
        return rc;
    const size_t dims[4] = {g->batch, g->c, a.oh, a.ow};
    reshape(y, 4, dims);
    return VEIL_OK;
}

int veil_mpc_avgpool2d_backward(veil_mpc_t *m, const struct veil_sec *dy,
                                const struct veil_pool_geom *g, struct veil_sec *dx)
{
    if (!m || !dy || !dx)
        return veil_error(VEIL_ERR_INVAL, "avgpool2d_backward: NULL argument");
    memset(dx, 0, sizeof *dx);
    struct veil_pool_win_arg a;
    int rc = geom("avgpool2d_backward", NULL, g, &a);
    if (rc != VEIL_OK) /* g may be NULL */
        return rc;
    const int f = veil_mpc_frac_bits(m);
    const size_t kk = g->k * g->k, rows = g->batch * g->c * a.oh * a.ow;
    if (f < 1 || dy->numel != rows)
        rc = veil_error(VEIL_ERR_SHAPE, "avgpool2d_backward: dy has %zu elements, the geometry "
                        "needs %zu (f = %d >= 1)", dy->numel, rows, f);
    if (rc != VEIL_OK)
        return rc;
    /* t = trunc(dy * round(2^f / k^2)) (the forward's constant), repeated over each window's
     * taps, then the scatter-add: everything after the truncation is local */
    struct veil_sec sc = {0}, t = {0}, ts = {0}, e = {0};
    int owned = 0;
    if ((rc = veil_mpc_mul_scalar(m, dy, ((UINT64_C(1) << f) + kk / 2) / kk, &sc)) == VEIL_OK)
        rc = veil_mpc_trunc(m, &sc, f, &t);
    if (rc == VEIL_OK && (rc = single(m, &t, &ts, &owned)) == VEIL_OK &&
        (rc = flat_new(m, rows * kk, &e)) == VEIL_OK) {
        a.mode = VEIL_POOL_WIN_EXPAND;
        rc = submit2(m, &veil_pool_win_cl, H(ts), H(e), &a, sizeof a);
    }
    if (rc == VEIL_OK && (rc = flat_new(m, g->batch * g->c * g->h * g->w, dx)) == VEIL_OK) {
        a.mode = VEIL_POOL_WIN_SCATTER;
        rc = submit2(m, &veil_pool_win_cl, H(e), H(*dx), &a, sizeof a);
    }
    if (owned)
        veil_mpc_release(m, &ts);
    veil_mpc_release(m, &sc);
    veil_mpc_release(m, &t);
    veil_mpc_release(m, &e);
    if (rc != VEIL_OK)
        return rc;
    const size_t dims[4] = {g->batch, g->c, g->h, g->w};
    reshape(dx, 4, dims);
    return VEIL_OK;
}

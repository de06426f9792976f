/*
 * conv.c — secure 2-D convolution with one CONV item (input- and weight-sized opens, im2col and
 * per-image GEMMs done locally on public and share data), and its two backward products as
 * MATMUL triples over the im2col / GEMM formulation (contracts and costs in beaver.h).
 *
 * Traffic of the backward products: grad_input opens W (OC x CKK) and dY (OC x B OH OW), the
 * same words a dedicated transposed-convolution triple would open. grad_weight opens dY and
 * im2col(x)^T (B OH OW x CKK): a dedicated correlation triple (masks of x, dY and
 * corr(mask_x, mask_dY)) would open x itself instead, |x| = B C H W words rather than
 * B OH OW C KH KW, i.e. about KH KW / stride^2 times fewer; preproc.h has no such item yet.
 *
 * Overlap (MPC-Pipe's inter-linear pipeline): the weight's open (w - B) and im2col of the input
 * mask depend only on w and the material, so when the caller submits layers ahead they run before
 * the input arrives; conv(A, E) then runs while D = x - A is in flight.
 */
#include "config.h"
#include "tasks/beaver.h"

#include "base/base_internal.h"
#include "codelets/codelets_internal.h"
#include "tasks/beaver_internal.h"
#include "tasks/mpc_internal.h"

#include <stdio.h>
#include <string.h>

/* Checked geometry: the im2col form and the derived sizes. */
struct geom {
    struct veil_im2col_geom ig;
    size_t oh, ow, ohow, ckk, xlen, wlen, ylen, cols_len;
};

static int check_geom(const char *op, const struct veil_conv_geom *g, struct geom *o)
{
    if (!g)
        return veil_error(VEIL_ERR_INVAL, "%s: geometry is NULL", op);
    const size_t v[9] = {g->batch, g->c, g->h, g->w, g->oc, g->kh, g->kw, g->stride, g->pad};
    static const char *names[9] = {"batch", "c", "h", "w", "oc", "kh", "kw", "stride", "pad"};
    for (int i = 0; i < 9; i++) {
        if (v[i] > UINT32_MAX)
            return veil_error(VEIL_ERR_INVAL, "%s: geometry %s = %zu does not fit 32 bits", op,
                              names[i], v[i]);
        if (v[i] == 0 && i != 8)
            return veil_error(VEIL_ERR_INVAL, "%s: geometry %s is 0; every size must be >= 1", op,
                              names[i]);
    }
    if (g->pad >= g->kh || g->pad >= g->kw)
        return veil_error(VEIL_ERR_INVAL,
                          "%s: padding %zu must be smaller than the kernel "
                          "(%zu x %zu)",
                          op, g->pad, g->kh, g->kw);
    if (g->h + 2 * g->pad < g->kh || g->w + 2 * g->pad < g->kw)
        return veil_error(VEIL_ERR_INVAL,
                          "%s: a %zu x %zu kernel does not fit the padded %zu x "
                          "%zu input",
                          op, g->kh, g->kw, g->h + 2 * g->pad, g->w + 2 * g->pad);
    o->ig = (struct veil_im2col_geom){.n = (uint32_t)g->batch,
                                      .c = (uint32_t)g->c,
                                      .h = (uint32_t)g->h,
                                      .w = (uint32_t)g->w,
                                      .kh = (uint32_t)g->kh,
                                      .kw = (uint32_t)g->kw,
                                      .sh = (uint32_t)g->stride,
                                      .sw = (uint32_t)g->stride,
                                      .ph = (uint32_t)g->pad,
                                      .pw = (uint32_t)g->pad};
    int rc = veil_im2col_geom_check(&o->ig, &o->oh, &o->ow, &o->xlen, &o->cols_len);
    if (rc != VEIL_OK) {
        char why[256]; /* the message is rewritten below: copy it first */
        snprintf(why, sizeof why, "%s", veil_last_error());
        return veil_error(rc, "%s: %s", op, why);
    }
    o->ohow = o->oh * o->ow;
    o->ckk = g->c * g->kh * g->kw;
    o->wlen = g->oc * o->ckk;
    o->ylen = g->batch * g->oc * o->ohow;
    return VEIL_OK;
}

/* t must be an arithmetic one-handle 4-D tensor with dims d. */
static int check_t4(const char *op, const char *what, const struct veil_sec *t, const size_t *d)
{
    if (!t)
        return veil_error(VEIL_ERR_INVAL, "%s: %s is NULL", op, what);
    if (t->kind != VEIL_SHARE_ARITH)
        return veil_error(VEIL_ERR_INVAL, "%s: %s holds binary shares; use arithmetic shares", op,
                          what);
    if (t->ndim != 4 || t->dims[0] != d[0] || t->dims[1] != d[1] || t->dims[2] != d[2] ||
        t->dims[3] != d[3])
        return veil_error(VEIL_ERR_SHAPE,
                          "%s: %s must be 4-D %zu x %zu x %zu x %zu for this "
                          "geometry",
                          op, what, d[0], d[1], d[2], d[3]);
    if (t->ntiles != 1)
        return veil_error(VEIL_ERR_SHAPE,
                          "%s: %s is split into %d tiles; create it with tile "
                          "SIZE_MAX (one handle)",
                          op, what, t->ntiles);
    return VEIL_OK;
}

static int init1(veil_mpc_t *m, struct veil_sec *t, size_t n)
{
    return veil_sec_init(m, t, VEIL_SHARE_ARITH, 1, &n, SIZE_MAX);
}

static int init2(veil_mpc_t *m, struct veil_sec *t, size_t r, size_t c)
{
    const size_t d[2] = {r, c};
    return veil_sec_init(m, t, VEIL_SHARE_ARITH, 2, d, SIZE_MAX);
}

/* Y (batch, oc, ohow) (=|+=) Wm (oc x ckk) . cols_b (ckk x ohow), per image. */
static int conv_gemm(starpu_data_handle_t wm, starpu_data_handle_t cols, starpu_data_handle_t y,
                     const struct geom *o, size_t oc, int acc, int priority)
{
    struct veil_bgemm_args g = {.m = oc,
                                .n = o->ohow,
                                .k = o->ckk,
                                .accumulate = acc,
                                .batch = o->ig.n,
                                .sa = 0,
                                .sb = o->ckk * o->ohow,
                                .sc = oc * o->ohow};
    return veil_task_bgemm(wm, cols, y, &g, priority);
}

/*
 * The local products of a split placement: the (batch, oc, ohow) result cut into pr image ranges x
 * pc output-channel ranges; block q computes conv(D, mb) and conv(ma, E) (at party 0 one of them
 * folds conv(D, E) in, veil_mpc_fold_de) for its images and channels from the same im2col columns
 * and weight shares into its own temporaries (tagged q: device q mod D under a spread placement);
 * one block sum adds C and every part into y. The same products as the unsplit path, exactly.
 */
static int conv_split(veil_mpc_t *m, const struct geom *o, size_t oc, starpu_data_handle_t mb,
                      starpu_data_handle_t e, starpu_data_handle_t cd, starpu_data_handle_t ca,
                      starpu_data_handle_t c_part, int pr, int pc, starpu_data_handle_t y)
{
    const size_t batch = o->ig.n;
    const int nblk = pr * pc;
    struct veil_sec t[VEIL_BLOCK_MAX];
    starpu_data_handle_t parts[VEIL_BLOCK_MAX];
    struct veil_block_sum_args bs = {.B = batch, .R = oc, .C = o->ohow, .nparts = 2 * nblk};
    int rc = VEIL_OK, q = 0;
    memset(t, 0, sizeof t);
    for (int i = 0; i < pr && rc == VEIL_OK; i++)
        for (int j = 0; j < pc && rc == VEIL_OK; j++, q++) {
            const size_t b0 = batch * i / pr, b1 = batch * (i + 1) / pr;
            const size_t o0 = oc * j / pc, o1 = oc * (j + 1) / pc;
            const size_t n = (b1 - b0) * (o1 - o0) * o->ohow;
            if ((rc = veil_sec_init(m, &t[2 * q], VEIL_SHARE_ARITH, 1, &n, SIZE_MAX)) ||
                (rc = veil_sec_init(m, &t[2 * q + 1], VEIL_SHARE_ARITH, 1, &n, SIZE_MAX)))
                break;
            veil_place_tag(t[2 * q].h[0], q);
            veil_place_tag(t[2 * q + 1].h[0], q);
            struct veil_bgemm_args g = {.m = o1 - o0,
                                        .n = o->ohow,
                                        .k = o->ckk,
                                        .batch = b1 - b0,
                                        .sa = 0,
                                        .sb = o->ckk * o->ohow,
                                        .sc = (o1 - o0) * o->ohow,
                                        .oa = o0 * o->ckk,
                                        .ob = b0 * o->ckk * o->ohow};
            const int prio = veil_mpc_priority(m);
            if ((rc = veil_task_bgemm(mb, cd, t[2 * q].h[0], &g, prio)) ||
                (rc = veil_task_bgemm(e, ca, t[2 * q + 1].h[0], &g, prio)))
                break;
            for (int h = 0; h < 2; h++) {
                parts[2 * q + h] = t[2 * q + h].h[0];
                bs.blk[2 * q + h] = (struct veil_block){b0, b1 - b0, o0, o1 - o0, 0, o->ohow};
            }
        }
    if (rc == VEIL_OK)
        rc = veil_task_block_sum(c_part, parts, &bs, y, veil_mpc_priority(m));
    for (int i = 0; i < 2 * nblk; i++)
        veil_mpc_release(m, &t[i]);
    return rc;
}

int veil_mpc_conv2d_check(const char *op, const struct veil_sec *x, const struct veil_sec *w,
                          const struct veil_conv_geom *g, const struct veil_sec *y)
{
    struct geom o;
    int rc;
    if ((rc = check_geom(op, g, &o)) != VEIL_OK)
        return rc;
    const size_t xd[4] = {g->batch, g->c, g->h, g->w}, wd[4] = {g->oc, g->c, g->kh, g->kw};
    if ((rc = check_t4(op, "x", x, xd)) != VEIL_OK || (rc = check_t4(op, "w", w, wd)) != VEIL_OK)
        return rc;
    if (!y)
        return veil_error(VEIL_ERR_INVAL, "%s: y is NULL", op);
    return VEIL_OK;
}

int veil_mpc_conv2d_beaver(veil_mpc_t *m, const struct veil_sec *x, const struct veil_sec *w,
                           const struct veil_conv_geom *g, const uint64_t *wid,
                           struct veil_pub *e_keep, struct veil_sec *b_keep, struct veil_sec *y)
{
    struct geom o;
    int rc;
    if ((rc = check_geom("conv2d", g, &o)) != VEIL_OK)
        return rc;
    const size_t yd[4] = {g->batch, g->oc, o.oh, o.ow};
    memset(y, 0, sizeof *y);
    struct veil_mpc_mat mat;
    struct veil_preproc_item item =
        wid ? veil_preproc_item_conv_ws(0, g->batch, g->c, g->h, g->w, g->oc, g->kh, g->kw,
                                        g->stride, g->pad, *wid)
            : veil_preproc_item_conv(0, g->batch, g->c, g->h, g->w, g->oc, g->kh, g->kw, g->stride,
                                     g->pad);
    rc = veil_mpc_ws_material(m, item, b_keep, &mat);
    if (rc != VEIL_OK)
        return rc;
    struct veil_sec d = {0}, e_tmp = {0}, cd = {0}, ca = {0}, de = {0}, ua = {0}, ub = {0};
    struct veil_pub *e = e_keep ? e_keep : &e_tmp;
    const int reuse = e->data != NULL; /* E = w - B of this B opened by an earlier call */
    int pr, pc, pk;
    veil_mpc_product_split(g->batch, g->oc, 1, &pr, &pc, &pk);
    /* unsplit, a computing party's y is the correction part C (below); else allocated here */
    if (!veil_mpc_computes(m) || pr * pc > 1) {
        rc = veil_sec_init(m, y, VEIL_SHARE_ARITH, 4, yd, SIZE_MAX);
        veil_mpc_note_alloc(m, o.cols_len); /* a party's cd and ca, below */
        veil_mpc_note_alloc(m, o.cols_len);
        if (rc != VEIL_OK || !veil_mpc_computes(m))
            goto out;
    }
    struct veil_sec ma = veil_mpc_part_view(&mat.part[VEIL_PRE_A], x);
    struct veil_sec mb = veil_mpc_part_view(&mat.part[VEIL_PRE_B], w);
    if ((rc = veil_mpc_open(m, x, &ma, &d)) != VEIL_OK ||
        (!reuse && (rc = veil_mpc_open(m, w, &mb, e)) != VEIL_OK))
        goto out;
    veil_mpc_round(m);
    if ((rc = init1(m, &cd, o.cols_len)) != VEIL_OK ||
        (rc = init1(m, &ca, o.cols_len)) != VEIL_OK ||
        (rc = veil_mpc_fold_de(m, &ma, d.h[0], &mb, e->h[0], &de, &ua, &ub)) != VEIL_OK)
        goto out;
    if (pr * pc > 1) {
        if ((rc = veil_task_im2col(ua.h[0], ca.h[0], &o.ig, veil_mpc_priority(m))) == VEIL_OK &&
            (rc = veil_task_im2col(d.h[0], cd.h[0], &o.ig, veil_mpc_priority(m))) == VEIL_OK)
            rc = conv_split(m, &o, g->oc, ub.h[0], e->h[0], cd.h[0], ca.h[0],
                            mat.part[VEIL_PRE_C].h[0], pr, pc, y->h[0]);
        goto out;
    }
    /* Every local term accumulates onto C, which then is y: conv(A, E) first (E is often an
     * earlier call's, so it runs while D's open travels), then conv(D, B); party 0's
     * conv(D, E) rides on one of them (veil_mpc_fold_de, im2col being linear): two products at
     * every party. No sum task; the same words (addition mod 2^64). */
    starpu_data_handle_t c = mat.part[VEIL_PRE_C].h[0];
    if ((rc = veil_task_im2col(ua.h[0], ca.h[0], &o.ig, veil_mpc_priority(m))) != VEIL_OK ||
        (rc = veil_task_im2col(d.h[0], cd.h[0], &o.ig, veil_mpc_priority(m))) != VEIL_OK ||
        (rc = conv_gemm(e->h[0], ca.h[0], c, &o, g->oc, 1, veil_mpc_priority(m))) != VEIL_OK ||
        (rc = conv_gemm(ub.h[0], cd.h[0], c, &o, g->oc, 1, veil_mpc_priority(m))) != VEIL_OK)
        goto out;
    veil_mpc_part_adopt(&mat.part[VEIL_PRE_C], 4, yd, y);
out:
    veil_mpc_release(m, &de);
    veil_mpc_release(m, &d);
    veil_mpc_release(m, &e_tmp);
    veil_mpc_release(m, &cd);
    veil_mpc_release(m, &ca);
    veil_mpc_ws_settle(&mat, b_keep, rc);
    veil_mpc_mat_release(m, &mat);
    return rc;
}

int veil_mpc_conv2d(veil_mpc_t *m, const struct veil_sec *x, const struct veil_sec *w,
                    const struct veil_conv_geom *g, struct veil_sec *y)
{
    int rc = veil_mpc_conv2d_check("conv2d", x, w, g, y);
    return rc != VEIL_OK ? rc : veil_mpc_conv2d_beaver(m, x, w, g, NULL, NULL, NULL, y);
}

/* dY (batch, oc, ohow) regrouped as the OC x (B OH OW) matrix dYm. */
static int dy_matrix(veil_mpc_t *m, const struct veil_sec *dy, const struct veil_conv_geom *g,
                     const struct geom *o, struct veil_sec *dym)
{
    int rc = init2(m, dym, g->oc, g->batch * o->ohow);
    if (rc != VEIL_OK || !veil_mpc_computes(m))
        return rc;
    const size_t p[4] = {1, g->batch, g->oc, o->ohow};
    return veil_task_swap_axes(dy->h[0], dym->h[0], p, veil_mpc_priority(m));
}

int veil_mpc_conv2d_grad_input(veil_mpc_t *m, const struct veil_sec *w, const struct veil_sec *dy,
                               const struct veil_conv_geom *g, struct veil_sec *dx)
{
    struct geom o;
    int rc;
    if ((rc = check_geom("conv2d_grad_input", g, &o)) != VEIL_OK)
        return rc;
    const size_t wd[4] = {g->oc, g->c, g->kh, g->kw}, yd[4] = {g->batch, g->oc, o.oh, o.ow};
    const size_t xd[4] = {g->batch, g->c, g->h, g->w};
    if ((rc = check_t4("conv2d_grad_input", "w", w, wd)) != VEIL_OK ||
        (rc = check_t4("conv2d_grad_input", "dy", dy, yd)) != VEIL_OK)
        return rc;
    if (!dx)
        return veil_error(VEIL_ERR_INVAL, "conv2d_grad_input: dx is NULL");
    memset(dx, 0, sizeof *dx);
    struct veil_sec wt = {0}, dym = {0}, cols = {0}, colsb = {0};
    /* W^T (CKK x OC) . dYm (OC x B OH OW) = dcols regrouped (CKK x B x OH OW). */
    if ((rc = init2(m, &wt, o.ckk, g->oc)) != VEIL_OK)
        goto out;
    if (veil_mpc_computes(m)) {
        const size_t p[4] = {1, g->oc, o.ckk, 1};
        if ((rc = veil_task_swap_axes(w->h[0], wt.h[0], p, veil_mpc_priority(m))) != VEIL_OK)
            goto out;
    }
    if ((rc = dy_matrix(m, dy, g, &o, &dym)) != VEIL_OK ||
        (rc = veil_mpc_matmul_core(m, &wt, &dym, &cols)) != VEIL_OK ||
        (rc = veil_sec_init(m, dx, VEIL_SHARE_ARITH, 4, xd, SIZE_MAX)) != VEIL_OK)
        goto out;
    if (!veil_mpc_computes(m)) {
        veil_mpc_note_alloc(m, o.cols_len); /* a party's colsb, below */
        goto out;
    }
    if ((rc = init1(m, &colsb, o.cols_len)) != VEIL_OK)
        goto out;
    const size_t p[4] = {1, o.ckk, g->batch, o.ohow};
    if ((rc = veil_task_swap_axes(cols.h[0], colsb.h[0], p, veil_mpc_priority(m))) == VEIL_OK)
        rc = veil_task_col2im(colsb.h[0], dx->h[0], &o.ig, veil_mpc_priority(m));
out:
    veil_mpc_release(m, &wt);
    veil_mpc_release(m, &dym);
    veil_mpc_release(m, &cols);
    veil_mpc_release(m, &colsb);
    return rc;
}

int veil_mpc_conv2d_grad_weight(veil_mpc_t *m, const struct veil_sec *x, const struct veil_sec *dy,
                                const struct veil_conv_geom *g, struct veil_sec *dw)
{
    struct geom o;
    int rc;
    if ((rc = check_geom("conv2d_grad_weight", g, &o)) != VEIL_OK)
        return rc;
    const size_t xd[4] = {g->batch, g->c, g->h, g->w}, yd[4] = {g->batch, g->oc, o.oh, o.ow};
    const size_t wd[4] = {g->oc, g->c, g->kh, g->kw};
    if ((rc = check_t4("conv2d_grad_weight", "x", x, xd)) != VEIL_OK ||
        (rc = check_t4("conv2d_grad_weight", "dy", dy, yd)) != VEIL_OK)
        return rc;
    if (!dw)
        return veil_error(VEIL_ERR_INVAL, "conv2d_grad_weight: dw is NULL");
    memset(dw, 0, sizeof *dw);
    struct veil_sec cols = {0}, colst = {0}, dym = {0}, prod = {0};
    /* dW (OC x CKK) = dYm (OC x B OH OW) . im2col(x)^T (B OH OW x CKK); im2col of the shares is a
     * sharing of im2col(x) (linear, local). */
    if ((rc = init2(m, &colst, g->batch * o.ohow, o.ckk)) != VEIL_OK)
        goto out;
    veil_mpc_note_alloc(m, o.cols_len); /* a party's cols, below */
    if (veil_mpc_computes(m)) {
        const size_t p[4] = {g->batch, o.ckk, o.ohow, 1};
        if ((rc = init1(m, &cols, o.cols_len)) != VEIL_OK ||
            (rc = veil_task_im2col(x->h[0], cols.h[0], &o.ig, veil_mpc_priority(m))) != VEIL_OK ||
            (rc = veil_task_swap_axes(cols.h[0], colst.h[0], p, veil_mpc_priority(m))) != VEIL_OK)
            goto out;
    }
    if ((rc = dy_matrix(m, dy, g, &o, &dym)) != VEIL_OK ||
        (rc = veil_mpc_matmul_core(m, &dym, &colst, &prod)) != VEIL_OK)
        goto out;
    /* prod is OC x CKK row-major, which is OIHW: the tensor is handed over, reshaped. */
    *dw = prod;
    dw->ndim = 4;
    memcpy(dw->dims, wd, sizeof wd);
    memset(&prod, 0, sizeof prod);
out:
    veil_mpc_release(m, &cols);
    veil_mpc_release(m, &colst);
    veil_mpc_release(m, &dym);
    veil_mpc_release(m, &prod);
    return rc;
}

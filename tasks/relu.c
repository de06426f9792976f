/*
 * relu.c — ReLU (y = x [x >= 0], with the 0/1 mask kept for the backward pass), the elementwise
 * maximum and selection z = b ? x : y. ReLU and max cost LTZ's 4 rounds: LTZ ends with the
 * public f and the shared random bit beta, [x < 0] = f XOR beta; the product x * beta does not
 * depend on f, and once f is public x [x >= 0] = (f ? x beta : x - x beta) is local. LTZ's first
 * round opened c = x - r, so x beta = c [beta] + [r beta] is local too, with an RBETA item
 * (veil_cmp_x_beta). veil_mpc_relu_of takes the sign from another operand s (the untruncated
 * value of a linear layer): there c belongs to s, and x beta is a Beaver product whose opens
 * travel in LTZ's first round. Costs in compare.h.
 */
#include "config.h"
#include "base/base_internal.h"
#include "tasks/beaver.h"
#include "tasks/beaver_internal.h"
#include "tasks/compare.h"
#include "tasks/compare_common.h"
#include "tasks/compare_internal.h"
#include "tasks/trunc_common.h"
#ifdef VEIL_USE_CUDA
#include "tasks/cuda/compare_cuda_internal.h"
#endif

#include <string.h>

#define PTR(i) ((uint64_t *)STARPU_VECTOR_GET_PTR(buffers[i]))

/* f (public packed), beta, w = x beta, x -> y = x [x >= 0], mask = [x >= 0] (word math in
 * compare_common.h, CUDA body in cuda/compare.cu). */
static void relu_fin_cpu(void *buffers[], void *cl_arg)
{
    const struct veil_cmp_party_arg *arg = veil_cmp_arg(cl_arg);
    const uint64_t *f = PTR(0), *beta = PTR(1), *w = PTR(2), *x = PTR(3);
    uint64_t *y = PTR(4), *mask = PTR(5);
    const size_t n = STARPU_VECTOR_GET_NX(buffers[4]);
    const uint64_t one = arg->party0 ? 1 : 0;
    for (size_t i = 0; i < n; i++) {
        const uint64_t fi = veil_cmp_packed_bit(f, i);
        y[i] = veil_relu_fin_y(fi, w[i], x[i]);
        mask[i] = veil_relu_fin_mask(fi, beta[i], one);
    }
}

static struct starpu_perfmodel relu_fin_model = {.type = STARPU_HISTORY_BASED,
                                                 .symbol = "veil_relu_finish"};
struct starpu_codelet veil_relu_fin_cl = {
    .cpu_funcs = {relu_fin_cpu},
    .cpu_funcs_name = {"relu_fin_cpu"},
#ifdef VEIL_USE_CUDA
    .cuda_funcs = {veil_relu_fin_cuda},
    .cuda_flags = {STARPU_CUDA_ASYNC},
#endif
    .nbuffers = 6,
    .modes = {STARPU_R, STARPU_R, STARPU_R, STARPU_R, STARPU_W, STARPU_W},
    .model = &relu_fin_model,
    .name = "veil_relu_finish",
};

/* c (public), r_hi, r_63, beta, r_hi beta, r_63 beta -> z = trunc(x), zb = z beta
 * (veil_trunc_neg_elem in trunc_common.h; CUDA body in cuda/compare.cu). */
static void relu_trunc_cpu(void *buffers[], void *cl_arg)
{
    const struct veil_relu_trunc_arg *arg = veil_cmp_arg(cl_arg);
    const uint64_t *c = PTR(0), *rhi = PTR(1), *r63 = PTR(2), *beta = PTR(3), *rhib = PTR(4),
                   *r63b = PTR(5);
    uint64_t *z = PTR(6), *zb = PTR(7);
    const size_t n = STARPU_VECTOR_GET_NX(buffers[6]);
    const uint64_t p0 = arg->party0 ? ~UINT64_C(0) : 0;
    for (size_t i = 0; i < n; i++)
        veil_trunc_neg_elem(c[i], rhi[i], r63[i], beta[i], rhib[i], r63b[i], (unsigned)arg->f, p0,
                            &z[i], &zb[i]);
}

static struct starpu_perfmodel relu_trunc_model = {.type = STARPU_HISTORY_BASED,
                                                   .symbol = "veil_relu_trunc"};
struct starpu_codelet veil_relu_trunc_cl = {
    .cpu_funcs = {relu_trunc_cpu},
    .cpu_funcs_name = {"relu_trunc_cpu"},
#ifdef VEIL_USE_CUDA
    .cuda_funcs = {veil_relu_trunc_cuda},
    .cuda_flags = {STARPU_CUDA_ASYNC},
#endif
    .nbuffers = 8,
    .modes = {STARPU_R, STARPU_R, STARPU_R, STARPU_R, STARPU_R, STARPU_R, STARPU_W, STARPU_W},
    .model = &relu_trunc_model,
    .name = "veil_relu_trunc",
};

int veil_cmp_mul_unmarked(veil_mpc_t *m, const struct veil_sec *x, const struct veil_sec *y,
                          struct veil_sec *z)
{
    memset(z, 0, sizeof *z);
    if (x->numel != y->numel || x->tile != y->tile)
        return veil_error(VEIL_ERR_SHAPE, "mul: %zu vs %zu elements", x->numel, y->numel);
    /* Operands of the same size and tiling, whatever their shapes: the product is elementwise. */
    const struct veil_sec xf = veil_cmp_flat(x), yf = veil_cmp_flat(y);
    return veil_mpc_mul_unmarked(m, &xf, &yf, z);
}

int veil_cmp_x_beta(veil_mpc_t *m, const struct veil_sec *x, const struct veil_cmp_opened *opened,
                    const struct veil_mpc_mat *bit, struct veil_sec *w)
{
    memset(w, 0, sizeof *w);
    const struct veil_sec *beta = &bit->part[VEIL_PRE_BIT_A];
    struct veil_mpc_mat rb;
    struct veil_sec cb = {0};
    int rc = veil_mpc_material(
        m, veil_preproc_item_rbeta(0, x->numel, opened->mask_index, bit->item.index),
        x->ntiles > 1 ? x->tile : SIZE_MAX, &rb);
    if (rc != VEIL_OK)
        return rc;
    if ((rc = veil_mpc_mul_public(m, beta, &opened->c, &cb)) == VEIL_OK)
        rc = veil_mpc_add(m, &cb, &rb.part[0], w);
    veil_mpc_release(m, &cb);
    veil_mpc_mat_release(m, &rb);
    return rc;
}

/* y = x [s >= 0] (s = x: ReLU), mask = [s >= 0]. */
static int relu_of(veil_mpc_t *m, const struct veil_sec *s, const struct veil_sec *x,
                   struct veil_sec *y, struct veil_sec *mask)
{
    if (!m || !s || !x || !y)
        return veil_error(VEIL_ERR_INVAL, "relu: NULL argument");
    memset(y, 0, sizeof *y);
    if (mask)
        memset(mask, 0, sizeof *mask);
    if (!veil_sec_same_layout(s, x))
        return veil_error(VEIL_ERR_SHAPE,
                          "relu: the sign operand and the value must have the same shape and "
                          "tiling (%zu vs %zu elements)",
                          s->numel, x->numel);
    struct veil_mpc_mat bit;
    struct veil_pub f;
    struct veil_sec w = {0}, ge = {0};
    struct veil_cmp_opened c = {0};
    const int own = s == x; /* LTZ's c is x's own: x * beta is local */
    int rc = veil_cmp_ltz_open(m, s, &bit, &f, own ? &c : NULL);
    if (rc != VEIL_OK)
        return rc;
    /* x * beta: local, or its opens go out with LTZ's first round (no round of its own) */
    if ((rc = own ? veil_cmp_x_beta(m, x, &c, &bit, &w)
                  : veil_cmp_mul_unmarked(m, x, &bit.part[VEIL_PRE_BIT_A], &w)) != VEIL_OK ||
        (rc = veil_sec_init_like(m, y, x)) != VEIL_OK ||
        (rc = veil_sec_init_like(m, &ge, x)) != VEIL_OK)
        goto out;
    const struct veil_cmp_party_arg arg = {.party0 = veil_mpc_self(m) == 0};
    for (int t = 0; veil_mpc_computes(m) && t < x->ntiles && rc == VEIL_OK; t++) {
        const starpu_data_handle_t h[6] = {
            f.h[t], bit.part[VEIL_PRE_BIT_A].h[t], w.h[t], x->h[t], y->h[t], ge.h[t]};
        rc = veil_cmp_submit(m, &veil_relu_fin_cl, "relu", h, NULL, 6, &arg, sizeof arg);
    }
out:
    veil_mpc_release(m, &w);
    veil_cmp_opened_release(m, &c);
    veil_mpc_release(m, &f);
    veil_mpc_mat_release(m, &bit);
    if (rc == VEIL_OK && mask) {
        *mask = ge;
    } else {
        veil_mpc_release(m, &ge);
        if (rc != VEIL_OK)
            veil_mpc_release(m, y);
    }
    return rc;
}

int veil_mpc_relu(veil_mpc_t *m, const struct veil_sec *x, struct veil_sec *y,
                  struct veil_sec *mask)
{
    return relu_of(m, x, x, y, mask);
}

int veil_mpc_relu_of(veil_mpc_t *m, const struct veil_sec *s, const struct veil_sec *x,
                     struct veil_sec *y)
{
    return relu_of(m, s, x, y, NULL);
}

int veil_mpc_relu_trunc(veil_mpc_t *m, const struct veil_sec *u, int f, struct veil_sec *y)
{
    if (!m || !u || !y)
        return veil_error(VEIL_ERR_INVAL, "relu_trunc: NULL argument");
    memset(y, 0, sizeof *y);
    if (f < 1 || f > 62)
        return veil_error(VEIL_ERR_INVAL, "relu_trunc: a shift of %d bits; need 1 to 62", f);
    struct veil_mpc_mat bit, ct = {0};
    struct veil_pub fp;
    struct veil_cmp_opened c = {0};
    struct veil_sec z = {0}, zb = {0}, ge = {0};
    int rc = veil_cmp_ltz_open(m, u, &bit, &fp, &c);
    if (rc != VEIL_OK)
        return rc;
    const struct veil_preproc_item it =
        veil_preproc_item_cmptrunc(0, u->numel, c.mask_index, bit.item.index, (uint64_t)f);
    if ((rc = veil_mpc_material(m, it, u->ntiles > 1 ? u->tile : SIZE_MAX, &ct)) != VEIL_OK ||
        (rc = veil_sec_init_like(m, &z, u)) != VEIL_OK ||
        (rc = veil_sec_init_like(m, &zb, u)) != VEIL_OK ||
        (rc = veil_sec_init_like(m, &ge, u)) != VEIL_OK ||
        (rc = veil_sec_init_like(m, y, u)) != VEIL_OK)
        goto out;
    const int p0 = veil_mpc_self(m) == 0;
    const struct veil_relu_trunc_arg ta = {.party0 = p0, .f = f};
    const struct veil_cmp_party_arg fa = {.party0 = p0};
    const struct veil_sec *beta = &bit.part[VEIL_PRE_BIT_A];
    for (int t = 0; veil_mpc_computes(m) && t < u->ntiles && rc == VEIL_OK; t++) {
        /* z = trunc(u), zb = z beta: local from c (tasks/trunc_common.h) */
        const starpu_data_handle_t h[8] = {c.c.h[t],
                                           ct.part[VEIL_PRE_CT_RHI].h[t],
                                           c.r63.h[t],
                                           beta->h[t],
                                           ct.part[VEIL_PRE_CT_RHIB].h[t],
                                           ct.part[VEIL_PRE_CT_R63B].h[t],
                                           z.h[t],
                                           zb.h[t]};
        rc = veil_cmp_submit(m, &veil_relu_trunc_cl, "relu_trunc", h, NULL, 8, &ta, sizeof ta);
        if (rc == VEIL_OK) {
            const starpu_data_handle_t hf[6] = {fp.h[t], beta->h[t], zb.h[t],
                                                z.h[t],  y->h[t],    ge.h[t]};
            rc = veil_cmp_submit(m, &veil_relu_fin_cl, "relu_trunc", hf, NULL, 6, &fa, sizeof fa);
        }
    }
out:
    veil_mpc_release(m, &z);
    veil_mpc_release(m, &zb);
    veil_mpc_release(m, &ge);
    veil_cmp_opened_release(m, &c);
    veil_mpc_release(m, &fp);
    veil_mpc_mat_release(m, &ct);
    veil_mpc_mat_release(m, &bit);
    if (rc != VEIL_OK)
        veil_mpc_release(m, y);
    return rc;
}

int veil_mpc_max(veil_mpc_t *m, const struct veil_sec *x, const struct veil_sec *y,
                 struct veil_sec *z)
{
    if (!m || !x || !y || !z)
        return veil_error(VEIL_ERR_INVAL, "max: NULL argument");
    memset(z, 0, sizeof *z);
    if (!veil_sec_same_layout(x, y))
        return veil_error(VEIL_ERR_SHAPE,
                          "max: x and y must have the same shape and tiling "
                          "(%zu vs %zu elements)",
                          x->numel, y->numel);
    /* max(x, y) = y + relu(x - y) */
    struct veil_sec d = {0}, r = {0};
    int rc = veil_mpc_sub(m, x, y, &d);
    if (rc == VEIL_OK)
        rc = veil_mpc_relu(m, &d, &r, NULL);
    if (rc == VEIL_OK)
        rc = veil_mpc_add(m, y, &r, z);
    veil_mpc_release(m, &d);
    veil_mpc_release(m, &r);
    return rc;
}

int veil_mpc_select(veil_mpc_t *m, const struct veil_sec *b, const struct veil_sec *x,
                    const struct veil_sec *y, struct veil_sec *z)
{
    if (!m || !b || !x || !y || !z)
        return veil_error(VEIL_ERR_INVAL, "select: NULL argument");
    memset(z, 0, sizeof *z);
    if (!veil_sec_same_layout(b, x) || !veil_sec_same_layout(x, y))
        return veil_error(VEIL_ERR_SHAPE,
                          "select: b, x and y must have the same shape and "
                          "tiling (%zu, %zu, %zu elements)",
                          b->numel, x->numel, y->numel);
    struct veil_sec diff = {0}, prod = {0};
    int rc = veil_mpc_sub(m, x, y, &diff);
    if (rc == VEIL_OK)
        rc = veil_mpc_mul(m, b, &diff, &prod);
    if (rc == VEIL_OK)
        rc = veil_mpc_add(m, y, &prod, z);
    veil_mpc_release(m, &diff);
    veil_mpc_release(m, &prod);
    return rc;
}

/*
 * relu.c — ReLU (y = x [x >= 0], with the 0/1 mask kept for the backward pass), selection
 * z = b ? x : y, and the Beaver ring product they use (one BEAVER item: open x - a and y - b
 * together, z = c + d b + e a + d e at party 0). Costs in compare.h.
 */
#include "config.h"
#include "base/base_internal.h"
#include "tasks/compare.h"
#include "tasks/compare_internal.h"

#include <string.h>

struct mul_arg {
    int party0;
};

/* d, e (public), a, b, c (triple) -> z = c + d b + e a (+ d e at party 0). */
static void mul_finish_cpu(void *buffers[], void *cl_arg)
{
    const struct mul_arg *arg = veil_cmp_arg(cl_arg);
    const uint64_t *d = (const uint64_t *)STARPU_VECTOR_GET_PTR(buffers[0]);
    const uint64_t *e = (const uint64_t *)STARPU_VECTOR_GET_PTR(buffers[1]);
    const uint64_t *a = (const uint64_t *)STARPU_VECTOR_GET_PTR(buffers[2]);
    const uint64_t *b = (const uint64_t *)STARPU_VECTOR_GET_PTR(buffers[3]);
    const uint64_t *c = (const uint64_t *)STARPU_VECTOR_GET_PTR(buffers[4]);
    uint64_t *z = (uint64_t *)STARPU_VECTOR_GET_PTR(buffers[5]);
    const size_t n = STARPU_VECTOR_GET_NX(buffers[5]);
    const uint64_t p0 = arg->party0 ? 1 : 0;
    for (size_t i = 0; i < n; i++)
        z[i] = c[i] + d[i] * b[i] + e[i] * a[i] + p0 * d[i] * e[i];
}

static struct starpu_perfmodel mul_finish_model = {.type = STARPU_HISTORY_BASED,
                                                   .symbol = "veil_cmp_mul_finish"};
static struct starpu_codelet mul_finish_cl = {
    .cpu_funcs = {mul_finish_cpu},
    .cpu_funcs_name = {"mul_finish_cpu"},
    .nbuffers = 6,
    .modes = {STARPU_R, STARPU_R, STARPU_R, STARPU_R, STARPU_R, STARPU_W},
    .model = &mul_finish_model,
    .name = "veil_cmp_mul_finish",
};

static struct veil_sec flat(const struct veil_sec *x)
{
    struct veil_sec v = *x;
    v.ndim = 1;
    memset(v.dims, 0, sizeof v.dims);
    v.dims[0] = x->numel;
    return v;
}

int veil_cmp_mul(veil_mpc_t *m, const struct veil_sec *x, const struct veil_sec *y,
                 struct veil_sec *z)
{
    if (!x || !y || !z)
        return veil_error(VEIL_ERR_INVAL, "mul: NULL tensor");
    memset(z, 0, sizeof *z);
    if (!veil_sec_same_layout(x, y) || x->kind != VEIL_SHARE_ARITH || y->kind != VEIL_SHARE_ARITH)
        return veil_error(VEIL_ERR_SHAPE, "mul: operands must be arithmetic sharings of the same "
                          "shape and tiling (%zu vs %zu elements)", x->numel, y->numel);
    struct veil_mpc_mat mat;
    const size_t tile = x->ntiles > 1 ? x->tile : SIZE_MAX;
    int rc = veil_mpc_material(m, veil_preproc_item_beaver(0, x->numel), tile, &mat);
    if (rc != VEIL_OK)
        return rc;
    struct veil_sec xf = flat(x), yf = flat(y), d = {0}, e = {0};
    veil_mpc_round(m);
    if ((rc = veil_mpc_open(m, &xf, &mat.part[VEIL_PRE_A], &d)) != VEIL_OK ||
        (rc = veil_mpc_open(m, &yf, &mat.part[VEIL_PRE_B], &e)) != VEIL_OK ||
        (rc = veil_sec_init_like(m, z, x)) != VEIL_OK)
        goto out;
    const struct mul_arg arg = {.party0 = veil_mpc_self(m) == 0};
    for (int t = 0; veil_mpc_computes(m) && t < x->ntiles && rc == VEIL_OK; t++) {
        const starpu_data_handle_t h[6] = {d.h[t], e.h[t], mat.part[VEIL_PRE_A].h[t],
                                           mat.part[VEIL_PRE_B].h[t], mat.part[VEIL_PRE_C].h[t],
                                           z->h[t]};
        rc = veil_cmp_submit(&mul_finish_cl, "mul", h, NULL, 6, &arg, sizeof arg);
    }
out:
    veil_mpc_release(m, &d);
    veil_mpc_release(m, &e);
    veil_mpc_mat_release(m, &mat);
    return rc;
}

int veil_mpc_relu(veil_mpc_t *m, const struct veil_sec *x, struct veil_sec *y,
                  struct veil_sec *mask)
{
    if (!m || !x || !y)
        return veil_error(VEIL_ERR_INVAL, "relu: NULL argument");
    memset(y, 0, sizeof *y);
    if (mask)
        memset(mask, 0, sizeof *mask);
    struct veil_sec neg = {0}, ge = {0}, t = {0};
    int rc = veil_mpc_ltz(m, x, &neg);
    /* [x >= 0] = 1 - [x < 0] (the 1 at party 0): local */
    if (rc == VEIL_OK)
        rc = veil_mpc_mul_scalar(m, &neg, UINT64_MAX, &t);
    if (rc == VEIL_OK)
        rc = veil_mpc_add_scalar(m, &t, 1, &ge);
    if (rc == VEIL_OK)
        rc = veil_cmp_mul(m, x, &ge, y);
    veil_mpc_release(m, &neg);
    veil_mpc_release(m, &t);
    if (rc == VEIL_OK && mask)
        *mask = ge;
    else
        veil_mpc_release(m, &ge);
    return rc;
}

int veil_mpc_select(veil_mpc_t *m, const struct veil_sec *b, const struct veil_sec *x,
                    const struct veil_sec *y, struct veil_sec *z)
{
    if (!m || !b || !x || !y || !z)
        return veil_error(VEIL_ERR_INVAL, "select: NULL argument");
    memset(z, 0, sizeof *z);
    if (!veil_sec_same_layout(b, x) || !veil_sec_same_layout(x, y))
        return veil_error(VEIL_ERR_SHAPE, "select: b, x and y must have the same shape and "
                          "tiling (%zu, %zu, %zu elements)", b->numel, x->numel, y->numel);
    struct veil_sec diff = {0}, prod = {0};
    int rc = veil_mpc_sub(m, x, y, &diff);
    if (rc == VEIL_OK)
        rc = veil_cmp_mul(m, b, &diff, &prod);
    if (rc == VEIL_OK)
        rc = veil_mpc_add(m, y, &prod, z);
    veil_mpc_release(m, &diff);
    veil_mpc_release(m, &prod);
    return rc;
}

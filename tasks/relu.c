/*
 * relu.c — ReLU (y = x [x >= 0], with the 0/1 mask kept for the backward pass), selection
 * z = b ? x : y, both on LTZ and one Beaver product (veil_mpc_mul, tasks/beaver.h). Costs in
 * compare.h.
 */
#include "config.h"
#include "base/base_internal.h"
#include "tasks/compare.h"
#include "tasks/beaver.h"
#include "tasks/compare_internal.h"

#include <string.h>

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
        rc = veil_mpc_mul(m, x, &ge, y);
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
        rc = veil_mpc_mul(m, b, &diff, &prod);
    if (rc == VEIL_OK)
        rc = veil_mpc_add(m, y, &prod, z);
    veil_mpc_release(m, &diff);
    veil_mpc_release(m, &prod);
    return rc;
}

/*
 * trunc.c — truncation by f bits with a TRUNC item and one opening, and the fixed-point product
 * (contracts and the protocol in trunc.h). Per tile: x + r, its open, then one fused local task
 * (veil_task_trunc_finish) that forms the result share.
 */
#include "config.h"
#include "tasks/trunc.h"

#include "base/base_internal.h"
#include "codelets/codelets_internal.h"
#include "tasks/beaver.h"
#include "tasks/beaver_internal.h"
#include "tasks/mpc_internal.h"

#include <string.h>

static int trunc_impl(veil_mpc_t *m, const struct veil_sec *x, int f, struct veil_sec *z, int mark)
{
    if (!x || !z)
        return veil_error(VEIL_ERR_INVAL, "trunc: NULL tensor");
    if (f < 1 || f > 62)
        return veil_error(VEIL_ERR_INVAL, "trunc: f = %d fractional bits; use 1 to 62", f);
    if (x->kind != VEIL_SHARE_ARITH)
        return veil_error(VEIL_ERR_INVAL, "trunc: x holds binary shares; use arithmetic shares");
    if (x->numel == 0)
        return veil_error(VEIL_ERR_SHAPE, "trunc: x is empty");
    memset(z, 0, sizeof *z);
    struct veil_mpc_mat mat;
    int rc = veil_mpc_material(m, veil_preproc_item_trunc(0, x->numel, (uint64_t)f), x->tile, &mat);
    if (rc != VEIL_OK)
        return rc;
    struct veil_sec masked = {0}, c = {0};
    if ((rc = veil_sec_init_like(m, z, x)) != VEIL_OK || !veil_mpc_computes(m))
        goto out;
    const int p0 = veil_mpc_self(m) == 0;
    if ((rc = veil_sec_init_like(m, &masked, x)) != VEIL_OK)
        goto out;
    for (int t = 0; t < x->ntiles && rc == VEIL_OK; t++)
        rc = veil_task_add(x->h[t], mat.part[VEIL_PRE_TR_R].h[t], masked.h[t], veil_mpc_priority(m));
    if (rc != VEIL_OK || (rc = veil_mpc_open(m, &masked, NULL, &c)) != VEIL_OK)
        goto out;
    if (mark)
        veil_mpc_round(m);
    for (int t = 0; t < x->ntiles && rc == VEIL_OK; t++)
        rc = veil_task_trunc_finish(c.h[t], mat.part[VEIL_PRE_TR_RHI].h[t],
                                    mat.part[VEIL_PRE_TR_R63].h[t], z->h[t], (unsigned)f, p0,
                                    veil_mpc_priority(m));
out:
    veil_mpc_release(m, &masked);
    veil_mpc_release(m, &c);
    veil_mpc_mat_release(m, &mat);
    return rc;
}

int veil_mpc_trunc(veil_mpc_t *m, const struct veil_sec *x, int f, struct veil_sec *z)
{
    return trunc_impl(m, x, f, z, 1);
}

int veil_mpc_trunc_unmarked(veil_mpc_t *m, const struct veil_sec *x, int f, struct veil_sec *z)
{
    return trunc_impl(m, x, f, z, 0);
}

int veil_mpc_mul_fixed(veil_mpc_t *m, const struct veil_sec *x, const struct veil_sec *y,
                       struct veil_sec *z)
{
    const int f = veil_mpc_frac_bits(m);
    if (f == 0)
        return veil_mpc_mul(m, x, y, z);
    if (f > 62)
        return veil_error(VEIL_ERR_INVAL, "mul_fixed: f = %d fractional bits; use 0 to 62", f);
    struct veil_sec p = {0};
    int rc = veil_mpc_mul(m, x, y, &p);
    if (rc == VEIL_OK)
        rc = veil_mpc_trunc(m, &p, f, z);
    veil_mpc_release(m, &p);
    return rc;
}

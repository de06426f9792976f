/*
 * softmax.c — secure softmax over the last dimension (contract and costs in nonlinear.h; model
 * veil_ref_softmax_lastdim). Rows need not line up with the input's tiles, so the row broadcast
 * of the max and of the reciprocal and the row sum are flat relayout tasks (flatop_internal.h)
 * over whole tensors. The reciprocal runs on one word per row, over [1, 2^(floor(log2 k)+1)):
 * after the max subtraction every row's sum of exponentials lies in [1, k] (its largest term is
 * exp(0) = 1), so the comparisons of the range normalisation cost bytes per row, not per element.
 * Below exp's domain (x - max < -VEIL_SOFTMAX_FLOOR) exp's result is meaningless and may wrap the
 * ring, so one comparison per element and one Beaver product with the bit set those terms to an
 * exact 0 before the row sum: a row may spread over the whole ring range.
 */
#include "config.h"

#include "tasks/nonlinear.h"

#include "base/base_internal.h"
#include "tasks/beaver.h"
#include "tasks/compare.h"
#include "tasks/nonlinear_internal.h"
#include "tasks/pool.h"
#include "tasks/trunc.h"

#include <string.h>

/* out (like `like`) = each word of in repeated k times. */
static int bcast(veil_mpc_t *m, const struct veil_sec *in, size_t k, const struct veil_sec *like,
                 struct veil_sec *out)
{
    int rc = veil_sec_init_like(m, out, like);
    if (rc != VEIL_OK)
        return rc;
    struct veil_flatop_args a;
    memset(&a, 0, sizeof a);
    a.kind = VEIL_FLATOP_BCAST;
    a.k = k;
    struct veil_sec *outs[1] = {out};
    const struct veil_sec *ins[1] = {in};
    return veil_nl_flat(m, a, outs, 1, ins, 1);
}

int veil_mpc_softmax_lastdim(veil_mpc_t *m, const struct veil_sec *x, struct veil_sec *y)
{
    if (!x || !y)
        return veil_error(VEIL_ERR_INVAL, "softmax: NULL tensor");
    if (x->ndim < 1 || x->dims[x->ndim - 1] == 0)
        return veil_error(VEIL_ERR_SHAPE,
                          "softmax: the input needs a last dimension of at least "
                          "one element (got %d dimensions, last %zu)",
                          x->ndim, x->ndim ? x->dims[x->ndim - 1] : 0);
    int rc = veil_nl_check_unary("softmax", x, y);
    if (rc != VEIL_OK)
        return rc;
    const size_t k = x->dims[x->ndim - 1], rows = x->numel / k;
    const int f = veil_mpc_frac_bits(m);
    int hi = 1;
    while (hi < 30 && ((size_t)1 << hi) <= k)
        hi++;
    struct veil_nl_table tab;
    if ((rc = veil_nl_table_init(&tab, VEIL_NL_RECIPROCAL, 0, hi, VEIL_RECIP_STEPS, f)) != VEIL_OK)
        return veil_error(rc,
                          "softmax: rows of %zu elements are too long for the reciprocal of "
                          "their sums",
                          k);
    struct veil_sec mx = {0}, bmx = {0}, d = {0}, e = {0}, s = {0}, r = {0}, br = {0}, p = {0};
    struct veil_sec dl = {0}, lo = {0}, ez = {0};
    size_t rdims[1] = {rows};
    /* e = exp(d) - [d < -FLOOR] exp(d): the bit times the word is exact, whatever the word */
    if ((rc = veil_mpc_max_lastdim(m, x, &mx, NULL)) != VEIL_OK ||
        (rc = bcast(m, &mx, k, x, &bmx)) != VEIL_OK ||
        (rc = veil_mpc_sub(m, x, &bmx, &d)) != VEIL_OK ||
        (rc = veil_mpc_add_scalar(m, &d, (uint64_t)VEIL_SOFTMAX_FLOOR << f, &dl)) != VEIL_OK ||
        (rc = veil_mpc_ltz(m, &dl, &lo)) != VEIL_OK ||
        (rc = veil_mpc_exp(m, &d, &ez)) != VEIL_OK ||
        (rc = veil_mpc_mul(m, &lo, &ez, &p)) != VEIL_OK ||
        (rc = veil_mpc_sub(m, &ez, &p, &e)) != VEIL_OK ||
        (rc = veil_sec_init(m, &s, VEIL_SHARE_ARITH, 1, rdims, 0)) != VEIL_OK)
        goto out;
    {
        struct veil_flatop_args a;
        memset(&a, 0, sizeof a);
        a.kind = VEIL_FLATOP_ROWSUM;
        a.k = k;
        struct veil_sec *outs[1] = {&s};
        const struct veil_sec *ins[1] = {&e};
        if ((rc = veil_nl_flat(m, a, outs, 1, ins, 1)) != VEIL_OK)
            goto out;
    }
    if ((rc = veil_mpc_reciprocal_range(m, &s, 0, hi, &r)) != VEIL_OK ||
        (rc = bcast(m, &r, k, x, &br)) != VEIL_OK ||
        (rc = veil_nl_mul_trunc(m, &e, &br, f, y)) != VEIL_OK)
        goto out;
out:
    veil_mpc_release(m, &mx);
    veil_mpc_release(m, &bmx);
    veil_mpc_release(m, &d);
    veil_mpc_release(m, &e);
    veil_mpc_release(m, &s);
    veil_mpc_release(m, &r);
    veil_mpc_release(m, &br);
    veil_mpc_release(m, &p);
    veil_mpc_release(m, &dl);
    veil_mpc_release(m, &lo);
    veil_mpc_release(m, &ez);
    return rc;
}

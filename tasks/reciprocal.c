/*
 * reciprocal.c — secure reciprocal and inverse square root (contracts and error figures in
 * nonlinear.h; models veil_ref_reciprocal_range / veil_ref_inv_sqrt_range). Both normalise by
 * comparisons instead of CrypTen's exp-based start: all thresholds 2^(lo + i/8) go through ONE
 * ltz call (rounds do not grow with the range, only bytes do), and the start, a constant per
 * eighth of an octave, is a local linear form of the comparison bits, already within 4.3%
 * (reciprocal) or 2.2% (inverse square root), so two Newton iterations reach the fixed-point
 * rounding. The product x y is kept at 2f bits without a truncation (the next product's value
 * still fits 62 bits over the allowed ranges): one round less per iteration.
 */
#include "config.h"

#include "tasks/nonlinear.h"

#include "base/base_internal.h"
#include "tasks/beaver.h"
#include "tasks/nonlinear_internal.h"
#include "tasks/trunc.h"

int veil_mpc_reciprocal_range(veil_mpc_t *m, const struct veil_sec *x, int lo, int hi,
                              struct veil_sec *y)
{
    int rc = veil_nl_check_unary("reciprocal", x, y);
    struct veil_nl_table tab;
    const int f = veil_mpc_frac_bits(m);
    if (rc != VEIL_OK ||
        (rc = veil_nl_table_init(&tab, VEIL_NL_RECIPROCAL, lo, hi, VEIL_RECIP_STEPS, f)) != VEIL_OK)
        return rc;
    struct veil_sec cur = {0};
    if ((rc = veil_nl_start(m, x, &tab, &cur)) != VEIL_OK) {
        veil_mpc_release(m, &cur);
        return rc;
    }
    /* y <- y (2 - x y): x y at 2f bits, the product at 3f, one truncation by 2f */
    return veil_nl_recip_newton(m, x, &cur, f, VEIL_RECIP_ITERS, y);
}

int veil_mpc_reciprocal(veil_mpc_t *m, const struct veil_sec *x, struct veil_sec *y)
{
    return veil_mpc_reciprocal_range(m, x, VEIL_RECIP_LO, VEIL_RECIP_HI, y);
}

int veil_mpc_inv_sqrt_range(veil_mpc_t *m, const struct veil_sec *x, int lo, int hi,
                            struct veil_sec *y)
{
    int rc = veil_nl_check_unary("inv_sqrt", x, y);
    struct veil_nl_table tab;
    const int f = veil_mpc_frac_bits(m);
    if (rc != VEIL_OK ||
        (rc = veil_nl_table_init(&tab, VEIL_NL_INV_SQRT, lo, hi, VEIL_ISQRT_STEPS, f)) != VEIL_OK)
        return rc;
    struct veil_sec cur = {0}, a = {0}, b = {0}, c = {0}, d = {0}, e = {0};
    if ((rc = veil_nl_start(m, x, &tab, &cur)) != VEIL_OK)
        goto out;
    for (int it = 0; it < VEIL_ISQRT_ITERS; it++) {
        /* y <- y (3 - x y^2) / 2: x y at 2f bits, (x y) y at 3f truncated to f, then y (3 - .)
         * truncated by f + 1 (the /2) */
        struct veil_sec *dst = it + 1 == VEIL_ISQRT_ITERS ? y : &c;
        if ((rc = veil_mpc_mul(m, x, &cur, &a)) != VEIL_OK ||
            (rc = veil_mpc_mul(m, &a, &cur, &b)) != VEIL_OK ||
            (rc = veil_mpc_trunc(m, &b, 2 * f, &c)) != VEIL_OK ||
            (rc = veil_nl_rsub_scalar(m, &c, UINT64_C(3) << f, &d)) != VEIL_OK ||
            (rc = veil_mpc_mul(m, &cur, &d, &e)) != VEIL_OK)
            goto out;
        veil_mpc_release(m, &a);
        veil_mpc_release(m, &b);
        veil_mpc_release(m, &c);
        veil_mpc_release(m, &d);
        veil_mpc_release(m, &cur);
        if ((rc = veil_mpc_trunc(m, &e, f + 1, dst)) != VEIL_OK)
            goto out;
        veil_mpc_release(m, &e);
        if (dst == &c) {
            cur = c;
            c = (struct veil_sec){0};
        }
    }
out:
    veil_mpc_release(m, &cur);
    veil_mpc_release(m, &a);
    veil_mpc_release(m, &b);
    veil_mpc_release(m, &c);
    veil_mpc_release(m, &d);
    veil_mpc_release(m, &e);
    return rc;
}

int veil_mpc_inv_sqrt(veil_mpc_t *m, const struct veil_sec *x, struct veil_sec *y)
{
    return veil_mpc_inv_sqrt_range(m, x, VEIL_ISQRT_LO, VEIL_ISQRT_HI, y);
}

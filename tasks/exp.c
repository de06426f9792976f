/*
 * exp.c — secure exponential (contract and error figures in nonlinear.h; plaintext model
 * veil_ref_exp). (1 + t + t^2/2)^(2^n) with t = x / 2^n: the second-order base costs one more
 * square than CrypTen's (1 + t)^(2^n) but cuts the approximation error by about x/3n, so six
 * squarings (14 rounds) beat eight (16 rounds) on both error and rounds. The precision starts at
 * f + n + 2 bits and falls by one per squaring, because an error made before squaring k is
 * multiplied by 2^(n-k) by the squarings after it.
 */
#include "config.h"

#include "tasks/nonlinear.h"

#include "base/base_internal.h"
#include "tasks/beaver.h"
#include "tasks/nonlinear_internal.h"
#include "tasks/trunc.h"

int veil_mpc_exp(veil_mpc_t *m, const struct veil_sec *x, struct veil_sec *y)
{
    int rc = veil_nl_check_unary("exp", x, y);
    if (rc != VEIL_OK)
        return rc;
    const int f = veil_mpc_frac_bits(m), sq = VEIL_EXP_SQUARINGS, g = VEIL_EXP_GUARD;
    int p = f + sq + g;
    if (2 * p + 6 > 62)
        return veil_error(VEIL_ERR_UNSUPPORTED,
                          "exp: %d fractional bits leave no headroom for "
                          "the %d-bit base; use f <= %d",
                          f, p, 28 - sq - g);
    struct veil_sec t = {0}, h = {0}, s = {0}, b = {0}, nb = {0};
    /* t = x / 2^n is exact at p = f + n + g bits: x << g */
    if ((rc = veil_mpc_mul_scalar(m, x, UINT64_C(1) << g, &t)) != VEIL_OK ||
        (rc = veil_nl_square_trunc(m, &t, p + 1, &h)) != VEIL_OK ||
        (rc = veil_mpc_add(m, &t, &h, &s)) != VEIL_OK ||
        (rc = veil_mpc_add_scalar(m, &s, UINT64_C(1) << p, &b)) != VEIL_OK)
        goto out;
    for (int k = 0; k < sq; k++) {
        const int next = k + 1 == sq ? f : p - 1;
        struct veil_sec *dst = k + 1 == sq ? y : &nb;
        if ((rc = veil_nl_square_trunc(m, &b, 2 * p - next, dst)) != VEIL_OK)
            goto out;
        veil_mpc_release(m, &b);
        if (dst == &nb) {
            b = nb;
            nb = (struct veil_sec){0};
        }
        p = next;
    }
out:
    veil_mpc_release(m, &t);
    veil_mpc_release(m, &h);
    veil_mpc_release(m, &s);
    veil_mpc_release(m, &b);
    veil_mpc_release(m, &nb);
    return rc;
}

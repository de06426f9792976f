/*
 * gelu.c — secure GELU (contract, method choice and costs in nonlinear.h; model veil_ref_gelu).
 * Piecewise: 0 below -a, x from a on, and between them x/2 plus an even polynomial of degree 12
 * written in v = x^2/a^2 so that its coefficients are of order one (Horner stays accurate at 24
 * bits; in x the top coefficient would be below one 16-bit ulp). The two comparisons are one ltz
 * call on a stacked tensor, the first Horner step shares the truncation of v (both are linear in
 * x^2: stacked into one truncation), and the final select is one Beaver product of the stacked
 * comparison bits with the stacked [P; P - x]. Words outside [-a, a) make P meaningless (even
 * wrapping the ring), but the select multiplies them by an exact 0 or cancels them exactly.
 * veil_mpc_gelu_saved (gelu.h) runs the same protocol and keeps the comparison bits and v for the
 * backward pass (gelu_grad.c).
 */
#include "config.h"

#include "tasks/nonlinear.h"

#include "base/base_internal.h"
#include "tasks/gelu.h"
#include "tasks/beaver.h"
#include "tasks/compare.h"
#include "tasks/nonlinear_internal.h"
#include "tasks/trunc.h"

#include <string.h>

/* The forward; with keep_bits / keep_v (both or neither) the comparison bits and v move there
 * instead of being released (veil_mpc_gelu_saved, gelu.h). */
static int gelu_run(veil_mpc_t *m, const struct veil_sec *x, struct veil_sec *y,
                    struct veil_sec *keep_bits, struct veil_sec *keep_v)
{
    int rc = veil_nl_check_unary("gelu", x, y);
    if (rc != VEIL_OK)
        return rc;
    const int f = veil_mpc_frac_bits(m), F = VEIL_GELU_FRAC;
    if (f + 2 > F)
        return veil_error(VEIL_ERR_UNSUPPORTED,
                          "gelu: f = %d; the polynomial runs at %d bits, "
                          "use f <= %d",
                          f, F, F - 2);
    struct veil_nl_gelu g;
    veil_nl_gelu_init(&g, f);
    struct veil_sec stk = {0}, bits = {0}, q = {0}, qv = {0}, q5 = {0}, s2 = {0}, t2 = {0};
    struct veil_sec v = {0}, acc = {0}, pr = {0}, tr = {0}, r1 = {0}, xs = {0}, r2 = {0};
    struct veil_sec pp = {0}, pmx = {0}, vals = {0}, prod = {0}, z1 = {0}, z2 = {0}, w = {0};
    size_t dims2[1] = {2 * x->numel};
    struct veil_flatop_args a;
    memset(&a, 0, sizeof a);
    /* [x + a; x - a] -> ltz -> [x < -a; x < a] */
    if ((rc = veil_sec_init(m, &stk, VEIL_SHARE_ARITH, 1, dims2, veil_nl_stack_tile(m))) != VEIL_OK)
        goto out;
    a.kind = VEIL_FLATOP_REPLICATE;
    a.k = 2;
    a.add_const = 1;
    a.c[0] = g.a;
    a.c[1] = 0 - g.a;
    {
        struct veil_sec *outs[1] = {&stk};
        const struct veil_sec *ins[1] = {x};
        if ((rc = veil_nl_flat(m, a, outs, 1, ins, 1)) != VEIL_OK)
            goto out;
    }
    if ((rc = veil_mpc_ltz(m, &stk, &bits)) != VEIL_OK)
        goto out;
    /* v = x^2 / a^2 and the first Horner step C5 + C6 v, both from x^2, one truncation */
    if ((rc = veil_mpc_square(m, x, &q)) != VEIL_OK ||
        (rc = veil_mpc_mul_scalar(m, &q, g.cv, &qv)) != VEIL_OK ||
        (rc = veil_mpc_mul_scalar(m, &q, g.cvt, &q5)) != VEIL_OK ||
        (rc = veil_sec_init(m, &s2, VEIL_SHARE_ARITH, 1, dims2, 0)) != VEIL_OK ||
        (rc = veil_nl_copy2(m, &s2, NULL, 1, &qv, &q5, 2)) != VEIL_OK ||
        (rc = veil_mpc_trunc(m, &s2, g.shift_v, &t2)) != VEIL_OK ||
        (rc = veil_sec_init_like(m, &v, x)) != VEIL_OK ||
        (rc = veil_sec_init_like(m, &r1, x)) != VEIL_OK ||
        (rc = veil_nl_copy2(m, &v, &r1, 2, &t2, NULL, 1)) != VEIL_OK ||
        (rc = veil_mpc_add_scalar(m, &r1, g.c[VEIL_GELU_DEG - 1], &acc)) != VEIL_OK)
        goto out;
    for (int i = VEIL_GELU_DEG - 2; i >= 1; i--) {
        veil_mpc_release(m, &tr);
        if ((rc = veil_nl_mul_trunc(m, &v, &acc, F, &tr)) != VEIL_OK)
            goto out;
        veil_mpc_release(m, &acc);
        if ((rc = veil_mpc_add_scalar(m, &tr, g.c[i], &acc)) != VEIL_OK)
            goto out;
    }
    /* P = (v acc + C0 2^F + x 2^(2F-f-1)) >> (2F - f): x/2 enters exactly at 2F bits */
    veil_mpc_release(m, &r1);
    if ((rc = veil_mpc_mul(m, &v, &acc, &pr)) != VEIL_OK ||
        (rc = veil_mpc_add_scalar(m, &pr, g.c[0] << F, &r1)) != VEIL_OK ||
        (rc = veil_mpc_mul_scalar(m, x, UINT64_C(1) << (2 * F - f - 1), &xs)) != VEIL_OK ||
        (rc = veil_mpc_add(m, &r1, &xs, &r2)) != VEIL_OK ||
        (rc = veil_mpc_trunc(m, &r2, 2 * F - f, &pp)) != VEIL_OK)
        goto out;
    /* y = x + [x < a] (P - x) - [x < -a] P: one product of [blo; bhi] with [P; P - x] */
    if ((rc = veil_mpc_sub(m, &pp, x, &pmx)) != VEIL_OK ||
        (rc = veil_sec_init_like(m, &vals, &bits)) != VEIL_OK ||
        (rc = veil_nl_copy2(m, &vals, NULL, 1, &pp, &pmx, 2)) != VEIL_OK ||
        (rc = veil_mpc_mul(m, &bits, &vals, &prod)) != VEIL_OK ||
        (rc = veil_sec_init_like(m, &z1, x)) != VEIL_OK ||
        (rc = veil_sec_init_like(m, &z2, x)) != VEIL_OK ||
        (rc = veil_nl_copy2(m, &z1, &z2, 2, &prod, NULL, 1)) != VEIL_OK ||
        (rc = veil_mpc_add(m, x, &z2, &w)) != VEIL_OK ||
        (rc = veil_mpc_sub(m, &w, &z1, y)) != VEIL_OK)
        goto out;
    if (keep_bits && keep_v) {
        *keep_bits = bits;
        *keep_v = v;
        memset(&bits, 0, sizeof bits);
        memset(&v, 0, sizeof v);
    }
out:;
    struct veil_sec *tmp[] = {&stk, &bits, &q,  &qv, &q5,  &s2,   &t2,   &v,  &acc, &pr, &tr,
                              &r1,  &xs,   &r2, &pp, &pmx, &vals, &prod, &z1, &z2,  &w};
    for (size_t i = 0; i < sizeof tmp / sizeof tmp[0]; i++)
        veil_mpc_release(m, tmp[i]);
    return rc;
}

int veil_mpc_gelu(veil_mpc_t *m, const struct veil_sec *x, struct veil_sec *y)
{
    return gelu_run(m, x, y, NULL, NULL);
}

int veil_mpc_gelu_saved(veil_mpc_t *m, const struct veil_sec *x, struct veil_sec *y,
                        struct veil_sec *bits, struct veil_sec *v)
{
    if (!bits || !v)
        return veil_error(VEIL_ERR_INVAL, "gelu: NULL state to keep");
    return gelu_run(m, x, y, bits, v);
}

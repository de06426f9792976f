/*
 * nonlinear_sigmoid.c — secure sigmoid and tanh over every fixed-point input (contract, method
 * and costs in nonlinear_sigmoid.h) and their plaintext models. The sign and the saturation
 * tests share one ltz call, so the function is symmetric (exp only ever sees [-16, 0], where it
 * is accurate) at the price of one comparison circuit over 3 words per element; the reciprocal
 * of 1 + e needs no comparison at all because its argument is known to lie in [1, 2].
 */
#include "config.h"

#include "tasks/nonlinear_sigmoid.h"

#include "base/base_internal.h"
#include "tasks/beaver.h"
#include "tasks/compare.h"
#include "tasks/nonlinear.h"
#include "tasks/nonlinear_internal.h"
#include "tasks/trunc.h"

#include <math.h>
#include <string.h>

/* The linear start 24/17 - (8/17) d of 1/d on [1, 2]: k1 at f bits, k0 at 2f bits. */
static uint64_t start_k1(int f)
{
    return (uint64_t)llround(8.0 / 17.0 * ldexp(1.0, f));
}
static uint64_t start_k0(int f)
{
    return (uint64_t)llround(24.0 / 17.0 * ldexp(1.0, 2 * f));
}
#define NEWTON_ITERS 2

/* Steps 1-3: v = -min(|x|, clamp) and the sign s = [x < 0], both initialised like x. */
static int clamp_abs(veil_mpc_t *m, const struct veil_sec *x, int clamp, struct veil_sec *v,
                     struct veil_sec *s)
{
    const int f = veil_mpc_frac_bits(m);
    const uint64_t c16 = (uint64_t)clamp << f;
    struct veil_sec stack = {0}, xs = {0}, bits = {0}, p = {0};
    struct veil_flatop_args a;
    memset(&a, 0, sizeof a);
    size_t dims[1] = {3 * x->numel};
    int rc = veil_sec_init(m, &stack, VEIL_SHARE_ARITH, 1, dims, veil_nl_stack_tile(m));
    if (rc == VEIL_OK)
        rc = veil_sec_init(m, &xs, VEIL_SHARE_ARITH, 1, dims, veil_nl_stack_tile(m));
    if (rc == VEIL_OK) {
        struct veil_sec *outs[1] = {&stack};
        const struct veil_sec *ins[1] = {x};
        a.kind = VEIL_FLATOP_REPLICATE;
        a.k = 3;
        a.add_const = 1;
        a.c[0] = c16;
        a.c[1] = 0 - c16;
        rc = veil_nl_flat(m, a, outs, 1, ins, 1);
        if (rc == VEIL_OK) {
            outs[0] = &xs;
            a.c[0] = a.c[1] = 0;
            rc = veil_nl_flat(m, a, outs, 1, ins, 1);
        }
    }
    if (rc == VEIL_OK)
        rc = veil_mpc_ltz(m, &stack, &bits);
    if (rc == VEIL_OK)
        rc = veil_mpc_mul(m, &bits, &xs, &p);
    if (rc == VEIL_OK && (rc = veil_sec_init_like(m, v, x)) == VEIL_OK &&
        (rc = veil_sec_init_like(m, s, x)) == VEIL_OK) {
        /* v = -16 + 16 (b2 - b1) - (p1 + p2 - 2 p3) over [bits | p] stacked: k = 6 */
        struct veil_sec *outs[1] = {v};
        const struct veil_sec *ins[2] = {&bits, &p};
        memset(&a, 0, sizeof a);
        a.kind = VEIL_FLATOP_WSUM;
        a.k = 6;
        a.add_const = 1;
        a.c0 = 0 - c16;
        a.c[0] = 0 - c16;
        a.c[1] = c16;
        a.c[3] = UINT64_MAX;
        a.c[4] = UINT64_MAX;
        a.c[5] = 2;
        rc = veil_nl_flat(m, a, outs, 1, ins, 2);
        if (rc == VEIL_OK) {
            memset(&a, 0, sizeof a);
            a.kind = VEIL_FLATOP_WSUM;
            a.k = 3;
            a.c[2] = 1;
            outs[0] = s;
            rc = veil_nl_flat(m, a, outs, 1, ins, 1);
        }
    }
    veil_mpc_release(m, &stack);
    veil_mpc_release(m, &xs);
    veil_mpc_release(m, &bits);
    veil_mpc_release(m, &p);
    return rc;
}

/* Step 5: r = 1 / d for d in [1, 2] (f bits): linear start, two Newton steps. */
static int recip_12(veil_mpc_t *m, const struct veil_sec *d, struct veil_sec *r)
{
    const int f = veil_mpc_frac_bits(m);
    struct veil_sec a = {0}, b = {0}, cur = {0};
    int rc;
    if ((rc = veil_mpc_mul_scalar(m, d, 0 - start_k1(f), &a)) != VEIL_OK ||
        (rc = veil_mpc_add_scalar(m, &a, start_k0(f), &b)) != VEIL_OK ||
        (rc = veil_mpc_trunc(m, &b, f, &cur)) != VEIL_OK) {
        veil_mpc_release(m, &cur);
    } else {
        rc = veil_nl_recip_newton(m, d, &cur, f, NEWTON_ITERS, r);
    }
    veil_mpc_release(m, &a);
    veil_mpc_release(m, &b);
    return rc;
}

int veil_mpc_sigmoid_tanh(veil_mpc_t *m, const struct veil_sec *x, int is_tanh, struct veil_sec *y)
{
    const char *op = is_tanh ? "tanh" : "sigmoid";
    int rc = veil_nl_check_unary(op, x, y);
    if (rc != VEIL_OK)
        return rc;
    memset(y, 0, sizeof *y);
    const int f = veil_mpc_frac_bits(m);
    if (2 * (f + VEIL_EXP_SQUARINGS + VEIL_EXP_GUARD) + 6 > 62)
        return veil_error(VEIL_ERR_UNSUPPORTED, "%s: %d fractional bits leave no headroom for "
                          "exp's base; use f <= %d", op, f,
                          28 - VEIL_EXP_SQUARINGS - VEIL_EXP_GUARD);
    struct veil_sec v1 = {0}, v = {0}, s = {0}, e = {0}, d = {0}, r = {0}, q1 = {0}, q = {0},
                    t = {0}, sg = {0}, sg2 = {0};
    /* tanh: sigmoid(2 x) with 2 min(|x|, 8) for min(|2 x|, 16): 2 x itself could wrap */
    const int clamp = is_tanh ? VEIL_SIGMOID_CLAMP / 2 : VEIL_SIGMOID_CLAMP;
    if ((rc = clamp_abs(m, x, clamp, &v1, &s)) != VEIL_OK ||
        (rc = veil_mpc_mul_scalar(m, &v1, is_tanh ? 2 : 1, &v)) != VEIL_OK ||
        (rc = veil_mpc_exp(m, &v, &e)) != VEIL_OK ||
        (rc = veil_mpc_add_scalar(m, &e, UINT64_C(1) << f, &d)) != VEIL_OK ||
        (rc = recip_12(m, &d, &r)) != VEIL_OK ||
        (rc = veil_mpc_mul_scalar(m, &r, 0 - UINT64_C(2), &q1)) != VEIL_OK ||
        (rc = veil_mpc_add_scalar(m, &q1, UINT64_C(1) << f, &q)) != VEIL_OK ||
        (rc = veil_mpc_mul(m, &s, &q, &t)) != VEIL_OK)
        goto out;
    if (!is_tanh) {
        rc = veil_mpc_add(m, &r, &t, y);
    } else if ((rc = veil_mpc_add(m, &r, &t, &sg)) == VEIL_OK &&
               (rc = veil_mpc_mul_scalar(m, &sg, 2, &sg2)) == VEIL_OK) {
        rc = veil_mpc_add_scalar(m, &sg2, 0 - (UINT64_C(1) << f), y);
    }
out:
    veil_mpc_release(m, &v1);
    veil_mpc_release(m, &v);
    veil_mpc_release(m, &s);
    veil_mpc_release(m, &e);
    veil_mpc_release(m, &d);
    veil_mpc_release(m, &r);
    veil_mpc_release(m, &q1);
    veil_mpc_release(m, &q);
    veil_mpc_release(m, &t);
    veil_mpc_release(m, &sg);
    veil_mpc_release(m, &sg2);
    return rc;
}

void veil_sigmoid_cost(int nparties, size_t n, uint64_t *rounds, uint64_t *bytes)
{
    const uint64_t ltz = veil_nl_ltz_bytes(3 * (uint64_t)n);
    if (rounds)
        *rounds = VEIL_SIGMOID_ROUNDS;
    if (bytes)
        *bytes = (uint64_t)(nparties - 1) * (ltz + 264 * (uint64_t)n);
}

#define TR(v, sh) veil_ref_trunc_model((v), (sh), state)

void veil_ref_sigmoid_tanh(size_t n, const uint64_t *x, int f, int is_tanh, uint64_t *state,
                           uint64_t *y)
{
    const uint64_t c16 = (uint64_t)(is_tanh ? VEIL_SIGMOID_CLAMP / 2 : VEIL_SIGMOID_CLAMP) << f;
    const uint64_t one = UINT64_C(1) << f;
    for (size_t i = 0; i < n; i++) {
        const uint64_t xx = x[i];
        const uint64_t b1 = (int64_t)(xx + c16) < 0, b2 = (int64_t)(xx - c16) < 0,
                       s = (int64_t)xx < 0;
        const uint64_t v = (is_tanh ? 2 : 1) *
                           (0 - c16 + (b2 - b1) * c16 - (b1 * xx + b2 * xx - 2 * s * xx));
        uint64_t e;
        veil_ref_exp(1, &v, f, state, &e);
        const uint64_t d = e + one;
        uint64_t r = TR(start_k0(f) - start_k1(f) * d, f);
        for (int it = 0; it < NEWTON_ITERS; it++)
            r = TR(r * ((UINT64_C(2) << 2 * f) - d * r), 2 * f);
        const uint64_t sg = r + s * (one - 2 * r);
        y[i] = is_tanh ? 2 * sg - one : sg;
    }
}

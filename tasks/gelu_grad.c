/*
 * gelu_grad.c — GELU's backward pass on shares, dx = dy GELU'(x), and its plaintext model
 * (contract, method, error and costs in gelu.h). It reuses the forward's comparison bits and
 * v = x^2 / a^2 (veil_mpc_gelu_saved), so it is products and truncations only: the Horner
 * evaluation of Q(v), the product dy x beside it, and one exact select by the bits.
 */
#include "config.h"

#include "tasks/gelu.h"

#include "base/base_internal.h"
#include "tasks/beaver.h"
#include "tasks/nonlinear.h"
#include "tasks/nonlinear_internal.h"
#include "tasks/trunc.h"

#include <math.h>
#include <string.h>

/* Q(v) with GELU'(x) ~ 1/2 + x Q(x^2 / a^2) on [-a, a], a = 3.7: Lawson (IRLS) minimax fit of
 * (GELU'(x) - 1/2) / x on [0, a], 1500 points; max fit error 5.4e-4. */
static const double grad_c[VEIL_GELU_GRAD_DEG + 1] = {
    0.7955633142410765, -3.542405846438067,  9.982520370763465, -17.304509215869313,
    18.12077669830784,  -10.449902945657932, 2.5336333875301174};

/* Q's coefficients at VEIL_GELU_FRAC bits. */
static void grad_coeffs(uint64_t d[VEIL_GELU_GRAD_DEG + 1])
{
    for (int j = 0; j <= VEIL_GELU_GRAD_DEG; j++)
        d[j] = (uint64_t)(int64_t)llround(ldexp(grad_c[j], VEIL_GELU_FRAC));
}

void veil_gelu_grad_cost(int nparties, size_t n, uint64_t *rounds, uint64_t *bytes)
{
    *rounds = 2 * VEIL_GELU_GRAD_DEG + 4;
    *bytes = (64 + 24 * (uint64_t)VEIL_GELU_GRAD_DEG) * (uint64_t)(nparties - 1) * n;
}

double veil_ref_gelu_grad_f64(double x)
{
    return 0.5 * (1 + erf(x / sqrt(2.0))) +
           0.3989422804014327 * x * exp(-0.5 * x * x); /* 1/sqrt(2 pi) */
}

#define TR(v, s) veil_ref_trunc_model((v), (s), state)

void veil_ref_gelu_grad(size_t n, const uint64_t *dy, const uint64_t *x, int f, uint64_t *state,
                        uint64_t *dx)
{
    struct veil_nl_gelu g;
    veil_nl_gelu_init(&g, f);
    uint64_t d[VEIL_GELU_GRAD_DEG + 1];
    grad_coeffs(d);
    const int F = VEIL_GELU_FRAC;
    for (size_t e = 0; e < n; e++) {
        const uint64_t blo = (int64_t)(x[e] + g.a) < 0, bhi = (int64_t)(x[e] - g.a) < 0;
        const uint64_t v = TR(x[e] * x[e] * g.cv, g.shift_v); /* the forward's v */
        const uint64_t w = TR(dy[e] * x[e], f);
        uint64_t acc = TR(v * d[VEIL_GELU_GRAD_DEG], F) + d[VEIL_GELU_GRAD_DEG - 1];
        for (int j = VEIL_GELU_GRAD_DEG - 2; j >= 0; j--)
            acc = TR(v * acc, F) + d[j];
        const uint64_t u = TR(w * acc + dy[e] * (UINT64_C(1) << (F - 1)), F);
        dx[e] = dy[e] + bhi * (u - dy[e]) - blo * u;
    }
}

static int check(const struct veil_sec *dy, const struct veil_sec *x, const struct veil_sec *bits,
                 const struct veil_sec *v, struct veil_sec *dx)
{
    int rc = veil_nl_check_unary("gelu_grad", x, dx);
    if (rc != VEIL_OK)
        return rc;
    if (!dy || !bits || !v)
        return veil_error(VEIL_ERR_INVAL, "gelu_grad: NULL operand");
    if (dy->kind != VEIL_SHARE_ARITH || bits->kind != VEIL_SHARE_ARITH ||
        v->kind != VEIL_SHARE_ARITH || dy->numel != x->numel || v->numel != x->numel ||
        bits->numel != 2 * x->numel)
        return veil_error(VEIL_ERR_INVAL,
                          "gelu_grad: dy (%zu), v (%zu) and bits (%zu) must be "
                          "arithmetic and match x (%zu, bits twice that)",
                          dy->numel, v->numel, bits->numel, x->numel);
    return VEIL_OK;
}

int veil_mpc_gelu_grad(veil_mpc_t *m, const struct veil_sec *dy, const struct veil_sec *x,
                       const struct veil_sec *bits, const struct veil_sec *v, struct veil_sec *dx)
{
    int rc = check(dy, x, bits, v, dx);
    if (rc != VEIL_OK)
        return rc;
    const int f = veil_mpc_frac_bits(m), F = VEIL_GELU_FRAC, D = VEIL_GELU_GRAD_DEG;
    if (f + 2 > F)
        return veil_error(VEIL_ERR_UNSUPPORTED,
                          "gelu_grad: f = %d; the polynomial runs at %d "
                          "bits, use f <= %d",
                          f, F, F - 2);
    uint64_t d[VEIL_GELU_GRAD_DEG + 1];
    grad_coeffs(d);
    enum { W0, W, T0, T1, ACC, HT, P, DS, P2, U, UMD, VALS, PROD, Z1, Z2, S, NT };
    struct veil_sec t[NT];
    memset(t, 0, sizeof t);
    /* w = trunc_f(dy x), beside the Horner chain */
    if ((rc = veil_mpc_mul(m, dy, x, &t[W0])) != VEIL_OK ||
        (rc = veil_mpc_trunc(m, &t[W0], f, &t[W])) != VEIL_OK)
        goto out;
    /* acc = Q(v) at F bits: the top step is a product by a public coefficient */
    if ((rc = veil_mpc_mul_scalar(m, v, d[D], &t[T0])) != VEIL_OK ||
        (rc = veil_mpc_trunc(m, &t[T0], F, &t[T1])) != VEIL_OK ||
        (rc = veil_mpc_add_scalar(m, &t[T1], d[D - 1], &t[ACC])) != VEIL_OK)
        goto out;
    for (int j = D - 2; j >= 0; j--) {
        veil_mpc_release(m, &t[HT]);
        if ((rc = veil_nl_mul_trunc(m, v, &t[ACC], F, &t[HT])) != VEIL_OK)
            goto out;
        veil_mpc_release(m, &t[ACC]);
        if ((rc = veil_mpc_add_scalar(m, &t[HT], d[j], &t[ACC])) != VEIL_OK)
            goto out;
    }
    /* u = trunc_F(w acc + dy 2^(F-1)): dy / 2 enters exactly at F + f bits */
    if ((rc = veil_mpc_mul(m, &t[W], &t[ACC], &t[P])) != VEIL_OK ||
        (rc = veil_mpc_mul_scalar(m, dy, UINT64_C(1) << (F - 1), &t[DS])) != VEIL_OK ||
        (rc = veil_mpc_add(m, &t[P], &t[DS], &t[P2])) != VEIL_OK ||
        (rc = veil_mpc_trunc(m, &t[P2], F, &t[U])) != VEIL_OK)
        goto out;
    /* dx = dy + [x < a] (u - dy) - [x < -a] u: one product of [blo; bhi] with [u; u - dy] */
    if ((rc = veil_mpc_sub(m, &t[U], dy, &t[UMD])) != VEIL_OK ||
        (rc = veil_sec_init_like(m, &t[VALS], bits)) != VEIL_OK ||
        (rc = veil_nl_copy2(m, &t[VALS], NULL, 1, &t[U], &t[UMD], 2)) != VEIL_OK ||
        (rc = veil_mpc_mul(m, bits, &t[VALS], &t[PROD])) != VEIL_OK ||
        (rc = veil_sec_init_like(m, &t[Z1], x)) != VEIL_OK ||
        (rc = veil_sec_init_like(m, &t[Z2], x)) != VEIL_OK ||
        (rc = veil_nl_copy2(m, &t[Z1], &t[Z2], 2, &t[PROD], NULL, 1)) != VEIL_OK ||
        (rc = veil_mpc_add(m, dy, &t[Z2], &t[S])) != VEIL_OK ||
        (rc = veil_mpc_sub(m, &t[S], &t[Z1], dx)) != VEIL_OK)
        goto out;
out:
    for (int i = 0; i < NT; i++)
        veil_mpc_release(m, &t[i]);
    return rc;
}

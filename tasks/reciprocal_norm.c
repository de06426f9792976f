/*
 * reciprocal_norm.c — the reciprocal by normalisation (contract, method and costs in
 * reciprocal_norm.h) and its plaintext model. The octave of x from one bit-sliced circuit
 * (veil_nl_octave_bits) instead of eight comparisons per octave (veil_mpc_reciprocal's table
 * start) costs a product to scale x into [1, 2) and one to scale the result back, and buys a
 * range 2^31 wide at a sixteenth of the bytes.
 */
#include "config.h"

#include "tasks/reciprocal_norm.h"

#include "base/base_internal.h"
#include "tasks/beaver.h"
#include "tasks/compare.h"
#include "tasks/nonlinear_internal.h"
#include "tasks/trunc.h"

#include <math.h>
#include <string.h>

#define P 20 /* fractional bits of m and of 1/m */

/* The start 24/17 - 8/17 m with m at Q bits, as a value at 2P bits: k0 - k1 m. */
static uint64_t k1_of(int q)
{
    return (uint64_t)llround(8.0 / 17.0 * ldexp(1.0, 2 * P - q));
}
static uint64_t k0_of(void)
{
    return (uint64_t)llround(24.0 / 17.0 * ldexp(1.0, 2 * P));
}

int veil_reciprocal_norm_check(const char *op, int f, int lo, int hi)
{
    const int k = hi - lo - 1;
    if (hi - 1 > f || f + hi - 1 > 2 * P || f > 20 || lo < -f || k < 1 ||
        k > VEIL_FLATOP_MAX_COPIES)
        return veil_error(VEIL_ERR_UNSUPPORTED, "%s: range [2^%d, 2^%d) with %d fractional bits "
                          "is outside the normalised reciprocal's limits (hi - 1 <= f <= 20, "
                          "lo >= -f, at most %d octaves)", op, lo, hi, f,
                          VEIL_FLATOP_MAX_COPIES + 1);
    return VEIL_OK;
}

/* Steps 1-2: the octave bits and the two powers of two S1 = 2^(G - e), S2 = 2^(f - e). */
static int scales(veil_mpc_t *m, const struct veil_sec *x, int lo, int hi, struct veil_sec *s1,
                  struct veil_sec *s2)
{
    const int f = veil_mpc_frac_bits(m), k = hi - lo - 1, g = hi - 1;
    struct veil_sec bits = {0};
    uint64_t c[VEIL_FLATOP_MAX_COPIES];
    int rc = veil_nl_octave_bits(m, x, lo, hi, &bits);
    for (int w = 0; w < 2 && rc == VEIL_OK; w++) {
        const int top = w ? f : g; /* S = 2^(top - e) = 2^(top - g) + sum c_i 2^(top - i) */
        for (int i = 0; i < k; i++)
            c[i] = UINT64_C(1) << (top - (lo + 1 + i));
        rc = veil_nl_bits_wsum(m, x, &bits, k, UINT64_C(1) << (top - g), c, w ? s2 : s1);
    }
    veil_mpc_release(m, &bits);
    return rc;
}

/* Steps 3-4: m at P bits and the start y0 at P bits, both like x, from one stacked truncation. */
static int normalise(veil_mpc_t *m, const struct veil_sec *x, const struct veil_sec *s1, int q,
                     struct veil_sec *mp, struct veil_sec *y0)
{
    struct veil_sec mq = {0}, mm = {0}, t = {0}, a = {0}, st = {0}, st2 = {0};
    struct veil_flatop_args fa;
    memset(&fa, 0, sizeof fa);
    fa.kind = VEIL_FLATOP_COPY;
    size_t dims[1] = {2 * x->numel};
    int rc;
    if ((rc = veil_mpc_mul(m, x, s1, &mq)) != VEIL_OK ||
        (rc = veil_mpc_mul_scalar(m, &mq, UINT64_C(1) << (2 * P - q), &mm)) != VEIL_OK ||
        (rc = veil_mpc_mul_scalar(m, &mq, 0 - k1_of(q), &t)) != VEIL_OK ||
        (rc = veil_mpc_add_scalar(m, &t, k0_of(), &a)) != VEIL_OK ||
        (rc = veil_sec_init(m, &st, VEIL_SHARE_ARITH, 1, dims, veil_nl_stack_tile(m))) != VEIL_OK)
        goto out;
    {
        struct veil_sec *outs[1] = {&st};
        const struct veil_sec *ins[2] = {&mm, &a};
        if ((rc = veil_nl_flat(m, fa, outs, 1, ins, 2)) != VEIL_OK ||
            (rc = veil_mpc_trunc(m, &st, P, &st2)) != VEIL_OK ||
            (rc = veil_sec_init_like(m, mp, x)) != VEIL_OK ||
            (rc = veil_sec_init_like(m, y0, x)) != VEIL_OK)
            goto out;
    }
    {
        struct veil_sec *outs[2] = {mp, y0};
        const struct veil_sec *ins[1] = {&st2};
        rc = veil_nl_flat(m, fa, outs, 2, ins, 1);
    }
out:
    veil_mpc_release(m, &mq);
    veil_mpc_release(m, &mm);
    veil_mpc_release(m, &t);
    veil_mpc_release(m, &a);
    veil_mpc_release(m, &st);
    veil_mpc_release(m, &st2);
    return rc;
}

int veil_mpc_reciprocal_norm(veil_mpc_t *m, const struct veil_sec *x, int lo, int hi,
                             struct veil_sec *y)
{
    int rc = veil_nl_check_unary("reciprocal", x, y);
    if (rc != VEIL_OK)
        return rc;
    memset(y, 0, sizeof *y);
    const int f = veil_mpc_frac_bits(m);
    if ((rc = veil_reciprocal_norm_check("reciprocal", f, lo, hi)) != VEIL_OK)
        return rc;
    struct veil_sec s1 = {0}, s2 = {0}, mp = {0}, cur = {0}, r = {0};
    if ((rc = scales(m, x, lo, hi, &s1, &s2)) != VEIL_OK ||
        (rc = normalise(m, x, &s1, f + hi - 1, &mp, &cur)) != VEIL_OK)
        goto out;
    if ((rc = veil_nl_recip_newton(m, &mp, &cur, P, 2, &r)) != VEIL_OK)
        goto out;
    rc = veil_nl_mul_trunc(m, &r, &s2, P, y);
out:
    veil_mpc_release(m, &s1);
    veil_mpc_release(m, &s2);
    veil_mpc_release(m, &mp);
    veil_mpc_release(m, &cur);
    veil_mpc_release(m, &r);
    return rc;
}

void veil_reciprocal_norm_cost(int nparties, size_t n, int f, int lo, int hi, uint64_t *rounds,
                               uint64_t *bytes)
{
    uint64_t r = 0, b = 0;
    veil_octave_bits_cost(nparties, n, f + lo + 1, f + hi - 1, &r, &b);
    if (rounds)
        *rounds = r + VEIL_RECIP_NORM_ROUNDS_AFTER;
    if (bytes)
        *bytes = b + (uint64_t)(nparties - 1) * 136 * (uint64_t)n;
}

#define TR(v, sh) veil_ref_trunc_model((v), (sh), state)

void veil_ref_reciprocal_norm(size_t n, const uint64_t *x, int lo, int hi, int f,
                              uint64_t *state, uint64_t *y)
{
    const int k = hi - lo - 1, g = hi - 1, q = f + g;
    for (size_t e = 0; e < n; e++) {
        uint64_t s1 = UINT64_C(1), s2 = UINT64_C(1) << (f - g);
        for (int i = 0; i < k; i++) {
            const uint64_t c = veil_nl_octave_bit_model(x[e], f + lo + 1 + i, f + hi - 1);
            s1 += c << (g - (lo + 1 + i));
            s2 += c << (f - (lo + 1 + i));
        }
        const uint64_t mq = x[e] * s1;
        const uint64_t mp = TR(mq << (2 * P - q), P);
        uint64_t cur = TR(k0_of() - k1_of(q) * mq, P);
        for (int it = 0; it < 2; it++)
            cur = TR(cur * ((UINT64_C(2) << 2 * P) - mp * cur), 2 * P);
        y[e] = TR(cur * s2, P);
    }
}

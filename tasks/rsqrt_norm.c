/*
 * rsqrt_norm.c — the inverse square root by normalisation (contract, method and costs in
 * rsqrt_norm.h) and its plaintext model, which mirrors the shares' ring operations one for one.
 * As reciprocal_norm.c: one bit-sliced circuit gives the octave's bits once; here they give
 * two public functions of the octave, the scale into [1, 2) and 2^(-e/2), so that a quadratic
 * start and ONE Newton step cover a range 2^31 wide. Stacking pairs of operands into one opening
 * keeps the counted rounds at the critical path's (21 at f = 16).
 */
#include "config.h"

#include "tasks/rsqrt_norm.h"

#include "base/base_internal.h"
#include "tasks/beaver.h"
#include "tasks/compare.h"
#include "tasks/nonlinear_internal.h"
#include "tasks/trunc.h"

#include <math.h>
#include <string.h>

#define P 20 /* fractional bits of m, y0 and m y0^2 */
#define W 58 /* bits of the stacked pair (m, u) before its truncation to P */

/* Minimax (relative) quadratic c2 m^2 + c1 m + c0 for 1/sqrt(m) on [1, 2]: error 3.49e-3,
 * 1.82e-5 after one Newton step. */
#define C2 0.14503488811015494
#define C1 (-0.7222294987393053)
#define C0 1.5737093732514928
/* Newton's error is -(3/2) e^2 <= 0: scaling by 1 + 2^-17 centres it (+-9.1e-6). */
#define BIAS (1.0 + 0x1p-17)

/* Bits of S2 = 2^(-e/2) (and of yS): the largest y0 S2 (2^(-lo/2) 2^T) times 3 at P bits stays
 * below 2^61. */
static int t_bits(int lo)
{
    return 38 - (-lo + 1) / 2;
}

static uint64_t enc(double c, int bits)
{
    return (uint64_t)llround(ldexp(c, bits));
}

/* S2's value for octave e. */
static uint64_t s2_of(int e, int t)
{
    return enc(pow(2.0, -0.5 * e) * BIAS, t);
}

int veil_rsqrt_norm_check(const char *op, int f, int lo, int hi, int xb)
{
    const int k = hi - lo - 1, t = t_bits(lo);
    if (f < 1 || f > 30 || lo < -f || k < 1 || k > VEIL_FLATOP_MAX_COPIES || f + hi - 1 > W ||
        hi > 2 * t - 41 || xb < 0 || f + xb > P + t)
        return veil_error(VEIL_ERR_UNSUPPORTED, "%s: range [2^%d, 2^%d) with %d fractional bits "
                          "(%d more on the output) is outside the normalised inverse square "
                          "root's limits (lo >= -f, f + hi <= %d, hi <= %d, at most %d octaves)",
                          op, lo, hi, f, xb, W + 1, 2 * t - 41, VEIL_FLATOP_MAX_COPIES + 1);
    return VEIL_OK;
}

/* Step 1-2: the octave bits and the two linear forms S1 = 2^(hi-1-e), S2 = s2_of(e). */
static int scales(veil_mpc_t *m, const struct veil_sec *x, int lo, int hi, struct veil_sec *s1,
                  struct veil_sec *s2)
{
    const int k = hi - lo - 1, g = hi - 1, t = t_bits(lo);
    struct veil_sec bits = {0};
    uint64_t c[VEIL_FLATOP_MAX_COPIES];
    int rc = veil_nl_octave_bits(m, x, lo, hi, &bits);
    for (int w = 0; w < 2 && rc == VEIL_OK; w++) {
        /* g(e) = g(hi - 1) + sum_i c_i (g(i - 1) - g(i)), c_i = [x < 2^i] */
        for (int i = 0; i < k; i++) {
            const int j = lo + 1 + i;
            c[i] = w ? s2_of(j - 1, t) - s2_of(j, t) : UINT64_C(1) << (g - j);
        }
        rc = veil_nl_bits_wsum(m, x, &bits, k, w ? s2_of(g, t) : 1, c, w ? s2 : s1);
    }
    veil_mpc_release(m, &bits);
    return rc;
}

/* The stacked pair (a, b) -> one tensor of 2 numel words (the stack tile). */
static int stack2(veil_mpc_t *m, const struct veil_sec *a, const struct veil_sec *b,
                  struct veil_sec *st)
{
    struct veil_flatop_args fa;
    memset(&fa, 0, sizeof fa);
    fa.kind = VEIL_FLATOP_COPY;
    size_t dims[1] = {2 * a->numel};
    int rc = veil_sec_init(m, st, VEIL_SHARE_ARITH, 1, dims, veil_nl_stack_tile(m));
    if (rc == VEIL_OK) {
        struct veil_sec *outs[1] = {st};
        const struct veil_sec *ins[2] = {a, b};
        rc = veil_nl_flat(m, fa, outs, 1, ins, 2);
    }
    return rc;
}

/* The stacked pair's halves -> oa, ob (initialised like x). */
static int split2(veil_mpc_t *m, const struct veil_sec *st, const struct veil_sec *x,
                  struct veil_sec *oa, struct veil_sec *ob)
{
    struct veil_flatop_args fa;
    memset(&fa, 0, sizeof fa);
    fa.kind = VEIL_FLATOP_COPY;
    int rc = veil_sec_init_like(m, oa, x);
    if (rc == VEIL_OK)
        rc = veil_sec_init_like(m, ob, x);
    if (rc == VEIL_OK) {
        struct veil_sec *outs[2] = {oa, ob};
        const struct veil_sec *ins[1] = {st};
        rc = veil_nl_flat(m, fa, outs, 2, ins, 1);
    }
    return rc;
}

/* trunc(stack(a, b), s) split into oa, ob: one opening for both. */
static int trunc2(veil_mpc_t *m, const struct veil_sec *a, const struct veil_sec *b, int s,
                  const struct veil_sec *x, struct veil_sec *oa, struct veil_sec *ob)
{
    struct veil_sec st = {0}, tr = {0};
    int rc = stack2(m, a, b, &st);
    if (rc == VEIL_OK)
        rc = veil_mpc_trunc(m, &st, s, &tr);
    if (rc == VEIL_OK)
        rc = split2(m, &tr, x, oa, ob);
    veil_mpc_release(m, &st);
    veil_mpc_release(m, &tr);
    return rc;
}

/* The temporaries of the protocol, released together. */
enum { S1, S2, MQ, MW, UW, MP, UP, UU, T1, T2, Y0W, MY, Y0S, MYP, Y0P, L, R, PR, TP, MY2,
       YS, D, Z, NT };

/* Steps 3-7 (rsqrt_norm.h): m y0^2 at P bits in t[MY2], y0 S2 at T bits in t[YS]. */
static int start(veil_mpc_t *m, const struct veil_sec *x, int hi, struct veil_sec *t)
{
    const int f = veil_mpc_frac_bits(m), q = f + hi - 1;
    int rc = veil_mpc_mul(m, x, &t[S1], &t[MQ]);
    if (rc == VEIL_OK)
        rc = veil_mpc_mul_scalar(m, &t[MQ], UINT64_C(1) << (W - q), &t[MW]);
    if (rc == VEIL_OK)
        rc = veil_mpc_mul_scalar(m, &t[MQ], enc(sqrt(C2), W - q), &t[UW]);
    if (rc == VEIL_OK)
        rc = trunc2(m, &t[MW], &t[UW], W - P, x, &t[MP], &t[UP]);
    if (rc == VEIL_OK) /* y0 = u^2 + c1 m + c0 at 2P bits */
        rc = veil_mpc_square(m, &t[UP], &t[UU]);
    if (rc == VEIL_OK)
        rc = veil_mpc_mul_scalar(m, &t[MP], 0 - enc(-C1, P), &t[T1]);
    if (rc == VEIL_OK)
        rc = veil_mpc_add(m, &t[UU], &t[T1], &t[T2]);
    if (rc == VEIL_OK)
        rc = veil_mpc_add_scalar(m, &t[T2], enc(C0, 2 * P), &t[Y0W]);
    if (rc == VEIL_OK)
        rc = veil_mpc_mul(m, &t[MP], &t[Y0W], &t[MY]);
    if (rc == VEIL_OK)
        rc = veil_mpc_mul_scalar(m, &t[Y0W], UINT64_C(1) << P, &t[Y0S]);
    if (rc == VEIL_OK)
        rc = trunc2(m, &t[MY], &t[Y0S], 2 * P, x, &t[MYP], &t[Y0P]);
    if (rc == VEIL_OK)
        rc = stack2(m, &t[MYP], &t[S2], &t[L]);
    if (rc == VEIL_OK)
        rc = stack2(m, &t[Y0P], &t[Y0P], &t[R]);
    if (rc == VEIL_OK)
        rc = veil_mpc_mul(m, &t[L], &t[R], &t[PR]);
    if (rc == VEIL_OK)
        rc = veil_mpc_trunc(m, &t[PR], P, &t[TP]);
    if (rc == VEIL_OK)
        rc = split2(m, &t[TP], x, &t[MY2], &t[YS]);
    return rc;
}

int veil_mpc_rsqrt_norm(veil_mpc_t *m, const struct veil_sec *x, int lo, int hi, int xb,
                        struct veil_sec *y)
{
    int rc = veil_nl_check_unary("rsqrt", x, y);
    if (rc != VEIL_OK)
        return rc;
    memset(y, 0, sizeof *y);
    const int f = veil_mpc_frac_bits(m), t = t_bits(lo);
    if ((rc = veil_rsqrt_norm_check("rsqrt", f, lo, hi, xb)) != VEIL_OK)
        return rc;
    struct veil_sec tmp[NT];
    memset(tmp, 0, sizeof tmp);
    rc = scales(m, x, lo, hi, &tmp[S1], &tmp[S2]);
    if (rc == VEIL_OK)
        rc = start(m, x, hi, tmp);
    if (rc == VEIL_OK) /* y = yS (3 - m y0^2) / 2, from T + P bits to f + xb */
        rc = veil_nl_rsub_scalar(m, &tmp[MY2], UINT64_C(3) << P, &tmp[D]);
    if (rc == VEIL_OK)
        rc = veil_mpc_mul(m, &tmp[YS], &tmp[D], &tmp[Z]);
    if (rc == VEIL_OK)
        rc = veil_mpc_trunc(m, &tmp[Z], P + 1 + t - f - xb, y);
    for (int i = 0; i < NT; i++)
        veil_mpc_release(m, &tmp[i]);
    return rc;
}

void veil_rsqrt_norm_cost(int nparties, size_t n, int f, int lo, int hi, uint64_t *rounds,
                          uint64_t *bytes)
{
    uint64_t r = 0, b = 0;
    veil_octave_bits_cost(nparties, n, f + lo + 1, f + hi - 1, &r, &b);
    if (rounds)
        *rounds = r + VEIL_RSQRT_NORM_ROUNDS_AFTER;
    if (bytes)
        *bytes = b + (uint64_t)(nparties - 1) * 144 * (uint64_t)n;
}

#define TR(v, sh) veil_ref_trunc_model((v), (sh), state)

void veil_ref_rsqrt_norm(size_t n, const uint64_t *x, int lo, int hi, int f, int xb,
                         uint64_t *state, uint64_t *y)
{
    const int k = hi - lo - 1, g = hi - 1, q = f + g, t = t_bits(lo);
    const uint64_t ku = enc(sqrt(C2), W - q), c1 = 0 - enc(-C1, P), c0 = enc(C0, 2 * P);
    uint64_t d2[VEIL_FLATOP_MAX_COPIES]; /* S2's coefficients, as the secure linear form's */
    for (int i = 0; i < k && i < VEIL_FLATOP_MAX_COPIES; i++)
        d2[i] = s2_of(lo + i, t) - s2_of(lo + 1 + i, t);
    for (size_t e = 0; e < n; e++) {
        uint64_t s1 = 1, s2 = s2_of(g, t);
        for (int i = 0; i < k && i < VEIL_FLATOP_MAX_COPIES; i++) {
            const int j = lo + 1 + i;
            const uint64_t c = veil_nl_octave_bit_model(x[e], f + j, f + hi - 1);
            s1 += c << (g - j);
            s2 += c * d2[i];
        }
        const uint64_t mq = x[e] * s1;
        const uint64_t mp = TR(mq << (W - q), W - P), up = TR(mq * ku, W - P);
        const uint64_t y0w = up * up + c1 * mp + c0;
        const uint64_t my = TR(mp * y0w, 2 * P), y0 = TR(y0w << P, 2 * P);
        const uint64_t my2 = TR(my * y0, P), ys = TR(s2 * y0, P);
        y[e] = TR(ys * ((UINT64_C(3) << P) - my2), P + 1 + t - f - xb);
    }
}

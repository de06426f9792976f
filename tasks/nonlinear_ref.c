/*
 * nonlinear_ref.c — the public constants of the nonlinear protocols and their plaintext
 * fixed-point model (contract in nonlinear_ref.h). Every function here mirrors, operation for
 * operation, what tasks/exp.c, reciprocal.c, softmax.c and gelu.c compute on shares; keep them
 * in step when either changes.
 */
#include "config.h"

#include "tasks/nonlinear_ref.h"

#include "base/base_internal.h"
#include "tasks/nonlinear.h"

#include <math.h>
#include <string.h>

/* GELU polynomial: GELU(x) ~ x/2 + sum_i C_i v^i, v = x^2 / a^2, on [-a, a] (Lawson / IRLS
 * minimax fit of x erf(x / sqrt 2) / 2 on [0, a] with C_0 = 0, so that GELU(0) = 0 exactly; max
 * fit error 4.2e-4, balanced against the cut's a Phi(-a) = 4.0e-4 at a = 3.7). */
static const double gelu_c[VEIL_GELU_DEG + 1] = {0,           5.431827708,  -11.79812851,
                                                 20.49716403, -22.50037089, 13.74668079,
                                                 -3.527989981};

static uint64_t enc(double v, int bits)
{
    return (uint64_t)(int64_t)llround(ldexp(v, bits));
}

int veil_nl_table_init(struct veil_nl_table *tab, enum veil_nl_fn fn, int lo, int hi, int steps,
                       int f)
{
    memset(tab, 0, sizeof *tab);
    if (steps < 1 || lo >= hi || lo < -f / 2 || hi > 24 - f / 2)
        return veil_error(VEIL_ERR_INVAL,
                          "%s: range [2^%d, 2^%d) with %d steps per octave; "
                          "need -f/2 <= lo < hi <= 24 - f/2 (f = %d)",
                          fn == VEIL_NL_RECIPROCAL ? "reciprocal" : "inv_sqrt", lo, hi, steps, f);
    int k = steps * (hi - lo) - 1;
    if (k > VEIL_FLATOP_MAX_COPIES)
        return veil_error(VEIL_ERR_INVAL,
                          "%s: %d thresholds (range [2^%d, 2^%d), %d per octave); "
                          "at most %d: narrow the range",
                          fn == VEIL_NL_RECIPROCAL ? "reciprocal" : "inv_sqrt", k, lo, hi, steps,
                          VEIL_FLATOP_MAX_COPIES);
    tab->k = k;
    double y[VEIL_FLATOP_MAX_COPIES + 1];
    for (int j = 0; j <= k; j++) {
        double a = exp2(lo + (double)j / steps), b = exp2(lo + (double)(j + 1) / steps);
        y[j] = fn == VEIL_NL_RECIPROCAL ? 2 / (a + b) : 2 / (sqrt(a) + sqrt(b));
        if (j >= 1)
            tab->t[j] = enc(a, f);
    }
    /* segment j: y0 = y[k] + sum_{i > j} (y[i-1] - y[i]) = y[j] */
    tab->c0 = enc(y[k], f);
    for (int i = 1; i <= k; i++)
        tab->w[i] = enc(y[i - 1], f) - enc(y[i], f);
    return VEIL_OK;
}

void veil_nl_gelu_init(struct veil_nl_gelu *g, int f)
{
    const double a = VEIL_GELU_CUT;
    g->a = enc(a, f);
    g->cv = enc(1 / (a * a), VEIL_GELU_CV_BITS);
    g->cvt = enc(gelu_c[VEIL_GELU_DEG] / (a * a), VEIL_GELU_CV_BITS);
    for (int i = 0; i <= VEIL_GELU_DEG; i++)
        g->c[i] = enc(gelu_c[i], VEIL_GELU_FRAC);
    g->shift_v = 2 * f + VEIL_GELU_CV_BITS - VEIL_GELU_FRAC;
}

uint64_t veil_ref_trunc_model(uint64_t x, int s, uint64_t *state)
{
    uint64_t z = (uint64_t)((int64_t)x >> s);
    if (state) {
        uint64_t v = *state;
        v ^= v << 13;
        v ^= v >> 7;
        v ^= v << 17;
        *state = v;
        z += v >> 63;
    }
    return z;
}

#define TR(v, s) veil_ref_trunc_model((v), (s), state)

void veil_ref_exp(size_t n, const uint64_t *x, int f, uint64_t *state, uint64_t *y)
{
    const int sq = VEIL_EXP_SQUARINGS, g = VEIL_EXP_GUARD;
    for (size_t i = 0; i < n; i++) {
        int p = f + sq + g; /* precision P_0 of the base */
        uint64_t t = x[i] << g;
        uint64_t v = t + TR(t * t, p + 1) + (UINT64_C(1) << p);
        for (int s = 0; s < sq; s++) {
            int next = s + 1 == sq ? f : p - 1;
            v = TR(v * v, 2 * p - next);
            p = next;
        }
        y[i] = v;
    }
}

static void start(size_t n, const uint64_t *x, const struct veil_nl_table *tab, uint64_t *y)
{
    for (size_t e = 0; e < n; e++) {
        uint64_t v = tab->c0;
        for (int i = 1; i <= tab->k; i++)
            v += tab->w[i] * (uint64_t)((int64_t)(x[e] - tab->t[i]) < 0);
        y[e] = v;
    }
}

void veil_ref_reciprocal_range(size_t n, const uint64_t *x, int lo, int hi, int f, uint64_t *state,
                               uint64_t *y)
{
    struct veil_nl_table tab;
    if (veil_nl_table_init(&tab, VEIL_NL_RECIPROCAL, lo, hi, VEIL_RECIP_STEPS, f) != VEIL_OK)
        return;
    start(n, x, &tab, y);
    for (int it = 0; it < VEIL_RECIP_ITERS; it++)
        for (size_t e = 0; e < n; e++) {
            uint64_t xy = x[e] * y[e]; /* 2f bits: not truncated */
            y[e] = TR(y[e] * ((UINT64_C(2) << 2 * f) - xy), 2 * f);
        }
}

void veil_ref_inv_sqrt_range(size_t n, const uint64_t *x, int lo, int hi, int f, uint64_t *state,
                             uint64_t *y)
{
    struct veil_nl_table tab;
    if (veil_nl_table_init(&tab, VEIL_NL_INV_SQRT, lo, hi, VEIL_ISQRT_STEPS, f) != VEIL_OK)
        return;
    start(n, x, &tab, y);
    for (int it = 0; it < VEIL_ISQRT_ITERS; it++)
        for (size_t e = 0; e < n; e++) {
            uint64_t xy2 = TR(x[e] * y[e] * y[e], 2 * f); /* x y at 2f bits, no truncation */
            y[e] = TR(y[e] * ((UINT64_C(3) << f) - xy2), f + 1);
        }
}

void veil_ref_gelu(size_t n, const uint64_t *x, int f, uint64_t *state, uint64_t *y)
{
    struct veil_nl_gelu g;
    veil_nl_gelu_init(&g, f);
    const int F = VEIL_GELU_FRAC;
    for (size_t e = 0; e < n; e++) {
        uint64_t blo = (int64_t)(x[e] + g.a) < 0, bhi = (int64_t)(x[e] - g.a) < 0;
        uint64_t q = x[e] * x[e];
        uint64_t v = TR(q * g.cv, g.shift_v);
        uint64_t acc = TR(q * g.cvt, g.shift_v) + g.c[VEIL_GELU_DEG - 1];
        for (int i = VEIL_GELU_DEG - 2; i >= 1; i--)
            acc = TR(v * acc, F) + g.c[i];
        uint64_t r = v * acc + (g.c[0] << F) + (x[e] << (2 * F - f - 1));
        uint64_t p = TR(r, 2 * F - f);
        y[e] = x[e] + bhi * (p - x[e]) - blo * p;
    }
}

void veil_ref_softmax_lastdim(size_t rows, size_t k, const uint64_t *x, int f, uint64_t *state,
                              uint64_t *y)
{
    int hi = 1;
    while (((size_t)1 << hi) <= k)
        hi++;
    for (size_t r = 0; r < rows; r++) {
        const uint64_t *xr = x + r * k;
        uint64_t *yr = y + r * k;
        uint64_t mx = xr[0], s = 0, inv;
        for (size_t j = 1; j < k; j++)
            if ((int64_t)xr[j] > (int64_t)mx)
                mx = xr[j];
        for (size_t j = 0; j < k; j++) {
            uint64_t d = xr[j] - mx;
            veil_ref_exp(1, &d, f, state, &yr[j]);
            if ((int64_t)(d + ((uint64_t)VEIL_SOFTMAX_FLOOR << f)) < 0)
                yr[j] = 0;
            s += yr[j];
        }
        veil_ref_reciprocal_range(1, &s, 0, hi, f, state, &inv);
        for (size_t j = 0; j < k; j++)
            yr[j] = TR(yr[j] * inv, f);
    }
}

double veil_ref_gelu_f64(double x)
{
    return 0.5 * x * (1 + erf(x / sqrt(2.0)));
}

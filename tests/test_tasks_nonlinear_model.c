/* Tests the plaintext fixed-point model of the nonlinear protocols (tasks/nonlinear_ref.h) over
 * each documented input range at a fine grid against double references, with the truncation
 * protocol's 0/1-ulp error modelled: the error bounds stated in tasks/nonlinear.h hold, the
 * out-of-range behaviour stated there is what happens, and the start tables are sane. Prints
 * the measured figures with VEIL_TEST_VERBOSE=1. No party processes. */
#include "config.h"
#include "tasks/nonlinear.h"
#include "tasks/nonlinear_ref.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static int fails, verbose;
#define F 16
#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                                   \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fprintf(stderr, "\n");                                                                 \
            fails++;                                                                               \
        }                                                                                          \
    } while (0)

static uint64_t enc(double v)
{
    return (uint64_t)(int64_t)llround(ldexp(v, F));
}
static double dec(uint64_t v)
{
    return ldexp((double)(int64_t)v, -F);
}

typedef void (*model_fn)(uint64_t x, uint64_t *state, uint64_t *y);
static void m_exp(uint64_t x, uint64_t *s, uint64_t *y)
{
    veil_ref_exp(1, &x, F, s, y);
}
static void m_gelu(uint64_t x, uint64_t *s, uint64_t *y)
{
    veil_ref_gelu(1, &x, F, s, y);
}
static void m_rec(uint64_t x, uint64_t *s, uint64_t *y)
{
    veil_ref_reciprocal_range(1, &x, VEIL_RECIP_LO, VEIL_RECIP_HI, F, s, y);
}
static void m_isq(uint64_t x, uint64_t *s, uint64_t *y)
{
    veil_ref_inv_sqrt_range(1, &x, VEIL_ISQRT_LO, VEIL_ISQRT_HI, F, s, y);
}
static double r_rec(double x)
{
    return 1 / x;
}
static double r_isq(double x)
{
    return 1 / sqrt(x);
}

/* Max abs and rel error of fn over [lo, hi] at step (in ulps); two error streams. */
static void sweep(const char *name, model_fn fn, double (*ref)(double), double lo, double hi,
                  double step_ulps, double max_abs, double max_rel)
{
    double ea = 0, er = 0, at_a = 0;
    uint64_t st = 0x9e3779b97f4a7c15u;
    for (double x = lo; x <= hi; x += step_ulps * ldexp(1, -F)) {
        uint64_t y, xe = enc(x);
        fn(xe, &st, &y);
        double want = ref(dec(xe)), got = dec(y), a = fabs(got - want);
        if (a > ea) {
            ea = a;
            at_a = dec(xe);
        }
        if (want != 0 && a / fabs(want) > er && fabs(want) > 0.05)
            er = a / fabs(want);
    }
    if (verbose)
        printf("%-10s [%g, %g]: max abs %.3g (at %g), max rel (|y| > 0.05) %.3g\n", name, lo, hi,
               ea, at_a, er);
    CHECK(ea <= max_abs, "%s: max abs error %.3g > %.3g (at %g)", name, ea, max_abs, at_a);
    CHECK(er <= max_rel, "%s: max rel error %.3g > %.3g", name, er, max_rel);
}

int main(void)
{
    verbose = getenv("VEIL_TEST_VERBOSE") && atoi(getenv("VEIL_TEST_VERBOSE"));
    sweep("exp", m_exp, exp, -64, 0, 1, 1e-4, 2e-3);
    sweep("exp-tail", m_exp, exp, -112, -64, 7, 2e-5, 1e9);
    sweep("exp-pos", m_exp, exp, 0, 8, 3, 1e9, 0.03);
    sweep("recip", m_rec, r_rec, 1, 1023.99, 5, 3e-5, 5e-4);
    sweep("recip-1-16", m_rec, r_rec, 1, 16, 1, 3e-5, 5e-4);
    sweep("inv_sqrt", m_isq, r_isq, 1.0 / 256, 255.99, 3, 1.5e-4, 5e-4);
    sweep("isqrt-1-256", m_isq, r_isq, 1, 255.99, 1, 3e-5, 5e-4);
    sweep("gelu", m_gelu, veil_ref_gelu_f64, -8, 8, 1, 4.5e-4, 1e9);
    {
        uint64_t y, x = 0;
        veil_ref_gelu(1, &x, F, NULL, &y);
        CHECK(y == 0, "GELU(0) = %g, not 0", dec(y));
    }
    /* softmax: rows spread far beyond exp's domain give exact zeros and finite sums */
    {
        uint64_t x[4] = {enc(30000), enc(-30000), enc(29900), enc(29935)}, y[4];
        veil_ref_softmax_lastdim(1, 4, x, F, NULL, y);
        CHECK(y[1] == 0 && y[2] == 0 && y[3] == 0 && fabs(dec(y[0]) - 1) < 1e-4,
              "wide row: %g %g %g %g", dec(y[0]), dec(y[1]), dec(y[2]), dec(y[3]));
    }
    /* exp below its range is wrong, as documented: back to about 1 at x = -128 */
    {
        uint64_t y, x = enc(-128);
        veil_ref_exp(1, &x, F, NULL, &y);
        CHECK(dec(y) > 0.5, "exp(-128) documented to come back near 1, got %g", dec(y));
    }
    /* softmax over rows of 10 and 128: rows sum to 1 */
    {
        enum { K = 128 };
        uint64_t x[K], y[K], st = 12345;
        for (int kk = 0; kk < 2; kk++) {
            int k = kk ? 128 : 10;
            double worst = 0, werr = 0;
            for (int r = 0; r < 200; r++) {
                double xd[K], mx = -1e9, s = 0;
                for (int j = 0; j < k; j++) {
                    x[j] = enc(((double)((r * 7919 + j * 104729) % 2000) / 100.0 - 10) *
                               (r % 3 + 1) / 2);
                    xd[j] = dec(x[j]);
                    mx = fmax(mx, xd[j]);
                }
                for (int j = 0; j < k; j++)
                    s += exp(xd[j] - mx);
                veil_ref_softmax_lastdim(1, (size_t)k, x, F, &st, y);
                double sum = 0;
                for (int j = 0; j < k; j++) {
                    sum += dec(y[j]);
                    werr = fmax(werr, fabs(dec(y[j]) - exp(xd[j] - mx) / s));
                }
                worst = fmax(worst, fabs(sum - 1));
            }
            if (verbose)
                printf("softmax/%d: max |row sum - 1| %.3g, max abs error %.3g\n", k, worst, werr);
            CHECK(worst <= (k == 10 ? 2e-4 : 1.5e-3), "softmax/%d: row sum off by %.3g", k, worst);
            CHECK(werr <= 3e-4, "softmax/%d: max abs error %.3g", k, werr);
        }
    }
    /* softmax edge rows: [0, d, d, ...], [0, d, -1000, ...] and half 0 half d, d over [-70, 0],
     * for k = 2, 10, 128: the bounds measured and stated in nonlinear.h hold for every row */
    {
        enum { K = 128 };
        static const int ks[3] = {2, 10, 128};
        uint64_t x[K], y[K], st = 777;
        for (int kk = 0; kk < 3; kk++) {
            const int k = ks[kk];
            double werr = 0, at = 0;
            for (double dd = -70; dd <= 0; dd += 0.001 * (1 + 20 * kk)) {
                for (int fam = 0; fam < 3; fam++) {
                    double xd[K], s = 0;
                    for (int j = 0; j < k; j++) {
                        xd[j] = fam == 0 ? (j ? dd : 0)
                              : fam == 1 ? (j == 0 ? 0 : j == 1 ? dd : -1000)
                                         : (j < k / 2 ? 0 : dd);
                        x[j] = enc(xd[j]);
                        xd[j] = dec(x[j]);
                    }
                    for (int j = 0; j < k; j++)
                        s += exp(xd[j]);
                    veil_ref_softmax_lastdim(1, (size_t)k, x, F, &st, y);
                    for (int j = 0; j < k; j++)
                        if (fabs(dec(y[j]) - exp(xd[j]) / s) > werr) {
                            werr = fabs(dec(y[j]) - exp(xd[j]) / s);
                            at = dd;
                        }
                }
            }
            if (verbose)
                printf("softmax/%d edge rows: max abs error %.4g (at d = %g)\n", k, werr, at);
            CHECK(werr <= (k == 2 ? 1e-4 : k == 10 ? 4e-4 : 2.3e-3),
                  "softmax/%d edge rows: max abs error %.4g (at d = %g)", k,
                  werr, at);
        }
    }
    /* tables: thresholds increase, and the bad ranges are refused */
    {
        struct veil_nl_table t;
        CHECK(veil_nl_table_init(&t, VEIL_NL_RECIPROCAL, 0, 10, 4, F) == 0 && t.k == 39,
              "reciprocal table of [1, 1024)");
        for (int i = 2; i <= t.k; i++)
            CHECK(t.t[i] > t.t[i - 1], "thresholds increase");
        CHECK(veil_nl_table_init(&t, VEIL_NL_RECIPROCAL, 3, 3, 4, F) != 0, "empty range refused");
        CHECK(veil_nl_table_init(&t, VEIL_NL_INV_SQRT, -9, 8, 4, F) != 0, "lo < -f/2 refused");
        CHECK(veil_nl_table_init(&t, VEIL_NL_INV_SQRT, -8, 17, 4, F) != 0, "hi too big refused");
    }
    return fails ? 1 : 0;
}

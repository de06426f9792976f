/* Tests layer norm (graph_internal.h, LAYERNORM: the row scale) on the rows that used to come back
 * wrong: variance 256 and 1024, the largest spread the feeds accept (+-(2^15 - 2^-16)
 * alternating, variance 2^30, and a row spread over the whole range), a large mean (30000 +- 5),
 * a constant row and a row of 0 (both must give beta exactly), variance 100 and 144 (either side
 * of the first scale threshold 2^7), small variances (1/64; 9e-4, 1.6e-5 about eps, 5e-5 on a
 * mean of 100, 2^-32: the rows scaled up) and an ordinary row. The plaintext
 * FIXED executor and the secure run with N = 2 and N = 3 (a dealer) are compared with layer norm
 * in double: |y - y_ref| <= 1e-3 |gamma xhat_ref| + (4 + 1.5 / sigma) ulp |gamma| + 2 ulp
 * (relative error 1e-3 of xhat, the bound, plus the fixed-point mean's 1-ulp rounding in
 * xc, which 1/sigma multiplies: it dominates only where xc is a few ulps); each run's rounds and
 * bytes equal the sequence's formula plus sharing x, gamma and beta and revealing y. Rows beyond
 * the domain (spread >= 2^18 at f = 16, after a scale by 16) are refused by the FIXED run
 * (VEIL_ERR_RANGE naming the node and the row); just inside (scaled by 3.999) they are not. */
#include "config.h"
#include "graph/graph_internal.h"
#include "tasks/nonlinear.h"
#include "test_graph_util.h"
#include "test_mpc_util.h"
#include "test_util.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ROWS 16
#define D 16
#define N (ROWS * D)
#define MAXPROC 4
#define EPS 1e-5

struct shared {
    double y[MAXPROC][N];
    struct veil_run_stats stats[MAXPROC];
};

static struct shared *sh;
static double xs[N], gs[D], bs[D], yref[N], xhref[N], rref[ROWS];

static void fill(void)
{
    const double u = ldexp(1.0, -16), top = 32768.0 - u;
    for (int j = 0; j < D; j++) {
        const double alt = j % 2 ? -1.0 : 1.0;
        xs[0 * D + j] = 16.0 * alt;                                  /* variance 256 */
        xs[1 * D + j] = 32.0 * alt;                                  /* variance 1024 */
        xs[2 * D + j] = top * alt;                                   /* variance ~2^30 */
        xs[3 * D + j] = 30000.0 + 5.0 * sin(1.0 + j);                /* large mean */
        xs[4 * D + j] = 7.25;                                        /* constant */
        xs[5 * D + j] = 0.0;                                         /* zeros */
        xs[6 * D + j] = 3.0 * sin(0.7 * j) + 0.5;                    /* ordinary */
        xs[7 * D + j] = 10.0 * alt;                                  /* variance 100 */
        xs[8 * D + j] = 12.0 * alt;                                  /* variance 144 */
        xs[9 * D + j] = -top + 2 * top * (0.5 + 0.5 * sin(3.1 * j)); /* the whole range */
        xs[10 * D + j] = 0.125 * alt;                                /* variance 1/64 */
        xs[11 * D + j] = 20000.0 + 10000.0 * cos(0.9 * j);           /* spread 20000 */
        xs[12 * D + j] = 0.03 * alt;                                 /* variance 9e-4 */
        xs[13 * D + j] = 0.004 * alt;                                /* variance 1.6e-5 ~ eps */
        xs[14 * D + j] = ldexp(1.0, -16) * (j % 3);                  /* variance 2^-32 */
        xs[15 * D + j] = 100.0 + 0.01 * sin(2.0 * j);                /* variance 5e-5 */
    }
    xs[9 * D + 3] = -top;
    xs[9 * D + 5] = top;
    for (int j = 0; j < D; j++) {
        gs[j] = 1.0 + 0.2 * sin(2.0 + j);
        bs[j] = 0.1 * cos(1.0 + 2 * j);
    }
    for (int r = 0; r < ROWS; r++) { /* double layer norm of the encoded inputs */
        double mean = 0, var = 0, x[D];
        for (int j = 0; j < D; j++) {
            x[j] = ldexp(round(ldexp(xs[r * D + j], 16)), -16);
            mean += x[j] / D;
        }
        for (int j = 0; j < D; j++)
            var += (x[j] - mean) * (x[j] - mean) / D;
        rref[r] = 1 / sqrt(var + EPS);
        for (int j = 0; j < D; j++) {
            xhref[r * D + j] = (x[j] - mean) / sqrt(var + EPS);
            yref[r * D + j] = xhref[r * D + j] * gs[j] + bs[j];
        }
    }
}

static double worst_rel; /* over the rows of variance >= 1/64 */

static void check(const char *what, const double *y)
{
    const double ulp = ldexp(1.0, -16);
    for (int i = 0; i < N; i++) {
        const int r = i / D, j = i % D;
        const double e = fabs(y[i] - yref[i]);
        /* 1e-3 relative, plus the mean's 1-ulp rounding in xc, which 1/sigma multiplies */
        const double tol =
            1e-3 * fabs(gs[j] * xhref[i]) + (4 + 1.5 * rref[r]) * ulp * fabs(gs[j]) + 2 * ulp;
        VT_CHECK(e <= tol, "%s: row %d col %d: %.9g, want %.9g (error %.3g > %.3g)", what, r, j,
                 y[i], yref[i], e, tol);
        if (r == 4 || r == 5)
            VT_CHECK(y[i] == ldexp(round(ldexp(bs[j], 16)), -16),
                     "%s: constant row %d gives %.9g, not beta %.9g", what, r, y[i], bs[j]);
        if (fabs(xhref[i]) > 0.1 && rref[r] <= 8 && e / fabs(gs[j] * xhref[i]) > worst_rel)
            worst_rel = e / fabs(gs[j] * xhref[i]);
    }
}

/* Rounds and bytes (divided by N-1) of the layer norm over ROWS rows of D (graph_internal.h). */
static void ln_cost(int n, uint64_t *r, uint64_t *b)
{
    uint64_t ir, ib;
    veil_nl_cost(VEIL_NL_ISQRT, n, ROWS, 0, VEIL_ISQRT_LO, VEIL_ISQRT_HI, &ir, &ib);
    const uint64_t w = VEIL_LN_NBITS * ROWS; /* the scale's ltz: one tile */
    /* mean trunc; scale: trunc, square, ltz, mul, trunc; square; trunc; 1/d; inv_sqrt;
     * xhat mul + trunc; gamma mul + trunc */
    *r = 1 + (1 + 1 + 4 + 1 + 1) + 1 + 1 + 1 + ir + 2 + 2;
    *b = (uint64_t)(n - 1) * (8 * 3 * ROWS + 8 * (w + 36 * ((w + 63) / 64)) + 96 * N) + ib;
}

/* Rows beyond the domain: layer norm of 16 x (the rows above), where row 2 spreads about 2^20
 * (beyond 2^(62 - f - 28) = 2^18) and row 9 too: the FIXED run refuses it naming the node and the
 * first such row (VEIL_ERR_RANGE), the DOUBLE run computes it; scaled by 3.999 instead (row 2
 * spread 2^18 - 66, d var 2^37.9: just inside) the FIXED run is not refused. */
static void check_refusal(void)
{
    for (int k = 0; k < 2; k++) {
        const double c = k ? 3.999 : 16.0;
        veil_graph_t *g = veil_graph_new("ln_wide");
        size_t dims[2] = {ROWS, D}, dd[1] = {D};
        veil_node_t *x = veil_input(g, "x", 1, 2, dims);
        veil_node_t *gm = veil_param(g, "gamma", 1, 1, dd), *bt = veil_param(g, "beta", 1, 1, dd);
        veil_node_t *y = veil_layernorm(g, "lnw", veil_scale(g, "up", x, c), gm, bt, EPS);
        veil_plan_t *p = y && veil_reveal(g, y, VEIL_ALL_PARTIES) == VEIL_OK ? veil_compile(g, NULL)
                                                                            : NULL;
        VT_CHECK(p, "ln_wide compile: %s", veil_last_error());
        if (p) {
            struct veil_feed f[3] = {{"x", xs, N}, {"gamma", gs, D}, {"beta", bs, D}};
            double out[N], *outs[1] = {out};
            const int rc = veil_plain_run(p, VEIL_PLAIN_FIXED, f, 3, outs);
            if (!k)
                VT_CHECK(rc == VEIL_ERR_RANGE &&
                             strstr(veil_last_error(), "layernorm 'lnw': row 2 has spread") &&
                             strstr(veil_last_error(), "scale the rows down"),
                         "FIXED layer norm of rows spread 2^20: rc %d, '%s'", rc,
                         veil_last_error());
            else
                VT_CHECK(rc == VEIL_OK, "FIXED layer norm of rows spread 2^18 - 66: %s",
                         veil_last_error());
            VT_CHECK(veil_plain_run(p, VEIL_PLAIN_DOUBLE, f, 3, outs) == VEIL_OK,
                     "DOUBLE layer norm of scaled rows: %s", veil_last_error());
        }
        veil_plan_destroy(&p);
        veil_graph_destroy(&g);
    }
}

int main(void)
{
    sh = veil_test_mpc_shared(sizeof *sh);
    if (!sh)
        return 1;
    fill();
    veil_graph_t *g = veil_graph_new("ln_edges");
    size_t dims[2] = {ROWS, D}, dd[1] = {D};
    veil_node_t *x = veil_input(g, "x", 1, 2, dims);
    veil_node_t *gm = veil_param(g, "gamma", 1, 1, dd), *bt = veil_param(g, "beta", 1, 1, dd);
    veil_node_t *y = veil_layernorm(g, "ln", x, gm, bt, EPS);
    VT_CHECK(y && veil_reveal(g, y, VEIL_ALL_PARTIES) == VEIL_OK, "build: %s", veil_last_error());
    veil_plan_t *p = veil_compile(g, NULL);
    VT_CHECK(p, "compile: %s", veil_last_error());
    if (!p) {
        veil_graph_destroy(&g);
        return veil_test_status();
    }
    struct veil_feed f[3] = {{"x", xs, N}, {"gamma", gs, D}, {"beta", bs, D}};
    double out[N], *outs[1] = {out};
    VT_CHECK(veil_plain_run(p, VEIL_PLAIN_FIXED, f, 3, outs) == VEIL_OK, "plain fixed: %s",
             veil_last_error());
    check("plain fixed", out);
    veil_test_log("plain fixed: worst relative error of gamma xhat %.3g (rows of variance >= 1/64)",
                  worst_rel);
    struct veil_test_graph_step st = {.plan = p,
                                      .feeds = f,
                                      .nfeeds = 3,
                                      .train = 0,
                                      .y = &sh->y[0][0],
                                      .y_stride = N,
                                      .stats = sh->stats};
    for (int n = 2; n <= 3; n++) {
        memset(sh, 0, sizeof *sh);
        worst_rel = 0;
        struct veil_test_graph_opts o = {.nparties = n, .dealer = 1};
        if (veil_test_graph_run(&o, veil_test_graph_step_child, &st, NULL) != VEIL_OK) {
            VT_CHECK(0, "N=%d: the secure run failed", n);
            continue;
        }
        uint64_t r, b;
        ln_cost(n, &r, &b);
        const uint64_t w = 8 * (uint64_t)(n - 1);
        for (int q = 0; q < n; q++) {
            char what[64];
            snprintf(what, sizeof what, "secure N=%d party %d", n, q);
            check(what, sh->y[q]);
            /* plus: revealing y to all; sharing x, gamma and beta (party 1 owns them), one round
             * each */
            const struct veil_run_stats *s = &sh->stats[q];
            const uint64_t want = b + w * N + (q == 1 ? w * (N + 2 * D) : 0);
            VT_CHECK(s->bytes_sent == want && s->rounds == r + 4,
                     "%s: sent %" PRIu64 " bytes in %" PRIu64 " rounds; expected %" PRIu64
                     " in %" PRIu64,
                     what, s->bytes_sent, s->rounds, want, r + 4);
        }
        veil_test_log(
            "secure N=%d: worst relative error of gamma xhat %.3g (variance >= 1/64); %" PRIu64
            " rounds, %" PRIu64 " bytes per party for %d rows of %d",
            n, worst_rel, r, b, ROWS, D);
    }
    veil_plan_destroy(&p);
    veil_graph_destroy(&g);
    check_refusal();
    veil_test_mpc_shared_free(sh, sizeof *sh);
    return veil_test_status();
}

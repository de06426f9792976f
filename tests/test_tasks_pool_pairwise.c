/* Tests the pairwise maximum (tasks/pool.h, PAIRWISE; tasks/max_pairwise.c) with real party
 * processes (N = 2 and 3 with a dealer, N = 3 trusted-first-party): for k = 2, 3, 4, 5, 9, 10 and
 * each choice of outputs (max and one-hot, max alone, one-hot alone) the results are EXACT against
 * plaintext (ties to the first index, half the rows drawn from 5 values) and bit for bit the
 * tournament's; 2 x 2 / stride 2 max pooling with the route and 3 x 3 / stride 1 without,
 * likewise; every call's rounds and bytes at every party EQUAL veil_pool_pairwise_cost (4 +
 * 1 rounds for g <= 5, one more per tree level above: 2 x 2 pooling in 5 rounds where the
 * tournament takes 8), and the dealer
 * sends one correction per item; the fused ReLU + 2 x 2 pool (max(0, window max)) exact in 5
 * rounds and + 3 x 3 in 6, bytes EQUAL to veil_pool_pairwise_relu_cost (no value group for the
 * 0). A truncation inside the ReLU's first round: relu_of(u, trunc_unmarked(u)) is bit for
 * bit relu(trunc(u)) (values truncating to 0 and -1 included) in 4 rounds, and the fused pool of
 * trunc(u) compared by u takes the first maximum of u (0 when negative) in 5, bytes exact.
 * Refusals: k = 11 (and a 4 x 4 window), no output asked for, the fused ReLU without the pairwise
 * protocol or with a route, with a message; veil_pool_pairwise_pays at its bounds. */
#include "config.h"
#include "base/base_internal.h"
#include "tasks/compare.h"
#include "tasks/pool.h"
#include "tasks/trunc.h"
#include "test_mpc_util.h"
#include "test_util.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ROWS 37 /* not a multiple of 64: the LTZ's padded last word */
#define NK 6
static const size_t ks[NK] = {2, 3, 4, 5, 9, 10};
#define MODES 3 /* 0: max and one-hot, 1: max alone, 2: one-hot alone */
static const struct veil_pool_geom g2 = {.batch = 2, .c = 3, .h = 8, .w = 6, .k = 2, .stride = 2};
static const struct veil_pool_geom g3 = {.batch = 1, .c = 2, .h = 6, .w = 5, .k = 3, .stride = 1};
#define IMG2 (2 * 3 * 8 * 6)
#define OUT2 (2 * 3 * 4 * 3)
#define IMG3 (1 * 2 * 6 * 5)
#define OUT3 (1 * 2 * 4 * 3)

struct job {
    uint64_t *x[NK]; /* ROWS x ks[i] */
    uint64_t *img2, *img3;
    uint64_t *u;   /* IMG2 values at 2f fractional bits (a product before its truncation) */
    uint64_t *out; /* shared: the results party 0 saw */
};

/* Offsets in job.out: per k and mode the max (ROWS) and one-hot (ROWS k); then the pools. */
static size_t off_max[NK][MODES], off_oh[NK][MODES], off_y2, off_route, off_y3, off_t2, off_tr,
    off_t3, off_yr, off_yr3, off_tu, off_ru, off_rn, off_tu2, off_pu, out_words;

/* n seeded random words (tag) in a new array, transformed by what (NULL when out of memory). */
static uint64_t *drawn(uint64_t tag, size_t n, uint64_t (*what)(uint64_t w, size_t e))
{
    uint64_t *p = malloc(n * 8);
    if (p && veil_test_random(tag, p, n) != 0) {
        free(p);
        return NULL;
    }
    for (size_t e = 0; p && e < n; e++)
        p[e] = what(p[e], e);
    return p;
}

static void layout(void)
{
    size_t at = 0;
    for (int i = 0; i < NK; i++)
        for (int md = 0; md < MODES; md++) {
            off_max[i][md] = at;
            at += ROWS;
            off_oh[i][md] = at;
            at += ROWS * ks[i];
        }
    off_y2 = at, at += OUT2;
    off_route = at, at += OUT2 * 4;
    off_y3 = at, at += OUT3;
    off_t2 = at, at += OUT2;
    off_tr = at, at += OUT2 * 4;
    off_t3 = at, at += OUT3;
    off_yr = at, at += OUT2;
    off_yr3 = at, at += OUT3;
    off_tu = at, at += IMG2;
    off_ru = at, at += IMG2;
    off_rn = at, at += IMG2;
    off_tu2 = at, at += IMG2;
    off_pu = at, at += OUT2;
    out_words = at;
}

/* Reveals t to every party; party 0 copies it to out. */
static void take(veil_mpc_t *m, struct veil_sec *t, uint64_t *out, int *rc)
{
    struct veil_sec o = {0};
    if (*rc == VEIL_OK)
        *rc = veil_mpc_reveal(m, t, -1, &o);
    if (*rc == VEIL_OK)
        *rc = veil_mpc_wait(m);
    if (*rc == VEIL_OK && veil_mpc_computes(m) && veil_mpc_self(m) == 0)
        memcpy(out, veil_test_host(&o), o.numel * 8);
    veil_mpc_release(m, &o);
}

static void refusals(veil_mpc_t *m, const struct veil_sec *img2)
{
    struct veil_sec x = {0}, a = {0}, b = {0};
    const size_t dims[2] = {3, 11};
    VT_CHECK(veil_sec_init(m, &x, VEIL_SHARE_ARITH, 2, dims, 0) == VEIL_OK, "init");
    VT_CHECK(veil_mpc_max_lastdim_pairwise(m, &x, &a, &b) == VEIL_ERR_INVAL, "k = 11 refused");
    VT_CHECK(strstr(veil_last_error(), "11") != NULL, "message names k: %s", veil_last_error());
    VT_CHECK(veil_mpc_max_lastdim_pairwise(m, &x, NULL, NULL) == VEIL_ERR_INVAL,
             "no output refused");
    VT_CHECK(veil_mpc_max_lastdim(m, &x, NULL, &b) == VEIL_ERR_INVAL,
             "the tournament needs the maximum");
    struct veil_pool_geom g4 = {
        .batch = 2, .c = 3, .h = 8, .w = 6, .k = 4, .stride = 4, .pairwise = 1};
    VT_CHECK(veil_mpc_maxpool2d(m, img2, &g4, &a, NULL) == VEIL_ERR_INVAL, "4 x 4 refused");
    VT_CHECK(strstr(veil_last_error(), "16") != NULL, "message names k k: %s", veil_last_error());
    struct veil_pool_geom gr = g2;
    gr.relu = 1;
    VT_CHECK(veil_mpc_maxpool2d(m, img2, &gr, &a, NULL) == VEIL_ERR_INVAL,
             "the fused ReLU without the pairwise protocol refused");
    gr.pairwise = 1;
    VT_CHECK(veil_mpc_maxpool2d(m, img2, &gr, &a, &b) == VEIL_ERR_INVAL,
             "the fused ReLU with a route refused");
    VT_CHECK(strstr(veil_last_error(), "route") != NULL, "message: %s", veil_last_error());
    veil_mpc_release(m, &x);
}

/* The fused ReLU + pairwise pool (max(0, window max)) of img under g: rounds `want` and bytes
 * EQUAL to veil_pool_pairwise_relu_cost (no value group for the 0); revealed into out. */
static void relu_pool(veil_mpc_t *m, const struct veil_sec *img, struct veil_pool_geom g,
                      size_t nout, uint64_t want, const char *what,
                      struct veil_test_mpc_counters *c, uint64_t *out, int *rc)
{
    struct veil_sec y = {0};
    uint64_t rounds, bytes;
    g.relu = 1;
    if (*rc == VEIL_OK) {
        veil_test_mpc_counters(m, c); /* from here: an earlier reveal is not this pool's */
        *rc = veil_mpc_maxpool2d(m, img, &g, &y, NULL);
        veil_pool_pairwise_relu_cost(nout, g.k * g.k, veil_mpc_nparties(m), &rounds, &bytes);
        VT_CHECK(rounds == want, "%s: %" PRIu64 " rounds, want %" PRIu64, what, rounds, want);
        if (*rc == VEIL_OK)
            veil_test_mpc_check_cost(m, what, c, rounds, bytes);
    }
    take(m, &y, out, rc);
    veil_mpc_release(m, &y);
}

static int body(veil_mpc_t *m, void *arg)
{
    struct job *j = arg;
    const int self = veil_mpc_self(m), n = veil_mpc_nparties(m);
    int rc = VEIL_OK;
    struct veil_test_mpc_counters c;
    for (int i = 0; i < NK && rc == VEIL_OK; i++) {
        const size_t dims[2] = {ROWS, ks[i]};
        struct veil_sec x = {0};
        rc = veil_mpc_share_input(m, 0, self == 0 ? j->x[i] : NULL, 2, dims, 0, &x);
        if (rc == VEIL_OK)
            rc = veil_mpc_wait(m);
        for (int md = 0; md < MODES && rc == VEIL_OK; md++) {
            struct veil_sec mx = {0}, oh = {0};
            const int want_max = md != 2, want_oh = md != 1;
            veil_test_mpc_counters(m, &c);
            rc = veil_mpc_max_lastdim_pairwise(m, &x, want_max ? &mx : NULL, want_oh ? &oh : NULL);
            uint64_t rounds, bytes;
            veil_pool_pairwise_cost(ROWS, ks[i], want_max, want_oh, n, &rounds, &bytes);
            char what[64];
            snprintf(what, sizeof what, "pairwise k = %zu mode %d", ks[i], md);
            if (rc == VEIL_OK)
                veil_test_mpc_check_cost(m, what, &c, rounds, bytes);
            if (want_max) {
                VT_CHECK(mx.ndim == 1 && mx.dims[0] == ROWS, "%s: max shape", what);
                take(m, &mx, j->out + off_max[i][md], &rc);
            }
            if (want_oh) {
                VT_CHECK(oh.ndim == 2 && oh.dims[1] == ks[i], "%s: one-hot shape", what);
                take(m, &oh, j->out + off_oh[i][md], &rc);
            }
            veil_mpc_release(m, &mx);
            veil_mpc_release(m, &oh);
        }
        veil_mpc_release(m, &x);
    }
    const size_t d2[4] = {2, 3, 8, 6}, d3[4] = {1, 2, 6, 5};
    struct veil_sec img2 = {0}, img3 = {0}, y2 = {0}, route = {0}, y3 = {0}, t2 = {0}, tr = {0},
                    t3 = {0};
    if (rc == VEIL_OK) /* tiles of 32: the window gather reads several tiles */
        rc = veil_mpc_share_input(m, 0, self == 0 ? j->img2 : NULL, 4, d2, 32, &img2);
    if (rc == VEIL_OK)
        rc = veil_mpc_share_input(m, 1, self == 1 ? j->img3 : NULL, 4, d3, 0, &img3);
    if (rc == VEIL_OK)
        rc = veil_mpc_wait(m);
    struct veil_pool_geom p2 = g2, p3 = g3;
    struct veil_sec bad_ = {0};
    p2.pairwise = p3.pairwise = 1;
    uint64_t rounds, bytes;
    if (rc == VEIL_OK) {
        veil_test_mpc_counters(m, &c);
        rc = veil_mpc_maxpool2d(m, &img2, &p2, &y2, &route);
        veil_pool_pairwise_cost(OUT2, 4, 1, 1, n, &rounds, &bytes);
        VT_CHECK(rounds == 5, "2 x 2 with the route: %" PRIu64 " rounds, want 5", rounds);
        if (rc == VEIL_OK)
            veil_test_mpc_check_cost(m, "maxpool 2 x 2 pairwise", &c, rounds, bytes);
    }
    if (rc == VEIL_OK) {
        rc = veil_mpc_maxpool2d(m, &img3, &p3, &y3, NULL);
        veil_pool_pairwise_cost(OUT3, 9, 1, 0, n, &rounds, &bytes);
        VT_CHECK(rounds == 6, "3 x 3: %" PRIu64 " rounds, want 6", rounds);
        if (rc == VEIL_OK)
            veil_test_mpc_check_cost(m, "maxpool 3 x 3 pairwise", &c, rounds, bytes);
    }
    relu_pool(m, &img2, p2, OUT2, 5, "relu + maxpool 2 x 2 pairwise", &c, j->out + off_yr, &rc);
    /* 9 taps and 0: a product tree level before the last product */
    relu_pool(m, &img3, p3, OUT3, 6, "relu + maxpool 3 x 3 pairwise", &c, j->out + off_yr3, &rc);
    if (rc == VEIL_OK && (rc = veil_mpc_maxpool2d(m, &img2, &g2, &t2, &tr)) == VEIL_OK)
        rc = veil_mpc_maxpool2d(m, &img3, &g3, &t3, NULL);
    VT_CHECK(rc != VEIL_OK || (y2.ndim == 4 && route.ndim == 5 && route.dims[4] == 4 &&
                               y3.ndim == 4 && y3.dims[2] == 4 && y3.dims[3] == 3),
             "pool shapes");
    take(m, &y2, j->out + off_y2, &rc);
    take(m, &route, j->out + off_route, &rc);
    take(m, &y3, j->out + off_y3, &rc);
    take(m, &t2, j->out + off_t2, &rc);
    take(m, &tr, j->out + off_tr, &rc);
    take(m, &t3, j->out + off_t3, &rc);
    /* the truncation inside the ReLU's (and the fused pool's) first round */
    struct veil_sec u = {0}, tu = {0}, ru = {0}, tu2 = {0}, pu = {0}, nu = {0}, rn = {0};
    if (rc == VEIL_OK)
        rc = veil_mpc_share_input(m, 0, self == 0 ? j->u : NULL, 4, d2, 0, &u); /* one tile */
    if (rc == VEIL_OK && (rc = veil_mpc_wait(m)) == VEIL_OK) {
        const uint64_t N1 = (uint64_t)(n - 1), W = (IMG2 + 63) / 64; /* packed words */
        veil_test_mpc_counters(m, &c);
        if ((rc = veil_mpc_trunc_unmarked(m, &u, 16, &tu)) == VEIL_OK)
            rc = veil_mpc_relu_of(m, &u, &tu, &ru);
        if (rc == VEIL_OK)
            veil_test_mpc_check_cost(m, "trunc_unmarked + relu_of", &c, VEIL_RELU_ROUNDS,
                                     N1 * 8 * IMG2 + N1 * 8 * (3 * IMG2 + 36 * W));
        struct veil_pool_geom pr = p2;
        pr.relu = 1;
        if (rc == VEIL_OK && (rc = veil_mpc_trunc_unmarked(m, &u, 16, &tu2)) == VEIL_OK)
            rc = veil_mpc_maxpool2d_relu_of(m, &u, &tu2, &pr, &pu);
        veil_pool_pairwise_relu_cost(OUT2, 4, n, &rounds, &bytes);
        if (rc == VEIL_OK)
            veil_test_mpc_check_cost(m, "trunc_unmarked + maxpool2d_relu_of", &c, rounds,
                                     bytes + N1 * 8 * IMG2);
        if (rc == VEIL_OK && (rc = veil_mpc_mul_scalar(m, &u, (uint64_t)-1, &nu)) == VEIL_OK)
            rc = veil_mpc_relu_of(m, &nu, &tu, &rn); /* the sign comes from s, not x */
        VT_CHECK(veil_mpc_maxpool2d_relu_of(m, &u, &tu2, &p2, &bad_) == VEIL_ERR_INVAL,
                 "a comparison operand without the fused ReLU refused");
    }
    take(m, &tu, j->out + off_tu, &rc);
    take(m, &ru, j->out + off_ru, &rc);
    take(m, &rn, j->out + off_rn, &rc);
    take(m, &tu2, j->out + off_tu2, &rc);
    take(m, &pu, j->out + off_pu, &rc);
    if (rc != VEIL_OK) {
        fprintf(stderr, "process %d: %s\n", self, veil_last_error());
        return 1;
    }
    refusals(m, &img2);
    struct veil_sec *more[] = {&u, &tu, &ru, &tu2, &pu, &nu, &rn};
    for (size_t i = 0; i < sizeof more / sizeof more[0]; i++)
        veil_mpc_release(m, more[i]);
    struct veil_sec *all[] = {&img2, &img3, &y2, &route, &y3, &t2, &tr, &t3};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        veil_mpc_release(m, all[i]);
    return veil_test_failures ? 1 : 0;
}

/* Window r of the plaintext image (row-major over plane, y, x). */
static void window(const uint64_t *img, const struct veil_pool_geom *g, size_t r, uint64_t *win)
{
    const size_t oh = (g->h - g->k) / g->stride + 1, ow = (g->w - g->k) / g->stride + 1;
    const size_t x = r % ow, y = (r / ow) % oh, bc = r / (ow * oh);
    for (size_t i = 0; i < g->k; i++)
        for (size_t jj = 0; jj < g->k; jj++)
            win[i * g->k + jj] = img[(bc * g->h + y * g->stride + i) * g->w + x * g->stride + jj];
}

static int check_pool(const struct job *j, const char *name, const struct veil_pool_geom *g,
                      const uint64_t *img, size_t rows, size_t off_y, size_t off_r, size_t off_t,
                      size_t off_tr_)
{
    int bad = 0;
    const size_t kk = g->k * g->k;
    uint64_t win[9];
    for (size_t r = 0; r < rows; r++) {
        window(img, g, r, win);
        const size_t a = veil_test_argmax(win, kk);
        int ok = j->out[off_y + r] == win[a] && j->out[off_t + r] == win[a];
        for (size_t q = 0; off_r && q < kk; q++)
            ok &=
                j->out[off_r + r * kk + q] == (q == a) && j->out[off_tr_ + r * kk + q] == (q == a);
        if (!ok && bad++ < 5)
            fprintf(stderr, "FAIL %s: %zu x %zu window %zu\n", name, g->k, g->k, r);
    }
    return bad;
}

static size_t cur_k;                             /* the row length drawn() is filling */
static uint64_t rows_value(uint64_t w, size_t e) /* ties in every other row */
{
    return (e / cur_k) % 2 ? (uint64_t)((int64_t)(w % 5) - 2) << 16
                           : (uint64_t)((int64_t)(w >> 3) - (1LL << 60));
}
static uint64_t img2_value(uint64_t w, size_t e)
{
    (void)e;
    return (uint64_t)((int64_t)(w >> 30) - (1LL << 33));
}
static uint64_t img3_value(uint64_t w, size_t e) /* 7 values: ties */
{
    (void)e;
    return (uint64_t)((int64_t)(w % 7) - 3) << 16;
}
static uint64_t u_value(uint64_t w, size_t e) /* |u| < 2^40: products at 2f = 32 bits */
{
    (void)e;
    return (uint64_t)((int64_t)(w >> 24) - (1LL << 39));
}

static int run(int nparties, int tfp)
{
    struct job j;
    memset(&j, 0, sizeof j);
    layout();
    for (int i = 0; i < NK; i++) {
        cur_k = ks[i];
        j.x[i] = drawn(100 + (uint64_t)i, ROWS * ks[i], rows_value);
    }
    j.img2 = drawn(200, IMG2, img2_value);
    j.img3 = drawn(201, IMG3, img3_value);
    j.u = drawn(202, IMG2, u_value);
    if (j.u) {
        j.u[3] = (uint64_t)-5;             /* truncates to -1 or 0: the ReLU is 0 either way */
        j.u[7] = (uint64_t) - (1LL << 16); /* exactly -1 */
        j.u[9] = 0;
    }
    j.out = veil_test_mpc_shared(out_words * 8);
    int bad = 0;
    for (int i = 0; i < NK; i++)
        bad |= j.x[i] == NULL;
    if (bad || !j.img2 || !j.img3 || !j.u || !j.out) {
        fprintf(stderr, "FAIL: out of memory\n");
        bad = 1;
        goto out;
    }
    j.img2[5] = j.img2[4]; /* a tie inside a window */
    struct veil_test_mpc_opts o = {.nparties = nparties,
                                   .material =
                                       tfp ? VEIL_MPC_MAT_TRUSTED_FIRST_PARTY : VEIL_MPC_MAT_DEALER,
                                   .frac_bits = 16};
    if (veil_test_mpc_run(&o, body, &j) != 0) {
        bad = 1;
        goto out;
    }
    const char *name = veil_test_mpc_name(&o);
    for (int i = 0; i < NK; i++)
        for (int md = 0; md < MODES; md++)
            for (size_t r = 0; r < ROWS; r++) {
                const uint64_t *v = j.x[i] + r * ks[i];
                const size_t a = veil_test_argmax(v, ks[i]);
                int ok = md == 2 || j.out[off_max[i][md] + r] == v[a];
                for (size_t q = 0; md != 1 && q < ks[i]; q++)
                    ok &= j.out[off_oh[i][md] + r * ks[i] + q] == (q == a);
                if (!ok && bad++ < 5)
                    fprintf(stderr, "FAIL %s: pairwise max over k = %zu, mode %d, row %zu\n", name,
                            ks[i], md, r);
            }
    bad += check_pool(&j, name, &g2, j.img2, OUT2, off_y2, off_route, off_t2, off_tr);
    bad += check_pool(&j, name, &g3, j.img3, OUT3, off_y3, 0, off_t3, 0);
    for (size_t e = 0; e < IMG2; e++) { /* relu_of: the sign of u, the value of trunc(u) */
        const uint64_t t = j.out[off_tu + e], want = (int64_t)t > 0 ? t : 0;
        const int64_t fl = (int64_t)j.u[e] >> 16;
        const uint64_t want_n = (int64_t)j.u[e] <= 0 ? t : 0; /* t [-u >= 0] */
        if ((j.out[off_ru + e] != want || t - (uint64_t)fl > 1 || j.out[off_rn + e] != want_n) &&
            bad++ < 5)
            fprintf(stderr, "FAIL %s: relu_of element %zu: %016" PRIx64 " want %016" PRIx64 "\n",
                    name, e, j.out[off_ru + e], want);
    }
    for (size_t r = 0; r < OUT2; r++) { /* the pool of trunc(u) compared by u */
        uint64_t su[4], tw[4];
        window(j.u, &g2, r, su);
        window(j.out + off_tu2, &g2, r, tw);
        const size_t w = veil_test_argmax(su, 4);
        const uint64_t want = (int64_t)su[w] >= 0 ? tw[w] : 0;
        if (j.out[off_pu + r] != want && bad++ < 5)
            fprintf(stderr,
                    "FAIL %s: maxpool2d_relu_of window %zu: %016" PRIx64 " want %016" PRIx64 "\n",
                    name, r, j.out[off_pu + r], want);
    }
    for (size_t r = 0; r < OUT2; r++) { /* the fused ReLU: max(0, window max) */
        uint64_t win[4];
        window(j.img2, &g2, r, win);
        const uint64_t v = win[veil_test_argmax(win, 4)], want = (int64_t)v > 0 ? v : 0;
        if (j.out[off_yr + r] != want && bad++ < 5)
            fprintf(stderr, "FAIL %s: ReLU + 2 x 2 window %zu\n", name, r);
    }
    for (size_t r = 0; r < OUT3; r++) { /* max(0, 3 x 3 window max), ties and zeros among them */
        uint64_t win[9];
        window(j.img3, &g3, r, win);
        const uint64_t v = win[veil_test_argmax(win, 9)], want = (int64_t)v > 0 ? v : 0;
        if (j.out[off_yr3 + r] != want && bad++ < 5)
            fprintf(stderr, "FAIL %s: ReLU + 3 x 3 window %zu\n", name, r);
    }
out:
    for (int i = 0; i < NK; i++)
        free(j.x[i]);
    free(j.img2);
    free(j.img3);
    free(j.u);
    veil_test_mpc_shared_free(j.out, out_words * 8);
    return bad || veil_test_failures;
}

int main(void)
{
    VT_CHECK(veil_pool_pairwise_pays(864, 5), "LeNet's first ReLU + pool at batch 1 takes it");
    VT_CHECK(veil_pool_pairwise_pays(1, 10), "an argmax over 10 classes takes it");
    VT_CHECK(!veil_pool_pairwise_pays(1000, 2), "k = 2: the tournament is as fast");
    VT_CHECK(!veil_pool_pairwise_pays(1, 11), "k = 11: above VEIL_PAIRWISE_MAX_K");
    VT_CHECK(veil_pool_pairwise_pays(VEIL_PAIRWISE_MAX_PAIRS / 6, 4) &&
                 !veil_pool_pairwise_pays(VEIL_PAIRWISE_MAX_PAIRS / 6 + 1, 4),
             "the pair bound");
    int failed = veil_test_failures ? 1 : 0;
    failed += run(2, 0);
    failed += run(3, 0);
    failed += run(3, 1);
    return failed ? 1 : 0;
}

/* Tests max over the last dimension (with one-hot argmax), max pooling (2x2 stride 2 with the
 * route, 3x3 stride 1 value-only), max pooling's backward pass and average pooling
 * (tasks/pool.h) with real party processes (N = 2, 3, 4 with a dealer, N = 3 trusted-first-
 * party). Maxima, argmax one-hots (ties go to the first index), routes and gradients are EXACT
 * against plaintext; average pooling within 1 ulp of the exact fixed-point mean. Every party's
 * bytes and rounds EQUAL the formulas of pool.h. Bad geometry (k = 0, a window larger than the
 * image, an input of another shape) is refused with a message before submission. */
#include "config.h"
#include "base/base_internal.h"
#include "tasks/compare.h"
#include "tasks/pool.h"
#include "test_mpc_util.h"
#include "test_util.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ROWS 100
#define NK 4
static const size_t ks[NK] = {5, 1, 8, 9};
static const struct veil_pool_geom g2 = {.batch = 2, .c = 3, .h = 8, .w = 6, .k = 2, .stride = 2};
static const struct veil_pool_geom g3 = {.batch = 2, .c = 3, .h = 8, .w = 6, .k = 3, .stride = 1};
#define IMG (2 * 3 * 8 * 6)
#define OUT2 (2 * 3 * 4 * 3)
#define OUT3 (2 * 3 * 6 * 4)

struct job {
    uint64_t *x[NK]; /* ROWS x ks[i] */
    uint64_t *img, *dy;
    uint64_t *out; /* shared results */
    uint64_t *cnt; /* shared: per party bytes, rounds */
};

/* Offsets of the results in job.out. */
static size_t off_max[NK], off_oh[NK], off_y2, off_route, off_dx, off_y3, off_ya, out_words;


static uint64_t rng_state = 0x2545f4914f6cdd1du;
static uint64_t rnd(void)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

static void layout(void)
{
    size_t at = 0;
    for (int i = 0; i < NK; i++) {
        off_max[i] = at;
        at += ROWS;
        off_oh[i] = at;
        at += ROWS * ks[i];
    }
    off_y2 = at;
    at += OUT2;
    off_route = at;
    at += OUT2 * 4;
    off_dx = at;
    at += IMG;
    off_y3 = at;
    at += OUT3;
    off_ya = at;
    at += OUT2;
    out_words = at;
}

static int reveal_to(veil_mpc_t *m, const struct veil_sec *t, struct veil_sec *o, int *rc)
{
    if (*rc == VEIL_OK)
        *rc = veil_mpc_reveal(m, t, -1, o);
    return *rc;
}

static int body(veil_mpc_t *m, void *arg)
{
    struct job *j = arg;
    const int self = veil_mpc_self(m);
    struct veil_sec x[NK], mx[NK], oh[NK], img, dy, y2, route, dx, y3, ya;
    struct veil_sec o_mx[NK], o_oh[NK], o_y2, o_route, o_dx, o_y3, o_ya;
    int rc = VEIL_OK;
    for (int i = 0; i < NK && rc == VEIL_OK; i++) {
        const size_t dims[2] = {ROWS, ks[i]};
        rc = veil_mpc_share_input(m, 0, self == 0 ? j->x[i] : NULL, 2, dims, 0, &x[i]);
        if (rc == VEIL_OK)
            rc = veil_mpc_max_lastdim(m, &x[i], &mx[i], &oh[i]);
    }
    const size_t idims[4] = {2, 3, 8, 6}, ddims[4] = {2, 3, 4, 3};
    if (rc == VEIL_OK) /* tiles of 32: pooling gathers 9 tiles (a task of more than 8 buffers) */
        rc = veil_mpc_share_input(m, 0, self == 0 ? j->img : NULL, 4, idims, 32, &img);
    if (rc == VEIL_OK)
        rc = veil_mpc_maxpool2d(m, &img, &g2, &y2, &route);
    if (rc == VEIL_OK)
        rc = veil_mpc_share_input(m, 1, self == 1 ? j->dy : NULL, 4, ddims, 0, &dy);
    if (rc == VEIL_OK)
        rc = veil_mpc_maxpool2d_backward(m, &route, &dy, &g2, &dx);
    if (rc == VEIL_OK)
        rc = veil_mpc_maxpool2d(m, &img, &g3, &y3, NULL);
    if (rc == VEIL_OK)
        rc = veil_mpc_avgpool2d(m, &img, &g2, &ya);
    for (int i = 0; i < NK; i++) {
        reveal_to(m, &mx[i], &o_mx[i], &rc);
        reveal_to(m, &oh[i], &o_oh[i], &rc);
    }
    reveal_to(m, &y2, &o_y2, &rc);
    reveal_to(m, &route, &o_route, &rc);
    reveal_to(m, &dx, &o_dx, &rc);
    reveal_to(m, &y3, &o_y3, &rc);
    reveal_to(m, &ya, &o_ya, &rc);
    if (rc != VEIL_OK || veil_mpc_wait(m) != VEIL_OK) {
        fprintf(stderr, "process %d: %s\n", self, veil_last_error());
        return 1;
    }
    if (veil_mpc_computes(m)) {
        if (self == 0) {
            for (int i = 0; i < NK; i++) {
                memcpy(j->out + off_max[i], veil_test_host(&o_mx[i]), ROWS * 8);
                memcpy(j->out + off_oh[i], veil_test_host(&o_oh[i]), ROWS * ks[i] * 8);
            }
            memcpy(j->out + off_y2, veil_test_host(&o_y2), OUT2 * 8);
            memcpy(j->out + off_route, veil_test_host(&o_route), OUT2 * 4 * 8);
            memcpy(j->out + off_dx, veil_test_host(&o_dx), IMG * 8);
            memcpy(j->out + off_y3, veil_test_host(&o_y3), OUT3 * 8);
            memcpy(j->out + off_ya, veil_test_host(&o_ya), OUT2 * 8);
        }
        struct veil_test_mpc_counters c;
        veil_test_mpc_counters(m, &c);
        j->cnt[2 * self] = c.bytes;
        j->cnt[2 * self + 1] = c.rounds;
        VT_CHECK(y2.ndim == 4 && y2.dims[2] == 4 && y2.dims[3] == 3, "y shape");
        VT_CHECK(route.ndim == 5 && route.dims[4] == 4, "route shape");
    }
    /* Bad geometry and shapes, refused before anything is submitted. */
    struct veil_sec bad;
    struct veil_pool_geom gb = g2;
    gb.k = 0;
    VT_CHECK(veil_mpc_maxpool2d(m, &img, &gb, &bad, NULL) == VEIL_ERR_INVAL, "k = 0");
    VT_CHECK(strstr(veil_last_error(), "k = 0") != NULL, "message: %s", veil_last_error());
    gb.k = 7;
    VT_CHECK(veil_mpc_avgpool2d(m, &img, &gb, &bad) == VEIL_ERR_INVAL, "window larger than image");
    VT_CHECK(strstr(veil_last_error(), "larger") != NULL, "message: %s", veil_last_error());
    gb = g2;
    gb.h = 10;
    VT_CHECK(veil_mpc_maxpool2d(m, &img, &gb, &bad, NULL) == VEIL_ERR_SHAPE, "shape mismatch");
    VT_CHECK(veil_mpc_maxpool2d_backward(m, &route, &img, &g2, &bad) == VEIL_ERR_SHAPE,
          "backward dy of the wrong size");
    for (int i = 0; i < NK; i++) {
        veil_mpc_release(m, &x[i]);
        veil_mpc_release(m, &mx[i]);
        veil_mpc_release(m, &oh[i]);
        veil_mpc_release(m, &o_mx[i]);
        veil_mpc_release(m, &o_oh[i]);
    }
    struct veil_sec *all[] = {&img, &dy,   &y2,      &route, &dx,   &y3,
                              &ya,  &o_y2, &o_route, &o_dx,  &o_y3, &o_ya};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        veil_mpc_release(m, all[i]);
    return veil_test_failures ? 1 : 0;
}

/* pool.h's byte formula for max over rows x k (words; times 8 (N-1) by the caller). */
static uint64_t max_words(size_t rows, size_t k, int onehot)
{
    uint64_t w = 0;
    size_t kl = k, s = 1;
    for (int l = 0; kl > 1; l++, s *= 2) {
        const size_t p = kl / 2;
        const size_t cov = onehot && l > 0 ? (2 * p * s < k ? 2 * p * s : k) : 0;
        const uint64_t n = rows * p;
        /* d beta is local; a Beaver product only with the one-hot vectors */
        w += n + 36 * ((n + 63) / 64) + (cov ? 2 * rows * (p + cov) : 0);
        kl = (kl + 1) / 2;
    }
    return w;
}

static int levels(size_t k)
{
    int l = 0;
    for (size_t kl = k; kl > 1; kl = (kl + 1) / 2)
        l++;
    return l;
}

/* Window gather of the plaintext image. */
static void window(const uint64_t *img, const struct veil_pool_geom *g, size_t bc, size_t y,
                   size_t x, uint64_t *win, size_t *pix)
{
    for (size_t i = 0; i < g->k; i++)
        for (size_t jj = 0; jj < g->k; jj++) {
            pix[i * g->k + jj] = (bc * g->h + y * g->stride + i) * g->w + x * g->stride + jj;
            win[i * g->k + jj] = img[pix[i * g->k + jj]];
        }
}

static int run(int nparties, int tfp)
{
    struct job j;
    memset(&j, 0, sizeof j);
    layout();
    for (int i = 0; i < NK; i++) {
        j.x[i] = malloc(ROWS * ks[i] * 8);
        for (size_t e = 0; e < ROWS * ks[i]; e++) /* small range in half the rows: ties */
            j.x[i][e] = (e / ks[i]) % 2 ? (uint64_t)((int64_t)(rnd() % 5) - 2) << 16
                                        : (uint64_t)((int64_t)(rnd() >> 24) - (1LL << 39));
    }
    j.img = malloc(IMG * 8);
    j.dy = malloc(OUT2 * 8);
    for (size_t e = 0; e < IMG; e++)
        j.img[e] = (uint64_t)((int64_t)(rnd() >> 30) - (1LL << 33));
    j.img[5] = j.img[4]; /* a tie inside a window */
    for (size_t e = 0; e < OUT2; e++)
        j.dy[e] = (uint64_t)((int64_t)(rnd() >> 40) - (1LL << 23));
    j.out = veil_test_mpc_shared(out_words * 8);
    j.cnt = veil_test_mpc_shared(2 * 16 * 8);
    struct veil_test_mpc_opts o = {.nparties = nparties,
                                   .material =
                                       tfp ? VEIL_MPC_MAT_TRUSTED_FIRST_PARTY : VEIL_MPC_MAT_DEALER,
                                   .frac_bits = 16};
    int bad = 0;
    if (veil_test_mpc_run(&o, body, &j) != 0) {
        bad = 1;
        goto out;
    }
    const char *name = veil_test_mpc_name(&o);
    for (int i = 0; i < NK; i++)
        for (size_t r = 0; r < ROWS; r++) {
            const uint64_t *v = j.x[i] + r * ks[i];
            const size_t a = veil_test_argmax(v, ks[i]);
            int ok = j.out[off_max[i] + r] == v[a];
            for (size_t q = 0; q < ks[i]; q++)
                ok &= j.out[off_oh[i] + r * ks[i] + q] == (q == a);
            if (!ok && bad++ < 5)
                fprintf(stderr, "FAIL %s: max over k = %zu, row %zu\n", name, ks[i], r);
        }
    uint64_t dx[IMG] = {0}, win[9];
    size_t pix[9], r = 0;
    for (size_t bc = 0; bc < 6; bc++)
        for (size_t y = 0; y < 4; y++)
            for (size_t x = 0; x < 3; x++, r++) {
                window(j.img, &g2, bc, y, x, win, pix);
                const size_t a = veil_test_argmax(win, 4);
                int ok = j.out[off_y2 + r] == win[a];
                for (size_t q = 0; q < 4; q++)
                    ok &= j.out[off_route + r * 4 + q] == (q == a);
                dx[pix[a]] += j.dy[r];
                uint64_t sum = 0;
                for (size_t q = 0; q < 4; q++)
                    sum += win[q];
                const uint64_t want = (uint64_t)((int64_t)sum >> 2), got = j.out[off_ya + r];
                ok &= got - want <= 1; /* floor, or 1 ulp above */
                if (!ok && bad++ < 5)
                    fprintf(stderr,
                            "FAIL %s: 2x2 window %zu: max %016" PRIx64 " avg %016" PRIx64
                            " (want %016" PRIx64 ")\n",
                            name, r, j.out[off_y2 + r], got, want);
            }
    for (size_t e = 0; e < IMG; e++)
        if (j.out[off_dx + e] != dx[e] && bad++ < 5)
            fprintf(stderr, "FAIL %s: dx[%zu] %016" PRIx64 " want %016" PRIx64 "\n", name, e,
                    j.out[off_dx + e], dx[e]);
    r = 0;
    for (size_t bc = 0; bc < 6; bc++)
        for (size_t y = 0; y < 6; y++)
            for (size_t x = 0; x < 4; x++, r++) {
                window(j.img, &g3, bc, y, x, win, pix);
                if (j.out[off_y3 + r] != win[veil_test_argmax(win, 9)] && bad++ < 5)
                    fprintf(stderr, "FAIL %s: 3x3 window %zu\n", name, r);
            }
    /* Counters: formulas of pool.h (and mpc.h / trunc.h for the sharing, reveals, trunc). */
    const uint64_t N = (uint64_t)nparties;
    uint64_t words = 0, rounds = 0;
    for (int i = 0; i < NK; i++) {
        words += max_words(ROWS, ks[i], 1) + ROWS + ROWS * ks[i]; /* + the two reveals */
        rounds += 1 + 4 * (uint64_t)levels(ks[i]) + 2;
    }
    words += max_words(OUT2, 4, 1) + 2 * OUT2 * 4 /* backward */ + max_words(OUT3, 9, 0) +
             OUT2 /* avgpool's trunc */ + OUT2 + OUT2 * 4 + IMG + OUT3 + OUT2 /* reveals */;
    rounds += 1 + 8 + 1 + 1 + 4 * 4 + 1 + 5;
    VT_CHECK(levels(4) == 2 && VEIL_LTZ_ROUNDS * levels(4) == 8, "maxpool 2x2: 8 rounds");
    for (int p = 0; p < nparties; p++) {
        uint64_t want = (N - 1) * 8 * words;
        if (p == 0)
            want += (N - 1) * 8 * (ROWS * (5 + 1 + 8 + 9) + IMG); /* its inputs */
        if (p == 1)
            want += (N - 1) * 8 * OUT2; /* dy */
        if (tfp && p == 0)
            want += (N - 1) * VEIL_SEED_BYTES;
        if (j.cnt[2 * p] != want || j.cnt[2 * p + 1] != rounds) {
            fprintf(stderr,
                    "FAIL %s: party %d sent %" PRIu64 " bytes in %" PRIu64
                    " rounds, formula %" PRIu64 " bytes, %" PRIu64 " rounds\n",
                    name, p, j.cnt[2 * p], j.cnt[2 * p + 1], want, rounds);
            bad = 1;
        }
    }
out:
    for (int i = 0; i < NK; i++)
        free(j.x[i]);
    free(j.img);
    free(j.dy);
    veil_test_mpc_shared_free(j.out, out_words * 8);
    veil_test_mpc_shared_free(j.cnt, 2 * 16 * 8);
    return bad || veil_test_failures;
}

int main(void)
{
    int failed = 0;
    failed += run(2, 0);
    failed += run(3, 0);
    failed += run(4, 0);
    failed += run(3, 1);
    return failed ? 1 : 0;
}

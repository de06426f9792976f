/* Tests ReLU, the elementwise max and select (tasks/compare.h) with real party processes (N = 2, 3,
 * 4 with a dealer, N = 3 trusted-first-party): y = max(x, 0) and the mask [x >= 0] EXACT against
 * plaintext on random fixed-point values and edge cases (0, +-1 ulp, -2^63, 2^63 - 1, the largest
 * fixed-point magnitudes), then z = select(mask, x, w) = mask ? x : w and max(x, w) exact, and
 * relu(trunc(x)) (veil_mpc_relu_trunc) within trunc.h's 0/1 ulp wherever |x| < 2^62; every
 * party's bytes and rounds EQUAL the formulas of compare.h (ReLU and max in LTZ's 4 rounds). Bad
 * input (operands of different shapes) is refused. */
#include "config.h"
#include "base/base_internal.h"
#include "tasks/compare.h"
#include "tasks/compare_internal.h"
#include "test_mpc_util.h"
#include "test_util.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct job {
    size_t n, tile;
    uint64_t *x, *w; /* plaintext inputs (parent) */
    uint64_t *out;   /* shared: y, mask, z, max, relu(trunc(x)) (5 n words) */
    uint64_t *cnt;   /* shared: per party bytes, rounds */
};


static uint64_t rng_state = 0x51ed27071ca5e9f1u;
static uint64_t rnd(void)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

static int body(veil_mpc_t *m, void *arg)
{
    struct job *j = arg;
    const int self = veil_mpc_self(m);
    const size_t dims[2] = {j->n / 8, 8};
    struct veil_sec x = {0}, w = {0}, y = {0}, mask = {0}, z = {0}, oy = {0}, om = {0}, oz = {0};
    struct veil_sec mx = {0}, omx = {0}, rt = {0}, ort = {0};
    int rc = veil_mpc_share_input(m, 0, self == 0 ? j->x : NULL, 2, dims, j->tile, &x);
    if (rc == VEIL_OK)
        rc = veil_mpc_share_input(m, 1, self == 1 ? j->w : NULL, 2, dims, j->tile, &w);
    if (rc == VEIL_OK)
        rc = veil_mpc_relu(m, &x, &y, &mask);
    if (rc == VEIL_OK)
        rc = veil_mpc_select(m, &mask, &x, &w, &z);
    if (rc == VEIL_OK)
        rc = veil_mpc_max(m, &x, &w, &mx);
    if (rc == VEIL_OK)
        rc = veil_mpc_relu_trunc(m, &x, 16, &rt);
    if (rc == VEIL_OK)
        rc = veil_mpc_reveal(m, &rt, -1, &ort);
    if (rc == VEIL_OK)
        rc = veil_mpc_reveal(m, &y, -1, &oy);
    if (rc == VEIL_OK)
        rc = veil_mpc_reveal(m, &mask, -1, &om);
    if (rc == VEIL_OK)
        rc = veil_mpc_reveal(m, &z, -1, &oz);
    if (rc == VEIL_OK)
        rc = veil_mpc_reveal(m, &mx, -1, &omx);
    if (rc != VEIL_OK || veil_mpc_wait(m) != VEIL_OK) {
        fprintf(stderr, "process %d: %s\n", self, veil_last_error());
        return 1;
    }
    if (veil_mpc_computes(m)) {
        if (self == 0) {
            memcpy(j->out, veil_test_host(&oy), j->n * 8);
            memcpy(j->out + j->n, veil_test_host(&om), j->n * 8);
            memcpy(j->out + 2 * j->n, veil_test_host(&oz), j->n * 8);
            memcpy(j->out + 3 * j->n, veil_test_host(&omx), j->n * 8);
            memcpy(j->out + 4 * j->n, veil_test_host(&ort), j->n * 8);
        }
        struct veil_test_mpc_counters c;
        veil_test_mpc_counters(m, &c);
        j->cnt[2 * self] = c.bytes;
        j->cnt[2 * self + 1] = c.rounds;
    }
    /* Bad input: a tensor of another shape. */
    struct veil_sec small = {0}, bad = {0};
    const size_t d1[1] = {64};
    if (veil_sec_init(m, &small, VEIL_SHARE_ARITH, 1, d1, 0) == VEIL_OK) {
        VT_CHECK(veil_mpc_select(m, &mask, &x, &small, &bad) == VEIL_ERR_SHAPE, "select shapes");
        VT_CHECK(veil_mpc_relu(m, NULL, &bad, NULL) == VEIL_ERR_INVAL, "relu NULL");
        VT_CHECK(veil_mpc_max(m, &x, &small, &bad) == VEIL_ERR_SHAPE, "max shapes");
        VT_CHECK(veil_mpc_relu_trunc(m, &x, 0, &bad) == VEIL_ERR_INVAL &&
                     veil_mpc_relu_trunc(m, &x, 63, &bad) == VEIL_ERR_INVAL &&
                     veil_mpc_relu_trunc(m, NULL, 16, &bad) == VEIL_ERR_INVAL,
                 "relu_trunc: a shift outside 1..62, NULL");
    }
    struct veil_sec *all[] = {&x, &w, &y, &mask, &z, &oy, &om, &oz, &small, &mx, &omx, &rt, &ort};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        veil_mpc_release(m, all[i]);
    return veil_test_failures ? 1 : 0;
}

static int run(int nparties, int tfp, size_t n, size_t tile)
{
    struct job j = {.n = n, .tile = tile};
    j.x = malloc(n * 8);
    j.w = malloc(n * 8);
    j.out = veil_test_mpc_shared(5 * n * 8);
    j.cnt = veil_test_mpc_shared(2 * 16 * 8);
    int bad = 0;
    if (!j.x || !j.w || !j.out || !j.cnt)
        return 1;
    const uint64_t edge[] = {0,
                             1,
                             UINT64_MAX,
                             UINT64_C(1) << 63,
                             (UINT64_C(1) << 63) - 1,
                             UINT64_C(1) << 62,
                             -(UINT64_C(1) << 62),
                             (UINT64_C(1) << 62) - 1,
                             UINT64_C(1) << 16,
                             -(UINT64_C(1) << 16),
                             (UINT64_C(1) << 16) - 1,
                             -(UINT64_C(1) << 16) + 1,
                             -(UINT64_C(1) << 62) + 1,
                             2,
                             -UINT64_C(2)};
    for (size_t i = 0; i < n; i++) {
        /* fixed-point values up to 2^24 in magnitude (f = 16), plus the edge cases */
        j.x[i] = i < sizeof edge / 8 ? edge[i] : (uint64_t)((int64_t)(rnd() >> 23) - (1LL << 40));
        j.w[i] = i % 3 ? (uint64_t)((int64_t)(rnd() >> 23) - (1LL << 40)) : j.x[i] - (i % 2);
    }
    struct veil_test_mpc_opts o = {.nparties = nparties,
                                   .material =
                                       tfp ? VEIL_MPC_MAT_TRUSTED_FIRST_PARTY : VEIL_MPC_MAT_DEALER,
                                   .frac_bits = -1};
    if (veil_test_mpc_run(&o, body, &j) != 0) {
        bad = 1;
        goto out;
    }
    size_t wrong = 0;
    for (size_t i = 0; i < n; i++) {
        const int pos = (int64_t)j.x[i] >= 0;
        const uint64_t y = pos ? j.x[i] : 0, z = pos ? j.x[i] : j.w[i];
        const uint64_t mx = (int64_t)j.x[i] >= (int64_t)j.w[i] ? j.x[i] : j.w[i];
        if ((j.out[i] != y || j.out[n + i] != (uint64_t)pos || j.out[2 * n + i] != z ||
             (i >= sizeof edge / 8 && j.out[3 * n + i] != mx)) &&
            wrong++ < 5)
            fprintf(stderr,
                    "FAIL %s: x %016" PRIx64 ": relu %016" PRIx64 " mask %" PRIu64
                    " select %016" PRIx64 "\n",
                    veil_test_mpc_name(&o), j.x[i], j.out[i], j.out[n + i], j.out[2 * n + i]);
    }
    /* relu(trunc(x)) by 16 bits, where |x| < 2^62 (trunc.h's range): 0 for x < 0, else
     * floor(x / 2^16) or that plus 1 */
    size_t tried = 0, ups = 0;
    for (size_t i = 0; i < n; i++) {
        const int64_t xi = (int64_t)j.x[i];
        if (xi <= -(INT64_C(1) << 62) || xi >= INT64_C(1) << 62)
            continue;
        tried++;
        const uint64_t got = j.out[4 * n + i], fl = (uint64_t)(xi >> 16);
        const int ok = xi < 0 ? got == 0 : got == fl || got == fl + 1;
        ups += xi >= 0 && got == fl + 1;
        if (!ok && wrong++ < 5)
            fprintf(stderr, "FAIL %s: x %016" PRIx64 ": relu(trunc) %016" PRIx64 "\n",
                    veil_test_mpc_name(&o), j.x[i], got);
    }
    /* the 0/1 ulp is the carry of the low bits: both occur */
    VT_CHECK(tried + 4 >= n && ups > 0 && ups < tried / 2 + n / 8,
             "relu_trunc: %zu values checked, %zu rounded up", tried, ups);
    bad |= wrong != 0;
    const uint64_t w = veil_preproc_sliced_blocks(n, tile), N = (uint64_t)nparties;
    for (int p = 0; p < nparties; p++) {
        /* relu, max, relu_trunc: LTZ's bytes only (x beta and the truncation are local) */
        uint64_t want = 3 * (N - 1) * 8 * (n + 36 * w) + (N - 1) * 16 * n /* select */ +
                        (N - 1) * 8 * 5 * n /* reveals */;
        if (p <= 1)
            want += (N - 1) * 8 * n; /* its input */
        if (tfp && p == 0)
            want += (N - 1) * VEIL_SEED_BYTES;
        const uint64_t want_rounds = 2 + 3 * VEIL_RELU_ROUNDS + 1 + 5;
        VT_CHECK(VEIL_RELU_ROUNDS == 4 && VEIL_LTZ_BLOCK_WORDS == 36, "ReLU rounds and words");
        if (j.cnt[2 * p] != want || j.cnt[2 * p + 1] != want_rounds) {
            fprintf(stderr,
                    "FAIL %s: party %d sent %" PRIu64 " bytes in %" PRIu64
                    " rounds, formula %" PRIu64 " bytes, %" PRIu64 " rounds\n",
                    veil_test_mpc_name(&o), p, j.cnt[2 * p], j.cnt[2 * p + 1], want, want_rounds);
            bad = 1;
        }
    }
out:
    free(j.x);
    free(j.w);
    veil_test_mpc_shared_free(j.out, 5 * n * 8);
    veil_test_mpc_shared_free(j.cnt, 2 * 16 * 8);
    return bad;
}

int main(void)
{
    int failed = 0;
    failed += run(2, 0, 4000, 1024); /* 4 tiles, the last 928 elements */
    failed += run(3, 0, 4000, 1024);
    failed += run(4, 0, 4000, 1024);
    failed += run(3, 1, 4000, 1024);
    failed += run(2, 0, 100000, 16384);
    return failed ? 1 : 0;
}

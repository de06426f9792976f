/* Tests truncation material end to end: 3 parties hold arithmetic shares of 2^20 values x
 * (|x| < 2^62: edge values 0, +-1, +-(2^62 - 1), +-2^f, ... then random x of every magnitude),
 * run the online protocol on their TRUNC shares (open c = x + 2^62 + r; share-wise
 * z = c_hi - [r_hi] + (1 - c_63) [r_63] 2^(64-f) - 2^(62-f)) and reconstruct z. Asserts that
 * z - floor(x / 2^f) is always 0 or +1 (equivalently floor - z is 0 or -1: at most 1 ulp, never a
 * large error), and that it is exactly the borrow [c_lo < r_lo]; checks f = 16, 1 and 40; and
 * checks the same identity in plaintext for edge masks r (0, 2^63 - 1, 2^63, 2^64 - 1, ...). */
#include "config.h"
#include "base/base_internal.h"
#include "tasks/preproc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures;
#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                                   \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fprintf(stderr, "\n");                                                                 \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

#define NP 3
#define ITEM_N 65536
#define OFFSET (UINT64_C(1) << 62)

static const int64_t LIM = (int64_t)(OFFSET - 1); /* largest |x| */

/* The protocol's result in plaintext for mask r; *borrow gets [c_lo < r_lo]. */
static uint64_t trunc_plain(int64_t x, uint64_t r, unsigned f, int *borrow)
{
    uint64_t c = (uint64_t)x + OFFSET + r;
    uint64_t mask = (UINT64_C(1) << f) - 1;
    uint64_t w = (r >> 63) & ~(c >> 63);
    *borrow = (c & mask) < (r & mask);
    return (c >> f) - (r >> f) + (w << (64 - f)) - (OFFSET >> f);
}

/* Edge values of x for f. */
static size_t edges(unsigned f, int64_t *x)
{
    size_t n = 0;
    int64_t base[] = {0,
                      1,
                      2,
                      3,
                      LIM,
                      LIM - 1,
                      (int64_t)1 << f,
                      ((int64_t)1 << f) - 1,
                      ((int64_t)1 << f) + 1,
                      (int64_t)1 << 61,
                      (int64_t)1 << 32,
                      12345};
    for (size_t i = 0; i < sizeof base / sizeof base[0]; i++) {
        x[n++] = base[i];
        x[n++] = -base[i];
    }
    return n;
}

/* A uniform word from the test's own PRG. */
static uint64_t next_word(veil_prg_t *g)
{
    uint64_t w = 0;
    veil_prg_fill(g, &w, 1);
    return w;
}

static void run_protocol(unsigned f, size_t nitems, veil_prg_t *g)
{
    uint8_t seeds[NP][VEIL_SEED_BYTES], sid[16];
    for (int p = 0; p < NP; p++)
        veil_seed_random(seeds[p]);
    veil_seed_random(sid);
    struct veil_preproc_layout L;
    CHECK(veil_preproc_layout_init(&L, NP, (int)f, sid) == VEIL_OK, "layout");
    struct veil_preproc_share sh[NP];
    memset(sh, 0, sizeof sh);
    uint64_t *corr = malloc(2 * ITEM_N * sizeof *corr);
    int64_t edge[64];
    size_t nedge = edges(f, edge), total = 0, err0 = 0, err1 = 0, bad = 0;
    for (size_t it = 0; it < nitems && corr; it++) {
        struct veil_preproc_item item = veil_preproc_item_trunc(it, ITEM_N, f);
        int rc = veil_preproc_dealer_correction(&L, &item, (const uint8_t(*)[16])seeds, corr,
                                                2 * ITEM_N);
        CHECK(rc == VEIL_OK, "dealer: %s", veil_last_error());
        for (int p = 0; p < NP; p++) {
            rc = veil_preproc_party_expand(&L, &item, p, seeds[p], p == L.designated ? corr : NULL,
                                           &sh[p]);
            CHECK(rc == VEIL_OK, "expand: %s", veil_last_error());
        }
        if (failures)
            break;
        for (size_t i = 0; i < ITEM_N; i++) {
            int64_t x;
            if (it == 0 && i < nedge) {
                x = edge[i];
            } else {
                /* every magnitude: a uniform 63-bit signed value shifted right by 0..62 */
                uint64_t w = next_word(g);
                x = (int64_t)next_word(g) >> 1 >> (w % 63);
                if (x < -LIM)
                    x = -LIM;
            }
            /* arithmetic shares of x */
            uint64_t xs[NP], sum = 0;
            for (int p = 0; p < NP - 1; p++) {
                xs[p] = next_word(g);
                sum += xs[p];
            }
            xs[NP - 1] = (uint64_t)x - sum;
            /* open c = x + 2^62 + r */
            uint64_t c = 0;
            for (int p = 0; p < NP; p++)
                c += xs[p] + sh[p].part[VEIL_PRE_TR_R][i] + (p == 0 ? OFFSET : 0);
            /* local result shares */
            uint64_t z = 0, not63 = 1 - (c >> 63);
            for (int p = 0; p < NP; p++) {
                uint64_t zp = (p == 0 ? (c >> f) - (OFFSET >> f) : 0) -
                              sh[p].part[VEIL_PRE_TR_RHI][i] +
                              ((not63 * sh[p].part[VEIL_PRE_TR_R63][i]) << (64 - f));
                z += zp;
            }
            int64_t err = (int64_t)(z - (uint64_t)(x >> f));
            uint64_t r = 0;
            for (int p = 0; p < NP; p++)
                r += sh[p].part[VEIL_PRE_TR_R][i];
            uint64_t mask = (UINT64_C(1) << f) - 1;
            int borrow = (c & mask) < (r & mask);
            if (err == 0)
                err0++;
            else if (err == 1)
                err1++;
            if ((err != 0 && err != 1) || err != borrow) {
                if (bad++ < 5)
                    fprintf(stderr, "x=%lld f=%u: error %lld (borrow %d)\n", (long long)x, f,
                            (long long)err, borrow);
            }
            total++;
        }
    }
    CHECK(bad == 0, "f=%u: %zu of %zu results off by more than the borrow", f, bad, total);
    CHECK(err0 > 0 && err1 > 0, "f=%u: both exact and +1 results occur (%zu, %zu)", f, err0, err1);
    if (getenv("VEIL_TEST_VERBOSE"))
        fprintf(stderr, "f=%u: %zu values, %zu exact, %zu one ulp up\n", f, total, err0, err1);
    for (int p = 0; p < NP; p++)
        veil_preproc_share_clear(&sh[p]);
    free(corr);
}

int main(void)
{
    uint8_t gseed[VEIL_SEED_BYTES] = {42};
    veil_prg_t *g = veil_prg_new(gseed);
    if (!g)
        return 1;
    /* Plaintext identity with edge masks. */
    const unsigned fs[] = {1, 16, 48, 62};
    const uint64_t rs[] = {0,
                           1,
                           0xffff,
                           0x10000,
                           (UINT64_C(1) << 63) - 1,
                           UINT64_C(1) << 63,
                           (UINT64_C(1) << 63) + 1,
                           UINT64_MAX,
                           UINT64_MAX - 0xffff,
                           UINT64_C(0x123456789abcdef0)};
    for (size_t a = 0; a < sizeof fs / sizeof fs[0]; a++) {
        int64_t x[64];
        size_t nx = edges(fs[a] < 62 ? fs[a] : 61, x);
        for (size_t i = 0; i < nx; i++)
            for (size_t j = 0; j < sizeof rs / sizeof rs[0]; j++) {
                int borrow;
                uint64_t z = trunc_plain(x[i], rs[j], fs[a], &borrow);
                int64_t err = (int64_t)(z - (uint64_t)(x[i] >> fs[a]));
                CHECK(err == borrow, "plain: x=%lld r=%llx f=%u: error %lld, borrow %d",
                      (long long)x[i], (unsigned long long)rs[j], fs[a], (long long)err, borrow);
            }
    }
    run_protocol(16, 16, g); /* 2^20 values */
    run_protocol(1, 1, g);
    run_protocol(40, 1, g);
    veil_prg_destroy(&g);
    if (failures)
        fprintf(stderr, "%d failures\n", failures);
    return failures ? 1 : 0;
}

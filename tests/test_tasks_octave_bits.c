/* Tests the octave bits (tasks/octave_bits.c, veil_nl_octave_bits) and the circuit under them
 * (tasks/bitcirc.h). Plaintext: for every bit range (p0, p1) with 1 <= p0 <= p1 <= 62 and
 * p1 - p0 < 128, the built circuit evaluated on x = c + r (random masks) gives exactly
 * [x < 2^(p0 + i)] for x read as a (p1 + 1)-bit word, on every power of two up to 2^63 and its
 * neighbours plus random words; out-of-limit ranges are refused (NULL). Secure: real party
 * processes with a dealer, N = 2 and 3, over the DSL's range [2^-16, 2^15), Adam's [2^-8, 2^24)
 * and a 2-octave range [1, 8), inputs tiled by 100 (not a multiple of 64: the protocol re-tiles)
 * and by 256 with a partial last tile: every revealed bit EQUALS the plaintext model
 * (veil_nl_octave_bit_model) on edge values (0, every power of two and its neighbours, values
 * past 2^(f + hi), negative values) and random ones; every party's bytes and rounds EQUAL
 * veil_octave_bits_cost plus sharing the input and revealing the bits. */
#include "config.h"
#include "base/base_internal.h"
#include "tasks/bitcirc.h"
#include "tasks/nonlinear_internal.h"
#include "test_mpc_util.h"
#include "test_util.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define F 16 /* the test harness's default fractional bits (frac_bits = -1) */

/* Edge values: 0, every power of two and its neighbours, negatives; then random words of
 * p1 + 1 bits (in range) and some of 64 bits. */
static void fill(uint64_t *x, size_t n, int p1)
{
    size_t k = 0;
    x[k++] = 0;
    for (int b = 0; b < 64 && k + 4 <= n; b++) {
        const uint64_t p = UINT64_C(1) << b;
        x[k++] = p;
        x[k++] = p - 1;
        x[k++] = p + 1;
        x[k++] = 0 - p;
    }
    veil_test_random((uint64_t)p1, x + k, n - k);
    for (; k < n; k++)
        x[k] = k % 5 ? x[k] >> (63 - p1) : x[k];
}

static void check_plain(void)
{
    uint64_t x[600], r[600];
    uint8_t out[VEIL_BITC_MAX_OUT];
    size_t ranges = 0, wrong = 0;
    for (int p1 = 1; p1 < VEIL_BITC_MAX_BITS; p1++)
        for (int p0 = 1; p0 <= p1; p0++) {
            if (p1 - p0 >= VEIL_BITC_MAX_OUT)
                continue;
            const struct veil_bitc *b = veil_bitc_octave(p0, p1);
            VT_CHECK(b != NULL, "circuit (%d, %d) not built", p0, p1);
            if (!b)
                continue;
            ranges++;
            VT_CHECK(b->nout == p1 - p0 + 1 && b->levels <= VEIL_BITC_MAX_LEVELS,
                     "(%d, %d): %d outputs, %d levels", p0, p1, b->nout, b->levels);
            const size_t n = (p0 + p1) % 7 == 0 ? 600 : 300;
            fill(x, n, p1);
            veil_test_random(UINT64_C(1000) + (uint64_t)(64 * p0 + p1), r, n);
            for (size_t e = 0; e < n; e++) {
                veil_bitc_eval(b, x[e] - r[e], r[e], out);
                for (int i = 0; i < b->nout; i++)
                    if (out[i] != veil_nl_octave_bit_model(x[e], p0 + i, p1) && wrong++ < 5)
                        fprintf(stderr, "FAIL (%d, %d): x %016" PRIx64 " bit %d = %d\n", p0, p1,
                                x[e], i, out[i]);
            }
        }
    VT_CHECK(wrong == 0, "%zu wrong circuit outputs", wrong);
    const struct veil_bitc *dsl = veil_bitc_octave(F - 16 + 1, F + 15 - 1);
    VT_CHECK(dsl && dsl->nand_total == 184 && dsl->levels == 10,
             "the DSL's circuit: %d ANDs in %d levels (the headers say 184 in 10)",
             dsl ? dsl->nand_total : -1, dsl ? dsl->levels : -1);
    VT_CHECK(veil_bitc_octave(0, 5) == NULL && veil_bitc_octave(6, 5) == NULL &&
                 veil_bitc_octave(1, 63) == NULL && veil_bitc_octave(1, 62) != NULL,
             "the limits of veil_bitc_octave");
    veil_test_log("plaintext: %zu bit ranges, %zu wrong", ranges, wrong);
}

struct job {
    size_t n, tile;
    int lo, hi;
    uint64_t *x;   /* plaintext input (parent) */
    uint64_t *out; /* shared: revealed bits, k n words */
    uint64_t *cnt; /* shared: per party bytes, rounds */
};

static int body(veil_mpc_t *m, void *arg)
{
    struct job *j = arg;
    const int self = veil_mpc_self(m);
    const size_t dims[1] = {j->n};
    struct veil_sec x = {0}, bits = {0}, open = {0};
    int rc = veil_mpc_share_input(m, 0, self == 0 ? j->x : NULL, 1, dims, j->tile, &x);
    if (rc == VEIL_OK)
        rc = veil_nl_octave_bits(m, &x, j->lo, j->hi, &bits);
    if (rc == VEIL_OK)
        rc = veil_mpc_reveal(m, &bits, -1, &open);
    if (rc != VEIL_OK || veil_mpc_wait(m) != VEIL_OK) {
        fprintf(stderr, "process %d: %s\n", self, veil_last_error());
        return 1;
    }
    if (veil_mpc_computes(m)) {
        if (self == 0)
            memcpy(j->out, veil_test_host(&open), bits.numel * 8);
        struct veil_test_mpc_counters c;
        veil_test_mpc_counters(m, &c);
        j->cnt[2 * self] = c.bytes;
        j->cnt[2 * self + 1] = c.rounds;
    }
    veil_mpc_release(m, &x);
    veil_mpc_release(m, &bits);
    veil_mpc_release(m, &open);
    return 0;
}

static int run(int nparties, size_t n, size_t tile, int lo, int hi)
{
    const int k = hi - lo - 1, p0 = F + lo + 1, p1 = F + hi - 1;
    struct job j = {.n = n, .tile = tile, .lo = lo, .hi = hi};
    j.x = malloc(n * 8);
    j.out = veil_test_mpc_shared((size_t)k * n * 8);
    j.cnt = veil_test_mpc_shared(2 * 16 * 8);
    int bad = 0;
    if (!j.x || !j.out || !j.cnt)
        return 1;
    fill(j.x, n, p1);
    struct veil_test_mpc_opts o = {
        .nparties = nparties, .material = VEIL_MPC_MAT_DEALER, .frac_bits = -1, .timeout_s = 120};
    if (veil_test_mpc_run(&o, body, &j) != 0) {
        bad = 1;
        goto out;
    }
    size_t wrong = 0;
    for (int i = 0; i < k; i++)
        for (size_t e = 0; e < n; e++)
            if (j.out[(size_t)i * n + e] != veil_nl_octave_bit_model(j.x[e], p0 + i, p1) &&
                wrong++ < 5)
                fprintf(stderr, "FAIL %s [2^%d, 2^%d): x %016" PRIx64 " bit %d = %" PRIu64 "\n",
                        veil_test_mpc_name(&o), lo, hi, j.x[e], i, j.out[(size_t)i * n + e]);
    bad |= wrong != 0;
    uint64_t ob = 0, orounds = 0;
    veil_octave_bits_cost(nparties, n, p0, p1, &orounds, &ob);
    const uint64_t N = (uint64_t)nparties;
    for (int p = 0; p < nparties; p++) {
        uint64_t want = ob + (N - 1) * 8 * (uint64_t)k * n; /* the bits revealed to all */
        if (p == 0)
            want += (N - 1) * 8 * n; /* its input */
        const uint64_t want_rounds = 1 + orounds + 1;
        if (j.cnt[2 * p] != want || j.cnt[2 * p + 1] != want_rounds) {
            fprintf(stderr,
                    "FAIL %s: party %d sent %" PRIu64 " bytes in %" PRIu64 " rounds, "
                    "formula %" PRIu64 " bytes, %" PRIu64 " rounds\n",
                    veil_test_mpc_name(&o), p, j.cnt[2 * p], j.cnt[2 * p + 1], want, want_rounds);
            bad = 1;
        }
    }
    veil_test_log("%s: n %zu tile %zu [2^%d, 2^%d): %zu wrong, %" PRIu64 " rounds, party 0 sent "
                  "%" PRIu64 " bytes",
                  veil_test_mpc_name(&o), n, tile, lo, hi, wrong, orounds, j.cnt[0]);
out:
    free(j.x);
    veil_test_mpc_shared_free(j.out, (size_t)k * n * 8);
    veil_test_mpc_shared_free(j.cnt, 2 * 16 * 8);
    return bad;
}

int main(void)
{
    check_plain();
    int failed = 0;
    failed += run(2, 1000, 100, -16, 15); /* the DSL's range; tiles of 100 re-tiled */
    failed += run(3, 1000, 256, -16, 15); /* last tile 232 */
    failed += run(2, 700, 256, -8, 24);   /* Adam's range */
    failed += run(3, 130, 0, 0, 3);       /* [1, 8): 2 octave bits */
    return failed || veil_test_failures ? 1 : 0;
}

/* Tests LTZ and B2A (tasks/compare.h) with real party processes: N = 2, 3, 4 with a dealer and
 * N = 3 in trusted-first-party mode, plus large runs so that over 10^6 random values are
 * compared in total. Every revealed bit is checked EXACTLY against x < 0 (x signed 64-bit),
 * including the edge cases 0, +-1 ulp, -2^63, 2^63 - 1, the largest fixed-point magnitudes and
 * values next to every power of two; B2A of XOR-shared bits likewise. Every party's bytes sent
 * and rounds marked EQUAL the formulas of compare.h (padding of partial 64-element words
 * included: the sizes are chosen so the last tile is not a multiple of 64). Bad input (a binary
 * sharing to LTZ, tiles not a multiple of 64) is refused with an error before submission. */
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
    size_t n;    /* elements */
    size_t tile; /* tile of the inputs (multiple of 64) */
    int nparties;
    int tfp;
    uint64_t *x;    /* plaintext input (parent) */
    uint64_t *bits; /* plaintext bits for B2A (parent) */
    uint64_t *out;  /* shared: revealed LTZ then B2A results (2 n words) */
    uint64_t *cnt;  /* shared: per party bytes, rounds */
};


static uint64_t rng_state = 0x9e3779b97f4a7c15u;
static uint64_t rnd(void)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

static size_t edge_cases(uint64_t *x, size_t cap)
{
    size_t k = 0;
    const uint64_t fixed_max = UINT64_C(1) << 62; /* largest fixed-point magnitudes used */
    const uint64_t fixed[] = {0,
                              1,
                              UINT64_MAX,
                              UINT64_C(1) << 63,
                              (UINT64_C(1) << 63) - 1,
                              (UINT64_C(1) << 63) + 1,
                              fixed_max - 1,
                              -(fixed_max - 1),
                              fixed_max,
                              -fixed_max,
                              UINT64_C(1) << 16,
                              -(UINT64_C(1) << 16),
                              2,
                              UINT64_MAX - 1};
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0] && k < cap; i++)
        x[k++] = fixed[i];
    for (int b = 0; b < 64 && k + 6 <= cap; b++) {
        const uint64_t p = UINT64_C(1) << b;
        x[k++] = p;
        x[k++] = p - 1;
        x[k++] = p + 1;
        x[k++] = -p;
        x[k++] = -p - 1;
        x[k++] = -p + 1;
    }
    return k;
}

static int body(veil_mpc_t *m, void *arg)
{
    struct job *j = arg;
    const int self = veil_mpc_self(m), n = veil_mpc_nparties(m);
    const size_t dims[1] = {j->n};
    struct veil_sec x = {0}, b = {0}, open = {0}, bits = {0}, ba = {0}, open2 = {0};
    int rc = veil_mpc_share_input(m, 0, self == 0 ? j->x : NULL, 1, dims, j->tile, &x);
    if (rc == VEIL_OK)
        rc = veil_mpc_ltz(m, &x, &b);
    if (rc == VEIL_OK)
        rc = veil_mpc_reveal(m, &b, -1, &open);
    /* B2A input: a valid XOR sharing (party 0 holds the bits, the others random words whose
     * bit 0 they also XOR into... kept simple: the others hold words with bit 0 = 0 and random
     * high bits, which B2A must ignore). */
    if (rc == VEIL_OK &&
        (rc = veil_sec_init(m, &bits, VEIL_SHARE_BINARY, 1, dims, j->tile)) == VEIL_OK &&
        veil_mpc_computes(m))
        for (size_t i = 0; i < j->n; i++)
            bits.data[i] = self == 0 ? j->bits[i] ^ (rnd() & ~UINT64_C(1)) : rnd() & ~UINT64_C(1);
    if (rc == VEIL_OK)
        rc = veil_mpc_b2a(m, &bits, &ba);
    if (rc == VEIL_OK)
        rc = veil_mpc_reveal(m, &ba, -1, &open2);
    if (rc != VEIL_OK) {
        fprintf(stderr, "process %d: %s\n", self, veil_last_error());
        return 1;
    }
    if (veil_mpc_wait(m) != VEIL_OK) {
        fprintf(stderr, "process %d: wait: %s\n", self, veil_last_error());
        return 1;
    }
    if (veil_mpc_computes(m)) {
        if (self == 0) {
            memcpy(j->out, veil_test_host(&open), j->n * 8);
            memcpy(j->out + j->n, veil_test_host(&open2), j->n * 8);
        }
        struct veil_test_mpc_counters c;
        veil_test_mpc_counters(m, &c);
        j->cnt[2 * self] = c.bytes;
        j->cnt[2 * self + 1] = c.rounds;
        (void)n;
    }
    /* Bad input, refused before submission. */
    struct veil_sec bad = {0};
    VT_CHECK(veil_mpc_ltz(m, &bits, &bad) == VEIL_ERR_INVAL, "ltz of a binary sharing");
    struct veil_sec odd = {0};
    const size_t d2[1] = {1000};
    if (veil_sec_init(m, &odd, VEIL_SHARE_ARITH, 1, d2, 100) == VEIL_OK) {
        VT_CHECK(veil_mpc_ltz(m, &odd, &bad) == VEIL_ERR_INVAL, "tiles of 100 refused");
        VT_CHECK(strstr(veil_last_error(), "multiple of 64") != NULL, "message: %s",
              veil_last_error());
    }
    struct veil_sec *all[] = {&x, &b, &open, &bits, &ba, &open2, &odd};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        veil_mpc_release(m, all[i]);
    return veil_test_failures ? 1 : 0;
}

static int run(int nparties, int tfp, size_t n, size_t tile)
{
    struct job j = {.n = n, .tile = tile, .nparties = nparties, .tfp = tfp};
    j.x = malloc(n * 8);
    j.bits = malloc(n * 8);
    j.out = veil_test_mpc_shared(2 * n * 8);
    j.cnt = veil_test_mpc_shared(2 * 16 * 8);
    int bad = 0;
    if (!j.x || !j.bits || !j.out || !j.cnt)
        return 1;
    size_t k = edge_cases(j.x, n);
    for (size_t i = k; i < n; i++)
        j.x[i] = rnd();
    for (size_t i = 0; i < n; i++)
        j.bits[i] = rnd() & 1;
    struct veil_test_mpc_opts o = {.nparties = nparties,
                                   .material =
                                       tfp ? VEIL_MPC_MAT_TRUSTED_FIRST_PARTY : VEIL_MPC_MAT_DEALER,
                                   .frac_bits = -1,
                                   .timeout_s = 120};
    if (veil_test_mpc_run(&o, body, &j) != 0) {
        bad = 1;
        goto out;
    }
    size_t wrong = 0, wrong2 = 0;
    for (size_t i = 0; i < n; i++) {
        if (j.out[i] != j.x[i] >> 63 && wrong++ < 5)
            fprintf(stderr, "FAIL %s: ltz(%016" PRIx64 ") = %016" PRIx64 "\n",
                    veil_test_mpc_name(&o), j.x[i], j.out[i]);
        if (j.out[n + i] != j.bits[i] && wrong2++ < 5)
            fprintf(stderr, "FAIL %s: b2a bit %zu = %016" PRIx64 "\n", veil_test_mpc_name(&o), i,
                    j.out[n + i]);
    }
    bad |= wrong != 0 || wrong2 != 0;
    /* Formulas of compare.h: W = sum over tiles of ceil(tile_numel / 64). */
    const uint64_t w = veil_preproc_sliced_blocks(n, tile), N = (uint64_t)nparties;
    for (int p = 0; p < nparties; p++) {
        uint64_t want = (N - 1) * 8 * (n + 36 * w) /* ltz */ + (N - 1) * 8 * w /* b2a */ +
                        (N - 1) * 8 * 2 * n /* two reveals */;
        if (p == 0)
            want += (N - 1) * 8 * n; /* its input */
        if (tfp && p == 0)
            want += (N - 1) * VEIL_SEED_BYTES;
        const uint64_t want_rounds = 1 + VEIL_LTZ_ROUNDS + 1 + 1 + 1;
        if (j.cnt[2 * p] != want || j.cnt[2 * p + 1] != want_rounds) {
            fprintf(stderr,
                    "FAIL %s: party %d sent %" PRIu64 " bytes in %" PRIu64
                    " rounds, formula %" PRIu64 " bytes, %" PRIu64 " rounds\n",
                    veil_test_mpc_name(&o), p, j.cnt[2 * p], j.cnt[2 * p + 1], want, want_rounds);
            bad = 1;
        }
    }
    if (getenv("VEIL_TEST_VERBOSE"))
        fprintf(stderr, "%s: n %zu tile %zu: %zu wrong, party 0 sent %" PRIu64 " bytes\n",
                veil_test_mpc_name(&o), n, tile, wrong, j.cnt[0]);
out:
    free(j.x);
    free(j.bits);
    veil_test_mpc_shared_free(j.out, 2 * n * 8);
    veil_test_mpc_shared_free(j.cnt, 2 * 16 * 8);
    return bad;
}

int main(void)
{
    int failed = 0;
    /* Small runs over every party count (last tile 1000 - 768 = 232, not a multiple of 64). */
    failed += run(2, 0, 1000, 256);
    failed += run(3, 0, 1000, 256);
    failed += run(4, 0, 1000, 256);
    failed += run(3, 1, 1000, 256);
    failed += run(2, 0, 77, 4096); /* one tile shorter than a word group */
    /* 10^6 random values in total. */
    const char *quick = getenv("VEIL_TEST_QUICK");
    const int big = quick ? 1 : 4;
    for (int i = 0; i < big; i++)
        failed += run(2, 0, (1u << 18) - 3 * (unsigned)i - 1, 16384);
    return failed ? 1 : 0;
}

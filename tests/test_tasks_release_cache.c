/* Tests the cache of released tensors (tasks/mpc_release.c) with real party processes: N = 2 with
 * a dealer process, N = 3 in trusted-first-party mode and N = 2 from preprocessing files. Two
 * "runs" of the same computation (x and y shared by parties 0 and 1, z = x * y revealed to all),
 * on different inputs, each ending at a barrier with everything released: at a party the first
 * run's tensors are kept with their handles (hits 0), and the second run's allocations all take
 * them (no new miss, a hit for each); both results equal the plaintext products bit for bit. A
 * kept buffer is wiped at the barrier (x's share buffer, non-zero before its release, reads all
 * zero after it), and a tensor that takes one starts as zeros. A tensor over the cache's size
 * bound (20,000 words) is not kept. The dealer keeps its corrections the same way; a recorder
 * keeps nothing. */
#include "config.h"
#include "base/base_internal.h"
#include "codelets/reference.h"
#include "tasks/beaver.h"
#include "tasks/mpc_internal.h"
#include "test_mpc_util.h"
#include "test_util.h"

#include <string.h>

#define ROWS 40
#define COLS 25
#define NUMEL (ROWS * COLS)
#define TILE 256 /* 4 tiles, the last one short */
#define RUNS 2
#define BIG 20000 /* words: over VEIL_MPC_CACHE_MAX_BYTES */

static uint64_t x[RUNS][NUMEL], y[RUNS][NUMEL];
static uint64_t *out; /* shared: run k's z at out + k NUMEL, written by party 0 */

static int all_zero(const uint64_t *w, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (w[i] != 0)
            return 0;
    return 1;
}

/* One run: share, multiply, reveal, release everything, barrier. *xbuf: x's share buffer. */
static int one_run(veil_mpc_t *m, int k, const uint64_t **xbuf, int *x_nonzero)
{
    const int self = veil_mpc_self(m);
    const size_t dims[2] = {ROWS, COLS};
    struct veil_sec sx = {0}, sy = {0}, z = {0}, rz = {0};
    int rc = veil_mpc_share_input(m, 0, self == 0 ? x[k] : NULL, 2, dims, TILE, &sx);
    if (rc == VEIL_OK)
        rc = veil_mpc_share_input(m, 1, self == 1 ? y[k] : NULL, 2, dims, TILE, &sy);
    if (rc == VEIL_OK)
        rc = veil_mpc_mul(m, &sx, &sy, &z);
    if (rc == VEIL_OK)
        rc = veil_mpc_reveal(m, &z, -1, &rz);
    if (rc == VEIL_OK)
        rc = veil_mpc_wait(m);
    VT_CHECK(rc == VEIL_OK, "run %d: %s", k, veil_last_error());
    if (rc == VEIL_OK && veil_mpc_computes(m)) {
        *xbuf = veil_test_host(&sx);
        *x_nonzero = !all_zero(*xbuf, NUMEL);
        if (self == 0)
            memcpy(out + (size_t)k * NUMEL, veil_test_host(&rz), NUMEL * 8);
    }
    struct veil_sec *all[] = {&sx, &sy, &z, &rz};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        veil_mpc_release(m, all[i]);
    rc = veil_mpc_wait(m);
    VT_CHECK(rc == VEIL_OK, "run %d's barrier: %s", k, veil_last_error());
    return rc;
}

static int body(veil_mpc_t *m, void *arg)
{
    (void)arg;
    struct veil_mpc_cache_stats s0, s1, s2;
    const uint64_t *xbuf = NULL;
    int x_nonzero = 0;
    if (one_run(m, 0, &xbuf, &x_nonzero) != VEIL_OK)
        return 1;
    veil_mpc_cache_stats(m, &s0);
    const int recorder = !veil_mpc_net(m), dealer = !recorder && !veil_mpc_computes(m);
    if (recorder) {
        VT_CHECK(s0.hits == 0 && s0.misses == 0 && s0.tensors == 0,
                 "a recorder keeps nothing (%zu kept)", s0.tensors);
        return one_run(m, 1, &xbuf, &x_nonzero) != VEIL_OK || veil_test_failures;
    }
    /* the dealer allocates only its corrections: one per Beaver item, in the third mode */
    VT_CHECK(s0.hits == 0 && s0.misses > 0, "run 0: %llu hits, %llu misses",
             (unsigned long long)s0.hits, (unsigned long long)s0.misses);
    VT_CHECK(s0.tensors == s0.misses && s0.bytes >= (dealer ? NUMEL * 8 : 3 * NUMEL * 8),
             "run 0's tensors kept: %zu (%zu bytes) of %llu allocated", s0.tensors, s0.bytes,
             (unsigned long long)s0.misses);
    if (!dealer) {
        VT_CHECK(x_nonzero, "x's share was non-zero before its release");
        VT_CHECK(xbuf && all_zero(xbuf, NUMEL), "x's kept buffer is wiped at the barrier");
    }

    if (one_run(m, 1, &xbuf, &x_nonzero) != VEIL_OK)
        return 1;
    veil_mpc_cache_stats(m, &s1);
    VT_CHECK(s1.misses == s0.misses && s1.hits >= s0.misses,
             "run 1 takes run 0's tensors: %llu hits, %llu misses (run 0: %llu misses)",
             (unsigned long long)s1.hits, (unsigned long long)s1.misses,
             (unsigned long long)s0.misses);
    VT_CHECK(s1.tensors == s0.tensors && s1.bytes == s0.bytes,
             "the same tensors are kept after run 1: %zu (%zu bytes)", s1.tensors, s1.bytes);
    if (dealer)
        return veil_test_failures ? 1 : 0;

    /* A kept tensor starts as zeros; one over the size bound is not kept. */
    const size_t dims[2] = {ROWS, COLS}, big[1] = {BIG};
    struct veil_sec t = {0}, b = {0};
    VT_CHECK(veil_sec_init(m, &t, VEIL_SHARE_ARITH, 2, dims, TILE) == VEIL_OK, "init: %s",
             veil_last_error());
    veil_mpc_cache_stats(m, &s2);
    VT_CHECK(s2.hits == s1.hits + 1, "a tensor of a kept shape takes one");
    VT_CHECK(t.data && all_zero(t.data, NUMEL), "a tensor from the cache starts as zeros");
    VT_CHECK(veil_sec_init(m, &b, VEIL_SHARE_ARITH, 1, big, 0) == VEIL_OK, "init: %s",
             veil_last_error());
    veil_mpc_release(m, &t);
    veil_mpc_release(m, &b);
    VT_CHECK(veil_mpc_wait(m) == VEIL_OK, "barrier: %s", veil_last_error());
    veil_mpc_cache_stats(m, &s2);
    VT_CHECK(s2.tensors == s1.tensors && s2.bytes == s1.bytes && s2.misses == s1.misses,
             "a tensor of %d words is not kept (%zu kept, %zu bytes)", BIG, s2.tensors, s2.bytes);
    return veil_test_failures ? 1 : 0;
}

int main(void)
{
    uint64_t zref[RUNS][NUMEL];
    for (int k = 0; k < RUNS; k++) {
        veil_test_random(31 + 2 * (uint64_t)k, x[k], NUMEL);
        veil_test_random(32 + 2 * (uint64_t)k, y[k], NUMEL);
        veil_test_mix_edges(x[k], y[k], NUMEL);
        veil_ref_mul(NUMEL, x[k], y[k], zref[k]);
    }
    out = veil_test_mpc_shared(RUNS * NUMEL * 8);
    if (!out)
        return 1;
    struct veil_test_mpc_opts runs[] = {
        {.nparties = 2, .material = VEIL_MPC_MAT_DEALER, .frac_bits = -1},
        {.nparties = 3, .material = VEIL_MPC_MAT_TRUSTED_FIRST_PARTY, .frac_bits = -1},
        {.nparties = 2, .material = VEIL_MPC_MAT_FILE, .frac_bits = -1},
    };
    for (size_t r = 0; r < sizeof runs / sizeof runs[0]; r++) {
        memset(out, 0, RUNS * NUMEL * 8);
        if (veil_test_mpc_run(&runs[r], body, NULL) != 0) {
            veil_test_failures++;
            continue;
        }
        const char *name = veil_test_mpc_name(&runs[r]);
        veil_test_log("%s: done", name);
        for (int k = 0; k < RUNS; k++) {
            char what[64];
            snprintf(what, sizeof what, "%s: run %d: x * y", name, k);
            veil_test_compare_u64(what, out + (size_t)k * NUMEL, zref[k], NUMEL);
        }
    }
    veil_test_mpc_shared_free(out, RUNS * NUMEL * 8);
    return veil_test_status();
}

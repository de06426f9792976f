/* Tests the elementwise Beaver product and square (tasks/beaver.h) with real party processes:
 * N = 2, 3, 4 with a dealer process and N = 3 in trusted-first-party mode and N = 2 from
 * preprocessing files. x (from party 0) and y (from party 1) are 40 x 25 tensors in tiles of 256
 * (the last tile short) with ring edge values; z = x * y and w = x * x are revealed and compared
 * bit for bit with the plaintext oracle (so every mode and N gives the same words). Each party's
 * bytes and rounds over each protocol equal the formulas: mul 1 round, 16 (N-1) numel bytes; square
 * 1 round, 8 (N-1) numel; and each sends one message per tile to each other party (a product's two
 * masked terms packed in one). Bad input (a 3 x 4 tensor times a 5 x 2 one, binary shares, NULL) is
 * refused with a message before anything is submitted (no traffic, no material requested). */
#include "config.h"
#include "base/base_internal.h"
#include "codelets/reference.h"
#include "tasks/beaver.h"
#include "test_mpc_util.h"
#include "test_util.h"

#include <inttypes.h>
#include <string.h>

#define ROWS 40
#define COLS 25
#define NUMEL (ROWS * COLS)
#define TILE 256

#define NTILES ((NUMEL + TILE - 1) / TILE)

static uint64_t x[NUMEL], y[NUMEL];
static uint64_t *out; /* shared: z then w, written by party 0 */

/* Messages this party's sends to the other parties completed (the dealer's traffic aside). */
static uint64_t msgs_to_parties(veil_mpc_t *m)
{
    uint64_t n = 0;
    struct veil_net_stats st;
    for (int q = 0; q < veil_mpc_nparties(m); q++)
        if (q != veil_mpc_self(m) && veil_net_stats_get(veil_mpc_net(m), q, &st) == VEIL_OK)
            n += st.msgs_sent;
    return n;
}

static int body(veil_mpc_t *m, void *arg)
{
    (void)arg;
    const int self = veil_mpc_self(m);
    const uint64_t n1 = (uint64_t)veil_mpc_nparties(m) - 1;
    const size_t dims[2] = {ROWS, COLS};
    struct veil_sec sx = {0}, sy = {0}, z = {0}, w = {0}, rz = {0}, rw = {0}, bad = {0};
    struct veil_test_mpc_counters c;
    int rc = veil_mpc_share_input(m, 0, self == 0 ? x : NULL, 2, dims, TILE, &sx);
    if (rc == VEIL_OK)
        rc = veil_mpc_share_input(m, 1, self == 1 ? y : NULL, 2, dims, TILE, &sy);
    if (rc != VEIL_OK || veil_mpc_wait(m) != VEIL_OK) {
        VT_CHECK(0, "inputs: %s", veil_last_error());
        return 1;
    }
    veil_test_mpc_counters(m, &c);

    /* Bad input first: nothing may be submitted or consumed. */
    size_t nitems0, nitems1;
    veil_mpc_items(m, &nitems0);
    struct veil_sec s34 = {0}, s52 = {0};
    const size_t d34[2] = {3, 4}, d52[2] = {5, 2};
    if (veil_sec_init(m, &s34, VEIL_SHARE_ARITH, 2, d34, 0) == VEIL_OK &&
        veil_sec_init(m, &s52, VEIL_SHARE_ARITH, 2, d52, 0) == VEIL_OK) {
        VT_CHECK(veil_mpc_mul(m, &s34, &s52, &bad) == VEIL_ERR_SHAPE, "mul 3x4 by 5x2 refused");
        VT_CHECK(strstr(veil_last_error(), "mul") != NULL, "message names the op: %s",
              veil_last_error());
        s52.kind = VEIL_SHARE_BINARY;
        VT_CHECK(veil_mpc_square(m, &s52, &bad) == VEIL_ERR_INVAL, "square of binary refused");
        VT_CHECK(veil_mpc_mul(m, NULL, &s34, &bad) == VEIL_ERR_INVAL, "NULL refused");
        s52.kind = VEIL_SHARE_ARITH;
    }
    veil_mpc_release(m, &s34);
    veil_mpc_release(m, &s52);
    veil_mpc_items(m, &nitems1);
    VT_CHECK(nitems0 == nitems1, "a refused call requested material");

    const int party = veil_mpc_computes(m);
    uint64_t msgs0 = party ? msgs_to_parties(m) : 0, msgs1;
    if ((rc = veil_mpc_mul(m, &sx, &sy, &z)) != VEIL_OK)
        VT_CHECK(0, "mul: %s", veil_last_error());
    veil_test_mpc_check_cost(m, "mul", &c, 1, 16 * n1 * NUMEL);
    if (party && (msgs1 = msgs_to_parties(m)) != msgs0 + NTILES * n1)
        VT_CHECK(0, "mul: %llu messages to the other parties, not one per tile and party (%llu)",
                 (unsigned long long)(msgs1 - msgs0), (unsigned long long)(NTILES * n1));
    msgs0 = party ? msgs_to_parties(m) : 0;
    if ((rc = veil_mpc_square(m, &sx, &w)) != VEIL_OK)
        VT_CHECK(0, "square: %s", veil_last_error());
    veil_test_mpc_check_cost(m, "square", &c, 1, 8 * n1 * NUMEL);
    if (party && (msgs1 = msgs_to_parties(m)) != msgs0 + NTILES * n1)
        VT_CHECK(0, "square: %llu messages to the other parties, not one per tile and party (%llu)",
                 (unsigned long long)(msgs1 - msgs0), (unsigned long long)(NTILES * n1));
    if (veil_test_failures)
        return 1;
    if (veil_mpc_reveal(m, &z, -1, &rz) != VEIL_OK || veil_mpc_reveal(m, &w, -1, &rw) != VEIL_OK ||
        veil_mpc_wait(m) != VEIL_OK) {
        VT_CHECK(0, "reveal: %s", veil_last_error());
        return 1;
    }
    if (self == 0) {
        VT_CHECK(rz.ndim == 2 && rz.dims[0] == ROWS && rz.dims[1] == COLS, "z keeps x's shape");
        memcpy(out, veil_test_host(&rz), NUMEL * 8);
        memcpy(out + NUMEL, veil_test_host(&rw), NUMEL * 8);
    }
    struct veil_sec *all[] = {&sx, &sy, &z, &w, &rz, &rw};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        veil_mpc_release(m, all[i]);
    return veil_test_failures ? 1 : 0;
}

int main(void)
{
    veil_test_random(11, x, NUMEL);
    veil_test_random(12, y, NUMEL);
    veil_test_mix_edges(x, y, NUMEL);
    uint64_t zref[NUMEL], wref[NUMEL];
    veil_ref_mul(NUMEL, x, y, zref);
    veil_ref_mul(NUMEL, x, x, wref);
    out = veil_test_mpc_shared(2 * NUMEL * 8);
    if (!out)
        return 1;
    struct veil_test_mpc_opts runs[] = {
        {.nparties = 2, .material = VEIL_MPC_MAT_DEALER, .frac_bits = -1},
        {.nparties = 3, .material = VEIL_MPC_MAT_DEALER, .frac_bits = -1},
        {.nparties = 4, .material = VEIL_MPC_MAT_DEALER, .frac_bits = -1},
        {.nparties = 3, .material = VEIL_MPC_MAT_TRUSTED_FIRST_PARTY, .frac_bits = -1},
        {.nparties = 2, .material = VEIL_MPC_MAT_FILE, .frac_bits = -1},
    };
    for (size_t r = 0; r < sizeof runs / sizeof runs[0]; r++) {
        memset(out, 0, 2 * NUMEL * 8);
        if (veil_test_mpc_run(&runs[r], body, NULL) != 0) {
            veil_test_failures++;
            continue;
        }
        const char *name = veil_test_mpc_name(&runs[r]);
        veil_test_log("%s: done", name);
        char what[64];
        snprintf(what, sizeof what, "%s: x * y", name);
        veil_test_compare_u64(what, out, zref, NUMEL);
        snprintf(what, sizeof what, "%s: x * x", name);
        veil_test_compare_u64(what, out + NUMEL, wref, NUMEL);
    }
    veil_test_mpc_shared_free(out, 2 * NUMEL * 8);
    return veil_test_status();
}

/* Tests the dealer's flow control within a run (tasks/mpc_material.c, FLOW CONTROL) with real
 * processes, N = 2 and 3 plus a dealer: the parties lag behind the dealer (each sleeps 20 ms
 * before sharing the inputs of every product, and wait for each product before the next) through
 * CALLS Beaver products of NUMEL elements,
 * 3 MiB of corrections in all, while the designated party's net holds at most EARLY_CAP bytes of early arrivals. With a
 * credit step of 8 KiB and a window of 64 KiB every product is correct (bit for bit against the
 * oracle) and the designated party sent the dealer at least one credit per product; with the
 * window as large as the run (no effective flow control) the same run must fail on the cap,
 * which shows that the test exercises what it claims to. */
#include "config.h"
#include "base/base_internal.h"
#include "codelets/reference.h"
#include "net/net_internal.h"
#include "tasks/beaver.h"
#include "test_mpc_util.h"
#include "test_util.h"

#include <string.h>
#include <unistd.h>

#define NUMEL 4096
#define CALLS 96
#define EARLY_CAP (1 << 20)

static uint64_t x[CALLS][NUMEL], y[CALLS][NUMEL];
static uint64_t *out; /* shared: the CALLS products, written by party 0 */

static int body(veil_mpc_t *m, void *arg)
{
    (void)arg;
    const int self = veil_mpc_self(m), n = veil_mpc_nparties(m);
    const size_t dims[1] = {NUMEL};
    struct veil_sec sx[CALLS], sy[CALLS], z[CALLS];
    memset(sx, 0, sizeof sx);
    memset(sy, 0, sizeof sy);
    memset(z, 0, sizeof z);
    int rc = VEIL_OK;
    for (int c = 0; c < CALLS && rc == VEIL_OK; c++) {
        if (veil_mpc_computes(m))
            usleep(20000); /* the parties lag; the dealer deals as fast as it may */
        rc = veil_mpc_share_input(m, 0, self == 0 ? x[c] : NULL, 1, dims, 0, &sx[c]);
        if (rc == VEIL_OK)
            rc = veil_mpc_share_input(m, 1, self == 1 ? y[c] : NULL, 1, dims, 0, &sy[c]);
        if (rc == VEIL_OK)
            rc = veil_mpc_mul(m, &sx[c], &sy[c], &z[c]);
        /* The parties keep in step with each other (a party's wait includes its peers' opens of
         * this product), so only the dealer's corrections can pile up at a party. */
        if (rc == VEIL_OK && veil_mpc_computes(m))
            rc = veil_mpc_wait(m);
    }
    if (rc == VEIL_OK)
        rc = veil_mpc_wait(m);
    if (rc != VEIL_OK) {
        VT_CHECK(0, "products: %s", veil_last_error());
        return 1;
    }
    if (self == n - 1 && veil_mpc_computes(m)) { /* the designated party's credits */
        struct veil_net_stats st;
        veil_net_stats_get(veil_mpc_net(m), n, &st);
        VT_CHECK(st.msgs_sent >= CALLS, "%llu credit messages to the dealer for %d products of "
                 "32 KiB of correction each, step 8 KiB", (unsigned long long)st.msgs_sent, CALLS);
    }
    for (int c = 0; c < CALLS && rc == VEIL_OK; c++) {
        struct veil_pub r = {0};
        rc = veil_mpc_reveal(m, &z[c], -1, &r); /* to all: no one-way stream */
        if (rc == VEIL_OK)
            rc = veil_mpc_wait(m);
        if (rc == VEIL_OK && self == 0)
            memcpy(out + (size_t)c * NUMEL, veil_test_host(&r), NUMEL * 8);
        veil_mpc_release(m, &r);
    }
    VT_CHECK(rc == VEIL_OK, "reveal: %s", veil_last_error());
    for (int c = 0; c < CALLS; c++) {
        veil_mpc_release(m, &sx[c]);
        veil_mpc_release(m, &sy[c]);
        veil_mpc_release(m, &z[c]);
    }
    return veil_test_failures ? 1 : 0;
}

int main(void)
{
    static uint64_t ref[CALLS][NUMEL];
    for (int c = 0; c < CALLS; c++) {
        veil_test_random(100 + (uint64_t)c, x[c], NUMEL);
        veil_test_random(200 + (uint64_t)c, y[c], NUMEL);
        veil_ref_mul(NUMEL, x[c], y[c], ref[c]);
    }
    out = veil_test_mpc_shared((size_t)CALLS * NUMEL * 8);
    if (!out)
        return 1;
    for (int n = 2; n <= 3; n++) {
        struct veil_test_mpc_opts o = {.nparties = n,
                                       .material = VEIL_MPC_MAT_DEALER,
                                       .frac_bits = -1,
                                       .credit_step = 8 << 10,
                                       .credit_window = 64 << 10,
                                       .early_cap = EARLY_CAP};
        memset(out, 0, (size_t)CALLS * NUMEL * 8);
        if (veil_test_mpc_run(&o, body, NULL) != 0) {
            VT_CHECK(0, "N=%d: the run with flow control failed", n);
            continue;
        }
        VT_CHECK(memcmp(out, ref, sizeof ref) == 0, "N=%d: products differ from the oracle", n);
        veil_test_log("N=%d: %d products of %d elements under a %d KiB early cap: correct", n,
                      CALLS, NUMEL, EARLY_CAP >> 10);
    }
    /* Negative control: a window larger than the run's corrections (3 MiB) is no flow control;
     * the dealer outruns the lagging parties and the designated party's cap is exceeded. */
    struct veil_test_mpc_opts open_loop = {.nparties = 2,
                                           .material = VEIL_MPC_MAT_DEALER,
                                           .frac_bits = -1,
                                           .credit_step = 8 << 10,
                                           .credit_window = 64 << 20,
                                           .early_cap = EARLY_CAP};
    veil_test_log("negative control (its failure output below is expected):");
    VT_CHECK(veil_test_mpc_run(&open_loop, body, NULL) != 0,
             "without effective flow control the run should exceed the early-arrival cap");
    veil_test_mpc_shared_free(out, (size_t)CALLS * NUMEL * 8);
    return veil_test_status();
}

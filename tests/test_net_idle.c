/* Tests that idle StarPU workers sleep while a party waits on the network (net/idle.c): party 0
 * waits in veil_mpc_wait for an input that party 1 shares only after sleeping 1.5 s; over that
 * wait party 0's workers must have been paused for most of it (the paused seconds net/idle.c
 * counts: a pause may come before the wait and hold through it, since a kick resumes only for a
 * ready task) and party 0 used well under a core, and the input must arrive intact. With
 * VEIL_IDLE_PAUSE=0 (the second run) nothing is paused (counter unchanged) and the value arrives;
 * how much CPU that spinning worker gets depends on the host's load, so it is only printed
 * (VEIL_TEST_VERBOSE=1). A process with a CUDA worker must never pause (a paused CUDA driver moves
 * no data): on such a host the first run must show no pause either. 2 parties, real processes. */
#include "config.h"
#include "test_mpc_util.h"
#include "test_util.h"
#include "base/base_internal.h"
#include "net/net_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

static double *share_of_core; /* [run]: party 0's CPU seconds over wall seconds of the wait */
static uint64_t *pauses;      /* [run]: party 0's pauses during the wait */
static double *paused_share;  /* [run]: the share of the wait party 0's workers spent paused */
static int *accel;            /* party 0 has a worker that is not a CPU worker */
static int run_idx;

static double cpu_s(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + 1e-6 * (double)ru.ru_utime.tv_usec +
           (double)ru.ru_stime.tv_sec + 1e-6 * (double)ru.ru_stime.tv_usec;
}

static int body(veil_mpc_t *m, void *arg)
{
    (void)arg;
    const int self = veil_mpc_self(m);
    uint64_t v[4] = {1, 2, 3, 0xfedcba9876543210ull};
    const size_t dims[1] = {4};
    struct veil_sec x = {0};
    struct veil_pub out = {0};
    if (veil_mpc_wait(m) != VEIL_OK || veil_mpc_agree(m, 1, "start") != VEIL_OK)
        return 1;
    if (self == 1)
        usleep(1500 * 1000);
    const uint64_t p0 = veil_net_idle_pauses();
    const double c0 = cpu_s(), t0 = veil_now(), s0 = veil_net_idle_paused_s();
    int rc = veil_mpc_share_input(m, 1, self == 1 ? v : NULL, 1, dims, 0, &x);
    if (rc == VEIL_OK)
        rc = veil_mpc_reveal(m, &x, 0, &out);
    if (rc == VEIL_OK)
        rc = veil_mpc_wait(m);
    const double c1 = cpu_s(), t1 = veil_now();
    int fail = rc != VEIL_OK;
    if (rc == VEIL_OK && self == 0) {
        const uint64_t *got = veil_test_host(&out);
        for (int i = 0; i < 4; i++)
            fail |= got[i] != v[i];
        share_of_core[run_idx] = (c1 - c0) / (t1 - t0);
        pauses[run_idx] = veil_net_idle_pauses() - p0;
        paused_share[run_idx] = (veil_net_idle_paused_s() - s0) / (t1 - t0);
        *accel = starpu_worker_get_count() != starpu_cpu_worker_get_count();
    }
    veil_mpc_release(m, &x);
    veil_mpc_release(m, &out);
    if (fail)
        fprintf(stderr, "process %d: %s\n", self,
                rc != VEIL_OK ? veil_last_error() : "wrong value");
    return fail;
}

int main(void)
{
    share_of_core = veil_test_mpc_shared(2 * sizeof *share_of_core);
    pauses = veil_test_mpc_shared(2 * sizeof *pauses);
    paused_share = veil_test_mpc_shared(2 * sizeof *paused_share);
    accel = veil_test_mpc_shared(sizeof *accel);
    VT_CHECK(share_of_core && pauses && paused_share && accel, "shared memory");
    if (!share_of_core || !pauses || !paused_share || !accel)
        return 1;
    const struct veil_test_mpc_opts o = {.nparties = 2,
                                         .material = VEIL_MPC_MAT_TRUSTED_FIRST_PARTY,
                                         .frac_bits = -1,
                                         .timeout_s = 120};
    setenv("VEIL_IDLE_PAUSE", "1", 1);
    run_idx = 0;
    VT_CHECK(veil_test_mpc_run(&o, body, NULL) == 0, "paused run");
    setenv("VEIL_IDLE_PAUSE", "0", 1);
    run_idx = 1;
    VT_CHECK(veil_test_mpc_run(&o, body, NULL) == 0, "spinning run");
    if (getenv("VEIL_TEST_VERBOSE"))
        printf("party 0's CPU over a 1.5 s wait: %.2f of a core paused, %.2f spinning\n",
               share_of_core[0], share_of_core[1]);
    if (*accel) {
        VT_CHECK(pauses[0] == 0, "a process with a CUDA worker paused its workers %llu times",
                 (unsigned long long)pauses[0]);
    } else {
        /* paused for most of the wait: by a pause within it, or by one from before it that no
         * kick undid (a kick resumes only for a ready task, and none is until the input lands) */
        VT_CHECK(paused_share[0] > 0.5,
                 "the waiting party's workers were paused for %.2f of its wait (%llu pauses in "
                 "it), expected most of it",
                 paused_share[0], (unsigned long long)pauses[0]);
        /* a paused worker sleeps; the I/O thread's heartbeats and the 1 ms check cost a few % */
        VT_CHECK(share_of_core[0] > 0 && share_of_core[0] < 0.35,
                 "a waiting party used %.2f of a core with its worker paused (expected < 0.35)",
                 share_of_core[0]);
    }
    VT_CHECK(pauses[1] == 0, "VEIL_IDLE_PAUSE=0 still paused the workers %llu times",
             (unsigned long long)pauses[1]);
    veil_test_mpc_shared_free(share_of_core, 2 * sizeof *share_of_core);
    veil_test_mpc_shared_free(pauses, 2 * sizeof *pauses);
    veil_test_mpc_shared_free(accel, sizeof *accel);
    return veil_test_status();
}

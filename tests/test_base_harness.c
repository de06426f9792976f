/* Tests the multi-process harness: each process gets its identity and distinct loopback
 * endpoints (with a listening socket already bound to its own), output is captured per process,
 * a failing party is named, a hanging party is killed at the time bound, the grace period stops
 * the rest after a failure, exec mode passes the identity to another program,
 * VEIL_HARNESS_NO_TIMEOUT sets no bound, and a stop request (a caught signal) is forwarded to every
 * process. The pin option: the split of the CPUs (veil_harness_cpu_share) on hand-checked cases,
 * and in real children (Linux) each process's allowed CPUs are its share of the harness's (disjoint
 * while there are CPUs enough, the harness's own set with pin off or a share smaller than ncpu). */
#include "config.h"
#include "base/base_internal.h"
#include "base/harness.h"
#include "test_util.h"
#include "veil.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#ifdef __linux__
#include <sched.h>
#endif

static int report_identity(const struct veil_harness_party *me, void *arg)
{
    (void)arg;
    struct veil_harness_party env;
    if (veil_harness_party_from_env(&env) != VEIL_OK) {
        printf("env error: %s\n", veil_last_error());
        return 3;
    }
    if (env.id != me->id || env.nparties != me->nparties || env.is_dealer != me->is_dealer ||
        strcmp(env.session, me->session) != 0 || strcmp(env.endpoints[me->id], me->endpoints[me->id]))
        return 4;
    /* The reserved socket is ours, listening on our endpoint's port. */
    struct sockaddr_in a;
    socklen_t len = sizeof a;
    int accepting = 0;
    socklen_t alen = sizeof accepting;
    if (env.listen_fd != me->listen_fd || me->listen_fd < 0 ||
        getsockname(me->listen_fd, (struct sockaddr *)&a, &len) != 0 ||
        getsockopt(me->listen_fd, SOL_SOCKET, SO_ACCEPTCONN, &accepting, &alen) != 0 ||
        !accepting || ntohs(a.sin_port) != atoi(strrchr(me->endpoints[me->id], ':') + 1))
        return 5;
    const char *ncpu = getenv("STARPU_NCPU"), *home = getenv("STARPU_HOME");
    printf("id=%d dealer=%d n=%d ep=%s ncpu=%s home=%s\n", me->id, me->is_dealer, me->nparties,
           me->endpoints[me->id], ncpu ? ncpu : "-", home ? "set" : "-");
    return 0;
}

static int fail_party_one(const struct veil_harness_party *me, void *arg)
{
    (void)arg;
    if (me->id == 1) {
        fprintf(stderr, "party one gives up\n");
        return 5;
    }
    return 0;
}

static int hang_party_zero(const struct veil_harness_party *me, void *arg)
{
    (void)arg;
    if (me->id == 0)
        for (;;)
            pause();
    return 0;
}

static int fail_then_others_hang(const struct veil_harness_party *me, void *arg)
{
    (void)arg;
    if (me->id == 0)
        return 2;
    for (;;)
        pause();
}

static int nap_then_exit(const struct veil_harness_party *me, void *arg)
{
    (void)me, (void)arg;
    usleep(300 * 1000);
    return 0;
}

static int hang_all(const struct veil_harness_party *me, void *arg)
{
    (void)me, (void)arg;
    for (;;)
        pause();
    return 0;
}

static int crash_party(const struct veil_harness_party *me, void *arg)
{
    (void)arg;
    if (me->id == 0)
        raise(SIGKILL); /* SIGSEGV would be caught by AddressSanitizer in sanitizer builds */
    return 0;
}

/* The split on hand-checked cases: (ncpus, nprocs) -> each process's (first, count). */
static void check_cpu_share(void)
{
    static const struct {
        int ncpus, nprocs, want[4][2];
    } cases[] = {
        {2, 2, {{0, 1}, {1, 1}}},
        {2, 3, {{0, 1}, {1, 1}, {0, 1}}},   /* fewer CPUs: one each in turn */
        {16, 3, {{0, 6}, {6, 5}, {11, 5}}}, /* 16 = 6 + 5 + 5 */
        {5, 2, {{0, 3}, {3, 2}}},
        {1, 2, {{0, 1}, {0, 1}}},
        {8, 4, {{0, 2}, {2, 2}, {4, 2}, {6, 2}}},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
        for (int i = 0; i < cases[c].nprocs; i++) {
            int first = -1, count = -1;
            veil_harness_cpu_share(cases[c].ncpus, i, cases[c].nprocs, &first, &count);
            VT_CHECK(first == cases[c].want[i][0] && count == cases[c].want[i][1],
                     "%d CPUs over %d processes: process %d gets [%d, +%d), expected [%d, +%d)",
                     cases[c].ncpus, cases[c].nprocs, i, first, count, cases[c].want[i][0],
                     cases[c].want[i][1]);
        }
    VT_CHECK(veil_harness_pin_share(16, 3) == 5 && veil_harness_pin_share(2, 3) == 1 &&
                 veil_harness_pin_share(4, 2) == 2,
             "the smallest share");
}

#ifdef __linux__
/* Prints this process's allowed CPUs as a bit mask over the first 64 ("cpus=0x..."). */
static int report_cpus(const struct veil_harness_party *me, void *arg)
{
    (void)me;
    (void)arg;
    cpu_set_t s;
    if (sched_getaffinity(0, sizeof s, &s) != 0)
        return 3;
    unsigned long long mask = 0;
    for (int c = 0; c < 64; c++)
        if (CPU_ISSET(c, &s))
            mask |= 1ull << c;
    printf("cpus=0x%llx\n", mask);
    return 0;
}

/* Runs nparties (+ dealer) with the pin option and ncpu; returns each process's mask in got. */
static int pinned_masks(int nparties, int dealer, int pin, int ncpu, unsigned long long *got)
{
    struct veil_harness_result res[VEIL_HARNESS_MAX_PROCS];
    struct veil_harness_opts o = {.nparties = nparties,
                                  .dealer = dealer,
                                  .timeout_s = 30,
                                  .grace_s = -1,
                                  .pin = pin,
                                  .ncpu = ncpu};
    const int n = nparties + dealer;
    int rc = veil_harness_run(&o, report_cpus, NULL, res);
    VT_CHECK(rc == VEIL_OK, "pin run: %s", veil_last_error());
    for (int i = 0; i < n; i++)
        if (rc != VEIL_OK || sscanf(res[i].output, "cpus=0x%llx", &got[i]) != 1)
            got[i] = 0;
    veil_harness_results_free(res, rc == VEIL_OK ? n : 0);
    return rc;
}

static void check_pin(void)
{
    cpu_set_t all;
    VT_CHECK(sched_getaffinity(0, sizeof all, &all) == 0, "sched_getaffinity");
    if (CPU_COUNT(&all) > 64) { /* the masks below hold 64 CPUs */
        veil_test_log("more than 64 CPUs: the pin check is skipped");
        return;
    }
    int cpus[64], m = 0;
    unsigned long long mine = 0;
    for (int c = 0; c < 64; c++)
        if (CPU_ISSET(c, &all)) {
            cpus[m++] = c;
            mine |= 1ull << c;
        }
    unsigned long long got[VEIL_HARNESS_MAX_PROCS];
    /* 2 parties and the dealer: each its share of this process's CPUs, by the split; with
     * fewer than 3 CPUs the parties split them and the dealer keeps them all */
    if (pinned_masks(2, 1, 1, 0, got) == VEIL_OK)
        for (int i = 0; i < 3; i++) {
            const int n = m >= 3 ? 3 : 2;
            int first, count;
            veil_harness_cpu_share(m, i, n, &first, &count);
            unsigned long long want = 0;
            for (int k = first; m > 1 && k < first + count; k++)
                want |= 1ull << cpus[k];
            if (m <= 1 || (i == 2 && n == 2))
                want = mine; /* one CPU: nothing to split; the dealer beside fewer CPUs */
            VT_CHECK(got[i] == want, "pinned process %d: CPUs 0x%llx, expected 0x%llx", i, got[i],
                     want);
        }
    /* pin off, and pin with a share smaller than the workers: every CPU */
    if (pinned_masks(2, 0, 0, 0, got) == VEIL_OK)
        VT_CHECK(got[0] == mine && got[1] == mine, "unpinned: 0x%llx 0x%llx, expected 0x%llx",
                 got[0], got[1], mine);
    if (pinned_masks(2, 0, 1, m + 1, got) == VEIL_OK)
        VT_CHECK(got[0] == mine && got[1] == mine,
                 "a share smaller than --ncpu pins nothing: 0x%llx 0x%llx", got[0], got[1]);
}
#endif

int main(void)
{
    /* Timeouts of a few seconds are what this test checks; on a GPU host each process's CUDA
     * set-up (a context per process, under make -j) can take longer than that, and no part of
     * the test needs a GPU: StarPU starts without CUDA workers. */
    setenv("STARPU_NCUDA", "0", 1);
    struct veil_harness_result res[VEIL_HARNESS_MAX_PROCS];
    struct veil_harness_opts o = {.nparties = 3, .dealer = 1, .timeout_s = 30, .grace_s = -1};

    /* Identities, endpoints, environment, output capture. */
    int rc = veil_harness_run(&o, report_identity, NULL, res);
    VT_CHECK(rc == VEIL_OK, "identity run: %s", veil_last_error());
    char seen_ep[4][64];
    for (int i = 0; i < 4; i++) {
        int id, dealer, n;
        char ep[64], ncpu[8], home[8];
        VT_CHECK(res[i].exit_code == 0, "process %d exit %d: %s", i, res[i].exit_code, res[i].output);
        VT_CHECK(sscanf(res[i].output, "id=%d dealer=%d n=%d ep=%63s ncpu=%7s home=%7s", &id, &dealer,
                     &n, ep, ncpu, home) == 6,
              "output of %d parsed: %s", i, res[i].output);
        VT_CHECK(id == i && dealer == (i == 3) && n == 3, "identity of %d", i);
        VT_CHECK(strncmp(ep, "tcp://127.0.0.1:", 16) == 0, "loopback endpoint %s", ep);
        VT_CHECK(strcmp(ncpu, "1") == 0 && strcmp(home, "set") == 0, "StarPU environment");
        strcpy(seen_ep[i], ep);
        for (int j = 0; j < i; j++)
            VT_CHECK(strcmp(seen_ep[i], seen_ep[j]) != 0, "endpoints %d and %d differ", i, j);
    }
    veil_harness_results_free(res, 4);

    /* A failing party is named, with its status; its output is kept. */
    o.dealer = 0;
    rc = veil_harness_run(&o, fail_party_one, NULL, res);
    VT_CHECK(rc == VEIL_ERR_CHILD, "failure reported");
    VT_CHECK(strstr(veil_last_error(), "party 1 exited with status 5") != NULL, "message: %s",
          veil_last_error());
    VT_CHECK(strstr(res[1].output, "party one gives up") != NULL, "stderr captured");
    VT_CHECK(res[0].exit_code == 0 && res[2].exit_code == 0, "others succeeded");
    veil_harness_results_free(res, 3);

    /* A crash is reported with its signal. */
    o.nparties = 2;
    rc = veil_harness_run(&o, crash_party, NULL, res);
    VT_CHECK(rc == VEIL_ERR_CHILD && strstr(veil_last_error(), "party 0 killed by signal 9"),
          "crash named: %s", veil_last_error());
    veil_harness_results_free(res, 2);

    /* A hanging party is killed at the bound and named. */
    o.timeout_s = 1.0;
    double t0 = veil_now();
    rc = veil_harness_run(&o, hang_party_zero, NULL, res);
    double took = veil_now() - t0;
    VT_CHECK(rc == VEIL_ERR_TIMEOUT, "timeout reported");
    VT_CHECK(strstr(veil_last_error(), "party 0 still running") != NULL, "message: %s",
          veil_last_error());
    VT_CHECK(res[0].timed_out && !res[1].timed_out && res[1].exit_code == 0, "only party 0 killed");
    VT_CHECK(took < 20.0, "harness returned (%.1f s)", took);
    veil_harness_results_free(res, 2);

    /* With a grace period the others are stopped after the first failure, which is named. */
    o.timeout_s = 60;
    o.grace_s = 0.2;
    o.nparties = 3;
    rc = veil_harness_run(&o, fail_then_others_hang, NULL, res);
    VT_CHECK(rc == VEIL_ERR_CHILD && strstr(veil_last_error(), "party 0 exited with status 2"),
          "first failure named: %s", veil_last_error());
    VT_CHECK(res[1].killed_after_failure && res[2].killed_after_failure, "others killed after grace");
    veil_harness_results_free(res, 3);

    /* Exec mode. */
    o.grace_s = -1;
    o.nparties = 2;
    char *argv[] = {"/bin/sh", "-c", "echo \"exec $VEIL_PARTY_ID/$VEIL_NPARTIES\"; exit $VEIL_PARTY_ID",
                    NULL};
    rc = veil_harness_exec(&o, argv, res);
    VT_CHECK(rc == VEIL_ERR_CHILD, "party 1 exits 1");
    VT_CHECK(strstr(res[0].output, "exec 0/2") && strstr(res[1].output, "exec 1/2"), "exec output");
    veil_harness_results_free(res, 2);
    char *bad[] = {"/nonexistent/program", NULL};
    rc = veil_harness_exec(&o, bad, res);
    VT_CHECK(rc == VEIL_ERR_CHILD && res[0].exit_code == 127 &&
              strstr(res[0].output, "cannot execute"),
          "missing program reported");
    veil_harness_results_free(res, 2);

    /* No wall-clock limit: the processes run until they exit. */
    o.timeout_s = VEIL_HARNESS_NO_TIMEOUT;
    rc = veil_harness_run(&o, nap_then_exit, NULL, res);
    VT_CHECK(rc == VEIL_OK && !res[0].timed_out && !res[1].timed_out, "no limit: %s",
             veil_last_error());
    veil_harness_results_free(res, 2);

    /* A stop request (the caller's signal handler stored SIGTERM) reaches every process. */
    static volatile sig_atomic_t stop = SIGTERM;
    o.stop_signal = &stop;
    double t1 = veil_now();
    rc = veil_harness_run(&o, hang_all, NULL, res);
    VT_CHECK(rc == VEIL_ERR_CHILD && strstr(veil_last_error(), "stopped by signal 15"),
             "stop forwarded: %s", veil_last_error());
    VT_CHECK(res[0].stopped && res[1].stopped && res[0].exit_code == 128 + SIGTERM &&
                 res[1].exit_code == 128 + SIGTERM,
             "both got SIGTERM: %d %d", res[0].exit_code, res[1].exit_code);
    VT_CHECK(veil_now() - t1 < 4.0, "stopped at once (%.1f s)", veil_now() - t1);
    veil_harness_results_free(res, 2);
    o.stop_signal = NULL;
    o.timeout_s = 60;

    check_cpu_share();
#ifdef __linux__
    check_pin();
#endif

    /* Bad options. */
    o.nparties = 0;
    VT_CHECK(veil_harness_run(&o, report_identity, NULL, NULL) == VEIL_ERR_INVAL, "0 parties");
    return veil_test_status();
}

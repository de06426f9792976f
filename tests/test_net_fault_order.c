/* Tests the rule by which a failure message names first the process that failed first when the
 * news of two failures is at hand (net/peers.c, README's failure section), with 2 parties and the
 * dealer under CURVE (heartbeat 0.25 s, timeout 6 s): party 1 stops (SIGSTOP; a child it forked
 * sends SIGCONT 7.5 s later), and 3.6 s (0.6 timeouts) after party 1 stopped the dealer leaves
 * without closing its session (no goodbye, no abort: its connections just drop). Party 0, waiting
 * on a receive from party 1, hears of the dealer's drop first (about 3.9 s after the stop, 2 s
 * before party 1's silence reaches the timeout), but party 1 has been silent since before it for
 * more than half the timeout: party 0's error must be VEIL_ERR_PEER_LOST and say "party 1 lost:
 * silent for ..., then dealer (id 2) lost: ..." (party 1 named first, the dealer after it).
 * Without the rule it named the dealer alone. The dealer times its exit from the moment party 1
 * stopped (CLOCK_MONOTONIC, written to memory the three processes share) rather than from its own
 * open, so a slow start or fork of party 1 on a loaded machine (CI runs tests in parallel) cannot
 * make party 1's silence shorter than half the timeout; party 1 stops once the three sessions are
 * open (a count in that memory), so the dealer cannot leave while party 0 is still opening. */
#include "config.h"
#include "net_test_util.h"

#include <signal.h>
#include <starpu.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define TIMEOUT_S 6.0
#define DEALER_EXIT_S (0.6 * TIMEOUT_S) /* after party 1 stopped */
#define RESUME_S 7.5                    /* party 1 resumes: after party 0 gave up on it */

struct shared {
    atomic_int opened;         /* processes whose session is open */
    _Atomic double stopped_at; /* CLOCK_MONOTONIC seconds party 1 stops at; 0 before */
    struct net_test_keys keys;
};

static double mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void sleep_s(double s)
{
    struct timespec ts = {.tv_sec = (time_t)s, .tv_nsec = (long)((s - (double)(time_t)s) * 1e9)};
    while (nanosleep(&ts, &ts) != 0)
        ;
}

static int party(const struct veil_harness_party *me, void *arg)
{
    struct shared *sh = arg;
    struct veil_net_config cfg;
    veil_net_t *net = NULL;
    if (net_test_config(me, &sh->keys, 0.25, TIMEOUT_S, 6, &cfg))
        return 2;
    const int started = net_test_start(&cfg, NULL, &net);
    if (started)
        return started;
    atomic_fetch_add(&sh->opened, 1);
    if (me->is_dealer) {
        const double give_up = mono_s() + 30.0;
        double t;
        while ((t = atomic_load(&sh->stopped_at)) == 0 && mono_s() < give_up)
            sleep_s(0.01);
        if (t == 0) {
            fprintf(stderr, "FAIL: party 1 never reported stopping\n");
            _exit(5);
        }
        const double left = t + DEALER_EXIT_S - mono_s();
        if (left > 0)
            sleep_s(left);
        _exit(0); /* its connections drop; it says nothing */
    }
    if (me->id == 1) {
        const double give_up = mono_s() + 30.0; /* stops once all 3 are open */
        while (atomic_load(&sh->opened) < 3 && mono_s() < give_up)
            sleep_s(0.01);
        pid_t w = fork();
        if (w == 0) { /* async-signal-safe calls only in this child of a threaded process */
            struct timespec ts = {.tv_sec = (time_t)RESUME_S,
                                  .tv_nsec = (long)((RESUME_S - (time_t)RESUME_S) * 1e9)};
            while (nanosleep(&ts, &ts) != 0)
                ;
            kill(getppid(), SIGCONT);
            _exit(0);
        }
        if (w > 0) {
            atomic_store(&sh->stopped_at, mono_s());
            raise(SIGSTOP);
        }
        veil_net_close(&net); /* resumed: the session has failed meanwhile */
        starpu_shutdown();
        if (w > 0)
            waitpid(w, NULL, 0);
        return 0;
    }
    uint8_t buf[64];
    starpu_data_handle_t h;
    starpu_vector_data_register(&h, STARPU_MAIN_RAM, (uintptr_t)buf, sizeof buf, 1);
    int rc = veil_net_irecv(net, h, 1, 5);
    if (rc == VEIL_OK)
        rc = veil_net_wait_all(net);
    char msg[512];
    snprintf(msg, sizeof msg, "%s", rc ? veil_last_error() : "no error");
    starpu_data_unregister(h);
    veil_net_close(&net);
    starpu_shutdown();
    const char *p1 = strstr(msg, "party 1 lost: silent for"), *d = strstr(msg, "dealer (id 2)");
    if (rc != VEIL_ERR_PEER_LOST || !p1 || !d || d < p1 ||
        !strstr(msg, "then dealer (id 2) lost")) {
        fprintf(stderr, "FAIL: party 0 got %d '%s'; expected party 1 (stopped first) named "
                "before the dealer (whose connection dropped later)\n", rc, msg);
        return 1;
    }
    if (net_test_verbose())
        fprintf(stderr, "ok: %s\n", msg);
    return 0;
}

int main(void)
{
    /* Shared with the forked processes, which write the stop time there. */
    struct shared *sh =
        mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (sh == MAP_FAILED) {
        perror("mmap");
        return 1;
    }
    atomic_init(&sh->opened, 0);
    atomic_init(&sh->stopped_at, 0.0);
    if (net_test_keys_make(&sh->keys, 3))
        return 1;
    struct veil_harness_result res[3];
    struct veil_harness_opts o = {.nparties = 2,
                                  .dealer = 1,
                                  .timeout_s = 40,
                                  .grace_s = -1,
                                  .forward_output = net_test_verbose()};
    veil_harness_run(&o, party, sh, res);
    int bad = 0;
    for (int p = 0; p < 3; p++)
        if (res[p].exit_code != 0 || res[p].timed_out) {
            fprintf(stderr, "FAIL: process %d exit %d%s:\n%s\n", p, res[p].exit_code,
                    res[p].timed_out ? " (timed out)" : "", res[p].output ? res[p].output : "");
            bad = 1;
        }
    veil_harness_results_free(res, 3);
    return bad;
}

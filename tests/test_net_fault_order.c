/* Tests the rule by which a failure message names first the process that failed first when the
 * news of two failures is at hand (net/peers.c, README's failure section), with 2 parties and the
 * dealer under CURVE (heartbeat 0.25 s, timeout 4 s): party 1 stops (SIGSTOP; a child it forked
 * sends SIGCONT 5 s later), and 2.8 s after its open the dealer leaves without closing its session
 * (no goodbye, no abort: its connections just drop). Party 0, waiting on a receive from party 1,
 * hears of the dealer's drop first, but party 1 has been silent since before it: party 0's error
 * must be VEIL_ERR_PEER_LOST and say "party 1 lost: silent for ..., then dealer (id 2) lost: ..."
 * (party 1 named first, the dealer after it). Without the rule it named the dealer alone. */
#include "config.h"
#include "net_test_util.h"

#include <signal.h>
#include <starpu.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define TIMEOUT_S 4.0

static void sleep_s(double s)
{
    struct timespec ts = {.tv_sec = (time_t)s, .tv_nsec = (long)((s - (double)(time_t)s) * 1e9)};
    while (nanosleep(&ts, &ts) != 0)
        ;
}

static int party(const struct veil_harness_party *me, void *arg)
{
    const struct net_test_keys *keys = arg;
    struct veil_net_config cfg;
    veil_net_t *net = NULL;
    if (net_test_config(me, keys, 0.25, TIMEOUT_S, 6, &cfg))
        return 2;
    if (starpu_init(NULL) != 0)
        return 3;
    if (veil_net_open(&cfg, NULL, &net) != VEIL_OK) {
        fprintf(stderr, "open failed: %s\n", veil_last_error());
        starpu_shutdown();
        return 4;
    }
    if (me->is_dealer) {
        sleep_s(2.8);
        _exit(0); /* its connections drop; it says nothing */
    }
    if (me->id == 1) {
        pid_t w = fork();
        if (w == 0) { /* async-signal-safe calls only in this child of a threaded process */
            struct timespec ts = {.tv_sec = 5};
            nanosleep(&ts, NULL);
            kill(getppid(), SIGCONT);
            _exit(0);
        }
        if (w > 0)
            raise(SIGSTOP);
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
    struct net_test_keys keys;
    if (net_test_keys_make(&keys, 3))
        return 1;
    struct veil_harness_result res[3];
    struct veil_harness_opts o = {.nparties = 2,
                                  .dealer = 1,
                                  .timeout_s = 40,
                                  .grace_s = -1,
                                  .forward_output = net_test_verbose()};
    veil_harness_run(&o, party, &keys, res);
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

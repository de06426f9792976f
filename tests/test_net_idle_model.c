/* Tests that idle StarPU workers sleep through every wait of a secure model run, not only in
 * veil_mpc_wait (net/idle.c): the test MLP (dense, relu, dense; 2 parties and the dealer, real
 * processes) compiled with look-ahead 0, so party 0's walk waits on the first layer's marker
 * before it submits the second (graph/secure/lookahead.c). Party 1 starts its run only after
 * sleeping 1.5 s, so party 0 spends that time in the marker's wait. Over its veil_run party 0
 * must have paused its workers (the pause counter moved) for at least 1.0 s in all (a marker wait
 * that spun would leave only the short final barrier paused), must have used well under a core,
 * and must reveal the plaintext FIXED reference within the net's tolerance. With
 * VEIL_IDLE_PAUSE=0 (the second session) nothing is paused and the output is the same; how much
 * CPU that spinning worker gets depends on the host's load, so it is only printed
 * (VEIL_TEST_VERBOSE=1). A process with a CUDA worker never pauses (a paused CUDA driver moves
 * no data, net/idle.c): where party 0 has one, the first session must show no pause either. */
#include "config.h"
#include "test_graph_nets.h"
#include "test_graph_util.h"
#include "test_mpc_util.h"
#include "test_util.h"
#include "base/base_internal.h"
#include "net/idle.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

#define NOUT 40 /* the MLP's logits: 4 x 10 */

struct seen {                /* party 0's view of one session (shared across fork) */
    double share_of_core;    /* CPU seconds over wall seconds of veil_run */
    double paused_s, wall_s; /* seconds paused during veil_run, and its length */
    uint64_t pauses;         /* pauses during veil_run */
    int accel;               /* party 0 has a worker that is not a CPU worker */
    double y[NOUT];          /* the revealed logits */
    int done;
};

static struct veil_test_net net;
static struct seen *seen;
static int session_idx;

static double cpu_s(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + 1e-6 * (double)ru.ru_utime.tv_usec +
           (double)ru.ru_stime.tv_sec + 1e-6 * (double)ru.ru_stime.tv_usec;
}

static int child(const struct veil_harness_party *me, void *arg)
{
    (void)arg;
    veil_party_t *pt = veil_party_open(net.plan, NULL);
    if (!pt) {
        fprintf(stderr, "process %d: open: %s\n", me->id, veil_last_error());
        return 3;
    }
    double y[NOUT], cls[4];
    double *outs[2] = {y, cls};
    if (me->id == 1)
        usleep(1500 * 1000);
    const uint64_t p0 = veil_net_idle_pauses();
    const double s0 = veil_net_idle_paused_s(), c0 = cpu_s(), t0 = veil_now();
    int rc = veil_run(pt, me->is_dealer ? NULL : net.feeds, me->is_dealer ? 0 : net.nfeeds, outs);
    const double c1 = cpu_s(), t1 = veil_now();
    int code = 0;
    if (rc != VEIL_OK) {
        fprintf(stderr, "process %d: run: %s\n", me->id, veil_last_error());
        code = 4;
    } else if (me->id == 0) {
        struct seen *s = &seen[session_idx];
        s->share_of_core = (c1 - c0) / (t1 - t0);
        s->paused_s = veil_net_idle_paused_s() - s0;
        s->wall_s = t1 - t0;
        s->pauses = veil_net_idle_pauses() - p0;
        s->accel = starpu_worker_get_count() != starpu_cpu_worker_get_count();
        for (int i = 0; i < NOUT; i++)
            s->y[i] = y[i];
        s->done = 1;
    }
    if (veil_party_close(&pt) != VEIL_OK && code == 0)
        code = 5;
    return code;
}

/* The largest |revealed - reference| of a session. */
static double max_err(const struct seen *s)
{
    double e = 0;
    for (int i = 0; i < NOUT; i++)
        e = fmax(e, fabs(s->y[i] - net.want[0][i]));
    return e;
}

int main(void)
{
    veil_test_net_lookahead = 0;
    veil_test_net_mlp(&net);
    if (!net.plan)
        return 1;
    veil_test_net_reference(&net);
    seen = veil_test_mpc_shared(2 * sizeof *seen);
    VT_CHECK(seen != NULL, "shared memory");
    if (!seen)
        return 1;
    const struct veil_test_graph_opts o = {.nparties = 2, .dealer = 1, .timeout_s = 120};
    setenv("VEIL_IDLE_PAUSE", "1", 1);
    session_idx = 0;
    VT_CHECK(veil_test_graph_run(&o, child, NULL, NULL) == 0, "paused session");
    setenv("VEIL_IDLE_PAUSE", "0", 1);
    session_idx = 1;
    VT_CHECK(veil_test_graph_run(&o, child, NULL, NULL) == 0, "spinning session");
    unsetenv("VEIL_IDLE_PAUSE");
    const struct seen *p = &seen[0], *s = &seen[1];
    if (veil_test_verbose())
        printf("party 0's veil_run: paused %.2f s of %.2f s (%llu pauses), %.2f of a core; "
               "spinning: %.2f of a core over %.2f s\n",
               p->paused_s, p->wall_s, (unsigned long long)p->pauses, p->share_of_core,
               s->share_of_core, s->wall_s);
    VT_CHECK(p->done && s->done, "party 0 did not finish both runs");
    VT_CHECK(p->done && max_err(p) <= net.tol, "paused: max error %g > %g", max_err(p), net.tol);
    VT_CHECK(s->done && max_err(s) <= net.tol, "spinning: max error %g > %g", max_err(s), net.tol);
    if (p->accel) {
        VT_CHECK(p->pauses == 0, "a process with a CUDA worker paused its workers %llu times",
                 (unsigned long long)p->pauses);
    } else {
        VT_CHECK(p->pauses >= 1, "the waiting party never paused its workers");
        /* party 1 slept 1.5 s before its run: party 0 waited that long on the first layer's
         * marker */
        VT_CHECK(p->paused_s >= 1.0, "the workers were paused only %.2f s of a %.2f s run that "
                 "waited 1.5 s on a peer (the look-ahead's marker wait spun?)", p->paused_s,
                 p->wall_s);
        VT_CHECK(p->share_of_core > 0 && p->share_of_core < 0.35,
                 "a waiting party used %.2f of a core with its worker paused (expected < 0.35)",
                 p->share_of_core);
    }
    VT_CHECK(s->pauses == 0 && s->paused_s == 0,
             "VEIL_IDLE_PAUSE=0 still paused the workers %llu times (%.3f s)",
             (unsigned long long)s->pauses, s->paused_s);
    veil_test_mpc_shared_free(seen, 2 * sizeof *seen);
    veil_test_net_free(&net);
    return veil_test_status();
}

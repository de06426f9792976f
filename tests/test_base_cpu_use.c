/*
 * Tests the threads' CPU accounting of a traced run's profile (base/cpu_use.c) on threads of
 * this process whose work is known. Before the first snapshot the thread named like a StarPU
 * worker ("CPU 7") burns 15 ms of its CPU clock and the snapshotting thread 10 ms, which must not
 * count. Between two snapshots: "CPU 7" burns 30 ms, one named like ZeroMQ's ("ZMQbg/IO/0") 20
 * ms, one named "veil-net" and one "veil-wipe" sleep, a thread started after the first snapshot
 * ("CUDA 1") burns 10 ms and the snapshotting thread itself 10 ms; then each role's CPU time must
 * hold what its threads burned (at least that, at most that plus 10 ms, since nothing else
 * runs), the sleepers' roles under 2 ms, the roles add up to the total, busy_pct is the total
 * over the window and at most 100 %. Two unnamed threads pinned to one CPU each burn 20 ms: the
 * "other" role waited for that CPU at least 10 ms. A process of more than VEIL_CPU_SNAP_THREADS
 * threads gets no snapshot (VEIL_ERR_UNSUPPORTED), and the role names are the documented ones.
 */
#include "config.h"
#include "base/cpu_use.h"
#include "test_util.h"

#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double thread_cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Burns s seconds of the calling thread's own CPU time. */
static void burn(double s)
{
    const double end = thread_cpu_s() + s;
    volatile uint64_t x = 1;
    while (thread_cpu_s() < end)
        for (int i = 0; i < 1000; i++)
            x = x * 6364136223846793005u + 1442695040888963407u;
}

struct worker {
    const char *name;
    double pre_s;  /* burnt before the first snapshot (must not count) */
    double burn_s; /* between the snapshots; 0: sleeps until told to end */
    int cpu;       /* >= 0: pinned to that CPU */
    pthread_t th;
};

static struct worker worker_of(const char *name, double pre_s, double burn_s, int cpu)
{
    return (struct worker){.name = name, .pre_s = pre_s, .burn_s = burn_s, .cpu = cpu};
}

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int phase; /* 0: wait, 1: burn, 2: end */
static int named, burnt;

static void *work(void *arg)
{
    struct worker *w = arg;
    if (w->name)
        pthread_setname_np(pthread_self(), w->name);
    if (w->cpu >= 0) {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(w->cpu, &set);
        pthread_setaffinity_np(pthread_self(), sizeof set, &set);
    }
    if (w->pre_s > 0)
        burn(w->pre_s);
    pthread_mutex_lock(&mu);
    named++;
    pthread_cond_broadcast(&cv);
    while (phase == 0)
        pthread_cond_wait(&cv, &mu);
    pthread_mutex_unlock(&mu);
    if (w->burn_s > 0)
        burn(w->burn_s);
    pthread_mutex_lock(&mu);
    burnt++;
    pthread_cond_broadcast(&cv);
    while (phase < 2)
        pthread_cond_wait(&cv, &mu);
    pthread_mutex_unlock(&mu);
    return NULL;
}

static void set_phase(int p)
{
    pthread_mutex_lock(&mu);
    phase = p;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
}

static void wait_count(int *counter, int n)
{
    pthread_mutex_lock(&mu);
    while (*counter < n)
        pthread_cond_wait(&cv, &mu);
    pthread_mutex_unlock(&mu);
}

static void check_roles(void)
{
    const char *want[VEIL_CPU_ROLE_COUNT] = {"workers", "submit", "net", "zmq", "wiper", "other"};
    for (int r = 0; r < VEIL_CPU_ROLE_COUNT; r++)
        VT_CHECK(!strcmp(veil_cpu_role_name(r), want[r]), "role %d is named '%s', not '%s'", r,
                 veil_cpu_role_name(r), want[r]);
    VT_CHECK(!strcmp(veil_cpu_role_name(VEIL_CPU_ROLE_COUNT), "?"), "an unknown role's name");
}

static void check_use(void)
{
    cpu_set_t set;
    sched_getaffinity(0, sizeof set, &set);
    const int pin = CPU_ISSET(0, &set) ? 0 : -1; /* both unnamed burners on one CPU, if allowed */
    struct worker w[] = {
        worker_of("CPU 7", 0.015, 0.030, -1), worker_of("ZMQbg/IO/0", 0, 0.020, -1),
        worker_of("veil-net", 0, 0, -1),      worker_of("veil-wipe", 0, 0, -1),
        worker_of(NULL, 0, 0.020, pin),       worker_of(NULL, 0, 0.020, pin)};
    const int nw = (int)(sizeof w / sizeof *w);
    for (int i = 0; i < nw; i++)
        if (pthread_create(&w[i].th, NULL, work, &w[i]) != 0) {
            VT_CHECK(0, "pthread_create failed");
            return;
        }
    wait_count(&named, nw);
    burn(0.010); /* before the first snapshot: not the window's */
    static struct veil_cpu_snap a, b;
    VT_CHECK(veil_cpu_snapshot(&a) == VEIL_OK, "first snapshot: %s", veil_last_error());
    VT_CHECK(a.n == nw + 1, "first snapshot: %d threads, expected %d", a.n, nw + 1);
    struct worker late = worker_of("CUDA 1", 0, 0.010, -1);
    set_phase(1);
    VT_CHECK(pthread_create(&late.th, NULL, work, &late) == 0, "pthread_create failed");
    burn(0.010); /* the snapshotting thread: the submitting role */
    wait_count(&burnt, nw + 1);
    VT_CHECK(veil_cpu_snapshot(&b) == VEIL_OK, "second snapshot: %s", veil_last_error());
    struct veil_cpu_use u;
    veil_cpu_use_between(&a, &b, &u);
    set_phase(2);
    for (int i = 0; i < nw; i++)
        pthread_join(w[i].th, NULL);
    pthread_join(late.th, NULL);

    const double want[VEIL_CPU_ROLE_COUNT] = {[VEIL_CPU_WORKERS] = 0.040,
                                              [VEIL_CPU_SUBMIT] = 0.010,
                                              [VEIL_CPU_ZMQ] = 0.020,
                                              [VEIL_CPU_OTHER] = 0.040};
    double sum = 0;
    for (int r = 0; r < VEIL_CPU_ROLE_COUNT; r++) {
        const double lo = want[r] > 0 ? want[r] - 1e-4 : 0,
                     hi = want[r] > 0 ? want[r] + 0.010 : 0.002;
        VT_CHECK(u.cpu_s[r] >= lo && u.cpu_s[r] <= hi,
                 "role %s: %.6f s on a CPU, expected "
                 "%.3f to %.3f",
                 veil_cpu_role_name(r), u.cpu_s[r], lo, hi);
        VT_CHECK(u.wait_s[r] >= 0, "role %s: waited %.6f s", veil_cpu_role_name(r), u.wait_s[r]);
        sum += u.cpu_s[r];
    }
    VT_CHECK(u.slices[VEIL_CPU_WORKERS] >= 2, "the workers were put on a CPU %llu times",
             (unsigned long long)u.slices[VEIL_CPU_WORKERS]);
    VT_CHECK(fabs(sum - u.total_s) < 1e-12, "roles %.9f s, total %.9f s", sum, u.total_s);
    VT_CHECK(u.cpus == CPU_COUNT(&set), "%d CPUs, the affinity mask has %d", u.cpus,
             CPU_COUNT(&set));
    VT_CHECK(u.window_s >= 0.030 && u.window_s == b.t_end - a.t_begin,
             "window %.6f s (snapshots %.6f to %.6f)", u.window_s, a.t_begin, b.t_end);
    VT_CHECK(
        fabs(u.busy_pct - 100 * u.total_s / (u.window_s * u.cpus)) < 1e-9 && u.busy_pct <= 100.5,
        "busy %.3f %%, total %.6f s over %.6f s x %d", u.busy_pct, u.total_s, u.window_s, u.cpus);
    if (pin >= 0) /* two threads burning 20 ms each on one CPU: one waited for the other */
        VT_CHECK(u.wait_s[VEIL_CPU_OTHER] >= 0.010, "the pinned pair waited %.6f s for the CPU",
                 u.wait_s[VEIL_CPU_OTHER]);
    veil_test_log("cpu use: %d CPUs, window %.3f ms, busy %.1f %%; workers %.3f ms, submit %.3f, "
                  "zmq %.3f, other %.3f (waited %.3f), net %.3f, wiper %.3f",
                  u.cpus, 1e3 * u.window_s, u.busy_pct, 1e3 * u.cpu_s[VEIL_CPU_WORKERS],
                  1e3 * u.cpu_s[VEIL_CPU_SUBMIT], 1e3 * u.cpu_s[VEIL_CPU_ZMQ],
                  1e3 * u.cpu_s[VEIL_CPU_OTHER], 1e3 * u.wait_s[VEIL_CPU_OTHER],
                  1e3 * u.cpu_s[VEIL_CPU_NET], 1e3 * u.cpu_s[VEIL_CPU_WIPER]);
}

static void *sleeper(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&mu);
    while (phase < 3)
        pthread_cond_wait(&cv, &mu);
    pthread_mutex_unlock(&mu);
    return NULL;
}

/* More threads than a snapshot holds: no snapshot, rather than a partial count. */
static void check_too_many(void)
{
    enum { N = VEIL_CPU_SNAP_THREADS + 2 };
    static pthread_t th[N];
    int made = 0;
    phase = 0;
    for (; made < N; made++)
        if (pthread_create(&th[made], NULL, sleeper, NULL) != 0)
            break;
    if (made == N) {
        static struct veil_cpu_snap s;
        VT_CHECK(veil_cpu_snapshot(&s) == VEIL_ERR_UNSUPPORTED,
                 "a snapshot of %d threads was taken", N + 1);
    } else {
        veil_test_log("only %d threads could be started: the limit is not checked", made);
    }
    set_phase(3);
    for (int i = 0; i < made; i++)
        pthread_join(th[i], NULL);
}

int main(void)
{
    check_roles();
    check_use();
    check_too_many();
    return veil_test_status();
}

/*
 * idle.c — idle StarPU workers sleep while this process waits (contracts in net/idle.h).
 * Debian's StarPU 1.3.10 has non-blocking drivers: an idle CPU worker spins (its back-off is a
 * few dozen `pause` instructions, STARPU_BACKOFF_MIN/MAX, never a sleep), so on a host with as
 * many workers as cores a spinning worker of one party delays the network threads of the others
 * by a scheduler tick. starpu_pause() makes every worker sleep at the top of its loop (a condition
 * variable) until starpu_resume(). Every blocking wait of a party is a loop around
 * veil_net_idle_poll: it pauses when no task is ready or running (starpu_task_nready() == 0:
 * StarPU counts a task from its release to its end, so 0 means every remaining task waits on a
 * message), and resumes when it sees a ready task (one submitted by another thread: looked for
 * every VEIL_NET_IDLE_POLL_MS while paused) and before the wait returns.
 *
 * THE IDLE HOOK. A waiter looks only every VEIL_NET_IDLE_POLL_MS, and nobody looks while the
 * process computes or submits. So while a network session is open (veil_net_idle_session_open ..
 * close) or someone waits (begin .. end), StarPU's idle hook makes the same test on the idle
 * worker itself, at its first empty turn (StarPU 1.3 calls idle hooks from the CPU driver when it
 * found no task, holding no lock): the workers sleep as soon as the last task ends, instead of
 * spinning until a waiter looks — or, outside waits, for good. Whatever can make a task ready
 * then kicks them, and a kick resumes them when it finds a task ready: the I/O thread right after
 * each handle it releases (veil_net_req_done: a landed message or a finished send), every
 * submission of a Veil task (veil_net_idle_kick after starpu_task_insert / submit in codelets/ and
 * tasks/), and the application thread's releases of acquired data (tasks/mpc.c,
 * graph/secure/checkpoint.c); a task's end cannot, since nothing runs while nready is 0. A
 * readiness Veil misses is caught by the next waiter's look. StarPU's pause is per process, so this
 * state is too. A process with a CUDA worker never pauses (may_pause: a paused CUDA driver moves no
 * data between the GPU and main RAM). The blocking calls left outside it wait on nothing remote:
 * starpu_task_wait_for_all in veil_net_wait_all runs once no message is pending (every task left
 * can run, so the workers are resumed for it), and the acquires of revealed outputs and
 * checkpointed shares (graph/secure) come after that barrier.
 *
 * ORDERING. mu orders a waiter's or the idle hook's "nothing ready, pause" against a kick's
 * "released (or submitted), resume": a release that makes a task ready before the waiter looks is
 * seen by it (StarPU counts a task ready before the release returns, and before its producer's
 * count drops, so a chain of local tasks never shows 0 in between); one after is followed by the
 * kick, which takes mu after the pause. No ready task is missed, and no one waits on a worker: the
 * callback run by StarPU (veil_net_idle_done_cb) and the idle hook only take mu, the hook holding
 * no StarPU lock; under mu the waiter, the kick and the hook call only starpu_task_nready,
 * starpu_pause and starpu_resume, which take no lock a callback's thread could hold; net's waiter
 * holds net->mu outside mu, and nobody takes net->mu under mu. The hook blocks on mu rather than
 * trying it: on a host with fewer cores than busy threads a kick or waiter holding mu can lose its
 * core, and a worker that only tried would spin through its turns on that core until the holder
 * ran again (measured: 97 % of 300,000 hook turns per LeNet-5 session found mu taken).
 */
#include "config.h"
#include "base/base_internal.h"
#include "base/env.h"
#include "net/idle.h"

#include <pthread.h>
#include <sched.h>
#include <time.h>

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER; /* done callbacks broadcast it */
static int paused;        /* written under mu; the idle hook peeks at it without mu */
static int holders;       /* open sessions + threads between begin and end (under mu) */
static int hook_id = -1;  /* the idle hook's StarPU id while holders > 0 */
static uint64_t pauses;   /* how many times the workers were paused */
static double paused_at;  /* veil_now() of the current pause */
static double paused_sum; /* seconds paused before the current pause */

static void resume_locked(void)
{
    __atomic_store_n(&paused, 0, __ATOMIC_RELAXED);
    paused_sum += veil_now() - paused_at;
    starpu_resume();
}

uint64_t veil_net_idle_pauses(void)
{
    pthread_mutex_lock(&mu);
    const uint64_t n = pauses;
    pthread_mutex_unlock(&mu);
    return n;
}

double veil_net_idle_paused_s(void)
{
    pthread_mutex_lock(&mu);
    const double s = paused_sum + (paused ? veil_now() - paused_at : 0);
    pthread_mutex_unlock(&mu);
    return s;
}

void veil_net_idle_kick(void)
{
    /* No broadcast: a kick runs for every message, and the waiters need no wake-up for it (it
     * resumes the workers itself; a waiter looks again within VEIL_NET_IDLE_POLL_MS). Only when
     * the release made a task ready (StarPU counts it before the release returns, ORDERING
     * above): a resumed worker that finds nothing pauses again at its first empty turn, so
     * resuming for a release that readied nothing (the first of a round's receives, a finished
     * send) was a wake-up of the worker for nothing. */
    pthread_mutex_lock(&mu);
    if (paused && starpu_task_nready() > 0)
        resume_locked();
    pthread_mutex_unlock(&mu);
}

/* Whether this process may pause its workers at all. A paused CUDA driver (StarPU 1.3: its loop
 * starts with _starpu_may_pause, before __starpu_datawizard_progress) moves no data between the
 * GPU and main RAM, so a send whose data the GPU holds, or a task whose input must be copied,
 * would wait for the next resume: a process with any worker that is not a CPU worker never
 * pauses. */
static int may_pause(void)
{
    return starpu_worker_get_count() == starpu_cpu_worker_get_count();
}

/* Pauses the workers if nothing is ready or running; mu held. */
static void pause_if_idle_locked(void)
{
    if (!paused && starpu_task_nready() == 0 && may_pause()) {
        starpu_pause(); /* pause_depth += 1: returns at once, also on a worker */
        __atomic_store_n(&paused, 1, __ATOMIC_RELAXED);
        paused_at = veil_now();
        pauses++;
    }
}

/* veil_net_idle_poll with mu held. */
static long poll_locked(long busy_ms)
{
    if (!paused)
        pause_if_idle_locked();
    else if (starpu_task_nready() > 0)
        resume_locked();
    return paused ? VEIL_NET_IDLE_POLL_MS : busy_ms;
}

/* StarPU's idle hook (registered while holders > 0): an idle CPU worker calls it at each empty
 * turn of its loop, holding no StarPU lock. Pauses at once when nothing is ready or running.
 * Cheap when paused (one relaxed load); it waits for mu, held only for a few calls into StarPU
 * (ORDERING above: a holder never waits on a worker), so it sleeps when the holder lost its core
 * instead of spinning on that core. With several CPU
 * workers each looks at most every HOOK_LOOK_S, so it spins at most that long after its last
 * task: starpu_task_nready takes the mutex StarPU's every push and task end take, which many idle
 * workers beside a few busy ones would otherwise hammer. A lone worker looks at every turn (on
 * this 2-core VM the 100 us cost mul_fixed of 10^5 about 10 %). */
#define HOOK_LOOK_S 100e-6
static int hook_many; /* more than one CPU worker: set when the hook is registered */
static unsigned idle_hook(void *arg)
{
    (void)arg;
    static __thread double next_look;
    if (__atomic_load_n(&paused, __ATOMIC_RELAXED))
        return 1;
    if (__atomic_load_n(&hook_many, __ATOMIC_RELAXED)) {
        const double now = veil_now();
        if (now < next_look)
            return 1;
        next_look = now + HOOK_LOOK_S;
    }
    pthread_mutex_lock(&mu);
    if (holders > 0)
        pause_if_idle_locked();
    const int busy = holders > 0 && !paused;
    pthread_mutex_unlock(&mu);
    /* Something is ready or running, yet this worker found nothing to run: a task it popped
     * waits for its input (StarPU calls idle hooks then too) or another thread is about to push.
     * StarPU would spin for it; let the threads that can end the wait have the core meanwhile
     * (LeNet-5 at batch 1: 2-8 ms of such turns per run and party). */
    if (busy)
        sched_yield();
    return 1;
}

/* A session opens or a waiter arrives / a session closes or a waiter leaves (mu held). */
static void hold_locked(void)
{
    if (holders++ == 0 && hook_id < 0 && may_pause()) { /* a CUDA process never pauses */
        __atomic_store_n(&hook_many, starpu_cpu_worker_get_count() > 1, __ATOMIC_RELAXED);
        const int id = starpu_idle_hook_register(idle_hook, NULL);
        hook_id = id >= 0 ? id : -1; /* no free slot: the waiters' own looks still pause */
    }
}

static void unhold_locked(void)
{
    if (holders > 0 && --holders == 0 && hook_id >= 0) {
        starpu_idle_hook_deregister(hook_id);
        hook_id = -1;
    }
    if (paused)
        resume_locked();
}

/* A session holds the hook as a waiter does, from open to close. */
int veil_net_idle_session_open(void)
{
    return veil_net_idle_begin();
}

void veil_net_idle_session_close(int token)
{
    veil_net_idle_end(token);
}

int veil_net_idle_begin(void)
{
    if (!veil_env_idle_pause())
        return 0;
    pthread_mutex_lock(&mu);
    hold_locked();
    pthread_mutex_unlock(&mu);
    return 1;
}

void veil_net_idle_end(int token)
{
    if (!token)
        return;
    pthread_mutex_lock(&mu);
    unhold_locked();
    pthread_mutex_unlock(&mu);
}

long veil_net_idle_poll(long busy_ms)
{
    pthread_mutex_lock(&mu);
    const long ms = poll_locked(busy_ms);
    pthread_mutex_unlock(&mu);
    return ms;
}

void veil_net_idle_done_cb(void *arg)
{
    pthread_mutex_lock(&mu);
    *(int *)arg = 1;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
}

void veil_net_idle_wait_flag(const int *done)
{
    const int on = veil_env_idle_pause();
    pthread_mutex_lock(&mu);
    if (on)
        hold_locked();
    while (!*done) {
        /* also while busy: the workers' last task may end without an event that wakes us */
        const long ms = on ? poll_locked(VEIL_NET_IDLE_POLL_MS) : 100;
        veil_cond_wait_ms(&cv, &mu, ms);
    }
    if (on)
        unhold_locked();
    else if (paused)
        resume_locked();
    pthread_mutex_unlock(&mu);
}

int veil_net_idle_wait_task(struct starpu_task *t, const int *done)
{
    veil_net_idle_wait_flag(done);
    /* the callback runs just before StarPU marks the task terminated: this returns at once */
    return starpu_task_wait(t);
}

int veil_net_idle_acquire(starpu_data_handle_t h, enum starpu_data_access_mode mode)
{
    int done = 0;
    int rc = starpu_data_acquire_on_node_cb(h, STARPU_MAIN_RAM, mode, veil_net_idle_done_cb, &done);
    if (rc == 0)
        veil_net_idle_wait_flag(&done);
    return rc;
}

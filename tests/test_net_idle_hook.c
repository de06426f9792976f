/* Tests the idle hook of net/idle.c, in one process with one StarPU CPU worker and no network:
 * - outside a wait and a session an idle worker never pauses (the counter stays put over 100 ms);
 * - between veil_net_idle_begin and veil_net_idle_end the idle worker pauses the workers itself,
 *   with no thread calling veil_net_idle_poll, within 2 s (in practice microseconds), and the
 *   pause is real: a task submitted while paused does not run for 100 ms;
 * - a running task keeps them awake: begun while a 300 ms task runs, no pause comes before the
 *   task ends, and one comes after it;
 * - end resumes them (the task submitted while paused runs) and unregisters the hook (no pause
 *   over the next 100 ms);
 * - while a session is open (veil_net_idle_session_open) the idle worker pauses with nobody
 *   waiting; kicks with nothing ready leave it paused (no pause follows them); a task submitted
 *   then stays put until veil_net_idle_kick, runs after it, and the worker pauses again; after
 *   veil_net_idle_session_close nothing pauses;
 * - with VEIL_IDLE_PAUSE=0, begin returns 0 and nothing pauses;
 * - with two CPU workers (the hook then looks at most every 100 us per worker) a session still
 *   pauses them, and a kick runs a task submitted while paused. */
#include "config.h"
#include "base/base_internal.h"
#include "net/idle.h"

#include <starpu.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* A failure ends the process at once: the workers may be paused, so no orderly shutdown. */
#define FAIL(...)                                                                                  \
    do {                                                                                           \
        fprintf(stderr, "FAIL: " __VA_ARGS__);                                                     \
        fprintf(stderr, "\n");                                                                     \
        fflush(stderr);                                                                            \
        _exit(1);                                                                                  \
    } while (0)

static int ran;       /* tasks of count_cl that ran */
static int long_done; /* the sleeping task ended */

static void count_cpu(void *buffers[], void *arg)
{
    (void)buffers, (void)arg;
    __atomic_add_fetch(&ran, 1, __ATOMIC_RELAXED);
}

static void sleep_cpu(void *buffers[], void *arg)
{
    (void)buffers, (void)arg;
    usleep(300 * 1000);
    __atomic_store_n(&long_done, 1, __ATOMIC_RELEASE);
}

static struct starpu_codelet count_cl = {.cpu_funcs = {count_cpu}, .nbuffers = 0};
static struct starpu_codelet sleep_cl = {.cpu_funcs = {sleep_cpu}, .nbuffers = 0};

/* Waits up to max_ms for the pause counter to pass `from`; returns 1 if it did. */
static int paused_after(uint64_t from, int max_ms)
{
    for (int i = 0; i < max_ms; i++) {
        if (veil_net_idle_pauses() > from)
            return 1;
        usleep(1000);
    }
    return veil_net_idle_pauses() > from;
}

/* Submits a count_cl task while the workers should be paused and checks that it has not run
 * 100 ms later; returns how many count_cl tasks had run before it. */
static int submit_held_back(const char *where)
{
    const int before = __atomic_load_n(&ran, __ATOMIC_RELAXED);
    if (starpu_task_insert(&count_cl, 0) != 0)
        FAIL("%s: starpu_task_insert failed", where);
    usleep(100 * 1000);
    if (__atomic_load_n(&ran, __ATOMIC_RELAXED) != before)
        FAIL("%s: a task ran while the workers were paused", where);
    return before;
}

int main(void)
{
    char home[] = "/tmp/veil-test-idlehook-XXXXXX";
    if (!mkdtemp(home))
        return 1;
    setenv("STARPU_HOME", home, 1);
    setenv("STARPU_NCPU", "1", 1);
    setenv("STARPU_NCUDA", "0", 1); /* a process with a CUDA worker never pauses */
    setenv("STARPU_NOPENCL", "0", 1);
    setenv("STARPU_WORKERS_NOBIND", "1", 1);
    setenv("STARPU_SILENT", "1", 1);
    unsetenv("VEIL_IDLE_PAUSE");
    if (starpu_init(NULL) != 0) {
        fprintf(stderr, "SKIP: starpu_init failed\n");
        return 77;
    }

    /* outside a wait: no pause */
    uint64_t p0 = veil_net_idle_pauses();
    usleep(100 * 1000);
    if (veil_net_idle_pauses() != p0)
        FAIL("the workers paused with nobody waiting");

    /* inside: the idle worker pauses itself; the pause holds a submitted task back */
    int tok = veil_net_idle_begin();
    if (tok != 1)
        FAIL("veil_net_idle_begin returned %d with VEIL_IDLE_PAUSE unset", tok);
    if (!paused_after(p0, 2000))
        FAIL("no pause within 2 s of veil_net_idle_begin with an idle worker");
    if (submit_held_back("in a wait") != 0)
        FAIL("in a wait: a count task ran before the first was submitted");
    veil_net_idle_end(tok);
    starpu_task_wait_for_all();
    if (__atomic_load_n(&ran, __ATOMIC_RELAXED) != 1)
        FAIL("the task submitted while paused ran %d times after veil_net_idle_end", ran);

    /* end unregistered the hook */
    uint64_t p1 = veil_net_idle_pauses();
    usleep(100 * 1000);
    if (veil_net_idle_pauses() != p1)
        FAIL("a pause after veil_net_idle_end");

    /* a running task keeps the workers awake; its end lets them pause */
    if (starpu_task_insert(&sleep_cl, 0) != 0)
        FAIL("starpu_task_insert failed");
    while (starpu_task_nready() == 0 && !__atomic_load_n(&long_done, __ATOMIC_ACQUIRE))
        usleep(100);
    tok = veil_net_idle_begin();
    while (!__atomic_load_n(&long_done, __ATOMIC_ACQUIRE)) {
        if (veil_net_idle_pauses() != p1)
            FAIL("a pause while a task was running");
        usleep(1000);
    }
    if (!paused_after(p1, 2000))
        FAIL("no pause within 2 s of the running task's end");
    veil_net_idle_end(tok);
    starpu_task_wait_for_all();

    /* while a session is open the worker pauses outside waits too; a kick runs what is ready */
    uint64_t p3 = veil_net_idle_pauses();
    const int stok = veil_net_idle_session_open();
    if (stok != 1)
        FAIL("veil_net_idle_session_open returned %d with VEIL_IDLE_PAUSE unset", stok);
    if (!paused_after(p3, 2000))
        FAIL("no pause within 2 s of veil_net_idle_session_open with an idle worker");
    /* a kick that finds nothing ready leaves them paused: a resumed worker would find nothing
     * and pause again, which the counter would show */
    const uint64_t p3k = veil_net_idle_pauses();
    for (int k = 0; k < 20; k++) {
        veil_net_idle_kick();
        usleep(5 * 1000);
    }
    if (veil_net_idle_pauses() != p3k)
        FAIL("kicks with nothing ready resumed the workers (%llu pauses after them)",
             (unsigned long long)(veil_net_idle_pauses() - p3k));
    if (submit_held_back("in a session") != 1)
        FAIL("in a session: %d count tasks had run before, expected 1", ran);
    veil_net_idle_kick();
    starpu_task_wait_for_all(); /* the kicked worker runs it, then pauses again */
    if (__atomic_load_n(&ran, __ATOMIC_RELAXED) != 2)
        FAIL("the kick did not run the task submitted while paused");
    if (!paused_after(p3 + 1, 2000))
        FAIL("no second pause in the session after the kicked task ended");
    veil_net_idle_session_close(stok);
    uint64_t p4 = veil_net_idle_pauses();
    usleep(100 * 1000);
    if (veil_net_idle_pauses() != p4)
        FAIL("a pause after veil_net_idle_session_close");

    /* VEIL_IDLE_PAUSE=0: nothing */
    setenv("VEIL_IDLE_PAUSE", "0", 1);
    uint64_t p2 = veil_net_idle_pauses();
    tok = veil_net_idle_begin();
    if (tok != 0)
        FAIL("veil_net_idle_begin returned %d with VEIL_IDLE_PAUSE=0", tok);
    usleep(100 * 1000);
    veil_net_idle_end(tok);
    if (veil_net_idle_pauses() != p2)
        FAIL("a pause with VEIL_IDLE_PAUSE=0");

    starpu_shutdown();

    /* two CPU workers (each looks at most every 100 us): a session still pauses them both, and a
     * kick runs what was submitted meanwhile */
    unsetenv("VEIL_IDLE_PAUSE");
    setenv("STARPU_NCPU", "2", 1);
    if (starpu_init(NULL) != 0)
        FAIL("starpu_init with 2 CPU workers failed");
    if (starpu_cpu_worker_get_count() == 2) {
        uint64_t p5 = veil_net_idle_pauses();
        const int tok2 = veil_net_idle_session_open();
        if (!paused_after(p5, 2000))
            FAIL("2 workers: no pause within 2 s of veil_net_idle_session_open");
        const int before = submit_held_back("2 workers, in a session");
        veil_net_idle_kick();
        starpu_task_wait_for_all();
        if (__atomic_load_n(&ran, __ATOMIC_RELAXED) != before + 1)
            FAIL("2 workers: the kick did not run the task submitted while paused");
        veil_net_idle_session_close(tok2);
    }
    starpu_shutdown();
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", home);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", home);
    printf("PASS: the idle hook pauses inside waits and sessions only, never while a task runs; "
           "end, close and kicks resume\n");
    return 0;
}

/* Tests the worker thread priority (sched/worker_priority.c): with StarPU up on 2 CPU workers,
 * veil_sched_worker_nice(7) gives every worker thread nice 7 (read back on each worker with
 * getpriority) and leaves the calling thread's at its value; 0 changes nothing; -1 and 20 are
 * refused with a message naming the range. The party-level variable (VEIL_WORKER_NICE) is checked
 * for bad values in test_graph_placement. */
#include "config.h"

#include "sched/sched_internal.h"
#include "test_util.h"

#include <errno.h>
#include <starpu.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#define NWORKERS 2

static atomic_int seen[NWORKERS], ran[NWORKERS];
static int cpu_ids[NWORKERS]; /* StarPU's ids of the CPU workers (a CUDA worker may come first) */

static int my_nice(void)
{
    errno = 0;
    return getpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid));
}

static void read_nice(void *arg)
{
    (void)arg;
    const int id = starpu_worker_get_id();
    int w = 0;
    while (w < NWORKERS && cpu_ids[w] != id)
        w++;
    if (w < NWORKERS) {
        atomic_store(&seen[w], my_nice());
        atomic_fetch_add(&ran[w], 1);
    }
}

/* Every worker's nice value equals want. */
static void check_workers(int want, const char *when)
{
    for (int w = 0; w < NWORKERS; w++)
        atomic_store(&ran[w], 0);
    starpu_execute_on_each_worker(read_nice, NULL, STARPU_CPU);
    for (int w = 0; w < NWORKERS; w++)
        VT_CHECK(atomic_load(&ran[w]) == 1 && atomic_load(&seen[w]) == want,
                 "%s: worker %d has nice %d (ran %d), expected %d", when, w,
                 atomic_load(&seen[w]), atomic_load(&ran[w]), want);
}

int main(void)
{
    setenv("STARPU_NCPU", "2", 1);
    setenv("STARPU_SCHED", "lws", 1);
    if (veil_test_starpu_start() != 0) { /* a failure here, not a skip: the test needs StarPU */
        fprintf(stderr, "starpu_init failed\n");
        return 1;
    }
    VT_CHECK(starpu_cpu_worker_get_count() == NWORKERS, "%u CPU workers, expected %d",
             starpu_cpu_worker_get_count(), NWORKERS);
    VT_CHECK(starpu_worker_get_ids_by_type(STARPU_CPU_WORKER, cpu_ids, NWORKERS) == NWORKERS,
             "listing the CPU workers");
    const int main_nice = my_nice(), base = main_nice; /* workers start where the process was */
    check_workers(base, "before");
    VT_CHECK(veil_sched_worker_nice(0) == VEIL_OK, "nice 0: %s", veil_last_error());
    check_workers(base, "after nice 0");
    if (base <= 7) {
        VT_CHECK(veil_sched_worker_nice(7) == VEIL_OK, "nice 7: %s", veil_last_error());
        check_workers(7, "after nice 7");
    }
    VT_CHECK(my_nice() == main_nice, "the calling thread's nice changed to %d", my_nice());
    VT_CHECK(veil_sched_worker_nice(20) == VEIL_ERR_INVAL && strstr(veil_last_error(), "0 ") &&
                 strstr(veil_last_error(), "19"),
             "nice 20: %s", veil_last_error());
    VT_CHECK(veil_sched_worker_nice(-1) == VEIL_ERR_INVAL, "nice -1 accepted");
    veil_test_starpu_stop();
    return veil_test_status();
}

/*
 * worker_priority.c — the scheduling priority of a party's StarPU worker threads. An idle StarPU
 * worker that is the last one awake in its context does not sleep: it spins on the scheduler with
 * `pause` instructions and never yields its core. Where a host's cores are shared by more threads
 * than it has (several parties and the dealer on one machine, as in the tests and the benchmark
 * VM), a message that arrives then waits for the kernel to preempt a spinning worker before the
 * network I/O thread (or ZeroMQ's) can run, a scheduler tick or more per round. Raising the
 * workers' nice value lets the I/O threads preempt them at once, and leaves a worker that has
 * work its share of the core whenever no I/O thread wants it.
 */
#include "config.h"

#include "sched/sched_internal.h"

#include "base/base_internal.h"

#include <errno.h>
#include <starpu.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

struct nice_job {
    int nice;
    atomic_int failed; /* errno of the first failure, 0 if none */
};

/* Runs on each worker: setpriority on the calling thread (Linux: a thread id is a PRIO_PROCESS
 * target). */
static void set_nice(void *arg)
{
    struct nice_job *job = arg;
    const id_t tid = (id_t)syscall(SYS_gettid);
    if (setpriority(PRIO_PROCESS, tid, job->nice) != 0) {
        int expected = 0;
        atomic_compare_exchange_strong(&job->failed, &expected, errno ? errno : EPERM);
    }
}

int veil_sched_worker_nice(int nice)
{
    if (nice < 0 || nice > 19)
        return veil_error(VEIL_ERR_INVAL,
                          "worker nice value %d: use 0 (unchanged) to 19 (lowest priority)", nice);
    if (nice == 0)
        return VEIL_OK;
    struct nice_job job = {.nice = nice};
    atomic_init(&job.failed, 0);
    starpu_execute_on_each_worker(set_nice, &job, STARPU_CPU | STARPU_CUDA | STARPU_OPENCL);
    const int err = atomic_load(&job.failed);
    if (err != 0)
        return veil_error(VEIL_ERR_UNSUPPORTED, "worker nice value %d: setpriority failed (%s)",
                          nice, strerror(err));
    return VEIL_OK;
}

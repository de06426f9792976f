/*
 * cpu_share.c — the harness's split of the CPUs it may use over the processes it starts (the
 * pin option, base/harness.h). Parties started on one machine then run as on machines of their
 * own, each on its own cores, instead of every thread of every process moving over every core:
 * a party's threads hand its messages and tasks to each other on its own cores and never wait
 * behind another party's (figures: bench/README-latency.md, LeNet-5 at batch 1).
 */
#include "config.h"
#include "base/harness.h"

#include <stdio.h>
#include <string.h>
#ifdef __linux__
#include <errno.h>
#include <sched.h>
#endif

void veil_harness_cpu_share(int ncpus, int i, int nprocs, int *first, int *count)
{
    if (ncpus < 1 || nprocs < 1 || i < 0) {
        *first = 0;
        *count = ncpus > 0 ? ncpus : 0;
        return;
    }
    if (ncpus < nprocs) { /* fewer CPUs than processes: one each, in turn */
        *first = i % ncpus;
        *count = 1;
        return;
    }
    const int k = ncpus / nprocs, extra = ncpus % nprocs;
    *first = i * k + (i < extra ? i : extra);
    *count = k + (i < extra);
}

int veil_harness_pin_share(int ncpus, int nprocs)
{
    return ncpus >= nprocs ? ncpus / nprocs : 1;
}

/* Who shares: every process when there is a CPU for each, else the parties alone: the dealer
 * serves both parties in bursts and floats (bench/README-latency.md: LeNet-5 batch 1 with the
 * dealer beside party 0 against free). */
static int sharers(const struct veil_harness_party *me, int ncpus)
{
    const int nprocs = me->nparties + (me->has_dealer ? 1 : 0);
    return ncpus >= nprocs ? nprocs : me->nparties;
}

void veil_harness_pin_self(const struct veil_harness_party *me, int ncpu)
{
#ifdef __linux__
    cpu_set_t allowed, mine;
    if (sched_getaffinity(0, sizeof allowed, &allowed) != 0)
        return; /* nothing known to split: the process keeps what it inherited */
    int cpus[CPU_SETSIZE], m = 0;
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &allowed))
            cpus[m++] = c;
    /* one CPU: nothing to split; a share smaller than the process's workers: they would queue
     * for it while other cores idle, so every process keeps every CPU */
    const int n = sharers(me, m);
    if (m <= 1 || (me->is_dealer && n == me->nparties) ||
        veil_harness_pin_share(m, n) < (ncpu > 0 ? ncpu : 1))
        return;
    int first, count;
    veil_harness_cpu_share(m, me->id, n, &first, &count);
    CPU_ZERO(&mine);
    for (int k = first; k < first + count; k++)
        CPU_SET(cpus[k], &mine);
    if (sched_setaffinity(0, sizeof mine, &mine) != 0)
        fprintf(stderr,
                "veil-harness: warning: process %d keeps every CPU: sched_setaffinity: %s\n",
                me->id, strerror(errno));
#else
    (void)me;
    (void)ncpu;
#endif
}

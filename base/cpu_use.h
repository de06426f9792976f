/*
 * cpu_use.h — the CPU time this process's threads use over a window, by role (internal): a
 * snapshot of every thread's scheduler statistics at the window's start and one at its end
 * (base/cpu_use.c), and the difference as the public struct veil_cpu_use (include/veil/party.h).
 * A traced run takes both (graph/secure/party_run.c), so that its profile tells a party that
 * waits for its peer from one whose worker waits for a core its own other threads hold.
 */
#ifndef VEIL_BASE_CPU_USE_H
#define VEIL_BASE_CPU_USE_H

#include "veil.h"

#include <stdint.h>

/* Threads a snapshot holds; a process with more gets no snapshot (VEIL_ERR_UNSUPPORTED). */
#define VEIL_CPU_SNAP_THREADS 128

/** One thread's counters at a snapshot. */
struct veil_cpu_thread {
    int tid;
    int role;                 /* enum veil_cpu_role */
    uint64_t run_ns, wait_ns; /* on a CPU, runnable but waiting for one: since the thread began */
    uint64_t slices;          /* times it was put on a CPU, since it began */
};

/** Every thread of the process at one moment. */
struct veil_cpu_snap {
    double t_begin, t_end; /* CLOCK_MONOTONIC seconds around the reads */
    int n;
    struct veil_cpu_thread t[VEIL_CPU_SNAP_THREADS];
};

/**
 * Takes a snapshot of this process's threads (/proc/self/task/TID/schedstat and comm). The calling
 * thread counts as the submitting thread (VEIL_CPU_SUBMIT); other threads by name: StarPU's workers
 * ("CPU n", "CUDA n", "OpenCL n"), the network's I/O thread ("veil-net"), the buffer pool's wiper
 * ("veil-wipe"), ZeroMQ's threads ("ZMQbg/..."), anything else VEIL_CPU_OTHER.
 * VEIL_ERR_IO when /proc gives no per-thread statistics (a kernel without schedstats),
 * VEIL_ERR_UNSUPPORTED for a process of more than VEIL_CPU_SNAP_THREADS threads.
 */
int veil_cpu_snapshot(struct veil_cpu_snap *s);

/**
 * The use between two snapshots of the same process, into out: over the window from a's first
 * read to b's last, so that busy_pct cannot exceed 100. A thread only in b (started in the
 * window) counts from zero; one only in a (ended in the window) is lost.
 */
void veil_cpu_use_between(const struct veil_cpu_snap *a, const struct veil_cpu_snap *b,
                          struct veil_cpu_use *out);

#endif

/*
 * trace.h — the process's trace recorder (internal, never installed): a preallocated, chunked,
 * lock-free event buffer that the task submitters, the network's I/O thread and the secure
 * executor append to while a party traces (off by default: every hook costs one relaxed atomic
 * load then), the current trace region (a neutral label the executor sets before it lowers a
 * node; codelets and net/ copy it without knowing what it means), the Chrome trace writer
 * (trace_write.c) and the busy / overlap summary (trace_summary.c), both computed from the same
 * recorded events. Events hold names, shapes, sizes, tags and times only: never tensor values.
 *
 * HOW TASK COMPLETIONS REACH THE RECORDER. Every submission helper passes VEIL_TRACE_TASK to
 * starpu_task_insert (or calls veil_trace_task_attach on a task it builds): while tracing this
 * is a StarPU callback whose argument is the region current at submission, and the callback
 * reads the task's profiling info (worker, start, end; starpu_profiling_status_set is on while
 * tracing). While not tracing the callback pointer is NULL, so StarPU calls nothing. Chosen over
 * a wrapper scheduling policy whose post_exec_hook chains to the policy STARPU_SCHED names
 * because (1) the region must be captured when the task is SUBMITTED, and a policy only sees a
 * task when it becomes ready (push_task) — long after the walk moved on to later nodes — so a
 * policy would need a side table keyed by task; (2) a wrapper must forward every optional method
 * of the 1.3 policy struct and keep each policy's per-context data working, while a callback
 * depends on no scheduler at all (tested under lws, eager and dmda); (3) the cost is paid only
 * while tracing. The price is one argument at each of the ~dozen submission sites.
 *
 * Threads: every function may be called from any thread (callbacks run on workers or drivers).
 * Times are StarPU's clock (starpu_timing_now(), microseconds since starpu_init).
 */
#ifndef VEIL_BASE_TRACE_H
#define VEIL_BASE_TRACE_H

#include "veil.h"

#include <starpu.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum veil_trace_kind { VEIL_TRACE_TASK_EV = 1, VEIL_TRACE_SEND, VEIL_TRACE_RECV, VEIL_TRACE_RUN };

/** One recorded event. TASK: name is the codelet's, lane the worker id. SEND / RECV: lane is
 * the peer, bytes the payload, tag the message tag, t0/t1 the first and last chunk times. RUN:
 * tag the run index, bytes / aux the run's payload bytes sent / received. */
struct veil_trace_event {
    double t0, t1;    /* microseconds, StarPU's clock */
    const char *name; /* static string (codelet name) or NULL */
    uint64_t bytes, tag, aux;
    int32_t lane;
    int32_t run;  /* the run it belongs to, -1 outside a run */
    int32_t node; /* TASK: the plan node current at submission, -1 when none */
    uint8_t kind;
    uint8_t region; /* enum veil_region */
    uint32_t ready; /* set last (release store): the slot is complete */
};

/* ---- recording ------------------------------------------------------------------------------ */

extern int veil_trace_on; /* read with veil_trace_active() */

/** 1 while recording (relaxed load: the hot-path test). */
static inline int veil_trace_active(void)
{
    return __atomic_load_n(&veil_trace_on, __ATOMIC_RELAXED);
}

/**
 * Starts recording into a fresh buffer (events of an earlier recording are dropped), with the
 * first chunk allocated now; enables StarPU's task profiling (call after starpu_init, before
 * the tasks to trace are submitted). VEIL_ERR_NOMEM, VEIL_ERR_STATE when already recording.
 */
int veil_trace_start(void);
/** Stops recording (events stay readable until the next start or veil_trace_free). */
void veil_trace_stop(void);
/** Stops and frees every event. No task or message may still be recorded concurrently. */
void veil_trace_free(void);

/** Events recorded so far (slots taken; read each with veil_trace_event_at). */
size_t veil_trace_count(void);
/** Event i < veil_trace_count(), or NULL when its writer has not finished it. */
const struct veil_trace_event *veil_trace_event_at(size_t i);
/** Events dropped because the buffer reached its cap (VEIL_TRACE_MAX_EVENTS). */
uint64_t veil_trace_dropped(void);

/** The clock of every event: starpu_timing_now() (microseconds). */
double veil_trace_now(void);

/** Sets / reads the process's current region (enum veil_region), captured by every task and
 * message submitted after it. One label per process: the executor's walk sets it. */
void veil_trace_set_region(int region);
int veil_trace_region(void);
/** Sets the process's current node (a plan node index, -1: none), captured by every task
 * submitted after it, like the region: what a calibration run sums task times by. */
void veil_trace_set_node(int node);

/** Marks the start of run index run (events recorded from now carry it) / the end of the
 * current run: records a RUN event spanning [t0, t1] with the run's payload bytes. */
void veil_trace_run_begin(int run);
void veil_trace_run_end(double t0, double t1, uint64_t bytes_sent, uint64_t bytes_recv);

/** Keeps run index run's CPU use (struct veil_cpu_use, base/cpu_use.c) for the writer, which
 * adds it to the run's event. VEIL_ERR_INVAL, VEIL_ERR_NOMEM. */
int veil_trace_run_cpu_set(int run, const struct veil_cpu_use *c);
/** Copies run index run's kept CPU use into *out: 1, or 0 when none was kept. */
int veil_trace_run_cpu(int run, struct veil_cpu_use *out);

/** The task-completion callback to pass to StarPU (NULL when not tracing) and its argument (the
 * current region and node, packed in the pointer's bits). */
void (*veil_trace_task_func(void))(void *);
void *veil_trace_task_arg(void);
/** For starpu_task_insert: VEIL_TRACE_TASK among the arguments traces the task. NFREE: in
 * StarPU 1.3 plain STARPU_CALLBACK_WITH_ARG sets callback_arg_free, and the argument here is
 * a region number, not memory (free(0x2) crashed a worker). */
#define VEIL_TRACE_TASK                                                                            \
    STARPU_CALLBACK_WITH_ARG_NFREE, veil_trace_task_func(), veil_trace_task_arg()
/** For a task built with starpu_task_create: sets its callback while tracing (t has none). */
void veil_trace_task_attach(struct starpu_task *t);

/** Records a message of the I/O thread: dir VEIL_TRACE_SEND or VEIL_TRACE_RECV, peer, tag,
 * payload bytes, region of the request, first and last chunk times (veil_trace_now()). */
void veil_trace_message(int dir, int peer, uint64_t tag, uint64_t bytes, int region, double t0,
                        double t1);

/* ---- output and summary (trace_write.c, trace_summary.c) ------------------------------------ */

/** What the writer needs to name the process and its lanes. */
struct veil_trace_meta {
    int pid;      /* the process id in the session: 0..N-1 parties, N the dealer */
    int nparties; /* N */
    int nprocs;   /* N, plus 1 with a dealer */
};

/**
 * Writes every recorded event as Chrome trace JSON to path, after expanding one "%d" in it to
 * meta->pid (the other characters are copied; "%%" is a percent sign). Format in trace_write.c.
 * VEIL_ERR_INVAL (bad path pattern), VEIL_ERR_IO (cannot write).
 */
int veil_trace_write(const char *path, const struct veil_trace_meta *meta);

/** Expands path's "%d" to id into out (size n). VEIL_ERR_INVAL when it does not fit or the
 * pattern has another conversion. */
int veil_trace_path(const char *path, int id, char *out, size_t n);

/**
 * Fills *out from the recorded events of run index run within the window [t0, t1] (the run's
 * wall time, veil_trace_now() clock): the whole run and each region, and the run's CPU use if
 * veil_trace_run_cpu_set kept one. Definitions in include/veil/party.h (struct
 * veil_run_profile). VEIL_ERR_NOMEM.
 */
int veil_trace_summarize(int run, double t0, double t1, struct veil_run_profile *out);

/** An interval [a, b] of the trace's clock (microseconds). */
struct veil_trace_span {
    double a, b;
};
/**
 * The figures of struct veil_busy from intervals already clipped to a window of wall
 * microseconds: the unions C of the task spans c[0..nc) and N of the message spans m[0..nm)
 * (any order, may overlap; both arrays are sorted and merged in place), the times, percentages,
 * overlap_share and stretch (definitions in include/veil/party.h). Leaves tasks, messages and
 * bytes alone. What veil_trace_summarize computes for each window; tests check it on hand-made
 * spans.
 */
void veil_trace_busy_figures(struct veil_trace_span *c, size_t nc, struct veil_trace_span *m,
                             size_t nm, double wall, struct veil_busy *out);

/** The region's name ("linear", "relu", ...), "other" out of range. */
const char *veil_trace_region_name(int region);

#endif

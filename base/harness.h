/*
 * harness.h — the multi-process harness (internal; used by tests, the launcher and examples).
 *
 * StarPU runs once per process, so each party (and the dealer) is a process. The harness
 * allocates loopback endpoints on ephemeral ports, forks (or forks and execs) N parties plus an
 * optional dealer before anyone calls starpu_init, gives each its identity through its
 * environment, captures their output, enforces a wall-clock bound when it is given one (killing
 * every process group it started when it is exceeded), forwards a stop request (a signal the
 * caller caught) to every process, and reports exit statuses with clear messages. Every child
 * dies with the harness's process (PR_SET_PDEATHSIG), so killing the caller, even with SIGKILL,
 * leaves no orphan running.
 *
 * Environment each child receives (exec mode reads it with veil_harness_party_from_env):
 *   VEIL_PARTY_ID      0..N-1, or N for the dealer
 *   VEIL_NPARTIES      N
 *   VEIL_DEALER        1 when a dealer process runs (it has id N)
 *   VEIL_ENDPOINTS     comma-separated tcp://127.0.0.1:PORT, parties 0..N-1 then the dealer
 *   VEIL_SESSION       32 hex digits, random per run
 *   VEIL_LISTEN_FD     a TCP socket already bound to this process's endpoint and listening:
 *                      the harness binds every port before it forks, so no other process on the
 *                      machine can take one in between (the mesh adopts it with ZMQ_USE_FD)
 *   STARPU_NCPU=1 (or the ncpu option) STARPU_WORKERS_NOBIND=1 STARPU_SILENT=1, a private
 *   STARPU_HOME, and
 *   STARPU_SCHED (the option, else the caller's STARPU_SCHED, else lws) — unless the option
 *   keep_starpu_env is set, in which case the caller's StarPU variables are left alone.
 */
#ifndef VEIL_HARNESS_H
#define VEIL_HARNESS_H

#include <signal.h>
#include <stddef.h>

#define VEIL_HARNESS_MAX_PROCS 17

/** timeout_s value for "no wall-clock limit": the processes run until they exit (a hung session
 *  still ends through the network's peer failure detection). */
#define VEIL_HARNESS_NO_TIMEOUT (-1.0)

struct veil_harness_opts {
    int nparties;          /* N >= 1 */
    int dealer;            /* 1: also start a dealer process with id N */
    double timeout_s;      /* kill everything still running after this many seconds; 0: 120;
                              VEIL_HARNESS_NO_TIMEOUT (any value < 0): no limit */
    double grace_s;        /* after the first failure, kill the rest after this; < 0: never */
    const char *sched;     /* STARPU_SCHED for the children; NULL: caller's or "lws" */
    int keep_starpu_env;   /* 1: do not set STARPU_* variables */
    int pin;               /* 1: each process runs on its own share of the CPUs the harness may
                              use (veil_harness_pin_self), as on a machine of its own */
    int ncpu;              /* STARPU_NCPU for the children (their CPU workers: the devices a
                              placement spreads over); 0: 1 */
    int forward_output;    /* 1: copy children's output to stderr with a [pN] prefix as it comes */
    const char *const *extra_env; /* NULL-terminated "NAME=VALUE" list added to every child */
    const char *session;   /* 32 lowercase hex digits; NULL: a fresh random session id */
    const char *scratch_dir; /* where the private StarPU homes are made; NULL: TMPDIR or /tmp */
    /* When set, polled every 50 ms: a nonzero value is a signal number (the caller's handler
     * stores it) that the harness sends to every process group still running; what still runs
     * grace_s later (5 s when grace_s < 0) is killed. The run then returns VEIL_ERR_CHILD
     * "stopped by signal N". */
    volatile sig_atomic_t *stop_signal;
};

/** Identity of one process of a run. */
struct veil_harness_party {
    int id;        /* 0..nparties-1, nparties for the dealer */
    int nparties;
    int is_dealer;
    int has_dealer;
    char endpoints[VEIL_HARNESS_MAX_PROCS][64];
    char session[33];
    int listen_fd; /* bound, listening socket for endpoints[id]; -1 when none */
};

/** Result of one process. */
struct veil_harness_result {
    int exit_code;     /* exit status, or 128 + signal, or -1 if it never started */
    int timed_out;     /* 1: killed by the harness at the time bound */
    int killed_after_failure; /* 1: killed by the harness after another process failed */
    int stopped;       /* 1: it was still running when a stop_signal was forwarded to it */
    double seconds;    /* wall time from start to exit */
    char *output;      /* everything it wrote to stdout and stderr (NUL-terminated, capped) */
};

typedef int (*veil_harness_fn)(const struct veil_harness_party *me, void *arg);

/**
 * Runs fn in nparties (+ dealer) forked processes; a child's return value is its exit code.
 * results (may be NULL) receives nparties (+1) entries; free them with veil_harness_results_free.
 * Returns VEIL_OK when every process exited 0, else VEIL_ERR_CHILD / VEIL_ERR_TIMEOUT with
 * veil_last_error() naming the first process that failed and how.
 */
int veil_harness_run(const struct veil_harness_opts *opts, veil_harness_fn fn, void *arg,
                     struct veil_harness_result *results);

/** As veil_harness_run, but each child execs argv (argv[0] looked up in PATH). */
int veil_harness_exec(const struct veil_harness_opts *opts, char *const *argv,
                      struct veil_harness_result *results);

/** Process i's share of ncpus CPUs over nprocs processes, as indices into the CPUs in order:
 * [*first, *first + *count). The CPUs are cut into nprocs runs of ncpus / nprocs (the first
 * ncpus mod nprocs one longer); with fewer CPUs than processes, process i takes CPU i mod ncpus
 * alone. */
void veil_harness_cpu_share(int ncpus, int i, int nprocs, int *first, int *count);

/** The fewest CPUs a process gets from veil_harness_cpu_share (at least 1). */
int veil_harness_pin_share(int ncpus, int nprocs);

/** Binds the calling process me (before it starts threads: they inherit it) to its share of the
 * CPUs it may use now (Linux: sched_getaffinity / sched_setaffinity; elsewhere nothing): with a
 * CPU for every process, the CPUs split over all of them (the dealer last); with fewer, over the
 * parties alone, and the dealer keeps every CPU. Nothing changes on one CPU, or when the
 * smallest share holds fewer CPUs than the ncpu workers each process runs (0: 1); a refusal is
 * a warning on stderr, the process keeping every CPU. */
void veil_harness_pin_self(const struct veil_harness_party *me, int ncpu);

/** Releases the outputs held by n results. */
void veil_harness_results_free(struct veil_harness_result *results, int n);

/** Reads this process's identity from the VEIL_* environment; VEIL_ERR_INVAL if absent/bad.
 *  Implemented in base/env.c, the library's one reader of the environment. */
int veil_harness_party_from_env(struct veil_harness_party *me);

#endif

/*
 * test_graph_util.h — the shared pattern of the secure-executor tests: run one function in N real
 * party processes (plus the dealer) through the harness, each finding its identity, endpoints and
 * fresh CURVE keys in its environment exactly as under veil-run (so the body calls
 * veil_party_open(plan, NULL) as a program would), and hand results back to the parent through
 * memory shared across fork. The plan, inputs and oracle are built in the parent before the run;
 * the children inherit them.
 */
#ifndef VEIL_TEST_GRAPH_UTIL_H
#define VEIL_TEST_GRAPH_UTIL_H

#include "base/harness.h"
#include "veil.h"

#include <stddef.h>

struct veil_test_graph_opts {
    int nparties;      /* N in [2, 16] */
    int dealer;        /* 1: start the dealer process (id N) */
    const char *sched; /* STARPU_SCHED for the children; NULL: lws */
    double timeout_s;  /* 0: 120 */
    int expect_fail;   /* 1: the run is expected to fail (outputs are not printed) */
    const char *session; /* 32 hex digits: the session id (restarts join the same one; with
                            fixed seeds, a repeatable session); NULL: a fresh random one */
};

/**
 * Writes a key pair per process in a fresh private directory, runs fn in every process with
 * VEIL_KEY_DIR set (veil_harness_run), removes the keys. results (may be NULL) receives one entry
 * per process (free with veil_harness_results_free). Returns the harness's status; on an
 * unexpected failure every process's output is printed to stderr.
 */
int veil_test_graph_run(const struct veil_test_graph_opts *o, veil_harness_fn fn, void *arg,
                        struct veil_harness_result *results);

/**
 * One party's part in the single-op tests: veil_run of plan on feeds, output 0 into
 * y + id * y_stride and the run's counters into stats[id]; or, with train, veil_train_step then
 * the parameter `param` revealed to all into w + id * w_stride. The pointers point into memory
 * shared across fork. Pass it as the arg of veil_test_graph_run with veil_test_graph_step_child.
 */
struct veil_test_graph_step {
    const veil_plan_t *plan;
    const struct veil_feed *feeds;
    size_t nfeeds;
    int train;
    const char *param;
    double *y, *w;
    size_t y_stride, w_stride;
    struct veil_run_stats *stats;
};
/** The veil_harness_fn for struct veil_test_graph_step (exit 3: open, 4: run or step, 5: close). */
int veil_test_graph_step_child(const struct veil_harness_party *me, void *arg);

#endif

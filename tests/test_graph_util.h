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

#endif

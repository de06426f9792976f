/*
 * bench_mpc_util.h — the measurement the protocol benchmarks share (bench_compare,
 * bench_nonlinear, bench_primitives): run an SPMD body in N party processes and a dealer process
 * on loopback (the tests' harness, tests/test_mpc_util.h), share a generated input, and time one
 * protocol call at this process from submission to quiescence (veil_mpc_wait) together with the
 * bytes it sent and the rounds it marked over that interval (net's counters). The dealer's
 * material generation and transfer happen inside the timed interval: these are online figures
 * with a live dealer, not online-only ones.
 */
#ifndef VEIL_BENCH_MPC_UTIL_H
#define VEIL_BENCH_MPC_UTIL_H

#include "tasks/mpc.h"
#include "tests/test_mpc_util.h"

#include <stddef.h>
#include <stdint.h>

/** What one timed call cost at this process. */
struct bench_cost {
    double secs;
    uint64_t bytes;  /* sent to all peers over the interval */
    uint64_t rounds; /* veil_mpc_round marks over the interval */
};

/** The call a measurement times: submits the protocol and returns its status, never waits. */
typedef int (*bench_call_fn)(veil_mpc_t *m, void *arg);

/**
 * Waits for quiescence (so nothing submitted earlier is counted) and for every process of the
 * session (veil_mpc_agree: a barrier, so that no peer starts its part of the call before this
 * process's clock does), then times fn(m, arg) from submission to the end of veil_mpc_wait and
 * stores the interval's seconds, sent bytes and rounds in *out. Returns VEIL_OK or the first error
 * (fn's or the wait's), printed with the process id.
 */
int bench_time_call(veil_mpc_t *m, bench_call_fn fn, void *arg, struct bench_cost *out);

/** Element i of a generated plaintext input (called at the owner only). */
typedef uint64_t (*bench_gen_fn)(size_t i, const void *arg);

/**
 * Fills words[0 .. numel-1] with gen at the owner (words may be NULL elsewhere), shares them from
 * owner into *x (initialised here; shape and tile as veil_mpc_share_input) and waits. Returns
 * VEIL_OK or the first error (printed).
 */
int bench_share(veil_mpc_t *m, int owner, bench_gen_fn gen, const void *arg, int ndim,
                const size_t *dims, size_t tile, struct veil_sec *x);

/**
 * Runs body in nparties party processes and a dealer process (dealer material, default
 * fractional bits, context tile `tile`, 0: the default; the harness kills the run after
 * timeout_s seconds). Returns 0 when every process exited 0.
 */
int bench_run(int nparties, size_t tile, double timeout_s, veil_test_mpc_fn body, void *arg);

/** 10^e. */
size_t bench_pow10(int e);

/** Keeps in *best the faster of *best and *s (a best with secs <= 0 is empty). */
void bench_keep_best(struct bench_cost *best, const struct bench_cost *s);

#endif

/*
 * test_mpc_util.h — the shared pattern of the protocol tests: run one SPMD function in N real
 * party processes (plus a dealer process, or in trusted-first-party mode) through the harness,
 * each with a fresh CURVE-secured net and an MPC context; read a process's traffic counters; and
 * hand results back to the parent through memory shared across fork (the parent allocates it
 * before the run, party 0 writes its revealed words there after veil_mpc_wait, the parent
 * compares them with the plaintext oracle).
 *
 * Inputs: generate the plaintext in the parent before veil_test_mpc_run (the children inherit
 * it across fork) and share it inside the body with veil_mpc_share_input from an owner.
 */
#ifndef VEIL_TEST_MPC_UTIL_H
#define VEIL_TEST_MPC_UTIL_H

#include "tasks/mpc.h"

#include <stddef.h>
#include <stdint.h>

/** One multi-process run. */
struct veil_test_mpc_opts {
    int nparties;                    /* N in [2, 16] */
    enum veil_mpc_material material; /* VEIL_MPC_MAT_DEALER (adds a dealer process) or
                                        VEIL_MPC_MAT_TRUSTED_FIRST_PARTY */
    size_t tile;                     /* context default tile; 0: VEIL_MPC_TILE_DEFAULT */
    int frac_bits;                   /* < 0: the default */
    double timeout_s;                /* 0: 120 s */
};

/**
 * The SPMD body: runs in every process (parties and the dealer) after the context is created,
 * before it is destroyed (the helper waits for quiescence and destroys it). Returns 0 when every
 * check of this process passed, non-zero otherwise (the process's exit code).
 */
typedef int (*veil_test_mpc_fn)(veil_mpc_t *m, void *arg);

/**
 * Forks the processes (harness), in each: starpu_init, veil_net_open with fresh CURVE keys,
 * veil_mpc_new with opts, fn(m, arg), veil_mpc_destroy, veil_net_close, starpu_shutdown.
 * Returns 0 when every process exited 0; otherwise prints which failed and every process's
 * captured output to stderr and returns 1.
 */
int veil_test_mpc_run(const struct veil_test_mpc_opts *opts, veil_test_mpc_fn fn, void *arg);

/** Describes a run for messages: "N=3 dealer" / "N=3 tfp". Static buffer (not reentrant). */
const char *veil_test_mpc_name(const struct veil_test_mpc_opts *opts);

/** Counters of this process since its net opened: bytes it sent to all peers (the dealer
 * included), and the rounds marked. A party's counters only (call after veil_mpc_wait). */
struct veil_test_mpc_counters {
    uint64_t bytes;
    uint64_t rounds;
};
void veil_test_mpc_counters(veil_mpc_t *m, struct veil_test_mpc_counters *c);

/** Memory shared by the parent and the children it forks later (MAP_SHARED, zeroed); NULL on
 * failure. Free with veil_test_mpc_shared_free. */
void *veil_test_mpc_shared(size_t bytes);
void veil_test_mpc_shared_free(void *p, size_t bytes);

#endif /* VEIL_TEST_MPC_UTIL_H */

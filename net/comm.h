/*
 * comm.h — the seam net/ exports to tasks/ (and graph/'s session): detached sends and receives
 * bound to StarPU data handles, stopping a session from the application's side, and who is in
 * the session, on a session opened with include/veil/net.h. It names no ZeroMQ type and nothing
 * of the session's insides (net/net_internal.h: net/'s own files, the code that opens a session
 * with options, and tests). Never installed.
 */
#ifndef VEIL_NET_COMM_H
#define VEIL_NET_COMM_H

#include "net/net_config.h" /* VEIL_NET_MAX_PROCS, VEIL_SESSION_BYTES: plain limits, no socket */
#include "veil/net.h"

#include <starpu.h>
#include <stdint.h>

/**
 * Detached send of handle h (vector, variable or contiguous matrix in main RAM) to peer with
 * tag. Returns at once; the send starts when the tasks writing h before this call are done and
 * holds h in read mode until the bytes are staged, so later writers wait. Messages with the same
 * (peer, tag) arrive in posting order. Errors: VEIL_ERR_INVAL (bad peer, handle),
 * VEIL_ERR_UNSUPPORTED (non-contiguous layout), or the session's error once it failed.
 * Any thread except a StarPU task or callback.
 */
int veil_net_isend(veil_net_t *net, starpu_data_handle_t h, int peer, uint64_t tag);

/**
 * Detached receive into h from peer with tag: h is held in write mode until the message has
 * landed, so tasks submitted later that read h wait in the DAG. A message that arrives first is
 * kept (early arrival) and delivered when this is posted. A message whose size differs from
 * h's fails the session with VEIL_ERR_PROTO. Same errors and threads as veil_net_isend.
 */
int veil_net_irecv(veil_net_t *net, starpu_data_handle_t h, int peer, uint64_t tag);

/**
 * As veil_net_irecv, for one message scattered over the n handles h[0..n-1] in order (the tiles
 * of one or more tensors, anywhere in memory): its first bytes fill h[0], the next h[1], and so
 * on; its size must be the sum of theirs. Every handle is held in write mode until the message
 * has landed, then all are released, so a later reader of any of them waits for the whole
 * message. n == 1 is veil_net_irecv; VEIL_ERR_INVAL for n < 1 or a NULL handle.
 */
int veil_net_irecv_tiles(veil_net_t *net, const starpu_data_handle_t *h, int n, int peer,
                         uint64_t tag);

/** How a combining receive folds the message into its handle. */
enum veil_net_combine {
    VEIL_NET_COMBINE_ADD64 = 1, /* word by word, 64-bit wrap-around sum (arithmetic shares) */
    VEIL_NET_COMBINE_XOR = 2    /* XOR (binary shares) */
};

/**
 * As veil_net_irecv into a vector of 8-byte words, but the message is folded into h word by
 * word (op ADD64: wrap-around sum; XOR) instead of overwriting it: h is held in read-write mode,
 * after the tasks and sends posted on h before this call, until the whole message is in. The sum
 * of an open thus lands in the handle that holds this party's own term with no task of its own,
 * and folding costs what a plain receive's copy costs. Same errors and threads as
 * veil_net_irecv, and VEIL_ERR_INVAL for another op or another kind of handle.
 */
int veil_net_irecv_combine(veil_net_t *net, starpu_data_handle_t h, int peer, uint64_t tag,
                           enum veil_net_combine op);

/**
 * Stops the session from the application's side, as an error of its own does: every peer gets an
 * ABORT with this process's reason (printf-style) and stops with an error naming it, and every
 * later call returns status. For a process whose work failed before it told its peers anything
 * (a bad feed): they would otherwise see a clean goodbye. Returns at once (the I/O thread sends
 * the aborts); no effect once the session failed. Any thread except a StarPU task or callback.
 */
void veil_net_abort(veil_net_t *net, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/** The session's number of computing parties (the dealer, when there is one, has id nparties). */
int veil_net_nparties(const veil_net_t *net);
/** Nonzero when the session has a dealer process. */
int veil_net_has_dealer(const veil_net_t *net);
/** The session id (VEIL_SESSION_BYTES bytes, the same on every process), owned by net. */
const uint8_t *veil_net_session_id(const veil_net_t *net);

#endif

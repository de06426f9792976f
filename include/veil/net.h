/*
 * veil/net.h — the public face of Veil's party-to-party network: opening and closing a session
 * from a configuration file, waiting for quiescence, and reading the per-peer traffic counters
 * that protocol tests assert against their formulas. Sending and receiving tensors is internal
 * (it is bound to StarPU data handles, see net/net_internal.h); no StarPU or ZeroMQ type appears
 * here.
 */
#ifndef VEIL_NET_H
#define VEIL_NET_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** A party's network session: one ZeroMQ mesh to every other process and one I/O thread. */
typedef struct veil_net veil_net_t;

/**
 * Traffic with one peer. Payload counters count tensor bytes only; wire counters count every
 * frame Veil hands to / takes from ZeroMQ (64-byte headers of data, hello, heartbeat, bye and
 * abort frames, plus payloads, plus the 32 bytes of the seal's prefix and tag of each data frame
 * on the sealed data channel) — not ZeroMQ's own framing or CURVE's 16-byte MACs.
 * A message is one isend/irecv; a frame is one chunk of it (or one control frame).
 * rounds is the session's round counter (see veil_net_stats_mark_round), the same for every peer.
 */
struct veil_net_stats {
    uint64_t msgs_sent;  /* completed isends to this peer */
    uint64_t msgs_recv;  /* messages fully received from this peer */
    uint64_t bytes_sent; /* payload bytes of those messages */
    uint64_t bytes_recv;
    uint64_t frames_sent; /* all frames, data chunks and control */
    uint64_t frames_recv;
    uint64_t wire_bytes_sent; /* headers + payloads of all frames */
    uint64_t wire_bytes_recv;
    uint64_t rounds; /* veil_net_stats_mark_round calls in this session */
};

/**
 * Opens a session from a configuration file (format in net/net_config.h) and a 32-byte plan digest
 * that every party must agree on. Returns only when every peer is connected, authenticated and
 * agreed on the handshake, or fails (VEIL_ERR_TIMEOUT naming the missing peers,
 * VEIL_ERR_MISMATCH naming what differs, VEIL_ERR_NET, ...; veil_last_error() says more).
 * On success *out owns the session; release it with veil_net_close. Not thread-safe against
 * other calls on the same session while it opens.
 */
int veil_net_open_file(const char *config_path, const uint8_t plan_digest[32], veil_net_t **out);

/**
 * Waits until every posted send and receive has completed and StarPU has no task left, looping
 * because a finished task may post new messages. Returns VEIL_OK, or the session's error
 * (VEIL_ERR_PEER_LOST, VEIL_ERR_PROTO, ...) once a peer failed — never hangs on a dead peer:
 * bounded by the configured silence timeout. Call from the application thread, not from a task.
 */
int veil_net_wait_all(veil_net_t *net);

/**
 * Closes the session: waits for outstanding requests, says goodbye to every peer and waits (at
 * most the silence timeout) for their goodbye so no message in flight is lost, then frees
 * everything. NULL-safe; sets *net to NULL. Logs the counters at info level. Returns VEIL_OK
 * when the session ended cleanly, else its error (a peer that aborted or was lost, before or
 * while closing; veil_last_error() names it): a process whose own work was done learns here
 * that the session as a whole failed.
 */
int veil_net_close(veil_net_t **net);

/** VEIL_OK while the session is healthy, else its error (veil_last_error() gets the message). */
int veil_net_status(veil_net_t *net);

/** This process's id (parties 0..N-1, the dealer N) and the number of processes (N + dealer). */
int veil_net_self(const veil_net_t *net);
int veil_net_nprocs(const veil_net_t *net);

/**
 * Marks the start of one communication round. Protocol code calls it once per round — one
 * round is one set of messages that may all be in flight together, i.e. that none of them
 * waits for another message of the same round (e.g. a masked open of many tensors at once is
 * one round; a Beaver multiplication's open of D and E together is one round). Thread-safe.
 */
void veil_net_stats_mark_round(veil_net_t *net);

/** Copies the counters for traffic with peer (0..nprocs-1, not self) into *out. Thread-safe. */
int veil_net_stats_get(veil_net_t *net, int peer, struct veil_net_stats *out);

/** Logs every peer's counters at info level (VEIL_LOG=info shows them). */
void veil_net_stats_log(veil_net_t *net);

#ifdef __cplusplus
}
#endif
#endif

/*
 * net_internal.h — the session object shared by net/'s files and the internal API bound to
 * StarPU handles (isend / irecv), never installed. Threads: application threads post requests
 * (comm.c); StarPU calls the acquire callbacks from any thread; ONE I/O thread (io.c, io_recv.c,
 * io_send.c) does all reading from the sockets, matching, pacing and failure detection, and all
 * sending and delivering but for small messages, which the thread of their acquire callback
 * sends, or copies in from a message already held, itself when the I/O thread is between turns
 * (INLINE SENDS in io.c); whoever runs a turn holds iomu, which guards the sockets and everything
 * marked "I/O thread only". Fields are grouped by who may touch them.
 */
#ifndef VEIL_NET_INTERNAL_H
#define VEIL_NET_INTERNAL_H

#include "net/comm.h"
#include "net/idle.h"
#include "net/net_config.h"
#include "net/seal.h"
#include "veil/net.h"

#include <pthread.h>
#include <starpu.h>
#include <stddef.h>
#include <stdint.h>
#include <zmq.h>

struct veil_harness_party;

/* ---- tunables -------------------------------------------------------------------------------- */
struct veil_net_options {
    double connect_timeout_s; /* open fails after this without every handshake; default 0:
                                 the configuration's timeout_s (the silence timeout) */
    size_t chunk_bytes;       /* payload bytes per data frame; default 512 KiB (bench) */
    size_t pool_bytes;        /* send staging pool; default 16 MiB */
    size_t early_cap_bytes;   /* bytes held for messages whose irecv is not posted; default 1 GiB */
    int data_channel;         /* 1 (default): under CURVE, tensor chunks to us come on the sealed
                                 data channel (net/data_channel.c); 0: on the CURVE connection */
    int data_port;            /* the data channel's TCP port; default 0: one the kernel picks */
    int spin_us;              /* while a request is pending, how long the I/O thread keeps
                                 looking, yielding its core between looks, before it sleeps
                                 (net/io.c); default 0: it sleeps at once */
    long inline_send;         /* a send of at most this many bytes is handed to ZeroMQ by the
                                 thread whose acquire callback found its data ready (a receive
                                 whose message landed first is completed by it), when the I/O
                                 thread is not in a turn (net/io.c, INLINE SENDS); default 65536,
                                 0: everything goes through the I/O thread */
};
/** Defaults, then the environment: VEIL_NET_CHUNK, VEIL_NET_POOL, VEIL_NET_EARLY_CAP (bytes),
 *  VEIL_NET_CONNECT_TIMEOUT (seconds), VEIL_NET_DATA_CHANNEL (aes-gcm or curve),
 *  VEIL_NET_DATA_PORT, VEIL_NET_SPIN_US (microseconds), VEIL_NET_INLINE_SEND (bytes). */
void veil_net_options_defaults(struct veil_net_options *o);

/* ---- staging buffer pool (pool.c): fixed-size buffers, thread-safe get/put ---------------------
 */
struct veil_net_pool;
/** count buffers of size bytes, allocated now. wake(arg) is called when a put refills an empty
 * pool. */
struct veil_net_pool *veil_net_pool_new(size_t count, size_t size, void (*wake)(void *), void *arg);
/** Frees every buffer (none may still be in ZeroMQ's hands); NULL-safe, sets *p = NULL. */
void veil_net_pool_destroy(struct veil_net_pool **p);
/** A buffer or NULL when all are in use (never allocates). */
void *veil_net_pool_get(struct veil_net_pool *p);
/** Returns buf to the pool; callable from any thread (it is ZeroMQ's free function). */
void veil_net_pool_put(struct veil_net_pool *p, void *buf);
/** zmq_free_fn adaptor: hint is the pool. */
void veil_net_pool_zmq_free(void *data, void *hint);
/** How many buffers are free now (thread-safe). */
size_t veil_net_pool_available(struct veil_net_pool *p);

/* ---- requests ----------------------------------------------------------------------------- */
enum { VEIL_REQ_SEND = 1, VEIL_REQ_RECV = 2 };
struct veil_net_inmsg;

struct veil_net_req {
    struct veil_net *net;
    int kind;
    int peer;
    uint64_t tag;
    uint64_t seq; /* posting order; a send's is renewed when round robin moves it to the back */
    starpu_data_handle_t handle;   /* the first (only, but for a tiled receive) handle */
    starpu_data_handle_t *handles; /* a tiled receive's nhandles handles (owned), else NULL */
    uint64_t *ends;                /* tiled: end offset of each handle's bytes in the message */
    uint8_t **ptrs;                /* tiled: each handle's main-memory bytes, once acquired */
    int nhandles;                  /* 1, or a tiled receive's count */
    int combine;                   /* recv: 0 copy, or enum veil_net_combine (one handle) */
    uint8_t part[8];               /* combine: the bytes of a word split across chunks */
    int nheld;                     /* handles whose acquire was requested (released when done) */
    int nacquired, ntarget;        /* tiled: acquire callbacks so far, and the count that
                                      completes them (both atomic; net/comm.c) */
    size_t size;
    int region;     /* trace region current when it was posted (base/trace.h) */
    double t_first; /* trace: send's first chunk staged (I/O thread, only while tracing) */
    /* set by the posting thread / callback before the request is queued */
    int acquire_failed;
    struct veil_net_req *post_next; /* posted queue (under net->mu) */
    struct veil_net_req *acq_next;  /* acquired queue (under net->mu) */
    /* I/O thread only */
    int acquired;
    int listed; /* on its peer's sends / recvs list */
    uint8_t *ptr;
    size_t off;                 /* send: bytes already staged */
    int head;                   /* send: first unfinished send of its (peer, tag): may be chunked */
    struct veil_net_inmsg *msg; /* recv: the incoming message bound to it */
    struct veil_net_req *same_next; /* send: next send posted to this peer with this tag */
    struct veil_net_req *next, *prev;
    struct veil_net_req *ready_next, *ready_prev; /* send: links of its peer's ready list */
};

/* Frees r and what it owns (no release of its handles: veil_net_req_done's job). */
void veil_net_req_free(struct veil_net_req *r);

/* An incoming message (I/O thread only): bound to a receive, or held as early arrival. */
struct veil_net_inchunk {
    zmq_msg_t msg;
    uint64_t offset;
    uint32_t skip, len; /* the chunk's bytes in msg: len of them from byte skip */
    int capped; /* counted in early_bytes: no receive was posted for it when it came */
    struct veil_net_inchunk *next;
};
struct veil_net_inmsg {
    uint64_t tag;
    uint64_t total;
    uint64_t got;           /* bytes received so far */
    uint64_t copied;        /* bytes copied into the bound receive */
    double t_first, t_last; /* trace: first and last chunk arrived (only while tracing) */
    struct veil_net_req *req;
    struct veil_net_inchunk *first, *last; /* received, not yet copied */
    struct veil_net_inmsg *next, *prev;
};

/* A staged outgoing frame waiting for its emulated release time or for ZeroMQ to accept it. */
struct veil_net_outframe {
    double at;
    uint8_t hdr[VEIL_FRAME_HEADER_BYTES];
    void *buf; /* pool buffer or NULL */
    uint32_t len;
    uint32_t ends_msg; /* 1: last frame of a message of `total` payload bytes */
    uint32_t sealed;   /* 1: buf holds the whole sealed frame (len bytes) for the data channel */
    uint64_t total;
    /* trace, meaningful on the last frame: the message's tag, region and first staging time */
    uint64_t tag;
    double t_first;
    int region;
};

/* Per-peer counters: written by the I/O thread, read by anyone (relaxed atomics). */
struct veil_net_counters {
    uint64_t msgs_sent, msgs_recv, bytes_sent, bytes_recv;
    uint64_t frames_sent, frames_recv, wire_sent, wire_recv;
};

/* The connections with a peer, as a failure message names them. */
enum veil_net_link {
    VEIL_NET_LINK_TO = 0,        /* our CURVE DEALER to it */
    VEIL_NET_LINK_FROM = 1,      /* its DEALER to our CURVE ROUTER */
    VEIL_NET_LINK_DATA_TO = 2,   /* our data-channel DEALER to it */
    VEIL_NET_LINK_DATA_FROM = 3, /* its data-channel DEALER to our data ROUTER */
};

/* One of our ROUTERs' side of a peer's connection: the descriptor its messages come on (ZMQ_SRCFD,
 * -1 until known) and that socket's inode, so that a disconnection event naming the descriptor
 * can be told from one of an earlier connection whose number was reused; a disconnection that
 * named it, confirmed after a grace, and the ZMTP error reported just before it (0: none). */
struct veil_net_conn_watch {
    int fd;
    unsigned long long ino;
    int suspect_fd;
    double suspect_at;
    uint32_t drop_code;
};

struct veil_net_peer_state {
    void *dealer;
    int hello_ok; /* its hello was received and agreed */
    int acked;    /* it sent something after its hello: it agreed with ours */
    int bye;      /* it said goodbye */
    int bye_out;  /* our goodbye to it is queued in ZeroMQ */
    double last_heard;
    double next_heartbeat;
    struct veil_link_emulator emu;
    struct veil_net_req *sends, *sends_tail;
    /* the sends whose next chunk may be staged now (acquired, the first unfinished one of their
     * tag), in the order of the sends list (by seq): the staging loop reads its head instead of
     * walking every posted send (a plan posts hundreds ahead, most not yet acquired) */
    struct veil_net_req *ready, *ready_tail;
    /* open-addressing map tag -> last unfinished send with that tag (keeps same-tag order in
     * O(1) per message): cap is a power of two, 0 when not yet allocated */
    struct veil_net_tagslot {
        uint64_t tag;
        struct veil_net_req *last; /* NULL: empty slot */
    } * tagmap;
    size_t tagmap_cap, tagmap_used;
    struct veil_net_req *recvs, *recvs_tail;
    struct veil_net_inmsg *in, *in_tail;
    struct veil_net_outframe *outq; /* ring of outq_cap */
    int outq_head, outq_count, outq_cap;
    int out_blocked; /* ZeroMQ said EAGAIN: wait for POLLOUT */
    /* The data channel (net/data_channel.c). To the peer: its plain DEALER (NULL: data goes on
     * the CURVE dealer), the sealing state keyed by the peer's hello, frames sealed and frames
     * handed to ZeroMQ (announced in heartbeats and the goodbye). From the peer: the key we
     * chose and sent in our hello, the opening state, frames opened (the next counter), the
     * count it announced, since when that count has been ahead with nothing arriving, and the
     * ROUTER routing id its first authentic frame came with. */
    void *ddealer;
    int dout_blocked;
    struct veil_seal seal_out, seal_in;
    uint8_t key_in[VEIL_SEAL_KEY_BYTES];
    uint64_t dsealed, dflushed;
    uint64_t drecv, dannounced;
    double dstall_since;
    uint8_t drid[16];
    size_t drid_len;
    struct veil_net_counters ctr;
    void *dmonitor;    /* PAIR receiving the DEALER's disconnection events (peers.c) */
    void *ddmonitor;   /* the same for the data channel's DEALER */
    double dropped_at; /* when an established connection with it dropped; 0: never */
    int dropped_link;  /* which one: enum veil_net_link */
    /* Our ROUTERs' side of the connections from it (peers.c): [0] the CURVE ROUTER's, [1] the
     * data ROUTER's */
    struct veil_net_conn_watch from[2];
};

/* Whether a peer is done sending: it said goodbye, and every data-channel frame its goodbye
 * counts has arrived (a drop of a connection with it matters until then). */
static inline int veil_net_peer_done(const struct veil_net_peer_state *ps)
{
    return ps->bye && ps->drecv >= ps->dannounced;
}

enum { VEIL_NET_OPENING = 0, VEIL_NET_READY, VEIL_NET_FAILED };

struct veil_net {
    /* immutable after open */
    struct veil_net_config cfg;
    struct veil_net_options opt;
    int nprocs;
    int self;
    void *ctx;
    void *router;
    void *zap;
    void *monitor; /* PAIR receiving the ROUTER's handshake-failure events */
    void *drouter; /* the data channel's plain ROUTER (NULL: none), bound on dport */
    int dport;
    int efd;       /* eventfd: wakes the I/O thread */
    uint8_t keys[VEIL_NET_MAX_PROCS][32];
    struct veil_net_pool *pool;
    pthread_t thread;
    int thread_started;
    int idle_token; /* veil_net_idle_session_open's, for close */

    /* iomu: held by whoever runs a turn of the I/O thread's work, the I/O thread itself or a
     * thread sending inline (net/io.c); everything under "I/O thread only" below is under it */
    pthread_mutex_t iomu;
    int inline_turn; /* under iomu: the turn is an inline send's */
    int undrained;   /* under iomu: a receive budget ran out this turn (net/io_poll.c) */

    /* shared, under mu */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct veil_net_req *post_head, *post_tail;
    struct veil_net_req *acq_head, *acq_tail;
    uint64_t pending; /* posted requests not yet released */
    uint64_t posted_total;
    int io_busy; /* frames staged but not handed to ZeroMQ */
    int state;
    int status;
    char errmsg[512];
    int stop;      /* close asked the I/O thread to finish */
    int abort_req; /* veil_net_abort asked the I/O thread to stop the session */
    int abort_status;
    char abort_msg[384];
    int exited; /* the I/O thread has finished */
    uint64_t rounds;
    /* incoming messages the I/O thread holds (in its peers' in lists): an acquired receive
     * wakes it only while some are (net/comm.c, acquired_cb) */
    size_t in_held;

    /* I/O thread only (under iomu: the I/O thread's turn or an inline send's) */
    struct veil_net_peer_state peers[VEIL_NET_MAX_PROCS];
    uint64_t next_seq;
    size_t early_bytes;
    int outq_total;
    int bye_sent;
    double bye_sent_at; /* when (a peer closes its connections only after our goodbye) */
    double close_deadline;
    char refused[8][VEIL_Z85_KEY_CHARS + 1];
    int nrefused;
    int nhandshake_failures;
    double next_drop_check; /* when peers.c next drains the DEALERs' monitors */
    double spin_off_until;  /* no spinning before this (net/io_poll.c) */
    uint64_t spins, spin_hits, spin_backoffs; /* relaxed atomics: veil_net_spin_counts */
    uint64_t inline_msgs;      /* relaxed atomic: messages an inline turn handed over whole */
    uint64_t direct_waits;     /* relaxed atomic: the loop's sleeps on the descriptors */
    uint64_t inline_recvs;     /* relaxed atomic: receives an inline turn completed */
    uint32_t last_proto_error; /* the ROUTER monitor's previous event, when a ZMTP error */
    void *dmon;                /* PAIR receiving the data ROUTER's disconnection events */
    uint32_t dlast_proto_error;
    double stall_at;           /* a message on the ROUTER failed CURVE decoding (peers.c); 0 */
    double stall_last;         /* the latest such failure (a later one re-arms the check) */
    uint32_t stall_code;
    uint64_t dgarbage; /* frames on the data ROUTER dropped as not authentic */
};

/* ---- internal API (mesh.c); isend / irecv / abort are net/comm.h, the seam tasks/ uses ------- */

/**
 * Opens a session described by cfg (copied). opts NULL: veil_net_options_defaults. Same
 * contract as veil_net_open_file.
 */
int veil_net_open(const struct veil_net_config *cfg, const struct veil_net_options *opts,
                  veil_net_t **out);

/**
 * Fills cfg from the harness identity (ids, endpoints, session) plus CURVE keys: public_keys
 * holds one Z85 public key per process (parties then dealer) and secret_key this process's
 * secret key; with public_keys NULL the keys are left empty (set them, or set
 * insecure_plaintext). Defaults elsewhere (veil_net_config_defaults).
 */
int veil_net_config_from_harness(const struct veil_harness_party *me,
                                 const char (*public_keys)[VEIL_Z85_KEY_CHARS + 1],
                                 const char *secret_key, struct veil_net_config *cfg);

/** How many times this session's I/O thread spun before sleeping (VEIL_NET_SPIN_US), how many of
 *  those spins found something to do, and how many ended because a yield lost the core for over a
 *  millisecond (net/io.c). Any thread; a snapshot. */
void veil_net_spin_counts(veil_net_t *net, uint64_t *spins, uint64_t *hits, uint64_t *backoffs);

/** How many messages this session's inline turns handed to ZeroMQ whole, and how many receives
 *  they completed from messages that had landed (VEIL_NET_INLINE_SEND, net/io.c). Any thread; a
 *  snapshot. */
uint64_t veil_net_inline_count(veil_net_t *net);
uint64_t veil_net_inline_recv_count(veil_net_t *net);

/** How many times this session's I/O thread slept on its descriptors without zmq_poll (THE
 *  DIRECT WAIT, net/io_poll.c). Any thread; a snapshot. */
uint64_t veil_net_direct_wait_count(veil_net_t *net);

/* ---- between the files of net/ -------------------------------------------------------------- */
/** heap.c: sets glibc's malloc thresholds so that the freed receive buffers of a round stay with
 * the process for the next (why: heap.c); process-wide, called when a session opens. 1 when set,
 * 0 when left alone (the environment tunes malloc itself, a sanitizer build, another libc). */
int veil_net_keep_heap(size_t chunk_bytes);
/** heap.c: whether the environment tunes glibc's malloc (GLIBC_TUNABLES, MALLOC_*_). */
int veil_net_heap_user_tuned(void);
/** mesh.c: creates the context and sockets (ZAP handler first), bound and connected. */
int veil_net_mesh_create(struct veil_net *net);
/** mesh.c: closes every socket and the context; linger_ms for the dealers. */
void veil_net_mesh_destroy(struct veil_net *net, int linger_ms);
/** peers.c: answers pending ZAP requests (I/O thread). */
int veil_net_zap_serve(struct veil_net *net);
/** peers.c: logs the ROUTER's handshake failures, and fails the session when an established
 *  connection with a peer (either way) dropped and no goodbye from it followed, or it dropped
 *  before our goodbye (I/O thread). */
void veil_net_monitor_serve(struct veil_net *net);
/** peers.c: whether a drop that is not a peer's orderly close (seen before our goodbye, or of a
 *  peer not done) still awaits its verdict: the session must not say goodbye or close before
 *  veil_net_monitor_serve judged it (I/O thread). */
int veil_net_drops_pending(const struct veil_net *net);
/** peers.c: notes the descriptor of the connection peer p's message came on, to our CURVE ROUTER
 *  (data 0) or data ROUTER (1) (msg: a frame of the message after the routing id; its
 *  ZMQ_SRCFD). */
void veil_net_peer_seen_on(struct veil_net *net, int p, int data, zmq_msg_t *msg);
/** peers.c: starts the monitor of our DEALER to peer p (its disconnections), the CURVE one (data
 *  0) or the data channel's (1), before it connects. */
int veil_net_dealer_monitor(struct veil_net *net, int p, int data);
/** peers.c: starts the monitor of a ROUTER: the CURVE one's (handshake failures and
 *  disconnections, into net->monitor) or the data ROUTER's (disconnections, net->dmon). */
int veil_net_router_monitor(struct veil_net *net, int data);
/** peers.c: "party 2" or "dealer (id 3)". */
const char *veil_net_peer_name(const struct veil_net *net, int id, char buf[32]);

/** data_channel.c: binds the data ROUTER when this session has a data channel (CURVE on, the
 *  option set, a tcp:// endpoint), and draws the key each peer is to seal with. */
int veil_net_data_create(struct veil_net *net);
/** data_channel.c: frees the cipher states and wipes the keys we drew. */
void veil_net_data_free_keys(struct veil_net *net);

/** io.c: the I/O thread's body (the loop; io_recv.c and io_send.c are its halves). */
void *veil_net_io_main(void *arg);
/** io.c: an inline turn, by a thread holding iomu that is not the I/O thread: takes the queues
 *  (completing receives whose messages are held) and hands what can go now to ZeroMQ. Returns 1
 * when the I/O thread must look (frames left staged, a peer pushed back, the session failed), 0
 * when nothing is left for it. */
int veil_net_io_inline(struct veil_net *net);
/** io.c: wakes the I/O thread (any thread; async-signal-safe write to the eventfd). */
void veil_net_wake(struct veil_net *net);

/** stats.c: counter helpers for the I/O thread. */
void veil_net_count_sent(struct veil_net *net, int peer, uint64_t wire, uint64_t payload_msg,
                         int msg_done);
void veil_net_count_recv(struct veil_net *net, int peer, uint64_t wire, uint64_t payload_msg,
                         int msg_done);

/** The most bytes this process holds for messages whose receive is not posted yet
 *  (VEIL_NET_EARLY_CAP; 1 GiB by default): beyond it the session fails. */
size_t veil_net_early_cap(const veil_net_t *net);

#endif

/*
 * io_internal.h — what the I/O thread's files share, never installed: io.c (the loop, the
 * requests other threads post, timers), io_recv.c (matching what peers send to posted receives),
 * io_send.c (staging, pacing and sending) and io_core.c (retiring requests, control frames,
 * failure), which the other three call and which calls none of them. Everything here runs under
 * iomu: on the I/O thread, or in an inline send's turn (net/io.c, INLINE SENDS), except where a
 * comment says otherwise.
 */
#ifndef VEIL_NET_IO_INTERNAL_H
#define VEIL_NET_IO_INTERNAL_H

#include "net/net_internal.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/** Whether the session failed (the state is written only by the I/O thread). */
static inline int veil_net_io_failed(const struct veil_net *net)
{
    return net->state == VEIL_NET_FAILED;
}

static inline void veil_net_req_unlink(struct veil_net_req **head, struct veil_net_req **tail,
                                       struct veil_net_req *r)
{
    if (r->prev)
        r->prev->next = r->next;
    else
        *head = r->next;
    if (r->next)
        r->next->prev = r->prev;
    else
        *tail = r->prev;
    r->next = r->prev = NULL;
}

static inline void veil_net_req_append(struct veil_net_req **head, struct veil_net_req **tail,
                                       struct veil_net_req *r)
{
    r->next = NULL;
    r->prev = *tail;
    if (*tail)
        (*tail)->next = r;
    else
        *head = r;
    *tail = r;
}

/* The incoming-message list of a peer. Both operations keep net->in_held, the count of messages
 * the I/O thread holds, which an acquired receive reads under net->mu (net/comm.c). */
static inline void veil_net_inmsg_append(struct veil_net *net, struct veil_net_peer_state *ps,
                                         struct veil_net_inmsg *m)
{
    pthread_mutex_lock(&net->mu);
    net->in_held++;
    pthread_mutex_unlock(&net->mu);
    m->prev = ps->in_tail;
    if (ps->in_tail)
        ps->in_tail->next = m;
    else
        ps->in = m;
    ps->in_tail = m;
}

static inline void veil_net_inmsg_unlink(struct veil_net *net, struct veil_net_peer_state *ps,
                                         struct veil_net_inmsg *m)
{
    pthread_mutex_lock(&net->mu);
    net->in_held--;
    pthread_mutex_unlock(&net->mu);
    if (m->prev)
        m->prev->next = m->next;
    else
        ps->in = m->next;
    if (m->next)
        m->next->prev = m->prev;
    else
        ps->in_tail = m->prev;
}

/** The frame header of a message from this process in this session. */
static inline void veil_net_io_header(const struct veil_net *net, int type, uint64_t tag,
                                      uint64_t offset, uint64_t total, uint32_t length,
                                      uint8_t out[VEIL_FRAME_HEADER_BYTES])
{
    struct veil_frame_header h = {
        .version = VEIL_FRAME_VERSION,
        .type = (uint16_t)type,
        .sender = (uint32_t)net->self,
        .tag = tag,
        .offset = offset,
        .total = total,
        .length = length,
    };
    memcpy(h.session, net->cfg.session, VEIL_SESSION_BYTES);
    veil_frame_encode(&h, out);
}

/** Whether the socket peer p's data frames go to pushed back (the data channel's DEALER when it
 *  has one, else the CURVE one). */
static inline int veil_net_data_blocked(const struct veil_net_peer_state *ps)
{
    return ps->ddealer ? ps->dout_blocked : ps->out_blocked;
}

/* ---- io_core.c ------------------------------------------------------------------------------ */
/** Stops the session with status and a printf-style message (first error wins), sends ABORT to
 *  every peer, releases every acquired handle. Returns status. */
int veil_net_io_fail(struct veil_net *net, int status, const char *fmt, ...) VEIL_PRINTF(3, 4);
/** Drops everything the I/O thread holds: acquired handles released, early arrivals and staged
 *  frames freed (on failure, and when the thread exits). */
void veil_net_io_drop_all(struct veil_net *net);
/** Gives r's handle back to StarPU and frees r (the posting thread waits on the count). */
void veil_net_req_done(struct veil_net *net, struct veil_net_req *r);
/* Writes n bytes of r's message at offset off into its acquired handle, or across the handles of
 * a tiled receive (off + n <= r->size: every chunk is bounded by its message's total, which is
 * r->size once the message is bound to r). */
void veil_net_req_write(struct veil_net_req *r, uint64_t off, const void *src, size_t n);
/** This process's hello, as sent to every peer and compared with theirs. */
void veil_net_io_hello(const struct veil_net *net, struct veil_hello *out);

/** Reads one message from a ROUTER (sock) into part[0..*n-1] (at most 3 parts kept; *extra
 *  counts the parts beyond, closed): 1 when one was read, 0 when none is waiting, -1 when the
 *  receive failed (the session then failed, naming what). */
int veil_net_recv_parts(struct veil_net *net, void *sock, zmq_msg_t part[3], int *n, int *extra);

/** Sends a control frame to peer p past the pacing queue; -1 when ZeroMQ pushed back (the frame
 *  is then not sent). */
int veil_net_send_control(struct veil_net *net, int p, int type, const void *payload, size_t len);

/* ---- io_recv.c ------------------------------------------------------------------------------ */
/** Reads what the ROUTER holds (a bounded number of messages) and handles every frame. */
int veil_net_io_recv(struct veil_net *net, double now);

/* The loop's wait (io_poll.c): zmq_poll, spinning first when spin and VEIL_NET_SPIN_US ask, or
 * with direct a ppoll on the descriptors (THE DIRECT WAIT there); at most wait_s seconds. Each
 * item's revents has ZMQ_POLLIN when it may have something to read. Returns how many items are
 * ready (0 at the bound), or -1 with errno / zmq_errno. */
int veil_net_io_poll(struct veil_net *net, zmq_pollitem_t *items, int n, double wait_s, int spin,
                     int direct);
/** Copies what arrived of m into its bound, acquired receive; completes it when all is there. */
void veil_net_io_deliver(struct veil_net *net, int p, struct veil_net_inmsg *m);
/** Binds incoming message m from peer p to receive r (sizes must agree, else the session fails). */
int veil_net_io_bind(struct veil_net *net, int p, struct veil_net_inmsg *m, struct veil_net_req *r);

/** Handles an authentic data frame from the data channel (data_channel.c): h decoded from it,
 *  its payload at msg's data + skip, wire the frame's size on the wire. */
int veil_net_io_sealed_data(struct veil_net *net, int p, const struct veil_frame_header *h,
                            zmq_msg_t *msg, size_t skip, size_t wire, double now);

/* ---- data_channel.c (the sealed data channel; net_internal.h has create / destroy) ---------- */
/** Our data port and the key we drew for peer p, into the hello we send p. */
void veil_net_data_hello(const struct veil_net *net, int p, struct veil_hello *h);
/** After p's hello agreed: connects the DEALER to the data channel it offers and keys sealing
 *  with its key (nothing when it offers none). VEIL_OK or an error with its message. */
int veil_net_data_connect(struct veil_net *net, int p, const struct veil_hello *theirs);
/** Reads what the data ROUTER holds (bounded) and hands authentic frames on. */
int veil_net_data_recv(struct veil_net *net, double now);
/** A heartbeat's or goodbye's count of data-channel frames from p (never decreasing). */
int veil_net_data_announced(struct veil_net *net, int p, const struct veil_frame_header *h);
/** Fails the session when a peer's announced frames have not arrived for a silence timeout. */
void veil_net_data_timers(struct veil_net *net, double now);

/* ---- io_send.c ------------------------------------------------------------------------------ */
/** Same-tag order: the slot holding the last unfinished send with tag, or NULL. */
struct veil_net_tagslot *veil_net_tag_find(struct veil_net_peer_state *ps, uint64_t tag);
/** Records r as the last unfinished send with tag; -1 when out of memory. */
int veil_net_tag_put(struct veil_net_peer_state *ps, uint64_t tag, struct veil_net_req *r);
/** The send of this peer whose next chunk may be staged now, or NULL. */
static inline struct veil_net_req *veil_net_io_eligible(const struct veil_net_peer_state *ps)
{
    return ps->ready;
}
/** r (a send on ps's sends list) was acquired: it joins the ready list if it heads its tag. */
void veil_net_io_send_acquired(struct veil_net_peer_state *ps, struct veil_net_req *r);
/** Stages chunks round-robin over the peers (at most budget of them, 0: the loop's own bound)
 *  and hands released frames to ZeroMQ; -1 when the session failed. */
int veil_net_io_pump(struct veil_net *net, double now, int budget);

#endif

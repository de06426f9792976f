/*
 * io_send.c — the I/O thread's sending half: staging outgoing tensors in chunks from the buffer
 * pool (round-robin over the acquired sends of each peer, which a ready list per peer holds in
 * the sends list's order, so that finding the next costs nothing however many sends a plan posts
 * ahead; the messages of one (peer, tag) strictly in posting order through a tag map), sealing each
 * in its staging buffer when the peer offered a data channel (net/seal.h), pacing them through the
 * link emulator, and handing released frames to the DEALERs (the data channel's, else the CURVE
 * one); control frames (hello, heartbeat, goodbye, abort) bypass the queue. When ZeroMQ pushes
 * back, the peer is marked and the loop (io.c) polls for POLLOUT.
 */
#include "config.h"
#include "base/base_internal.h"
#include "base/trace.h"
#include "net/io_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define STAGE_BUDGET 64 /* chunks staged per loop turn */

/* ---- data frames --------------------------------------------------------------------------------
 */

static int emulating(const struct veil_net *net)
{
    return net->cfg.link.latency_s > 0 || net->cfg.link.bandwidth_Bps > 0;
}

/* ---- same-tag ordering: tag -> last unfinished send (linear probing, backward-shift delete) -- */

static size_t tag_hash(uint64_t tag, size_t cap)
{
    return (size_t)((tag * 0x9e3779b97f4a7c15u) >> 17) & (cap - 1);
}

struct veil_net_tagslot *veil_net_tag_find(struct veil_net_peer_state *ps, uint64_t tag)
{
    if (!ps->tagmap_cap)
        return NULL;
    for (size_t i = tag_hash(tag, ps->tagmap_cap);; i = (i + 1) & (ps->tagmap_cap - 1)) {
        if (!ps->tagmap[i].last)
            return NULL;
        if (ps->tagmap[i].tag == tag)
            return &ps->tagmap[i];
    }
}

int veil_net_tag_put(struct veil_net_peer_state *ps, uint64_t tag, struct veil_net_req *r)
{
    if (2 * (ps->tagmap_used + 1) > ps->tagmap_cap) { /* grow: amortised, not per message */
        size_t cap = ps->tagmap_cap ? 2 * ps->tagmap_cap : 64;
        struct veil_net_tagslot *old = ps->tagmap, *t = calloc(cap, sizeof *t);
        if (!t)
            return -1;
        size_t oldcap = ps->tagmap_cap;
        ps->tagmap = t;
        ps->tagmap_cap = cap;
        ps->tagmap_used = 0;
        for (size_t i = 0; i < oldcap; i++)
            if (old[i].last)
                veil_net_tag_put(ps, old[i].tag, old[i].last);
        free(old);
    }
    size_t i = tag_hash(tag, ps->tagmap_cap);
    while (ps->tagmap[i].last)
        i = (i + 1) & (ps->tagmap_cap - 1);
    ps->tagmap[i].tag = tag;
    ps->tagmap[i].last = r;
    ps->tagmap_used++;
    return 0;
}

static void tag_del(struct veil_net_peer_state *ps, struct veil_net_tagslot *slot)
{
    size_t mask = ps->tagmap_cap - 1, i = (size_t)(slot - ps->tagmap), j = i;
    ps->tagmap[i].last = NULL;
    ps->tagmap_used--;
    for (;;) {
        j = (j + 1) & mask;
        if (!ps->tagmap[j].last)
            return;
        size_t home = tag_hash(ps->tagmap[j].tag, ps->tagmap_cap);
        /* move j back to i unless its home lies cyclically in (i, j] */
        if ((j > i && (home <= i || home > j)) || (j < i && home <= i && home > j)) {
            ps->tagmap[i] = ps->tagmap[j];
            ps->tagmap[j].last = NULL;
            i = j;
        }
    }
}

/* ---- the ready list: sends that may stage now, in the sends list's order (by seq) ---------- */

/* r is on the list: only a staged send is unlinked, and staging takes the list's head. */
static void ready_unlink(struct veil_net_peer_state *ps, struct veil_net_req *r)
{
    if (r->ready_prev)
        r->ready_prev->ready_next = r->ready_next;
    else
        ps->ready = r->ready_next;
    if (r->ready_next)
        r->ready_next->ready_prev = r->ready_prev;
    else
        ps->ready_tail = r->ready_prev;
    r->ready_next = r->ready_prev = NULL;
}

/* Inserts r (not on the list) after the last ready send posted before it: a short walk from the
 * back, since sends mostly become ready in posting order. */
static void ready_insert(struct veil_net_peer_state *ps, struct veil_net_req *r)
{
    struct veil_net_req *after = ps->ready_tail;
    while (after && after->seq > r->seq)
        after = after->ready_prev;
    r->ready_prev = after;
    r->ready_next = after ? after->ready_next : ps->ready;
    if (r->ready_next)
        r->ready_next->ready_prev = r;
    else
        ps->ready_tail = r;
    if (after)
        after->ready_next = r;
    else
        ps->ready = r;
}

void veil_net_io_send_acquired(struct veil_net_peer_state *ps, struct veil_net_req *r)
{
    if (r->head) /* else it joins when the send before it of its tag finishes */
        ready_insert(ps, r);
}

static void send_finished(struct veil_net *net, struct veil_net_peer_state *ps,
                          struct veil_net_req *r)
{
    veil_net_req_unlink(&ps->sends, &ps->sends_tail, r);
    ready_unlink(ps, r);
    if (r->same_next) {
        r->same_next->head = 1;
        if (r->same_next->acquired)
            ready_insert(ps, r->same_next);
    } else {
        struct veil_net_tagslot *slot = veil_net_tag_find(ps, r->tag);
        VEIL_ASSERT(slot && slot->last == r);
        tag_del(ps, slot);
    }
    veil_net_req_done(net, r);
}

/* Stages the next chunk of r into the peer's queue; 0 when the pool is empty. */
static int stage_chunk(struct veil_net *net, int p, struct veil_net_req *r, double now)
{
    struct veil_net_peer_state *ps = &net->peers[p];
    size_t len = r->size - r->off;
    if (len > net->opt.chunk_bytes)
        len = net->opt.chunk_bytes;
    const int sealed = ps->ddealer != NULL; /* on the data channel: one buffer holds it all */
    void *buf = NULL;
    if (len || sealed) {
        buf = veil_net_pool_get(net->pool);
        if (!buf)
            return 0;
    }
    if (r->off == 0 && veil_trace_active())
        r->t_first = veil_trace_now(); /* before the copy: staging is the message's work */
    struct veil_net_outframe *f = &ps->outq[(ps->outq_head + ps->outq_count) % ps->outq_cap];
    if (sealed) {
        uint8_t *b = buf;
        const size_t body = VEIL_FRAME_HEADER_BYTES + len;
        veil_net_io_header(net, VEIL_FRAME_DATA, r->tag, r->off, r->size, (uint32_t)len,
                           b + VEIL_SEAL_PREFIX_BYTES);
        /* the payload is encrypted straight from the tensor into the staging buffer */
        if (veil_seal_frame_from(&ps->seal_out, (uint32_t)net->self, ps->dsealed, b,
                                 VEIL_FRAME_HEADER_BYTES, len ? r->ptr + r->off : NULL, len)) {
            veil_net_pool_put(net->pool, buf);
            veil_net_io_fail(net, VEIL_ERR_CRYPTO, "%s", veil_last_error());
            return 0;
        }
        ps->dsealed++;
        f->len = (uint32_t)(body + VEIL_SEAL_OVERHEAD);
    } else {
        if (len)
            memcpy(buf, r->ptr + r->off, len);
        veil_net_io_header(net, VEIL_FRAME_DATA, r->tag, r->off, r->size, (uint32_t)len, f->hdr);
        f->len = (uint32_t)len;
    }
    f->sealed = (uint32_t)sealed;
    f->buf = buf;
    f->total = r->size;
    f->tag = r->tag;
    f->t_first = r->t_first;
    f->region = r->region;
    r->off += len;
    f->ends_msg = r->off == r->size;
    f->at = emulating(net) ? veil_link_emulator_release_time(
                                 &ps->emu, sealed ? f->len : len + VEIL_FRAME_HEADER_BYTES, now)
                           : 0;
    ps->outq_count++;
    net->outq_total++;
    if (f->ends_msg) {
        send_finished(net, ps, r);
    } else if (r != ps->sends_tail) { /* round robin among this peer's sends */
        veil_net_req_unlink(&ps->sends, &ps->sends_tail, r);
        veil_net_req_append(&ps->sends, &ps->sends_tail, r);
        r->seq = net->next_seq++; /* the back of the sends list, and of the ready list */
        ready_unlink(ps, r);
        ready_insert(ps, r);
    }
    return 1;
}

/* Hands frame f to peer p's socket: 1 sent, 0 ZeroMQ pushed back (the peer is marked blocked,
 * f stays queued), -1 the session failed. */
static int send_frame(struct veil_net *net, int p, struct veil_net_outframe *f)
{
    struct veil_net_peer_state *ps = &net->peers[p];
    zmq_msg_t m;
    if (f->sealed) { /* one frame on the data channel, handed over without a copy */
        /* A refused message would give its buffer back (the free function runs on close): ask
         * first whether the socket takes one. */
        int ev = 0;
        size_t evl = sizeof ev;
        if (zmq_getsockopt(ps->ddealer, ZMQ_EVENTS, &ev, &evl) != 0 || !(ev & ZMQ_POLLOUT)) {
            ps->dout_blocked = 1;
            return 0;
        }
        zmq_msg_init_data(&m, f->buf, f->len, veil_net_pool_zmq_free, net->pool);
        f->buf = NULL;
        if (zmq_msg_send(&m, ps->ddealer, ZMQ_DONTWAIT) < 0) {
            int e = zmq_errno();
            zmq_msg_close(&m);
            return veil_net_io_fail(net, VEIL_ERR_NET, "data channel send: %s", zmq_strerror(e)),
                   -1;
        }
        ps->dflushed++;
        veil_net_count_sent(net, p, f->len, f->total, f->ends_msg);
        return 1;
    }
    if (zmq_send(ps->dealer, f->hdr, sizeof f->hdr, ZMQ_DONTWAIT | (f->len ? ZMQ_SNDMORE : 0)) <
        0) {
        if (zmq_errno() == EAGAIN) {
            ps->out_blocked = 1;
            return 0;
        }
        return veil_net_io_fail(net, VEIL_ERR_NET, "send: %s", zmq_strerror(zmq_errno())), -1;
    }
    if (f->len) {
        zmq_msg_init_data(&m, f->buf, f->len, veil_net_pool_zmq_free, net->pool);
        f->buf = NULL;
        if (zmq_msg_send(&m, ps->dealer, ZMQ_DONTWAIT) < 0) {
            int e = zmq_errno();
            zmq_msg_close(&m);
            return veil_net_io_fail(net, VEIL_ERR_NET, "send payload: %s", zmq_strerror(e)), -1;
        }
    }
    veil_net_count_sent(net, p, VEIL_FRAME_HEADER_BYTES + f->len, f->total, f->ends_msg);
    return 1;
}

static int flush_outq(struct veil_net *net, int p, double now)
{
    struct veil_net_peer_state *ps = &net->peers[p];
    while (ps->outq_count > 0) {
        struct veil_net_outframe *f = &ps->outq[ps->outq_head];
        if (f->at > now)
            break;
        int sent = send_frame(net, p, f);
        if (sent <= 0)
            return sent < 0 ? -1 : VEIL_OK;
        if (f->ends_msg && net->inline_turn)
            __atomic_fetch_add(&net->inline_msgs, 1, __ATOMIC_RELAXED);
        if (f->ends_msg && veil_trace_active())
            veil_trace_message(VEIL_TRACE_SEND, p, f->tag, f->total, f->region, f->t_first,
                               veil_trace_now());
        ps->outq_head = (ps->outq_head + 1) % ps->outq_cap;
        ps->outq_count--;
        net->outq_total--;
    }
    return VEIL_OK;
}

int veil_net_io_pump(struct veil_net *net, double now, int budget)
{
    int starved = 0;
    if (budget <= 0)
        budget = STAGE_BUDGET;
    while (budget > 0 && !starved) {
        int progress = 0;
        for (int p = 0; p < net->nprocs && !starved; p++) {
            struct veil_net_peer_state *ps = &net->peers[p];
            if (p == net->self || ps->outq_count >= ps->outq_cap)
                continue;
            struct veil_net_req *r = veil_net_io_eligible(ps);
            if (!r)
                continue;
            if (!stage_chunk(net, p, r, now))
                starved = 1;
            else {
                progress = 1;
                budget--;
            }
        }
        if (!progress)
            break;
    }
    for (int p = 0; p < net->nprocs && !veil_net_io_failed(net); p++)
        if (p != net->self && !veil_net_data_blocked(&net->peers[p]))
            if (flush_outq(net, p, now))
                return -1;
    return 0;
}

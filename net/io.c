/*
 * io.c — the I/O thread: the only code that touches ZeroMQ sockets after open. One loop polls
 * the eventfd (requests posted / handles acquired / pool refilled), the ZAP socket, the ROUTER
 * (everything peers send us) and, when ZeroMQ pushed back, the DEALERs for POLLOUT. It stages
 * outgoing tensors in chunks from the buffer pool (round-robin over the acquired sends of each
 * peer, messages of one (peer, tag) strictly in posting order), paces them through the link
 * emulator (the poll timeout is the time to the next release; under a millisecond, which
 * zmq_poll cannot express, the thread sleeps in ppoll on the sockets' ZMQ_FDs and the eventfd
 * with a nanosecond timeout instead of spinning: an emulated wire must not take a core that a
 * real NIC would leave to the computation), matches incoming
 * chunks to posted receives (copying straight into the handle when it is acquired, else keeping
 * the ZeroMQ message as an early arrival, within a byte cap), sends heartbeats, detects silent
 * peers, and on any error stops the session: ABORT to every peer, every acquired handle released.
 */
#include "config.h"
#include "base/base_internal.h"
#include "base/trace.h"
#include "net/net_internal.h"

#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#define RECV_BUDGET 256 /* messages read per loop turn before sending gets its turn */
#define STAGE_BUDGET 64 /* chunks staged per loop turn */
#define MAX_POLL_MS 100 /* timer granularity for heartbeats and silence */

void veil_net_wake(struct veil_net *net)
{
    uint64_t one = 1;
    ssize_t r = write(net->efd, &one, sizeof one);
    (void)r; /* EAGAIN only when the counter is saturated: the thread is woken anyway */
}

static int failed(const struct veil_net *net)
{
    return net->state == VEIL_NET_FAILED; /* written only by this thread */
}

static void make_header(const struct veil_net *net, int type, uint64_t tag, uint64_t offset,
                        uint64_t total, uint32_t length, uint8_t out[VEIL_FRAME_HEADER_BYTES])
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

/* Control frames bypass the pacing queue. When ZeroMQ pushes back the frame is not sent and -1
 * is returned: a heartbeat or a goodbye is then owed and retried once the socket takes frames
 * again (timers, closing_done); an abort is best effort. */
static int send_control(struct veil_net *net, int p, int type, const void *payload, size_t len)
{
    uint8_t hdr[VEIL_FRAME_HEADER_BYTES];
    make_header(net, type, 0, 0, len, (uint32_t)len, hdr);
    void *d = net->peers[p].dealer;
    if (zmq_send(d, hdr, sizeof hdr, ZMQ_DONTWAIT | (len ? ZMQ_SNDMORE : 0)) < 0)
        return -1;
    if (len && zmq_send(d, payload, len, ZMQ_DONTWAIT) < 0)
        return -1; /* not reached: the parts of a message are queued together */
    veil_net_count_sent(net, p, VEIL_FRAME_HEADER_BYTES + len, 0, 0);
    return 0;
}

static void list_unlink_req(struct veil_net_req **head, struct veil_net_req **tail,
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

static void list_append_req(struct veil_net_req **head, struct veil_net_req **tail,
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

/* Gives the handle back to StarPU and retires the request. */
static void req_done(struct veil_net *net, struct veil_net_req *r)
{
    if (!r->acquire_failed)
        starpu_data_release_on_node(r->handle, STARPU_MAIN_RAM);
    free(r);
    pthread_mutex_lock(&net->mu);
    net->pending--;
    net->io_busy = net->outq_total > 0; /* a send's last frames may still be staged */
    pthread_cond_broadcast(&net->cv);
    pthread_mutex_unlock(&net->mu);
}

static void inmsg_free(struct veil_net *net, struct veil_net_inmsg *m)
{
    while (m->first) {
        struct veil_net_inchunk *c = m->first;
        m->first = c->next;
        net->early_bytes -= zmq_msg_size(&c->msg);
        zmq_msg_close(&c->msg);
        free(c);
    }
    free(m);
}

static void inmsg_unlink(struct veil_net_peer_state *ps, struct veil_net_inmsg *m)
{
    if (m->prev)
        m->prev->next = m->next;
    else
        ps->in = m->next;
    if (m->next)
        m->next->prev = m->prev;
    else
        ps->in_tail = m->prev;
}

/* Drops everything the I/O thread holds: acquired handles are released (so StarPU tasks never
 * wait on a dead session), requests still waiting for their acquire are released when it comes. */
static void drop_all(struct veil_net *net)
{
    for (int p = 0; p < net->nprocs; p++) {
        struct veil_net_peer_state *ps = &net->peers[p];
        struct veil_net_req **lists[2][2] = {{&ps->sends, &ps->sends_tail},
                                             {&ps->recvs, &ps->recvs_tail}};
        for (int l = 0; l < 2; l++) {
            while (*lists[l][0]) {
                struct veil_net_req *r = *lists[l][0];
                list_unlink_req(lists[l][0], lists[l][1], r);
                r->listed = 0;
                r->msg = NULL;
                if (r->acquired)
                    req_done(net, r);
            }
        }
        free(ps->tagmap);
        ps->tagmap = NULL;
        ps->tagmap_cap = ps->tagmap_used = 0;
        while (ps->in) {
            struct veil_net_inmsg *m = ps->in;
            inmsg_unlink(ps, m);
            inmsg_free(net, m);
        }
        while (ps->outq_count > 0) {
            veil_net_pool_put(net->pool, ps->outq[ps->outq_head].buf);
            ps->outq_head = (ps->outq_head + 1) % ps->outq_cap;
            ps->outq_count--;
        }
    }
    net->outq_total = 0;
}

/* Stops the session with status and a message (first error wins), tells every peer why. */
static int fail(struct veil_net *net, int status, const char *fmt, ...) VEIL_PRINTF(3, 4);
static int fail(struct veil_net *net, int status, const char *fmt, ...)
{
    if (failed(net))
        return status;
    char msg[sizeof net->errmsg];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    VEIL_LOG_ERR("net: %s", msg);
    for (int p = 0; p < net->nprocs; p++)
        if (p != net->self && !net->peers[p].bye)
            send_control(net, p, VEIL_FRAME_ABORT, msg, strlen(msg));
    /* The state first: a waiter woken by a release below must already see the failure. */
    pthread_mutex_lock(&net->mu);
    net->state = VEIL_NET_FAILED;
    net->status = status;
    memcpy(net->errmsg, msg, sizeof msg);
    pthread_mutex_unlock(&net->mu);
    drop_all(net);
    pthread_mutex_lock(&net->mu);
    net->io_busy = 0;
    pthread_cond_broadcast(&net->cv);
    pthread_mutex_unlock(&net->mu);
    return status;
}

/* ---- receiving ------------------------------------------------------------------------------ */

/* Copies whatever arrived into the bound, acquired receive; completes it when all is there. */
static void try_deliver(struct veil_net *net, int p, struct veil_net_inmsg *m)
{
    struct veil_net_req *r = m->req;
    if (!r || !r->acquired)
        return;
    while (m->first) {
        struct veil_net_inchunk *c = m->first;
        size_t n = zmq_msg_size(&c->msg);
        memcpy(r->ptr + c->offset, zmq_msg_data(&c->msg), n);
        m->first = c->next;
        net->early_bytes -= n;
        zmq_msg_close(&c->msg);
        free(c);
    }
    m->last = NULL;
    if (m->got < m->total)
        return;
    struct veil_net_peer_state *ps = &net->peers[p];
    if (veil_trace_active())
        veil_trace_message(VEIL_TRACE_RECV, p, m->tag, m->total, r->region, m->t_first, m->t_last);
    list_unlink_req(&ps->recvs, &ps->recvs_tail, r);
    inmsg_unlink(ps, m);
    free(m);
    req_done(net, r);
}

static int bind_msg(struct veil_net *net, int p, struct veil_net_inmsg *m, struct veil_net_req *r)
{
    if (r->size != m->total) {
        char name[32];
        return fail(net, VEIL_ERR_PROTO,
                    "message from %s with tag %llu has %llu bytes, the "
                    "posted receive holds %zu",
                    veil_net_peer_name(net, p, name), (unsigned long long)m->tag,
                    (unsigned long long)m->total, r->size);
    }
    m->req = r;
    r->msg = m;
    try_deliver(net, p, m);
    return VEIL_OK;
}

static int on_data(struct veil_net *net, int p, const struct veil_frame_header *h,
                   zmq_msg_t *payload)
{
    struct veil_net_peer_state *ps = &net->peers[p];
    char name[32];
    veil_net_peer_name(net, p, name);
    if (h->length == 0 && h->total != 0)
        return fail(net, VEIL_ERR_PROTO,
                    "%s sent an empty chunk of a %llu-byte message (tag "
                    "%llu)",
                    name, (unsigned long long)h->total, (unsigned long long)h->tag);
    struct veil_net_inmsg *m = ps->in_tail; /* a message in progress is usually recent */
    while (m && !(m->tag == h->tag && m->got < m->total))
        m = m->prev;
    if (m) {
        if (h->offset != m->got || h->total != m->total)
            return fail(net, VEIL_ERR_PROTO,
                        "%s sent tag %llu chunk at offset %llu of %llu "
                        "bytes, expected offset %llu of %llu (duplicate or reordered chunk)",
                        name, (unsigned long long)h->tag, (unsigned long long)h->offset,
                        (unsigned long long)h->total, (unsigned long long)m->got,
                        (unsigned long long)m->total);
    } else {
        if (h->offset != 0)
            return fail(net, VEIL_ERR_PROTO,
                        "%s sent tag %llu chunk at offset %llu that starts "
                        "no message (expected offset 0)",
                        name, (unsigned long long)h->tag, (unsigned long long)h->offset);
        m = calloc(1, sizeof *m);
        if (!m)
            return fail(net, VEIL_ERR_NOMEM, "out of memory for an incoming message");
        m->tag = h->tag;
        m->total = h->total;
        if (veil_trace_active())
            m->t_first = veil_trace_now();
        m->prev = ps->in_tail;
        if (ps->in_tail)
            ps->in_tail->next = m;
        else
            ps->in = m;
        ps->in_tail = m;
        for (struct veil_net_req *r = ps->recvs; r; r = r->next)
            if (r->tag == h->tag && !r->msg) {
                m->req = r; /* bound below, after the chunk is recorded */
                break;
            }
    }
    uint64_t offset = h->offset;
    m->got += h->length;
    int done = m->got == m->total;
    if (done && veil_trace_active())
        m->t_last = veil_trace_now();
    veil_net_count_recv(net, p, VEIL_FRAME_HEADER_BYTES + h->length, m->total, done);
    if (h->length) {
        if (m->req && m->req->acquired && m->req->msg == m) {
            memcpy(m->req->ptr + offset, zmq_msg_data(payload), h->length);
        } else {
            struct veil_net_inchunk *c = malloc(sizeof *c);
            if (!c)
                return fail(net, VEIL_ERR_NOMEM, "out of memory for an early chunk");
            zmq_msg_init(&c->msg);
            zmq_msg_move(&c->msg, payload);
            c->offset = offset;
            c->next = NULL;
            if (m->last)
                m->last->next = c;
            else
                m->first = c;
            m->last = c;
            net->early_bytes += h->length;
            if (net->early_bytes > net->opt.early_cap_bytes)
                return fail(net, VEIL_ERR_NOMEM,
                            "early-arrival store full: %zu bytes received "
                            "before their irecv was ready, cap %zu (post receives earlier or "
                            "raise VEIL_NET_EARLY_CAP)",
                            net->early_bytes, net->opt.early_cap_bytes);
        }
    }
    if (m->req && m->req->msg != m) {
        struct veil_net_req *r = m->req;
        m->req = NULL;
        return bind_msg(net, p, m, r);
    }
    if (m->req)
        try_deliver(net, p, m);
    return VEIL_OK;
}

static void printable(char *dst, size_t cap, const void *src, size_t n)
{
    const unsigned char *s = src;
    size_t i;
    for (i = 0; i < n && i + 1 < cap; i++)
        dst[i] = (s[i] >= 32 && s[i] < 127) ? (char)s[i] : '?';
    dst[i] = 0;
}

static int on_frame(struct veil_net *net, int p, const struct veil_frame_header *h,
                    zmq_msg_t *payload, double now)
{
    struct veil_net_peer_state *ps = &net->peers[p];
    char name[32];
    veil_net_peer_name(net, p, name);
    ps->last_heard = now;
    if (ps->bye)
        return fail(net, VEIL_ERR_PROTO, "%s sent a frame of type %d after its goodbye", name,
                    h->type);
    if (h->type == VEIL_FRAME_HELLO) {
        veil_net_count_recv(net, p, VEIL_FRAME_HEADER_BYTES + h->length, 0, 0);
        if (ps->hello_ok)
            return fail(net, VEIL_ERR_PROTO, "%s sent a second hello", name);
        struct veil_hello mine =
                              {
                                  .protocol_version = VEIL_NET_PROTOCOL_VERSION,
                                  .party = (uint32_t)net->self,
                                  .nparties = (uint32_t)net->cfg.nparties,
                                  .has_dealer = (uint32_t)(net->cfg.has_dealer ? 1 : 0),
                              },
                          theirs;
        memcpy(mine.session, net->cfg.session, VEIL_SESSION_BYTES);
        memcpy(mine.plan_digest, net->cfg.plan_digest, VEIL_PLAN_DIGEST_BYTES);
        if (veil_hello_decode(zmq_msg_data(payload), zmq_msg_size(payload), &theirs) != VEIL_OK)
            return fail(net, VEIL_ERR_PROTO, "%s: bad hello: %s", name, veil_last_error());
        if (veil_hello_compare(&mine, &theirs, (uint32_t)p) != VEIL_OK)
            return fail(net, VEIL_ERR_MISMATCH, "%s", veil_last_error());
        ps->hello_ok = 1;
        /* Our acknowledgement; if ZeroMQ refuses it, the heartbeat timer sends it next turn. */
        int sent = send_control(net, p, VEIL_FRAME_HEARTBEAT, NULL, 0) == 0;
        ps->next_heartbeat = sent ? now + net->cfg.heartbeat_s : now;
        return VEIL_OK;
    }
    if (!ps->hello_ok)
        return fail(net, VEIL_ERR_PROTO, "%s sent a frame of type %d before its hello", name,
                    h->type);
    ps->acked = 1;
    switch (h->type) {
    case VEIL_FRAME_DATA:
        return on_data(net, p, h, payload);
    case VEIL_FRAME_HEARTBEAT:
        veil_net_count_recv(net, p, VEIL_FRAME_HEADER_BYTES, 0, 0);
        return VEIL_OK;
    case VEIL_FRAME_BYE:
        veil_net_count_recv(net, p, VEIL_FRAME_HEADER_BYTES, 0, 0);
        ps->bye = 1;
        /* The peer sends nothing after its goodbye (one ordered connection), so a pending
         * receive whose message has not fully arrived is lost. One whose message is complete
         * but whose handle StarPU has not granted yet is fine: it is delivered on acquire. */
        for (struct veil_net_req *r = ps->recvs; r; r = r->next)
            if (!r->msg || r->msg->got < r->msg->total)
                return fail(net, VEIL_ERR_PEER_LOST,
                            "%s closed its session while receives from it "
                            "are pending (first tag %llu)",
                            name, (unsigned long long)r->tag);
        return VEIL_OK;
    case VEIL_FRAME_ABORT: {
        char reason[300];
        if (payload)
            printable(reason, sizeof reason, zmq_msg_data(payload), zmq_msg_size(payload));
        else
            snprintf(reason, sizeof reason, "(no reason given)");
        return fail(net, VEIL_ERR_PEER_LOST, "%s stopped the session: %s", name, reason);
    }
    default:
        return fail(net, VEIL_ERR_PROTO, "%s sent an unexpected frame of type %d", name, h->type);
    }
}

/* Who sent a ROUTER message: the ZAP user id under CURVE (authenticated), else the routing id. */
static int sender_of(struct veil_net *net, zmq_msg_t *id, zmq_msg_t *hdr)
{
    char buf[16];
    const char *s;
    if (!net->cfg.insecure_plaintext) {
        s = zmq_msg_gets(hdr, "User-Id");
        if (!s)
            return -1;
    } else {
        size_t n = zmq_msg_size(id);
        if (n < 2 || n >= sizeof buf || ((const char *)zmq_msg_data(id))[0] != 'p')
            return -1;
        memcpy(buf, (const char *)zmq_msg_data(id) + 1, n - 1);
        buf[n - 1] = 0;
        s = buf;
    }
    char *end;
    long v = strtol(s, &end, 10);
    if (end == s || *end || v < 0 || v >= net->nprocs || v == net->self)
        return -1;
    return (int)v;
}

static int recv_router(struct veil_net *net, double now)
{
    for (int budget = 0; budget < RECV_BUDGET && !failed(net); budget++) {
        zmq_msg_t part[3];
        int n = 0, extra = 0, more = 1;
        while (more) {
            zmq_msg_t m;
            zmq_msg_init(&m);
            if (zmq_msg_recv(&m, net->router, n == 0 ? ZMQ_DONTWAIT : 0) < 0) {
                int e = zmq_errno();
                zmq_msg_close(&m);
                for (int i = 0; i < n; i++)
                    zmq_msg_close(&part[i]);
                if (n == 0 && e == EAGAIN)
                    return VEIL_OK;
                return fail(net, VEIL_ERR_NET, "receive: %s", zmq_strerror(e));
            }
            more = zmq_msg_more(&m);
            if (n < 3)
                part[n++] = m;
            else {
                extra++;
                zmq_msg_close(&m);
            }
        }
        int rc = VEIL_OK;
        int p = n >= 2 ? sender_of(net, &part[0], &part[1]) : -1;
        struct veil_frame_header h;
        char name[32];
        if (p < 0) {
            if (net->cfg.insecure_plaintext)
                rc = fail(net, VEIL_ERR_PROTO,
                          "message from an unknown sender (routing id of "
                          "%zu bytes, %d frames)",
                          zmq_msg_size(&part[0]), n + extra);
            else
                VEIL_LOG_WARN("net: dropped a message without a known authenticated sender");
        } else if (veil_frame_decode(zmq_msg_data(&part[1]), zmq_msg_size(&part[1]), &h) ||
                   veil_frame_check_peer(&h, net->cfg.session, (uint32_t)p)) {
            rc = fail(net, VEIL_ERR_PROTO, "bad frame from %s: %s",
                      veil_net_peer_name(net, p, name), veil_last_error());
        } else if (extra || (h.length ? n != 3 || zmq_msg_size(&part[2]) != h.length : n != 2)) {
            rc = fail(net, VEIL_ERR_PROTO,
                      "%s sent %d frames with a %zu-byte payload, the header "
                      "announces %u bytes",
                      veil_net_peer_name(net, p, name), n + extra,
                      n == 3 ? zmq_msg_size(&part[2]) : (size_t)0, h.length);
        } else {
            rc = on_frame(net, p, &h, n == 3 ? &part[2] : NULL, now);
        }
        for (int i = 0; i < n; i++)
            zmq_msg_close(&part[i]);
        if (rc)
            return rc;
    }
    return VEIL_OK;
}

/* ---- sending -------------------------------------------------------------------------------- */

static int emulating(const struct veil_net *net)
{
    return net->cfg.link.latency_s > 0 || net->cfg.link.bandwidth_Bps > 0;
}

/* ---- same-tag ordering: tag -> last unfinished send (linear probing, backward-shift delete) -- */

static size_t tag_hash(uint64_t tag, size_t cap)
{
    return (size_t)((tag * 0x9e3779b97f4a7c15u) >> 17) & (cap - 1);
}

static struct veil_net_tagslot *tag_find(struct veil_net_peer_state *ps, uint64_t tag)
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

static int tag_put(struct veil_net_peer_state *ps, uint64_t tag, struct veil_net_req *r)
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
                tag_put(ps, old[i].tag, old[i].last);
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

static void send_finished(struct veil_net *net, struct veil_net_peer_state *ps,
                          struct veil_net_req *r)
{
    list_unlink_req(&ps->sends, &ps->sends_tail, r);
    if (r->same_next) {
        r->same_next->head = 1;
    } else {
        struct veil_net_tagslot *slot = tag_find(ps, r->tag);
        VEIL_ASSERT(slot && slot->last == r);
        tag_del(ps, slot);
    }
    req_done(net, r);
}

/* Stages the next chunk of r into the peer's queue; 0 when the pool is empty. */
static int stage_chunk(struct veil_net *net, int p, struct veil_net_req *r, double now)
{
    struct veil_net_peer_state *ps = &net->peers[p];
    size_t len = r->size - r->off;
    if (len > net->opt.chunk_bytes)
        len = net->opt.chunk_bytes;
    void *buf = NULL;
    if (len) {
        buf = veil_net_pool_get(net->pool);
        if (!buf)
            return 0;
    }
    if (r->off == 0 && veil_trace_active())
        r->t_first = veil_trace_now(); /* before the copy: staging is the message's work */
    if (len)
        memcpy(buf, r->ptr + r->off, len);
    struct veil_net_outframe *f = &ps->outq[(ps->outq_head + ps->outq_count) % ps->outq_cap];
    make_header(net, VEIL_FRAME_DATA, r->tag, r->off, r->size, (uint32_t)len, f->hdr);
    f->buf = buf;
    f->len = (uint32_t)len;
    f->total = r->size;
    f->tag = r->tag;
    f->t_first = r->t_first;
    f->region = r->region;
    r->off += len;
    f->ends_msg = r->off == r->size;
    f->at = emulating(net)
                ? veil_link_emulator_release_time(&ps->emu, len + VEIL_FRAME_HEADER_BYTES, now)
                : 0;
    ps->outq_count++;
    net->outq_total++;
    if (f->ends_msg) {
        send_finished(net, ps, r);
    } else if (r != ps->sends_tail) { /* round robin among this peer's sends */
        list_unlink_req(&ps->sends, &ps->sends_tail, r);
        list_append_req(&ps->sends, &ps->sends_tail, r);
    }
    return 1;
}

static int flush_outq(struct veil_net *net, int p, double now)
{
    struct veil_net_peer_state *ps = &net->peers[p];
    while (ps->outq_count > 0) {
        struct veil_net_outframe *f = &ps->outq[ps->outq_head];
        if (f->at > now)
            break;
        if (zmq_send(ps->dealer, f->hdr, sizeof f->hdr, ZMQ_DONTWAIT | (f->len ? ZMQ_SNDMORE : 0)) <
            0) {
            if (zmq_errno() == EAGAIN) {
                ps->out_blocked = 1;
                return VEIL_OK;
            }
            return fail(net, VEIL_ERR_NET, "send: %s", zmq_strerror(zmq_errno()));
        }
        if (f->len) {
            zmq_msg_t m;
            zmq_msg_init_data(&m, f->buf, f->len, veil_net_pool_zmq_free, net->pool);
            f->buf = NULL;
            if (zmq_msg_send(&m, ps->dealer, ZMQ_DONTWAIT) < 0) {
                int e = zmq_errno();
                zmq_msg_close(&m);
                return fail(net, VEIL_ERR_NET, "send payload: %s", zmq_strerror(e));
            }
        }
        veil_net_count_sent(net, p, VEIL_FRAME_HEADER_BYTES + f->len, f->total, f->ends_msg);
        if (f->ends_msg && veil_trace_active())
            veil_trace_message(VEIL_TRACE_SEND, p, f->tag, f->total, f->region, f->t_first,
                               veil_trace_now());
        ps->outq_head = (ps->outq_head + 1) % ps->outq_cap;
        ps->outq_count--;
        net->outq_total--;
    }
    return VEIL_OK;
}

static struct veil_net_req *eligible(struct veil_net_peer_state *ps)
{
    for (struct veil_net_req *r = ps->sends; r; r = r->next)
        if (r->acquired && r->head)
            return r;
    return NULL;
}

static int pump(struct veil_net *net, double now)
{
    int budget = STAGE_BUDGET, starved = 0;
    while (budget > 0 && !starved) {
        int progress = 0;
        for (int p = 0; p < net->nprocs && !starved; p++) {
            struct veil_net_peer_state *ps = &net->peers[p];
            if (p == net->self || ps->outq_count >= ps->outq_cap)
                continue;
            struct veil_net_req *r = eligible(ps);
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
    for (int p = 0; p < net->nprocs && !failed(net); p++)
        if (p != net->self && !net->peers[p].out_blocked)
            if (flush_outq(net, p, now))
                return -1;
    return 0;
}

/* ---- requests from other threads --------------------------------------------------------- */

static void on_posted(struct veil_net *net, struct veil_net_req *r)
{
    if (failed(net))
        return; /* released when its acquire arrives */
    struct veil_net_peer_state *ps = &net->peers[r->peer];
    r->seq = net->next_seq++;
    r->listed = 1;
    if (r->kind == VEIL_REQ_SEND) {
        struct veil_net_tagslot *slot = tag_find(ps, r->tag);
        if (slot) { /* an earlier send with this tag is unfinished: go after it */
            slot->last->same_next = r;
            slot->last = r;
            r->head = 0;
        } else if (tag_put(ps, r->tag, r) != 0) {
            r->listed = 0;
            fail(net, VEIL_ERR_NOMEM, "out of memory for the send tag map");
            return;
        } else {
            r->head = 1;
        }
        list_append_req(&ps->sends, &ps->sends_tail, r);
        return;
    }
    list_append_req(&ps->recvs, &ps->recvs_tail, r);
    for (struct veil_net_inmsg *m = ps->in; m; m = m->next)
        if (m->tag == r->tag && !m->req) {
            bind_msg(net, r->peer, m, r);
            break;
        }
    if (ps->bye && !failed(net) && (!r->msg || r->msg->got < r->msg->total)) {
        char name[32];
        fail(net, VEIL_ERR_PEER_LOST, "receive with tag %llu posted after %s closed its session",
             (unsigned long long)r->tag, veil_net_peer_name(net, r->peer, name));
    }
}

static void on_acquired(struct veil_net *net, struct veil_net_req *r)
{
    if (r->acquire_failed) {
        fail(net, VEIL_ERR_STARPU, "starpu_data_acquire_on_node_cb failed for a %s with tag %llu",
             r->kind == VEIL_REQ_SEND ? "send" : "receive", (unsigned long long)r->tag);
        if (r->listed) {
            struct veil_net_peer_state *ps = &net->peers[r->peer];
            if (r->kind == VEIL_REQ_SEND)
                list_unlink_req(&ps->sends, &ps->sends_tail, r);
            else
                list_unlink_req(&ps->recvs, &ps->recvs_tail, r);
        }
        req_done(net, r);
        return;
    }
    r->acquired = 1;
    if (failed(net) || !r->listed) {
        req_done(net, r);
        return;
    }
    r->ptr = starpu_data_handle_to_pointer(r->handle, STARPU_MAIN_RAM);
    if (!r->ptr && r->size > 0) {
        fail(net, VEIL_ERR_STARPU, "tag %llu: the handle has no main-memory copy",
             (unsigned long long)r->tag);
        return;
    }
    if (r->kind == VEIL_REQ_RECV && r->msg)
        try_deliver(net, r->peer, r->msg);
}

static void take_queues(struct veil_net *net, int *stop)
{
    pthread_mutex_lock(&net->mu);
    struct veil_net_req *posted = net->post_head, *acq = net->acq_head;
    net->post_head = net->post_tail = NULL;
    net->acq_head = net->acq_tail = NULL;
    *stop = net->stop;
    char why[sizeof net->abort_msg];
    const int abort_req = net->abort_req, abort_status = net->abort_status;
    if (abort_req)
        memcpy(why, net->abort_msg, sizeof why);
    net->abort_req = 0;
    pthread_mutex_unlock(&net->mu);
    if (abort_req)
        fail(net, abort_status, "%s", why);
    while (posted) {
        struct veil_net_req *r = posted;
        posted = r->post_next;
        on_posted(net, r);
    }
    while (acq) {
        struct veil_net_req *r = acq;
        acq = r->acq_next;
        on_acquired(net, r);
    }
}

/* ---- timers and the loop ------------------------------------------------------------------ */

static void timers(struct veil_net *net, double now, double connect_deadline)
{
    char name[32];
    if (net->state == VEIL_NET_OPENING) {
        int ready = 1;
        char missing[400] = "";
        size_t off = 0;
        for (int p = 0; p < net->nprocs; p++) {
            struct veil_net_peer_state *ps = &net->peers[p];
            if (p == net->self || (ps->hello_ok && ps->acked))
                continue;
            ready = 0;
            if (off < sizeof missing)
                off += (size_t)snprintf(missing + off, sizeof missing - off, "%s%s (%s)",
                                        off ? ", " : "", veil_net_peer_name(net, p, name),
                                        ps->hello_ok ? "it has not acknowledged our hello"
                                                     : "no hello from it");
        }
        if (ready) {
            pthread_mutex_lock(&net->mu);
            net->state = VEIL_NET_READY;
            pthread_cond_broadcast(&net->cv);
            pthread_mutex_unlock(&net->mu);
        } else if (now > connect_deadline) {
            fail(net, VEIL_ERR_TIMEOUT,
                 "connect timeout after %.1f s: no handshake with %s "
                 "(check that it runs, its endpoint and its key)",
                 net->opt.connect_timeout_s, missing);
            return;
        }
    }
    for (int p = 0; p < net->nprocs && !failed(net); p++) {
        struct veil_net_peer_state *ps = &net->peers[p];
        if (p == net->self || !ps->hello_ok)
            continue;
        if (!ps->bye && ps->acked && now - ps->last_heard > net->cfg.timeout_s) {
            fail(net, VEIL_ERR_PEER_LOST, "%s lost: silent for %.1f s",
                 veil_net_peer_name(net, p, name), now - ps->last_heard);
            return;
        }
        /* A peer that said goodbye still watches us until our goodbye: keep beating until then,
         * and send nothing after it. */
        if (!net->bye_sent && now >= ps->next_heartbeat) {
            /* A heartbeat ZeroMQ refused stays owed: poll for POLLOUT and retry on the next
             * turn, so a peer behind a full queue hears from us as soon as it drains it. */
            if (send_control(net, p, VEIL_FRAME_HEARTBEAT, NULL, 0) == 0)
                ps->next_heartbeat = now + net->cfg.heartbeat_s;
            else
                ps->out_blocked = 1;
        }
    }
}

/* Orderly close: goodbye after the last data frame, then wait for every peer's goodbye. */
static int closing_done(struct veil_net *net, double now)
{
    if (!net->bye_sent) {
        if (net->outq_total > 0)
            return 0;
        for (int p = 0; p < net->nprocs; p++)
            if (p != net->self && net->peers[p].sends)
                return 0;
        net->bye_sent = 1;
        net->close_deadline = now + net->cfg.timeout_s;
    }
    int all_sent = 1;
    for (int p = 0; p < net->nprocs; p++) { /* a goodbye is retried until ZeroMQ takes it */
        struct veil_net_peer_state *ps = &net->peers[p];
        if (p == net->self || ps->bye_out)
            continue;
        if (send_control(net, p, VEIL_FRAME_BYE, NULL, 0) == 0)
            ps->bye_out = 1;
        else if (now < net->close_deadline) {
            all_sent = 0;
            ps->out_blocked = 1; /* poll for POLLOUT */
        }
    }
    if (!all_sent)
        return 0;
    char name[32];
    for (int p = 0; p < net->nprocs; p++) {
        if (p == net->self || net->peers[p].bye)
            continue;
        if (now < net->close_deadline)
            return 0;
        VEIL_LOG_WARN("net: closing without a goodbye from %s after %.1f s",
                      veil_net_peer_name(net, p, name), net->cfg.timeout_s);
    }
    return 1;
}

/* Seconds until the loop has something to do: the next emulated release, 0 when chunks can be
 * staged now, at most MAX_POLL_MS (heartbeats and silence). */
static double poll_wait_s(struct veil_net *net, double now)
{
    double t = MAX_POLL_MS / 1000.0;
    for (int p = 0; p < net->nprocs; p++) {
        struct veil_net_peer_state *ps = &net->peers[p];
        if (p == net->self)
            continue;
        if (ps->outq_count > 0 && !ps->out_blocked) {
            double dt = ps->outq[ps->outq_head].at - now;
            if (dt < t)
                t = dt;
        }
        if (ps->outq_count < ps->outq_cap && eligible(ps) && veil_net_pool_available(net->pool))
            t = 0;
    }
    return t > 0 ? t : 0;
}

/* A sub-millisecond wait after a zmq_poll that found nothing ready: ppoll on the ZMQ_FD of every
 * polled socket (readable once the socket's events may have changed, which zmq_poll has just
 * read) and on the plain descriptors, for wait_s at most. The caller's next zmq_poll reads
 * whatever woke it. */
static void fine_wait(const zmq_pollitem_t *items, int n, double wait_s)
{
    struct pollfd fds[4 + VEIL_NET_MAX_PROCS];
    int m = 0;
    for (int i = 0; i < n; i++) {
        int fd = items[i].fd;
        size_t len = sizeof fd;
        if (items[i].socket && zmq_getsockopt(items[i].socket, ZMQ_FD, &fd, &len) != 0)
            return; /* no descriptor: return at once, the loop polls again */
        fds[m++] = (struct pollfd){.fd = fd, .events = POLLIN};
    }
    struct timespec ts = {.tv_sec = 0, .tv_nsec = (long)(wait_s * 1e9)};
    (void)ppoll(fds, (nfds_t)m, &ts, NULL);
}

void *veil_net_io_main(void *arg)
{
    struct veil_net *net = arg;
    double now = veil_now();
    double connect_deadline = now + net->opt.connect_timeout_s;
    uint8_t hello[VEIL_HELLO_BYTES];
    struct veil_hello mine = {
        .protocol_version = VEIL_NET_PROTOCOL_VERSION,
        .party = (uint32_t)net->self,
        .nparties = (uint32_t)net->cfg.nparties,
        .has_dealer = (uint32_t)(net->cfg.has_dealer ? 1 : 0),
    };
    memcpy(mine.session, net->cfg.session, VEIL_SESSION_BYTES);
    memcpy(mine.plan_digest, net->cfg.plan_digest, VEIL_PLAN_DIGEST_BYTES);
    veil_hello_encode(&mine, hello);
    for (int p = 0; p < net->nprocs; p++) {
        if (p == net->self)
            continue;
        net->peers[p].last_heard = now;
        send_control(net, p, VEIL_FRAME_HELLO, hello, sizeof hello);
    }
#ifdef __linux__
    prctl(PR_SET_TIMERSLACK, 1000UL); /* 1 us: the emulated latencies are 100 us */
#endif
    double wait_s = 0;
    zmq_pollitem_t items[4 + VEIL_NET_MAX_PROCS];
    for (;;) {
        int n = 0;
        items[n++] = (zmq_pollitem_t){.fd = net->efd, .events = ZMQ_POLLIN};
        if (!failed(net)) {
            items[n++] = (zmq_pollitem_t){.socket = net->router, .events = ZMQ_POLLIN};
            if (net->zap)
                items[n++] = (zmq_pollitem_t){.socket = net->zap, .events = ZMQ_POLLIN};
            items[n++] = (zmq_pollitem_t){.socket = net->monitor, .events = ZMQ_POLLIN};
            for (int p = 0; p < net->nprocs; p++)
                if (p != net->self && net->peers[p].out_blocked)
                    items[n++] =
                        (zmq_pollitem_t){.socket = net->peers[p].dealer, .events = ZMQ_POLLOUT};
        }
        int rc = zmq_poll(items, n, wait_s >= 0.001 ? (int)(wait_s * 1000) : 0);
        if (rc < 0 && zmq_errno() != EINTR)
            fail(net, VEIL_ERR_NET, "poll: %s", zmq_strerror(zmq_errno()));
        else if (rc == 0 && wait_s > 0 && wait_s < 0.001)
            fine_wait(items, n, wait_s);
        if (items[0].revents & ZMQ_POLLIN) {
            uint64_t v;
            ssize_t r = read(net->efd, &v, sizeof v);
            (void)r;
        }
        for (int p = 0; p < net->nprocs; p++)
            net->peers[p].out_blocked = 0; /* retried below; set again on EAGAIN */
        now = veil_now();
        int stop;
        take_queues(net, &stop);
        if (!failed(net) && net->zap && veil_net_zap_serve(net))
            fail(net, VEIL_ERR_NET, "%s", veil_last_error());
        if (!failed(net)) {
            veil_net_monitor_serve(net);
            recv_router(net, now);
        }
        if (!failed(net) && net->state == VEIL_NET_READY)
            pump(net, now);
        timers(net, now, connect_deadline);
        if (stop && (failed(net) || closing_done(net, now)))
            break;
        int busy = net->outq_total > 0;
        if (busy != net->io_busy) {
            pthread_mutex_lock(&net->mu);
            net->io_busy = busy;
            pthread_cond_broadcast(&net->cv);
            pthread_mutex_unlock(&net->mu);
        }
        wait_s = failed(net) ? MAX_POLL_MS / 1000.0 : poll_wait_s(net, veil_now());
    }
    /* Whatever is still held (e.g. a close with messages nobody received) is dropped. */
    int keep_state = net->state;
    drop_all(net);
    (void)keep_state;
    pthread_mutex_lock(&net->mu);
    net->exited = 1;
    net->io_busy = 0;
    pthread_cond_broadcast(&net->cv);
    pthread_mutex_unlock(&net->mu);
    return NULL;
}

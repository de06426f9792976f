/*
 * io_recv.c — the I/O thread's receiving half: reading what the ROUTER holds (everything peers
 * send us, but for the tensor chunks of the data channel, which data_channel.c opens and hands to
 * veil_net_io_sealed_data), finding out who sent it (the ZAP user id under CURVE), checking each
 * frame against the session and the peer's state (hello first, nothing after goodbye, on the
 * data channel nothing past the goodbye's count), and matching data chunks to posted receives:
 * copied (or folded) straight into the handle when it is acquired, else kept as the ZeroMQ
 * message until it is (an early arrival; those of messages with no receive posted yet within a
 * byte cap).
 */
#include "config.h"
#include "base/base_internal.h"
#include "base/trace.h"
#include "net/io_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RECV_BUDGET 256 /* messages read per loop turn before sending gets its turn */

/* ---- receiving ------------------------------------------------------------------------------ */

/* Copies whatever arrived into the bound, acquired receive; completes it when all is there. */
void veil_net_io_deliver(struct veil_net *net, int p, struct veil_net_inmsg *m)
{
    struct veil_net_req *r = m->req;
    if (!r || !r->acquired)
        return;
    while (m->first) {
        struct veil_net_inchunk *c = m->first;
        size_t n = c->len;
        veil_net_req_write(r, c->offset, (const uint8_t *)zmq_msg_data(&c->msg) + c->skip, n);
        m->first = c->next;
        if (c->capped)
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
    veil_net_req_unlink(&ps->recvs, &ps->recvs_tail, r);
    veil_net_inmsg_unlink(net, ps, m);
    free(m);
    if (net->inline_turn)
        __atomic_fetch_add(&net->inline_recvs, 1, __ATOMIC_RELAXED);
    veil_net_req_done(net, r);
}

int veil_net_io_bind(struct veil_net *net, int p, struct veil_net_inmsg *m, struct veil_net_req *r)
{
    if (r->size != m->total) {
        char name[32];
        return veil_net_io_fail(net, VEIL_ERR_PROTO,
                                "message from %s with tag %llu has %llu bytes, the "
                                "posted receive holds %zu",
                                veil_net_peer_name(net, p, name), (unsigned long long)m->tag,
                                (unsigned long long)m->total, r->size);
    }
    m->req = r;
    r->msg = m;
    veil_net_io_deliver(net, p, m);
    return VEIL_OK;
}

/* A data chunk: its payload is h->length bytes at payload's data + skip (0 on the CURVE
 * connection, past the seal's prefix and the header on the data channel); wire: its size on the
 * wire. */
static int on_data(struct veil_net *net, int p, const struct veil_frame_header *h,
                   zmq_msg_t *payload, size_t skip, size_t wire)
{
    struct veil_net_peer_state *ps = &net->peers[p];
    char name[32];
    veil_net_peer_name(net, p, name);
    if (h->length == 0 && h->total != 0)
        return veil_net_io_fail(net, VEIL_ERR_PROTO,
                                "%s sent an empty chunk of a %llu-byte message (tag "
                                "%llu)",
                                name, (unsigned long long)h->total, (unsigned long long)h->tag);
    struct veil_net_inmsg *m = ps->in_tail; /* a message in progress is usually recent */
    while (m && !(m->tag == h->tag && m->got < m->total))
        m = m->prev;
    if (m) {
        if (h->offset != m->got || h->total != m->total)
            return veil_net_io_fail(
                net, VEIL_ERR_PROTO,
                "%s sent tag %llu chunk at offset %llu of %llu "
                "bytes, expected offset %llu of %llu (duplicate or reordered chunk)",
                name, (unsigned long long)h->tag, (unsigned long long)h->offset,
                (unsigned long long)h->total, (unsigned long long)m->got,
                (unsigned long long)m->total);
    } else {
        if (h->offset != 0)
            return veil_net_io_fail(net, VEIL_ERR_PROTO,
                                    "%s sent tag %llu chunk at offset %llu that starts "
                                    "no message (expected offset 0)",
                                    name, (unsigned long long)h->tag,
                                    (unsigned long long)h->offset);
        m = calloc(1, sizeof *m);
        if (!m)
            return veil_net_io_fail(net, VEIL_ERR_NOMEM, "out of memory for an incoming message");
        m->tag = h->tag;
        m->total = h->total;
        if (veil_trace_active())
            m->t_first = veil_trace_now();
        veil_net_inmsg_append(net, ps, m);
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
    veil_net_count_recv(net, p, wire, m->total, done);
    if (h->length) {
        if (m->req && m->req->acquired && m->req->msg == m) {
            veil_net_req_write(m->req, offset, (const uint8_t *)zmq_msg_data(payload) + skip,
                               h->length);
        } else {
            struct veil_net_inchunk *c = malloc(sizeof *c);
            if (!c)
                return veil_net_io_fail(net, VEIL_ERR_NOMEM, "out of memory for an early chunk");
            zmq_msg_init(&c->msg);
            zmq_msg_move(&c->msg, payload);
            c->offset = offset;
            c->skip = (uint32_t)skip;
            c->len = h->length;
            c->next = NULL;
            /* Only a message with no receive posted counts against the cap: a posted receive
             * not yet acquired (its handle still in use by earlier tasks, e.g. a fold waiting
             * for this party's own term) bounds what it holds by its own size. */
            c->capped = m->req == NULL;
            if (m->last)
                m->last->next = c;
            else
                m->first = c;
            m->last = c;
            net->early_bytes += c->capped ? h->length : 0;
            if (c->capped && net->early_bytes > net->opt.early_cap_bytes)
                return veil_net_io_fail(
                    net, VEIL_ERR_NOMEM,
                    "early-arrival store full: %zu bytes received "
                    "before their irecv was posted, cap %zu (post receives earlier or "
                    "raise VEIL_NET_EARLY_CAP)",
                    net->early_bytes, net->opt.early_cap_bytes);
        }
    }
    if (m->req && m->req->msg != m) {
        struct veil_net_req *r = m->req;
        m->req = NULL;
        return veil_net_io_bind(net, p, m, r);
    }
    if (m->req)
        veil_net_io_deliver(net, p, m);
    return VEIL_OK;
}

/* After a peer's goodbye it sends nothing more on its CURVE connection, and on the data channel
 * only the frames its goodbye counts: once all of those are here, a pending receive whose
 * message has not fully arrived is lost. One whose message is complete but whose handle StarPU
 * has not granted yet is fine: it is delivered on acquire. */
static int bye_check(struct veil_net *net, int p)
{
    struct veil_net_peer_state *ps = &net->peers[p];
    if (!ps->bye || ps->drecv < ps->dannounced)
        return VEIL_OK;
    char name[32];
    for (struct veil_net_req *r = ps->recvs; r; r = r->next)
        if (!r->msg || r->msg->got < r->msg->total)
            return veil_net_io_fail(net, VEIL_ERR_PEER_LOST,
                                    "%s closed its session while receives from it "
                                    "are pending (first tag %llu)",
                                    veil_net_peer_name(net, p, name), (unsigned long long)r->tag);
    return VEIL_OK;
}

int veil_net_io_sealed_data(struct veil_net *net, int p, const struct veil_frame_header *h,
                            zmq_msg_t *msg, size_t skip, size_t wire, double now)
{
    struct veil_net_peer_state *ps = &net->peers[p];
    char name[32];
    ps->last_heard = now;
    /* it keys its sealing with our hello and starts only once ready, after our acknowledgement
     * of its hello: a data frame before its hello, or past its goodbye's count, is a lie */
    if (!ps->hello_ok || (ps->bye && ps->drecv > ps->dannounced))
        return veil_net_io_fail(
            net, VEIL_ERR_PROTO, "%s sent a data frame %s", veil_net_peer_name(net, p, name),
            ps->hello_ok ? "past the count of its goodbye" : "before its hello");
    int rc = on_data(net, p, h, msg, skip, wire);
    return rc ? rc : bye_check(net, p);
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
    /* After its goodbye a peer still waits for ours, and it relays a failure it learns of
     * meanwhile (a party lost while the dealer waits): an ABORT names the real culprit. */
    if (ps->bye && h->type != VEIL_FRAME_ABORT)
        return veil_net_io_fail(net, VEIL_ERR_PROTO, "%s sent a frame of type %d after its goodbye",
                                name, h->type);
    if (h->type == VEIL_FRAME_HELLO) {
        veil_net_count_recv(net, p, VEIL_FRAME_HEADER_BYTES + h->length, 0, 0);
        /* Checked before "a second hello": a liar holding a peer's key says in its hello that
         * it is someone else, and is refused as such whether or not the peer's hello came first. */
        struct veil_hello mine, theirs;
        veil_net_io_hello(net, &mine);
        if (veil_hello_decode(zmq_msg_data(payload), zmq_msg_size(payload), &theirs) != VEIL_OK)
            return veil_net_io_fail(net, VEIL_ERR_PROTO, "%s: bad hello: %s", name,
                                    veil_last_error());
        if (veil_hello_compare(&mine, &theirs, (uint32_t)p) != VEIL_OK)
            return veil_net_io_fail(net, VEIL_ERR_MISMATCH, "%s", veil_last_error());
        if (ps->hello_ok)
            return veil_net_io_fail(net, VEIL_ERR_PROTO, "%s sent a second hello", name);
        ps->hello_ok = 1;
        int rc = veil_net_data_connect(net, p, &theirs);
        veil_wipe(&theirs, sizeof theirs); /* its data key lives on in the sealing state only */
        if (rc)
            return veil_net_io_fail(net, rc, "%s", veil_last_error());
        /* Our acknowledgement; if ZeroMQ refuses it, the heartbeat timer sends it next turn. */
        int sent = veil_net_send_control(net, p, VEIL_FRAME_HEARTBEAT, NULL, 0) == 0;
        ps->next_heartbeat = sent ? now + net->cfg.heartbeat_s : now;
        return VEIL_OK;
    }
    if (!ps->hello_ok)
        return veil_net_io_fail(net, VEIL_ERR_PROTO, "%s sent a frame of type %d before its hello",
                                name, h->type);
    ps->acked = 1;
    switch (h->type) {
    case VEIL_FRAME_DATA:
        return on_data(net, p, h, payload, 0, VEIL_FRAME_HEADER_BYTES + (size_t)h->length);
    case VEIL_FRAME_HEARTBEAT:
        veil_net_count_recv(net, p, VEIL_FRAME_HEADER_BYTES, 0, 0);
        return veil_net_data_announced(net, p, h);
    case VEIL_FRAME_BYE:
        veil_net_count_recv(net, p, VEIL_FRAME_HEADER_BYTES, 0, 0);
        if (veil_net_data_announced(net, p, h))
            return VEIL_ERR_PROTO;
        ps->bye = 1;
        return bye_check(net, p);
    case VEIL_FRAME_ABORT: {
        char reason[300];
        if (payload)
            printable(reason, sizeof reason, zmq_msg_data(payload), zmq_msg_size(payload));
        else
            snprintf(reason, sizeof reason, "(no reason given)");
        /* the cause first, then who relayed it: the process named first failed first */
        return veil_net_io_fail(net, VEIL_ERR_PEER_LOST, strstr(reason, " (reported by ")
                                ? "%s" : "%s (reported by %s, which stopped the session)",
                                reason, name);
    }
    default:
        return veil_net_io_fail(net, VEIL_ERR_PROTO, "%s sent an unexpected frame of type %d", name,
                                h->type);
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

int veil_net_io_recv(struct veil_net *net, double now)
{
    for (int budget = 0; budget < RECV_BUDGET && !veil_net_io_failed(net); budget++) {
        zmq_msg_t part[3];
        int n, extra;
        int got = veil_net_recv_parts(net, net->router, part, &n, &extra);
        if (got <= 0)
            return got < 0 ? VEIL_ERR_NET : VEIL_OK;
        int rc = VEIL_OK;
        int p = n >= 2 ? sender_of(net, &part[0], &part[1]) : -1;
        if (p >= 0)
            veil_net_peer_seen_on(net, p, 0, &part[1]); /* its connection, for peers.c's monitor */
        struct veil_frame_header h;
        char name[32];
        if (p < 0) {
            if (net->cfg.insecure_plaintext)
                rc = veil_net_io_fail(net, VEIL_ERR_PROTO,
                                      "message from an unknown sender (routing id of "
                                      "%zu bytes, %d frames)",
                                      zmq_msg_size(&part[0]), n + extra);
            else
                VEIL_LOG_WARN("net: dropped a message without a known authenticated sender");
        } else if (veil_frame_decode(zmq_msg_data(&part[1]), zmq_msg_size(&part[1]), &h) ||
                   veil_frame_check_peer(&h, net->cfg.session, (uint32_t)p)) {
            rc = veil_net_io_fail(net, VEIL_ERR_PROTO, "bad frame from %s: %s",
                                  veil_net_peer_name(net, p, name), veil_last_error());
        } else if (extra || (h.length ? n != 3 || zmq_msg_size(&part[2]) != h.length : n != 2)) {
            rc = veil_net_io_fail(net, VEIL_ERR_PROTO,
                                  "%s sent %d frames with a %zu-byte payload, the header "
                                  "announces %u bytes",
                                  veil_net_peer_name(net, p, name), n + extra,
                                  n == 3 ? zmq_msg_size(&part[2]) : (size_t)0, h.length);
        } else {
            rc = on_frame(net, p, &h, n == 3 ? &part[2] : NULL, now);
        }
        for (int i = 0; i < n; i++)
            zmq_msg_close(&part[i]);
        if (rc) {
            net->undrained = 1;
            return rc;
        }
    }
    net->undrained = 1; /* the budget ran out: the loop reads on at its next turn */
    return VEIL_OK;
}

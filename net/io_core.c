/*
 * io_core.c — what the I/O thread's files (io.c, io_recv.c, io_send.c) all lean on, so that
 * calls between them point one way (the loop -> receiving / sending -> this file): retiring a
 * request, control frames (hello, heartbeat, goodbye, abort) that bypass the pacing queue, and
 * failing the session: ABORT to every peer, every acquired handle released, the waiters woken.
 */
#include "config.h"
#include "base/base_internal.h"
#include "net/io_internal.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void veil_net_req_free(struct veil_net_req *r)
{
    if (!r)
        return;
    free(r->handles);
    free(r->ends);
    free(r->ptrs);
    free(r);
}

/* w[i] += (or ^=) the i-th little-endian word at src (any alignment), i < k: eight words per
 * vector operation (VEIL_CPU_CLONES), the last k % 8 one by one. */
VEIL_CPU_CLONES static void fold_words(uint64_t *w, const uint8_t *src, size_t k, int use_xor)
{
    size_t i = 0;
    for (; i + 8 <= k; i += 8) {
        veil_u64x8 a, b;
        memcpy(&a, w + i, sizeof a);
        memcpy(&b, src + 8 * i, sizeof b);
        a = use_xor ? a ^ b : a + b;
        memcpy(w + i, &a, sizeof a);
    }
    for (; i < k; i++) {
        uint64_t v;
        memcpy(&v, src + 8 * i, 8);
        w[i] = use_xor ? w[i] ^ v : w[i] + v;
    }
}

/* Folds n bytes at message offset off into a combining receive's buffer: whole words straight
 * from src (any alignment), a word split across chunks gathered in r->part first (chunks come in
 * order, net/io_recv.c). */
static void combine(struct veil_net_req *r, uint64_t off, const uint8_t *src, size_t n)
{
    uint8_t *dst = r->ptr;
    while (n > 0) {
        const size_t b = (size_t)(off % 8);
        if (b == 0 && n >= 8) {
            const size_t k = n / 8;
            uint64_t *w = (uint64_t *)(void *)(dst + off); /* a vector's words: aligned */
            fold_words(w, src, k, r->combine == VEIL_NET_COMBINE_XOR);
            off += 8 * k;
            src += 8 * k;
            n -= 8 * k;
            continue;
        }
        const size_t take = n < 8 - b ? n : 8 - b;
        memcpy(r->part + b, src, take);
        if (b + take == 8) {
            uint64_t v, *w = (uint64_t *)(void *)(dst + (off - b));
            memcpy(&v, r->part, 8);
            *w = r->combine == VEIL_NET_COMBINE_XOR ? *w ^ v : *w + v;
        }
        off += take;
        src += take;
        n -= take;
    }
}

void veil_net_req_write(struct veil_net_req *r, uint64_t off, const void *src, size_t n)
{
    if (r->combine) {
        combine(r, off, src, n);
        return;
    }
    if (!r->handles) {
        memcpy(r->ptr + off, src, n);
        return;
    }
    /* the first handle whose bytes end after off (binary search over the end offsets) */
    int lo = 0, hi = r->nhandles - 1;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (r->ends[mid] > off)
            hi = mid;
        else
            lo = mid + 1;
    }
    const uint8_t *s = src;
    for (int i = lo; n > 0 && i < r->nhandles; i++) {
        const uint64_t start = i ? r->ends[i - 1] : 0;
        size_t k = (size_t)(r->ends[i] - off);
        if (k > n)
            k = n;
        memcpy(r->ptrs[i] + (off - start), s, k);
        s += k;
        off += k;
        n -= k;
    }
}

/* Gives the handles back to StarPU and retires the request. */
void veil_net_req_done(struct veil_net *net, struct veil_net_req *r)
{
    for (int i = 0; i < r->nheld; i++)
        starpu_data_release_on_node(r->handles ? r->handles[i] : r->handle, STARPU_MAIN_RAM);
    veil_net_idle_kick(); /* the release may have made a task ready: wake paused workers */
    veil_net_req_free(r);
    pthread_mutex_lock(&net->mu);
    net->pending--;
    net->io_busy = net->outq_total > 0; /* a send's last frames may still be staged */
    /* Waiters on cv wait for no request pending (veil_net_wait_all also for !io_busy, which the
     * loop broadcasts when it changes; veil_net_close): waking them for every message would put
     * one more thread on the cores at the moment the message's consumer task needs one. */
    if (net->pending == 0)
        pthread_cond_broadcast(&net->cv);
    pthread_mutex_unlock(&net->mu);
}

static void inmsg_free(struct veil_net *net, struct veil_net_inmsg *m)
{
    while (m->first) {
        struct veil_net_inchunk *c = m->first;
        m->first = c->next;
        if (c->capped)
            net->early_bytes -= zmq_msg_size(&c->msg);
        zmq_msg_close(&c->msg);
        free(c);
    }
    free(m);
}

/* Drops everything the I/O thread holds: acquired handles are released (so StarPU tasks never
 * wait on a dead session), requests still waiting for their acquire are released when it comes. */
void veil_net_io_drop_all(struct veil_net *net)
{
    for (int p = 0; p < net->nprocs; p++) {
        struct veil_net_peer_state *ps = &net->peers[p];
        struct veil_net_req **lists[2][2] = {{&ps->sends, &ps->sends_tail},
                                             {&ps->recvs, &ps->recvs_tail}};
        for (int l = 0; l < 2; l++) {
            while (*lists[l][0]) {
                struct veil_net_req *r = *lists[l][0];
                veil_net_req_unlink(lists[l][0], lists[l][1], r);
                r->listed = 0;
                r->msg = NULL;
                if (r->acquired)
                    veil_net_req_done(net, r);
            }
        }
        ps->ready = ps->ready_tail = NULL; /* its sends were on the sends list, retired above */
        free(ps->tagmap);
        ps->tagmap = NULL;
        ps->tagmap_cap = ps->tagmap_used = 0;
        while (ps->in) {
            struct veil_net_inmsg *m = ps->in;
            veil_net_inmsg_unlink(net, ps, m);
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
int veil_net_io_fail(struct veil_net *net, int status, const char *fmt, ...)
{
    if (veil_net_io_failed(net))
        return status;
    char msg[sizeof net->errmsg];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    VEIL_LOG_ERR("net: %s", msg);
    /* (an inline send's turn leaves a pushed-back DEALER alone: the I/O thread polls it) */
    for (int p = 0; p < net->nprocs; p++)
        if (p != net->self && !net->peers[p].bye &&
            !(net->inline_turn && net->peers[p].out_blocked))
            veil_net_send_control(net, p, VEIL_FRAME_ABORT, msg, strlen(msg));
    /* The state first: a waiter woken by a release below must already see the failure. */
    pthread_mutex_lock(&net->mu);
    net->state = VEIL_NET_FAILED;
    net->status = status;
    memcpy(net->errmsg, msg, sizeof msg);
    pthread_mutex_unlock(&net->mu);
    veil_net_io_drop_all(net);
    pthread_mutex_lock(&net->mu);
    net->io_busy = 0;
    pthread_cond_broadcast(&net->cv);
    pthread_mutex_unlock(&net->mu);
    return status;
}

int veil_net_recv_parts(struct veil_net *net, void *sock, zmq_msg_t part[3], int *n, int *extra)
{
    int more = 1;
    *n = *extra = 0;
    while (more) {
        zmq_msg_t m;
        zmq_msg_init(&m);
        if (zmq_msg_recv(&m, sock, *n == 0 ? ZMQ_DONTWAIT : 0) < 0) {
            int e = zmq_errno();
            zmq_msg_close(&m);
            for (int i = 0; i < *n; i++)
                zmq_msg_close(&part[i]);
            if (*n == 0 && e == EAGAIN)
                return 0;
            veil_net_io_fail(net, VEIL_ERR_NET, "receive: %s", zmq_strerror(e));
            return -1;
        }
        more = zmq_msg_more(&m);
        if (*n < 3)
            part[(*n)++] = m;
        else {
            ++*extra;
            zmq_msg_close(&m);
        }
    }
    return 1;
}

/* Control frames bypass the pacing queue. When ZeroMQ pushes back the frame is not sent and -1
 * is returned: a heartbeat or a goodbye is then owed and retried once the socket takes frames
 * again (timers, closing_done); an abort is best effort. */
int veil_net_send_control(struct veil_net *net, int p, int type, const void *payload, size_t len)
{
    uint8_t hdr[VEIL_FRAME_HEADER_BYTES];
    /* a heartbeat or goodbye counts the frames handed to the data channel so far */
    const uint64_t count =
        type == VEIL_FRAME_HEARTBEAT || type == VEIL_FRAME_BYE ? net->peers[p].dflushed : 0;
    veil_net_io_header(net, type, count, 0, len, (uint32_t)len, hdr);
    void *d = net->peers[p].dealer;
    if (zmq_send(d, hdr, sizeof hdr, ZMQ_DONTWAIT | (len ? ZMQ_SNDMORE : 0)) < 0)
        return -1;
    if (len && zmq_send(d, payload, len, ZMQ_DONTWAIT) < 0)
        return -1; /* not reached: the parts of a message are queued together */
    veil_net_count_sent(net, p, VEIL_FRAME_HEADER_BYTES + len, 0, 0);
    return 0;
}

void veil_net_io_hello(const struct veil_net *net, struct veil_hello *out)
{
    *out = (struct veil_hello){
        .protocol_version = VEIL_NET_PROTOCOL_VERSION,
        .party = (uint32_t)net->self,
        .nparties = (uint32_t)net->cfg.nparties,
        .has_dealer = (uint32_t)(net->cfg.has_dealer ? 1 : 0),
    };
    memcpy(out->session, net->cfg.session, VEIL_SESSION_BYTES);
    memcpy(out->plan_digest, net->cfg.plan_digest, VEIL_PLAN_DIGEST_BYTES);
}

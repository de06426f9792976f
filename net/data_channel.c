/*
 * data_channel.c — the sealed data channel. Under CurveZMQ every byte pays for XSalsa20-Poly1305
 * and ZeroMQ's copies on its I/O thread (bench/README-latency.md: 0.07 s of a 0.16 s
 * multiply-and-truncate of 10^6 elements); tensor chunks are nearly all of those bytes. So each
 * process also binds a plain ZeroMQ ROUTER (the data ROUTER, on a port the kernel picks or
 * VEIL_NET_DATA_PORT) and offers it to every peer in its hello, with a fresh AES-256-GCM key
 * drawn for that peer (OpenSSL's RAND_bytes). The hello travels inside the CURVE connection, so
 * the key is as secret and as authentic as that connection: only the peer the ZAP handler
 * admitted learns it, and only this session uses it. The peer connects a plain DEALER to that
 * port on the host of our configured endpoint and sends every data frame sealed (net/seal.h):
 * encrypted and authenticated, numbered. Control frames (hello, heartbeat, goodbye, abort) stay
 * on the CURVE connection.
 *
 * What the receiver checks, since anyone may connect to a plain port: a frame is used only when
 * its tag verifies under the key we gave the sender it names and its counter is the next one
 * from that sender. A frame that does not verify on a connection no authentic frame came on yet
 * is dropped (logged; a stranger cannot stop the session); on the connection the peer's frames
 * came on, it fails the session (changed in transit). An authentic frame with a later counter
 * means frames were lost (a dropped connection): the session fails; an earlier one is a replay
 * and is dropped. The peer announces in every heartbeat and in its goodbye how many frames it
 * has handed to ZeroMQ: a count ahead of what arrived for a whole silence timeout fails the
 * session (frames lost on the way), and a goodbye's pending-receive check waits for the count.
 */
#include "config.h"
#include "base/base_internal.h"
#include "net/config_internal.h"
#include "net/io_internal.h"

#include <errno.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RECV_BUDGET 256

static int zfail(const char *what)
{
    return veil_error(VEIL_ERR_NET, "net: data channel: %s: %s", what, zmq_strerror(zmq_errno()));
}

static int set_int(void *s, int opt, int v)
{
    return zmq_setsockopt(s, opt, &v, sizeof v);
}

/* "tcp://HOST:PORT" -> the length of "tcp://HOST" (up to the last ':'), or 0 when the endpoint
 * is not TCP. */
static size_t tcp_host_len(const char *endpoint)
{
    if (strncmp(endpoint, "tcp://", 6) != 0)
        return 0;
    const char *colon = strrchr(endpoint, ':');
    return colon && colon > endpoint + 6 ? (size_t)(colon - endpoint) : 0;
}

int veil_net_data_create(struct veil_net *net)
{
    const struct veil_net_config *c = &net->cfg;
    if (c->insecure_plaintext || !net->opt.data_channel)
        return VEIL_OK;
    const char *own = c->peers[net->self].endpoint;
    size_t host = tcp_host_len(own);
    if (!host) {
        VEIL_LOG_INFO("net: endpoint %s is not TCP: data goes on the CURVE connection", own);
        return VEIL_OK;
    }
    char ep[sizeof c->peers[0].endpoint + 8];
    if (net->opt.data_port)
        snprintf(ep, sizeof ep, "%.*s:%d", (int)host, own, net->opt.data_port);
    else
        snprintf(ep, sizeof ep, "%.*s:*", (int)host, own);
    void *r = zmq_socket(net->ctx, ZMQ_ROUTER);
    if (!r)
        return zfail("ROUTER socket");
    net->drouter = r;
    int64_t maxmsg = VEIL_FRAME_MAX_CHUNK + VEIL_FRAME_HEADER_BYTES + VEIL_SEAL_OVERHEAD;
    if (set_int(r, ZMQ_LINGER, 0) || set_int(r, ZMQ_ROUTER_MANDATORY, 1) ||
        set_int(r, ZMQ_RCVHWM, 64) || zmq_setsockopt(r, ZMQ_MAXMSGSIZE, &maxmsg, sizeof maxmsg) ||
        set_int(r, ZMQ_IPV6, veil_net_endpoint_ipv6(own)))
        return zfail("ROUTER options");
    if (zmq_bind(r, ep) != 0)
        return veil_error(VEIL_ERR_NET, "net: cannot listen for the data channel on %s: %s%s", ep,
                          zmq_strerror(zmq_errno()),
                          net->opt.data_port ? " (is VEIL_NET_DATA_PORT taken?)" : "");
    char last[256];
    size_t len = sizeof last;
    if (zmq_getsockopt(r, ZMQ_LAST_ENDPOINT, last, &len) != 0)
        return zfail("ZMQ_LAST_ENDPOINT");
    const char *colon = strrchr(last, ':');
    long port = colon ? strtol(colon + 1, NULL, 10) : 0;
    if (port <= 0 || port > 65535)
        return veil_error(VEIL_ERR_NET, "net: data channel bound at '%s': no port", last);
    net->dport = (int)port;
    int rc = veil_net_router_monitor(net, 1);
    if (rc)
        return rc;
    for (int p = 0; p < net->nprocs; p++) {
        if (p == net->self)
            continue;
        struct veil_net_peer_state *ps = &net->peers[p];
        if (RAND_bytes(ps->key_in, sizeof ps->key_in) != 1)
            return veil_error(VEIL_ERR_CRYPTO, "net: RAND_bytes failed for a data channel key");
        rc = veil_seal_init(&ps->seal_in, ps->key_in, 0);
        if (rc)
            return rc;
    }
    VEIL_LOG_DEBUG("net: data channel on %s", last);
    return VEIL_OK;
}

void veil_net_data_hello(const struct veil_net *net, int p, struct veil_hello *h)
{
    h->data_port = net->drouter ? (uint32_t)net->dport : 0;
    if (net->drouter)
        memcpy(h->data_key, net->peers[p].key_in, sizeof h->data_key);
    else
        memset(h->data_key, 0, sizeof h->data_key);
}

int veil_net_data_connect(struct veil_net *net, int p, const struct veil_hello *theirs)
{
    if (theirs->data_port == 0 || net->cfg.insecure_plaintext)
        return VEIL_OK; /* (in plaintext nothing could keep the key secret: data stays here) */
    char name[32];
    veil_net_peer_name(net, p, name);
    struct veil_net_peer_state *ps = &net->peers[p];
    const char *theirs_ep = net->cfg.peers[p].endpoint;
    size_t host = tcp_host_len(theirs_ep);
    if (!host)
        return veil_error(VEIL_ERR_PROTO,
                          "%s offers a data channel, but its endpoint %s is not TCP", name,
                          theirs_ep);
    char ep[sizeof net->cfg.peers[0].endpoint + 8];
    snprintf(ep, sizeof ep, "%.*s:%u", (int)host, theirs_ep, (unsigned)theirs->data_port);
    void *d = zmq_socket(net->ctx, ZMQ_DEALER);
    if (!d)
        return zfail("DEALER socket");
    ps->ddealer = d;
    int64_t small = 256;
    if (set_int(d, ZMQ_LINGER, 0) || set_int(d, ZMQ_SNDHWM, ps->outq_cap + 64) ||
        set_int(d, ZMQ_RCVHWM, 1) || set_int(d, ZMQ_RECONNECT_IVL, 100) ||
        zmq_setsockopt(d, ZMQ_MAXMSGSIZE, &small, sizeof small) ||
        set_int(d, ZMQ_IPV6, veil_net_endpoint_ipv6(theirs_ep)))
        return zfail("DEALER options");
    int rc = veil_seal_init(&ps->seal_out, theirs->data_key, 1);
    if (rc || (rc = veil_net_dealer_monitor(net, p, 1)))
        return rc;
    if (zmq_connect(d, ep) != 0)
        return veil_error(VEIL_ERR_NET, "net: cannot connect to the data channel of %s at %s: %s",
                          name, ep, zmq_strerror(zmq_errno()));
    VEIL_LOG_DEBUG("net: data to %s goes sealed to %s", name, ep);
    return VEIL_OK;
}

/* A frame on the data ROUTER that is not an authentic next frame (why). On a connection a peer's
 * authentic frames came on (its routing id), the session fails naming that peer; elsewhere it is
 * dropped and logged: anyone may connect to the data port, and a stranger's bytes cannot stop
 * the session. */
static int not_authentic(struct veil_net *net, const zmq_msg_t *rid, const char *why)
{
    const size_t rl = zmq_msg_size((zmq_msg_t *)rid);
    for (int p = 0; p < net->nprocs; p++) {
        const struct veil_net_peer_state *ps = &net->peers[p];
        if (p == net->self || !ps->drid_len || ps->drid_len != rl ||
            memcmp(ps->drid, zmq_msg_data((zmq_msg_t *)rid), rl) != 0)
            continue;
        char name[32], me[32];
        return veil_net_io_fail(net, VEIL_ERR_PEER_LOST,
                                "%s lost: the data channel from it to %s carried %s (the stream "
                                "was changed in transit: the session cannot go on)",
                                veil_net_peer_name(net, p, name),
                                veil_net_peer_name(net, net->self, me), why);
    }
    /* (read by tests from another thread) */
    const uint64_t g = __atomic_add_fetch(&net->dgarbage, 1, __ATOMIC_RELAXED);
    if (g <= 8 || g % 1000 == 0)
        VEIL_LOG_WARN("net: data channel: dropped a frame from an unauthenticated connection "
                      "(%s; %llu so far)",
                      why, (unsigned long long)g);
    return VEIL_OK;
}

/* One message from the data ROUTER: parts[0] the routing id, parts[1] the sealed frame. */
static int on_message(struct veil_net *net, zmq_msg_t *parts, int n, double now)
{
    char why[200];
    if (n != 2)
        return not_authentic(net, &parts[0], "a message of several frames");
    zmq_msg_t *m = &parts[1];
    uint8_t *buf = zmq_msg_data(m);
    size_t len = zmq_msg_size(m);
    uint32_t sender;
    uint64_t counter;
    if (veil_seal_peek(buf, len, VEIL_FRAME_HEADER_BYTES, &sender, &counter)) {
        snprintf(why, sizeof why, "a malformed frame (%s)", veil_last_error());
        return not_authentic(net, &parts[0], why);
    }
    int p = (int)sender;
    if (sender >= (uint32_t)net->nprocs || p == net->self ||
        !veil_seal_ready(&net->peers[p].seal_in)) {
        snprintf(why, sizeof why, "a frame naming sender %u", (unsigned)sender);
        return not_authentic(net, &parts[0], why);
    }
    struct veil_net_peer_state *ps = &net->peers[p];
    if (veil_seal_open(&ps->seal_in, buf, len)) {
        snprintf(why, sizeof why, "a frame (number %llu) that failed authentication",
                 (unsigned long long)counter);
        return not_authentic(net, &parts[0], why);
    }
    char name[32], me[32];
    veil_net_peer_name(net, p, name);
    veil_net_peer_name(net, net->self, me);
    if (counter < ps->drecv) { /* authentic but old: only a replay brings it again */
        snprintf(why, sizeof why, "frame %llu again (a replay; the next is %llu)",
                 (unsigned long long)counter, (unsigned long long)ps->drecv);
        return not_authentic(net, &parts[0], why);
    }
    if (counter > ps->drecv)
        return veil_net_io_fail(net, VEIL_ERR_PEER_LOST,
                                "%s lost: the data channel from it to %s lost frames %llu..%llu "
                                "(the connection dropped: the session cannot go on)",
                                name, me, (unsigned long long)ps->drecv,
                                (unsigned long long)counter - 1);
    ps->drecv++;
    ps->dstall_since = 0;
    veil_net_peer_seen_on(net, p, 1, m); /* its connection, for peers.c's monitor */
    size_t rl = zmq_msg_size(&parts[0]);
    if (rl <= sizeof ps->drid &&
        (ps->drid_len != rl || memcmp(ps->drid, zmq_msg_data(&parts[0]), rl))) {
        memcpy(ps->drid, zmq_msg_data(&parts[0]), rl); /* its connection (new after a reconnect) */
        ps->drid_len = rl;
    }
    const uint8_t *hb = buf + VEIL_SEAL_PREFIX_BYTES;
    size_t payload = len - VEIL_SEAL_OVERHEAD - VEIL_FRAME_HEADER_BYTES;
    struct veil_frame_header h;
    if (veil_frame_decode(hb, VEIL_FRAME_HEADER_BYTES, &h) ||
        veil_frame_check_peer(&h, net->cfg.session, (uint32_t)p))
        return veil_net_io_fail(net, VEIL_ERR_PROTO, "bad frame from %s: %s", name,
                                veil_last_error());
    if (h.type != VEIL_FRAME_DATA || h.length != payload)
        return veil_net_io_fail(net, VEIL_ERR_PROTO,
                                "%s sent a %s frame with %zu payload bytes on the data channel "
                                "(only data, length %u)",
                                name, veil_frame_type_name(h.type), payload, h.length);
    return veil_net_io_sealed_data(net, p, &h, m, VEIL_SEAL_PREFIX_BYTES + VEIL_FRAME_HEADER_BYTES,
                                   len, now);
}

int veil_net_data_recv(struct veil_net *net, double now)
{
    if (!net->drouter)
        return VEIL_OK;
    for (int budget = 0; budget < RECV_BUDGET && !veil_net_io_failed(net); budget++) {
        zmq_msg_t part[3];
        int n, extra;
        int got = veil_net_recv_parts(net, net->drouter, part, &n, &extra);
        if (got <= 0)
            return got < 0 ? VEIL_ERR_NET : VEIL_OK;
        int rc = on_message(net, part, n, now); /* (more than 3 parts: n is 3) */
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

int veil_net_data_announced(struct veil_net *net, int p, const struct veil_frame_header *h)
{
    struct veil_net_peer_state *ps = &net->peers[p];
    char name[32];
    if (h->tag < ps->dannounced || (h->tag > 0 && !veil_seal_ready(&ps->seal_in)))
        return veil_net_io_fail(net, VEIL_ERR_PROTO,
                                "%s announced %llu data-channel frames (before: %llu%s)",
                                veil_net_peer_name(net, p, name), (unsigned long long)h->tag,
                                (unsigned long long)ps->dannounced,
                                veil_seal_ready(&ps->seal_in) ? "" : "; it has no data channel");
    ps->dannounced = h->tag;
    return VEIL_OK;
}

void veil_net_data_timers(struct veil_net *net, double now)
{
    for (int p = 0; p < net->nprocs && !veil_net_io_failed(net); p++) {
        struct veil_net_peer_state *ps = &net->peers[p];
        if (p == net->self || ps->dannounced <= ps->drecv) {
            ps->dstall_since = 0;
            continue;
        }
        if (ps->dstall_since == 0)
            ps->dstall_since = now;
        else if (now - ps->dstall_since > net->cfg.timeout_s / 2) {
            char name[32], me[32], hint[320];
            veil_net_peer_name(net, p, name);
            veil_net_peer_name(net, net->self, me);
            if (ps->drecv == 0) /* never reached us: most likely a port it cannot connect to */
                snprintf(hint, sizeof hint,
                         "nothing ever came on it: can %s reach port %d of this host (a "
                         "firewall; VEIL_NET_DATA_PORT fixes the port, VEIL_NET_DATA_CHANNEL=curve "
                         "here keeps the data on the CURVE connection)?",
                         name, net->dport);
            else
                snprintf(hint, sizeof hint, "lost on the way: the session cannot go on");
            veil_net_io_fail(net, VEIL_ERR_PEER_LOST,
                             "%s lost: the data channel from it to %s stalled: it sent %llu "
                             "frames, %llu arrived, none for %.1f s (%s)",
                             name, me, (unsigned long long)ps->dannounced,
                             (unsigned long long)ps->drecv, now - ps->dstall_since, hint);
        }
    }
}

void veil_net_data_free_keys(struct veil_net *net)
{
    for (int p = 0; p < VEIL_NET_MAX_PROCS; p++) {
        veil_seal_free(&net->peers[p].seal_in);
        veil_seal_free(&net->peers[p].seal_out);
        veil_wipe(net->peers[p].key_in, sizeof net->peers[p].key_in);
    }
}

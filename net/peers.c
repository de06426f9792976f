/*
 * peers.c — who a peer is: its name in messages ("party 2", "dealer (id 3)"), and admission: the
 * ZAP handler (RFC 27) that admits only the configured CURVE public keys and maps each to its
 * party id (the user id the I/O thread reads on every message), and the monitors that watch the
 * connections: the ROUTER's logs failed handshakes and reports the disconnection of a peer's
 * connection to us (ZeroMQ drops it at the first message that fails CURVE authentication: garbage
 * injected, a byte flipped, a stretch replayed), told from other connections by the descriptor
 * the peer's messages come on; the DEALERs' report the disconnection of ours to them (a cut, a
 * peer that died). ZeroMQ reconnects silently and the messages in flight are lost, so a drop of
 * an established connection, either way, ends the session within a few heartbeats, naming the
 * peer and the link. When several failures are known, the message names the first one first
 * (overdue_before). Called by the I/O thread (io.c); calls io_core.c's veil_net_io_fail.
 */
#include "config.h"
#include "base/base_internal.h"
#include "net/io_internal.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

const char *veil_net_peer_name(const struct veil_net *net, int id, char buf[32])
{
    if (net->cfg.has_dealer && id == net->cfg.nparties)
        snprintf(buf, 32, "dealer (id %d)", id);
    else
        snprintf(buf, 32, "party %d", id);
    return buf;
}

/* ---- ZAP (RFC 27): admit only configured keys; user id = party id -----------------------------
 */

static void zap_log_refused(struct veil_net *net, const uint8_t *key, const char *address)
{
    char z85[VEIL_Z85_KEY_CHARS + 1];
    if (!zmq_z85_encode(z85, key, 32))
        snprintf(z85, sizeof z85, "(unencodable)");
    for (int i = 0; i < net->nrefused; i++)
        if (strcmp(net->refused[i], z85) == 0)
            return; /* once per key: the peer retries every 100 ms */
    if (net->nrefused < 8)
        snprintf(net->refused[net->nrefused++], sizeof net->refused[0], "%s", z85);
    VEIL_LOG_WARN("net: refused connection from unknown key %s (address %s)", z85, address);
}

int veil_net_zap_serve(struct veil_net *net)
{
    for (;;) {
        zmq_msg_t part[8];
        int n = 0, more = 1;
        while (more) {
            zmq_msg_t m;
            zmq_msg_init(&m);
            if (zmq_msg_recv(&m, net->zap, ZMQ_DONTWAIT) < 0) {
                zmq_msg_close(&m);
                if (n == 0 && zmq_errno() == EAGAIN)
                    return VEIL_OK;
                for (int i = 0; i < n; i++)
                    zmq_msg_close(&part[i]);
                return veil_error(VEIL_ERR_NET, "net: ZAP receive: %s", zmq_strerror(zmq_errno()));
            }
            more = zmq_msg_more(&m);
            if (n < 8)
                part[n++] = m;
            else
                zmq_msg_close(&m);
        }
        /* version, request id, domain, address, identity, mechanism, credentials... */
        const char *status = "400", *text = "unknown key";
        char user[16] = "";
        char address[64] = "?";
        if (n >= 6) {
            size_t al = zmq_msg_size(&part[3]);
            if (al >= sizeof address)
                al = sizeof address - 1;
            memcpy(address, zmq_msg_data(&part[3]), al);
            address[al] = 0;
        }
        if (n >= 7 && zmq_msg_size(&part[5]) == 5 &&
            memcmp(zmq_msg_data(&part[5]), "CURVE", 5) == 0 && zmq_msg_size(&part[6]) == 32) {
            const uint8_t *key = zmq_msg_data(&part[6]);
            int who = -1;
            for (int p = 0; p < net->nprocs; p++)
                if (p != net->self && memcmp(net->keys[p], key, 32) == 0)
                    who = p;
            if (who >= 0) {
                status = "200";
                text = "OK";
                snprintf(user, sizeof user, "%d", who);
            } else {
                zap_log_refused(net, key, address);
            }
        } else {
            VEIL_LOG_WARN("net: refused a ZAP request that is not CURVE (address %s)", address);
        }
        const void *rep[6] = {"1.0", NULL, status, text, user, ""};
        size_t len[6] = {3, 0, 3, strlen(text), strlen(user), 0};
        if (n >= 2) {
            rep[1] = zmq_msg_data(&part[1]);
            len[1] = zmq_msg_size(&part[1]);
        }
        int rc = VEIL_OK;
        for (int i = 0; i < 6 && rc == VEIL_OK; i++)
            if (zmq_send(net->zap, rep[i] ? rep[i] : "", len[i], i < 5 ? ZMQ_SNDMORE : 0) < 0)
                rc = veil_error(VEIL_ERR_NET, "net: ZAP reply: %s", zmq_strerror(zmq_errno()));
        for (int i = 0; i < n; i++)
            zmq_msg_close(&part[i]);
        if (rc != VEIL_OK)
            return rc;
    }
}

/* A PAIR connected to a fresh monitor of socket s for events: out, or an error naming what. */
static int monitor_of(struct veil_net *net, void *s, const char *name, int events, void **out)
{
    char mon[96];
    snprintf(mon, sizeof mon, "inproc://veil-%s-%p", name, (void *)net);
    void *m = NULL;
    int linger = 0;
    if (zmq_socket_monitor(s, mon, events) != 0 || !(m = zmq_socket(net->ctx, ZMQ_PAIR)) ||
        zmq_setsockopt(m, ZMQ_LINGER, &linger, sizeof linger) != 0 || zmq_connect(m, mon) != 0) {
        if (m)
            zmq_close(m);
        return veil_error(VEIL_ERR_NET, "net: monitor %s: %s", name, zmq_strerror(zmq_errno()));
    }
    *out = m;
    return VEIL_OK;
}

int veil_net_dealer_monitor(struct veil_net *net, int p, int data)
{
    struct veil_net_peer_state *ps = &net->peers[p];
    char name[32];
    snprintf(name, sizeof name, "%smonitor-%d", data ? "data-d" : "d", p);
    return monitor_of(net, data ? ps->ddealer : ps->dealer, name, ZMQ_EVENT_DISCONNECTED,
                      data ? &ps->ddmonitor : &ps->dmonitor);
}

int veil_net_router_monitor(struct veil_net *net, int data)
{
    if (data)
        return monitor_of(net, net->drouter, "data-monitor",
                          ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL | ZMQ_EVENT_DISCONNECTED, &net->dmon);
    return monitor_of(net, net->router, "monitor",
                      ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL | ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL |
                          ZMQ_EVENT_HANDSHAKE_FAILED_AUTH | ZMQ_EVENT_DISCONNECTED,
                      &net->monitor);
}

/* Whether a drop of peer ps's connection seen at time t is its orderly close: it said goodbye,
 * every data-channel frame its goodbye counts arrived, and t is not before our goodbye (a peer
 * closes its connections only once it has every goodbye, ours included: io.c's closing_done). A
 * drop before our goodbye fails the session even when the peer then finished within the grace
 * and nothing was lost: the stream was cut or corrupted. */
static int forgiven(const struct veil_net *net, const struct veil_net_peer_state *ps, double t)
{
    return veil_net_peer_done(ps) && net->bye_sent && t >= net->bye_sent_at;
}

/* Whether peer ps has a drop that fails the session once its grace is over: the peer
 * acknowledged our hello and the drop is not its orderly close. */
static int drop_stands(const struct veil_net *net, const struct veil_net_peer_state *ps)
{
    return ps->dropped_at > 0 && ps->acked && !forgiven(net, ps, ps->dropped_at);
}

void veil_net_peer_seen_on(struct veil_net *net, int p, int data, zmq_msg_t *msg)
{
    struct veil_net_peer_state *ps = &net->peers[p];
    struct veil_net_conn_watch *w = &ps->from[data];
    const int fd = zmq_msg_get(msg, ZMQ_SRCFD); /* deprecated, still served in 4.3 ("__fd") */
    struct stat st;
    if (fd < 0 || fd == w->fd)
        return;
    if (fstat(fd, &st) != 0) {
        /* A data-channel frame read after ZeroMQ closed its connection (its disconnection may
         * have been read before the frame, naming a descriptor not known then): that connection
         * is gone, a suspect as if its disconnection came now. (A CURVE connection carries
         * heartbeats from the start, so its descriptor is known long before.) */
        if (data && ps->hello_ok && !forgiven(net, ps, veil_now()) && ps->dropped_at == 0 &&
            w->suspect_fd < 0) {
            w->fd = w->suspect_fd = fd;
            w->ino = 0;
            w->suspect_at = veil_now();
            w->drop_code = 0;
        }
        return;
    }
    w->fd = fd;
    w->ino = (unsigned long long)st.st_ino;
}

static const char *zmtp_error(uint32_t code)
{
    switch (code) {
    case ZMQ_PROTOCOL_ERROR_ZMTP_CRYPTOGRAPHIC:
        return "a CURVE message failed authentication: the stream was corrupted or tampered with";
    case ZMQ_PROTOCOL_ERROR_ZMTP_INVALID_SEQUENCE:
        return "a CURVE message came out of sequence: the stream was replayed or corrupted";
    case 0:
        return NULL;
    default:
        return "a malformed ZMTP frame: the stream was corrupted";
    }
}

/* ZMTP errors of a message that fails CURVE decoding on an established connection (also those of
 * a stranger's bad handshake). ZeroMQ 4.3 then stops reading that connection without closing it:
 * a stalled link, nothing from the peer ever again, and no disconnection to see. */
static int zmtp_midstream(uint32_t code)
{
    return code == ZMQ_PROTOCOL_ERROR_ZMTP_CRYPTOGRAPHIC ||
           code == ZMQ_PROTOCOL_ERROR_ZMTP_INVALID_SEQUENCE ||
           code == ZMQ_PROTOCOL_ERROR_ZMTP_MALFORMED_COMMAND_MESSAGE ||
           code == ZMQ_PROTOCOL_ERROR_ZMTP_UNEXPECTED_COMMAND ||
           code == ZMQ_PROTOCOL_ERROR_ZMTP_MALFORMED_COMMAND_UNSPECIFIED;
}

/* After a message failed CURVE decoding (stall_at), the peer whose connection it was falls
 * silent: once 2.5 heartbeats have passed, the established peer not heard from for 1.5 heartbeats
 * (the longest silent) is the one, and the session fails naming it; when every peer is still
 * heard, it was a stranger's handshake and is forgotten (a later failure is checked in its own
 * turn, so a stranger cannot mask a corruption). Returns whether the session failed. */
static int stall_check(struct veil_net *net, double now)
{
    const double hb = net->cfg.heartbeat_s;
    if (net->stall_at == 0 || now - net->stall_at < 2.5 * hb + 0.2)
        return 0;
    int who = -1;
    for (int p = 0; p < net->nprocs; p++) {
        const struct veil_net_peer_state *ps = &net->peers[p];
        if (p != net->self && ps->hello_ok && ps->acked && !ps->bye &&
            now - ps->last_heard > 1.5 * hb + 0.1 &&
            (who < 0 || ps->last_heard < net->peers[who].last_heard))
            who = p;
    }
    if (who < 0) { /* a stranger's; one that came since is checked in its turn */
        net->stall_at = net->stall_last > net->stall_at ? net->stall_last : 0;
        return 0;
    }
    net->stall_at = 0;
    char name[32], me[32];
    veil_net_io_fail(net, VEIL_ERR_PEER_LOST,
                     "%s lost: the connection from it to %s stalled: %s, and nothing came from it "
                     "for %.1f s (ZeroMQ reads no more of it; messages in flight are lost, so the "
                     "session cannot go on)",
                     veil_net_peer_name(net, who, name), veil_net_peer_name(net, net->self, me),
                     zmtp_error(net->stall_code), now - net->peers[who].last_heard);
    return 1;
}

/* How a failure message names the first failure when the news of several are at hand: a peer
 * already silent for half the timeout when another's connection dropped (one that stopped, and a
 * process that then gave up on it and left) is named first, as the one silent longest among
 * several timed-out peers is (io.c); of several drops, the earliest. A relayed abort names its
 * original cause first (io_recv.c). README's failure section states this rule. */
static int overdue_before(const struct veil_net *net, int except, double t)
{
    int who = -1;
    for (int q = 0; q < net->nprocs; q++) {
        const struct veil_net_peer_state *qs = &net->peers[q];
        if (q == net->self || q == except || qs->bye || !qs->hello_ok || !qs->acked)
            continue;
        if (qs->last_heard < t - net->cfg.timeout_s / 2 &&
            (who < 0 || qs->last_heard < net->peers[who].last_heard))
            who = q;
    }
    return who;
}

/* A disconnection one of our ROUTERs reported for peer p's descriptor (watch w, link: the link it
 * is), once the grace has passed: real when the peer's messages now come on another descriptor,
 * or the descriptor is closed or is another socket (its number reused); else the event was an
 * earlier connection's. */
static void confirm_suspect(const struct veil_net *net, struct veil_net_peer_state *ps,
                            struct veil_net_conn_watch *w, int link, double now, double grace)
{
    if (w->suspect_fd < 0 || now - w->suspect_at < grace)
        return;
    struct stat st;
    const int gone = w->fd != w->suspect_fd || fstat(w->suspect_fd, &st) != 0 ||
                     (unsigned long long)st.st_ino != w->ino;
    if (gone && ps->acked && !forgiven(net, ps, w->suspect_at) && ps->dropped_at == 0) {
        ps->dropped_at = w->suspect_at;
        ps->dropped_link = link;
    }
    if (!gone)
        w->drop_code = 0;
    w->suspect_fd = -1;
}

/* The next event a monitor holds: 1 with its id, value and address (NUL-terminated, cut to
 * cap), 0 when none is waiting. A malformed one (shorter than ZeroMQ's 6 bytes) reads as id 0. */
static int next_event(void *mon, uint16_t *event, uint32_t *value, char *addr, size_t cap)
{
    uint8_t ev[6];
    int n = mon ? zmq_recv(mon, ev, sizeof ev, ZMQ_DONTWAIT) : -1;
    if (n < 0)
        return 0;
    int more = 0;
    size_t ml = sizeof more;
    zmq_getsockopt(mon, ZMQ_RCVMORE, &more, &ml);
    int al = more ? zmq_recv(mon, addr, cap - 1, 0) : 0;
    addr[al > 0 ? (al < (int)cap ? al : (int)cap - 1) : 0] = 0;
    *event = 0;
    *value = 0;
    if (n >= 6) {
        memcpy(event, ev, 2);
        memcpy(value, ev + 2, 4);
    }
    return 1;
}

/* Drains a DEALER's monitor: a disconnection of an established connection (peer p, link) is a
 * drop. (Established by the event: one during this DEALER's own handshake, before the peer
 * acknowledged the hello it carries, loses nothing the handshake's timeout would not catch.) */
static void dealer_events(const struct veil_net *net, struct veil_net_peer_state *ps, void *mon,
                          int p, int link, double now)
{
    uint16_t event;
    uint32_t value;
    char addr[128];
    while (next_event(mon, &event, &value, addr, sizeof addr)) {
        VEIL_LOG_DEBUG("net: %sconnection to peer %d dropped (%s)",
                       link == VEIL_NET_LINK_DATA_TO ? "data-channel " : "", p, addr);
        if (event && ps->hello_ok && ps->acked && !forgiven(net, ps, now) && ps->dropped_at == 0) {
            ps->dropped_at = now;
            ps->dropped_link = link;
        }
    }
}

/* The disconnections of established connections with the peers, both ways: the DEALERs' (to
 * them) drained here, the ROUTER's (from them) noted by veil_net_monitor_serve; checked every
 * 50 ms (a drop is rare; the loop wakes at least every 100 ms). A drop counts once the peer
 * acknowledged our hello (an established session; for a ROUTER's connection by the verdict, not
 * by the event: the frames that acknowledge may still sit in that ROUTER's queue behind the
 * event, read after it in the same turn), unless it is the peer's orderly close
 * (forgiven: seen after our goodbye, and the peer said goodbye and every data-channel frame its
 * goodbye counts has arrived): a peer that closes after the goodbyes drops the connection too,
 * and its goodbye may still sit in the ROUTER's queue when the event comes, hence the grace of a
 * heartbeat (at most a second). */
static void drops_serve(struct veil_net *net, double now)
{
    if (now < net->next_drop_check)
        return;
    net->next_drop_check = now + 0.05;
    const double grace = net->cfg.heartbeat_s < 1.0 ? net->cfg.heartbeat_s : 1.0;
    int first = -1;
    for (int p = 0; p < net->nprocs; p++) {
        struct veil_net_peer_state *ps = &net->peers[p];
        if (p == net->self)
            continue;
        dealer_events(net, ps, ps->dmonitor, p, VEIL_NET_LINK_TO, now);
        dealer_events(net, ps, ps->ddmonitor, p, VEIL_NET_LINK_DATA_TO, now);
        confirm_suspect(net, ps, &ps->from[0], VEIL_NET_LINK_FROM, now, grace);
        confirm_suspect(net, ps, &ps->from[1], VEIL_NET_LINK_DATA_FROM, now, grace);
        if (drop_stands(net, ps) && (first < 0 || ps->dropped_at < net->peers[first].dropped_at))
            first = p;
    }
    if (veil_net_io_failed(net) || stall_check(net, now))
        return;
    if (first < 0 || now - net->peers[first].dropped_at < grace)
        return;
    const struct veil_net_peer_state *fs = &net->peers[first];
    char name[32], me[32], link[96], before[96] = "";
    veil_net_peer_name(net, first, name);
    veil_net_peer_name(net, net->self, me);
    const int in =
        fs->dropped_link == VEIL_NET_LINK_FROM || fs->dropped_link == VEIL_NET_LINK_DATA_FROM;
    snprintf(link, sizeof link, "the %s from %s to %s",
             fs->dropped_link >= VEIL_NET_LINK_DATA_TO ? "data channel" : "connection",
             in ? "it" : me, in ? me : "it");
    const int q = overdue_before(net, first, fs->dropped_at);
    if (q >= 0) {
        char qname[32];
        snprintf(before, sizeof before, "%s lost: silent for %.1f s, then ",
                 veil_net_peer_name(net, q, qname), now - net->peers[q].last_heard);
    }
    const char *why =
        in ? zmtp_error(fs->from[fs->dropped_link == VEIL_NET_LINK_DATA_FROM].drop_code) : NULL;
    veil_net_io_fail(net, VEIL_ERR_PEER_LOST,
                     "%s%s lost: %s dropped (%s; messages in flight may be lost, so the "
                     "session cannot go on)",
                     before, name, link, why ? why : "it died, or the stream was corrupted or cut");
}

int veil_net_drops_pending(const struct veil_net *net)
{
    for (int p = 0; p < net->nprocs; p++) {
        const struct veil_net_peer_state *ps = &net->peers[p];
        if (p == net->self || !ps->acked)
            continue;
        if (drop_stands(net, ps))
            return 1;
        for (int d = 0; d < 2; d++)
            if (ps->from[d].suspect_fd >= 0 && !forgiven(net, ps, ps->from[d].suspect_at))
                return 1;
    }
    return 0;
}

/* A disconnection on one of our ROUTERs (data: the data ROUTER): if it names the descriptor of the
 * connection a peer's hello or frames came on, that peer becomes a suspect (confirmed in
 * drops_serve, which also asks that the peer acknowledged our hello by then). */
static void router_disconnected(struct veil_net *net, int data, int fd, uint32_t code, double now)
{
    for (int p = 0; p < net->nprocs; p++) {
        struct veil_net_peer_state *ps = &net->peers[p];
        struct veil_net_conn_watch *w = &ps->from[data];
        if (p == net->self || w->fd != fd || !ps->hello_ok || forgiven(net, ps, now) ||
            ps->dropped_at > 0 || w->suspect_fd >= 0)
            continue;
        w->suspect_fd = fd;
        w->suspect_at = now;
        w->drop_code = code;
    }
}

/* The data ROUTER's events: its connections' disconnections, and the ZMTP error (a malformed
 * frame) that may precede one. Anyone may connect to it, so nothing else is logged here. */
static void data_router_events(struct veil_net *net, double now)
{
    uint16_t event;
    uint32_t value;
    char addr[128];
    while (next_event(net->dmon, &event, &value, addr, sizeof addr)) {
        if (event == ZMQ_EVENT_DISCONNECTED) {
            router_disconnected(net, 1, (int)value, net->dlast_proto_error, now);
            net->dlast_proto_error = 0;
        } else if (event) {
            net->dlast_proto_error = value;
        }
    }
}

void veil_net_monitor_serve(struct veil_net *net)
{
    const double now = veil_now();
    uint16_t event;
    uint32_t value;
    char addr[128];
    while (next_event(net->monitor, &event, &value, addr, sizeof addr)) {
        if (!event)
            continue;
        if (event == ZMQ_EVENT_DISCONNECTED) {
            router_disconnected(net, 0, (int)value, net->last_proto_error, now);
            net->last_proto_error = 0;
            continue;
        }
        net->last_proto_error = event == ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL ? value : 0;
        if (net->last_proto_error && zmtp_midstream(value)) {
            net->stall_last = now;
            net->stall_code = value;
            if (net->stall_at == 0)
                net->stall_at = now;
        }
        net->nhandshake_failures++;
        if (net->nhandshake_failures <= 10)
            VEIL_LOG_WARN("net: handshake failed on %s (%s, code %u): not a Veil peer, garbage, "
                          "a wrong key or a corrupted stream%s",
                          addr,
                          event == ZMQ_EVENT_HANDSHAKE_FAILED_AUTH       ? "authentication"
                          : event == ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL ? "protocol error"
                                                                         : "no detail",
                          value,
                          net->nhandshake_failures == 10 ? " (further ones not logged)" : "");
    }
    data_router_events(net, now);
    drops_serve(net, now);
}

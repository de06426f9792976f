/*
 * peers.c — who a peer is: its name in messages ("party 2", "dealer (id 3)"), and admission: the
 * ZAP handler (RFC 27) that admits only the configured CURVE public keys and maps each to its
 * party id (the user id the I/O thread reads on every message), the monitor that logs the
 * ROUTER's failed handshakes, and the DEALERs' monitors that catch a dropped connection: ZeroMQ
 * reconnects silently after garbage in a CURVE stream or a cut, and the messages in flight are
 * lost, so a drop of an established connection ends the session. Called by the I/O thread
 * (io.c); calls io_core.c's veil_net_io_fail.
 */
#include "config.h"
#include "base/base_internal.h"
#include "net/io_internal.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

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

int veil_net_dealer_monitor(struct veil_net *net, int p)
{
    char mon[80];
    snprintf(mon, sizeof mon, "inproc://veil-dmonitor-%p-%d", (void *)net, p);
    void *s = NULL;
    int linger = 0;
    if (zmq_socket_monitor(net->peers[p].dealer, mon, ZMQ_EVENT_DISCONNECTED) != 0 ||
        !(s = zmq_socket(net->ctx, ZMQ_PAIR)) ||
        zmq_setsockopt(s, ZMQ_LINGER, &linger, sizeof linger) != 0 || zmq_connect(s, mon) != 0) {
        if (s)
            zmq_close(s);
        return veil_error(VEIL_ERR_NET, "net: monitor of the connection to peer %d: %s", p,
                          zmq_strerror(zmq_errno()));
    }
    net->peers[p].dmonitor = s;
    return VEIL_OK;
}

/* The DEALERs' disconnections, drained every 50 ms (a drop is rare; the loop wakes at least every
 * 100 ms). A drop counts once the peer acknowledged our hello (an established session), unless it
 * said goodbye: a peer that closes after its goodbye drops the connection too, and its goodbye may
 * still sit in the ROUTER's queue when the event comes, hence the grace of a heartbeat. */
static void drops_serve(struct veil_net *net, double now)
{
    if (now < net->next_drop_check)
        return;
    net->next_drop_check = now + 0.05;
    const double grace = net->cfg.heartbeat_s < 1.0 ? net->cfg.heartbeat_s : 1.0;
    for (int p = 0; p < net->nprocs && !veil_net_io_failed(net); p++) {
        struct veil_net_peer_state *ps = &net->peers[p];
        if (p == net->self || !ps->dmonitor)
            continue;
        uint8_t ev[6];
        char addr[128];
        int n;
        while ((n = zmq_recv(ps->dmonitor, ev, sizeof ev, ZMQ_DONTWAIT)) >= 0) {
            int more = 0;
            size_t ml = sizeof more;
            zmq_getsockopt(ps->dmonitor, ZMQ_RCVMORE, &more, &ml);
            if (more)
                (void)zmq_recv(ps->dmonitor, addr, sizeof addr, 0);
            VEIL_LOG_DEBUG("net: connection to peer %d dropped (%s)", p, more ? addr : "?");
            if (n >= 2 && ps->hello_ok && ps->acked && !ps->bye && ps->dropped_at == 0)
                ps->dropped_at = now;
        }
        char name[32];
        if (ps->dropped_at > 0 && !ps->bye && now - ps->dropped_at >= grace)
            veil_net_io_fail(net, VEIL_ERR_PEER_LOST,
                             "%s lost: the connection to it dropped (it died, or the stream was "
                             "corrupted or cut; messages in flight may be lost, so the session "
                             "cannot go on)",
                             veil_net_peer_name(net, p, name));
    }
}

void veil_net_monitor_serve(struct veil_net *net)
{
    drops_serve(net, veil_now());
    for (;;) {
        uint8_t ev[6];
        char addr[128];
        int n = zmq_recv(net->monitor, ev, sizeof ev, ZMQ_DONTWAIT);
        if (n < 0)
            return;
        int more = 0;
        size_t ml = sizeof more;
        zmq_getsockopt(net->monitor, ZMQ_RCVMORE, &more, &ml);
        int al = more ? zmq_recv(net->monitor, addr, sizeof addr - 1, 0) : 0;
        addr[al > 0 ? (al < (int)sizeof addr ? al : (int)sizeof addr - 1) : 0] = 0;
        if (n < 6)
            continue;
        uint16_t event;
        uint32_t value;
        memcpy(&event, ev, 2);
        memcpy(&value, ev + 2, 4);
        net->nhandshake_failures++;
        if (net->nhandshake_failures <= 10)
            VEIL_LOG_WARN("net: handshake failed on %s (%s, code %u): not a Veil peer, garbage, "
                          "or a wrong key%s",
                          addr,
                          event == ZMQ_EVENT_HANDSHAKE_FAILED_AUTH       ? "authentication"
                          : event == ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL ? "protocol error"
                                                                         : "no detail",
                          value,
                          net->nhandshake_failures == 10 ? " (further ones not logged)" : "");
    }
}

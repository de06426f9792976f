/*
 * stats.c — per-peer traffic counters and the session's round counter. The I/O thread is the
 * only writer of the traffic counters; readers in other threads use relaxed atomic loads, so a
 * snapshot taken while traffic flows may mix values from a few frames apart (exact once
 * veil_net_wait_all has returned).
 */
#include "config.h"
#include "base/base_internal.h"
#include "net/net_internal.h"

#define LOAD(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)
#define ADD(x, v) __atomic_fetch_add(&(x), (v), __ATOMIC_RELAXED)

void veil_net_count_sent(struct veil_net *net, int peer, uint64_t wire, uint64_t payload_msg,
                         int msg_done)
{
    struct veil_net_counters *c = &net->peers[peer].ctr;
    ADD(c->frames_sent, 1);
    ADD(c->wire_sent, wire);
    if (msg_done) {
        ADD(c->msgs_sent, 1);
        ADD(c->bytes_sent, payload_msg);
    }
}

void veil_net_count_recv(struct veil_net *net, int peer, uint64_t wire, uint64_t payload_msg,
                         int msg_done)
{
    struct veil_net_counters *c = &net->peers[peer].ctr;
    ADD(c->frames_recv, 1);
    ADD(c->wire_recv, wire);
    if (msg_done) {
        ADD(c->msgs_recv, 1);
        ADD(c->bytes_recv, payload_msg);
    }
}

void veil_net_stats_mark_round(veil_net_t *net)
{
    if (net)
        ADD(net->rounds, 1);
}

int veil_net_stats_get(veil_net_t *net, int peer, struct veil_net_stats *out)
{
    if (!net || !out)
        return veil_error(VEIL_ERR_INVAL, "veil_net_stats_get: NULL argument");
    if (peer < 0 || peer >= net->nprocs || peer == net->self)
        return veil_error(VEIL_ERR_INVAL,
                          "veil_net_stats_get: peer %d is not another process "
                          "of this %d-process session",
                          peer, net->nprocs);
    const struct veil_net_counters *c = &net->peers[peer].ctr;
    out->msgs_sent = LOAD(c->msgs_sent);
    out->msgs_recv = LOAD(c->msgs_recv);
    out->bytes_sent = LOAD(c->bytes_sent);
    out->bytes_recv = LOAD(c->bytes_recv);
    out->frames_sent = LOAD(c->frames_sent);
    out->frames_recv = LOAD(c->frames_recv);
    out->wire_bytes_sent = LOAD(c->wire_sent);
    out->wire_bytes_recv = LOAD(c->wire_recv);
    out->rounds = LOAD(net->rounds);
    return VEIL_OK;
}

void veil_net_stats_log(veil_net_t *net)
{
    if (!net || !veil_log_enabled(VEIL_LOG_INFO))
        return;
    for (int p = 0; p < net->nprocs; p++) {
        struct veil_net_stats s;
        char name[32];
        if (p == net->self || veil_net_stats_get(net, p, &s) != VEIL_OK)
            continue;
        VEIL_LOG_INFO("net stats with %s: sent %llu msgs %llu B (%llu frames %llu wire B), "
                      "received %llu msgs %llu B (%llu frames %llu wire B), rounds %llu",
                      veil_net_peer_name(net, p, name), (unsigned long long)s.msgs_sent,
                      (unsigned long long)s.bytes_sent, (unsigned long long)s.frames_sent,
                      (unsigned long long)s.wire_bytes_sent, (unsigned long long)s.msgs_recv,
                      (unsigned long long)s.bytes_recv, (unsigned long long)s.frames_recv,
                      (unsigned long long)s.wire_bytes_recv, (unsigned long long)s.rounds);
    }
    VEIL_LOG_INFO("net: %llu messages sent and %llu receives completed inline (net/io.c)",
                  (unsigned long long)veil_net_inline_count(net),
                  (unsigned long long)veil_net_inline_recv_count(net));
}

/*
 * mesh.c — the session's lifecycle and its ZeroMQ mesh: validating the configuration, creating
 * the sockets (one ROUTER bound on this process's endpoint that receives everything; one DEALER
 * connected to every peer's ROUTER that sends everything to it; under CURVE, tensor chunks take
 * the sealed data channel instead, net/data_channel.c), CurveZMQ and the ZAP socket
 * (whose handler, peers.c, admits only the configured public keys and maps each to its party
 * id), starting the I/O thread, waiting for the handshake, and the orderly close.
 *
 * Socket options, chosen deliberately:
 * - ROUTER: CURVE server with our secret key; ZAP domain "veil"; ZMQ_MAXMSGSIZE = the largest
 *   chunk a receiver accepts plus slack, so a garbage peer cannot make ZeroMQ allocate more;
 *   RCVHWM 64 messages per connection (the I/O thread drains continuously; TCP pushes back);
 *   ROUTER_MANDATORY on (the ROUTER never sends; if a bug made it, an unknown identity would be an
 *   error instead of a silent drop); LINGER 0 (it holds nothing outgoing).
 * - DEALERs: CURVE client pinned to the peer's public key (ZMQ_CURVE_SERVERKEY); routing id
 *   "p<id>" (informational: in CURVE mode identity comes from the ZAP user id, never from what
 *   the peer claims); SNDHWM above the staging window, so EAGAIN means a genuinely stuck peer
 *   (the I/O thread then waits for POLLOUT); IMMEDIATE 0 so the hello queues before the TCP
 *   connection exists; reconnect every 100 ms; LINGER 1 s on an orderly close (our goodbye must
 *   reach the peer), 0.5 s after a failure (the abort should reach live peers; 0 to a peer known
 *   dead or stopped: its dropped connection or half a timeout of silence); RCVHWM 1 and
 *   MAXMSGSIZE 256
 *   because nothing legitimate ever arrives on a DEALER.
 */
#include "config.h"
#include "base/base_internal.h"
#include "base/env.h"
#include "base/harness.h"
#include "base/secmem.h"
#include "net/config_internal.h"
#include "net/net_internal.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#define ZAP_ENDPOINT "inproc://zeromq.zap.01"

void veil_net_options_defaults(struct veil_net_options *o)
{
    /* chunk size: bench/README-net-starpu.md */
    struct veil_env_net_tuning t = {.chunk_bytes = (size_t)512 << 10,
                                    .pool_bytes = (size_t)16 << 20,
                                    .early_cap_bytes = (size_t)1 << 30,
                                    .connect_timeout_s = 0,
                                    .data_channel = 1,
                                    .data_port = 0,
                                    .spin_us = 0,          /* bench/README-latency.md */
                                    .inline_send = 65536}; /* the same */
    veil_env_net_tuning(&t); /* VEIL_NET_CHUNK, _POOL, _EARLY_CAP, _CONNECT_TIMEOUT, _DATA_*,
                                _SPIN_US, _INLINE_SEND */
    o->connect_timeout_s = t.connect_timeout_s;
    o->chunk_bytes = t.chunk_bytes;
    o->pool_bytes = t.pool_bytes;
    o->early_cap_bytes = t.early_cap_bytes;
    o->data_channel = t.data_channel; /* -1 / -1: refused by validate() */
    o->data_port = t.data_port;
    o->spin_us = t.spin_us; /* -1: refused by validate() */
    o->inline_send = t.inline_send; /* -1: refused by validate() */
}

int veil_net_config_from_harness(const struct veil_harness_party *me,
                                 const char (*public_keys)[VEIL_Z85_KEY_CHARS + 1],
                                 const char *secret_key, struct veil_net_config *cfg)
{
    if (!me || !cfg)
        return veil_error(VEIL_ERR_INVAL, "veil_net_config_from_harness: NULL argument");
    veil_net_config_defaults(cfg);
    cfg->listen_fd = me->listen_fd;
    cfg->nparties = me->nparties;
    cfg->has_dealer = me->has_dealer;
    cfg->self = me->id;
    int nprocs = me->nparties + (me->has_dealer ? 1 : 0);
    if (nprocs > VEIL_NET_MAX_PROCS || me->nparties < 1)
        return veil_error(VEIL_ERR_INVAL, "net: %d processes, at most %d supported", nprocs,
                          VEIL_NET_MAX_PROCS);
    if (strlen(me->session) != 2 * VEIL_SESSION_BYTES)
        return veil_error(VEIL_ERR_INVAL, "net: harness session id is not 32 hex digits");
    if (veil_hex_decode(me->session, cfg->session, VEIL_SESSION_BYTES) != 2 * VEIL_SESSION_BYTES)
        return veil_error(VEIL_ERR_INVAL, "net: harness session id is not hex");
    for (int p = 0; p < nprocs; p++) {
        snprintf(cfg->peers[p].endpoint, sizeof cfg->peers[p].endpoint, "%s", me->endpoints[p]);
        if (public_keys)
            snprintf(cfg->peers[p].public_key, sizeof cfg->peers[p].public_key, "%s",
                     public_keys[p]);
    }
    if (secret_key)
        snprintf(cfg->secret_key, sizeof cfg->secret_key, "%s", secret_key);
    return VEIL_OK;
}

static int zcheck(int rc, const char *what)
{
    if (rc != 0)
        return veil_error(VEIL_ERR_NET, "net: %s: %s", what, zmq_strerror(zmq_errno()));
    return VEIL_OK;
}

static int set_int(void *s, int opt, int v, const char *what)
{
    return zcheck(zmq_setsockopt(s, opt, &v, sizeof v), what);
}

int veil_net_mesh_create(struct veil_net *net)
{
    const struct veil_net_config *c = &net->cfg;
    int rc;
    veil_net_keep_heap(net->opt.chunk_bytes); /* before ZeroMQ receives anything (heap.c) */
    net->ctx = zmq_ctx_new();
    if (!net->ctx)
        return veil_error(VEIL_ERR_NET, "net: zmq_ctx_new: %s", zmq_strerror(zmq_errno()));
    if ((rc = zcheck(zmq_ctx_set(net->ctx, ZMQ_BLOCKY, 0), "ZMQ_BLOCKY")))
        return rc;
    if (!c->insecure_plaintext) {
        net->zap = zmq_socket(net->ctx, ZMQ_REP);
        if (!net->zap)
            return zcheck(-1, "ZAP socket");
        if ((rc = set_int(net->zap, ZMQ_LINGER, 0, "ZAP linger")) ||
            (rc = zcheck(zmq_bind(net->zap, ZAP_ENDPOINT), "bind ZAP handler")))
            return rc;
    }
    net->router = zmq_socket(net->ctx, ZMQ_ROUTER);
    if (!net->router)
        return zcheck(-1, "ROUTER socket");
    int64_t maxmsg = VEIL_FRAME_MAX_CHUNK + 1024;
    if ((rc = set_int(net->router, ZMQ_LINGER, 0, "ROUTER linger")) ||
        (rc = set_int(net->router, ZMQ_ROUTER_MANDATORY, 1, "ROUTER_MANDATORY")) ||
        (rc = set_int(net->router, ZMQ_RCVHWM, 64, "ROUTER RCVHWM")) ||
        (rc = zcheck(zmq_setsockopt(net->router, ZMQ_MAXMSGSIZE, &maxmsg, sizeof maxmsg),
                     "ZMQ_MAXMSGSIZE")) ||
        (rc = set_int(net->router, ZMQ_IPV6, veil_net_endpoint_ipv6(c->peers[net->self].endpoint),
                      "ROUTER IPV6")))
        return rc;
    if (!c->insecure_plaintext) {
        if ((rc = set_int(net->router, ZMQ_CURVE_SERVER, 1, "CURVE_SERVER")) ||
            (rc = zcheck(zmq_setsockopt(net->router, ZMQ_CURVE_SECRETKEY, c->secret_key,
                                        VEIL_Z85_KEY_CHARS),
                         "CURVE secret key")) ||
            (rc = zcheck(zmq_setsockopt(net->router, ZMQ_ZAP_DOMAIN, "veil", 4), "ZAP domain")))
            return rc;
    }
    /* Handshake failures (garbage, wrong keys) are logged, and the disconnection of a peer's
     * established connection (a corrupted stream: ZeroMQ drops it) fails the session, from a
     * monitor the I/O thread polls (peers.c). */
    if ((rc = veil_net_router_monitor(net, 0)) != VEIL_OK)
        return rc;
    /* A listening socket handed over by the launcher (the harness binds every port before it
     * forks, so no other process can take one in between). */
    if (c->listen_fd >= 0 && (rc = set_int(net->router, ZMQ_USE_FD, c->listen_fd, "use fd")))
        return rc;
    if (zmq_bind(net->router, c->peers[net->self].endpoint) != 0)
        return veil_error(VEIL_ERR_NET, "net: cannot listen on %s: %s (is the port taken?)",
                          c->peers[net->self].endpoint, zmq_strerror(zmq_errno()));
    if ((rc = veil_net_data_create(net)) != VEIL_OK)
        return rc;
    int outcap = net->peers[(net->self + 1) % net->nprocs].outq_cap;
    for (int p = 0; p < net->nprocs; p++) {
        if (p == net->self)
            continue;
        void *d = zmq_socket(net->ctx, ZMQ_DEALER);
        if (!d)
            return zcheck(-1, "DEALER socket");
        net->peers[p].dealer = d;
        char rid[16];
        int n = snprintf(rid, sizeof rid, "p%d", net->self);
        int64_t small = 256;
        if ((rc = set_int(d, ZMQ_LINGER, 0, "DEALER linger")) ||
            (rc = set_int(d, ZMQ_SNDHWM, outcap + 64, "DEALER SNDHWM")) ||
            (rc = set_int(d, ZMQ_RCVHWM, 1, "DEALER RCVHWM")) ||
            (rc = set_int(d, ZMQ_RECONNECT_IVL, 100, "RECONNECT_IVL")) ||
            (rc = zcheck(zmq_setsockopt(d, ZMQ_MAXMSGSIZE, &small, sizeof small),
                         "DEALER MAXMSGSIZE")) ||
            (rc = zcheck(zmq_setsockopt(d, ZMQ_ROUTING_ID, rid, (size_t)n), "ROUTING_ID")) ||
            (rc =
                 set_int(d, ZMQ_IPV6, veil_net_endpoint_ipv6(c->peers[p].endpoint), "DEALER IPV6")))
            return rc;
        if (!c->insecure_plaintext) {
            if ((rc = zcheck(zmq_setsockopt(d, ZMQ_CURVE_SERVERKEY, c->peers[p].public_key,
                                            VEIL_Z85_KEY_CHARS),
                             "CURVE server key")) ||
                (rc = zcheck(zmq_setsockopt(d, ZMQ_CURVE_PUBLICKEY, c->peers[net->self].public_key,
                                            VEIL_Z85_KEY_CHARS),
                             "CURVE public key")) ||
                (rc = zcheck(
                     zmq_setsockopt(d, ZMQ_CURVE_SECRETKEY, c->secret_key, VEIL_Z85_KEY_CHARS),
                     "CURVE secret key")))
                return rc;
        }
        if ((rc = veil_net_dealer_monitor(net, p, 0)) != VEIL_OK)
            return rc;
        if (zmq_connect(d, c->peers[p].endpoint) != 0)
            return veil_error(VEIL_ERR_NET, "net: cannot connect to %s at %s: %s",
                              veil_net_peer_name(net, p, (char[32]){0}), c->peers[p].endpoint,
                              zmq_strerror(zmq_errno()));
    }
    return VEIL_OK;
}

/* The linger of the sockets to peer p when the session closes. After a failure, an established
 * peer whose connection dropped or that has been silent for half the timeout is dead or stopped:
 * our abort cannot help it, and its queue would only hold the exit back by the whole linger (the
 * others' still get theirs). */
static int linger_of(struct veil_net *net, int p, int linger_ms)
{
    const struct veil_net_peer_state *ps = &net->peers[p];
    if (net->state == VEIL_NET_FAILED && ps->hello_ok && ps->acked && !ps->bye &&
        (ps->dropped_at > 0 || veil_now() - ps->last_heard > net->cfg.timeout_s / 2))
        return 0;
    return linger_ms;
}

/* Closes *s (if open) with the given linger (< 0: as set when it was made) and clears it. */
static void close_socket(void **s, int linger_ms)
{
    if (!*s)
        return;
    if (linger_ms >= 0)
        zmq_setsockopt(*s, ZMQ_LINGER, &linger_ms, sizeof linger_ms);
    zmq_close(*s);
    *s = NULL;
}

void veil_net_mesh_destroy(struct veil_net *net, int linger_ms)
{
    for (int p = 0; p < net->nprocs; p++) {
        struct veil_net_peer_state *ps = &net->peers[p];
        const int l = linger_of(net, p, linger_ms);
        close_socket(&ps->dmonitor, -1);
        close_socket(&ps->ddmonitor, -1);
        close_socket(&ps->dealer, l);
        close_socket(&ps->ddealer, l);
    }
    close_socket(&net->monitor, -1);
    close_socket(&net->dmon, -1);
    close_socket(&net->drouter, -1);
    close_socket(&net->router, -1);
    close_socket(&net->zap, -1);
    if (net->ctx) {
        while (zmq_ctx_term(net->ctx) != 0 && zmq_errno() == EINTR)
            ;
        net->ctx = NULL;
    }
}

/* ---- open / close -------------------------------------------------------------------------- */

static void pool_wake(void *arg)
{
    veil_net_wake(arg);
}

static int validate(struct veil_net *net)
{
    const struct veil_net_config *c = &net->cfg;
    if (c->nparties < 2 || c->nparties > VEIL_NET_MAX_PARTIES)
        return veil_error(VEIL_ERR_INVAL, "net: %d parties; Veil needs 2..%d", c->nparties,
                          VEIL_NET_MAX_PARTIES);
    net->nprocs = veil_net_config_nprocs(c);
    net->self = c->self;
    if (c->self < 0 || c->self >= net->nprocs)
        return veil_error(VEIL_ERR_INVAL, "net: self id %d outside 0..%d", c->self,
                          net->nprocs - 1);
    if (!(c->timeout_s > 0) || !(c->heartbeat_s > 0) || c->heartbeat_s >= c->timeout_s)
        return veil_error(VEIL_ERR_INVAL, "net: need 0 < heartbeat (%g s) < timeout (%g s)",
                          c->heartbeat_s, c->timeout_s);
    for (int p = 0; p < net->nprocs; p++) {
        if (!c->peers[p].endpoint[0])
            return veil_error(VEIL_ERR_INVAL, "net: no endpoint for process %d", p);
        if (c->insecure_plaintext)
            continue;
        if (strlen(c->peers[p].public_key) != VEIL_Z85_KEY_CHARS ||
            !zmq_z85_decode(net->keys[p], c->peers[p].public_key))
            return veil_error(VEIL_ERR_INVAL,
                              "net: public key of process %d is not 40 Z85 "
                              "characters (write keys with veil-keygen)",
                              p);
    }
    if (!c->insecure_plaintext && strlen(c->secret_key) != VEIL_Z85_KEY_CHARS)
        return veil_error(VEIL_ERR_INVAL, "net: no CURVE secret key for this process (or set "
                                          "insecure-plaintext for debugging)");
    if (net->opt.data_channel != 0 && net->opt.data_channel != 1)
        return veil_error(VEIL_ERR_INVAL,
                          "net: VEIL_NET_DATA_CHANNEL is neither aes-gcm nor curve");
    if (net->opt.data_port < 0 || net->opt.data_port > 65535)
        return veil_error(VEIL_ERR_INVAL,
                          "net: VEIL_NET_DATA_PORT is not a port number (0..65535)");
    if (net->opt.spin_us < 0 || net->opt.spin_us > VEIL_ENV_SPIN_US_MAX)
        return veil_error(VEIL_ERR_INVAL,
                          "net: VEIL_NET_SPIN_US is not a number of microseconds "
                          "(0..%d)",
                          VEIL_ENV_SPIN_US_MAX);
    if (net->opt.inline_send < 0 || net->opt.inline_send > VEIL_ENV_INLINE_SEND_MAX)
        return veil_error(VEIL_ERR_INVAL,
                          "net: VEIL_NET_INLINE_SEND is not a number of bytes (0..%d)",
                          VEIL_ENV_INLINE_SEND_MAX);
    if (net->opt.chunk_bytes < 64 || net->opt.chunk_bytes > VEIL_FRAME_MAX_CHUNK)
        return veil_error(VEIL_ERR_INVAL, "net: chunk size %zu outside 64..%u bytes",
                          net->opt.chunk_bytes, VEIL_FRAME_MAX_CHUNK);
    return VEIL_OK;
}

static void destroy(struct veil_net *net, int linger_ms)
{
    veil_net_mesh_destroy(net, linger_ms);
    for (int p = 0; p < VEIL_NET_MAX_PROCS; p++)
        free(net->peers[p].outq);
    veil_net_pool_destroy(&net->pool);
    veil_net_data_free_keys(net);
    if (net->efd >= 0)
        close(net->efd);
    pthread_mutex_destroy(&net->mu);
    pthread_mutex_destroy(&net->iomu);
    pthread_cond_destroy(&net->cv);
    veil_wipe(net->cfg.secret_key, sizeof net->cfg.secret_key);
    free(net);
}

int veil_net_open(const struct veil_net_config *cfg, const struct veil_net_options *opts,
                  veil_net_t **out)
{
    if (!cfg || !out)
        return veil_error(VEIL_ERR_INVAL, "veil_net_open: NULL argument");
    *out = NULL;
    veil_secmem_protect_process(); /* the session holds the CURVE secret key (net->cfg) */
    struct veil_net *net = veil_secmem_calloc_pages(sizeof *net);
    if (!net)
        return veil_error(VEIL_ERR_NOMEM, "net: cannot allocate the session");
    net->efd = -1;
    pthread_mutex_init(&net->mu, NULL);
    pthread_mutex_init(&net->iomu, NULL);
    pthread_cond_init(&net->cv, NULL);
    net->cfg = *cfg;
    if (opts)
        net->opt = *opts;
    else
        veil_net_options_defaults(&net->opt);
    int rc = validate(net);
    if (rc)
        goto fail;
    if (cfg->insecure_plaintext)
        VEIL_LOG_WARN("net: INSECURE: CURVE disabled (insecure-plaintext): traffic is neither "
                      "encrypted nor authenticated");
    net->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (net->efd < 0) {
        rc = veil_error(VEIL_ERR_NET, "net: eventfd: %s", strerror(errno));
        goto fail;
    }
    size_t count = net->opt.pool_bytes / net->opt.chunk_bytes;
    if (count < 4)
        count = 4;
    /* room for a sealed frame's prefix, header and tag around the chunk (net/seal.h) */
    net->pool = veil_net_pool_new(
        count, net->opt.chunk_bytes + VEIL_FRAME_HEADER_BYTES + VEIL_SEAL_OVERHEAD, pool_wake, net);
    if (!net->pool) {
        rc = VEIL_ERR_NOMEM;
        goto fail;
    }
    int window = (int)(count / (size_t)(net->nprocs - 1));
    if (window < 2)
        window = 2;
    for (int p = 0; p < net->nprocs; p++) {
        struct veil_net_peer_state *ps = &net->peers[p];
        ps->outq_cap = window;
        for (int k = 0; k < 2; k++)
            ps->from[k].fd = ps->from[k].suspect_fd = -1;
        ps->outq = calloc((size_t)window, sizeof *ps->outq);
        if (!ps->outq) {
            rc = veil_error(VEIL_ERR_NOMEM, "net: cannot allocate the send window");
            goto fail;
        }
        veil_link_emulator_init(&ps->emu, &cfg->link);
    }
    if ((rc = veil_net_mesh_create(net)))
        goto fail;
    if (pthread_create(&net->thread, NULL, veil_net_io_main, net) != 0) {
        rc = veil_error(VEIL_ERR_NET, "net: cannot start the I/O thread");
        goto fail;
    }
    net->thread_started = 1;
    pthread_mutex_lock(&net->mu);
    while (net->state == VEIL_NET_OPENING)
        pthread_cond_wait(&net->cv, &net->mu);
    if (net->state == VEIL_NET_FAILED) {
        rc = veil_error(net->status, "%s", net->errmsg);
        net->stop = 1;
        pthread_mutex_unlock(&net->mu);
        veil_net_wake(net);
        pthread_join(net->thread, NULL);
        destroy(net, 500); /* let our hello and abort reach the peers: they learn why */
        return rc;
    }
    pthread_mutex_unlock(&net->mu);
    net->idle_token = veil_net_idle_session_open(); /* idle workers pause (net/idle.c) */
    *out = net;
    return VEIL_OK;
fail:
    destroy(net, 0);
    return rc;
}

int veil_net_open_file(const char *config_path, const uint8_t plan_digest[32], veil_net_t **out)
{
    struct veil_net_config cfg;
    int rc = veil_net_config_load(config_path, &cfg);
    if (rc)
        return rc;
    if (plan_digest)
        memcpy(cfg.plan_digest, plan_digest, VEIL_PLAN_DIGEST_BYTES);
    rc = veil_net_open(&cfg, NULL, out);
    veil_wipe(&cfg, sizeof cfg);
    return rc;
}

void veil_net_abort(veil_net_t *net, int status, const char *fmt, ...)
{
    if (!net)
        return;
    char msg[sizeof net->abort_msg];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    pthread_mutex_lock(&net->mu);
    if (net->state != VEIL_NET_FAILED && !net->abort_req) {
        net->abort_req = 1;
        net->abort_status = status;
        memcpy(net->abort_msg, msg, sizeof msg);
    }
    pthread_mutex_unlock(&net->mu);
    veil_net_wake(net);
}

int veil_net_close(veil_net_t **pnet)
{
    if (!pnet || !*pnet)
        return VEIL_OK;
    struct veil_net *net = *pnet;
    *pnet = NULL;
    pthread_mutex_lock(&net->mu);
    double deadline = veil_now() + net->cfg.timeout_s + 1;
    while (net->pending > 0 && veil_now() < deadline) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 100 * 1000 * 1000;
        if (ts.tv_nsec >= 1000000000) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000;
        }
        pthread_cond_timedwait(&net->cv, &net->mu, &ts);
    }
    uint64_t leaked = net->pending;
    veil_net_idle_session_close(net->idle_token); /* resumed: StarPU may shut down next */
    net->idle_token = 0;
    net->stop = 1;
    pthread_mutex_unlock(&net->mu);
    veil_net_wake(net);
    pthread_join(net->thread, NULL);
    veil_net_stats_log(net);
    /* the I/O thread has stopped: the state and the message are final */
    const int failed = net->state == VEIL_NET_FAILED, status = net->status;
    char msg[sizeof net->errmsg];
    memcpy(msg, net->errmsg, sizeof msg);
    int rc = failed ? veil_error(status, "%s", msg) : VEIL_OK;
    if (leaked) {
        /* StarPU still holds callbacks pointing at this session: keep it allocated. */
        VEIL_LOG_ERR("net: closing with %llu requests still waiting for their data; the "
                     "session is leaked so their callbacks stay valid",
                     (unsigned long long)leaked);
        veil_net_mesh_destroy(net, 0);
        return rc != VEIL_OK ? rc
                             : veil_error(VEIL_ERR_STATE,
                                          "net: closed with %llu requests "
                                          "still waiting for their data",
                                          (unsigned long long)leaked);
    }
    destroy(net, failed ? 500 : 1000);
    return failed ? veil_error(status, "%s", msg) : VEIL_OK; /* the message, after destroy */
}

int veil_net_status(veil_net_t *net)
{
    if (!net)
        return veil_error(VEIL_ERR_INVAL, "veil_net_status: NULL session");
    pthread_mutex_lock(&net->mu);
    int rc = net->state == VEIL_NET_FAILED ? veil_error(net->status, "%s", net->errmsg) : VEIL_OK;
    pthread_mutex_unlock(&net->mu);
    return rc;
}

int veil_net_self(const veil_net_t *net)
{
    return net ? net->self : -1;
}

int veil_net_nprocs(const veil_net_t *net)
{
    return net ? net->nprocs : 0;
}

size_t veil_net_early_cap(const veil_net_t *net)
{
    return net ? net->opt.early_cap_bytes : 0;
}

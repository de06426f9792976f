/*
 * io.c — the I/O thread: besides the inline turns below, the only code that touches ZeroMQ sockets
 * after open. One loop polls the eventfd (requests posted / handles acquired / pool refilled), the
 * ZAP socket, the ROUTER (everything peers send us on CURVE), the data channel's ROUTER (their
 * sealed tensor chunks, data_channel.c) and, when ZeroMQ pushed back, the DEALERs for POLLOUT.
 * This file holds the loop, the requests other threads post, the timers (handshake deadline,
 * heartbeats, silent peers, the orderly close). Receiving is io_recv.c, sending and pacing
 * io_send.c, and failure (on any error the session stops: ABORT to every peer, every acquired
 * handle released) io_core.c. The poll timeout is the time to the next emulated release; under a
 * millisecond, which zmq_poll cannot express, the thread sleeps in ppoll on the sockets' ZMQ_FDs
 * and the eventfd with a nanosecond timeout instead of spinning (unless asked to, below: the spin
 * ends at the next release): an emulated wire must not take a core that a real NIC would leave to
 * the computation.
 *
 * SPINNING BEFORE SLEEPING (opt-in: VEIL_NET_SPIN_US, default 0). While a request is pending (a
 * receive whose message has not come, a send not yet handed over), the thread looks again for up
 * to spin_us, never past the next timer, before it sleeps in the kernel, calling sched_yield
 * between looks so that every other runnable thread of the core (ZeroMQ's I/O thread, the worker,
 * the submitting thread) goes first. A core whose threads all sleep goes idle, and under a
 * hypervisor an idle vCPU halts: waking it for the peer's message costs a large part of a round
 * (bench/bench_noise on the 2-core VM: a loopback round trip of 80-210 us between sleeping
 * threads, 7-24 us between spinning ones). A yield that gives the core away for over a
 * millisecond (to a busy neighbour, or to this process's own long task, when the core is awake
 * anyway) stops the spinning for a second (io_poll.c): otherwise each look would hand a busy
 * neighbour a whole slice. Measured both ways in bench/README-latency.md: it pays on a host whose
 * processes each have their cores, not where they share them.
 *
 * INLINE SENDS (VEIL_NET_INLINE_SEND, default 65536 bytes; 0 turns them off). The thread whose
 * acquire callback finds a small send's data ready (the worker that ran its producer, or the
 * posting thread when the data was ready already) hands it to ZeroMQ itself when it can take
 * iomu at once, instead of waking this thread: on a round's critical path that is one thread
 * hand-off fewer (measured in bench/README-latency.md). The same holds for a small receive whose
 * handle became free after its message landed (this thread holds such messages): the callback's
 * thread copies the message in and releases the handle, so the worker that freed it goes on to
 * the message's consumer without a hand-off to this thread and back. iomu is held by whoever
 * runs a turn: this thread from the end of each poll to the start of the next, an inline turn
 * for its own (veil_net_io_inline: the queues taken, then one chunk per peer staged and flushed),
 * so the sockets and the "I/O thread only" state have one user at a time and every hand-over is
 * a full memory barrier, as ZeroMQ asks of a socket that changes threads. An inline turn touches
 * only the DEALERs of peers that are not pushed back (the loop polls those, not holding iomu) and
 * never the ROUTERs, so it cannot take an event the loop's poll waits for; it sends nothing when
 * a larger send waits to go first or frames are staged; and whatever it leaves (frames staged, a
 * peer pushed back, a failure, a send it did not take) it leaves with a wake.
 *
 * The loop calls the authentication handlers (ZAP, handshake monitor) in peers.c; the session's
 * lifecycle (mesh.c) starts this thread and is never called from it.
 */
#include "config.h"
#include "base/base_internal.h"
#include "base/trace.h"
#include "net/io_internal.h"
#include "sched/sched_internal.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#define MAX_POLL_MS 100 /* timer granularity for heartbeats and silence */

void veil_net_wake(struct veil_net *net)
{
    uint64_t one = 1;
    ssize_t r = write(net->efd, &one, sizeof one);
    (void)r; /* EAGAIN only when the counter is saturated: the thread is woken anyway */
}

/* ---- requests from other threads --------------------------------------------------------- */

static void on_posted(struct veil_net *net, struct veil_net_req *r)
{
    if (veil_net_io_failed(net))
        return; /* released when its acquire arrives */
    struct veil_net_peer_state *ps = &net->peers[r->peer];
    r->seq = net->next_seq++;
    r->listed = 1;
    if (r->kind == VEIL_REQ_SEND) {
        struct veil_net_tagslot *slot = veil_net_tag_find(ps, r->tag);
        if (slot) { /* an earlier send with this tag is unfinished: go after it */
            slot->last->same_next = r;
            slot->last = r;
            r->head = 0;
        } else if (veil_net_tag_put(ps, r->tag, r) != 0) {
            r->listed = 0;
            veil_net_io_fail(net, VEIL_ERR_NOMEM, "out of memory for the send tag map");
            return;
        } else {
            r->head = 1;
        }
        veil_net_req_append(&ps->sends, &ps->sends_tail, r);
        return;
    }
    veil_net_req_append(&ps->recvs, &ps->recvs_tail, r);
    for (struct veil_net_inmsg *m = ps->in; m; m = m->next)
        if (m->tag == r->tag && !m->req) {
            veil_net_io_bind(net, r->peer, m, r);
            break;
        }
    /* (while frames its goodbye counts are still on the way, the last of them checks) */
    if (veil_net_peer_done(ps) && !veil_net_io_failed(net) &&
        (!r->msg || r->msg->got < r->msg->total)) {
        char name[32];
        veil_net_io_fail(net, VEIL_ERR_PEER_LOST,
                         "receive with tag %llu posted after %s closed its session",
                         (unsigned long long)r->tag, veil_net_peer_name(net, r->peer, name));
    }
}

static void on_acquired(struct veil_net *net, struct veil_net_req *r)
{
    if (r->acquire_failed) {
        veil_net_io_fail(net, VEIL_ERR_STARPU,
                         "starpu_data_acquire_on_node_cb failed for a %s with tag %llu",
                         r->kind == VEIL_REQ_SEND ? "send" : "receive", (unsigned long long)r->tag);
        if (r->listed) {
            struct veil_net_peer_state *ps = &net->peers[r->peer];
            if (r->kind == VEIL_REQ_SEND)
                veil_net_req_unlink(&ps->sends, &ps->sends_tail, r);
            else
                veil_net_req_unlink(&ps->recvs, &ps->recvs_tail, r);
        }
        veil_net_req_done(net, r);
        return;
    }
    r->acquired = 1;
    if (veil_net_io_failed(net) || !r->listed) {
        veil_net_req_done(net, r);
        return;
    }
    r->ptr = starpu_data_handle_to_pointer(r->handle, STARPU_MAIN_RAM);
    if (!r->ptr && r->size > 0) {
        veil_net_io_fail(net, VEIL_ERR_STARPU, "tag %llu: the handle has no main-memory copy",
                         (unsigned long long)r->tag);
        return;
    }
    for (int i = 0; r->handles && i < r->nhandles; i++) { /* a tiled receive's every handle */
        r->ptrs[i] = starpu_data_handle_to_pointer(r->handles[i], STARPU_MAIN_RAM);
        if (!r->ptrs[i] && starpu_data_get_size(r->handles[i]) > 0) {
            veil_net_io_fail(net, VEIL_ERR_STARPU,
                             "tag %llu: handle %d of a tiled receive has no main-memory copy",
                             (unsigned long long)r->tag, i);
            return;
        }
    }
    if (r->kind == VEIL_REQ_SEND)
        veil_net_io_send_acquired(&net->peers[r->peer], r);
    else if (r->msg)
        veil_net_io_deliver(net, r->peer, r->msg);
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
        veil_net_io_fail(net, abort_status, "%s", why);
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

/* Tells veil_net_wait_all whether frames are still staged (io_busy), when that changed. Its
 * waiters wait for nothing pending and nothing staged, so only the end of both wakes them: an
 * inline send stages its frame and hands it over within one turn of the worker that sent it, and
 * a broadcast at each such end woke the application's waiter once per message for nothing. */
static void publish_busy(struct veil_net *net)
{
    const int busy = net->outq_total > 0;
    if (busy != net->io_busy) {
        pthread_mutex_lock(&net->mu);
        net->io_busy = busy;
        if (!busy && net->pending == 0)
            pthread_cond_broadcast(&net->cv);
        pthread_mutex_unlock(&net->mu);
    }
}

int veil_net_io_inline(struct veil_net *net)
{
    net->inline_turn = 1;
    int stop;
    take_queues(net, &stop);
    /* only small messages, and only when nothing larger waits to go first: a large send's
     * staging stays with the I/O thread */
    int small = net->outq_total == 0;
    for (int p = 0; p < net->nprocs && small; p++) {
        struct veil_net_req *r = p == net->self ? NULL : veil_net_io_eligible(&net->peers[p]);
        small = !r || r->size <= (size_t)net->opt.inline_send;
    }
    if (small && !veil_net_io_failed(net) && net->state == VEIL_NET_READY)
        veil_net_io_pump(net, veil_now(), net->nprocs);
    int need =
        stop || veil_net_io_failed(net) || net->state != VEIL_NET_READY || net->outq_total > 0;
    for (int p = 0; p < net->nprocs && !need; p++) {
        struct veil_net_peer_state *ps = &net->peers[p];
        need = p != net->self && (ps->out_blocked || ps->dout_blocked || veil_net_io_eligible(ps));
    }
    publish_busy(net);
    net->inline_turn = 0;
    return need;
}

/* ---- timers and the loop ------------------------------------------------------------------ */

static void timers(struct veil_net *net, double now, double connect_deadline, double connect_s)
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
            veil_net_io_fail(net, VEIL_ERR_TIMEOUT,
                             "connect timeout after %.1f s: no handshake with %s "
                             "(check that it runs, its endpoint and its key; every process "
                             "must start within the session timeout of the others)",
                             connect_s, missing);
            return;
        }
    }
    /* Of several silent peers, the one silent longest failed first (peers.c states the rule). */
    int lost = -1;
    for (int p = 0; p < net->nprocs; p++) {
        const struct veil_net_peer_state *ps = &net->peers[p];
        if (p != net->self && ps->hello_ok && !ps->bye && ps->acked &&
            now - ps->last_heard > net->cfg.timeout_s &&
            (lost < 0 || ps->last_heard < net->peers[lost].last_heard))
            lost = p;
    }
    if (lost >= 0 && !veil_net_io_failed(net)) {
        veil_net_io_fail(net, VEIL_ERR_PEER_LOST, "%s lost: silent for %.1f s",
                         veil_net_peer_name(net, lost, name), now - net->peers[lost].last_heard);
        return;
    }
    for (int p = 0; p < net->nprocs && !veil_net_io_failed(net); p++) {
        struct veil_net_peer_state *ps = &net->peers[p];
        if (p == net->self || !ps->hello_ok)
            continue;
        /* A peer that said goodbye still watches us until our goodbye: keep beating until then,
         * and send nothing after it. */
        if (!net->bye_sent && now >= ps->next_heartbeat) {
            /* A heartbeat ZeroMQ refused stays owed: poll for POLLOUT and retry on the next
             * turn, so a peer behind a full queue hears from us as soon as it drains it. */
            if (veil_net_send_control(net, p, VEIL_FRAME_HEARTBEAT, NULL, 0) == 0)
                ps->next_heartbeat = now + net->cfg.heartbeat_s;
            else
                ps->out_blocked = 1;
        }
    }
}

/* Orderly close: goodbye after the last data frame, then wait for every peer's goodbye: it
 * proves that the peer took everything we sent (its goodbye follows its last receive on the same
 * ordered connection). The wait lasts as long as the peer is alive: it beats until its own
 * goodbye, so one that dies or goes silent is caught by the silence check in timers() (the
 * session then fails naming it). A fixed bound would be wrong: the dealer deals ahead and closes
 * runs before the parties do (DEALER_AHEAD in graph/secure/party_run.c), and those runs may well
 * take longer than the silence timeout. Only a peer never heard from (no hello acknowledged) has
 * the silence timeout as its bound. A connection that dropped before our goodbye is not a close's
 * (peers.c): the goodbye, and then the close, wait for its verdict. */
static int closing_done(struct veil_net *net, double now)
{
    if (!net->bye_sent) {
        if (net->outq_total > 0)
            return 0;
        for (int p = 0; p < net->nprocs; p++)
            if (p != net->self && net->peers[p].sends)
                return 0;
        /* a goodbye says nothing went wrong here: a drop already seen fails the session first
         * (its abort, not our goodbye, reaches the peers: a data connection that dropped before
         * any frame came on it is seen by its DEALER's end only) */
        net->next_drop_check = 0;
        veil_net_monitor_serve(net);
        if (veil_net_io_failed(net) || veil_net_drops_pending(net))
            return 0;
        net->bye_sent = 1;
        net->bye_sent_at = now;
        net->close_deadline = now + net->cfg.timeout_s;
    }
    int all_sent = 1;
    for (int p = 0; p < net->nprocs; p++) { /* a goodbye is retried until ZeroMQ takes it */
        struct veil_net_peer_state *ps = &net->peers[p];
        if (p == net->self || ps->bye_out)
            continue;
        if (veil_net_send_control(net, p, VEIL_FRAME_BYE, NULL, 0) == 0)
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
        const struct veil_net_peer_state *ps = &net->peers[p];
        if (p == net->self || ps->bye)
            continue;
        if ((ps->hello_ok && ps->acked) || now < net->close_deadline)
            return 0;
        VEIL_LOG_WARN("net: closing without a goodbye from %s after %.1f s",
                      veil_net_peer_name(net, p, name), net->cfg.timeout_s);
    }
    return !veil_net_drops_pending(net);
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
        if (ps->outq_count > 0 && !veil_net_data_blocked(ps)) {
            double dt = ps->outq[ps->outq_head].at - now;
            if (dt < t)
                t = dt;
        }
        if (ps->outq_count < ps->outq_cap && veil_net_io_eligible(ps) &&
            veil_net_pool_available(net->pool))
            t = 0;
    }
    return t > 0 ? t : 0;
}

uint64_t veil_net_inline_count(veil_net_t *net)
{
    return __atomic_load_n(&net->inline_msgs, __ATOMIC_RELAXED);
}

uint64_t veil_net_inline_recv_count(veil_net_t *net)
{
    return __atomic_load_n(&net->inline_recvs, __ATOMIC_RELAXED);
}

void veil_net_spin_counts(veil_net_t *net, uint64_t *spins, uint64_t *hits, uint64_t *backoffs)
{
    *spins = __atomic_load_n(&net->spins, __ATOMIC_RELAXED);
    *hits = __atomic_load_n(&net->spin_hits, __ATOMIC_RELAXED);
    *backoffs = __atomic_load_n(&net->spin_backoffs, __ATOMIC_RELAXED);
}

void *veil_net_io_main(void *arg)
{
    struct veil_net *net = arg;
    pthread_mutex_lock(&net->iomu); /* released only while polling */
    /* named: its CPU time in a run's profile (base/cpu_use.c) */
    pthread_setname_np(pthread_self(), "veil-net");
    veil_locality_bind_io_thread(); /* near the party's NIC (sched/locality.c) */
    double now = veil_now();
    /* the handshake's bound: the session's silence timeout unless the option sets one, so a peer
     * that died before its hello (not told from one not started yet) costs no more than a lost
     * one; every process must start within that time of the others */
    const double connect_s =
        net->opt.connect_timeout_s > 0 ? net->opt.connect_timeout_s : net->cfg.timeout_s;
    double connect_deadline = now + connect_s;
    uint8_t hello[VEIL_HELLO_BYTES];
    struct veil_hello mine;
    veil_net_io_hello(net, &mine);
    for (int p = 0; p < net->nprocs; p++) {
        if (p == net->self)
            continue;
        net->peers[p].last_heard = now;
        veil_net_data_hello(net, p, &mine); /* the data channel we offer p, with p's key */
        veil_hello_encode(&mine, hello);
        veil_net_send_control(net, p, VEIL_FRAME_HELLO, hello, sizeof hello);
    }
    veil_wipe(&mine, sizeof mine);
    veil_wipe(hello, sizeof hello);
#ifdef __linux__
    prctl(PR_SET_TIMERSLACK, 1000UL); /* 1 us: the emulated latencies are 100 us */
#endif
    double wait_s = 0;
    int spin = 0; /* a request is pending: look again before sleeping (SPINNING above) */
    zmq_pollitem_t items[5 + 2 * VEIL_NET_MAX_PROCS];
    int last_n = 0; /* the items the last turn read (io_poll.c: THE DIRECT WAIT) */
    for (;;) {
        int n = 0, izap = -1, idata = -1;
        items[n++] = (zmq_pollitem_t){.fd = net->efd, .events = ZMQ_POLLIN};
        const int irouter = n;
        if (!veil_net_io_failed(net)) {
            items[n++] = (zmq_pollitem_t){.socket = net->router, .events = ZMQ_POLLIN};
            if (net->zap) {
                izap = n;
                items[n++] = (zmq_pollitem_t){.socket = net->zap, .events = ZMQ_POLLIN};
            }
            items[n++] = (zmq_pollitem_t){.socket = net->monitor, .events = ZMQ_POLLIN};
            if (net->drouter) {
                idata = n;
                items[n++] = (zmq_pollitem_t){.socket = net->drouter, .events = ZMQ_POLLIN};
            }
            for (int p = 0; p < net->nprocs; p++) {
                if (p != net->self && net->peers[p].out_blocked)
                    items[n++] =
                        (zmq_pollitem_t){.socket = net->peers[p].dealer, .events = ZMQ_POLLOUT};
                if (p != net->self && net->peers[p].dout_blocked)
                    items[n++] =
                        (zmq_pollitem_t){.socket = net->peers[p].ddealer, .events = ZMQ_POLLOUT};
            }
        }
        /* every socket read to its end last turn, the same sockets, none polled for POLLOUT */
        const int direct = !net->undrained && n == last_n && !veil_net_io_failed(net) &&
                           net->state == VEIL_NET_READY && items[n - 1].events == ZMQ_POLLIN;
        last_n = n;
        pthread_mutex_unlock(&net->iomu);
        const int rc = veil_net_io_poll(net, items, n, wait_s, spin, direct);
        pthread_mutex_lock(&net->iomu);
        if (rc < 0 && zmq_errno() != EINTR)
            veil_net_io_fail(net, VEIL_ERR_NET, "poll: %s", zmq_strerror(zmq_errno()));
        if (items[0].revents & ZMQ_POLLIN) {
            uint64_t v;
            ssize_t r = read(net->efd, &v, sizeof v);
            (void)r;
        }
        for (int p = 0; p < net->nprocs; p++) /* retried below; set again on EAGAIN */
            net->peers[p].out_blocked = net->peers[p].dout_blocked = 0;
        now = veil_now();
        int stop;
        take_queues(net, &stop);
        /* only the sockets that may have something (their revents): a read that ends in EAGAIN
         * costs system calls inside ZeroMQ; a receive budget that runs out sets undrained */
        net->undrained = 0;
        /* a wait that ended at its bound reads every socket (a missed signal costs a turn, not
         * the session); monitor_serve runs at every turn: it also drains the monitors that are
         * not polled (the data ROUTER's, the DEALERs') */
        const int all = rc == 0;
#define MAY_READ(i) (all || (items[i].revents & ZMQ_POLLIN))
        if (!veil_net_io_failed(net) && izap >= 0 && MAY_READ(izap) && veil_net_zap_serve(net))
            veil_net_io_fail(net, VEIL_ERR_NET, "%s", veil_last_error());
        if (!veil_net_io_failed(net)) { /* failing is for good: the sockets were polled */
            /* the data channel's frames before the monitors' events: a peer's first frame names
             * the connection whose disconnection may already be queued behind it */
            if (idata >= 0 && MAY_READ(idata))
                veil_net_data_recv(net, now);
            veil_net_monitor_serve(net);
            if (MAY_READ(irouter))
                veil_net_io_recv(net, now);
        }
#undef MAY_READ
        if (!veil_net_io_failed(net) && net->state == VEIL_NET_READY)
            veil_net_io_pump(net, now, 0);
        timers(net, now, connect_deadline, connect_s);
        veil_net_data_timers(net, now);
        if (stop && (veil_net_io_failed(net) || closing_done(net, now)))
            break;
        publish_busy(net);
        wait_s = veil_net_io_failed(net) ? MAX_POLL_MS / 1000.0 : poll_wait_s(net, veil_now());
        /* a receive acquired after this turn took the queues did not wake us if it saw no
         * held message (net/comm.c, acquired_cb): look again at once while both exist */
        pthread_mutex_lock(&net->mu);
        if (net->acq_head && net->in_held > 0)
            wait_s = 0;
        spin = net->opt.spin_us > 0 && net->pending > 0 && net->state == VEIL_NET_READY;
        pthread_mutex_unlock(&net->mu);
    }
    /* Whatever is still held (e.g. a close with messages nobody received) is dropped. */
    int keep_state = net->state;
    veil_net_io_drop_all(net);
    (void)keep_state;
    pthread_mutex_unlock(&net->iomu);
    pthread_mutex_lock(&net->mu);
    net->exited = 1;
    net->io_busy = 0;
    pthread_cond_broadcast(&net->cv);
    pthread_mutex_unlock(&net->mu);
    return NULL;
}

/*
 * comm.c — detached sends and receives bound to StarPU data handles, the quiescence barrier, and
 * who is in the session (net/comm.h). Like StarPU-MPI: a request is queued for the I/O thread,
 * then the handle is acquired asynchronously on main RAM (read mode to send, write mode to
 * receive) so StarPU's sequential consistency orders it after earlier tasks and before later
 * ones; the acquire callback — which StarPU may run in this thread, a worker or a driver — queues
 * the request and wakes the I/O thread through an eventfd, and the I/O thread releases the handle
 * when done. Small messages are the exception: when the I/O thread is not in a turn, the
 * callback's own thread hands a send to ZeroMQ without blocking, or copies in a receive's message
 * that has already landed, and releases the handle (net/io.c, INLINE SENDS).
 */
#include "config.h"
#include "base/base_internal.h"
#include "base/trace.h"
#include "net/idle.h"
#include "net/net_internal.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

/* A send's acquire means its data is ready: the I/O thread must send it now. An acquired receive
 * needs the I/O thread only if a message it may be for has already come (in_held: the I/O thread
 * then holds it and would not look again): otherwise the receive's message will wake it, and
 * each turn takes the queues before reading the ROUTER. No receive is missed: under mu, either
 * this sees in_held > 0 and wakes, or the I/O thread counts its next message after this queued r
 * and looks at the queue again before it sleeps (net/io.c). A receive posted with a free handle
 * is acquired at once in the posting thread, so this spares a walk one wake per receive. */
static void acquired_cb(void *arg)
{
    struct veil_net_req *r = arg;
    struct veil_net *net = r->net;
    pthread_mutex_lock(&net->mu);
    r->acq_next = NULL;
    if (net->acq_tail)
        net->acq_tail->acq_next = r;
    else
        net->acq_head = r;
    net->acq_tail = r;
    const int wake = r->kind != VEIL_REQ_RECV || r->acquire_failed || net->in_held > 0 ||
                     net->state != VEIL_NET_READY || net->stop;
    /* a small send, or a small receive whose message may have landed already (in_held) */
    const int inline_ok = (r->kind == VEIL_REQ_SEND || net->in_held > 0) && !r->acquire_failed &&
                          net->opt.inline_send > 0 && r->size <= (size_t)net->opt.inline_send &&
                          net->state == VEIL_NET_READY && !net->stop;
    pthread_mutex_unlock(&net->mu);
    /* ... goes now from this thread (a receive's held message copied in and the receive
     * completed, with its consumer made ready here), unless the I/O thread (or another inline
     * turn) is in a turn: then it takes the queue in that turn or the next, as below. A
     * trylock, so no thread ever waits here; a callback StarPU runs inside our own turn's
     * release finds iomu taken (by its own thread: trylock fails on a normal mutex) and wakes
     * the I/O thread. */
    if (inline_ok && pthread_mutex_trylock(&net->iomu) == 0) {
        const int need = veil_net_io_inline(net);
        pthread_mutex_unlock(&net->iomu);
        if (need)
            veil_net_wake(net);
        return;
    }
    if (wake)
        veil_net_wake(net);
}

/* Rejects layouts whose bytes are not one contiguous range of starpu_data_get_size bytes. */
static int check_layout(starpu_data_handle_t h)
{
    enum starpu_data_interface_id id = starpu_data_get_interface_id(h);
    switch (id) {
    case STARPU_VECTOR_INTERFACE_ID:
    case STARPU_VARIABLE_INTERFACE_ID:
        return VEIL_OK;
    case STARPU_MATRIX_INTERFACE_ID:
        if (starpu_matrix_get_local_ld(h) == starpu_matrix_get_nx(h) ||
            starpu_matrix_get_ny(h) <= 1)
            return VEIL_OK;
        return veil_error(VEIL_ERR_UNSUPPORTED,
                          "net: matrix handle with ld %u != nx %u is not "
                          "contiguous; register tiles with ld == nx",
                          starpu_matrix_get_local_ld(h), starpu_matrix_get_nx(h));
    default:
        return veil_error(VEIL_ERR_UNSUPPORTED,
                          "net: only vector, variable and matrix handles "
                          "can be sent (interface id %d)",
                          (int)id);
    }
}

/* A tiled receive's acquire callback for one of its handles: the request goes to the I/O thread
 * once the last one is acquired (or failed to be). */
static void acquired_tile_cb(void *arg)
{
    struct veil_net_req *r = arg;
    if (__atomic_add_fetch(&r->nacquired, 1, __ATOMIC_ACQ_REL) ==
        __atomic_load_n(&r->ntarget, __ATOMIC_ACQUIRE))
        acquired_cb(r);
}

static int post(veil_net_t *net, const starpu_data_handle_t *hs, int n, int peer, uint64_t tag,
                int kind, int combine)
{
    const char *what = kind == VEIL_REQ_SEND ? "veil_net_isend"
                       : combine             ? "veil_net_irecv_combine"
                       : n == 1              ? "veil_net_irecv"
                                             : "veil_net_irecv_tiles";
    if (!net || !hs || n < 1)
        return veil_error(VEIL_ERR_INVAL, "%s: NULL argument or no handle", what);
    if (peer < 0 || peer >= net->nprocs || peer == net->self)
        return veil_error(VEIL_ERR_INVAL,
                          "%s: peer %d is not another process of this "
                          "%d-process session (self %d)",
                          what, peer, net->nprocs, net->self);
    size_t size = 0;
    for (int i = 0; i < n; i++) {
        if (!hs[i])
            return veil_error(VEIL_ERR_INVAL, "%s: handle %d is NULL", what, i);
        int rc = check_layout(hs[i]);
        if (rc)
            return rc;
        size += starpu_data_get_size(hs[i]);
    }
    struct veil_net_req *r = calloc(1, sizeof *r);
    if (r && n > 1 &&
        (!(r->handles = malloc((size_t)n * sizeof *hs)) ||
         !(r->ends = malloc((size_t)n * sizeof *r->ends)) ||
         !(r->ptrs = calloc((size_t)n, sizeof *r->ptrs)))) {
        veil_net_req_free(r);
        r = NULL;
    }
    if (!r)
        return veil_error(VEIL_ERR_NOMEM, "%s: out of memory", what);
    r->net = net;
    r->kind = kind;
    r->combine = combine;
    r->peer = peer;
    r->tag = tag;
    r->handle = hs[0];
    r->nhandles = n;
    for (int i = 0; r->handles && i < n; i++) { /* a tiled receive */
        r->handles[i] = hs[i];
        r->ends[i] = (i ? r->ends[i - 1] : 0) + starpu_data_get_size(hs[i]);
    }
    r->size = size;
    r->region = veil_trace_region();
    pthread_mutex_lock(&net->mu);
    if (net->state != VEIL_NET_READY || net->stop) {
        int rc = net->state == VEIL_NET_FAILED
                     ? veil_error(net->status, "%s", net->errmsg)
                     : veil_error(VEIL_ERR_STATE, "%s: the session is not open", what);
        pthread_mutex_unlock(&net->mu);
        veil_net_req_free(r);
        return rc;
    }
    const int first = net->pending++ == 0;
    net->posted_total++;
    if (net->post_tail)
        net->post_tail->post_next = r;
    else
        net->post_head = r;
    net->post_tail = r;
    pthread_mutex_unlock(&net->mu);
    /* No wake here: the I/O thread has nothing to do with r before its acquire, whose callback
     * wakes it, and it takes the posted queue before the acquired one on every turn. A wake per
     * post cost the submitting thread its core to the I/O thread at every send and receive of
     * a walk (bench/README-latency.md). Except for the first pending request when the I/O thread
     * spins (VEIL_NET_SPIN_US, net/io.c): it may sleep from before, and spins only once it knows
     * that a request is pending. */
    if (first && net->opt.spin_us > 0)
        veil_net_wake(net);
    /* From here the I/O thread owns r; the callback hands it over again once acquired. */
    if (n == 1) {
        r->nheld = 1;
        const enum starpu_data_access_mode mode = kind == VEIL_REQ_SEND ? STARPU_R
                                                  : combine             ? STARPU_RW
                                                                        : STARPU_W;
        if (starpu_data_acquire_on_node_cb(hs[0], STARPU_MAIN_RAM, mode, acquired_cb, r) != 0) {
            r->acquire_failed = 1;
            r->nheld = 0;
            acquired_cb(r);
        }
        return VEIL_OK;
    }
    /* A tiled receive: every handle acquired for writing, and r queued once when the last
     * callback has come. The callbacks alone cannot reach ntarget (at most n of them): this
     * thread sets it to the acquires actually requested plus one (a failed acquire stops the
     * requests there), then adds its own count, so exactly one caller sees the count complete. */
    __atomic_store_n(&r->ntarget, n + 1, __ATOMIC_RELEASE);
    int held = 0;
    for (; held < n; held++)
        if (starpu_data_acquire_on_node_cb(hs[held], STARPU_MAIN_RAM, STARPU_W, acquired_tile_cb,
                                           r) != 0) {
            r->acquire_failed = 1;
            break;
        }
    r->nheld = held; /* read by the I/O thread only after r is queued */
    __atomic_store_n(&r->ntarget, held + 1, __ATOMIC_RELEASE);
    acquired_tile_cb(r);
    return VEIL_OK;
}

int veil_net_isend(veil_net_t *net, starpu_data_handle_t h, int peer, uint64_t tag)
{
    return post(net, &h, 1, peer, tag, VEIL_REQ_SEND, 0);
}

int veil_net_irecv(veil_net_t *net, starpu_data_handle_t h, int peer, uint64_t tag)
{
    return post(net, &h, 1, peer, tag, VEIL_REQ_RECV, 0);
}

int veil_net_irecv_tiles(veil_net_t *net, const starpu_data_handle_t *h, int n, int peer,
                         uint64_t tag)
{
    return post(net, h, n, peer, tag, VEIL_REQ_RECV, 0);
}

int veil_net_irecv_combine(veil_net_t *net, starpu_data_handle_t h, int peer, uint64_t tag,
                           enum veil_net_combine op)
{
    if (op != VEIL_NET_COMBINE_ADD64 && op != VEIL_NET_COMBINE_XOR)
        return veil_error(VEIL_ERR_INVAL, "veil_net_irecv_combine: unknown op %d", (int)op);
    if (h && (starpu_data_get_interface_id(h) != STARPU_VECTOR_INTERFACE_ID ||
              starpu_vector_get_elemsize(h) != 8))
        return veil_error(VEIL_ERR_INVAL,
                          "veil_net_irecv_combine: the handle must be a vector of 8-byte words");
    return post(net, &h, 1, peer, tag, VEIL_REQ_RECV, (int)op);
}

static void wait_ms(struct veil_net *net, long ms)
{
    veil_cond_wait_ms(&net->cv, &net->mu, ms);
}

int veil_net_wait_all(veil_net_t *net)
{
    if (!net)
        return veil_error(VEIL_ERR_INVAL, "veil_net_wait_all: NULL session");
    for (;;) {
        const int idle = veil_net_idle_begin(); /* 0: VEIL_IDLE_PAUSE=0, nothing pauses */
        pthread_mutex_lock(&net->mu);
        uint64_t seen = net->posted_total;
        double fail_deadline = 0;
        /* After a failure the I/O thread releases each request as its acquire arrives; bound the
         * wait anyway so a StarPU that never calls back cannot hang the caller. */
        while ((net->pending > 0 || net->io_busy) && !net->exited) {
            if (net->state == VEIL_NET_FAILED) {
                if (fail_deadline == 0)
                    fail_deadline = veil_now() + net->cfg.timeout_s;
                else if (veil_now() > fail_deadline)
                    break;
            }
            /* idle workers sleep meanwhile (net/idle.c); looking every millisecond also while
             * tasks run, since the last one may end without an event that wakes this thread */
            wait_ms(net, idle && net->state != VEIL_NET_FAILED
                             ? veil_net_idle_poll(VEIL_NET_IDLE_POLL_MS)
                             : 100);
        }
        pthread_mutex_unlock(&net->mu);
        /* resumes them (whoever paused): starpu_task_wait_for_all needs the workers */
        veil_net_idle_end(idle);
        starpu_task_wait_for_all();
        pthread_mutex_lock(&net->mu);
        int again = net->posted_total != seen || net->pending > 0 || net->io_busy;
        int st = net->state == VEIL_NET_FAILED;
        pthread_mutex_unlock(&net->mu);
        if (st || !again)
            break;
    }
    return veil_net_status(net);
}

/* ---- who is in the session (net/comm.h) ----------------------------------------------------- */

int veil_net_nparties(const veil_net_t *net)
{
    return net->cfg.nparties;
}

int veil_net_has_dealer(const veil_net_t *net)
{
    return net->cfg.has_dealer;
}

const uint8_t *veil_net_session_id(const veil_net_t *net)
{
    return net->cfg.session;
}

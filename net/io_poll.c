/*
 * io_poll.c — how the I/O thread's loop (io.c) waits for its sockets and its eventfd.
 *
 * zmq_poll asks every ZeroMQ socket for ZMQ_EVENTS before it sleeps and again after, and each
 * such question, on a socket with nothing new, costs a getpid and a poll system call inside
 * ZeroMQ (its mailbox's signaler); so does each receive that ends in EAGAIN. With the ROUTER, the
 * data channel's ROUTER, the handshake monitor and the ZAP socket that made 18 poll and 17 getpid
 * calls per round at each party of a 3-party chain of opens (perf trace; bench/README-latency.md),
 * on cores the parties share.
 *
 * THE DIRECT WAIT. A socket's ZMQ_FD becomes readable when a command reaches its mailbox, and
 * ZeroMQ sends one (activate_read) when a message reaches a pipe that its reader found empty. So
 * once the loop has read a socket until EAGAIN (or asked ZMQ_EVENTS and seen no POLLIN) and
 * nobody else uses the socket (io.c: the inline turns touch only the DEALERs), a message for it
 * makes its descriptor readable: the loop may sleep in ppoll on the descriptors themselves, and
 * afterwards read only the sockets whose descriptor fired. The loop asks for it (`direct`) only
 * when the last turn read every socket to its end (no receive budget ran out), no DEALER is
 * polled for POLLOUT (ZMQ_EVENTS is the only way to learn that), the session is established
 * and nothing spins; otherwise zmq_poll as before. Either way an item's revents has ZMQ_POLLIN
 * only when the socket may have something to read, and the loop reads no other, with two
 * exceptions: veil_net_monitor_serve runs at every turn, as before (besides the ROUTER's monitor
 * it drains the data ROUTER's and, every 50 ms, the DEALERs' monitors, which the loop does not
 * poll), and after a wait that reached its bound (at most MAX_POLL_MS, io.c) every socket is read,
 * so that a signal missed for whatever reason costs a turn, not the session.
 */
#include "config.h"
#include "base/base_internal.h"
#include "net/io_internal.h"

#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <time.h>

/* ppoll on the items' descriptors (ZMQ_FD for a socket) for wait_s (> 0) at most. Sets each item's
 * revents to ZMQ_POLLIN when its descriptor fired; returns how many did, 0 at the bound, -1 with
 * errno on an error (EINTR included: the caller looks again). */
static int fd_wait(zmq_pollitem_t *items, int n, double wait_s)
{
    struct pollfd fds[5 + 2 * VEIL_NET_MAX_PROCS];
    if (n > (int)(sizeof fds / sizeof fds[0])) {
        errno = EINVAL;
        return -1;
    }
    for (int i = 0; i < n; i++) {
        int fd = items[i].fd;
        size_t len = sizeof fd;
        if (items[i].socket && zmq_getsockopt(items[i].socket, ZMQ_FD, &fd, &len) != 0)
            return -1;
        fds[i] = (struct pollfd){.fd = fd, .events = POLLIN};
        items[i].revents = 0;
    }
    struct timespec ts = {.tv_sec = (time_t)wait_s};
    ts.tv_nsec = (long)((wait_s - (double)ts.tv_sec) * 1e9);
    const int rc = ppoll(fds, (nfds_t)n, &ts, NULL);
    if (rc <= 0)
        return rc;
    int fired = 0;
    for (int i = 0; i < n; i++)
        if (fds[i].revents) {
            items[i].revents = ZMQ_POLLIN;
            fired++;
        }
    return fired;
}

#define SPIN_GAP_S 1e-3 /* a look that came back later than this found the core taken */
#define SPIN_OFF_S 1.0  /* ... and then no spinning for this long */

int veil_net_io_poll(struct veil_net *net, zmq_pollitem_t *items, int n, double wait_s, int spin,
                     int direct)
{
    if (direct && !spin && wait_s > 0) {
        __atomic_fetch_add(&net->direct_waits, 1, __ATOMIC_RELAXED);
        return fd_wait(items, n, wait_s);
    }
    /* With spin and a wait ahead: looks (zmq_poll without a timeout) for up to spin_us or
     * wait_s, whichever ends first, yielding the core between them; a look that comes back more
     * than SPIN_GAP_S after the previous one (the yield gave the core to a thread that kept it: a
     * neighbour's, or this process's computation) ends the spin and the next SPIN_OFF_S of them.
     * Then, nothing ready, a sleep for what is left of wait_s: zmq_poll in milliseconds, under
     * one a ppoll on the descriptors. zmq_poll has just asked every socket for its events and
     * found none, so a descriptor that fires marks a socket that may have something, as in the
     * direct wait (a DEALER polled for POLLOUT is retried at every turn anyway). */
    int rc;
    double now = spin && wait_s > 0 ? veil_now() : 0;
    if (spin && wait_s > 0 && now >= net->spin_off_until) {
        const double t0 = now, spin_s = net->opt.spin_us * 1e-6;
        const double until = t0 + (spin_s < wait_s ? spin_s : wait_s);
        __atomic_fetch_add(&net->spins, 1, __ATOMIC_RELAXED);
        for (double last = t0;; last = now) {
            if ((rc = zmq_poll(items, n, 0)) != 0) {
                __atomic_fetch_add(&net->spin_hits, 1, __ATOMIC_RELAXED);
                return rc;
            }
            now = veil_now();
            if (now - last > SPIN_GAP_S) {
                net->spin_off_until = now + SPIN_OFF_S;
                __atomic_fetch_add(&net->spin_backoffs, 1, __ATOMIC_RELAXED);
                break;
            }
            if (now >= until)
                break;
            sched_yield();
        }
        wait_s -= now - t0;
        if (!(wait_s > 0))
            return 0;
    }
    rc = zmq_poll(items, n, wait_s >= 0.001 ? (int)(wait_s * 1000) : 0);
    if (rc == 0 && wait_s > 0 && wait_s < 0.001)
        rc = fd_wait(items, n, wait_s);
    return rc;
}

uint64_t veil_net_direct_wait_count(veil_net_t *net)
{
    return __atomic_load_n(&net->direct_waits, __ATOMIC_RELAXED);
}

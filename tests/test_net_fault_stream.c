/* Tests that a corrupted, cut or replayed stream ends the session with an error, never a hang
 * (ZeroMQ reconnects silently after a cut, and stops reading a CURVE stream at a message that
 * fails authentication without closing it: the messages in flight are lost either way): 2
 * parties under CURVE (heartbeat 0.25 s, timeout 6 s) exchange 16 MiB each way, every case twice:
 * with the data on the CURVE connection (VEIL_NET_DATA_CHANNEL=curve), then on the sealed data
 * channel (net/data_channel.c). Party 0 reaches party 1 through a TCP proxy (a thread of party 0)
 * that, after 1 MiB of party 0's stream of data (the CURVE connection's, or the data channel's:
 * party 0's configuration then names party 1 at 127.0.0.2, where the proxy forwards the CURVE
 * connection untouched and listens on party 1's data port, VEIL_NET_DATA_PORT), once:
 * writes 4 KiB of random bytes into it (inject), flips one byte (flip), closes both sides (cut),
 * sends a 64 KiB stretch twice (replay), forwards half a chunk and closes (truncate), or closes
 * party 1's side only and keeps party 0's open, unanswered (half cut); or closes both sides 0.5 s
 * after the session opened, while nothing but heartbeats is in flight and 0.5 s before the
 * exchange starts (reconnect: ZeroMQ would reconnect and the exchange succeed, but a message
 * could have been lost); or closes both sides likewise, after which the parties exchange 64 KiB
 * and close at once, 20 ms after the cut (quick reconnect: both goodbyes come before a drop's
 * grace of a heartbeat has passed, yet the drop came before them and is not a close's); or, on the
 * data channel only, listens on nothing there (unreachable: party 1's stall check must name party
 * 0, the data channel and the port it cannot reach, within the bound from party 0's open). Each
 * party's veil_net_wait_all, or else its veil_net_close (or its veil_net_open, when the proxy acted
 * before it returned), must return an error naming the other party, and not the silence timeout's
 * ("silent for"): the error comes before the timeout would have fired (6 s after the proxy's act; 2
 * s more under sanitizers). After inject, flip and half cut only party 1's side of the link sees
 * anything (a stalled or closed connection on its ROUTER, a frame that fails AES-GCM
 * authentication): its error must be its own, naming the link ("party 0 lost: the connection from
 * it to party 1 ...", "... the data channel from it to party 1 ..."; on the data channel not
 * asserted for inject, whose bytes may also break the framing and close the connection, which party
 * 0 then sees too). No other time is asserted. */
#include "config.h"
#include "net_test_util.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <starpu.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#define BIG ((size_t)16 << 20)
#define TIMEOUT_S 6.0
#ifdef VEIL_SANITIZERS
#define SLACK_S 2.0
#else
#define SLACK_S 0.0
#endif
#define BOUND_S (TIMEOUT_S + SLACK_S) /* before the silence timeout fired */
#define AFTER ((size_t)1 << 20)
#define QUICK_BYTES ((size_t)64 << 10)

enum { S_INJECT, S_FLIP, S_CUT, S_REPLAY, S_TRUNCATE, S_RECONNECT, S_QUICK, S_HOLD, S_END };
#define S_PASS S_END          /* a proxy that forwards untouched */
#define S_UNREACH (S_END + 1) /* data channel only: nothing listens where party 0 connects it */
static const char *const names[] = {
    "inject",          "flip",     "cut",    "replay",     "truncate", "reconnect",
    "quick reconnect", "half cut", "(pass)", "unreachable"};

struct sarg {
    struct net_test_keys keys;
    int which;
    int data;               /* the data channel carries the data (else the CURVE connection) */
    int dport;              /* then: party 1's data port */
    int data_lfd;           /* and the proxy's listening socket on 127.0.0.2:dport */
    volatile double *t_act; /* shared across fork: when the proxy acted */
};

struct proxy {
    int lfd, upstream_port, which;
    volatile double *t_act;
    int acted;
};

/* A listening TCP socket on 127.0.0.2 (another loopback address: the port party 1's data channel
 * has on 127.0.0.1 is free there) at port, or any port when 0. */
static int listen_alt(int port, int *bound)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    socklen_t sl = sizeof sa;
    sa.sin_addr.s_addr = htonl(0x7f000002);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0 || listen(fd, 4) != 0 ||
        getsockname(fd, (struct sockaddr *)&sa, &sl) != 0) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    *bound = ntohs(sa.sin_port);
    return fd;
}

static int connect_port(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

static int write_all(int fd, const uint8_t *p, size_t n)
{
    while (n) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL); /* a closed peer: an error, not SIGPIPE */
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* One proxied connection: party 0's DEALER (c) to party 1's ROUTER (u). */
static void relay(struct proxy *px, int c, int u)
{
    uint8_t buf[65536]; /* (per relay: two proxies run at once on the data channel) */
    size_t down = 0;    /* bytes of party 0's stream forwarded */
    const double t0 = veil_now();
    for (;;) {
        struct pollfd f[2] = {{.fd = c, .events = POLLIN}, {.fd = u, .events = POLLIN}};
        if (u < 0) /* half cut: party 1's side is closed, party 0's stays open, unanswered */
            f[1].fd = -1;
        if (poll(f, 2, 50) < 0)
            break;
        int stop = 0;
        if ((px->which == S_RECONNECT || px->which == S_QUICK) && !px->acted &&
            veil_now() - t0 > 0.5) {
            /* between messages: only heartbeats in flight, nothing visibly lost */
            px->acted = 1;
            *px->t_act = veil_now();
            break;
        }
        for (int k = 0; k < 2 && !stop; k++) {
            if (!(f[k].revents & (POLLIN | POLLHUP | POLLERR)) || (k == 1 && u < 0))
                continue;
            ssize_t r = read(f[k].fd, buf, sizeof buf);
            if (r <= 0) {
                stop = 1;
                break;
            }
            if (u < 0)
                continue; /* half cut: what party 0 sends goes nowhere */
            const int to = k == 0 ? u : c;
            if (k == 0 && !px->acted && px->which != S_RECONNECT && px->which != S_QUICK &&
                px->which != S_PASS && down + (size_t)r > AFTER) {
                px->acted = 1;
                *px->t_act = veil_now();
                uint8_t junk[4096];
                switch (px->which) {
                case S_HOLD:
                    close(u);
                    u = -1;
                    break;
                case S_INJECT:
                    net_test_fill(junk, sizeof junk, 77);
                    stop = write_all(u, junk, sizeof junk) != 0 || write_all(u, buf, (size_t)r);
                    break;
                case S_FLIP:
                    buf[r / 2] ^= 0x10;
                    stop = write_all(u, buf, (size_t)r) != 0;
                    break;
                case S_CUT:
                    stop = 1;
                    break;
                case S_REPLAY:
                    stop = write_all(u, buf, (size_t)r) != 0 || write_all(u, buf, (size_t)r);
                    break;
                default: /* truncate */
                    (void)write_all(u, buf, (size_t)r / 2);
                    stop = 1;
                }
                down += (size_t)r;
                continue;
            }
            if (k == 0)
                down += (size_t)r;
            if (write_all(to, buf, (size_t)r) != 0)
                stop = 1;
        }
        if (stop)
            break;
    }
    close(c);
    if (u >= 0)
        close(u);
}

static void *proxy_main(void *arg)
{
    struct proxy *px = arg;
    for (;;) { /* ZeroMQ reconnects: serve each connection in turn */
        int c = accept(px->lfd, NULL, NULL);
        if (c < 0)
            return NULL;
        int u = connect_port(px->upstream_port);
        if (u < 0) {
            close(c);
            continue;
        }
        relay(px, c, u);
    }
}

static int party(const struct veil_harness_party *me, void *arg)
{
    struct sarg *a = arg;
    struct veil_net_config cfg;
    veil_net_t *net = NULL;
    if (net_test_config(me, &a->keys, 0.25, TIMEOUT_S, 5, &cfg))
        return 2;
    static struct proxy px, dpx;
    pthread_t th, dth;
    if (me->id == 1 && a->data) {
        char port[16];
        snprintf(port, sizeof port, "%d", a->dport);
        setenv("VEIL_NET_DATA_PORT", port, 1);
        close(a->data_lfd);
    }
    if (me->id == 0) {
        const char *colon = strrchr(cfg.peers[1].endpoint, ':');
        int bound = 0;
        px = (struct proxy){.upstream_port = colon ? atoi(colon + 1) : 0,
                            .which = a->data ? S_PASS : a->which,
                            .t_act = a->t_act};
        if (a->data) { /* party 1 at 127.0.0.2: the CURVE connection and the data channel */
            px.lfd = listen_alt(0, &bound);
            dpx = (struct proxy){.lfd = a->data_lfd,
                                 .upstream_port = a->dport,
                                 .which = a->which,
                                 .t_act = a->t_act};
            if (a->which == S_UNREACH)
                close(a->data_lfd); /* party 0's data channel to party 1 is refused */
            else if (pthread_create(&dth, NULL, proxy_main, &dpx) != 0)
                return 3;
        } else {
            struct sockaddr_in sa = {.sin_family = AF_INET};
            socklen_t sl = sizeof sa;
            sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
            px.lfd = socket(AF_INET, SOCK_STREAM, 0);
            if (px.lfd < 0 || bind(px.lfd, (struct sockaddr *)&sa, sizeof sa) != 0 ||
                listen(px.lfd, 4) != 0 || getsockname(px.lfd, (struct sockaddr *)&sa, &sl) != 0)
                return 3;
            bound = ntohs(sa.sin_port);
        }
        if (px.lfd < 0 || pthread_create(&th, NULL, proxy_main, &px) != 0)
            return 3;
        snprintf(cfg.peers[1].endpoint, sizeof cfg.peers[1].endpoint, "tcp://%s:%d",
                 a->data ? "127.0.0.2" : "127.0.0.1", bound);
    }
    uint8_t *out = malloc(BIG), *in = malloc(BIG);
    if (!out || !in)
        return 3;
    if (starpu_init(NULL) != 0) {
        fprintf(stderr, "starpu_init failed\n");
        return 3;
    }
    /* Party 0 sends as soon as its own open has returned, so the proxy may act before party 1's
     * open returns: that open then reports the fault, judged below as a later report would be. */
    int rc = veil_net_open(&cfg, NULL, &net);
    if (rc == VEIL_OK) {
        if (a->which == S_UNREACH && me->id == 0)
            *a->t_act = veil_now(); /* the data is sent from now on */
        net_test_fill(out, BIG, 20 + (uint64_t)me->id);
        size_t bytes = BIG;
        if (a->which == S_RECONNECT)
            usleep(1000 * 1000);
        if (a->which == S_QUICK) { /* a small exchange just after the cut, done within a grace */
            for (int i = 0; i < 5000 && *a->t_act <= 0; i++)
                usleep(1000);
            usleep(20 * 1000);
            bytes = QUICK_BYTES;
        }
        starpu_data_handle_t ho, hi;
        starpu_vector_data_register(&ho, STARPU_MAIN_RAM, (uintptr_t)out, bytes, 1);
        starpu_vector_data_register(&hi, STARPU_MAIN_RAM, (uintptr_t)in, bytes, 1);
        /* a failure already known refuses the posts; the party whose receive was not behind the
         * proxy may finish its part: its close (which waits for the peer's goodbye) must then
         * fail */
        rc = veil_net_irecv(net, hi, 1 - me->id, 9);
        if (rc == VEIL_OK)
            rc = veil_net_isend(net, ho, 1 - me->id, 9);
        int wrc = veil_net_wait_all(net);
        if (rc == VEIL_OK)
            rc = wrc;
        starpu_data_unregister(ho);
        starpu_data_unregister(hi);
        int crc = veil_net_close(&net);
        if (rc == VEIL_OK)
            rc = crc;
    }
    const double t_err = veil_now(), t_act = *a->t_act;
    char peer[32];
    snprintf(peer, sizeof peer, "party %d", 1 - me->id);
    const char *msg = rc ? veil_last_error() : "no error";
    int bad = 0;
    /* inject, flip, half cut: only party 1's ROUTER sees the fault (ZeroMQ stops reading a
     * stream whose message fails CURVE authentication, without closing it; in a half cut party
     * 0's connection to the proxy stays open): party 1 must catch it itself, naming the link */
    const int router_side =
        me->id == 1 && ((a->which == S_INJECT && !a->data) || a->which == S_FLIP ||
                        a->which == S_HOLD || a->which == S_UNREACH);
    const char *link = a->data ? "party 0 lost: the data channel from it to party 1 "
                               : "party 0 lost: the connection from it to party 1 ";
    if (rc == VEIL_OK || t_act <= 0 || t_err - t_act >= BOUND_S || !strstr(msg, peer) ||
        strstr(msg, "silent for") || (router_side && !strstr(msg, link)) ||
        (me->id == 1 && a->which == S_UNREACH && !strstr(msg, "can party 0 reach port"))) {
        fprintf(stderr,
                "FAIL: %s%s: wait_all returned %d (%s) %.2f s after the proxy acted "
                "(%s); wanted an error naming %s before the %.1f s timeout fired\n",
                names[a->which], a->data ? " (data channel)" : "", rc, msg,
                t_act > 0 ? t_err - t_act : -1.0, t_act > 0 ? "acted" : "never acted", peer,
                BOUND_S);
        bad = 1;
    } else if (net_test_verbose()) {
        fprintf(stderr, "ok: %s%s: '%s' %.2f s after the proxy acted\n", names[a->which],
                a->data ? " (data channel)" : "", veil_last_error(), t_err - t_act);
    }
    starpu_shutdown();
    free(out);
    free(in);
    return bad;
}

int main(void)
{
    /* Timeouts of a few seconds are what this test checks; on a GPU host each process's CUDA
     * set-up (a context per process, under make -j) can take longer than that, and no part of
     * the test needs a GPU: StarPU starts without CUDA workers. */
    setenv("STARPU_NCUDA", "0", 1);
    struct sarg a;
    void *shared =
        mmap(NULL, sizeof(double), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (shared == MAP_FAILED || net_test_keys_make(&a.keys, 2))
        return 1;
    a.t_act = shared;
    int bad = 0;
    /* every case on CURVE, then on the data channel, then the data channel unreachable */
    for (int k = 0; k <= 2 * S_END; k++) {
        a.which = k == 2 * S_END ? S_UNREACH : k % S_END;
        a.data = k >= S_END;
        setenv("VEIL_NET_DATA_CHANNEL", a.data ? "aes-gcm" : "curve", 1);
        if (a.data) {
            /* party 1's data port: free on 127.0.0.2 (the proxy holds it from now on) and, when
             * checked, on 127.0.0.1, where party 1 binds it; below the ephemeral range, so that
             * no connection takes it meanwhile */
            a.data_lfd = -1;
            for (int tries = 0; tries < 20 && a.data_lfd < 0; tries++) {
                a.data_lfd = listen_alt(net_test_port_candidate(), &a.dport);
                if (a.data_lfd >= 0 && !net_test_port_free(a.dport)) {
                    close(a.data_lfd);
                    a.data_lfd = -1;
                }
            }
            if (a.data_lfd < 0) {
                fprintf(stderr, "FAIL: no port free on both 127.0.0.1 and 127.0.0.2\n");
                return 1;
            }
        }
        *a.t_act = 0;
        struct veil_harness_result res[2];
        struct veil_harness_opts o = {
            .nparties = 2, .timeout_s = 30, .grace_s = -1, .forward_output = net_test_verbose()};
        veil_harness_run(&o, party, &a, res);
        for (int p = 0; p < 2; p++)
            if (res[p].exit_code != 0 || res[p].timed_out) {
                fprintf(stderr, "FAIL: %s%s: party %d exit %d%s:\n%s\n", names[a.which],
                        a.data ? " (data channel)" : "", p, res[p].exit_code,
                        res[p].timed_out ? " (timed out: a hang)" : "",
                        res[p].output ? res[p].output : "");
                bad = 1;
            }
        veil_harness_results_free(res, 2);
        if (a.data)
            close(a.data_lfd);
    }
    munmap(shared, sizeof(double));
    return bad;
}

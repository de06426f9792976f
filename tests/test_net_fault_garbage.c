/* Tests that bytes from a misbehaving peer never crash a party, with 2 real processes:
 * (1) CURVE on: party 1 writes random bytes to party 0's port through raw TCP connections
 *     after both opened; party 0 logs the failed handshakes, keeps running, and the two then
 *     exchange 1 MiB each way correctly;
 * (2) insecure plaintext: party 1 is a raw ZeroMQ DEALER that passes the handshake (valid hello
 *     and acknowledgement) and then sends one bad message per run — random header bytes, a
 *     10-byte header, a payload shorter than its header says, a chunk at an offset that starts
 *     no message, a duplicated chunk, a message of four frames, a message larger than the
 *     posted receive — and party 0's veil_net_wait_all (or its open, when the bad message
 *     overtakes party 0's own start-up) must return VEIL_ERR_PROTO each time
 *     (VEIL_ERR_PEER_LOST for an abort frame without a reason); a hello claiming to come from
 *     party 0 over party 1's connection makes party 0's open fail with VEIL_ERR_MISMATCH. */
#include "config.h"
#include "net_test_util.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <starpu.h>
#include <sys/socket.h>
#include <unistd.h>

enum {
    G_CURVE,
    G_RANDOM,
    G_SHORT,
    G_LENGTH,
    G_OFFSET,
    G_DUP,
    G_FRAMES,
    G_SIZE,
    G_ABORT,
    G_CLAIM,
    G_END
};
static const char *const names[] = {"curve",        "random header",
                                    "short header", "short payload",
                                    "bad offset",   "duplicate chunk",
                                    "four frames",  "oversized message",
                                    "empty abort",  "hello claiming another id"};
#define RBYTES 256

struct garg {
    struct net_test_keys keys;
    int which;
};

static void raw_tcp_garbage(const char *endpoint)
{
    const char *colon = strrchr(endpoint, ':');
    if (!colon)
        return;
    for (int i = 0; i < 3; i++) {
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in a = {.sin_family = AF_INET,
                                .sin_port = htons((uint16_t)atoi(colon + 1))};
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof a) == 0) {
            uint8_t junk[1024];
            net_test_fill(junk, sizeof junk, 1234 + (uint64_t)i);
            if (i == 1)
                junk[0] = 0xff; /* looks like the start of a ZMTP 3 greeting */
            ssize_t w = write(fd, junk, sizeof junk);
            (void)w;
            usleep(100 * 1000);
        }
        if (fd >= 0)
            close(fd);
    }
}

static int send_frames(void *d, const void *const *part, const size_t *len, int n)
{
    for (int i = 0; i < n; i++)
        if (zmq_send(d, part[i], len[i], i + 1 < n ? ZMQ_SNDMORE : 0) < 0)
            return -1;
    return 0;
}

static void header(const struct veil_harness_party *me, const uint8_t session[16], int type,
                   uint64_t tag, uint64_t offset, uint64_t total, uint32_t length, uint8_t *out)
{
    struct veil_frame_header h = {.version = VEIL_FRAME_VERSION,
                                  .type = (uint16_t)type,
                                  .sender = (uint32_t)me->id,
                                  .tag = tag,
                                  .offset = offset,
                                  .total = total,
                                  .length = length};
    memcpy(h.session, session, 16);
    veil_frame_encode(&h, out);
}

/* Party 1 in the plaintext cases: a raw DEALER speaking just enough of Veil to be admitted. */
static int rogue(const struct veil_harness_party *me, const struct veil_net_config *cfg, int which)
{
    void *ctx = zmq_ctx_new(), *d = zmq_socket(ctx, ZMQ_DEALER);
    /* Party 0 may take seconds to reach its open on a loaded machine (starpu_init): queue
     * nothing before the connection's handshake is complete (a send waits for it, 20 s at most)
     * and let close deliver what is queued, so no message is lost on a connection that never
     * finished its handshake (party 0 would then wait for a hello until its connect timeout). */
    int one = 1, linger_ms = 5000, sndtimeo_ms = 20000;
    zmq_setsockopt(d, ZMQ_IMMEDIATE, &one, sizeof one);
    zmq_setsockopt(d, ZMQ_LINGER, &linger_ms, sizeof linger_ms);
    zmq_setsockopt(d, ZMQ_SNDTIMEO, &sndtimeo_ms, sizeof sndtimeo_ms);
    zmq_setsockopt(d, ZMQ_ROUTING_ID, "p1", 2);
    if (zmq_connect(d, cfg->peers[0].endpoint))
        return 2;
    uint8_t h[64], h2[64], hello[VEIL_HELLO_BYTES], payload[RBYTES];
    struct veil_hello hl = {.protocol_version = VEIL_NET_PROTOCOL_VERSION,
                            .party = which == G_CLAIM ? 0 : 1,
                            .nparties = 2};
    memcpy(hl.session, cfg->session, 16);
    memcpy(hl.plan_digest, cfg->plan_digest, 32);
    veil_hello_encode(&hl, hello);
    header(me, cfg->session, VEIL_FRAME_HELLO, 0, 0, sizeof hello, sizeof hello, h);
    if (send_frames(d, (const void *[]){h, hello}, (size_t[]){64, sizeof hello}, 2) != 0) {
        fprintf(stderr, "rogue: no connection to party 0: %s\n", zmq_strerror(zmq_errno()));
        zmq_close(d);
        zmq_ctx_term(ctx);
        return 2;
    }
    header(me, cfg->session, VEIL_FRAME_HEARTBEAT, 0, 0, 0, 0, h);
    send_frames(d, (const void *[]){h}, (size_t[]){64}, 1);
    usleep(300 * 1000);
    net_test_fill(payload, sizeof payload, 77);
    switch (which) {
    case G_RANDOM:
        net_test_fill(h, 64, 5);
        send_frames(d, (const void *[]){h}, (size_t[]){64}, 1);
        break;
    case G_SHORT:
        send_frames(d, (const void *[]){payload}, (size_t[]){10}, 1);
        break;
    case G_LENGTH:
        header(me, cfg->session, VEIL_FRAME_DATA, 9, 0, RBYTES, 100, h);
        send_frames(d, (const void *[]){h, payload}, (size_t[]){64, 50}, 2);
        break;
    case G_OFFSET:
        header(me, cfg->session, VEIL_FRAME_DATA, 9, 128, RBYTES, 128, h);
        send_frames(d, (const void *[]){h, payload}, (size_t[]){64, 128}, 2);
        break;
    case G_DUP:
        header(me, cfg->session, VEIL_FRAME_DATA, 9, 0, RBYTES, 128, h);
        send_frames(d, (const void *[]){h, payload}, (size_t[]){64, 128}, 2);
        send_frames(d, (const void *[]){h, payload}, (size_t[]){64, 128}, 2);
        break;
    case G_FRAMES:
        header(me, cfg->session, VEIL_FRAME_DATA, 9, 0, RBYTES, 128, h);
        send_frames(d, (const void *[]){h, payload, payload}, (size_t[]){64, 128, 128}, 3);
        break;
    case G_ABORT: /* a legitimate frame type without its optional reason */
        header(me, cfg->session, VEIL_FRAME_ABORT, 0, 0, 0, 0, h);
        send_frames(d, (const void *[]){h}, (size_t[]){64}, 1);
        break;
    case G_SIZE:
        header(me, cfg->session, VEIL_FRAME_DATA, 9, 0, RBYTES + 8, 128, h);
        header(me, cfg->session, VEIL_FRAME_DATA, 9, 128, RBYTES + 8, 136, h2);
        send_frames(d, (const void *[]){h, payload}, (size_t[]){64, 128}, 2);
        send_frames(d, (const void *[]){h2, payload}, (size_t[]){64, 136}, 2);
        break;
    }
    usleep(500 * 1000);
    zmq_close(d);
    zmq_ctx_term(ctx);
    return 0;
}

static int party(const struct veil_harness_party *me, void *arg)
{
    struct garg *a = arg;
    struct veil_net_config cfg;
    veil_net_t *net = NULL;
    int curve = a->which == G_CURVE;
    if (net_test_config(me, curve ? &a->keys : NULL, 0.25, 5, 4, &cfg))
        return 2;
    if (!curve && me->id == 1)
        return rogue(me, &cfg, a->which);
    if (starpu_init(NULL) != 0)
        return 3;
    int orc = veil_net_open(&cfg, NULL, &net);
    if (a->which == G_CLAIM) { /* connection of party 1, hello of party 0: refused at open */
        starpu_shutdown();
        if (orc == VEIL_ERR_MISMATCH && strstr(veil_last_error(), "says it is party 0"))
            return 0;
        fprintf(stderr, "FAIL: %s: open returned %d (%s)\n", names[a->which], orc,
                veil_last_error());
        if (orc == VEIL_OK)
            veil_net_close(&net);
        return 1;
    }
    if ((orc == VEIL_ERR_PROTO || (orc == VEIL_ERR_PEER_LOST && a->which == G_ABORT)) && !curve) {
        /* the bad message came while party 0 was still opening */
        starpu_shutdown();
        return 0;
    }
    if (orc != VEIL_OK) {
        fprintf(stderr, "open failed: %s\n", veil_last_error());
        return 4;
    }
    if (curve && me->id == 1)
        raw_tcp_garbage(cfg.peers[0].endpoint);
    size_t n = curve ? (size_t)1 << 20 : RBYTES;
    uint8_t *out = malloc(n), *in = malloc(n);
    if (!out || !in)
        return 5;
    net_test_fill(out, n, 10 + (uint64_t)me->id);
    starpu_data_handle_t ho, hi;
    starpu_vector_data_register(&ho, STARPU_MAIN_RAM, (uintptr_t)out, n, 1);
    starpu_vector_data_register(&hi, STARPU_MAIN_RAM, (uintptr_t)in, n, 1);
    int bad = 0;
    if (veil_net_irecv(net, hi, 1 - me->id, 9) || (curve && veil_net_isend(net, ho, 1 - me->id, 9)))
        return 6;
    int rc = veil_net_wait_all(net);
    if (curve) {
        if (rc != VEIL_OK || net_test_check(in, n, 10 + (uint64_t)(1 - me->id)) != n) {
            fprintf(stderr, "FAIL: exchange after garbage: %s\n", rc ? veil_last_error() : "data");
            bad = 1;
        }
    } else if (rc != (a->which == G_ABORT ? VEIL_ERR_PEER_LOST : VEIL_ERR_PROTO)) {
        fprintf(stderr, "FAIL: %s: wait_all returned %d (%s), expected %s\n", names[a->which], rc,
                veil_last_error(), a->which == G_ABORT ? "VEIL_ERR_PEER_LOST" : "VEIL_ERR_PROTO");
        bad = 1;
    } else if (net_test_verbose()) {
        fprintf(stderr, "ok: %s: %s\n", names[a->which], veil_last_error());
    }
    starpu_data_unregister(ho);
    starpu_data_unregister(hi);
    veil_net_close(&net);
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
    struct garg a;
    int bad = 0;
    if (net_test_keys_make(&a.keys, 2))
        return 1;
    for (a.which = G_CURVE; a.which < G_END; a.which++) {
        struct veil_harness_result res[2];
        struct veil_harness_opts o = {
            .nparties = 2, .timeout_s = 30, .grace_s = -1, .forward_output = net_test_verbose()};
        int rc = veil_harness_run(&o, party, &a, res);
        int fail = rc != VEIL_OK;
        if (a.which == G_CURVE && !strstr(res[0].output ? res[0].output : "", "handshake failed")) {
            fprintf(stderr, "FAIL: party 0 did not log the failed handshakes\n");
            fail = 1;
        }
        if (fail) {
            fprintf(stderr, "FAIL: case '%s': %s\n", names[a.which], veil_last_error());
            for (int p = 0; p < 2; p++)
                fprintf(stderr, "--- party %d (exit %d):\n%s\n", p, res[p].exit_code,
                        res[p].output ? res[p].output : "");
            bad = 1;
        }
        veil_harness_results_free(res, 2);
    }
    return bad;
}

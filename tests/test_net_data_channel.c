/* Tests the sealed data channel (net/data_channel.c, net/seal.h).
 * (1) In-process: a sealed frame opens to what was sealed, and fails authentication when any one
 *     of its bytes changes, under another key, or cut short; a payload sealed straight from its
 *     source gives the same frame as one copied in first; the prefix parser bounds its input.
 * (2) 2 real processes under CURVE: party 0 keeps data to it on the CURVE connection
 *     (VEIL_NET_DATA_CHANNEL=curve) and party 1 offers a data channel on a fixed port
 *     (VEIL_NET_DATA_PORT). Before anything else, party 0 checks that an unknown
 *     VEIL_NET_DATA_CHANNEL or a port past 65535 is refused when a session opens. Then a stranger
 *     (a plain ZeroMQ DEALER in party 0's process, with no key) connects to party 1's data port
 *     and sends a one-frame message, a two-frame one, a well-formed sealed frame under a key of its
 *     own claiming to be party 0, and one naming a sender that does not exist: party 1 drops all
 *     four (its count of dropped frames reaches 4) and its session goes on. Party 0 sends 3 MiB +
 *     5 bytes sealed to party 1 and party 1 sends 1 MiB back on CURVE: both arrive intact, and
 *     the wire counters show the 32-byte seal on each of party 0's data frames and on none of
 *     party 1's. */
#include "config.h"
#include "net_test_util.h"

#include <openssl/rand.h>
#include <starpu.h>
#include <unistd.h>
#include <zmq.h>

#define BIG (((size_t)3 << 20) + 5)
#define BACK ((size_t)1 << 20)

static int fails;
#define CHECK(c)                                                                                   \
    do {                                                                                           \
        if (!(c)) {                                                                                \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #c);                  \
            fails++;                                                                               \
        }                                                                                          \
    } while (0)

static void test_seal(void)
{
    uint8_t key[VEIL_SEAL_KEY_BYTES], other[VEIL_SEAL_KEY_BYTES];
    for (int i = 0; i < VEIL_SEAL_KEY_BYTES; i++) {
        key[i] = (uint8_t)i;
        other[i] = (uint8_t)(i + 1);
    }
    const size_t body = VEIL_FRAME_HEADER_BYTES + 100, len = body + VEIL_SEAL_OVERHEAD;
    uint8_t plain[VEIL_FRAME_HEADER_BYTES + 100],
        frame[VEIL_FRAME_HEADER_BYTES + 100 + VEIL_SEAL_OVERHEAD], copy[sizeof frame];
    net_test_fill(plain, sizeof plain, 5);
    struct veil_seal s = {0}, o = {0}, wrong = {0};
    CHECK(veil_seal_init(&s, key, 1) == VEIL_OK);
    CHECK(veil_seal_init(&o, key, 0) == VEIL_OK);
    CHECK(veil_seal_init(&wrong, other, 0) == VEIL_OK);
    memcpy(frame + VEIL_SEAL_PREFIX_BYTES, plain, body);
    CHECK(veil_seal_frame(&s, 1, 0x0102030405060708u, frame, body) == VEIL_OK);
    CHECK(memcmp(frame + VEIL_SEAL_PREFIX_BYTES, plain, body) != 0); /* encrypted */
    uint32_t sender = 0;
    uint64_t counter = 0;
    CHECK(veil_seal_peek(frame, len, VEIL_FRAME_HEADER_BYTES, &sender, &counter) == VEIL_OK);
    CHECK(sender == 1 && counter == 0x0102030405060708u);
    memcpy(copy, frame, len);
    CHECK(veil_seal_open(&o, copy, len) == VEIL_OK);
    CHECK(memcmp(copy + VEIL_SEAL_PREFIX_BYTES, plain, body) == 0);
    /* one changed bit anywhere (prefix = the nonce and associated data, body, tag) */
    int opened = 0;
    for (size_t i = 0; i < len; i++) {
        memcpy(copy, frame, len);
        copy[i] ^= 0x04;
        opened += veil_seal_open(&o, copy, len) != VEIL_ERR_PROTO;
    }
    CHECK(opened == 0);
    memcpy(copy, frame, len);
    CHECK(veil_seal_open(&wrong, copy, len) == VEIL_ERR_PROTO);
    memcpy(copy, frame, len);
    CHECK(veil_seal_open(&o, copy, len - 1) == VEIL_ERR_PROTO);
    CHECK(veil_seal_open(&o, copy, 10) == VEIL_ERR_INVAL);
    /* sealing the payload straight from its source (the sender's tensor) gives the same frame as
     * copying it after the header and sealing in place, for every split of the body */
    for (size_t head = 0; head <= body; head += head < 20 ? 1 : 37) {
        memset(copy, 0x5a, len);
        memcpy(copy + VEIL_SEAL_PREFIX_BYTES, plain, head);
        CHECK(veil_seal_frame_from(&s, 1, 0x0102030405060708u, copy, head, plain + head,
                                   body - head) == VEIL_OK);
        CHECK(memcmp(copy, frame, len) == 0);
    }
    CHECK(veil_seal_frame_from(&s, 1, 0, copy, VEIL_FRAME_HEADER_BYTES, NULL, 5) == VEIL_ERR_INVAL);
    /* a sealing state does not open, nor an opening one seal */
    CHECK(veil_seal_open(&s, copy, len) == VEIL_ERR_INVAL);
    CHECK(veil_seal_frame(&o, 1, 0, copy, body) == VEIL_ERR_INVAL);
    CHECK(veil_seal_frame_from(&o, 1, 0, copy, VEIL_FRAME_HEADER_BYTES, plain, 8) ==
          VEIL_ERR_INVAL);
    /* the prefix parser */
    CHECK(veil_seal_peek(frame, VEIL_SEAL_OVERHEAD + VEIL_FRAME_HEADER_BYTES - 1,
                         VEIL_FRAME_HEADER_BYTES, &sender, &counter) == VEIL_ERR_PROTO);
    CHECK(strstr(veil_last_error(), "at least 96") != NULL);
    memcpy(copy, frame, len);
    copy[0] ^= 1;
    CHECK(veil_seal_peek(copy, len, VEIL_FRAME_HEADER_BYTES, &sender, &counter) == VEIL_ERR_PROTO);
    CHECK(strstr(veil_last_error(), "magic") != NULL);
    veil_seal_free(&s);
    veil_seal_free(&o);
    veil_seal_free(&wrong);
    veil_seal_free(&o); /* idempotent */
    CHECK(!veil_seal_ready(&o));
}

struct targ {
    struct net_test_keys keys;
    int dport; /* party 1's data port */
};

/* A stranger with no key: four messages to party 1's data port, none of them authentic. */
static int stranger(int port)
{
    void *ctx = zmq_ctx_new(), *d = zmq_socket(ctx, ZMQ_DEALER);
    char ep[64];
    snprintf(ep, sizeof ep, "tcp://127.0.0.1:%d", port);
    int linger = 2000, rc = zmq_connect(d, ep);
    zmq_setsockopt(d, ZMQ_LINGER, &linger, sizeof linger);
    uint8_t frame[VEIL_FRAME_HEADER_BYTES + 64 + VEIL_SEAL_OVERHEAD], key[VEIL_SEAL_KEY_BYTES];
    const size_t body = VEIL_FRAME_HEADER_BYTES + 64;
    rc |= zmq_send(d, "hello", 5, 0) != 5;
    rc |= zmq_send(d, "two", 3, ZMQ_SNDMORE) != 3;
    rc |= zmq_send(d, "frames", 6, 0) != 6;
    struct veil_seal s = {0};
    RAND_bytes(key, sizeof key);
    memset(frame, 0, sizeof frame);
    rc |= veil_seal_init(&s, key, 1) != VEIL_OK;
    rc |= veil_seal_frame(&s, 0, 0, frame, body) != VEIL_OK; /* "party 0", frame 0 */
    rc |= zmq_send(d, frame, sizeof frame, 0) != (int)sizeof frame;
    rc |= veil_seal_frame(&s, 7, 0, frame, body) != VEIL_OK; /* no such process */
    rc |= zmq_send(d, frame, sizeof frame, 0) != (int)sizeof frame;
    veil_seal_free(&s);
    zmq_close(d);
    zmq_ctx_term(ctx);
    return rc;
}

/* Opening must refuse value for variable (the message names it). */
static int refuses(const struct veil_net_config *cfg, const char *variable, const char *value)
{
    setenv(variable, value, 1);
    veil_net_t *net = NULL;
    int rc = veil_net_open(cfg, NULL, &net);
    unsetenv(variable);
    if (rc != VEIL_ERR_INVAL || !strstr(veil_last_error(), variable)) {
        fprintf(stderr, "FAIL: %s=%s: open returned %d (%s)\n", variable, value, rc,
                veil_last_error());
        veil_net_close(&net);
        return 1;
    }
    return 0;
}

static int party(const struct veil_harness_party *me, void *arg)
{
    struct targ *a = arg;
    struct veil_net_config cfg;
    veil_net_t *net = NULL;
    if (net_test_config(me, &a->keys, 0.25, 10, 3, &cfg))
        return 2;
    int bad = 0;
    if (me->id == 0)
        bad |= refuses(&cfg, "VEIL_NET_DATA_CHANNEL", "chacha20") |
               refuses(&cfg, "VEIL_NET_DATA_PORT", "65536");
    char port[16];
    snprintf(port, sizeof port, "%d", a->dport);
    setenv("VEIL_NET_DATA_CHANNEL", me->id == 0 ? "curve" : "aes-gcm", 1);
    if (me->id == 1)
        setenv("VEIL_NET_DATA_PORT", port, 1);
    uint8_t *big = malloc(BIG), *back = malloc(BACK);
    if (!big || !back)
        return 3;
    const int started = net_test_start(&cfg, NULL, &net);
    if (started)
        return started;
    if (me->id == 0 ? net->drouter != NULL : net->dport != a->dport) {
        fprintf(stderr, "FAIL: party %d: data channel %s (port %d, wanted %s)\n", me->id,
                net->drouter ? "bound" : "not bound", net->dport, me->id == 0 ? "none" : port);
        bad = 1;
    }
    if (me->id == 0 && stranger(a->dport) != 0) {
        fprintf(stderr, "FAIL: the stranger could not send\n");
        bad = 1;
    }
    starpu_data_handle_t hb, hk;
    if (me->id == 0) {
        net_test_fill(big, BIG, 11);
        memset(back, 0, BACK);
    } else {
        net_test_fill(back, BACK, 12);
        memset(big, 0, BIG);
    }
    starpu_vector_data_register(&hb, STARPU_MAIN_RAM, (uintptr_t)big, BIG, 1);
    starpu_vector_data_register(&hk, STARPU_MAIN_RAM, (uintptr_t)back, BACK, 1);
    int rc = me->id == 0 ? veil_net_isend(net, hb, 1, 5) : veil_net_irecv(net, hb, 0, 5);
    if (rc == VEIL_OK)
        rc = me->id == 0 ? veil_net_irecv(net, hk, 1, 6) : veil_net_isend(net, hk, 0, 6);
    if (rc == VEIL_OK)
        rc = veil_net_wait_all(net);
    if (rc != VEIL_OK) {
        fprintf(stderr, "FAIL: party %d: exchange: %s\n", me->id, veil_last_error());
        bad = 1;
    }
    starpu_data_unregister(hb);
    starpu_data_unregister(hk);
    if (me->id == 0 ? net_test_check(back, BACK, 12) != BACK
                    : net_test_check(big, BIG, 11) != BIG) {
        fprintf(stderr, "FAIL: party %d: data not intact\n", me->id);
        bad = 1;
    }
    if (me->id == 1) { /* the stranger's messages may come after party 0's data */
        double t0 = veil_now();
        while (__atomic_load_n(&net->dgarbage, __ATOMIC_RELAXED) < 4 && veil_now() - t0 < 10)
            usleep(10 * 1000);
        uint64_t g = __atomic_load_n(&net->dgarbage, __ATOMIC_RELAXED);
        if (g != 4 || veil_net_status(net) != VEIL_OK) {
            fprintf(stderr, "FAIL: party 1 dropped %llu of the stranger's 4 frames; status %s\n",
                    (unsigned long long)g, veil_last_error());
            bad = 1;
        }
    }
    struct veil_net_stats s;
    veil_net_stats_get(net, 1 - me->id, &s);
    struct veil_net_options o;
    veil_net_options_defaults(&o);
    const uint64_t sealed = (BIG + o.chunk_bytes - 1) / o.chunk_bytes; /* party 0's data frames */
    const uint64_t sent = me->id == 0 ? BIG + VEIL_SEAL_OVERHEAD * sealed : BACK;
    const uint64_t recv = me->id == 0 ? BACK : BIG + VEIL_SEAL_OVERHEAD * sealed;
    if (s.wire_bytes_sent - 64 * s.frames_sent != sent + VEIL_HELLO_BYTES ||
        s.wire_bytes_recv - 64 * s.frames_recv != recv + VEIL_HELLO_BYTES) {
        fprintf(stderr,
                "FAIL: party %d: wire bytes beyond headers sent %llu (wanted %llu), received "
                "%llu (wanted %llu)\n",
                me->id, (unsigned long long)(s.wire_bytes_sent - 64 * s.frames_sent),
                (unsigned long long)(sent + VEIL_HELLO_BYTES),
                (unsigned long long)(s.wire_bytes_recv - 64 * s.frames_recv),
                (unsigned long long)(recv + VEIL_HELLO_BYTES));
        bad = 1;
    }
    if (veil_net_close(&net) != VEIL_OK) {
        fprintf(stderr, "FAIL: party %d: close: %s\n", me->id, veil_last_error());
        bad = 1;
    }
    starpu_shutdown();
    free(big);
    free(back);
    return bad;
}

/* A port free on 127.0.0.1 when checked, below the ephemeral range (net_test_port_candidate). */
static int free_port(void)
{
    for (int tries = 0; tries < 50; tries++) {
        const int port = net_test_port_candidate();
        if (net_test_port_free(port))
            return port;
    }
    return -1;
}

int main(void)
{
    setenv("STARPU_NCUDA", "0", 1);
    test_seal();
    struct targ a;
    if (net_test_keys_make(&a.keys, 2) || (a.dport = free_port()) <= 0)
        return 1;
    struct veil_harness_result res[2];
    struct veil_harness_opts o = {
        .nparties = 2, .timeout_s = 60, .grace_s = -1, .forward_output = net_test_verbose()};
    veil_harness_run(&o, party, &a, res);
    for (int p = 0; p < 2; p++)
        if (res[p].exit_code != 0 || res[p].timed_out) {
            fprintf(stderr, "FAIL: party %d exit %d%s:\n%s\n", p, res[p].exit_code,
                    res[p].timed_out ? " (timed out: a hang)" : "",
                    res[p].output ? res[p].output : "");
            fails++;
        }
    veil_harness_results_free(res, 2);
    if (fails)
        fprintf(stderr, "test_net_data_channel: %d failure(s)\n", fails);
    return fails ? 1 : 0;
}

/* Tests the handshake's refusals with 2 real processes: (1) party 1 presents a CURVE key that
 * is not in party 0's configuration: party 0's ZAP handler refuses it and logs "refused
 * connection from unknown key", and both opens fail with VEIL_ERR_TIMEOUT naming the other
 * party; (2) the plan digests differ: both opens fail with VEIL_ERR_MISMATCH naming the plan
 * digest; (3) party 1 believes in 3 parties: both fail with VEIL_ERR_MISMATCH naming the party
 * counts; (4) a liar: once the session is open, party 1 also connects a raw ZeroMQ DEALER that
 * holds party 1's CURVE key (so it is authenticated as party 1) and says in its hello that it is
 * party 0: party 0 refuses it with exactly "peer 1: says it is party 0 (...)" and
 * VEIL_ERR_MISMATCH (not "a second hello": the claim is checked first), from its open when the
 * liar's hello comes before that open returns, and party 1 learns of it through party 0's abort,
 * which names party 0 as the process that stopped the session. */
#include "config.h"
#include "net_test_util.h"

#include <starpu.h>
#include <unistd.h>

enum { CASE_KEY, CASE_DIGEST, CASE_COUNT, CASE_LIAR };

#define LIAR_REFUSAL                                                                              \
    "peer 1: says it is party 0 (check its 'self' line and the endpoint of party 1 in the "        \
    "configuration)"

struct aarg {
    struct net_test_keys keys;
    char rogue_pub[VEIL_Z85_KEY_CHARS + 1], rogue_sec[VEIL_Z85_KEY_CHARS + 1];
    int which;
};

/* In party 1's process: a DEALER with party 1's key whose hello says "party 0" (its frame
 * header says 1, as its key does, so only the hello lies). */
static void liar_hello(const struct net_test_keys *k, const struct veil_net_config *cfg)
{
    void *ctx = zmq_ctx_new(), *d = zmq_socket(ctx, ZMQ_DEALER);
    int linger_ms = 2000;
    zmq_setsockopt(d, ZMQ_LINGER, &linger_ms, sizeof linger_ms);
    zmq_setsockopt(d, ZMQ_ROUTING_ID, "p0", 2);
    zmq_setsockopt(d, ZMQ_CURVE_SERVERKEY, k->pub[0], VEIL_Z85_KEY_CHARS);
    zmq_setsockopt(d, ZMQ_CURVE_PUBLICKEY, k->pub[1], VEIL_Z85_KEY_CHARS);
    zmq_setsockopt(d, ZMQ_CURVE_SECRETKEY, k->sec[1], VEIL_Z85_KEY_CHARS);
    uint8_t h[VEIL_FRAME_HEADER_BYTES], hello[VEIL_HELLO_BYTES];
    struct veil_hello hl = {.protocol_version = VEIL_NET_PROTOCOL_VERSION, .party = 0,
                            .nparties = 2};
    memcpy(hl.session, cfg->session, VEIL_SESSION_BYTES);
    memcpy(hl.plan_digest, cfg->plan_digest, VEIL_PLAN_DIGEST_BYTES);
    veil_hello_encode(&hl, hello);
    struct veil_frame_header fh = {.version = VEIL_FRAME_VERSION, .type = VEIL_FRAME_HELLO,
                                   .sender = 1, .total = sizeof hello, .length = sizeof hello};
    memcpy(fh.session, cfg->session, VEIL_SESSION_BYTES);
    veil_frame_encode(&fh, h);
    if (zmq_connect(d, cfg->peers[0].endpoint) == 0) {
        zmq_send(d, h, sizeof h, ZMQ_SNDMORE);
        zmq_send(d, hello, sizeof hello, 0);
    }
    zmq_close(d); /* the linger delivers the hello */
    zmq_ctx_term(ctx);
}

/* Case 4: party 0 must refuse the liar with exactly LIAR_REFUSAL; party 1 hears of it. */
static int liar_case(const struct veil_harness_party *me, struct aarg *a,
                     const struct veil_net_config *cfg)
{
    veil_net_t *net = NULL;
    if (starpu_init(NULL) != 0)
        return 3;
    int rc = veil_net_open(cfg, NULL, &net);
    if (rc != VEIL_OK) {
        /* party 1's open can return first and lie at once: party 0 then reads the liar's hello
         * before its own open returns, and the same refusal fails that open */
        const int refused =
            me->id == 0 && rc == VEIL_ERR_MISMATCH && strcmp(veil_last_error(), LIAR_REFUSAL) == 0;
        if (!refused)
            fprintf(stderr, "FAIL: liar: open failed: %s\n", veil_last_error());
        else if (net_test_verbose())
            fprintf(stderr, "ok: liar (refused during the open): %s\n", veil_last_error());
        starpu_shutdown();
        return refused ? 0 : 1;
    }
    if (me->id == 1)
        liar_hello(&a->keys, cfg);
    for (int i = 0; i < 200 && (rc = veil_net_status(net)) == VEIL_OK; i++)
        usleep(50 * 1000); /* 10 s at most: the refusal comes at once */
    char msg[512];
    snprintf(msg, sizeof msg, "%s", rc ? veil_last_error() : "no error");
    veil_net_close(&net);
    starpu_shutdown();
    const int ok = me->id == 0 ? rc == VEIL_ERR_MISMATCH && strcmp(msg, LIAR_REFUSAL) == 0
                               : rc != VEIL_OK && strstr(msg, LIAR_REFUSAL) &&
                                     strstr(msg, "reported by party 0");
    if (!ok) {
        fprintf(stderr, "FAIL: liar: party %d got %d '%s', expected %s'%s'\n", me->id, rc, msg,
                me->id == 0 ? "VEIL_ERR_MISMATCH and exactly " : "party 0's abort relaying ",
                LIAR_REFUSAL);
        return 1;
    }
    if (net_test_verbose())
        fprintf(stderr, "ok: liar: %s\n", msg);
    return 0;
}

static int party(const struct veil_harness_party *me, void *arg)
{
    struct aarg *a = arg;
    struct veil_net_config cfg;
    struct veil_net_options opt;
    veil_net_t *net = NULL;
    veil_net_options_defaults(&opt);
    opt.connect_timeout_s = 3;
    if (net_test_config(me, &a->keys, 0.25, 5, 1, &cfg))
        return 2;
    if (a->which == CASE_LIAR)
        return liar_case(me, a, &cfg);
    int want = VEIL_ERR_MISMATCH;
    char text[64];
    switch (a->which) {
    case CASE_KEY:
        want = VEIL_ERR_TIMEOUT;
        snprintf(text, sizeof text, "no handshake with party %d", 1 - me->id);
        if (me->id == 1) { /* presents a key party 0 does not know */
            snprintf(cfg.peers[1].public_key, sizeof cfg.peers[1].public_key, "%s", a->rogue_pub);
            snprintf(cfg.secret_key, sizeof cfg.secret_key, "%s", a->rogue_sec);
        }
        break;
    case CASE_DIGEST:
        snprintf(text, sizeof text, "plan digest");
        if (me->id == 1)
            cfg.plan_digest[31] ^= 1;
        break;
    default:
        snprintf(text, sizeof text, "parties, we have");
        if (me->id == 1) {
            cfg.nparties = 3;
            snprintf(cfg.peers[2].endpoint, sizeof cfg.peers[2].endpoint, "tcp://127.0.0.1:9");
            snprintf(cfg.peers[2].public_key, sizeof cfg.peers[2].public_key, "%s", a->rogue_pub);
        }
        break;
    }
    int rc = veil_net_open(&cfg, &opt, &net);
    if (rc == VEIL_OK) {
        fprintf(stderr, "FAIL: open succeeded\n");
        veil_net_close(&net);
        return 1;
    }
    if (rc != want || !strstr(veil_last_error(), text)) {
        fprintf(stderr, "FAIL: open returned %d '%s', expected %d mentioning '%s'\n", rc,
                veil_last_error(), want, text);
        return 1;
    }
    if (net_test_verbose())
        fprintf(stderr, "ok: %s\n", veil_last_error());
    return 0;
}

int main(void)
{
    /* Timeouts of a few seconds are what this test checks; on a GPU host each process's CUDA
     * set-up (a context per process, under make -j) can take longer than that, and no part of
     * the test needs a GPU: StarPU starts without CUDA workers. */
    setenv("STARPU_NCUDA", "0", 1);
    struct aarg a;
    int bad = 0;
    if (net_test_keys_make(&a.keys, 2) || veil_curve_keypair(a.rogue_pub, a.rogue_sec))
        return 1;
    for (a.which = CASE_KEY; a.which <= CASE_LIAR; a.which++) {
        struct veil_harness_result res[2];
        struct veil_harness_opts o = {
            .nparties = 2, .timeout_s = 30, .grace_s = -1, .forward_output = net_test_verbose()};
        int rc = veil_harness_run(&o, party, &a, res);
        if (rc != VEIL_OK) {
            fprintf(stderr, "FAIL: case %d: %s\n", a.which, veil_last_error());
            bad = 1;
        }
        if (a.which == CASE_KEY &&
            !strstr(res[0].output ? res[0].output : "", "refused connection from unknown key")) {
            fprintf(stderr, "FAIL: party 0 did not log the refused key\n");
            bad = 1;
        }
        if (bad)
            for (int p = 0; p < 2; p++)
                fprintf(stderr, "--- party %d (exit %d):\n%s\n", p, res[p].exit_code,
                        res[p].output ? res[p].output : "");
        veil_harness_results_free(res, 2);
    }
    return bad;
}

/* Tests the handshake's refusals with 2 real processes: (1) party 1 presents a CURVE key that
 * is not in party 0's configuration: party 0's ZAP handler refuses it and logs "refused
 * connection from unknown key", and both opens fail with VEIL_ERR_TIMEOUT naming the other
 * party; (2) the plan digests differ: both opens fail with VEIL_ERR_MISMATCH naming the plan
 * digest; (3) party 1 believes in 3 parties: both fail with VEIL_ERR_MISMATCH naming the party
 * counts. */
#include "config.h"
#include "net_test_util.h"

enum { CASE_KEY, CASE_DIGEST, CASE_COUNT };

struct aarg {
    struct net_test_keys keys;
    char rogue_pub[VEIL_Z85_KEY_CHARS + 1], rogue_sec[VEIL_Z85_KEY_CHARS + 1];
    int which;
};

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
    for (a.which = CASE_KEY; a.which <= CASE_COUNT; a.which++) {
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

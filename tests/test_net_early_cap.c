/* Tests the early-arrival path's bounds with 2 real processes: party 1 receives, with a cap of
 * 2 MiB on bytes held for receives not yet posted, (1) 1.5 MiB that arrive before their irecv
 * is posted — kept, then delivered intact when it is — and (2) three more 1 MiB messages it never
 * posts: its session must stop with VEIL_ERR_NOMEM and a message naming the early-arrival cap,
 * and party 0 must see VEIL_ERR_PEER_LOST relaying that reason (no crash, no hang). */
#include "config.h"
#include "net_test_util.h"

#include <starpu.h>
#include <unistd.h>

#define FIRST ((size_t)3 << 19)
#define MB ((size_t)1 << 20)

static int party(const struct veil_harness_party *me, void *arg)
{
    struct net_test_keys *k = arg;
    struct veil_net_config cfg;
    struct veil_net_options opt;
    veil_net_t *net = NULL;
    if (net_test_config(me, k, 0.25, 5, 2, &cfg))
        return 2;
    veil_net_options_defaults(&opt);
    opt.early_cap_bytes = 2 * MB;
    uint8_t *a = malloc(FIRST), *b = malloc(MB);
    if (!a || !b)
        return 3;
    const int started = net_test_start(&cfg, &opt, &net);
    if (started)
        return started;
    starpu_data_handle_t ha, hb, hack;
    uint8_t ack = 0;
    starpu_vector_data_register(&hack, STARPU_MAIN_RAM, (uintptr_t)&ack, 1, 1);
    net_test_fill(a, FIRST, 1);
    memset(b, 0, MB);
    starpu_vector_data_register(&ha, STARPU_MAIN_RAM, (uintptr_t)a, FIRST, 1);
    starpu_vector_data_register(&hb, STARPU_MAIN_RAM, (uintptr_t)b, MB, 1);
    int bad = 0;
    if (me->id == 0) {
        veil_net_isend(net, ha, 1, 1);
        /* Party 1 acknowledges once the first message is delivered: only then do the
         * over-the-cap messages go, whatever the machine's load. */
        veil_net_irecv(net, hack, 1, 100);
        veil_net_wait_all(net);
        for (int i = 0; i < 3; i++)
            veil_net_isend(net, hb, 1, 2 + (uint64_t)i);
        int rc = veil_net_wait_all(net);
        double t0 = veil_now();
        while (rc == VEIL_OK && veil_now() - t0 < 10) { /* the abort comes asynchronously */
            usleep(10 * 1000);
            rc = veil_net_status(net);
        }
        if (rc != VEIL_ERR_PEER_LOST || !strstr(veil_last_error(), "early-arrival")) {
            fprintf(stderr, "FAIL: party 0 got %d '%s'\n", rc, veil_last_error());
            bad = 1;
        }
    } else {
        usleep(200 * 1000); /* let the first message arrive before the irecv */
        memset(a, 0, FIRST);
        veil_net_irecv(net, ha, 0, 1);
        if (veil_net_wait_all(net) != VEIL_OK || net_test_check(a, FIRST, 1) != FIRST) {
            fprintf(stderr, "FAIL: early message not delivered intact: %s\n", veil_last_error());
            bad = 1;
        }
        ack = 1;
        veil_net_isend(net, hack, 0, 100);
        double t0 = veil_now();
        int rc = VEIL_OK;
        while (rc == VEIL_OK && veil_now() - t0 < 10) {
            usleep(10 * 1000);
            rc = veil_net_status(net);
        }
        if (rc != VEIL_ERR_NOMEM || !strstr(veil_last_error(), "early-arrival store full")) {
            fprintf(stderr, "FAIL: party 1 got %d '%s'\n", rc, veil_last_error());
            bad = 1;
        } else if (net_test_verbose()) {
            fprintf(stderr, "ok: %s\n", veil_last_error());
        }
    }
    starpu_data_unregister(ha);
    starpu_data_unregister(hb);
    starpu_data_unregister(hack);
    veil_net_close(&net);
    starpu_shutdown();
    free(a);
    free(b);
    return bad;
}

int main(void)
{
    struct net_test_keys k;
    if (net_test_keys_make(&k, 2))
        return 1;
    struct veil_harness_result res[2];
    struct veil_harness_opts o = {.nparties = 2, .timeout_s = 60, .grace_s = -1,
                                  .forward_output = net_test_verbose()};
    int rc = veil_harness_run(&o, party, &k, res);
    if (rc != VEIL_OK) {
        fprintf(stderr, "FAIL: %s\n", veil_last_error());
        for (int p = 0; p < 2; p++)
            fprintf(stderr, "--- party %d (exit %d):\n%s\n", p, res[p].exit_code,
                    res[p].output ? res[p].output : "");
    }
    veil_harness_results_free(res, 2);
    return rc == VEIL_OK ? 0 : 1;
}

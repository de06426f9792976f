/* Tests the I/O thread's spinning before it sleeps (VEIL_NET_SPIN_US, net/io.c) with 2 real
 * processes over loopback CURVE:
 * - spin_us 2000: a ping-pong of 300 rounds (party 0 sends 8 words, party 1 answers each with the
 *   words plus one) arrives intact, and each party's I/O thread spun (spins > 0) and every spin's
 *   count is accounted for (hits + backoffs <= spins);
 * - spin_us 0 (the default): the same ping-pong, intact, and no spin at all;
 * - VEIL_NET_SPIN_US=abc, and 200000 (over the largest, 100000): the options carry -1 and opening
 *   the session fails with VEIL_ERR_INVAL naming the variable, at both parties. */
#include "config.h"
#include "net_test_util.h"

#include <starpu.h>
#include <stdlib.h>
#include <unistd.h>

#define ROUNDS 300
#define WORDS 8

static int mode_spin_us; /* the mode of the current net_test_run (copied into each fork) */
static const char *mode_env;

static int pingpong(veil_net_t *net, int self)
{
    uint64_t buf[WORDS];
    starpu_data_handle_t h;
    starpu_vector_data_register(&h, STARPU_MAIN_RAM, (uintptr_t)buf, WORDS, sizeof buf[0]);
    int bad = 0;
    for (int r = 0; r < ROUNDS && !bad; r++) {
        if (self == 0) {
            for (int i = 0; i < WORDS; i++)
                buf[i] = (uint64_t)r * 1000 + (uint64_t)i;
            veil_net_isend(net, h, 1, (uint64_t)(2 * r));
            veil_net_irecv(net, h, 1, (uint64_t)(2 * r + 1));
        } else {
            veil_net_irecv(net, h, 0, (uint64_t)(2 * r));
        }
        if (veil_net_wait_all(net) != VEIL_OK) {
            fprintf(stderr, "FAIL: round %d: %s\n", r, veil_last_error());
            bad = 1;
            break;
        }
        starpu_data_acquire(h, STARPU_RW);
        for (int i = 0; i < WORDS; i++)
            if (buf[i] != (uint64_t)r * 1000 + (uint64_t)i + (self == 0 ? 1 : 0)) {
                fprintf(stderr, "FAIL: round %d word %d is %llu\n", r, i,
                        (unsigned long long)buf[i]);
                bad = 1;
            }
        if (self == 1)
            for (int i = 0; i < WORDS; i++)
                buf[i]++;
        starpu_data_release(h);
        if (self == 1 && !bad) {
            veil_net_isend(net, h, 0, (uint64_t)(2 * r + 1));
            if (veil_net_wait_all(net) != VEIL_OK) {
                fprintf(stderr, "FAIL: answer %d: %s\n", r, veil_last_error());
                bad = 1;
            }
        }
    }
    starpu_data_unregister(h);
    return bad;
}

static int party(const struct veil_harness_party *me, void *arg)
{
    struct net_test_keys *k = arg;
    struct veil_net_config cfg;
    struct veil_net_options opt;
    veil_net_t *net = NULL;
    if (net_test_config_env(me, k, 7, "VEIL_NET_SPIN_US", mode_env, &cfg, &opt))
        return 2;
    if (mode_env) { /* refused at open, naming the variable */
        if (opt.spin_us != -1) {
            fprintf(stderr, "FAIL: VEIL_NET_SPIN_US=%s gave %d, not -1\n", mode_env, opt.spin_us);
            return 1;
        }
        return net_test_open_refused(&cfg, &opt, "VEIL_NET_SPIN_US", mode_env);
    }
    if (opt.spin_us != 0) {
        fprintf(stderr, "FAIL: the default spin is %d us, not 0\n", opt.spin_us);
        return 1;
    }
    opt.spin_us = mode_spin_us;
    const int started = net_test_start(&cfg, &opt, &net);
    if (started)
        return started;
    int bad = pingpong(net, me->id);
    uint64_t spins, hits, backoffs;
    veil_net_spin_counts(net, &spins, &hits, &backoffs);
    if (net_test_verbose())
        fprintf(stderr, "party %d: spin %d us: %llu spins, %llu hits, %llu backoffs\n", me->id,
                mode_spin_us, (unsigned long long)spins, (unsigned long long)hits,
                (unsigned long long)backoffs);
    if (mode_spin_us > 0 ? spins == 0 || hits + backoffs > spins : spins + hits + backoffs != 0) {
        fprintf(stderr, "FAIL: spin %d us: %llu spins, %llu hits, %llu backoffs\n", mode_spin_us,
                (unsigned long long)spins, (unsigned long long)hits, (unsigned long long)backoffs);
        bad = 1;
    }
    veil_net_close(&net);
    starpu_shutdown();
    return bad;
}

int main(void)
{
    int fail = 0;
    unsetenv("VEIL_NET_SPIN_US"); /* the default is under test */
    mode_spin_us = 2000;
    fail |= net_test_run(2, party, "spin 2000 us");
    mode_spin_us = 0;
    fail |= net_test_run(2, party, "no spin");
    mode_env = "abc";
    fail |= net_test_run(2, party, "VEIL_NET_SPIN_US=abc");
    mode_env = "200000";
    fail |= net_test_run(2, party, "VEIL_NET_SPIN_US=200000");
    return fail;
}

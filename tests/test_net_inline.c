/* Tests inline turns (VEIL_NET_INLINE_SEND, net/io.c): a small send whose data is ready is handed
 * to ZeroMQ by the thread of its acquire callback instead of the I/O thread, and a small receive
 * whose message landed before its handle was free is completed by that thread too. 2 real
 * processes over loopback CURVE with the sealed data channel, 200 rounds; in each, party 0 fills
 * a 96 KiB message and an 8-word one (both from the application thread), sends the small one,
 * then the large one, and waits for the small one back; party 1 has a task hold the small
 * message's handle for 2 ms (so the message lands first), receives into it, adds one to each word
 * in a StarPU task and sends the result back (its send leaves from the worker that ran the task),
 * and checks every byte of the large one at the end of each round.
 * - default (65536 bytes): every message intact; each party sent some messages inline (count > 0),
 *   never more than its small messages (a 96 KiB message never goes inline), and party 1
 *   completed some of its small receives inline, never more than 200;
 * - VEIL_NET_INLINE_SEND=0: every message intact, nothing sent or received inline;
 * - both: the I/O thread slept on its descriptors without zmq_poll at least once (the direct
 *   wait, net/io_poll.c), at both parties;
 * - VEIL_NET_INLINE_SEND=abc, and 2000000 (over the largest, 1048576): the options carry -1 and
 *   opening the session fails with VEIL_ERR_INVAL naming the variable, at both parties. */
#include "config.h"
#include "net_test_util.h"

#include <starpu.h>
#include <stdlib.h>
#include <unistd.h>

#define ROUNDS 200
#define WORDS 8
#define BIG_WORDS 12288 /* 96 KiB: over the default inline bound, under one chunk */

static const char *mode_env; /* the mode of the current net_test_run (copied into each fork) */
static long mode_expect;     /* the inline bound the options must carry */

static void inc_cpu(void *buffers[], void *cl_arg)
{
    (void)cl_arg;
    uint64_t *w = (uint64_t *)STARPU_VECTOR_GET_PTR(buffers[0]);
    for (unsigned i = 0; i < STARPU_VECTOR_GET_NX(buffers[0]); i++)
        w[i]++;
}
static struct starpu_codelet inc_cl = {
    .cpu_funcs = {inc_cpu}, .nbuffers = 1, .modes = {STARPU_RW}, .name = "test_inc"};

static void hold_cpu(void *buffers[], void *cl_arg)
{
    (void)cl_arg;
    usleep(2000);
    memset((void *)STARPU_VECTOR_GET_PTR(buffers[0]), 0, 8 * STARPU_VECTOR_GET_NX(buffers[0]));
}
static struct starpu_codelet hold_cl = {
    .cpu_funcs = {hold_cpu}, .nbuffers = 1, .modes = {STARPU_W}, .name = "test_hold"};

static uint64_t word_of(int r, int i)
{
    return (uint64_t)r * 1000003u + (uint64_t)i * 7u;
}

static int rounds(veil_net_t *net, int self)
{
    uint64_t buf[WORDS], *big = malloc(BIG_WORDS * sizeof *big);
    if (!big)
        return 1;
    starpu_data_handle_t h, hb;
    starpu_vector_data_register(&h, STARPU_MAIN_RAM, (uintptr_t)buf, WORDS, sizeof buf[0]);
    starpu_vector_data_register(&hb, STARPU_MAIN_RAM, (uintptr_t)big, BIG_WORDS, sizeof big[0]);
    int bad = 0;
    for (int r = 0; r < ROUNDS && !bad; r++) {
        const uint64_t tag = 3 * (uint64_t)r;
        int rc = 0;
        if (self == 0) {
            starpu_data_acquire(h, STARPU_W);
            starpu_data_acquire(hb, STARPU_W);
            for (int i = 0; i < WORDS; i++)
                buf[i] = word_of(r, i);
            for (int i = 0; i < BIG_WORDS; i++)
                big[i] = ~word_of(r, i);
            starpu_data_release(hb);
            starpu_data_release(h);
            rc |= veil_net_isend(net, h, 1, tag);
            rc |= veil_net_isend(net, hb, 1, tag + 2);
            rc |= veil_net_irecv(net, h, 1, tag + 1);
        } else {
            rc |= veil_net_irecv(net, hb, 0, tag + 2);
            rc |= starpu_task_insert(&hold_cl, STARPU_W, h, 0); /* the message lands first */
            rc |= veil_net_irecv(net, h, 0, tag);
            rc |= starpu_task_insert(&inc_cl, STARPU_RW, h, 0);
            rc |= veil_net_isend(net, h, 0, tag + 1);
        }
        if (rc || veil_net_wait_all(net) != VEIL_OK) {
            fprintf(stderr, "FAIL: round %d: %s\n", r, veil_last_error());
            bad = 1;
            break;
        }
        starpu_data_acquire(h, STARPU_R);
        starpu_data_acquire(hb, STARPU_R);
        for (int i = 0; i < WORDS; i++)
            if (buf[i] != word_of(r, i) + 1) {
                fprintf(stderr, "FAIL: round %d word %d is %llu\n", r, i,
                        (unsigned long long)buf[i]);
                bad = 1;
            }
        for (int i = 0; self == 1 && i < BIG_WORDS && !bad; i++)
            if (big[i] != ~word_of(r, i)) {
                fprintf(stderr, "FAIL: round %d large word %d is %llu\n", r, i,
                        (unsigned long long)big[i]);
                bad = 1;
            }
        starpu_data_release(hb);
        starpu_data_release(h);
    }
    starpu_data_unregister(h);
    starpu_data_unregister(hb);
    free(big);
    return bad;
}

static int party(const struct veil_harness_party *me, void *arg)
{
    struct net_test_keys *k = arg;
    struct veil_net_config cfg;
    struct veil_net_options opt;
    veil_net_t *net = NULL;
    if (net_test_config_env(me, k, 11, "VEIL_NET_INLINE_SEND", mode_env, &cfg, &opt))
        return 2;
    if (opt.inline_send != mode_expect) {
        fprintf(stderr, "FAIL: VEIL_NET_INLINE_SEND=%s gave %ld, not %ld\n",
                mode_env ? mode_env : "(unset)", opt.inline_send, mode_expect);
        return 1;
    }
    if (mode_expect < 0) /* refused at open, naming the variable */
        return net_test_open_refused(&cfg, &opt, "VEIL_NET_INLINE_SEND", mode_env);
    const int started = net_test_start(&cfg, &opt, &net);
    if (started)
        return started;
    int bad = rounds(net, me->id);
    const uint64_t n = veil_net_inline_count(net), nr = veil_net_inline_recv_count(net);
    if (net_test_verbose())
        fprintf(stderr,
                "party %d: inline bound %ld: %llu of %d small messages sent inline, %llu "
                "completed inline\n",
                me->id, mode_expect, (unsigned long long)n, ROUNDS, (unsigned long long)nr);
    if (mode_expect > 0 ? n == 0 || n > ROUNDS : n != 0) {
        fprintf(stderr, "FAIL: inline bound %ld: %llu messages sent inline (%d small ones)\n",
                mode_expect, (unsigned long long)n, ROUNDS);
        bad = 1;
    }
    const int want_recv = mode_expect > 0 && me->id == 1; /* its receives wait on the hold */
    if (want_recv ? nr == 0 || nr > ROUNDS : mode_expect == 0 && nr != 0) {
        fprintf(stderr, "FAIL: inline bound %ld: %llu receives completed inline at party %d\n",
                mode_expect, (unsigned long long)nr, me->id);
        bad = 1;
    }
    /* between rounds the I/O thread sleeps on its descriptors, not in zmq_poll (net/io_poll.c) */
    const uint64_t dw = veil_net_direct_wait_count(net);
    if (mode_expect >= 0 && dw == 0) {
        fprintf(stderr, "FAIL: party %d: no direct wait in %d rounds\n", me->id, ROUNDS);
        bad = 1;
    }
    veil_net_close(&net);
    starpu_shutdown();
    return bad;
}

int main(void)
{
    int fail = 0;
    unsetenv("VEIL_NET_INLINE_SEND"); /* the default is under test */
    mode_expect = 65536;
    fail |= net_test_run(2, party, "inline sends (default)");
    mode_env = "0";
    mode_expect = 0;
    fail |= net_test_run(2, party, "VEIL_NET_INLINE_SEND=0");
    mode_env = "abc";
    mode_expect = -1;
    fail |= net_test_run(2, party, "VEIL_NET_INLINE_SEND=abc");
    mode_env = "2000000";
    fail |= net_test_run(2, party, "VEIL_NET_INLINE_SEND=2000000");
    return fail;
}

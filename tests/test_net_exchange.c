/* Tests that 2, 3 and 4 real party processes (CURVE on, loopback) exchange tensors through
 * veil_net_isend / veil_net_irecv bound to StarPU handles: every party sends every other party
 * messages of 0 bytes, 1 byte, 1 MiB plus 200 small tags interleaved and 4 multi-chunk messages
 * sharing one tag (which must arrive in posting order), and 64 MiB around the ring (party p to
 * party p+1 mod N, so with 2 parties both ways: ~256 MiB of RAM per party counting ZeroMQ's
 * buffers, whatever N), half the parties posting their receives before their sends and half
 * after (the early-arrival path); the receivers check every byte against a pseudo-random
 * pattern seeded by (sender, receiver, message), and every party's message counters per peer. */
#include "config.h"
#include "net_test_util.h"

#include <starpu.h>

#define NSMALL 200
#define NSAME 4

struct msg {
    uint8_t *buf;
    size_t size;
    uint64_t tag;
    uint64_t id; /* unique per (sender, receiver): seeds the content */
    starpu_data_handle_t h;
};

struct xarg {
    struct net_test_keys keys;
};

/* 1 when src sends dst a 64 MiB message: around the ring. */
static int big_pair(int src, int dst, int nprocs)
{
    return dst == (src + 1) % nprocs;
}

static uint64_t seed_of(int src, int dst, uint64_t tag)
{
    return ((uint64_t)src << 48) ^ ((uint64_t)dst << 40) ^ tag;
}

static int make_msgs(struct msg *m, int big)
{
    static const size_t sizes[] = {0, 1, (size_t)1 << 20, (size_t)64 << 20};
    int n = 0;
    for (int i = 0; i < (big ? 4 : 3); i++, n++) {
        m[n].size = sizes[i];
        m[n].tag = 1000 + (uint64_t)i;
    }
    for (int t = 0; t < NSMALL; t++, n++) {
        m[n].size = 1 + (size_t)(t * 37) % 500;
        m[n].tag = (uint64_t)t;
    }
    for (int j = 0; j < NSAME; j++, n++) { /* same tag: must arrive in posting order */
        m[n].size = ((size_t)3 << 19) + (size_t)j;
        m[n].tag = 5000;
    }
    for (int i = 0; i < n; i++)
        m[i].id = (uint64_t)i;
    return n;
}

static int party(const struct veil_harness_party *me, void *arg)
{
    struct xarg *a = arg;
    struct veil_net_config cfg;
    veil_net_t *net = NULL;
    int bad = 0, nprocs = me->nparties;
    if (net_test_config(me, &a->keys, 0.5, 10, 7, &cfg))
        return 2;
    const int started = net_test_start(&cfg, NULL, &net);
    if (started)
        return started;
    enum { MAXM = NSMALL + NSAME + 4 };
    static struct msg out[4][MAXM], in[4][MAXM];
    int nout[4] = {0}, nin[4] = {0}, nmax = 0;
    for (int p = 0; p < nprocs; p++) {
        if (p == me->id)
            continue;
        nout[p] = make_msgs(out[p], big_pair(me->id, p, nprocs));
        nin[p] = make_msgs(in[p], big_pair(p, me->id, nprocs));
        nmax = nout[p] > nmax ? nout[p] : nmax;
        nmax = nin[p] > nmax ? nin[p] : nmax;
        for (int i = 0; i < nout[p]; i++) {
            out[p][i].buf = malloc(out[p][i].size + 1);
            if (!out[p][i].buf)
                return 5;
            net_test_fill(out[p][i].buf, out[p][i].size, seed_of(me->id, p, out[p][i].id));
            starpu_vector_data_register(&out[p][i].h, STARPU_MAIN_RAM, (uintptr_t)out[p][i].buf,
                                        (uint32_t)out[p][i].size, 1);
        }
        for (int i = 0; i < nin[p]; i++) {
            in[p][i].buf = malloc(in[p][i].size + 1);
            if (!in[p][i].buf)
                return 5;
            memset(in[p][i].buf, 0xee, in[p][i].size);
            starpu_vector_data_register(&in[p][i].h, STARPU_MAIN_RAM, (uintptr_t)in[p][i].buf,
                                        (uint32_t)in[p][i].size, 1);
        }
    }
    for (int pass = 0; pass < 2; pass++) {
        int sends = (pass == 0) == (me->id % 2 == 0);
        /* interleave peers and tags: message i to every peer, then message i+1 */
        for (int i = 0; i < nmax; i++)
            for (int p = 0; p < nprocs; p++) {
                if (p == me->id || i >= (sends ? nout[p] : nin[p]))
                    continue;
                int rc = sends ? veil_net_isend(net, out[p][i].h, p, out[p][i].tag)
                               : veil_net_irecv(net, in[p][i].h, p, in[p][i].tag);
                if (rc) {
                    fprintf(stderr, "post failed: %s\n", veil_last_error());
                    return 6;
                }
            }
    }
    int rc = veil_net_wait_all(net);
    if (rc) {
        fprintf(stderr, "wait_all: %s\n", veil_last_error());
        bad = 1;
    }
    for (int p = 0; p < nprocs; p++) {
        if (p == me->id)
            continue;
        for (int i = 0; i < nout[p]; i++) {
            starpu_data_unregister(out[p][i].h);
            free(out[p][i].buf);
        }
        for (int i = 0; i < nin[p]; i++) {
            starpu_data_unregister(in[p][i].h);
            size_t at =
                net_test_check(in[p][i].buf, in[p][i].size, seed_of(p, me->id, in[p][i].id));
            if (at != in[p][i].size) {
                fprintf(stderr,
                        "FAIL: party %d: message tag %llu from %d (%zu bytes) differs "
                        "at byte %zu\n",
                        me->id, (unsigned long long)in[p][i].tag, p, in[p][i].size, at);
                bad = 1;
            }
            free(in[p][i].buf);
        }
        struct veil_net_stats s;
        veil_net_stats_get(net, p, &s);
        if (s.msgs_recv != (uint64_t)nin[p] || s.msgs_sent != (uint64_t)nout[p]) {
            fprintf(stderr,
                    "FAIL: party %d with %d: %llu sent, %llu received, expected %d and %d\n",
                    me->id, p, (unsigned long long)s.msgs_sent, (unsigned long long)s.msgs_recv,
                    nout[p], nin[p]);
            bad = 1;
        }
    }
    veil_net_close(&net);
    starpu_shutdown();
    return bad;
}

int main(void)
{
    struct xarg *a = calloc(1, sizeof *a);
    int fails = 0;
    if (!a || net_test_keys_make(&a->keys, 4))
        return 1;
    for (int n = 2; n <= 4; n++) {
        struct veil_harness_result res[4];
        struct veil_harness_opts o = {
            .nparties = n, .timeout_s = 60, .grace_s = 5, .forward_output = net_test_verbose()};
        double t0 = veil_now();
        int rc = veil_harness_run(&o, party, a, res);
        if (rc != VEIL_OK) {
            fprintf(stderr, "FAIL: %d parties: %s\n", n, veil_last_error());
            for (int p = 0; p < n; p++)
                fprintf(stderr, "--- party %d (exit %d):\n%s\n", p, res[p].exit_code,
                        res[p].output ? res[p].output : "");
            fails++;
        } else if (net_test_verbose()) {
            fprintf(stderr, "%d parties: ok in %.2f s\n", n, veil_now() - t0);
        }
        veil_harness_results_free(res, n);
    }
    free(a);
    return fails ? 1 : 0;
}

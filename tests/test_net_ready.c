/* Tests the sending side's ready list (net/io_send.c) with 2 real processes: party 0 posts 48
 * sends to party 1 over 6 tags (8 sends per tag, which must arrive in posting order), a quarter
 * of them 3-4 chunks long (64 KiB chunks from a 4-buffer pool, so chunks of several messages
 * go round-robin and the pool runs dry), and the data of each send is written by a task that
 * runs in a shuffled order: the sends become ready far from their posting order, and a later
 * send of a tag is often ready before an earlier one. Party 1 posts the receives in posting order
 * and checks every byte of every message against the pattern of the send posted in that place:
 * a message staged out of its tag's order, or a send never staged, fails the test. */
#include "config.h"
#include "net_test_util.h"

#include <starpu.h>
#include <unistd.h>

#define NMSG 48
#define NTAGS 6

static size_t size_of(int i)
{
    return i % 4 == 0 ? ((size_t)200 << 10) + (size_t)i : 1 + (size_t)i * 13;
}

static void write_cpu(void *buffers[], void *cl_arg)
{
    uint8_t *p = (uint8_t *)STARPU_VECTOR_GET_PTR(buffers[0]);
    size_t n = STARPU_VECTOR_GET_NX(buffers[0]);
    int i, first;
    starpu_codelet_unpack_args(cl_arg, &i, &first);
    if (first)
        usleep(100 * 1000); /* every send is posted before any becomes ready */
    net_test_fill(p, n, (uint64_t)i);
}
static struct starpu_codelet write_cl = {
    .cpu_funcs = {write_cpu}, .nbuffers = 1, .modes = {STARPU_W}, .name = "test_write"};

static int party(const struct veil_harness_party *me, void *arg)
{
    struct net_test_keys *k = arg;
    struct veil_net_config cfg;
    struct veil_net_options opt;
    veil_net_t *net = NULL;
    if (net_test_config(me, k, 0.5, 10, 3, &cfg))
        return 2;
    veil_net_options_defaults(&opt);
    opt.chunk_bytes = 64 << 10;
    opt.pool_bytes = 256 << 10;
    uint8_t *buf[NMSG];
    starpu_data_handle_t h[NMSG];
    for (int i = 0; i < NMSG; i++)
        if (!(buf[i] = calloc(1, size_of(i))))
            return 3;
    const int started = net_test_start(&cfg, &opt, &net);
    if (started)
        return started;
    for (int i = 0; i < NMSG; i++)
        starpu_vector_data_register(&h[i], STARPU_MAIN_RAM, (uintptr_t)buf[i], size_of(i), 1);
    int rc = 0;
    if (me->id == 0) {
        int order[NMSG];
        for (int i = 0; i < NMSG; i++)
            order[i] = i;
        uint64_t x = 12345; /* a fixed shuffle (Fisher-Yates over an LCG) */
        for (int i = NMSG - 1; i > 0; i--) {
            x = x * 6364136223846793005u + 1442695040888963407u;
            const int j = (int)((x >> 33) % (uint64_t)(i + 1)), t = order[i];
            order[i] = order[j];
            order[j] = t;
        }
        for (int n = 0; n < NMSG && !rc; n++) {
            const int first = n == 0;
            rc = starpu_task_insert(&write_cl, STARPU_W, h[order[n]], STARPU_VALUE, &order[n],
                                    sizeof(int), STARPU_VALUE, &first, sizeof first, 0);
        }
        for (int i = 0; i < NMSG && !rc; i++)
            rc = veil_net_isend(net, h[i], 1, (uint64_t)(i % NTAGS));
    } else {
        for (int i = 0; i < NMSG && !rc; i++)
            rc = veil_net_irecv(net, h[i], 0, (uint64_t)(i % NTAGS));
    }
    if (rc) {
        fprintf(stderr, "submission failed: %s\n", veil_last_error());
        return 5;
    }
    int bad = 0;
    if (veil_net_wait_all(net) != VEIL_OK) {
        fprintf(stderr, "wait_all: %s\n", veil_last_error());
        bad = 1;
    }
    for (int i = 0; i < NMSG; i++)
        starpu_data_unregister(h[i]);
    for (int i = 0; i < NMSG && me->id == 1 && !bad; i++) {
        const size_t at = net_test_check(buf[i], size_of(i), (uint64_t)i);
        if (at != size_of(i)) {
            fprintf(stderr,
                    "FAIL: receive %d (tag %d, %zu bytes) differs from send %d at byte %zu: "
                    "a tag's sends left out of posting order, or a message was corrupted\n",
                    i, i % NTAGS, size_of(i), i, at);
            bad = 1;
        }
    }
    veil_net_close(&net);
    starpu_shutdown();
    for (int i = 0; i < NMSG; i++)
        free(buf[i]);
    return bad;
}

int main(void)
{
    return net_test_run(2, party, "sends ready out of posting order");
}

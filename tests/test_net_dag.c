/* Tests that net requests are dependencies inside the StarPU DAG, with 2 real processes:
 * (1) a reader task submitted after veil_net_irecv runs only after the message landed — the
 *     sender's producing task sleeps 300 ms first, and the receiver's reader must record the
 *     sent value, never the initial one;
 * (2) a writer task submitted after veil_net_isend waits until the send no longer needs the
 *     handle — the send of 8 MiB is paced through a 100 Mbit/s emulated link in 64 KiB chunks
 *     from a 4-buffer pool (so the handle stays acquired ~0.7 s), and the receiver must get the
 *     pre-write pattern in every byte, never the writer's bytes;
 * (3) sends to one peer interleave: an 8-byte message posted after that 8 MiB one (other tag)
 *     lands first — the receiver's tasks reading each record the order in which they ran —
 *     because chunks go round-robin across a peer's pending sends instead of FIFO. */
#include "config.h"
#include "net_test_util.h"

#include <starpu.h>
#include <unistd.h>

#define BIG ((size_t)8 << 20)

static void slow_set_cpu(void *buffers[], void *cl_arg)
{
    uint64_t *x = (uint64_t *)STARPU_VARIABLE_GET_PTR(buffers[0]);
    uint64_t v;
    starpu_codelet_unpack_args(cl_arg, &v);
    usleep(300 * 1000);
    *x = v;
}
static struct starpu_codelet slow_set_cl = {
    .cpu_funcs = {slow_set_cpu}, .nbuffers = 1, .modes = {STARPU_W}, .name = "test_slow_set"};

static void copy_cpu(void *buffers[], void *cl_arg)
{
    (void)cl_arg;
    *(uint64_t *)STARPU_VARIABLE_GET_PTR(buffers[1]) =
        *(const uint64_t *)STARPU_VARIABLE_GET_PTR(buffers[0]);
}
static struct starpu_codelet copy_cl = {
    .cpu_funcs = {copy_cpu}, .nbuffers = 2, .modes = {STARPU_R, STARPU_W}, .name = "test_copy"};

static void scribble_cpu(void *buffers[], void *cl_arg)
{
    (void)cl_arg;
    memset((void *)STARPU_VECTOR_GET_PTR(buffers[0]), 0x5a, STARPU_VECTOR_GET_NX(buffers[0]));
}
static struct starpu_codelet scribble_cl = {
    .cpu_funcs = {scribble_cpu}, .nbuffers = 1, .modes = {STARPU_W}, .name = "test_scribble"};

static int order_seq;
static int order_of[2]; /* [0]: the big message's reader, [1]: the small one's */

static void stamp_cpu(void *buffers[], void *cl_arg)
{
    (void)buffers;
    int which;
    starpu_codelet_unpack_args(cl_arg, &which);
    order_of[which] = __atomic_fetch_add(&order_seq, 1, __ATOMIC_SEQ_CST);
}
static struct starpu_codelet stamp_cl = {
    .cpu_funcs = {stamp_cpu}, .nbuffers = 1, .modes = {STARPU_R}, .name = "test_stamp"};

static int party(const struct veil_harness_party *me, void *arg)
{
    struct net_test_keys *k = arg;
    struct veil_net_config cfg;
    struct veil_net_options opt;
    veil_net_t *net = NULL;
    int bad = 0;
    if (net_test_config(me, k, 0.5, 10, 1, &cfg))
        return 2;
    cfg.link.bandwidth_Bps = 12.5e6; /* 100 Mbit/s */
    veil_net_options_defaults(&opt);
    opt.chunk_bytes = 64 << 10;
    opt.pool_bytes = 256 << 10;
    uint8_t *big = malloc(BIG);
    if (!big)
        return 3;
    const int started = net_test_start(&cfg, &opt, &net);
    if (started)
        return started;
    uint64_t x = 7, seen = 0, small = 0;
    starpu_data_handle_t hx, hseen, hbig, hsmall;
    starpu_variable_data_register(&hsmall, STARPU_MAIN_RAM, (uintptr_t)&small, sizeof small);
    starpu_variable_data_register(&hx, STARPU_MAIN_RAM, (uintptr_t)&x, sizeof x);
    starpu_variable_data_register(&hseen, STARPU_MAIN_RAM, (uintptr_t)&seen, sizeof seen);
    if (me->id == 0)
        net_test_fill(big, BIG, 99);
    else
        memset(big, 0, BIG);
    starpu_vector_data_register(&hbig, STARPU_MAIN_RAM, (uintptr_t)big, BIG, 1);
    int rc = 0;
    if (me->id == 0) {
        uint64_t v = 42;
        rc |= starpu_task_insert(&slow_set_cl, STARPU_W, hx, STARPU_VALUE, &v, sizeof v, 0);
        rc |= veil_net_isend(net, hx, 1, 1);
        rc |= veil_net_isend(net, hbig, 1, 2);
        rc |= starpu_task_insert(&scribble_cl, STARPU_W, hbig, 0); /* must wait for the send */
        rc |= veil_net_isend(net, hsmall, 1, 3);
    } else {
        rc |= veil_net_irecv(net, hx, 0, 1);
        rc |= starpu_task_insert(&copy_cl, STARPU_R, hx, STARPU_W, hseen, 0);
        rc |= veil_net_irecv(net, hbig, 0, 2);
        rc |= veil_net_irecv(net, hsmall, 0, 3);
        int big_idx = 0, small_idx = 1;
        rc |= starpu_task_insert(&stamp_cl, STARPU_R, hbig, STARPU_VALUE, &big_idx, sizeof big_idx,
                                 0);
        rc |= starpu_task_insert(&stamp_cl, STARPU_R, hsmall, STARPU_VALUE, &small_idx,
                                 sizeof small_idx, 0);
    }
    if (rc) {
        fprintf(stderr, "submission failed: %s\n", veil_last_error());
        return 5;
    }
    if (veil_net_wait_all(net) != VEIL_OK) {
        fprintf(stderr, "wait_all: %s\n", veil_last_error());
        bad = 1;
    }
    starpu_data_unregister(hx);
    starpu_data_unregister(hseen);
    starpu_data_unregister(hbig);
    starpu_data_unregister(hsmall);
    if (me->id == 1) {
        if (order_of[1] > order_of[0]) {
            fprintf(stderr, "FAIL: the 8-byte message posted after the 8 MiB one landed after it: "
                            "sends to a peer are not interleaved\n");
            bad = 1;
        }
        if (seen != 42) {
            fprintf(stderr, "FAIL: the reader after irecv saw %llu, not the sent 42\n",
                    (unsigned long long)seen);
            bad = 1;
        }
        size_t at = net_test_check(big, BIG, 99);
        if (at != BIG) {
            fprintf(stderr,
                    "FAIL: received tensor differs at byte %zu (0x%02x): the writer after "
                    "isend ran before the send released the handle\n",
                    at, big[at]);
            bad = 1;
        }
    } else {
        for (size_t i = 0; i < BIG; i++)
            if (big[i] != 0x5a) {
                fprintf(stderr, "FAIL: the writer after isend did not run\n");
                bad = 1;
                break;
            }
    }
    veil_net_close(&net);
    starpu_shutdown();
    free(big);
    return bad;
}

int main(void)
{
    return net_test_run(2, party, "DAG dependencies");
}

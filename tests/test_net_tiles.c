/* Tests veil_net_irecv_tiles (one message scattered over several handles), with 2 real
 * processes over loopback CURVE:
 * (1) party 0's message of 3 MiB + 40 bytes, produced by a task that sleeps 300 ms and sent in
 *     64 KiB chunks, lands in party 1's three tiles of one buffer, of sizes that put chunk
 *     boundaries inside tiles (1 MiB - 24, 1 MiB + 3, 1 MiB + 61): a reader task of each tile,
 *     submitted right after the receive, sees the message's bytes, never the buffer's initial
 *     zeros, and the whole buffer equals the message;
 * (2) refusals before anything is posted: no handle, a NULL handle (VEIL_ERR_INVAL);
 * (3) a second session where party 1's two handles lie apart in memory, 64 guard bytes between
 *     them: the message's first half fills the first, its second half the second, the guard is
 *     untouched. */
#include "config.h"
#include "net_test_util.h"

#include <starpu.h>
#include <unistd.h>

#define TILE_BYTES ((size_t)1 << 20)
#define TOTAL (3 * TILE_BYTES + 40)

static void slow_fill_cpu(void *buffers[], void *cl_arg)
{
    (void)cl_arg;
    usleep(300 * 1000);
    net_test_fill((uint8_t *)STARPU_VECTOR_GET_PTR(buffers[0]), STARPU_VECTOR_GET_NX(buffers[0]),
                  77);
}
static struct starpu_codelet slow_fill_cl = {
    .cpu_funcs = {slow_fill_cpu}, .nbuffers = 1, .modes = {STARPU_W}, .name = "test_slow_fill"};

/* Records the tile's last 8 bytes into the variable. */
static void last_word_cpu(void *buffers[], void *cl_arg)
{
    (void)cl_arg;
    const uint8_t *t = (const uint8_t *)STARPU_VECTOR_GET_PTR(buffers[0]);
    memcpy((void *)STARPU_VARIABLE_GET_PTR(buffers[1]), t + STARPU_VECTOR_GET_NX(buffers[0]) - 8,
           8);
}
static struct starpu_codelet last_word_cl = {.cpu_funcs = {last_word_cpu},
                                             .nbuffers = 2,
                                             .modes = {STARPU_R, STARPU_W},
                                             .name = "test_last_word"};

static int open_net(const struct veil_harness_party *me, struct net_test_keys *k, veil_net_t **net)
{
    struct veil_net_config cfg;
    struct veil_net_options opt;
    if (net_test_config(me, k, 0.5, 10, 1, &cfg))
        return 2;
    veil_net_options_defaults(&opt);
    opt.chunk_bytes = 64 << 10;
    return net_test_start(&cfg, &opt, net);
}

static int landed(const struct veil_harness_party *me, void *arg)
{
    veil_net_t *net = NULL;
    int bad = open_net(me, arg, &net);
    if (bad)
        return bad;
    uint8_t *buf = calloc(1, TOTAL);
    if (!buf)
        return 3;
    if (me->id == 0) {
        starpu_data_handle_t h;
        starpu_vector_data_register(&h, STARPU_MAIN_RAM, (uintptr_t)buf, TOTAL, 1);
        if (starpu_task_insert(&slow_fill_cl, STARPU_W, h, 0) != 0 ||
            veil_net_isend(net, h, 1, 9) != VEIL_OK)
            bad = 5;
        if (veil_net_wait_all(net) != VEIL_OK)
            bad = 6;
        starpu_data_unregister(h);
    } else {
        const size_t sizes[3] = {TILE_BYTES - 24, TILE_BYTES + 3, TILE_BYTES + 61};
        starpu_data_handle_t h[3], hw[3];
        uint64_t last[3] = {0};
        size_t at = 0;
        for (int i = 0; i < 3; i++) {
            starpu_vector_data_register(&h[i], STARPU_MAIN_RAM, (uintptr_t)(buf + at), sizes[i],
                                        1);
            starpu_variable_data_register(&hw[i], STARPU_MAIN_RAM, (uintptr_t)&last[i],
                                          sizeof last[i]);
            at += sizes[i];
        }
        if (veil_net_irecv_tiles(net, h, 0, 0, 9) != VEIL_ERR_INVAL) {
            fprintf(stderr, "FAIL: a tiled receive of no handle was not refused\n");
            bad = 1;
        }
        starpu_data_handle_t with_null[2] = {h[0], NULL};
        if (veil_net_irecv_tiles(net, with_null, 2, 0, 9) != VEIL_ERR_INVAL ||
            !strstr(veil_last_error(), "handle 1 is NULL")) {
            fprintf(stderr, "FAIL: a NULL handle was not refused: %s\n", veil_last_error());
            bad = 1;
        }
        int rc = veil_net_irecv_tiles(net, h, 3, 0, 9);
        for (int i = 0; i < 3 && rc == VEIL_OK; i++)
            rc = starpu_task_insert(&last_word_cl, STARPU_R, h[i], STARPU_W, hw[i], 0) ? 1 : 0;
        if (rc != VEIL_OK || veil_net_wait_all(net) != VEIL_OK) {
            fprintf(stderr, "FAIL: tiled receive: %s\n", veil_last_error());
            bad = 1;
        }
        for (int i = 0; i < 3; i++) {
            starpu_data_unregister(h[i]);
            starpu_data_unregister(hw[i]);
        }
        uint8_t *want = malloc(TOTAL);
        if (!want)
            return 3;
        net_test_fill(want, TOTAL, 77);
        at = 0;
        for (int i = 0; i < 3; i++) {
            at += sizes[i];
            if (memcmp(&last[i], want + at - 8, 8) != 0) {
                fprintf(stderr, "FAIL: the reader of tile %d ran before the message landed\n", i);
                bad = 1;
            }
        }
        size_t diff = net_test_check(buf, TOTAL, 77);
        if (diff != TOTAL) {
            fprintf(stderr, "FAIL: the tiles differ from the message at byte %zu\n", diff);
            bad = 1;
        }
        free(want);
    }
    veil_net_close(&net);
    starpu_shutdown();
    free(buf);
    return bad;
}

static int apart(const struct veil_harness_party *me, void *arg)
{
    veil_net_t *net = NULL;
    int bad = open_net(me, arg, &net);
    if (bad)
        return bad;
    uint8_t *buf = malloc(2 * TILE_BYTES + 64);
    if (!buf)
        return 3;
    if (me->id == 0) {
        net_test_fill(buf, 2 * TILE_BYTES, 5);
        starpu_data_handle_t h;
        starpu_vector_data_register(&h, STARPU_MAIN_RAM, (uintptr_t)buf, 2 * TILE_BYTES, 1);
        if (veil_net_isend(net, h, 1, 9) != VEIL_OK || veil_net_wait_all(net) != VEIL_OK)
            bad = 5;
        starpu_data_unregister(h);
    } else {
        memset(buf, 0xee, 2 * TILE_BYTES + 64);
        starpu_data_handle_t h[2];
        starpu_vector_data_register(&h[0], STARPU_MAIN_RAM, (uintptr_t)(buf + TILE_BYTES + 64),
                                    TILE_BYTES, 1);
        starpu_vector_data_register(&h[1], STARPU_MAIN_RAM, (uintptr_t)buf, TILE_BYTES, 1);
        if (veil_net_irecv_tiles(net, h, 2, 0, 9) != VEIL_OK || veil_net_wait_all(net) != VEIL_OK) {
            fprintf(stderr, "FAIL: handles apart in memory: %s\n", veil_last_error());
            bad = 1;
        }
        for (int i = 0; i < 2; i++)
            starpu_data_unregister(h[i]);
        uint8_t *want = malloc(2 * TILE_BYTES);
        if (!want)
            return 3;
        net_test_fill(want, 2 * TILE_BYTES, 5);
        if (memcmp(buf + TILE_BYTES + 64, want, TILE_BYTES) != 0 ||
            memcmp(buf, want + TILE_BYTES, TILE_BYTES) != 0) {
            fprintf(stderr, "FAIL: handles apart in memory: the message's halves are not in "
                            "the first and second handle\n");
            bad = 1;
        }
        for (size_t i = TILE_BYTES; i < TILE_BYTES + 64; i++)
            if (buf[i] != 0xee) {
                fprintf(stderr, "FAIL: the receive wrote between the handles (byte %zu)\n", i);
                bad = 1;
                break;
            }
        free(want);
    }
    veil_net_close(&net);
    starpu_shutdown();
    free(buf);
    return bad;
}

int main(void)
{
    int failed = net_test_run(2, landed, "one message into three tiles");
    failed += net_test_run(2, apart, "handles apart in memory");
    return failed ? 1 : 0;
}

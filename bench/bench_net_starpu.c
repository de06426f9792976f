/*
 * bench_net_starpu.c — measures Veil's StarPU-bound mesh between 2 real processes on loopback:
 * (1) throughput of veil_net_isend / veil_net_irecv for 1 KiB .. 64 MiB messages (CURVE and
 *     plaintext), to compare with bench_net_zmq's plain-ZeroMQ figures;
 * (2) per-message overhead: a ping-pong of 8-byte messages through the DAG (each irecv waits in
 *     StarPU for the preceding isend of the same handle) against a plain ZeroMQ PAIR ping-pong;
 * (3) a chunk-size sweep (256 KiB .. 8 MiB) on 64 MiB messages;
 * (4) emulated links (latency, bandwidth): measured one-way latency (half the 8-byte round trip)
 *     and throughput against the settings.
 * Usage: bench_net_starpu [-q] [throughput|overhead|chunks|links|all]   (default all)
 */
#include "config.h"
#include "tests/net_test_util.h"

#include <starpu.h>
#include <unistd.h>

enum { M_STREAM, M_PINGPONG, M_ZMQ_PINGPONG };

struct bench {
    struct net_test_keys keys;
    int mode;
    int insecure;
    size_t size;
    int count;
    size_t chunk;
    struct veil_link_params link;
    int with_task;  /* an increment task on each side between receive and send */
    int no_workers; /* starpu_pause(): no spinning worker competing for the 2 cores */
};

static int open_net(const struct veil_harness_party *me, struct bench *b, veil_net_t **net)
{
    struct veil_net_config cfg;
    struct veil_net_options opt;
    if (net_test_config(me, b->insecure ? NULL : &b->keys, 0.5, 30, 0, &cfg))
        return -1;
    cfg.link = b->link;
    veil_net_options_defaults(&opt);
    if (b->chunk)
        opt.chunk_bytes = b->chunk;
    if (opt.pool_bytes < 4 * opt.chunk_bytes)
        opt.pool_bytes = 4 * opt.chunk_bytes;
    if (veil_net_open(&cfg, &opt, net) != VEIL_OK) {
        fprintf(stderr, "open: %s\n", veil_last_error());
        return -1;
    }
    return 0;
}

/* Polls peer's counters until msgs_recv (sent = 0) or msgs_sent (sent = 1) reaches target or the
 * session fails: the wait for runs with paused workers, where veil_net_wait_all cannot be used. */
static void wait_counter(veil_net_t *net, int peer, int sent, uint64_t target)
{
    struct veil_net_stats st;
    do {
        usleep(50);
        veil_net_stats_get(net, peer, &st);
    } while ((sent ? st.msgs_sent : st.msgs_recv) < target && veil_net_status(net) == VEIL_OK);
}

/* Party 0 streams count messages to party 1, which acknowledges with 1 byte; time on party 0
 * from the first post to the acknowledgement (connection set-up excluded: a warm-up round trip
 * runs first). */
static int stream(const struct veil_harness_party *me, struct bench *b, veil_net_t *net)
{
    uint8_t *buf = malloc(b->size ? b->size : 1), ack = 0;
    memset(buf, 3, b->size);
    starpu_data_handle_t *h = calloc((size_t)b->count, sizeof *h), ha;
    /* one handle per message on the receiver (messages land in parallel), one on the sender */
    int nh = me->id == 0 ? 1 : b->count;
    uint8_t **rbuf = calloc((size_t)nh, sizeof *rbuf);
    for (int i = 0; i < nh; i++) {
        rbuf[i] = me->id == 0 ? buf : malloc(b->size);
        starpu_vector_data_register(&h[i], STARPU_MAIN_RAM, (uintptr_t)rbuf[i], b->size, 1);
    }
    starpu_variable_data_register(&ha, STARPU_MAIN_RAM, (uintptr_t)&ack, 1);
    /* warm-up round trip */
    if (me->id == 0) {
        veil_net_isend(net, ha, 1, 1u << 30);
        veil_net_irecv(net, ha, 1, 1u << 30);
    } else {
        veil_net_irecv(net, ha, 0, 1u << 30);
        veil_net_isend(net, ha, 0, 1u << 30);
    }
    veil_net_wait_all(net);
    if (b->no_workers)
        starpu_pause(); /* no task runs here; acquires need no worker */
    double t0 = veil_now();
    for (int i = 0; i < b->count; i++) {
        if (me->id == 0)
            veil_net_isend(net, h[0], 1, (uint64_t)i);
        else
            veil_net_irecv(net, h[i], 0, (uint64_t)i);
    }
    if (me->id == 0)
        veil_net_irecv(net, ha, 1, 1u << 31);
    else if (b->no_workers)
        wait_counter(net, 0, 0, (uint64_t)b->count + 1);
    else
        veil_net_wait_all(net);
    if (me->id != 0) /* acknowledge only once every message has landed */
        veil_net_isend(net, ha, 0, 1u << 31);
    if (b->no_workers) /* paused workers: wait on the counters, not on StarPU */
        wait_counter(net, 1 - me->id, me->id == 0 ? 0 : 1, 2);
    double t = veil_now() - t0;
    if (b->no_workers)
        starpu_resume();
    int rc = veil_net_wait_all(net);
    if (!b->no_workers)
        t = veil_now() - t0;
    if (me->id == 0)
        printf("RESULT %.6f\n", t);
    starpu_data_unregister(ha);
    for (int i = 0; i < nh; i++) {
        starpu_data_unregister(h[i]);
        if (me->id != 0)
            free(rbuf[i]);
    }
    free(rbuf);
    free(h);
    free(buf);
    return rc ? 1 : 0;
}

static void incr_cpu(void *buffers[], void *cl_arg)
{
    (void)cl_arg;
    (*(uint64_t *)STARPU_VARIABLE_GET_PTR(buffers[0]))++;
}
static struct starpu_codelet incr_cl = {
    .cpu_funcs = {incr_cpu}, .nbuffers = 1, .modes = {STARPU_RW}, .name = "bench_incr"};

/* count round trips of an 8-byte variable: every request is posted up front; the DAG orders
 * each irecv after the isend of the same handle. */
static int pingpong(const struct veil_harness_party *me, struct bench *b, veil_net_t *net)
{
    uint64_t v = 0;
    starpu_data_handle_t h;
    starpu_variable_data_register(&h, STARPU_MAIN_RAM, (uintptr_t)&v, sizeof v);
    veil_net_isend(net, h, 1 - me->id, 1u << 30); /* warm-up exchange */
    veil_net_irecv(net, h, 1 - me->id, 1u << 30);
    veil_net_wait_all(net);
    if (b->no_workers)
        starpu_pause(); /* no task runs here; acquires need no worker */
    double t0 = veil_now();
    for (int i = 0; i < b->count; i++) {
        if (b->with_task && me->id == 0)
            starpu_task_insert(&incr_cl, STARPU_RW, h, 0);
        if (me->id == 0) {
            veil_net_isend(net, h, 1, (uint64_t)i);
            veil_net_irecv(net, h, 1, (uint64_t)i);
        } else {
            veil_net_irecv(net, h, 0, (uint64_t)i);
            if (b->with_task)
                starpu_task_insert(&incr_cl, STARPU_RW, h, 0);
            veil_net_isend(net, h, 0, (uint64_t)i);
        }
    }
    /* wait_all's starpu_task_wait_for_all would wait for paused workers: wait on the counter */
    uint64_t last = 0;
    if (b->no_workers) {
        struct veil_net_stats st;
        do {
            usleep(100);
            veil_net_stats_get(net, 1 - me->id, &st);
        } while (st.msgs_recv < (uint64_t)b->count + 1 && veil_net_status(net) == VEIL_OK);
        last = st.msgs_recv;
    }
    double t_paused = veil_now() - t0;
    if (b->no_workers)
        starpu_resume();
    int rc = veil_net_wait_all(net);
    double t = b->no_workers ? t_paused : veil_now() - t0;
    (void)last;
    struct veil_net_stats st;
    veil_net_stats_get(net, 1 - me->id, &st);
    if (st.msgs_recv != (uint64_t)b->count + 1) {
        fprintf(stderr, "ping-pong: %llu messages received, expected %d\n",
                (unsigned long long)st.msgs_recv, b->count + 1);
        rc = 1;
    }
    starpu_data_unregister(h);
    if (b->with_task && me->id == 0 && v != 2 * (uint64_t)b->count) {
        fprintf(stderr, "ping-pong: value %llu, expected %llu: the DAG order is broken\n",
                (unsigned long long)v, 2 * (unsigned long long)b->count);
        rc = 1;
    }
    if (me->id == 0)
        printf("RESULT %.6f\n", t);
    return rc ? 1 : 0;
}

/* Plain ZeroMQ reference: PAIR over tcp loopback, CURVE as configured, 8-byte ping-pong. */
static int zmq_pingpong(const struct veil_harness_party *me, struct bench *b)
{
    void *ctx = zmq_ctx_new(), *s = zmq_socket(ctx, ZMQ_PAIR);
    int one = 1, zero = 0;
    zmq_setsockopt(s, ZMQ_LINGER, &zero, sizeof zero);
    if (!b->insecure) {
        if (me->id == 0) {
            zmq_setsockopt(s, ZMQ_CURVE_SERVER, &one, sizeof one);
            zmq_setsockopt(s, ZMQ_CURVE_SECRETKEY, b->keys.sec[0], 40);
        } else {
            zmq_setsockopt(s, ZMQ_CURVE_SERVERKEY, b->keys.pub[0], 40);
            zmq_setsockopt(s, ZMQ_CURVE_PUBLICKEY, b->keys.pub[1], 40);
            zmq_setsockopt(s, ZMQ_CURVE_SECRETKEY, b->keys.sec[1], 40);
        }
    }
    if ((me->id == 0 ? zmq_bind(s, me->endpoints[0]) : zmq_connect(s, me->endpoints[0])) != 0)
        return 1;
    uint64_t v = 0;
    double t0 = 0;
    for (int i = -1; i < b->count; i++) {
        if (i == 0)
            t0 = veil_now();
        if (me->id == 0) {
            zmq_send(s, &v, sizeof v, 0);
            zmq_recv(s, &v, sizeof v, 0);
        } else {
            zmq_recv(s, &v, sizeof v, 0);
            zmq_send(s, &v, sizeof v, 0);
        }
    }
    if (me->id == 0)
        printf("RESULT %.6f\n", veil_now() - t0);
    zmq_close(s);
    zmq_ctx_term(ctx);
    return 0;
}

static int party(const struct veil_harness_party *me, void *arg)
{
    struct bench *b = arg;
    if (b->mode == M_ZMQ_PINGPONG)
        return zmq_pingpong(me, b);
    veil_net_t *net = NULL;
    if (starpu_init(NULL) != 0 || open_net(me, b, &net))
        return 2;
    int rc = b->mode == M_STREAM ? stream(me, b, net) : pingpong(me, b, net);
    veil_net_close(&net);
    starpu_shutdown();
    return rc;
}

/* Runs one measurement; returns seconds (best of reps) or -1. */
static double measure(struct bench *b, int reps)
{
    double best = -1;
    for (int r = 0; r < reps; r++) {
        struct veil_harness_result res[2];
        struct veil_harness_opts o = {.nparties = 2, .timeout_s = 120, .grace_s = 5};
        int rc = veil_harness_run(&o, party, b, res);
        const char *s = res[0].output ? strstr(res[0].output, "RESULT ") : NULL;
        if (rc != VEIL_OK || !s) {
            fprintf(stderr, "run failed: %s\n%s\n%s\n", veil_last_error(),
                    res[0].output ? res[0].output : "", res[1].output ? res[1].output : "");
            veil_harness_results_free(res, 2);
            return -1;
        }
        double t = atof(s + 7);
        if (best < 0 || t < best)
            best = t;
        veil_harness_results_free(res, 2);
    }
    return best;
}

static int count_for(size_t size, size_t total, int cap)
{
    size_t c = total / (size ? size : 1);
    if (c < 2)
        c = 2;
    return c > (size_t)cap ? cap : (int)c;
}

static void throughput(struct bench *b, int reps)
{
    printf("\n## Throughput, isend/irecv between 2 processes (best of %d)\n\n", reps);
    printf("| security | message size | messages | seconds | MB/s | messages/s |\n");
    printf("|---|---:|---:|---:|---:|---:|\n");
    for (int sec = 0; sec < 2; sec++) {
        for (size_t s = 1024; s <= ((size_t)64 << 20); s *= 4) {
            *b = (struct bench){.keys = b->keys,
                                .mode = M_STREAM,
                                .insecure = sec,
                                .size = s,
                                .count = count_for(s, (size_t)256 << 20, 20000)};
            double t = measure(b, reps);
            printf("| %s | %zu KiB | %d | %.4f | %.0f | %.0f |\n", sec ? "plain" : "CURVE", s >> 10,
                   b->count, t, (double)s * b->count / t / 1e6, b->count / t);
            fflush(stdout);
        }
    }
}

static void overhead(struct bench *b, int reps)
{
    printf("\n## Per-message overhead: 8-byte ping-pong (best of %d)\n\n", reps);
    printf("| path | security | round trips | round trip (us) | one way (us) |\n");
    printf("|---|---|---:|---:|---:|\n");
    static const char *const path[4] = {"Veil isend/irecv, StarPU DAG, 1 spinning CPU worker",
                                        "Veil, + an increment task per hop (value checked)",
                                        "Veil isend/irecv, StarPU DAG, workers paused",
                                        "plain ZeroMQ PAIR"};
    for (int sec = 0; sec < 2; sec++)
        for (int k = 0; k < 4; k++) {
            *b = (struct bench){.keys = b->keys,
                                .mode = k < 3 ? M_PINGPONG : M_ZMQ_PINGPONG,
                                .insecure = sec,
                                .count = 5000,
                                .with_task = k == 1,
                                .no_workers = k == 2};
            double t = measure(b, reps);
            printf("| %s | %s | %d | %.1f | %.1f |\n", path[k], sec ? "plain" : "CURVE", b->count,
                   t / b->count * 1e6, t / b->count * 0.5e6);
            fflush(stdout);
        }
}

static void chunks(struct bench *b, int reps)
{
    printf("\n## Chunk size sweep: 16 x 64 MiB, CURVE (best of %d)\n\n", reps);
    printf("| chunk | seconds | MB/s |\n|---:|---:|---:|\n");
    for (size_t c = (size_t)256 << 10; c <= ((size_t)8 << 20); c *= 2) {
        *b = (struct bench){
            .keys = b->keys, .mode = M_STREAM, .size = (size_t)64 << 20, .count = 16, .chunk = c};
        double t = measure(b, reps);
        printf("| %zu KiB | %.4f | %.0f |\n", c >> 10, t, (double)b->size * b->count / t / 1e6);
        fflush(stdout);
    }
}

/* One link's one-way latency (half an 8-byte DAG round trip) and streaming rate (volume over the
 * stream's time less the two one-way latencies it contains: first byte, acknowledgement). */
static void link_measure(struct bench *b, int reps, struct veil_link_params lp, size_t size,
                         int count, double *lat, double *bw)
{
    *b = (struct bench){.keys = b->keys,
                        .mode = M_PINGPONG,
                        .insecure = 1,
                        .count = lp.latency_s > 0.01 ? 20 : 2000,
                        .no_workers = 1,
                        .link = lp};
    *lat = measure(b, reps) / b->count / 2;
    *b = (struct bench){.keys = b->keys,
                        .mode = M_STREAM,
                        .insecure = 1,
                        .size = size,
                        .count = count,
                        .no_workers = 1,
                        .link = lp};
    double ts = measure(b, reps);
    *bw = (double)size * count / (ts - 2 * *lat);
}

/*
 * Emulated links against their settings. The emulator adds its latency on top of what loopback
 * and the DAG integration already cost, exactly as netem adds to a real stack, so the figure to
 * hold against the setting is the measured latency less the same path without emulation (the
 * floor row). Bandwidth is compared directly; the floor row's rate says what the host can carry
 * at all (a setting above it cannot be reached, whatever the emulator does).
 */
static void links(struct bench *b, int reps)
{
    static const struct {
        const char *name;
        double lat, bw;
        size_t size;
        int count;
    } L[] = {
        {"LAN 10 Gbit/s, 0.1 ms", 1e-4, 1.25e9, (size_t)64 << 20, 8},
        {"1 Gbit/s, 0.1 ms", 1e-4, 1.25e8, (size_t)64 << 20, 4},
        {"WAN 100 Mbit/s, 35 ms", 0.035, 1.25e7, (size_t)16 << 20, 2},
    };
    printf("\n## Emulated links, plaintext, workers paused (CURVE caps loopback below 10 Gbit/s; "
           "best of %d)\n\n",
           reps);
    printf("| link | latency set (ms) | floor (ms) | measured (ms) | measured - floor (ms) | error | "
           "bandwidth set (MB/s) | floor (MB/s) | measured (MB/s) | error |\n");
    printf("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for (size_t i = 0; i < sizeof L / sizeof L[0]; i++) {
        /* the floor right before each link, so both see the same machine load */
        double floor_lat, floor_bw, lat, bw;
        link_measure(b, reps, (struct veil_link_params){0}, L[i].size, L[i].count, &floor_lat,
                     &floor_bw);
        struct veil_link_params lp = {.latency_s = L[i].lat, .bandwidth_Bps = L[i].bw};
        link_measure(b, reps, lp, L[i].size, L[i].count, &lat, &bw);
        double added = lat - floor_lat;
        printf("| %s | %.3f | %.3f | %.3f | %.3f | %+.1f %% | %.1f | %.1f | %.1f | %+.1f %% |\n",
               L[i].name, L[i].lat * 1e3, floor_lat * 1e3, lat * 1e3, added * 1e3,
               (added / L[i].lat - 1) * 100, L[i].bw / 1e6, floor_bw / 1e6, bw / 1e6,
               (bw / L[i].bw - 1) * 100);
        fflush(stdout);
    }
}

int main(int argc, char **argv)
{
    const char *what = argc > 1 ? argv[argc - 1] : "all";
    int reps = 3;
    struct bench *b = calloc(1, sizeof *b);
    if (!b || net_test_keys_make(&b->keys, 2))
        return 1;
    setenv("VEIL_LOG", "error", 0);
    if (!strcmp(what, "all") || !strcmp(what, "throughput"))
        throughput(b, reps);
    if (!strcmp(what, "all") || !strcmp(what, "overhead"))
        overhead(b, reps);
    if (!strcmp(what, "all") || !strcmp(what, "chunks"))
        chunks(b, reps);
    if (!strcmp(what, "all") || !strcmp(what, "links"))
        links(b, reps);
    free(b);
    return 0;
}

/*
 * bench_net_zmq.c — the plain-ZeroMQ baseline for Veil's mesh: loopback throughput of one
 * ZMQ_PAIR connection over tcp://127.0.0.1 between two threads of one process, for message
 * sizes from 1 KiB to 64 MiB, without and with CURVE. The sender hands each message over
 * without copying (zmq_msg_init_data on one constant buffer), the receiver takes it with
 * zmq_msg_recv and drops it, and answers one byte after the last: the time from the first send
 * to that answer gives MB/s (10^6 bytes) and messages/s. Prints a markdown table.
 *
 * usage: bench_net_zmq [-m plain|curve|both] [-s MIN_BYTES] [-S MAX_BYTES] [-b BYTES_PER_SIZE]
 *                      [-r REPEATS]
 */
#include "config.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zmq.h>

struct run {
    void *ctx;
    int curve;
    char endpoint[128];
    char server_public[41], server_secret[41], client_public[41], client_secret[41];
    size_t size;
    long count;
    int failed;
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void die_zmq(const char *what)
{
    fprintf(stderr, "bench_net_zmq: %s: %s\n", what, zmq_strerror(zmq_errno()));
    exit(1);
}

static void set_opt(void *s, int opt, const void *v, size_t n, const char *what)
{
    if (zmq_setsockopt(s, opt, v, n) != 0)
        die_zmq(what);
}

/* Receiver thread: takes count messages of size bytes, checks their sizes, answers one byte. */
static void *receiver(void *arg)
{
    struct run *r = arg;
    void *s = zmq_socket(r->ctx, ZMQ_PAIR);
    if (!s)
        die_zmq("zmq_socket (receiver)");
    int zero = 0, big = 1 << 30;
    set_opt(s, ZMQ_LINGER, &zero, sizeof zero, "ZMQ_LINGER");
    set_opt(s, ZMQ_RCVBUF, &big, sizeof big, "ZMQ_RCVBUF");
    if (r->curve) {
        int one = 1;
        set_opt(s, ZMQ_CURVE_SERVER, &one, sizeof one, "ZMQ_CURVE_SERVER");
        set_opt(s, ZMQ_CURVE_SECRETKEY, r->server_secret, 40, "ZMQ_CURVE_SECRETKEY");
    }
    if (zmq_connect(s, r->endpoint) != 0)
        die_zmq("zmq_connect");
    char sync;
    if (zmq_recv(s, &sync, 1, 0) != 1 || zmq_send(s, "r", 1, 0) != 1)
        die_zmq("sync");
    zmq_msg_t m;
    zmq_msg_init(&m);
    for (long i = 0; i < r->count; i++) {
        if (zmq_msg_recv(&m, s, 0) < 0)
            die_zmq("zmq_msg_recv");
        if (zmq_msg_size(&m) != r->size)
            r->failed = 1;
    }
    zmq_msg_close(&m);
    if (zmq_send(s, "k", 1, 0) != 1)
        die_zmq("zmq_send (ack)");
    zmq_close(s);
    return NULL;
}

static void no_free(void *data, void *hint)
{
    (void)data;
    (void)hint;
}

/* One measurement: returns seconds for count messages of size bytes. */
static double measure(struct run *r, const uint8_t *buf)
{
    void *s = zmq_socket(r->ctx, ZMQ_PAIR);
    if (!s)
        die_zmq("zmq_socket (sender)");
    int zero = 0, big = 1 << 30;
    set_opt(s, ZMQ_LINGER, &zero, sizeof zero, "ZMQ_LINGER");
    set_opt(s, ZMQ_SNDBUF, &big, sizeof big, "ZMQ_SNDBUF");
    if (r->curve) {
        set_opt(s, ZMQ_CURVE_SERVERKEY, r->server_public, 40, "ZMQ_CURVE_SERVERKEY");
        set_opt(s, ZMQ_CURVE_PUBLICKEY, r->client_public, 40, "ZMQ_CURVE_PUBLICKEY");
        set_opt(s, ZMQ_CURVE_SECRETKEY, r->client_secret, 40, "ZMQ_CURVE_SECRETKEY");
    }
    /* The sender binds an ephemeral port; the receiver (the CURVE server) connects. */
    if (zmq_bind(s, "tcp://127.0.0.1:*") != 0)
        die_zmq("zmq_bind");
    size_t len = sizeof r->endpoint;
    if (zmq_getsockopt(s, ZMQ_LAST_ENDPOINT, r->endpoint, &len) != 0)
        die_zmq("ZMQ_LAST_ENDPOINT");
    pthread_t t;
    if (pthread_create(&t, NULL, receiver, r) != 0) {
        fprintf(stderr, "bench_net_zmq: pthread_create failed\n");
        exit(1);
    }
    /* A round trip first so that connection set-up and the CURVE handshake are not timed. */
    char ack;
    if (zmq_send(s, "s", 1, 0) != 1 || zmq_recv(s, &ack, 1, 0) != 1)
        die_zmq("sync");
    double t0 = now_s();
    for (long i = 0; i < r->count; i++) {
        zmq_msg_t m;
        if (zmq_msg_init_data(&m, (void *)buf, r->size, no_free, NULL) != 0)
            die_zmq("zmq_msg_init_data");
        if (zmq_msg_send(&m, s, 0) < 0)
            die_zmq("zmq_msg_send");
    }
    if (zmq_recv(s, &ack, 1, 0) != 1)
        die_zmq("zmq_recv (ack)");
    double t1 = now_s();
    pthread_join(t, NULL);
    zmq_close(s);
    return t1 - t0;
}

static size_t parse_size(const char *s)
{
    char *end;
    double v = strtod(s, &end);
    if (*end == 'K' || *end == 'k')
        v *= 1024;
    else if (*end == 'M')
        v *= 1024 * 1024;
    else if (*end == 'G')
        v *= 1024.0 * 1024 * 1024;
    else if (*end != '\0')
        v = -1;
    if (!(v >= 1)) {
        fprintf(stderr, "bench_net_zmq: bad size '%s' (e.g. 1024, 64K, 64M)\n", s);
        exit(2);
    }
    return (size_t)v;
}

static void size_label(size_t n, char *out, size_t cap)
{
    if (n >= (1u << 20) && n % (1u << 20) == 0)
        snprintf(out, cap, "%zu MiB", n >> 20);
    else if (n >= 1024 && n % 1024 == 0)
        snprintf(out, cap, "%zu KiB", n >> 10);
    else
        snprintf(out, cap, "%zu B", n);
}

int main(int argc, char **argv)
{
    const char *mode = "both";
    size_t min = 1024, max = 64u << 20, budget = 256u << 20;
    int repeats = 3;
    for (int i = 1; i < argc; i++) {
        if (i + 1 < argc && strcmp(argv[i], "-m") == 0)
            mode = argv[++i];
        else if (i + 1 < argc && strcmp(argv[i], "-s") == 0)
            min = parse_size(argv[++i]);
        else if (i + 1 < argc && strcmp(argv[i], "-S") == 0)
            max = parse_size(argv[++i]);
        else if (i + 1 < argc && strcmp(argv[i], "-b") == 0)
            budget = parse_size(argv[++i]);
        else if (i + 1 < argc && strcmp(argv[i], "-r") == 0)
            repeats = atoi(argv[++i]);
        else {
            fprintf(stderr,
                    "usage: %s [-m plain|curve|both] [-s MIN] [-S MAX] [-b BYTES_PER_SIZE] "
                    "[-r REPEATS]\n",
                    argv[0]);
            return 2;
        }
    }
    if (repeats < 1 || min > max ||
        (strcmp(mode, "plain") && strcmp(mode, "curve") && strcmp(mode, "both"))) {
        fprintf(stderr, "bench_net_zmq: bad arguments\n");
        return 2;
    }
    uint8_t *buf = malloc(max);
    if (!buf) {
        fprintf(stderr, "bench_net_zmq: cannot allocate %zu bytes\n", max);
        return 1;
    }
    for (size_t i = 0; i < max; i++)
        buf[i] = (uint8_t)(i * 131 + 7);

    struct run r;
    memset(&r, 0, sizeof r);
    r.ctx = zmq_ctx_new();
    if (!r.ctx)
        die_zmq("zmq_ctx_new");
    if (zmq_curve_keypair(r.server_public, r.server_secret) != 0 ||
        zmq_curve_keypair(r.client_public, r.client_secret) != 0)
        die_zmq("zmq_curve_keypair");
    int major, minor, patch;
    zmq_version(&major, &minor, &patch);
    printf("ZeroMQ %d.%d.%d, PAIR over tcp://127.0.0.1, 1 I/O thread, zero-copy send, "
           "best of %d runs, about %zu MiB per size\n\n",
           major, minor, patch, repeats, budget >> 20);
    printf("| security | message size | messages | seconds | MB/s | messages/s |\n");
    printf("|---|---:|---:|---:|---:|---:|\n");
    for (int c = 0; c < 2; c++) {
        if ((c == 0 && strcmp(mode, "curve") == 0) || (c == 1 && strcmp(mode, "plain") == 0))
            continue;
        r.curve = c;
        for (size_t size = min; size <= max; size *= 4) {
            long count = (long)(budget / size);
            if (count < 4)
                count = 4;
            if (count > 200000)
                count = 200000;
            r.size = size;
            r.count = count;
            double best = 1e30;
            for (int k = 0; k < repeats; k++) {
                double t = measure(&r, buf);
                if (t < best)
                    best = t;
            }
            if (r.failed) {
                fprintf(stderr, "bench_net_zmq: a message arrived with the wrong size\n");
                return 1;
            }
            char label[32];
            size_label(size, label, sizeof label);
            double bytes = (double)size * (double)count;
            printf("| %s | %s | %ld | %.4f | %.0f | %.0f |\n", c ? "CURVE" : "plain", label, count,
                   best, bytes / best / 1e6, (double)count / best);
            fflush(stdout);
            if (size > max / 4)
                break;
        }
    }
    zmq_ctx_term(r.ctx);
    free(buf);
    return 0;
}

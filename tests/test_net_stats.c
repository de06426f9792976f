/* Tests the traffic counters with 2 real processes (party 0 opens from a configuration file and
 * a key file through the public veil_net_open_file, party 1 from its harness identity): party 0
 * sends 0 B, 1 B, 1000 B and 3 MiB + 5 B (3 + ceil(size / chunk) data frames), party 1
 * sends 17 B back, party 0 marks 2 rounds. After veil_net_wait_all, on both sides: messages and
 * payload bytes equal exactly what was sent; wire bytes = 64 per frame + payloads + 32 per data
 * frame (the seal of the data channel: CURVE is on), where the only non-data payload is the
 * hello; data frames are counted; rounds equal the marks. */
#include "config.h"
#include "net_test_util.h"

#include <starpu.h>
#include <unistd.h>

static const size_t sizes[4] = {0, 1, 1000, (3u << 20) + 5};
#define BACK 17

static int write_config(const struct veil_harness_party *me, const struct net_test_keys *k,
                        char *path, size_t cap)
{
    char dir[] = "/tmp/veil-net-stats-XXXXXX";
    if (!mkdtemp(dir))
        return -1;
    char key[128];
    snprintf(key, sizeof key, "%s/p0.key", dir);
    if (veil_curve_write_key_file(key, k->pub[0], k->sec[0]) != VEIL_OK)
        return -1;
    snprintf(path, cap, "%s/veil.conf", dir);
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    fprintf(f, "# test_net_stats\nsession %s\nparties 2\n", me->session);
    for (int p = 0; p < 2; p++)
        fprintf(f, "party %d %s %s\n", p, me->endpoints[p], k->pub[p]);
    fprintf(f, "self 0\nsecret-key-file %s\nheartbeat 0.5\ntimeout 10\n", key);
    return fclose(f) == 0 ? 0 : -1;
}

static int expect(const char *what, uint64_t got, uint64_t want)
{
    if (got == want)
        return 0;
    fprintf(stderr, "FAIL: %s = %llu, expected %llu\n", what, (unsigned long long)got,
            (unsigned long long)want);
    return 1;
}

static int party(const struct veil_harness_party *me, void *arg)
{
    struct net_test_keys *k = arg;
    veil_net_t *net = NULL;
    uint8_t digest[32];
    memset(digest, 6, sizeof digest);
    if (starpu_init(NULL) != 0)
        return 3;
    int rc;
    char path[256] = "";
    if (me->id == 0) {
        if (write_config(me, k, path, sizeof path))
            return 2;
        /* A deployment binds its endpoint itself: give back the socket the harness reserved. */
        close(me->listen_fd);
        rc = veil_net_open_file(path, digest, &net);
    } else {
        struct veil_net_config cfg;
        if (net_test_config(me, k, 0.5, 10, 6, &cfg))
            return 2;
        rc = veil_net_open(&cfg, NULL, &net);
    }
    if (rc != VEIL_OK) {
        fprintf(stderr, "open failed: %s\n", veil_last_error());
        return 4;
    }
    uint8_t *buf[5];
    starpu_data_handle_t h[5];
    uint64_t payload = 0;
    for (int i = 0; i < 5; i++) {
        size_t n = i < 4 ? sizes[i] : BACK;
        payload += i < 4 ? n : 0;
        buf[i] = calloc(1, n + 1);
        starpu_vector_data_register(&h[i], STARPU_MAIN_RAM, (uintptr_t)buf[i], (uint32_t)n, 1);
    }
    for (int i = 0; i < 5; i++) {
        int to_peer = (i < 4) == (me->id == 0);
        rc = to_peer ? veil_net_isend(net, h[i], 1 - me->id, (uint64_t)i)
                     : veil_net_irecv(net, h[i], 1 - me->id, (uint64_t)i);
        if (rc)
            return 5;
    }
    if (me->id == 0) {
        veil_net_stats_mark_round(net);
        veil_net_stats_mark_round(net);
    }
    int bad = 0;
    if (veil_net_wait_all(net) != VEIL_OK) {
        fprintf(stderr, "wait_all: %s\n", veil_last_error());
        bad = 1;
    }
    struct veil_net_stats s;
    veil_net_stats_get(net, 1 - me->id, &s);
    uint64_t sent_msgs = me->id == 0 ? 4 : 1, recv_msgs = me->id == 0 ? 1 : 4;
    uint64_t sent_b = me->id == 0 ? payload : BACK, recv_b = me->id == 0 ? BACK : payload;
    struct veil_net_options o;
    veil_net_options_defaults(&o);
    uint64_t frames0 = 3 + (sizes[3] + o.chunk_bytes - 1) / o.chunk_bytes;
    uint64_t sent_data_frames = me->id == 0 ? frames0 : 1,
             recv_data_frames = me->id == 0 ? 1 : frames0;
    bad |= expect("msgs_sent", s.msgs_sent, sent_msgs);
    bad |= expect("msgs_recv", s.msgs_recv, recv_msgs);
    bad |= expect("bytes_sent", s.bytes_sent, sent_b);
    bad |= expect("bytes_recv", s.bytes_recv, recv_b);
    bad |= expect("wire_bytes_sent - 64 * frames_sent", s.wire_bytes_sent - 64 * s.frames_sent,
                  sent_b + VEIL_HELLO_BYTES + VEIL_SEAL_OVERHEAD * sent_data_frames);
    bad |= expect("wire_bytes_recv - 64 * frames_recv", s.wire_bytes_recv - 64 * s.frames_recv,
                  recv_b + VEIL_HELLO_BYTES + VEIL_SEAL_OVERHEAD * recv_data_frames);
    bad |= expect("frames_sent >= data frames + hello", s.frames_sent >= sent_data_frames + 1, 1);
    bad |= expect("frames_recv >= data frames + hello", s.frames_recv >= recv_data_frames + 1, 1);
    bad |= expect("rounds", s.rounds, me->id == 0 ? 2 : 0);
    if (veil_net_stats_get(net, me->id, &s) != VEIL_ERR_INVAL) {
        fprintf(stderr, "FAIL: stats about oneself accepted\n");
        bad = 1;
    }
    for (int i = 0; i < 5; i++) {
        starpu_data_unregister(h[i]);
        free(buf[i]);
    }
    veil_net_close(&net);
    starpu_shutdown();
    if (path[0]) { /* remove the files and the directory */
        char *slash = strrchr(path, '/');
        char key[300];
        *slash = 0;
        snprintf(key, sizeof key, "%s/veil.conf", path);
        unlink(key);
        snprintf(key, sizeof key, "%s/p0.key", path);
        unlink(key);
        snprintf(key, sizeof key, "%s/p0.key.pub", path);
        unlink(key);
        rmdir(path);
    }
    return bad;
}

int main(void)
{
    return net_test_run(2, party, "traffic counters");
}

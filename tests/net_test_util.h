/* net_test_util.h — helpers shared by the net tests: CURVE keys generated in the parent before
 * the harness forks, opening a party's session from its harness identity, StarPU start-up, and
 * seed-derived byte patterns a receiver can verify without the sender's data. */
#ifndef VEIL_NET_TEST_UTIL_H
#define VEIL_NET_TEST_UTIL_H

#include "base/base_internal.h"
#include "base/harness.h"
#include "net/net_internal.h"

#include <starpu.h>
#include <stdio.h>
#include <stdlib.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

struct net_test_keys {
    char pub[VEIL_NET_MAX_PROCS][VEIL_Z85_KEY_CHARS + 1];
    char sec[VEIL_NET_MAX_PROCS][VEIL_Z85_KEY_CHARS + 1];
};

static inline int net_test_keys_make(struct net_test_keys *k, int nprocs)
{
    for (int i = 0; i < nprocs; i++)
        if (veil_curve_keypair(k->pub[i], k->sec[i]) != VEIL_OK)
            return -1;
    return 0;
}

static inline int net_test_verbose(void)
{
    const char *v = getenv("VEIL_TEST_VERBOSE");
    return v && strcmp(v, "1") == 0;
}

/* A TCP port to try for a fixed data port (VEIL_NET_DATA_PORT): a random one below the kernel's
 * ephemeral range (ip_local_port_range), so that no connection made meanwhile (the parties' own
 * included) gets it as its source port between the test's check that it is free and the party's
 * bind; the caller checks it and tries again. */
static inline int net_test_port_candidate(void)
{
    int lo = 32768, hi = 0;
    FILE *f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "r");
    if (f) {
        if (fscanf(f, "%d %d", &lo, &hi) != 2 || lo <= 10000 + 1000)
            lo = 32768;
        fclose(f);
    }
    uint8_t r[VEIL_SEED_BYTES];
    if (veil_seed_random(r) != VEIL_OK)
        return 10000 + (int)(getpid() % 1000);
    const uint32_t v = (uint32_t)r[0] | (uint32_t)r[1] << 8 | (uint32_t)r[2] << 16;
    return 10000 + (int)(v % (uint32_t)(lo - 10000));
}

/* Whether TCP port is free on 127.0.0.1 now (a bind that succeeds, then released). */
static inline int net_test_port_free(int port)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    const int ok = fd >= 0 && bind(fd, (struct sockaddr *)&sa, sizeof sa) == 0;
    if (fd >= 0)
        close(fd);
    return ok;
}

/* Fills cfg for me with keys (NULL: insecure plaintext), the given timing and digest byte. */
static inline int net_test_config(const struct veil_harness_party *me,
                                  const struct net_test_keys *k, double heartbeat_s,
                                  double timeout_s, uint8_t digest, struct veil_net_config *cfg)
{
    int rc =
        veil_net_config_from_harness(me, k ? (const char(*)[VEIL_Z85_KEY_CHARS + 1]) k->pub : NULL,
                                     k ? k->sec[me->id] : NULL, cfg);
    if (rc)
        return rc;
    cfg->insecure_plaintext = k == NULL;
    cfg->heartbeat_s = heartbeat_s;
    cfg->timeout_s = timeout_s;
    memset(cfg->plan_digest, digest, sizeof cfg->plan_digest);
    return VEIL_OK;
}

/* Starts StarPU and opens the session of cfg with opts (NULL: defaults), printing why either
 * failed: 0, 3 (StarPU) or 4 (the open; StarPU shut down again), a party's exit code. */
static inline int net_test_start(const struct veil_net_config *cfg,
                                 const struct veil_net_options *opts, veil_net_t **net)
{
    if (starpu_init(NULL) != 0) {
        fprintf(stderr, "starpu_init failed\n");
        return 3;
    }
    if (veil_net_open(cfg, opts, net) != VEIL_OK) {
        fprintf(stderr, "open failed: %s\n", veil_last_error());
        starpu_shutdown();
        return 4;
    }
    return 0;
}

/* A party's configuration (heartbeat 0.25 s, timeout 10 s, the given digest byte) and its net
 * options read from the environment after setting var to value (left alone when value is NULL):
 * 0, or 2 when the configuration fails (a party's exit code). */
static inline int net_test_config_env(const struct veil_harness_party *me,
                                      const struct net_test_keys *k, uint8_t digest,
                                      const char *var, const char *value,
                                      struct veil_net_config *cfg, struct veil_net_options *opt)
{
    if (net_test_config(me, k, 0.25, 10, digest, cfg))
        return 2;
    if (value)
        setenv(var, value, 1);
    veil_net_options_defaults(opt);
    return 0;
}

/* Starts StarPU and checks that opening the session of cfg with opts fails with VEIL_ERR_INVAL
 * naming the environment variable var (set to value): 0 when it does, 1 (printed) when not, 3
 * when StarPU does not start; a party's exit code. */
static inline int net_test_open_refused(const struct veil_net_config *cfg,
                                        const struct veil_net_options *opts, const char *var,
                                        const char *value)
{
    if (starpu_init(NULL) != 0)
        return 3;
    veil_net_t *net = NULL;
    const int rc = veil_net_open(cfg, opts, &net);
    if (rc == VEIL_OK)
        veil_net_close(&net);
    starpu_shutdown();
    if (rc != VEIL_ERR_INVAL || !strstr(veil_last_error(), var)) {
        fprintf(stderr, "FAIL: %s=%s: open gave %d '%s'\n", var, value, rc, veil_last_error());
        return 1;
    }
    return 0;
}

/* xorshift64* stream: test data only (the library's randomness is veil_prg). */
static inline void net_test_fill(uint8_t *p, size_t n, uint64_t seed)
{
    uint64_t x = seed * 0x9e3779b97f4a7c15u + 0x632be59bd9b4e019u;
    for (size_t i = 0; i < n; i++) {
        if ((i & 7) == 0) {
            x ^= x >> 12;
            x ^= x << 25;
            x ^= x >> 27;
        }
        p[i] = (uint8_t)((x * 0x2545f4914f6cdd1du) >> (8 * (i & 7)));
    }
}

/* Runs fn as n party processes (no dealer) with fresh CURVE keys, handed to fn as its argument
 * (60 s timeout); prints each process's output on failure, prefixed by what. 0 when all exited 0.
 */
static inline int net_test_run(int n, int (*fn)(const struct veil_harness_party *, void *),
                               const char *what)
{
    struct net_test_keys k;
    if (n < 2 || n > VEIL_NET_MAX_PROCS || net_test_keys_make(&k, n))
        return 1;
    struct veil_harness_result res[VEIL_NET_MAX_PROCS];
    struct veil_harness_opts o = {
        .nparties = n, .timeout_s = 60, .grace_s = 5, .forward_output = net_test_verbose()};
    int rc = veil_harness_run(&o, fn, &k, res);
    if (rc != VEIL_OK) {
        fprintf(stderr, "FAIL: %s: %s\n", what, veil_last_error());
        for (int p = 0; p < n; p++)
            fprintf(stderr, "--- party %d (exit %d):\n%s\n", p, res[p].exit_code,
                    res[p].output ? res[p].output : "");
    }
    veil_harness_results_free(res, n);
    return rc == VEIL_OK ? 0 : 1;
}

/* Index of the first byte that differs from the pattern, or n. */
static inline size_t net_test_check(const uint8_t *p, size_t n, uint64_t seed)
{
    uint64_t x = seed * 0x9e3779b97f4a7c15u + 0x632be59bd9b4e019u;
    for (size_t i = 0; i < n; i++) {
        if ((i & 7) == 0) {
            x ^= x >> 12;
            x ^= x << 25;
            x ^= x >> 27;
        }
        if (p[i] != (uint8_t)((x * 0x2545f4914f6cdd1du) >> (8 * (i & 7))))
            return i;
    }
    return n;
}

#endif

/*
 * secure_sum — the smallest end-to-end Veil computation. N parties (default 2) each hold a
 * private vector of fixed-point values (here: each hospital's monthly costs per department);
 * together they compute the element-wise total without anyone seeing another's figures:
 *
 *   1. input sharing: each owner splits its vector into N additive shares over Z_2^64 with the
 *      CSPRNG and sends one share to every other party over the CurveZMQ-encrypted mesh;
 *   2. local computation: every party adds the shares it holds (a StarPU task, no traffic);
 *   3. reveal: the parties exchange their shares of the total and add them up.
 *
 * The parties are real processes on this machine (forked by Veil's harness, each with its own
 * StarPU and its own network I/O thread); messages are asynchronous dependencies of the StarPU
 * DAG. The launcher process knows the synthetic inputs and checks the revealed total against
 * plaintext arithmetic. The last line is machine-readable key=value pairs.
 *
 * Usage: secure_sum [-n PARTIES] [-k ELEMENTS] [-v]
 */
#include "config.h"
#include "base/base_internal.h"
#include "base/harness.h"
#include "codelets/codelets_internal.h"
#include "net/net_internal.h"
#include "veil.h"

#include <inttypes.h>
#include <math.h>
#include <starpu.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FRAC_BITS VEIL_FIXED_FRAC_BITS_DEFAULT
#define MAX_ELEMS 4096
#define TAG_INPUT 1000 /* + owner */
#define TAG_REVEAL 2000

struct example {
    int nparties;
    size_t elems;
    char public_keys[VEIL_NET_MAX_PROCS][VEIL_Z85_KEY_CHARS + 1];
    char secret_keys[VEIL_NET_MAX_PROCS][VEIL_Z85_KEY_CHARS + 1];
};

/* Party p's private input: synthetic monthly costs, in thousands, with cents. */
static double private_value(int party, size_t i)
{
    return 100.0 + 37.25 * party + 0.5 * (double)((i * 7919 + (size_t)party * 104729) % 1000);
}

/* Registers a vector of n ring words; the buffer is owned by the caller. */
static starpu_data_handle_t vec(uint64_t *buf, size_t n)
{
    starpu_data_handle_t h;
    starpu_vector_data_register(&h, STARPU_MAIN_RAM, (uintptr_t)buf, (uint32_t)n, sizeof *buf);
    return h;
}

static int party_run(const struct veil_harness_party *me, const struct example *ex, veil_net_t *net)
{
    const int n = ex->nparties, self = me->id;
    const size_t k = ex->elems;
    /* shares[o]: this party's share of owner o's input; total: its share of the sum; peer[q]:
     * party q's share of the sum during the reveal. */
    uint64_t *shares[VEIL_NET_MAX_PARTIES], *peer[VEIL_NET_MAX_PARTIES], *total, *result;
    uint64_t *outgoing[VEIL_NET_MAX_PARTIES] = {0}; /* my random shares for the others */
    starpu_data_handle_t hs[VEIL_NET_MAX_PARTIES], hp[VEIL_NET_MAX_PARTIES], htotal, hresult;
    starpu_data_handle_t hout[VEIL_NET_MAX_PARTIES];
    uint8_t seed[VEIL_SEED_BYTES];
    int rc = VEIL_OK;
    for (int o = 0; o < n; o++) {
        shares[o] = calloc(k, 8);
        peer[o] = calloc(k, 8);
    }
    total = calloc(k, 8);
    result = calloc(k, 8);

    /* 1. Input sharing: my vector becomes n shares; the peers' shares arrive from them. */
    uint64_t *mine = shares[self];
    double *x = malloc(k * sizeof *x);
    for (size_t i = 0; i < k; i++)
        x[i] = private_value(self, i);
    rc = veil_fixed_encode_array(x, k, FRAC_BITS, mine);
    free(x);
    if (rc != VEIL_OK)
        goto out;
    veil_net_stats_mark_round(net);
    for (int q = 0; q < n; q++) {
        if (q == self)
            continue;
        outgoing[q] = malloc(k * 8);
        veil_prg_t *prg = NULL;
        if ((rc = veil_seed_random(seed)) != VEIL_OK || !(prg = veil_prg_new(seed)) ||
            (rc = veil_prg_fill(prg, outgoing[q], k)) != VEIL_OK) {
            veil_prg_destroy(&prg);
            rc = rc ? rc : VEIL_ERR_CRYPTO;
            goto out;
        }
        veil_prg_destroy(&prg);
        for (size_t i = 0; i < k; i++)
            mine[i] -= outgoing[q][i];
        hout[q] = vec(outgoing[q], k);
        if ((rc = veil_net_isend(net, hout[q], q, TAG_INPUT + (uint64_t)self)) != VEIL_OK)
            goto out;
    }
    veil_wipe(seed, sizeof seed);
    for (int o = 0; o < n; o++) {
        hs[o] = vec(shares[o], k);
        if (o != self && (rc = veil_net_irecv(net, hs[o], o, TAG_INPUT + (uint64_t)o)) != VEIL_OK)
            goto out;
    }

    /* 2. Local computation: total = sum of the shares held; the task waits for the receives. */
    htotal = vec(total, k);
    if ((rc = veil_task_sum(hs, n, htotal, 0)) != VEIL_OK)
        goto out;

    /* 3. Reveal to all: send my share of the total, receive theirs, add. */
    veil_net_stats_mark_round(net);
    for (int q = 0; q < n; q++) {
        if (q == self) {
            hp[q] = htotal;
            continue;
        }
        if ((rc = veil_net_isend(net, htotal, q, TAG_REVEAL)) != VEIL_OK)
            goto out;
        hp[q] = vec(peer[q], k);
        if ((rc = veil_net_irecv(net, hp[q], q, TAG_REVEAL)) != VEIL_OK)
            goto out;
    }
    hresult = vec(result, k);
    if ((rc = veil_task_sum(hp, n, hresult, 0)) != VEIL_OK)
        goto out;
    if ((rc = veil_net_wait_all(net)) != VEIL_OK)
        goto out;

    for (int q = 0; q < n; q++) {
        if (q != self) {
            starpu_data_unregister(hout[q]);
            starpu_data_unregister(hp[q]);
        }
        starpu_data_unregister(hs[q]);
    }
    starpu_data_unregister(htotal);
    starpu_data_unregister(hresult);

    /* Every party now knows the total, and nothing else. */
    uint64_t bytes = 0, rounds = 0;
    for (int q = 0; q < veil_net_nprocs(net); q++) {
        struct veil_net_stats st;
        if (q != self && veil_net_stats_get(net, q, &st) == VEIL_OK) {
            bytes += st.bytes_sent;
            rounds = st.rounds;
        }
    }
    printf("party %d: revealed total of %zu elements: ", self, k);
    for (size_t i = 0; i < k && i < 4; i++)
        printf("%.2f ", veil_fixed_decode(result[i], FRAC_BITS));
    printf("%s\n", k > 4 ? "..." : "");
    printf("party %d: sent %" PRIu64 " payload bytes in %" PRIu64 " rounds\n", self, bytes, rounds);
    /* For the launcher's check: the whole revealed vector, one line. */
    printf("reveal:");
    for (size_t i = 0; i < k; i++)
        printf(" %016" PRIx64, result[i]);
    printf("\nstats: bytes_sent=%" PRIu64 " rounds=%" PRIu64 "\n", bytes, rounds);
out:
    for (int o = 0; o < n; o++) {
        free(shares[o]);
        free(peer[o]);
        free(outgoing[o]);
    }
    free(total);
    free(result);
    return rc;
}

static int party_main(const struct veil_harness_party *me, void *arg)
{
    const struct example *ex = arg;
    if (starpu_init(NULL) != 0) {
        fprintf(stderr, "party %d: starpu_init failed\n", me->id);
        return 1;
    }
    struct veil_net_config cfg;
    veil_net_t *net = NULL;
    int rc = veil_net_config_from_harness(me, (const char(*)[VEIL_Z85_KEY_CHARS + 1])ex->public_keys,
                                          ex->secret_keys[me->id], &cfg);
    if (rc == VEIL_OK)
        rc = veil_net_open(&cfg, NULL, &net);
    if (rc == VEIL_OK)
        rc = party_run(me, ex, net);
    if (rc != VEIL_OK)
        fprintf(stderr, "party %d: %s: %s\n", me->id, veil_strerror(rc), veil_last_error());
    int crc = veil_net_close(&net);
    if (crc != VEIL_OK && rc == VEIL_OK) {
        fprintf(stderr, "party %d: the session failed: %s\n", me->id, veil_last_error());
        rc = crc;
    }
    starpu_shutdown();
    return rc == VEIL_OK ? 0 : 1;
}

static int usage(const char *argv0, int code)
{
    fprintf(code ? stderr : stdout,
            "usage: %s [-n PARTIES] [-k ELEMENTS] [-v]\n"
            "  -n  number of parties, 2..%d (default 2)\n"
            "  -k  vector length, 1..%d (default 8)\n"
            "  -v  show every party's output as it runs\n",
            argv0, VEIL_NET_MAX_PARTIES, MAX_ELEMS);
    return code;
}

static int parse_int(const char *s, long lo, long hi, long *out)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (*s == '\0' || *end != '\0' || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

int main(int argc, char **argv)
{
    static struct example ex;
    long n = 2, k = 8;
    int verbose = 0, opt;
    while ((opt = getopt(argc, argv, "n:k:vh")) != -1) {
        if (opt == 'n' && parse_int(optarg, 2, VEIL_NET_MAX_PARTIES, &n) != 0) {
            fprintf(stderr, "secure_sum: -n %s: expected 2..%d parties\n", optarg,
                    VEIL_NET_MAX_PARTIES);
            return 2;
        } else if (opt == 'k' && parse_int(optarg, 1, MAX_ELEMS, &k) != 0) {
            fprintf(stderr, "secure_sum: -k %s: expected 1..%d elements\n", optarg, MAX_ELEMS);
            return 2;
        } else if (opt == 'v') {
            verbose = 1;
        } else if (opt == 'h') {
            return usage(argv[0], 0);
        } else if (opt != 'n' && opt != 'k') {
            return usage(argv[0], 2);
        }
    }
    if (optind != argc)
        return usage(argv[0], 2);
    ex.nparties = (int)n;
    ex.elems = (size_t)k;
    /* Fresh CURVE keys for this run: each party authenticates the others by public key. */
    for (int p = 0; p < ex.nparties; p++)
        if (veil_curve_keypair(ex.public_keys[p], ex.secret_keys[p]) != VEIL_OK) {
            fprintf(stderr, "secure_sum: %s\n", veil_last_error());
            return 1;
        }

    printf("secure_sum: %d parties, %zu private values each, CurveZMQ-encrypted loopback mesh\n",
           ex.nparties, ex.elems);
    struct veil_harness_result res[VEIL_HARNESS_MAX_PROCS];
    struct veil_harness_opts o = {.nparties = ex.nparties,
                                  .timeout_s = 120,
                                  .grace_s = 15,
                                  .forward_output = verbose};
    int rc = veil_harness_run(&o, party_main, &ex, res);
    if (rc != VEIL_OK) {
        fprintf(stderr, "secure_sum: %s\n", veil_last_error());
        for (int p = 0; p < ex.nparties; p++)
            fprintf(stderr, "---- party %d output:\n%s", p, res[p].output ? res[p].output : "");
        veil_harness_results_free(res, ex.nparties);
        return 1;
    }

    /* The check only the launcher can do: it made up every party's input. */
    int agree = 1;
    double max_err = 0;
    for (int p = 0; p < ex.nparties; p++) {
        const char *line = strstr(res[p].output, "reveal:");
        if (!line) {
            agree = 0;
            break;
        }
        line += strlen("reveal:");
        for (size_t i = 0; i < ex.elems; i++) {
            char *end;
            uint64_t w = strtoull(line, &end, 16);
            double want = 0;
            for (int q = 0; q < ex.nparties; q++)
                want += private_value(q, i);
            double got = veil_fixed_decode(w, FRAC_BITS);
            max_err = fmax(max_err, fabs(got - want));
            if (end == line || fabs(got - want) > 1e-9 * fmax(1.0, fabs(want)))
                agree = 0;
            line = end;
        }
    }
    /* Party 0's human-readable lines. */
    const char *p0 = res[0].output;
    for (const char *l = strstr(p0, "party 0:"); l; l = strstr(l + 1, "party 0:"))
        printf("%.*s\n", (int)strcspn(l, "\n"), l);
    const char *stats = strstr(p0, "stats: ");
    uint64_t bytes = 0, rounds = 0;
    if (stats)
        sscanf(stats, "stats: bytes_sent=%" SCNu64 " rounds=%" SCNu64, &bytes, &rounds);
    printf("plaintext check: %s (max error %.3g)\n", agree ? "secure total is exact" : "MISMATCH",
           max_err);
    printf("parties=%d elements=%zu match=%d bytes_sent_p0=%" PRIu64 " rounds=%" PRIu64 "\n",
           ex.nparties, ex.elems, agree, bytes, rounds);
    veil_harness_results_free(res, ex.nparties);
    return agree ? 0 : 1;
}

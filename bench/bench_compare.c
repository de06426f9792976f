/*
 * bench_compare.c — throughput of secure comparison (LTZ) and ReLU: elements per second and
 * bytes sent per element per party, 2 parties + a dealer process on loopback (CURVE), for
 * n = 10^3 .. 10^max and a sweep of tile sizes. Results and commands: bench/README-compare.md.
 *
 * Usage: bench_compare [-s MINEXP (3)] [-e MAXEXP (6)] [-r REPEATS (3)] [-t TILE,...]
 *                      [-n N (parties, 2)]
 * Each measurement: shares a fresh input, waits, then times one call (submission to quiescence,
 * dealer material generation and transfer included) at party 0; best of REPEATS.
 */
#include "config.h"
#include "base/base_internal.h"
#include "tasks/compare.h"
#include "../tests/test_mpc_util.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_TILES 8

struct cfg {
    int minexp, maxexp, repeats, nparties, ntiles;
    size_t tiles[MAX_TILES];
    size_t n;
    size_t tile;
    double *res; /* shared: best seconds ltz, relu; bytes ltz, relu (party 0) */
};

static double measure(veil_mpc_t *m, struct cfg *c, int relu, uint64_t *bytes)
{
    const size_t dims[1] = {c->n};
    double best = 1e30;
    for (int r = 0; r < c->repeats; r++) {
        uint64_t *v = NULL;
        if (veil_mpc_self(m) == 0) {
            v = malloc(c->n * 8);
            for (size_t i = 0; i < c->n; i++)
                v[i] = (uint64_t)(i * 0x9e3779b97f4a7c15u);
        }
        struct veil_sec x = {0}, y = {0}, mask = {0};
        int rc = veil_mpc_share_input(m, 0, v, 1, dims, c->tile, &x);
        if (rc == VEIL_OK)
            rc = veil_mpc_wait(m);
        free(v);
        struct veil_test_mpc_counters c0, c1;
        veil_test_mpc_counters(m, &c0);
        const double t0 = veil_now();
        if (rc == VEIL_OK)
            rc = relu ? veil_mpc_relu(m, &x, &y, &mask) : veil_mpc_ltz(m, &x, &y);
        if (rc == VEIL_OK)
            rc = veil_mpc_wait(m);
        const double dt = veil_now() - t0;
        veil_test_mpc_counters(m, &c1);
        if (rc != VEIL_OK) {
            fprintf(stderr, "process %d: %s\n", veil_mpc_self(m), veil_last_error());
            return -1;
        }
        *bytes = c1.bytes - c0.bytes;
        if (dt < best)
            best = dt;
        veil_mpc_release(m, &x);
        veil_mpc_release(m, &y);
        veil_mpc_release(m, &mask);
        veil_mpc_wait(m);
    }
    return best;
}

static int body(veil_mpc_t *m, void *arg)
{
    struct cfg *c = arg;
    uint64_t b0 = 0, b1 = 0;
    const double t0 = measure(m, c, 0, &b0);
    const double t1 = measure(m, c, 1, &b1);
    if (t0 < 0 || t1 < 0)
        return 1;
    if (veil_mpc_self(m) == 0) {
        c->res[0] = t0;
        c->res[1] = t1;
        c->res[2] = (double)b0;
        c->res[3] = (double)b1;
    }
    return 0;
}

static void one(struct cfg *c)
{
    struct veil_test_mpc_opts o = {.nparties = c->nparties,
                                   .material = VEIL_MPC_MAT_DEALER,
                                   .tile = c->tile,
                                   .frac_bits = -1,
                                   .timeout_s = 600};
    memset(c->res, 0, 4 * sizeof(double));
    if (veil_test_mpc_run(&o, body, c) != 0) {
        printf("| %zu | %zu | failed |\n", c->n, c->tile);
        return;
    }
    const double n = (double)c->n;
    printf("| %zu | %zu | %.4f | %.3g | %.3f | %.4f | %.3g | %.3f |\n", c->n, c->tile, c->res[0],
           n / c->res[0], c->res[2] / n, c->res[1], n / c->res[1], c->res[3] / n);
    fflush(stdout);
}

int main(int argc, char **argv)
{
    static struct cfg c = {.minexp = 3, .maxexp = 6, .repeats = 3, .nparties = 2};
    int opt;
    while ((opt = getopt(argc, argv, "s:e:r:t:n:")) != -1) {
        switch (opt) {
        case 's':
            c.minexp = atoi(optarg);
            break;
        case 'e':
            c.maxexp = atoi(optarg);
            break;
        case 'r':
            c.repeats = atoi(optarg);
            break;
        case 'n':
            c.nparties = atoi(optarg);
            break;
        case 't':
            for (char *s = strtok(optarg, ","); s && c.ntiles < MAX_TILES; s = strtok(NULL, ","))
                c.tiles[c.ntiles++] = (size_t)strtoull(s, NULL, 10);
            break;
        default:
            fprintf(stderr, "usage: %s [-s MINEXP] [-e MAXEXP] [-r REPEATS] [-t TILE,...] [-n N]\n",
                    argv[0]);
            return 2;
        }
    }
    if (c.ntiles == 0)
        c.tiles[c.ntiles++] = VEIL_MPC_TILE_DEFAULT;
    c.res = veil_test_mpc_shared(4 * sizeof(double));
    if (!c.res || c.minexp < 1 || c.maxexp < c.minexp || c.repeats < 1 || c.nparties < 2)
        return 2;
    printf("N = %d parties + dealer, loopback, best of %d\n\n", c.nparties, c.repeats);
    printf("| n | tile | LTZ s | LTZ elem/s | LTZ B/elem | ReLU s | ReLU elem/s | ReLU B/elem |\n");
    printf("|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for (int t = 0; t < c.ntiles; t++)
        for (int e = c.minexp; e <= c.maxexp; e++) {
            size_t n = 1;
            for (int i = 0; i < e; i++)
                n *= 10;
            c.n = n;
            c.tile = c.tiles[t];
            one(&c);
        }
    veil_test_mpc_shared_free(c.res, 4 * sizeof(double));
    return 0;
}

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
#include "bench/bench_mpc_util.h"
#include "tasks/compare.h"

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
    struct bench_cost *res; /* shared: best LTZ, best ReLU (party 0) */
};

struct cmp_call {
    int relu;
    const struct veil_sec *x;
    struct veil_sec y, mask;
};

static int cmp_call(veil_mpc_t *m, void *arg)
{
    struct cmp_call *a = arg;
    return a->relu ? veil_mpc_relu(m, a->x, &a->y, &a->mask) : veil_mpc_ltz(m, a->x, &a->y);
}

static uint64_t gen(size_t i, const void *arg)
{
    (void)arg;
    return (uint64_t)(i * 0x9e3779b97f4a7c15u);
}

static int measure(veil_mpc_t *m, struct cfg *c, int relu, struct bench_cost *best)
{
    const size_t dims[1] = {c->n};
    for (int r = 0; r < c->repeats; r++) {
        struct veil_sec x = {0};
        struct cmp_call a = {.relu = relu, .x = &x};
        struct bench_cost s;
        int rc = bench_share(m, 0, gen, NULL, 1, dims, c->tile, &x);
        if (rc == VEIL_OK)
            rc = bench_time_call(m, cmp_call, &a, &s);
        veil_mpc_release(m, &x);
        veil_mpc_release(m, &a.y);
        veil_mpc_release(m, &a.mask);
        veil_mpc_wait(m);
        if (rc != VEIL_OK)
            return rc;
        bench_keep_best(best, &s);
    }
    return VEIL_OK;
}

static int body(veil_mpc_t *m, void *arg)
{
    struct cfg *c = arg;
    struct bench_cost best[2];
    memset(best, 0, sizeof best);
    if (measure(m, c, 0, &best[0]) != VEIL_OK || measure(m, c, 1, &best[1]) != VEIL_OK)
        return 1;
    if (veil_mpc_self(m) == 0)
        memcpy(c->res, best, sizeof best);
    return 0;
}

static void one(struct cfg *c)
{
    memset(c->res, 0, 2 * sizeof *c->res);
    if (bench_run(c->nparties, c->tile, 600, body, c) != 0) {
        printf("| %zu | %zu | failed |\n", c->n, c->tile);
        return;
    }
    const double n = (double)c->n;
    const struct bench_cost *l = &c->res[0], *r = &c->res[1];
    printf("| %zu | %zu | %.4f | %.3g | %.3f | %.4f | %.3g | %.3f |\n", c->n, c->tile, l->secs,
           n / l->secs, (double)l->bytes / n, r->secs, n / r->secs, (double)r->bytes / n);
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
    c.res = veil_test_mpc_shared(2 * sizeof *c.res);
    if (!c.res || c.minexp < 1 || c.maxexp < c.minexp || c.repeats < 1 || c.nparties < 2)
        return 2;
    printf("N = %d parties + dealer, loopback, best of %d\n\n", c.nparties, c.repeats);
    printf("| n | tile | LTZ s | LTZ elem/s | LTZ B/elem | ReLU s | ReLU elem/s | ReLU B/elem |\n");
    printf("|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for (int t = 0; t < c.ntiles; t++)
        for (int e = c.minexp; e <= c.maxexp; e++) {
            c.n = bench_pow10(e);
            c.tile = c.tiles[t];
            one(&c);
        }
    veil_test_mpc_shared_free(c.res, 2 * sizeof *c.res);
    return 0;
}

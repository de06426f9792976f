/*
 * bench_nonlinear.c — throughput of the nonlinear protocols (tasks/nonlinear.h): elements per
 * second, rounds and bytes sent per element per party for exp, reciprocal, inverse square root,
 * softmax over rows of 10 and of 128, and GELU; 2 parties + a dealer process on loopback (CURVE),
 * n = 10^3 .. 10^MAXEXP. Results and commands: bench/README-nonlinear.md.
 *
 * Usage: bench_nonlinear [-s MINEXP (3)] [-e MAXEXP (5)] [-E RECIP_MAXEXP (4)] [-r REPEATS (2)]
 *                        [-n N (parties, 2)] [-o OP (all; exp recip isqrt softmax10 softmax128
 *                        gelu)]
 * The reciprocal and inverse square root compare every element with 79 / 127 thresholds (see
 * nonlinear.h), so their largest size has its own bound (-E) on this small machine.
 * Each measurement: shares a fresh input, waits, then times one call (submission to quiescence,
 * the dealer's material generation and transfer included) at party 0; best of REPEATS.
 */
#include "config.h"
#include "base/base_internal.h"
#include "tasks/nonlinear.h"
#include "../tests/test_mpc_util.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { OP_EXP, OP_RECIP, OP_ISQRT, OP_SM10, OP_SM128, OP_GELU, OP_COUNT };
static const char *op_names[OP_COUNT] = {"exp",       "recip",      "isqrt",
                                         "softmax10", "softmax128", "gelu"};

struct cfg {
    int op;
    size_t n;
    int repeats;
    double *res; /* shared: best seconds, bytes, rounds (party 0) */
};

static double input_value(int op, size_t i, size_t n)
{
    double u = ((double)i + 0.5) / (double)n;
    switch (op) {
    case OP_EXP:
        return -16 * u;
    case OP_RECIP:
        return exp2(10 * u * 0.999);
    case OP_ISQRT:
        return exp2(-8 + 16 * u * 0.999);
    case OP_GELU:
        return -6 + 12 * u;
    default:
        return -8 + 16 * fmod(u * 7919.0, 1.0);
    }
}

static int call(veil_mpc_t *m, int op, const struct veil_sec *x, struct veil_sec *y)
{
    switch (op) {
    case OP_EXP:
        return veil_mpc_exp(m, x, y);
    case OP_RECIP:
        return veil_mpc_reciprocal(m, x, y);
    case OP_ISQRT:
        return veil_mpc_inv_sqrt(m, x, y);
    case OP_GELU:
        return veil_mpc_gelu(m, x, y);
    default:
        return veil_mpc_softmax_lastdim(m, x, y);
    }
}

static int body(veil_mpc_t *m, void *arg)
{
    struct cfg *c = arg;
    const int f = veil_mpc_frac_bits(m);
    const size_t k = c->op == OP_SM10 ? 10 : c->op == OP_SM128 ? 128 : 1;
    const size_t dims[2] = {c->n / k, k};
    double best = 1e30;
    uint64_t bytes = 0, rounds = 0;
    for (int r = 0; r < c->repeats; r++) {
        uint64_t *v = NULL;
        if (veil_mpc_self(m) == 0) {
            v = malloc(c->n * 8);
            if (!v)
                return 1;
            for (size_t i = 0; i < c->n; i++)
                veil_fixed_encode(input_value(c->op, i, c->n), f, &v[i]);
        }
        struct veil_sec x = {0}, y = {0};
        int rc = veil_mpc_share_input(m, 0, v, 2, dims, 0, &x);
        if (rc == VEIL_OK)
            rc = veil_mpc_wait(m);
        free(v);
        struct veil_test_mpc_counters c0, c1;
        veil_test_mpc_counters(m, &c0);
        const double t0 = veil_now();
        if (rc == VEIL_OK)
            rc = call(m, c->op, &x, &y);
        if (rc == VEIL_OK)
            rc = veil_mpc_wait(m);
        const double dt = veil_now() - t0;
        veil_test_mpc_counters(m, &c1);
        if (rc != VEIL_OK) {
            fprintf(stderr, "process %d: %s\n", veil_mpc_self(m), veil_last_error());
            return 1;
        }
        bytes = c1.bytes - c0.bytes;
        rounds = c1.rounds - c0.rounds;
        if (dt < best)
            best = dt;
        veil_mpc_release(m, &x);
        veil_mpc_release(m, &y);
        veil_mpc_wait(m);
    }
    if (veil_mpc_self(m) == 0) {
        c->res[0] = best;
        c->res[1] = (double)bytes;
        c->res[2] = (double)rounds;
    }
    return 0;
}

static void one(struct cfg *c, int nparties)
{
    struct veil_test_mpc_opts o = {
        .nparties = nparties, .material = VEIL_MPC_MAT_DEALER, .frac_bits = -1, .timeout_s = 600};
    memset(c->res, 0, 3 * sizeof(double));
    if (veil_test_mpc_run(&o, body, c) != 0) {
        printf("| %s | %zu | failed |\n", op_names[c->op], c->n);
        return;
    }
    const double n = (double)c->n;
    printf("| %s | %zu | %.0f | %.4f | %.3g | %.2f |\n", op_names[c->op], c->n, c->res[2],
           c->res[0], n / c->res[0], c->res[1] / n);
    fflush(stdout);
}

int main(int argc, char **argv)
{
    int minexp = 3, maxexp = 5, recip_maxexp = 4, nparties = 2, only = -1, opt;
    static struct cfg c = {.repeats = 2};
    while ((opt = getopt(argc, argv, "s:e:E:r:n:o:")) != -1) {
        switch (opt) {
        case 's':
            minexp = atoi(optarg);
            break;
        case 'e':
            maxexp = atoi(optarg);
            break;
        case 'E':
            recip_maxexp = atoi(optarg);
            break;
        case 'r':
            c.repeats = atoi(optarg);
            break;
        case 'n':
            nparties = atoi(optarg);
            break;
        case 'o':
            for (int i = 0; i < OP_COUNT; i++)
                if (strcmp(optarg, op_names[i]) == 0)
                    only = i;
            if (only < 0) {
                fprintf(stderr, "unknown op %s\n", optarg);
                return 2;
            }
            break;
        default:
            fprintf(stderr,
                    "usage: %s [-s MINEXP] [-e MAXEXP] [-E RECIP_MAXEXP] [-r REPEATS] "
                    "[-n N] [-o OP]\n",
                    argv[0]);
            return 2;
        }
    }
    c.res = veil_test_mpc_shared(3 * sizeof(double));
    if (!c.res || minexp < 1 || maxexp < minexp || c.repeats < 1 || nparties < 2)
        return 2;
    printf("N = %d parties + dealer, loopback, best of %d\n\n", nparties, c.repeats);
    printf("| op | n | rounds | s | elem/s | B/elem |\n|---|---:|---:|---:|---:|---:|\n");
    for (int op = 0; op < OP_COUNT; op++) {
        if (only >= 0 && op != only)
            continue;
        const int top = op == OP_RECIP || op == OP_ISQRT ? recip_maxexp : maxexp;
        for (int e = minexp; e <= top; e++) {
            size_t n = 1;
            for (int i = 0; i < e; i++)
                n *= 10;
            if (op == OP_SM128)
                n = n / 128 * 128; /* whole rows */
            c.op = op;
            c.n = n;
            one(&c, nparties);
        }
    }
    veil_test_mpc_shared_free(c.res, 3 * sizeof(double));
    return 0;
}

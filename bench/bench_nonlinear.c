/*
 * bench_nonlinear.c — throughput of the nonlinear protocols (tasks/nonlinear.h): elements per
 * second, rounds and bytes sent per element per party for exp, reciprocal, inverse square root,
 * softmax over rows of 10 and of 128, GELU, the reciprocal by normalisation over [2^-16, 2^15)
 * (recipn, tasks/reciprocal_norm.h) and sigmoid (tasks/nonlinear_sigmoid.h); 2 parties + a dealer process on loopback (CURVE),
 * n = 10^MINEXP .. 10^MAXEXP. Results and commands: bench/README-nonlinear.md.
 *
 * Usage: bench_nonlinear [-s MINEXP (3)] [-e MAXEXP (5)] [-E RECIP_MAXEXP (4)] [-r REPEATS (2)]
 *                        [-b BATCH] [-t TILE (VEIL_MPC_TILE_DEFAULT)] [-n N (parties, 2)] [-o OP (all; exp recip isqrt softmax10
 *                        softmax128 gelu recipn sigmoid)]
 * Every intermediate of a call stays live until the call's veil_mpc_wait, and the reciprocal and
 * the inverse square root compare every element with 79 / 127 thresholds (see nonlinear.h), so a
 * single call on 10^7 elements does not fit in memory. n elements are therefore processed as
 * consecutive calls on slices of at most BATCH elements (softmax: whole rows; default 10^5, 10^4
 * for the reciprocal and the inverse square root), each slice shared, then timed from submission
 * to quiescence at party 0 (the dealer's material generation and transfer included); the figures
 * are sums over the slices, best of REPEATS. Rounds add up over the slices: the table gives the
 * rounds of one slice and the number of slices, next to nonlinear.h's formulas (veil_nl_cost).
 * -E bounds the reciprocal's and the inverse square root's largest size separately.
 */
#include "config.h"
#include "base/base_internal.h"
#include "bench/bench_mpc_util.h"
#include "tasks/nonlinear.h"
#include "tasks/nonlinear_sigmoid.h"
#include "tasks/reciprocal_norm.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { OP_EXP, OP_RECIP, OP_ISQRT, OP_SM10, OP_SM128, OP_GELU, OP_RECIPN, OP_SIGMOID, OP_COUNT };
static const char *op_names[OP_COUNT] = {"exp",        "recip", "isqrt",  "softmax10",
                                         "softmax128", "gelu",  "recipn", "sigmoid"};

/* What party 0 measured over all slices of one repeat (the best repeat is kept). */
struct result {
    struct bench_cost total;
    uint64_t slices;
    uint64_t slice_rounds; /* rounds of every slice; UINT64_MAX when two slices differed */
};

struct cfg {
    int op;
    size_t n;     /* elements in all */
    size_t batch; /* elements per slice (whole rows) */
    int repeats;
    size_t tile;        /* the session's tile (elements); 0: VEIL_MPC_TILE_DEFAULT */
    struct result *res; /* shared with the children */
};

/* One slice's input: elements [off, off + len) of the op's n-element input. */
struct slice {
    int op, frac_bits;
    size_t off, n;
};

struct nl_call {
    int op;
    const struct veil_sec *x;
    struct veil_sec y;
};

static size_t row_len(int op)
{
    return op == OP_SM10 ? 10 : op == OP_SM128 ? 128 : 1;
}

static double input_value(int op, size_t i, size_t n)
{
    double u = ((double)i + 0.5) / (double)n;
    switch (op) {
    case OP_EXP:
        return -16 * u;
    case OP_RECIP:
        return exp2(10 * u * 0.999);
    case OP_RECIPN: /* [2^-16, 2^15): every positive accepted input */
        return exp2(-16 + 31 * u * 0.999);
    case OP_SIGMOID:
        return -20 + 40 * u;
    case OP_ISQRT:
        return exp2(-8 + 16 * u * 0.999);
    case OP_GELU:
        return -6 + 12 * u;
    default:
        return -8 + 16 * fmod(u * 7919.0, 1.0);
    }
}

static uint64_t gen(size_t i, const void *arg)
{
    const struct slice *sl = arg;
    uint64_t w = 0;
    veil_fixed_encode(input_value(sl->op, sl->off + i, sl->n), sl->frac_bits, &w);
    return w;
}

static int nl_call(veil_mpc_t *m, void *arg)
{
    struct nl_call *a = arg;
    switch (a->op) {
    case OP_EXP:
        return veil_mpc_exp(m, a->x, &a->y);
    case OP_RECIP:
        return veil_mpc_reciprocal(m, a->x, &a->y);
    case OP_ISQRT:
        return veil_mpc_inv_sqrt(m, a->x, &a->y);
    case OP_GELU:
        return veil_mpc_gelu(m, a->x, &a->y);
    case OP_RECIPN:
        return veil_mpc_reciprocal_norm(m, a->x, -veil_mpc_frac_bits(m), VEIL_RECIP_NORM_HI,
                                        &a->y);
    case OP_SIGMOID:
        return veil_mpc_sigmoid_tanh(m, a->x, 0, &a->y);
    default:
        return veil_mpc_softmax_lastdim(m, a->x, &a->y);
    }
}

/* One pass over the n elements, slice by slice; sums into *r. */
static int pass(veil_mpc_t *m, const struct cfg *c, struct result *r)
{
    const size_t k = row_len(c->op);
    memset(r, 0, sizeof *r);
    for (size_t off = 0; off < c->n; off += c->batch) {
        const size_t len = c->n - off < c->batch ? c->n - off : c->batch;
        const size_t dims[2] = {len / k, k};
        const struct slice sl = {c->op, veil_mpc_frac_bits(m), off, c->n};
        struct veil_sec x = {0};
        struct nl_call a = {.op = c->op, .x = &x};
        struct bench_cost s = {0};
        int rc = bench_share(m, 0, gen, &sl, 2, dims, 0, &x);
        if (rc == VEIL_OK)
            rc = bench_time_call(m, nl_call, &a, &s);
        veil_mpc_release(m, &x);
        veil_mpc_release(m, &a.y);
        veil_mpc_wait(m); /* frees the slice's tensors before the next one */
        if (rc != VEIL_OK)
            return rc;
        r->total.secs += s.secs;
        r->total.bytes += s.bytes;
        r->total.rounds += s.rounds;
        if (r->slices++ == 0)
            r->slice_rounds = s.rounds;
        else if (r->slice_rounds != s.rounds)
            r->slice_rounds = UINT64_MAX;
    }
    return VEIL_OK;
}

static int body(veil_mpc_t *m, void *arg)
{
    struct cfg *c = arg;
    struct result best = {0};
    for (int rep = 0; rep < c->repeats; rep++) {
        struct result r;
        if (pass(m, c, &r) != VEIL_OK)
            return 1;
        if (best.slices == 0 || r.total.secs < best.total.secs)
            best = r;
    }
    if (veil_mpc_self(m) == 0)
        *c->res = best;
    return 0;
}

/* nonlinear.h's formulas summed over the slices: rounds of one slice (the first, the largest) and
 * bytes in all. */
static void formula(const struct cfg *c, int nparties, uint64_t *slice_rounds, uint64_t *bytes)
{
    static const enum veil_nl_op nl[OP_COUNT] = {VEIL_NL_EXP,     VEIL_NL_RECIP,   VEIL_NL_ISQRT,
                                                 VEIL_NL_SOFTMAX, VEIL_NL_SOFTMAX, VEIL_NL_GELU,
                                                 VEIL_NL_RECIP,   VEIL_NL_EXP};
    const int lo = c->op == OP_ISQRT ? VEIL_ISQRT_LO : VEIL_RECIP_LO;
    const int hi = c->op == OP_ISQRT ? VEIL_ISQRT_HI : VEIL_RECIP_HI;
    *bytes = 0;
    *slice_rounds = 0;
    for (size_t off = 0; off < c->n; off += c->batch) {
        const size_t len = c->n - off < c->batch ? c->n - off : c->batch;
        uint64_t r = 0, b = 0;
        if (c->op == OP_RECIPN) /* tasks/reciprocal_norm.h, f = 16 */
            veil_reciprocal_norm_cost(nparties, len, 16, -16, VEIL_RECIP_NORM_HI, &r, &b);
        else if (c->op == OP_SIGMOID)
            veil_sigmoid_cost(nparties, len, &r, &b);
        else
            veil_nl_cost(nl[c->op], nparties, len, row_len(c->op), lo, hi, &r, &b);
        if (off == 0)
            *slice_rounds = r;
        *bytes += b;
    }
}

static void one(struct cfg *c, int nparties)
{
    memset(c->res, 0, sizeof *c->res);
    if (bench_run(nparties, c->tile, 3600, body, c) != 0) {
        printf("| %s | %zu | %zu | failed |\n", op_names[c->op], c->n, c->batch);
        return;
    }
    const struct result *r = c->res;
    const double n = (double)c->n;
    uint64_t fr, fb;
    formula(c, nparties, &fr, &fb);
    char rounds[24];
    if (r->slice_rounds == UINT64_MAX)
        snprintf(rounds, sizeof rounds, "varies");
    else
        snprintf(rounds, sizeof rounds, "%" PRIu64, r->slice_rounds);
    printf("| %s | %zu | %zu | %" PRIu64 " | %s | %" PRIu64 " | %" PRIu64 " | %.4f | %.3g | %.2f | "
           "%.2f |\n",
           op_names[c->op], c->n, c->batch, r->slices, rounds, fr, r->total.rounds, r->total.secs,
           n / r->total.secs, (double)r->total.bytes / n, (double)fb / n);
    fflush(stdout);
}

int main(int argc, char **argv)
{
    int minexp = 3, maxexp = 5, recip_maxexp = 4, nparties = 2, only = -1, opt;
    size_t batch = 0;
    static struct cfg c = {.repeats = 2};
    while ((opt = getopt(argc, argv, "s:e:E:r:b:t:n:o:")) != -1) {
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
        case 'b':
            batch = (size_t)strtoull(optarg, NULL, 10);
            break;
        case 't':
            c.tile = (size_t)strtoull(optarg, NULL, 10);
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
                    "usage: %s [-s MINEXP] [-e MAXEXP] [-E RECIP_MAXEXP] [-r REPEATS] [-b BATCH] "
                    "[-t TILE] [-n N] [-o OP]\n",
                    argv[0]);
            return 2;
        }
    }
    c.res = veil_test_mpc_shared(sizeof *c.res);
    if (!c.res || minexp < 1 || maxexp < minexp || c.repeats < 1 || nparties < 2)
        return 2;
    printf("N = %d parties + dealer, loopback, best of %d\n\n", nparties, c.repeats);
    printf("| op | n | batch | slices | rounds/slice | formula | rounds | s | elem/s | B/elem | "
           "formula B/elem |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for (int op = 0; op < OP_COUNT; op++) {
        if (only >= 0 && op != only)
            continue;
        const int wide = op == OP_RECIP || op == OP_ISQRT || op == OP_RECIPN;
        const size_t k = row_len(op);
        const int top = wide ? recip_maxexp : maxexp;
        for (int e = minexp; e <= top; e++) {
            size_t b = batch ? batch : wide ? 10000 : 100000;
            c.op = op;
            c.n = bench_pow10(e) / k * k; /* whole rows */
            c.batch = b < k ? k : b / k * k;
            one(&c, nparties);
        }
    }
    veil_test_mpc_shared_free(c.res, sizeof *c.res);
    return 0;
}

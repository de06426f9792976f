/*
 * bench_primitives.c — throughput of the MPC primitives not covered by bench_beaver,
 * bench_compare and bench_nonlinear: elementwise square, B2A, select and max, the maximum over
 * the last dimension (with and without the one-hot argmax), 2 x 2 max pooling (inference: value
 * only; training: with the argmax route) and average pooling, input sharing, reveal (to one party
 * and to all) and the masked open, and the pairwise forms (tasks/pool.h, PAIRWISE: maxpool_pw,
 * relu_maxpool_pw = max(0, window max), argmax_pw: the one-hot alone); 2 parties + a dealer
 * process on loopback (CURVE), n = 10^MINEXP
 * .. 10^MAXEXP elements. Results and commands: bench/README-primitives.md.
 *
 * Usage: bench_primitives [-s MINEXP (3)] [-e MAXEXP (6)] [-r REPEATS (3)] [-k ROW (10)]
 *                         [-n N (parties, 2)] [-o OP (all; see op_names)]
 * reveal0 reveals to party 0 (timed at the receiver; party 0 sends nothing), reveal1 to party 1
 * (timed at the sender, whose quiescence does not wait for the receiver); likewise share0 has
 * party 0 as its owner (the sender), share1 party 1 (party 0 receives). n counts input elements:
 * max_lastdim takes n / ROW rows of ROW; the pools take n / 100 images of 1 x 10 x 10 (n / 4
 * windows of 2 x 2, stride 2). Each measurement (bench_mpc_util.h) shares fresh inputs, waits, then
 * times one call from submission to quiescence at party 0, the dealer's material generation and
 * transfer included; best of REPEATS. Rounds and bytes are party 0's, printed next to the formulas
 * of the protocol headers (tasks/mpc.h, beaver.h, compare.h, pool.h, trunc.h).
 */
#include "config.h"
#include "base/base_internal.h"
#include "bench/bench_mpc_util.h"
#include "tasks/beaver.h"
#include "tasks/compare.h"
#include "tasks/pool.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum {
    OP_SQUARE,
    OP_B2A,
    OP_SELECT,
    OP_MAX,
    OP_MAXDIM,
    OP_ARGMAX,
    OP_MAXPOOL,
    OP_MAXPOOL_ROUTE,
    OP_AVGPOOL,
    OP_SHARE0,
    OP_SHARE1,
    OP_REVEAL0,
    OP_REVEAL1,
    OP_REVEAL_ALL,
    OP_OPEN,
    OP_MAXPOOL_PW,
    OP_RELU_MAXPOOL_PW,
    OP_ARGMAX_PW,
    OP_COUNT
};
static const char *op_names[OP_COUNT] = {
    "square",  "b2a",           "select",  "max",        "max_lastdim",     "argmax",
    "maxpool", "maxpool_route", "avgpool", "share0",     "share1",          "reveal0",
    "reveal1", "reveal_all",    "open",    "maxpool_pw", "relu_maxpool_pw", "argmax_pw"};

#define IMG 10 /* pools: images of 1 x IMG x IMG, windows 2 x 2, stride 2 */

struct cfg {
    int op, nparties, repeats;
    size_t n, k;
    struct bench_cost *res; /* shared: party 0's best */
};

/* Inputs and outputs of one timed call. */
struct prim_call {
    const struct cfg *c;
    struct veil_sec x, y, b, out, out2;
    uint64_t *plain; /* OP_SHARE0/1: the owner's words, generated before the timing */
};

static uint64_t gen_value(size_t i, const void *arg)
{
    (void)arg;
    /* |x| < 2^39: the window sums of avgpool times round(2^16 / 4) stay far below 2^62 */
    return (uint64_t)((int64_t)(i * 0x9e3779b97f4a7c15u) >> 24);
}

static uint64_t gen_bit(size_t i, const void *arg)
{
    (void)arg;
    return (i * 0x9e3779b97f4a7c15u) >> 63;
}

static struct veil_pool_geom pool_geom(size_t n)
{
    return (struct veil_pool_geom){
        .batch = n / (IMG * IMG), .c = 1, .h = IMG, .w = IMG, .k = 2, .stride = 2};
}

static int prim_call(veil_mpc_t *m, void *arg)
{
    struct prim_call *a = arg;
    const struct cfg *c = a->c;
    const struct veil_pool_geom g = pool_geom(c->n);
    int rc;
    switch (c->op) {
    case OP_SQUARE:
        return veil_mpc_square(m, &a->x, &a->out);
    case OP_B2A:
        return veil_mpc_b2a(m, &a->x, &a->out);
    case OP_SELECT:
        return veil_mpc_select(m, &a->b, &a->x, &a->y, &a->out);
    case OP_MAX:
        return veil_mpc_max(m, &a->x, &a->y, &a->out);
    case OP_MAXDIM:
        return veil_mpc_max_lastdim(m, &a->x, &a->out, NULL);
    case OP_ARGMAX:
        return veil_mpc_max_lastdim(m, &a->x, &a->out, &a->out2);
    case OP_MAXPOOL:
        return veil_mpc_maxpool2d(m, &a->x, &g, &a->out, NULL);
    case OP_MAXPOOL_ROUTE:
        return veil_mpc_maxpool2d(m, &a->x, &g, &a->out, &a->out2);
    case OP_AVGPOOL:
        return veil_mpc_avgpool2d(m, &a->x, &g, &a->out);
    case OP_MAXPOOL_PW:
    case OP_RELU_MAXPOOL_PW: {
        struct veil_pool_geom gp = g;
        gp.pairwise = 1;
        gp.relu = c->op == OP_RELU_MAXPOOL_PW;
        return veil_mpc_maxpool2d(m, &a->x, &gp, &a->out, NULL);
    }
    case OP_ARGMAX_PW:
        return veil_mpc_max_lastdim_pairwise(m, &a->x, NULL, &a->out2);
    case OP_SHARE0:
    case OP_SHARE1: {
        const size_t dims[1] = {c->n};
        return veil_mpc_share_input(m, c->op == OP_SHARE0 ? 0 : 1, a->plain, 1, dims, 0, &a->out);
    }
    case OP_REVEAL0:
        return veil_mpc_reveal(m, &a->x, 0, &a->out);
    case OP_REVEAL1:
        return veil_mpc_reveal(m, &a->x, 1, &a->out);
    case OP_REVEAL_ALL:
        return veil_mpc_reveal(m, &a->x, -1, &a->out);
    default: /* the masked open d = x - a of one round, a a shared tensor like x */
        if ((rc = veil_mpc_open(m, &a->x, &a->y, &a->out)) == VEIL_OK)
            veil_mpc_round(m);
        return rc;
    }
}

/* The call's inputs, shared (or, for B2A, set up locally) and settled. */
static int prepare(veil_mpc_t *m, const struct cfg *c, struct prim_call *a)
{
    const size_t n = c->n;
    const struct veil_pool_geom g = pool_geom(n);
    const size_t d1[1] = {n}, d2[2] = {n / c->k, c->k}, d4[4] = {g.batch, g.c, g.h, g.w};
    int rc = VEIL_OK;
    switch (c->op) {
    case OP_B2A:
        /* a valid XOR sharing of bits: party 0 holds bit i in bit 0 of word i and random high
         * bits, the other parties words with bit 0 clear (B2A reads bit 0 only) */
        if ((rc = veil_sec_init(m, &a->x, VEIL_SHARE_BINARY, 1, d1, 0)) == VEIL_OK &&
            veil_mpc_computes(m))
            for (size_t i = 0; i < n; i++) {
                const uint64_t high = (i * 0xbf58476d1ce4e5b9u) & ~UINT64_C(1);
                a->x.data[i] = veil_mpc_self(m) == 0 ? high ^ gen_bit(i, NULL) : high;
            }
        return rc;
    case OP_MAXDIM:
    case OP_ARGMAX:
    case OP_ARGMAX_PW:
        return bench_share(m, 0, gen_value, NULL, 2, d2, 0, &a->x);
    case OP_MAXPOOL:
    case OP_MAXPOOL_ROUTE:
    case OP_MAXPOOL_PW:
    case OP_RELU_MAXPOOL_PW:
    case OP_AVGPOOL:
        return bench_share(m, 0, gen_value, NULL, 4, d4, 0, &a->x);
    case OP_SHARE0:
    case OP_SHARE1:
        if (veil_mpc_self(m) == (c->op == OP_SHARE0 ? 0 : 1)) {
            if (!(a->plain = malloc(n * sizeof *a->plain)))
                return veil_error(VEIL_ERR_NOMEM, "bench: %zu input words", n);
            for (size_t i = 0; i < n; i++)
                a->plain[i] = gen_value(i, NULL);
        }
        return VEIL_OK;
    default:
        break;
    }
    rc = bench_share(m, 0, gen_value, NULL, 1, d1, 0, &a->x);
    if (rc == VEIL_OK && (c->op == OP_SELECT || c->op == OP_MAX || c->op == OP_OPEN))
        rc = bench_share(m, 1, gen_value, NULL, 1, d1, 0, &a->y);
    if (rc == VEIL_OK && c->op == OP_SELECT)
        rc = bench_share(m, 0, gen_bit, NULL, 1, d1, 0, &a->b);
    return rc;
}

static int body(veil_mpc_t *m, void *arg)
{
    struct cfg *c = arg;
    struct bench_cost best = {0};
    for (int r = 0; r < c->repeats; r++) {
        struct prim_call a = {.c = c};
        struct bench_cost s;
        int rc = prepare(m, c, &a);
        if (rc == VEIL_OK)
            rc = bench_time_call(m, prim_call, &a, &s);
        else
            fprintf(stderr, "process %d: %s\n", veil_mpc_self(m), veil_last_error());
        free(a.plain);
        struct veil_sec *t[] = {&a.x, &a.y, &a.b, &a.out, &a.out2};
        for (size_t i = 0; i < sizeof t / sizeof *t; i++)
            veil_mpc_release(m, t[i]);
        veil_mpc_wait(m);
        if (rc != VEIL_OK)
            return 1;
        bench_keep_best(&best, &s);
    }
    if (veil_mpc_self(m) == 0)
        *c->res = best;
    return 0;
}

/* W of compare.h: 64-bit words of one packed bit per element, summed over tiles of `tile`. */
static uint64_t words(size_t n, size_t tile)
{
    uint64_t w = 0;
    for (size_t off = 0; off < n; off += tile)
        w += ((n - off < tile ? n - off : tile) + 63) / 64;
    return w;
}

/* pool.h: max over rows of k, with or without the one-hot argmax: rounds, bytes / (N-1). */
static void max_rows_cost(uint64_t rows, size_t k, int argmax, uint64_t *rounds, uint64_t *bytes)
{
    uint64_t size[4096]; /* original positions under each candidate of the current level */
    size_t kl = k < 4096 ? k : 4096;
    for (size_t j = 0; j < kl; j++)
        size[j] = 1;
    *rounds = *bytes = 0;
    for (int level = 0; kl > 1; level++) {
        const uint64_t p = kl / 2, pairs = rows * p;
        uint64_t cl = 0;
        for (size_t j = 0; j < p; j++) {
            if (level > 0 && argmax)
                cl += size[2 * j] + size[2 * j + 1];
            size[j] = size[2 * j] + size[2 * j + 1];
        }
        if (kl % 2)
            size[p] = size[kl - 1];
        *rounds += VEIL_LTZ_ROUNDS;
        /* d beta is local; a Beaver product only with the one-hot vectors */
        *bytes += 8 * (pairs + VEIL_LTZ_BLOCK_WORDS * ((pairs + 63) / 64) +
                       (cl ? 2 * (pairs + rows * cl) : 0));
        kl = (kl + 1) / 2;
    }
}

/* The headers' formulas for party 0 (N parties, default tile). */
static void formula(const struct cfg *c, uint64_t *rounds, uint64_t *bytes)
{
    const uint64_t n = c->n, n1 = (uint64_t)c->nparties - 1;
    const uint64_t w = words(c->n, VEIL_MPC_TILE_DEFAULT);
    uint64_t r = 1, b = 0, peers = n1;
    switch (c->op) {
    case OP_SQUARE:
    case OP_SHARE0: /* party 0 is the owner */
    case OP_REVEAL_ALL:
    case OP_OPEN:
        b = 8 * n;
        break;
    case OP_SHARE1: /* party 0 receives and sends nothing */
    case OP_REVEAL0:
        break;
    case OP_REVEAL1: /* mpc.h says (N-1) 8 n per sender, but a sender sends to the receiver only
                      * (mpc_open.c): 8 n; the same at N = 2 */
        b = 8 * n;
        peers = 1;
        break;
    case OP_B2A:
        b = 8 * w;
        break;
    case OP_SELECT:
        b = 16 * n;
        break;
    case OP_MAX:
        r = VEIL_RELU_ROUNDS;
        b = 8 * (n + VEIL_LTZ_BLOCK_WORDS * w); /* LTZ's bytes: x beta is local */
        break;
    case OP_MAXDIM:
    case OP_ARGMAX:
        max_rows_cost(n / c->k, c->k, c->op == OP_ARGMAX, &r, &b);
        break;
    case OP_MAXPOOL:
    case OP_MAXPOOL_ROUTE:
        max_rows_cost(n / 4, 4, c->op == OP_MAXPOOL_ROUTE, &r, &b);
        break;
    case OP_AVGPOOL: /* the truncation of the n / 4 window sums */
        b = 8 * (n / 4);
        break;
    case OP_MAXPOOL_PW: /* the windows: pool.h, PAIRWISE */
        veil_pool_pairwise_cost(n / 4, 4, 1, 0, 2, &r, &b);
        break;
    case OP_RELU_MAXPOOL_PW: /* the windows and 0 */
        veil_pool_pairwise_relu_cost(n / 4, 4, 2, &r, &b);
        break;
    case OP_ARGMAX_PW: /* the one-hot alone */
        veil_pool_pairwise_cost(n / c->k, c->k, 0, 1, 2, &r, &b);
        break;
    }
    *rounds = r;
    *bytes = b * peers;
}

static void one(struct cfg *c)
{
    memset(c->res, 0, sizeof *c->res);
    if (bench_run(c->nparties, 0, 1800, body, c) != 0) {
        printf("| %s | %zu | failed |\n", op_names[c->op], c->n);
        fflush(stdout);
        return;
    }
    uint64_t fr, fb;
    formula(c, &fr, &fb);
    const struct bench_cost *r = c->res;
    const double n = (double)c->n;
    printf("| %s | %zu | %" PRIu64 " | %" PRIu64 " | %.3g | %.3g | %.3f | %.3f |\n",
           op_names[c->op], c->n, r->rounds, fr, r->secs, n / r->secs, (double)r->bytes / n,
           (double)fb / n);
    fflush(stdout);
}

int main(int argc, char **argv)
{
    int minexp = 3, maxexp = 6, only = -1, opt;
    static struct cfg c = {.repeats = 3, .nparties = 2, .k = 10};
    while ((opt = getopt(argc, argv, "s:e:r:k:n:o:")) != -1) {
        switch (opt) {
        case 's':
            minexp = atoi(optarg);
            break;
        case 'e':
            maxexp = atoi(optarg);
            break;
        case 'r':
            c.repeats = atoi(optarg);
            break;
        case 'k':
            c.k = (size_t)strtoull(optarg, NULL, 10);
            break;
        case 'n':
            c.nparties = atoi(optarg);
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
                    "usage: %s [-s MINEXP] [-e MAXEXP] [-r REPEATS] [-k ROW] [-n N] [-o OP]\n",
                    argv[0]);
            return 2;
        }
    }
    c.res = veil_test_mpc_shared(sizeof *c.res);
    if (!c.res || minexp < 2 || maxexp < minexp || c.repeats < 1 || c.nparties < 2 || c.k < 1 ||
        c.k > 4096)
        return 2;
    printf("N = %d parties + dealer, loopback, best of %d, max_lastdim rows of %zu, pools "
           "1 x %d x %d images, 2 x 2 windows, stride 2\n\n",
           c.nparties, c.repeats, c.k, IMG, IMG);
    printf("| op | n | rounds | formula | s | elem/s | B/elem | formula B/elem |\n");
    printf("|---|---:|---:|---:|---:|---:|---:|---:|\n");
    for (int op = 0; op < OP_COUNT; op++) {
        if (only >= 0 && op != only)
            continue;
        for (int e = minexp; e <= maxexp; e++) {
            c.op = op;
            c.n = bench_pow10(e); /* a multiple of 100 images' pixels for the pools */
            if (op == OP_MAXDIM || op == OP_ARGMAX || op == OP_ARGMAX_PW)
                c.n = c.n / c.k * c.k; /* whole rows */
            one(&c);
        }
    }
    veil_test_mpc_shared_free(c.res, sizeof *c.res);
    return 0;
}

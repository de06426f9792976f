/*
 * bench_beaver.c — throughput of the Beaver-family protocols between 2 party processes and a
 * dealer process on loopback (CURVE on): elementwise mul, trunc and mul_fixed for 10^3 .. 10^7
 * elements and matmul for n x n by n x n with n = 64 .. 512. Each figure is the wall time at
 * party 0 from submitting `reps` independent calls (inputs already shared) to quiescence, so it
 * includes the dealer's online correction traffic and the parties' PRG expansion of the
 * material, the opens, and the local tasks; elements/s = n reps / time, bytes/element = party 0's
 * sent bytes / (n reps) (matmul: per output element). One StarPU CPU worker per process (the
 * harness's setting); the machine's cores are shared by the three processes.
 * Then mul of 10^6 elements in tiles of 4096 .. 2^20 (one tile): the inner-layer pipeline; and
 * conv2d / grad_input / grad_weight on batch 8, 32 -> 32 channels, 16 x 16, 3 x 3, stride 1,
 * pad 1 (n = the product's output elements).
 * With -f the material is generated ahead into per-party files (the offline phase, not timed)
 * and the parties run without a dealer: the figures are then the online phase alone. -p runs the
 * channels in plaintext (no CURVE: what the encryption costs, and the conditions of a framework
 * that does not encrypt); -w times each measurement after an untimed call of the same size (the
 * pool's buffers warm, as in a model's steady runs; without it each figure is the session's first
 * call of its size); -t PATH writes each process's trace of the timed window (Chrome JSON, "%d"
 * the process, the last measurement's; bench/trace_gaps.py reads it).
 * Usage: bench_beaver [-f] [-p] [-w] [-o OP] [-m MIN] [-t TRACE] [max_elements]
 * (default 10000000; results on stdout
 * as a table). -o runs only OP's rows (mul, trunc, mul_fixed, matmul, tiles: the tiled mul,
 * conv), -m starts the elementwise sizes at MIN (a power of ten, default 1000): issue 15's
 * mul + trunc at 10^5 and 10^6 is `-o mul_fixed -m 100000 1000000`.
 */
#include "config.h"
#include "base/base_internal.h"
#include "base/trace.h"
#include "tasks/beaver.h"
#include "tasks/trunc.h"
#include "tests/test_mpc_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAXROWS 40

struct row {
    char op[24];
    size_t n; /* elements per call (matmul: the side n) */
    int reps;
    double secs;
    uint64_t bytes, rounds;
};

static struct row *rows; /* shared with the children */
static size_t max_elems = 10000000;
static size_t min_elems = 1000; /* -m */
static const char *only;        /* -o: the one op (or row family) to run; NULL: all */
static int from_files;          /* -f */
static int plaintext;           /* -p: no CURVE, to see what the encryption costs */
static int warm;                /* -w: each measurement after an untimed call of the same size */
static const char *trace_path;  /* -t: trace of the last timed elementwise window, "%d" = process */
static uint64_t *plain; /* max_elems words of input (fixed-point values below 2^30) */

enum op { OP_MUL, OP_TRUNC, OP_MULFIX, OP_MATMUL };
static const char *op_names[] = {"mul", "trunc", "mul_fixed", "matmul"};

static int call(veil_mpc_t *m, enum op op, const struct veil_sec *x, const struct veil_sec *y,
                struct veil_sec *z)
{
    switch (op) {
    case OP_MUL:
        return veil_mpc_mul(m, x, y, z);
    case OP_TRUNC:
        return veil_mpc_trunc(m, x, veil_mpc_frac_bits(m), z);
    case OP_MULFIX:
        return veil_mpc_mul_fixed(m, x, y, z);
    default:
        return veil_mpc_matmul(m, x, y, z);
    }
}

/* One measurement; party 0 stores it in rows[*k]. */
static int measure(veil_mpc_t *m, enum op op, size_t n, size_t tile, int *k)
{
    const int self = veil_mpc_self(m);
    const int mat = op == OP_MATMUL;
    const size_t numel = mat ? n * n : n;
    const size_t dims2[2] = {n, n}, dims1[1] = {numel};
    int reps = (int)(mat ? (n <= 128 ? 8 : 2) : (numel >= 1000000 ? 1 : 1000000 / numel));
    if (reps > 64)
        reps = 64;
    struct veil_sec x = {0}, y = {0}, z[64];
    memset(z, 0, sizeof z);
    /* the operands' tiling is the product's (tile 0: the context's default) */
    const size_t xtile = mat ? SIZE_MAX : tile;
    int rc = veil_mpc_share_input(m, 0, self == 0 ? plain : NULL, mat ? 2 : 1, mat ? dims2 : dims1,
                                  xtile, &x);
    if (rc == VEIL_OK)
        rc = veil_mpc_share_input(m, 1, self == 1 ? plain : NULL, mat ? 2 : 1, mat ? dims2 : dims1,
                                  xtile, &y);
    if (rc != VEIL_OK || (rc = veil_mpc_wait(m)) != VEIL_OK)
        return rc;
    /* -w: the same calls once untimed first; their buffers go back to the pool at the barrier */
    for (int r = 0; warm && r < reps && rc == VEIL_OK; r++)
        rc = call(m, op, &x, &y, &z[r]);
    if (warm && rc == VEIL_OK)
        rc = veil_mpc_wait(m);
    for (int r = 0; warm && r < reps; r++)
        veil_mpc_release(m, &z[r]);
    if (warm && rc == VEIL_OK)
        rc = veil_mpc_wait(m);
    if (rc != VEIL_OK)
        return rc;
    struct veil_test_mpc_counters c0, c1;
    veil_test_mpc_counters(m, &c0);
    const int tracing = trace_path && veil_trace_start() == VEIL_OK;
    if (tracing)
        veil_trace_run_begin(1);
    const double tt0 = veil_trace_now();
    double t0 = veil_now();
    for (int r = 0; r < reps && rc == VEIL_OK; r++)
        rc = call(m, op, &x, &y, &z[r]);
    if (rc == VEIL_OK)
        rc = veil_mpc_wait(m);
    double t1 = veil_now();
    veil_test_mpc_counters(m, &c1);
    if (tracing) {
        veil_trace_run_end(tt0, veil_trace_now(), c1.bytes - c0.bytes, 0);
        veil_trace_stop();
        const struct veil_trace_meta meta = {.pid = self,
                                             .nparties = veil_mpc_nparties(m),
                                             .nprocs = veil_mpc_nparties(m) + !from_files};
        if (veil_trace_write(trace_path, &meta) != VEIL_OK)
            fprintf(stderr, "bench_beaver: cannot write the trace: %s\n", veil_last_error());
        veil_trace_free();
    }
    if (self == 0 && *k < MAXROWS) {
        struct row *w = &rows[(*k)++];
        if (tile)
            snprintf(w->op, sizeof w->op, "%s/t=%zu", op_names[op], tile < n ? tile : n);
        else
            snprintf(w->op, sizeof w->op, "%s", op_names[op]);
        w->n = n;
        w->reps = reps;
        w->secs = t1 - t0;
        w->bytes = c1.bytes - c0.bytes;
        w->rounds = c1.rounds - c0.rounds;
    }
    veil_mpc_release(m, &x);
    veil_mpc_release(m, &y);
    for (int r = 0; r < reps; r++)
        veil_mpc_release(m, &z[r]);
    if (rc == VEIL_OK)
        rc = veil_mpc_wait(m);
    return rc;
}

/* conv2d and its backward products on geometry g, `reps` calls each; party 0 records rows whose n
 * is the output element count of the product (bytes/element per output element). */
static int measure_conv(veil_mpc_t *m, const struct veil_conv_geom *g, int reps, int *k)
{
    const int self = veil_mpc_self(m);
    const size_t oh = (g->h + 2 * g->pad - g->kh) / g->stride + 1;
    const size_t ow = (g->w + 2 * g->pad - g->kw) / g->stride + 1;
    const size_t xd[4] = {g->batch, g->c, g->h, g->w}, wd[4] = {g->oc, g->c, g->kh, g->kw};
    const size_t yd[4] = {g->batch, g->oc, oh, ow};
    const size_t outn[3] = {g->batch * g->oc * oh * ow, g->batch * g->c * g->h * g->w,
                            g->oc * g->c * g->kh * g->kw};
    static const char *names[3] = {"conv2d", "conv_grad_in", "conv_grad_w"};
    struct veil_sec x = {0}, w = {0}, dy = {0}, z[8];
    memset(z, 0, sizeof z);
    if (reps > 8)
        reps = 8;
    int rc = veil_mpc_share_input(m, 0, self == 0 ? plain : NULL, 4, xd, SIZE_MAX, &x);
    if (rc == VEIL_OK)
        rc = veil_mpc_share_input(m, 1, self == 1 ? plain : NULL, 4, wd, SIZE_MAX, &w);
    if (rc == VEIL_OK)
        rc = veil_mpc_share_input(m, 0, self == 0 ? plain : NULL, 4, yd, SIZE_MAX, &dy);
    if (rc == VEIL_OK)
        rc = veil_mpc_wait(m);
    for (int op = 0; op < 3 && rc == VEIL_OK; op++) {
        struct veil_test_mpc_counters c0, c1;
        veil_test_mpc_counters(m, &c0);
        double t0 = veil_now();
        for (int r = 0; r < reps && rc == VEIL_OK; r++)
            rc = op == 0   ? veil_mpc_conv2d(m, &x, &w, g, &z[r])
                 : op == 1 ? veil_mpc_conv2d_grad_input(m, &w, &dy, g, &z[r])
                           : veil_mpc_conv2d_grad_weight(m, &x, &dy, g, &z[r]);
        if (rc == VEIL_OK)
            rc = veil_mpc_wait(m);
        double t1 = veil_now();
        veil_test_mpc_counters(m, &c1);
        if (self == 0 && *k < MAXROWS) {
            struct row *row = &rows[(*k)++];
            snprintf(row->op, sizeof row->op, "%s", names[op]);
            row->n = outn[op];
            row->reps = reps;
            row->secs = t1 - t0;
            row->bytes = c1.bytes - c0.bytes;
            row->rounds = c1.rounds - c0.rounds;
        }
        for (int r = 0; r < reps; r++)
            veil_mpc_release(m, &z[r]);
    }
    veil_mpc_release(m, &x);
    veil_mpc_release(m, &w);
    veil_mpc_release(m, &dy);
    if (rc == VEIL_OK)
        rc = veil_mpc_wait(m);
    return rc;
}

/* Whether -o lets the rows of `what` run. */
static int wanted(const char *what)
{
    return !only || strcmp(only, what) == 0;
}

static int body(veil_mpc_t *m, void *arg)
{
    (void)arg;
    int k = 0, rc = VEIL_OK;
    for (int op = OP_MUL; op <= OP_MULFIX && rc == VEIL_OK; op++)
        for (size_t n = min_elems; n <= max_elems && wanted(op_names[op]) && rc == VEIL_OK; n *= 10)
            rc = measure(m, (enum op)op, n, 0, &k);
    for (size_t n = 64; n <= 512 && n * n <= max_elems && wanted("matmul") && rc == VEIL_OK; n *= 2)
        rc = measure(m, OP_MATMUL, n, 0, &k);
    /* the inner-layer pipeline: one mul of 10^6 elements in tiles of 4096 .. one tile */
    for (size_t t = 4096; t <= 1048576 && max_elems >= 1000000 && wanted("tiles") && rc == VEIL_OK;
         t *= 4)
        rc = measure(m, OP_MUL, 1000000, t, &k);
    /* a ResNet-like 3 x 3 layer: batch 8, 32 -> 32 channels, 16 x 16, stride 1, pad 1 */
    const struct veil_conv_geom g = {
        .batch = 8, .c = 32, .h = 16, .w = 16, .oc = 32, .kh = 3, .kw = 3, .stride = 1, .pad = 1};
    if (rc == VEIL_OK && max_elems >= 65536 && wanted("conv"))
        rc = measure_conv(m, &g, 4, &k);
    if (rc != VEIL_OK)
        fprintf(stderr, "process %d: %s\n", veil_mpc_self(m), veil_last_error());
    return rc == VEIL_OK ? 0 : 1;
}

int main(int argc, char **argv)
{
    int opt;
    while ((opt = getopt(argc, argv, "fpwo:m:t:")) != -1) {
        if (opt == 'f') {
            from_files = 1;
        } else if (opt == 'p') {
            plaintext = 1;
        } else if (opt == 'w') {
            warm = 1;
        } else if (opt == 'o' && strcmp(optarg, "mul") && strcmp(optarg, "trunc") &&
                   strcmp(optarg, "mul_fixed") && strcmp(optarg, "matmul") &&
                   strcmp(optarg, "tiles") && strcmp(optarg, "conv")) {
            fprintf(stderr, "bench_beaver: -o %s: not one of mul, trunc, mul_fixed, matmul, "
                    "tiles, conv\n", optarg);
            return 2;
        } else if (opt == 'o') {
            only = optarg;
        } else if (opt == 't') {
            trace_path = optarg;
        } else if (opt == 'm') {
            min_elems = strtoull(optarg, NULL, 10);
        } else {
            fprintf(stderr, "usage: %s [-f] [-p] [-w] [-o OP] [-m MIN] [-t TRACE] [max_elements]\n",
                    argv[0]);
            return 2;
        }
    }
    if (optind < argc)
        max_elems = strtoull(argv[optind], NULL, 10);
    if (max_elems < 1000)
        max_elems = 1000;
    if (min_elems < 1000)
        min_elems = 1000;
    rows = veil_test_mpc_shared(MAXROWS * sizeof *rows);
    plain = malloc(max_elems * 8);
    if (!rows || !plain)
        return 1;
    uint8_t seed[VEIL_SEED_BYTES] = {7};
    veil_prg_t *g = veil_prg_new(seed);
    if (!g || veil_prg_fill(g, plain, max_elems) != VEIL_OK)
        return 1;
    veil_prg_destroy(&g);
    for (size_t i = 0; i < max_elems; i++)
        plain[i] = (uint64_t)((int64_t)plain[i] >> 34); /* |v| < 2^30: products stay in range */
    struct veil_test_mpc_opts o = {.nparties = 2,
                                   .material = from_files ? VEIL_MPC_MAT_FILE : VEIL_MPC_MAT_DEALER,
                                   .frac_bits = -1,
                                   .timeout_s = 1800,
                                   .insecure_plaintext = plaintext};
    if (veil_test_mpc_run(&o, body, NULL) != 0)
        return 1;
    printf("material: %s; channels: %s\n",
           from_files ? "stored files (online phase alone)"
                      : "dealer process, online (expansion and traffic timed)",
           plaintext ? "plaintext (no CURVE)" : "CURVE");
    printf("each figure: %s\n", warm ? "after an untimed call of the same size (warm buffers)"
                                     : "the first call of its size in the session");
    printf("%-14s %10s %5s %10s %14s %12s %7s\n", "op", "n", "reps", "seconds", "elements/s",
           "bytes/elem", "rounds");
    for (int i = 0; i < MAXROWS && rows[i].reps; i++) {
        const struct row *r = &rows[i];
        double elems = (double)r->reps * (double)(strcmp(r->op, "matmul") ? r->n : r->n * r->n);
        printf("%-14s %10zu %5d %10.4f %14.4g %12.2f %7llu\n", r->op, r->n, r->reps, r->secs,
               elems / r->secs, (double)r->bytes / elems, (unsigned long long)r->rounds);
    }
    veil_test_mpc_shared_free(rows, MAXROWS * sizeof *rows);
    free(plain);
    return 0;
}

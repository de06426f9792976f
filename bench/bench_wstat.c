/*
 * bench_wstat.c — what weight-stationary preprocessing (tasks/wstat.h) saves: the linear layers
 * of LeNet-5 (conv1 1 -> 6 ch, 28 x 28, 5 x 5, pad 2; conv2 6 -> 16 ch, 14 x 14, 5 x 5; dense
 * 400 x 120, 120 x 84, 84 x 10) at batch 100 and batch 1, each run `runs` times (10 by default)
 * with the same weights, once with veil_mpc_matmul / veil_mpc_conv2d (E = W - B opened every
 * run) and once with the _ws forms (E opened on the first run only). N parties (2 by default) and
 * a dealer process on loopback (CURVE on), one StarPU CPU worker per process.
 * For each layer and mode, party 0's sent bytes on the first run and per later run (exact), the
 * dealer's sent bytes per run (its corrections: the same in both modes), and the wall time at
 * party 0 of all runs (submitted together, inputs already shared, to quiescence; this machine is
 * shared, so read times loosely). Every run's result is revealed once at the end and the two
 * modes' results are compared word for word (the bench stops on a mismatch).
 * Usage: bench_wstat [-n parties] [runs]   (results on stdout as a table)
 */
#include "config.h"
#include "base/base_internal.h"
#include "tasks/beaver.h"
#include "tasks/wstat.h"
#include "tests/test_mpc_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXRUNS 32
#define NLAYERS 5
#define MAXROWS (2 * NLAYERS * 2)

struct layer {
    const char *name;
    int conv;
    size_t k, n;             /* dense: x (batch x k) . w (k x n) */
    struct veil_conv_geom g; /* conv (batch set per row) */
};

static const struct layer layers[NLAYERS] = {
    {"conv1",
     1,
     0,
     0,
     {.c = 1, .h = 28, .w = 28, .oc = 6, .kh = 5, .kw = 5, .stride = 1, .pad = 2}},
    {"conv2", 1, 0, 0, {.c = 6, .h = 14, .w = 14, .oc = 16, .kh = 5, .kw = 5, .stride = 1}},
    {"fc1", 0, 400, 120, {0}},
    {"fc2", 0, 120, 84, {0}},
    {"fc3", 0, 84, 10, {0}},
};
static const size_t batches[2] = {100, 1};

struct row {
    char layer[8];
    size_t batch;
    int ws;
    int runs;
    uint64_t first, later; /* party 0: bytes of run 1, bytes of runs 2..R */
    uint64_t dealer;       /* dealer: bytes of all runs */
    uint64_t rounds;
    double secs;
    size_t xw, ww; /* words of x and w */
    int mismatch;
};

static struct row *rows; /* shared with the children */
static int nruns = 10;
static uint64_t *plain; /* enough words for every operand */
static size_t plain_words;

/* One layer in one mode: `nruns` products with the same weight; z[] keeps the outputs. */
static int measure(veil_mpc_t *m, const struct layer *L, size_t batch, int ws_mode, uint64_t wid,
                   struct veil_sec *z, int k)
{
    const int self = veil_mpc_self(m);
    struct veil_conv_geom g = L->g;
    g.batch = batch;
    size_t xd[4], wd[4];
    int nd;
    if (L->conv) {
        nd = 4;
        xd[0] = batch, xd[1] = g.c, xd[2] = g.h, xd[3] = g.w;
        wd[0] = g.oc, wd[1] = g.c, wd[2] = g.kh, wd[3] = g.kw;
    } else {
        nd = 2;
        xd[0] = batch, xd[1] = L->k;
        wd[0] = L->k, wd[1] = L->n;
    }
    struct veil_sec x[MAXRUNS], w = {0};
    struct veil_mpc_wstat ws = {0};
    memset(x, 0, sizeof x);
    int rc = veil_mpc_share_input(m, 1, self == 1 ? plain : NULL, nd, wd, SIZE_MAX, &w);
    for (int r = 0; r < nruns && rc == VEIL_OK; r++) /* a different input per run */
        rc = veil_mpc_share_input(m, 0, self == 0 ? plain + r : NULL, nd, xd, SIZE_MAX, &x[r]);
    if (rc == VEIL_OK && ws_mode)
        rc = veil_mpc_wstat_init(m, &ws, wid);
    if (rc != VEIL_OK || (rc = veil_mpc_wait(m)) != VEIL_OK)
        return rc;
    struct veil_test_mpc_counters c0, c1, c2;
    veil_test_mpc_counters(m, &c0);
    double t0 = veil_now();
    for (int r = 0; r < nruns && rc == VEIL_OK; r++) {
        if (L->conv)
            rc = ws_mode ? veil_mpc_conv2d_ws(m, &x[r], &w, &g, &ws, &z[r])
                         : veil_mpc_conv2d(m, &x[r], &w, &g, &z[r]);
        else
            rc = ws_mode ? veil_mpc_matmul_ws(m, &x[r], &w, &ws, &z[r])
                         : veil_mpc_matmul(m, &x[r], &w, &z[r]);
        if (r == 0 && rc == VEIL_OK) { /* the first run's bytes alone */
            rc = veil_mpc_wait(m);
            veil_test_mpc_counters(m, &c1);
        }
    }
    if (rc == VEIL_OK)
        rc = veil_mpc_wait(m);
    double t1 = veil_now();
    veil_test_mpc_counters(m, &c2);
    struct row *row = &rows[k];
    if (self == 0) {
        snprintf(row->layer, sizeof row->layer, "%s", L->name);
        row->batch = batch;
        row->ws = ws_mode;
        row->runs = nruns;
        row->first = c1.bytes - c0.bytes;
        row->later = c2.bytes - c1.bytes;
        row->rounds = c2.rounds - c0.rounds;
        row->secs = t1 - t0;
        row->xw = x[0].numel;
        row->ww = w.numel;
    } else if (!veil_mpc_computes(m)) {
        row->dealer = c2.bytes - c0.bytes;
    }
    veil_mpc_wstat_release(m, &ws);
    veil_mpc_release(m, &w);
    for (int r = 0; r < nruns; r++)
        veil_mpc_release(m, &x[r]);
    return rc;
}

/* Reveals both modes' outputs to party 0 and compares them. */
static int compare(veil_mpc_t *m, struct veil_sec *za, struct veil_sec *zb, int k)
{
    int rc = VEIL_OK, bad = 0;
    for (int r = 0; r < nruns && rc == VEIL_OK; r++) {
        struct veil_pub ra = {0}, rb = {0};
        rc = veil_mpc_reveal(m, &za[r], 0, &ra);
        if (rc == VEIL_OK)
            rc = veil_mpc_reveal(m, &zb[r], 0, &rb);
        if (rc == VEIL_OK)
            rc = veil_mpc_wait(m);
        if (rc == VEIL_OK && veil_mpc_self(m) == 0)
            bad |= ra.numel != rb.numel || memcmp(ra.data, rb.data, ra.numel * 8) != 0;
        veil_mpc_release(m, &ra);
        veil_mpc_release(m, &rb);
        veil_mpc_release(m, &za[r]);
        veil_mpc_release(m, &zb[r]);
    }
    if (veil_mpc_self(m) == 0)
        rows[k].mismatch = rows[k + 1].mismatch = bad;
    return rc == VEIL_OK ? veil_mpc_wait(m) : rc;
}

static int body(veil_mpc_t *m, void *arg)
{
    (void)arg;
    int k = 0, rc = VEIL_OK;
    uint64_t wid = 1;
    for (int b = 0; b < 2 && rc == VEIL_OK; b++)
        for (int l = 0; l < NLAYERS && rc == VEIL_OK; l++) {
            struct veil_sec za[MAXRUNS], zb[MAXRUNS];
            memset(za, 0, sizeof za);
            memset(zb, 0, sizeof zb);
            rc = measure(m, &layers[l], batches[b], 0, 0, za, k);
            if (rc == VEIL_OK)
                rc = measure(m, &layers[l], batches[b], 1, wid++, zb, k + 1);
            if (rc == VEIL_OK)
                rc = compare(m, za, zb, k);
            k += 2;
        }
    if (rc != VEIL_OK)
        fprintf(stderr, "process %d: %s\n", veil_mpc_self(m), veil_last_error());
    return rc == VEIL_OK ? 0 : 1;
}

int main(int argc, char **argv)
{
    int nparties = 2;
    if (argc > 2 && strcmp(argv[1], "-n") == 0) {
        nparties = atoi(argv[2]);
        argc -= 2, argv += 2;
    }
    if (argc > 1)
        nruns = atoi(argv[1]);
    if (nruns < 2 || nruns > MAXRUNS || nparties < 2 || nparties > 8) {
        fprintf(stderr, "usage: bench_wstat [-n parties (2..8)] [runs (2..%d)]\n", MAXRUNS);
        return 2;
    }
    rows = veil_test_mpc_shared(MAXROWS * sizeof *rows);
    plain_words = 100 * 6 * 28 * 28 + MAXRUNS; /* the largest operand, shifted per run */
    plain = malloc(plain_words * 8);
    if (!rows || !plain)
        return 1;
    uint8_t seed[VEIL_SEED_BYTES] = {9};
    veil_prg_t *g = veil_prg_new(seed);
    if (!g || veil_prg_fill(g, plain, plain_words) != VEIL_OK)
        return 1;
    veil_prg_destroy(&g);
    struct veil_test_mpc_opts o = {
        .nparties = nparties, .material = VEIL_MPC_MAT_DEALER, .frac_bits = -1, .timeout_s = 1800};
    double t0 = veil_now();
    if (veil_test_mpc_run(&o, body, NULL) != 0)
        return 1;
    printf("N = %d parties + dealer, %d runs per layer and mode, %.1f s wall\n", nparties, nruns,
           veil_now() - t0);
    printf("%-6s %5s %-5s %9s %9s %12s %12s %13s %12s %8s %6s\n", "layer", "batch", "mode", "|x|",
           "|w|", "run 1 B", "later B/run", "total B", "dealer B/run", "s/run", "same");
    int status = 0;
    uint64_t tot[2][2] = {{0}};
    for (int i = 0; i < MAXROWS && rows[i].runs; i++) {
        const struct row *r = &rows[i];
        uint64_t total = r->first + r->later;
        tot[r->batch == 1][r->ws] += total;
        printf("%-6s %5zu %-5s %9zu %9zu %12llu %12llu %13llu %12llu %8.4f %6s\n", r->layer,
               r->batch, r->ws ? "ws" : "plain", r->xw, r->ww, (unsigned long long)r->first,
               (unsigned long long)(r->later / (uint64_t)(r->runs - 1)), (unsigned long long)total,
               (unsigned long long)(r->dealer / (uint64_t)r->runs), r->secs / r->runs,
               r->mismatch ? "NO" : "yes");
        status |= r->mismatch;
    }
    for (int b = 0; b < 2; b++)
        printf("LeNet-5 linear layers, batch %zu, %d runs: plain %llu B, ws %llu B (%.1f%% of "
               "plain; %.1f%% saved)\n",
               batches[b], nruns, (unsigned long long)tot[b][0], (unsigned long long)tot[b][1],
               100.0 * (double)tot[b][1] / (double)tot[b][0],
               100.0 - 100.0 * (double)tot[b][1] / (double)tot[b][0]);
    veil_test_mpc_shared_free(rows, MAXROWS * sizeof *rows);
    free(plain);
    return status;
}

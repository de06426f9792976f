/* Tests the placement arithmetic of sched/partition.c.
 *
 * Worked example (checked by hand): 4 layers, forward times f = 2, 1, 3, 2 and backward times
 * g = 4, 2, 6, 4 per micro-batch, M = 3 micro-batches, 2 devices. Sums: 8 forward, 16 backward.
 * With the closed form T = 8 + 16 + (M - 1)(max stage f + max stage g):
 *   cut after layer 1: stages f {2, 6}, g {4, 12}: T = 24 + 2 * (6 + 12) = 60
 *   cut after layer 2: stages f {3, 5}, g {6, 10}: T = 24 + 2 * (5 + 10) = 54   <- best
 *   cut after layer 3: stages f {6, 2}, g {12, 4}: T = 24 + 2 * (6 + 12) = 60
 * By the bubble recursion for the best cut: forward, stage 1 finishes micro-batches at 3, 6, 9;
 * stage 2 at 3 + 5 = 8, max(8, 6) + 5 = 13, max(13, 9) + 5 = 18 (F = 18). Backward runs stage 2
 * first: 10, 20, 30; then stage 1: 16, max(16, 20) + 6 = 26, max(26, 30) + 6 = 36 (G = 36).
 * T = F + G = 54.
 * With memory 0.5, 0.5, 0.5, 3 per layer and 3 per device only the cut after layer 3 fits
 * (stages hold 1.5 and 3): T = 60. With 2, 2, 1, 1 and 3 per device nothing fits: VEIL_ERR_RANGE.
 *
 * Also: the recursion equals the closed form on random plans; exhaustive search and the
 * dynamic programme find the same minimal time on 300 random small networks (with and without
 * a binding memory limit), and the DP handles a deep network (160 layers on 8 devices) no worse
 * than an even split; bad arguments are refused; and the tensor-parallel chooser follows the
 * table below. */
#include "config.h"

#include "sched/sched_internal.h"
#include "test_util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const struct veil_layer_cost example[4] = {{2, 4, 1}, {1, 2, 1}, {3, 6, 1}, {2, 4, 1}};

static int near(double a, double b)
{
    return fabs(a - b) <= 1e-9 * (1 + fabs(a) + fabs(b));
}

static void check_worked_example(void)
{
    struct veil_pipeline_plan plan;
    struct veil_layer_cost l[4];
    memcpy(l, example, sizeof(l));
    for (unsigned c = 1; c <= 3; c++) {
        struct veil_pipeline_plan p = {.nstages = 2, .first = {0, c}, .count = {c, 4 - c}};
        double want = c == 2 ? 54 : 60;
        double t = veil_pipeline_time(l, 4, &p, 3);
        VT_CHECK(near(t, want), "cut %u: T = %g, want %g", c, t, want);
    }
    VT_CHECK(veil_partition_exhaustive(l, 4, 2, 3, 100, &plan) == VEIL_OK, "exhaustive");
    VT_CHECK(plan.nstages == 2 && plan.first[1] == 2 && plan.count[0] == 2 && plan.count[1] == 2 &&
                 near(plan.time, 54),
             "exhaustive plan: first[1] %u, T %g", plan.first[1], plan.time);
    VT_CHECK(veil_partition_dp(l, 4, 2, 3, 100, &plan) == VEIL_OK, "dp");
    VT_CHECK(plan.first[1] == 2 && near(plan.time, 54), "dp plan: first[1] %u, T %g", plan.first[1],
             plan.time);
    /* Memory forces the cut after layer 3. */
    l[0].mem = l[1].mem = l[2].mem = 0.5;
    l[3].mem = 3;
    VT_CHECK(veil_partition_exhaustive(l, 4, 2, 3, 3, &plan) == VEIL_OK && plan.first[1] == 3 &&
                 near(plan.time, 60),
             "memory-bound exhaustive: first[1] %u T %g", plan.first[1], plan.time);
    VT_CHECK(veil_partition_dp(l, 4, 2, 3, 3, &plan) == VEIL_OK && plan.first[1] == 3 &&
                 near(plan.time, 60),
             "memory-bound dp: first[1] %u T %g", plan.first[1], plan.time);
    l[0].mem = l[1].mem = 2;
    l[2].mem = l[3].mem = 1;
    VT_CHECK(veil_partition_exhaustive(l, 4, 2, 3, 3, &plan) == VEIL_ERR_RANGE, "infeasible ex");
    VT_CHECK(veil_partition_dp(l, 4, 2, 3, 3, &plan) == VEIL_ERR_RANGE, "infeasible dp");
    /* One micro-batch: T = sum f + sum g whatever the cut. */
    VT_CHECK(veil_partition_dp(example, 4, 2, 1, 100, &plan) == VEIL_OK && near(plan.time, 24),
             "M = 1: T %g", plan.time);
}

static uint64_t rng = 0x243f6a8885a308d3u;
static double urand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (double)(rng >> 11) / 9007199254740992.0;
}

/* Closed form of the report's model for a plan. */
static double closed_form(const struct veil_layer_cost *l, unsigned n,
                          const struct veil_pipeline_plan *p, unsigned m)
{
    double sf = 0, sg = 0, mf = 0, mg = 0;
    for (unsigned s = 0; s < p->nstages; s++) {
        double f = 0, g = 0;
        for (unsigned i = p->first[s]; i < p->first[s] + p->count[s]; i++)
            f += l[i].fwd, g += l[i].bwd;
        sf += f, sg += g;
        mf = f > mf ? f : mf;
        mg = g > mg ? g : mg;
    }
    (void)n;
    return sf + sg + (m - 1) * (mf + mg);
}

static void check_random(void)
{
    struct veil_layer_cost l[10];
    for (int trial = 0; trial < 300; trial++) {
        unsigned n = 1 + (unsigned)(urand() * 9.999), d = 1 + (unsigned)(urand() * 3.999);
        unsigned m = 1 + (unsigned)(urand() * 7.999);
        if (d > n)
            d = n;
        double total = 0;
        for (unsigned i = 0; i < n; i++) {
            /* integers keep the comparisons exact; ReLU-like layers: slow, small */
            l[i].fwd = 1 + (int)(urand() * 20);
            l[i].bwd = 1 + (int)(urand() * 40);
            l[i].mem = 1 + (int)(urand() * 10);
            total += l[i].mem;
        }
        double cap = trial % 2 ? 1e9 : total / d + 6; /* odd trials unconstrained */
        struct veil_pipeline_plan pe, pd;
        int re = veil_partition_exhaustive(l, n, d, m, cap, &pe);
        int rd = veil_partition_dp(l, n, d, m, cap, &pd);
        VT_CHECK(re == rd, "trial %d: exhaustive %d, dp %d", trial, re, rd);
        if (re == VEIL_OK && rd == VEIL_OK) {
            VT_CHECK(near(pe.time, pd.time), "trial %d (n %u d %u m %u): %g vs %g", trial, n, d, m,
                     pe.time, pd.time);
            VT_CHECK(near(pd.time, closed_form(l, n, &pd, m)), "trial %d closed form", trial);
            for (unsigned s = 0; s < d; s++) {
                double mem = 0;
                for (unsigned i = pd.first[s]; i < pd.first[s] + pd.count[s]; i++)
                    mem += l[i].mem;
                VT_CHECK(mem <= cap, "trial %d: stage %u holds %g > %g", trial, s, mem, cap);
            }
        }
    }
}

static void check_deep(void)
{
    enum { N = 160, D = 8, M = 16 };
    struct veil_layer_cost l[N];
    for (unsigned i = 0; i < N; i++) {
        l[i].fwd = 1 + urand() * 10;
        l[i].bwd = 2 * l[i].fwd + urand();
        l[i].mem = 1;
    }
    struct veil_pipeline_plan dp, even = {.nstages = D};
    VT_CHECK(veil_partition_dp(l, N, D, M, 30, &dp) == VEIL_OK, "deep dp");
    for (unsigned s = 0; s < D; s++) {
        even.first[s] = s * (N / D);
        even.count[s] = N / D;
    }
    double te = veil_pipeline_time(l, N, &even, M);
    VT_CHECK(dp.time > 0 && dp.time <= te + 1e-9, "deep: dp %g worse than even split %g", dp.time,
             te);
    VT_CHECK(near(dp.time, closed_form(l, N, &dp, M)), "deep closed form");
    struct veil_pipeline_plan ex;
    VT_CHECK(veil_partition_exhaustive(l, N, D, M, 30, &ex) == VEIL_ERR_RANGE,
             "exhaustive must refuse C(159, 7) candidates");
    veil_test_log("deep: dp %.1f, even split %.1f", dp.time, te);
}

static void check_bad(void)
{
    struct veil_pipeline_plan p;
    struct veil_layer_cost neg = {-1, 1, 1};
    VT_CHECK(veil_partition_dp(example, 4, 5, 3, 100, &p) == VEIL_ERR_INVAL, "devices > layers");
    VT_CHECK(veil_partition_dp(example, 4, 0, 3, 100, &p) == VEIL_ERR_INVAL, "0 devices");
    VT_CHECK(veil_partition_exhaustive(example, 4, 2, 0, 100, &p) == VEIL_ERR_INVAL, "0 batches");
    VT_CHECK(veil_partition_dp(NULL, 4, 2, 3, 100, &p) == VEIL_ERR_INVAL, "NULL layers");
    VT_CHECK(veil_partition_exhaustive(&neg, 1, 1, 3, 100, &p) == VEIL_ERR_INVAL, "negative");
    struct veil_pipeline_plan gap = {.nstages = 2, .first = {0, 3}, .count = {2, 1}};
    VT_CHECK(veil_pipeline_time(example, 4, &gap, 3) < 0, "plan with a gap");
}

struct tp_case {
    size_t m, k, n;
    unsigned d;
    enum veil_tp_layout a, b;
    enum veil_tp_split want;
    double cost;
};

/* Costs by hand (d = 4, so (d - 1) = 3 and (d - 1) / d = 3/4):
 *  1 replicated operands: rows 0.
 *  2 A row-sharded: rows 0.
 *  3 B column-sharded: rows would gather B (3 * 1e4), columns 0.
 *  4 A col-, B row-sharded, 10x1000x10: rows 7500 + 30000, columns 30000 + 7500, inner 3*100.
 *  5 same layouts, 1000x10x1000: rows 37500 = columns 37500 < inner 3e6: tie -> rows.
 *  6 A row-, B col-sharded, 100^3: rows 0 + 3e4, columns 3e4 + 0, inner 7500+7500+3e4 -> rows.
 *  7 A replicated, B row-sharded, 10x1000x10: rows 3e4, columns 7500, inner 300.
 *  8 one device: rows 0. */
static const struct tp_case tp_table[] = {
    {100, 100, 100, 4, VEIL_TP_REPLICATED, VEIL_TP_REPLICATED, VEIL_TP_ROWS, 0},
    {100, 100, 100, 4, VEIL_TP_ROW_SHARDED, VEIL_TP_REPLICATED, VEIL_TP_ROWS, 0},
    {100, 100, 100, 4, VEIL_TP_REPLICATED, VEIL_TP_COL_SHARDED, VEIL_TP_COLUMNS, 0},
    {10, 1000, 10, 4, VEIL_TP_COL_SHARDED, VEIL_TP_ROW_SHARDED, VEIL_TP_INNER, 300},
    {1000, 10, 1000, 4, VEIL_TP_COL_SHARDED, VEIL_TP_ROW_SHARDED, VEIL_TP_ROWS, 37500},
    {100, 100, 100, 4, VEIL_TP_ROW_SHARDED, VEIL_TP_COL_SHARDED, VEIL_TP_ROWS, 30000},
    {10, 1000, 10, 4, VEIL_TP_REPLICATED, VEIL_TP_ROW_SHARDED, VEIL_TP_INNER, 300},
    {10, 1000, 10, 1, VEIL_TP_COL_SHARDED, VEIL_TP_ROW_SHARDED, VEIL_TP_ROWS, 0},
};

static void check_tp(void)
{
    for (size_t i = 0; i < sizeof(tp_table) / sizeof(tp_table[0]); i++) {
        const struct tp_case *c = &tp_table[i];
        double cost = -1;
        enum veil_tp_split s = veil_tp_choose(c->m, c->k, c->n, c->d, c->a, c->b, &cost);
        VT_CHECK(s == c->want && near(cost, c->cost), "tp case %zu: %s cost %g, want %s %g", i + 1,
                 veil_tp_split_name(s), cost, veil_tp_split_name(c->want), c->cost);
    }
    VT_CHECK(strcmp(veil_tp_split_name(VEIL_TP_INNER), "inner") == 0, "name");
    VT_CHECK(veil_tp_choose(5, 5, 5, 2, VEIL_TP_REPLICATED, VEIL_TP_REPLICATED, NULL) ==
                 VEIL_TP_ROWS,
             "NULL cost");
}

int main(void)
{
    check_worked_example();
    check_random();
    check_deep();
    check_bad();
    check_tp();
    return veil_test_status();
}

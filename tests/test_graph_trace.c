/* Tests per-party tracing and the busy / overlap profile of the secure executor: a small
 * LeNet-like plan (conv2d, relu, maxpool, flatten, dense, argmax) runs twice with 2 parties and
 * the dealer, as real processes, with trace_path set, under the scheduler named by argv[2]
 * (default lws). Checks, for every process and run: veil_party_last_profile succeeds, its
 * percentages are consistent (compute + network - overlap + idle = 100 within rounding, each in
 * [0, 100], stretch >= 1, overlap share in [0, 1] and equal to overlap / the longer of compute
 * and network, region walls within the run's), the threads' CPU use is measured and consistent
 * (check_cpu), the regions the plan has recorded
 * events at the parties (messages for input, tasks for linear, relu, pooling, argmax), the
 * outputs match a plaintext FIXED run; and that with tracing off nothing is recorded, no file
 * is written and the profile is refused. The trace files land in argv[1] (trace-<pid>.json) for
 * tests/test_graph_trace.sh, which parses them with python3 and draws them with trace_svg.py.
 * Before the session, veil_trace_busy_figures is checked on hand-made spans whose figures are
 * worked out by hand (check_hand_case).
 * Usage: test_graph_trace DIR [SCHED] [--off | --env (trace path from VEIL_TRACE)]. */
#include "config.h"
#include "base/trace.h"
#include "test_graph_util.h"
#include "test_mpc_util.h"
#include "test_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NPROC 3
#define NRUNS 2

struct shared {
    struct veil_run_profile prof[NPROC][NRUNS];
    struct veil_run_stats stats[NPROC][NRUNS];
    int prof_rc[NPROC][NRUNS];
    double out[NPROC][NRUNS][64];
    size_t recorded[NPROC]; /* events in the recorder after the runs (tracing off) */
};

static struct shared *sh;
static veil_plan_t *plan;
static struct veil_feed feeds[8];
static size_t nfeeds;
static char trace_pattern[1024];
static int tracing = 1;
static int from_env; /* --env: the path comes from VEIL_TRACE (as under veil-run) */

static uint64_t rng = 0x2545f4914f6cdd1du;
static double uniform(double lo, double hi)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return lo + (hi - lo) * (double)(rng >> 11) / 9007199254740992.0;
}

static void feed(const char *name, size_t numel, double lo, double hi)
{
    double *v = malloc(numel * sizeof *v);
    for (size_t i = 0; i < numel; i++)
        v[i] = uniform(lo, hi);
    feeds[nfeeds++] = (struct veil_feed){.name = name, .values = v, .numel = numel};
}

static void lenet_small(void)
{
    veil_graph_t *g = veil_graph_new("lenet_small");
    size_t dx[4] = {2, 1, 12, 12}, dw1[4] = {4, 1, 3, 3}, d4[1] = {4}, dwd[2] = {100, 10};
    size_t d10[1] = {10};
    veil_node_t *x = veil_input(g, "x", 1, 4, dx);
    veil_node_t *c1 = veil_conv2d(g, "c1", x, veil_param(g, "w1", 0, 4, dw1),
                                  veil_param(g, "b1", 0, 1, d4), 1, 0);
    /* the ReLU after the pool (the same function): a ReLU right before a pool of few windows
     * runs inside the pool (pool.h, PAIRWISE) and would leave its region empty */
    veil_node_t *mp = veil_relu(g, "r1", veil_maxpool2d(g, "mp", c1, 2, 2));
    veil_node_t *y = veil_dense(g, "fc", veil_flatten(g, "flat", mp),
                                veil_param(g, "wd", 0, 2, dwd), veil_param(g, "bd", 0, 1, d10));
    veil_reveal(g, y, VEIL_ALL_PARTIES);
    veil_reveal(g, veil_argmax(g, "class", y), 1);
    struct veil_compile_options o;
    veil_compile_options_defaults(&o);
    o.tile = 128;
    plan = veil_compile(g, &o);
    VT_CHECK(plan != NULL, "compile: %s", veil_last_error());
    veil_graph_destroy(&g);
    feed("x", 288, -1, 1);
    feed("w1", 36, -0.5, 0.5);
    feed("b1", 4, -0.1, 0.1);
    feed("wd", 1000, -0.2, 0.2);
    feed("bd", 10, -0.1, 0.1);
}

static int child(const struct veil_harness_party *me, void *arg)
{
    (void)arg;
    struct veil_party_options o;
    veil_party_options_defaults(&o);
    o.trace_path = tracing && !from_env ? trace_pattern : NULL;
    if (!tracing)
        unsetenv("VEIL_TRACE");
    veil_party_t *pt = veil_party_open(plan, &o);
    if (!pt) {
        fprintf(stderr, "process %d: open: %s\n", me->id, veil_last_error());
        return 3;
    }
    int code = 0;
    for (int run = 0; run < NRUNS && code == 0; run++) {
        double *outs[2] = {sh->out[me->id][run], NULL};
        if (veil_run(pt, feeds, nfeeds, outs) != VEIL_OK) {
            fprintf(stderr, "process %d: run %d: %s\n", me->id, run, veil_last_error());
            code = 4;
        }
        veil_party_last_stats(pt, &sh->stats[me->id][run]);
        sh->prof_rc[me->id][run] = veil_party_last_profile(pt, &sh->prof[me->id][run]);
        if (veil_test_verbose() && tracing)
            veil_run_profile_print(&sh->prof[me->id][run], stderr);
    }
    sh->recorded[me->id] = veil_trace_count();
    veil_party_close(&pt);
    return code;
}

static void check_busy(const struct veil_busy *b, const char *what)
{
    const double sum = b->compute_pct + b->network_pct - b->overlap_pct + b->idle_pct;
    const double eps = 1e-6;
    VT_CHECK(fabs(sum - 100) < 0.01 || (b->wall_s == 0 && sum == 0),
             "%s: compute %.3f + network %.3f - overlap %.3f + idle %.3f = %.3f, not 100", what,
             b->compute_pct, b->network_pct, b->overlap_pct, b->idle_pct, sum);
    VT_CHECK(b->compute_pct >= 0 && b->compute_pct <= 100 + eps && b->network_pct >= 0 &&
                 b->network_pct <= 100 + eps && b->overlap_pct >= 0 &&
                 b->overlap_pct <= b->compute_pct + eps && b->overlap_pct <= b->network_pct + eps &&
                 b->idle_pct >= 0,
             "%s: percentages out of range (%.3f %.3f %.3f %.3f)", what, b->compute_pct,
             b->network_pct, b->overlap_pct, b->idle_pct);
    VT_CHECK(b->stretch >= 1 - 1e-9 || (b->compute_s == 0 && b->network_s == 0),
             "%s: stretch %.4f < 1", what, b->stretch);
    const double longer = b->compute_s > b->network_s ? b->compute_s : b->network_s;
    VT_CHECK(b->overlap_share >= 0 && b->overlap_share <= 1 + eps &&
                 fabs(b->overlap_share - (longer > 0 ? b->overlap_s / longer : 0)) < 1e-9,
             "%s: overlap share %.6f, overlap %.9f s, longer of compute and network %.9f s", what,
             b->overlap_share, b->overlap_s, longer);
}

/* veil_trace_busy_figures on spans worked out by hand (microseconds, window [0, 100]):
 *  tasks [10, 30] [20, 50] [70, 80] -> C = [10, 50] u [70, 80], |C| = 50;
 *  messages [90, 95] [40, 75]       -> N = [40, 75] u [90, 95], |N| = 40;
 *  C n N = [40, 50] u [70, 75], 15; idle 100 - (50 + 40 - 15) = 25;
 *  overlap share 15 / max(50, 40) = 0.30, stretch 100 / 50 = 2.0.
 * Then the network as the longer resource: the same messages against the one task [45, 55]:
 *  |C| = 10, |N| = 40, C n N = [45, 55], 10: overlap share 10 / 40 = 0.25, stretch 2.5. And
 * nothing busy: both figures 0. */
static void check_hand_case(void)
{
    struct veil_trace_span c[3] = {{10, 30}, {70, 80}, {20, 50}}, m[2] = {{90, 95}, {40, 75}};
    struct veil_busy b = {0};
    veil_trace_busy_figures(c, 3, m, 2, 100, &b);
    VT_CHECK(fabs(b.compute_pct - 50) < 1e-9 && fabs(b.network_pct - 40) < 1e-9 &&
                 fabs(b.overlap_pct - 15) < 1e-9 && fabs(b.idle_pct - 25) < 1e-9,
             "hand case: compute %.3f network %.3f overlap %.3f idle %.3f, expected 50 40 15 25",
             b.compute_pct, b.network_pct, b.overlap_pct, b.idle_pct);
    VT_CHECK(fabs(b.overlap_share - 0.30) < 1e-12 && fabs(b.stretch - 2.0) < 1e-12,
             "hand case: overlap share %.6f (expected 0.30), stretch %.6f (expected 2.0)",
             b.overlap_share, b.stretch);
    VT_CHECK(fabs(b.wall_s - 100e-6) < 1e-15 && fabs(b.overlap_s - 15e-6) < 1e-15,
             "hand case: wall %.9f s, overlap %.9f s", b.wall_s, b.overlap_s);
    struct veil_trace_span c2[1] = {{45, 55}}, m2[2] = {{90, 95}, {40, 75}};
    veil_trace_busy_figures(c2, 1, m2, 2, 100, &b);
    VT_CHECK(fabs(b.overlap_share - 0.25) < 1e-12 && fabs(b.stretch - 2.5) < 1e-12,
             "hand case, network longer: overlap share %.6f (expected 0.25), stretch %.6f "
             "(expected 2.5)",
             b.overlap_share, b.stretch);
    veil_trace_busy_figures(c2, 0, m2, 0, 100, &b);
    VT_CHECK(b.overlap_share == 0 && b.stretch == 0 && b.idle_pct == 100,
             "nothing busy: overlap share %.3f, stretch %.3f, idle %.3f", b.overlap_share,
             b.stretch, b.idle_pct);
}

/* The run's CPU use (struct veil_cpu_use): measured, every role's time non-negative and their
 * sum the total, the workers and the submitting thread on a CPU, and at a party (at_party) the
 * network's I/O thread (told by its name) too, a window that holds the run (and the snapshots' own
 * reads), no more CPU than the process's CPUs had in it, busy_pct the total over window x cpus. */
static void check_cpu(const struct veil_run_profile *p, int at_party, const char *what)
{
    const struct veil_cpu_use *c = &p->cpu;
    const long online = sysconf(_SC_NPROCESSORS_ONLN);
    VT_CHECK(c->cpus >= 1 && c->cpus <= (online > 0 ? online : 1024), "%s: %d CPUs", what, c->cpus);
    double sum = 0;
    for (int r = 0; r < VEIL_CPU_ROLE_COUNT; r++) {
        VT_CHECK(c->cpu_s[r] >= 0 && c->wait_s[r] >= 0,
                 "%s: role %s: %.6f s on a CPU, %.6f s "
                 "waiting",
                 what, veil_cpu_role_name(r), c->cpu_s[r], c->wait_s[r]);
        sum += c->cpu_s[r];
    }
    VT_CHECK(fabs(sum - c->total_s) < 1e-9, "%s: roles add up to %.6f s, total %.6f s", what, sum,
             c->total_s);
    /* the dealer's I/O thread may sleep through a run: it deals a run's material ahead of it,
     * and a small send goes out inline from the thread that posts it (net/comm.c) */
    const int used[] = {VEIL_CPU_WORKERS, VEIL_CPU_SUBMIT, VEIL_CPU_NET};
    for (size_t i = 0; i < (at_party ? 3u : 2u); i++)
        VT_CHECK(c->cpu_s[used[i]] > 0, "%s: no CPU time for role %s", what,
                 veil_cpu_role_name(used[i]));
    VT_CHECK(c->window_s >= p->total.wall_s - 1e-4 && c->window_s <= p->total.wall_s + 0.25,
             "%s: a CPU window of %.6f s around a %.6f s run", what, c->window_s, p->total.wall_s);
    VT_CHECK(c->total_s <= c->cpus * c->window_s * 1.001 + 1e-4,
             "%s: %.6f s of CPU in %.6f s on "
             "%d CPUs",
             what, c->total_s, c->window_s, c->cpus);
    VT_CHECK(fabs(c->busy_pct - 100 * c->total_s / (c->window_s * c->cpus)) < 1e-6,
             "%s: busy %.4f%%, total %.6f s over %.6f s x %d", what, c->busy_pct, c->total_s,
             c->window_s, c->cpus);
    veil_test_log("%s: cpu %.1f%% of %d: workers %.3f ms (waited %.3f), submit %.3f, net %.3f, "
                  "zmq %.3f, wiper %.3f, other %.3f",
                  what, c->busy_pct, c->cpus, 1e3 * c->cpu_s[VEIL_CPU_WORKERS],
                  1e3 * c->wait_s[VEIL_CPU_WORKERS], 1e3 * c->cpu_s[VEIL_CPU_SUBMIT],
                  1e3 * c->cpu_s[VEIL_CPU_NET], 1e3 * c->cpu_s[VEIL_CPU_ZMQ],
                  1e3 * c->cpu_s[VEIL_CPU_WIPER], 1e3 * c->cpu_s[VEIL_CPU_OTHER]);
}

static void check_traced(const char *sched)
{
    const int want[] = {VEIL_REGION_INPUT, VEIL_REGION_LINEAR, VEIL_REGION_RELU,
                        VEIL_REGION_POOLING, VEIL_REGION_ARGMAX};
    for (int q = 0; q < NPROC; q++)
        for (int run = 0; run < NRUNS; run++) {
            const struct veil_run_profile *p = &sh->prof[q][run];
            char what[96];
            snprintf(what, sizeof what, "%s process %d run %d", sched, q, run);
            VT_CHECK(sh->prof_rc[q][run] == VEIL_OK, "%s: no profile", what);
            VT_CHECK(p->run == run, "%s: profile of run %d", what, p->run);
            VT_CHECK(p->total.tasks > 0 && p->total.wall_s > 0, "%s: %llu tasks, wall %.6f s", what,
                     (unsigned long long)p->total.tasks, p->total.wall_s);
            VT_CHECK(fabs(p->total.wall_s - sh->stats[q][run].online_s) < 0.01,
                     "%s: profile wall %.6f s, online %.6f s", what, p->total.wall_s,
                     sh->stats[q][run].online_s);
            check_busy(&p->total, what);
            check_cpu(p, q < 2, what);
            for (int r = 0; r < VEIL_REGION_COUNT; r++) {
                char rw[128];
                snprintf(rw, sizeof rw, "%s region %s", what, veil_region_name(r));
                check_busy(&p->region[r], rw);
                VT_CHECK(p->region[r].wall_s <= p->total.wall_s + 1e-9, "%s: wall beyond the run",
                         rw);
            }
            /* sharing inputs is messages only; the other regions compute */
            for (size_t i = 0; q < 2 && i < sizeof want / sizeof *want; i++)
                VT_CHECK(want[i] == VEIL_REGION_INPUT ? p->region[want[i]].messages > 0
                                                      : p->region[want[i]].tasks > 0,
                         "%s: no event in region %s", what, veil_region_name(want[i]));
            veil_test_log("%s: wall %.3f ms, compute %.1f%%, network %.1f%%, overlap %.1f%%, "
                          "idle %.1f%%, overlap share %.2f, stretch %.2f, %llu tasks, %llu "
                          "messages",
                          what, p->total.wall_s * 1e3, p->total.compute_pct, p->total.network_pct,
                          p->total.overlap_pct, p->total.idle_pct, p->total.overlap_share,
                          p->total.stretch, (unsigned long long)p->total.tasks,
                          (unsigned long long)p->total.messages);
        }
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s DIR [SCHED] [--off | --env]\n", argv[0]);
        return 1;
    }
    const char *sched = argc > 2 && argv[2][0] != '-' ? argv[2] : "lws";
    tracing = !(argc > 2 && !strcmp(argv[argc - 1], "--off"));
    from_env = argc > 2 && !strcmp(argv[argc - 1], "--env");
    snprintf(trace_pattern, sizeof trace_pattern, "%s/trace-%%d.json", argv[1]);
    if (from_env)
        setenv("VEIL_TRACE", trace_pattern, 1);
    char path[64];
    VT_CHECK(veil_trace_path("t-%d-%%.json", 3, path, sizeof path) == VEIL_OK &&
                 !strcmp(path, "t-3-%.json"),
             "trace path expansion: '%s'", path);
    VT_CHECK(veil_trace_path("t-%s.json", 3, path, sizeof path) == VEIL_ERR_INVAL &&
                 veil_trace_path("t-%d-%d.json", 3, path, sizeof path) == VEIL_ERR_INVAL &&
                 veil_trace_path("a-long-name-%d", 3, path, 8) == VEIL_ERR_INVAL,
             "bad trace path patterns must be refused");
    check_hand_case();
    sh = veil_test_mpc_shared(sizeof *sh);
    if (!sh)
        return 1;
    lenet_small();
    double *want[2] = {calloc(20, sizeof(double)), calloc(2, sizeof(double))};
    VT_CHECK(veil_plain_run(plan, VEIL_PLAIN_FIXED, feeds, nfeeds, want) == VEIL_OK,
             "plaintext reference: %s", veil_last_error());
    if (veil_test_failures)
        return veil_test_status();
    struct veil_test_graph_opts o = {.nparties = 2, .dealer = 1, .sched = sched};
    VT_CHECK(veil_test_graph_run(&o, child, NULL, NULL) == VEIL_OK, "%s: the secure run failed",
             sched);
    for (int q = 0; q < 2; q++)
        for (int run = 0; run < NRUNS; run++)
            for (int i = 0; i < 20; i++)
                VT_CHECK(fabs(sh->out[q][run][i] - want[0][i]) < 1e-3,
                         "party %d run %d: output %d is %.6f, plaintext %.6f", q, run, i,
                         sh->out[q][run][i], want[0][i]);
    if (tracing) {
        check_traced(sched);
    } else {
        for (int q = 0; q < NPROC; q++) {
            char file[1100];
            snprintf(file, sizeof file, "%s/trace-%d.json", argv[1], q);
            VT_CHECK(sh->recorded[q] == 0, "tracing off: process %d recorded %zu events", q,
                     sh->recorded[q]);
            VT_CHECK(sh->prof_rc[q][0] == VEIL_ERR_STATE && sh->prof_rc[q][1] == VEIL_ERR_STATE,
                     "tracing off: process %d got a profile (%d)", q, sh->prof_rc[q][0]);
            VT_CHECK(access(file, F_OK) != 0, "tracing off: %s was written", file);
        }
    }
    free(want[0]);
    free(want[1]);
    for (size_t f = 0; f < nfeeds; f++)
        free((void *)feeds[f].values);
    veil_plan_destroy(&plan);
    veil_test_mpc_shared_free(sh, sizeof *sh);
    return veil_test_status();
}

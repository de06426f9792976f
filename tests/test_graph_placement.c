/* Tests placement across the devices of one party (issue 8): the MLP, the CNN and the attention
 * block of test_graph_secure.c run with 2 parties and the dealer, each party's StarPU given 2 (and
 * for DP 3) CPU workers as its devices, under SINGLE, DP, PP, TP (the chooser's split and the
 * inner split forced) and HYBRID placement. The dealer derives the material from a fixed seed
 * (material_seed, a test option), so each session opens the same masked values and every
 * truncation rounds the same way, and the revealed outputs must equal the single-device
 * session's bit for bit (a session with another seed, as a control, does differ). Proof of placement: every task a party submits is pinned to a worker, and per
 * worker the tasks StarPU ran (profiling's executed_tasks) equal those pinned there; SINGLE
 * leaves the second worker idle, the other placements use every device. The cost model is
 * checked on hand-computed numbers (a large dense layer: AUTO picks DP; a tiny one: SINGLE), and
 * with calibrated node times (a pipeline partition that the measured times change). A PP session
 * with calibrate on runs twice: every product has a measured time, the placement after run 0 is
 * the partition of the measured times, and the calibrated run 1 agrees with the plaintext model.
 * Bad input: more devices than workers, an unknown placement name (option and VEIL_PLACEMENT),
 * an unknown device kind (VEIL_DEVICE_KIND), a worker nice value out of range (VEIL_WORKER_NICE),
 * a calibration flag that is not 0 or 1 (VEIL_CALIBRATE). On CUDA devices (check_cuda) the same
 * networks must give the same bits; without a CUDA worker, asking for CUDA devices is refused at
 * open. With no placement, a process with CUDA workers runs small outputs on its CPU workers,
 * except products of 2^22 multiply-adds or more (veil_place_small_on_cpu): the rule is checked on
 * its inputs.
 * The networks are test_graph_nets.c's. */
#include "config.h"
#include "base/base_internal.h"
#include "codelets/codelets_internal.h"
#include "graph/secure/exec_internal.h"
#include "graph/secure/party_internal.h"
#include "test_graph_nets.h"
#include "test_graph_util.h"
#include "test_mpc_util.h"
#include "test_util.h"

#include <math.h>
#include <starpu.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXOUT VEIL_TEST_NET_MAXOUT
#define MAXW 4
#define NPROC 3

/* One session's configuration and what its children report (memory shared across fork). */
struct cfg {
    enum veil_placement placement;
    int devices, ncpu, group;
    int cuda;                  /* the devices are CUDA workers (else CPU workers) */
    int mixed;                 /* kind AUTO on one GPU: the GPU, then CPU workers (devices.c) */
    enum veil_tp_force tp;
    uint8_t seed_tag;          /* the material seed's distinguishing byte */
    const char *env_name;      /* a variable set to env_value for the children, or NULL */
    const char *env_value;
    int expect_open_fail;      /* the open must fail with a message containing fail_says */
    const char *fail_says;
    int calibrate;             /* run 0 calibrates (options.calibrate), then a second run */
};
struct shared {
    double out[NPROC][MAXOUT][256];
    unsigned long long pinned[NPROC][MAXW], executed[NPROC][MAXW];
    int placement[NPROC], devices[NPROC], kind[NPROC];
    int no_cuda[NPROC]; /* a CUDA session's open was refused: StarPU has no CUDA worker */
    int ncuda[NPROC];   /* StarPU's CUDA workers */
    double online_s[NPROC];
    double out1[NPROC][MAXOUT][256]; /* a calibrating session's second run */
    int calib_nodes[NPROC];          /* computing nodes with a measured time > 0 */
    int calib_products[NPROC];       /* product nodes, and of them measured > 0: */
    int calib_products_timed[NPROC];
    int calib_stages_agree[NPROC];   /* the placement is the partition of the measured times */
};

static struct veil_test_net *cur;
static struct cfg *ccfg;
static struct shared *sh;

/* After a calibrating session's runs (in the party): the measured node times are there, every
 * product took time, and the placement is the pipeline partition of those times (recomputed
 * here with the same partitioner, stage s on device s). */
static void check_calibration(veil_party_t *pt, int id)
{
    const veil_plan_t *p = pt->p;
    if (!pt->node_s || !pt->x.place)
        return;
    int *stage = calloc(p->count, sizeof *stage);
    int workers[MAXW];
    const int nw = (int)starpu_worker_get_ids_by_type(STARPU_CPU_WORKER, workers, MAXW);
    if (!stage || veil_placement_pipeline(p, p->count, pt->ndev, pt->x.tile, pt->node_s, stage) < 0) {
        free(stage);
        return;
    }
    int agree = 1;
    for (size_t i = 0; i < p->count; i++) {
        const struct veil_node *n = &p->nodes[i];
        const int leaf = n->op == VEIL_OP_INPUT || n->op == VEIL_OP_PARAM || n->op == VEIL_OP_CONST;
        const int product = n->op == VEIL_OP_DENSE || n->op == VEIL_OP_CONV2D || n->op == VEIL_OP_MATMUL;
        sh->calib_nodes[id] += !leaf && pt->node_s[i] > 0;
        sh->calib_products[id] += product;
        sh->calib_products_timed[id] += product && pt->node_s[i] > 0;
        agree &= stage[i] < nw && pt->x.place[i].ndev == 1 && pt->x.place[i].dev[0] == workers[stage[i]];
    }
    sh->calib_stages_agree[id] = agree;
    free(stage);
}

static int child(const struct veil_harness_party *me, void *arg)
{
    (void)arg;
    char ncpu[16];
    snprintf(ncpu, sizeof ncpu, "%d", ccfg->ncpu);
    setenv("STARPU_NCPU", ncpu, 1); /* before veil_party_open's starpu_init */
    if (ccfg->env_name)
        setenv(ccfg->env_name, ccfg->env_value, 1);
    /* the dealer's material from a fixed seed (same masks in every session of this seed_tag) */
    char seed[33];
    snprintf(seed, sizeof seed, "%02x5eed00000000000000000000000000", (unsigned)ccfg->seed_tag);
    struct veil_party_options o;
    veil_party_options_defaults(&o);
    o.material_seed = seed;
    o.placement = ccfg->placement;
    o.devices = ccfg->devices;
    o.group = ccfg->group;
    o.tp_split = ccfg->tp;
    o.calibrate = ccfg->calibrate;
    o.device_kind = ccfg->cuda ? VEIL_DEVICE_CUDA
                    : ccfg->mixed || (ccfg->env_name && !strcmp(ccfg->env_name, "VEIL_DEVICE_KIND"))
                        ? VEIL_DEVICE_AUTO /* the variable or the worker counts decide */
                        : VEIL_DEVICE_CPU;
    veil_party_t *pt = veil_party_open(cur->plan, &o);
    if (!pt && ccfg->cuda && strstr(veil_last_error(), "no CUDA worker")) {
        sh->no_cuda[me->id] = 1; /* no GPU (or no CUDA in StarPU): check_cuda's answer */
        return 0;
    }
    if (ccfg->expect_open_fail) {
        if (pt || !strstr(veil_last_error(), ccfg->fail_says)) {
            fprintf(stderr, "process %d: open should fail saying '%s', got: %s\n", me->id,
                    ccfg->fail_says, pt ? "success" : veil_last_error());
            veil_party_close(&pt);
            return 1;
        }
        return 0;
    }
    if (!pt) {
        fprintf(stderr, "process %d: open: %s\n", me->id, veil_last_error());
        return 3;
    }
    enum veil_placement pl;
    enum veil_device_kind kind;
    veil_party_placement(pt, &pl, &sh->devices[me->id]);
    veil_party_device_kind(pt, &kind);
    sh->placement[me->id] = (int)pl;
    sh->kind[me->id] = (int)kind;
    sh->ncuda[me->id] = (int)starpu_worker_get_count_by_type(STARPU_CUDA_WORKER);
    starpu_profiling_status_set(STARPU_PROFILING_ENABLE);
    /* the workers of the party's device kind, device d being ids[d] (veil_party_open's order) */
    int ids[MAXW];
    int nw = (int)starpu_worker_get_ids_by_type(
        kind == VEIL_DEVICE_CUDA ? STARPU_CUDA_WORKER : STARPU_CPU_WORKER, ids, MAXW);
    if (kind == VEIL_DEVICE_CUDA && nw == 1 && sh->devices[me->id] > 1) /* one GPU + CPU workers */
        nw += (int)starpu_worker_get_ids_by_type(STARPU_CPU_WORKER, ids + 1, MAXW - 1);
    unsigned long long before[MAXW] = {0};
    for (int d = 0; d < nw; d++) {
        struct starpu_profiling_worker_info info;
        starpu_profiling_worker_get_info(ids[d], &info); /* resets the worker's counters */
        before[d] = veil_place_pinned(ids[d]);
    }
    double *outs[MAXOUT] = {NULL};
    for (size_t k = 0; k < veil_plan_output_count(cur->plan); k++)
        outs[k] = sh->out[me->id][k];
    int code = 0;
    if (veil_run(pt, cur->feeds, cur->nfeeds, outs) != VEIL_OK) {
        fprintf(stderr, "process %d: run: %s\n", me->id, veil_last_error());
        code = 4;
    }
    if (code == 0 && ccfg->calibrate) {
        for (size_t k = 0; k < veil_plan_output_count(cur->plan); k++)
            outs[k] = sh->out1[me->id][k];
        if (veil_run(pt, cur->feeds, cur->nfeeds, outs) != VEIL_OK) {
            fprintf(stderr, "process %d: run 1: %s\n", me->id, veil_last_error());
            code = 4;
        }
        if (!me->is_dealer)
            check_calibration(pt, me->id);
    }
    struct veil_run_stats st;
    veil_party_last_stats(pt, &st);
    sh->online_s[me->id] = st.online_s;
    for (int d = 0; d < nw; d++) {
        struct starpu_profiling_worker_info info;
        starpu_profiling_worker_get_info(ids[d], &info);
        sh->executed[me->id][d] = (unsigned long long)info.executed_tasks;
        sh->pinned[me->id][d] = veil_place_pinned(ids[d]) - before[d];
    }
    veil_party_close(&pt);
    return code;
}

/* One session of cur under c; 0 when it ran. */
static int session(struct cfg *c)
{
    ccfg = c;
    memset(sh, 0, sizeof *sh);
    struct veil_test_graph_opts o = {.nparties = 2,
                                     .dealer = 1,
                                     .timeout_s = 240,
                                     .session = "0123456789abcdef0123456789abcdef"};
    return veil_test_graph_run(&o, child, NULL, NULL) == VEIL_OK ? 0 : -1;
}

static const char *label(const struct cfg *c)
{
    static char s[64];
    static const char *tp[] = {"", "/rows", "/columns", "/inner"};
    snprintf(s, sizeof s, "%s%s x%d%s%s", veil_placement_name(c->placement), tp[c->tp],
             c->devices, c->cuda ? " cuda" : c->mixed ? " gpu+cpu" : "",
             c->calibrate ? " calibrated" : "");
    return s;
}

static struct shared *base; /* the single-device session's results */

/* Party q's revealed outputs out[k] against the plaintext model within the network's tolerance
 * (the outputs revealed to q only). */
static void check_plaintext(const struct veil_test_net *t, int q, double (*out)[256],
                            const char *what)
{
    const veil_plan_t *p = t->plan;
    for (size_t k = 0; k < veil_plan_output_count(p); k++) {
        const int to = veil_plan_output_to(p, k);
        if (to != VEIL_ALL_PARTIES && to != q)
            continue;
        for (size_t i = 0; i < veil_plan_output_numel(p, k); i++)
            VT_CHECK(fabs(out[k][i] - t->want[k][i]) <= t->tol,
                     "%s %s: party %d output %zu[%zu] = %g, plaintext %g", t->name, what, q, k, i,
                     out[k][i], t->want[k][i]);
    }
}

/* Runs one session of t under c and compares each party's outputs with base bit for bit; checks
 * the placement and device count the parties report, and that every device ran exactly the tasks
 * pinned to it (SINGLE: the first device only; the others: every device something). */
static void check_session(struct veil_test_net *t, struct cfg *c)
{
    const veil_plan_t *p = t->plan;
    if (session(c) != 0) {
        VT_CHECK(0, "%s %s: the session failed", t->name, label(c));
        return;
    }
    for (int q = 0; q < 2; q++) {
        VT_CHECK(sh->placement[q] == (int)c->placement && sh->devices[q] == c->devices &&
                     sh->kind[q] == (c->cuda || c->mixed ? VEIL_DEVICE_CUDA : VEIL_DEVICE_CPU),
                 "%s %s: party %d runs %s over %d %s devices", t->name, label(c), q,
                 veil_placement_name((enum veil_placement)sh->placement[q]), sh->devices[q],
                 veil_device_kind_name((enum veil_device_kind)sh->kind[q]));
        for (size_t k = 0; k < veil_plan_output_count(p); k++)
            VT_CHECK(memcmp(sh->out[q][k], base->out[q][k],
                            veil_plan_output_numel(p, k) * sizeof(double)) == 0,
                     "%s %s: party %d output '%s' differs from the single-device plan", t->name,
                     label(c), q, veil_plan_output_name(p, k));
        unsigned long long total = 0;
        for (int w = 0; w < c->devices; w++) {
            /* in a mixed set a CPU device also runs unpinned tasks (the material expansion,
             * which has no CUDA body) */
            VT_CHECK(c->mixed && w > 0 ? sh->executed[q][w] >= sh->pinned[q][w]
                                       : sh->executed[q][w] == sh->pinned[q][w],
                     "%s %s: party %d device %d ran %llu tasks, %llu were pinned to it", t->name,
                     label(c), q, w, sh->executed[q][w], sh->pinned[q][w]);
            total += sh->executed[q][w];
            if (c->placement == VEIL_PLACEMENT_SINGLE)
                VT_CHECK(w == 0 || sh->executed[q][w] == 0,
                         "%s single x2: party %d device %d ran %llu tasks", t->name, q, w,
                         sh->executed[q][w]);
            else
                VT_CHECK(sh->executed[q][w] > 0, "%s %s: party %d device %d ran nothing", t->name,
                         label(c), q, w);
        }
        VT_CHECK(total > 0, "%s %s: party %d ran no task on its devices", t->name, label(c), q);
        if (c->calibrate) {
            VT_CHECK(sh->calib_nodes[q] > 0 && sh->calib_products[q] > 0 &&
                         sh->calib_products_timed[q] == sh->calib_products[q],
                     "%s %s: party %d measured %d computing nodes, %d of %d products", t->name,
                     label(c), q, sh->calib_nodes[q], sh->calib_products_timed[q],
                     sh->calib_products[q]);
            VT_CHECK(sh->calib_stages_agree[q],
                     "%s %s: party %d's placement is not the partition of its measured times",
                     t->name, label(c), q);
            check_plaintext(t, q, sh->out1[q], "calibrated run 1");
        }
        veil_test_log("%s %s: party %d tasks per device %llu %llu %llu (total %llu), online "
                      "%.1f ms",
                      t->name, label(c), q, sh->executed[q][0], sh->executed[q][1],
                      sh->executed[q][2], total, 1e3 * sh->online_s[q]);
    }
}

/* Runs t under every placement and compares each party's outputs with the single-device ones. */
static void check_net(struct veil_test_net *t, int with_three)
{
    cur = t;
    struct cfg single = {.placement = VEIL_PLACEMENT_SINGLE, .devices = 1, .ncpu = 1};
    VT_CHECK(session(&single) == 0, "%s: single-device session failed", t->name);
    memcpy(base, sh, sizeof *sh);
    for (int q = 0; q < 2; q++) /* the baseline itself is right */
        check_plaintext(t, q, base->out[q], "single");
    struct cfg cfgs[] = {
        {.placement = VEIL_PLACEMENT_SINGLE, .devices = 2, .ncpu = 2},
        {.placement = VEIL_PLACEMENT_DP, .devices = 2, .ncpu = 2},
        {.placement = VEIL_PLACEMENT_PP, .devices = 2, .ncpu = 2},
        {.placement = VEIL_PLACEMENT_TP, .devices = 2, .ncpu = 2},
        {.placement = VEIL_PLACEMENT_TP, .devices = 2, .ncpu = 2, .tp = VEIL_TP_FORCE_INNER},
        {.placement = VEIL_PLACEMENT_HYBRID, .devices = 2, .ncpu = 2},
        {.placement = VEIL_PLACEMENT_PP, .devices = 2, .ncpu = 2, .calibrate = 1},
        {.placement = VEIL_PLACEMENT_DP, .devices = 3, .ncpu = 3},
    };
    const int ncfg = (int)(sizeof cfgs / sizeof cfgs[0]) - (with_three ? 0 : 1);
    for (int c = 0; c < ncfg; c++)
        check_session(t, &cfgs[c]);
}

/* The same network on CUDA devices (a GPU host with a CUDA-enabled StarPU): SINGLE on one GPU,
 * DP, TP and HYBRID over two when the party has two, and over the GPU and CPU workers (kind AUTO,
 * DP, TP and HYBRID over 2 devices, DP over 3) when it has one, bit-identical to the CPU single-device
 * plan of base; the material expansion stays on CPU workers (not pinned). Without a CUDA worker
 * the CUDA session must be refused at open saying so, and the GPU checks are skipped (logged). */
static int have_cuda = -1; /* unknown until the first CUDA session */
static void check_cuda(struct veil_test_net *t)
{
    cur = t;
    if (have_cuda == 0)
        return;
    struct cfg one = {.placement = VEIL_PLACEMENT_SINGLE, .devices = 1, .ncpu = 1, .cuda = 1};
    if (have_cuda < 0) {
        VT_CHECK(session(&one) == 0, "%s single x1 cuda: the session failed", t->name);
        int refused = 0;
        for (int q = 0; q < NPROC; q++)
            refused += sh->no_cuda[q];
        VT_CHECK(refused == 0 || refused == NPROC,
                 "%s: %d of %d processes were refused CUDA devices", t->name, refused, NPROC);
        have_cuda = refused == 0;
        if (!have_cuda) {
            veil_test_log("no CUDA worker: every process refused CUDA devices; GPU placement "
                          "checks skipped");
            return;
        }
    }
    check_session(t, &one);
    if (sh->ncuda[0] == 1 && sh->ncuda[1] == 1) {
        /* one GPU: CPU workers join it as a second device class (sched/devices.c) */
        struct cfg mixed[] = {
            {.placement = VEIL_PLACEMENT_DP, .devices = 2, .ncpu = 2, .mixed = 1},
            {.placement = VEIL_PLACEMENT_TP, .devices = 2, .ncpu = 2, .mixed = 1},
            {.placement = VEIL_PLACEMENT_HYBRID, .devices = 2, .ncpu = 2, .mixed = 1},
            {.placement = VEIL_PLACEMENT_DP, .devices = 3, .ncpu = 3, .mixed = 1},
        };
        for (size_t c = 0; c < sizeof mixed / sizeof mixed[0]; c++)
            check_session(t, &mixed[c]);
        return;
    }
    if (sh->ncuda[0] < 2 || sh->ncuda[1] < 2)
        return;
    struct cfg two[] = {
        {.placement = VEIL_PLACEMENT_DP, .devices = 2, .ncpu = 1, .cuda = 1},
        {.placement = VEIL_PLACEMENT_TP, .devices = 2, .ncpu = 1, .cuda = 1},
        {.placement = VEIL_PLACEMENT_HYBRID, .devices = 2, .ncpu = 1, .cuda = 1},
    };
    for (size_t c = 0; c < sizeof two / sizeof two[0]; c++)
        check_session(t, &two[c]);
}

/* Two single-device sessions with the same seeds agree bit for bit; one with other seeds differs
 * (truncation rounds by the masks), so the comparison is not vacuous. */
static void check_control(struct veil_test_net *t)
{
    cur = t;
    struct cfg other = {.placement = VEIL_PLACEMENT_SINGLE, .devices = 1, .ncpu = 1, .seed_tag = 1};
    struct cfg single = {.placement = VEIL_PLACEMENT_SINGLE, .devices = 1, .ncpu = 1};
    VT_CHECK(session(&single) == 0, "control: session failed");
    memcpy(base, sh, sizeof *sh);
    struct shared *again = malloc(sizeof *again);
    VT_CHECK(session(&single) == 0, "control: session failed");
    memcpy(again, sh, sizeof *sh);
    for (size_t k = 0; k < veil_plan_output_count(t->plan); k++)
        VT_CHECK(memcmp(again->out[0][k], base->out[0][k],
                        veil_plan_output_numel(t->plan, k) * sizeof(double)) == 0,
                 "%s: two single-device sessions with the same seeds differ", t->name);
    free(again);
    VT_CHECK(session(&other) == 0, "control: session failed");
    int differ = 0;
    for (size_t k = 0; k < veil_plan_output_count(t->plan); k++)
        differ |= memcmp(sh->out[0][k], base->out[0][k],
                         veil_plan_output_numel(t->plan, k) * sizeof(double)) != 0;
    VT_CHECK(differ,
             "%s: sessions with different seeds gave identical outputs; the comparison "
             "cannot tell placements apart from randomness",
             t->name);
}

static veil_plan_t *dense_plan(size_t m, size_t k, size_t n)
{
    veil_graph_t *g = veil_graph_new("dense");
    size_t dx[2] = {m, k}, dw[2] = {k, n};
    veil_node_t *y =
        veil_dense(g, "fc", veil_input(g, "x", 1, 2, dx), veil_param(g, "w", 0, 2, dw), NULL);
    veil_reveal(g, y, VEIL_ALL_PARTIES);
    veil_plan_t *p = veil_compile(g, NULL);
    veil_graph_destroy(&g);
    return p;
}

static int near(double a, double b)
{
    return fabs(a - b) <= 1e-9 * fabs(b);
}

/* The cost model on hand-checkable numbers (exec_internal.h: 1 ns per multiply-add and per
 * element pass, 3 us per task; a dense node makes 2 passes over its output). x (64 x 512) times
 * w (512 x 512), 2 devices, default tile 16384 (the 32768 outputs are 2 tiles):
 *   SINGLE: passes 32768 * 2 ns + 2 tiles * 2 * 3 us = 77.536 us; GEMMs (two at every party) 2 * 64
 * * 512 * 512 ns = 33554.432 us; sum of C and 2 parts 3 * 32768 ns + 3 tasks * 3 us = 107.304 us;
 * total 33739.272 us. DP:     passes and GEMMs halved (38.768 + 16777.216), the sum 98.304 + 6
 * tasks * 3 us: 16932.288 us. TP:     the chooser: x row-sharded, w column-sharded -> columns,
 * moving x to every device
 *           ((2 - 1) 64 * 512 = 32768 elements, 32.768 us): 16965.056 us.
 *   HYBRID: one group of 2 -> the columns split without the move: 16932.288 us (ties DP).
 *   PP:     one computing node, one stage: 33739.272 us.
 * AUTO picks DP (the first of the cheapest). A 3 x 5 by 5 x 4 layer: the tasks dominate;
 * SINGLE 15.18 us, DP 24.12 us: AUTO picks SINGLE. */
static void check_model(void)
{
    veil_plan_t *p = dense_plan(64, 512, 512);
    double t[VEIL_PLACEMENT_COUNT];
    enum veil_placement c = veil_placement_choose(p, 2, 0, NULL, t);
    VT_CHECK(near(t[VEIL_PLACEMENT_SINGLE], 33739.272e-6), "model single %.9g", t[1]);
    VT_CHECK(near(t[VEIL_PLACEMENT_DP], 16932.288e-6), "model dp %.9g", t[2]);
    VT_CHECK(near(t[VEIL_PLACEMENT_TP], 16965.056e-6), "model tp %.9g", t[4]);
    VT_CHECK(near(t[VEIL_PLACEMENT_HYBRID], 16932.288e-6), "model hybrid %.9g", t[5]);
    VT_CHECK(near(t[VEIL_PLACEMENT_PP], 33739.272e-6), "model pp %.9g", t[3]);
    VT_CHECK(c == VEIL_PLACEMENT_DP, "model: chose %s, expected dp", veil_placement_name(c));
    VT_CHECK(veil_placement_choose(p, 1, 0, NULL, NULL) == VEIL_PLACEMENT_SINGLE, "one device: single");
    veil_plan_destroy(&p);
    p = dense_plan(3, 5, 4);
    c = veil_placement_choose(p, 2, 0, NULL, t);
    VT_CHECK(near(t[VEIL_PLACEMENT_SINGLE], 15.18e-6) && near(t[VEIL_PLACEMENT_DP], 24.12e-6),
             "tiny model: single %.9g dp %.9g", t[1], t[2]);
    VT_CHECK(c == VEIL_PLACEMENT_SINGLE, "tiny model: chose %s", veil_placement_name(c));
    veil_plan_destroy(&p);
}

/* Calibrated costs (a calibration run's measured seconds per node) on hand-checkable numbers.
 * The dense layer above measured at 2 ms: SINGLE 2 ms; DP 2 ms x 16932.288 / 33739.272 (the
 * model's gain over one device) = 1.00371... ms. A chain fc1 (64 x 512 by 512 x 512), relu, fc2
 * (512 -> 8) over 2 devices: by the model fc1 dominates (33.7 ms against 2.1 and 0.5) and the
 * partition is {fc1} {relu, fc2}; measured at fc1 1 ms, relu 1 ms, fc2 4 ms the bottleneck is
 * least with {fc1, relu} {fc2} (4 ms against 5), whose one-micro-batch pipeline time is 6 ms. */
static void check_calibrated_model(void)
{
    veil_plan_t *p = dense_plan(64, 512, 512);
    double node_s[8] = {0};
    size_t fc = p->count;
    for (size_t i = 0; i < p->count; i++)
        if (p->nodes[i].op == VEIL_OP_DENSE)
            fc = i;
    VT_CHECK(fc < p->count && p->count <= 8, "dense plan: %zu nodes", p->count);
    if (fc < p->count && p->count <= 8) {
        node_s[fc] = 2e-3;
        double t[VEIL_PLACEMENT_COUNT];
        veil_placement_choose(p, 2, 0, node_s, t);
        VT_CHECK(near(t[VEIL_PLACEMENT_SINGLE], 2e-3), "calibrated single %.9g", t[1]);
        VT_CHECK(near(t[VEIL_PLACEMENT_DP], 2e-3 * 16932.288 / 33739.272), "calibrated dp %.9g",
                 t[2]);
    }
    veil_plan_destroy(&p);

    veil_graph_t *g = veil_graph_new("chain");
    size_t dx[2] = {64, 512}, dw1[2] = {512, 512}, dw2[2] = {512, 8};
    veil_node_t *h = veil_dense(g, "fc1", veil_input(g, "x", 1, 2, dx),
                                veil_param(g, "w1", 0, 2, dw1), NULL);
    h = veil_relu(g, "relu", h);
    h = veil_dense(g, "fc2", h, veil_param(g, "w2", 0, 2, dw2), NULL);
    veil_reveal(g, h, VEIL_ALL_PARTIES);
    p = veil_compile(g, NULL);
    veil_graph_destroy(&g);
    if (!p) {
        VT_CHECK(0, "chain plan: %s", veil_last_error());
        return;
    }
    const size_t tile = VEIL_MPC_TILE_DEFAULT;
    double *cs = calloc(p->count, sizeof *cs);
    int *stage = calloc(p->count, sizeof *stage);
    size_t ifc1 = p->count, irelu = p->count, ifc2 = p->count;
    for (size_t i = 0; i < p->count; i++) {
        const char *nm = p->nodes[i].name;
        if (!strcmp(nm, "fc1"))
            ifc1 = i, cs[i] = 1e-3;
        else if (!strcmp(nm, "relu"))
            irelu = i, cs[i] = 1e-3;
        else if (!strcmp(nm, "fc2"))
            ifc2 = i, cs[i] = 4e-3;
    }
    VT_CHECK(ifc1 < p->count && irelu < p->count && ifc2 < p->count && cs && stage,
             "chain plan: fc1, relu and fc2 found");
    if (ifc1 < p->count && irelu < p->count && ifc2 < p->count && cs && stage) {
        veil_placement_pipeline(p, p->nforward, 2, tile, NULL, stage);
        VT_CHECK(stage[ifc1] == 0 && stage[irelu] == 1 && stage[ifc2] == 1,
                 "modelled partition: fc1 %d relu %d fc2 %d, expected 0 1 1", stage[ifc1],
                 stage[irelu], stage[ifc2]);
        double tt = veil_placement_pipeline(p, p->nforward, 2, tile, cs, stage);
        VT_CHECK(stage[ifc1] == 0 && stage[irelu] == 0 && stage[ifc2] == 1,
                 "calibrated partition: fc1 %d relu %d fc2 %d, expected 0 0 1", stage[ifc1],
                 stage[irelu], stage[ifc2]);
        VT_CHECK(near(tt, 6e-3), "calibrated pipeline time %.9g, expected 6 ms", tt);
    }
    free(cs);
    free(stage);
    veil_plan_destroy(&p);
}

/* Bad input: refused with a clear message, at open (no session starts). */
static void check_bad(struct veil_test_net *t)
{
    enum veil_placement pl;
    enum veil_device_kind kind;
    VT_CHECK(veil_placement_parse("diagonal", &pl) == VEIL_ERR_INVAL &&
                 strstr(veil_last_error(), "auto, single, dp, pp, tp or hybrid"),
             "unknown name: %s", veil_last_error());
    VT_CHECK(veil_placement_parse("HyBrid", &pl) == VEIL_OK && pl == VEIL_PLACEMENT_HYBRID,
             "parse hybrid");
    cur = t;
    struct cfg many = {.placement = VEIL_PLACEMENT_DP,
                       .devices = 3,
                       .ncpu = 2,
                       .expect_open_fail = 1,
                       .fail_says = "StarPU has 2 CPU workers"};
    VT_CHECK(session(&many) == 0, "3 devices on 2 workers was not refused as expected");
    VT_CHECK(veil_device_kind_parse("tpu", &kind) == VEIL_ERR_INVAL &&
                 strstr(veil_last_error(), "auto, cpu or cuda"),
             "unknown device kind: %s", veil_last_error());
    VT_CHECK(veil_device_kind_parse("CUDA", &kind) == VEIL_OK && kind == VEIL_DEVICE_CUDA &&
                 strcmp(veil_device_kind_name(kind), "cuda") == 0,
             "parse cuda");
    /* bad environment values, each refused at open naming the variable */
    struct cfg env[] = {
        {.placement = VEIL_PLACEMENT_AUTO, .ncpu = 1, .env_name = "VEIL_PLACEMENT",
         .env_value = "diagonal", .fail_says = "VEIL_PLACEMENT"},
        {.placement = VEIL_PLACEMENT_SINGLE, .ncpu = 1, .env_name = "VEIL_DEVICE_KIND",
         .env_value = "tpu", .fail_says = "VEIL_DEVICE_KIND"},
        {.placement = VEIL_PLACEMENT_SINGLE, .ncpu = 1, .env_name = "VEIL_WORKER_NICE",
         .env_value = "25", .fail_says = "VEIL_WORKER_NICE='25'"},
        {.placement = VEIL_PLACEMENT_PP, .devices = 2, .ncpu = 2, .env_name = "VEIL_CALIBRATE",
         .env_value = "yes", .fail_says = "VEIL_CALIBRATE='yes'"},
    };
    for (size_t i = 0; i < sizeof env / sizeof env[0]; i++) {
        env[i].expect_open_fail = 1;
        VT_CHECK(session(&env[i]) == 0, "%s=%s was not refused as expected", env[i].env_name,
                 env[i].env_value);
    }
}

/* veil_place_small_on_cpu: CPU worker ids[tile mod n] below VEIL_PLACE_GPU_MIN_BYTES when the
 * process has a CUDA worker and CPU workers, unless the task is a product of at least
 * VEIL_PLACE_GPU_MIN_WORK multiply-adds; else the scheduler's choice (-1). */
static void check_small_on_cpu(void)
{
    const int ids[3] = {4, 7, 9};
    const size_t small = VEIL_PLACE_GPU_MIN_BYTES - 8, big = VEIL_PLACE_GPU_MIN_BYTES;
    const uint64_t light = VEIL_PLACE_GPU_MIN_WORK - 1, heavy = VEIL_PLACE_GPU_MIN_WORK;
    VT_CHECK(veil_place_small_on_cpu(small, 0, 0, 1, ids, 3) == 4, "small tile 0: worker 4");
    VT_CHECK(veil_place_small_on_cpu(small, 0, 5, 2, ids, 3) == 9, "small tile 5: worker 9");
    VT_CHECK(veil_place_small_on_cpu(small, 0, -1, 1, ids, 3) == 4, "untagged: worker 4");
    VT_CHECK(veil_place_small_on_cpu(big, 0, 0, 1, ids, 3) == -1, "1 MiB output: scheduler");
    VT_CHECK(veil_place_small_on_cpu(small, light, 0, 1, ids, 3) == 4,
             "a small product below 2^22 multiply-adds: worker 4");
    VT_CHECK(veil_place_small_on_cpu(small, heavy, 0, 1, ids, 3) == -1,
             "a product of 2^22 multiply-adds with a small output: scheduler");
    VT_CHECK(veil_place_small_on_cpu(small, 0, 0, 0, ids, 3) == -1, "no CUDA worker: scheduler");
    VT_CHECK(veil_place_small_on_cpu(small, 0, 0, 1, ids, 0) == -1, "no CPU worker: scheduler");
}

int main(void)
{
    check_small_on_cpu();
    sh = veil_test_mpc_shared(sizeof *sh);
    base = malloc(sizeof *base);
    if (!sh || !base)
        return 1;
    check_model();
    check_calibrated_model();
    static struct veil_test_net nets[3];
    veil_test_net_mlp(&nets[0]);
    veil_test_net_cnn(&nets[1]);
    veil_test_net_attention(&nets[2]);
    for (int i = 0; i < 3; i++)
        veil_test_net_reference(&nets[i]);
    if (veil_test_failures)
        return veil_test_status();
    check_bad(&nets[0]);
    check_control(&nets[0]);
    for (int i = 0; i < 3; i++) {
        check_net(&nets[i], i == 1);
        check_cuda(&nets[i]); /* against the base check_net left */
    }
    for (int i = 0; i < 3; i++)
        veil_test_net_free(&nets[i]);
    free(base);
    veil_test_mpc_shared_free(sh, sizeof *sh);
    return veil_test_status();
}

/* Tests the secure executor (veil_party_open / veil_run) end to end: parties and the dealer are
 * real processes that find their identity and CURVE keys in the environment as under veil-run.
 * Every forward op of the DSL runs securely in three networks (an MLP with argmax; a CNN with
 * conv2d stride 1 and 2, padding, a folded batch norm, relu, max and average pooling, global
 * average pooling, flatten, residual add; an attention block with transpose, matmul of two
 * secrets, scale, softmax, layer norm, GELU and concat), with N = 2 and 3 and two runs per
 * session (parameters shared once, then kept), against the plaintext FIXED executor within a
 * stated tolerance; the MLP also under the eager, prio, ws, dmda and dmdas schedulers. The
 * networks are in test_graph_nets.c. A one-layer network checks the bytes and rounds of each run
 * against the protocols' formulas and veil_plan_preproc's count against the dealer's traffic,
 * also with weight-stationary preprocessing (W - B opened at the first run only; the MLP agrees
 * too).
 * A dense layer and its ReLU cost exactly the ReLU's comparison past the product: the truncation
 * rides inside the ReLU (veil_mpc_relu_trunc), at N = 2 and 3.
 * Two ReLUs read only by max pools with too many windows for the pairwise rule (so each runs
 * after its pool; one pool 3 x 3 of stride 2) agree at N = 2 and 3 and reveal the same words
 * under every look-ahead and serialized.
 * The MLP and the CNN also run in 2 and 4 micro-batches (the inter-batch pipeline), and with
 * look-ahead 0 and 1 and serialized, revealing the same words bit for bit as with no bound when
 * the material seed and session id are fixed.
 * Twelve runs through an early-arrival store of five runs' material show the dealer is paced.
 * Bad input: a missing feed at the owner (its run fails naming the input, the peers stop instead
 * of hanging), parties with different plans (the handshake refuses), an owner outside the
 * session. The offline phase ahead: parties run the MLP from preprocessing files without a
 * dealer (veil_plan_preproc_files); a run beyond the files and another session fail. */
#include "config.h"
#include "tasks/preproc.h"
#include "test_graph_nets.h"
#include "test_graph_util.h"
#include "test_mpc_util.h"
#include "test_util.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAXOUT VEIL_TEST_NET_MAXOUT
#define MAXPROC 5

/* Results written by the children (memory shared across fork). */
struct shared {
    double out[MAXPROC][2][MAXOUT][256]; /* per process, per run, per output */
    struct veil_run_stats stats[MAXPROC][2];
};

static struct veil_test_net *cur;
static struct shared *sh;
static const char *file_fmt; /* FILE material: the parties' preprocessing files ("%d": id) */

static int child(const struct veil_harness_party *me, void *arg)
{
    (void)arg;
    const veil_plan_t *plan = me->id == 1 && cur->other ? cur->other : cur->plan;
    struct veil_party_options po;
    veil_party_options_defaults(&po);
    char path[256];
    if (file_fmt) {
        snprintf(path, sizeof path, file_fmt, me->id);
        po.material = VEIL_MATERIAL_FILE;
        po.preproc_path = path;
    }
    veil_party_t *pt = veil_party_open(plan, &po);
    if (!pt) {
        fprintf(stderr, "process %d: open: %s\n", me->id, veil_last_error());
        return 3;
    }
    const size_t nout = veil_plan_output_count(plan);
    int code = 0;
    static double scratch[MAXOUT][256];
    const int runs = cur->runs ? cur->runs : 2;
    for (int run = 0; run < runs && code == 0; run++) {
        double *outs[MAXOUT] = {NULL};
        for (size_t k = 0; k < nout; k++)
            outs[k] = run < 2 ? sh->out[me->id][run][k] : scratch[k];
        const struct veil_feed *f = cur->feeds;
        size_t nf = cur->nfeeds;
        if (cur->drop_feed && me->id == 1) {
            f++; /* the first feed is x, party 1's input */
            nf--;
        }
        int rc = veil_run(pt, f, nf, outs);
        if (rc != VEIL_OK) {
            fprintf(stderr, "process %d: run %d: %s\n", me->id, run, veil_last_error());
            code = 4;
        }
        if (run < 2)
            veil_party_last_stats(pt, &sh->stats[me->id][run]);
    }
    if (veil_party_close(&pt) != VEIL_OK && code == 0) {
        fprintf(stderr, "process %d: close: %s\n", me->id, veil_last_error());
        code = 5;
    }
    return code;
}

/* Runs t with N parties and the dealer; compares what each receiver got with the reference. */
static void check_net(struct veil_test_net *t, int nparties, const char *sched)
{
    cur = t;
    memset(sh, 0, sizeof *sh);
    struct veil_test_graph_opts o = {.nparties = nparties, .dealer = 1, .sched = sched};
    if (veil_test_graph_run(&o, child, NULL, NULL) != VEIL_OK) {
        VT_CHECK(0, "%s N=%d: the secure run failed", t->name, nparties);
        return;
    }
    const veil_plan_t *p = t->plan;
    for (size_t k = 0; k < veil_plan_output_count(p); k++) {
        const int to = veil_plan_output_to(p, k);
        for (int q = 0; q < nparties; q++) {
            if (to != VEIL_ALL_PARTIES && to != q)
                continue;
            for (int run = 0; run < 2; run++) {
                double worst = 0;
                size_t at = 0;
                for (size_t i = 0; i < veil_plan_output_numel(p, k); i++) {
                    double e = fabs(sh->out[q][run][k][i] - t->want[k][i]);
                    if (e > worst || isnan(e)) {
                        worst = isnan(e) ? INFINITY : e;
                        at = i;
                    }
                }
                VT_CHECK(worst <= t->tol,
                         "%s N=%d %s: output '%s' at party %d, run %d: element "
                         "%zu is %.6f, plaintext fixed point %.6f (error %.3g > %.3g)",
                         t->name, nparties, sched ? sched : "lws", veil_plan_output_name(p, k), q,
                         run, at, sh->out[q][run][k][at], t->want[k][at], worst, t->tol);
                veil_test_log("%s N=%d %s: '%s' at party %d run %d: max error %.3g", t->name,
                              nparties, sched ? sched : "lws", veil_plan_output_name(p, k), q, run,
                              worst);
            }
        }
    }
}

/* Bytes and rounds of the two runs of `linear` against the protocols' formulas; with
 * weight-stationary preprocessing the second run does not open W - B again. */
static void check_costs(struct veil_test_net *t, int n, int ws)
{
    cur = t;
    memset(sh, 0, sizeof *sh);
    struct veil_test_graph_opts o = {.nparties = n, .dealer = 1};
    if (veil_test_graph_run(&o, child, NULL, NULL) != VEIL_OK) {
        VT_CHECK(0, "linear N=%d failed", n);
        return;
    }
    const uint64_t w = 8 * (uint64_t)(n - 1);
    const uint64_t common = w * 15 /* matmul: x - A */ + w * 12 /* trunc */ +
                            w * 12 /* reveal to all */;
    uint64_t items = 0, dealer_bytes = 0;
    VT_CHECK(veil_plan_preproc(t->plan, n, &items, &dealer_bytes) == VEIL_OK, "preproc: %s",
             veil_last_error());
    VT_CHECK(items == 2 && dealer_bytes == 8 * (12 + 24),
             "linear N=%d: preprocessing %" PRIu64 " items, %" PRIu64 " bytes; expected 2 "
             "(matmul, trunc), %d",
             n, items, dealer_bytes, 8 * (12 + 24));
    for (int q = 0; q < n; q++)
        for (int run = 0; run < 2; run++) {
            const struct veil_run_stats *s = &sh->stats[q][run];
            uint64_t want = common;
            if (!ws || run == 0)
                want += w * 20; /* matmul: W - B, once per session when weight-stationary */
            if (q == 1)
                want += w * 15; /* shares x */
            if (q == 0 && run == 0)
                want += w * 20; /* shares w, once per session */
            uint64_t rounds = run == 0 ? 5 : 4;
            VT_CHECK(s->bytes_sent == want && s->rounds == rounds,
                     "linear N=%d party %d run %d: sent %" PRIu64 " bytes in %" PRIu64
                     " rounds; expected %" PRIu64 " in %" PRIu64,
                     n, q, run, s->bytes_sent, s->rounds, want, rounds);
            VT_CHECK(s->online_s > 0, "linear: online time measured");
        }
    /* The dealer deals ahead of the parties: material of the second run may arrive during the
     * first, so the session's total is what is checked: every party's 16-byte seed, and the
     * corrections, which only the designated party N-1 gets. */
    for (int q = 0; q < n; q++) {
        uint64_t got = sh->stats[q][0].dealer_bytes_recv + sh->stats[q][1].dealer_bytes_recv;
        uint64_t want = 16 + (q == n - 1 ? 2 * dealer_bytes : 0);
        VT_CHECK(got == want,
                 "linear N=%d party %d: %" PRIu64 " bytes from the dealer in two "
                 "runs, expected %" PRIu64,
                 n, q, got, want);
    }
}

/* A dense layer read only by a plain ReLU hands it the untruncated value, and the ReLU truncates
 * inside its own rounds (veil_mpc_relu_trunc): the steady run costs exactly the protocols'
 * formulas with no truncation round or byte for the first layer. */
static void check_relu_trunc_costs(int n, size_t hidden)
{
    static struct veil_test_net t;
    veil_test_net_wide_relu(&t, hidden);
    veil_test_net_reference(&t);
    check_net(&t, n, NULL);
    const uint64_t H = hidden, w = veil_preproc_sliced_blocks(H, 128) /* the plans' tile */;
    /* party 0 (the weights' owner, shared at run 0): fc1's opens x - A and W - B, the ReLU's
     * LTZ, fc2's opens, fc2's truncation and the reveal */
    const uint64_t want = 8 * (uint64_t)(n - 1) * ((4 + 4 * H) + (H + 36 * w) + 2 * H + 1 + 1);
    /* x's sharing, fc1, the ReLU (its truncation inside), fc2, its truncation, the reveal */
    const uint64_t rounds = 1 + 1 + 4 + 1 + 1 + 1;
    const struct veil_run_stats *st = &sh->stats[0][1];
    VT_CHECK(st->bytes_sent == want && st->rounds == rounds,
             "N=%d: dense of %zu, relu, dense: party 0's steady run sent %" PRIu64 " bytes in "
             "%" PRIu64 " rounds; expected %" PRIu64 " in %" PRIu64,
             n, hidden, st->bytes_sent, st->rounds, want, rounds);
    veil_test_net_free(&t);
}

/* A run that must fail at every process (non-zero exit; the dealer, which may have dealt all
 * its runs before a party failed, learns it from veil_party_close) and end everywhere without a
 * hang; one process's output must contain `says`. */
static void check_fails(struct veil_test_net *t, int n, int who, const char *says)
{
    cur = t;
    memset(sh, 0, sizeof *sh);
    struct veil_harness_result res[MAXPROC];
    struct veil_test_graph_opts o = {.nparties = n, .dealer = 1, .timeout_s = 60, .expect_fail = 1};
    int rc = veil_test_graph_run(&o, child, NULL, res);
    VT_CHECK(rc != VEIL_OK, "%s: the run should fail", says);
    for (int q = 0; q <= n; q++) {
        VT_CHECK(res[q].exit_code != 0 && !res[q].timed_out && !res[q].killed_after_failure,
                 "%s: process %d exited %d%s (expected a non-zero exit on its own, no hang)",
                 says, q, res[q].exit_code,
                 res[q].timed_out || res[q].killed_after_failure ? " when killed" : "");
    }
    VT_CHECK(res[who].output && strstr(res[who].output, says),
             "process %d should say \"%s\"; it said:\n%s", who, says,
             res[who].output ? res[who].output : "");
    veil_harness_results_free(res, n + 1);
}

/*
 * Pipeline settings change when things are submitted, never what is computed: the network built
 * by `build` under each setting (no bound, look-ahead 0 and 1, serialized), run with t0's feeds
 * in sessions with one session id and one material seed (so the dealer deals the same masks),
 * reveals the same words at every party, bit for bit. (Micro-batches are the exception: their
 * products draw other masks, so their truncations' 0/+1 ulp differ; they are checked against the
 * tolerance above.)
 */
static void check_identical(void (*build)(struct veil_test_net *), const char *name)
{
    static const struct {
        int lookahead, serialized;
        const char *what;
    } set[] = {{VEIL_LOOKAHEAD_UNBOUNDED, 0, "no bound"},
               {0, 0, "look-ahead 0"},
               {1, 0, "look-ahead 1"},
               {VEIL_LOOKAHEAD_UNBOUNDED, 1, "serialized"}};
    static double first[2][MAXOUT][256];
    static struct veil_test_net t0;
    setenv("VEIL_MATERIAL_SEED", "00112233445566778899aabbccddeeff", 1);
    setenv("VEIL_INSECURE_TEST_HOOKS", "1", 1); /* the seed is refused without it */
    for (size_t v = 0; v < sizeof set / sizeof set[0]; v++) {
        struct veil_test_net t = {0};
        veil_test_net_lookahead = set[v].lookahead;
        veil_test_net_serialized = set[v].serialized;
        build(v == 0 ? &t0 : &t);
        veil_test_net_lookahead = VEIL_LOOKAHEAD_UNBOUNDED;
        veil_test_net_serialized = 0;
        struct veil_test_net *run = v == 0 ? &t0 : &t;
        if (v > 0) { /* the first build's feeds (the generator drew others for this one) */
            for (size_t f = 0; f < run->nfeeds; f++)
                free((void *)run->feeds[f].values);
            memcpy(run->feeds, t0.feeds, sizeof t0.feeds);
        }
        cur = run;
        memset(sh, 0, sizeof *sh);
        struct veil_test_graph_opts o = {.nparties = 2, .dealer = 1,
                                         .session = "0123456789abcdef0123456789abcdef"};
        if (veil_test_graph_run(&o, child, NULL, NULL) != VEIL_OK)
            VT_CHECK(0, "%s %s: the secure run failed", name, set[v].what);
        else if (v == 0)
            memcpy(first, sh->out[1], sizeof first);
        else
            VT_CHECK(memcmp(first, sh->out[1], sizeof first) == 0,
                     "%s: %s revealed other words than with no bound", name, set[v].what);
        veil_test_log("%s %s: %s", name, set[v].what, v ? "identical" : "reference");
        if (v > 0) {
            t.nfeeds = 0; /* the feeds are t0's */
            veil_test_net_free(&t);
        }
    }
    veil_test_net_free(&t0);
    unsetenv("VEIL_MATERIAL_SEED");
    unsetenv("VEIL_INSECURE_TEST_HOOKS");
}

/*
 * The offline phase ahead: veil_plan_preproc_files writes the parties' files for two runs of
 * t's plan in one session; the parties then run without a dealer (N = 2 and 3, within t's
 * tolerance), a third run fails naming the exhausted file, and a session with another id is
 * refused at open.
 */
static void check_files(struct veil_test_net *t)
{
    static const char *const sid = "00112233445566778899aabbccddeeff";
    uint8_t session[16];
    for (int i = 0; i < 16; i++)
        session[i] = (uint8_t)strtoul((char[]){sid[2 * i], sid[2 * i + 1], 0}, NULL, 16);
    char dir[] = "/tmp/veil-test-plan-preproc-XXXXXX", fmt[96];
    VT_CHECK(mkdtemp(dir) != NULL, "mkdtemp");
    snprintf(fmt, sizeof fmt, "%s/party-%%d.pre", dir);
    for (int n = 2; n <= 3; n++) {
        uint64_t items = 0, bytes = 0, run_items = 0, run_bytes = 0;
        int rc = veil_plan_preproc_files(t->plan, n, 2, session, fmt, &items, &bytes);
        VT_CHECK(rc == VEIL_OK, "%s N=%d: files: %s", t->name, n, veil_last_error());
        VT_CHECK(veil_plan_preproc(t->plan, n, &run_items, &run_bytes) == VEIL_OK &&
                     items == 2 * run_items && bytes == 2 * run_bytes,
                 "%s N=%d: %llu items, %llu bytes for 2 runs; one run is %llu, %llu", t->name, n,
                 (unsigned long long)items, (unsigned long long)bytes,
                 (unsigned long long)run_items, (unsigned long long)run_bytes);
        uint64_t items2 = 0, bytes2 = 0; /* the same count without writing files */
        VT_CHECK(veil_plan_preproc_runs(t->plan, n, 2, &items2, &bytes2) == VEIL_OK &&
                     items2 == items && bytes2 == bytes && veil_plan_preproc_runs(t->plan, n, 0,
                     NULL, NULL) == VEIL_ERR_INVAL,
                 "%s N=%d: veil_plan_preproc_runs(2) %llu items, %llu bytes", t->name, n,
                 (unsigned long long)items2, (unsigned long long)bytes2);
        if (rc != VEIL_OK)
            continue;
        file_fmt = fmt;
        cur = t;
        memset(sh, 0, sizeof *sh);
        struct veil_test_graph_opts o = {.nparties = n, .session = sid};
        if (veil_test_graph_run(&o, child, NULL, NULL) != VEIL_OK) {
            VT_CHECK(0, "%s N=%d: the run from files failed", t->name, n);
        } else {
            for (int q = 0; q < n; q++) /* fc2 is revealed to all */
                for (int run = 0; run < 2; run++)
                    for (size_t i = 0; i < veil_plan_output_numel(t->plan, 0); i++)
                        VT_CHECK(fabs(sh->out[q][run][0][i] - t->want[0][i]) <= t->tol,
                                 "%s N=%d from files: party %d run %d element %zu: %.6f, plaintext "
                                 "%.6f", t->name, n, q, run, i, sh->out[q][run][0][i],
                                 t->want[0][i]);
            veil_test_log("%s N=%d: 2 runs from preprocessing files (%llu items), no dealer",
                          t->name, n, (unsigned long long)items);
        }
        file_fmt = NULL;
    }
    /* N = 3's files are on disk: a third run, and another session */
    struct veil_harness_result res[MAXPROC];
    file_fmt = fmt;
    t->runs = 3;
    struct veil_test_graph_opts o = {.nparties = 3, .session = sid, .expect_fail = 1};
    VT_CHECK(veil_test_graph_run(&o, child, NULL, res) != VEIL_OK, "a third run should fail");
    /* Every party names the missing item; the one that found it says it was run 2 (a peer may
     * still be finishing run 1 when the abort reaches it, and then reports it there). */
    int named_run = 0;
    for (int q = 0; q < 3; q++) {
        VT_CHECK(res[q].output && strstr(res[q].output, "item"),
                 "the third run's failure should name the item; party %d said:\n%s", q,
                 res[q].output ? res[q].output : "");
        named_run |= res[q].output && strstr(res[q].output, "run 2") &&
                     strstr(res[q].output, "preprocessing exhausted");
    }
    VT_CHECK(named_run, "no party says that run 2 exhausted the preprocessing; party 0 said:\n%s",
             res[0].output ? res[0].output : "");
    veil_harness_results_free(res, 3);
    t->runs = 0;
    o.session = "ffeeddccbbaa99887766554433221100";
    VT_CHECK(veil_test_graph_run(&o, child, NULL, res) != VEIL_OK, "another session should fail");
    VT_CHECK(res[0].output && strstr(res[0].output, "session"),
             "the refusal should name the session; party 0 said:\n%s",
             res[0].output ? res[0].output : "");
    veil_harness_results_free(res, 3);
    file_fmt = NULL;
    for (int q = 0; q < 3; q++) {
        char path[128];
        snprintf(path, sizeof path, fmt, q);
        unlink(path);
    }
    rmdir(dir);
}

int main(void)
{
    sh = veil_test_mpc_shared(sizeof *sh);
    if (!sh)
        return 1;
    static struct veil_test_net nets[4];
    veil_test_net_mlp(&nets[0]);
    veil_test_net_cnn(&nets[1]);
    veil_test_net_attention(&nets[2]);
    veil_test_net_linear(&nets[3]);
    for (int i = 0; i < 4; i++)
        veil_test_net_reference(&nets[i]);
    if (veil_test_failures)
        return veil_test_status();

    for (int i = 0; i < 3; i++) {
        check_net(&nets[i], 2, NULL);
        check_net(&nets[i], 3, NULL);
    }
    /* every scheduler a user may pick: the same DAG, the same results within the tolerance
     * (sessions draw fresh masks, so the truncations' 0/+1 ulp differ between sessions) */
    static const char *const scheds[] = {"eager", "prio", "ws", "dmda", "dmdas"};
    for (size_t i = 0; i < sizeof scheds / sizeof *scheds; i++)
        check_net(&nets[0], 2, scheds[i]);
    check_costs(&nets[3], 2, 0);
    check_costs(&nets[3], 3, 0);
    check_relu_trunc_costs(2, 16385);
    check_relu_trunc_costs(3, 200);
    /* weight-stationary: the MLP within tolerance, the linear layer's second run cheaper */
    veil_test_net_weight_stationary = 1;
    static struct veil_test_net wsnets[2];
    veil_test_net_mlp(&wsnets[0]);
    veil_test_net_linear(&wsnets[1]);
    veil_test_net_weight_stationary = 0;
    for (int i = 0; i < 2; i++)
        veil_test_net_reference(&wsnets[i]);
    check_net(&wsnets[0], 2, NULL);
    check_costs(&wsnets[1], 2, 1);
    check_costs(&wsnets[1], 3, 1);
    for (int i = 0; i < 2; i++)
        veil_test_net_free(&wsnets[i]);

    check_files(&nets[0]);
    check_identical(veil_test_net_mlp, "mlp");
    check_identical(veil_test_net_cnn, "cnn");

    /* ReLUs that run after their max pools (2 x 2, and 3 x 3 of stride 2): within the tolerance
     * at N = 2 and 3, the same words under every look-ahead and serialized */
    static struct veil_test_net rp;
    veil_test_net_relu_pool(&rp);
    veil_test_net_reference(&rp);
    check_net(&rp, 2, NULL);
    check_net(&rp, 3, NULL);
    veil_test_net_free(&rp);
    check_identical(veil_test_net_relu_pool, "relu_pool");

    /* inter-batch pipeline: the MLP (batch 4) in 2 and 4 micro-batches, the CNN (batch 2) in 2,
     * relu + max pool (batch 4, the whole batch's forms: tournament, ReLU after the pool) in 2,
     * against the same plaintext FIXED reference (the split plan's, equal to the unsplit one's:
     * test_graph_microbatch) */
    static struct veil_test_net mbnets[4];
    veil_test_net_microbatches = 2;
    veil_test_net_mlp(&mbnets[0]);
    veil_test_net_cnn(&mbnets[1]);
    veil_test_net_relu_maxpool(&mbnets[3], 4);
    veil_test_net_microbatches = 4;
    veil_test_net_mlp(&mbnets[2]);
    veil_test_net_microbatches = 1;
    for (int i = 0; i < 4; i++)
        veil_test_net_reference(&mbnets[i]);
    check_net(&mbnets[0], 2, NULL);
    check_net(&mbnets[1], 2, NULL);
    check_net(&mbnets[1], 3, NULL);
    check_net(&mbnets[2], 3, "dmda");
    check_net(&mbnets[3], 2, NULL);
    for (int i = 0; i < 4; i++)
        veil_test_net_free(&mbnets[i]);

    /* flow control: the dealer deals at most two runs ahead of the designated party, so twelve
     * runs of the CNN fit an early-arrival store of five runs' material (unpaced, the dealer
     * sends all twelve while the parties compute the first and the store overflows) */
    uint64_t cnn_bytes = 0;
    VT_CHECK(veil_plan_preproc(nets[1].plan, 2, NULL, &cnn_bytes) == VEIL_OK, "preproc: %s",
             veil_last_error());
    char cap[32];
    snprintf(cap, sizeof cap, "%" PRIu64, 5 * cnn_bytes);
    setenv("VEIL_NET_EARLY_CAP", cap, 1);
    nets[1].runs = 12;
    check_net(&nets[1], 2, NULL);
    nets[1].runs = 0;
    unsetenv("VEIL_NET_EARLY_CAP");

    /* bad input */
    nets[3].drop_feed = 1;
    check_fails(&nets[3], 2, 1, "input 'x'");
    nets[3].drop_feed = 0;
    /* party 1 compiled with other fractional bits */
    nets[3].other = veil_test_net_linear_plan(1, 12);
    check_fails(&nets[3], 2, 1, "plan");
    veil_plan_destroy(&nets[3].other);
    veil_plan_t *keep = nets[3].plan;
    nets[3].plan = veil_test_net_linear_plan(2, 16); /* x owned by party 2 of a 2-party session */
    check_fails(&nets[3], 2, 0, "owned by party 2");
    veil_plan_destroy(&nets[3].plan);
    nets[3].plan = keep;

    for (int i = 0; i < 4; i++)
        veil_test_net_free(&nets[i]);
    veil_test_mpc_shared_free(sh, sizeof *sh);
    return veil_test_status();
}

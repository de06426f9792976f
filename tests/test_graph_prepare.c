/* Tests veil_party_prepare, the warm first run (issue 15): the MLP of test_graph_nets.c, 2 parties
 * and the dealer, the dealer's material from a fixed seed (material_seed, as in
 * test_graph_placement.c), two runs per session. A session that prepares reveals the same outputs
 * bit for bit as one that does not (both runs, every party), and its first run sends the same
 * bytes in the same rounds as its second at every party, while prepare itself sent the parameters
 * (party 0: 8 bytes per parameter word) and received run 0's material from the dealer; without
 * prepare party 0's first run sends exactly those bytes more than its second (so the comparison is
 * not vacuous). Refused with VEIL_ERR_STATE and a message, the session going on: a second prepare,
 * a prepare after a run. Refused at the parameters' owner, the session failing at every process
 * (never hanging): a missing parameter and one with the wrong element count, each named. Run 0's
 * material above what the dealer may deal before any credit (the net's early-arrival cap made
 * small: VEIL_NET_EARLY_CAP = one run's material, so the flow control's limit is 7/16 of it):
 * prepare does not deal ahead — it used to wait for a credit forever (LeNet-5 at batch 1000 hung) —
 * and the runs still reveal the unprepared outputs bit for bit. The same MLP compiled
 * weight-stationary: prepare also opens every W - B (each party sends 8 bytes per dense weight word
 * there, which an unprepared run 0 sends on top of run 1's), so run 0 again sends run 1's bytes in
 * run 1's rounds and reveals the unprepared outputs. Prepare also reserves the first run's share
 * buffers in the buffer pool: a prepared run 0 allocates at most an eighth of the bytes outside
 * the pool that an unprepared one does (measured: 3-7 KB against 85-90 KB). */
#include "config.h"
#include "test_graph_nets.h"
#include "test_graph_util.h"
#include "test_mpc_util.h"
#include "test_util.h"
#include "base/secmem.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NPROC 3
#define RUNS 2
#define MAXOUT VEIL_TEST_NET_MAXOUT

enum mode {
    COLD,    /* no prepare; a prepare after the runs is refused */
    WARM,    /* prepare (a second one refused), then the runs */
    MISSING, /* party 0 prepares without w2 */
    SHAPE    /* party 0 feeds b1 one value short */
};

struct shared {
    double out[RUNS][NPROC][MAXOUT][64];
    struct veil_run_stats st[RUNS][NPROC], prep[NPROC];
    int rc_prepare[NPROC], rc_again[NPROC]; /* the (first) prepare, the refused second one */
    char msg_prepare[NPROC][512], msg_again[NPROC][512];
    int runs_done[NPROC];
    uint64_t fresh[RUNS][NPROC][2]; /* buffers the pool could not serve in each run, their bytes */
};

static struct veil_test_net net;
static struct shared *sh;
static enum mode cur;
static size_t ws_words; /* a weight-stationary plan's dense weights (their W - B opens), else 0 */

static void keep(char *dst, int rc)
{
    snprintf(dst, 512, "%s", rc == VEIL_OK ? "" : veil_last_error());
}

/* The feeds of process id for prepare: all of them, less or with one changed by the mode. */
static size_t prepare_feeds(int id, struct veil_feed *f)
{
    size_t n = 0;
    for (size_t i = 0; i < net.nfeeds; i++) {
        if (id == 0 && cur == MISSING && !strcmp(net.feeds[i].name, "w2"))
            continue;
        f[n] = net.feeds[i];
        if (id == 0 && cur == SHAPE && !strcmp(f[n].name, "b1"))
            f[n].numel--;
        n++;
    }
    return n;
}

static int child(const struct veil_harness_party *me, void *arg)
{
    (void)arg;
    struct veil_party_options o;
    veil_party_options_defaults(&o);
    o.material_seed = "005eed00000000000000000000000000";
    veil_party_t *pt = veil_party_open(net.plan, &o);
    if (!pt) {
        fprintf(stderr, "process %d: open: %s\n", me->id, veil_last_error());
        return 3;
    }
    const int id = me->id;
    int code = 0;
    if (cur != COLD) {
        struct veil_feed f[VEIL_TEST_NET_MAXFEED] = {{0}};
        size_t nf = me->is_dealer ? 0 : prepare_feeds(id, f);
        sh->rc_prepare[id] = veil_party_prepare(pt, me->is_dealer ? NULL : f, nf);
        keep(sh->msg_prepare[id], sh->rc_prepare[id]);
        veil_party_last_stats(pt, &sh->prep[id]);
        if (sh->rc_prepare[id] != VEIL_OK)
            code = 4;
        else {
            sh->rc_again[id] = veil_party_prepare(pt, f, nf);
            keep(sh->msg_again[id], sh->rc_again[id]);
        }
    }
    for (int r = 0; r < RUNS && code == 0; r++) {
        double *outs[MAXOUT] = {NULL};
        for (size_t k = 0; k < veil_plan_output_count(net.plan); k++)
            outs[k] = sh->out[r][id][k];
        uint64_t n0, b0, n1, b1;
        veil_secbuf_fresh(&n0, &b0);
        const int rc =
            veil_run(pt, me->is_dealer ? NULL : net.feeds, me->is_dealer ? 0 : net.nfeeds, outs);
        veil_secbuf_fresh(&n1, &b1);
        sh->fresh[r][id][0] = n1 - n0;
        sh->fresh[r][id][1] = b1 - b0;
        if (rc != VEIL_OK) {
            fprintf(stderr, "process %d: run %d: %s\n", id, r, veil_last_error());
            code = 5;
        } else {
            veil_party_last_stats(pt, &sh->st[r][id]);
            sh->runs_done[id]++;
        }
    }
    if (code == 0 && cur == COLD) {
        sh->rc_again[id] = veil_party_prepare(pt, NULL, 0);
        keep(sh->msg_again[id], sh->rc_again[id]);
    }
    if (veil_party_close(&pt) != VEIL_OK && code == 0)
        code = 6;
    return code;
}

/* One session in mode m; its results stay in sh. */
static int session(enum mode m, int expect_fail)
{
    cur = m;
    memset(sh, 0, sizeof *sh);
    for (int q = 0; q < NPROC; q++)
        sh->rc_prepare[q] = 1; /* not returned (a process the harness stopped first) */
    struct veil_test_graph_opts o = {.nparties = 2,
                                     .dealer = 1,
                                     .timeout_s = 120,
                                     .expect_fail = expect_fail,
                                     .session = "0123456789abcdef0123456789abcdef"};
    return veil_test_graph_run(&o, child, NULL, NULL) == VEIL_OK ? 0 : -1;
}

static size_t param_words(void)
{
    size_t n = 0;
    for (size_t i = 0; i < net.nfeeds; i++)
        n += strcmp(net.feeds[i].name, "x") ? net.feeds[i].numel : 0;
    return n;
}

/* A prepared session whose run 0 takes more material than the dealer may deal ahead. */
static void check_over_limit(const struct shared *cold)
{
    uint64_t dealt = 0;
    VT_CHECK(veil_plan_preproc(net.plan, 2, NULL, &dealt) == VEIL_OK && dealt > 0,
             "veil_plan_preproc: %s", veil_last_error());
    char cap[32];
    snprintf(cap, sizeof cap, "%llu", (unsigned long long)dealt);
    setenv("VEIL_NET_EARLY_CAP", cap, 1);
    VT_CHECK(session(WARM, 0) == 0, "prepared session with run 0 above the limit failed");
    unsetenv("VEIL_NET_EARLY_CAP");
    for (int q = 0; q < 2; q++) {
        for (int r = 0; r < RUNS; r++)
            for (size_t k = 0; k < veil_plan_output_count(net.plan); k++) {
                const int to = veil_plan_output_to(net.plan, k);
                if (to != VEIL_ALL_PARTIES && to != q)
                    continue;
                VT_CHECK(memcmp(sh->out[r][q][k], cold->out[r][q][k],
                                veil_plan_output_numel(net.plan, k) * sizeof(double)) == 0,
                         "over the limit: party %d run %d output '%s' differs from unprepared", q,
                         r, veil_plan_output_name(net.plan, k));
            }
        VT_CHECK(sh->prep[q].dealer_bytes_recv < dealt / 2,
                 "over the limit: party %d got %llu bytes from the dealer in prepare (run 0 "
                 "takes %llu): dealt ahead",
                 q, (unsigned long long)sh->prep[q].dealer_bytes_recv, (unsigned long long)dealt);
        VT_CHECK(sh->runs_done[q] == RUNS, "over the limit: party %d ran %d runs", q,
                 sh->runs_done[q]);
    }
}

static void check_cold_warm(void)
{
    const veil_plan_t *p = net.plan;
    VT_CHECK(session(COLD, 0) == 0, "cold session failed");
    struct shared *cold = malloc(sizeof *cold);
    if (!cold)
        return;
    memcpy(cold, sh, sizeof *sh);
    VT_CHECK(session(WARM, 0) == 0, "warm session failed");
    for (int q = 0; q < 2; q++) {
        for (int r = 0; r < RUNS; r++)
            for (size_t k = 0; k < veil_plan_output_count(p); k++) {
                const int to = veil_plan_output_to(p, k);
                if (to != VEIL_ALL_PARTIES && to != q)
                    continue;
                VT_CHECK(memcmp(sh->out[r][q][k], cold->out[r][q][k],
                                veil_plan_output_numel(p, k) * sizeof(double)) == 0,
                         "party %d run %d output '%s': prepared differs from unprepared", q, r,
                         veil_plan_output_name(p, k));
                for (size_t i = 0; i < veil_plan_output_numel(p, k); i++)
                    VT_CHECK(fabs(sh->out[r][q][k][i] - net.want[k][i]) <= net.tol,
                             "party %d run %d output %zu[%zu] = %g, plaintext %g", q, r, k, i,
                             sh->out[r][q][k][i], net.want[k][i]);
            }
        const struct veil_run_stats *w0 = &sh->st[0][q], *w1 = &sh->st[1][q];
        VT_CHECK(w0->bytes_sent == w1->bytes_sent && w0->rounds == w1->rounds,
                 "party %d prepared: run 0 sent %llu bytes in %llu rounds, run 1 %llu in %llu", q,
                 (unsigned long long)w0->bytes_sent, (unsigned long long)w0->rounds,
                 (unsigned long long)w1->bytes_sent, (unsigned long long)w1->rounds);
        VT_CHECK(w1->bytes_sent == cold->st[1][q].bytes_sent,
                 "party %d: the steady run sends %llu bytes prepared, %llu unprepared", q,
                 (unsigned long long)w1->bytes_sent, (unsigned long long)cold->st[1][q].bytes_sent);
        /* unprepared, the parameters' owner sends them in run 0 on top of run 1's bytes, and
         * every party its shares of the weight masks' opens (weight-stationary) */
        VT_CHECK(cold->st[0][q].bytes_sent ==
                     cold->st[1][q].bytes_sent + (q == 0 ? 8 * param_words() : 0) + 8 * ws_words,
                 "party %d unprepared: run 0 sent %llu bytes, run 1 %llu", q,
                 (unsigned long long)cold->st[0][q].bytes_sent,
                 (unsigned long long)cold->st[1][q].bytes_sent);
        /* the dealer dealt run 0's material in prepare, all of it here when prepare returned:
         * at least half of the two runs' material (with the dealer's seed) */
        const uint64_t dealt = cold->st[0][q].dealer_bytes_recv + cold->st[1][q].dealer_bytes_recv;
        VT_CHECK(sh->prep[q].dealer_bytes_recv >= dealt / 2 && dealt > 0,
                 "party %d: %llu bytes from the dealer in prepare, of %llu for both runs", q,
                 (unsigned long long)sh->prep[q].dealer_bytes_recv, (unsigned long long)dealt);
        /* the parameters, the weight masks' opens, and the one word of the closing exchange to
         * the other party */
        VT_CHECK(sh->prep[q].bytes_sent == (q == 0 ? 8 * param_words() : 0) + 8 * ws_words + 8,
                 "party %d: prepare sent %llu bytes (party 0 owns %zu parameter words)", q,
                 (unsigned long long)sh->prep[q].bytes_sent, param_words());
        /* prepare reserved a steady run's buffers in the pool: run 0 allocates next to none of
         * its own (unreserved: one party's own buffers, the dealer's corrections) */
        VT_CHECK(cold->fresh[0][q][1] > 0 && sh->fresh[0][q][1] <= cold->fresh[0][q][1] / 8,
                 "party %d: run 0 allocated %llu bytes outside the pool prepared, %llu unprepared",
                 q, (unsigned long long)sh->fresh[0][q][1],
                 (unsigned long long)cold->fresh[0][q][1]);
        veil_test_log(
            "party %d: run 0 allocated %llu buffers, %llu bytes (unprepared %llu, %llu); "
            "run 1 %llu, %llu",
            q, (unsigned long long)sh->fresh[0][q][0], (unsigned long long)sh->fresh[0][q][1],
            (unsigned long long)cold->fresh[0][q][0], (unsigned long long)cold->fresh[0][q][1],
            (unsigned long long)sh->fresh[1][q][0], (unsigned long long)sh->fresh[1][q][1]);
        veil_test_log("party %d: prepare %.1f ms, %llu bytes; run 0 %.1f ms (unprepared %.1f), "
                      "run 1 %.1f ms, %llu bytes",
                      q, 1e3 * sh->prep[q].online_s, (unsigned long long)sh->prep[q].bytes_sent,
                      1e3 * w0->online_s, 1e3 * cold->st[0][q].online_s, 1e3 * w1->online_s,
                      (unsigned long long)w1->bytes_sent);
    }
    for (int q = 0; q < NPROC; q++) {
        VT_CHECK(sh->rc_again[q] == VEIL_ERR_STATE && strstr(sh->msg_again[q], "called twice"),
                 "process %d: a second prepare gave %d '%s'", q, sh->rc_again[q], sh->msg_again[q]);
        VT_CHECK(cold->rc_again[q] == VEIL_ERR_STATE &&
                     strstr(cold->msg_again[q], "before the first veil_run"),
                 "process %d: a prepare after the runs gave %d '%s'", q, cold->rc_again[q],
                 cold->msg_again[q]);
        VT_CHECK(sh->runs_done[q] == RUNS && cold->runs_done[q] == RUNS,
                 "process %d ran %d prepared, %d unprepared", q, sh->runs_done[q],
                 cold->runs_done[q]);
    }
    check_over_limit(cold);
    free(cold);
}

/* Party 0's prepare refused with says in its message, party 1's failing with it (the lost peer)
 * or stopped by the harness first, neither party running, the session failed. */
static void check_bad(enum mode m, const char *says)
{
    VT_CHECK(session(m, 1) != 0, "bad prepare (%s): the session succeeded", says);
    VT_CHECK(sh->rc_prepare[0] == VEIL_ERR_INVAL && strstr(sh->msg_prepare[0], says) &&
                 strstr(sh->msg_prepare[0], "veil_party_prepare (party 0)"),
             "bad prepare: party 0 gave %d '%s', expected '%s'", sh->rc_prepare[0],
             sh->msg_prepare[0], says);
    /* the dealer waits for nothing in prepare; it learns of the failure later, at the latest
     * when it closes */
    for (int q = 0; q < 2; q++)
        VT_CHECK(sh->runs_done[q] == 0, "bad prepare (%s): party %d ran", says, q);
    VT_CHECK(sh->rc_prepare[1] != VEIL_OK, "bad prepare (%s): party 1's prepare succeeded", says);
    VT_CHECK(sh->rc_prepare[0] != VEIL_OK && sh->rc_prepare[0] != 1,
             "bad prepare (%s): party 0's prepare did not return its refusal", says);
}

int main(void)
{
    sh = veil_test_mpc_shared(sizeof *sh);
    if (!sh)
        return 1;
    veil_test_net_mlp(&net);
    veil_test_net_reference(&net);
    if (veil_test_failures)
        return veil_test_status();
    check_cold_warm();
    check_bad(MISSING, "parameter 'w2' (owner 0, shape [16,10]): no feed");
    check_bad(SHAPE, "parameter 'b1': the feed has 15 values; give 16");
    veil_test_net_free(&net);
    /* weight-stationary: prepare opens every W - B too, so run 0 is a steady run again */
    veil_test_net_weight_stationary = 1;
    veil_test_net_mlp(&net);
    veil_test_net_reference(&net);
    ws_words = 20 * 16 + 16 * 10;
    if (!veil_test_failures)
        check_cold_warm();
    veil_test_net_weight_stationary = 0;
    veil_test_net_free(&net);
    veil_test_mpc_shared_free(sh, sizeof *sh);
    return veil_test_status();
}

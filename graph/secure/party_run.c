/*
 * party_run.c — the runs of a party session: the walk every run or training step goes through
 * (feeds bound, the walk of run.c, one barrier, revealed outputs decoded, a calibration run's
 * measurement applied, costs measured from the network counters), veil_run and the last run's
 * statistics and profile, and veil_party_prepare (the parameters shared before the first run, so
 * that run does only what every later run does).
 *
 * FLOW CONTROL. The dealer computes no shares and would deal the material of every run at once;
 * the designated party would then hold it all as early arrivals (68 MB a batch of LeNet). So
 * after each run the designated party (N-1) sends the dealer a one-word acknowledgement
 * (tasks/dealer_msg.c), and the dealer deals run r only once run r - DEALER_AHEAD is
 * acknowledged: the material of the next runs still flows while the parties compute, and at most
 * DEALER_AHEAD runs of it wait.
 */
#include "config.h"

#include "base/base_internal.h"
#include "base/secmem.h"
#include "base/trace.h"
#include "graph/secure/party_internal.h"
#include "tasks/dealer_msg.h"

#include <starpu.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Runs the dealer may deal ahead of the designated party's acknowledgements. */
#define DEALER_AHEAD 2

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Sums of this process's counters over every peer. */
static void counters(veil_party_t *me, struct veil_run_stats *s)
{
    memset(s, 0, sizeof *s);
    for (int q = 0; q < veil_net_nprocs(me->net); q++) {
        struct veil_net_stats st;
        if (q == me->self || veil_net_stats_get(me->net, q, &st) != VEIL_OK)
            continue;
        /* a party's only traffic to the dealer is the 8-byte acknowledgement per run */
        if (q != me->nparties || me->is_dealer)
            s->bytes_sent += st.bytes_sent;
        s->bytes_recv += st.bytes_recv;
        s->rounds = st.rounds;
        if (q == me->nparties)
            s->dealer_bytes_recv += st.bytes_recv;
    }
}

/* Decodes a revealed output into out (numel doubles). The barrier is behind us; the tiles are
 * brought to main memory first should they live on a device. */
int veil_party_decode(veil_party_t *me, struct veil_pub *r, double *out)
{
    if (veil_sec_to_host(r) != VEIL_OK)
        return veil_error(VEIL_ERR_STARPU, "veil_run: cannot read a revealed output: %s",
                          veil_last_error());
    veil_fixed_decode_array(r->data, r->numel, me->p->opts.frac_bits, out);
    return VEIL_OK;
}

static int ack_handle(veil_party_t *me)
{
    if (!me->ack_h)
        starpu_vector_data_register(&me->ack_h, STARPU_MAIN_RAM, (uintptr_t)&me->ack_word, 1,
                                    sizeof me->ack_word);
    return me->ack_h ? VEIL_OK
                     : veil_error(VEIL_ERR_STARPU, "veil_run: cannot register the acknowledgement");
}

/* The dealer, before dealing run `run`: waits for the acknowledgement of run - DEALER_AHEAD. */
static int dealer_wait_turn(veil_party_t *me, uint64_t run)
{
    if (!me->is_dealer || run < DEALER_AHEAD)
        return VEIL_OK;
    int rc = ack_handle(me);
    if (rc == VEIL_OK)
        rc = veil_mpc_ack_recv(me->m, me->ack_h, run - DEALER_AHEAD);
    return rc == VEIL_OK ? veil_mpc_wait(me->m) : rc;
}

/* The designated party, after run `run` completed: acknowledges it to the dealer (detached). */
static int party_ack(veil_party_t *me, uint64_t run)
{
    if (me->is_dealer || !me->has_dealer || me->self != me->nparties - 1)
        return VEIL_OK;
    int rc = ack_handle(me);
    return rc == VEIL_OK ? veil_mpc_ack_send(me->m, me->ack_h, run) : rc;
}

int veil_party_usable(veil_party_t *me, const char *what)
{
    if (!me)
        return veil_error(VEIL_ERR_INVAL, "%s: no party", what);
    if (me->failed)
        return veil_error(VEIL_ERR_STATE, "%s: the session failed earlier (%s); close it and "
                          "open a new one", what, me->fail_msg);
    return VEIL_OK;
}

/* This party's feeds bound into values: parameters too while they are not shared yet. */
static int bind_feeds(veil_party_t *me, const char *what, const struct veil_feed *feeds,
                      size_t nfeeds, double **values)
{
    const veil_plan_t *p = me->p;
    /* parameters are fed (and folded) once: at the first run, or after a fresh load */
    int params_pending = 0;
    for (size_t li = 0; li < p->nleaves; li++) {
        const struct veil_node *n = &p->nodes[p->leaves[li]];
        params_pending |=
            n->op == VEIL_OP_PARAM && n->owner == me->self && me->x.val[n->index].numel == 0;
    }
    int rc = params_pending ? veil_plan_bind(p, me->self, feeds, nfeeds, values)
                            : veil_plan_bind_inputs(p, me->self, feeds, nfeeds, values);
    if (rc != VEIL_OK) {
        /* nothing was sent: the peers learn of it from this process leaving the session */
        char why[384];
        snprintf(why, sizeof why, "%s", veil_last_error());
        rc = veil_error(rc, "%s (party %d): %s", what, me->self, why);
    }
    return rc;
}

/* A failure that may have left the peers waiting on this process: the session is over (the
 * peers learn it when this process aborts at close). */
static int fail_session(veil_party_t *me, int rc)
{
    me->failed = 1;
    snprintf(me->fail_msg, sizeof me->fail_msg, "%s", veil_last_error());
    return rc;
}

/* The last run's costs: online_s seconds, and the counters since the end of the previous run. */
static void measure(veil_party_t *me, double online_s)
{
    struct veil_run_stats after;
    counters(me, &after);
    me->last.online_s = online_s;
    me->last.bytes_sent = after.bytes_sent - me->mark.bytes_sent;
    me->last.bytes_recv = after.bytes_recv - me->mark.bytes_recv;
    me->last.rounds = after.rounds - me->mark.rounds;
    me->last.dealer_bytes_recv = after.dealer_bytes_recv - me->mark.dealer_bytes_recv;
    me->mark = after;
}

/* Snapshot k (0: before the run, 1: after) of the threads' CPU counters while tracing: 1, or 0
 * when there is none; a failed one (a process grown past the snapshot's threads) ends them for
 * the session, with a warning, rather than give a run a partial count. */
static int cpu_snapshot(veil_party_t *me, int k)
{
    if (!me->cpu_snap)
        return 0;
    if (veil_cpu_snapshot(&me->cpu_snap[k]) == VEIL_OK)
        return 1;
    VEIL_LOG_WARN("tracing: the profiles leave out the threads' CPU use from this run on: %s",
                  veil_last_error());
    free(me->cpu_snap);
    me->cpu_snap = NULL;
    return 0;
}

int veil_party_walk(veil_party_t *me, const char *what, size_t end,
                    const struct veil_feed *feeds, size_t nfeeds, double *const *outputs,
                    int loss_to, double *probs)
{
    const veil_plan_t *p = me->p;
    double **values = calloc(p->count ? p->count : 1, sizeof *values);
    struct veil_pub *revealed = calloc(p->noutputs ? p->noutputs : 1, sizeof *revealed);
    int rc = values && revealed ? VEIL_OK : veil_error(VEIL_ERR_NOMEM, "%s: out of memory", what);
    if (rc == VEIL_OK && !me->is_dealer)
        rc = bind_feeds(me, what, feeds, nfeeds, values);
    const uint64_t run = me->runs++;
    /* the calibration run records its tasks; the recorder is started for it unless tracing */
    int calib = me->calibrate && rc == VEIL_OK && !me->is_dealer;
    int calib_rec = 0;
    if (calib && !me->trace_path) {
        calib_rec = veil_trace_start() == VEIL_OK;
        if (!calib_rec) { /* not fatal: the run goes on with the modelled placement */
            VEIL_LOG_WARN("calibration skipped, the placement stays modelled: %s",
                          veil_last_error());
            me->calibrate = calib = 0;
        }
    }
    if (me->trace_path || calib_rec)
        veil_trace_run_begin((int)run);
    if (rc == VEIL_OK)
        rc = dealer_wait_turn(me, run);
    /* tracing: the threads' CPU counters just outside the run's clock */
    const int cpu_on = cpu_snapshot(me, 0);
    const double t0 = now_s(), tt0 = veil_trace_now();
    me->x.loss_to = loss_to;
    if (rc == VEIL_OK)
        rc = veil_exec_walk(&me->x, end, values, end == p->nforward ? revealed : NULL);
    me->x.loss_to = -2;
    if (values)
        veil_plan_values_free(p, values);
    free(values);
    int wrc = veil_mpc_wait(me->m);
    if (rc == VEIL_OK)
        rc = wrc;
    const double t1 = now_s(), tt1 = veil_trace_now();
    struct veil_cpu_use cpu = {0};
    if (cpu_on && cpu_snapshot(me, 1))
        veil_cpu_use_between(&me->cpu_snap[0], &me->cpu_snap[1], &cpu);
    veil_trace_set_region(VEIL_REGION_OTHER);
    veil_trace_set_node(-1);
    if (calib_rec) {
        veil_trace_run_end(tt0, tt1, 0, 0);
        veil_trace_stop();
    }
    if (calib && rc == VEIL_OK) {
        me->calibrate = 0;
        if (veil_party_apply_calibration(me, (int)run, end) != VEIL_OK) { /* not fatal: the model stays */
            VEIL_LOG_WARN("calibration failed, the placement stays modelled: %s",
                          veil_last_error());
            free(me->node_s);
            me->node_s = NULL;
            if ((rc = veil_party_place(me)) != VEIL_OK)
                rc = veil_error(rc, "%s: %s", what, veil_last_error());
        }
    }
    if (calib_rec)
        veil_trace_free();
    if (rc == VEIL_OK)
        rc = party_ack(me, run);
    for (size_t k = 0; rc == VEIL_OK && outputs && k < p->noutputs; k++)
        if (revealed[k].data && outputs[k])
            rc = veil_party_decode(me, &revealed[k], outputs[k]);
    if (rc == VEIL_OK && loss_to >= VEIL_ALL_PARTIES && me->x.loss_rev.data && probs)
        rc = veil_party_decode(me, &me->x.loss_rev, probs);
    veil_mpc_release(me->m, &me->x.loss_rev);
    for (size_t k = 0; revealed && k < p->noutputs; k++)
        veil_mpc_release(me->m, &revealed[k]);
    free(revealed);
    /* from the end of the previous run: traffic between two runs (the dealer's material for
     * the next one, arriving early) belongs to the next run, so no byte is missed */
    measure(me, t1 - t0);
    if (me->trace_path) {
        int prc = cpu.cpus ? veil_trace_run_cpu_set((int)run, &cpu) : VEIL_OK;
        veil_trace_run_end(tt0, tt1, me->last.bytes_sent, me->last.bytes_recv);
        if (prc == VEIL_OK)
            prc = veil_trace_summarize((int)run, tt0, tt1, &me->profile);
        if (rc == VEIL_OK)
            rc = prc;
    }
    return rc != VEIL_OK ? fail_session(me, rc) : rc;
}

/* An inference plan's first call can only be veil_run (a training plan's could be either, with
 * other material), so prepare deals run 0's material ahead: the dealer walks run 0 now (its own
 * first veil_run then has nothing left to do) and, once all of it is handed to the network, sends
 * every process one word, which every process waits for. Messages from one peer arrive in order,
 * so when a party has the word it has run 0's material too: its first run then waits for the
 * dealer no more than a steady run does (whose material the dealer dealt a run ahead).
 * The parties post no receive in prepare, so no credit comes (tasks/mpc_material.c, FLOW
 * CONTROL): the dealer deals ahead only when run 0's material (a recorder's count, which is at
 * least what the run takes) fits in veil_mpc_ahead_limit, and its word says whether it did; with
 * more (LeNet-5 at batch 1000: 682 MB) it would wait for a credit forever, so run 0 is dealt in
 * run 0 as without prepare. */
static int deal_ahead(veil_party_t *me)
{
    int rc = VEIL_OK;
    uint64_t word = 0, got[VEIL_NET_MAX_PROCS];
    if (me->is_dealer) {
        uint64_t bytes = 0;
        rc = veil_plan_preproc(me->p, me->nparties, NULL, &bytes);
        word = rc == VEIL_OK && bytes <= veil_mpc_ahead_limit(me->m);
        me->ahead = (int)word;
        if (word)
            rc = veil_party_walk(me, "veil_party_prepare", me->p->nforward, NULL, 0, NULL, -2,
                                 NULL);
        VEIL_LOG_INFO("veil_party_prepare: run 0's material, %llu bytes, %s", (unsigned long long)
                      bytes, word ? "dealt ahead" : "above the flow control's limit: dealt in run 0");
    }
    if (rc == VEIL_OK)
        rc = veil_mpc_exchange(me->m, &word, 1, got);
    if (rc == VEIL_OK) {
        me->ahead = me->is_dealer ? (int)word : got[me->nparties] != 0;
        if (me->is_dealer && word)
            counters(me, &me->mark); /* the word is prepare's; the walk measured run 0 */
    }
    return rc;
}

/* The first run's share buffers reserved in the buffer pool, their pages faulted in now
 * (base/secmem.c): run 0 then takes them as later runs take the ones the run before gave back,
 * instead of faulting in its working set while it computes (LeNet-5 at batch 100: 306 MB in
 * about 370 buffers). A party only: the dealer holds no shares. Best effort: a buffer left out
 * is allocated in run 0 as before. */
static void reserve_run_buffers(veil_party_t *me)
{
    size_t *bytes = NULL, n = 0, total = 0;
    const double t0 = now_s();
    const int rc = veil_plan_run_buffers(me->p, me->nparties, &bytes, &n);
    for (size_t i = 0; i < n; i++)
        total += bytes[i];
    const size_t got = rc == VEIL_OK ? veil_secbuf_reserve(bytes, n) : 0;
    free(bytes);
    if (rc != VEIL_OK)
        VEIL_LOG_WARN("veil_party_prepare: run 0's buffers not reserved: %s", veil_last_error());
    else
        VEIL_LOG_INFO("veil_party_prepare: %zu of run 0's %zu MB of share buffers reserved in "
                      "%.3f s",
                      got >> 20, total >> 20, now_s() - t0);
}

/* Why prepare may not run now (the same answer at every process: SPMD), or VEIL_OK. */
static int prepare_refused(veil_party_t *me)
{
    const char *what = "veil_party_prepare";
    if (me->prepared)
        return veil_error(VEIL_ERR_STATE, "%s: called twice; the parameters were shared by the "
                          "first call (call it once per session)", what);
    if (me->runs)
        return veil_error(VEIL_ERR_STATE, "%s: called after %llu run(s) or step(s), which shared "
                          "the parameters already; call it before the first veil_run or "
                          "veil_train_step", what, (unsigned long long)me->runs);
    for (size_t i = 0; i < me->p->count; i++)
        if (me->p->nodes[i].op == VEIL_OP_PARAM && me->x.val[i].numel)
            return veil_error(VEIL_ERR_STATE, "%s: the session holds parameter '%s' already (a "
                              "checkpoint was loaded); call it before veil_party_load or not at "
                              "all", what, me->p->nodes[i].name);
    return VEIL_OK;
}

int veil_party_prepare(veil_party_t *me, const struct veil_feed *params, size_t nparams)
{
    int rc = veil_party_usable(me, "veil_party_prepare");
    if (rc != VEIL_OK || (rc = prepare_refused(me)) != VEIL_OK)
        return rc;
    const veil_plan_t *p = me->p;
    double **values = calloc(p->count ? p->count : 1, sizeof *values);
    if (!values)
        return fail_session(me, veil_error(VEIL_ERR_NOMEM, "veil_party_prepare: out of memory"));
    if (!me->is_dealer && (rc = veil_plan_bind_params(p, me->self, params, nparams, values)) !=
                              VEIL_OK) {
        /* nothing was sent: the peers learn of it from this process leaving the session */
        char why[384];
        snprintf(why, sizeof why, "%s", veil_last_error());
        rc = veil_error(rc, "veil_party_prepare (party %d): %s", me->self, why);
    }
    const double t0 = now_s();
    if (rc == VEIL_OK)
        rc = veil_exec_share_params(&me->x, values);
    if (rc == VEIL_OK) /* a weight-stationary plan: every W - B opened now, not in run 0 */
        rc = veil_lower_prime_weights(&me->x);
    veil_plan_values_free(p, values);
    free(values);
    if (rc == VEIL_OK && !me->is_dealer) /* while the sharing's messages travel */
        reserve_run_buffers(me);
    const int wrc = veil_mpc_wait(me->m);
    if (rc == VEIL_OK)
        rc = wrc;
    if (rc == VEIL_OK && me->has_dealer && !p->opts.training)
        rc = deal_ahead(me);
    /* the sharing's traffic (and run 0's material) is prepare's, not run 0's */
    if (!me->is_dealer)
        measure(me, now_s() - t0);
    if (rc != VEIL_OK)
        return me->failed ? rc : fail_session(me, rc);
    me->prepared = 1;
    return VEIL_OK;
}

int veil_run(veil_party_t *me, const struct veil_feed *feeds, size_t nfeeds, double *const *outputs)
{
    int rc = veil_party_usable(me, "veil_run");
    if (rc != VEIL_OK)
        return rc;
    if (me->ahead) {
        me->ahead = 0;
        if (me->is_dealer) { /* dealt in veil_party_prepare */
            measure(me, 0);
            return VEIL_OK;
        }
    }
    return veil_party_walk(me, "veil_run", me->p->nforward, feeds, nfeeds, outputs, -2, NULL);
}

int veil_party_last_stats(const veil_party_t *me, struct veil_run_stats *out)
{
    if (!me || !out)
        return veil_error(VEIL_ERR_INVAL, "veil_party_last_stats: NULL argument");
    *out = me->last;
    return VEIL_OK;
}

int veil_party_last_profile(const veil_party_t *me, struct veil_run_profile *out)
{
    if (!me || !out)
        return veil_error(VEIL_ERR_INVAL, "veil_party_last_profile: NULL argument");
    if (!me->trace_path)
        return veil_error(VEIL_ERR_STATE, "veil_party_last_profile: this party does not trace "
                                          "(set trace_path in its options or VEIL_TRACE)");
    if (me->runs == 0)
        return veil_error(VEIL_ERR_STATE, "veil_party_last_profile: no run yet");
    *out = me->profile;
    return VEIL_OK;
}

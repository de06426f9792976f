/*
 * test_mpc_util.c — the multi-process protocol-test helper (see test_mpc_util.h): harness run
 * with fresh CURVE keys, per-process net and MPC context set-up, traffic counters, and memory
 * shared across fork for results.
 */
#include "config.h"
#include "base/trace.h"
#include "test_mpc_util.h"
#include "test_util.h"

#include "base/base_internal.h"
#include "base/harness.h"
#include "net/net_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <inttypes.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

struct run_ctx {
    const struct veil_test_mpc_opts *opts;
    veil_test_mpc_fn fn;
    void *arg;
    char pub[VEIL_NET_MAX_PROCS][VEIL_Z85_KEY_CHARS + 1];
    char sec[VEIL_NET_MAX_PROCS][VEIL_Z85_KEY_CHARS + 1];
    /* FILE material */
    uint8_t session[VEIL_PREPROC_SID_BYTES];
    uint8_t digest[VEIL_PREPROC_DIGEST_BYTES];
    char dir[64];
    char path[VEIL_PREPROC_MAX_PARTIES][96];
};

static int child(const struct veil_harness_party *me, void *arg)
{
    struct run_ctx *r = arg;
    if (starpu_init(NULL) != 0) {
        fprintf(stderr, "process %d: starpu_init failed\n", me->id);
        return 3;
    }
    struct veil_net_config cfg;
    veil_net_t *net = NULL;
    veil_mpc_t *m = NULL;
    int code = 1;
    int rc = veil_net_config_from_harness(me, (const char(*)[VEIL_Z85_KEY_CHARS + 1]) r->pub,
                                          r->sec[me->id], &cfg);
    const int file = r->opts->material == VEIL_MPC_MAT_FILE;
    if (rc == VEIL_OK && file) /* the session the files were generated for */
        memcpy(cfg.session, r->session, sizeof r->session);
    cfg.insecure_plaintext = r->opts->insecure_plaintext;
    struct veil_net_options nopt;
    veil_net_options_defaults(&nopt);
    if (r->opts->early_cap)
        nopt.early_cap_bytes = r->opts->early_cap;
    if (rc == VEIL_OK)
        rc = veil_net_open(&cfg, &nopt, &net);
    if (rc == VEIL_OK) {
        struct veil_mpc_options o;
        veil_mpc_options_defaults(&o);
        o.role = me->is_dealer ? VEIL_MPC_DEALER : VEIL_MPC_PARTY;
        o.material = r->opts->material;
        if (r->opts->tile)
            o.tile = r->opts->tile;
        if (r->opts->frac_bits >= 0)
            o.frac_bits = r->opts->frac_bits;
        o.credit_step = r->opts->credit_step;
        o.credit_window = r->opts->credit_window;
        if (file) {
            o.preproc_path = r->path[me->id];
            memcpy(o.plan_digest, r->digest, sizeof o.plan_digest);
        }
        m = veil_mpc_new(net, &o);
        rc = m ? VEIL_OK : VEIL_ERR_STATE;
    }
    if (rc == VEIL_OK) {
        code = r->fn(m, r->arg);
        if (veil_mpc_wait(m) != VEIL_OK) {
            fprintf(stderr, "process %d: final wait: %s\n", me->id, veil_last_error());
            code = 1;
        }
    } else {
        fprintf(stderr, "process %d: set-up: %s\n", me->id, veil_last_error());
    }
    veil_mpc_destroy(&m);
    if (veil_net_close(&net) != VEIL_OK && code == 0) { /* the session as a whole failed */
        fprintf(stderr, "process %d: close: %s\n", me->id, veil_last_error());
        code = 1;
    }
    starpu_shutdown();
    return code;
}

const char *veil_test_mpc_name(const struct veil_test_mpc_opts *opts)
{
    static char buf[64];
    snprintf(buf, sizeof buf, "N=%d %s", opts->nparties,
             opts->material == VEIL_MPC_MAT_DEALER ? "dealer"
             : opts->material == VEIL_MPC_MAT_FILE ? "file"
                                                   : "tfp");
    return buf;
}

/* FILE material: records fn's items on a RECORDER, then writes every party's file. */
static int make_files(struct run_ctx *r)
{
    const struct veil_test_mpc_opts *opts = r->opts;
    struct veil_mpc_options o;
    veil_mpc_options_defaults(&o);
    o.role = VEIL_MPC_RECORDER;
    o.material = VEIL_MPC_MAT_FILE;
    if (opts->tile)
        o.tile = opts->tile;
    if (opts->frac_bits >= 0)
        o.frac_bits = opts->frac_bits;
    veil_mpc_t *rec = veil_mpc_new_recorder(opts->nparties, &o);
    if (!rec) {
        fprintf(stderr, "FAIL: recorder: %s\n", veil_last_error());
        return 1;
    }
    int code = r->fn(rec, r->arg);
    if (code != 0)
        fprintf(stderr, "FAIL: the recording run failed (%d)\n", code);
    size_t n = 0;
    const struct veil_preproc_item *items = veil_mpc_items(rec, &n);
    struct veil_preproc_layout layout;
    const char *paths[VEIL_PREPROC_MAX_PARTIES];
    snprintf(r->dir, sizeof r->dir, "/tmp/veil-test-preproc-XXXXXX");
    int rc = code ? VEIL_ERR_STATE : veil_seed_random(r->session);
    if (rc == VEIL_OK)
        rc = veil_preproc_layout_init(&layout, opts->nparties, o.frac_bits, r->session);
    if (rc == VEIL_OK)
        rc = veil_preproc_items_digest(items, n, r->digest);
    if (rc == VEIL_OK && !mkdtemp(r->dir))
        rc = veil_error(VEIL_ERR_IO, "mkdtemp failed");
    for (int p = 0; p < opts->nparties && rc == VEIL_OK; p++) {
        snprintf(r->path[p], sizeof r->path[p], "%s/party%d.pre", r->dir, p);
        paths[p] = r->path[p];
    }
    if (rc == VEIL_OK)
        rc = veil_preproc_generate_files(&layout, items, n, r->digest, paths);
    if (rc != VEIL_OK && !code)
        fprintf(stderr, "FAIL: preprocessing files: %s\n", veil_last_error());
    veil_mpc_destroy(&rec);
    return rc == VEIL_OK && !code ? 0 : 1;
}

static void remove_files(struct run_ctx *r)
{
    for (int p = 0; p < r->opts->nparties; p++)
        if (r->path[p][0])
            unlink(r->path[p]);
    if (r->dir[0] && !strstr(r->dir, "XXXXXX"))
        rmdir(r->dir);
}

int veil_test_mpc_run(const struct veil_test_mpc_opts *opts, veil_test_mpc_fn fn, void *arg)
{
    static struct run_ctx r;
    memset(&r, 0, sizeof r);
    r.opts = opts;
    r.fn = fn;
    r.arg = arg;
    const int dealer = opts->material == VEIL_MPC_MAT_DEALER;
    const int nproc = opts->nparties + dealer;
    if (opts->material == VEIL_MPC_MAT_FILE && make_files(&r) != 0) {
        remove_files(&r);
        return 1;
    }
    for (int p = 0; p < nproc; p++)
        if (veil_curve_keypair(r.pub[p], r.sec[p]) != VEIL_OK) {
            fprintf(stderr, "FAIL: curve keypair: %s\n", veil_last_error());
            return 1;
        }
    struct veil_harness_result res[VEIL_HARNESS_MAX_PROCS];
    memset(res, 0, sizeof res);
    struct veil_harness_opts o = {.nparties = opts->nparties,
                                  .dealer = dealer,
                                  .timeout_s = opts->timeout_s > 0 ? opts->timeout_s : 120,
                                  .grace_s = 10};
    int rc = veil_harness_run(&o, child, &r, res);
    if (rc != VEIL_OK) {
        fprintf(stderr, "FAIL: %s: %s\n", veil_test_mpc_name(opts), veil_last_error());
        for (int p = 0; p < nproc; p++)
            fprintf(stderr, "---- process %d (exit %d):\n%s", p, res[p].exit_code,
                    res[p].output ? res[p].output : "");
    }
    veil_harness_results_free(res, nproc);
    if (opts->material == VEIL_MPC_MAT_FILE)
        remove_files(&r);
    return rc == VEIL_OK ? 0 : 1;
}

void veil_test_mpc_counters(veil_mpc_t *m, struct veil_test_mpc_counters *c)
{
    memset(c, 0, sizeof *c);
    veil_mpc_items(m, &c->nitems);
    c->correction_bytes = veil_mpc_correction_bytes(m);
    veil_net_t *net = veil_mpc_net(m);
    if (!net)
        return;
    const int self = veil_net_self(net);
    for (int q = 0; q < veil_net_nprocs(net); q++) {
        struct veil_net_stats st;
        if (q == self || veil_net_stats_get(net, q, &st) != VEIL_OK)
            continue;
        c->bytes += st.bytes_sent;
        if (q != veil_mpc_nparties(m) - 1)
            c->bytes_not_designated += st.bytes_sent;
        if (q == (self == 0 ? 1 : 0))
            c->rounds = st.rounds;
    }
}

void *veil_test_mpc_shared(size_t bytes)
{
    void *p =
        mmap(NULL, bytes ? bytes : 1, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

void veil_test_mpc_shared_free(void *p, size_t bytes)
{
    if (p)
        munmap(p, bytes ? bytes : 1);
}

/* The dealer's traffic is the seeded layout's promise: per item one correction tensor, sent to
 * the designated party only, whatever N. */
static void check_dealer_cost(veil_mpc_t *m, const char *op, struct veil_test_mpc_counters *before)
{
    const int n = veil_mpc_nparties(m);
    if (!veil_mpc_net(m) || veil_mpc_self(m) != n)
        return; /* a recorder */
    struct veil_test_mpc_counters now;
    veil_test_mpc_counters(m, &now);
    /* the dealer keeps no item list (it would grow forever): its count of correction bytes,
     * each item's described correction_words, is what the wire must carry */
    const uint64_t want = now.correction_bytes - before->correction_bytes;
    VT_CHECK(now.nitems >= before->nitems, "%s: dealer: item count went from %zu to %zu", op,
             before->nitems, now.nitems);
    VT_CHECK(now.bytes - before->bytes == want,
             "%s: dealer sent %" PRIu64
             " bytes for %zu items, expected one correction each: %" PRIu64,
             op, now.bytes - before->bytes, now.nitems - before->nitems, want);
    VT_CHECK(now.bytes_not_designated == before->bytes_not_designated,
             "%s: dealer sent %" PRIu64 " bytes to parties other than party %d", op,
             now.bytes_not_designated - before->bytes_not_designated, n - 1);
    *before = now;
}

void veil_test_mpc_check_cost(veil_mpc_t *m, const char *op, struct veil_test_mpc_counters *before,
                              uint64_t rounds, uint64_t bytes)
{
    struct veil_test_mpc_counters now;
    if (veil_mpc_wait(m) != VEIL_OK) {
        VT_CHECK(0, "%s: wait: %s", op, veil_last_error());
        return;
    }
    if (!veil_mpc_computes(m)) {
        check_dealer_cost(m, op, before);
        return;
    }
    veil_test_mpc_counters(m, &now);
    VT_CHECK(now.rounds - before->rounds == rounds,
             "%s: party %d: %" PRIu64 " rounds, expected %" PRIu64, op, veil_mpc_self(m),
             now.rounds - before->rounds, rounds);
    VT_CHECK(now.bytes - before->bytes == bytes,
             "%s: party %d: %" PRIu64 " bytes, expected %" PRIu64, op, veil_mpc_self(m),
             now.bytes - before->bytes, bytes);
    *before = now;
}

const uint64_t *veil_test_host(struct veil_sec *x)
{
    VT_CHECK(veil_sec_to_host(x) == VEIL_OK, "bringing a result to host memory: %s",
             veil_last_error());
    return x->data;
}

int veil_test_trace_tasks(const char *name)
{
    int n = 0;
    for (size_t i = 0; i < veil_trace_count(); i++) {
        const struct veil_trace_event *e = veil_trace_event_at(i);
        n += e && e->kind == VEIL_TRACE_TASK_EV && e->name && strcmp(e->name, name) == 0;
    }
    return n;
}

/*
 * party.c — one process's side of a secure session over a compiled plan (include/veil/graph.h):
 * opening it (configuration, StarPU, the network with the plan digest in its handshake, the
 * protocol context), secure runs (feeds bound, the walk of run.c, one barrier, revealed outputs
 * decoded, costs measured from the network counters), closing it, and veil_plan_preproc, which
 * records one run on a RECORDER context to list the correlated randomness the plan consumes.
 * Parameters are shared at the first run and then kept for the whole session, so later runs
 * send only their inputs (and, with weight-stationary preprocessing, no weight masks at all).
 *
 * FLOW CONTROL. The dealer computes no shares and would deal the material of every run at once;
 * the designated party would then hold it all as early arrivals (68 MB a batch of LeNet). So
 * after each run the designated party (N-1) sends the dealer a one-word acknowledgement, and the
 * dealer deals run r only once run r - DEALER_AHEAD is acknowledged: the material of the next
 * runs still flows while the parties compute, and at most DEALER_AHEAD runs of it wait.
 */
#include "config.h"

#include "base/base_internal.h"
#include "base/trace.h"
#include "codelets/codelets_internal.h"
#include "graph/party_internal.h"
#include "sched/sched_internal.h"
#include "net/config_env.h"

#include <starpu.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

_Static_assert(VEIL_PLAN_DIGEST_BYTES == 32, "the plan digest is a SHA-256");

/* Runs the dealer may deal ahead of the designated party's acknowledgements. */
#define DEALER_AHEAD 2

void veil_party_options_defaults(struct veil_party_options *o)
{
    memset(o, 0, sizeof *o);
    o->material = VEIL_MATERIAL_DEALER;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The material seed: exactly 32 hex digits (the value is never echoed: it is key material). */
static int parse_seed(const char *hex, uint8_t out[16])
{
    if (veil_hex_decode(hex, out, 16) != 32)
        return veil_error(VEIL_ERR_INVAL, "veil_party_open: the material seed "
                          "(material_seed or VEIL_MATERIAL_SEED) must be 32 hex digits");
    if (hex[32] != '\0')
        return veil_error(VEIL_ERR_INVAL, "veil_party_open: the material seed must be exactly 32 "
                          "hex digits");
    return VEIL_OK;
}

/* path with its "%d" (if any: at most one, and no other '%') replaced by the party id. */
static int party_path(const char *path, int self, char *out, size_t n)
{
    const char *pc = strchr(path, '%');
    int len;
    if (!pc)
        len = snprintf(out, n, "%s", path);
    else if (pc[1] != 'd' || strchr(pc + 2, '%'))
        return veil_error(VEIL_ERR_INVAL, "veil_party_open: preprocessing path '%s': at most one "
                          "%%d (the party id) and no other %%", path);
    else
        len = snprintf(out, n, "%.*s%d%s", (int)(pc - path), path, self, pc + 2);
    if (len < 0 || (size_t)len >= n)
        return veil_error(VEIL_ERR_INVAL, "veil_party_open: preprocessing path too long");
    return VEIL_OK;
}

/* What only the whole session can check: owners and reveal targets among the N parties, and
 * outputs the secure run can produce. */
static int check_plan(const veil_plan_t *p, int nparties)
{
    for (size_t i = 0; i < p->count; i++) {
        const struct veil_node *n = &p->nodes[i];
        if ((n->op == VEIL_OP_INPUT || n->op == VEIL_OP_PARAM) && n->owner >= nparties)
            return veil_error(VEIL_ERR_INVAL,
                              "veil_party_open: %s '%s' is owned by party %d but "
                              "the session has %d parties (0..%d)",
                              n->op == VEIL_OP_INPUT ? "input" : "parameter", n->name, n->owner,
                              nparties, nparties - 1);
        if (n->output >= 0 && n->reveal_to >= nparties)
            return veil_error(VEIL_ERR_INVAL,
                              "veil_party_open: output '%s' is revealed to party "
                              "%d but the session has %d parties",
                              n->name, n->reveal_to, nparties);
        if (n->output >= 0 && n->op == VEIL_OP_SOFTMAX_XENT)
            return veil_error(VEIL_ERR_UNSUPPORTED,
                              "veil_party_open: output '%s' is a loss "
                              "value, which the secure run does not compute (it keeps only the "
                              "softmax for the gradient); reveal the logits instead",
                              n->name);
    }
    return VEIL_OK;
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

/* Tracing from the options or VEIL_TRACE: checks the path pattern, starts the recorder (one
 * tracing party per process). Before the network opens, so that every message is seen. */
static int trace_open(veil_party_t *me)
{
    const char *path = me->o.trace_path;
    if (!path) {
        path = getenv("VEIL_TRACE");
        if (path && !path[0])
            path = NULL;
    }
    if (!path)
        return VEIL_OK;
    char probe[4096];
    int rc = veil_trace_path(path, me->self, probe, sizeof probe);
    if (rc != VEIL_OK)
        return veil_error(rc, "veil_party_open: %s", veil_last_error());
    if (!(me->trace_path = strdup(path)))
        return veil_error(VEIL_ERR_NOMEM, "veil_party_open: out of memory");
    if ((rc = veil_trace_start()) != VEIL_OK) {
        free(me->trace_path);
        me->trace_path = NULL;
        return veil_error(rc, "veil_party_open: tracing: another party of this process traces");
    }
    VEIL_LOG_INFO("tracing to %s (%%d: party id)", path);
    return VEIL_OK;
}

/* Writes the trace (while StarPU still names its workers) and stops the recorder. */
static void trace_close(veil_party_t *me)
{
    if (!me->trace_path)
        return;
    veil_trace_stop();
    struct veil_trace_meta meta = {.pid = me->self, .nparties = me->nparties, .nprocs = me->nprocs};
    if (veil_trace_write(me->trace_path, &meta) != VEIL_OK)
        VEIL_LOG_ERR("trace not written: %s", veil_last_error());
    veil_trace_free();
    free(me->trace_path);
    me->trace_path = NULL;
}

/* An integer in [lo, hi] from the environment variable name into *out when it is set and not
 * empty (*out untouched otherwise); VEIL_ERR_INVAL naming the variable, the value and what it
 * should be. */
static int env_int(const char *name, long lo, long hi, const char *what, int *out)
{
    const char *env = getenv(name);
    if (!env || !*env)
        return VEIL_OK;
    char *end;
    long v = strtol(env, &end, 10);
    if (*end || v < lo || v > hi)
        return veil_error(VEIL_ERR_INVAL, "veil_party_open: %s='%s' is not %s (%ld to %ld)", name,
                          env, what, lo, hi);
    *out = (int)v;
    return VEIL_OK;
}

/* The workers' nice value: the option, else VEIL_WORKER_NICE (0 or unset: unchanged). */
static int set_worker_nice(veil_party_t *me)
{
    int nice = me->o.worker_nice;
    int rc = nice == 0 ? env_int("VEIL_WORKER_NICE", 0, 19, "a nice value", &nice) : VEIL_OK;
    if (rc != VEIL_OK)
        return rc;
    rc = veil_sched_worker_nice(nice);
    return rc == VEIL_OK ? VEIL_OK : veil_error(rc, "veil_party_open: %s", veil_last_error());
}

/* The StarPU worker type of a device kind. */
static enum starpu_worker_archtype kind_type(enum veil_device_kind k)
{
    return k == VEIL_DEVICE_CUDA ? STARPU_CUDA_WORKER : STARPU_CPU_WORKER;
}

/* The device kind asked for (option, else VEIL_DEVICE_KIND), AUTO resolved to CUDA when StarPU
 * has CUDA workers; CUDA without one is refused. */
static int resolve_device_kind(veil_party_t *me)
{
    me->kind = me->o.device_kind;
    const char *env = getenv("VEIL_DEVICE_KIND");
    int rc;
    if (me->kind == VEIL_DEVICE_AUTO && env && *env &&
        (rc = veil_device_kind_parse(env, &me->kind)) != VEIL_OK)
        return veil_error(rc, "veil_party_open: VEIL_DEVICE_KIND: %s", veil_last_error());
    if ((unsigned)me->kind >= VEIL_DEVICE_COUNT)
        return veil_error(VEIL_ERR_INVAL, "veil_party_open: unknown device kind %d",
                          (int)me->kind);
    const int ncuda = (int)starpu_worker_get_count_by_type(STARPU_CUDA_WORKER);
    if (me->kind == VEIL_DEVICE_AUTO)
        me->kind = ncuda > 0 ? VEIL_DEVICE_CUDA : VEIL_DEVICE_CPU;
    if (me->kind == VEIL_DEVICE_CUDA && ncuda <= 0)
        return veil_error(VEIL_ERR_UNSUPPORTED,
                          "veil_party_open: CUDA devices asked for, but StarPU has no CUDA worker "
                          "(%s)",
#ifdef VEIL_USE_CUDA
                          "no GPU found, or STARPU_NCUDA=0"
#else
                          "the StarPU Veil was built with has no CUDA: see docs/gpu.md"
#endif
        );
    return VEIL_OK;
}

/* The placement and device count asked for (options, else VEIL_PLACEMENT / VEIL_DEVICES),
 * checked against StarPU's workers of the device kind; AUTO is resolved later (place). */
static int resolve_placement(veil_party_t *me)
{
    int rc = resolve_device_kind(me);
    if (rc != VEIL_OK)
        return rc;
    const int nworkers = (int)starpu_worker_get_count_by_type(kind_type(me->kind));
    me->placement = me->o.placement;
    me->ndev = me->o.devices;
    const char *env = getenv("VEIL_PLACEMENT");
    const char *envd = getenv("VEIL_DEVICES");
    me->calibrate = me->o.calibrate;
    if (me->calibrate == 0 &&
        (rc = env_int("VEIL_CALIBRATE", 0, 1, "0 or 1", &me->calibrate)) != VEIL_OK)
        return rc;
    if (me->calibrate < 0 || me->calibrate > 1)
        return veil_error(VEIL_ERR_INVAL, "veil_party_open: calibrate is %d (use 0 or 1)",
                          me->calibrate);
    if (me->is_dealer)
        me->calibrate = 0; /* it computes nothing */
    /* nothing asked (no placement, device count or calibration): no pinning at all, StarPU's
     * scheduler places every task (as on a machine whose accelerators Veil's placement does not
     * drive) */
    me->pin = me->placement != VEIL_PLACEMENT_AUTO || me->ndev > 0 || (env && *env) ||
              (envd && *envd) || me->calibrate;
    if (me->placement == VEIL_PLACEMENT_AUTO && env && *env &&
        (rc = veil_placement_parse(env, &me->placement)) != VEIL_OK)
        return veil_error(rc, "veil_party_open: VEIL_PLACEMENT: %s", veil_last_error());
    if ((unsigned)me->placement >= VEIL_PLACEMENT_COUNT)
        return veil_error(VEIL_ERR_INVAL, "veil_party_open: unknown placement %d",
                          (int)me->placement);
    me->asked = me->placement;
    if ((unsigned)me->o.tp_split >= VEIL_TP_FORCE_COUNT)
        return veil_error(VEIL_ERR_INVAL, "veil_party_open: unknown tensor-parallel split %d",
                          (int)me->o.tp_split);
    if (me->ndev == 0 &&
        (rc = env_int("VEIL_DEVICES", 1, VEIL_PLACE_MAX_DEV, "a device count", &me->ndev)) !=
            VEIL_OK)
        return rc;
    if (me->ndev < 0)
        return veil_error(VEIL_ERR_INVAL, "veil_party_open: %d devices", me->ndev);
    if (me->ndev == 0)
        me->ndev = nworkers < VEIL_PLACE_MAX_DEV ? nworkers : VEIL_PLACE_MAX_DEV;
    if (me->ndev > nworkers || me->ndev > VEIL_PLACE_MAX_DEV)
        return veil_error(VEIL_ERR_INVAL,
                          "veil_party_open: %d devices asked for, but StarPU has %d %s workers "
                          "(set %s) and Veil places over at most %d",
                          me->ndev, nworkers, me->kind == VEIL_DEVICE_CUDA ? "CUDA" : "CPU",
                          me->kind == VEIL_DEVICE_CUDA ? "STARPU_NCUDA" : "STARPU_NCPU",
                          VEIL_PLACE_MAX_DEV);
    if (me->o.group < 0 || me->o.group > me->ndev)
        return veil_error(VEIL_ERR_INVAL,
                          "veil_party_open: hybrid group of %d devices out of %d devices",
                          me->o.group, me->ndev);
    return VEIL_OK;
}

/* Resolves AUTO by the cost model (with the calibrated node times once measured), logs the
 * choice, fills the executor's per-node placement. */
static int place(veil_party_t *me)
{
    double t[VEIL_PLACEMENT_COUNT];
    enum veil_placement best = veil_placement_choose(me->p, me->ndev, me->o.group, me->node_s, t);
    me->placement = me->asked == VEIL_PLACEMENT_AUTO ? best : me->asked;
    VEIL_LOG_INFO("placement: %s over %d %s device%s (%s); %s ms: single %.3f dp %.3f "
                  "pp %.3f tp %.3f hybrid %.3f, cost model's choice %s",
                  veil_placement_name(me->placement), me->ndev, veil_device_kind_name(me->kind),
                  me->ndev > 1 ? "s" : "", me->asked == VEIL_PLACEMENT_AUTO ? "auto" : "asked",
                  me->node_s ? "calibrated" : "modelled", 1e3 * t[VEIL_PLACEMENT_SINGLE],
                  1e3 * t[VEIL_PLACEMENT_DP], 1e3 * t[VEIL_PLACEMENT_PP],
                  1e3 * t[VEIL_PLACEMENT_TP], 1e3 * t[VEIL_PLACEMENT_HYBRID],
                  veil_placement_name(best));
    /* the devices are the first ndev workers of the kind (resolve_placement checked that
     * there are that many) */
    int workers[VEIL_PLACE_MAX_DEV];
    const int got =
        (int)starpu_worker_get_ids_by_type(kind_type(me->kind), workers, (unsigned)me->ndev);
    if (got < me->ndev)
        return veil_error(VEIL_ERR_STARPU, "veil_party_open: StarPU listed %d of %d %s workers",
                          got, me->ndev, veil_device_kind_name(me->kind));
    int rc = veil_exec_place(&me->x, me->placement, workers, me->ndev, me->o.group,
                             me->o.tp_split, me->node_s);
    if (rc == VEIL_OK && me->node_s && me->placement == VEIL_PLACEMENT_PP && me->ndev > 1) {
        /* the calibrated partition: each stage's first computing node */
        char stages[512];
        size_t len = 0;
        int prev = -1;
        for (size_t i = 0; i < me->p->count && len + 1 < sizeof stages; i++) {
            const struct veil_node *n = &me->p->nodes[i];
            const int dev = me->x.place[i].dev[0];
            if (n->op == VEIL_OP_INPUT || n->op == VEIL_OP_PARAM || n->op == VEIL_OP_CONST ||
                dev == prev)
                continue;
            int w = snprintf(stages + len, sizeof stages - len, "%sworker %d from '%s'",
                             prev < 0 ? "" : ", ", dev, n->name);
            len += w > 0 ? (size_t)w : 0;
            prev = dev;
        }
        VEIL_LOG_INFO("placement: calibrated pipeline stages: %s", stages);
    }
    return rc;
}

/* After the calibration run (run index run over nodes [0, end)): the measured node times
 * replace the model's and the party places again. The recorder was started for it unless the
 * party traces. */
static int apply_calibration(veil_party_t *me, int run, size_t end)
{
    double *node_s = calloc(me->p->count ? me->p->count : 1, sizeof *node_s);
    if (!node_s)
        return veil_error(VEIL_ERR_NOMEM, "calibration: out of memory");
    int rc = veil_placement_calibrate(me->p, run, end, node_s);
    if (rc != VEIL_OK) {
        free(node_s);
        return rc;
    }
    double total = 0;
    for (size_t i = 0; i < end; i++)
        total += node_s[i];
    VEIL_LOG_INFO("calibration: run %d, %.3f ms of tasks over %zu nodes", run, 1e3 * total, end);
    free(me->node_s);
    me->node_s = node_s;
    return place(me);
}

int veil_party_placement(const veil_party_t *me, enum veil_placement *placement, int *devices)
{
    if (!me || !placement || !devices)
        return veil_error(VEIL_ERR_INVAL, "veil_party_placement: NULL argument");
    *placement = me->is_dealer ? VEIL_PLACEMENT_SINGLE : me->placement;
    *devices = me->ndev;
    return VEIL_OK;
}

int veil_party_device_kind(const veil_party_t *me, enum veil_device_kind *kind)
{
    if (!me || !kind)
        return veil_error(VEIL_ERR_INVAL, "veil_party_device_kind: NULL argument");
    *kind = me->kind;
    return VEIL_OK;
}

veil_party_t *veil_party_open(const veil_plan_t *p, const struct veil_party_options *opts)
{
    if (!p) {
        veil_error(VEIL_ERR_INVAL, "veil_party_open: no plan");
        return NULL;
    }
    veil_party_t *me = calloc(1, sizeof *me);
    if (!me) {
        veil_error(VEIL_ERR_NOMEM, "veil_party_open: out of memory");
        return NULL;
    }
    me->p = p;
    if (opts)
        me->o = *opts;
    else
        veil_party_options_defaults(&me->o);
    struct veil_net_config cfg;
    int rc = VEIL_OK;
    if (me->o.material != VEIL_MATERIAL_DEALER && me->o.material != VEIL_MATERIAL_FILE)
        rc = veil_error(VEIL_ERR_INVAL, "veil_party_open: unknown material source %d",
                        (int)me->o.material);
    if (rc == VEIL_OK)
        rc = me->o.config_path ? veil_net_config_load(me->o.config_path, &cfg)
                               : veil_net_config_from_env(&cfg);
    if (rc != VEIL_OK)
        goto fail;
    me->self = cfg.self;
    me->nparties = cfg.nparties;
    me->nprocs = cfg.nparties + (cfg.has_dealer ? 1 : 0);
    me->is_dealer = cfg.self == cfg.nparties;
    me->has_dealer = cfg.has_dealer;
    if ((rc = check_plan(p, cfg.nparties)) != VEIL_OK)
        goto fail;
    if (me->o.material == VEIL_MATERIAL_DEALER && !cfg.has_dealer) {
        rc = veil_error(VEIL_ERR_INVAL,
                        "veil_party_open: dealer material needs a dealer process "
                        "in the session (veil-run --dealer, or a 'dealer' line in the "
                        "configuration), or FILE material generated ahead");
        goto fail;
    }
    if (me->o.material == VEIL_MATERIAL_FILE && !me->is_dealer && !me->o.preproc_path) {
        rc = veil_error(VEIL_ERR_INVAL, "veil_party_open: FILE material needs this party's "
                                        "preprocessing file (preproc_path; written by "
                                        "veil_plan_preproc_files)");
        goto fail;
    }
    memcpy(cfg.plan_digest, p->digest, sizeof cfg.plan_digest);
    char prefix[16];
    if (me->is_dealer)
        snprintf(prefix, sizeof prefix, "dealer");
    else
        snprintf(prefix, sizeof prefix, "p%d", me->self);
    veil_log_set_prefix(prefix);
    if (starpu_init(NULL) != 0) {
        rc = veil_error(VEIL_ERR_STARPU, "veil_party_open: starpu_init failed (no worker? check "
                                         "STARPU_NCPU and the StarPU environment)");
        goto fail;
    }
    me->starpu_up = 1;
    if ((rc = set_worker_nice(me)) != VEIL_OK)
        goto fail;
    if ((rc = trace_open(me)) != VEIL_OK)
        goto fail;
    if ((rc = resolve_placement(me)) != VEIL_OK)
        goto fail;
    if ((rc = veil_net_open(&cfg, NULL, &me->net)) != VEIL_OK)
        goto fail;
    struct veil_mpc_options mo;
    veil_mpc_options_defaults(&mo);
    mo.role = me->is_dealer ? VEIL_MPC_DEALER : VEIL_MPC_PARTY;
    mo.material = VEIL_MPC_MAT_DEALER;
    mo.frac_bits = p->opts.frac_bits;
    char preproc_path[4096];
    if (me->o.material == VEIL_MATERIAL_FILE) { /* generated ahead: no dealer in the session */
        if ((rc = party_path(me->o.preproc_path, me->self, preproc_path, sizeof preproc_path)) !=
            VEIL_OK)
            goto fail;
        mo.material = VEIL_MPC_MAT_FILE;
        mo.preproc_path = preproc_path;
        memcpy(mo.plan_digest, p->digest, sizeof mo.plan_digest);
    }
    const char *ms = me->o.material_seed ? me->o.material_seed : getenv("VEIL_MATERIAL_SEED");
    if (ms && *ms) {
        if ((rc = parse_seed(ms, mo.material_seed)) != VEIL_OK)
            goto fail;
        mo.use_material_seed = 1;
    }
    if (!(me->m = veil_mpc_new(me->net, &mo))) {
        rc = VEIL_ERR_STATE;
        goto fail;
    }
    if ((rc = veil_exec_init(&me->x, p, me->m)) != VEIL_OK)
        goto fail;
    if (!me->is_dealer && me->pin && (rc = place(me)) != VEIL_OK)
        goto fail;
    VEIL_LOG_INFO("session open for plan '%s': party %d of %d%s", p->model, me->self, me->nparties,
                  me->is_dealer ? " (dealer)" : "");
    return me;
fail : {
    /* keep the message across the clean-up, which may record its own */
    char why[512];
    snprintf(why, sizeof why, "%s", veil_last_error());
    veil_party_close(&me);
    veil_error(rc, "%s", why);
}
    return NULL;
}

int veil_party_close(veil_party_t **mep)
{
    if (!mep || !*mep)
        return VEIL_OK;
    veil_party_t *me = *mep;
    int rc = VEIL_OK;
    char why[512] = "";
    /* a run that failed here before its peers noticed (a bad feed): they must stop with an error
     * naming this party, not see a clean goodbye */
    if (me->failed && me->net && veil_net_status(me->net) == VEIL_OK)
        veil_net_abort(me->net, VEIL_ERR_STATE, "%s", me->fail_msg);
    if (me->m)
        veil_exec_fini(&me->x);
    veil_mpc_destroy(&me->m);
    if (me->ack_h)
        starpu_data_unregister(me->ack_h);
    if (me->net && (rc = veil_net_close(&me->net)) != VEIL_OK)
        snprintf(why, sizeof why, "%s", veil_last_error());
    if (me->failed && rc == VEIL_OK) {
        rc = VEIL_ERR_STATE;
        snprintf(why, sizeof why, "a run failed: %s", me->fail_msg);
    }
    trace_close(me);
    if (me->starpu_up)
        starpu_shutdown();
    free(me->node_s);
    free(me);
    *mep = NULL;
    return rc == VEIL_OK ? VEIL_OK : veil_error(rc, "veil_party_close: %s", why);
}

int veil_party_id(const veil_party_t *me)
{
    return me ? me->self : -1;
}

int veil_party_nparties(const veil_party_t *me)
{
    return me ? me->nparties : 0;
}

int veil_party_is_dealer(const veil_party_t *me)
{
    return me ? me->is_dealer : 0;
}

/* Decodes a revealed output into out (numel doubles). The barrier is behind us; acquiring each
 * tile brings it to main memory should it live on a device. */
int veil_party_decode(veil_party_t *me, struct veil_pub *r, double *out)
{
    for (int t = 0; t < r->ntiles; t++)
        if (starpu_data_acquire(r->h[t], STARPU_R) != 0)
            return veil_error(VEIL_ERR_STARPU, "veil_run: cannot read a revealed output");
    veil_fixed_decode_array(r->data, r->numel, me->p->opts.frac_bits, out);
    for (int t = 0; t < r->ntiles; t++)
        starpu_data_release(r->h[t]);
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
        rc = veil_net_irecv(me->net, me->ack_h, me->nparties - 1,
                            VEIL_MPC_TAG_SESSION | (run - DEALER_AHEAD));
    return rc == VEIL_OK ? veil_mpc_wait(me->m) : rc;
}

/* The designated party, after run `run` completed: acknowledges it to the dealer (detached). */
static int party_ack(veil_party_t *me, uint64_t run)
{
    if (me->is_dealer || !me->has_dealer || me->self != me->nparties - 1)
        return VEIL_OK;
    int rc = ack_handle(me);
    return rc == VEIL_OK ? veil_net_isend(me->net, me->ack_h, me->nparties,
                                          VEIL_MPC_TAG_SESSION | run)
                         : rc;
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

int veil_party_walk(veil_party_t *me, const char *what, size_t end,
                    const struct veil_feed *feeds, size_t nfeeds, double *const *outputs,
                    int loss_to, double *probs)
{
    const veil_plan_t *p = me->p;
    double **values = calloc(p->count ? p->count : 1, sizeof *values);
    struct veil_pub *revealed = calloc(p->noutputs ? p->noutputs : 1, sizeof *revealed);
    int rc = values && revealed ? VEIL_OK : veil_error(VEIL_ERR_NOMEM, "%s: out of memory", what);
    if (rc == VEIL_OK && !me->is_dealer) {
        /* parameters are fed (and folded) once: at the first run, or after a fresh load */
        int params_pending = 0;
        for (size_t li = 0; li < p->nleaves; li++) {
            const struct veil_node *n = &p->nodes[p->leaves[li]];
            params_pending |=
                n->op == VEIL_OP_PARAM && n->owner == me->self && me->x.val[n->index].numel == 0;
        }
        rc = params_pending ? veil_plan_bind(p, me->self, feeds, nfeeds, values)
                            : veil_plan_bind_inputs(p, me->self, feeds, nfeeds, values);
        if (rc != VEIL_OK) {
            /* nothing was sent: the peers learn of it from this process leaving the session */
            char why[384];
            snprintf(why, sizeof why, "%s", veil_last_error());
            rc = veil_error(rc, "%s (party %d): %s", what, me->self, why);
        }
    }
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
    veil_trace_set_region(VEIL_REGION_OTHER);
    veil_trace_set_node(-1);
    if (calib_rec) {
        veil_trace_run_end(tt0, tt1, 0, 0);
        veil_trace_stop();
    }
    if (calib && rc == VEIL_OK) {
        me->calibrate = 0;
        if (apply_calibration(me, (int)run, end) != VEIL_OK) { /* not fatal: the model stays */
            VEIL_LOG_WARN("calibration failed, the placement stays modelled: %s",
                          veil_last_error());
            free(me->node_s);
            me->node_s = NULL;
            if ((rc = place(me)) != VEIL_OK)
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
    struct veil_run_stats after;
    counters(me, &after);
    me->last.online_s = t1 - t0;
    me->last.bytes_sent = after.bytes_sent - me->mark.bytes_sent;
    me->last.bytes_recv = after.bytes_recv - me->mark.bytes_recv;
    me->last.rounds = after.rounds - me->mark.rounds;
    me->last.dealer_bytes_recv = after.dealer_bytes_recv - me->mark.dealer_bytes_recv;
    me->mark = after;
    if (me->trace_path) {
        veil_trace_run_end(tt0, tt1, me->last.bytes_sent, me->last.bytes_recv);
        int prc = veil_trace_summarize((int)run, tt0, tt1, &me->profile);
        if (rc == VEIL_OK)
            rc = prc;
    }
    if (rc != VEIL_OK) {
        me->failed = 1;
        snprintf(me->fail_msg, sizeof me->fail_msg, "%s", veil_last_error());
    }
    return rc;
}

int veil_run(veil_party_t *me, const struct veil_feed *feeds, size_t nfeeds, double *const *outputs)
{
    int rc = veil_party_usable(me, "veil_run");
    if (rc != VEIL_OK)
        return rc;
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

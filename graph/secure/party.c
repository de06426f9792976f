/*
 * party.c — one process's side of a secure session over a compiled plan (include/veil/graph.h):
 * opening it (configuration, StarPU, the options that defer to the environment, tracing, the
 * network with the plan digest in its handshake, the protocol context) and closing it. The
 * placement over the party's devices is party_place.c's, the runs (and the dealer's pacing)
 * party_run.c's; veil_plan_preproc, which records one run on a RECORDER context to list the
 * correlated randomness the plan consumes, is preproc_plan.c's. Parameters are shared at the first
 * run (or before it, by veil_party_prepare in party_run.c) and then kept for the whole session, so
 * later runs send only their inputs (and, with weight-stationary preprocessing, no weight masks at
 * all).
 */
#include "config.h"

#include "base/base_internal.h"
#include "base/env.h"
#include "base/secmem.h"
#include "base/trace.h"
#include "codelets/codelets_internal.h"
#include "graph/secure/party_internal.h"
#include "sched/sched_internal.h"
#include "net/config_env.h"

#include <starpu.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

_Static_assert(VEIL_PLAN_DIGEST_BYTES == 32, "the plan digest is a SHA-256");

void veil_party_options_defaults(struct veil_party_options *o)
{
    memset(o, 0, sizeof *o);
    o->material = VEIL_MATERIAL_DEALER;
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

/* Tracing from the options or VEIL_TRACE: checks the path pattern, starts the recorder (one
 * tracing party per process). Before the network opens, so that every message is seen. */
static int trace_open(veil_party_t *me, const char *path)
{
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
    /* the threads' CPU use per run: not fatal when the kernel keeps no per-thread statistics */
    if (!(me->cpu_snap = calloc(2, sizeof *me->cpu_snap)))
        return veil_error(VEIL_ERR_NOMEM, "veil_party_open: out of memory");
    if (veil_cpu_snapshot(&me->cpu_snap[0]) != VEIL_OK) {
        VEIL_LOG_WARN("tracing: the runs' profiles leave out the threads' CPU use: %s",
                      veil_last_error());
        free(me->cpu_snap);
        me->cpu_snap = NULL;
    }
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
    free(me->cpu_snap);
    me->cpu_snap = NULL;
}

/* The workers' nice value: the option, else VEIL_WORKER_NICE (0 or unset: unchanged). */
static int set_worker_nice(int nice)
{
    int rc = veil_sched_worker_nice(nice);
    return rc == VEIL_OK ? VEIL_OK : veil_error(rc, "veil_party_open: %s", veil_last_error());
}

/* The session's network configuration (the file named in the options, else the environment),
 * this process's identity from it, and what only the whole session can check; the plan digest
 * goes into the handshake and the log lines get this process's prefix. */
static int open_config(veil_party_t *me, struct veil_net_config *cfg)
{
    int rc = VEIL_OK;
    if (me->o.material != VEIL_MATERIAL_DEALER && me->o.material != VEIL_MATERIAL_FILE)
        rc = veil_error(VEIL_ERR_INVAL, "veil_party_open: unknown material source %d",
                        (int)me->o.material);
    if (rc == VEIL_OK)
        rc = me->o.config_path ? veil_net_config_load(me->o.config_path, cfg)
                               : veil_net_config_from_env(cfg);
    if (rc != VEIL_OK)
        return rc;
    me->self = cfg->self;
    me->nparties = cfg->nparties;
    me->nprocs = cfg->nparties + (cfg->has_dealer ? 1 : 0);
    me->is_dealer = cfg->self == cfg->nparties;
    me->has_dealer = cfg->has_dealer;
    if ((rc = check_plan(me->p, cfg->nparties)) != VEIL_OK)
        return rc;
    if (me->o.material == VEIL_MATERIAL_DEALER && !cfg->has_dealer)
        return veil_error(VEIL_ERR_INVAL,
                          "veil_party_open: dealer material needs a dealer process "
                          "in the session (veil-run --dealer, or a 'dealer' line in the "
                          "configuration), or FILE material generated ahead");
    if (me->o.material == VEIL_MATERIAL_FILE && !me->is_dealer && !me->o.preproc_path)
        return veil_error(VEIL_ERR_INVAL, "veil_party_open: FILE material needs this party's "
                                          "preprocessing file (preproc_path; written by "
                                          "veil_plan_preproc_files)");
    memcpy(cfg->plan_digest, me->p->digest, sizeof cfg->plan_digest);
    char prefix[16];
    if (me->is_dealer)
        snprintf(prefix, sizeof prefix, "dealer");
    else
        snprintf(prefix, sizeof prefix, "p%d", me->self);
    veil_log_set_prefix(prefix);
    return VEIL_OK;
}

/* The protocol context over the open network: the dealer's or a party's role, the material
 * source (dealer, or this party's file generated ahead) and the material seed ms (tests only;
 * NULL or empty: none). */
static int open_mpc(veil_party_t *me, const char *ms)
{
    int rc;
    struct veil_mpc_options mo;
    veil_mpc_options_defaults(&mo);
    mo.role = me->is_dealer ? VEIL_MPC_DEALER : VEIL_MPC_PARTY;
    mo.material = VEIL_MPC_MAT_DEALER;
    mo.frac_bits = me->p->opts.frac_bits;
    char preproc_path[4096];
    if (me->o.material == VEIL_MATERIAL_FILE) { /* generated ahead: no dealer in the session */
        if ((rc = party_path(me->o.preproc_path, me->self, preproc_path, sizeof preproc_path)) !=
            VEIL_OK)
            return rc;
        mo.material = VEIL_MPC_MAT_FILE;
        mo.preproc_path = preproc_path;
        memcpy(mo.plan_digest, me->p->digest, sizeof mo.plan_digest);
    }
    if (ms && *ms) {
        if ((rc = parse_seed(ms, mo.material_seed)) != VEIL_OK)
            return rc;
        mo.use_material_seed = 1;
    }
    return (me->m = veil_mpc_new(me->net, &mo)) ? VEIL_OK : VEIL_ERR_STATE;
}

veil_party_t *veil_party_open(const veil_plan_t *p, const struct veil_party_options *opts)
{
    if (!p) {
        veil_error(VEIL_ERR_INVAL, "veil_party_open: no plan");
        return NULL;
    }
    veil_secmem_protect_process(); /* before any key or share is read */
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
    int rc = open_config(me, &cfg);
    if (rc != VEIL_OK)
        goto fail;
    /* StarPU's CUDA workers: the GPUs near this host's NIC where hwloc shows a choice
     * (sched/locality.c), unless STARPU_NCUDA or STARPU_WORKERS_CUDAID say otherwise */
    struct starpu_conf sconf;
    starpu_conf_init(&sconf);
    veil_locality_starpu_conf(&sconf);
    if (starpu_init(&sconf) != 0) {
        rc = veil_error(VEIL_ERR_STARPU, "veil_party_open: starpu_init failed (no worker? check "
                                         "STARPU_NCPU and the StarPU environment)");
        goto fail;
    }
    me->starpu_up = 1;
    /* the options that defer to the environment, filled from it (base/env.c) */
    struct veil_env_party env = {.material_seed = me->o.material_seed,
                                 .trace_path = me->o.trace_path,
                                 .worker_nice = me->o.worker_nice,
                                 .calibrate = me->o.calibrate,
                                 .devices = me->o.devices};
    if ((rc = veil_env_party(&env, VEIL_PLACE_MAX_DEV)) != VEIL_OK)
        goto fail;
    if ((rc = set_worker_nice(env.worker_nice)) != VEIL_OK)
        goto fail;
    if ((rc = trace_open(me, env.trace_path)) != VEIL_OK)
        goto fail;
    if ((rc = veil_party_resolve_placement(me, &env)) != VEIL_OK)
        goto fail;
    if ((rc = veil_net_open(&cfg, NULL, &me->net)) != VEIL_OK)
        goto fail;
    if ((rc = open_mpc(me, env.material_seed)) != VEIL_OK)
        goto fail;
    if ((rc = veil_exec_init(&me->x, p, me->m)) != VEIL_OK)
        goto fail;
    if (!me->is_dealer && me->pin && (rc = veil_party_place(me)) != VEIL_OK)
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

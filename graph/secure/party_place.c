/*
 * party_place.c — where a party's tasks run: the device kind and the placement asked for (the
 * options, else the environment through base/env.c), checked against StarPU's workers; AUTO
 * resolved by the cost model (with the node times of a calibration run once measured), and the
 * executor's per-node placement filled (graph/secure/placement.c computes it).
 */
#include "config.h"

#include "base/base_internal.h"
#include "base/env.h"
#include "codelets/codelets_internal.h"
#include "graph/secure/party_internal.h"
#include "sched/sched_internal.h"

#include <starpu.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The StarPU worker type of a device kind. */
static enum starpu_worker_archtype kind_type(enum veil_device_kind k)
{
    return k == VEIL_DEVICE_CUDA ? STARPU_CUDA_WORKER : STARPU_CPU_WORKER;
}

/* The device kind asked for (option, else VEIL_DEVICE_KIND), AUTO resolved to CUDA when StarPU
 * has CUDA workers; CUDA without one is refused. */
static int resolve_device_kind(veil_party_t *me, const char *env)
{
    me->kind = me->o.device_kind;
    int rc;
    if (me->kind == VEIL_DEVICE_AUTO && env && *env &&
        (rc = veil_device_kind_parse(env, &me->kind)) != VEIL_OK)
        return veil_error(rc, "veil_party_open: VEIL_DEVICE_KIND: %s", veil_last_error());
    if ((unsigned)me->kind >= VEIL_DEVICE_COUNT)
        return veil_error(VEIL_ERR_INVAL, "veil_party_open: unknown device kind %d",
                          (int)me->kind);
    return VEIL_OK;
}

/* The first n workers of a type into ids; how many there were (at most n). StarPU's
 * starpu_worker_get_ids_by_type fails (-ERANGE) when the array is shorter than the type's whole
 * worker count, so all are listed first: a party placing over 2 of a host's 15 CPU workers. */
static int first_workers(enum starpu_worker_archtype type, int *ids, int n)
{
    int all[STARPU_NMAXWORKERS];
    const int got = starpu_worker_get_ids_by_type(type, all, STARPU_NMAXWORKERS);
    const int k = got < 0 ? 0 : got < n ? got : n;
    for (int i = 0; i < k; i++)
        ids[i] = all[i];
    return k;
}

/* The devices: the kind resolved (AUTO: CUDA when StarPU has CUDA workers) and the count checked
 * against StarPU's workers (sched/devices.c; one GPU takes CPU workers beside it). */
static int resolve_devices(veil_party_t *me)
{
    const int ncuda = (int)starpu_worker_get_count_by_type(STARPU_CUDA_WORKER);
    const int ncpu = (int)starpu_worker_get_count_by_type(STARPU_CPU_WORKER);
    struct veil_device_set set;
    int rc = veil_sched_devices(me->kind, me->ndev, ncuda, ncpu, VEIL_PLACE_MAX_DEV, &set);
    if (rc == VEIL_OK) {
        me->kind = set.kind;
        me->ndev = set.ncuda + set.ncpu;
        return VEIL_OK;
    }
    if (me->kind == VEIL_DEVICE_AUTO)
        me->kind = ncuda > 0 ? VEIL_DEVICE_CUDA : VEIL_DEVICE_CPU;
    if (rc == VEIL_ERR_UNSUPPORTED)
        return veil_error(VEIL_ERR_UNSUPPORTED,
                          "veil_party_open: CUDA devices asked for, but StarPU has no CUDA worker "
                          "(%s)",
#ifdef VEIL_USE_CUDA
                          "no GPU found, or STARPU_NCUDA=0"
#else
                          "the StarPU Veil was built with has no CUDA: see docs/gpu.md"
#endif
        );
    if (me->ndev < 0)
        return veil_error(VEIL_ERR_INVAL, "veil_party_open: %d devices", me->ndev);
    const int nworkers = me->kind == VEIL_DEVICE_CUDA ? ncuda : ncpu;
    return veil_error(VEIL_ERR_INVAL,
                      "veil_party_open: %d devices asked for, but StarPU has %d %s workers "
                      "(set %s) and Veil places over at most %d",
                      me->ndev, nworkers, me->kind == VEIL_DEVICE_CUDA ? "CUDA" : "CPU",
                      me->kind == VEIL_DEVICE_CUDA ? "STARPU_NCUDA" : "STARPU_NCPU",
                      VEIL_PLACE_MAX_DEV);
}

/* The placement and device count asked for (options, else VEIL_PLACEMENT / VEIL_DEVICES),
 * checked against StarPU's workers of the device kind; AUTO is resolved later (place). */
int veil_party_resolve_placement(veil_party_t *me, const struct veil_env_party *e)
{
    int rc = resolve_device_kind(me, e->device_kind);
    if (rc != VEIL_OK)
        return rc;
    me->placement = me->o.placement;
    me->ndev = e->devices;
    /* pinning (below) depends on whether a count was asked for, not on the one resolved */
    const int ndev_asked = me->ndev;
    if ((rc = resolve_devices(me)) != VEIL_OK)
        return rc;
    const char *env = e->placement;
    me->calibrate = e->calibrate;
    if (me->calibrate < 0 || me->calibrate > 1)
        return veil_error(VEIL_ERR_INVAL, "veil_party_open: calibrate is %d (use 0 or 1)",
                          me->calibrate);
    if (me->is_dealer)
        me->calibrate = 0; /* it computes nothing */
    /* nothing asked (no placement, device count or calibration): no pinning at all, StarPU's
     * scheduler places every task (as on a machine whose accelerators Veil's placement does not
     * drive) */
    me->pin = me->placement != VEIL_PLACEMENT_AUTO || ndev_asked > 0 || env || me->calibrate;
    if (me->placement == VEIL_PLACEMENT_AUTO && env &&
        (rc = veil_placement_parse(env, &me->placement)) != VEIL_OK)
        return veil_error(rc, "veil_party_open: VEIL_PLACEMENT: %s", veil_last_error());
    if ((unsigned)me->placement >= VEIL_PLACEMENT_COUNT)
        return veil_error(VEIL_ERR_INVAL, "veil_party_open: unknown placement %d",
                          (int)me->placement);
    me->asked = me->placement;
    if ((unsigned)me->o.tp_split >= VEIL_TP_FORCE_COUNT)
        return veil_error(VEIL_ERR_INVAL, "veil_party_open: unknown tensor-parallel split %d",
                          (int)me->o.tp_split);
    if (me->o.group < 0 || me->o.group > me->ndev)
        return veil_error(VEIL_ERR_INVAL,
                          "veil_party_open: hybrid group of %d devices out of %d devices",
                          me->o.group, me->ndev);
    return VEIL_OK;
}

/* Resolves AUTO by the cost model (with the calibrated node times once measured), logs the
 * choice, fills the executor's per-node placement. */
int veil_party_place(veil_party_t *me)
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
    /* the devices are the first ndev workers of the kind (resolve_devices checked that there
     * are that many); past a single CUDA worker, CPU workers (sched/devices.c) */
    int workers[VEIL_PLACE_MAX_DEV];
    int got = first_workers(kind_type(me->kind), workers, me->ndev);
    if (me->kind == VEIL_DEVICE_CUDA && got == 1 && me->ndev > 1)
        got += first_workers(STARPU_CPU_WORKER, workers + 1, me->ndev - 1);
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
int veil_party_apply_calibration(veil_party_t *me, int run, size_t end)
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
    return veil_party_place(me);
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

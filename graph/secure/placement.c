/*
 * placement.c — the per-node placement of a secure run over a party's devices (StarPU workers):
 * the cost model that times a plan under each placement, the AUTO choice, and the table of
 * struct veil_place the walk sets before lowering each node (run.c). Data parallel spreads tiles
 * and cuts products by batch; pipeline parallel groups nodes into stages with the bubble-model
 * partitioner of sched/partition.c; tensor parallel cuts products as sched/partition.c's split
 * chooser says; hybrid mixes the two as SplitBrain does. Placement never changes the protocol
 * calls, only where their tasks run (tasks/mpc.h, veil_mpc_set_placement). The per-node costs
 * come from the plan's sizes, or from a calibration run: the task times the trace recorder
 * measured per node (veil_placement_calibrate), which is how a party learns what its own devices
 * take for each layer without StarPU's per-codelet history models (those time a codelet by its
 * buffers' footprint, not a layer, and a layer's time also holds its protocol's many small tasks).
 */
#include "config.h"

#include "base/base_internal.h"
#include "codelets/codelets_internal.h"
#include "base/trace.h"
#include "graph/secure/exec_internal.h"
#include "sched/sched_internal.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const char *const names[VEIL_PLACEMENT_COUNT] = {"auto", "single", "dp",
                                                        "pp",   "tp",     "hybrid"};
static const char *const kind_names[VEIL_DEVICE_COUNT] = {"auto", "cpu", "cuda"};

/* The index of name (case-insensitive) in table[0..n), -1 when absent. */
static int lookup(const char *const *table, int n, const char *name)
{
    for (int i = 0; name && i < n; i++)
        if (strcasecmp(name, table[i]) == 0)
            return i;
    return -1;
}

const char *veil_placement_name(enum veil_placement p)
{
    return (unsigned)p < VEIL_PLACEMENT_COUNT ? names[p] : NULL;
}

int veil_placement_parse(const char *name, enum veil_placement *out)
{
    int i = out ? lookup(names, VEIL_PLACEMENT_COUNT, name) : -1;
    if (i < 0)
        return veil_error(VEIL_ERR_INVAL,
                          "placement '%s' is unknown; use auto, single, dp, pp, tp or hybrid",
                          name ? name : "(null)");
    *out = (enum veil_placement)i;
    return VEIL_OK;
}

const char *veil_device_kind_name(enum veil_device_kind k)
{
    return (unsigned)k < VEIL_DEVICE_COUNT ? kind_names[k] : NULL;
}

int veil_device_kind_parse(const char *name, enum veil_device_kind *out)
{
    int i = out ? lookup(kind_names, VEIL_DEVICE_COUNT, name) : -1;
    if (i < 0)
        return veil_error(VEIL_ERR_INVAL, "device kind '%s' is unknown; use auto, cpu or cuda",
                          name ? name : "(null)");
    *out = (enum veil_device_kind)i;
    return VEIL_OK;
}

/* ---- cost model --------------------------------------------------------------------------- */

/* Dimensions of a node's product, rows x inner x cols (a convolution: images x (c kh kw) x
 * output channels, per output pixel in `pixels`); 0 when the node has none. */
static int product_dims(const veil_plan_t *p, const struct veil_node *n, size_t *m, size_t *k,
                        size_t *c, size_t *pixels)
{
    const struct veil_node *a = n->nin > 0 && n->in[0] >= 0 ? &p->nodes[n->in[0]] : NULL;
    const struct veil_node *b = n->nin > 1 && n->in[1] >= 0 ? &p->nodes[n->in[1]] : NULL;
    if (!a || !b)
        return 0;
    *pixels = 1;
    switch (veil_op_desc(n->op)->product) {
    case VEIL_PRODUCT_MATMUL:
        *m = a->dims[0], *k = a->dims[1], *c = b->dims[1];
        return 1;
    case VEIL_PRODUCT_CONV:
        *m = a->dims[0], *k = b->dims[1] * b->dims[2] * b->dims[3], *c = b->dims[0];
        *pixels = n->dims[2] * n->dims[3];
        return 1;
    default:
        return 0;
    }
}

/* One node's modelled time under a placement (VEIL_PLACE_* costs in exec_internal.h); *split
 * receives its product split (rows, cols, inner) when it has one. */
static double node_time(const veil_plan_t *p, const struct veil_node *n, enum veil_placement mode,
                        int ndev, int group, size_t tile, enum veil_tp_force force, int split[3])
{
    split[0] = split[1] = split[2] = 1;
    if (veil_op_is(n->op, VEIL_OPF_LEAF))
        return 0;
    const size_t ntiles = (n->numel + tile - 1) / tile;
    const int spread =
        mode == VEIL_PLACEMENT_DP || mode == VEIL_PLACEMENT_TP || mode == VEIL_PLACEMENT_HYBRID;
    const size_t lanes = ntiles < (size_t)ndev ? (ntiles ? ntiles : 1) : (size_t)ndev;
    const double par = spread ? (double)lanes : 1;
    double t = (double)n->numel * veil_op_desc(n->op)->passes * VEIL_PLACE_ELEM_S / par +
               (double)ntiles * veil_op_desc(n->op)->passes * VEIL_PLACE_TASK_S / par;
    size_t m, k, c, px;
    if (!product_dims(p, n, &m, &k, &c, &px))
        return t;
    const int conv = n->op == VEIL_OP_CONV2D;
    if (mode == VEIL_PLACEMENT_DP || (mode == VEIL_PLACEMENT_HYBRID && conv)) {
        split[0] = ndev;
    } else if (mode == VEIL_PLACEMENT_TP && conv) {
        split[1] = ndev;
    } else if (mode == VEIL_PLACEMENT_TP) {
        /* weights lie column-sharded over the devices (each holds a shard), activations
         * row-sharded (their tiles are spread) */
        const int wa = p->nodes[n->in[0]].op == VEIL_OP_PARAM;
        const int wb = p->nodes[n->in[1]].op == VEIL_OP_PARAM;
        double moved = 0;
        enum veil_tp_split s =
            force != VEIL_TP_FORCE_NONE
                ? (enum veil_tp_split)(force - 1)
                : veil_tp_choose(m, k, c, (unsigned)ndev,
                                 wa ? VEIL_TP_COL_SHARDED : VEIL_TP_ROW_SHARDED,
                                 wb ? VEIL_TP_COL_SHARDED : VEIL_TP_ROW_SHARDED, &moved);
        split[s == VEIL_TP_ROWS ? 0 : s == VEIL_TP_COLUMNS ? 1 : 2] = ndev;
        t += moved * VEIL_PLACE_ELEM_S;
    } else if (mode == VEIL_PLACEMENT_HYBRID) {
        const int g = group > 0 && group <= ndev ? group : ndev;
        split[0] = ndev / g;
        split[1] = g;
    }
    /* the cuts cannot exceed the dimensions (veil_mpc_product_split clamps likewise) */
    if ((size_t)split[0] > m)
        split[0] = (int)m;
    if ((size_t)split[1] > c)
        split[1] = (int)c;
    if ((size_t)split[2] > k)
        split[2] = (int)k;
    const int blocks = split[0] * split[1] * split[2];
    const double busy = blocks < ndev ? blocks : ndev;
    /* two local GEMMs at every party (D B, A E; party 0 folds its D E into one), then C + the
     * parts summed into the result */
    t += 2.0 * (double)m * (double)k * (double)c * (double)px * VEIL_PLACE_MAC_S / busy;
    t += (double)(m * c * px) * (1 + 2 * split[2]) * VEIL_PLACE_ELEM_S +
         3.0 * blocks * VEIL_PLACE_TASK_S;
    return t;
}

/* A node's time under a placement: the model's (node_time), or after a calibration run
 * (node_s: measured seconds per node on one device) the measured time scaled by the model's
 * gain of the placement over one device: the model keeps saying how a node divides over
 * devices, the measurement says what it costs. */
static double cost(const veil_plan_t *p, size_t i, enum veil_placement mode, int ndev, int group,
                   size_t tile, enum veil_tp_force force, const double *node_s, int split[3])
{
    const struct veil_node *n = &p->nodes[i];
    const double t = node_time(p, n, mode, ndev, group, tile, force, split);
    if (!node_s)
        return t;
    int one[3];
    const double t1 = node_time(p, n, VEIL_PLACEMENT_SINGLE, 1, 1, tile, 0, one);
    return t1 > 0 ? node_s[i] * (t / t1) : node_s[i];
}

double veil_placement_pipeline(const veil_plan_t *p, size_t end, int ndev, size_t tile,
                               const double *node_s, int *stage)
{
    struct veil_layer_cost *lc = calloc(end ? end : 1, sizeof *lc);
    size_t *node_of = calloc(end ? end : 1, sizeof *node_of);
    unsigned nl = 0;
    double t = -1;
    int split[3];
    if (!lc || !node_of)
        goto done;
    for (size_t i = 0; i < end; i++) {
        const struct veil_node *n = &p->nodes[i];
        if (veil_op_is(n->op, VEIL_OPF_LEAF))
            continue;
        lc[nl].fwd = cost(p, i, VEIL_PLACEMENT_SINGLE, 1, 1, tile, 0, node_s, split);
        node_of[nl++] = i;
    }
    struct veil_pipeline_plan pp;
    const unsigned d = nl < (unsigned)ndev ? nl : (unsigned)ndev;
    if (nl == 0 || veil_partition_dp(lc, nl, d, 1, 1e300, &pp) != VEIL_OK)
        goto done;
    for (size_t i = 0; i < end; i++)
        stage[i] = (int)d - 1;
    for (unsigned s = pp.nstages; s-- > 0;)
        for (unsigned l = pp.first[s]; l < pp.first[s] + pp.count[s]; l++)
            stage[node_of[l]] = (int)s;
    /* leaves go with the next computing node */
    for (size_t i = end; i-- > 0;) {
        const enum veil_op op = p->nodes[i].op;
        if (veil_op_is(op, VEIL_OPF_LEAF) && i + 1 < end)
            stage[i] = stage[i + 1];
    }
    t = pp.time;
done:
    free(lc);
    free(node_of);
    return t;
}

static size_t plan_tile(const veil_plan_t *p)
{
    return p->opts.tile ? p->opts.tile & ~(size_t)63 : VEIL_MPC_TILE_DEFAULT;
}

double veil_placement_model(const veil_plan_t *p, enum veil_placement mode, int ndev, int group,
                            enum veil_tp_force force, const double *node_s)
{
    const size_t tile = plan_tile(p);
    const size_t end = p->opts.training ? p->count : p->nforward;
    int split[3];
    if (mode == VEIL_PLACEMENT_PP) {
        int *stage = calloc(end ? end : 1, sizeof *stage);
        double t = stage ? veil_placement_pipeline(p, end, ndev, tile, node_s, stage) : -1;
        free(stage);
        return t;
    }
    double t = 0;
    for (size_t i = 0; i < end; i++)
        t += cost(p, i, ndev > 1 ? mode : VEIL_PLACEMENT_SINGLE, ndev, group, tile, force, node_s,
                  split);
    return t;
}

enum veil_placement veil_placement_choose(const veil_plan_t *p, int ndev, int group,
                                          const double *node_s,
                                          double times[VEIL_PLACEMENT_COUNT])
{
    enum veil_placement best = VEIL_PLACEMENT_SINGLE;
    double bt = 0;
    for (int m = VEIL_PLACEMENT_SINGLE; m < VEIL_PLACEMENT_COUNT; m++) {
        double t = veil_placement_model(p, (enum veil_placement)m, ndev, group, 0, node_s);
        if (times)
            times[m] = t;
        if (t >= 0 && (m == VEIL_PLACEMENT_SINGLE || t < bt)) {
            best = (enum veil_placement)m;
            bt = t;
        }
    }
    if (times)
        times[VEIL_PLACEMENT_AUTO] = bt;
    return ndev > 1 ? best : VEIL_PLACEMENT_SINGLE;
}

int veil_placement_calibrate(const veil_plan_t *p, int run, size_t end, double *node_s)
{
    double *model = calloc(p->count ? p->count : 1, sizeof *model);
    if (!model)
        return veil_error(VEIL_ERR_NOMEM, "placement calibration: out of memory");
    for (size_t i = 0; i < p->count; i++)
        node_s[i] = 0;
    const size_t nev = veil_trace_count();
    for (size_t e = 0; e < nev; e++) {
        const struct veil_trace_event *ev = veil_trace_event_at(e);
        if (ev && ev->kind == VEIL_TRACE_TASK_EV && ev->run == run && ev->node >= 0 &&
            (size_t)ev->node < end && ev->t1 > ev->t0)
            node_s[ev->node] += (ev->t1 - ev->t0) * 1e-6;
    }
    /* the nodes the run did not walk (a training plan's backward nodes after an inference run)
     * keep the model's time, scaled by measured / modelled over the walked ones */
    const size_t tile = plan_tile(p);
    double measured = 0, modelled = 0;
    int split[3];
    for (size_t i = 0; i < p->count; i++) {
        model[i] = node_time(p, &p->nodes[i], VEIL_PLACEMENT_SINGLE, 1, 1, tile, 0, split);
        if (i < end)
            measured += node_s[i], modelled += model[i];
    }
    const double scale = modelled > 0 && measured > 0 ? measured / modelled : 1;
    for (size_t i = end; i < p->count; i++)
        node_s[i] = model[i] * scale;
    free(model);
    if (!(measured > 0))
        return veil_error(VEIL_ERR_STATE,
                          "placement calibration: run %d recorded no task time (was the "
                          "recorder on?)",
                          run);
    return VEIL_OK;
}

int veil_placement_microbatch_of(const veil_plan_t *p, int *mb)
{
    const int k = p->opts.microbatches;
    const int replicas = p->opts.dp_average == VEIL_DP_AVERAGE_WEIGHTS;
    int copies = 0;
    for (size_t i = 0; i < p->count; i++) {
        const struct veil_node *n = &p->nodes[i];
        mb[i] = -1;
        if (k < 2)
            continue;
        if (n->op == VEIL_OP_PARAM) {
            mb[i] = replicas ? n->replica : -1;
        } else if (n->op == VEIL_OP_SLICE) {
            /* copy j's rows of a batch (an input, or the loss's gradient over the logits) */
            const struct veil_node *a = n->in[0] >= 0 ? &p->nodes[n->in[0]] : NULL;
            if (a && n->a.axis == 0 && n->ndim > 0 && n->dims[0] > 0 &&
                a->dims[0] == (size_t)k * n->dims[0] && n->a.start % n->dims[0] == 0)
                mb[i] = (int)(n->a.start / n->dims[0]);
        }
        if (n->op == VEIL_OP_PARAM || n->op == VEIL_OP_SLICE || n->op == VEIL_OP_INPUT ||
            n->op == VEIL_OP_CONST)
            continue;
        /* the one copy its operands (and its forward node) belong to; none when they mix */
        int c = -1, mixed = 0;
        for (int o = 0; o <= n->nin; o++) {
            const int j = o < n->nin ? n->in[o] : n->fwd;
            if (j < 0 || (size_t)j >= i || mb[j] < 0)
                continue;
            mixed |= c >= 0 && mb[j] != c;
            c = mb[j];
        }
        mb[i] = mixed ? -1 : c;
        copies += mb[i] >= 0;
    }
    return copies;
}

int veil_exec_place(struct veil_exec *x, enum veil_placement mode, const int *workers, int ndev,
                    int group, enum veil_tp_force force, const double *node_s)
{
    const veil_plan_t *p = x->p;
    if (ndev < 1 || ndev > VEIL_PLACE_MAX_DEV)
        return veil_error(VEIL_ERR_INVAL, "placement: %d devices (use 1 to %d)", ndev,
                          VEIL_PLACE_MAX_DEV);
    if (mode <= VEIL_PLACEMENT_AUTO || mode >= VEIL_PLACEMENT_COUNT)
        return veil_error(VEIL_ERR_INVAL, "placement: resolve AUTO before placing");
    free(x->place);
    x->place = calloc(p->count ? p->count : 1, sizeof *x->place);
    int *stage = calloc(p->count ? p->count : 1, sizeof *stage);
    /* data parallel over micro-batches (as many as devices, or more): copy j on device j mod D */
    const int by_copy = mode == VEIL_PLACEMENT_DP && ndev > 1 && p->opts.microbatches >= ndev;
    const int *mb = by_copy ? x->copy : NULL; /* veil_exec_init: set with micro-batches */
    int rc = VEIL_OK;
    if (!x->place || !stage) {
        rc = veil_error(VEIL_ERR_NOMEM, "placement: out of memory");
        goto done;
    }
    if (mode == VEIL_PLACEMENT_PP && ndev > 1 &&
        veil_placement_pipeline(p, p->count, ndev, x->tile, node_s, stage) < 0) {
        rc = veil_error(VEIL_ERR_INVAL,
                        "placement: no pipeline partition of plan '%s' over %d "
                        "devices",
                        p->model, ndev);
        goto done;
    }
    for (size_t i = 0; i < p->count; i++) {
        struct veil_place *pl = &x->place[i];
        int split[3];
        node_time(p, &p->nodes[i], ndev > 1 ? mode : VEIL_PLACEMENT_SINGLE, ndev, group, x->tile,
                  force, split); /* the split only: it depends on sizes, never on times */
        if (mode == VEIL_PLACEMENT_SINGLE || mode == VEIL_PLACEMENT_PP || ndev == 1) {
            pl->ndev = 1;
            pl->dev[0] = workers[mode == VEIL_PLACEMENT_PP ? stage[i] : 0];
            continue;
        }
        if (mb && mb[i] >= 0) {
            pl->ndev = 1;
            pl->dev[0] = workers[mb[i] % ndev];
            continue;
        }
        pl->ndev = ndev;
        memcpy(pl->dev, workers, (size_t)ndev * sizeof *workers);
        pl->spread = 1;
        pl->rows = split[0];
        pl->cols = split[1];
        pl->inner = split[2];
    }
done:
    free(stage);
    return rc;
}

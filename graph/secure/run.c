/*
 * run.c — the secure executor's walk over a plan (contract in exec_internal.h): leaves become
 * sharings (inputs every run, parameters once per session — at the first walk, or ahead of it by
 * veil_exec_share_params — constants as local sharings of public words), every other node is
 * lowered by its op's function in plan order with the node's critical-path priority, outputs are
 * revealed as soon as they are computed, and each temporary is released right after the node that
 * reads it last. Nothing here waits: the whole run is one StarPU DAG whose only barriers are the
 * caller's (and the memory budget's, below).
 */
#include "config.h"

#include "base/base_internal.h"
#include "base/trace.h"
#include "codelets/codelets_internal.h"
#include "graph/secure/exec_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Released temporaries are freed at the next barrier (tasks/mpc.h); a walk that has queued more
 * than this many bytes of them waits once so that large networks run in bounded memory. */
#define GARBAGE_BUDGET ((size_t)2 << 30)

int veil_exec_init(struct veil_exec *x, const veil_plan_t *p, veil_mpc_t *m)
{
    memset(x, 0, sizeof *x);
    x->m = m;
    x->p = p;
    x->frac_bits = p->opts.frac_bits;
    x->loss_to = -2;
    size_t tile = p->opts.tile ? p->opts.tile : VEIL_MPC_TILE_DEFAULT;
    x->tile = tile & ~(size_t)63;
    size_t n = p->count ? p->count : 1;
    x->val = calloc(n, sizeof *x->val);
    x->aux = calloc(n, sizeof *x->aux);
    x->velocity = calloc(n, sizeof *x->velocity);
    x->moment2 = calloc(n, sizeof *x->moment2);
    if (p->opts.weight_stationary)
        x->ws = calloc(n, sizeof *x->ws);
    if (p->opts.microbatches >= 2 && (x->copy = calloc(n, sizeof *x->copy)))
        veil_placement_microbatch_of(p, x->copy);
    if (!x->val || !x->aux || !x->velocity || !x->moment2 ||
        (p->opts.weight_stationary && !x->ws) || (p->opts.microbatches >= 2 && !x->copy)) {
        veil_exec_fini(x);
        return veil_error(VEIL_ERR_NOMEM, "secure run: out of memory (%zu nodes)", p->count);
    }
    return VEIL_OK;
}

static void release_node(struct veil_exec *x, size_t i)
{
    veil_mpc_release(x->m, &x->val[i]);
    for (int k = 0; k < VEIL_EXEC_MAX_AUX; k++)
        veil_mpc_release(x->m, &x->aux[i][k]);
}

void veil_exec_fini(struct veil_exec *x)
{
    if (!x)
        return;
    for (size_t i = 0; x->p && i < x->p->count; i++) {
        if (x->val && x->aux)
            release_node(x, i);
        if (x->velocity)
            veil_mpc_release(x->m, &x->velocity[i]);
        if (x->moment2)
            veil_mpc_release(x->m, &x->moment2[i]);
        if (x->ws)
            veil_mpc_wstat_release(x->m, &x->ws[i]);
    }
    if (x->m)
        veil_mpc_release(x->m, &x->loss_rev);
    free(x->val);
    free(x->aux);
    free(x->velocity);
    free(x->moment2);
    free(x->ws);
    free(x->place);
    free(x->copy);
    memset(x, 0, sizeof *x);
}

size_t veil_exec_leaf_tile(const struct veil_exec *x, int leaf)
{
    const veil_plan_t *p = x->p;
    for (size_t i = (size_t)leaf + 1; i < p->count; i++)
        for (int j = 0; j < p->nodes[i].nin; j++)
            if (p->nodes[i].in[j] == leaf && (veil_op_desc(p->nodes[i].op)->matrix_in >> j & 1u))
                return SIZE_MAX;
    return x->tile;
}

/* Values the parties feed must keep products of two of them within the truncation's range
 * (|x y| 2^(2f) < 2^62): |v| < 2^(31 - f). */
static double input_bound(int f)
{
    return ldexp(1.0, 31 - f);
}

static int share_leaf(struct veil_exec *x, const struct veil_node *n, const double *values)
{
    const int self = veil_mpc_self(x->m);
    if (veil_mpc_computes(x->m) && self == n->owner && !values)
        return veil_error(VEIL_ERR_INVAL,
                          "secure run: %s '%s' is owned by this party (%d) but "
                          "has no value; feed it",
                          n->op == VEIL_OP_INPUT ? "input" : "parameter", n->name, self);
    int rc = veil_mpc_share_input_fixed(x->m, n->owner, self == n->owner ? values : NULL,
                                        input_bound(x->frac_bits), n->ndim, n->dims,
                                        veil_exec_leaf_tile(x, n->index), &x->val[n->index]);
    if (rc != VEIL_OK) {
        char why[256];
        snprintf(why, sizeof why, "%s", veil_last_error());
        return veil_error(rc,
                          "secure run: sharing %s '%s': %s (values must lie within "
                          "+-%g at %d fractional bits)",
                          n->op == VEIL_OP_INPUT ? "input" : "parameter", n->name, why,
                          input_bound(x->frac_bits), x->frac_bits);
    }
    return VEIL_OK;
}

static int constant(struct veil_exec *x, const struct veil_node *n)
{
    uint64_t *w = NULL;
    int rc = VEIL_OK;
    if (veil_mpc_computes(x->m) && veil_mpc_self(x->m) == 0) {
        w = malloc((n->numel ? n->numel : 1) * sizeof *w);
        if (!w)
            return veil_error(VEIL_ERR_NOMEM, "secure run: constant '%s': out of memory", n->name);
        rc = veil_fixed_encode_array(n->cvalues, n->numel, x->frac_bits, w);
        if (rc != VEIL_OK) {
            free(w);
            return veil_error(rc,
                              "secure run: constant '%s' does not fit fixed point with %d "
                              "fractional bits",
                              n->name, x->frac_bits);
        }
    }
    rc = veil_exec_public_share(x, n->ndim, n->dims, veil_exec_leaf_tile(x, n->index), w,
                                &x->val[n->index]);
    free(w);
    return rc;
}

/* Releases what node i read for the last time (never parameters: they persist). */
static void release_after(struct veil_exec *x, size_t i)
{
    const veil_plan_t *p = x->p;
    const struct veil_node *n = &p->nodes[i];
    /* XENT_GRAD and LAYERNORM_GRAD also read their forward node's in[1] (compile.c) */
    const int extra = n->fwd >= 0 && veil_op_is(n->op, VEIL_OPF_READS_FWD_IN1)
                          ? p->nodes[n->fwd].in[1]
                          : -1;
    for (int k = 0; k <= n->nin + 1; k++) {
        int j = k < n->nin ? n->in[k] : k == n->nin ? n->fwd : extra;
        if (j >= 0 && p->nodes[j].last_use == (int)i && p->nodes[j].op != VEIL_OP_PARAM)
            release_node(x, (size_t)j);
    }
    if (n->last_use < 0 && n->op != VEIL_OP_PARAM && !n->saved)
        release_node(x, i); /* read by nobody (an output is revealed already) */
}

/* The settings a node's tasks and messages get (also for a parameter shared ahead of the walk,
 * veil_exec_share_params, so it is shared the same way). */
static void enter_node(struct veil_exec *x, size_t i)
{
    const struct veil_node *n = &x->p->nodes[i];
    veil_mpc_set_priority(x->m, (int)lround(n->priority));
    veil_trace_set_region(veil_op_desc(n->op)->region); /* tasks and messages of this node */
    veil_trace_set_node((int)i);
    veil_mpc_set_placement(x->m, x->place ? &x->place[i] : NULL);
}

static void leave_nodes(struct veil_exec *x)
{
    veil_mpc_set_priority(x->m, 0);
    veil_trace_set_region(VEIL_REGION_OTHER);
    veil_trace_set_node(-1);
    veil_mpc_set_placement(x->m, NULL);
}

static int walk(struct veil_exec *x, size_t end, double *const *values, struct veil_pub *revealed)
{
    const veil_plan_t *p = x->p;
    for (size_t i = 0; i < end; i++) {
        const struct veil_node *n = &p->nodes[i];
        enter_node(x, i);
        int rc = VEIL_OK;
        if (n->op == VEIL_OP_INPUT) {
            release_node(x, i);
            rc = share_leaf(x, n, values ? values[i] : NULL);
        } else if (n->op == VEIL_OP_PARAM) {
            if (x->val[i].numel == 0) /* shared once per session */
                rc = share_leaf(x, n, values ? values[i] : NULL);
        } else if (n->op == VEIL_OP_CONST) {
            rc = constant(x, n);
        } else {
            veil_lower_fn fn = veil_op_desc(n->op)->lower;
            if (!fn)
                return veil_error(VEIL_ERR_UNSUPPORTED,
                                  "secure run: node '%s' (op %s) has no "
                                  "secure lowering in this build",
                                  n->name, veil_op_name(n->op));
            release_node(x, i);
            rc = veil_lookahead_before(x, n);
            if (rc == VEIL_OK)
                rc = fn(x, n);
            if (rc == VEIL_OK)
                rc = veil_lookahead_after(x, n);
            if (rc != VEIL_OK) {
                veil_mpc_set_placement(x->m, NULL);
                char why[384];
                snprintf(why, sizeof why, "%s", veil_last_error());
                return veil_error(rc, "secure run: %s '%s': %s", veil_op_name(n->op), n->name, why);
            }
        }
        if (rc != VEIL_OK)
            return rc;
        if ((int)i == p->loss && x->loss_to >= VEIL_ALL_PARTIES &&
            (rc = veil_exec_reveal_true_prob(x, n, x->loss_to, &x->loss_rev)) != VEIL_OK)
            return rc;
        if (n->output >= 0 && revealed &&
            (rc = veil_mpc_reveal(x->m, &x->val[i], n->reveal_to, &revealed[n->output])) != VEIL_OK)
            return rc;
        release_after(x, i);
        /* serialized: the blocking baseline, every node's messages and tasks done before the
         * next node is submitted (nothing overlaps across layers) */
        const int barrier = p->opts.serialized || (veil_mpc_garbage_bytes(x->m) > GARBAGE_BUDGET &&
                                                   !veil_lower_no_barrier_after(x, n));
        if (barrier && veil_mpc_computes(x->m) && (rc = veil_mpc_wait(x->m)) != VEIL_OK)
            return rc;
    }
    leave_nodes(x);
    return VEIL_OK;
}

int veil_exec_share_params(struct veil_exec *x, double *const *values)
{
    const veil_plan_t *p = x->p;
    int rc = VEIL_OK;
    for (size_t i = 0; i < p->count && rc == VEIL_OK; i++) {
        if (p->nodes[i].op != VEIL_OP_PARAM || x->val[i].numel != 0)
            continue;
        enter_node(x, i);
        rc = share_leaf(x, &p->nodes[i], values ? values[i] : NULL);
    }
    leave_nodes(x);
    return rc;
}

int veil_exec_walk(struct veil_exec *x, size_t end, double *const *values,
                   struct veil_pub *revealed)
{
    int rc = walk(x, end, values, revealed);
    int drc = veil_lookahead_drain(x); /* also after an error: no marker may be left behind */
    /* after every update of the step has been submitted: StarPU orders the averaging's reads
     * after the updates' writes of the same handles */
    if (rc == VEIL_OK && drc == VEIL_OK && x->average && end == x->p->count)
        rc = veil_exec_average_replicas(x);
    return rc != VEIL_OK ? rc : drc;
}

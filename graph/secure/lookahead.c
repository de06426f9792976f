/*
 * lookahead.c — the bound of the inter-linear pipeline (veil_compile_options.lookahead). The walk
 * (run.c) submits every node's protocols without waiting, so a linear layer's weight open
 * (W - B, whose operands are ready at the start of the run) may fly as early as StarPU's
 * priorities let it, however far ahead of need. With lookahead = L >= 0 the walk holds back the
 * (m)-th linear node (dense, conv2d, matmul and their backward products, in walk order) until
 * the (m - L - 1)-th has finished: at most L linear layers beyond the one computing are
 * submitted, with their opens, masks and results (MPC-Pipe's schedule is L = 1; L = 0 opens each
 * weight at need). The wait is on a marker: a task that does nothing (STARPU_NOWHERE) and reads
 * every tile of the layer's output, so it completes when the layer's last task does
 * (codelets/marker.c); its callback sets a flag, and the walk waits for that flag with the
 * process's idle workers paused whenever nothing is ready (net/idle.c: they do not spin while
 * the layer waits on a peer). L < 0: no bound (the default; memory is then bounded by the
 * executor's garbage budget alone). Which nodes are linear is the op table's word (region
 * VEIL_REGION_LINEAR).
 */
#include "config.h"

#include "base/base_internal.h"
#include "codelets/codelets_internal.h"
#include "graph/secure/exec_internal.h"
#include "net/idle.h"

#include <stdio.h>

static int active(const struct veil_exec *x, const struct veil_node *n)
{
    return x->p->opts.lookahead >= 0 && veil_op_desc(n->op)->region == VEIL_REGION_LINEAR &&
           veil_mpc_computes(x->m);
}

/* Waits for the marker in ring slot k (if any) and empties the slot. */
static int wait_slot(struct veil_exec *x, size_t k)
{
    struct starpu_task *t = x->markers[k];
    x->markers[k] = NULL;
    if (!t)
        return VEIL_OK;
    return veil_net_idle_wait_task(t, &x->marker_done[k]) == 0
               ? VEIL_OK
               : veil_error(VEIL_ERR_STARPU, "lookahead: waiting for a layer's marker failed");
}

int veil_lookahead_before(struct veil_exec *x, const struct veil_node *n)
{
    if (!active(x, n))
        return VEIL_OK;
    /* the slot of the (m - L - 1)-th linear node is the one the m-th will use */
    const size_t slots = (size_t)x->p->opts.lookahead + 1;
    return wait_slot(x, x->nlinear % slots);
}

int veil_lookahead_after(struct veil_exec *x, const struct veil_node *n)
{
    if (!active(x, n))
        return VEIL_OK;
    const size_t slots = (size_t)x->p->opts.lookahead + 1, k = x->nlinear++ % slots;
    const struct veil_sec *y = &x->val[n->index];
    if (y->ntiles <= 0)
        return VEIL_OK;
    struct starpu_task *t = NULL;
    x->marker_done[k] = 0;
    int rc = veil_task_marker(y->h, y->ntiles, veil_mpc_priority(x->m), veil_net_idle_done_cb,
                              &x->marker_done[k], &t);
    if (rc != VEIL_OK) {
        char why[256];
        snprintf(why, sizeof why, "%s", veil_last_error());
        return veil_error(rc, "lookahead: the marker of '%s': %s", n->name, why);
    }
    x->markers[k] = t;
    return VEIL_OK;
}

int veil_lookahead_drain(struct veil_exec *x)
{
    int rc = VEIL_OK;
    for (size_t k = 0; k < VEIL_LOOKAHEAD_MAX + 1; k++) {
        int r = wait_slot(x, k);
        if (rc == VEIL_OK)
            rc = r;
    }
    x->nlinear = 0;
    return rc;
}

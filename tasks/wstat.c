/*
 * wstat.c — weight-stationary matmul and conv2d (contract, costs and security argument in
 * wstat.h): the per-weight session state, the context's register of claimed weight ids, the
 * checks that bind a state to one weight tensor, and calls into the Beaver cores of matmul.c and
 * conv.c with a _WS item and the state's E (opened there on the first call, reused afterwards).
 */
#include "config.h"
#include "tasks/wstat.h"

#include "base/base_internal.h"
#include "tasks/beaver_internal.h"
#include "tasks/mpc_internal.h"

#include <stdlib.h>
#include <string.h>

enum { OP_NONE, OP_MATMUL, OP_CONV };

/* Claims wid in m for the rest of the session; VEIL_ERR_STATE if it was claimed before. */
static int claim(veil_mpc_t *m, uint64_t wid)
{
    for (size_t i = 0; i < m->nwids; i++)
        if (m->wids[i] == wid)
            return veil_error(VEIL_ERR_STATE,
                              "wstat: weight id %llu is already claimed in this session; each "
                              "weight tensor needs its own id (one mask must never hide two "
                              "weights)",
                              (unsigned long long)wid);
    if (m->nwids == m->wids_cap) {
        size_t cap = m->wids_cap ? 2 * m->wids_cap : 16;
        uint64_t *n = realloc(m->wids, cap * sizeof *n);
        if (!n)
            return veil_error(VEIL_ERR_NOMEM, "wstat: out of memory for the weight ids");
        m->wids = n;
        m->wids_cap = cap;
    }
    m->wids[m->nwids++] = wid;
    return VEIL_OK;
}

int veil_mpc_wstat_init(veil_mpc_t *m, struct veil_mpc_wstat *ws, uint64_t wid)
{
    if (!m || !ws)
        return veil_error(VEIL_ERR_INVAL, "wstat init: NULL context or state");
    if (ws->m)
        return veil_error(VEIL_ERR_STATE,
                          "wstat init: the state (weight id %llu) is in use; "
                          "release it first (or zero a new one)",
                          (unsigned long long)ws->wid);
    memset(ws, 0, sizeof *ws);
    int rc = claim(m, wid);
    if (rc != VEIL_OK)
        return rc;
    ws->m = m;
    ws->wid = wid;
    return VEIL_OK;
}

void veil_mpc_wstat_release(veil_mpc_t *m, struct veil_mpc_wstat *ws)
{
    if (!ws)
        return;
    if (m) {
        veil_mpc_release(m, &ws->e);
        veil_mpc_release(m, &ws->b);
    }
    memset(ws, 0, sizeof *ws);
}

int veil_mpc_wstat_bound(const struct veil_mpc_wstat *ws)
{
    return ws && ws->op != OP_NONE;
}

/* The state must belong to m and, once bound, to this very w (tensor identity and shape) and
 * op. w is validated already. */
static int check_state(veil_mpc_t *m, const char *op_name, int op, const struct veil_sec *w,
                       const struct veil_mpc_wstat *ws)
{
    if (!ws)
        return veil_error(VEIL_ERR_INVAL, "%s: the weight state is NULL", op_name);
    if (ws->m != m)
        return veil_error(VEIL_ERR_STATE,
                          "%s: the weight state was not initialised for this context; call "
                          "veil_mpc_wstat_init first",
                          op_name);
    if (ws->op == OP_NONE)
        return VEIL_OK;
    if (ws->op != op)
        return veil_error(VEIL_ERR_STATE, "%s: weight state %llu is bound to a %s", op_name,
                          (unsigned long long)ws->wid, ws->op == OP_MATMUL ? "matmul" : "conv2d");
    int same =
        w->ndim == ws->ndim && w->data == ws->w_data && (w->h ? w->h[0] : NULL) == ws->w_handle;
    for (int i = 0; same && i < w->ndim; i++)
        same = w->dims[i] == ws->dims[i];
    if (!same)
        return veil_error(VEIL_ERR_STATE,
                          "%s: weight state %llu was opened for another weight tensor; a "
                          "changed weight would reveal W - W' (use veil_mpc_matmul / "
                          "veil_mpc_conv2d for weights that change, e.g. in training)",
                          op_name, (unsigned long long)ws->wid);
    return VEIL_OK;
}

static void bind(struct veil_mpc_wstat *ws, int op, const struct veil_sec *w)
{
    ws->op = op;
    ws->ndim = w->ndim;
    memcpy(ws->dims, w->dims, (size_t)w->ndim * sizeof ws->dims[0]);
    ws->w_data = w->data;
    ws->w_handle = w->h ? w->h[0] : NULL;
}

/* After a product: bind on success; on a failed first call drop whatever E was opened (and B
 * kept), so a state never holds an E or a B it is not bound to. */
static int finish(veil_mpc_t *m, struct veil_mpc_wstat *ws, int op, const struct veil_sec *w,
                  int rc)
{
    if (rc == VEIL_OK) {
        if (ws->op == OP_NONE)
            bind(ws, op, w);
        ws->uses++;
    } else if (ws->op == OP_NONE) {
        veil_mpc_release(m, &ws->e);
        veil_mpc_release(m, &ws->b);
    }
    return rc;
}

int veil_mpc_matmul_ws(veil_mpc_t *m, const struct veil_sec *x, const struct veil_sec *w,
                       struct veil_mpc_wstat *ws, struct veil_sec *z)
{
    int rc = veil_mpc_matmul_check("matmul_ws", x, w, z);
    if (rc == VEIL_OK)
        rc = check_state(m, "matmul_ws", OP_MATMUL, w, ws);
    if (rc != VEIL_OK)
        return rc;
    rc = veil_mpc_matmul_beaver(m, x, w, &ws->wid, &ws->e, &ws->b, z);
    return finish(m, ws, OP_MATMUL, w, rc);
}

int veil_mpc_conv2d_ws(veil_mpc_t *m, const struct veil_sec *x, const struct veil_sec *w,
                       const struct veil_conv_geom *g, struct veil_mpc_wstat *ws,
                       struct veil_sec *y)
{
    int rc = veil_mpc_conv2d_check("conv2d_ws", x, w, g, y);
    if (rc == VEIL_OK)
        rc = check_state(m, "conv2d_ws", OP_CONV, w, ws);
    if (rc != VEIL_OK)
        return rc;
    rc = veil_mpc_conv2d_beaver(m, x, w, g, &ws->wid, &ws->e, &ws->b, y);
    return finish(m, ws, OP_CONV, w, rc);
}

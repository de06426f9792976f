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
#include "tasks/preproc.h"
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

/* This party's share of the weight mask into ws->b (shaped at the dealer / a recorder, which
 * hold no words): from the weight stream, or from the preprocessing file's first item of the
 * weight not yet consumed (FILE). */
static int fetch_mask(veil_mpc_t *m, struct veil_mpc_wstat *ws,
                      const struct veil_preproc_item *like, size_t n)
{
    const size_t dims[1] = {n};
    int rc = veil_sec_shape(m, &ws->b, VEIL_SHARE_ARITH, 1, dims, SIZE_MAX);
    if (rc == VEIL_OK && !veil_mpc_computes(m))
        veil_mpc_note_alloc(m, ws->b.numel);
    if (rc != VEIL_OK || !veil_mpc_computes(m))
        return rc;
    if ((rc = veil_sec_alloc(m, &ws->b)) != VEIL_OK)
        return rc;
    rc = m->opt.material == VEIL_MPC_MAT_FILE
             ? veil_preproc_peek_weight(m->reader, like, ws->b.data)
             : veil_preproc_part_fill(&m->layout, like, m->self, m->seed, VEIL_PRE_B, 0, n, NULL,
                                      ws->b.data);
    if (rc == VEIL_OK) {
        m->mat_words += n;
        rc = veil_sec_register(&ws->b);
    }
    return rc;
}

int veil_mpc_wstat_prime(veil_mpc_t *m, struct veil_mpc_wstat *ws, const struct veil_sec *w,
                         const struct veil_preproc_item *like)
{
    const char *what = "wstat prime";
    if (!m || !w || !like)
        return veil_error(VEIL_ERR_INVAL, "%s: NULL argument", what);
    const int op = like->kind == VEIL_PREPROC_MATMUL_WS ? OP_MATMUL
                   : like->kind == VEIL_PREPROC_CONV_WS ? OP_CONV
                                                        : OP_NONE;
    struct veil_preproc_desc d;
    uint64_t wid = 0;
    int rc = op == OP_NONE ? veil_error(VEIL_ERR_INVAL, "%s: not a MATMUL_WS or CONV_WS item", what)
                           : check_state(m, what, op, w, ws);
    if (rc != VEIL_OK)
        return rc;
    if (ws->op != OP_NONE)
        return veil_error(VEIL_ERR_STATE, "%s: weight state %llu has opened E already", what,
                          (unsigned long long)ws->wid);
    veil_preproc_item_wid(like, &wid);
    if (wid != ws->wid)
        return veil_error(VEIL_ERR_INVAL, "%s: the item names weight %llu, the state %llu", what,
                          (unsigned long long)wid, (unsigned long long)ws->wid);
    if ((rc = veil_preproc_item_describe(like, &d)) != VEIL_OK)
        return rc;
    if (w->kind != VEIL_SHARE_ARITH || w->numel != d.part[VEIL_PRE_B].numel)
        return veil_error(VEIL_ERR_SHAPE, "%s: the weight has %zu elements, the item's mask %zu",
                          what, w->numel, d.part[VEIL_PRE_B].numel);
    rc = fetch_mask(m, ws, like, d.part[VEIL_PRE_B].numel);
    if (rc == VEIL_OK) {
        struct veil_sec b = veil_mpc_part_view(&ws->b, w);
        rc = veil_mpc_open(m, w, &b, &ws->e);
    }
    if (rc != VEIL_OK) {
        veil_mpc_release(m, &ws->e);
        veil_mpc_release(m, &ws->b);
        return rc;
    }
    bind(ws, op, w);
    return VEIL_OK;
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

/*
 * beaver.c — the elementwise Beaver product and square (contracts and costs in beaver.h). Per
 * tile of a product: the round's two masked terms D = x - a and E = y - b packed in one buffer by
 * one task and opened as one message per peer (the peers' terms folded in by the receives), then
 * the local combination z = c + D b + a E (+ D E) as one task, ready when the tile's message from
 * the last peer lands; every tile runs independently of the others. One message instead of two
 * halves the hand-offs of a round between the network and the workers (bench/README-latency.md);
 * the bytes are the same. (Separate products per opened operand let D b start before E came, but
 * cost three more tasks and temporaries per tile, and one more pass over memory, for a head start
 * the two terms of one round rarely give.)
 */
#include "config.h"
#include "tasks/beaver.h"

#include "base/base_internal.h"
#include "codelets/codelets_internal.h"
#include "tasks/beaver_internal.h"
#include "tasks/mpc_internal.h"

#include <string.h>

struct veil_sec veil_mpc_part_view(const struct veil_sec *p, const struct veil_sec *like)
{
    struct veil_sec v = *p;
    v.ndim = like->ndim;
    memcpy(v.dims, like->dims, sizeof v.dims);
    return v;
}

void veil_mpc_part_adopt(struct veil_sec *p, int ndim, const size_t *dims, struct veil_sec *out)
{
    *out = *p;
    out->kind = VEIL_SHARE_ARITH;
    out->ndim = ndim;
    memset(out->dims, 0, sizeof out->dims);
    memcpy(out->dims, dims, (size_t)ndim * sizeof *dims);
    memset(p, 0, sizeof *p);
}

int veil_mpc_ws_material(veil_mpc_t *m, struct veil_preproc_item item, struct veil_sec *b_keep,
                         struct veil_mpc_mat *mat)
{
    const int lend = b_keep && b_keep->data;
    int rc = veil_mpc_material_skip(m, item, SIZE_MAX, lend ? 1u << VEIL_PRE_B : 0, mat);
    if (rc == VEIL_OK && lend)
        mat->part[VEIL_PRE_B] = *b_keep; /* the same words, the same shape */
    return rc;
}

void veil_mpc_ws_settle(struct veil_mpc_mat *mat, struct veil_sec *b_keep, int rc)
{
    struct veil_sec *b = &mat->part[VEIL_PRE_B];
    if (!b_keep || !b->data)
        return;
    if (b->data == b_keep->data) /* lent: the keeper's */
        memset(b, 0, sizeof *b);
    else if (rc == VEIL_OK && !b_keep->data) { /* the first call's: kept from now on */
        *b_keep = *b;
        memset(b, 0, sizeof *b);
    }
}

int veil_mpc_fold_de(veil_mpc_t *m, const struct veil_sec *ma, starpu_data_handle_t d,
                     const struct veil_sec *mb, starpu_data_handle_t e, struct veil_sec *tmp,
                     struct veil_sec *ua, struct veil_sec *ub)
{
    memset(tmp, 0, sizeof *tmp);
    *ua = *ma;
    *ub = *mb;
    if (veil_mpc_self(m) != 0)
        return VEIL_OK;
    const int on_b = mb->numel <= ma->numel;
    const struct veil_sec *mask = on_b ? mb : ma;
    int rc = veil_sec_init(m, tmp, VEIL_SHARE_ARITH, mask->ndim, mask->dims, SIZE_MAX);
    if (rc == VEIL_OK)
        rc = veil_task_add(mask->h[0], on_b ? e : d, tmp->h[0], veil_mpc_priority(m));
    *(on_b ? ub : ua) = *tmp;
    return rc;
}

static int check_arith(const char *op, const char *what, const struct veil_sec *x)
{
    if (!x)
        return veil_error(VEIL_ERR_INVAL, "%s: %s is NULL", op, what);
    if (x->kind != VEIL_SHARE_ARITH)
        return veil_error(VEIL_ERR_INVAL,
                          "%s: %s holds binary shares; convert it to arithmetic "
                          "shares first",
                          op, what);
    if (x->numel == 0)
        return veil_error(VEIL_ERR_SHAPE, "%s: %s is empty", op, what);
    return VEIL_OK;
}

/* The Beaver product; mark: whether this call starts its own communication round. */
static int mul(veil_mpc_t *m, const struct veil_sec *x, const struct veil_sec *y,
               struct veil_sec *z, int mark)
{
    int rc;
    if ((rc = check_arith("mul", "x", x)) != VEIL_OK ||
        (rc = check_arith("mul", "y", y)) != VEIL_OK)
        return rc;
    if (!z)
        return veil_error(VEIL_ERR_INVAL, "mul: z is NULL");
    if (!veil_sec_same_layout(x, y))
        return veil_error(VEIL_ERR_SHAPE,
                          "mul: x (%zu elements, tiles of %zu) and y (%zu "
                          "elements, tiles of %zu) must have the same shape and tiling",
                          x->numel, x->tile, y->numel, y->tile);
    struct veil_mpc_mat mat;
    memset(z, 0, sizeof *z);
    if ((rc = veil_mpc_material(m, veil_preproc_item_beaver(0, x->numel), x->tile, &mat)) !=
        VEIL_OK)
        return rc;
    /* d = x - a and e = y - b open in one message per peer and tile: tile t of de holds tile t of
     * d, then of e (a tile twice as long) */
    struct veil_sec de = {0};
    const size_t de_dims[1] = {2 * x->numel};
    if ((rc = veil_sec_init_like(m, z, x)) != VEIL_OK ||
        (rc = veil_sec_init(m, &de, VEIL_SHARE_ARITH, 1, de_dims, 2 * x->tile)) != VEIL_OK ||
        !veil_mpc_computes(m))
        goto out;
    const uint64_t tag0 = veil_mpc_tags(m, (uint64_t)x->ntiles);
    const int p0 = veil_mpc_self(m) == 0;
    struct veil_sec a = veil_mpc_part_view(&mat.part[VEIL_PRE_A], x);
    struct veil_sec b = veil_mpc_part_view(&mat.part[VEIL_PRE_B], x);
    const struct veil_sec *c = &mat.part[VEIL_PRE_C];
    for (int t = 0; t < x->ntiles && rc == VEIL_OK; t++) {
        const uint64_t tag = tag0 + (uint64_t)t;
        rc = veil_task_sub_pair(x->h[t], a.h[t], y->h[t], b.h[t], de.h[t], veil_mpc_priority(m));
        if (rc == VEIL_OK) /* posted before the folds, which write de */
            rc = veil_mpc_send_all(m, de.h[t], tag);
        if (rc == VEIL_OK)
            rc = veil_mpc_fold_peers(m, VEIL_SHARE_ARITH, de.h[t], tag);
    }
    if (rc != VEIL_OK)
        goto out;
    if (mark)
        veil_mpc_round(m);
    /* one task per tile, ready once the tile's terms have landed */
    for (int t = 0; t < x->ntiles && rc == VEIL_OK; t++)
        rc = veil_task_beaver_z_pair(c->h[t], de.h[t], b.h[t], a.h[t], p0, z->h[t],
                                     veil_mpc_priority(m));
out:
    veil_mpc_release(m, &de);
    veil_mpc_mat_release(m, &mat);
    return rc;
}

int veil_mpc_mul(veil_mpc_t *m, const struct veil_sec *x, const struct veil_sec *y,
                 struct veil_sec *z)
{
    return mul(m, x, y, z, 1);
}

int veil_mpc_mul_unmarked(veil_mpc_t *m, const struct veil_sec *x, const struct veil_sec *y,
                          struct veil_sec *z)
{
    return mul(m, x, y, z, 0);
}

int veil_mpc_square(veil_mpc_t *m, const struct veil_sec *x, struct veil_sec *z)
{
    int rc;
    if ((rc = check_arith("square", "x", x)) != VEIL_OK)
        return rc;
    if (!z)
        return veil_error(VEIL_ERR_INVAL, "square: z is NULL");
    struct veil_mpc_mat mat;
    memset(z, 0, sizeof *z);
    if ((rc = veil_mpc_material(m, veil_preproc_item_square(0, x->numel), x->tile, &mat)) !=
        VEIL_OK)
        return rc;
    struct veil_sec d = {0};
    if ((rc = veil_sec_init_like(m, z, x)) != VEIL_OK || !veil_mpc_computes(m))
        goto out;
    const int p0 = veil_mpc_self(m) == 0;
    struct veil_sec a = veil_mpc_part_view(&mat.part[VEIL_PRE_SQ_A], x);
    const struct veil_sec *a2 = &mat.part[VEIL_PRE_SQ_A2];
    if ((rc = veil_mpc_open(m, x, &a, &d)) != VEIL_OK)
        goto out;
    veil_mpc_round(m);
    /* a^2 + D a + a D (+ D D): the product's step with b = a and e = D */
    for (int t = 0; t < x->ntiles && rc == VEIL_OK; t++)
        rc = veil_task_beaver_z(a2->h[t], d.h[t], a.h[t], a.h[t], d.h[t], p0, z->h[t],
                                veil_mpc_priority(m));
out:
    veil_mpc_release(m, &d);
    veil_mpc_mat_release(m, &mat);
    return rc;
}

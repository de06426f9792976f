/*
 * mpc_open.c — the primitives that talk (input sharing, masked open, reveal) and the local
 * linear operations, all per tile (contracts in mpc.h). An open of tile t is independent of
 * every other tile's: its own tag, its own sends and receives, so tiles pipeline. The peers'
 * terms are folded into the result tile by the receives themselves (veil_net_irecv_combine):
 * the consumer of an open becomes ready when the last message lands, with no sum task between.
 */
#include "config.h"
#include "base/base_internal.h"
#include "codelets/codelets_internal.h"
#include "tasks/mpc_internal.h"

#include <string.h>

static int check_same(const char *op, const struct veil_sec *a, const struct veil_sec *b)
{
    if (!a || !b)
        return veil_error(VEIL_ERR_INVAL, "%s: NULL tensor", op);
    if (!veil_sec_same_layout(a, b))
        return veil_error(VEIL_ERR_SHAPE, "%s: operands differ in shape or tiling (%zu elements in "
                          "tiles of %zu vs %zu in tiles of %zu)", op, a->numel, a->tile, b->numel,
                          b->tile);
    return VEIL_OK;
}

int veil_mpc_send_all(veil_mpc_t *m, starpu_data_handle_t src, uint64_t tag)
{
    int rc = VEIL_OK;
    for (int q = 0; q < m->nparties && rc == VEIL_OK; q++)
        if (q != m->self)
            rc = veil_net_isend(m->net, src, q, tag);
    return rc;
}

int veil_mpc_fold_peers(veil_mpc_t *m, enum veil_share_kind kind, starpu_data_handle_t dst,
                        uint64_t tag)
{
    const enum veil_net_combine op =
        kind == VEIL_SHARE_ARITH ? VEIL_NET_COMBINE_ADD64 : VEIL_NET_COMBINE_XOR;
    int rc = VEIL_OK;
    for (int q = 0; q < m->nparties && rc == VEIL_OK; q++)
        if (q != m->self)
            rc = veil_net_irecv_combine(m->net, dst, q, tag, op);
    return rc;
}

/* dst = src (a one-operand sum): this party's own term, before the peers' are folded in. */
static int copy_term(veil_mpc_t *m, enum veil_share_kind kind, starpu_data_handle_t src,
                     starpu_data_handle_t dst)
{
    return kind == VEIL_SHARE_ARITH ? veil_task_sum(&src, 1, dst, veil_mpc_priority(m))
                                    : veil_task_xor_sum(&src, 1, dst, veil_mpc_priority(m));
}

int veil_mpc_open(veil_mpc_t *m, const struct veil_sec *x, const struct veil_sec *a,
                  struct veil_pub *d)
{
    int rc = a ? check_same("open", x, a) : (x ? VEIL_OK : veil_error(VEIL_ERR_INVAL, "open: NULL"));
    if (rc == VEIL_OK && a && a->kind != x->kind)
        rc = veil_error(VEIL_ERR_INVAL, "open: the mask's share kind differs from the value's");
    if (rc != VEIL_OK)
        return rc;
    const uint64_t tag0 = veil_mpc_tags(m, (uint64_t)x->ntiles);
    if ((rc = veil_sec_init_like(m, d, x)) != VEIL_OK || !veil_mpc_computes(m))
        return rc;
    d->kind = x->kind;
    /* per tile: d = x - a (or x), sent (x itself when there is no mask), then every peer's term
     * folded into d as it lands */
    for (int t = 0; t < x->ntiles && rc == VEIL_OK; t++) {
        const uint64_t tag = tag0 + (uint64_t)t;
        const int prio = veil_mpc_priority(m);
        if (a) {
            rc = x->kind == VEIL_SHARE_ARITH ? veil_task_sub(x->h[t], a->h[t], d->h[t], prio)
                                             : veil_task_xor(x->h[t], a->h[t], d->h[t], prio);
            if (rc == VEIL_OK) /* posted before the folds, which write d */
                rc = veil_mpc_send_all(m, d->h[t], tag);
        } else {
            rc = veil_mpc_send_all(m, x->h[t], tag);
            if (rc == VEIL_OK)
                rc = copy_term(m, x->kind, x->h[t], d->h[t]);
        }
        if (rc == VEIL_OK)
            rc = veil_mpc_fold_peers(m, x->kind, d->h[t], tag);
    }
    return rc;
}

int veil_mpc_reveal(veil_mpc_t *m, const struct veil_sec *x, int to, struct veil_pub *out)
{
    if (!x || !out)
        return veil_error(VEIL_ERR_INVAL, "reveal: NULL tensor");
    memset(out, 0, sizeof *out);
    if (to < -1 || to >= m->nparties)
        return veil_error(VEIL_ERR_INVAL, "reveal: party %d is not -1 (all) or in [0, %d)", to,
                          m->nparties);
    veil_mpc_round(m);
    if (to == -1)
        return veil_mpc_open(m, x, NULL, out);
    const uint64_t tag0 = veil_mpc_tags(m, (uint64_t)x->ntiles);
    if (!veil_mpc_computes(m))
        return veil_sec_shape(m, out, x->kind, x->ndim, x->dims, x->tile);
    int rc = VEIL_OK;
    if (m->self != to) {
        for (int t = 0; t < x->ntiles && rc == VEIL_OK; t++)
            rc = veil_net_isend(m->net, x->h[t], to, tag0 + (uint64_t)t);
        return rc;
    }
    rc = veil_sec_init_like(m, out, x);
    for (int t = 0; t < x->ntiles && rc == VEIL_OK; t++) {
        rc = copy_term(m, x->kind, x->h[t], out->h[t]);
        if (rc == VEIL_OK)
            rc = veil_mpc_fold_peers(m, x->kind, out->h[t], tag0 + (uint64_t)t);
    }
    return rc;
}

int veil_mpc_share_input(veil_mpc_t *m, int owner, const uint64_t *values, int ndim,
                         const size_t *dims, size_t tile, struct veil_sec *out)
{
    memset(out, 0, sizeof *out);
    if (owner < 0 || owner >= m->nparties)
        return veil_error(VEIL_ERR_INVAL, "share input: owner %d is not a party in [0, %d)",
                          owner, m->nparties);
    int rc = veil_sec_shape(m, out, VEIL_SHARE_ARITH, ndim, dims, tile);
    if (rc != VEIL_OK)
        return rc;
    const uint64_t tag0 = veil_mpc_tags(m, (uint64_t)out->ntiles);
    veil_mpc_round(m);
    if (!veil_mpc_computes(m)) {
        veil_mpc_note_alloc(m, out->numel); /* every party's own share */
        return VEIL_OK;
    }
    if (m->self == owner && !values)
        return veil_error(VEIL_ERR_INVAL, "share input: the owner must give its values");
    if ((rc = veil_sec_alloc(m, out)) != VEIL_OK)
        return rc;
    if (m->self != owner) {
        if ((rc = veil_sec_register(out)) != VEIL_OK)
            return rc;
        for (int t = 0; t < out->ntiles && rc == VEIL_OK; t++)
            rc = veil_net_irecv(m->net, out->h[t], owner, tag0 + (uint64_t)t);
        return rc;
    }
    /* The owner: a fresh uniformly random share for each peer; its own is what is left. */
    struct veil_sec theirs[VEIL_NET_MAX_PARTIES];
    memset(theirs, 0, sizeof theirs);
    memcpy(out->data, values, out->numel * 8);
    uint8_t seed[VEIL_SEED_BYTES];
    for (int q = 0; q < m->nparties && rc == VEIL_OK; q++) {
        if (q == owner)
            continue;
        veil_prg_t *prg = NULL;
        if ((rc = veil_sec_shape(m, &theirs[q], VEIL_SHARE_ARITH, ndim, dims, tile)) != VEIL_OK ||
            (rc = veil_sec_alloc(m, &theirs[q])) != VEIL_OK ||
            (rc = veil_seed_random(seed)) != VEIL_OK)
            break;
        if (!(prg = veil_prg_new(seed)) ||
            (rc = veil_prg_fill(prg, theirs[q].data, out->numel)) != VEIL_OK) {
            veil_prg_destroy(&prg);
            rc = rc ? rc : VEIL_ERR_CRYPTO;
            break;
        }
        veil_prg_destroy(&prg);
        for (size_t i = 0; i < out->numel; i++)
            out->data[i] -= theirs[q].data[i];
        if ((rc = veil_sec_register(&theirs[q])) != VEIL_OK)
            break;
        for (int t = 0; t < out->ntiles && rc == VEIL_OK; t++)
            rc = veil_net_isend(m->net, theirs[q].h[t], q, tag0 + (uint64_t)t);
    }
    veil_wipe(seed, sizeof seed);
    if (rc == VEIL_OK)
        rc = veil_sec_register(out);
    for (int q = 0; q < m->nparties; q++)
        veil_mpc_release(m, &theirs[q]);
    return rc;
}

int veil_mpc_share_input_fixed(veil_mpc_t *m, int owner, const double *values, double max_abs,
                               int ndim, const size_t *dims, size_t tile, struct veil_sec *out)
{
    memset(out, 0, sizeof *out);
    if (m->self != owner || !veil_mpc_computes(m))
        return veil_mpc_share_input(m, owner, NULL, ndim, dims, tile, out);
    struct veil_sec shape;
    int rc = veil_sec_shape(m, &shape, VEIL_SHARE_ARITH, ndim, dims, tile);
    if (rc != VEIL_OK)
        return rc;
    if (!values)
        return veil_error(VEIL_ERR_INVAL, "share input: the owner must give its values");
    const int f = m->opt.frac_bits;
    for (size_t i = 0; max_abs > 0 && i < shape.numel; i++)
        if (!(values[i] > -max_abs && values[i] < max_abs)) /* NaN fails too */
            return veil_error(VEIL_ERR_RANGE, "share input: element %zu is %g, outside the "
                              "documented input range |x| < %g", i, values[i], max_abs);
    uint64_t *words = veil_aligned_alloc(shape.numel * 8);
    if (!words)
        return VEIL_ERR_NOMEM;
    rc = veil_fixed_encode_array(values, shape.numel, f, words);
    if (rc == VEIL_OK)
        rc = veil_mpc_share_input(m, owner, words, ndim, dims, tile, out);
    veil_wipe(words, shape.numel * 8);
    veil_aligned_free(words);
    return rc;
}

/* ---- local operations --------------------------------------------------------------------- */

typedef int (*binop_fn)(starpu_data_handle_t, starpu_data_handle_t, starpu_data_handle_t, int);

static int local_binary(veil_mpc_t *m, const char *op, const struct veil_sec *x,
                        const struct veil_sec *y, struct veil_sec *z, binop_fn arith,
                        binop_fn binary)
{
    int rc = check_same(op, x, y);
    if (rc == VEIL_OK && !binary && x->kind == VEIL_SHARE_BINARY)
        rc = veil_error(VEIL_ERR_INVAL, "%s: not defined on binary shares", op);
    if (rc != VEIL_OK || (rc = veil_sec_init_like(m, z, x)) != VEIL_OK || !veil_mpc_computes(m))
        return rc;
    z->kind = x->kind;
    binop_fn f = x->kind == VEIL_SHARE_ARITH ? arith : binary;
    for (int t = 0; t < x->ntiles && rc == VEIL_OK; t++)
        rc = f(x->h[t], y->h[t], z->h[t], veil_mpc_priority(m));
    return rc;
}

int veil_mpc_add(veil_mpc_t *m, const struct veil_sec *x, const struct veil_sec *y,
                 struct veil_sec *z)
{
    return local_binary(m, "add", x, y, z, veil_task_add, veil_task_xor);
}

int veil_mpc_sub(veil_mpc_t *m, const struct veil_sec *x, const struct veil_sec *y,
                 struct veil_sec *z)
{
    return local_binary(m, "sub", x, y, z, veil_task_sub, veil_task_xor);
}

int veil_mpc_mul_public(veil_mpc_t *m, const struct veil_sec *x, const struct veil_pub *c,
                        struct veil_sec *z)
{
    return local_binary(m, "mul_public", x, c, z, veil_task_mul, veil_task_and);
}

static int local_scalar(veil_mpc_t *m, const char *op, const struct veil_sec *x, uint64_t c,
                        struct veil_sec *z, int add)
{
    if (!x)
        return veil_error(VEIL_ERR_INVAL, "%s: NULL tensor", op);
    int rc = veil_sec_init_like(m, z, x);
    if (rc != VEIL_OK || !veil_mpc_computes(m))
        return rc;
    z->kind = x->kind;
    const int binary = x->kind == VEIL_SHARE_BINARY;
    if (add && veil_mpc_self(m) != 0)
        c = 0; /* a public constant is added once, by party 0 */
    for (int t = 0; t < x->ntiles && rc == VEIL_OK; t++) {
        if (add)
            rc = binary ? veil_task_xor_mask(x->h[t], c, z->h[t], veil_mpc_priority(m))
                        : veil_task_add_scalar(x->h[t], c, z->h[t], veil_mpc_priority(m));
        else
            rc = binary ? veil_task_and_mask(x->h[t], c, z->h[t], veil_mpc_priority(m))
                        : veil_task_mul_scalar(x->h[t], c, z->h[t], veil_mpc_priority(m));
    }
    return rc;
}

int veil_mpc_add_scalar(veil_mpc_t *m, const struct veil_sec *x, uint64_t c, struct veil_sec *z)
{
    return local_scalar(m, "add_scalar", x, c, z, 1);
}

int veil_mpc_mul_scalar(veil_mpc_t *m, const struct veil_sec *x, uint64_t c, struct veil_sec *z)
{
    return local_scalar(m, "mul_scalar", x, c, z, 0);
}

/*
 * lower_util.c — the layout and small arithmetic helpers the secure lowerings share (contracts
 * in exec_internal.h): one-handle copies for the products, retiling of their results, reshaping
 * copies, periodic broadcasts (biases, layer-norm gamma and beta), truncation and scaling by
 * public reals, row sums, public tensors. Each is SPMD like the protocols: at the dealer and a
 * recorder the tensors carry shapes only and nothing is submitted.
 */
#include "config.h"

#include "base/base_internal.h"
#include "graph/secure/exec_internal.h"
#include "tasks/nonlinear_internal.h"
#include "tasks/trunc.h"

#include <math.h>
#include <string.h>

uint64_t veil_exec_fixed(double c, int f)
{
    return (uint64_t)(int64_t)llround(ldexp(c, f));
}

/* One flat relayout task reading in and writing out (nothing at a context that does not
 * compute). */
static int flat1(struct veil_exec *x, struct veil_flatop_args a, struct veil_sec *out,
                 const struct veil_sec *in)
{
    struct veil_sec *outs[1] = {out};
    const struct veil_sec *ins[1] = {in};
    return veil_nl_flat(x->m, a, outs, 1, ins, 1);
}

int veil_exec_copy(struct veil_exec *x, const struct veil_sec *in, int ndim, const size_t *dims,
                   size_t tile, struct veil_sec *out)
{
    int rc = veil_sec_init(x->m, out, in->kind, ndim, dims, tile ? tile : x->tile);
    if (rc != VEIL_OK)
        return rc;
    if (out->numel != in->numel) {
        veil_mpc_release(x->m, out);
        return veil_error(VEIL_ERR_SHAPE, "copy: %zu elements into %zu", in->numel, out->numel);
    }
    struct veil_flatop_args a;
    memset(&a, 0, sizeof a);
    a.kind = VEIL_FLATOP_COPY;
    return flat1(x, a, out, in);
}

int veil_exec_relayout(struct veil_exec *x, const struct veil_sec *in, const struct veil_sec *like,
                       struct veil_sec *out)
{
    return veil_exec_copy(x, in, like->ndim, like->dims, like->tile, out);
}

int veil_exec_single(struct veil_exec *x, const struct veil_sec *in, struct veil_sec *tmp,
                     const struct veil_sec **out)
{
    memset(tmp, 0, sizeof *tmp);
    if (in->ntiles <= 1) {
        *out = in;
        return VEIL_OK;
    }
    *out = tmp;
    return veil_exec_copy(x, in, in->ndim, in->dims, SIZE_MAX, tmp);
}

int veil_exec_product(struct veil_exec *x, const struct veil_sec *a, const struct veil_sec *b,
                      veil_exec_product_fn fn, const void *arg, struct veil_sec *y)
{
    int rc = veil_exec_product_raw(x, a, b, fn, arg, y);
    return rc == VEIL_OK ? veil_exec_trunc_inplace(x, y) : rc;
}

int veil_exec_product_raw(struct veil_exec *x, const struct veil_sec *a, const struct veil_sec *b,
                          veil_exec_product_fn fn, const void *arg, struct veil_sec *y)
{
    struct veil_sec ta, tb;
    const struct veil_sec *sa, *sb;
    memset(&tb, 0, sizeof tb); /* released below even when a's copy failed */
    int rc = veil_exec_single(x, a, &ta, &sa);
    if (rc == VEIL_OK)
        rc = veil_exec_single(x, b, &tb, &sb);
    if (rc == VEIL_OK)
        rc = fn(x, sa, sb, arg, y);
    veil_mpc_release(x->m, &ta);
    veil_mpc_release(x->m, &tb);
    return rc == VEIL_OK ? veil_exec_retile(x, y) : rc;
}

int veil_exec_retile(struct veil_exec *x, struct veil_sec *t)
{
    if (t->ntiles != 1 || t->numel <= x->tile)
        return VEIL_OK;
    struct veil_sec z;
    int rc = veil_exec_copy(x, t, t->ndim, t->dims, x->tile, &z);
    if (rc != VEIL_OK)
        return rc;
    veil_mpc_release(x->m, t);
    *t = z;
    return VEIL_OK;
}

int veil_exec_broadcast(struct veil_exec *x, const struct veil_sec *b, size_t inner,
                        const struct veil_sec *like, struct veil_sec *out)
{
    if (inner == 0 || b->numel == 0 || like->numel % (inner * b->numel) != 0)
        return veil_error(VEIL_ERR_SHAPE,
                          "broadcast: %zu elements repeated %zu times do not "
                          "tile %zu",
                          b->numel, inner, like->numel);
    int rc = veil_sec_init(x->m, out, b->kind, like->ndim, like->dims, like->tile);
    if (rc != VEIL_OK)
        return rc;
    struct veil_flatop_args a;
    memset(&a, 0, sizeof a);
    a.kind = VEIL_FLATOP_TILE;
    a.k = inner;
    return flat1(x, a, out, b);
}

int veil_exec_add_broadcast(struct veil_exec *x, struct veil_sec *y, const struct veil_sec *b,
                            size_t inner)
{
    struct veil_sec t, z;
    memset(&z, 0, sizeof z);
    int rc = veil_exec_broadcast(x, b, inner, y, &t);
    if (rc == VEIL_OK)
        rc = veil_mpc_add(x->m, y, &t, &z);
    veil_mpc_release(x->m, &t);
    if (rc != VEIL_OK)
        return rc;
    veil_mpc_release(x->m, y);
    *y = z;
    return VEIL_OK;
}

int veil_exec_trunc_inplace(struct veil_exec *x, struct veil_sec *t)
{
    struct veil_sec z;
    int rc = veil_mpc_trunc(x->m, t, x->frac_bits, &z);
    if (rc != VEIL_OK)
        return rc;
    veil_mpc_release(x->m, t);
    *t = z;
    return VEIL_OK;
}

int veil_exec_scale(struct veil_exec *x, const struct veil_sec *in, double c, struct veil_sec *out)
{
    if (c == nearbyint(c) && fabs(c) < 0x1p62) /* an integer factor needs no truncation */
        return veil_mpc_mul_scalar(x->m, in, (uint64_t)(int64_t)c, out);
    int rc = veil_mpc_mul_scalar(x->m, in, veil_exec_fixed(c, x->frac_bits), out);
    return rc == VEIL_OK ? veil_exec_trunc_inplace(x, out) : rc;
}

/* out (shape ndim, dims) = a reduction of in by k (ROWSUM: sums of rows of k; FOLD: see
 * flatop_internal.h), one flat task. */
static int reduce(struct veil_exec *x, int kind, const struct veil_sec *in, size_t k, int ndim,
                  const size_t *dims, struct veil_sec *out)
{
    int rc = veil_sec_init(x->m, out, in->kind, ndim, dims, x->tile);
    if (rc != VEIL_OK)
        return rc;
    struct veil_flatop_args a;
    memset(&a, 0, sizeof a);
    a.kind = kind;
    a.k = k;
    return flat1(x, a, out, in);
}

int veil_exec_rowsum(struct veil_exec *x, const struct veil_sec *in, size_t k, int ndim,
                     const size_t *dims, struct veil_sec *out)
{
    return reduce(x, VEIL_FLATOP_ROWSUM, in, k, ndim, dims, out);
}

int veil_exec_public(struct veil_exec *x, const struct veil_sec *like, const uint64_t *words,
                     struct veil_pub *out)
{
    return veil_sec_init_words(x->m, out, VEIL_SHARE_ARITH, like->ndim, like->dims, like->tile,
                               words);
}

int veil_exec_public_share(struct veil_exec *x, int ndim, const size_t *dims, size_t tile,
                           const uint64_t *words, struct veil_sec *out)
{
    return veil_sec_init_words(x->m, out, VEIL_SHARE_ARITH, ndim, dims, tile,
                               veil_mpc_self(x->m) == 0 ? words : NULL);
}

int veil_exec_fold(struct veil_exec *x, const struct veil_sec *in, size_t k, int ndim,
                   const size_t *dims, struct veil_sec *out)
{
    return reduce(x, VEIL_FLATOP_FOLD, in, k, ndim, dims, out);
}

int veil_exec_like_layout(struct veil_exec *x, const struct veil_sec *in,
                          const struct veil_sec *like, struct veil_sec *tmp,
                          const struct veil_sec **out)
{
    memset(tmp, 0, sizeof *tmp);
    *out = in;
    if (veil_sec_same_layout(in, like))
        return VEIL_OK;
    *out = tmp;
    return veil_exec_relayout(x, in, like, tmp);
}

size_t veil_exec_batch_rows(const struct veil_exec *x, const struct veil_node *n, size_t rows)
{
    return x->copy && x->copy[n->index] >= 0 ? rows * (size_t)x->p->opts.microbatches : rows;
}

int veil_exec_mul_trunc(struct veil_exec *x, const struct veil_sec *a, const struct veil_sec *b,
                        struct veil_sec *out)
{
    struct veil_sec tb, z;
    const struct veil_sec *sb;
    memset(&z, 0, sizeof z);
    int rc = veil_exec_like_layout(x, b, a, &tb, &sb);
    if (rc == VEIL_OK)
        rc = veil_mpc_mul(x->m, a, sb, &z);
    if (rc == VEIL_OK)
        rc = veil_mpc_trunc(x->m, &z, x->frac_bits, out);
    veil_mpc_release(x->m, &tb);
    veil_mpc_release(x->m, &z);
    return rc;
}

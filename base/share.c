/*
 * share.c — arithmetic and binary share tensors: shape bookkeeping, seeded splitting of a
 * secret into N shares (N-1 PRG streams and one correction), expansion and reconstruction.
 */
#include "config.h"
#include "base/base_internal.h"
#include "base/secmem.h"

#include <string.h>

struct veil_share {
    enum veil_share_kind kind;
    int ndim;
    size_t dims[VEIL_MAX_DIMS];
    size_t numel;
    uint64_t *data;
};

veil_share_t *veil_share_new(enum veil_share_kind kind, int ndim, const size_t *dims)
{
    if (kind < 0 || kind >= VEIL_SHARE_KIND_COUNT) {
        veil_error(VEIL_ERR_INVAL, "share: unknown kind %d", (int)kind);
        return NULL;
    }
    if (ndim < 0 || ndim > VEIL_MAX_DIMS || (ndim > 0 && !dims)) {
        veil_error(VEIL_ERR_INVAL, "share: %d dimensions; use 0 to %d", ndim, VEIL_MAX_DIMS);
        return NULL;
    }
    size_t numel = 1;
    for (int i = 0; i < ndim; i++) {
        if (dims[i] == 0) {
            veil_error(VEIL_ERR_SHAPE, "share: dimension %d is 0", i);
            return NULL;
        }
        if (numel > SIZE_MAX / 8 / dims[i]) {
            veil_error(VEIL_ERR_RANGE, "share: shape too large (dimension %d)", i);
            return NULL;
        }
        numel *= dims[i];
    }
    veil_share_t *s = calloc(1, sizeof *s);
    if (!s) {
        veil_error(VEIL_ERR_NOMEM, "share: out of memory");
        return NULL;
    }
    s->kind = kind;
    s->ndim = ndim;
    for (int i = 0; i < ndim; i++)
        s->dims[i] = dims[i];
    s->numel = numel;
    s->data = veil_aligned_alloc(numel * 8);
    if (!s->data) {
        free(s);
        return NULL;
    }
    veil_secmem_dontdump(s->data, numel * 8);
    memset(s->data, 0, numel * 8);
    return s;
}

void veil_share_destroy(veil_share_t **s)
{
    if (!s || !*s)
        return;
    veil_wipe((*s)->data, (*s)->numel * 8);
    veil_aligned_free((*s)->data);
    free(*s);
    *s = NULL;
}

enum veil_share_kind veil_share_kind(const veil_share_t *s)
{
    return s->kind;
}

int veil_share_ndim(const veil_share_t *s)
{
    return s->ndim;
}

size_t veil_share_dim(const veil_share_t *s, int i)
{
    return (i >= 0 && i < s->ndim) ? s->dims[i] : 0;
}

size_t veil_share_numel(const veil_share_t *s)
{
    return s->numel;
}

uint64_t *veil_share_data(veil_share_t *s)
{
    return s->data;
}

const uint64_t *veil_share_cdata(const veil_share_t *s)
{
    return s->data;
}

int veil_share_same_shape(const veil_share_t *a, const veil_share_t *b)
{
    if (a->kind != b->kind || a->ndim != b->ndim)
        return 0;
    for (int i = 0; i < a->ndim; i++)
        if (a->dims[i] != b->dims[i])
            return 0;
    return 1;
}

int veil_share_expand(veil_share_t *s, const uint8_t seed[VEIL_SEED_BYTES], uint64_t offset)
{
    if (!s || !seed)
        return veil_error(VEIL_ERR_INVAL, "share expand: NULL argument");
    veil_prg_t *prg = veil_prg_new(seed);
    if (!prg)
        return VEIL_ERR_CRYPTO;
    int rc = veil_prg_seek(prg, offset);
    if (rc == VEIL_OK)
        rc = veil_prg_fill(prg, s->data, s->numel);
    veil_prg_destroy(&prg);
    return rc;
}

/* acc = acc (+ or ^) src over n words, per the share kind. */
static void combine(enum veil_share_kind kind, uint64_t *acc, const uint64_t *src, size_t n)
{
    if (kind == VEIL_SHARE_ARITH)
        for (size_t i = 0; i < n; i++)
            acc[i] += src[i];
    else
        for (size_t i = 0; i < n; i++)
            acc[i] ^= src[i];
}

int veil_share_split(const uint64_t *secret, enum veil_share_kind kind, int ndim,
                     const size_t *dims, int nparties,
                     const uint8_t (*seeds)[VEIL_SEED_BYTES], uint64_t offset,
                     veil_share_t **shares_out)
{
    if (nparties < 2 || !shares_out || !seeds)
        return veil_error(VEIL_ERR_INVAL, "share split: need at least 2 parties, seeds and outputs"
                                          " (got %d parties)", nparties);
    for (int p = 0; p < nparties; p++)
        shares_out[p] = NULL;
    int rc = VEIL_OK;
    for (int p = 0; p < nparties; p++) {
        shares_out[p] = veil_share_new(kind, ndim, dims);
        if (!shares_out[p]) {
            rc = VEIL_ERR_NOMEM;
            goto fail;
        }
    }
    size_t n = shares_out[0]->numel;
    if (n && !secret) {
        rc = veil_error(VEIL_ERR_INVAL, "share split: NULL secret");
        goto fail;
    }
    uint64_t *last = shares_out[nparties - 1]->data;
    memset(last, 0, n * 8);
    for (int p = 0; p < nparties - 1; p++) {
        rc = veil_share_expand(shares_out[p], seeds[p], offset);
        if (rc != VEIL_OK)
            goto fail;
        combine(kind, last, shares_out[p]->data, n);
    }
    /* last = secret - sum(others), or secret ^ xor(others). */
    if (kind == VEIL_SHARE_ARITH)
        for (size_t i = 0; i < n; i++)
            last[i] = secret[i] - last[i];
    else
        for (size_t i = 0; i < n; i++)
            last[i] ^= secret[i];
    return VEIL_OK;
fail:
    for (int p = 0; p < nparties; p++)
        veil_share_destroy(&shares_out[p]);
    return rc;
}

int veil_share_reconstruct(const veil_share_t *const *shares, int nparties, uint64_t *out)
{
    if (nparties < 1 || !shares || !out)
        return veil_error(VEIL_ERR_INVAL, "share reconstruct: NULL argument or no parties");
    for (int p = 0; p < nparties; p++) {
        if (!shares[p])
            return veil_error(VEIL_ERR_INVAL, "share reconstruct: share %d is NULL", p);
        if (!veil_share_same_shape(shares[0], shares[p]))
            return veil_error(VEIL_ERR_SHAPE,
                              "share reconstruct: share %d differs in kind or shape from share 0",
                              p);
    }
    size_t n = shares[0]->numel;
    memcpy(out, shares[0]->data, n * 8);
    for (int p = 1; p < nparties; p++)
        combine(shares[0]->kind, out, shares[p]->data, n);
    return VEIL_OK;
}

/*
 * preproc_item_make.c — the preprocessing items' constructors (every unused parameter 0, no
 * validation: veil_preproc_item_describe in preproc_item.c does it), the bit-sliced block count
 * of the comparison kinds, and the weight id of the weight-stationary kinds. The contract is
 * preproc.h.
 */
#include "config.h"
#include "tasks/preproc.h"

#include <string.h>

static struct veil_preproc_item make_item(enum veil_preproc_kind kind, uint64_t index)
{
    struct veil_preproc_item it;
    memset(&it, 0, sizeof it);
    it.kind = kind;
    it.index = index;
    return it;
}

/* An item of a kind whose only parameter is its count (VEIL_PRE_N). */
static struct veil_preproc_item make_n(enum veil_preproc_kind kind, uint64_t index, uint64_t n)
{
    struct veil_preproc_item it = make_item(kind, index);
    it.p[VEIL_PRE_N] = n;
    return it;
}

struct veil_preproc_item veil_preproc_item_beaver(uint64_t index, uint64_t n)
{
    return make_n(VEIL_PREPROC_BEAVER, index, n);
}

struct veil_preproc_item veil_preproc_item_matmul(uint64_t index, uint64_t m, uint64_t k,
                                                  uint64_t n)
{
    struct veil_preproc_item it = make_item(VEIL_PREPROC_MATMUL, index);
    it.p[VEIL_PRE_MATMUL_M] = m;
    it.p[VEIL_PRE_MATMUL_K] = k;
    it.p[VEIL_PRE_MATMUL_N] = n;
    return it;
}

struct veil_preproc_item veil_preproc_item_conv(uint64_t index, uint64_t batch, uint64_t c,
                                                uint64_t h, uint64_t w, uint64_t oc, uint64_t kh,
                                                uint64_t kw, uint64_t stride, uint64_t pad)
{
    struct veil_preproc_item it = make_item(VEIL_PREPROC_CONV, index);
    it.p[VEIL_PRE_CONV_BATCH] = batch;
    it.p[VEIL_PRE_CONV_C] = c;
    it.p[VEIL_PRE_CONV_H] = h;
    it.p[VEIL_PRE_CONV_W] = w;
    it.p[VEIL_PRE_CONV_OC] = oc;
    it.p[VEIL_PRE_CONV_KH] = kh;
    it.p[VEIL_PRE_CONV_KW] = kw;
    it.p[VEIL_PRE_CONV_SH] = stride;
    it.p[VEIL_PRE_CONV_SW] = stride;
    it.p[VEIL_PRE_CONV_PH] = pad;
    it.p[VEIL_PRE_CONV_PW] = pad;
    return it;
}

struct veil_preproc_item veil_preproc_item_square(uint64_t index, uint64_t n)
{
    return make_n(VEIL_PREPROC_SQUARE, index, n);
}

struct veil_preproc_item veil_preproc_item_and(uint64_t index, uint64_t nwords)
{
    return make_n(VEIL_PREPROC_AND, index, nwords);
}

struct veil_preproc_item veil_preproc_item_trunc(uint64_t index, uint64_t n, uint64_t frac_bits)
{
    struct veil_preproc_item it = make_n(VEIL_PREPROC_TRUNC, index, n);
    it.p[VEIL_PRE_TRUNC_BITS] = frac_bits;
    return it;
}

struct veil_preproc_item veil_preproc_item_bit(uint64_t index, uint64_t n)
{
    return make_n(VEIL_PREPROC_BIT, index, n);
}

struct veil_preproc_item veil_preproc_item_cmpmask(uint64_t index, uint64_t n)
{
    return make_n(VEIL_PREPROC_CMPMASK, index, n);
}

struct veil_preproc_item veil_preproc_item_carry4(uint64_t index, uint64_t nrecords)
{
    return make_n(VEIL_PREPROC_CARRY4, index, nrecords);
}

struct veil_preproc_item veil_preproc_item_cmpprod(uint64_t index, uint64_t n, uint64_t tile,
                                                   uint64_t mask_index)
{
    struct veil_preproc_item it = make_n(VEIL_PREPROC_CMPPROD, index, n);
    it.p[VEIL_PRE_CMPPROD_TILE] = tile;
    it.p[VEIL_PRE_CMPPROD_MASK] = mask_index;
    return it;
}

struct veil_preproc_item veil_preproc_item_rbeta(uint64_t index, uint64_t n, uint64_t mask_index,
                                                 uint64_t bit_index)
{
    struct veil_preproc_item it = make_n(VEIL_PREPROC_RBETA, index, n);
    it.p[VEIL_PRE_RBETA_MASK] = mask_index;
    it.p[VEIL_PRE_RBETA_BIT] = bit_index;
    return it;
}

struct veil_preproc_item veil_preproc_item_cmptrunc(uint64_t index, uint64_t n, uint64_t mask_index,
                                                    uint64_t bit_index, uint64_t frac_bits)
{
    struct veil_preproc_item it = veil_preproc_item_rbeta(index, n, mask_index, bit_index);
    it.kind = VEIL_PREPROC_CMPTRUNC;
    it.p[VEIL_PRE_CMPTRUNC_BITS] = frac_bits;
    return it;
}

struct veil_preproc_item veil_preproc_item_prodk(uint64_t index, uint64_t nrecords, uint64_t k)
{
    struct veil_preproc_item it = make_n(VEIL_PREPROC_PRODK, index, nrecords);
    it.p[VEIL_PRE_PRODK_K] = k;
    return it;
}

uint64_t veil_preproc_sliced_blocks(uint64_t n, uint64_t tile)
{
    if (n == 0 || tile == 0)
        return 0;
    return n / tile * ((tile + 63) / 64) + (n % tile + 63) / 64;
}

struct veil_preproc_item veil_preproc_item_matmul_ws(uint64_t index, uint64_t m, uint64_t k,
                                                     uint64_t n, uint64_t wid)
{
    struct veil_preproc_item it = veil_preproc_item_matmul(index, m, k, n);
    it.kind = VEIL_PREPROC_MATMUL_WS;
    it.p[VEIL_PRE_MATMUL_WID] = wid;
    return it;
}

struct veil_preproc_item veil_preproc_item_conv_ws(uint64_t index, uint64_t batch, uint64_t c,
                                                   uint64_t h, uint64_t w, uint64_t oc, uint64_t kh,
                                                   uint64_t kw, uint64_t stride, uint64_t pad,
                                                   uint64_t wid)
{
    struct veil_preproc_item it =
        veil_preproc_item_conv(index, batch, c, h, w, oc, kh, kw, stride, pad);
    it.kind = VEIL_PREPROC_CONV_WS;
    it.p[VEIL_PRE_CONV_WID] = wid;
    return it;
}

int veil_preproc_item_wid(const struct veil_preproc_item *item, uint64_t *wid)
{
    if (!item)
        return 0;
    if (item->kind == VEIL_PREPROC_MATMUL_WS || item->kind == VEIL_PREPROC_CONV_WS) {
        if (wid)
            *wid = item->p[item->kind == VEIL_PREPROC_MATMUL_WS ? VEIL_PRE_MATMUL_WID
                                                                : VEIL_PRE_CONV_WID];
        return 1;
    }
    return 0;
}

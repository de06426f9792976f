/*
 * preproc_gen.c — correlated randomness from seeds: the dealer's correction for each item kind (it
 * reconstructs the random values from every party's stream and folds the correlated value into
 * the designated party's share), and each party's local expansion of its share. What an item is
 * and its parts are preproc_item.c; the streams are preproc_streams.c, their layout the contract
 * documented in preproc.h.
 */
#include "config.h"
#include "base/base_internal.h"
#include "codelets/gemm_internal.h"
#include "codelets/bits_common.h"
#include "codelets/reference.h"
#include "tasks/carry4_common.h"
#include "tasks/prodk_common.h"
#include "tasks/preproc.h"
#include "tasks/preproc_streams.h"

#include <string.h>

/* Elements per chunk when the dealer walks an elementwise item (bounded temporaries). */
#define CHUNK 4096

/* The seed of the stream part j of item is read from (its weight stream or its own stream), and
 * the part's first word in that stream. */
static int part_stream_seed(const struct veil_preproc_layout *layout,
                            const struct veil_preproc_item *item,
                            const struct veil_preproc_desc *desc, int j,
                            const uint8_t seed[VEIL_SEED_BYTES], uint8_t out[VEIL_SEED_BYTES],
                            size_t *first)
{
    uint64_t wid = 0;
    if (desc->part[j].weight && veil_preproc_item_wid(item, &wid)) {
        *first = 0;
        return veil_preproc_weight_seed(layout, wid, seed, out);
    }
    *first = desc->part[j].offset;
    return veil_preproc_item_seed(layout, item, seed, out);
}

/* ------------------------------------------------------------------------------------------ */
/* Dealer                                                                                      */

/* Elementwise kinds: walk the item in chunks; t0/t1 hold the reconstructed PRG secrets. */
static int dealer_elementwise(struct veil_preproc_streams *s, int d,
                              const struct veil_preproc_item *item,
                              const struct veil_preproc_desc *desc, uint64_t *out)
{
    const size_t n = (size_t)item->p[VEIL_PRE_N];
    uint64_t *t0 = veil_aligned_alloc(2 * CHUNK * sizeof(uint64_t)), *t1 = t0 + CHUNK;
    if (!t0)
        return veil_error(VEIL_ERR_NOMEM, "preproc dealer: out of memory");
    const enum veil_share_kind A = VEIL_SHARE_ARITH, B = VEIL_SHARE_BINARY;
    int rc = VEIL_OK;
    for (size_t s0 = 0; s0 < n && rc == VEIL_OK; s0 += CHUNK) {
        size_t len = n - s0 < CHUNK ? n - s0 : CHUNK;
        uint64_t *o = out + s0, *o2 = out + n + s0;
        switch (item->kind) {
        case VEIL_PREPROC_BEAVER:
        case VEIL_PREPROC_AND: {
            enum veil_share_kind f = item->kind == VEIL_PREPROC_AND ? B : A;
            rc = veil_preproc_streams_fold(s, -1, desc->part[0].offset + s0, len, f, VEIL_FOLD_SET,
                                           t0);
            if (rc == VEIL_OK)
                rc = veil_preproc_streams_fold(s, -1, desc->part[1].offset + s0, len, f,
                                               VEIL_FOLD_SET, t1);
            if (f == A)
                for (size_t i = 0; i < len; i++)
                    o[i] = t0[i] * t1[i];
            else
                for (size_t i = 0; i < len; i++)
                    o[i] = t0[i] & t1[i];
            if (rc == VEIL_OK)
                rc = veil_preproc_streams_fold(s, d, desc->part[2].offset + s0, len, f,
                                               VEIL_FOLD_SUB, o);
            break;
        }
        case VEIL_PREPROC_SQUARE:
            rc = veil_preproc_streams_fold(s, -1, desc->part[0].offset + s0, len, A, VEIL_FOLD_SET,
                                           t0);
            for (size_t i = 0; i < len; i++)
                o[i] = t0[i] * t0[i];
            if (rc == VEIL_OK)
                rc = veil_preproc_streams_fold(s, d, desc->part[1].offset + s0, len, A,
                                               VEIL_FOLD_SUB, o);
            break;
        case VEIL_PREPROC_TRUNC: {
            const unsigned f = (unsigned)item->p[VEIL_PRE_TRUNC_BITS];
            rc = veil_preproc_streams_fold(s, -1, desc->part[0].offset + s0, len, A, VEIL_FOLD_SET,
                                           t0);
            for (size_t i = 0; i < len; i++) {
                o[i] = t0[i] >> f;
                o2[i] = t0[i] >> 63;
            }
            if (rc == VEIL_OK)
                rc = veil_preproc_streams_fold(s, d, desc->part[1].offset + s0, len, A,
                                               VEIL_FOLD_SUB, o);
            if (rc == VEIL_OK)
                rc = veil_preproc_streams_fold(s, d, desc->part[2].offset + s0, len, A,
                                               VEIL_FOLD_SUB, o2);
            break;
        }
        case VEIL_PREPROC_CMPMASK:
            rc = veil_preproc_streams_fold(s, -1, desc->part[0].offset + s0, len, A, VEIL_FOLD_SET,
                                           t0);
            for (size_t i = 0; i < len; i++) {
                o[i] = t0[i];
                o2[i] = t0[i] >> 63;
            }
            if (rc == VEIL_OK)
                rc = veil_preproc_streams_fold(s, d, desc->part[1].offset + s0, len, B,
                                               VEIL_FOLD_SUB, o);
            if (rc == VEIL_OK)
                rc = veil_preproc_streams_fold(s, d, desc->part[2].offset + s0, len, A,
                                               VEIL_FOLD_SUB, o2);
            break;
        case VEIL_PREPROC_BIT: {
            /* CHUNK is a multiple of 64, so chunk s0 starts at packed word s0 / 64. */
            size_t pw = (len + 63) / 64;
            rc = veil_preproc_streams_fold(s, -1, desc->part[1].offset + s0 / 64, pw, B,
                                           VEIL_FOLD_SET, t0);
            for (size_t i = 0; i < len; i++)
                o[i] = (t0[i / 64] >> (i % 64)) & 1;
            if (rc == VEIL_OK)
                rc = veil_preproc_streams_fold(s, d, desc->part[0].offset + s0, len, A,
                                               VEIL_FOLD_SUB, o);
            break;
        }
        default:
            rc = veil_error(VEIL_ERR_INVAL, "preproc dealer: kind %d is not elementwise",
                            (int)item->kind);
        }
    }
    veil_wipe(t0, 2 * CHUNK * sizeof(uint64_t));
    veil_aligned_free(t0);
    return rc;
}

/* v[u] = the AND (binary) or ring product (arithmetic) of x[i] over the bits i of u, for every
 * u < 2^k (v[0] the identity): one operation per subset. */
static void subset_products(const uint64_t *x, size_t k, int binary, uint64_t *v)
{
    v[0] = binary ? ~UINT64_C(0) : 1;
    for (size_t i = 0; i < k; i++)
        for (size_t u = 0; u < ((size_t)1 << i); u++)
            v[u | (size_t)1 << i] = binary ? v[u] & x[i] : v[u] * x[i];
}

/* The subsets of 2 or more of k positions in ascending order (veil_prodk_row's order), into
 * sets; returns their count, veil_prodk_nprods(k). */
static size_t prodk_sets(unsigned k, uint8_t *sets)
{
    size_t n = 0;
    for (unsigned t = 3; t < (1u << k); t++)
        if (t & (t - 1))
            sets[n++] = (uint8_t)t;
    return n;
}

/*
 * CARRY4 and PRODK: records of k masks (part 0, PRG) and of nsets products (part 1, corrected):
 * per record the masks are rebuilt from every party's stream, then product r is the AND
 * (binary) or ring product (arithmetic) of the masks in set sets[r] (bit i = mask i).
 */
static int dealer_mask_products(struct veil_preproc_streams *s, int d,
                                const struct veil_preproc_item *item,
                                const struct veil_preproc_desc *desc, size_t k, const uint8_t *sets,
                                size_t nsets, uint64_t *out)
{
    const enum veil_share_kind form = desc->part[0].form;
    const size_t n = (size_t)item->p[VEIL_PRE_N], chunk = CHUNK / k;
    uint64_t *a = veil_aligned_alloc(chunk * k * sizeof(uint64_t));
    if (!a)
        return veil_error(VEIL_ERR_NOMEM, "preproc dealer: out of memory");
    uint64_t v[1u << VEIL_C4_INPUTS]; /* k <= 7 */
    int rc = VEIL_OK;
    for (size_t s0 = 0; s0 < n && rc == VEIL_OK; s0 += chunk) {
        const size_t len = n - s0 < chunk ? n - s0 : chunk;
        uint64_t *o = out + s0 * nsets;
        rc = veil_preproc_streams_fold(s, -1, desc->part[0].offset + s0 * k, len * k, form,
                                       VEIL_FOLD_SET, a);
        for (size_t w = 0; rc == VEIL_OK && w < len; w++) {
            subset_products(a + w * k, k, form == VEIL_SHARE_BINARY, v);
            for (size_t r = 0; r < nsets; r++)
                o[w * nsets + r] = v[sets[r]];
        }
        if (rc == VEIL_OK)
            rc = veil_preproc_streams_fold(s, d, desc->part[1].offset + s0 * nsets, len * nsets,
                                           form, VEIL_FOLD_SUB, o);
    }
    veil_wipe(a, chunk * k * sizeof(uint64_t));
    veil_wipe(v, sizeof v);
    veil_aligned_free(a);
    return rc;
}

/* CARRY4's 22 sets over its 7 inputs; PRODK's every subset of 2 or more of its k factors, in
 * veil_prodk_row's order (ascending). */
static int dealer_products(struct veil_preproc_streams *s, int d,
                           const struct veil_preproc_item *item,
                           const struct veil_preproc_desc *desc, uint64_t *out)
{
    static const uint8_t c4[VEIL_C4_PRODS] = VEIL_C4_PROD_SETS;
    if (item->kind == VEIL_PREPROC_CARRY4)
        return dealer_mask_products(s, d, item, desc, VEIL_C4_INPUTS, c4, VEIL_C4_PRODS, out);
    const unsigned k = (unsigned)item->p[VEIL_PRE_PRODK_K];
    uint8_t sets[1u << VEIL_PRODK_MAX];
    const size_t nsets = prodk_sets(k, sets);
    return dealer_mask_products(s, d, item, desc, k, sets, nsets, out);
}

/* CMPPROD: the mask r of CMPMASK item #k rebuilt block by block from every party's stream of that
 * item, bit-sliced, and the AND of each group's bit sets (preproc.h, carry4_common.h). */
static int dealer_cmpprod(const struct veil_preproc_layout *layout, struct veil_preproc_streams *s,
                          int d, const struct veil_preproc_item *item,
                          const uint8_t (*seeds)[VEIL_SEED_BYTES], uint64_t *out)
{
    const uint64_t n = item->p[VEIL_PRE_N], tile = item->p[VEIL_PRE_CMPPROD_TILE];
    const struct veil_preproc_item mask =
        veil_preproc_item_cmpmask(item->p[VEIL_PRE_CMPPROD_MASK], n);
    struct veil_preproc_streams ms;
    int rc = veil_preproc_streams_open(&ms, layout, &mask, seeds, 0);
    if (rc != VEIL_OK)
        return rc;
    uint64_t rt[64], v[1u << VEIL_C4_FANIN];
    uint8_t sets[VEIL_C4_LEAF_PRODS]; /* a group's sets of 2 or more of its 4 bits */
    prodk_sets(VEIL_C4_FANIN, sets);
    size_t w = 0;
    for (uint64_t t0 = 0; t0 < n && rc == VEIL_OK; t0 += tile) {
        const uint64_t tend = n - t0 < tile ? n : t0 + tile;
        for (uint64_t e0 = t0; e0 < tend && rc == VEIL_OK; e0 += 64, w++) {
            const size_t cnt = tend - e0 < 64 ? (size_t)(tend - e0) : 64;
            memset(rt, 0, sizeof rt);
            /* CMPMASK's r is its part 0, words [0, n) of its stream */
            rc = veil_preproc_streams_fold(&ms, -1, e0, cnt, VEIL_SHARE_ARITH, VEIL_FOLD_SET, rt);
            veil_transpose64(rt); /* rt[i]: bit i of the block's 64 elements */
            uint64_t *o = out + w * VEIL_C4_LEAF_WORDS;
            for (int j = 0; j < VEIL_C4_LEAF_GROUPS; j++) {
                subset_products(rt + 4 * j, VEIL_C4_FANIN, 1, v);
                for (int r = 0; r < VEIL_C4_LEAF_PRODS; r++)
                    o[j * VEIL_C4_LEAF_PRODS + r] = v[sets[r]];
            }
        }
    }
    veil_wipe(rt, sizeof rt);
    veil_wipe(v, sizeof v);
    veil_preproc_streams_close(&ms);
    if (rc == VEIL_OK)
        rc = veil_preproc_streams_fold(s, d, 0, w * VEIL_C4_LEAF_WORDS, VEIL_SHARE_BINARY,
                                       VEIL_FOLD_SUB, out);
    return rc;
}

/* RBETA and CMPTRUNC: r of CMPMASK item #k (its part 0) and the bits b of BIT item #j (the XOR of
 * every party's packed part), rebuilt chunk by chunk from their own streams; the correction folds
 * r b (RBETA), or r >> f, (r >> f) b and (r >> 63) b (CMPTRUNC), into the designated party's
 * share. */
static int dealer_mask_bit(const struct veil_preproc_layout *layout, struct veil_preproc_streams *s,
                           int d, const struct veil_preproc_item *item,
                           const uint8_t (*seeds)[VEIL_SEED_BYTES], uint64_t *out)
{
    const uint64_t n = item->p[VEIL_PRE_N];
    const int trunc = item->kind == VEIL_PREPROC_CMPTRUNC;
    const unsigned f = trunc ? (unsigned)item->p[VEIL_PRE_CMPTRUNC_BITS] : 0;
    const struct veil_preproc_item mask =
                                       veil_preproc_item_cmpmask(item->p[VEIL_PRE_RBETA_MASK], n),
                                   bit = veil_preproc_item_bit(item->p[VEIL_PRE_RBETA_BIT], n);
    struct veil_preproc_desc md, bd;
    struct veil_preproc_streams ms, bs;
    int rc = veil_preproc_item_describe(&mask, &md);
    if (rc == VEIL_OK)
        rc = veil_preproc_item_describe(&bit, &bd);
    if (rc != VEIL_OK)
        return rc;
    uint64_t *r = veil_aligned_alloc((CHUNK + CHUNK / 64) * sizeof(uint64_t)), *b = r + CHUNK;
    if (!r)
        return veil_error(VEIL_ERR_NOMEM, "preproc dealer: out of memory");
    memset(&bs, 0, sizeof bs);
    rc = veil_preproc_streams_open(&ms, layout, &mask, seeds, 0);
    if (rc == VEIL_OK)
        rc = veil_preproc_streams_open(&bs, layout, &bit, seeds, 0);
    /* CHUNK is a multiple of 64, so chunk s0 starts at packed word s0 / 64 */
    for (uint64_t s0 = 0; rc == VEIL_OK && s0 < n; s0 += CHUNK) {
        const size_t len = n - s0 < CHUNK ? (size_t)(n - s0) : CHUNK;
        rc = veil_preproc_streams_fold(&ms, -1, md.part[VEIL_PRE_CM_R].offset + s0, len,
                                       VEIL_SHARE_ARITH, VEIL_FOLD_SET, r);
        if (rc == VEIL_OK)
            rc = veil_preproc_streams_fold(&bs, -1, bd.part[VEIL_PRE_BIT_B].offset + s0 / 64,
                                           (len + 63) / 64, VEIL_SHARE_BINARY, VEIL_FOLD_SET, b);
        for (size_t i = 0; rc == VEIL_OK && i < len; i++) {
            const uint64_t bi = b[i / 64] >> (i % 64) & 1;
            if (!trunc) {
                out[s0 + i] = r[i] * bi;
                continue;
            }
            out[s0 + i] = r[i] >> f;
            out[n + s0 + i] = (r[i] >> f) * bi;
            out[2 * n + s0 + i] = (r[i] >> 63) * bi;
        }
    }
    veil_preproc_streams_close(&ms); /* safe after a failed open: it closed what it opened */
    veil_preproc_streams_close(&bs);
    veil_wipe(r, (CHUNK + CHUNK / 64) * sizeof(uint64_t));
    veil_aligned_free(r);
    if (rc == VEIL_OK)
        rc = veil_preproc_streams_fold(s, d, 0, (size_t)n * (trunc ? 3 : 1), VEIL_SHARE_ARITH,
                                       VEIL_FOLD_SUB, out);
    return rc;
}

/* MATMUL and CONV (and their _WS forms, whose B comes from the weight streams ws): reconstruct
 * both operands in full, multiply with the ring GEMM. */
static int dealer_linear(struct veil_preproc_streams *s, struct veil_preproc_streams *ws, int d,
                         const struct veil_preproc_item *item, const struct veil_preproc_desc *desc,
                         uint64_t *out)
{
    const uint64_t *p = item->p;
    const int is_conv = item->kind == VEIL_PREPROC_CONV || item->kind == VEIL_PREPROC_CONV_WS;
    size_t na = desc->part[0].numel, nb = desc->part[1].numel, ncol = 0, oh = 0, ow = 0;
    if (is_conv) {
        uint64_t h, w;
        veil_preproc_conv_out(p, &h, &w); /* validated by describe */
        oh = (size_t)h;
        ow = (size_t)w;
        ncol = (size_t)(p[VEIL_PRE_CONV_C] * p[VEIL_PRE_CONV_KH] * p[VEIL_PRE_CONV_KW]) * oh * ow;
    }
    size_t total = na + nb + ncol;
    uint64_t *a = veil_aligned_alloc(total * sizeof(uint64_t)), *b = a + na, *col = b + nb;
    if (!a)
        return veil_error(VEIL_ERR_NOMEM, "preproc dealer: out of memory for %zu words", total);
    int rc = veil_preproc_streams_fold(s, -1, desc->part[0].offset, na, VEIL_SHARE_ARITH,
                                       VEIL_FOLD_SET, a);
    if (rc == VEIL_OK && desc->part[1].weight)
        rc = veil_preproc_streams_fold(ws, -1, 0, nb, VEIL_SHARE_ARITH, VEIL_FOLD_SET, b);
    else if (rc == VEIL_OK)
        rc = veil_preproc_streams_fold(s, -1, desc->part[1].offset, nb, VEIL_SHARE_ARITH,
                                       VEIL_FOLD_SET, b);
    if (rc == VEIL_OK && !is_conv) {
        /* C (m x n) = A (m x k) . B (k x n) */
        const size_t m = (size_t)p[VEIL_PRE_MATMUL_M], k = (size_t)p[VEIL_PRE_MATMUL_K],
                     n = (size_t)p[VEIL_PRE_MATMUL_N];
        veil_gemm_u64(0, 0, m, n, k, a, k, b, n, 0, out, n);
    } else if (rc == VEIL_OK) {
        const size_t C = p[VEIL_PRE_CONV_C], HW = p[VEIL_PRE_CONV_H] * p[VEIL_PRE_CONV_W];
        const size_t OC = p[VEIL_PRE_CONV_OC];
        const size_t ck = C * p[VEIL_PRE_CONV_KH] * p[VEIL_PRE_CONV_KW];
        /* one image at a time (n = 1) bounds the im2col buffer; dims fit: describe checks */
        const struct veil_im2col_geom g = {1,
                                           (uint32_t)C,
                                           (uint32_t)p[VEIL_PRE_CONV_H],
                                           (uint32_t)p[VEIL_PRE_CONV_W],
                                           (uint32_t)p[VEIL_PRE_CONV_KH],
                                           (uint32_t)p[VEIL_PRE_CONV_KW],
                                           (uint32_t)p[VEIL_PRE_CONV_SH],
                                           (uint32_t)p[VEIL_PRE_CONV_SW],
                                           (uint32_t)p[VEIL_PRE_CONV_PH],
                                           (uint32_t)p[VEIL_PRE_CONV_PW]};
        for (size_t img = 0; img < p[VEIL_PRE_CONV_BATCH]; img++) {
            veil_ref_im2col(&g, a + img * C * HW, col);
            /* Y_img (OC x OH*OW) = W (OC x C*KH*KW) . col */
            veil_gemm_u64(0, 0, OC, oh * ow, ck, b, ck, col, oh * ow, 0, out + img * OC * oh * ow,
                          oh * ow);
        }
    }
    if (rc == VEIL_OK)
        rc = veil_preproc_streams_fold(s, d, desc->part[2].offset, desc->part[2].numel,
                                       VEIL_SHARE_ARITH, VEIL_FOLD_SUB, out);
    veil_wipe(a, total * sizeof(uint64_t));
    veil_aligned_free(a);
    return rc;
}

int veil_preproc_dealer_correction(const struct veil_preproc_layout *layout,
                                   const struct veil_preproc_item *item,
                                   const uint8_t (*seeds)[VEIL_SEED_BYTES], uint64_t *out,
                                   size_t out_words)
{
    struct veil_preproc_desc desc;
    struct veil_preproc_streams s, ws;
    int rc = veil_preproc_layout_check(layout);
    if (rc != VEIL_OK)
        return rc;
    if (!seeds || !out)
        return veil_error(VEIL_ERR_INVAL, "preproc dealer: NULL seeds or output");
    rc = veil_preproc_item_describe(item, &desc);
    if (rc != VEIL_OK)
        return rc;
    if (out_words < desc.correction_words)
        return veil_error(VEIL_ERR_RANGE,
                          "preproc dealer: item needs %zu correction words, the "
                          "buffer has %zu",
                          desc.correction_words, out_words);
    const int weight = veil_preproc_item_wid(item, NULL);
    rc = veil_preproc_streams_open(&s, layout, item, seeds, 0);
    if (rc != VEIL_OK)
        return rc;
    memset(&ws, 0, sizeof ws);
    if (weight && (rc = veil_preproc_streams_open(&ws, layout, item, seeds, 1)) != VEIL_OK) {
        veil_preproc_streams_close(&s);
        return rc;
    }
    if (item->kind == VEIL_PREPROC_MATMUL || item->kind == VEIL_PREPROC_CONV || weight)
        rc = dealer_linear(&s, &ws, layout->designated, item, &desc, out);
    else if (item->kind == VEIL_PREPROC_CARRY4 || item->kind == VEIL_PREPROC_PRODK)
        rc = dealer_products(&s, layout->designated, item, &desc, out);
    else if (item->kind == VEIL_PREPROC_CMPPROD)
        rc = dealer_cmpprod(layout, &s, layout->designated, item, seeds, out);
    else if (item->kind == VEIL_PREPROC_RBETA || item->kind == VEIL_PREPROC_CMPTRUNC)
        rc = dealer_mask_bit(layout, &s, layout->designated, item, seeds, out);
    else
        rc = dealer_elementwise(&s, layout->designated, item, &desc, out);
    veil_preproc_streams_close(&s);
    veil_preproc_streams_close(&ws);
    if (rc != VEIL_OK)
        veil_wipe(out, desc.correction_words * sizeof *out);
    return rc;
}

/* ------------------------------------------------------------------------------------------ */
/* Party                                                                                       */

int veil_preproc_party_expand(const struct veil_preproc_layout *layout,
                              const struct veil_preproc_item *item, int party,
                              const uint8_t seed[VEIL_SEED_BYTES], const uint64_t *correction,
                              struct veil_preproc_share *out)
{
    if (!out)
        return veil_error(VEIL_ERR_INVAL, "preproc expand: NULL output");
    veil_preproc_share_clear(out);
    int rc = veil_preproc_share_init(out, item);
    if (rc == VEIL_OK)
        rc = veil_preproc_party_fill(layout, item, party, seed, correction, out);
    if (rc != VEIL_OK)
        veil_preproc_share_clear(out);
    return rc;
}

int veil_preproc_party_fill(const struct veil_preproc_layout *layout,
                            const struct veil_preproc_item *item, int party,
                            const uint8_t seed[VEIL_SEED_BYTES], const uint64_t *correction,
                            struct veil_preproc_share *out)
{
    struct veil_preproc_desc desc;
    uint8_t child[VEIL_SEED_BYTES];
    veil_prg_t *prg = NULL;
    if (!out || !out->words)
        return veil_error(VEIL_ERR_INVAL, "preproc fill: share not initialised");
    int rc = veil_preproc_layout_check(layout);
    if (rc != VEIL_OK)
        return rc;
    if (party < 0 || party >= layout->nparties || !seed)
        return veil_error(VEIL_ERR_INVAL, "preproc expand: party %d not in [0, %d) or NULL seed",
                          party, layout->nparties);
    if ((party == layout->designated) != (correction != NULL))
        return veil_error(VEIL_ERR_INVAL,
                          "preproc expand: party %d %s a correction (the "
                          "designated party is %d)",
                          party, correction ? "must not get" : "needs", layout->designated);
    rc = veil_preproc_item_describe(item, &desc);
    if (rc != VEIL_OK)
        return rc;
    if (desc.share_words != out->nwords || memcmp(&out->item, item, sizeof *item) != 0)
        return veil_error(VEIL_ERR_INVAL, "preproc fill: share was initialised for another item");
    rc = veil_preproc_item_seed(layout, item, seed, child);
    if (rc != VEIL_OK)
        return rc;
    prg = veil_prg_new(child);
    veil_wipe(child, sizeof child);
    if (!prg)
        return VEIL_ERR_CRYPTO;
    size_t corr_off = 0;
    for (int j = 0; j < desc.nparts; j++) {
        uint64_t *dst = out->part[j];
        size_t n = desc.part[j].numel;
        if (desc.part[j].corrected && correction) {
            memcpy(dst, correction + corr_off, n * sizeof *dst);
        } else if (desc.part[j].weight) {
            rc = veil_preproc_part_fill(layout, item, party, seed, j, 0, n, NULL, dst);
            if (rc != VEIL_OK)
                break;
        } else {
            rc = veil_prg_seek(prg, desc.part[j].offset);
            if (rc == VEIL_OK)
                rc = veil_prg_fill(prg, dst, n);
            if (rc != VEIL_OK)
                break;
        }
        if (desc.part[j].corrected)
            corr_off += n;
    }
    if (rc == VEIL_OK && item->kind == VEIL_PREPROC_BIT && item->p[VEIL_PRE_N] % 64)
        out->part[VEIL_PRE_BIT_B][out->part_numel[VEIL_PRE_BIT_B] - 1] &=
            (UINT64_C(1) << (item->p[VEIL_PRE_N] % 64)) - 1;
    veil_prg_destroy(&prg);
    return rc;
}

int veil_preproc_part_fill(const struct veil_preproc_layout *layout,
                           const struct veil_preproc_item *item, int party,
                           const uint8_t seed[VEIL_SEED_BYTES], int part, size_t start,
                           size_t count, const uint64_t *correction, uint64_t *dst)
{
    struct veil_preproc_desc desc;
    int rc = veil_preproc_item_describe(item, &desc);
    if (rc != VEIL_OK)
        return rc;
    if (part < 0 || part >= desc.nparts || start > desc.part[part].numel ||
        count > desc.part[part].numel - start || (count && !dst))
        return veil_error(VEIL_ERR_INVAL, "preproc part fill: part %d range [%zu, +%zu) is not in "
                          "the item", part, start, count);
    if (desc.part[part].corrected && party == layout->designated) {
        if (!correction)
            return veil_error(VEIL_ERR_INVAL, "preproc part fill: the designated party needs the "
                                              "correction");
        size_t off = 0;
        for (int j = 0; j < part; j++)
            if (desc.part[j].corrected)
                off += desc.part[j].numel;
        memcpy(dst, correction + off + start, count * sizeof *dst);
    } else {
        uint8_t child[VEIL_SEED_BYTES];
        size_t first = 0;
        rc = part_stream_seed(layout, item, &desc, part, seed, child, &first);
        if (rc != VEIL_OK) {
            veil_wipe(child, sizeof child);
            return rc;
        }
        veil_prg_t *prg = veil_prg_new(child);
        veil_wipe(child, sizeof child);
        if (!prg)
            return VEIL_ERR_CRYPTO;
        rc = veil_prg_seek(prg, first + start);
        if (rc == VEIL_OK)
            rc = veil_prg_fill(prg, dst, count);
        veil_prg_destroy(&prg);
        if (rc != VEIL_OK)
            return rc;
    }
    if (item->kind == VEIL_PREPROC_BIT && part == VEIL_PRE_BIT_B && item->p[VEIL_PRE_N] % 64 &&
        count && start + count == desc.part[part].numel)
        dst[count - 1] &= (UINT64_C(1) << (item->p[VEIL_PRE_N] % 64)) - 1;
    return VEIL_OK;
}

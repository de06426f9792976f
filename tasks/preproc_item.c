/*
 * preproc_item.c — what a preprocessing item is: the session layout, the items' validation
 * (their constructors are preproc_item_make.c), each kind's parts (veil_preproc_item_describe:
 * sizes, forms, which part the designated party gets as a correction), the items' digest, and
 * share buffers shaped for an item. Generating an item's values from seeds is preproc_gen.c; the
 * contract is preproc.h.
 */
#include "config.h"
#include "base/base_internal.h"
#include "tasks/carry4_common.h"
#include "tasks/preproc.h"
#include "tasks/preproc_file.h"
#include "tasks/prodk_common.h"

#include <openssl/evp.h>
#include <stdio.h>
#include <string.h>

/* ------------------------------------------------------------------------------------------ */
/* Layout and items                                                                            */

int veil_preproc_layout_check(const struct veil_preproc_layout *layout)
{
    if (!layout)
        return veil_error(VEIL_ERR_INVAL, "preproc: NULL layout");
    if (layout->nparties < 2 || layout->nparties > VEIL_PREPROC_MAX_PARTIES)
        return veil_error(VEIL_ERR_INVAL, "preproc: %d parties; need 2 to %d", layout->nparties,
                          VEIL_PREPROC_MAX_PARTIES);
    if (layout->designated < 0 || layout->designated >= layout->nparties)
        return veil_error(VEIL_ERR_INVAL, "preproc: designated party %d is not in [0, %d)",
                          layout->designated, layout->nparties);
    if (layout->frac_bits < 0 || layout->frac_bits > VEIL_FIXED_FRAC_BITS_MAX)
        return veil_error(VEIL_ERR_INVAL, "preproc: %d fractional bits; need 0 to %d",
                          layout->frac_bits, VEIL_FIXED_FRAC_BITS_MAX);
    return VEIL_OK;
}

int veil_preproc_layout_init(struct veil_preproc_layout *layout, int nparties, int frac_bits,
                             const uint8_t session_id[VEIL_PREPROC_SID_BYTES])
{
    if (!layout || !session_id)
        return veil_error(VEIL_ERR_INVAL, "preproc: NULL layout or session id");
    memset(layout, 0, sizeof *layout);
    layout->nparties = nparties;
    layout->designated = nparties - 1;
    layout->frac_bits = frac_bits;
    memcpy(layout->session_id, session_id, VEIL_PREPROC_SID_BYTES);
    return veil_preproc_layout_check(layout);
}

static const char *const kind_names[VEIL_PREPROC_KIND_COUNT] = {
    [VEIL_PREPROC_BEAVER] = "beaver",
    [VEIL_PREPROC_MATMUL] = "matmul",
    [VEIL_PREPROC_CONV] = "conv",
    [VEIL_PREPROC_SQUARE] = "square",
    [VEIL_PREPROC_AND] = "and",
    [VEIL_PREPROC_TRUNC] = "trunc",
    [VEIL_PREPROC_BIT] = "bit",
    [VEIL_PREPROC_CMPMASK] = "cmpmask",
    [VEIL_PREPROC_MATMUL_WS] = "matmul_ws",
    [VEIL_PREPROC_CONV_WS] = "conv_ws",
    [VEIL_PREPROC_CARRY4] = "carry4",
    [VEIL_PREPROC_CMPPROD] = "cmpprod",
    [VEIL_PREPROC_PRODK] = "prodk",
    [VEIL_PREPROC_RBETA] = "rbeta",
    [VEIL_PREPROC_CMPTRUNC] = "cmptrunc",
};

/* Number of meaningful parameters of each kind. */
static const int kind_nparams[VEIL_PREPROC_KIND_COUNT] = {
    [VEIL_PREPROC_BEAVER] = 1,   [VEIL_PREPROC_MATMUL] = 3,  [VEIL_PREPROC_CONV] = 11,
    [VEIL_PREPROC_SQUARE] = 1,   [VEIL_PREPROC_AND] = 1,     [VEIL_PREPROC_TRUNC] = 2,
    [VEIL_PREPROC_BIT] = 1,      [VEIL_PREPROC_CMPMASK] = 1, [VEIL_PREPROC_MATMUL_WS] = 4,
    [VEIL_PREPROC_CONV_WS] = 12, [VEIL_PREPROC_CARRY4] = 1,  [VEIL_PREPROC_CMPPROD] = 3,
    [VEIL_PREPROC_PRODK] = 2,    [VEIL_PREPROC_RBETA] = 3,   [VEIL_PREPROC_CMPTRUNC] = 4,
};

static int kind_valid(int kind)
{
    return kind >= VEIL_PREPROC_BEAVER && kind < VEIL_PREPROC_KIND_COUNT;
}

const char *veil_preproc_kind_name(int kind)
{
    return kind_valid(kind) ? kind_names[kind] : "unknown";
}

const char *veil_preproc_item_format(const struct veil_preproc_item *item, char *buf, size_t size)
{
    if (!buf || size == 0)
        return buf;
    if (!item) {
        snprintf(buf, size, "(none)");
        return buf;
    }
    int np = kind_valid((int)item->kind) ? kind_nparams[item->kind] : VEIL_PREPROC_MAX_PARAMS;
    int len = snprintf(buf, size, "%s(%d) #%llu (", veil_preproc_kind_name((int)item->kind),
                       (int)item->kind, (unsigned long long)item->index);
    for (int j = 0; j < np && len >= 0 && (size_t)len < size; j++)
        len += snprintf(buf + len, size - (size_t)len, "%s%llu", j ? "," : "",
                        (unsigned long long)item->p[j]);
    if (len >= 0 && (size_t)len < size)
        snprintf(buf + len, size - (size_t)len, ")");
    return buf;
}

/* a * b with overflow and the per-item bound checked; 0 on failure. */
static int mul_ok(uint64_t a, uint64_t b, uint64_t *out)
{
    uint64_t r;
    if (__builtin_mul_overflow(a, b, &r) || r > VEIL_PREPROC_MAX_ITEM_WORDS)
        return 0;
    *out = r;
    return 1;
}

/* corrected: 1 = corrected part, 2 = weight-stream part (never corrected). */
static void add_part(struct veil_preproc_desc *d, uint64_t numel, enum veil_share_kind form,
                     int corrected)
{
    int j = d->nparts++;
    d->part[j].numel = (size_t)numel;
    d->part[j].form = form;
    d->part[j].weight = corrected == 2;
    corrected = corrected == 1;
    d->part[j].corrected = corrected;
    d->part[j].offset = d->share_words;
    d->share_words += (size_t)numel;
    if (corrected)
        d->correction_words += (size_t)numel;
}

int veil_preproc_conv_out(const uint64_t *p, uint64_t *oh, uint64_t *ow)
{
    if (p[VEIL_PRE_CONV_PH] >= p[VEIL_PRE_CONV_KH] || p[VEIL_PRE_CONV_PW] >= p[VEIL_PRE_CONV_KW])
        return veil_error(
            VEIL_ERR_SHAPE,
            "preproc conv: padding (%llu,%llu) must be smaller "
            "than the kernel (%llu,%llu)",
            (unsigned long long)p[VEIL_PRE_CONV_PH], (unsigned long long)p[VEIL_PRE_CONV_PW],
            (unsigned long long)p[VEIL_PRE_CONV_KH], (unsigned long long)p[VEIL_PRE_CONV_KW]);
    uint64_t ph = p[VEIL_PRE_CONV_H] + 2 * p[VEIL_PRE_CONV_PH];
    uint64_t pw = p[VEIL_PRE_CONV_W] + 2 * p[VEIL_PRE_CONV_PW];
    if (ph < p[VEIL_PRE_CONV_KH] || pw < p[VEIL_PRE_CONV_KW])
        return veil_error(VEIL_ERR_SHAPE,
                          "preproc conv: kernel %llux%llu larger than the padded "
                          "input %llux%llu",
                          (unsigned long long)p[VEIL_PRE_CONV_KH],
                          (unsigned long long)p[VEIL_PRE_CONV_KW], (unsigned long long)ph,
                          (unsigned long long)pw);
    *oh = (ph - p[VEIL_PRE_CONV_KH]) / p[VEIL_PRE_CONV_SH] + 1;
    *ow = (pw - p[VEIL_PRE_CONV_KW]) / p[VEIL_PRE_CONV_SW] + 1;
    return VEIL_OK;
}

/* 1 for the parameters that may hold any 64-bit value, not sizes: a weight id, and the item
 * indices that CMPPROD, RBETA and CMPTRUNC name. */
static int any_value(enum veil_preproc_kind kind, int j)
{
    switch (kind) {
    case VEIL_PREPROC_MATMUL_WS:
        return j == VEIL_PRE_MATMUL_WID;
    case VEIL_PREPROC_CONV_WS:
        return j == VEIL_PRE_CONV_WID;
    case VEIL_PREPROC_CMPPROD:
        return j == VEIL_PRE_CMPPROD_MASK;
    case VEIL_PREPROC_RBETA:
    case VEIL_PREPROC_CMPTRUNC: /* the same parameter positions */
        return j == VEIL_PRE_RBETA_MASK || j == VEIL_PRE_RBETA_BIT;
    default:
        return 0;
    }
}

/* Every parameter in range: unused ones 0, sizes >= 1 (a conv's padding may be 0), none above
 * VEIL_PREPROC_MAX_ITEM_WORDS; a weight id may be any value. The kind is valid. */
static int check_params(const struct veil_preproc_item *item)
{
    char buf[256];
    int np = kind_nparams[item->kind];
    const int is_conv = item->kind == VEIL_PREPROC_CONV || item->kind == VEIL_PREPROC_CONV_WS;
    for (int j = 0; j < VEIL_PREPROC_MAX_PARAMS; j++) {
        int may_be_zero = is_conv && (j == VEIL_PRE_CONV_PH || j == VEIL_PRE_CONV_PW);
        if (j >= np && item->p[j] != 0)
            return veil_error(VEIL_ERR_INVAL, "preproc: item %s: parameter %d must be 0",
                              veil_preproc_item_format(item, buf, sizeof buf), j);
        if (any_value(item->kind, j))
            continue;
        if (j < np && !may_be_zero && item->p[j] == 0)
            return veil_error(VEIL_ERR_INVAL, "preproc: item %s: parameter %d must be >= 1",
                              veil_preproc_item_format(item, buf, sizeof buf), j);
        if (j < np && item->p[j] > VEIL_PREPROC_MAX_ITEM_WORDS)
            return veil_error(VEIL_ERR_RANGE, "preproc: item %s: parameter %d is too large",
                              veil_preproc_item_format(item, buf, sizeof buf), j);
    }
    return VEIL_OK;
}

/* A truncation's shift f (TRUNC, CMPTRUNC) in [1, 62]: VEIL_OK or VEIL_ERR_INVAL naming the item.
 */
static int check_shift(const struct veil_preproc_item *item, uint64_t f)
{
    char buf[256];
    if (f >= 1 && f <= 62)
        return VEIL_OK;
    return veil_error(VEIL_ERR_INVAL, "preproc: item %s: truncation by %llu bits; need 1 to 62",
                      veil_preproc_item_format(item, buf, sizeof buf), (unsigned long long)f);
}

int veil_preproc_item_describe(const struct veil_preproc_item *item, struct veil_preproc_desc *desc)
{
    char buf[256];
    if (!item || !desc)
        return veil_error(VEIL_ERR_INVAL, "preproc: NULL item or description");
    memset(desc, 0, sizeof *desc);
    if (!kind_valid((int)item->kind))
        return veil_error(VEIL_ERR_INVAL, "preproc: unknown item kind %d", (int)item->kind);
    int rc = check_params(item);
    if (rc != VEIL_OK)
        return rc;
    const uint64_t *p = item->p;
    uint64_t x, y, z, t, u;
    const enum veil_share_kind A = VEIL_SHARE_ARITH, B = VEIL_SHARE_BINARY;
    switch (item->kind) {
    case VEIL_PREPROC_BEAVER:
        add_part(desc, p[VEIL_PRE_N], A, 0);
        add_part(desc, p[VEIL_PRE_N], A, 0);
        add_part(desc, p[VEIL_PRE_N], A, 1);
        break;
    case VEIL_PREPROC_MATMUL:
    case VEIL_PREPROC_MATMUL_WS:
        if (!mul_ok(p[VEIL_PRE_MATMUL_M], p[VEIL_PRE_MATMUL_K], &x) ||
            !mul_ok(p[VEIL_PRE_MATMUL_K], p[VEIL_PRE_MATMUL_N], &y) ||
            !mul_ok(p[VEIL_PRE_MATMUL_M], p[VEIL_PRE_MATMUL_N], &z))
            goto too_big;
        add_part(desc, x, A, 0);
        add_part(desc, y, A, item->kind == VEIL_PREPROC_MATMUL_WS ? 2 : 0);
        add_part(desc, z, A, 1);
        break;
    case VEIL_PREPROC_CONV:
    case VEIL_PREPROC_CONV_WS: {
        uint64_t oh, ow;
        for (int j = VEIL_PRE_CONV_C; j <= VEIL_PRE_CONV_PW; j++)
            if (p[j] > UINT32_MAX) /* the im2col geometry is 32-bit */
                goto too_big;
        rc = veil_preproc_conv_out(p, &oh, &ow);
        if (rc != VEIL_OK)
            return rc;
        if (!mul_ok(p[VEIL_PRE_CONV_BATCH], p[VEIL_PRE_CONV_C], &x) ||
            !mul_ok(x, p[VEIL_PRE_CONV_H], &x) || !mul_ok(x, p[VEIL_PRE_CONV_W], &x) ||
            !mul_ok(p[VEIL_PRE_CONV_OC], p[VEIL_PRE_CONV_C], &y) ||
            !mul_ok(y, p[VEIL_PRE_CONV_KH], &y) || !mul_ok(y, p[VEIL_PRE_CONV_KW], &y) ||
            !mul_ok(p[VEIL_PRE_CONV_BATCH], p[VEIL_PRE_CONV_OC], &z) || !mul_ok(z, oh, &z) ||
            !mul_ok(z, ow, &z) ||
            /* the dealer's im2col buffer: C*KH*KW x OH*OW */
            !mul_ok(p[VEIL_PRE_CONV_C], p[VEIL_PRE_CONV_KH], &t) ||
            !mul_ok(t, p[VEIL_PRE_CONV_KW], &t) || !mul_ok(oh, ow, &u) || !mul_ok(t, u, &t))
            goto too_big;
        add_part(desc, x, A, 0);
        add_part(desc, y, A, item->kind == VEIL_PREPROC_CONV_WS ? 2 : 0);
        add_part(desc, z, A, 1);
        break;
    }
    case VEIL_PREPROC_SQUARE:
        add_part(desc, p[VEIL_PRE_N], A, 0);
        add_part(desc, p[VEIL_PRE_N], A, 1);
        break;
    case VEIL_PREPROC_AND:
        add_part(desc, p[VEIL_PRE_N], B, 0);
        add_part(desc, p[VEIL_PRE_N], B, 0);
        add_part(desc, p[VEIL_PRE_N], B, 1);
        break;
    case VEIL_PREPROC_TRUNC:
        if ((rc = check_shift(item, p[VEIL_PRE_TRUNC_BITS])) != VEIL_OK)
            return rc;
        add_part(desc, p[VEIL_PRE_N], A, 0);
        add_part(desc, p[VEIL_PRE_N], A, 1);
        add_part(desc, p[VEIL_PRE_N], A, 1);
        break;
    case VEIL_PREPROC_BIT:
        add_part(desc, p[VEIL_PRE_N], A, 1);
        add_part(desc, (p[VEIL_PRE_N] + 63) / 64, B, 0);
        break;
    case VEIL_PREPROC_CMPMASK:
        add_part(desc, p[VEIL_PRE_N], A, 0);
        add_part(desc, p[VEIL_PRE_N], B, 1);
        add_part(desc, p[VEIL_PRE_N], A, 1);
        break;
    case VEIL_PREPROC_CMPPROD:
        if (p[VEIL_PRE_CMPPROD_TILE] > p[VEIL_PRE_N])
            return veil_error(VEIL_ERR_INVAL, "preproc: item %s: a tile larger than the item",
                              veil_preproc_item_format(item, buf, sizeof buf));
        if (!mul_ok(veil_preproc_sliced_blocks(p[VEIL_PRE_N], p[VEIL_PRE_CMPPROD_TILE]),
                    VEIL_C4_LEAF_WORDS, &x))
            goto too_big;
        add_part(desc, x, B, 1);
        break;
    case VEIL_PREPROC_PRODK:
        if (p[VEIL_PRE_PRODK_K] < VEIL_PRODK_MIN || p[VEIL_PRE_PRODK_K] > VEIL_PRODK_MAX)
            return veil_error(VEIL_ERR_INVAL, "preproc: item %s: %llu factors; use %d to %d",
                              veil_preproc_item_format(item, buf, sizeof buf),
                              (unsigned long long)p[VEIL_PRE_PRODK_K], VEIL_PRODK_MIN,
                              VEIL_PRODK_MAX);
        if (!mul_ok(p[VEIL_PRE_N], 32, &x)) /* k + 2^k - k - 1 < 32 words per record */
            goto too_big;
        add_part(desc, p[VEIL_PRE_N] * p[VEIL_PRE_PRODK_K], A, 0);
        add_part(desc, p[VEIL_PRE_N] * (uint64_t)veil_prodk_nprods((int)p[VEIL_PRE_PRODK_K]), A, 1);
        break;
    case VEIL_PREPROC_RBETA:
        add_part(desc, p[VEIL_PRE_N], A, 1);
        break;
    case VEIL_PREPROC_CMPTRUNC:
        if ((rc = check_shift(item, p[VEIL_PRE_CMPTRUNC_BITS])) != VEIL_OK)
            return rc;
        if (!mul_ok(p[VEIL_PRE_N], 3, &x))
            goto too_big;
        add_part(desc, p[VEIL_PRE_N], A, 1);
        add_part(desc, p[VEIL_PRE_N], A, 1);
        add_part(desc, p[VEIL_PRE_N], A, 1);
        break;
    case VEIL_PREPROC_CARRY4:
        if (!mul_ok(p[VEIL_PRE_N], VEIL_C4_INPUTS + VEIL_C4_PRODS, &x))
            goto too_big;
        add_part(desc, p[VEIL_PRE_N] * VEIL_C4_INPUTS, B, 0);
        add_part(desc, p[VEIL_PRE_N] * VEIL_C4_PRODS, B, 1);
        break;
    default:
        return veil_error(VEIL_ERR_INVAL, "preproc: unknown item kind %d", (int)item->kind);
    }
    if (desc->share_words > VEIL_PREPROC_MAX_ITEM_WORDS)
        goto too_big;
    return VEIL_OK;
too_big:
    memset(desc, 0, sizeof *desc);
    return veil_error(VEIL_ERR_RANGE, "preproc: item %s is larger than %llu words",
                      veil_preproc_item_format(item, buf, sizeof buf),
                      (unsigned long long)VEIL_PREPROC_MAX_ITEM_WORDS);
}

size_t veil_preproc_correction_words(const struct veil_preproc_item *item)
{
    struct veil_preproc_desc d;
    return veil_preproc_item_describe(item, &d) == VEIL_OK ? d.correction_words : 0;
}

size_t veil_preproc_share_words(const struct veil_preproc_item *item)
{
    struct veil_preproc_desc d;
    return veil_preproc_item_describe(item, &d) == VEIL_OK ? d.share_words : 0;
}

int veil_preproc_items_size(const struct veil_preproc_item *items, size_t nitems,
                            uint64_t *correction_words, uint64_t *share_words, uint64_t *file_bytes)
{
    struct veil_preproc_desc d;
    uint64_t cw = 0, sw = 0, fw = 0;
    if (nitems && !items)
        return veil_error(VEIL_ERR_INVAL, "preproc sizes: NULL items");
    uint8_t *stored = file_bytes ? malloc(nitems ? nitems : 1) : NULL;
    int rc = file_bytes && !stored ? veil_error(VEIL_ERR_NOMEM, "preproc sizes: out of memory")
             : file_bytes          ? veil_pf_mask_stored(items, nitems, stored)
                                   : VEIL_OK;
    for (size_t i = 0; rc == VEIL_OK && i < nitems; i++) {
        if ((rc = veil_preproc_item_describe(&items[i], &d)) != VEIL_OK) {
            rc = veil_error(rc, "preproc sizes: item %zu is invalid", i);
            break;
        }
        cw += d.correction_words;
        sw += d.share_words;
        fw += stored ? veil_pf_stored_words(&d, stored[i]) : 0;
    }
    free(stored);
    if (rc != VEIL_OK)
        return rc;
    if (correction_words)
        *correction_words = cw;
    if (share_words)
        *share_words = sw;
    if (file_bytes) /* header, table, data, digest: see the format in preproc.h */
        *file_bytes = VEIL_PREPROC_FILE_HEADER_BYTES +
                      VEIL_PREPROC_FILE_ENTRY_BYTES * (uint64_t)nitems + 8 * fw +
                      VEIL_PREPROC_DIGEST_BYTES;
    return VEIL_OK;
}

static void put_u64(uint8_t *b, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        b[i] = (uint8_t)(v >> (8 * i));
}

int veil_preproc_items_digest(const struct veil_preproc_item *items, size_t nitems,
                              uint8_t digest[VEIL_PREPROC_DIGEST_BYTES])
{
    if ((nitems && !items) || !digest)
        return veil_error(VEIL_ERR_INVAL, "preproc digest: NULL argument");
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    unsigned int len = 0;
    uint8_t b[8];
    int ok = ctx && EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) == 1 &&
             EVP_DigestUpdate(ctx, "VEILPLAN", 8) == 1;
    put_u64(b, nitems);
    ok = ok && EVP_DigestUpdate(ctx, b, 8) == 1;
    for (size_t i = 0; ok && i < nitems; i++) {
        put_u64(b, (uint64_t)items[i].kind);
        ok = EVP_DigestUpdate(ctx, b, 8) == 1;
        put_u64(b, items[i].index);
        ok = ok && EVP_DigestUpdate(ctx, b, 8) == 1;
        for (int j = 0; ok && j < VEIL_PREPROC_MAX_PARAMS; j++) {
            put_u64(b, items[i].p[j]);
            ok = EVP_DigestUpdate(ctx, b, 8) == 1;
        }
    }
    ok = ok && EVP_DigestFinal_ex(ctx, digest, &len) == 1 && len == VEIL_PREPROC_DIGEST_BYTES;
    EVP_MD_CTX_free(ctx);
    return ok ? VEIL_OK : veil_error(VEIL_ERR_CRYPTO, "preproc digest: OpenSSL SHA-256 failed");
}

/* ------------------------------------------------------------------------------------------ */
/* Shares                                                                                      */

void veil_preproc_share_clear(struct veil_preproc_share *s)
{
    if (!s)
        return;
    if (s->words) {
        veil_wipe(s->words, s->nwords * sizeof *s->words);
        veil_aligned_free(s->words);
    }
    memset(s, 0, sizeof *s);
}

int veil_preproc_share_init(struct veil_preproc_share *out, const struct veil_preproc_item *item)
{
    struct veil_preproc_desc d;
    if (!out)
        return veil_error(VEIL_ERR_INVAL, "preproc: NULL share");
    veil_preproc_share_clear(out);
    int rc = veil_preproc_item_describe(item, &d);
    if (rc != VEIL_OK)
        return rc;
    out->words = veil_aligned_alloc(d.share_words * sizeof(uint64_t));
    if (!out->words)
        return veil_error(VEIL_ERR_NOMEM, "preproc: out of memory for a %zu-word share",
                          d.share_words);
    memset(out->words, 0, d.share_words * sizeof(uint64_t));
    out->item = *item;
    out->nwords = d.share_words;
    out->nparts = d.nparts;
    for (int j = 0; j < d.nparts; j++) {
        out->part[j] = out->words + d.part[j].offset;
        out->part_numel[j] = d.part[j].numel;
    }
    return VEIL_OK;
}

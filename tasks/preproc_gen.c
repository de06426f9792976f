/*
 * preproc_gen.c — correlated randomness from seeds: item validation and part layout, the
 * dealer's correction for each item kind (it reconstructs the random values from every party's
 * stream and folds the correlated value into the designated party's share), and each party's
 * local expansion of its share. The stream layout is the contract documented in preproc.h.
 */
#include "config.h"
#include "base/base_internal.h"
#include "codelets/gemm_internal.h"
#include "codelets/reference.h"
#include "tasks/preproc.h"

#include <openssl/evp.h>
#include <stdio.h>
#include <string.h>

/* Elements per chunk when the dealer walks an elementwise item (bounded temporaries). */
#define CHUNK 4096
/* Words of the stack buffer that PRG output is combined through. */
#define STREAM_BUF 512

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

static struct veil_preproc_item make_item(enum veil_preproc_kind kind, uint64_t index)
{
    struct veil_preproc_item it;
    memset(&it, 0, sizeof it);
    it.kind = kind;
    it.index = index;
    return it;
}

struct veil_preproc_item veil_preproc_item_beaver(uint64_t index, uint64_t n)
{
    struct veil_preproc_item it = make_item(VEIL_PREPROC_BEAVER, index);
    it.p[0] = n;
    return it;
}

struct veil_preproc_item veil_preproc_item_matmul(uint64_t index, uint64_t m, uint64_t k,
                                                  uint64_t n)
{
    struct veil_preproc_item it = make_item(VEIL_PREPROC_MATMUL, index);
    it.p[0] = m;
    it.p[1] = k;
    it.p[2] = n;
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
    struct veil_preproc_item it = make_item(VEIL_PREPROC_SQUARE, index);
    it.p[0] = n;
    return it;
}

struct veil_preproc_item veil_preproc_item_and(uint64_t index, uint64_t nwords)
{
    struct veil_preproc_item it = make_item(VEIL_PREPROC_AND, index);
    it.p[0] = nwords;
    return it;
}

struct veil_preproc_item veil_preproc_item_trunc(uint64_t index, uint64_t n, uint64_t frac_bits)
{
    struct veil_preproc_item it = make_item(VEIL_PREPROC_TRUNC, index);
    it.p[0] = n;
    it.p[1] = frac_bits;
    return it;
}

struct veil_preproc_item veil_preproc_item_bit(uint64_t index, uint64_t n)
{
    struct veil_preproc_item it = make_item(VEIL_PREPROC_BIT, index);
    it.p[0] = n;
    return it;
}

struct veil_preproc_item veil_preproc_item_cmpmask(uint64_t index, uint64_t n)
{
    struct veil_preproc_item it = make_item(VEIL_PREPROC_CMPMASK, index);
    it.p[0] = n;
    return it;
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

static const char *const kind_names[VEIL_PREPROC_KIND_COUNT] = {
    [VEIL_PREPROC_BEAVER] = "beaver", [VEIL_PREPROC_MATMUL] = "matmul",
    [VEIL_PREPROC_CONV] = "conv",     [VEIL_PREPROC_SQUARE] = "square",
    [VEIL_PREPROC_AND] = "and",       [VEIL_PREPROC_TRUNC] = "trunc",
    [VEIL_PREPROC_BIT] = "bit",       [VEIL_PREPROC_CMPMASK] = "cmpmask",
    [VEIL_PREPROC_MATMUL_WS] = "matmul_ws", [VEIL_PREPROC_CONV_WS] = "conv_ws",
};

/* Number of meaningful parameters of each kind. */
static const int kind_nparams[VEIL_PREPROC_KIND_COUNT] = {
    [VEIL_PREPROC_BEAVER] = 1, [VEIL_PREPROC_MATMUL] = 3,  [VEIL_PREPROC_CONV] = 11,
    [VEIL_PREPROC_SQUARE] = 1, [VEIL_PREPROC_AND] = 1,     [VEIL_PREPROC_TRUNC] = 2,
    [VEIL_PREPROC_BIT] = 1,    [VEIL_PREPROC_CMPMASK] = 1,
    [VEIL_PREPROC_MATMUL_WS] = 4, [VEIL_PREPROC_CONV_WS] = 12,
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

/* Conv output sizes; VEIL_OK or an error with a message. Params must be in range already. */
static int conv_out(const uint64_t *p, uint64_t *oh, uint64_t *ow)
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

int veil_preproc_item_describe(const struct veil_preproc_item *item, struct veil_preproc_desc *desc)
{
    char buf[256];
    if (!item || !desc)
        return veil_error(VEIL_ERR_INVAL, "preproc: NULL item or description");
    memset(desc, 0, sizeof *desc);
    if (!kind_valid((int)item->kind))
        return veil_error(VEIL_ERR_INVAL, "preproc: unknown item kind %d", (int)item->kind);
    int np = kind_nparams[item->kind];
    const int is_conv = item->kind == VEIL_PREPROC_CONV || item->kind == VEIL_PREPROC_CONV_WS;
    /* a weight id is any 64-bit value: not a size */
    const int wid_at = item->kind == VEIL_PREPROC_MATMUL_WS ? VEIL_PRE_MATMUL_WID
                       : item->kind == VEIL_PREPROC_CONV_WS ? VEIL_PRE_CONV_WID
                                                            : -1;
    for (int j = 0; j < VEIL_PREPROC_MAX_PARAMS; j++) {
        int may_be_zero = is_conv && (j == VEIL_PRE_CONV_PH || j == VEIL_PRE_CONV_PW);
        if (j >= np && item->p[j] != 0)
            return veil_error(VEIL_ERR_INVAL, "preproc: item %s: parameter %d must be 0",
                              veil_preproc_item_format(item, buf, sizeof buf), j);
        if (j == wid_at)
            continue;
        if (j < np && !may_be_zero && item->p[j] == 0)
            return veil_error(VEIL_ERR_INVAL, "preproc: item %s: parameter %d must be >= 1",
                              veil_preproc_item_format(item, buf, sizeof buf), j);
        if (j < np && item->p[j] > VEIL_PREPROC_MAX_ITEM_WORDS)
            return veil_error(VEIL_ERR_RANGE, "preproc: item %s: parameter %d is too large",
                              veil_preproc_item_format(item, buf, sizeof buf), j);
    }
    const uint64_t *p = item->p;
    uint64_t x, y, z, t, u;
    const enum veil_share_kind A = VEIL_SHARE_ARITH, B = VEIL_SHARE_BINARY;
    switch (item->kind) {
    case VEIL_PREPROC_BEAVER:
        add_part(desc, p[0], A, 0);
        add_part(desc, p[0], A, 0);
        add_part(desc, p[0], A, 1);
        break;
    case VEIL_PREPROC_MATMUL:
    case VEIL_PREPROC_MATMUL_WS:
        if (!mul_ok(p[0], p[1], &x) || !mul_ok(p[1], p[2], &y) || !mul_ok(p[0], p[2], &z))
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
        int rc = conv_out(p, &oh, &ow);
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
        add_part(desc, p[0], A, 0);
        add_part(desc, p[0], A, 1);
        break;
    case VEIL_PREPROC_AND:
        add_part(desc, p[0], B, 0);
        add_part(desc, p[0], B, 0);
        add_part(desc, p[0], B, 1);
        break;
    case VEIL_PREPROC_TRUNC:
        if (p[1] < 1 || p[1] > 62)
            return veil_error(VEIL_ERR_INVAL,
                              "preproc: item %s: truncation by %llu bits; need "
                              "1 to 62",
                              veil_preproc_item_format(item, buf, sizeof buf),
                              (unsigned long long)p[1]);
        add_part(desc, p[0], A, 0);
        add_part(desc, p[0], A, 1);
        add_part(desc, p[0], A, 1);
        break;
    case VEIL_PREPROC_BIT:
        add_part(desc, p[0], A, 1);
        add_part(desc, (p[0] + 63) / 64, B, 0);
        break;
    case VEIL_PREPROC_CMPMASK:
        add_part(desc, p[0], A, 0);
        add_part(desc, p[0], B, 1);
        add_part(desc, p[0], A, 1);
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
    uint64_t cw = 0, sw = 0;
    if (nitems && !items)
        return veil_error(VEIL_ERR_INVAL, "preproc sizes: NULL items");
    for (size_t i = 0; i < nitems; i++) {
        int rc = veil_preproc_item_describe(&items[i], &d);
        if (rc != VEIL_OK)
            return veil_error(rc, "preproc sizes: item %zu is invalid", i);
        cw += d.correction_words;
        sw += d.share_words;
    }
    if (correction_words)
        *correction_words = cw;
    if (share_words)
        *share_words = sw;
    if (file_bytes) /* header, table, data, digest: see the format in preproc.h */
        *file_bytes = VEIL_PREPROC_FILE_HEADER_BYTES +
                      VEIL_PREPROC_FILE_ENTRY_BYTES * (uint64_t)nitems + 8 * sw +
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

/* ------------------------------------------------------------------------------------------ */
/* Streams                                                                                     */

/* The per-item seed of one party (stream layout in preproc.h). */
/* derive(derive(seed, sid), label, index): the two-level derivation of every stream. */
static int session_derive(const struct veil_preproc_layout *layout,
                          const uint8_t seed[VEIL_SEED_BYTES], uint64_t label, uint64_t index,
                          uint8_t out[VEIL_SEED_BYTES])
{
    uint8_t root[VEIL_SEED_BYTES];
    uint64_t lo = 0, hi = 0;
    for (int i = 0; i < 8; i++) {
        lo = lo << 8 | layout->session_id[i];
        hi = hi << 8 | layout->session_id[8 + i];
    }
    int rc = veil_seed_derive(seed, lo, hi, root);
    if (rc == VEIL_OK)
        rc = veil_seed_derive(root, label, index, out);
    veil_wipe(root, sizeof root);
    return rc;
}

int veil_preproc_item_seed(const struct veil_preproc_layout *layout,
                           const struct veil_preproc_item *item,
                           const uint8_t seed[VEIL_SEED_BYTES], uint8_t out[VEIL_SEED_BYTES])
{
    return session_derive(layout, seed, VEIL_PREPROC_LABEL | (uint64_t)item->kind, item->index,
                          out);
}

int veil_preproc_weight_seed(const struct veil_preproc_layout *layout, uint64_t wid,
                             const uint8_t seed[VEIL_SEED_BYTES], uint8_t out[VEIL_SEED_BYTES])
{
    return session_derive(layout, seed, VEIL_PREPROC_LABEL_WEIGHT, wid, out);
}

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

/* The dealer's view: one PRG per party, positioned on demand. */
struct streams {
    int n;
    veil_prg_t *prg[VEIL_PREPROC_MAX_PARTIES];
};

static void streams_close(struct streams *s)
{
    for (int q = 0; q < s->n; q++)
        veil_prg_destroy(&s->prg[q]);
}

/* Every party's item stream, or (weight != 0) every party's weight stream of item's wid. */
static int streams_open(struct streams *s, const struct veil_preproc_layout *layout,
                        const struct veil_preproc_item *item,
                        const uint8_t (*seeds)[VEIL_SEED_BYTES], int weight)
{
    memset(s, 0, sizeof *s);
    s->n = layout->nparties;
    uint64_t wid = 0;
    if (weight && !veil_preproc_item_wid(item, &wid))
        return veil_error(VEIL_ERR_INVAL, "preproc: kind %d has no weight stream", (int)item->kind);
    for (int q = 0; q < s->n; q++) {
        uint8_t child[VEIL_SEED_BYTES];
        int rc = weight ? veil_preproc_weight_seed(layout, wid, seeds[q], child)
                        : veil_preproc_item_seed(layout, item, seeds[q], child);
        if (rc == VEIL_OK) {
            s->prg[q] = veil_prg_new(child);
            if (!s->prg[q])
                rc = VEIL_ERR_CRYPTO;
        }
        veil_wipe(child, sizeof child);
        if (rc != VEIL_OK) {
            streams_close(s);
            return rc;
        }
    }
    return VEIL_OK;
}

enum fold { FOLD_SET, FOLD_SUB };

/*
 * Folds words [off, off+n) of every party's stream except party skip (-1: none) into out:
 * FOLD_SET makes out the sum (XOR for binary), FOLD_SUB subtracts the sum from out (XORs for
 * binary, where subtracting and adding are the same).
 */
static int streams_fold(struct streams *s, int skip, uint64_t off, size_t n,
                        enum veil_share_kind form, enum fold mode, uint64_t *out)
{
    uint64_t buf[STREAM_BUF];
    int rc = VEIL_OK;
    if (mode == FOLD_SET)
        memset(out, 0, n * sizeof *out);
    for (int q = 0; q < s->n && rc == VEIL_OK; q++) {
        if (q == skip)
            continue;
        rc = veil_prg_seek(s->prg[q], off);
        for (size_t done = 0; rc == VEIL_OK && done < n;) {
            size_t w = n - done < STREAM_BUF ? n - done : STREAM_BUF;
            rc = veil_prg_fill(s->prg[q], buf, w);
            if (rc != VEIL_OK)
                break;
            uint64_t *o = out + done;
            if (form == VEIL_SHARE_BINARY)
                for (size_t i = 0; i < w; i++)
                    o[i] ^= buf[i];
            else if (mode == FOLD_SET)
                for (size_t i = 0; i < w; i++)
                    o[i] += buf[i];
            else
                for (size_t i = 0; i < w; i++)
                    o[i] -= buf[i];
            done += w;
        }
    }
    veil_wipe(buf, sizeof buf);
    return rc;
}

/* ------------------------------------------------------------------------------------------ */
/* Dealer                                                                                      */

/* Elementwise kinds: walk the item in chunks; t0/t1 hold the reconstructed PRG secrets. */
static int dealer_elementwise(struct streams *s, int d, const struct veil_preproc_item *item,
                              const struct veil_preproc_desc *desc, uint64_t *out)
{
    const size_t n = (size_t)item->p[0];
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
            rc = streams_fold(s, -1, desc->part[0].offset + s0, len, f, FOLD_SET, t0);
            if (rc == VEIL_OK)
                rc = streams_fold(s, -1, desc->part[1].offset + s0, len, f, FOLD_SET, t1);
            if (f == A)
                for (size_t i = 0; i < len; i++)
                    o[i] = t0[i] * t1[i];
            else
                for (size_t i = 0; i < len; i++)
                    o[i] = t0[i] & t1[i];
            if (rc == VEIL_OK)
                rc = streams_fold(s, d, desc->part[2].offset + s0, len, f, FOLD_SUB, o);
            break;
        }
        case VEIL_PREPROC_SQUARE:
            rc = streams_fold(s, -1, desc->part[0].offset + s0, len, A, FOLD_SET, t0);
            for (size_t i = 0; i < len; i++)
                o[i] = t0[i] * t0[i];
            if (rc == VEIL_OK)
                rc = streams_fold(s, d, desc->part[1].offset + s0, len, A, FOLD_SUB, o);
            break;
        case VEIL_PREPROC_TRUNC: {
            const unsigned f = (unsigned)item->p[1];
            rc = streams_fold(s, -1, desc->part[0].offset + s0, len, A, FOLD_SET, t0);
            for (size_t i = 0; i < len; i++) {
                o[i] = t0[i] >> f;
                o2[i] = t0[i] >> 63;
            }
            if (rc == VEIL_OK)
                rc = streams_fold(s, d, desc->part[1].offset + s0, len, A, FOLD_SUB, o);
            if (rc == VEIL_OK)
                rc = streams_fold(s, d, desc->part[2].offset + s0, len, A, FOLD_SUB, o2);
            break;
        }
        case VEIL_PREPROC_CMPMASK:
            rc = streams_fold(s, -1, desc->part[0].offset + s0, len, A, FOLD_SET, t0);
            for (size_t i = 0; i < len; i++) {
                o[i] = t0[i];
                o2[i] = t0[i] >> 63;
            }
            if (rc == VEIL_OK)
                rc = streams_fold(s, d, desc->part[1].offset + s0, len, B, FOLD_SUB, o);
            if (rc == VEIL_OK)
                rc = streams_fold(s, d, desc->part[2].offset + s0, len, A, FOLD_SUB, o2);
            break;
        case VEIL_PREPROC_BIT: {
            /* CHUNK is a multiple of 64, so chunk s0 starts at packed word s0 / 64. */
            size_t pw = (len + 63) / 64;
            rc = streams_fold(s, -1, desc->part[1].offset + s0 / 64, pw, B, FOLD_SET, t0);
            for (size_t i = 0; i < len; i++)
                o[i] = (t0[i / 64] >> (i % 64)) & 1;
            if (rc == VEIL_OK)
                rc = streams_fold(s, d, desc->part[0].offset + s0, len, A, FOLD_SUB, o);
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

/* MATMUL and CONV (and their _WS forms, whose B comes from the weight streams ws): reconstruct
 * both operands in full, multiply with the ring GEMM. */
static int dealer_linear(struct streams *s, struct streams *ws, int d,
                         const struct veil_preproc_item *item, const struct veil_preproc_desc *desc,
                         uint64_t *out)
{
    const uint64_t *p = item->p;
    const int is_conv = item->kind == VEIL_PREPROC_CONV || item->kind == VEIL_PREPROC_CONV_WS;
    size_t na = desc->part[0].numel, nb = desc->part[1].numel, ncol = 0, oh = 0, ow = 0;
    if (is_conv) {
        uint64_t h, w;
        conv_out(p, &h, &w); /* validated by describe */
        oh = (size_t)h;
        ow = (size_t)w;
        ncol = (size_t)(p[VEIL_PRE_CONV_C] * p[VEIL_PRE_CONV_KH] * p[VEIL_PRE_CONV_KW]) * oh * ow;
    }
    size_t total = na + nb + ncol;
    uint64_t *a = veil_aligned_alloc(total * sizeof(uint64_t)), *b = a + na, *col = b + nb;
    if (!a)
        return veil_error(VEIL_ERR_NOMEM, "preproc dealer: out of memory for %zu words", total);
    int rc = streams_fold(s, -1, desc->part[0].offset, na, VEIL_SHARE_ARITH, FOLD_SET, a);
    if (rc == VEIL_OK && desc->part[1].weight)
        rc = streams_fold(ws, -1, 0, nb, VEIL_SHARE_ARITH, FOLD_SET, b);
    else if (rc == VEIL_OK)
        rc = streams_fold(s, -1, desc->part[1].offset, nb, VEIL_SHARE_ARITH, FOLD_SET, b);
    if (rc == VEIL_OK && !is_conv) {
        veil_gemm_u64(0, 0, (size_t)p[0], (size_t)p[2], (size_t)p[1], a, (size_t)p[1], b,
                      (size_t)p[2], 0, out, (size_t)p[2]);
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
        rc = streams_fold(s, d, desc->part[2].offset, desc->part[2].numel, VEIL_SHARE_ARITH,
                          FOLD_SUB, out);
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
    struct streams s, ws;
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
    rc = streams_open(&s, layout, item, seeds, 0);
    if (rc != VEIL_OK)
        return rc;
    memset(&ws, 0, sizeof ws);
    if (weight && (rc = streams_open(&ws, layout, item, seeds, 1)) != VEIL_OK) {
        streams_close(&s);
        return rc;
    }
    if (item->kind == VEIL_PREPROC_MATMUL || item->kind == VEIL_PREPROC_CONV || weight)
        rc = dealer_linear(&s, &ws, layout->designated, item, &desc, out);
    else
        rc = dealer_elementwise(&s, layout->designated, item, &desc, out);
    streams_close(&s);
    streams_close(&ws);
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
    if (rc == VEIL_OK && item->kind == VEIL_PREPROC_BIT && item->p[0] % 64)
        out->part[VEIL_PRE_BIT_B][out->part_numel[VEIL_PRE_BIT_B] - 1] &=
            (UINT64_C(1) << (item->p[0] % 64)) - 1;
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
    if (item->kind == VEIL_PREPROC_BIT && part == VEIL_PRE_BIT_B && item->p[0] % 64 && count &&
        start + count == desc.part[part].numel)
        dst[count - 1] &= (UINT64_C(1) << (item->p[0] % 64)) - 1;
    return VEIL_OK;
}

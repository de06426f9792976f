/*
 * weights_write.c — the weights file writer (format in include/veil/data.h): a growable string
 * builder for the JSON header (JSON-escaped names), the tensors' little-endian payload after it,
 * and an atomic write (data_internal.h), so a reader never sees a half-written file.
 */
#include "config.h"
#include "data/data_internal.h"
#include "base/base_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct sbuf {
    char *b;
    size_t n, cap;
    int err;
};

static void sb_put(struct sbuf *s, const char *text, size_t len)
{
    if (s->err)
        return;
    if (s->n + len + 1 > s->cap) {
        size_t nc = (s->cap ? s->cap : 256);
        while (nc < s->n + len + 1)
            nc *= 2;
        char *nb = realloc(s->b, nc);
        if (!nb) {
            s->err = 1;
            return;
        }
        s->b = nb;
        s->cap = nc;
    }
    memcpy(s->b + s->n, text, len);
    s->n += len;
}

static void sb_printf(struct sbuf *s, const char *fmt, ...) VEIL_PRINTF(2, 3);

static void sb_printf(struct sbuf *s, const char *fmt, ...)
{
    char tmp[128];
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(tmp, sizeof(tmp), fmt, ap);
    va_end(ap);
    sb_put(s, tmp, k < 0 ? 0 : (size_t)k < sizeof(tmp) ? (size_t)k : sizeof(tmp) - 1);
}

static void sb_string(struct sbuf *s, const char *str)
{
    sb_put(s, "\"", 1);
    for (const unsigned char *p = (const unsigned char *)str; *p; p++) {
        if (*p == '"' || *p == '\\') {
            char e[2] = { '\\', (char)*p };
            sb_put(s, e, 2);
        } else if (*p < 0x20) {
            sb_printf(s, "\\u%04x", *p);
        } else {
            sb_put(s, (const char *)p, 1);
        }
    }
    sb_put(s, "\"", 1);
}

int veil_weights_write(const char *path, const char *model, const struct veil_weights_tensor *t,
                       size_t n)
{
    if (!path || (n && !t))
        return veil_error(VEIL_ERR_INVAL, "weights write: NULL argument");
    struct sbuf h = { 0 };
    uint8_t *out = NULL;
    uint64_t off = 0;
    int rc;
    sb_put(&h, "{", 1);
    for (size_t i = 0; i < n; i++) {
        if (!t[i].name || !t[i].name[0] || !strcmp(t[i].name, "__metadata__") ||
            t[i].dtype < 0 || t[i].dtype >= VEIL_DTYPE_COUNT || t[i].ndim < 0 ||
            t[i].ndim > VEIL_WEIGHTS_MAX_DIMS) {
            rc = veil_error(VEIL_ERR_INVAL, "weights write %s: tensor %zu has a bad name, dtype "
                            "or rank", path, i);
            goto fail;
        }
        for (size_t j = 0; j < i; j++) {
            if (strcmp(t[i].name, t[j].name) == 0) {
                rc = veil_error(VEIL_ERR_INVAL, "weights write %s: tensor '%s' given twice", path,
                                t[i].name);
                goto fail;
            }
        }
        uint64_t bytes = veil_weights_dtype_sizes[t[i].dtype];
        for (int d = 0; d < t[i].ndim; d++) {
            if (t[i].dims[d] && bytes > (VEIL_DATA_MAX_FILE >> 1) / t[i].dims[d]) {
                rc = veil_error(VEIL_ERR_RANGE, "weights write %s: tensor '%s' is too large",
                                path, t[i].name);
                goto fail;
            }
            bytes *= t[i].dims[d];
        }
        if (bytes && !t[i].data) {
            rc = veil_error(VEIL_ERR_INVAL, "weights write %s: tensor '%s' has no data", path,
                            t[i].name);
            goto fail;
        }
        sb_put(&h, i ? "," : "", i ? 1 : 0);
        sb_string(&h, t[i].name);
        sb_printf(&h, ":{\"dtype\":\"%s\",\"shape\":[", veil_weights_dtype_names[t[i].dtype]);
        for (int d = 0; d < t[i].ndim; d++)
            sb_printf(&h, "%s%zu", d ? "," : "", t[i].dims[d]);
        sb_printf(&h, "],\"data_offsets\":[%llu,%llu]}", (unsigned long long)off,
                  (unsigned long long)(off + bytes));
        off += bytes;
        if (off > VEIL_DATA_MAX_FILE) {
            rc = veil_error(VEIL_ERR_RANGE, "weights write %s: more than %zu bytes", path,
                            (size_t)VEIL_DATA_MAX_FILE);
            goto fail;
        }
    }
    if (model) {
        sb_put(&h, n ? "," : "", n ? 1 : 0);
        sb_put(&h, "\"__metadata__\":{\"model\":", 24);
        sb_string(&h, model);
        sb_put(&h, "}", 1);
    }
    sb_put(&h, "}", 1);
    while (!h.err && h.n % 8)
        sb_put(&h, " ", 1); /* the data area starts 8-byte aligned */
    if (h.err) {
        rc = veil_error(VEIL_ERR_NOMEM, "weights write %s: out of memory", path);
        goto fail;
    }
    size_t total = 8 + h.n + (size_t)off;
    out = malloc(total);
    if (!out) {
        rc = veil_error(VEIL_ERR_NOMEM, "weights write %s: out of memory", path);
        goto fail;
    }
    for (int i = 0; i < 8; i++)
        out[i] = (uint8_t)((uint64_t)h.n >> (8 * i));
    memcpy(out + 8, h.b, h.n);
    uint8_t *p = out + 8 + h.n;
    for (size_t i = 0; i < n; i++) {
        size_t esz = veil_weights_dtype_sizes[t[i].dtype], numel = 1;
        for (int d = 0; d < t[i].ndim; d++)
            numel *= t[i].dims[d];
        const uint8_t *src = t[i].data;
        for (size_t e = 0; e < numel; e++, p += esz) {
            uint64_t u = 0;
            if (esz == 8) {
                memcpy(&u, src + 8 * e, 8);
            } else {
                uint32_t v;
                memcpy(&v, src + 4 * e, 4);
                u = v;
            }
            for (size_t b = 0; b < esz; b++)
                p[b] = (uint8_t)(u >> (8 * b));
        }
    }
    rc = veil_data_write_atomic(path, out, total, 0644);
fail:
    free(h.b);
    free(out);
    return rc;
}

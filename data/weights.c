/*
 * weights.c — plaintext model weights in a safetensors-style file (format in
 * include/veil/data.h): a strict reader for exactly the JSON subset the format uses, shape and
 * model-name checks with messages that say what differs, and an atomic writer.
 */
#include "config.h"
#include "data/data_internal.h"
#include "base/base_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_HEADER ((uint64_t)100 << 20)
#define MAX_TENSORS 100000

struct tensor {
    char *name;
    enum veil_dtype dtype;
    int ndim;
    size_t dims[VEIL_WEIGHTS_MAX_DIMS];
    uint64_t begin, end;
};

struct veil_weights {
    char *path;
    uint8_t *buf;
    size_t len;
    size_t data_off; /* 8 + header length */
    struct tensor *t;
    size_t n;
    char *model;
};

static const char *const dtype_names[VEIL_DTYPE_COUNT] = { "F64", "F32", "I64", "U64" };
static const size_t dtype_sizes[VEIL_DTYPE_COUNT] = { 8, 4, 8, 8 };

/* ---- the JSON subset ------------------------------------------------------------------------ */

struct cursor {
    const char *p, *end, *start;
    const char *file;
};

static int perr(struct cursor *c, const char *fmt, ...) VEIL_PRINTF(2, 3);

static int perr(struct cursor *c, const char *fmt, ...)
{
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return veil_error(VEIL_ERR_FORMAT, "weights file %s: header byte %zu: %s", c->file,
                      (size_t)(c->p - c->start), msg);
}

static void skip_ws(struct cursor *c)
{
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r'))
        c->p++;
}

static int expect(struct cursor *c, char ch)
{
    skip_ws(c);
    if (c->p >= c->end)
        return perr(c, "expected '%c', the header ends", ch);
    if (*c->p != ch)
        return perr(c, "expected '%c', found '%c'", ch, *c->p);
    c->p++;
    return VEIL_OK;
}

static int read_hex4(struct cursor *c, unsigned *out)
{
    if (c->end - c->p < 4)
        return perr(c, "\\u escape cut short");
    uint8_t b[2];
    if (veil_hex_decode(c->p, b, 2) != 4)
        return perr(c, "bad hex digit in a \\u escape");
    c->p += 4;
    *out = (unsigned)b[0] << 8 | b[1];
    return VEIL_OK;
}

/* Parses a string into a new NUL-terminated buffer (at most as long as the source text). */
static int parse_string(struct cursor *c, char **out)
{
    *out = NULL;
    int rc = expect(c, '"');
    if (rc)
        return rc;
    const char *s = c->p;
    while (s < c->end && *s != '"')
        s += (*s == '\\' && s + 1 < c->end) ? 2 : 1;
    if (s >= c->end)
        return perr(c, "unterminated string");
    char *b = malloc((size_t)(s - c->p) + 1), *o = b;
    if (!b)
        return veil_error(VEIL_ERR_NOMEM, "weights file %s: out of memory", c->file);
    while (*c->p != '"') {
        unsigned char ch = (unsigned char)*c->p++;
        if (ch < 0x20) {
            c->p--;
            rc = perr(c, "control character 0x%02x in a string", ch);
            goto fail;
        }
        if (ch != '\\') {
            *o++ = (char)ch;
            continue;
        }
        ch = (unsigned char)*c->p++;
        switch (ch) {
        case '"': *o++ = '"'; break;
        case '\\': *o++ = '\\'; break;
        case '/': *o++ = '/'; break;
        case 'b': *o++ = '\b'; break;
        case 'f': *o++ = '\f'; break;
        case 'n': *o++ = '\n'; break;
        case 'r': *o++ = '\r'; break;
        case 't': *o++ = '\t'; break;
        case 'u': {
            unsigned u, lo;
            if ((rc = read_hex4(c, &u)))
                goto fail;
            if (u >= 0xdc00 && u < 0xe000) {
                rc = perr(c, "lone low surrogate in a \\u escape");
                goto fail;
            }
            if (u >= 0xd800 && u < 0xdc00) {
                if (c->end - c->p < 6 || c->p[0] != '\\' || c->p[1] != 'u') {
                    rc = perr(c, "high surrogate without its low half");
                    goto fail;
                }
                c->p += 2;
                if ((rc = read_hex4(c, &lo)))
                    goto fail;
                if (lo < 0xdc00 || lo >= 0xe000) {
                    rc = perr(c, "high surrogate without its low half");
                    goto fail;
                }
                u = 0x10000 + ((u - 0xd800) << 10) + (lo - 0xdc00);
            }
            if (u == 0) {
                rc = perr(c, "\\u0000 is not allowed in a name");
                goto fail;
            }
            /* 6 escape characters yield at most 3 bytes, 12 at most 4: fits the buffer. */
            if (u < 0x80) {
                *o++ = (char)u;
            } else if (u < 0x800) {
                *o++ = (char)(0xc0 | u >> 6);
                *o++ = (char)(0x80 | (u & 0x3f));
            } else if (u < 0x10000) {
                *o++ = (char)(0xe0 | u >> 12);
                *o++ = (char)(0x80 | ((u >> 6) & 0x3f));
                *o++ = (char)(0x80 | (u & 0x3f));
            } else {
                *o++ = (char)(0xf0 | u >> 18);
                *o++ = (char)(0x80 | ((u >> 12) & 0x3f));
                *o++ = (char)(0x80 | ((u >> 6) & 0x3f));
                *o++ = (char)(0x80 | (u & 0x3f));
            }
            break;
        }
        default:
            c->p--;
            rc = perr(c, "unknown escape '\\%c'", ch);
            goto fail;
        }
    }
    c->p++; /* closing quote */
    *o = '\0';
    *out = b;
    return VEIL_OK;
fail:
    free(b);
    return rc;
}

static int parse_uint(struct cursor *c, uint64_t *out)
{
    skip_ws(c);
    if (c->p >= c->end || *c->p < '0' || *c->p > '9')
        return perr(c, "expected a non-negative integer");
    if (*c->p == '0' && c->p + 1 < c->end && c->p[1] >= '0' && c->p[1] <= '9')
        return perr(c, "integer with a leading zero");
    uint64_t v = 0;
    while (c->p < c->end && *c->p >= '0' && *c->p <= '9') {
        unsigned dg = (unsigned)(*c->p - '0');
        if (v > (UINT64_MAX - dg) / 10)
            return perr(c, "integer too large");
        v = v * 10 + dg;
        c->p++;
    }
    if (c->p < c->end && (*c->p == '.' || *c->p == 'e' || *c->p == 'E'))
        return perr(c, "only integers are allowed here");
    *out = v;
    return VEIL_OK;
}

/* [n0, n1, ...] with at most max entries. */
static int parse_uint_array(struct cursor *c, uint64_t *v, int max, int *count)
{
    int rc = expect(c, '[');
    if (rc)
        return rc;
    *count = 0;
    skip_ws(c);
    if (c->p < c->end && *c->p == ']') {
        c->p++;
        return VEIL_OK;
    }
    for (;;) {
        if (*count == max)
            return perr(c, "more than %d entries in an array", max);
        if ((rc = parse_uint(c, &v[(*count)++])))
            return rc;
        skip_ws(c);
        if (c->p < c->end && *c->p == ',') {
            c->p++;
            continue;
        }
        return expect(c, ']');
    }
}

/* After a member: ',' (returns 0, more follow) or '}' (returns 1). */
static int next_member(struct cursor *c, int *done)
{
    skip_ws(c);
    if (c->p < c->end && *c->p == ',') {
        c->p++;
        *done = 0;
        return VEIL_OK;
    }
    *done = 1;
    return expect(c, '}');
}

static int parse_tensor(struct cursor *c, struct tensor *t)
{
    int rc = expect(c, '{'), done = 0, have_dtype = 0, have_shape = 0, have_off = 0;
    if (rc)
        return rc;
    while (!done) {
        char *key = NULL;
        const char *at = c->p;
        if ((rc = parse_string(c, &key)) || (rc = expect(c, ':'))) {
            free(key);
            return rc;
        }
        if (strcmp(key, "dtype") == 0 && !have_dtype) {
            char *v = NULL;
            if ((rc = parse_string(c, &v)))
                goto key_fail;
            int k = 0;
            while (k < VEIL_DTYPE_COUNT && strcmp(v, dtype_names[k]) != 0)
                k++;
            if (k == VEIL_DTYPE_COUNT) {
                rc = perr(c, "tensor '%s': unknown dtype '%.32s' (F64, F32, I64 or U64)",
                          t->name, v);
                free(v);
                goto key_fail;
            }
            free(v);
            t->dtype = (enum veil_dtype)k;
            have_dtype = 1;
        } else if (strcmp(key, "shape") == 0 && !have_shape) {
            uint64_t d[VEIL_WEIGHTS_MAX_DIMS];
            if ((rc = parse_uint_array(c, d, VEIL_WEIGHTS_MAX_DIMS, &t->ndim)))
                goto key_fail;
            for (int i = 0; i < t->ndim; i++) {
                if (d[i] > SIZE_MAX) {
                    rc = perr(c, "tensor '%s': dimension too large", t->name);
                    goto key_fail;
                }
                t->dims[i] = (size_t)d[i];
            }
            have_shape = 1;
        } else if (strcmp(key, "data_offsets") == 0 && !have_off) {
            uint64_t o[2];
            int cnt = 0;
            if ((rc = parse_uint_array(c, o, 2, &cnt)))
                goto key_fail;
            if (cnt != 2) {
                rc = perr(c, "tensor '%s': data_offsets needs [begin, end]", t->name);
                goto key_fail;
            }
            t->begin = o[0];
            t->end = o[1];
            have_off = 1;
        } else {
            c->p = at;
            rc = perr(c, "tensor '%s': %s field '%.32s'", t->name,
                      (!strcmp(key, "dtype") || !strcmp(key, "shape") ||
                       !strcmp(key, "data_offsets")) ? "duplicate" : "unknown", key);
            goto key_fail;
        }
        free(key);
        if ((rc = next_member(c, &done)))
            return rc;
        continue;
key_fail:
        free(key);
        return rc;
    }
    if (!have_dtype || !have_shape || !have_off)
        return perr(c, "tensor '%s' lacks %s", t->name,
                    !have_dtype ? "dtype" : !have_shape ? "shape" : "data_offsets");
    return VEIL_OK;
}

static int parse_metadata(struct cursor *c, veil_weights_t *w)
{
    int rc = expect(c, '{'), done = 0;
    if (rc)
        return rc;
    char *keys[64];
    int nkeys = 0;
    skip_ws(c);
    if (c->p < c->end && *c->p == '}') {
        c->p++;
        return VEIL_OK;
    }
    while (!done) {
        char *k = NULL, *v = NULL;
        const char *at = c->p;
        if ((rc = parse_string(c, &k)) || (rc = expect(c, ':')) || (rc = parse_string(c, &v))) {
            free(k);
            goto fail;
        }
        for (int i = 0; i < nkeys; i++) {
            if (strcmp(keys[i], k) == 0) {
                c->p = at;
                rc = perr(c, "duplicate metadata key '%.32s'", k);
                free(k);
                free(v);
                goto fail;
            }
        }
        if (nkeys == 64) {
            rc = perr(c, "more than 64 metadata keys");
            free(k);
            free(v);
            goto fail;
        }
        keys[nkeys++] = k;
        if (strcmp(k, "model") == 0)
            w->model = v;
        else
            free(v);
        if ((rc = next_member(c, &done)))
            goto fail;
    }
fail:
    for (int i = 0; i < nkeys; i++)
        free(keys[i]);
    return rc;
}

static int cmp_name(const void *a, const void *b)
{
    return strcmp(((const struct tensor *)a)->name, ((const struct tensor *)b)->name);
}

static int cmp_begin(const void *a, const void *b)
{
    const struct tensor *x = a, *y = b;
    if (x->begin != y->begin)
        return x->begin < y->begin ? -1 : 1;
    return (x->end > y->end) - (x->end < y->end);
}

static int parse_header(veil_weights_t *w, const char *h, size_t hl)
{
    struct cursor c = { h, h + hl, h, w->path };
    int rc = expect(&c, '{'), done = 0, have_meta = 0;
    size_t cap = 0;
    if (rc)
        return rc;
    skip_ws(&c);
    if (c.p < c.end && *c.p == '}') {
        c.p++;
        done = 1;
    }
    while (!done) {
        char *key = NULL;
        const char *at = c.p;
        if ((rc = parse_string(&c, &key)) || (rc = expect(&c, ':'))) {
            free(key);
            return rc;
        }
        if (strcmp(key, "__metadata__") == 0) {
            free(key);
            if (have_meta) {
                c.p = at;
                return perr(&c, "duplicate __metadata__");
            }
            have_meta = 1;
            if ((rc = parse_metadata(&c, w)))
                return rc;
        } else {
            if (w->n == MAX_TENSORS) {
                free(key);
                return perr(&c, "more than %d tensors", MAX_TENSORS);
            }
            if (w->n == cap) {
                size_t nc = cap ? cap * 2 : 16;
                struct tensor *nt = realloc(w->t, nc * sizeof(*nt));
                if (!nt) {
                    free(key);
                    return veil_error(VEIL_ERR_NOMEM, "weights file %s: out of memory", w->path);
                }
                w->t = nt;
                cap = nc;
            }
            struct tensor *t = &w->t[w->n++];
            memset(t, 0, sizeof(*t));
            t->name = key;
            if (key[0] == '\0')
                return perr(&c, "empty tensor name");
            if ((rc = parse_tensor(&c, t)))
                return rc;
        }
        if ((rc = next_member(&c, &done)))
            return rc;
    }
    skip_ws(&c);
    if (c.p != c.end)
        return perr(&c, "trailing bytes after the header's JSON object");
    return VEIL_OK;
}

/* Sizes, offsets and duplicates, once the header is parsed. */
static int check_tensors(veil_weights_t *w)
{
    size_t data_len = w->len - w->data_off;
    for (size_t i = 0; i < w->n; i++) {
        struct tensor *t = &w->t[i];
        uint64_t bytes = dtype_sizes[t->dtype];
        for (int d = 0; d < t->ndim; d++) {
            if (t->dims[d] != 0 && bytes > UINT64_MAX / t->dims[d])
                return veil_error(VEIL_ERR_FORMAT, "weights file %s: tensor '%s': shape too large",
                                  w->path, t->name);
            bytes *= t->dims[d];
        }
        if (t->begin > t->end || t->end > data_len)
            return veil_error(VEIL_ERR_FORMAT,
                              "weights file %s: tensor '%s': data_offsets [%llu, %llu] outside the "
                              "data area of %zu bytes", w->path, t->name,
                              (unsigned long long)t->begin, (unsigned long long)t->end, data_len);
        if (t->end - t->begin != bytes)
            return veil_error(VEIL_ERR_FORMAT,
                              "weights file %s: tensor '%s': data_offsets span %llu bytes, its "
                              "dtype and shape need %llu", w->path, t->name,
                              (unsigned long long)(t->end - t->begin),
                              (unsigned long long)bytes);
    }
    struct tensor *s = malloc((w->n ? w->n : 1) * sizeof(*s));
    if (!s)
        return veil_error(VEIL_ERR_NOMEM, "weights file %s: out of memory", w->path);
    memcpy(s, w->t, w->n * sizeof(*s));
    int rc = VEIL_OK;
    qsort(s, w->n, sizeof(*s), cmp_name);
    for (size_t i = 1; i < w->n && rc == VEIL_OK; i++)
        if (strcmp(s[i - 1].name, s[i].name) == 0)
            rc = veil_error(VEIL_ERR_FORMAT, "weights file %s: tensor '%s' appears twice", w->path,
                            s[i].name);
    qsort(s, w->n, sizeof(*s), cmp_begin);
    for (size_t i = 1; i < w->n && rc == VEIL_OK; i++)
        if (s[i].begin < s[i - 1].end)
            rc = veil_error(VEIL_ERR_FORMAT,
                            "weights file %s: tensors '%s' and '%s' overlap in the data area",
                            w->path, s[i - 1].name, s[i].name);
    free(s);
    return rc;
}

/* Takes ownership of buf. */
static veil_weights_t *parse_owned(uint8_t *buf, size_t len, const char *name)
{
    veil_weights_t *w = calloc(1, sizeof(*w));
    if (!w || !(w->path = strdup(name ? name : "(memory)"))) {
        veil_error(VEIL_ERR_NOMEM, "weights file: out of memory");
        free(buf);
        free(w);
        return NULL;
    }
    w->buf = buf;
    w->len = len;
    if (len < 8) {
        veil_error(VEIL_ERR_FORMAT, "weights file %s: %zu bytes, too short for the 8-byte header "
                   "length", w->path, len);
        goto fail;
    }
    uint64_t hl = 0;
    for (int i = 7; i >= 0; i--)
        hl = hl << 8 | buf[i];
    if (hl == 0 || hl > MAX_HEADER) {
        veil_error(VEIL_ERR_FORMAT, "weights file %s: header length %llu (must be 1..%llu)",
                   w->path, (unsigned long long)hl, (unsigned long long)MAX_HEADER);
        goto fail;
    }
    if (hl > len - 8) {
        veil_error(VEIL_ERR_FORMAT, "weights file %s: header length %llu but only %zu bytes follow",
                   w->path, (unsigned long long)hl, len - 8);
        goto fail;
    }
    w->data_off = 8 + (size_t)hl;
    if (parse_header(w, (const char *)buf + 8, (size_t)hl) != VEIL_OK)
        goto fail;
    if (check_tensors(w) != VEIL_OK)
        goto fail;
    return w;
fail:
    veil_weights_destroy(&w);
    return NULL;
}

veil_weights_t *veil_weights_open(const char *path)
{
    uint8_t *buf = NULL;
    size_t len = 0;
    if (veil_data_read_file(path, 0, &buf, &len) != VEIL_OK)
        return NULL;
    return parse_owned(buf, len, path);
}

veil_weights_t *veil_weights_parse(const void *bytes, size_t len, const char *name)
{
    uint8_t *buf = malloc(len ? len : 1);
    if (!buf) {
        veil_error(VEIL_ERR_NOMEM, "weights: out of memory");
        return NULL;
    }
    if (len)
        memcpy(buf, bytes, len);
    return parse_owned(buf, len, name);
}

void veil_weights_destroy(veil_weights_t **w)
{
    if (!w || !*w)
        return;
    for (size_t i = 0; i < (*w)->n; i++)
        free((*w)->t[i].name);
    free((*w)->t);
    free((*w)->buf);
    free((*w)->model);
    free((*w)->path);
    free(*w);
    *w = NULL;
}

const char *veil_weights_model(const veil_weights_t *w)
{
    return w ? w->model : NULL;
}

int veil_weights_check_model(const veil_weights_t *w, const char *model)
{
    if (!w || !model)
        return veil_error(VEIL_ERR_INVAL, "weights: NULL argument");
    if (!w->model)
        return veil_error(VEIL_ERR_MISMATCH, "weights file %s names no model, '%s' expected",
                          w->path, model);
    if (strcmp(w->model, model) != 0)
        return veil_error(VEIL_ERR_MISMATCH, "weights file %s is for model '%s', not '%s'",
                          w->path, w->model, model);
    return VEIL_OK;
}

size_t veil_weights_count(const veil_weights_t *w)
{
    return w ? w->n : 0;
}

const char *veil_weights_name(const veil_weights_t *w, size_t i)
{
    return w && i < w->n ? w->t[i].name : NULL;
}

static const struct tensor *find(const veil_weights_t *w, const char *name)
{
    for (size_t i = 0; i < w->n; i++)
        if (strcmp(w->t[i].name, name) == 0)
            return &w->t[i];
    veil_error(VEIL_ERR_INVAL, "weights file %s has no tensor '%s'", w->path, name);
    return NULL;
}

int veil_weights_info(const veil_weights_t *w, const char *name, enum veil_dtype *dtype,
                      int *ndim, size_t *dims)
{
    if (!w || !name)
        return veil_error(VEIL_ERR_INVAL, "weights: NULL argument");
    const struct tensor *t = find(w, name);
    if (!t)
        return VEIL_ERR_INVAL;
    if (dtype)
        *dtype = t->dtype;
    if (ndim)
        *ndim = t->ndim;
    for (int i = 0; dims && i < VEIL_WEIGHTS_MAX_DIMS; i++)
        dims[i] = i < t->ndim ? t->dims[i] : 0;
    return VEIL_OK;
}

static void shape_text(char *buf, size_t cap, int ndim, const size_t *dims)
{
    size_t o = (size_t)snprintf(buf, cap, "[");
    for (int i = 0; i < ndim && o < cap; i++)
        o += (size_t)snprintf(buf + o, cap - o, "%s%zu", i ? "," : "", dims[i]);
    if (o < cap)
        snprintf(buf + o, cap - o, "]");
}

static uint64_t le64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

int veil_weights_read_f64(const veil_weights_t *w, const char *name, int ndim,
                          const size_t *dims, double *out)
{
    if (!w || !name || !out || ndim < 0 || (ndim > 0 && !dims))
        return veil_error(VEIL_ERR_INVAL, "weights: NULL or bad argument");
    const struct tensor *t = find(w, name);
    if (!t)
        return VEIL_ERR_INVAL;
    int same = t->ndim == ndim;
    for (int i = 0; same && i < ndim; i++)
        same = t->dims[i] == dims[i];
    if (!same) {
        char have[200], want[200];
        shape_text(have, sizeof(have), t->ndim, t->dims);
        shape_text(want, sizeof(want), ndim > VEIL_WEIGHTS_MAX_DIMS ? VEIL_WEIGHTS_MAX_DIMS : ndim,
                   dims);
        return veil_error(VEIL_ERR_SHAPE,
                          "weights file %s: tensor '%s' has shape %s, the model expects %s",
                          w->path, name, have, want);
    }
    const uint8_t *p = w->buf + w->data_off + t->begin;
    size_t n = (size_t)((t->end - t->begin) / dtype_sizes[t->dtype]);
    for (size_t i = 0; i < n; i++) {
        switch (t->dtype) {
        case VEIL_DTYPE_F64: {
            uint64_t u = le64(p + 8 * i);
            memcpy(&out[i], &u, 8);
            break;
        }
        case VEIL_DTYPE_F32: {
            uint32_t u = (uint32_t)p[4 * i] | (uint32_t)p[4 * i + 1] << 8 |
                         (uint32_t)p[4 * i + 2] << 16 | (uint32_t)p[4 * i + 3] << 24;
            float f;
            memcpy(&f, &u, 4);
            out[i] = f;
            break;
        }
        case VEIL_DTYPE_I64:
            out[i] = (double)(int64_t)le64(p + 8 * i);
            break;
        default:
            out[i] = (double)le64(p + 8 * i);
            break;
        }
    }
    return VEIL_OK;
}

/* ---- writer --------------------------------------------------------------------------------- */

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
        uint64_t bytes = dtype_sizes[t[i].dtype];
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
        sb_printf(&h, ":{\"dtype\":\"%s\",\"shape\":[", dtype_names[t[i].dtype]);
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
        size_t esz = dtype_sizes[t[i].dtype], numel = 1;
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

/*
 * weights.c — plaintext model weights in a safetensors-style file (format in
 * include/veil/data.h): the reader (the header's JSON through the strict tokenizer of json.c,
 * every tensor's dtype, shape and byte range checked, duplicates and overlaps refused), lookups,
 * and shape and model-name checks with messages that say what differs. The writer is
 * weights_write.c.
 */
#include "config.h"
#include "data/data_internal.h"
#include "base/base_internal.h"
#include "data/json_internal.h"

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

const char *const veil_weights_dtype_names[VEIL_DTYPE_COUNT] = { "F64", "F32", "I64", "U64" };
const size_t veil_weights_dtype_sizes[VEIL_DTYPE_COUNT] = { 8, 4, 8, 8 };

static int parse_tensor(struct veil_json_cursor *c, struct tensor *t)
{
    int rc = veil_json_expect(c, '{'), done = 0, have_dtype = 0, have_shape = 0, have_off = 0;
    if (rc)
        return rc;
    while (!done) {
        char *key = NULL;
        const char *at = c->p;
        if ((rc = veil_json_string(c, &key)) || (rc = veil_json_expect(c, ':'))) {
            free(key);
            return rc;
        }
        if (strcmp(key, "dtype") == 0 && !have_dtype) {
            char *v = NULL;
            if ((rc = veil_json_string(c, &v)))
                goto key_fail;
            int k = 0;
            while (k < VEIL_DTYPE_COUNT && strcmp(v, veil_weights_dtype_names[k]) != 0)
                k++;
            if (k == VEIL_DTYPE_COUNT) {
                rc = veil_json_error(c, "tensor '%s': unknown dtype '%.32s' (F64, F32, I64 or U64)",
                          t->name, v);
                free(v);
                goto key_fail;
            }
            free(v);
            t->dtype = (enum veil_dtype)k;
            have_dtype = 1;
        } else if (strcmp(key, "shape") == 0 && !have_shape) {
            uint64_t d[VEIL_WEIGHTS_MAX_DIMS];
            if ((rc = veil_json_uint_array(c, d, VEIL_WEIGHTS_MAX_DIMS, &t->ndim)))
                goto key_fail;
            for (int i = 0; i < t->ndim; i++) {
                if (d[i] > SIZE_MAX) {
                    rc = veil_json_error(c, "tensor '%s': dimension too large", t->name);
                    goto key_fail;
                }
                t->dims[i] = (size_t)d[i];
            }
            have_shape = 1;
        } else if (strcmp(key, "data_offsets") == 0 && !have_off) {
            uint64_t o[2];
            int cnt = 0;
            if ((rc = veil_json_uint_array(c, o, 2, &cnt)))
                goto key_fail;
            if (cnt != 2) {
                rc = veil_json_error(c, "tensor '%s': data_offsets needs [begin, end]", t->name);
                goto key_fail;
            }
            t->begin = o[0];
            t->end = o[1];
            have_off = 1;
        } else {
            c->p = at;
            rc = veil_json_error(c, "tensor '%s': %s field '%.32s'", t->name,
                      (!strcmp(key, "dtype") || !strcmp(key, "shape") ||
                       !strcmp(key, "data_offsets")) ? "duplicate" : "unknown", key);
            goto key_fail;
        }
        free(key);
        if ((rc = veil_json_next_member(c, &done)))
            return rc;
        continue;
key_fail:
        free(key);
        return rc;
    }
    if (!have_dtype || !have_shape || !have_off)
        return veil_json_error(c, "tensor '%s' lacks %s", t->name,
                    !have_dtype ? "dtype" : !have_shape ? "shape" : "data_offsets");
    return VEIL_OK;
}

static int parse_metadata(struct veil_json_cursor *c, veil_weights_t *w)
{
    int rc = veil_json_expect(c, '{'), done = 0;
    if (rc)
        return rc;
    char *keys[64];
    int nkeys = 0;
    veil_json_skip_ws(c);
    if (c->p < c->end && *c->p == '}') {
        c->p++;
        return VEIL_OK;
    }
    while (!done) {
        char *k = NULL, *v = NULL;
        const char *at = c->p;
        if ((rc = veil_json_string(c, &k)) || (rc = veil_json_expect(c, ':')) ||
            (rc = veil_json_string(c, &v))) {
            free(k);
            goto fail;
        }
        for (int i = 0; i < nkeys; i++) {
            if (strcmp(keys[i], k) == 0) {
                c->p = at;
                rc = veil_json_error(c, "duplicate metadata key '%.32s'", k);
                free(k);
                free(v);
                goto fail;
            }
        }
        if (nkeys == 64) {
            rc = veil_json_error(c, "more than 64 metadata keys");
            free(k);
            free(v);
            goto fail;
        }
        keys[nkeys++] = k;
        if (strcmp(k, "model") == 0)
            w->model = v;
        else
            free(v);
        if ((rc = veil_json_next_member(c, &done)))
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
    struct veil_json_cursor c = { h, h + hl, h, w->path };
    int rc = veil_json_expect(&c, '{'), done = 0, have_meta = 0;
    size_t cap = 0;
    if (rc)
        return rc;
    veil_json_skip_ws(&c);
    if (c.p < c.end && *c.p == '}') {
        c.p++;
        done = 1;
    }
    while (!done) {
        char *key = NULL;
        const char *at = c.p;
        if ((rc = veil_json_string(&c, &key)) || (rc = veil_json_expect(&c, ':'))) {
            free(key);
            return rc;
        }
        if (strcmp(key, "__metadata__") == 0) {
            free(key);
            if (have_meta) {
                c.p = at;
                return veil_json_error(&c, "duplicate __metadata__");
            }
            have_meta = 1;
            if ((rc = parse_metadata(&c, w)))
                return rc;
        } else {
            if (w->n == MAX_TENSORS) {
                free(key);
                return veil_json_error(&c, "more than %d tensors", MAX_TENSORS);
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
                return veil_json_error(&c, "empty tensor name");
            if ((rc = parse_tensor(&c, t)))
                return rc;
        }
        if ((rc = veil_json_next_member(&c, &done)))
            return rc;
    }
    veil_json_skip_ws(&c);
    if (c.p != c.end)
        return veil_json_error(&c, "trailing bytes after the header's JSON object");
    return VEIL_OK;
}

/* Sizes, offsets and duplicates, once the header is parsed. */
static int check_tensors(veil_weights_t *w)
{
    size_t data_len = w->len - w->data_off;
    for (size_t i = 0; i < w->n; i++) {
        struct tensor *t = &w->t[i];
        uint64_t bytes = veil_weights_dtype_sizes[t->dtype];
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
    if (w->n)
        memcpy(s, w->t, w->n * sizeof(*s)); /* w->t is NULL when the header lists no tensor */
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
    /* strict, as safetensors specifies: the tensors tile the data area, no gap, nothing after */
    uint64_t at = 0;
    for (size_t i = 0; i < w->n && rc == VEIL_OK; i++) {
        if (s[i].begin != at)
            rc = veil_error(VEIL_ERR_FORMAT, "weights file %s: %llu unused bytes in the data area "
                            "before tensor '%s'", w->path,
                            (unsigned long long)(s[i].begin - at), s[i].name);
        at = s[i].end;
    }
    if (rc == VEIL_OK && at != data_len)
        rc = veil_error(VEIL_ERR_FORMAT, "weights file %s: %llu trailing bytes after the last "
                        "tensor's data", w->path, (unsigned long long)(data_len - at));
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
    size_t n = (size_t)((t->end - t->begin) / veil_weights_dtype_sizes[t->dtype]);
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

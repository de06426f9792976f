/*
 * tensor.c — ONNX tensors as doubles: a TensorProto's data (typed fields, raw little-endian
 * bytes, or external data in a file beside the model, whose path may not leave the model's
 * folder) converted and checked against its shape; reading and writing the tensor files of a run
 * (.pb TensorProto as in ONNX's test data, NumPy .npy).
 */
#include "config.h"

#include "base/base_internal.h"
#include "onnx/onnx_internal.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OX_FILE_MAX ((size_t)1 << 34) /* 16 GiB: larger files are refused */

int ox_read_file(const char *path, size_t max, unsigned char **buf, size_t *len)
{
    *buf = NULL;
    *len = 0;
    FILE *f = fopen(path, "rb");
    if (!f)
        return veil_error(VEIL_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    size_t cap = 1 << 16, n = 0;
    unsigned char *b = malloc(cap);
    while (b) {
        size_t got = fread(b + n, 1, cap - n, f);
        n += got;
        if (n < cap)
            break;
        if (cap >= max) {
            free(b);
            fclose(f);
            return veil_error(VEIL_ERR_FORMAT, "%s: larger than %zu bytes", path, max);
        }
        unsigned char *nb = realloc(b, cap * 2);
        if (!nb)
            free(b);
        b = nb;
        cap *= 2;
    }
    int err = ferror(f);
    fclose(f);
    if (!b)
        return veil_error(VEIL_ERR_NOMEM, "%s: out of memory", path);
    if (err) {
        free(b);
        return veil_error(VEIL_ERR_IO, "%s: read error", path);
    }
    *buf = b;
    *len = n;
    return VEIL_OK;
}

int ox_is_int_type(int t)
{
    return t != ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT &&
           t != ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE &&
           t != ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16 &&
           t != ONNX__TENSOR_PROTO__DATA_TYPE__BFLOAT16;
}

int ox_tensor_shape(const Onnx__TensorProto *t, const char *what, int *ndim, size_t *dims,
                    size_t *numel)
{
    if (t->n_dims > VEIL_MAX_DIMS)
        return veil_error(VEIL_ERR_UNSUPPORTED, "%s: %zu dimensions (at most %d)", what, t->n_dims,
                          VEIL_MAX_DIMS);
    size_t n = 1;
    for (size_t i = 0; i < t->n_dims; i++) {
        if (t->dims[i] < 0 || (n > 0 && (size_t)t->dims[i] > OX_MAX_NUMEL / n))
            return veil_error(VEIL_ERR_FORMAT,
                              "%s: dimension %zu is %lld (negative, or more than "
                              "%zu elements in all)",
                              what, i, (long long)t->dims[i], OX_MAX_NUMEL);
        dims[i] = (size_t)t->dims[i];
        n *= dims[i];
    }
    *ndim = (int)t->n_dims;
    *numel = n;
    return VEIL_OK;
}

static double half_to_double(uint16_t h)
{
    int e = (h >> 10) & 31, mant = h & 1023;
    double v = e == 0    ? ldexp(mant, -24)
               : e == 31 ? (mant ? NAN : INFINITY)
                         : ldexp(mant + 1024, e - 25);
    return (h & 0x8000) ? -v : v;
}

/* Element size in raw_data, or 0 for types not read. */
static size_t elem_size(int t)
{
    switch (t) {
    case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT:
        return 4;
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT8:
        return 1;
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT8:
        return 1;
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT16:
        return 2;
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT16:
        return 2;
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT32:
        return 4;
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT64:
        return 8;
    case ONNX__TENSOR_PROTO__DATA_TYPE__BOOL:
        return 1;
    case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16:
        return 2;
    case ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE:
        return 8;
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT32:
        return 4;
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT64:
        return 8;
    case ONNX__TENSOR_PROTO__DATA_TYPE__BFLOAT16:
        return 2;
    default:
        return 0;
    }
}

static double raw_elem(const unsigned char *p, int t)
{
    uint64_t u = 0;
    size_t s = elem_size(t);
    for (size_t i = 0; i < s; i++)
        u |= (uint64_t)p[i] << (8 * i);
    switch (t) {
    case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT: {
        uint32_t w = (uint32_t)u;
        float f;
        memcpy(&f, &w, 4);
        return f;
    }
    case ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE: {
        double d;
        memcpy(&d, &u, 8);
        return d;
    }
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT8:
        return (int8_t)u;
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT16:
        return (int16_t)u;
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT32:
        return (int32_t)u;
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT64:
        return (double)(int64_t)u;
    case ONNX__TENSOR_PROTO__DATA_TYPE__BOOL:
        return u != 0;
    case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16:
        return half_to_double((uint16_t)u);
    case ONNX__TENSOR_PROTO__DATA_TYPE__BFLOAT16: {
        uint32_t w = (uint32_t)u << 16;
        float f;
        memcpy(&f, &w, 4);
        return f;
    }
    default:
        return (double)u;
    }
}

/* Reads external data: location relative to dir, no absolute path, no "..", within the file. */
static int external(const Onnx__TensorProto *t, const char *dir, const char *what, size_t bytes,
                    unsigned char **out)
{
    const char *loc = NULL;
    long long off = 0, len = -1;
    for (size_t i = 0; i < t->n_external_data; i++) {
        const Onnx__StringStringEntryProto *e = t->external_data[i];
        if (!e->key || !e->value)
            continue;
        if (!strcmp(e->key, "location"))
            loc = e->value;
        else if (!strcmp(e->key, "offset"))
            off = strtoll(e->value, NULL, 10);
        else if (!strcmp(e->key, "length"))
            len = strtoll(e->value, NULL, 10);
    }
    if (!dir)
        return veil_error(VEIL_ERR_UNSUPPORTED,
                          "%s: stored as external data, which a model "
                          "parsed from memory cannot read",
                          what);
    if (!loc || !*loc)
        return veil_error(VEIL_ERR_FORMAT, "%s: external data without a location", what);
    if (loc[0] == '/' || !strcmp(loc, "..") || !strncmp(loc, "../", 3) || strstr(loc, "/../") ||
        (strlen(loc) >= 3 && !strcmp(loc + strlen(loc) - 3, "/..")))
        return veil_error(VEIL_ERR_FORMAT,
                          "%s: external data location \"%.200s\" leaves the "
                          "model's folder %s; refused",
                          what, loc, dir);
    if (off < 0 || (len >= 0 && (size_t)len != bytes))
        return veil_error(VEIL_ERR_FORMAT,
                          "%s: external data offset %lld / length %lld do not "
                          "match the %zu bytes its shape needs",
                          what, off, len, bytes);
    char path[PATH_MAX], real[PATH_MAX], realdir[PATH_MAX];
    if (snprintf(path, sizeof path, "%s/%s", dir, loc) >= (int)sizeof path)
        return veil_error(VEIL_ERR_FORMAT, "%s: external data path too long", what);
    if (!realpath(path, real) || !realpath(dir, realdir))
        return veil_error(VEIL_ERR_IO, "%s: external data %s: %s", what, path, strerror(errno));
    size_t dl = strlen(realdir);
    if (strncmp(real, realdir, dl) || real[dl] != '/')
        return veil_error(VEIL_ERR_FORMAT,
                          "%s: external data %s resolves outside the model's "
                          "folder %s; refused",
                          what, path, realdir);
    FILE *f = fopen(real, "rb");
    if (!f)
        return veil_error(VEIL_ERR_IO, "%s: external data %s: %s", what, real, strerror(errno));
    unsigned char *b = malloc(bytes ? bytes : 1);
    int ok = b && fseeko(f, (off_t)off, SEEK_SET) == 0 && fread(b, 1, bytes, f) == bytes;
    fclose(f);
    if (!ok) {
        free(b);
        return veil_error(VEIL_ERR_FORMAT,
                          "%s: external data %s holds fewer than %lld + %zu "
                          "bytes",
                          what, real, off, bytes);
    }
    *out = b;
    return VEIL_OK;
}

int ox_tensor_values(const Onnx__TensorProto *t, const char *dir, const char *what, double **out,
                     int *present)
{
    *out = NULL;
    *present = 1;
    int ndim, dt = t->has_data_type ? t->data_type : 0;
    size_t dims[VEIL_MAX_DIMS], n;
    int rc = ox_tensor_shape(t, what, &ndim, dims, &n);
    if (rc != VEIL_OK)
        return rc;
    size_t es = elem_size(dt);
    if (!es)
        return veil_error(VEIL_ERR_UNSUPPORTED, "%s: data type %d is not numeric (or not read)",
                          what, dt);
    if (t->segment)
        return veil_error(VEIL_ERR_UNSUPPORTED, "%s: segmented tensors are not read", what);
    double *v = malloc((n ? n : 1) * sizeof *v);
    if (!v)
        return veil_error(VEIL_ERR_NOMEM, "%s: out of memory for %zu values", what, n);
    size_t typed = 0;
    if (t->has_data_location && t->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL) {
        unsigned char *b = NULL;
        rc = external(t, dir, what, n * es, &b);
        if (rc != VEIL_OK) {
            free(v);
            return rc;
        }
        for (size_t i = 0; i < n; i++)
            v[i] = raw_elem(b + i * es, dt);
        free(b);
        *out = v;
        return VEIL_OK;
    }
    if (t->has_raw_data) {
        if (t->raw_data.len != n * es) {
            free(v);
            return veil_error(VEIL_ERR_FORMAT, "%s: raw_data holds %zu bytes, its shape needs %zu",
                              what, t->raw_data.len, n * es);
        }
        for (size_t i = 0; i < n; i++)
            v[i] = raw_elem(t->raw_data.data + i * es, dt);
        *out = v;
        return VEIL_OK;
    }
    switch (dt) {
    case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT:
        typed = t->n_float_data;
        for (size_t i = 0; i < n && i < typed; i++)
            v[i] = t->float_data[i];
        break;
    case ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE:
        typed = t->n_double_data;
        for (size_t i = 0; i < n && i < typed; i++)
            v[i] = t->double_data[i];
        break;
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT64:
        typed = t->n_int64_data;
        for (size_t i = 0; i < n && i < typed; i++)
            v[i] = (double)t->int64_data[i];
        break;
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT32:
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT64:
        typed = t->n_uint64_data;
        for (size_t i = 0; i < n && i < typed; i++)
            v[i] = (double)t->uint64_data[i];
        break;
    case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16:
    case ONNX__TENSOR_PROTO__DATA_TYPE__BFLOAT16:
        typed = t->n_int32_data;
        for (size_t i = 0; i < n && i < typed; i++) {
            unsigned char b[2] = {(unsigned char)t->int32_data[i],
                                  (unsigned char)(t->int32_data[i] >> 8)};
            v[i] = raw_elem(b, dt);
        }
        break;
    default:
        typed = t->n_int32_data;
        for (size_t i = 0; i < n && i < typed; i++)
            v[i] = t->int32_data[i];
        break;
    }
    if (typed == 0 && n > 0) {
        free(v);
        *present = 0;
        return VEIL_OK;
    }
    if (typed != n) {
        free(v);
        return veil_error(VEIL_ERR_FORMAT, "%s: holds %zu values, its shape needs %zu", what, typed,
                          n);
    }
    *out = v;
    return VEIL_OK;
}

void veil_onnx_tensor_free(struct veil_onnx_tensor *t)
{
    if (!t)
        return;
    free(t->values);
    t->values = NULL;
}

/* .npy: "\x93NUMPY", major, minor, header length (2 or 4 bytes LE), a Python dict literal. */
static int npy_read(const char *path, const unsigned char *b, size_t len,
                    struct veil_onnx_tensor *t)
{
    if (len < 10)
        return veil_error(VEIL_ERR_FORMAT, "%s: truncated .npy header", path);
    size_t hl = b[6] == 1 ? (size_t)b[8] | (size_t)b[9] << 8
                : len >= 12
                    ? (size_t)b[8] | (size_t)b[9] << 8 | (size_t)b[10] << 16 | (size_t)b[11] << 24
                    : SIZE_MAX;
    size_t h0 = b[6] == 1 ? 10 : 12;
    if (hl > len - h0 || hl > 65536)
        return veil_error(VEIL_ERR_FORMAT, "%s: truncated .npy header", path);
    char hdr[65537];
    memcpy(hdr, b + h0, hl);
    hdr[hl] = 0;
    const char *d = strstr(hdr, "'descr':"), *s = strstr(hdr, "'shape':");
    if (!d || !s || strstr(hdr, "'fortran_order': True"))
        return veil_error(VEIL_ERR_FORMAT,
                          "%s: .npy header without descr/shape, or in Fortran "
                          "order",
                          path);
    d = strchr(d + 8, '\'');
    int dt = 0;
    size_t es = 0;
    if (d && !strncmp(d, "'<f4'", 5))
        dt = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, es = 4;
    else if (d && !strncmp(d, "'<f8'", 5))
        dt = ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE, es = 8;
    else if (d && !strncmp(d, "'<i4'", 5))
        dt = ONNX__TENSOR_PROTO__DATA_TYPE__INT32, es = 4;
    else if (d && !strncmp(d, "'<i8'", 5))
        dt = ONNX__TENSOR_PROTO__DATA_TYPE__INT64, es = 8;
    else
        return veil_error(VEIL_ERR_UNSUPPORTED,
                          "%s: .npy dtype not read (give <f4, <f8, <i4 or "
                          "<i8)",
                          path);
    s = strchr(s, '(');
    if (!s)
        return veil_error(VEIL_ERR_FORMAT, "%s: .npy shape is not a tuple", path);
    s++;
    memset(t, 0, sizeof *t);
    size_t n = 1;
    while (*s && *s != ')') {
        while (*s == ' ' || *s == ',')
            s++;
        if (*s == ')')
            break;
        char *e;
        unsigned long long v = strtoull(s, &e, 10);
        if (e == s || t->ndim == VEIL_MAX_DIMS || v > OX_MAX_NUMEL || (v && n > OX_MAX_NUMEL / v))
            return veil_error(VEIL_ERR_FORMAT, "%s: .npy shape unreadable or too large", path);
        t->dims[t->ndim++] = (size_t)v;
        n *= (size_t)v;
        s = e;
    }
    if (len - h0 - hl != n * es)
        return veil_error(VEIL_ERR_FORMAT, "%s: .npy holds %zu data bytes, its shape needs %zu",
                          path, len - h0 - hl, n * es);
    t->numel = n;
    t->data_type = dt;
    t->values = malloc((n ? n : 1) * sizeof(double));
    if (!t->values)
        return veil_error(VEIL_ERR_NOMEM, "%s: out of memory", path);
    for (size_t i = 0; i < n; i++)
        t->values[i] = raw_elem(b + h0 + hl + i * es, dt);
    return VEIL_OK;
}

int veil_onnx_tensor_read(const char *path, struct veil_onnx_tensor *t)
{
    if (!path || !t)
        return veil_error(VEIL_ERR_INVAL, "veil_onnx_tensor_read: NULL argument");
    memset(t, 0, sizeof *t);
    unsigned char *b;
    size_t len;
    int rc = ox_read_file(path, OX_FILE_MAX, &b, &len);
    if (rc != VEIL_OK)
        return rc;
    if (len >= 6 && !memcmp(b, "\x93NUMPY", 6)) {
        rc = npy_read(path, b, len, t);
        free(b);
        return rc;
    }
    Onnx__TensorProto *tp = onnx__tensor_proto__unpack(NULL, len, b);
    free(b);
    if (!tp)
        return veil_error(VEIL_ERR_FORMAT, "%s: not an ONNX TensorProto (nor a .npy file)", path);
    int present = 1;
    rc = ox_tensor_shape(tp, path, &t->ndim, t->dims, &t->numel);
    if (rc == VEIL_OK)
        rc = ox_tensor_values(tp, NULL, path, &t->values, &present);
    if (rc == VEIL_OK && !present)
        rc = veil_error(VEIL_ERR_FORMAT, "%s: tensor has no data", path);
    if (rc == VEIL_OK) {
        t->data_type = tp->data_type;
        snprintf(t->name, sizeof t->name, "%s", tp->name ? tp->name : "");
    } else {
        veil_onnx_tensor_free(t);
    }
    onnx__tensor_proto__free_unpacked(tp, NULL);
    return rc;
}

static int write_all(const char *path, const void *a, size_t na, const void *b, size_t nb)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return veil_error(VEIL_ERR_IO, "%s: cannot create: %s", path, strerror(errno));
    int ok = fwrite(a, 1, na, f) == na && (!nb || fwrite(b, 1, nb, f) == nb);
    ok = (fclose(f) == 0) && ok;
    return ok ? VEIL_OK : veil_error(VEIL_ERR_IO, "%s: write failed", path);
}

int veil_onnx_tensor_write(const char *path, const struct veil_onnx_tensor *t)
{
    if (!path || !t || t->ndim < 0 || t->ndim > VEIL_MAX_DIMS)
        return veil_error(VEIL_ERR_INVAL, "veil_onnx_tensor_write: bad argument");
    size_t n = t->numel, pl = strlen(path);
    if (pl > 4 && !strcmp(path + pl - 4, ".npy")) {
        char hdr[256];
        int k = snprintf(hdr, sizeof hdr, "{'descr': '<f8', 'fortran_order': False, 'shape': (");
        for (int i = 0; i < t->ndim; i++)
            k += snprintf(hdr + k, sizeof hdr - (size_t)k, "%zu%s", t->dims[i],
                          t->ndim == 1      ? ","
                          : i + 1 < t->ndim ? ", "
                                            : "");
        k += snprintf(hdr + k, sizeof hdr - (size_t)k, "), }");
        unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, 0, 0};
        size_t total = 10 + (size_t)k + 1, pad = (64 - total % 64) % 64;
        unsigned char head[10 + 256 + 64];
        memcpy(head, pre, 10);
        memcpy(head + 10, hdr, (size_t)k);
        memset(head + 10 + k, ' ', pad);
        head[10 + k + pad] = '\n';
        size_t hl = (size_t)k + pad + 1;
        head[8] = (unsigned char)hl;
        head[9] = (unsigned char)(hl >> 8);
        return write_all(path, head, 10 + hl, t->values, n * sizeof(double));
    }
    Onnx__TensorProto tp = ONNX__TENSOR_PROTO__INIT;
    int64_t dims[VEIL_MAX_DIMS];
    for (int i = 0; i < t->ndim; i++)
        dims[i] = (int64_t)t->dims[i];
    tp.n_dims = (size_t)t->ndim;
    tp.dims = dims;
    tp.has_data_type = 1;
    tp.data_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
    tp.name = (char *)t->name;
    unsigned char *raw = malloc(n * 4 + 1);
    if (!raw)
        return veil_error(VEIL_ERR_NOMEM, "%s: out of memory", path);
    for (size_t i = 0; i < n; i++) {
        float f = (float)t->values[i];
        uint32_t w;
        memcpy(&w, &f, 4);
        for (int k = 0; k < 4; k++)
            raw[4 * i + (size_t)k] = (unsigned char)(w >> (8 * k));
    }
    tp.has_raw_data = 1;
    tp.raw_data.len = n * 4;
    tp.raw_data.data = raw;
    size_t sz = onnx__tensor_proto__get_packed_size(&tp);
    unsigned char *buf = malloc(sz + 1);
    int rc = VEIL_ERR_NOMEM;
    if (buf) {
        onnx__tensor_proto__pack(&tp, buf);
        rc = write_all(path, buf, sz, NULL, 0);
    }
    free(buf);
    free(raw);
    return rc == VEIL_ERR_NOMEM ? veil_error(rc, "%s: out of memory", path) : rc;
}

/*
 * idx.c — MNIST / Fashion-MNIST IDX files (images 0x00000803, labels 0x00000801, unsigned
 * bytes, big-endian dimensions), plain or gzip'ed, validated against the file length.
 */
#include "config.h"
#include "data/data_internal.h"
#include "base/base_internal.h"

#include <stdlib.h>
#include <string.h>

struct veil_dataset {
    size_t count, rows, cols;
    uint8_t *pixels;
    uint8_t *labels;
};

static uint32_t be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* Checks an IDX header of ndim dimensions and returns the element count in *numel; the file's
 * remaining length must be exactly that many bytes. */
static int parse_idx(const char *path, const uint8_t *b, size_t len, int want_ndim,
                     uint32_t dims[3], size_t *numel)
{
    const char *what = want_ndim == 1 ? "label" : "image";
    if (len < 4)
        return veil_error(VEIL_ERR_FORMAT,
                          "IDX %s file '%s': truncated header (%zu bytes, at least 4 needed)",
                          what, path, len);
    if (b[0] != 0 || b[1] != 0)
        return veil_error(VEIL_ERR_FORMAT,
                          "IDX %s file '%s': bad magic 0x%08x (expected 0x%08x); not an IDX file",
                          what, path, be32(b), 0x800u + (unsigned)want_ndim);
    if (b[2] != 0x08)
        return veil_error(VEIL_ERR_FORMAT,
                          "IDX %s file '%s': element type 0x%02x unsupported (only 0x08, "
                          "unsigned byte)", what, path, b[2]);
    if (b[3] != want_ndim)
        return veil_error(VEIL_ERR_FORMAT,
                          "IDX %s file '%s': bad magic 0x%08x (expected 0x%08x): %d dimensions, "
                          "not %d", what, path, be32(b), 0x800u + (unsigned)want_ndim, b[3],
                          want_ndim);
    size_t hdr = 4 + 4 * (size_t)want_ndim;
    if (len < hdr)
        return veil_error(VEIL_ERR_FORMAT,
                          "IDX %s file '%s': truncated header (%zu bytes, expected %zu)", what,
                          path, len, hdr);
    size_t n = 1;
    for (int i = 0; i < want_ndim; i++) {
        dims[i] = be32(b + 4 + 4 * i);
        if (i > 0 && dims[i] == 0)
            return veil_error(VEIL_ERR_FORMAT, "IDX %s file '%s': dimension %d is 0", what, path,
                              i);
        if (dims[i] != 0 && n > (VEIL_DATA_MAX_FILE - hdr) / dims[i])
            return veil_error(VEIL_ERR_FORMAT,
                              "IDX %s file '%s': dimensions describe more than %zu bytes "
                              "(size overflow)", what, path, (size_t)VEIL_DATA_MAX_FILE);
        n *= dims[i];
    }
    if (len - hdr != n)
        return veil_error(VEIL_ERR_FORMAT,
                          "IDX %s file '%s': %s: the header describes %zu bytes of data "
                          "(%zu in all), the file has %zu (%zu in all)", what, path,
                          len - hdr < n ? "truncated data" : "trailing bytes after the data",
                          n, n + hdr, len - hdr, len);
    *numel = n;
    return VEIL_OK;
}

veil_dataset_t *veil_dataset_load_idx(const char *images_path, const char *labels_path,
                                      int check_labels)
{
    uint8_t *ib = NULL, *lb = NULL;
    size_t il = 0, ll = 0, numel = 0;
    uint32_t idims[3] = { 0 }, ldims[3] = { 0 };
    veil_dataset_t *d = NULL;
    if (!images_path) {
        veil_error(VEIL_ERR_INVAL, "IDX dataset: no image file given");
        return NULL;
    }
    if (veil_data_read_file(images_path, 1, &ib, &il) != VEIL_OK)
        goto fail;
    if (parse_idx(images_path, ib, il, 3, idims, &numel) != VEIL_OK)
        goto fail;
    if (labels_path) {
        size_t lnum = 0;
        if (veil_data_read_file(labels_path, 1, &lb, &ll) != VEIL_OK)
            goto fail;
        if (parse_idx(labels_path, lb, ll, 1, ldims, &lnum) != VEIL_OK)
            goto fail;
        if (ldims[0] != idims[0]) {
            veil_error(VEIL_ERR_MISMATCH,
                       "IDX dataset: '%s' has %u images but '%s' has %u labels", images_path,
                       idims[0], labels_path, ldims[0]);
            goto fail;
        }
        for (size_t i = 0; check_labels && i < lnum; i++) {
            if (lb[8 + i] > 9) {
                veil_error(VEIL_ERR_FORMAT, "IDX label file '%s': label %zu is %u, not 0..9",
                           labels_path, i, lb[8 + i]);
                goto fail;
            }
        }
    }
    d = calloc(1, sizeof(*d));
    if (!d) {
        veil_error(VEIL_ERR_NOMEM, "IDX dataset: out of memory");
        goto fail;
    }
    d->count = idims[0];
    d->rows = idims[1];
    d->cols = idims[2];
    /* Keep the files' buffers and point past their headers: no second copy of 47 MB. */
    memmove(ib, ib + 16, numel);
    d->pixels = ib;
    if (lb) {
        memmove(lb, lb + 8, d->count);
        d->labels = lb;
    }
    return d;
fail:
    free(ib);
    free(lb);
    return NULL;
}

void veil_dataset_destroy(veil_dataset_t **d)
{
    if (!d || !*d)
        return;
    free((*d)->pixels);
    free((*d)->labels);
    free(*d);
    *d = NULL;
}

size_t veil_dataset_count(const veil_dataset_t *d)
{
    return d ? d->count : 0;
}

size_t veil_dataset_rows(const veil_dataset_t *d)
{
    return d ? d->rows : 0;
}

size_t veil_dataset_cols(const veil_dataset_t *d)
{
    return d ? d->cols : 0;
}

const uint8_t *veil_dataset_pixels(const veil_dataset_t *d)
{
    return d ? d->pixels : NULL;
}

const uint8_t *veil_dataset_labels(const veil_dataset_t *d)
{
    return d ? d->labels : NULL;
}

int veil_dataset_image_f64(const veil_dataset_t *d, size_t index, double *out)
{
    if (!d || !out)
        return veil_error(VEIL_ERR_INVAL, "IDX dataset: NULL argument");
    if (index >= d->count)
        return veil_error(VEIL_ERR_RANGE, "IDX dataset: image %zu requested, it has %zu", index,
                          d->count);
    size_t n = d->rows * d->cols;
    const uint8_t *p = d->pixels + index * n;
    for (size_t i = 0; i < n; i++)
        out[i] = p[i] / 255.0;
    return VEIL_OK;
}

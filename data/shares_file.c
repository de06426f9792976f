/*
 * shares_file.c — one party's share tensor saved to and loaded from its own file, bound to a
 * session, a party id, a party count and a name, and protected by a SHA-256 over the whole
 * content (format in include/veil/data.h). Loading refuses any other binding or a damaged file.
 */
#include "config.h"
#include "data/data_internal.h"
#include "base/base_internal.h"

#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>

#define MAGIC "VEILSHR1"
#define FILE_VERSION 1u
#define FIXED_BYTES (8 + 4 * 4 + 16 + 4 + 4) /* magic .. ndim */
#define MAX_NAME 255
#define MAX_DIMS 8

static int check_id(const struct veil_share_file_id *id, const char *what)
{
    if (!id || !id->name)
        return veil_error(VEIL_ERR_INVAL, "share file %s: no identity given", what);
    size_t nl = strlen(id->name);
    if (nl == 0 || nl > MAX_NAME)
        return veil_error(VEIL_ERR_INVAL, "share file %s: name of %zu bytes (1..%d)", what, nl,
                          MAX_NAME);
    if (id->nparties < 1 || id->party < 0 || id->party > id->nparties)
        return veil_error(VEIL_ERR_INVAL, "share file %s: party %d of %d parties", what,
                          id->party, id->nparties);
    return VEIL_OK;
}

int veil_share_save(const char *path, const veil_share_t *s, const struct veil_share_file_id *id)
{
    if (!path || !s)
        return veil_error(VEIL_ERR_INVAL, "share save: NULL argument");
    int rc = check_id(id, path);
    if (rc)
        return rc;
    int ndim = veil_share_ndim(s);
    if (ndim > MAX_DIMS)
        return veil_error(VEIL_ERR_UNSUPPORTED, "share save %s: %d dimensions (at most %d)",
                          path, ndim, MAX_DIMS);
    size_t nl = strlen(id->name), numel = veil_share_numel(s);
    if (numel > (VEIL_DATA_MAX_FILE - 4096) / 8)
        return veil_error(VEIL_ERR_RANGE, "share save %s: tensor too large", path);
    size_t total = FIXED_BYTES + 8 * (size_t)ndim + nl + 8 * numel + 32;
    uint8_t *b = malloc(total), *p = b;
    if (!b)
        return veil_error(VEIL_ERR_NOMEM, "share save %s: out of memory", path);
    memcpy(p, MAGIC, 8);
    veil_put_le32(p + 8, FILE_VERSION);
    veil_put_le32(p + 12, (uint32_t)veil_share_kind(s));
    veil_put_le32(p + 16, (uint32_t)id->party);
    veil_put_le32(p + 20, (uint32_t)id->nparties);
    memcpy(p + 24, id->session, 16);
    veil_put_le32(p + 40, (uint32_t)nl);
    veil_put_le32(p + 44, (uint32_t)ndim);
    p += FIXED_BYTES;
    for (int i = 0; i < ndim; i++, p += 8)
        veil_put_le64(p, veil_share_dim(s, i));
    memcpy(p, id->name, nl);
    p += nl;
    const uint64_t *w = veil_share_cdata(s);
    for (size_t i = 0; i < numel; i++, p += 8)
        veil_put_le64(p, w[i]);
    rc = veil_data_sha256(b, total - 32, p, "share file");
    if (rc == VEIL_OK)
        rc = veil_data_write_atomic(path, b, total, 0600);
    veil_wipe(b, total); /* a share is secret material */
    free(b);
    return rc;
}

static void hex16(const uint8_t *s, char out[33])
{
    for (int i = 0; i < 16; i++)
        snprintf(out + 2 * i, 3, "%02x", s[i]);
}

veil_share_t *veil_share_load(const char *path, const struct veil_share_file_id *expect)
{
    uint8_t *b = NULL;
    size_t len = 0;
    veil_share_t *s = NULL;
    if (check_id(expect, path ? path : "(null)") != VEIL_OK)
        return NULL;
    if (veil_data_read_file(path, 0, &b, &len) != VEIL_OK)
        return NULL;
    if (len < FIXED_BYTES + 32 || memcmp(b, MAGIC, 8) != 0) {
        veil_error(VEIL_ERR_FORMAT, "share file %s: not a Veil share file (%s)", path,
                   len < FIXED_BYTES + 32 ? "too short" : "bad magic");
        goto fail;
    }
    uint8_t digest[32];
    if (veil_data_sha256(b, len - 32, digest, "share file") != VEIL_OK)
        goto fail;
    if (memcmp(digest, b + len - 32, 32) != 0) {
        veil_error(VEIL_ERR_CRYPTO, "share file %s: SHA-256 mismatch: the file is corrupted or "
                   "was altered", path);
        goto fail;
    }
    /* The digest only proves the writer's intent; the fields are still checked for sense. */
    uint32_t ver = veil_get_le32(b + 8), kind = veil_get_le32(b + 12);
    uint32_t party = veil_get_le32(b + 16);
    uint32_t np = veil_get_le32(b + 20), nl = veil_get_le32(b + 40), ndim = veil_get_le32(b + 44);
    if (ver != FILE_VERSION || kind >= VEIL_SHARE_KIND_COUNT || nl == 0 || nl > MAX_NAME ||
        ndim > MAX_DIMS) {
        veil_error(VEIL_ERR_FORMAT, "share file %s: unsupported version %u or bad header", path,
                   ver);
        goto fail;
    }
    size_t hdr = FIXED_BYTES + 8 * (size_t)ndim + nl;
    if (len - 32 < hdr) {
        veil_error(VEIL_ERR_FORMAT, "share file %s: header longer than the file", path);
        goto fail;
    }
    size_t dims[MAX_DIMS], numel = 1;
    for (uint32_t i = 0; i < ndim; i++) {
        uint64_t d = veil_get_le64(b + FIXED_BYTES + 8 * i);
        if (d == 0 || d > (len / 8) || numel > (len / 8) / d) {
            veil_error(VEIL_ERR_FORMAT, "share file %s: dimension %u is %llu", path, i,
                       (unsigned long long)d);
            goto fail;
        }
        dims[i] = (size_t)d;
        numel *= dims[i];
    }
    if (len - 32 - hdr != 8 * numel) {
        veil_error(VEIL_ERR_FORMAT, "share file %s: %zu data bytes, the shape needs %zu", path,
                   len - 32 - hdr, 8 * numel);
        goto fail;
    }
    const char *name = (const char *)b + FIXED_BYTES + 8 * ndim;
    char hs[33], he[33];
    if (memcmp(b + 24, expect->session, 16) != 0) {
        hex16(b + 24, hs);
        hex16(expect->session, he);
        veil_error(VEIL_ERR_MISMATCH, "share file %s belongs to session %s, not to this session "
                   "%s", path, hs, he);
        goto fail;
    }
    if (np != (uint32_t)expect->nparties) {
        veil_error(VEIL_ERR_MISMATCH, "share file %s was saved for %u parties, this run has %d",
                   path, np, expect->nparties);
        goto fail;
    }
    if (party != (uint32_t)expect->party) {
        veil_error(VEIL_ERR_MISMATCH, "share file %s holds party %u's share, this is party %d",
                   path, party, expect->party);
        goto fail;
    }
    if (nl != strlen(expect->name) || memcmp(name, expect->name, nl) != 0) {
        veil_error(VEIL_ERR_MISMATCH, "share file %s holds '%.*s', not '%s'", path, (int)nl, name,
                   expect->name);
        goto fail;
    }
    s = veil_share_new((enum veil_share_kind)kind, (int)ndim, dims);
    if (!s)
        goto fail;
    uint64_t *w = veil_share_data(s);
    const uint8_t *p = b + hdr;
    for (size_t i = 0; i < numel; i++)
        w[i] = veil_get_le64(p + 8 * i);
fail:
    veil_wipe(b, len);
    free(b);
    return s;
}

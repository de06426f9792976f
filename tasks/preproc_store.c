/*
 * preproc_store.c — the writer of the per-party preprocessing file (format v2 in preproc.h): it
 * builds the file in a temporary file, hashing as it goes, and publishes it atomically (fsync,
 * rename, fsync of the directory). The reader, which verifies the whole file on open and hands
 * out items in plan order, is preproc_read.c; what both share is preproc_file.h.
 */
#include "config.h"
#include "base/base_internal.h"
#include "tasks/preproc_file.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define HEADER_BYTES VEIL_PREPROC_FILE_HEADER_BYTES
#define ENTRY_BYTES VEIL_PREPROC_FILE_ENTRY_BYTES
#define DIGEST_BYTES VEIL_PREPROC_DIGEST_BYTES

struct veil_preproc_writer {
    char *path, *tmp;
    FILE *f;
    EVP_MD_CTX *md;
    struct veil_preproc_item *items;
    uint8_t *stored; /* per item: its weight mask is in the file (veil_pf_mask_stored) */
    size_t nitems, next;
};

static void encode_header(uint8_t *h, const struct veil_preproc_layout *layout, int party,
                          const uint8_t *plan_digest, uint64_t nitems)
{
    memset(h, 0, HEADER_BYTES);
    memcpy(h, VEIL_PREPROC_FILE_MAGIC, 8);
    veil_put_le32(h + 8, VEIL_PREPROC_FILE_VERSION);
    veil_put_le32(h + 12, (uint32_t)party);
    veil_put_le32(h + 16, (uint32_t)layout->nparties);
    veil_put_le32(h + 20, (uint32_t)layout->frac_bits);
    veil_put_le32(h + 24, (uint32_t)layout->designated);
    memcpy(h + 32, layout->session_id, VEIL_PREPROC_SID_BYTES);
    memcpy(h + 48, plan_digest, DIGEST_BYTES);
    veil_put_le64(h + 80, nitems);
}

static void encode_entry(uint8_t *e, const struct veil_preproc_item *it, uint64_t offset,
                         uint64_t words)
{
    memset(e, 0, ENTRY_BYTES);
    veil_put_le32(e, (uint32_t)it->kind);
    veil_put_le64(e + 8, it->index);
    for (int j = 0; j < VEIL_PREPROC_MAX_PARAMS; j++)
        veil_put_le64(e + 16 + 8 * j, it->p[j]);
    veil_put_le64(e + 112, offset);
    veil_put_le64(e + 120, words);
}

/* ------------------------------------------------------------------------------------------ */
/* Writer                                                                                      */

static int wr(veil_preproc_writer_t *w, const void *p, size_t n)
{
    if (n && fwrite(p, 1, n, w->f) != n)
        return veil_error(VEIL_ERR_IO, "preproc store: writing %s: %s", w->tmp, strerror(errno));
    if (EVP_DigestUpdate(w->md, p, n) != 1)
        return veil_error(VEIL_ERR_CRYPTO, "preproc store: SHA-256 update failed");
    return VEIL_OK;
}

/* n share words, little-endian. */
static int write_words(veil_preproc_writer_t *w, const uint64_t *words, size_t n)
{
    int rc = VEIL_OK;
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    uint64_t tmp[512];
    for (size_t done = 0; rc == VEIL_OK && done < n; done += 512) {
        size_t k = n - done < 512 ? n - done : 512;
        memcpy(tmp, words + done, k * 8);
        veil_pf_words_le(tmp, k);
        rc = wr(w, tmp, k * 8);
    }
    veil_wipe(tmp, sizeof tmp);
#else
    rc = wr(w, words, n * sizeof(uint64_t));
#endif
    return rc;
}

void veil_preproc_writer_abort(veil_preproc_writer_t **wp)
{
    if (!wp || !*wp)
        return;
    veil_preproc_writer_t *w = *wp;
    if (w->f)
        fclose(w->f);
    if (w->tmp)
        unlink(w->tmp);
    EVP_MD_CTX_free(w->md);
    free(w->items);
    free(w->stored);
    free(w->path);
    free(w->tmp);
    free(w);
    *wp = NULL;
}

int veil_preproc_writer_open(const char *path, const struct veil_preproc_layout *layout, int party,
                             const uint8_t plan_digest[VEIL_PREPROC_DIGEST_BYTES],
                             const struct veil_preproc_item *items, size_t nitems,
                             veil_preproc_writer_t **out)
{
    uint8_t buf[HEADER_BYTES > ENTRY_BYTES ? HEADER_BYTES : ENTRY_BYTES];
    struct veil_preproc_desc d;
    if (!out)
        return veil_error(VEIL_ERR_INVAL, "preproc store: NULL output");
    *out = NULL;
    int rc = veil_preproc_layout_check(layout);
    if (rc != VEIL_OK)
        return rc;
    if (!path || !plan_digest || (nitems && !items) || party < 0 || party >= layout->nparties)
        return veil_error(VEIL_ERR_INVAL,
                          "preproc store: need a path, a plan digest, the items "
                          "and a party in [0, %d) (got %d)",
                          layout->nparties, party);
    if (nitems > (SIZE_MAX / sizeof *items))
        return veil_error(VEIL_ERR_RANGE, "preproc store: %zu items is too many", nitems);
    veil_preproc_writer_t *w = calloc(1, sizeof *w);
    if (!w)
        return veil_error(VEIL_ERR_NOMEM, "preproc store: out of memory");
    w->path = veil_pf_dup_str(path, "");
    w->tmp = veil_pf_dup_str(path, ".tmp.XXXXXX");
    w->items = malloc((nitems ? nitems : 1) * sizeof *items);
    w->stored = malloc(nitems ? nitems : 1);
    w->md = EVP_MD_CTX_new();
    if (!w->path || !w->tmp || !w->items || !w->stored || !w->md) {
        rc = veil_error(VEIL_ERR_NOMEM, "preproc store: out of memory");
        goto fail;
    }
    if (nitems)
        memcpy(w->items, items, nitems * sizeof *items);
    w->nitems = nitems;
    if ((rc = veil_pf_mask_stored(w->items, nitems, w->stored)) != VEIL_OK)
        goto fail;
    if (EVP_DigestInit_ex(w->md, EVP_sha256(), NULL) != 1) {
        rc = veil_error(VEIL_ERR_CRYPTO, "preproc store: SHA-256 init failed");
        goto fail;
    }
    int fd = mkstemp(w->tmp);
    if (fd < 0) {
        rc =
            veil_error(VEIL_ERR_IO, "preproc store: cannot create %s: %s", w->tmp, strerror(errno));
        free(w->tmp); /* nothing to unlink */
        w->tmp = NULL;
        goto fail;
    }
    w->f = fdopen(fd, "wb");
    if (!w->f) {
        close(fd);
        rc = veil_error(VEIL_ERR_IO, "preproc store: fdopen %s: %s", w->tmp, strerror(errno));
        goto fail;
    }
    encode_header(buf, layout, party, plan_digest, nitems);
    rc = wr(w, buf, HEADER_BYTES);
    uint64_t offset = 0;
    for (size_t i = 0; rc == VEIL_OK && i < nitems; i++) {
        rc = veil_preproc_item_describe(&items[i], &d);
        if (rc != VEIL_OK)
            break;
        const size_t words = veil_pf_stored_words(&d, w->stored[i]);
        encode_entry(buf, &items[i], offset, words);
        offset += words;
        rc = wr(w, buf, ENTRY_BYTES);
    }
    if (rc != VEIL_OK)
        goto fail;
    *out = w;
    return VEIL_OK;
fail:
    veil_preproc_writer_abort(&w);
    return rc;
}

int veil_preproc_writer_put(veil_preproc_writer_t *w, const struct veil_preproc_share *share)
{
    char want[256], got[256];
    if (!w || !share || !share->words)
        return veil_error(VEIL_ERR_INVAL, "preproc store: NULL writer or empty share");
    if (w->next >= w->nitems)
        return veil_error(VEIL_ERR_STATE,
                          "preproc store: all %zu items are written already; "
                          "got %s",
                          w->nitems, veil_preproc_item_format(&share->item, got, sizeof got));
    const struct veil_preproc_item *it = &w->items[w->next];
    if (!veil_pf_same_item(it, &share->item) || share->nwords != veil_preproc_share_words(it))
        return veil_error(VEIL_ERR_MISMATCH,
                          "preproc store: item %zu of %s should be %s, got %s "
                          "(%zu words)",
                          w->next, w->path, veil_preproc_item_format(it, want, sizeof want),
                          veil_preproc_item_format(&share->item, got, sizeof got), share->nwords);
    struct veil_preproc_desc d;
    int rc = veil_preproc_item_describe(it, &d);
    if (rc != VEIL_OK)
        return rc;
    /* the words before B's and from the end of B's: all of them unless B is left out */
    const size_t cut = w->stored[w->next] ? share->nwords : d.part[VEIL_PRE_B].offset,
                 resume = w->stored[w->next] ? share->nwords : cut + d.part[VEIL_PRE_B].numel;
    rc = write_words(w, share->words, cut);
    if (rc == VEIL_OK)
        rc = write_words(w, share->words + resume, share->nwords - resume);
    if (rc == VEIL_OK)
        w->next++;
    return rc;
}

/* fsync the directory holding path so that the rename is durable. */
static int sync_dir(const char *path)
{
    char *dir = veil_pf_dup_str(path, "");
    if (!dir)
        return veil_error(VEIL_ERR_NOMEM, "preproc store: out of memory");
    char *slash = strrchr(dir, '/');
    if (!slash)
        strcpy(dir, ".");
    else if (slash == dir)
        dir[1] = '\0';
    else
        *slash = '\0';
    int fd = open(dir, O_RDONLY | O_DIRECTORY), rc = VEIL_OK;
    if (fd < 0 || fsync(fd) != 0)
        rc = veil_error(VEIL_ERR_IO, "preproc store: fsync of directory %s: %s", dir,
                        strerror(errno));
    if (fd >= 0)
        close(fd);
    free(dir);
    return rc;
}

int veil_preproc_writer_commit(veil_preproc_writer_t **wp)
{
    uint8_t digest[DIGEST_BYTES];
    unsigned int len = 0;
    if (!wp || !*wp)
        return veil_error(VEIL_ERR_INVAL, "preproc store: NULL writer");
    veil_preproc_writer_t *w = *wp;
    int rc = VEIL_OK;
    if (w->next != w->nitems) {
        rc = veil_error(VEIL_ERR_STATE, "preproc store: %s: only %zu of %zu items written", w->path,
                        w->next, w->nitems);
        goto fail;
    }
    if (EVP_DigestFinal_ex(w->md, digest, &len) != 1 || len != DIGEST_BYTES) {
        rc = veil_error(VEIL_ERR_CRYPTO, "preproc store: SHA-256 final failed");
        goto fail;
    }
    if (fwrite(digest, 1, DIGEST_BYTES, w->f) != DIGEST_BYTES || fflush(w->f) != 0 ||
        fsync(fileno(w->f)) != 0) {
        rc = veil_error(VEIL_ERR_IO, "preproc store: writing %s: %s", w->tmp, strerror(errno));
        goto fail;
    }
    FILE *f = w->f;
    w->f = NULL;
    if (fclose(f) != 0) {
        rc = veil_error(VEIL_ERR_IO, "preproc store: closing %s: %s", w->tmp, strerror(errno));
        goto fail;
    }
    if (rename(w->tmp, w->path) != 0) {
        rc = veil_error(VEIL_ERR_IO, "preproc store: rename %s to %s: %s", w->tmp, w->path,
                        strerror(errno));
        goto fail;
    }
    free(w->tmp);
    w->tmp = NULL; /* published: nothing to remove any more */
    rc = sync_dir(w->path);
fail:
    veil_preproc_writer_abort(wp);
    return rc;
}

/*
 * preproc_read.c — the reader of the per-party preprocessing file (format v2 in preproc.h): it
 * verifies the whole file on open (header, table, digest) and then hands out items in plan
 * order, refusing anything that is not exactly what the caller expects (a weight mask the file
 * stores in the weight's first item only included). Every length and offset
 * read from the file is bounds-checked before use. The writer is preproc_store.c.
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

struct veil_preproc_reader {
    char *path;
    int fd;
    struct veil_preproc_item *items;
    uint64_t *offset; /* word offset of each item in the data */
    uint8_t *stored;  /* per item: its weight mask is in the file (veil_pf_mask_stored) */
    size_t nitems, next;
    uint64_t data_start;              /* byte offset of the data */
    struct veil_preproc_prefetch *pf; /* NULL: no reading ahead */
};

/* ------------------------------------------------------------------------------------------ */
/* Reader                                                                                      */

/* Reads exactly n bytes at off; VEIL_ERR_FORMAT when the file is shorter, VEIL_ERR_IO. */
static int read_at(const veil_preproc_reader_t *r, void *buf, size_t n, uint64_t off)
{
    uint8_t *b = buf;
    while (n) {
        ssize_t got = pread(r->fd, b, n, (off_t)off);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0)
            return veil_error(VEIL_ERR_IO, "preproc load: reading %s: %s", r->path,
                              strerror(errno));
        if (got == 0)
            return veil_error(VEIL_ERR_FORMAT,
                              "preproc load: %s ends at byte %llu, before the "
                              "data it describes (truncated or changed while open)",
                              r->path, (unsigned long long)off);
        b += got;
        n -= (size_t)got;
        off += (uint64_t)got;
    }
    return VEIL_OK;
}

void veil_preproc_reader_close(veil_preproc_reader_t **rp)
{
    if (!rp || !*rp)
        return;
    veil_preproc_reader_t *r = *rp;
    veil_pf_stop(&r->pf); /* before the descriptor its thread reads */
    if (r->fd >= 0)
        close(r->fd);
    free(r->items);
    free(r->offset);
    free(r->stored);
    free(r->path);
    free(r);
    *rp = NULL;
}

/* SHA-256 of bytes [0, n) against the digest stored at n. */
static int check_digest(veil_preproc_reader_t *r, uint64_t n)
{
    uint8_t want[DIGEST_BYTES], got[DIGEST_BYTES];
    unsigned int len = 0;
    /* no larger than the file: a small file costs no 1 MiB allocation and wipe */
    const size_t cap =
        n < VEIL_PREPROC_FILE_IO_CHUNK ? (size_t)(n ? n : 1) : VEIL_PREPROC_FILE_IO_CHUNK;
    uint8_t *buf = malloc(cap);
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    int rc = VEIL_OK;
    if (!buf || !md) {
        rc = veil_error(VEIL_ERR_NOMEM, "preproc load: out of memory");
        goto done;
    }
    if (EVP_DigestInit_ex(md, EVP_sha256(), NULL) != 1) {
        rc = veil_error(VEIL_ERR_CRYPTO, "preproc load: SHA-256 init failed");
        goto done;
    }
    for (uint64_t off = 0; off < n;) {
        size_t step =
            n - off < VEIL_PREPROC_FILE_IO_CHUNK ? (size_t)(n - off) : VEIL_PREPROC_FILE_IO_CHUNK;
        rc = read_at(r, buf, step, off);
        if (rc != VEIL_OK)
            goto done;
        if (EVP_DigestUpdate(md, buf, step) != 1) {
            rc = veil_error(VEIL_ERR_CRYPTO, "preproc load: SHA-256 update failed");
            goto done;
        }
        off += step;
    }
    if (EVP_DigestFinal_ex(md, got, &len) != 1 || len != DIGEST_BYTES) {
        rc = veil_error(VEIL_ERR_CRYPTO, "preproc load: SHA-256 final failed");
        goto done;
    }
    rc = read_at(r, want, DIGEST_BYTES, n);
    if (rc == VEIL_OK && memcmp(want, got, DIGEST_BYTES) != 0)
        rc = veil_error(VEIL_ERR_FORMAT,
                        "preproc load: %s: SHA-256 digest mismatch: the file "
                        "is corrupted or truncated",
                        r->path);
done:
    if (buf) {
        veil_wipe(buf, cap);
        free(buf);
    }
    EVP_MD_CTX_free(md);
    return rc;
}

static void hex(const uint8_t *b, size_t n, char *out)
{
    static const char d[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = d[b[i] >> 4];
        out[2 * i + 1] = d[b[i] & 15];
    }
    out[2 * n] = '\0';
}

/* Header fields against the caller's expectation. */
static int check_header(const veil_preproc_reader_t *r, const uint8_t *h,
                        const struct veil_preproc_layout *layout, int party,
                        const uint8_t *plan_digest)
{
    char a[2 * DIGEST_BYTES + 1], b[2 * DIGEST_BYTES + 1];
    const struct {
        const char *what;
        uint32_t found;
        int want;
    } f[] = {
        {"party", veil_get_le32(h + 12), party},
        {"party count", veil_get_le32(h + 16), layout->nparties},
        {"fractional bits", veil_get_le32(h + 20), layout->frac_bits},
        {"designated party", veil_get_le32(h + 24), layout->designated},
    };
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
        if (f[i].found != (uint32_t)f[i].want)
            return veil_error(VEIL_ERR_MISMATCH, "preproc load: %s is for %s %u, expected %d",
                              r->path, f[i].what, f[i].found, f[i].want);
    if (memcmp(h + 32, layout->session_id, VEIL_PREPROC_SID_BYTES) != 0) {
        hex(h + 32, VEIL_PREPROC_SID_BYTES, a);
        hex(layout->session_id, VEIL_PREPROC_SID_BYTES, b);
        return veil_error(VEIL_ERR_MISMATCH,
                          "preproc load: %s is for session %s, expected "
                          "session %s",
                          r->path, a, b);
    }
    if (memcmp(h + 48, plan_digest, DIGEST_BYTES) != 0) {
        hex(h + 48, DIGEST_BYTES, a);
        hex(plan_digest, DIGEST_BYTES, b);
        return veil_error(VEIL_ERR_MISMATCH, "preproc load: %s is for plan %s, expected plan %s",
                          r->path, a, b);
    }
    return VEIL_OK;
}

/* Reads the table's entries into r->items (each a valid item) and their claimed offsets and word
 * counts into off_at and words_at. */
static int load_entries(veil_preproc_reader_t *r, uint64_t count, uint64_t *off_at,
                        uint64_t *words_at)
{
    uint8_t e[ENTRY_BYTES];
    char buf[256];
    struct veil_preproc_desc d;
    for (uint64_t i = 0; i < count; i++) {
        int rc = read_at(r, e, ENTRY_BYTES, HEADER_BYTES + i * ENTRY_BYTES);
        if (rc != VEIL_OK)
            return rc;
        struct veil_preproc_item *it = &r->items[i];
        uint32_t kind = veil_get_le32(e);
        it->kind =
            kind < VEIL_PREPROC_KIND_COUNT ? (enum veil_preproc_kind)kind : VEIL_PREPROC_KIND_COUNT;
        it->index = veil_get_le64(e + 8);
        for (int j = 0; j < VEIL_PREPROC_MAX_PARAMS; j++)
            it->p[j] = veil_get_le64(e + 16 + 8 * j);
        off_at[i] = veil_get_le64(e + 112);
        words_at[i] = veil_get_le64(e + 120);
        if (veil_get_le32(e + 4) != 0)
            return veil_error(VEIL_ERR_FORMAT,
                              "preproc load: %s: table entry %llu: reserved "
                              "field is not 0",
                              r->path, (unsigned long long)i);
        if (veil_preproc_item_describe(it, &d) != VEIL_OK) {
            snprintf(buf, sizeof buf, "%s", veil_last_error());
            return veil_error(VEIL_ERR_FORMAT,
                              "preproc load: %s: table entry %llu (kind %u) is "
                              "not a valid item (%s)",
                              r->path, (unsigned long long)i, kind, buf);
        }
    }
    return VEIL_OK;
}

/* Each entry's words against what its item and r->stored imply, offsets contiguous, and the
 * file exactly as long as the table says. */
static int check_extents(veil_preproc_reader_t *r, uint64_t count, uint64_t file_size,
                         const uint64_t *off_at, const uint64_t *words_at)
{
    char buf[256];
    struct veil_preproc_desc d;
    uint64_t data_words = (file_size - DIGEST_BYTES - r->data_start) / 8, total = 0;
    for (uint64_t i = 0; i < count; i++) {
        int rc = veil_preproc_item_describe(&r->items[i], &d);
        if (rc != VEIL_OK)
            return rc;
        const size_t want = veil_pf_stored_words(&d, r->stored[i]);
        if (off_at[i] != total || words_at[i] != want || words_at[i] > data_words - total)
            return veil_error(VEIL_ERR_FORMAT,
                              "preproc load: %s: table entry %llu (%s) claims "
                              "%llu words at %llu; expected %zu words at %llu, in data of %llu "
                              "words",
                              r->path, (unsigned long long)i,
                              veil_preproc_item_format(&r->items[i], buf, sizeof buf),
                              (unsigned long long)words_at[i], (unsigned long long)off_at[i], want,
                              (unsigned long long)total, (unsigned long long)data_words);
        r->offset[i] = off_at[i];
        total += words_at[i];
    }
    if (file_size != r->data_start + total * 8 + DIGEST_BYTES)
        return veil_error(VEIL_ERR_FORMAT,
                          "preproc load: %s is %llu bytes; its table implies "
                          "%llu",
                          r->path, (unsigned long long)file_size,
                          (unsigned long long)(r->data_start + total * 8 + DIGEST_BYTES));
    return VEIL_OK;
}

/* Parses and checks the item table; file_size tells what the table may claim. */
static int load_table(veil_preproc_reader_t *r, uint64_t count, uint64_t file_size)
{
    uint64_t max_items = (file_size - HEADER_BYTES - DIGEST_BYTES) / ENTRY_BYTES;
    if (count > max_items)
        return veil_error(VEIL_ERR_FORMAT,
                          "preproc load: %s claims %llu items but its %llu "
                          "bytes hold at most %llu",
                          r->path, (unsigned long long)count, (unsigned long long)file_size,
                          (unsigned long long)max_items);
    const size_t n = count ? (size_t)count : 1;
    r->items = calloc(n, sizeof *r->items);
    r->offset = calloc(n, sizeof *r->offset);
    r->stored = calloc(n, 1);
    uint64_t *off_at = calloc(n, sizeof *off_at), *words_at = calloc(n, sizeof *words_at);
    int rc = VEIL_OK;
    if (!r->items || !r->offset || !r->stored || !off_at || !words_at)
        rc = veil_error(VEIL_ERR_NOMEM, "preproc load: out of memory for %llu items",
                        (unsigned long long)count);
    r->data_start = HEADER_BYTES + count * ENTRY_BYTES;
    if (rc == VEIL_OK)
        rc = load_entries(r, count, off_at, words_at);
    if (rc == VEIL_OK)
        rc = veil_pf_mask_stored(r->items, (size_t)count, r->stored);
    if (rc == VEIL_OK)
        rc = check_extents(r, count, file_size, off_at, words_at);
    free(off_at);
    free(words_at);
    if (rc == VEIL_OK)
        r->nitems = (size_t)count;
    return rc;
}

int veil_preproc_reader_open(const char *path, const struct veil_preproc_layout *layout, int party,
                             const uint8_t plan_digest[VEIL_PREPROC_DIGEST_BYTES],
                             veil_preproc_reader_t **out)
{
    uint8_t h[HEADER_BYTES];
    struct stat st;
    if (!out)
        return veil_error(VEIL_ERR_INVAL, "preproc load: NULL output");
    *out = NULL;
    int rc = veil_preproc_layout_check(layout);
    if (rc != VEIL_OK)
        return rc;
    if (!path || !plan_digest || party < 0 || party >= layout->nparties)
        return veil_error(VEIL_ERR_INVAL,
                          "preproc load: need a path, a plan digest and a party "
                          "in [0, %d) (got %d)",
                          layout->nparties, party);
    veil_preproc_reader_t *r = calloc(1, sizeof *r);
    if (!r)
        return veil_error(VEIL_ERR_NOMEM, "preproc load: out of memory");
    r->fd = -1;
    r->path = veil_pf_dup_str(path, "");
    if (!r->path) {
        rc = veil_error(VEIL_ERR_NOMEM, "preproc load: out of memory");
        goto fail;
    }
    r->fd = open(path, O_RDONLY | O_CLOEXEC);
    if (r->fd < 0 || fstat(r->fd, &st) != 0) {
        rc = veil_error(VEIL_ERR_IO, "preproc load: cannot open %s: %s", path, strerror(errno));
        goto fail;
    }
    if (!S_ISREG(st.st_mode)) {
        rc = veil_error(VEIL_ERR_FORMAT, "preproc load: %s is not a regular file", path);
        goto fail;
    }
    uint64_t size = (uint64_t)st.st_size;
    if (size < HEADER_BYTES + DIGEST_BYTES) {
        rc = veil_error(VEIL_ERR_FORMAT,
                        "preproc load: %s is %llu bytes, shorter than the "
                        "%d-byte header and digest (truncated or not a preprocessing file)",
                        path, (unsigned long long)size, HEADER_BYTES + DIGEST_BYTES);
        goto fail;
    }
    rc = read_at(r, h, HEADER_BYTES, 0);
    if (rc != VEIL_OK)
        goto fail;
    if (memcmp(h, VEIL_PREPROC_FILE_MAGIC, 8) != 0) {
        rc = veil_error(VEIL_ERR_FORMAT,
                        "preproc load: %s is not a Veil preprocessing file "
                        "(no VEILPRE magic)",
                        path);
        goto fail;
    }
    if (veil_get_le32(h + 8) != VEIL_PREPROC_FILE_VERSION) {
        rc = veil_error(VEIL_ERR_FORMAT,
                        "preproc load: %s has format version %u; this build "
                        "reads version %d",
                        path, veil_get_le32(h + 8), VEIL_PREPROC_FILE_VERSION);
        goto fail;
    }
    rc = check_digest(r, size - DIGEST_BYTES);
    if (rc != VEIL_OK)
        goto fail;
    if (veil_get_le32(h + 28) != 0) {
        rc = veil_error(VEIL_ERR_FORMAT, "preproc load: %s: reserved header field is not 0", path);
        goto fail;
    }
    rc = check_header(r, h, layout, party, plan_digest);
    if (rc != VEIL_OK)
        goto fail;
    rc = load_table(r, veil_get_le64(h + 80), size);
    if (rc != VEIL_OK)
        goto fail;
    *out = r;
    return VEIL_OK;
fail:
    veil_preproc_reader_close(&r);
    return rc;
}

/* The next item, checked against expected; VEIL_ERR_MISMATCH (cursor unchanged) otherwise. */
static int next_item(veil_preproc_reader_t *r, const struct veil_preproc_item *expected,
                     const struct veil_preproc_item **it)
{
    char want[256], got[256];
    if (!r || !expected)
        return veil_error(VEIL_ERR_INVAL, "preproc load: NULL argument");
    if (r->next >= r->nitems)
        return veil_error(VEIL_ERR_MISMATCH,
                          "preproc load: expected %s but %s holds only %zu "
                          "items, all consumed (preprocessing exhausted)",
                          veil_preproc_item_format(expected, want, sizeof want), r->path,
                          r->nitems);
    *it = &r->items[r->next];
    if (!veil_pf_same_item(*it, expected))
        return veil_error(VEIL_ERR_MISMATCH, "preproc load: item %zu of %s: expected %s, found %s",
                          r->next, r->path, veil_preproc_item_format(expected, want, sizeof want),
                          veil_preproc_item_format(*it, got, sizeof got));
    return VEIL_OK;
}

/* The byte offset in the file of part j (described by d) of table item i, which lies in it. */
static uint64_t part_at(const veil_preproc_reader_t *r, size_t i, const struct veil_preproc_desc *d,
                        int j)
{
    return r->data_start + (r->offset[i] + veil_pf_part_offset(d, r->stored[i], j)) * 8;
}

/* Reads part j (described by d) of table item i into dst, in host order; a weight mask the file
 * keeps in the weight's first item only is refused. */
static int read_part(const veil_preproc_reader_t *r, size_t i, const struct veil_preproc_desc *d,
                     int j, uint64_t *dst)
{
    char buf[256];
    if (!r->stored[i] && j == VEIL_PRE_B)
        return veil_error(VEIL_ERR_MISMATCH,
                          "preproc load: item %zu of %s (%s): its weight mask is stored with the "
                          "weight's first item only (a party keeps it from there: tasks/wstat.h)",
                          i, r->path, veil_preproc_item_format(&r->items[i], buf, sizeof buf));
    int rc = read_at(r, dst, d->part[j].numel * sizeof(uint64_t), part_at(r, i, d, j));
    if (rc == VEIL_OK)
        veil_pf_words_le(dst, d->part[j].numel);
    return rc;
}

/* Reads the parts of item it (the reader's next, checked by next_item) into dst[j] (a NULL
 * dst[j]: part j is skipped), then advances the cursor; on an error the cursor stays. */
static int read_parts(veil_preproc_reader_t *r, const struct veil_preproc_item *it,
                      uint64_t *const dst[VEIL_PREPROC_MAX_PARTS])
{
    struct veil_preproc_desc d;
    int rc = veil_preproc_item_describe(it, &d);
    if (rc == VEIL_OK && !r->stored[r->next] && dst[VEIL_PRE_B]) /* before any read */
        rc = read_part(r, r->next, &d, VEIL_PRE_B, dst[VEIL_PRE_B]);
    for (int j = 0; rc == VEIL_OK && j < d.nparts; j++) {
        if (dst[j])
            rc = read_part(r, r->next, &d, j, dst[j]);
    }
    if (rc == VEIL_OK) {
        r->next++;
        if (r->pf)
            veil_pf_note_next(r->pf, r->next);
    }
    return rc;
}

int veil_preproc_next_into(veil_preproc_reader_t *r, const struct veil_preproc_item *expected,
                           uint64_t *const dst[VEIL_PREPROC_MAX_PARTS])
{
    const struct veil_preproc_item *it = NULL;
    int rc = next_item(r, expected, &it);
    if (rc == VEIL_OK && !dst)
        rc = veil_error(VEIL_ERR_INVAL, "preproc load: NULL destination");
    return rc == VEIL_OK ? read_parts(r, it, dst) : rc;
}

int veil_preproc_next(veil_preproc_reader_t *r, const struct veil_preproc_item *expected,
                      struct veil_preproc_share *out)
{
    const struct veil_preproc_item *it = NULL;
    if (!out)
        return veil_error(VEIL_ERR_INVAL, "preproc load: NULL argument");
    veil_preproc_share_clear(out);
    int rc = next_item(r, expected, &it);
    if (rc == VEIL_OK)
        rc = veil_preproc_share_init(out, it);
    if (rc == VEIL_OK)
        rc = read_parts(r, it, out->part);
    if (rc != VEIL_OK)
        veil_preproc_share_clear(out);
    return rc;
}

int veil_preproc_peek_weight(const veil_preproc_reader_t *r, const struct veil_preproc_item *like,
                             uint64_t *dst)
{
    uint64_t wid, w;
    struct veil_preproc_desc want, d;
    char buf[256];
    if (!r || !like || !dst)
        return veil_error(VEIL_ERR_INVAL, "preproc peek: NULL argument");
    int rc = veil_preproc_item_describe(like, &want);
    if (rc != VEIL_OK)
        return rc;
    if (!veil_preproc_item_wid(like, &wid))
        return veil_error(VEIL_ERR_INVAL, "preproc peek: %s has no weight part",
                          veil_preproc_item_format(like, buf, sizeof buf));
    for (size_t i = r->next; i < r->nitems; i++) {
        const struct veil_preproc_item *it = &r->items[i];
        if (it->kind != like->kind || !veil_preproc_item_wid(it, &w) || w != wid)
            continue;
        if ((rc = veil_preproc_item_describe(it, &d)) != VEIL_OK)
            return rc;
        if (d.part[VEIL_PRE_B].numel != want.part[VEIL_PRE_B].numel)
            return veil_error(VEIL_ERR_MISMATCH,
                              "preproc peek: item %zu of %s (%s) holds a weight mask of %zu words "
                              "for weight %llu, not %zu",
                              i, r->path, veil_preproc_item_format(it, buf, sizeof buf),
                              d.part[VEIL_PRE_B].numel, (unsigned long long)wid,
                              want.part[VEIL_PRE_B].numel);
        return read_part(r, i, &d, VEIL_PRE_B, dst);
    }
    return veil_error(VEIL_ERR_MISMATCH, "preproc peek: %s holds no %s item of weight %llu left",
                      r->path, veil_preproc_kind_name(like->kind), (unsigned long long)wid);
}

size_t veil_preproc_reader_remaining(const veil_preproc_reader_t *r)
{
    return r ? r->nitems - r->next : 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Reading ahead (the thread is preproc_prefetch.c's)                                          */

int veil_pf_part_span(const veil_preproc_reader_t *r, size_t i, int j, uint64_t *off, size_t *bytes)
{
    struct veil_preproc_desc d;
    if (i >= r->nitems || j < 0 || veil_preproc_item_describe(&r->items[i], &d) != VEIL_OK ||
        j >= d.nparts)
        return -1;
    if (!r->stored[i] && j == VEIL_PRE_B)
        return 0;
    *off = part_at(r, i, &d, j);
    *bytes = d.part[j].numel * sizeof(uint64_t);
    return 1;
}

size_t veil_pf_item_count(const veil_preproc_reader_t *r)
{
    return r->nitems;
}

int veil_pf_read_at(const veil_preproc_reader_t *r, void *buf, size_t n, uint64_t off)
{
    return read_at(r, buf, n, off);
}

int veil_preproc_reader_prefetch(veil_preproc_reader_t *r, size_t budget_bytes,
                                 size_t min_part_bytes)
{
    if (!r)
        return veil_error(VEIL_ERR_INVAL, "preproc prefetch: NULL reader");
    if (r->pf)
        return veil_error(VEIL_ERR_STATE, "preproc prefetch: %s is already read ahead", r->path);
    return veil_pf_start(r, r->next, budget_bytes, min_part_bytes, &r->pf);
}

void *veil_preproc_take_prefetched(veil_preproc_reader_t *r, int part, size_t bytes)
{
    return r && r->pf && r->next < r->nitems ? veil_pf_take(r->pf, r->next, part, bytes) : NULL;
}

void veil_preproc_reader_prefetch_stats(const veil_preproc_reader_t *r,
                                        struct veil_preproc_prefetch_stats *s)
{
    memset(s, 0, sizeof *s);
    if (r && r->pf)
        veil_pf_stats(r->pf, s);
}

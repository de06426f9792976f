/*
 * preproc_file.h — what the writer (preproc_store.c) and the reader (preproc_read.c) of the
 * per-party preprocessing file share: its constants (format v2 in preproc.h), its
 * little-endian encoding helpers and which items store their weight mask. Never installed.
 */
#ifndef VEIL_TASKS_PREPROC_FILE_H
#define VEIL_TASKS_PREPROC_FILE_H

#include "base/base_internal.h"
#include "tasks/preproc.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define VEIL_PREPROC_FILE_MAGIC "VEILPRE" /* 8 bytes with its NUL */
#define VEIL_PREPROC_FILE_VERSION 2
/* Bytes hashed / copied per step when streaming the file. */
#define VEIL_PREPROC_FILE_IO_CHUNK ((size_t)1 << 20)

/* Words to or from little-endian, in place. */
static inline void veil_pf_words_le(uint64_t *w, size_t n)
{
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    for (size_t i = 0; i < n; i++)
        w[i] = __builtin_bswap64(w[i]);
#else
    (void)w;
    (void)n;
#endif
}

static inline int veil_pf_same_item(const struct veil_preproc_item *a,
                                    const struct veil_preproc_item *b)
{
    if (a->kind != b->kind || a->index != b->index)
        return 0;
    for (int j = 0; j < VEIL_PREPROC_MAX_PARAMS; j++)
        if (a->p[j] != b->p[j])
            return 0;
    return 1;
}

/* Which of n items store their weight mask (part B) in the file: every item but a
 * weight-stationary one whose weight (kind and wid) an earlier item of the file already had, since
 * every item of a weight carries the same B (tasks/wstat.h: a party keeps it from the weight's
 * first item). Sets stored[i] to 1 or 0; VEIL_ERR_FORMAT when two items of one weight disagree on
 * its size, an invalid item's error, VEIL_ERR_NOMEM. */
static inline int veil_pf_mask_stored(const struct veil_preproc_item *items, size_t n,
                                      uint8_t *stored)
{
    struct slot {
        uint64_t wid;
        size_t first; /* the item that had it first */
        int kind;     /* 0: empty */
    };
    size_t cap = 16;
    while (cap < 2 * n)
        cap *= 2;
    struct slot *seen = calloc(cap, sizeof *seen); /* open addressing */
    int rc = seen ? VEIL_OK : veil_error(VEIL_ERR_NOMEM, "preproc: out of memory for %zu items", n);
    for (size_t i = 0; rc == VEIL_OK && i < n; i++) {
        uint64_t wid;
        struct veil_preproc_desc a, b;
        stored[i] = 1;
        if (!veil_preproc_item_wid(&items[i], &wid))
            continue;
        const int kind = (int)items[i].kind;
        size_t h =
            (size_t)(((wid ^ (uint64_t)kind) * UINT64_C(0x9e3779b97f4a7c15)) >> 32) & (cap - 1);
        while (seen[h].kind && (seen[h].kind != kind || seen[h].wid != wid))
            h = (h + 1) & (cap - 1);
        if (!seen[h].kind) {
            seen[h] = (struct slot){.wid = wid, .first = i, .kind = kind};
            continue;
        }
        stored[i] = 0;
        if ((rc = veil_preproc_item_describe(&items[seen[h].first], &a)) != VEIL_OK ||
            (rc = veil_preproc_item_describe(&items[i], &b)) != VEIL_OK)
            break; /* (an invalid item: its own message) */
        if (a.part[VEIL_PRE_B].numel != b.part[VEIL_PRE_B].numel)
            rc = veil_error(VEIL_ERR_FORMAT,
                            "preproc: items %zu and %zu of weight %llu do not agree on its mask",
                            seen[h].first, i, (unsigned long long)wid);
    }
    free(seen);
    return rc;
}

/* The words item it (described by d) takes in the file. */
static inline size_t veil_pf_stored_words(const struct veil_preproc_desc *d, int stored)
{
    return d->share_words - (stored ? 0 : d->part[VEIL_PRE_B].numel);
}

/* Where part j of an item (described by d) starts in its stored words: B, when not stored, is
 * left out and the parts after it move up. */
static inline size_t veil_pf_part_offset(const struct veil_preproc_desc *d, int stored, int j)
{
    const size_t off = d->part[j].offset;
    return !stored && off > d->part[VEIL_PRE_B].offset ? off - d->part[VEIL_PRE_B].numel : off;
}

/* ---- between the reader (preproc_read.c) and its prefetcher (preproc_prefetch.c) */
struct veil_preproc_prefetch;
/* Where part j of table item i lies in the file (its byte offset and length): 1; 0 when the part
 * is not in the file (a weight mask kept with the weight's first item only); -1 when item i has
 * no part j or is past the table. Reads only what the open fixed, so any thread may ask. */
int veil_pf_part_span(const veil_preproc_reader_t *r, size_t i, int j, uint64_t *off,
                      size_t *bytes);
/* The table's item count. */
size_t veil_pf_item_count(const veil_preproc_reader_t *r);
/* Reads exactly n bytes at byte off (VEIL_ERR_FORMAT when the file is shorter, VEIL_ERR_IO);
 * thread-safe (pread). */
int veil_pf_read_at(const veil_preproc_reader_t *r, void *buf, size_t n, uint64_t off);
/* Starts the thread at first_item (preproc_prefetch.c); the other calls as in preproc.h's
 * veil_preproc_reader_prefetch family, item being the reader's cursor. */
int veil_pf_start(const veil_preproc_reader_t *r, size_t first_item, size_t budget,
                  size_t min_bytes, struct veil_preproc_prefetch **out);
void *veil_pf_take(struct veil_preproc_prefetch *pf, size_t item, int part, size_t bytes);
/* The reader's cursor moved to next: what lies before it will not be asked for. */
void veil_pf_note_next(struct veil_preproc_prefetch *pf, size_t next);
void veil_pf_stats(struct veil_preproc_prefetch *pf, struct veil_preproc_prefetch_stats *s);
/* Stops and joins the thread, gives every buffer it holds back to the pool, frees; NULL-safe. */
void veil_pf_stop(struct veil_preproc_prefetch **pf);

static inline char *veil_pf_dup_str(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    char *r = malloc(a + b + 1);
    if (r) {
        memcpy(r, s, a);
        memcpy(r + a, suffix, b + 1);
    }
    return r;
}

#endif

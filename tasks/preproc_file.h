/*
 * preproc_file.h — what the writer (preproc_store.c) and the reader (preproc_read.c) of the
 * per-party preprocessing file share: its constants (format v1 in preproc.h) and its
 * little-endian encoding helpers. Never installed.
 */
#ifndef VEIL_TASKS_PREPROC_FILE_H
#define VEIL_TASKS_PREPROC_FILE_H

#include "base/base_internal.h"
#include "tasks/preproc.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define VEIL_PREPROC_FILE_MAGIC "VEILPRE" /* 8 bytes with its NUL */
#define VEIL_PREPROC_FILE_VERSION 1
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

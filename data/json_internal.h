/*
 * json_internal.h — the strict JSON tokenizer of data/ (json.c): exactly the subset the weights
 * file header uses (objects, strings with escapes, non-negative integers, arrays of them), over a
 * cursor on a byte range that need not be NUL-terminated. Errors are VEIL_ERR_FORMAT naming the
 * file and the header byte. Never installed.
 */
#ifndef VEIL_DATA_JSON_INTERNAL_H
#define VEIL_DATA_JSON_INTERNAL_H

#include "base/base_internal.h"

#include <stdint.h>

struct veil_json_cursor {
    const char *p, *end, *start;
    const char *file;
};

/** Records a VEIL_ERR_FORMAT at the cursor's byte ("weights file F: header byte N: ...") and
 *  returns it. */
int veil_json_error(struct veil_json_cursor *c, const char *fmt, ...) VEIL_PRINTF(2, 3);
/** Skips blanks (space, tab, newline, carriage return). */
void veil_json_skip_ws(struct veil_json_cursor *c);
/** Skips blanks, then consumes ch or fails naming what was found. */
int veil_json_expect(struct veil_json_cursor *c, char ch);
/** A string into a new NUL-terminated malloc'ed *out (freed by the caller; NULL on error). */
int veil_json_string(struct veil_json_cursor *c, char **out);
/** A non-negative integer without leading zeros, fraction or exponent, that fits 64 bits. */
int veil_json_uint(struct veil_json_cursor *c, uint64_t *out);
/** [n0, n1, ...] with at most max entries into v; *count entries read. */
int veil_json_uint_array(struct veil_json_cursor *c, uint64_t *v, int max, int *count);
/** After an object member: ',' (*done = 0, more follow) or '}' (*done = 1). */
int veil_json_next_member(struct veil_json_cursor *c, int *done);

#endif

/*
 * json.c — the strict JSON tokenizer behind the weights reader (json_internal.h): blanks,
 * expected punctuation, strings with every JSON escape (\\uXXXX surrogate pairs to UTF-8, no NUL),
 * non-negative integers that fit 64 bits, arrays of them, and object members. It accepts
 * nothing the weights format does not use (no floats, no nesting beyond what its callers walk).
 */
#include "config.h"
#include "data/json_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int veil_json_error(struct veil_json_cursor *c, const char *fmt, ...)
{
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return veil_error(VEIL_ERR_FORMAT, "weights file %s: header byte %zu: %s", c->file,
                      (size_t)(c->p - c->start), msg);
}

void veil_json_skip_ws(struct veil_json_cursor *c)
{
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r'))
        c->p++;
}

int veil_json_expect(struct veil_json_cursor *c, char ch)
{
    veil_json_skip_ws(c);
    if (c->p >= c->end)
        return veil_json_error(c, "expected '%c', the header ends", ch);
    if (*c->p != ch)
        return veil_json_error(c, "expected '%c', found '%c'", ch, *c->p);
    c->p++;
    return VEIL_OK;
}

static int read_hex4(struct veil_json_cursor *c, unsigned *out)
{
    if (c->end - c->p < 4)
        return veil_json_error(c, "\\u escape cut short");
    uint8_t b[2];
    if (veil_hex_decode(c->p, b, 2) != 4)
        return veil_json_error(c, "bad hex digit in a \\u escape");
    c->p += 4;
    *out = (unsigned)b[0] << 8 | b[1];
    return VEIL_OK;
}

/* Parses a string into a new NUL-terminated buffer (at most as long as the source text). */
int veil_json_string(struct veil_json_cursor *c, char **out)
{
    *out = NULL;
    int rc = veil_json_expect(c, '"');
    if (rc)
        return rc;
    const char *s = c->p;
    while (s < c->end && *s != '"')
        s += (*s == '\\' && s + 1 < c->end) ? 2 : 1;
    if (s >= c->end)
        return veil_json_error(c, "unterminated string");
    char *b = malloc((size_t)(s - c->p) + 1), *o = b;
    if (!b)
        return veil_error(VEIL_ERR_NOMEM, "weights file %s: out of memory", c->file);
    while (*c->p != '"') {
        unsigned char ch = (unsigned char)*c->p++;
        if (ch < 0x20) {
            c->p--;
            rc = veil_json_error(c, "control character 0x%02x in a string", ch);
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
                rc = veil_json_error(c, "lone low surrogate in a \\u escape");
                goto fail;
            }
            if (u >= 0xd800 && u < 0xdc00) {
                if (c->end - c->p < 6 || c->p[0] != '\\' || c->p[1] != 'u') {
                    rc = veil_json_error(c, "high surrogate without its low half");
                    goto fail;
                }
                c->p += 2;
                if ((rc = read_hex4(c, &lo)))
                    goto fail;
                if (lo < 0xdc00 || lo >= 0xe000) {
                    rc = veil_json_error(c, "high surrogate without its low half");
                    goto fail;
                }
                u = 0x10000 + ((u - 0xd800) << 10) + (lo - 0xdc00);
            }
            if (u == 0) {
                rc = veil_json_error(c, "\\u0000 is not allowed in a name");
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
            rc = veil_json_error(c, "unknown escape '\\%c'", ch);
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

int veil_json_uint(struct veil_json_cursor *c, uint64_t *out)
{
    veil_json_skip_ws(c);
    if (c->p >= c->end || *c->p < '0' || *c->p > '9')
        return veil_json_error(c, "expected a non-negative integer");
    if (*c->p == '0' && c->p + 1 < c->end && c->p[1] >= '0' && c->p[1] <= '9')
        return veil_json_error(c, "integer with a leading zero");
    uint64_t v = 0;
    while (c->p < c->end && *c->p >= '0' && *c->p <= '9') {
        unsigned dg = (unsigned)(*c->p - '0');
        if (v > (UINT64_MAX - dg) / 10)
            return veil_json_error(c, "integer too large");
        v = v * 10 + dg;
        c->p++;
    }
    if (c->p < c->end && (*c->p == '.' || *c->p == 'e' || *c->p == 'E'))
        return veil_json_error(c, "only integers are allowed here");
    *out = v;
    return VEIL_OK;
}

/* [n0, n1, ...] with at most max entries. */
int veil_json_uint_array(struct veil_json_cursor *c, uint64_t *v, int max, int *count)
{
    int rc = veil_json_expect(c, '[');
    if (rc)
        return rc;
    *count = 0;
    veil_json_skip_ws(c);
    if (c->p < c->end && *c->p == ']') {
        c->p++;
        return VEIL_OK;
    }
    for (;;) {
        if (*count == max)
            return veil_json_error(c, "more than %d entries in an array", max);
        if ((rc = veil_json_uint(c, &v[(*count)++])))
            return rc;
        veil_json_skip_ws(c);
        if (c->p < c->end && *c->p == ',') {
            c->p++;
            continue;
        }
        return veil_json_expect(c, ']');
    }
}

/* After a member: ',' (*done = 0, more follow) or '}' (*done = 1). */
int veil_json_next_member(struct veil_json_cursor *c, int *done)
{
    veil_json_skip_ws(c);
    if (c->p < c->end && *c->p == ',') {
        c->p++;
        *done = 0;
        return VEIL_OK;
    }
    *done = 1;
    return veil_json_expect(c, '}');
}

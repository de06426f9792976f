/*
 * emulate.c — link emulation for benchmarks on machines without netem: the parser of
 * "LATENCY,BANDWIDTH" specifications and the sender-side pacing model. The model is a single
 * FIFO wire per (sender, peer) link: a chunk starts serialising when both it and the wire are
 * ready, occupies the wire for bytes / bandwidth, and is visible to the peer one latency after
 * its last byte left. Pure arithmetic on doubles; no clock is read here (the caller passes now).
 */
#include "config.h"
#include "net/emulate.h"

#include "base/base_internal.h"

#include <math.h>
#include <string.h>

/* Limits that catch typos (a latency in ms written as s, a bandwidth without its prefix). */
#define MAX_LATENCY_S 3600.0
#define MIN_BANDWIDTH_BPS 125.0 /* 1 kbit/s */
#define MAX_NUMBER_CHARS 32

struct unit {
    const char *name;
    double scale;
};

static const struct unit latency_units[] = {
    {"s", 1.0},
    {"ms", 1e-3},
    {"us", 1e-6},
    {NULL, 0},
};

/* Bandwidth units are converted to bytes per second; bit rates are powers of 10 as in tc. */
static const struct unit bandwidth_units[] = {
    {"bit", 0.125},  {"kbit", 125.0}, {"Kbit", 125.0}, {"Mbit", 125e3}, {"mbit", 125e3},
    {"Gbit", 125e6}, {"gbit", 125e6}, {"B", 1.0},      {"KB", 1e3},     {"kB", 1e3},
    {"MB", 1e6},     {"GB", 1e9},     {NULL, 0},
};

static int is_space(char c)
{
    return c == ' ' || c == '\t';
}

/*
 * Parses one "<decimal><unit>" field of n characters (already trimmed) into *out using the
 * unit table. Only plain decimals are accepted: no sign, no exponent, no hex, no inf or nan.
 * A number without a unit is accepted only when it is zero.
 */
static int parse_field(const char *text, const char *field, size_t n, const struct unit *units,
                       const char *what, const char *example, double *out)
{
    char num[MAX_NUMBER_CHARS + 1];
    size_t i = 0, digits = 0;

    while (i < n && field[i] >= '0' && field[i] <= '9') {
        i++;
        digits++;
    }
    if (i < n && field[i] == '.') {
        i++;
        while (i < n && field[i] >= '0' && field[i] <= '9') {
            i++;
            digits++;
        }
    }
    if (digits == 0)
        return veil_error(VEIL_ERR_INVAL,
                          "link \"%s\": %s '%.*s' does not start with a non-negative decimal "
                          "number; write e.g. %s",
                          text, what, (int)(n > 40 ? 40 : n), field, example);
    if (i > MAX_NUMBER_CHARS)
        return veil_error(VEIL_ERR_INVAL, "link \"%s\": %s number is too long; write e.g. %s", text,
                          what, example);
    memcpy(num, field, i);
    num[i] = '\0';
    double v = strtod(num, NULL);

    const char *u = field + i;
    size_t ulen = n - i;
    /* An optional "/s" after a bandwidth unit ("100Mbit/s") reads naturally. */
    if (units == bandwidth_units && ulen > 2 && u[ulen - 2] == '/' && u[ulen - 1] == 's')
        ulen -= 2;
    if (ulen == 0) {
        if (v != 0.0)
            return veil_error(VEIL_ERR_INVAL, "link \"%s\": %s '%.*s' has no unit; write e.g. %s",
                              text, what, (int)n, field, example);
        *out = 0.0;
        return VEIL_OK;
    }
    for (const struct unit *un = units; un->name; un++) {
        if (strlen(un->name) == ulen && memcmp(un->name, u, ulen) == 0) {
            *out = v * un->scale;
            if (!isfinite(*out))
                return veil_error(VEIL_ERR_INVAL, "link \"%s\": %s is out of range", text, what);
            return VEIL_OK;
        }
    }
    return veil_error(VEIL_ERR_INVAL,
                      "link \"%s\": unknown %s unit '%.*s' (latency: s, ms, us; bandwidth: bit, "
                      "kbit, Mbit, Gbit, B, KB, MB, GB); write e.g. %s",
                      text, what, (int)(ulen > 16 ? 16 : ulen), u, example);
}

/* Trims blanks around [*s, *s + *n). */
static void trim(const char **s, size_t *n)
{
    while (*n > 0 && is_space(**s)) {
        (*s)++;
        (*n)--;
    }
    while (*n > 0 && is_space((*s)[*n - 1]))
        (*n)--;
}

int veil_link_parse(const char *text, struct veil_link_params *out)
{
    struct veil_link_params p = {0.0, 0.0};
    if (!text || !out)
        return veil_error(VEIL_ERR_INVAL, "veil_link_parse: NULL argument");
    size_t len = strlen(text);
    if (len > 128)
        return veil_error(VEIL_ERR_INVAL,
                          "link specification is %zu characters long; write e.g. 35ms,100Mbit",
                          len);
    const char *all = text;
    size_t alln = len;
    trim(&all, &alln);
    if (alln == 4 && memcmp(all, "none", 4) == 0) {
        *out = p;
        return VEIL_OK;
    }
    const char *comma = memchr(all, ',', alln);
    if (!comma)
        return veil_error(VEIL_ERR_INVAL,
                          "link \"%s\": missing ',' between latency and bandwidth; write "
                          "LATENCY,BANDWIDTH such as 35ms,100Mbit (or \"none\")",
                          text);
    if (memchr(comma + 1, ',', alln - (size_t)(comma + 1 - all)))
        return veil_error(VEIL_ERR_INVAL,
                          "link \"%s\": more than one ','; write LATENCY,BANDWIDTH such as "
                          "35ms,100Mbit",
                          text);
    const char *lat = all, *bw = comma + 1;
    size_t latn = (size_t)(comma - all), bwn = alln - latn - 1;
    trim(&lat, &latn);
    trim(&bw, &bwn);
    int rc =
        parse_field(text, lat, latn, latency_units, "latency", "35ms, 100us or 0.1s", &p.latency_s);
    if (rc != VEIL_OK)
        return rc;
    rc = parse_field(text, bw, bwn, bandwidth_units, "bandwidth", "100Mbit, 10Gbit or 1GB",
                     &p.bandwidth_Bps);
    if (rc != VEIL_OK)
        return rc;
    if (p.latency_s > MAX_LATENCY_S)
        return veil_error(VEIL_ERR_INVAL,
                          "link \"%s\": latency %.6g s exceeds %.0f s; was 'ms' meant?", text,
                          p.latency_s, MAX_LATENCY_S);
    if (p.bandwidth_Bps != 0.0 && p.bandwidth_Bps < MIN_BANDWIDTH_BPS)
        return veil_error(VEIL_ERR_INVAL,
                          "link \"%s\": bandwidth below 1kbit; write 0 for unlimited or a rate "
                          "such as 100Mbit",
                          text);
    *out = p;
    return VEIL_OK;
}

void veil_link_emulator_init(struct veil_link_emulator *e, const struct veil_link_params *p)
{
    e->p = *p;
    e->wire_free_at = 0.0;
}

double veil_link_emulator_release_time(struct veil_link_emulator *e, size_t bytes, double now)
{
    double start = now > e->wire_free_at ? now : e->wire_free_at;
    double serialise = e->p.bandwidth_Bps > 0.0 ? (double)bytes / e->p.bandwidth_Bps : 0.0;
    e->wire_free_at = start + serialise;
    return e->wire_free_at + e->p.latency_s;
}

int veil_link_emulator_active(const struct veil_link_params *p)
{
    return p->latency_s > 0.0 || p->bandwidth_Bps > 0.0;
}

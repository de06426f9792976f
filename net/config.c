/*
 * config.c — the session configuration file of net/net_config.h: a strict line parser (every
 * directive known, none repeated, every value checked) and the consistency checks that need
 * the whole file (every party present, ids in range, self known, no endpoint or key used twice,
 * the secret key file matching this process's public key). Errors read
 * "FILE:LINE: what is wrong; what to write". The text parser works on memory so that tests
 * and the fuzzer can feed it directly; veil_net_config_load only reads the file.
 */
#include "config.h"
#include "net/config_internal.h"

#include "base/base_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_LINE 1024
#define MAX_TOKENS 8
#define MAX_PATH_CHARS 4096
#define MAX_FILE_BYTES (1 << 20)
#define MAX_SECONDS 3600.0

static const char known_directives[] = "session, parties, party, dealer, self, secret-key-file, "
                                       "heartbeat, timeout, link, insecure-plaintext";

/* Where each directive was seen (0: not yet), for duplicates and for late range checks. */
struct seen {
    int session, parties, dealer, self, key_file, heartbeat, timeout, link, insecure;
    int party[VEIL_NET_MAX_PARTIES];
    int self_value;
    char key_path[MAX_PATH_CHARS];
};

void veil_net_config_defaults(struct veil_net_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->heartbeat_s = 0.5;
    cfg->timeout_s = 10.0;
    cfg->link.latency_s = 0.0;
    cfg->link.bandwidth_Bps = 0.0;
    cfg->insecure_plaintext = 0;
    cfg->listen_fd = -1;
}

int veil_net_config_nprocs(const struct veil_net_config *cfg)
{
    return cfg->nparties + (cfg->has_dealer ? 1 : 0);
}

/* Records "NAME:LINE: message" (or "NAME: message" for line 0) as a VEIL_ERR_FORMAT error. */
static int fail_at(const char *name, int line, const char *fmt, ...) VEIL_PRINTF(3, 4);
static int fail_at(const char *name, int line, const char *fmt, ...)
{
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (line > 0)
        return veil_error(VEIL_ERR_FORMAT, "%s:%d: %s", name, line, msg);
    return veil_error(VEIL_ERR_FORMAT, "%s: %s", name, msg);
}

/* Strict unsigned decimal (digits only, at most 9) no greater than max. */
static int parse_uint(const char *s, long max, long *out)
{
    size_t n = strlen(s);
    if (n == 0 || n > 9 || strspn(s, "0123456789") != n)
        return -1;
    long v = strtol(s, NULL, 10);
    if (v > max)
        return -1;
    *out = v;
    return 0;
}

/* Strict positive decimal number of seconds ("0.5", "10", ".25"), at most MAX_SECONDS. */
static int parse_seconds(const char *s, double *out)
{
    size_t n = strlen(s), i = strspn(s, "0123456789"), digits = i;
    if (i < n && s[i] == '.') {
        size_t frac = strspn(s + i + 1, "0123456789");
        digits += frac;
        i += 1 + frac;
    }
    if (digits == 0 || i != n || n > 32)
        return -1;
    double v = strtod(s, NULL);
    if (!(v > 0.0) || v > MAX_SECONDS)
        return -1;
    *out = v;
    return 0;
}

/* "tcp://HOST:PORT" with a host name, an IPv4 address or a bracketed IPv6 address. */
static int endpoint_valid(const char *e)
{
    size_t n = strlen(e);
    if (n >= sizeof(((struct veil_net_peer *)0)->endpoint) || strncmp(e, "tcp://", 6) != 0)
        return 0;
    const char *host = e + 6;
    const char *colon = strrchr(host, ':');
    if (!colon || colon == host)
        return 0;
    size_t hlen = (size_t)(colon - host);
    if (host[0] == '[') {
        if (hlen < 3 || host[hlen - 1] != ']')
            return 0;
        for (size_t i = 1; i + 1 < hlen; i++)
            if (veil_hex_digit(host[i]) < 0 && host[i] != ':' && host[i] != '.')
                return 0;
    } else {
        for (size_t i = 0; i < hlen; i++) {
            char c = host[i];
            int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                     c == '.' || c == '-' || c == '_';
            if (!ok)
                return 0;
        }
    }
    long port;
    if (parse_uint(colon + 1, 65535, &port) != 0 || port == 0)
        return 0;
    return 1;
}

int veil_net_endpoint_ipv6(const char *endpoint)
{
    return endpoint && strncmp(endpoint, "tcp://[", 7) == 0;
}

static int check_key(const char *name, int line, const char *what, const char *key)
{
    if (!veil_z85_key_valid(key, strlen(key)))
        return fail_at(name, line,
                       "%s public key '%.48s' is not a 40-character Z85 key; copy the key "
                       "printed by veil-keygen (the line 'public ...' of NAME.pub)",
                       what, key);
    return VEIL_OK;
}

/* Complains when a directive appears a second time. */
static int once(const char *name, int line, int *seen_at, const char *directive)
{
    if (*seen_at)
        return fail_at(name, line, "duplicate '%s' (first given at line %d); keep only one",
                       directive, *seen_at);
    *seen_at = line;
    return VEIL_OK;
}

static int want_args(const char *name, int line, int ntok, int want, const char *usage)
{
    if (ntok - 1 != want)
        return fail_at(name, line, "'%.*s' takes %d value%s, found %d; write '%s'",
                       (int)strcspn(usage, " "), usage, want, want == 1 ? "" : "s", ntok - 1,
                       usage);
    return VEIL_OK;
}

/* "session <32 hex digits>". */
static int parse_session(const char *name, int line, char **tok, int ntok,
                         struct veil_net_config *cfg, struct seen *seen)
{
    int rc;
    if ((rc = want_args(name, line, ntok, 1, "session <32 hex digits>")) ||
        (rc = once(name, line, &seen->session, tok[0])))
        return rc;
    if (strlen(tok[1]) != 2 * VEIL_SESSION_BYTES)
        return fail_at(name, line,
                       "session id has %zu characters; write exactly 32 hex digits (the same "
                       "on every party, e.g. from 'openssl rand -hex 16')",
                       strlen(tok[1]));
    size_t ok = veil_hex_decode(tok[1], cfg->session, VEIL_SESSION_BYTES);
    if (ok != 2 * VEIL_SESSION_BYTES)
        return fail_at(name, line,
                       "session id has a character that is not a hex digit at position "
                       "%d; use only 0-9 and a-f",
                       (int)ok + 1);
    return VEIL_OK;
}

/* "party <id> tcp://HOST:PORT <public-key>". */
static int parse_party(const char *name, int line, char **tok, int ntok,
                       struct veil_net_config *cfg, struct seen *seen)
{
    long v;
    int rc;
    if ((rc = want_args(name, line, ntok, 3, "party <id> tcp://HOST:PORT <public-key>")))
        return rc;
    if (parse_uint(tok[1], VEIL_NET_MAX_PARTIES - 1, &v) != 0)
        return fail_at(name, line,
                       "party id '%.32s' is not a number from 0 to %d; ids are "
                       "0..N-1 for 'parties N'",
                       tok[1], VEIL_NET_MAX_PARTIES - 1);
    if (seen->party[v])
        return fail_at(name, line,
                       "party %ld is defined twice (first at line %d); keep one "
                       "line per party",
                       v, seen->party[v]);
    seen->party[v] = line;
    if (!endpoint_valid(tok[2]))
        return fail_at(name, line,
                       "endpoint '%.64s' of party %ld is not tcp://HOST:PORT; "
                       "write e.g. tcp://10.0.0.2:5555 or tcp://[::1]:5555",
                       tok[2], v);
    if ((rc = check_key(name, line, "party", tok[3])))
        return rc;
    snprintf(cfg->peers[v].endpoint, sizeof cfg->peers[v].endpoint, "%s", tok[2]);
    memcpy(cfg->peers[v].public_key, tok[3], VEIL_Z85_KEY_CHARS + 1);
    return VEIL_OK;
}

/* "dealer tcp://HOST:PORT <public-key>". */
static int parse_dealer(const char *name, int line, char **tok, int ntok,
                        struct veil_net_config *cfg, struct seen *seen)
{
    int rc;
    if ((rc = want_args(name, line, ntok, 2, "dealer tcp://HOST:PORT <public-key>")) ||
        (rc = once(name, line, &seen->dealer, tok[0])))
        return rc;
    if (!endpoint_valid(tok[1]))
        return fail_at(name, line,
                       "dealer endpoint '%.64s' is not tcp://HOST:PORT; write "
                       "e.g. tcp://10.0.0.9:5555",
                       tok[1]);
    if ((rc = check_key(name, line, "dealer", tok[2])))
        return rc;
    cfg->has_dealer = 1;
    /* Stored at index nparties once that is known (see finish). */
    snprintf(cfg->peers[VEIL_NET_MAX_PARTIES].endpoint, sizeof cfg->peers[0].endpoint, "%s",
             tok[1]);
    memcpy(cfg->peers[VEIL_NET_MAX_PARTIES].public_key, tok[2], VEIL_Z85_KEY_CHARS + 1);
    return VEIL_OK;
}

/* Parses one directive line (tokens already split, comments removed). */
static int parse_line(const char *name, int line, char **tok, int ntok, const char *rest,
                      struct veil_net_config *cfg, struct seen *seen)
{
    const char *d = tok[0];
    long v;
    int rc;

    if (strcmp(d, "session") == 0) {
        return parse_session(name, line, tok, ntok, cfg, seen);
    } else if (strcmp(d, "parties") == 0) {
        if ((rc = want_args(name, line, ntok, 1, "parties <N>")) ||
            (rc = once(name, line, &seen->parties, d)))
            return rc;
        if (parse_uint(tok[1], VEIL_NET_MAX_PARTIES, &v) != 0 || v < 2)
            return fail_at(name, line,
                           "parties '%.32s' is not a number from 2 to %d; write e.g. "
                           "'parties 3'",
                           tok[1], VEIL_NET_MAX_PARTIES);
        cfg->nparties = (int)v;
    } else if (strcmp(d, "party") == 0) {
        return parse_party(name, line, tok, ntok, cfg, seen);
    } else if (strcmp(d, "dealer") == 0) {
        return parse_dealer(name, line, tok, ntok, cfg, seen);
    } else if (strcmp(d, "self") == 0) {
        if ((rc = want_args(name, line, ntok, 1, "self <id>")) ||
            (rc = once(name, line, &seen->self, d)))
            return rc;
        if (parse_uint(tok[1], VEIL_NET_MAX_PARTIES, &v) != 0)
            return fail_at(name, line,
                           "self '%.32s' is not a number from 0 to %d; write this "
                           "process's party id (N for the dealer)",
                           tok[1], VEIL_NET_MAX_PARTIES);
        seen->self_value = (int)v;
    } else if (strcmp(d, "secret-key-file") == 0) {
        if ((rc = want_args(name, line, ntok, 1, "secret-key-file <path>")) ||
            (rc = once(name, line, &seen->key_file, d)))
            return rc;
        if (strlen(tok[1]) >= MAX_PATH_CHARS)
            return fail_at(name, line, "secret-key-file path is too long");
        snprintf(seen->key_path, sizeof seen->key_path, "%s", tok[1]);
    } else if (strcmp(d, "heartbeat") == 0 || strcmp(d, "timeout") == 0) {
        int hb = d[0] == 'h';
        if ((rc = want_args(name, line, ntok, 1,
                            hb ? "heartbeat <seconds>" : "timeout <seconds>")) ||
            (rc = once(name, line, hb ? &seen->heartbeat : &seen->timeout, d)))
            return rc;
        if (parse_seconds(tok[1], hb ? &cfg->heartbeat_s : &cfg->timeout_s) != 0)
            return fail_at(name, line,
                           "%s '%.32s' is not a number of seconds in (0, %.0f]; "
                           "write e.g. '%s'",
                           d, tok[1], MAX_SECONDS, hb ? "heartbeat 0.5" : "timeout 10");
    } else if (strcmp(d, "link") == 0) {
        if ((rc = once(name, line, &seen->link, d)))
            return rc;
        if (ntok < 2)
            return fail_at(name, line,
                           "'link' needs a value; write 'link 35ms,100Mbit' or "
                           "'link none'");
        if (veil_link_parse(rest, &cfg->link) != VEIL_OK) {
            char why[256];
            snprintf(why, sizeof why, "%s", veil_last_error());
            return fail_at(name, line, "%s", why);
        }
    } else if (strcmp(d, "insecure-plaintext") == 0) {
        if ((rc = want_args(name, line, ntok, 1, "insecure-plaintext yes")) ||
            (rc = once(name, line, &seen->insecure, d)))
            return rc;
        if (strcmp(tok[1], "yes") == 0)
            cfg->insecure_plaintext = 1;
        else if (strcmp(tok[1], "no") == 0)
            cfg->insecure_plaintext = 0;
        else
            return fail_at(name, line,
                           "insecure-plaintext '%.32s': write 'yes' (debugging "
                           "only) or remove the line",
                           tok[1]);
    } else {
        return fail_at(name, line, "unknown directive '%.32s'; known: %s", d, known_directives);
    }
    return VEIL_OK;
}

/*
 * Cuts a comment off a line. Z85 keys may contain '#', so a '#' starts a comment only as the
 * first non-blank character of the line or as a word of its own ("... # why").
 */
static void strip_comment(char *line)
{
    char *p = line + strspn(line, " \t");
    if (*p == '#') {
        *p = '\0';
        return;
    }
    for (; *p; p++) {
        if (*p == '#' && (p[-1] == ' ' || p[-1] == '\t') &&
            (p[1] == '\0' || p[1] == ' ' || p[1] == '\t' || p[1] == '\r')) {
            *p = '\0';
            return;
        }
    }
}

/* Builds the key path: relative paths are relative to the configuration file's directory. */
static void resolve_key_path(const char *name, const char *path, char *out, size_t cap)
{
    const char *slash = strrchr(name, '/');
    if (path[0] == '/' || !slash) {
        snprintf(out, cap, "%s", path);
        return;
    }
    snprintf(out, cap, "%.*s/%s", (int)(slash - name), name, path);
}

/* Whole-file checks once every line is read. */
static int finish(const char *name, int last, struct veil_net_config *cfg, struct seen *seen,
                  int flags)
{
    int n = cfg->nparties, rc;
    if (!seen->session)
        return fail_at(
            name, last,
            "end of file and no 'session' line; write 'session <32 hex digits>' (the same "
            "on every party, e.g. from 'openssl rand -hex 16')");
    if (!seen->parties)
        return fail_at(name, last,
                       "end of file and no 'parties' line; write 'parties N' (N computing parties, "
                       "2..%d)",
                       VEIL_NET_MAX_PARTIES);
    for (int i = n; i < VEIL_NET_MAX_PARTIES; i++)
        if (seen->party[i])
            return fail_at(name, seen->party[i],
                           "party id %d is out of range: 'parties %d' (line "
                           "%d) allows ids 0..%d",
                           i, n, seen->parties, n - 1);
    for (int i = 0; i < n; i++)
        if (!seen->party[i])
            return fail_at(name, seen->parties,
                           "parties %d, but no line for party %d; write "
                           "'party %d tcp://HOST:PORT <public-key>'",
                           n, i, i);
    if (cfg->has_dealer && n < VEIL_NET_MAX_PARTIES) {
        cfg->peers[n] = cfg->peers[VEIL_NET_MAX_PARTIES];
        memset(&cfg->peers[VEIL_NET_MAX_PARTIES], 0, sizeof cfg->peers[0]);
    }
    if (!seen->self)
        return fail_at(
            name, last,
            "end of file and no 'self' line; write 'self <id>' with this process's party id "
            "(%d for the dealer)",
            n);
    if (seen->self_value > n || (seen->self_value == n && !cfg->has_dealer))
        return fail_at(name, seen->self, "self %d is out of range: the ids are 0..%d%s",
                       seen->self_value, n - 1,
                       cfg->has_dealer ? " and the dealer's" : " (no 'dealer' line)");
    cfg->self = seen->self_value;
    int nprocs = veil_net_config_nprocs(cfg);
    for (int i = 0; i < nprocs; i++)
        for (int j = 0; j < i; j++) {
            int line = i < n ? seen->party[i] : seen->dealer;
            if (strcmp(cfg->peers[i].endpoint, cfg->peers[j].endpoint) == 0)
                return fail_at(name, line,
                               "endpoint %s is also given to party %d (line %d); "
                               "every process needs its own HOST:PORT",
                               cfg->peers[i].endpoint, j, seen->party[j]);
            if (strcmp(cfg->peers[i].public_key, cfg->peers[j].public_key) == 0)
                return fail_at(name, line,
                               "public key is also given to party %d (line %d); "
                               "every process needs its own key pair (veil-keygen)",
                               j, seen->party[j]);
        }
    if (seen->heartbeat || seen->timeout) {
        if (cfg->timeout_s <= cfg->heartbeat_s)
            return fail_at(name, seen->timeout ? seen->timeout : seen->heartbeat,
                           "timeout %.6g s is not longer than heartbeat %.6g s; a peer would be "
                           "declared lost between two heartbeats (e.g. heartbeat 0.5, timeout 10)",
                           cfg->timeout_s, cfg->heartbeat_s);
    }
    if (cfg->insecure_plaintext) {
        VEIL_LOG_WARN("%s: insecure-plaintext yes: CURVE is OFF, traffic between parties is "
                      "neither encrypted nor authenticated; use this for debugging only",
                      name);
        return VEIL_OK;
    }
    if (!seen->key_file)
        return fail_at(
            name, last,
            "end of file and no 'secret-key-file' line; write 'secret-key-file NAME.key' "
            "(made by 'veil-keygen NAME')");
    if (flags & VEIL_CONFIG_NO_KEY_FILE)
        return VEIL_OK;
    char path[2 * MAX_PATH_CHARS + 2], pub[VEIL_Z85_KEY_CHARS + 1];
    resolve_key_path(name, seen->key_path, path, sizeof path);
    rc = veil_curve_read_key_file(path, pub, cfg->secret_key);
    if (rc != VEIL_OK) {
        char why[400];
        snprintf(why, sizeof why, "%s", veil_last_error());
        return veil_error(rc, "%s:%d: %s", name, seen->key_file, why);
    }
    const char *listed = cfg->peers[cfg->self].public_key;
    if (strcmp(pub, listed) != 0)
        return veil_error(VEIL_ERR_AUTH,
                          "%s:%d: the key in %s has public key %.8s..., but this process (self "
                          "%d) is listed with %.8s... (line %d); point secret-key-file at this "
                          "process's own NAME.key",
                          name, seen->key_file, path, pub, cfg->self, listed,
                          cfg->self < n ? seen->party[cfg->self] : seen->dealer);
    return VEIL_OK;
}

int veil_net_config_parse_text_flags(const char *text, const char *name,
                                     struct veil_net_config *cfg, int flags)
{
    struct seen seen;
    char buf[MAX_LINE + 2];
    int line = 0, rc = VEIL_OK;

    if (!text || !cfg)
        return veil_error(VEIL_ERR_INVAL, "veil_net_config_parse_text: NULL text or config");
    if (!name)
        name = "<config>";
    veil_net_config_defaults(cfg);
    memset(&seen, 0, sizeof seen);
    for (const char *p = text; *p;) {
        const char *eol = strchr(p, '\n');
        size_t len = eol ? (size_t)(eol - p) : strlen(p);
        line++;
        if (len > MAX_LINE) {
            rc = fail_at(name, line,
                         "line is longer than %d characters; write one short directive per line",
                         MAX_LINE);
            goto fail;
        }
        memcpy(buf, p, len);
        buf[len] = '\0';
        p = eol ? eol + 1 : p + len;
        strip_comment(buf);
        size_t blen = strlen(buf);
        if (blen > 0 && buf[blen - 1] == '\r')
            buf[blen - 1] = '\0';
        /* rest: the text after the directive, for values that may contain blanks (link). */
        const char *rest = buf + strspn(buf, " \t");
        rest += strcspn(rest, " \t");
        rest += strspn(rest, " \t");
        char restbuf[MAX_LINE + 2];
        snprintf(restbuf, sizeof restbuf, "%s", rest);
        char *tok[MAX_TOKENS], *save = NULL;
        int ntok = 0;
        for (char *t = strtok_r(buf, " \t\r\v\f", &save); t;
             t = strtok_r(NULL, " \t\r\v\f", &save)) {
            if (ntok == MAX_TOKENS) {
                rc = fail_at(name, line,
                             "too many values on one line; write one directive per line");
                goto fail;
            }
            tok[ntok++] = t;
        }
        if (ntok == 0)
            continue;
        rc = parse_line(name, line, tok, ntok, restbuf, cfg, &seen);
        if (rc != VEIL_OK)
            goto fail;
    }
    rc = finish(name, line > 0 ? line : 1, cfg, &seen, flags);
    if (rc != VEIL_OK)
        goto fail;
    return VEIL_OK;
fail:
    veil_wipe(cfg->secret_key, sizeof cfg->secret_key);
    return rc;
}

int veil_net_config_parse_text(const char *text, const char *name, struct veil_net_config *cfg)
{
    return veil_net_config_parse_text_flags(text, name, cfg, 0);
}

int veil_net_config_load(const char *path, struct veil_net_config *cfg)
{
    struct stat st;
    char *text = NULL;
    size_t got = 0;
    int rc;

    if (!path || !cfg)
        return veil_error(VEIL_ERR_INVAL, "veil_net_config_load: NULL path or config");
    veil_net_config_defaults(cfg);
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0)
        return veil_error(VEIL_ERR_IO, "cannot open configuration file %s: %s", path,
                          strerror(errno));
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        rc = veil_error(VEIL_ERR_IO, "configuration file %s is not a regular file", path);
        goto fail;
    }
    if (st.st_size > MAX_FILE_BYTES) {
        rc = veil_error(VEIL_ERR_FORMAT, "%s: %lld bytes; a configuration file is under %d bytes",
                        path, (long long)st.st_size, MAX_FILE_BYTES);
        goto fail;
    }
    text = malloc((size_t)st.st_size + 2);
    if (!text) {
        rc = veil_error(VEIL_ERR_NOMEM, "cannot allocate %lld bytes for %s", (long long)st.st_size,
                        path);
        goto fail;
    }
    for (;;) {
        ssize_t r = read(fd, text + got, (size_t)st.st_size + 1 - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            rc = veil_error(VEIL_ERR_IO, "cannot read %s: %s", path, strerror(errno));
            goto fail;
        }
        if (r == 0 || (got += (size_t)r) > (size_t)st.st_size)
            break;
    }
    if (got > (size_t)st.st_size) {
        rc = veil_error(VEIL_ERR_IO, "%s changed while being read", path);
        goto fail;
    }
    text[got] = '\0';
    if (strlen(text) != got) {
        const char *nul = memchr(text, '\0', got);
        int line = 1;
        for (const char *q = text; q < nul; q++)
            line += *q == '\n';
        rc = veil_error(VEIL_ERR_FORMAT,
                        "%s:%d: contains a NUL byte; a configuration file is "
                        "plain text",
                        path, line);
        goto fail;
    }
    rc = veil_net_config_parse_text(text, path, cfg);
fail:
    free(text);
    close(fd);
    return rc;
}

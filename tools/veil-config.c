/*
 * veil-config — writes every process's session configuration file from one host list and the
 * processes' public keys, so that nobody types N+1 files with N+1 keys by hand. The host list
 * names each process's endpoint and its public key (the NAME.pub veil-keygen wrote on that
 * host, or the 40-character key itself); veil-config draws a fresh session id (or takes one),
 * checks the result with the same parser the session uses, and writes OUT/NAME.conf per process,
 * each pointing at that process's own NAME.key. The format of both files: docs/config.md and
 * `veil-config --help`.
 */
#include "config.h"
#include "net/config_internal.h"

#include "base/base_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_LINE 1024

struct proc {
    int listed;
    char endpoint[256];
    char key[VEIL_Z85_KEY_CHARS + 1];
    char name[128]; /* NAME of NAME.pub / NAME.key / NAME.conf */
};

struct hosts {
    struct proc procs[VEIL_NET_MAX_PROCS]; /* parties 0..N-1, then the dealer at index N */
    struct proc dealer;
    int nparties; /* 1 + the largest party id */
};

static void usage(FILE *out)
{
    fprintf(out,
            "usage: veil-config HOSTS [-o DIR] [--session HEX] [--timeout S] [--force]\n"
            "\n"
            "Writes one configuration file per process of a session (DIR/NAME.conf, default\n"
            "DIR .) from HOSTS, a text file with one line per process ('#' starts a comment):\n"
            "  party <id> tcp://HOST:PORT <NAME.pub or public key>\n"
            "  dealer     tcp://HOST:PORT <NAME.pub or public key>      (optional)\n"
            "Party ids run from 0 to N-1 with none missing (N >= 2). NAME.pub is the file\n"
            "'veil-keygen NAME' wrote on that process's host (a relative path is read beside\n"
            "HOSTS); a process given by its key alone is named party<id> or dealer.\n"
            "Each NAME.conf lists every process, says 'self' and 'secret-key-file NAME.key':\n"
            "copy it to that process's host, beside its NAME.key, and start the process with\n"
            "it (e.g. 'lenet_fmnist infer --config NAME.conf', or the config_path field of\n"
            "struct veil_party_options). The file format: docs/config.md.\n"
            "\n"
            "options:\n"
            "  -o, --out DIR    where to write the files (default: the current directory;\n"
            "                   created when missing)\n"
            "  --session HEX    the session id, 32 hex digits (default: a fresh random one;\n"
            "                   reuse one to restart a session from its checkpoints)\n"
            "  --timeout S      seconds of silence before a peer is declared lost (default 10)\n"
            "  -f, --force      replace existing NAME.conf files\n"
            "  -h, --help       show this help\n");
}

/* Reads the public key of a .pub file ("public <key>") or takes arg as the key itself. */
static int read_public_key(const char *hosts_path, const char *arg, struct proc *p, int line)
{
    if (strlen(arg) == VEIL_Z85_KEY_CHARS && veil_z85_key_valid(arg, VEIL_Z85_KEY_CHARS) &&
        access(arg, F_OK) != 0) {
        memcpy(p->key, arg, VEIL_Z85_KEY_CHARS + 1);
        return 0;
    }
    char path[PATH_MAX];
    const char *slash = strrchr(hosts_path, '/');
    if (arg[0] == '/' || !slash)
        snprintf(path, sizeof path, "%s", arg);
    else
        snprintf(path, sizeof path, "%.*s/%s", (int)(slash - hosts_path), hosts_path, arg);
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "veil-config: %s:%d: cannot open '%s': %s (give NAME.pub from "
                "'veil-keygen NAME', or the 40-character public key)\n", hosts_path, line, path,
                strerror(errno));
        return -1;
    }
    char buf[MAX_LINE], word[16], key[64];
    int ok = fgets(buf, sizeof buf, f) && sscanf(buf, "%15s %63s", word, key) == 2 &&
             !strcmp(word, "public") && strlen(key) == VEIL_Z85_KEY_CHARS &&
             veil_z85_key_valid(key, VEIL_Z85_KEY_CHARS);
    fclose(f);
    if (!ok) {
        fprintf(stderr, "veil-config: %s:%d: '%s' is not a public-key file (one line 'public "
                "<40-character key>', as veil-keygen writes)\n", hosts_path, line, path);
        return -1;
    }
    memcpy(p->key, key, VEIL_Z85_KEY_CHARS + 1);
    const char *base = strrchr(arg, '/') ? strrchr(arg, '/') + 1 : arg;
    size_t n = strlen(base);
    if (n > 4 && !strcmp(base + n - 4, ".pub") && n - 4 < sizeof p->name)
        snprintf(p->name, sizeof p->name, "%.*s", (int)(n - 4), base);
    return 0;
}

/* One line of the host list into h; 0, or -1 after printing why. */
static int parse_line(const char *path, int line, char *buf, struct hosts *h)
{
    char *tok[5];
    int ntok = 0;
    for (char *s = strtok(buf, " \t\r\n"); s && ntok < 5; s = strtok(NULL, " \t\r\n")) {
        if (s[0] == '#')
            break;
        tok[ntok++] = s;
    }
    if (ntok == 0)
        return 0;
    struct proc *p;
    const char *endpoint, *key;
    if (!strcmp(tok[0], "party") && ntok == 4) {
        char *end;
        long id = strtol(tok[1], &end, 10);
        if (*end || id < 0 || id >= VEIL_NET_MAX_PARTIES) {
            fprintf(stderr, "veil-config: %s:%d: party id '%s' is not 0..%d\n", path, line,
                    tok[1], VEIL_NET_MAX_PARTIES - 1);
            return -1;
        }
        p = &h->procs[id];
        if (id + 1 > h->nparties)
            h->nparties = (int)id + 1;
        endpoint = tok[2];
        key = tok[3];
        snprintf(p->name, sizeof p->name, "party%ld", id);
    } else if (!strcmp(tok[0], "dealer") && ntok == 3) {
        p = &h->dealer;
        endpoint = tok[1];
        key = tok[2];
        snprintf(p->name, sizeof p->name, "dealer");
    } else {
        fprintf(stderr, "veil-config: %s:%d: expected 'party <id> tcp://HOST:PORT <key>' or "
                "'dealer tcp://HOST:PORT <key>'\n", path, line);
        return -1;
    }
    if (p->listed) {
        fprintf(stderr, "veil-config: %s:%d: %s is listed twice\n", path, line, p->name);
        return -1;
    }
    p->listed = 1;
    if (strlen(endpoint) >= sizeof p->endpoint) {
        fprintf(stderr, "veil-config: %s:%d: endpoint too long\n", path, line);
        return -1;
    }
    snprintf(p->endpoint, sizeof p->endpoint, "%s", endpoint);
    return read_public_key(path, key, p, line);
}

static int read_hosts(const char *path, struct hosts *h)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "veil-config: cannot open '%s': %s\n", path, strerror(errno));
        return -1;
    }
    char buf[MAX_LINE + 2];
    int line = 0, rc = 0;
    while (rc == 0 && fgets(buf, sizeof buf, f)) {
        line++;
        if (!strchr(buf, '\n') && !feof(f)) {
            fprintf(stderr, "veil-config: %s:%d: line longer than %d characters\n", path, line,
                    MAX_LINE);
            rc = -1;
        } else {
            rc = parse_line(path, line, buf, h);
        }
    }
    fclose(f);
    if (rc != 0)
        return -1;
    if (h->nparties < 2) {
        fprintf(stderr, "veil-config: %s: %d part%s listed; a session needs 'party 0' and "
                "'party 1' at least\n", path, h->nparties, h->nparties == 1 ? "y" : "ies");
        return -1;
    }
    for (int i = 0; i < h->nparties; i++)
        if (!h->procs[i].listed) {
            fprintf(stderr, "veil-config: %s: party %d is missing (ids run from 0 to %d)\n",
                    path, i, h->nparties - 1);
            return -1;
        }
    h->procs[h->nparties] = h->dealer;
    return 0;
}

/* The configuration text of process `self`. */
static void config_text(const struct hosts *h, const char *session, double timeout, int self,
                        char *out, size_t cap)
{
    const int n = h->nparties, has_dealer = h->procs[n].listed;
    size_t k = (size_t)snprintf(out, cap,
                                "# veil session: %d parties%s (written by veil-config)\n"
                                "session  %s\nparties  %d\n",
                                n, has_dealer ? " and a dealer" : "", session, n);
    for (int i = 0; i < n && k < cap; i++)
        k += (size_t)snprintf(out + k, cap - k, "party %d  %s  %s\n", i, h->procs[i].endpoint,
                              h->procs[i].key);
    if (has_dealer && k < cap)
        k += (size_t)snprintf(out + k, cap - k, "dealer   %s  %s\n", h->procs[n].endpoint,
                              h->procs[n].key);
    if (k < cap)
        snprintf(out + k, cap - k, "self     %d\nsecret-key-file %s.key\ntimeout  %g\n", self,
                 h->procs[self].name, timeout);
}

static int write_file(const char *path, const char *text, int force)
{
    int fd = open(path, O_WRONLY | O_CREAT | (force ? O_TRUNC : O_EXCL), 0644);
    if (fd < 0) {
        fprintf(stderr, "veil-config: cannot write '%s': %s%s\n", path, strerror(errno),
                errno == EEXIST ? " (--force replaces it)" : "");
        return -1;
    }
    size_t n = strlen(text);
    int bad = write(fd, text, n) != (ssize_t)n;
    bad |= close(fd) != 0;
    if (bad)
        fprintf(stderr, "veil-config: writing '%s' failed\n", path);
    return bad ? -1 : 0;
}

int main(int argc, char **argv)
{
    const char *hosts_path = NULL, *dir = ".", *session_arg = NULL;
    double timeout = 10;
    int force = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "-f") || !strcmp(a, "--force")) {
            force = 1;
        } else if ((!strcmp(a, "-o") || !strcmp(a, "--out")) && v) {
            dir = argv[++i];
        } else if (!strcmp(a, "--session") && v) {
            session_arg = argv[++i];
        } else if (!strcmp(a, "--timeout") && v) {
            char *end;
            timeout = strtod(argv[++i], &end);
            if (*end || !(timeout >= 1 && timeout <= 86400)) {
                fprintf(stderr, "veil-config: --timeout %s: give seconds in [1, 86400]\n", v);
                return 2;
            }
        } else if (a[0] == '-' && a[1]) {
            fprintf(stderr, "veil-config: unknown option or missing value: '%s'\n", a);
            usage(stderr);
            return 2;
        } else if (hosts_path) {
            fprintf(stderr, "veil-config: one HOSTS file only ('%s' and '%s' given)\n",
                    hosts_path, a);
            return 2;
        } else {
            hosts_path = a;
        }
    }
    if (!hosts_path) {
        fprintf(stderr, "veil-config: missing HOSTS\n");
        usage(stderr);
        return 2;
    }
    char session[2 * VEIL_SESSION_BYTES + 1];
    if (session_arg) {
        if (strlen(session_arg) != 2 * VEIL_SESSION_BYTES ||
            strspn(session_arg, "0123456789abcdefABCDEF") != 2 * VEIL_SESSION_BYTES) {
            fprintf(stderr, "veil-config: --session %s: give %d hex digits\n", session_arg,
                    2 * VEIL_SESSION_BYTES);
            return 2;
        }
        snprintf(session, sizeof session, "%s", session_arg);
    } else {
        uint8_t sid[VEIL_SEED_BYTES];
        _Static_assert(VEIL_SEED_BYTES == VEIL_SESSION_BYTES, "a seed is a session id");
        if (veil_seed_random(sid) != VEIL_OK) {
            fprintf(stderr, "veil-config: %s\n", veil_last_error());
            return 1;
        }
        for (int i = 0; i < VEIL_SESSION_BYTES; i++)
            snprintf(session + 2 * i, 3, "%02x", sid[i]);
    }
    static struct hosts h;
    if (read_hosts(hosts_path, &h) != 0)
        return 1;
    const int nprocs = h.nparties + h.procs[h.nparties].listed;
    for (int i = 0; i < nprocs; i++)
        for (int j = 0; j < i; j++)
            if (!strcmp(h.procs[i].name, h.procs[j].name)) {
                fprintf(stderr, "veil-config: two processes use the key name '%s'; give each "
                        "its own NAME.pub\n", h.procs[i].name);
                return 1;
            }
    static char text[VEIL_NET_MAX_PROCS][8192];
    for (int self = 0; self < nprocs; self++) {
        config_text(&h, session, timeout, self, text[self], sizeof text[self]);
        struct veil_net_config cfg;
        char name[160];
        snprintf(name, sizeof name, "%s.conf", h.procs[self].name);
        if (veil_net_config_parse_text_flags(text[self], name, &cfg, VEIL_CONFIG_NO_KEY_FILE) !=
            VEIL_OK) {
            fprintf(stderr, "veil-config: the configuration of %s would not load: %s\n",
                    h.procs[self].name, veil_last_error());
            return 1;
        }
    }
    if (mkdir(dir, 0755) != 0 && errno != EEXIST) { /* the README writes into a new -o confs */
        fprintf(stderr, "veil-config: cannot create '%s': %s\n", dir, strerror(errno));
        return 1;
    }
    for (int self = 0; self < nprocs; self++) {
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s/%s.conf", dir, h.procs[self].name);
        if (write_file(path, text[self], force) != 0)
            return 1;
        printf("%s: %s %d at %s; copy it beside %s.key on that host\n", path,
               self < h.nparties ? "party" : "dealer", self, h.procs[self].endpoint,
               h.procs[self].name);
    }
    printf("session %s\n", session);
    return 0;
}

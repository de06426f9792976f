/*
 * test_net_config.c — the session configuration file and CURVE key files (net/config.c,
 * net/keys.c). In a mkdtemp directory: key files round-trip with modes 0600 / 0644 and no
 * temporary left behind; a key file with mode 0644, a tampered key, a .pub given as secret key
 * and garbage are refused; a full configuration (3 parties and a dealer, relative key path,
 * CRLF lines, comments) loads into the expected fields; and each kind of error — unknown
 * directive, duplicates, missing party / self / session, bad hex, bad key length or alphabet,
 * ids out of range, endpoints that are not tcp://HOST:PORT, bad numbers, bad link, timeout not
 * above heartbeat, reused endpoint or key, NUL byte, long line, key file not matching 'self' —
 * fails with the expected status and a "FILE:LINE: ..." message.
 */
#include "config.h"
#include "net/config_internal.h"

#include "veil.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int failures;
static int verbose;
static char dir[256];

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: check failed: %s (last error: %s)\n", __FILE__, __LINE__,      \
                    #cond, veil_last_error());                                                     \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

#define NKEYS 6
static char pub[NKEYS][VEIL_Z85_KEY_CHARS + 1], sec[NKEYS][VEIL_Z85_KEY_CHARS + 1];

static void write_file(const char *path, const char *text, size_t len, mode_t mode)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode);
    if (fd < 0 || write(fd, text, len) != (ssize_t)len || fchmod(fd, mode) != 0) {
        perror(path);
        exit(1);
    }
    close(fd);
}

static int read_text(const char *path, char *buf, size_t cap)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    size_t n = fread(buf, 1, cap - 1, f);
    buf[n] = '\0';
    fclose(f);
    return (int)n;
}

static mode_t file_mode(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (st.st_mode & 07777) : (mode_t)-1;
}

static void test_keys(void)
{
    char path[512], pubpath[512], text[256], p[VEIL_Z85_KEY_CHARS + 1], s[VEIL_Z85_KEY_CHARS + 1];

    for (int i = 0; i < NKEYS; i++)
        CHECK(veil_curve_keypair(pub[i], sec[i]) == VEIL_OK);
    CHECK(strlen(pub[0]) == 40 && strlen(sec[0]) == 40 && strcmp(pub[0], pub[1]) != 0);
    CHECK(veil_z85_key_valid(pub[0], 40) && veil_z85_key_valid(sec[0], 40));
    CHECK(!veil_z85_key_valid(pub[0], 39));
    CHECK(!veil_z85_key_valid("%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%", 40)); /* > 2^32 */
    CHECK(!veil_z85_key_valid("0000000000000000000000000000000000000 00", 40));
    CHECK(!veil_z85_key_valid("#000000000000000000000000000000000000000", 40)); /* > 2^32 */
    CHECK(veil_z85_key_valid("0000000000000000000000000000000000000000", 40));

    for (int i = 0; i < NKEYS; i++) {
        snprintf(path, sizeof path, "%s/p%d.key", dir, i);
        CHECK(veil_curve_write_key_file(path, pub[i], sec[i]) == VEIL_OK);
    }
    snprintf(path, sizeof path, "%s/p0.key", dir);
    snprintf(pubpath, sizeof pubpath, "%s/p0.pub", dir);
    CHECK(file_mode(path) == 0600);
    CHECK(file_mode(pubpath) == 0644);
    char want[256];
    snprintf(want, sizeof want, "public %s\nsecret %s\n", pub[0], sec[0]);
    CHECK(read_text(path, text, sizeof text) > 0 && strcmp(text, want) == 0);
    snprintf(want, sizeof want, "public %s\n", pub[0]);
    CHECK(read_text(pubpath, text, sizeof text) > 0 && strcmp(text, want) == 0);
    CHECK(veil_curve_read_key_file(path, p, s) == VEIL_OK);
    CHECK(strcmp(p, pub[0]) == 0 && strcmp(s, sec[0]) == 0);
    CHECK(veil_curve_read_key_file(pubpath, p, NULL) == VEIL_OK && strcmp(p, pub[0]) == 0);
    /* A .pub (0644) given as secret key file: refused for its mode; at 0600, for content. */
    CHECK(veil_curve_read_key_file(pubpath, p, s) == VEIL_ERR_AUTH);
    snprintf(path, sizeof path, "%s/pubonly.key", dir);
    write_file(path, want, strlen(want), 0600);
    CHECK(veil_curve_read_key_file(path, p, s) == VEIL_ERR_FORMAT &&
          strstr(veil_last_error(), "no 'secret <key>' line"));
    unlink(path);
    snprintf(path, sizeof path, "%s/p0.key", dir);

    /* No overwrite without permission; overwrite replaces atomically. */
    CHECK(veil_curve_write_key_file_ex(path, pub[1], sec[1], 0) == VEIL_ERR_IO &&
          strstr(veil_last_error(), "exists"));
    CHECK(veil_curve_read_key_file(path, p, s) == VEIL_OK && strcmp(p, pub[0]) == 0);
    snprintf(path, sizeof path, "%s/tmpkey.key", dir);
    CHECK(veil_curve_write_key_file_ex(path, pub[1], sec[1], 0) == VEIL_OK);
    CHECK(veil_curve_write_key_file_ex(path, pub[2], sec[2], 1) == VEIL_OK);
    CHECK(veil_curve_read_key_file(path, p, s) == VEIL_OK && strcmp(p, pub[2]) == 0);
    CHECK(veil_curve_write_key_file(path, "short", sec[2]) == VEIL_ERR_INVAL);

    /* Group- or world-readable secret key files are refused; so is a FIFO. */
    chmod(path, 0644);
    CHECK(veil_curve_read_key_file(path, p, s) == VEIL_ERR_AUTH &&
          strstr(veil_last_error(), "mode 0644") && strstr(veil_last_error(), "chmod 600"));
    chmod(path, 0640);
    CHECK(veil_curve_read_key_file(path, p, s) == VEIL_ERR_AUTH);
    chmod(path, 0604);
    CHECK(veil_curve_read_key_file(path, p, s) == VEIL_ERR_AUTH);
    chmod(path, 0400);
    CHECK(veil_curve_read_key_file(path, p, s) == VEIL_OK);
    snprintf(path, sizeof path, "%s/fifo.key", dir);
    CHECK(mkfifo(path, 0600) == 0);
    CHECK(veil_curve_read_key_file(path, p, s) == VEIL_ERR_IO &&
          strstr(veil_last_error(), "not a regular file"));
    unlink(path);
    snprintf(path, sizeof path, "%s/missing.key", dir);
    CHECK(veil_curve_read_key_file(path, p, s) == VEIL_ERR_IO);

    /* Mixed key pair, garbage, duplicate lines, an oversized file. */
    snprintf(path, sizeof path, "%s/bad.key", dir);
    snprintf(text, sizeof text, "public %s\nsecret %s\n", pub[0], sec[1]);
    write_file(path, text, strlen(text), 0600);
    CHECK(veil_curve_read_key_file(path, p, s) == VEIL_ERR_AUTH &&
          strstr(veil_last_error(), "not the one its secret key derives"));
    CHECK(s[0] == '\0'); /* wiped on failure */
    snprintf(text, sizeof text, "public %s\nsecret %s\nsecret %s\n", pub[0], sec[0], sec[0]);
    write_file(path, text, strlen(text), 0600);
    CHECK(veil_curve_read_key_file(path, p, s) == VEIL_ERR_FORMAT &&
          strstr(veil_last_error(), "second 'secret'"));
    snprintf(text, sizeof text, "public %.39s\nsecret %s\n", pub[0], sec[0]);
    write_file(path, text, strlen(text), 0600);
    CHECK(veil_curve_read_key_file(path, p, s) == VEIL_ERR_FORMAT);
    snprintf(text, sizeof text, "key %s\n", pub[0]);
    write_file(path, text, strlen(text), 0600);
    CHECK(veil_curve_read_key_file(path, p, s) == VEIL_ERR_FORMAT &&
          strstr(veil_last_error(), "unknown keyword"));
    write_file(path, "public a\0b\n", 11, 0600);
    CHECK(veil_curve_read_key_file(path, p, s) == VEIL_ERR_FORMAT &&
          strstr(veil_last_error(), "NUL"));
    char big[5000];
    memset(big, '#', sizeof big);
    write_file(path, big, sizeof big, 0600);
    CHECK(veil_curve_read_key_file(path, p, s) == VEIL_ERR_FORMAT);
    /* Comments, CRLF and blank lines are fine. */
    snprintf(text, sizeof text, "# made by hand\r\n\r\n  secret %s\r\npublic %s  \r\n", sec[3],
             pub[3]);
    write_file(path, text, strlen(text), 0600);
    CHECK(veil_curve_read_key_file(path, p, s) == VEIL_OK && strcmp(s, sec[3]) == 0);
    unlink(path);

    /* Nothing temporary remains in the directory. */
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d)))
        CHECK(!strstr(e->d_name, ".tmp"));
    if (d)
        closedir(d);
}

static const char *session_line = "session 00112233445566778899aabbccddeeff";

/* A valid configuration for party self (3 parties, a dealer), with extra lines appended. */
static void good_config(char *out, size_t cap, int self, const char *extra)
{
    snprintf(out, cap,
             "# a three-party session\n"
             "%s\n"
             "parties 3\n"
             "party 0 tcp://127.0.0.1:5550 %s\n"
             "party 1 tcp://localhost:5551 %s   # trailing comment\n"
             "party 2 tcp://[::1]:5552 %s\n"
             "dealer tcp://10.0.0.9:5559 %s\n"
             "self %d\n"
             "secret-key-file p%d.key\n"
             "%s",
             session_line, pub[0], pub[1], pub[2], pub[3], self, self, extra);
}

static int load_text(const char *fname, const char *text, struct veil_net_config *cfg)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, fname);
    write_file(path, text, strlen(text), 0644);
    return veil_net_config_load(path, cfg);
}

static void test_good(void)
{
    struct veil_net_config cfg;
    char text[4096];

    good_config(text, sizeof text, 1,
                "heartbeat 0.25\r\ntimeout 5\n\n   \t\nlink 35ms, 100Mbit\n"
                "insecure-plaintext no\n");
    CHECK(load_text("good.conf", text, &cfg) == VEIL_OK);
    CHECK(cfg.nparties == 3 && cfg.has_dealer == 1 && cfg.self == 1);
    CHECK(veil_net_config_nprocs(&cfg) == 4);
    CHECK(cfg.session[0] == 0x00 && cfg.session[1] == 0x11 && cfg.session[15] == 0xff);
    CHECK(strcmp(cfg.peers[0].endpoint, "tcp://127.0.0.1:5550") == 0);
    CHECK(strcmp(cfg.peers[1].endpoint, "tcp://localhost:5551") == 0);
    CHECK(strcmp(cfg.peers[2].endpoint, "tcp://[::1]:5552") == 0);
    CHECK(strcmp(cfg.peers[3].endpoint, "tcp://10.0.0.9:5559") == 0);
    for (int i = 0; i < 4; i++)
        CHECK(strcmp(cfg.peers[i].public_key, pub[i]) == 0);
    CHECK(cfg.peers[VEIL_NET_MAX_PARTIES].endpoint[0] == '\0');
    CHECK(strcmp(cfg.secret_key, sec[1]) == 0);
    CHECK(cfg.heartbeat_s == 0.25 && cfg.timeout_s == 5.0);
    CHECK(cfg.link.latency_s > 0.0349 && cfg.link.latency_s < 0.0351);
    CHECK(cfg.link.bandwidth_Bps == 12.5e6);
    CHECK(cfg.insecure_plaintext == 0);

    /* Keys may contain '#': only a '#' word or a line-leading '#' starts a comment. */
    snprintf(text, sizeof text,
             "%s\nparties 2\n  # party 0 is the laptop\nparty 0 tcp://h0:1 "
             "0#abcdefghij0123456789abcdefghijklmnopq#  #  comment\n"
             "party 1 tcp://h1:2 1bcdefghij0#123456789abcdefghijklmnopqr#\t#\n"
             "self 0\ninsecure-plaintext yes #\n",
             session_line);
    CHECK(load_text("hash.conf", text, &cfg) == VEIL_OK);
    CHECK(strcmp(cfg.peers[0].public_key, "0#abcdefghij0123456789abcdefghijklmnopq#") == 0);
    CHECK(strcmp(cfg.peers[1].public_key, "1bcdefghij0#123456789abcdefghijklmnopqr#") == 0);
    snprintf(text, sizeof text, "%s #comment-without-blank\n", session_line);
    CHECK(load_text("hash2.conf", text, &cfg) == VEIL_ERR_FORMAT &&
          strstr(veil_last_error(), "'session' takes 1 value, found 2"));

    /* Defaults, and the dealer's own configuration (self = N). */
    good_config(text, sizeof text, 3, "");
    CHECK(load_text("dealer.conf", text, &cfg) == VEIL_OK);
    CHECK(cfg.self == 3 && strcmp(cfg.secret_key, sec[3]) == 0);
    CHECK(cfg.heartbeat_s == 0.5 && cfg.timeout_s == 10.0);
    CHECK(cfg.link.latency_s == 0.0 && cfg.link.bandwidth_Bps == 0.0);

    /* Without a dealer; insecure mode needs no key file; absolute key path. */
    snprintf(text, sizeof text,
             "%s\nparties 2\nparty 1 tcp://h1:2 %s\nparty 0 tcp://h0:1 %s\nself 0\n"
             "insecure-plaintext yes\n",
             session_line, pub[1], pub[0]);
    CHECK(load_text("plain.conf", text, &cfg) == VEIL_OK);
    CHECK(cfg.has_dealer == 0 && cfg.insecure_plaintext == 1 && cfg.secret_key[0] == '\0');
    CHECK(veil_net_config_nprocs(&cfg) == 2);
    snprintf(text, sizeof text,
             "%s\nparties 2\nparty 1 tcp://h1:2 %s\nparty 0 tcp://h0:1 %s\nself 1\n"
             "secret-key-file %s/p1.key\n",
             session_line, pub[1], pub[0], dir);
    CHECK(load_text("abs.conf", text, &cfg) == VEIL_OK && strcmp(cfg.secret_key, sec[1]) == 0);

    /* In-memory parsing with a name without a directory: key path relative to cwd. */
    CHECK(chdir(dir) == 0);
    good_config(text, sizeof text, 0, "");
    CHECK(veil_net_config_parse_text(text, "mem", &cfg) == VEIL_OK);
    CHECK(strcmp(cfg.secret_key, sec[0]) == 0);
    CHECK(veil_net_config_parse_text_flags("bogus\n", "mem", &cfg, VEIL_CONFIG_NO_KEY_FILE) ==
          VEIL_ERR_FORMAT);
}

/* Loads text and expects status want with a message containing needle. */
static void expect_error(const char *text, int want, const char *needle, int line)
{
    struct veil_net_config cfg;
    int rc = load_text("bad.conf", text, &cfg);
    if (rc != want || !strstr(veil_last_error(), needle)) {
        fprintf(stderr, "%s:%d: load returned %d (%s), wanted %d with \"%s\"\n", __FILE__, line, rc,
                veil_last_error(), want, needle);
        failures++;
    } else if (verbose) {
        fprintf(stderr, "ok: %s\n", veil_last_error());
    }
    if (cfg.secret_key[0] != '\0') {
        fprintf(stderr, "%s:%d: secret key left in cfg after an error\n", __FILE__, line);
        failures++;
    }
}
#define EXPECT_ERROR(text, want, needle) expect_error((text), (want), (needle), __LINE__)

/* Builds a configuration from a format and expects a VEIL_ERR_FORMAT naming needle. */
static void expect_format(const char *needle, int line, const char *fmt, ...)
{
    char text[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    expect_error(text, VEIL_ERR_FORMAT, needle, line);
}
#define EXPECT_FORMAT(needle, ...) expect_format((needle), __LINE__, __VA_ARGS__)

static void test_errors(void)
{
    char text[4096], needle[512];
    const char *S = session_line;
    const char *k0 = pub[0], *k1 = pub[1], *k2 = pub[2];

    /* Each error names the file and line. */
    good_config(text, sizeof text, 0, "bogus 1\n");
    snprintf(needle, sizeof needle, "%s/bad.conf:10: unknown directive 'bogus'", dir);
    EXPECT_ERROR(text, VEIL_ERR_FORMAT, needle);

    good_config(text, sizeof text, 0, "parties 3\n");
    EXPECT_ERROR(text, VEIL_ERR_FORMAT, "bad.conf:10: duplicate 'parties' (first given at line 3)");
    good_config(text, sizeof text, 0, "session 00112233445566778899aabbccddeeff\n");
    EXPECT_ERROR(text, VEIL_ERR_FORMAT, ":10: duplicate 'session'");
    good_config(text, sizeof text, 0, "self 1\n");
    EXPECT_ERROR(text, VEIL_ERR_FORMAT, ":10: duplicate 'self'");
    good_config(text, sizeof text, 0, "heartbeat 1\nheartbeat 1\n");
    EXPECT_ERROR(text, VEIL_ERR_FORMAT, ":11: duplicate 'heartbeat'");
    good_config(text, sizeof text, 0, "link none\nlink none\n");
    EXPECT_ERROR(text, VEIL_ERR_FORMAT, ":11: duplicate 'link'");
    good_config(text, sizeof text, 0, "secret-key-file p1.key\n");
    EXPECT_ERROR(text, VEIL_ERR_FORMAT, ":10: duplicate 'secret-key-file'");
    good_config(text, sizeof text, 0, "dealer tcp://10.0.0.8:1 x\n");
    EXPECT_ERROR(text, VEIL_ERR_FORMAT, ":10: duplicate 'dealer'");
    snprintf(needle, sizeof needle, "party 2 tcp://h:9 %s\n", pub[4]);
    good_config(text, sizeof text, 0, needle);
    EXPECT_ERROR(text, VEIL_ERR_FORMAT, ":10: party 2 is defined twice (first at line 6)");

    /* Missing lines. */
    EXPECT_FORMAT("parties 3, but no line for party 2",
                  "%s\nparties 3\nparty 0 tcp://a:1 %s\nparty 1 tcp://b:1 %s\nself 0\n"
                  "secret-key-file p0.key\n",
                  S, k0, k1);
    EXPECT_FORMAT("bad.conf:2: parties 3, but no line for party 1",
                  "%s\nparties 3\nparty 0 tcp://a:1 %s\nparty 2 tcp://b:1 %s\nself 0\n"
                  "secret-key-file p0.key\n",
                  S, k0, k2);
    EXPECT_FORMAT("bad.conf:4: end of file and no 'self' line",
                  "%s\nparties 2\nparty 0 tcp://a:1 %s\nparty 1 tcp://b:1 %s\n", S, k0, k1);
    EXPECT_FORMAT("no 'session' line",
                  "parties 2\nparty 0 tcp://a:1 %s\nparty 1 tcp://b:1 %s\nself 0\n", k0, k1);
    EXPECT_FORMAT("no 'parties' line", "%s\nparty 0 tcp://a:1 %s\nparty 1 tcp://b:1 %s\nself 0\n",
                  S, k0, k1);
    EXPECT_FORMAT("no 'secret-key-file' line",
                  "%s\nparties 2\nparty 0 tcp://a:1 %s\nparty 1 tcp://b:1 %s\nself 0\n", S, k0, k1);
    EXPECT_FORMAT("bad.conf:1: end of file and no 'session' line", "%s", "");

    /* Session id: bad hex, wrong length. */
    EXPECT_FORMAT("bad.conf:1: session id has a character that is not a hex digit at position 5",
                  "session 0011g233445566778899aabbccddeeff\n");
    EXPECT_FORMAT("session id has 30 characters", "session 00112233445566778899aabbccddee\n");
    EXPECT_FORMAT("session id has 34 characters", "session 00112233445566778899aabbccddeeff00\n");
    EXPECT_FORMAT("'session' takes 1 value, found 2", "session 0011 2233\n");
    EXPECT_FORMAT("'session' takes 1 value, found 0", "session\n");

    /* Keys: length and alphabet. */
    EXPECT_FORMAT("bad.conf:3: party public key", "%s\nparties 2\nparty 0 tcp://a:1 %.39s\n", S,
                  k0);
    EXPECT_FORMAT("not a 40-character Z85 key", "%s\nparties 2\nparty 0 tcp://a:1 %s0\n", S, k0);
    EXPECT_FORMAT("not a 40-character Z85 key", "%s\nparties 2\nparty 0 tcp://a:1 %.39s\"\n", S,
                  k0);
    EXPECT_FORMAT("dealer public key", "%s\ndealer tcp://a:1 tooshort\n", S);

    /* Ids and counts out of range. */
    EXPECT_FORMAT("bad.conf:5: party id 3 is out of range: 'parties 3' (line 2) allows ids 0..2",
                  "%s\nparties 3\nparty 0 tcp://a:1 %s\nparty 1 tcp://b:1 %s\nparty 3 tcp://c:1 "
                  "%s\nself 0\n",
                  S, k0, k1, k2);
    EXPECT_FORMAT("party id '16' is not a number from 0 to 15", "party 16 tcp://a:1 %s\n", k0);
    EXPECT_FORMAT("party id '-1'", "party -1 tcp://a:1 %s\n", k0);
    EXPECT_FORMAT("party id '0x1'", "party 0x1 tcp://a:1 %s\n", k0);
    EXPECT_FORMAT("parties '1' is not a number from 2 to 16", "parties 1\n");
    EXPECT_FORMAT("parties '17'", "parties 17\n");
    EXPECT_FORMAT("parties 'three'", "parties three\n");
    EXPECT_FORMAT("parties '99999999999999999999'", "parties 99999999999999999999\n");
    EXPECT_FORMAT("bad.conf:5: self 2 is out of range: the ids are 0..1 (no 'dealer' line)",
                  "%s\nparties 2\nparty 0 tcp://a:1 %s\nparty 1 tcp://b:1 %s\nself 2\n", S, k0, k1);
    EXPECT_FORMAT("self '17'", "self 17\n");
    EXPECT_FORMAT("self ''", "self ''\n");

    /* Endpoints. */
    static const char *bad_endpoints[] = {
        "udp://a:1",    "tcp://a",    "tcp://a:",     "tcp://a:0",  "tcp://a:65536", "tcp://:5555",
        "tcp://a:12x",  "tcp://a:-1", "tcp://[zz]:1", "tcp://[]:1", "tcp://a/b:1",   "tcp://*:1",
        "ipc:///tmp/x", "tcp://a:1/", "TCP://a:1",    "tcp://a:+1", "tcp://[::1:1",  "tcp://a;b:1",
    };
    for (size_t i = 0; i < sizeof bad_endpoints / sizeof bad_endpoints[0]; i++) {
        snprintf(needle, sizeof needle,
                 "bad.conf:2: endpoint '%s' of party 0 is not "
                 "tcp://HOST:PORT",
                 bad_endpoints[i]);
        EXPECT_FORMAT(needle, "%s\nparty 0 %s %s\n", S, bad_endpoints[i], k0);
    }
    char long_host[300];
    memset(long_host, 'h', sizeof long_host);
    long_host[sizeof long_host - 1] = '\0';
    EXPECT_FORMAT("is not tcp://HOST:PORT", "party 0 tcp://%s:1 %s\n", long_host, k0);
    EXPECT_FORMAT("dealer endpoint 'tcp://a'", "dealer tcp://a %s\n", k0);
    EXPECT_FORMAT("'party' takes 3 values, found 2", "party 0 tcp://a:1\n");
    EXPECT_FORMAT("'dealer' takes 2 values, found 3", "dealer tcp://a:1 %s x\n", k0);

    /* Numbers and options. */
    EXPECT_FORMAT("heartbeat '-1' is not a number of seconds", "heartbeat -1\n");
    EXPECT_FORMAT("heartbeat '0'", "heartbeat 0\n");
    EXPECT_FORMAT("heartbeat 'nan'", "heartbeat nan\n");
    EXPECT_FORMAT("heartbeat '1e3'", "heartbeat 1e3\n");
    EXPECT_FORMAT("heartbeat '1s'", "heartbeat 1s\n");
    EXPECT_FORMAT("timeout '7200'", "timeout 7200\n");
    good_config(text, sizeof text, 0, "heartbeat 2\ntimeout 1\n");
    EXPECT_ERROR(text, VEIL_ERR_FORMAT, ":11: timeout 1 s is not longer than heartbeat 2 s");
    good_config(text, sizeof text, 0, "heartbeat 20\n");
    EXPECT_ERROR(text, VEIL_ERR_FORMAT, ":10: timeout 10 s is not longer than heartbeat 20 s");
    EXPECT_FORMAT("bad.conf:1: link \"35ms\": missing ','", "link 35ms\n");
    EXPECT_FORMAT("bad.conf:1: link \"-1ms,1Gbit\"", "link -1ms,1Gbit\n");
    EXPECT_FORMAT("'link' needs a value", "link\n");
    EXPECT_FORMAT("insecure-plaintext 'true'", "insecure-plaintext true\n");

    /* Reused endpoint or key. */
    EXPECT_FORMAT("bad.conf:4: endpoint tcp://a:1 is also given to party 0 (line 3)",
                  "%s\nparties 2\nparty 0 tcp://a:1 %s\nparty 1 tcp://a:1 %s\nself 0\n", S, k0, k1);
    EXPECT_FORMAT("bad.conf:4: public key is also given to party 0 (line 3)",
                  "%s\nparties 2\nparty 0 tcp://a:1 %s\nparty 1 tcp://b:1 %s\nself 0\n", S, k0, k0);
    EXPECT_FORMAT("bad.conf:5: public key is also given to party 1",
                  "%s\nparties 2\nparty 0 tcp://a:1 %s\nparty 1 tcp://b:1 %s\n"
                  "dealer tcp://c:1 %s\nself 0\n",
                  S, k0, k1, k1);

    /* Text-level problems. */
    char longline[1100];
    memset(longline, 'x', sizeof longline);
    longline[sizeof longline - 1] = '\0';
    EXPECT_FORMAT("bad.conf:2: line is longer than 1024 characters", "%s\n%s\n", S, longline);
    EXPECT_FORMAT("too many values", "party 0 1 2 3 4 5 6 7 8\n");
    {
        char path[512];
        struct veil_net_config cfg;
        snprintf(path, sizeof path, "%s/nul.conf", dir);
        write_file(path, "session 00\nparties 2\0\n", 22, 0644);
        CHECK(veil_net_config_load(path, &cfg) == VEIL_ERR_FORMAT &&
              strstr(veil_last_error(), "nul.conf:2: contains a NUL byte"));
        snprintf(path, sizeof path, "%s/none.conf", dir);
        CHECK(veil_net_config_load(path, &cfg) == VEIL_ERR_IO &&
              strstr(veil_last_error(), "cannot open configuration file"));
        CHECK(veil_net_config_load(dir, &cfg) == VEIL_ERR_IO);
    }

    /* Key file problems surface with the directive's line. */
    good_config(text, sizeof text, 0, "");
    char *kf = strstr(text, "secret-key-file p0.key");
    memcpy(kf, "secret-key-file p9.key", 22);
    EXPECT_ERROR(text, VEIL_ERR_IO, "bad.conf:9: cannot open key file");
    good_config(text, sizeof text, 0, "");
    kf = strstr(text, "secret-key-file p0.key");
    memcpy(kf, "secret-key-file p2.key", 22); /* party 2's key for self 0 */
    EXPECT_ERROR(text, VEIL_ERR_AUTH, "bad.conf:9: the key in");
    CHECK(strstr(veil_last_error(), "point secret-key-file at this process's own NAME.key"));
    char keypath[512];
    snprintf(keypath, sizeof keypath, "%s/p0.key", dir);
    chmod(keypath, 0644);
    good_config(text, sizeof text, 0, "");
    EXPECT_ERROR(text, VEIL_ERR_AUTH, "mode 0644");
    chmod(keypath, 0600);
    good_config(text, sizeof text, 0, "");
    struct veil_net_config cfg;
    CHECK(load_text("again.conf", text, &cfg) == VEIL_OK);
}

static void remove_dir(void)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char path[600];
    while (d && (e = readdir(d))) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        unlink(path);
    }
    if (d)
        closedir(d);
    rmdir(dir);
}

int main(void)
{
    verbose = getenv("VEIL_TEST_VERBOSE") != NULL;
    if (!verbose)
        veil_log_set_level(VEIL_LOG_ERROR); /* the insecure-plaintext case warns on purpose */
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/veil-config-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    test_keys();
    test_good();
    test_errors();
    remove_dir();
    if (failures)
        fprintf(stderr, "test_net_config: %d failure(s)\n", failures);
    return failures ? 1 : 0;
}

/*
 * fuzz_frame.c — libFuzzer target for everything in net/ that parses untrusted bytes or text:
 * veil_frame_decode (on the raw input and on its first 64 bytes with the crc recomputed, so
 * that the fuzzer reaches the field checks behind the crc), veil_hello_decode and
 * veil_hello_compare, the data channel's sealed frames (veil_seal_peek, veil_seal_open under a
 * fixed key), veil_link_parse (and the pacing model on what it accepts), the
 * configuration parser (in memory, key files not opened) and Z85 key validation. Each accepted
 * result is checked against the invariants its parser promises; a broken one traps.
 * Built by scripts/fuzz.sh with clang -fsanitize=fuzzer,address,undefined; needs no StarPU.
 */
#include "config.h"
#include "net/config_internal.h"
#include "net/emulate.h"
#include "net/frame.h"
#include "net/seal.h"

#include "veil.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

#define MAX_TEXT 8192

static void require(int cond)
{
    if (!cond)
        __builtin_trap();
}

static void fuzz_header(const uint8_t *data, size_t size)
{
    struct veil_frame_header h;
    uint8_t buf[VEIL_FRAME_HEADER_BYTES], again[VEIL_FRAME_HEADER_BYTES];

    int rc = veil_frame_decode(data, size, &h);
    require(rc == VEIL_OK || rc == VEIL_ERR_PROTO);
    if (size < VEIL_FRAME_HEADER_BYTES)
        return;
    /* Reseal the first 64 bytes so that the checks after the crc see fuzzed fields. */
    memcpy(buf, data, sizeof buf);
    uint32_t crc = veil_crc32c(buf, 60);
    for (int i = 0; i < 4; i++)
        buf[60 + i] = (uint8_t)(crc >> (8 * i));
    rc = veil_frame_decode(buf, sizeof buf, &h);
    require(rc == VEIL_OK || rc == VEIL_ERR_PROTO);
    if (rc != VEIL_OK)
        return;
    require(h.version == VEIL_FRAME_VERSION && h.flags == 0);
    require(h.type >= VEIL_FRAME_HELLO && h.type < VEIL_FRAME_TYPE_END);
    require(h.length <= VEIL_FRAME_MAX_CHUNK && h.total <= VEIL_FRAME_MAX_TOTAL);
    require(h.length <= h.total && h.offset <= h.total - h.length);
    /* Accepted headers re-encode to the same bytes (with the magic in place). */
    veil_frame_encode(&h, again);
    require(memcmp(again, buf, sizeof buf) == 0);
    uint8_t session[VEIL_SESSION_BYTES];
    memcpy(session, h.session, sizeof session);
    require(veil_frame_check_peer(&h, session, h.sender) == VEIL_OK);
    session[size % VEIL_SESSION_BYTES] ^= 1;
    require(veil_frame_check_peer(&h, session, h.sender) == VEIL_ERR_PROTO);
}

static void fuzz_hello(const uint8_t *data, size_t size)
{
    struct veil_hello a, b;
    uint8_t again[VEIL_HELLO_BYTES];
    int rc = veil_hello_decode(data, size, &a);
    require(rc == VEIL_OK || rc == VEIL_ERR_PROTO);
    if (size != VEIL_HELLO_BYTES)
        require(rc == VEIL_ERR_PROTO);
    if (rc == VEIL_OK) /* the data port is a port; the accepted bytes re-encode the same */
        require(a.data_port <= 65535);
    if (size < 2 * VEIL_HELLO_BYTES)
        return;
    if (veil_hello_decode(data, VEIL_HELLO_BYTES, &a) != VEIL_OK ||
        veil_hello_decode(data + VEIL_HELLO_BYTES, VEIL_HELLO_BYTES, &b) != VEIL_OK)
        return;
    veil_hello_encode(&a, again);
    require(memcmp(again, data, VEIL_HELLO_BYTES) == 0);
    rc = veil_hello_compare(&a, &b, b.party);
    require(rc == VEIL_OK || rc == VEIL_ERR_MISMATCH);
    if (rc == VEIL_OK)
        require(memcmp(&a.session, &b.session, sizeof a.session) == 0 && a.nparties == b.nparties);
    require(veil_hello_compare(&a, &a, a.party) ==
            (a.has_dealer > 1 ? VEIL_ERR_MISMATCH : VEIL_OK));
}

/* The key the seeds' sealed frame is sealed with (fixed: the fuzzer mutates authentic frames). */
static const uint8_t seal_key[VEIL_SEAL_KEY_BYTES] = {7, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10};

static void fuzz_sealed(const uint8_t *data, size_t size)
{
    uint32_t sender;
    uint64_t counter;
    int rc = veil_seal_peek(data, size, VEIL_FRAME_HEADER_BYTES, &sender, &counter);
    require(rc == VEIL_OK || rc == VEIL_ERR_PROTO);
    if (rc != VEIL_OK || size > 4096)
        return;
    static struct veil_seal open_s, seal_s;
    if (!veil_seal_ready(&open_s) && (veil_seal_init(&open_s, seal_key, 0) != VEIL_OK ||
                                      veil_seal_init(&seal_s, seal_key, 1) != VEIL_OK))
        __builtin_trap();
    uint8_t buf[4096], again[4096];
    memcpy(buf, data, size);
    rc = veil_seal_open(&open_s, buf, size);
    require(rc == VEIL_OK || rc == VEIL_ERR_PROTO);
    if (rc != VEIL_OK)
        return;
    /* authentic: sealing what it opened to, under its sender and counter, gives it back */
    memcpy(again, buf, size);
    require(veil_seal_frame(&seal_s, sender, counter, again, size - VEIL_SEAL_OVERHEAD) ==
            VEIL_OK);
    require(memcmp(again, data, size) == 0);
}

static void fuzz_text(const uint8_t *data, size_t size)
{
    char text[MAX_TEXT + 1];
    size_t n = size < MAX_TEXT ? size : MAX_TEXT;
    memcpy(text, data, n);
    text[n] = '\0';

    struct veil_link_params p;
    if (veil_link_parse(text, &p) == VEIL_OK) {
        require(isfinite(p.latency_s) && p.latency_s >= 0 && p.latency_s <= 3600);
        require(isfinite(p.bandwidth_Bps) && p.bandwidth_Bps >= 0);
        struct veil_link_emulator e;
        veil_link_emulator_init(&e, &p);
        double last = 0, now = 1.0;
        for (size_t i = 0; i < 8; i++) {
            size_t bytes = i < n ? (size_t)(uint8_t)text[i] << (i * 3) : i;
            double t = veil_link_emulator_release_time(&e, bytes, now);
            require(t >= last && t >= now);
            last = t;
            now += 1e-3;
        }
    }

    struct veil_net_config cfg;
    int rc = veil_net_config_parse_text_flags(text, "fuzz.conf", &cfg, VEIL_CONFIG_NO_KEY_FILE);
    require(rc == VEIL_OK || rc == VEIL_ERR_FORMAT);
    if (rc == VEIL_OK) {
        int nprocs = veil_net_config_nprocs(&cfg);
        require(cfg.nparties >= 2 && cfg.nparties <= VEIL_NET_MAX_PARTIES);
        require(nprocs <= VEIL_NET_MAX_PROCS && cfg.self >= 0 && cfg.self < nprocs);
        for (int i = 0; i < nprocs; i++) {
            require(memchr(cfg.peers[i].endpoint, '\0', sizeof cfg.peers[i].endpoint) != NULL);
            require(strncmp(cfg.peers[i].endpoint, "tcp://", 6) == 0);
            require(veil_z85_key_valid(cfg.peers[i].public_key, strlen(cfg.peers[i].public_key)));
        }
        require(cfg.heartbeat_s > 0 && cfg.timeout_s > cfg.heartbeat_s);
    }
    (void)veil_z85_key_valid(text, n);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    veil_log_set_level(VEIL_LOG_ERROR); /* insecure-plaintext configurations warn */
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_header(data, size);
    fuzz_hello(data, size);
    fuzz_sealed(data, size);
    fuzz_text(data, size);
    return 0;
}

#ifdef VEIL_FUZZ_SEEDS
/*
 * Seed writer (built without libFuzzer by scripts/fuzz.sh): writes valid inputs of every kind
 * into the directory argv[1], so that fuzzing starts from well-formed headers and texts.
 */
#include <stdio.h>

static int write_seed(const char *dir, const char *name, const void *data, size_t n)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, n, f) != n) {
        perror(path);
        if (f)
            fclose(f);
        return 1;
    }
    return fclose(f) != 0;
}

int main(int argc, char **argv)
{
    static const char *texts[] = {
        "35ms,100Mbit",
        "0.1ms,10Gbit",
        "none",
        "0,1GB",
        "session 00112233445566778899aabbccddeeff\nparties 2\n"
        "party 0 tcp://127.0.0.1:5550 rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7\n"
        "party 1 tcp://[::1]:5551 Yne@$w-vo<fVvi]a<NY6T1ed:M$fCG*[IaLV{hID\n"
        "dealer tcp://host-2:5552 0#abcdefghij0123456789abcdefghijklmnopq#\n"
        "self 1 # me\nsecret-key-file p1.key\nheartbeat 0.25\ntimeout 5\n"
        "link 1ms, 1Gbit\ninsecure-plaintext no\n",
        "JTKVSB%%)wK0E.X)V>+}o?pNmC{O&4W4b!Ni{Lh6",
    };
    uint8_t buf[2 * VEIL_HELLO_BYTES + VEIL_SEAL_OVERHEAD + VEIL_FRAME_HEADER_BYTES + 64];
    char name[64];
    int bad = 0;

    if (argc != 2) {
        fprintf(stderr, "usage: %s DIR\n", argv[0]);
        return 2;
    }
    for (int t = VEIL_FRAME_HELLO; t < VEIL_FRAME_TYPE_END; t++) {
        struct veil_frame_header h;
        memset(&h, 0, sizeof h);
        h.version = VEIL_FRAME_VERSION;
        h.type = (uint16_t)t;
        for (int i = 0; i < VEIL_SESSION_BYTES; i++)
            h.session[i] = (uint8_t)(17 * i);
        h.sender = 1;
        h.tag = 42;
        if (t == VEIL_FRAME_HELLO)
            h.total = h.length = VEIL_HELLO_BYTES;
        else if (t == VEIL_FRAME_DATA)
            h.offset = 4096, h.length = 4096, h.total = 1 << 20;
        else if (t == VEIL_FRAME_ABORT)
            h.total = h.length = 20;
        veil_frame_encode(&h, buf);
        snprintf(name, sizeof name, "header-%s", veil_frame_type_name((uint32_t)t));
        bad |= write_seed(argv[1], name, buf, VEIL_FRAME_HEADER_BYTES);
    }
    struct veil_hello hello;
    memset(&hello, 0, sizeof hello);
    hello.protocol_version = VEIL_NET_PROTOCOL_VERSION;
    hello.party = 0;
    hello.nparties = 3;
    hello.has_dealer = 1;
    veil_hello_encode(&hello, buf);
    hello.party = 1;
    veil_hello_encode(&hello, buf + VEIL_HELLO_BYTES);
    bad |= write_seed(argv[1], "hello-pair", buf, sizeof buf);
    bad |= write_seed(argv[1], "hello", buf, VEIL_HELLO_BYTES);
    struct veil_seal s = {0};
    const size_t body = VEIL_FRAME_HEADER_BYTES + 64;
    memset(buf, 0x5a, sizeof buf);
    if (veil_seal_init(&s, seal_key, 1) != VEIL_OK ||
        veil_seal_frame(&s, 1, 3, buf, body) != VEIL_OK)
        return 1;
    veil_seal_free(&s);
    bad |= write_seed(argv[1], "sealed", buf, body + VEIL_SEAL_OVERHEAD);
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        snprintf(name, sizeof name, "text-%zu", i);
        bad |= write_seed(argv[1], name, texts[i], strlen(texts[i]));
    }
    return bad;
}
#endif

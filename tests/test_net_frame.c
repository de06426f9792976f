/*
 * test_net_frame.c — the wire format (net/frame.c): CRC-32C check value; exact byte layout of an
 * encoded header; round trips of every frame type; rejection, with VEIL_ERR_PROTO and a message
 * naming the field, of wrong sizes, every single-bit corruption, each field set to a bad value
 * one at a time (with a valid crc so the field check itself is exercised), offset + length
 * overflow near 2^64, chunks over the limit, per-type payload rules, and random garbage;
 * veil_frame_check_peer; hello round trip and veil_hello_compare naming what differs.
 */
#include "config.h"
#include "net/frame.h"

#include "veil.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures;
static int verbose;

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);               \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

/* Expects status want and a last-error message containing needle. */
#define CHECK_ERR(expr, want, needle)                                                              \
    do {                                                                                           \
        int rc_ = (expr);                                                                          \
        if (rc_ != (want) || !strstr(veil_last_error(), (needle))) {                               \
            fprintf(stderr, "%s:%d: %s returned %d (%s), wanted %d with \"%s\"\n", __FILE__,       \
                    __LINE__, #expr, rc_, veil_last_error(), (want), (needle));                    \
            failures++;                                                                            \
        } else if (verbose) {                                                                      \
            fprintf(stderr, "ok: %s\n", veil_last_error());                                        \
        }                                                                                          \
    } while (0)

static uint64_t rng_state = 0x9e3779b97f4a7c15u;

static uint64_t rnd(void)
{
    /* xorshift64*: test data only. */
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545f4914f6cdd1du;
}

static struct veil_frame_header data_header(void)
{
    struct veil_frame_header h;
    memset(&h, 0, sizeof h);
    h.version = VEIL_FRAME_VERSION;
    h.type = VEIL_FRAME_DATA;
    for (int i = 0; i < VEIL_SESSION_BYTES; i++)
        h.session[i] = (uint8_t)(0xa0 + i);
    h.sender = 2;
    h.tag = UINT64_C(0x0102030405060708);
    h.offset = 4096;
    h.total = 1 << 20;
    h.length = 8192;
    return h;
}

static int same_header(const struct veil_frame_header *a, const struct veil_frame_header *b)
{
    return a->version == b->version && a->type == b->type &&
           memcmp(a->session, b->session, VEIL_SESSION_BYTES) == 0 && a->sender == b->sender &&
           a->flags == b->flags && a->tag == b->tag && a->offset == b->offset &&
           a->total == b->total && a->length == b->length;
}

static void put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

/* Recomputes the crc of a hand-modified header so that the field check is what fails. */
static void reseal(uint8_t *buf)
{
    put32(buf + 60, veil_crc32c(buf, 60));
}

static void test_crc(void)
{
    const char *s = "123456789";
    CHECK(veil_crc32c((const uint8_t *)s, 9) == 0xE3069283u);
    CHECK(veil_crc32c((const uint8_t *)s, 0) == 0);
    uint8_t zeros[32] = {0};
    /* RFC 3720 B.4 test vector: 32 bytes of zeros. */
    CHECK(veil_crc32c(zeros, 32) == 0x8A9136AAu);
}

static void test_layout(void)
{
    struct veil_frame_header h = data_header(), d;
    uint8_t buf[VEIL_FRAME_HEADER_BYTES];
    veil_frame_encode(&h, buf);
    static const uint8_t head[8] = {'V', 'E', 'I', 'L', VEIL_FRAME_VERSION, 0, 2, 0};
    CHECK(memcmp(buf, head, 8) == 0);
    CHECK(buf[8] == 0xa0 && buf[23] == 0xaf);
    CHECK(buf[24] == 2 && buf[25] == 0 && buf[26] == 0 && buf[27] == 0);
    CHECK(buf[28] == 0 && buf[29] == 0 && buf[30] == 0 && buf[31] == 0);
    static const uint8_t tag[8] = {8, 7, 6, 5, 4, 3, 2, 1};
    CHECK(memcmp(buf + 32, tag, 8) == 0);
    static const uint8_t off[8] = {0, 0x10, 0, 0, 0, 0, 0, 0};
    CHECK(memcmp(buf + 40, off, 8) == 0);
    static const uint8_t tot[8] = {0, 0, 0x10, 0, 0, 0, 0, 0};
    CHECK(memcmp(buf + 48, tot, 8) == 0);
    static const uint8_t len[4] = {0, 0x20, 0, 0};
    CHECK(memcmp(buf + 56, len, 4) == 0);
    uint32_t crc = veil_crc32c(buf, 60);
    CHECK(buf[60] == (uint8_t)crc && buf[63] == (uint8_t)(crc >> 24));
    CHECK(veil_frame_decode(buf, sizeof buf, &d) == VEIL_OK);
    CHECK(same_header(&h, &d));
}

static void test_round_trips(void)
{
    struct veil_frame_header h, d;
    uint8_t buf[VEIL_FRAME_HEADER_BYTES];

    h = data_header();
    h.type = VEIL_FRAME_HELLO;
    h.offset = 0;
    h.total = h.length = VEIL_HELLO_BYTES;
    veil_frame_encode(&h, buf);
    CHECK(veil_frame_decode(buf, sizeof buf, &d) == VEIL_OK && same_header(&h, &d));

    h = data_header();
    h.type = VEIL_FRAME_HEARTBEAT;
    h.offset = h.total = h.length = 0;
    veil_frame_encode(&h, buf);
    CHECK(veil_frame_decode(buf, sizeof buf, &d) == VEIL_OK && same_header(&h, &d));
    h.type = VEIL_FRAME_BYE;
    veil_frame_encode(&h, buf);
    CHECK(veil_frame_decode(buf, sizeof buf, &d) == VEIL_OK && same_header(&h, &d));

    h.type = VEIL_FRAME_ABORT;
    h.total = h.length = 27;
    veil_frame_encode(&h, buf);
    CHECK(veil_frame_decode(buf, sizeof buf, &d) == VEIL_OK && same_header(&h, &d));

    /* Data limits: the largest chunk, the largest message, its last chunk, an empty message. */
    h = data_header();
    h.length = VEIL_FRAME_MAX_CHUNK;
    h.total = VEIL_FRAME_MAX_TOTAL;
    h.offset = VEIL_FRAME_MAX_TOTAL - VEIL_FRAME_MAX_CHUNK;
    h.tag = UINT64_MAX;
    h.sender = UINT32_MAX;
    veil_frame_encode(&h, buf);
    CHECK(veil_frame_decode(buf, sizeof buf, &d) == VEIL_OK && same_header(&h, &d));
    h.offset = h.total = h.length = 0;
    veil_frame_encode(&h, buf);
    CHECK(veil_frame_decode(buf, sizeof buf, &d) == VEIL_OK && same_header(&h, &d));
}

static void test_sizes(void)
{
    struct veil_frame_header h = data_header(), d;
    uint8_t buf[2 * VEIL_FRAME_HEADER_BYTES];
    veil_frame_encode(&h, buf);
    memset(buf + VEIL_FRAME_HEADER_BYTES, 0, VEIL_FRAME_HEADER_BYTES);
    CHECK_ERR(veil_frame_decode(buf, 0, &d), VEIL_ERR_PROTO, "0 bytes received");
    CHECK_ERR(veil_frame_decode(buf, 63, &d), VEIL_ERR_PROTO, "63 bytes received");
    CHECK_ERR(veil_frame_decode(buf, 65, &d), VEIL_ERR_PROTO, "65 bytes received");
    CHECK_ERR(veil_frame_decode(buf, 128, &d), VEIL_ERR_PROTO, "exactly 64 bytes");
    CHECK_ERR(veil_frame_decode(NULL, 64, &d), VEIL_ERR_INVAL, "NULL");
    /* Every truncation is refused, however the bytes look. */
    for (size_t n = 0; n < VEIL_FRAME_HEADER_BYTES; n++)
        CHECK(veil_frame_decode(buf, n, &d) == VEIL_ERR_PROTO);
}

static void test_bit_flips(void)
{
    struct veil_frame_header h = data_header(), d;
    uint8_t good[VEIL_FRAME_HEADER_BYTES], buf[VEIL_FRAME_HEADER_BYTES];
    veil_frame_encode(&h, good);
    int detected = 0;
    for (int bit = 0; bit < 8 * VEIL_FRAME_HEADER_BYTES; bit++) {
        memcpy(buf, good, sizeof buf);
        buf[bit / 8] ^= (uint8_t)(1u << (bit % 8));
        memset(&d, 0x5a, sizeof d);
        if (veil_frame_decode(buf, sizeof buf, &d) == VEIL_ERR_PROTO)
            detected++;
        /* A refused header leaves the output untouched. */
        CHECK(d.version == 0x5a5a && d.length == 0x5a5a5a5au);
    }
    CHECK(detected == 8 * VEIL_FRAME_HEADER_BYTES);
    /* Two flipped bits in the crc word alone, and a flipped bit in both body and crc. */
    memcpy(buf, good, sizeof buf);
    buf[60] ^= 3;
    CHECK_ERR(veil_frame_decode(buf, sizeof buf, &d), VEIL_ERR_PROTO, "crc32c");
    memcpy(buf, good, sizeof buf);
    buf[33] ^= 0x80;
    buf[62] ^= 0x01;
    CHECK_ERR(veil_frame_decode(buf, sizeof buf, &d), VEIL_ERR_PROTO, "crc32c");
}

/* Encodes h, applies one change to the bytes, reseals and expects a refusal naming needle. */
static void expect_field_error(const struct veil_frame_header *h, const char *needle, int line)
{
    uint8_t buf[VEIL_FRAME_HEADER_BYTES];
    struct veil_frame_header d;
    veil_frame_encode(h, buf);
    int rc = veil_frame_decode(buf, sizeof buf, &d);
    if (rc != VEIL_ERR_PROTO || !strstr(veil_last_error(), needle)) {
        fprintf(stderr, "%s:%d: decode returned %d (%s), wanted VEIL_ERR_PROTO with \"%s\"\n",
                __FILE__, line, rc, veil_last_error(), needle);
        failures++;
    } else if (verbose) {
        fprintf(stderr, "ok: %s\n", veil_last_error());
    }
}
#define EXPECT_FIELD_ERROR(h, needle) expect_field_error(&(h), (needle), __LINE__)

static void test_fields(void)
{
    struct veil_frame_header h, d;
    uint8_t buf[VEIL_FRAME_HEADER_BYTES];

    /* Magic (bytes, resealed). */
    h = data_header();
    veil_frame_encode(&h, buf);
    buf[0] = 'v';
    reseal(buf);
    CHECK_ERR(veil_frame_decode(buf, sizeof buf, &d), VEIL_ERR_PROTO, "magic");
    put32(buf, 0);
    reseal(buf);
    CHECK_ERR(veil_frame_decode(buf, sizeof buf, &d), VEIL_ERR_PROTO, "not a Veil process");

    h = data_header();
    h.version = 0;
    EXPECT_FIELD_ERROR(h, "version 0");
    h.version = VEIL_FRAME_VERSION + 1;
    EXPECT_FIELD_ERROR(h, "wire-format version 3");
    h.version = 0xffff;
    EXPECT_FIELD_ERROR(h, "version 65535");

    h = data_header();
    h.type = 0;
    EXPECT_FIELD_ERROR(h, "unknown type 0");
    h.type = VEIL_FRAME_TYPE_END;
    EXPECT_FIELD_ERROR(h, "unknown type 6");
    h.type = 0xffff;
    EXPECT_FIELD_ERROR(h, "unknown type 65535");

    h = data_header();
    h.flags = 1;
    EXPECT_FIELD_ERROR(h, "flags");
    h.flags = 0x80000000u;
    EXPECT_FIELD_ERROR(h, "flags are 0x80000000");

    h = data_header();
    h.length = VEIL_FRAME_MAX_CHUNK + 1;
    h.total = VEIL_FRAME_MAX_TOTAL;
    h.offset = 0;
    EXPECT_FIELD_ERROR(h, "chunk length 16777217 exceeds");
    h.length = UINT32_MAX;
    EXPECT_FIELD_ERROR(h, "chunk length 4294967295 exceeds");

    h = data_header();
    h.total = VEIL_FRAME_MAX_TOTAL + 1;
    EXPECT_FIELD_ERROR(h, "message total");
    h.total = UINT64_MAX;
    EXPECT_FIELD_ERROR(h, "message total 18446744073709551615");

    /* offset + length wrapping around 2^64 must not pass as "fits". */
    h = data_header();
    h.length = 100;
    h.total = 1000;
    h.offset = UINT64_MAX - 10;
    EXPECT_FIELD_ERROR(h, "does not fit");
    h.offset = UINT64_MAX - 99; /* offset + length == 2^64 + 0 would wrap to exactly 0 */
    EXPECT_FIELD_ERROR(h, "does not fit");
    h.offset = UINT64_MAX;
    EXPECT_FIELD_ERROR(h, "does not fit");
    h.offset = 901; /* one past the end */
    EXPECT_FIELD_ERROR(h, "does not fit");
    h.offset = 900; /* exactly at the end: fine */
    veil_frame_encode(&h, buf);
    CHECK(veil_frame_decode(buf, sizeof buf, &d) == VEIL_OK);
    h.offset = 0;
    h.length = 1001; /* chunk longer than the message */
    EXPECT_FIELD_ERROR(h, "does not fit");

    h = data_header();
    h.length = 0;
    h.offset = 0;
    EXPECT_FIELD_ERROR(h, "data chunk of length 0");

    /* Per-type payload rules. */
    h = data_header();
    h.type = VEIL_FRAME_HEARTBEAT;
    h.offset = 0;
    h.total = h.length = 1;
    EXPECT_FIELD_ERROR(h, "heartbeat frame carries a payload");
    h.length = 0;
    EXPECT_FIELD_ERROR(h, "heartbeat frame carries a payload");
    h.type = VEIL_FRAME_BYE;
    h.total = h.length = 8;
    EXPECT_FIELD_ERROR(h, "bye frame carries a payload");

    h = data_header();
    h.type = VEIL_FRAME_HELLO;
    h.offset = 0;
    h.total = h.length = VEIL_HELLO_BYTES - 1;
    EXPECT_FIELD_ERROR(h, "hello frame has length 103");
    h.total = h.length = VEIL_HELLO_BYTES + 1;
    EXPECT_FIELD_ERROR(h, "hello frame has length 105");
    h.length = VEIL_HELLO_BYTES;
    h.total = 2 * VEIL_HELLO_BYTES;
    h.offset = VEIL_HELLO_BYTES;
    EXPECT_FIELD_ERROR(h, "hello frame");

    h = data_header();
    h.type = VEIL_FRAME_ABORT;
    h.length = 10;
    h.total = 20;
    h.offset = 0;
    EXPECT_FIELD_ERROR(h, "abort frame");
    h.offset = 10;
    EXPECT_FIELD_ERROR(h, "abort frame");
}

/* Invariants every accepted header satisfies, whatever the input bytes were. */
static int header_sane(const struct veil_frame_header *d)
{
    return d->version == VEIL_FRAME_VERSION && d->type >= VEIL_FRAME_HELLO &&
           d->type < VEIL_FRAME_TYPE_END && d->flags == 0 && d->length <= VEIL_FRAME_MAX_CHUNK &&
           d->total <= VEIL_FRAME_MAX_TOTAL && d->length <= d->total &&
           d->offset <= d->total - d->length;
}

static void test_garbage(void)
{
    uint8_t buf[VEIL_FRAME_HEADER_BYTES];
    struct veil_frame_header d;
    int accepted_raw = 0, accepted = 0, refused = 0;

    /* Pure noise: the magic alone makes acceptance a 2^-32 event. */
    for (int i = 0; i < 20000; i++) {
        for (int j = 0; j < VEIL_FRAME_HEADER_BYTES; j += 8) {
            uint64_t r = rnd();
            memcpy(buf + j, &r, 8);
        }
        if (veil_frame_decode(buf, sizeof buf, &d) == VEIL_OK)
            accepted_raw++;
    }
    CHECK(accepted_raw == 0);

    /* Valid magic, version and crc around random fields drawn near the limits: whatever
     * passes must satisfy every invariant; whatever fails must say VEIL_ERR_PROTO. */
    static const uint64_t edges[] = {0,
                                     1,
                                     63,
                                     64,
                                     65,
                                     VEIL_FRAME_MAX_CHUNK - 1,
                                     VEIL_FRAME_MAX_CHUNK,
                                     VEIL_FRAME_MAX_CHUNK + 1,
                                     VEIL_FRAME_MAX_TOTAL - VEIL_FRAME_MAX_CHUNK,
                                     VEIL_FRAME_MAX_TOTAL - 1,
                                     VEIL_FRAME_MAX_TOTAL,
                                     VEIL_FRAME_MAX_TOTAL + 1,
                                     UINT32_MAX,
                                     UINT64_MAX - VEIL_FRAME_MAX_CHUNK,
                                     UINT64_MAX - 1,
                                     UINT64_MAX};
    const size_t nedges = sizeof edges / sizeof edges[0];
    for (int i = 0; i < 200000; i++) {
        struct veil_frame_header h;
        memset(&h, 0, sizeof h);
        h.version = VEIL_FRAME_VERSION;
        h.type = (uint16_t)(rnd() % 8);
        h.flags = (rnd() % 16) == 0 ? (uint32_t)rnd() : 0;
        h.sender = (uint32_t)rnd();
        h.tag = rnd();
        h.offset = (rnd() & 1) ? edges[rnd() % nedges] : rnd() % 256;
        h.total = (rnd() & 1) ? edges[rnd() % nedges] : rnd() % 256;
        h.length = (uint32_t)((rnd() & 1) ? edges[rnd() % nedges] : rnd() % 256);
        veil_frame_encode(&h, buf);
        int rc = veil_frame_decode(buf, sizeof buf, &d);
        if (rc == VEIL_OK) {
            accepted++;
            CHECK(header_sane(&d) && same_header(&h, &d));
        } else {
            refused++;
            CHECK(rc == VEIL_ERR_PROTO && veil_last_error()[0] != '\0');
        }
    }
    CHECK(accepted > 1000 && refused > 1000);
    if (verbose)
        fprintf(stderr, "garbage: %d accepted, %d refused\n", accepted, refused);
}

static void test_check_peer(void)
{
    struct veil_frame_header h = data_header();
    uint8_t session[VEIL_SESSION_BYTES];
    memcpy(session, h.session, sizeof session);
    CHECK(veil_frame_check_peer(&h, session, 2) == VEIL_OK);
    CHECK_ERR(veil_frame_check_peer(&h, session, 1), VEIL_ERR_PROTO, "sender field says 2");
    CHECK(strstr(veil_last_error(), "peer 1"));
    session[0] ^= 0xff;
    CHECK_ERR(veil_frame_check_peer(&h, session, 2), VEIL_ERR_PROTO,
              "session id differs (ours 5fa1a2a3..., theirs a0a1a2a3...)");
    session[0] ^= 0xff;
    session[13] ^= 1;
    CHECK_ERR(veil_frame_check_peer(&h, session, 2), VEIL_ERR_PROTO, "at byte 13 of 16");
}

static struct veil_hello sample_hello(void)
{
    struct veil_hello h;
    memset(&h, 0, sizeof h);
    h.protocol_version = VEIL_NET_PROTOCOL_VERSION;
    h.party = 1;
    h.nparties = 3;
    h.has_dealer = 1;
    for (int i = 0; i < VEIL_SESSION_BYTES; i++)
        h.session[i] = (uint8_t)(0x10 * i + 1);
    for (int i = 0; i < VEIL_PLAN_DIGEST_BYTES; i++)
        h.plan_digest[i] = (uint8_t)(0x3f + 7 * i);
    h.data_port = 40961;
    for (int i = 0; i < 32; i++)
        h.data_key[i] = (uint8_t)(0xa0 + i);
    return h;
}

static void test_hello(void)
{
    struct veil_hello mine = sample_hello(), theirs, d;
    uint8_t buf[VEIL_HELLO_BYTES + 1];

    veil_hello_encode(&mine, buf);
    CHECK(buf[0] == VEIL_NET_PROTOCOL_VERSION && buf[4] == 1 && buf[8] == 3 && buf[12] == 1);
    CHECK(buf[16] == 0x01 && buf[31] == 0xf1 && buf[32] == 0x3f &&
          buf[63] == (uint8_t)(0x3f + 7 * 31));
    /* the data channel's offer: port (u32) at 64, a reserved zero word, the key at 72..103 */
    CHECK(buf[64] == 0x01 && buf[65] == 0xa0 && buf[66] == 0 && buf[67] == 0 && buf[68] == 0 &&
          buf[72] == 0xa0 && buf[103] == 0xbf);
    CHECK(veil_hello_decode(buf, VEIL_HELLO_BYTES, &d) == VEIL_OK);
    CHECK(memcmp(&d, &mine, sizeof d) == 0);
    CHECK_ERR(veil_hello_decode(buf, VEIL_HELLO_BYTES - 1, &d), VEIL_ERR_PROTO, "103 bytes");
    CHECK_ERR(veil_hello_decode(buf, VEIL_HELLO_BYTES + 1, &d), VEIL_ERR_PROTO, "105 bytes");
    CHECK_ERR(veil_hello_decode(buf, 0, &d), VEIL_ERR_PROTO, "0 bytes");
    buf[66] = 1; /* port 65536 + ... */
    CHECK_ERR(veil_hello_decode(buf, VEIL_HELLO_BYTES, &d), VEIL_ERR_PROTO, "data port 106497");
    buf[66] = 0;
    buf[69] = 1; /* the reserved word */
    CHECK_ERR(veil_hello_decode(buf, VEIL_HELLO_BYTES, &d), VEIL_ERR_PROTO, "reserved word 256");
    buf[69] = 0;
    /* the data channel's offer is not compared: each peer draws its own key for each peer */
    theirs = mine;
    theirs.data_port = 0;
    theirs.data_key[5] ^= 1;
    CHECK(veil_hello_compare(&mine, &theirs, 1) == VEIL_OK);

    theirs = mine;
    CHECK(veil_hello_compare(&mine, &theirs, 1) == VEIL_OK);

    theirs = mine;
    theirs.protocol_version = 7;
    CHECK_ERR(veil_hello_compare(&mine, &theirs, 1), VEIL_ERR_MISMATCH,
              "peer 1: protocol version 7, ours is 2");

    theirs = mine;
    theirs.session[2] = 0xee;
    CHECK_ERR(veil_hello_compare(&mine, &theirs, 1), VEIL_ERR_MISMATCH,
              "peer 1: session id differs (ours 01112131..., theirs 0111ee31...)");

    theirs = mine;
    CHECK_ERR(veil_hello_compare(&mine, &theirs, 2), VEIL_ERR_MISMATCH,
              "peer 2: says it is party 1");

    theirs = mine;
    theirs.nparties = 4;
    CHECK_ERR(veil_hello_compare(&mine, &theirs, 1), VEIL_ERR_MISMATCH,
              "peer 1: 4 parties, we have 3");

    theirs = mine;
    theirs.has_dealer = 0;
    CHECK_ERR(veil_hello_compare(&mine, &theirs, 1), VEIL_ERR_MISMATCH,
              "peer 1: runs without a dealer, we expect a dealer");
    theirs.has_dealer = 2;
    CHECK_ERR(veil_hello_compare(&mine, &theirs, 1), VEIL_ERR_MISMATCH, "invalid dealer flag");

    theirs = mine;
    theirs.plan_digest[0] = 0x9c;
    CHECK_ERR(veil_hello_compare(&mine, &theirs, 1), VEIL_ERR_MISMATCH,
              "peer 1: plan digest differs (ours 3f464d54..., theirs 9c464d54...)");
    theirs = mine;
    theirs.plan_digest[31] ^= 1;
    CHECK_ERR(veil_hello_compare(&mine, &theirs, 1), VEIL_ERR_MISMATCH,
              "plan digest differs at byte 31 of 32");

    /* Random payloads with a port below 65536 and a zero reserved word decode (the other rules
     * are length and those two) and never compare equal to ours unless they are ours. */
    for (int i = 0; i < 10000; i++) {
        for (int j = 0; j + 8 <= VEIL_HELLO_BYTES; j += 8) {
            uint64_t r = rnd();
            memcpy(buf + j, &r, 8);
        }
        memset(buf + 66, 0, 6);
        CHECK(veil_hello_decode(buf, VEIL_HELLO_BYTES, &d) == VEIL_OK);
        CHECK(veil_hello_compare(&mine, &d, 1) == VEIL_ERR_MISMATCH);
    }
}

int main(void)
{
    verbose = getenv("VEIL_TEST_VERBOSE") != NULL;
    test_crc();
    test_layout();
    test_round_trips();
    test_sizes();
    test_bit_flips();
    test_fields();
    test_garbage();
    test_check_peer();
    test_hello();
    if (failures)
        fprintf(stderr, "test_net_frame: %d failure(s)\n", failures);
    return failures ? 1 : 0;
}

/*
 * frame.c — Veil's wire format: packing and unpacking of the 64-byte message header and of the
 * 64-byte handshake (hello) payload, byte by byte in little-endian order (never by casting a
 * struct onto a buffer), the CRC-32C that guards the header, and the checks that turn any
 * malformed or unexpected bytes from a peer into VEIL_ERR_PROTO / VEIL_ERR_MISMATCH with a
 * message naming the field. Pure code: no ZeroMQ, no allocation, no global state.
 */
#include "config.h"
#include "net/frame.h"

#include "base/base_internal.h"

#include <inttypes.h>
#include <string.h>

/* ---- little-endian packing (16-bit; 32 and 64: base/base_internal.h) ---------------------- */

static void put_u16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}

static uint16_t get_u16(const uint8_t *p)
{
    return (uint16_t)(p[0] | (p[1] << 8));
}

/* ---- CRC-32C ------------------------------------------------------------------------------ */

/* crc of each nibble value under the reflected Castagnoli polynomial, four shifts each. */
static const uint32_t crc_nibble[16] = {
    0x00000000u, 0x105ec76fu, 0x20bd8edeu, 0x30e349b1u, 0x417b1dbcu, 0x5125dad3u,
    0x61c69362u, 0x7198540du, 0x82f63b78u, 0x92a8fc17u, 0xa24bb5a6u, 0xb21572c9u,
    0xc38d26c4u, 0xd3d3e1abu, 0xe330a81au, 0xf36e6f75u,
};

uint32_t veil_crc32c(const uint8_t *p, size_t n)
{
    uint32_t crc = 0xffffffffu;
    for (size_t i = 0; i < n; i++) {
        crc ^= p[i];
        crc = (crc >> 4) ^ crc_nibble[crc & 15];
        crc = (crc >> 4) ^ crc_nibble[crc & 15];
    }
    return crc ^ 0xffffffffu;
}

/* ---- header ------------------------------------------------------------------------------- */

enum {
    OFF_MAGIC = 0,
    OFF_VERSION = 4,
    OFF_TYPE = 6,
    OFF_SESSION = 8,
    OFF_SENDER = 24,
    OFF_FLAGS = 28,
    OFF_TAG = 32,
    OFF_OFFSET = 40,
    OFF_TOTAL = 48,
    OFF_LENGTH = 56,
    OFF_CRC = 60,
};

const char *veil_frame_type_name(uint32_t type)
{
    switch (type) {
    case VEIL_FRAME_HELLO:
        return "hello";
    case VEIL_FRAME_DATA:
        return "data";
    case VEIL_FRAME_HEARTBEAT:
        return "heartbeat";
    case VEIL_FRAME_BYE:
        return "bye";
    case VEIL_FRAME_ABORT:
        return "abort";
    default:
        return "unknown";
    }
}

void veil_frame_encode(const struct veil_frame_header *h, uint8_t out[VEIL_FRAME_HEADER_BYTES])
{
    veil_put_le32(out + OFF_MAGIC, VEIL_FRAME_MAGIC);
    put_u16(out + OFF_VERSION, h->version);
    put_u16(out + OFF_TYPE, h->type);
    memcpy(out + OFF_SESSION, h->session, VEIL_SESSION_BYTES);
    veil_put_le32(out + OFF_SENDER, h->sender);
    veil_put_le32(out + OFF_FLAGS, h->flags);
    veil_put_le64(out + OFF_TAG, h->tag);
    veil_put_le64(out + OFF_OFFSET, h->offset);
    veil_put_le64(out + OFF_TOTAL, h->total);
    veil_put_le32(out + OFF_LENGTH, h->length);
    veil_put_le32(out + OFF_CRC, veil_crc32c(out, OFF_CRC));
}

/* Type-specific rules, after the generic ones have passed (so offset + length <= total). */
static int check_type_rules(const struct veil_frame_header *h)
{
    const char *name = veil_frame_type_name(h->type);
    switch (h->type) {
    case VEIL_FRAME_HEARTBEAT:
    case VEIL_FRAME_BYE:
        if (h->length != 0 || h->total != 0)
            return veil_error(VEIL_ERR_PROTO,
                              "frame header: %s frame carries a payload (length %" PRIu32
                              ", total %" PRIu64 "); %s frames must have length 0 and total 0",
                              name, h->length, h->total, name);
        return VEIL_OK;
    case VEIL_FRAME_HELLO:
        if (h->length != VEIL_HELLO_BYTES || h->offset != 0 || h->total != VEIL_HELLO_BYTES)
            return veil_error(VEIL_ERR_PROTO,
                              "frame header: hello frame has length %" PRIu32 ", offset %" PRIu64
                              ", total %" PRIu64 "; a hello is one chunk of exactly %d bytes "
                              "(offset 0, total %d)",
                              h->length, h->offset, h->total, VEIL_HELLO_BYTES, VEIL_HELLO_BYTES);
        return VEIL_OK;
    case VEIL_FRAME_ABORT:
        if (h->offset != 0 || h->total != h->length)
            return veil_error(VEIL_ERR_PROTO,
                              "frame header: abort frame has offset %" PRIu64 ", total %" PRIu64
                              " and length %" PRIu32 "; an abort reason is one chunk (offset 0, "
                              "total == length)",
                              h->offset, h->total, h->length);
        return VEIL_OK;
    case VEIL_FRAME_DATA:
        if (h->length == 0 && h->total != 0)
            return veil_error(VEIL_ERR_PROTO,
                              "frame header: data chunk of length 0 inside a message of %" PRIu64
                              " bytes; only an empty message may have an empty chunk",
                              h->total);
        return VEIL_OK;
    default:
        return veil_error(VEIL_ERR_PROTO, "frame header: unknown type %u", (unsigned)h->type);
    }
}

int veil_frame_decode(const uint8_t *buf, size_t buf_len, struct veil_frame_header *h)
{
    struct veil_frame_header d;

    if (!buf || !h)
        return veil_error(VEIL_ERR_INVAL, "veil_frame_decode: NULL buffer or header");
    if (buf_len != VEIL_FRAME_HEADER_BYTES)
        return veil_error(VEIL_ERR_PROTO,
                          "frame header: %zu bytes received, a header is exactly %d bytes "
                          "(peer is not speaking Veil's wire format, or the stream is out of step)",
                          buf_len, VEIL_FRAME_HEADER_BYTES);
    uint32_t magic = veil_get_le32(buf + OFF_MAGIC);
    if (magic != VEIL_FRAME_MAGIC)
        return veil_error(VEIL_ERR_PROTO,
                          "frame header: magic is 0x%08" PRIx32 ", expected 0x%08" PRIx32
                          " (\"VEIL\"); the peer is not a Veil process",
                          magic, (uint32_t)VEIL_FRAME_MAGIC);
    d.version = get_u16(buf + OFF_VERSION);
    if (d.version != VEIL_FRAME_VERSION)
        return veil_error(VEIL_ERR_PROTO,
                          "frame header: wire-format version %u, this build speaks version %d; "
                          "run the same Veil release on every party",
                          (unsigned)d.version, VEIL_FRAME_VERSION);
    uint32_t crc = veil_get_le32(buf + OFF_CRC);
    uint32_t want = veil_crc32c(buf, OFF_CRC);
    if (crc != want)
        return veil_error(VEIL_ERR_PROTO,
                          "frame header: crc32c is 0x%08" PRIx32 ", computed 0x%08" PRIx32
                          " (corrupt or torn header)",
                          crc, want);
    d.type = get_u16(buf + OFF_TYPE);
    if (d.type < VEIL_FRAME_HELLO || d.type >= VEIL_FRAME_TYPE_END)
        return veil_error(VEIL_ERR_PROTO, "frame header: unknown type %u (known: 1..%d)",
                          (unsigned)d.type, VEIL_FRAME_TYPE_END - 1);
    memcpy(d.session, buf + OFF_SESSION, VEIL_SESSION_BYTES);
    d.sender = veil_get_le32(buf + OFF_SENDER);
    d.flags = veil_get_le32(buf + OFF_FLAGS);
    if (d.flags != 0)
        return veil_error(VEIL_ERR_PROTO,
                          "frame header: flags are 0x%08" PRIx32 ", must be 0 (reserved)", d.flags);
    d.tag = veil_get_le64(buf + OFF_TAG);
    d.offset = veil_get_le64(buf + OFF_OFFSET);
    d.total = veil_get_le64(buf + OFF_TOTAL);
    d.length = veil_get_le32(buf + OFF_LENGTH);
    if (d.length > VEIL_FRAME_MAX_CHUNK)
        return veil_error(VEIL_ERR_PROTO,
                          "frame header: chunk length %" PRIu32 " exceeds the limit of %u bytes",
                          d.length, (unsigned)VEIL_FRAME_MAX_CHUNK);
    if (d.total > VEIL_FRAME_MAX_TOTAL)
        return veil_error(VEIL_ERR_PROTO,
                          "frame header: message total %" PRIu64 " exceeds the limit of %" PRIu64
                          " bytes",
                          d.total, (uint64_t)VEIL_FRAME_MAX_TOTAL);
    /* Written without offset + length so that an offset near 2^64 cannot wrap. */
    if (d.length > d.total || d.offset > d.total - d.length)
        return veil_error(VEIL_ERR_PROTO,
                          "frame header: chunk [offset %" PRIu64 ", length %" PRIu32
                          "] does not fit in a message of %" PRIu64 " bytes",
                          d.offset, d.length, d.total);
    int rc = check_type_rules(&d);
    if (rc != VEIL_OK)
        return rc;
    *h = d;
    return VEIL_OK;
}

/* Writes the first n bytes of b as hex followed by "..." into out (2n + 4 bytes). */
static void hex_prefix(char *out, const uint8_t *b, size_t n)
{
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = digits[b[i] >> 4];
        out[2 * i + 1] = digits[b[i] & 15];
    }
    memcpy(out + 2 * n, "...", 4);
}

/* Index of the first differing byte of a and b (n bytes), or n when equal. */
static size_t first_difference(const uint8_t *a, const uint8_t *b, size_t n)
{
    size_t i = 0;
    while (i < n && a[i] == b[i])
        i++;
    return i;
}

/*
 * Formats a difference in a byte string: hex of 4 bytes starting at a 4-aligned window that
 * holds the first differing byte, so that the two printed prefixes always differ.
 */
static int bytes_mismatch(int status, const char *who, const char *what, const uint8_t *ours,
                          const uint8_t *theirs, size_t n, size_t diff)
{
    char a[2 * 4 + 4], b[2 * 4 + 4];
    size_t start = diff - diff % 4;
    hex_prefix(a, ours + start, 4);
    hex_prefix(b, theirs + start, 4);
    if (start == 0)
        return veil_error(status, "%s: %s differs (ours %s, theirs %s)", who, what, a, b);
    return veil_error(status, "%s: %s differs at byte %zu of %zu (ours [%zu..] %s, theirs %s)", who,
                      what, diff, n, start, a, b);
}

int veil_frame_check_peer(const struct veil_frame_header *h,
                          const uint8_t session[VEIL_SESSION_BYTES], uint32_t expected_sender)
{
    if (!h || !session)
        return veil_error(VEIL_ERR_INVAL, "veil_frame_check_peer: NULL header or session");
    size_t diff = first_difference(session, h->session, VEIL_SESSION_BYTES);
    if (h->sender == expected_sender && diff == VEIL_SESSION_BYTES)
        return VEIL_OK; /* every frame comes here: the message below only for a bad one */
    char who[64];
    snprintf(who, sizeof who, "%s frame on the connection of peer %" PRIu32,
             veil_frame_type_name(h->type), expected_sender);
    if (h->sender != expected_sender)
        return veil_error(VEIL_ERR_PROTO,
                          "%s: sender field says %" PRIu32 " (spoofed or misrouted)", who,
                          h->sender);
    return bytes_mismatch(VEIL_ERR_PROTO, who, "session id", session, h->session,
                          VEIL_SESSION_BYTES, diff);
}

/* ---- hello -------------------------------------------------------------------------------- */

enum {
    HELLO_PROTOCOL = 0,
    HELLO_PARTY = 4,
    HELLO_NPARTIES = 8,
    HELLO_DEALER = 12,
    HELLO_SESSION = 16,
    HELLO_DIGEST = 32,
    HELLO_DATA_PORT = 64,
    HELLO_RESERVED = 68, /* u32, 0 */
    HELLO_DATA_KEY = 72,
    HELLO_END = 104,
};

void veil_hello_encode(const struct veil_hello *h, uint8_t out[VEIL_HELLO_BYTES])
{
    veil_put_le32(out + HELLO_PROTOCOL, h->protocol_version);
    veil_put_le32(out + HELLO_PARTY, h->party);
    veil_put_le32(out + HELLO_NPARTIES, h->nparties);
    veil_put_le32(out + HELLO_DEALER, h->has_dealer);
    memcpy(out + HELLO_SESSION, h->session, VEIL_SESSION_BYTES);
    memcpy(out + HELLO_DIGEST, h->plan_digest, VEIL_PLAN_DIGEST_BYTES);
    veil_put_le32(out + HELLO_DATA_PORT, h->data_port);
    veil_put_le32(out + HELLO_RESERVED, 0);
    memcpy(out + HELLO_DATA_KEY, h->data_key, sizeof h->data_key);
}

int veil_hello_decode(const uint8_t *buf, size_t len, struct veil_hello *h)
{
    _Static_assert(HELLO_END == VEIL_HELLO_BYTES, "hello layout covers VEIL_HELLO_BYTES");
    _Static_assert(HELLO_DIGEST + VEIL_PLAN_DIGEST_BYTES == HELLO_DATA_PORT, "hello layout");
    _Static_assert(HELLO_DATA_KEY + 32 == HELLO_END, "hello layout");
    if (!buf || !h)
        return veil_error(VEIL_ERR_INVAL, "veil_hello_decode: NULL buffer or hello");
    if (len != VEIL_HELLO_BYTES)
        return veil_error(VEIL_ERR_PROTO, "hello: payload has %zu bytes, expected exactly %d", len,
                          VEIL_HELLO_BYTES);
    h->protocol_version = veil_get_le32(buf + HELLO_PROTOCOL);
    h->party = veil_get_le32(buf + HELLO_PARTY);
    h->nparties = veil_get_le32(buf + HELLO_NPARTIES);
    h->has_dealer = veil_get_le32(buf + HELLO_DEALER);
    memcpy(h->session, buf + HELLO_SESSION, VEIL_SESSION_BYTES);
    memcpy(h->plan_digest, buf + HELLO_DIGEST, VEIL_PLAN_DIGEST_BYTES);
    h->data_port = veil_get_le32(buf + HELLO_DATA_PORT);
    if (h->data_port > 65535 || veil_get_le32(buf + HELLO_RESERVED) != 0)
        return veil_error(VEIL_ERR_PROTO, "hello: data port %u or reserved word %u out of range",
                          (unsigned)h->data_port, (unsigned)veil_get_le32(buf + HELLO_RESERVED));
    memcpy(h->data_key, buf + HELLO_DATA_KEY, sizeof h->data_key);
    return VEIL_OK;
}

int veil_hello_compare(const struct veil_hello *mine, const struct veil_hello *theirs,
                       uint32_t expected_party)
{
    char who[32];
    if (!mine || !theirs)
        return veil_error(VEIL_ERR_INVAL, "veil_hello_compare: NULL hello");
    snprintf(who, sizeof who, "peer %" PRIu32, expected_party);
    if (theirs->protocol_version != mine->protocol_version)
        return veil_error(VEIL_ERR_MISMATCH,
                          "%s: protocol version %" PRIu32 ", ours is %" PRIu32
                          "; run the same Veil release on every party",
                          who, theirs->protocol_version, mine->protocol_version);
    size_t diff = first_difference(mine->session, theirs->session, VEIL_SESSION_BYTES);
    if (diff < VEIL_SESSION_BYTES)
        return bytes_mismatch(VEIL_ERR_MISMATCH, who, "session id", mine->session, theirs->session,
                              VEIL_SESSION_BYTES, diff);
    if (theirs->party != expected_party)
        return veil_error(VEIL_ERR_MISMATCH,
                          "%s: says it is party %" PRIu32 " (check its 'self' line and the "
                          "endpoint of party %" PRIu32 " in the configuration)",
                          who, theirs->party, expected_party);
    if (theirs->nparties != mine->nparties)
        return veil_error(VEIL_ERR_MISMATCH, "%s: %" PRIu32 " parties, we have %" PRIu32, who,
                          theirs->nparties, mine->nparties);
    if ((theirs->has_dealer != 0) != (mine->has_dealer != 0) || theirs->has_dealer > 1)
        return veil_error(VEIL_ERR_MISMATCH, "%s: %s, we %s", who,
                          theirs->has_dealer == 0   ? "runs without a dealer"
                          : theirs->has_dealer == 1 ? "expects a dealer"
                                                    : "sent an invalid dealer flag",
                          mine->has_dealer ? "expect a dealer" : "run without a dealer");
    diff = first_difference(mine->plan_digest, theirs->plan_digest, VEIL_PLAN_DIGEST_BYTES);
    if (diff < VEIL_PLAN_DIGEST_BYTES)
        return bytes_mismatch(VEIL_ERR_MISMATCH, who, "plan digest", mine->plan_digest,
                              theirs->plan_digest, VEIL_PLAN_DIGEST_BYTES, diff);
    return VEIL_OK;
}

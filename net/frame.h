/*
 * frame.h — Veil's wire format (internal to net/). Every ZeroMQ message on the CURVE connection
 * between parties is two frames: a fixed 64-byte header, then a payload of header.length bytes
 * (the payload frame is absent when length is 0); on the data channel one sealed frame holds the
 * header and the payload (net/seal.h). All integers are little-endian. Nothing from the wire is
 * trusted: veil_frame_decode validates every field and returns VEIL_ERR_PROTO with a message
 * naming the field, never asserts and never reads or writes out of bounds.
 *
 * Header layout (offsets in bytes):
 *    0 u32 magic = "VEIL" (0x4c494556 read little-endian)
 *    4 u16 version = VEIL_FRAME_VERSION
 *    6 u16 type (enum veil_frame_type)
 *    8 u8[16] session id
 *   24 u32 sender (party id; the dealer is nparties)
 *   28 u32 flags (0; reserved)
 *   32 u64 tag
 *   40 u64 offset of this chunk's payload in the whole message
 *   48 u64 total length of the whole message in bytes
 *   56 u32 length of this chunk's payload
 *   60 u32 crc32c of bytes 0..59 (catches torn or garbage headers early; CURVE authenticates)
 */
#ifndef VEIL_NET_FRAME_H
#define VEIL_NET_FRAME_H

#include <stddef.h>
#include <stdint.h>

#define VEIL_FRAME_MAGIC 0x4c494556u
#define VEIL_FRAME_VERSION 2 /* 2: heartbeat and goodbye carry a data-channel count in tag */
#define VEIL_FRAME_HEADER_BYTES 64
#define VEIL_SESSION_BYTES 16
#define VEIL_PLAN_DIGEST_BYTES 32
/* Upper bound on one chunk's payload a receiver accepts (chunks are smaller, see mesh). */
#define VEIL_FRAME_MAX_CHUNK (16u << 20)
/* Upper bound on a whole message a receiver accepts (64 GiB). */
#define VEIL_FRAME_MAX_TOTAL (UINT64_C(1) << 36)

enum veil_frame_type {
    VEIL_FRAME_HELLO = 1,     /* handshake: payload is struct veil_hello encoded */
    VEIL_FRAME_DATA = 2,      /* one chunk of a tensor message (tag, offset, total, length) */
    VEIL_FRAME_HEARTBEAT = 3, /* liveness; no payload; tag: data-channel frames sent so far */
    VEIL_FRAME_BYE = 4,       /* orderly close; no payload; tag: data-channel frames sent */
    VEIL_FRAME_ABORT = 5,     /* the sender is stopping on an error; payload: UTF-8 reason */
    VEIL_FRAME_TYPE_END
};

struct veil_frame_header {
    uint16_t version;
    uint16_t type;
    uint8_t session[VEIL_SESSION_BYTES];
    uint32_t sender;
    uint32_t flags;
    uint64_t tag;
    uint64_t offset;
    uint64_t total;
    uint32_t length;
};

/** CRC-32C (Castagnoli, reflected polynomial 0x82F63B78) of n bytes; crc32c("123456789") is
 * 0xE3069283. Software, table of 16 entries; used for the header check word. */
uint32_t veil_crc32c(const uint8_t *p, size_t n);

/** Short name of a frame type ("hello", "data", ...), "unknown" for any other value. */
const char *veil_frame_type_name(uint32_t type);

/** Writes h (magic, crc added) into out. */
void veil_frame_encode(const struct veil_frame_header *h, uint8_t out[VEIL_FRAME_HEADER_BYTES]);

/**
 * Parses and validates a header received as a frame of buf_len bytes: exact size, magic,
 * version, crc, known type, flags 0, length <= VEIL_FRAME_MAX_CHUNK, total <=
 * VEIL_FRAME_MAX_TOTAL, offset + length <= total (no overflow), and per type: HEARTBEAT/BYE
 * carry no payload, HELLO carries exactly VEIL_HELLO_BYTES with offset 0, total == length.
 * Returns VEIL_OK or VEIL_ERR_PROTO (veil_last_error names the field).
 */
int veil_frame_decode(const uint8_t *buf, size_t buf_len, struct veil_frame_header *h);

/**
 * Checks a decoded header against what the receiver expects from this connection: the
 * session id and the sender id (the identity the connection was authenticated as, in
 * [0, nprocs)). VEIL_ERR_PROTO with a message naming the field otherwise.
 */
int veil_frame_check_peer(const struct veil_frame_header *h,
                          const uint8_t session[VEIL_SESSION_BYTES], uint32_t expected_sender);

/* ---- handshake payload ------------------------------------------------------------------ */
/* 2: the hello offers a data channel (its port and the key for what the peer sends on it) */
#define VEIL_NET_PROTOCOL_VERSION 2
#define VEIL_HELLO_BYTES 104
struct veil_hello {
    uint32_t protocol_version;
    uint32_t party;    /* sender's id */
    uint32_t nparties; /* number of computing parties (the dealer not counted) */
    uint32_t has_dealer;
    uint8_t session[VEIL_SESSION_BYTES];
    uint8_t plan_digest[VEIL_PLAN_DIGEST_BYTES];
    /* The data channel the sender offers for what the receiver sends it (net/data_channel.c):
     * the TCP port of its plain data ROUTER and the AES-256-GCM key to seal with, chosen for
     * this receiver and session; port 0 (key zero): send data on the CURVE connection. Only
     * meaningful inside CURVE (which encrypts the hello); veil_hello_compare ignores both. */
    uint32_t data_port;
    uint8_t data_key[32];
};
void veil_hello_encode(const struct veil_hello *h, uint8_t out[VEIL_HELLO_BYTES]);
/** Decodes exactly VEIL_HELLO_BYTES bytes; VEIL_ERR_PROTO when len differs. */
int veil_hello_decode(const uint8_t *buf, size_t len, struct veil_hello *h);
/**
 * Compares a peer's hello with ours and the id we expect it to have. Returns VEIL_OK or
 * VEIL_ERR_MISMATCH with a message naming what differs, e.g. "peer 2: plan digest differs
 * (ours 3fa1..., theirs 9c0e...)" or "peer 1: 4 parties, we have 3".
 */
int veil_hello_compare(const struct veil_hello *mine, const struct veil_hello *theirs,
                       uint32_t expected_party);

#endif

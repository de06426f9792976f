/*
 * seal.h — AES-256-GCM for the data channel (internal to net/). When CurveZMQ protects a
 * session, the bulk of it (tensor chunks) travels on a second, plain ZeroMQ socket set, each
 * frame sealed here under a key the receiver chose and sent over the CURVE connection in its
 * hello (net/data_channel.c). A sealed frame is one buffer:
 *
 *    0 u32 magic = "VLSD" (0x44534c56 read little-endian)
 *    4 u32 sender (party id; the dealer is nparties)
 *    8 u64 counter: this frame's number among the sender's frames to this receiver (0, 1, ...)
 *   16 body, encrypted: the 64-byte frame header (net/frame.h), then the chunk's payload
 *  end-16 the GCM tag over the first 16 bytes (associated data) and the encrypted body
 *
 * The nonce is the 12 bytes at offset 4 (sender and counter): unique per key, since a key serves
 * one direction of one session and the counter never repeats. Nothing from the wire is trusted:
 * veil_seal_peek bounds every field, veil_seal_open verifies the tag before anything uses the
 * body.
 */
#ifndef VEIL_NET_SEAL_H
#define VEIL_NET_SEAL_H

#include <stddef.h>
#include <stdint.h>

#define VEIL_SEAL_MAGIC 0x44534c56u
#define VEIL_SEAL_KEY_BYTES 32
#define VEIL_SEAL_PREFIX_BYTES 16
#define VEIL_SEAL_TAG_BYTES 16
#define VEIL_SEAL_OVERHEAD (VEIL_SEAL_PREFIX_BYTES + VEIL_SEAL_TAG_BYTES)

/* One direction's cipher state: OpenSSL's context with the key schedule (NULL: not keyed). */
struct veil_seal {
    void *ctx;
    int encrypt;
};

/** Keys s for sealing (encrypt 1) or opening (0). VEIL_ERR_CRYPTO when OpenSSL fails. */
int veil_seal_init(struct veil_seal *s, const uint8_t key[VEIL_SEAL_KEY_BYTES], int encrypt);
/** Frees the context (OpenSSL wipes the key schedule); NULL-safe, idempotent. */
void veil_seal_free(struct veil_seal *s);
/** Whether s is keyed. */
static inline int veil_seal_ready(const struct veil_seal *s)
{
    return s && s->ctx;
}

/**
 * Seals buf in place: buf holds VEIL_SEAL_PREFIX_BYTES of room, body_len bytes of body, then
 * VEIL_SEAL_TAG_BYTES of room. Writes the prefix, encrypts the body, writes the tag.
 */
int veil_seal_frame(struct veil_seal *s, uint32_t sender, uint64_t counter, uint8_t *buf,
                    size_t body_len);
/**
 * Seals a frame whose body is head_len bytes already in buf (after the prefix's room) followed by
 * src_len bytes read from src (which must not overlap buf): the head is encrypted in place and
 * src straight into buf after it, so the payload is not copied into buf first. buf holds the
 * prefix's room, head_len + src_len bytes of body, then the tag's room. The frame is the one
 * veil_seal_frame gives when the payload was copied into buf.
 */
int veil_seal_frame_from(struct veil_seal *s, uint32_t sender, uint64_t counter, uint8_t *buf,
                         size_t head_len, const uint8_t *src, size_t src_len);

/**
 * Reads a received frame's prefix without trusting it: VEIL_ERR_PROTO (message naming the field)
 * when len is shorter than the overhead plus min_body or the magic is wrong.
 */
int veil_seal_peek(const uint8_t *buf, size_t len, size_t min_body, uint32_t *sender,
                   uint64_t *counter);

/**
 * Opens a received frame of len bytes in place (the body is decrypted at buf +
 * VEIL_SEAL_PREFIX_BYTES) after checking its tag: VEIL_ERR_PROTO when the tag does not verify
 * (another key, a changed byte anywhere, a truncated frame); the body is then garbage.
 */
int veil_seal_open(struct veil_seal *s, uint8_t *buf, size_t len);

#endif

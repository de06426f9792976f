/*
 * seal.c — AES-256-GCM sealing and opening of data-channel frames (layout in net/seal.h), with
 * OpenSSL's EVP interface: one context per direction keyed once, a fresh nonce per frame.
 */
#include "config.h"
#include "base/base_internal.h"
#include "net/frame.h"
#include "net/seal.h"

#include <openssl/evp.h>
#include <string.h>

int veil_seal_init(struct veil_seal *s, const uint8_t key[VEIL_SEAL_KEY_BYTES], int encrypt)
{
    veil_seal_free(s);
    EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();
    if (!c)
        return veil_error(VEIL_ERR_CRYPTO, "net: cannot allocate an AES-GCM context");
    int ok = encrypt ? EVP_EncryptInit_ex(c, EVP_aes_256_gcm(), NULL, key, NULL)
                     : EVP_DecryptInit_ex(c, EVP_aes_256_gcm(), NULL, key, NULL);
    if (ok != 1) {
        EVP_CIPHER_CTX_free(c);
        return veil_error(VEIL_ERR_CRYPTO, "net: AES-256-GCM key setup failed");
    }
    s->ctx = c;
    s->encrypt = encrypt;
    return VEIL_OK;
}

void veil_seal_free(struct veil_seal *s)
{
    if (s && s->ctx) {
        EVP_CIPHER_CTX_free(s->ctx);
        s->ctx = NULL;
    }
}

/* The nonce is the prefix's sender and counter (12 bytes at offset 4); GCM's default IV length. */
static int start(EVP_CIPHER_CTX *c, int encrypt, const uint8_t *prefix)
{
    int n;
    if (encrypt)
        return EVP_EncryptInit_ex(c, NULL, NULL, NULL, prefix + 4) == 1 &&
               EVP_EncryptUpdate(c, NULL, &n, prefix, VEIL_SEAL_PREFIX_BYTES) == 1;
    return EVP_DecryptInit_ex(c, NULL, NULL, NULL, prefix + 4) == 1 &&
           EVP_DecryptUpdate(c, NULL, &n, prefix, VEIL_SEAL_PREFIX_BYTES) == 1;
}

int veil_seal_frame(struct veil_seal *s, uint32_t sender, uint64_t counter, uint8_t *buf,
                    size_t body_len)
{
    return veil_seal_frame_from(s, sender, counter, buf, body_len, NULL, 0);
}

int veil_seal_frame_from(struct veil_seal *s, uint32_t sender, uint64_t counter, uint8_t *buf,
                         size_t head_len, const uint8_t *src, size_t src_len)
{
    if (!veil_seal_ready(s) || !s->encrypt || head_len > INT32_MAX || src_len > INT32_MAX ||
        head_len + src_len > INT32_MAX || (src_len && !src))
        return veil_error(VEIL_ERR_INVAL, "veil_seal_frame: no sealing key or body too large");
    EVP_CIPHER_CTX *c = s->ctx;
    veil_put_le32(buf, VEIL_SEAL_MAGIC);
    veil_put_le32(buf + 4, sender);
    veil_put_le64(buf + 8, counter);
    uint8_t *body = buf + VEIL_SEAL_PREFIX_BYTES;
    const size_t body_len = head_len + src_len;
    int n = 0, k = 0, m = 0;
    /* GCM is a stream mode: the head in place, then the source straight into the buffer after it
     * (no copy of the payload first), one keystream and one tag over both */
    if (!start(c, 1, buf) || EVP_EncryptUpdate(c, body, &n, body, (int)head_len) != 1 ||
        (src_len && EVP_EncryptUpdate(c, body + n, &k, src, (int)src_len) != 1) ||
        EVP_EncryptFinal_ex(c, body + n + k, &m) != 1 ||
        EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_GET_TAG, VEIL_SEAL_TAG_BYTES, body + body_len) != 1)
        return veil_error(VEIL_ERR_CRYPTO, "net: AES-256-GCM sealing failed");
    return VEIL_OK;
}

int veil_seal_peek(const uint8_t *buf, size_t len, size_t min_body, uint32_t *sender,
                   uint64_t *counter)
{
    if (len < VEIL_SEAL_OVERHEAD + min_body)
        return veil_error(VEIL_ERR_PROTO,
                          "sealed frame of %zu bytes, at least %zu expected (prefix, body, tag)",
                          len, (size_t)VEIL_SEAL_OVERHEAD + min_body);
    uint32_t magic = veil_get_le32(buf);
    if (magic != VEIL_SEAL_MAGIC)
        return veil_error(VEIL_ERR_PROTO, "sealed frame: magic is 0x%08x, expected 0x%08x",
                          (unsigned)magic, (unsigned)VEIL_SEAL_MAGIC);
    *sender = veil_get_le32(buf + 4);
    *counter = veil_get_le64(buf + 8);
    return VEIL_OK;
}

int veil_seal_open(struct veil_seal *s, uint8_t *buf, size_t len)
{
    if (!veil_seal_ready(s) || s->encrypt || len < VEIL_SEAL_OVERHEAD ||
        len - VEIL_SEAL_OVERHEAD > INT32_MAX)
        return veil_error(VEIL_ERR_INVAL, "veil_seal_open: no opening key or bad length");
    EVP_CIPHER_CTX *c = s->ctx;
    size_t body_len = len - VEIL_SEAL_OVERHEAD;
    uint8_t *body = buf + VEIL_SEAL_PREFIX_BYTES;
    uint8_t tag[VEIL_SEAL_TAG_BYTES];
    memcpy(tag, body + body_len, sizeof tag);
    int n = 0, m = 0;
    if (!start(c, 0, buf) || EVP_DecryptUpdate(c, body, &n, body, (int)body_len) != 1 ||
        EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_SET_TAG, VEIL_SEAL_TAG_BYTES, tag) != 1)
        return veil_error(VEIL_ERR_CRYPTO, "net: AES-256-GCM opening failed");
    if (EVP_DecryptFinal_ex(c, body + n, &m) != 1)
        return veil_error(VEIL_ERR_PROTO, "sealed frame: authentication failed (wrong key, or "
                                          "changed in transit)");
    return VEIL_OK;
}

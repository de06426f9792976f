/*
 * prg.c — the seeded, seekable CSPRNG: AES-128-CTR keystream from OpenSSL's libcrypto, read as
 * little-endian 64-bit words (layout in veil.h), plus OS seeding and a PRF-based seed derivation.
 */
#include "config.h"
#include "base/base_internal.h"

#include <openssl/evp.h>
#include <openssl/rand.h>
#include <string.h>

#define ZERO_WORDS 8192 /* the keystream is made 64 KiB at a time */

struct veil_prg {
    EVP_CIPHER_CTX *ctx;
    uint8_t key[VEIL_SEED_BYTES];
    uint64_t word; /* index of the next word */
};

int veil_seed_random(uint8_t seed[VEIL_SEED_BYTES])
{
    if (!seed)
        return veil_error(VEIL_ERR_INVAL, "seed: NULL buffer");
    if (RAND_bytes(seed, VEIL_SEED_BYTES) != 1)
        return veil_error(VEIL_ERR_CRYPTO, "seed: OpenSSL RAND_bytes failed");
    return VEIL_OK;
}

/* Counter block for AES block index b: 128-bit big-endian b (IV = 0 at word 0). */
static int restart(veil_prg_t *prg, uint64_t word)
{
    uint8_t iv[16] = {0};
    uint64_t block = word / 2;
    for (int i = 0; i < 8; i++)
        iv[15 - i] = (uint8_t)(block >> (8 * i));
    if (EVP_EncryptInit_ex(prg->ctx, EVP_aes_128_ctr(), NULL, prg->key, iv) != 1)
        return veil_error(VEIL_ERR_CRYPTO, "prg: AES-CTR initialisation failed");
    prg->word = word & ~(uint64_t)1;
    if (word & 1) {
        uint64_t skip;
        return veil_prg_fill(prg, &skip, 1);
    }
    return VEIL_OK;
}

veil_prg_t *veil_prg_new(const uint8_t seed[VEIL_SEED_BYTES])
{
    if (!seed) {
        veil_error(VEIL_ERR_INVAL, "prg: NULL seed");
        return NULL;
    }
    veil_prg_t *prg = calloc(1, sizeof *prg);
    if (!prg) {
        veil_error(VEIL_ERR_NOMEM, "prg: out of memory");
        return NULL;
    }
    memcpy(prg->key, seed, VEIL_SEED_BYTES);
    prg->ctx = EVP_CIPHER_CTX_new();
    if (!prg->ctx || restart(prg, 0) != VEIL_OK) {
        if (prg->ctx)
            veil_error(VEIL_ERR_CRYPTO, "prg: AES-CTR initialisation failed");
        else
            veil_error(VEIL_ERR_CRYPTO, "prg: EVP_CIPHER_CTX_new failed");
        veil_prg_destroy(&prg);
        return NULL;
    }
    return prg;
}

void veil_prg_destroy(veil_prg_t **prg)
{
    if (!prg || !*prg)
        return;
    EVP_CIPHER_CTX_free((*prg)->ctx);
    veil_wipe((*prg)->key, sizeof (*prg)->key);
    free(*prg);
    *prg = NULL;
}

int veil_prg_seek(veil_prg_t *prg, uint64_t word)
{
    if (!prg)
        return veil_error(VEIL_ERR_INVAL, "prg: NULL");
    if (word == prg->word)
        return VEIL_OK;
    return restart(prg, word);
}

uint64_t veil_prg_tell(const veil_prg_t *prg)
{
    return prg ? prg->word : 0;
}

int veil_prg_fill(veil_prg_t *prg, uint64_t *out, size_t n)
{
    if (!prg || (n && !out))
        return veil_error(VEIL_ERR_INVAL, "prg: NULL argument");
    /* CTR keystream = encryption of zeros, read from a zero block (no pass to clear out) */
    static const uint64_t zeros[ZERO_WORDS];
    size_t done = 0;
    while (done < n) {
        size_t w = n - done < ZERO_WORDS ? n - done : ZERO_WORDS;
        unsigned char *b = (unsigned char *)(out + done);
        const unsigned char *z = (const unsigned char *)zeros;
        int outl = 0;
        if (EVP_EncryptUpdate(prg->ctx, b, &outl, z, (int)(w * 8)) != 1 || outl != (int)(w * 8))
            return veil_error(VEIL_ERR_CRYPTO, "prg: AES-CTR encryption failed");
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
        for (size_t i = 0; i < w; i++)
            out[done + i] = __builtin_bswap64(out[done + i]);
#endif
        done += w;
    }
    prg->word += n;
    return VEIL_OK;
}

int veil_seed_derive(const uint8_t parent[VEIL_SEED_BYTES], uint64_t label, uint64_t index,
                     uint8_t child[VEIL_SEED_BYTES])
{
    if (!parent || !child)
        return veil_error(VEIL_ERR_INVAL, "seed derive: NULL argument");
    uint8_t in[16];
    for (int i = 0; i < 8; i++) {
        in[i] = (uint8_t)(label >> (56 - 8 * i));
        in[8 + i] = (uint8_t)(index >> (56 - 8 * i));
    }
    EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
    int outl = 0, ok = ctx && EVP_EncryptInit_ex(ctx, EVP_aes_128_ecb(), NULL, parent, NULL) == 1 &&
                       EVP_CIPHER_CTX_set_padding(ctx, 0) == 1 &&
                       EVP_EncryptUpdate(ctx, child, &outl, in, 16) == 1 && outl == 16;
    EVP_CIPHER_CTX_free(ctx);
    return ok ? VEIL_OK : veil_error(VEIL_ERR_CRYPTO, "seed derive: AES failed");
}

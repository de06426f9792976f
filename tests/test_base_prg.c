/* Tests the AES-128-CTR PRG: determinism per seed, independence across seeds, O(1) seeking to
 * any word (even and odd) matching sequential generation, agreement with a direct OpenSSL
 * AES-CTR keystream (the documented layout), and seed derivation. */
#include "config.h"
#include "test_util.h"
#include "veil.h"

#include <openssl/evp.h>
#include <stdio.h>
#include <string.h>


#define N 20011 /* more than two of the PRG's 8192-word keystream blocks, odd */

int main(void)
{
    static uint64_t a[N], b[N], c[N];
    uint8_t seed[VEIL_SEED_BYTES], seed2[VEIL_SEED_BYTES];
    for (int i = 0; i < VEIL_SEED_BYTES; i++)
        seed[i] = (uint8_t)(i * 7 + 1);
    veil_prg_t *p = veil_prg_new(seed);
    VT_CHECK(p != NULL, "prg_new");
    VT_CHECK(veil_prg_fill(p, a, N) == VEIL_OK, "fill");
    VT_CHECK(veil_prg_tell(p) == N, "tell after fill");
    veil_prg_t *q = veil_prg_new(seed);
    /* Same stream in pieces of odd sizes. */
    size_t done = 0, step = 1;
    while (done < N) {
        size_t n = step < N - done ? step : N - done;
        veil_prg_fill(q, b + done, n);
        done += n;
        step = step * 3 + 1;
    }
    VT_CHECK(memcmp(a, b, sizeof a) == 0, "chunked fill equals one fill");
    /* Seeking to even and odd positions, forwards and backwards. */
    const uint64_t pos[] = {0, 1, 2, 3, 1000, 1001, 4000, 17, 4098};
    for (size_t i = 0; i < sizeof pos / sizeof pos[0]; i++) {
        uint64_t w;
        VT_CHECK(veil_prg_seek(q, pos[i]) == VEIL_OK, "seek");
        veil_prg_fill(q, &w, 1);
        VT_CHECK(w == a[pos[i]], "word %llu after seek", (unsigned long long)pos[i]);
    }
    /* Documented layout: word i = bytes [8i, 8i+8) of AES-128-CTR(key=seed, iv=0) on zeros. */
    {
        EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
        static uint8_t buf[8 * N];
        uint8_t iv[16] = {0};
        int outl, bad = 0;
        EVP_EncryptInit_ex(ctx, EVP_aes_128_ctr(), NULL, seed, iv);
        EVP_EncryptUpdate(ctx, buf, &outl, buf, sizeof buf);
        EVP_CIPHER_CTX_free(ctx);
        for (int i = 0; i < N; i++) {
            uint64_t w = 0;
            for (int k = 7; k >= 0; k--)
                w = (w << 8) | buf[8 * i + k];
            bad += w != a[i];
        }
        VT_CHECK(bad == 0, "%d of %d words differ from the AES-CTR keystream read little-endian",
                 bad, N);
    }
    /* Far seek (counter well past 2^32 blocks). */
    veil_prg_seek(q, (uint64_t)1 << 40);
    veil_prg_fill(q, c, 2);
    veil_prg_seek(q, ((uint64_t)1 << 40) + 1);
    uint64_t w;
    veil_prg_fill(q, &w, 1);
    VT_CHECK(w == c[1], "far odd seek");
    /* Another seed gives another stream; bits look balanced. */
    memcpy(seed2, seed, sizeof seed);
    seed2[0] ^= 1;
    veil_prg_t *r = veil_prg_new(seed2);
    veil_prg_fill(r, c, N);
    int same = 0;
    long ones = 0;
    for (int i = 0; i < N; i++) {
        same += a[i] == c[i];
        ones += __builtin_popcountll(a[i]);
    }
    VT_CHECK(same == 0, "streams of different seeds share %d words", same);
    VT_CHECK(ones > N * 32 - 2000 && ones < N * 32 + 2000, "bit balance: %ld ones of %d", ones,
          N * 64);
    /* Derivation: deterministic, distinct per (label, index). */
    uint8_t d1[16], d2[16], d3[16];
    VT_CHECK(veil_seed_derive(seed, 1, 2, d1) == VEIL_OK, "derive");
    veil_seed_derive(seed, 1, 2, d2);
    VT_CHECK(memcmp(d1, d2, 16) == 0, "derive is deterministic");
    veil_seed_derive(seed, 1, 3, d3);
    VT_CHECK(memcmp(d1, d3, 16) != 0, "different index, different child");
    veil_seed_derive(seed, 2, 2, d3);
    VT_CHECK(memcmp(d1, d3, 16) != 0, "different label, different child");
    /* OS seeds differ. */
    veil_seed_random(d1);
    veil_seed_random(d2);
    VT_CHECK(memcmp(d1, d2, 16) != 0, "two random seeds equal");
    /* Bad arguments. */
    VT_CHECK(veil_prg_new(NULL) == NULL, "NULL seed refused");
    VT_CHECK(veil_prg_fill(p, NULL, 3) == VEIL_ERR_INVAL, "NULL output refused");
    veil_prg_destroy(&p);
    VT_CHECK(p == NULL, "destroy clears the pointer");
    veil_prg_destroy(&p); /* NULL-safe */
    veil_prg_destroy(&q);
    veil_prg_destroy(&r);
    return veil_test_status();
}

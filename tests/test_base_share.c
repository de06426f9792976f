/* Tests share tensors in one process: seeded split into N = 2..5 arithmetic and binary shares
 * reconstructs the secret exactly (edge values included), a seeded party's expansion equals its
 * split share, single shares look uniform, and bad shapes/arguments are errors. Also veil_wipe
 * (the wipe of freed share buffers): it zeroes exactly the bytes asked, at any alignment; and the
 * share-buffer pool: a buffer given back is wiped and handed out again for the same size only,
 * zeroed, and the drain empties the pool; the pool's wiper thread wipes a given-back buffer
 * before any get asks for it (one of at most 16 KiB is wiped by the give-back itself), a get
 * that overtakes it still gets zeros, and a forked child's pool works and drains. */
#include "config.h"
#include "test_util.h"
#include "veil.h"
#include "base/base_internal.h"
#include "base/secmem.h"

#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>


int main(void)
{
    const size_t dims[3] = {3, 5, 7};
    const size_t n = 3 * 5 * 7;
    uint64_t secret[105], back[105];
    const uint64_t edges[] = {0, 1, (uint64_t)1 << 63, ((uint64_t)1 << 63) - 1, UINT64_MAX};
    uint8_t master[VEIL_SEED_BYTES] = {42};
    veil_prg_t *g = veil_prg_new(master);
    veil_prg_fill(g, secret, n);
    veil_prg_destroy(&g);
    for (size_t i = 0; i < 5; i++)
        secret[i] = edges[i];

    for (int kind = 0; kind < VEIL_SHARE_KIND_COUNT; kind++)
        for (int np = 2; np <= 5; np++) {
            uint8_t seeds[5][VEIL_SEED_BYTES];
            veil_share_t *sh[5];
            for (int p = 0; p < np; p++)
                veil_seed_derive(master, 7, (uint64_t)p, seeds[p]);
            int rc = veil_share_split(secret, (enum veil_share_kind)kind, 3, dims, np,
                                      (const uint8_t(*)[VEIL_SEED_BYTES])seeds, 1000, sh);
            VT_CHECK(rc == VEIL_OK, "split kind %d n %d: %s", kind, np, veil_last_error());
            if (rc != VEIL_OK)
                continue;
            VT_CHECK(veil_share_numel(sh[0]) == n && veil_share_ndim(sh[0]) == 3 &&
                      veil_share_dim(sh[0], 1) == 5 && veil_share_dim(sh[0], 3) == 0,
                  "shape kept");
            VT_CHECK(veil_share_reconstruct((const veil_share_t *const *)sh, np, back) == VEIL_OK,
                  "reconstruct");
            VT_CHECK(memcmp(back, secret, sizeof secret) == 0, "kind %d, %d parties: round trip", kind,
                  np);
            /* A party holding only its seed expands the same share. */
            veil_share_t *mine = veil_share_new((enum veil_share_kind)kind, 3, dims);
            veil_share_expand(mine, seeds[0], 1000);
            VT_CHECK(memcmp(veil_share_data(mine), veil_share_data(sh[0]), n * 8) == 0,
                  "expansion equals split share");
            veil_share_destroy(&mine);
            /* No share equals the secret (uniform shares; a collision has probability 2^-64). */
            for (int p = 0; p < np; p++)
                VT_CHECK(memcmp(veil_share_data(sh[p]) + 5, secret + 5, (n - 5) * 8) != 0,
                      "share %d leaks the secret", p);
            /* Fewer than N shares do not reconstruct. */
            veil_share_reconstruct((const veil_share_t *const *)sh, np - 1, back);
            VT_CHECK(memcmp(back, secret, sizeof secret) != 0, "N-1 shares reconstructed the secret");
            for (int p = 0; p < np; p++)
                veil_share_destroy(&sh[p]);
        }

    /* Scalars (0-d tensors) are fine. */
    veil_share_t *s0 = veil_share_new(VEIL_SHARE_ARITH, 0, NULL);
    VT_CHECK(s0 && veil_share_numel(s0) == 1, "0-d share has one element");
    veil_share_destroy(&s0);
    VT_CHECK(s0 == NULL, "destroy clears the pointer");
    /* Bad shapes. */
    const size_t zero[2] = {4, 0};
    VT_CHECK(veil_share_new(VEIL_SHARE_ARITH, 2, zero) == NULL, "zero dimension refused");
    VT_CHECK(strstr(veil_last_error(), "dimension 1") != NULL, "message names it: %s",
          veil_last_error());
    const size_t huge[2] = {(size_t)1 << 40, (size_t)1 << 40};
    VT_CHECK(veil_share_new(VEIL_SHARE_ARITH, 2, huge) == NULL, "overflowing shape refused");
    VT_CHECK(veil_share_new(VEIL_SHARE_ARITH, 9, dims) == NULL, "9 dimensions refused");
    VT_CHECK(veil_share_new((enum veil_share_kind)7, 1, dims) == NULL, "unknown kind refused");
    veil_share_t *a = veil_share_new(VEIL_SHARE_ARITH, 2, dims);
    veil_share_t *b = veil_share_new(VEIL_SHARE_ARITH, 2, dims + 1);
    const veil_share_t *ab[2] = {a, b};
    VT_CHECK(veil_share_reconstruct(ab, 2, back) == VEIL_ERR_SHAPE, "shape mismatch refused");
    veil_share_t *sh[1];
    uint8_t seeds[1][VEIL_SEED_BYTES] = {{0}};
    VT_CHECK(veil_share_split(secret, VEIL_SHARE_ARITH, 1, dims, 1,
                           (const uint8_t(*)[VEIL_SEED_BYTES])seeds, 0, sh) == VEIL_ERR_INVAL,
          "one party refused");
    veil_share_destroy(&a);
    veil_share_destroy(&b);
    /* veil_wipe zeroes [off, off + len) and nothing around it, at odd offsets and lengths */
    for (size_t off = 0; off < 9; off += 3)
        for (size_t len = 0; len < 200; len += 37) {
            unsigned char buf[256];
            memset(buf, 0xa5, sizeof buf);
            veil_wipe(buf + off, len);
            int ok = 1;
            for (size_t i = 0; i < sizeof buf; i++)
                ok &= buf[i] == (i >= off && i < off + len ? 0 : 0xa5);
            VT_CHECK(ok, "veil_wipe(%zu bytes at offset %zu)", len, off);
        }
    veil_wipe(NULL, 0);
    /* ... and so do the streaming stores it uses from VEIL_WIPE_STREAMING_MIN bytes on: ranges of
     * that size and up to 139 bytes more at offsets 0..63 in steps of 7 (heads and tails of many
     * alignments) */
    {
        const size_t cap = VEIL_WIPE_STREAMING_MIN + 4096;
        unsigned char *big = malloc(cap);
        VT_CHECK(big != NULL, "malloc %zu", cap);
        for (size_t off = 0; big && off < 70; off += 7)
            for (size_t len = VEIL_WIPE_STREAMING_MIN; len < VEIL_WIPE_STREAMING_MIN + 140;
                 len += 13) {
                memset(big, 0xa5, cap);
                veil_wipe(big + off, len);
                size_t bad = 0;
                for (size_t i = 0; i < cap; i++)
                    bad += big[i] != (i >= off && i < off + len ? 0 : 0xa5);
                VT_CHECK(bad == 0, "streaming veil_wipe(%zu bytes at offset %zu): %zu bytes wrong",
                         len, off, bad);
            }
        free(big);
    }

    /* the pool: same size reused (zeroed), another size not, bounded, drained */
    veil_secbuf_drain();
    uint64_t *b1 = veil_secbuf_get(1000 * 8);
    VT_CHECK(b1 && ((uintptr_t)b1 & 63) == 0, "pool: aligned buffer");
    for (int i = 0; b1 && i < 1000; i++)
        b1[i] = 0x5555555555555555ull + (uint64_t)i;
    veil_secbuf_put(b1, 1000 * 8);
    VT_CHECK(veil_secbuf_pooled_bytes() == 8000, "pool holds %zu bytes, expected 8000",
             veil_secbuf_pooled_bytes());
    uint64_t *b2 = veil_secbuf_get(999 * 8);
    VT_CHECK(b2 && b2 != b1, "pool: another size is not served from the pooled buffer");
    uint64_t *b3 = veil_secbuf_get(1000 * 8);
    VT_CHECK(b3 == b1, "pool: the same size reuses the given-back buffer");
    int zeroed = 1;
    for (int i = 0; b3 && i < 1000; i++)
        zeroed &= b3[i] == 0;
    VT_CHECK(zeroed, "pool: a reused buffer is all zeros");
    veil_secbuf_put(b2, 999 * 8);
    veil_secbuf_put(b3, 1000 * 8);
    veil_secbuf_put(NULL, 8);
    void *big = veil_secbuf_get(((size_t)256 << 20) + 64);
    veil_secbuf_put(big, ((size_t)256 << 20) + 64);
    VT_CHECK(veil_secbuf_pooled_bytes() == 999 * 8 + 1000 * 8,
             "pool: a buffer over 256 MiB is freed, not kept (%zu bytes pooled)",
             veil_secbuf_pooled_bytes());
    /* a run's working set: 100 buffers of one size (the old pool kept 16) all come back */
    enum { MANY = 100 };
    void *many[MANY];
    for (int i = 0; i < MANY; i++)
        many[i] = veil_secbuf_get(4096);
    for (int i = 0; i < MANY; i++)
        veil_secbuf_put(many[i], 4096);
    VT_CHECK(veil_secbuf_pooled_bytes() == 999 * 8 + 1000 * 8 + MANY * 4096,
             "pool: all %d buffers of one size kept (%zu bytes pooled)", MANY,
             veil_secbuf_pooled_bytes());
    void *again[MANY];
    int reused = 0;
    for (int i = 0; i < MANY; i++) {
        again[i] = veil_secbuf_get(4096);
        for (int k = 0; k < MANY; k++)
            reused += again[i] == many[k];
    }
    VT_CHECK(reused == MANY, "pool: %d of %d gets reused a pooled buffer", reused, MANY);
    for (int i = 0; i < MANY; i++)
        veil_secbuf_put(again[i], 4096);
    veil_secbuf_drain();
    VT_CHECK(veil_secbuf_pooled_bytes() == 0, "pool: drained");
    /* the wiper: a given-back buffer is wiped in the background, without a get (its memory is
     * still the pool's, so reading it here is safe) */
    uint64_t *w1 = veil_secbuf_get(4096 * 8);
    for (int i = 0; w1 && i < 4096; i++)
        w1[i] = ~(uint64_t)i;
    veil_secbuf_put(w1, 4096 * 8);
    for (int t = 0; t < 2000 && veil_secbuf_dirty() > 0; t++)
        usleep(1000);
    VT_CHECK(veil_secbuf_dirty() == 0, "pool: the wiper wiped the given-back buffer");
    int clean = 1;
    for (int i = 0; w1 && i < 4096; i++)
        clean &= w1[i] == 0;
    VT_CHECK(clean, "pool: the wiped buffer is all zeros before any get");
    /* a small buffer (at most 16 KiB) is wiped by the give-back itself: never dirty */
    uint64_t *w2 = veil_secbuf_get(2048 * 8);
    for (int i = 0; w2 && i < 2048; i++)
        w2[i] = ~(uint64_t)i;
    veil_secbuf_put(w2, 2048 * 8);
    VT_CHECK(veil_secbuf_dirty() == 0, "pool: a 16 KiB buffer given back is not left dirty");
    clean = 1;
    for (int i = 0; w2 && i < 2048; i++)
        clean &= w2[i] == 0;
    VT_CHECK(clean, "pool: a 16 KiB buffer is all zeros when its give-back returns");
    /* a get that overtakes the wiper wipes the buffer itself */
    enum { BURST = 64 };
    void *burst[BURST];
    for (int i = 0; i < BURST; i++) {
        burst[i] = veil_secbuf_get(65536);
        memset(burst[i], 0xa5, 65536);
    }
    for (int i = 0; i < BURST; i++)
        veil_secbuf_put(burst[i], 65536);
    int all_zero = 1;
    for (int i = 0; i < BURST; i++) {
        const unsigned char *got = veil_secbuf_get(65536);
        for (size_t k = 0; got && k < 65536; k++)
            all_zero &= got[k] == 0;
        burst[i] = (void *)got;
    }
    VT_CHECK(all_zero, "pool: every buffer handed out is all zeros, wiped by the wiper or the get");
    for (int i = 0; i < BURST; i++)
        veil_secbuf_put(burst[i], 65536);
    /* buffers of 256 KiB and more are mapped fresh (zero pages, no memset; malloc'ed in a
     * sanitizer build): page-aligned, all zeros, reused through the pool (wiped), and unmapped
     * when they leave it (drain; over the pool's bound at once) */
    veil_secbuf_drain();
    enum { MAPPED = 40 };
    const size_t mbytes = ((size_t)256 << 10) + 8; /* not a whole number of pages */
    uint64_t *mp[MAPPED];
    int mapped_ok = 1;
    for (int i = 0; i < MAPPED; i++) {
        mp[i] = veil_secbuf_get(mbytes);
#ifdef VEIL_SANITIZERS
        mapped_ok &= mp[i] && ((uintptr_t)mp[i] & 63) == 0; /* malloc'ed under ASan */
#else
        mapped_ok &= mp[i] && ((uintptr_t)mp[i] & 4095) == 0;
#endif
        for (size_t k = 0; mp[i] && k < mbytes / 8; k++) {
            mapped_ok &= mp[i][k] == 0;
            mp[i][k] = ~(uint64_t)k; /* a share's words */
        }
    }
    VT_CHECK(mapped_ok, "pool: fresh buffers of %zu bytes are page-aligned and all zeros", mbytes);
    for (int i = 0; i < MAPPED; i++)
        veil_secbuf_put(mp[i], mbytes);
    uint64_t *again_mapped = veil_secbuf_get(mbytes);
    int same = 0, mzero = 1;
    for (int i = 0; i < MAPPED; i++)
        same += again_mapped == mp[i];
    for (size_t k = 0; again_mapped && k < mbytes / 8; k++)
        mzero &= again_mapped[k] == 0;
    VT_CHECK(same == 1 && mzero, "pool: a given-back mapped buffer is reused, wiped (%d, %d)", same,
             mzero);
    veil_secbuf_put(again_mapped, mbytes);
    veil_secbuf_drain();
    VT_CHECK(veil_secbuf_pooled_bytes() == 0, "pool: drained of mapped buffers");
    void *over = veil_secbuf_get(((size_t)300 << 20)); /* over the pool's largest: not kept */
    VT_CHECK(over != NULL, "pool: a 300 MiB buffer");
    veil_secbuf_put(over, (size_t)300 << 20);
    VT_CHECK(veil_secbuf_pooled_bytes() == 0, "pool: a buffer over 256 MiB is unmapped at once");
    /* churn: mapped buffers leaving the pool again and again (drain), with a few kept alive
     * across it: every removal leaves a slot the set's rebuilds must reclaim, and a pointer the
     * set lost would reach free() and crash */
    void *alive[3];
    for (int i = 0; i < 3; i++)
        alive[i] = veil_secbuf_get(mbytes);
    int churn_ok = alive[0] && alive[1] && alive[2];
    for (int round = 0; round < 300 && churn_ok; round++) {
        void *t[8];
        for (int k = 0; k < 8; k++) {
            t[k] = veil_secbuf_get(mbytes + 64 * (size_t)k);
            churn_ok &= t[k] != NULL && ((uintptr_t)t[k] & 63) == 0;
        }
        for (int k = 0; k < 8; k++)
            veil_secbuf_put(t[k], mbytes + 64 * (size_t)k);
        veil_secbuf_drain();
    }
    for (int i = 0; i < 3; i++)
        veil_secbuf_put(alive[i], mbytes);
    veil_secbuf_drain();
    VT_CHECK(churn_ok && veil_secbuf_pooled_bytes() == 0,
             "pool: 2,400 mapped buffers come and go through 300 drains");
    /* a forked child has a consistent pool and a wiper of its own */
    pid_t pid = fork();
    if (pid == 0) {
        void *c = veil_secbuf_get(65536);
        memset(c, 0x5a, 65536);
        veil_secbuf_put(c, 65536);
        for (int t = 0; t < 2000 && veil_secbuf_dirty() > 0; t++)
            usleep(1000);
        const size_t left = veil_secbuf_dirty();
        veil_secbuf_drain();
        _exit(left == 0 && veil_secbuf_pooled_bytes() == 0 ? 0 : 1);
    }
    int st = 0;
    VT_CHECK(pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0,
             "pool: a forked child's wiper wipes its buffers and its pool drains");
    veil_secbuf_drain();
    VT_CHECK(veil_secbuf_pooled_bytes() == 0 && veil_secbuf_dirty() == 0,
             "pool: drained with the wiper running");
    return veil_test_status();
}

/* Tests the seeded dealer: for N = 2, 3, 4 parties and every item kind, the dealer's correction
 * plus every party's local expansion reconstruct exactly the promised correlation (c = a*b,
 * C = A.B, conv2d against a direct loop, a^2, AND, r_hi = r >> f and r_63, bits in both forms,
 * arithmetic and binary shares of one r); sizes match the documented formulas; generation is
 * deterministic and depends on the session id and the item index; one party's shares look
 * unrelated to the secrets (bit balance); trusted-first-party mode (party 0 designated) gives
 * correct material; the weight-stationary kinds (MATMUL_WS, CONV_WS) give C = A.B with one B per
 * weight id for every item of the session (fresh A), another B for another wid or session; bad
 * items and misuse are refused with an error. */
#include "config.h"
#include "base/base_internal.h"
#include "tasks/carry4_common.h"
#include "tasks/preproc.h"
#include "tasks/prodk_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures;
static int verbose;
#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                                   \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fprintf(stderr, "\n");                                                                 \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

/* Dealer correction then every party's expansion; returns the correction (caller frees). */
static uint64_t *generate(const struct veil_preproc_layout *L, const struct veil_preproc_item *it,
                          const uint8_t (*seeds)[VEIL_SEED_BYTES], struct veil_preproc_share *sh)
{
    size_t cw = veil_preproc_correction_words(it);
    uint64_t *corr = malloc((cw ? cw : 1) * sizeof *corr);
    if (!corr)
        return NULL;
    int rc = veil_preproc_dealer_correction(L, it, seeds, corr, cw);
    CHECK(rc == VEIL_OK, "dealer %s: %s", veil_preproc_kind_name(it->kind), veil_last_error());
    for (int p = 0; p < L->nparties; p++) {
        rc =
            veil_preproc_party_expand(L, it, p, seeds[p], p == L->designated ? corr : NULL, &sh[p]);
        CHECK(rc == VEIL_OK, "expand party %d: %s", p, veil_last_error());
    }
    return corr;
}

/* Reconstructs part j of the N shares (sum or XOR). */
static void recon(const struct veil_preproc_share *sh, int n, int j, int binary, uint64_t *out)
{
    size_t m = sh[0].part_numel[j];
    memset(out, 0, m * sizeof *out);
    for (int p = 0; p < n; p++)
        for (size_t i = 0; i < m; i++)
            out[i] = binary ? out[i] ^ sh[p].part[j][i] : out[i] + sh[p].part[j][i];
}

static void clear_all(struct veil_preproc_share *sh, int n)
{
    for (int p = 0; p < n; p++)
        veil_preproc_share_clear(&sh[p]);
}

/* Fraction of one bits in n words. */
static double ones(const uint64_t *w, size_t n)
{
    size_t c = 0;
    for (size_t i = 0; i < n; i++)
        c += (size_t)__builtin_popcountll(w[i]);
    return (double)c / (64.0 * (double)n);
}

/* Fraction of equal bits between a and b. */
static double agree(const uint64_t *a, const uint64_t *b, size_t n)
{
    size_t c = 0;
    for (size_t i = 0; i < n; i++)
        c += (size_t)__builtin_popcountll(~(a[i] ^ b[i]));
    return (double)c / (64.0 * (double)n);
}

/* Direct NCHW convolution in the ring, the oracle for the dealer's im2col + GEMM. */
static void conv_direct(const uint64_t *x, const uint64_t *w, const uint64_t *p, size_t oh,
                        size_t ow, uint64_t *y)
{
    size_t B = p[0], C = p[1], H = p[2], W = p[3], OC = p[4], KH = p[5], KW = p[6];
    long sh = (long)p[7], sw = (long)p[8], ph = (long)p[9], pw = (long)p[10];
    for (size_t b = 0; b < B; b++)
        for (size_t o = 0; o < OC; o++)
            for (size_t i = 0; i < oh; i++)
                for (size_t j = 0; j < ow; j++) {
                    uint64_t acc = 0;
                    for (size_t c = 0; c < C; c++)
                        for (size_t u = 0; u < KH; u++)
                            for (size_t v = 0; v < KW; v++) {
                                long yy = (long)i * sh - ph + (long)u;
                                long xx = (long)j * sw - pw + (long)v;
                                if (yy < 0 || xx < 0 || yy >= (long)H || xx >= (long)W)
                                    continue;
                                acc += x[((b * C + c) * H + (size_t)yy) * W + (size_t)xx] *
                                       w[((o * C + c) * KH + u) * KW + v];
                            }
                    y[((b * OC + o) * oh + i) * ow + j] = acc;
                }
}

/* Checks one item: correlation, sizes, and the designated party's share vs the secret. */
static void check_item(const struct veil_preproc_layout *L, const struct veil_preproc_item *it,
                       const uint8_t (*seeds)[VEIL_SEED_BYTES])
{
    struct veil_preproc_share sh[VEIL_PREPROC_MAX_PARTIES];
    memset(sh, 0, sizeof sh);
    const int N = L->nparties;
    const uint64_t *p = it->p;
    uint64_t *corr = generate(L, it, seeds, sh);
    size_t sw = veil_preproc_share_words(it), cw = veil_preproc_correction_words(it);
    if (!corr || !sh[0].words) {
        CHECK(0, "generation failed");
        free(corr);
        clear_all(sh, N);
        return;
    }
    for (int q = 0; q < N; q++)
        CHECK(sh[q].nwords == sw, "party %d share words %zu != %zu", q, sh[q].nwords, sw);
    size_t big = sw + 1;
    uint64_t *u = calloc(big, 8), *v = calloc(big, 8), *w = calloc(big, 8), *z = calloc(big, 8);
    const char *name = veil_preproc_kind_name(it->kind);
    size_t bad = 0;
    switch (it->kind) {
    case VEIL_PREPROC_BEAVER:
    case VEIL_PREPROC_SQUARE:
    case VEIL_PREPROC_AND: {
        size_t n = p[0];
        int bin = it->kind == VEIL_PREPROC_AND, sq = it->kind == VEIL_PREPROC_SQUARE;
        CHECK(sw == (sq ? 2 : 3) * n && cw == n, "%s sizes %zu %zu", name, sw, cw);
        recon(sh, N, 0, bin, u);
        recon(sh, N, sq ? 0 : 1, bin, v);
        recon(sh, N, sq ? 1 : 2, bin, w);
        for (size_t i = 0; i < n; i++)
            bad += w[i] != (bin ? u[i] & v[i] : u[i] * v[i]);
        CHECK(bad == 0, "%s N=%d n=%zu: %zu wrong", name, N, n, bad);
        if (n >= 1024) { /* the designated party's share of c says nothing about c */
            double b1 = ones(sh[L->designated].part[sq ? 1 : 2], n);
            double ag = agree(sh[L->designated].part[sq ? 1 : 2], w, n);
            CHECK(b1 > 0.48 && b1 < 0.52, "%s: designated share bit balance %.3f", name, b1);
            CHECK(ag > 0.48 && ag < 0.52, "%s: designated share agrees with c on %.3f", name, ag);
            double a0 = agree(sh[0].part[0], u, n);
            CHECK(a0 > 0.48 && a0 < 0.52, "%s: party 0's a agrees with a on %.3f", name, a0);
        }
        break;
    }
    case VEIL_PREPROC_MATMUL:
    case VEIL_PREPROC_MATMUL_WS: {
        size_t m = p[0], k = p[1], n = p[2];
        CHECK(sw == m * k + k * n + m * n && cw == m * n, "matmul sizes");
        recon(sh, N, 0, 0, u);
        recon(sh, N, 1, 0, v);
        recon(sh, N, 2, 0, w);
        for (size_t i = 0; i < m; i++)
            for (size_t j = 0; j < n; j++) {
                uint64_t acc = 0;
                for (size_t l = 0; l < k; l++)
                    acc += u[i * k + l] * v[l * n + j];
                bad += acc != w[i * n + j];
            }
        CHECK(bad == 0, "matmul N=%d %zux%zux%zu: %zu wrong", N, m, k, n, bad);
        break;
    }
    case VEIL_PREPROC_CONV:
    case VEIL_PREPROC_CONV_WS: {
        size_t oh = (p[2] + 2 * p[9] - p[5]) / p[7] + 1, ow = (p[3] + 2 * p[10] - p[6]) / p[8] + 1;
        size_t nx = p[0] * p[1] * p[2] * p[3], nw = p[4] * p[1] * p[5] * p[6];
        size_t ny = p[0] * p[4] * oh * ow;
        CHECK(sw == nx + nw + ny && cw == ny, "conv sizes %zu %zu", sw, cw);
        recon(sh, N, 0, 0, u);
        recon(sh, N, 1, 0, v);
        recon(sh, N, 2, 0, w);
        conv_direct(u, v, p, oh, ow, z);
        for (size_t i = 0; i < ny; i++)
            bad += z[i] != w[i];
        CHECK(bad == 0, "conv N=%d: %zu of %zu wrong", N, bad, ny);
        break;
    }
    case VEIL_PREPROC_TRUNC: {
        size_t n = p[0];
        CHECK(sw == 3 * n && cw == 2 * n, "trunc sizes");
        recon(sh, N, 0, 0, u);
        recon(sh, N, 1, 0, v);
        recon(sh, N, 2, 0, w);
        size_t top = 0;
        for (size_t i = 0; i < n; i++) {
            bad += v[i] != u[i] >> p[1] || w[i] != u[i] >> 63;
            top += u[i] >> 63;
        }
        CHECK(bad == 0, "trunc N=%d f=%llu: %zu wrong", N, (unsigned long long)p[1], bad);
        if (n >= 1024)
            CHECK(top > n * 45 / 100 && top < n * 55 / 100, "trunc: r_63 set %zu of %zu", top, n);
        break;
    }
    case VEIL_PREPROC_BIT: {
        size_t n = p[0], nw = (n + 63) / 64, set = 0;
        CHECK(sw == n + nw && cw == n, "bit sizes");
        recon(sh, N, 0, 0, u);
        recon(sh, N, 1, 1, v);
        for (size_t i = 0; i < n; i++) {
            bad += u[i] > 1 || u[i] != ((v[i / 64] >> (i % 64)) & 1);
            set += u[i];
        }
        if (n % 64)
            for (int q = 0; q < N; q++)
                bad += (sh[q].part[1][nw - 1] >> (n % 64)) != 0;
        CHECK(bad == 0, "bit N=%d n=%zu: %zu wrong", N, n, bad);
        if (n >= 1024)
            CHECK(set > n * 45 / 100 && set < n * 55 / 100, "bit: %zu of %zu set", set, n);
        break;
    }
    case VEIL_PREPROC_CMPMASK: {
        size_t n = p[0];
        CHECK(sw == 3 * n && cw == 2 * n, "cmpmask sizes");
        recon(sh, N, 0, 0, u);
        recon(sh, N, 1, 1, v);
        recon(sh, N, 2, 0, w);
        for (size_t i = 0; i < n; i++)
            bad += u[i] != v[i] || w[i] != u[i] >> 63;
        CHECK(bad == 0, "cmpmask N=%d: %zu wrong", N, bad);
        if (n >= 1024) {
            double ag = agree(sh[L->designated].part[1], v, n);
            CHECK(ag > 0.48 && ag < 0.52, "cmpmask: designated <r> agrees with r on %.3f", ag);
        }
        break;
    }
    case VEIL_PREPROC_PRODK: {
        /* row of set t of a record is the product of its masks (prodk_common.h) */
        const size_t n = p[0], k = p[1], np = (size_t)veil_prodk_nprods((int)k);
        CHECK(sw == (k + np) * n && cw == np * n, "prodk sizes %zu %zu", sw, cw);
        recon(sh, N, 0, 0, u);
        recon(sh, N, 1, 0, v);
        for (size_t rec = 0; rec < n; rec++)
            for (unsigned t = 3; t < (1u << k); t++) {
                if ((t & (t - 1)) == 0)
                    continue;
                uint64_t want = 1;
                for (size_t i = 0; i < k; i++)
                    if (t >> i & 1)
                        want *= u[rec * k + i];
                bad += v[rec * np + (size_t)veil_prodk_row(t)] != want;
            }
        CHECK(bad == 0, "prodk N=%d n=%zu k=%zu: %zu wrong", N, n, k, bad);
        /* the parties' veil_prodk_finish shares of x_0 ... x_{k-1} (x arbitrary, e = x - a
         * public) add up to the product */
        uint64_t x[VEIL_PRODK_MAX], e[VEIL_PRODK_MAX], lcg = 0x9e3779b97f4a7c15ull * (n + k);
        for (size_t rec = 0; rec < n; rec++) {
            uint64_t want = 1, got = 0;
            for (size_t i = 0; i < k; i++) {
                lcg = lcg * 6364136223846793005ull + 1442695040888963407ull;
                x[i] = rec % 7 == 0 ? (uint64_t)(rec % 3) : lcg; /* zeros and ones too */
                e[i] = x[i] - u[rec * k + i];
                want *= x[i];
            }
            for (int q = 0; q < N; q++)
                got += veil_prodk_finish(e, sh[q].part[0] + rec * k, sh[q].part[1] + rec * np,
                                         (int)k, q == 0);
            bad += got != want;
        }
        CHECK(bad == 0, "prodk finish N=%d n=%zu k=%zu: %zu wrong", N, n, k, bad);
        break;
    }
    case VEIL_PREPROC_CARRY4: {
        /* row r of a record is the AND of the masks of the inputs in set r (carry4_common.h) */
        static const uint8_t sets[VEIL_C4_PRODS] = VEIL_C4_PROD_SETS;
        size_t n = p[0];
        CHECK(sw == (VEIL_C4_INPUTS + VEIL_C4_PRODS) * n && cw == VEIL_C4_PRODS * n,
              "carry4 sizes %zu %zu", sw, cw);
        recon(sh, N, 0, 1, u);
        recon(sh, N, 1, 1, v);
        for (size_t rec = 0; rec < n; rec++)
            for (int r = 0; r < VEIL_C4_PRODS; r++) {
                uint64_t want = ~UINT64_C(0);
                for (int i = 0; i < VEIL_C4_INPUTS; i++)
                    if (sets[r] >> i & 1)
                        want &= u[rec * VEIL_C4_INPUTS + (size_t)i];
                bad += v[rec * VEIL_C4_PRODS + (size_t)r] != want;
            }
        CHECK(bad == 0, "carry4 N=%d n=%zu: %zu wrong", N, n, bad);
        if (n >= 1024) { /* the designated party's product shares say nothing */
            const size_t np = VEIL_C4_PRODS * n;
            double ag = agree(sh[L->designated].part[1], v, np);
            CHECK(ag > 0.48 && ag < 0.52, "carry4: designated share agrees on %.3f", ag);
        }
        break;
    }
    default:
        CHECK(0, "unknown kind");
    }
    free(u);
    free(v);
    free(w);
    free(z);
    free(corr);
    clear_all(sh, N);
}

/* CMPPROD of CMPMASK item #k (n elements, tiles of tile): every word is the AND of the named bits
 * of the mask r the CMPMASK item's shares add up to, block by block, zeros past each tile. */
static void check_cmpprod(const struct veil_preproc_layout *L,
                          const uint8_t (*seeds)[VEIL_SEED_BYTES], uint64_t k, uint64_t n,
                          uint64_t tile)
{
    struct veil_preproc_share msh[VEIL_PREPROC_MAX_PARTIES], psh[VEIL_PREPROC_MAX_PARTIES];
    memset(msh, 0, sizeof msh);
    memset(psh, 0, sizeof psh);
    const int N = L->nparties;
    const struct veil_preproc_item mask = veil_preproc_item_cmpmask(k, n);
    const struct veil_preproc_item prod = veil_preproc_item_cmpprod(k + 1, n, tile, k);
    const uint64_t W = veil_preproc_sliced_blocks(n, tile);
    uint64_t *mc = generate(L, &mask, seeds, msh), *pc = generate(L, &prod, seeds, psh);
    uint64_t *r = calloc(n, 8), *pr = calloc(W * VEIL_C4_LEAF_WORDS, 8);
    size_t bad = 0, w = 0;
    if (!mc || !pc || !r || !pr || !msh[0].words || !psh[0].words) {
        CHECK(0, "cmpprod: generation failed");
        goto done;
    }
    CHECK(veil_preproc_share_words(&prod) == W * VEIL_C4_LEAF_WORDS &&
              veil_preproc_correction_words(&prod) == W * VEIL_C4_LEAF_WORDS,
          "cmpprod sizes");
    recon(msh, N, 0, 0, r);
    recon(psh, N, 0, 1, pr);
    for (uint64_t t0 = 0; t0 < n; t0 += tile)
        for (uint64_t e0 = t0; e0 < (n - t0 < tile ? n : t0 + tile); e0 += 64, w++) {
            const uint64_t tend = n - t0 < tile ? n : t0 + tile;
            for (int j = 0; j < VEIL_C4_LEAF_GROUPS; j++)
                for (unsigned set = 3; set < 16; set++) {
                    if ((set & (set - 1)) == 0)
                        continue;
                    uint64_t want = 0;
                    for (unsigned l = 0; l < 64 && e0 + l < tend; l++) {
                        uint64_t bit = 1;
                        for (int q = 0; q < 4; q++)
                            if (set >> q & 1)
                                bit &= r[e0 + l] >> (4 * j + q);
                        want |= (bit & 1) << l;
                    }
                    bad += pr[w * VEIL_C4_LEAF_WORDS + (size_t)j * VEIL_C4_LEAF_PRODS +
                              (size_t)veil_prodk_row(set)] != want;
                }
        }
    CHECK(w == W && bad == 0, "cmpprod N=%d n=%llu tile=%llu: %zu wrong words", N,
          (unsigned long long)n, (unsigned long long)tile, bad);
done:
    free(mc), free(pc), free(r), free(pr);
    clear_all(msh, N);
    clear_all(psh, N);
}

/* RBETA (f = 0) or CMPTRUNC (shift f) of CMPMASK item #k and BIT item #j (n elements): every
 * reconstructed word is r b, or r >> f, (r >> f) b and (r >> 63) b, with b the bits both of BIT's
 * parts hold (arithmetic, and packed XOR). */
static void check_mask_bit(const struct veil_preproc_layout *L,
                           const uint8_t (*seeds)[VEIL_SEED_BYTES], uint64_t k, uint64_t j,
                           uint64_t n, unsigned f)
{
    struct veil_preproc_share msh[VEIL_PREPROC_MAX_PARTIES], bsh[VEIL_PREPROC_MAX_PARTIES],
        psh[VEIL_PREPROC_MAX_PARTIES];
    memset(msh, 0, sizeof msh);
    memset(bsh, 0, sizeof bsh);
    memset(psh, 0, sizeof psh);
    const int N = L->nparties, nparts = f ? 3 : 1;
    const char *name = f ? "cmptrunc" : "rbeta";
    const struct veil_preproc_item mask = veil_preproc_item_cmpmask(k, n),
                                   bit = veil_preproc_item_bit(j, n),
                                   prod = f ? veil_preproc_item_cmptrunc(k + j + 1, n, k, j, f)
                                            : veil_preproc_item_rbeta(k + j + 1, n, k, j);
    uint64_t *mc = generate(L, &mask, seeds, msh), *bc = generate(L, &bit, seeds, bsh),
             *pc = generate(L, &prod, seeds, psh);
    uint64_t *r = calloc(n, 8), *b = calloc(n, 8), *bp = calloc((n + 63) / 64, 8),
             *rb = calloc(3 * n, 8);
    size_t bad = 0, ones_seen = 0;
    if (!mc || !bc || !pc || !r || !b || !bp || !rb || !msh[0].words || !bsh[0].words ||
        !psh[0].words) {
        CHECK(0, "%s: generation failed", name);
        goto done;
    }
    CHECK(veil_preproc_share_words(&prod) == nparts * n &&
              veil_preproc_correction_words(&prod) == nparts * n,
          "%s sizes", name);
    recon(msh, N, VEIL_PRE_CM_R, 0, r);
    recon(bsh, N, VEIL_PRE_BIT_A, 0, b);
    recon(bsh, N, VEIL_PRE_BIT_B, 1, bp);
    for (int q = 0; q < nparts; q++)
        recon(psh, N, q, 0, rb + (size_t)q * n);
    for (uint64_t i = 0; i < n; i++) {
        const uint64_t bi = bp[i / 64] >> (i % 64) & 1;
        bad += b[i] != bi;
        if (f)
            bad += rb[i] != r[i] >> f || rb[n + i] != (r[i] >> f) * bi ||
                   rb[2 * n + i] != (r[i] >> 63) * bi;
        else
            bad += rb[i] != r[i] * bi;
        ones_seen += bi;
    }
    CHECK(bad == 0 && (n < 64 || (ones_seen > 0 && ones_seen < n)),
          "%s N=%d n=%llu: %zu wrong words, %zu bits set", name, N, (unsigned long long)n, bad,
          ones_seen);
    for (int q = 0; n >= 1024 && q < nparts; q++) { /* the designated share says nothing */
        const double b1 = ones(psh[L->designated].part[q], n),
                     ag = agree(psh[L->designated].part[q], rb + (size_t)q * n, n);
        CHECK(b1 > 0.48 && b1 < 0.52 && ag > 0.48 && ag < 0.52,
              "%s part %d: designated share bit balance %.3f, agreement %.3f", name, q, b1, ag);
    }
done:
    free(mc), free(bc), free(pc), free(r), free(b), free(bp), free(rb);
    clear_all(msh, N);
    clear_all(bsh, N);
    clear_all(psh, N);
}

static void all_kinds(const struct veil_preproc_layout *L, const uint8_t (*seeds)[VEIL_SEED_BYTES])
{
    uint64_t ix = 0;
    struct veil_preproc_item items[] = {
        veil_preproc_item_beaver(ix++, 1),
        veil_preproc_item_beaver(ix++, 5000), /* more than one dealer chunk */
        veil_preproc_item_matmul(ix++, 1, 1, 1),
        veil_preproc_item_matmul(ix++, 17, 33, 9),
        veil_preproc_item_matmul(ix++, 64, 48, 40),
        veil_preproc_item_conv(ix++, 2, 3, 7, 6, 4, 3, 3, 1, 1),
        veil_preproc_item_conv(ix++, 1, 2, 9, 9, 3, 3, 2, 2, 0),
        veil_preproc_item_conv(ix++, 3, 1, 5, 5, 2, 5, 5, 1, 2),
        veil_preproc_item_square(ix++, 4099),
        veil_preproc_item_and(ix++, 4100),
        veil_preproc_item_trunc(ix++, 4500, 16),
        veil_preproc_item_trunc(ix++, 100, 1),
        veil_preproc_item_trunc(ix++, 100, 62),
        veil_preproc_item_bit(ix++, 1),
        veil_preproc_item_bit(ix++, 4097 + 64 * 70), /* several chunks, padding in last word */
        veil_preproc_item_cmpmask(ix++, 4200),
        veil_preproc_item_carry4(ix++, 1),
        veil_preproc_item_prodk(ix++, 1, 2),
        veil_preproc_item_prodk(ix++, 300, 3),
        veil_preproc_item_prodk(ix++, 77, 4),
        veil_preproc_item_prodk(ix++, 1000, 5), /* more than one dealer chunk */
        veil_preproc_item_carry4(ix++, 1200),   /* more than one dealer chunk */
        veil_preproc_item_matmul_ws(ix++, 17, 33, 9, 5),
        veil_preproc_item_matmul_ws(ix++, 1, 1, 1, 0),
        veil_preproc_item_conv_ws(ix++, 2, 3, 7, 6, 4, 3, 3, 1, 1, UINT64_MAX),
    };
    /* conv with unequal strides / pads */
    items[6].p[VEIL_PRE_CONV_SW] = 1;
    items[6].p[VEIL_PRE_CONV_PW] = 1;
    for (size_t i = 0; i < sizeof items / sizeof items[0]; i++)
        check_item(L, &items[i], seeds);
    check_cmpprod(L, seeds, 40, 1, 1);
    check_cmpprod(L, seeds, 0, 300, 300);   /* one tile, a partial last block */
    check_cmpprod(L, seeds, 50, 1000, 192); /* tiles of 3 blocks, the last one short */
    check_mask_bit(L, seeds, 7, 9, 1, 0);
    check_mask_bit(L, seeds, 0, 1, 4097 + 64 * 70, 0); /* several chunks, a partial last word */
    check_mask_bit(L, seeds, 3, 5, 4097 + 64 * 70, 16);
    check_mask_bit(L, seeds, 2, 4, 100, 62);
}

int main(void)
{
    verbose = getenv("VEIL_TEST_VERBOSE") != NULL;
    uint8_t seeds[VEIL_PREPROC_MAX_PARTIES][VEIL_SEED_BYTES], sid[16];
    for (int p = 0; p < VEIL_PREPROC_MAX_PARTIES; p++)
        for (int i = 0; i < VEIL_SEED_BYTES; i++)
            seeds[p][i] = (uint8_t)(p * 31 + i * 7 + 3);
    for (int i = 0; i < 16; i++)
        sid[i] = (uint8_t)(0xa0 + i);
    struct veil_preproc_layout L;

    for (int N = 2; N <= 4; N++) {
        CHECK(veil_preproc_layout_init(&L, N, 16, sid) == VEIL_OK, "layout N=%d", N);
        CHECK(L.designated == N - 1, "default designated party");
        all_kinds(&L, (const uint8_t(*)[VEIL_SEED_BYTES])seeds);
        /* Trusted first party: party 0 holds the corrections (and, in deployment, every seed). */
        L.designated = 0;
        all_kinds(&L, (const uint8_t(*)[VEIL_SEED_BYTES])seeds);
        if (verbose)
            fprintf(stderr, "N=%d done\n", N);
    }
    /* 16 parties, a middle designated party. */
    CHECK(veil_preproc_layout_init(&L, 16, 16, sid) == VEIL_OK, "layout N=16");
    L.designated = 7;
    {
        struct veil_preproc_item it = veil_preproc_item_beaver(3, 300);
        check_item(&L, &it, (const uint8_t(*)[VEIL_SEED_BYTES])seeds);
    }

    /* Determinism; the stream depends on the index, the session id and the kind. */
    {
        veil_preproc_layout_init(&L, 3, 16, sid);
        struct veil_preproc_item a = veil_preproc_item_beaver(9, 64), b = a;
        b.index = 10;
        uint64_t c1[64], c2[64], c3[64], c4[64];
        struct veil_preproc_share s1 = {0}, s2 = {0};
        const uint8_t(*sd)[VEIL_SEED_BYTES] = (const uint8_t(*)[VEIL_SEED_BYTES])seeds;
        veil_preproc_dealer_correction(&L, &a, sd, c1, 64);
        veil_preproc_dealer_correction(&L, &a, sd, c2, 64);
        veil_preproc_dealer_correction(&L, &b, sd, c3, 64);
        CHECK(memcmp(c1, c2, sizeof c1) == 0, "dealer is deterministic");
        CHECK(memcmp(c1, c3, sizeof c1) != 0, "another index gives other material");
        struct veil_preproc_layout L2 = L;
        L2.session_id[15] ^= 1;
        veil_preproc_dealer_correction(&L2, &a, sd, c4, 64);
        CHECK(memcmp(c1, c4, sizeof c1) != 0, "another session gives other material");
        veil_preproc_party_expand(&L, &a, 0, seeds[0], NULL, &s1);
        struct veil_preproc_item sq = veil_preproc_item_square(9, 64);
        veil_preproc_party_expand(&L, &sq, 0, seeds[0], NULL, &s2);
        CHECK(s1.words && s2.words && memcmp(s1.part[0], s2.part[0], 64 * 8) != 0,
              "another kind with the same index gives other material");
        veil_preproc_share_clear(&s1);
        veil_preproc_share_clear(&s2);
    }

    /* Weight stream: every item with one wid carries the same B (each party's share equal), a
     * fresh A and C; another wid or another session gives another B. A conv_ws with the same
     * wid and as many weight words takes the same words. */
    for (int N = 2; N <= 3; N++) {
        veil_preproc_layout_init(&L, N, 16, sid);
        const uint8_t(*sd)[VEIL_SEED_BYTES] = (const uint8_t(*)[VEIL_SEED_BYTES])seeds;
        struct veil_preproc_item w1 = veil_preproc_item_matmul_ws(20, 6, 8, 5, 77);
        struct veil_preproc_item w2 = veil_preproc_item_matmul_ws(21, 9, 8, 5, 77);
        struct veil_preproc_item w3 = veil_preproc_item_matmul_ws(22, 6, 8, 5, 78);
        struct veil_preproc_item pl = veil_preproc_item_matmul(20, 6, 8, 5);
        struct veil_preproc_item cv = veil_preproc_item_conv_ws(23, 1, 2, 4, 4, 5, 2, 2, 1, 0, 77);
        struct veil_preproc_share s1[VEIL_PREPROC_MAX_PARTIES], s2[VEIL_PREPROC_MAX_PARTIES],
            s3[VEIL_PREPROC_MAX_PARTIES], s4[VEIL_PREPROC_MAX_PARTIES],
            s5[VEIL_PREPROC_MAX_PARTIES];
        memset(s1, 0, sizeof s1);
        memset(s2, 0, sizeof s2);
        memset(s3, 0, sizeof s3);
        memset(s4, 0, sizeof s4);
        memset(s5, 0, sizeof s5);
        free(generate(&L, &w1, sd, s1));
        free(generate(&L, &w2, sd, s2));
        free(generate(&L, &w3, sd, s3));
        free(generate(&L, &pl, sd, s4));
        free(generate(&L, &cv, sd, s5));
        int same_b = 1, fresh_a = 1, other_wid = 1, plain = 1, conv_b = 1;
        for (int q = 0; q < N && s1[q].words && s2[q].words && s3[q].words && s4[q].words &&
                        s5[q].words;
             q++) {
            same_b &= memcmp(s1[q].part[1], s2[q].part[1], 40 * 8) == 0;
            fresh_a &= memcmp(s1[q].part[0], s2[q].part[0], 48 * 8) != 0;
            other_wid &= memcmp(s1[q].part[1], s3[q].part[1], 40 * 8) != 0;
            plain &= memcmp(s1[q].part[1], s4[q].part[1], 40 * 8) != 0;
            conv_b &= memcmp(s1[q].part[1], s5[q].part[1], 40 * 8) == 0;
        }
        CHECK(s1[0].words && same_b, "N=%d: one wid, one B in every item", N);
        CHECK(fresh_a, "N=%d: A is fresh in every item", N);
        CHECK(other_wid, "N=%d: another wid gives another B", N);
        CHECK(plain, "N=%d: a plain MATMUL's B is not the weight stream", N);
        CHECK(conv_b, "N=%d: conv_ws with the same wid reads the same weight words", N);
        uint64_t b1[40], b2[40];
        recon(s1, N, 1, 0, b1);
        CHECK(ones(b1, 40) > 0.4 && ones(b1, 40) < 0.6, "B looks uniform");
        struct veil_preproc_layout L2 = L;
        L2.session_id[0] ^= 1;
        clear_all(s2, N);
        free(generate(&L2, &w1, sd, s2));
        recon(s2, N, 1, 0, b2);
        CHECK(memcmp(b1, b2, sizeof b1) != 0, "another session gives another B");
        /* the online layer's per-range fill agrees with the whole expansion */
        uint64_t part[40];
        CHECK(veil_preproc_part_fill(&L, &w1, 0, seeds[0], 1, 7, 20, NULL, part) == VEIL_OK &&
                  memcmp(part, s1[0].part[1] + 7, 20 * 8) == 0,
              "part fill of the weight part");
        clear_all(s1, N);
        clear_all(s2, N);
        clear_all(s3, N);
        clear_all(s4, N);
        clear_all(s5, N);
    }

    /* Bad items and misuse. */
    {
        struct veil_preproc_desc d;
        struct veil_preproc_item bad[] = {
            veil_preproc_item_beaver(0, 0),
            veil_preproc_item_matmul(0, 3, 0, 2),
            veil_preproc_item_trunc(0, 10, 0),
            veil_preproc_item_trunc(0, 10, 63),
            veil_preproc_item_conv(0, 1, 1, 2, 2, 1, 3, 3, 1, 0), /* kernel > input */
            veil_preproc_item_conv(0, 1, 1, 5, 5, 1, 3, 3, 1, 3), /* pad >= kernel */
            veil_preproc_item_conv(0, 1, 1, 5, 5, 1, 3, 3, 0, 1), /* stride 0 */
            veil_preproc_item_matmul(0, UINT64_C(1) << 30, UINT64_C(1) << 30, 1), /* too big */
            veil_preproc_item_beaver(0, UINT64_MAX),
            veil_preproc_item_matmul_ws(0, 3, 0, 2, 1),
            veil_preproc_item_conv_ws(0, 1, 1, 5, 5, 1, 3, 3, 1, 3, 1), /* pad >= kernel */
        };
        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
            CHECK(veil_preproc_item_describe(&bad[i], &d) != VEIL_OK, "bad item %zu accepted", i);
            CHECK(veil_preproc_share_words(&bad[i]) == 0, "bad item %zu has a size", i);
        }
        struct veil_preproc_item extra = veil_preproc_item_beaver(0, 4);
        extra.p[5] = 1;
        CHECK(veil_preproc_item_describe(&extra, &d) == VEIL_ERR_INVAL, "unused param set");
        extra = veil_preproc_item_beaver(0, 4);
        extra.kind = (enum veil_preproc_kind)99;
        CHECK(veil_preproc_item_describe(&extra, &d) == VEIL_ERR_INVAL, "unknown kind");
        extra = veil_preproc_item_matmul(0, 2, 2, 2);
        extra.p[VEIL_PRE_MATMUL_WID] = 5;
        CHECK(veil_preproc_item_describe(&extra, &d) == VEIL_ERR_INVAL, "wid on a plain matmul");
        CHECK(strcmp(veil_preproc_kind_name(VEIL_PREPROC_MATMUL_WS), "matmul_ws") == 0 &&
                  strcmp(veil_preproc_kind_name(VEIL_PREPROC_CONV_WS), "conv_ws") == 0,
              "kind names");
        CHECK(VEIL_PREPROC_CMPMASK == 8 && VEIL_PREPROC_MATMUL_WS == 9 && VEIL_PREPROC_CARRY4 == 11,
              "kinds not renumbered");
        CHECK(strcmp(veil_preproc_kind_name(VEIL_PREPROC_CARRY4), "carry4") == 0, "carry4 name");
        struct veil_preproc_item cp = veil_preproc_item_cmpprod(0, 10, 11, 0);
        CHECK(veil_preproc_item_describe(&cp, &d) == VEIL_ERR_INVAL, "cmpprod tile > n");
        cp = veil_preproc_item_cmpprod(0, 10, 0, 7);
        CHECK(veil_preproc_item_describe(&cp, &d) == VEIL_ERR_INVAL, "cmpprod tile 0");
        struct veil_preproc_item pk = veil_preproc_item_prodk(0, 10, 6);
        CHECK(veil_preproc_item_describe(&pk, &d) == VEIL_ERR_INVAL, "prodk of 6 factors");
        pk = veil_preproc_item_prodk(0, 10, 1);
        CHECK(veil_preproc_item_describe(&pk, &d) == VEIL_ERR_INVAL, "prodk of 1 factor");
        cp = veil_preproc_item_cmpprod(3, 10, 10, UINT64_MAX);
        CHECK(veil_preproc_item_describe(&cp, &d) == VEIL_OK, "cmpprod: any mask index");
        struct veil_preproc_item rb = veil_preproc_item_rbeta(4, 10, UINT64_MAX, 0);
        CHECK(veil_preproc_item_describe(&rb, &d) == VEIL_OK && d.share_words == 10 &&
                  d.correction_words == 10 && d.part[0].corrected,
              "rbeta: any item indices, n words corrected");
        rb = veil_preproc_item_rbeta(4, 0, 1, 2);
        CHECK(veil_preproc_item_describe(&rb, &d) == VEIL_ERR_INVAL, "rbeta of 0 elements");
        rb.p[VEIL_PRE_N] = 10;
        rb.p[3] = 1;
        CHECK(veil_preproc_item_describe(&rb, &d) == VEIL_ERR_INVAL, "rbeta: a fourth parameter");
        struct veil_preproc_item ct = veil_preproc_item_cmptrunc(4, 10, 1, 2, 63);
        CHECK(veil_preproc_item_describe(&ct, &d) == VEIL_ERR_INVAL, "cmptrunc by 63 bits");
        ct = veil_preproc_item_cmptrunc(4, 10, 0, UINT64_MAX, 16);
        CHECK(veil_preproc_item_describe(&ct, &d) == VEIL_OK && d.share_words == 30 &&
                  d.correction_words == 30,
              "cmptrunc: any item indices, 3 n words corrected");
        CHECK(VEIL_PREPROC_CMPTRUNC == 15 &&
                  strcmp(veil_preproc_kind_name(VEIL_PREPROC_CMPTRUNC), "cmptrunc") == 0,
              "cmptrunc kind and name");
        CHECK(VEIL_PREPROC_RBETA == 14 &&
                  strcmp(veil_preproc_kind_name(VEIL_PREPROC_RBETA), "rbeta") == 0,
              "rbeta kind and name");
        struct veil_preproc_item ok = veil_preproc_item_beaver(0, 4);
        uint64_t c[4];
        struct veil_preproc_share s = {0};
        veil_preproc_layout_init(&L, 3, 16, sid);
        const uint8_t(*sd)[VEIL_SEED_BYTES] = (const uint8_t(*)[VEIL_SEED_BYTES])seeds;
        CHECK(veil_preproc_dealer_correction(&L, &ok, sd, c, 3) == VEIL_ERR_RANGE, "short out");
        CHECK(veil_preproc_dealer_correction(&L, &ok, sd, c, 4) == VEIL_OK, "dealer");
        CHECK(veil_preproc_party_expand(&L, &ok, 0, seeds[0], c, &s) == VEIL_ERR_INVAL,
              "correction given to a non-designated party");
        CHECK(veil_preproc_party_expand(&L, &ok, 2, seeds[2], NULL, &s) == VEIL_ERR_INVAL,
              "designated party without correction");
        CHECK(veil_preproc_party_expand(&L, &ok, 3, seeds[2], NULL, &s) == VEIL_ERR_INVAL,
              "party out of range");
        CHECK(s.words == NULL, "failed expand leaves the share empty");
        struct veil_preproc_layout B = L;
        B.nparties = 1;
        CHECK(veil_preproc_dealer_correction(&B, &ok, sd, c, 4) == VEIL_ERR_INVAL, "N=1");
        B = L;
        B.nparties = 17;
        CHECK(veil_preproc_layout_check(&B) == VEIL_ERR_INVAL, "N=17");
        B = L;
        B.designated = 3;
        CHECK(veil_preproc_layout_check(&B) == VEIL_ERR_INVAL, "designated out of range");
        char buf[8];
        veil_preproc_item_format(&ok, buf, sizeof buf); /* truncates safely */
        CHECK(strlen(buf) == 7, "format truncates");
    }
    if (failures)
        fprintf(stderr, "%d failures\n", failures);
    return failures ? 1 : 0;
}

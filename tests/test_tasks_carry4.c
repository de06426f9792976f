/* Tests the 4-to-1 group of the LTZ carry circuit (tasks/carry4_common.h) and the circuit's shape
 * (tasks/compare_common.h) without a network: veil_c4_group on every one of the 256 combinations
 * of its eight input bits (the seven opened inputs and G3), XOR-shared among 2 and 3 parties with
 * random masks and mask products, against G = G3 ^ P3 G2 ^ P3 P2 G1 ^ P3 P2 P1 G0 and
 * P = P3 P2 P1 P0 in the clear; a product share made wrong changes the result (every row is
 * used); the levels 63 -> 16 -> 4 -> 1; the gather's rows and the identity padding of a short
 * group; the local level 0 (leaves and their groups from c and the XOR-shared mask bits and
 * CMPPROD products of 3 parties) and the whole carry circuit after it (masks and products 0, so
 * the opened records are the inputs) against the carry into bit 63 of c + r. The protocol around it
 * (opens, material, tiles) is test_tasks_compare's. */
#include "config.h"

#include "codelets/bits_common.h"
#include "tasks/carry4_common.h"
#include "tasks/compare_common.h"
#include "tasks/compare_internal.h"
#include "test_cmp_oracle.h"
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXN 3

/* Lane L of the 4 words w = combination 64 w + L: bit i of the combination is input i (record
 * order), bit 7 is G3. */
static uint64_t lanes_of_bit(int word, int bit)
{
    uint64_t v = 0;
    for (int l = 0; l < 64; l++)
        v |= (uint64_t)(((64 * word + l) >> bit) & 1) << l;
    return v;
}

/* The group in the clear on lanes. */
static void clear_group(const uint64_t *u, uint64_t g3, uint64_t *G, uint64_t *P)
{
    const uint64_t p3 = u[VEIL_C4_P3], p2 = u[VEIL_C4_P2], p1 = u[VEIL_C4_P1], p0 = u[VEIL_C4_P0];
    const uint64_t g0 = u[VEIL_C4_G0], g1 = u[VEIL_C4_G1], g2 = u[VEIL_C4_G2];
    *G = g3 ^ (p3 & g2) ^ (p3 & p2 & g1) ^ (p3 & p2 & p1 & g0);
    *P = p3 & p2 & p1 & p0;
}

/* Splits v into N XOR shares (random ones from *tag for parties 1..N-1). */
static void split(uint64_t v, int N, uint64_t *tag, uint64_t *out)
{
    uint64_t acc = v;
    for (int q = 1; q < N; q++) {
        veil_test_random((*tag)++, &out[q], 1);
        acc ^= out[q];
    }
    out[0] = acc;
}

/* Every combination, N parties; corrupt >= 0 flips one bit of product row corrupt at party 0. */
static int group_all(int N, int corrupt, uint64_t tag)
{
    static const uint8_t sets[VEIL_C4_PRODS] = VEIL_C4_PROD_SETS;
    int wrong = 0;
    for (int word = 0; word < 4; word++) {
        uint64_t u[VEIL_C4_INPUTS], a[VEIL_C4_INPUTS], e[VEIL_C4_INPUTS],
            g3 = lanes_of_bit(word, 7);
        uint64_t ash[VEIL_C4_INPUTS][MAXN], prsh[VEIL_C4_PRODS][MAXN], g3sh[MAXN];
        for (int i = 0; i < VEIL_C4_INPUTS; i++) {
            u[i] = lanes_of_bit(word, i);
            veil_test_random(tag++, &a[i], 1);
            e[i] = u[i] ^ a[i]; /* the opened value */
            split(a[i], N, &tag, ash[i]);
        }
        for (int r = 0; r < VEIL_C4_PRODS; r++) {
            uint64_t prod = ~UINT64_C(0);
            for (int i = 0; i < VEIL_C4_INPUTS; i++)
                if (sets[r] >> i & 1)
                    prod &= a[i];
            split(prod, N, &tag, prsh[r]);
        }
        if (corrupt >= 0)
            prsh[corrupt][0] ^= ~UINT64_C(0);
        split(g3, N, &tag, g3sh);
        uint64_t G = 0, P = 0;
        for (int q = 0; q < N; q++) {
            uint64_t aq[VEIL_C4_INPUTS], pq[VEIL_C4_PRODS], gq, pp;
            for (int i = 0; i < VEIL_C4_INPUTS; i++)
                aq[i] = ash[i][q];
            for (int r = 0; r < VEIL_C4_PRODS; r++)
                pq[r] = prsh[r][q];
            veil_c4_group(e, aq, pq, g3sh[q], q == 0 ? ~UINT64_C(0) : 0, &gq, &pp);
            G ^= gq;
            P ^= pp;
        }
        uint64_t wantG, wantP;
        clear_group(u, g3, &wantG, &wantP);
        wrong += G != wantG || P != wantP;
    }
    return wrong;
}

static void check_group(void)
{
    for (int N = 2; N <= MAXN; N++)
        VT_CHECK(group_all(N, -1, 1000 * (uint64_t)N) == 0, "group N=%d: wrong on some inputs", N);
    /* every product row enters G or P: a wrong share of any row shows */
    for (int r = 0; r < VEIL_C4_PRODS; r++)
        VT_CHECK(group_all(2, r, 7000 + 100 * (uint64_t)r) > 0, "product row %d unused", r);
}

static void check_shape(void)
{
    const int want_k[VEIL_CMP_LEVELS + 1] = {63, 16, 4, 1};
    for (int l = 0; l <= VEIL_CMP_LEVELS; l++)
        VT_CHECK(veil_cmp_level_of(l).k == want_k[l], "level %d enters with %d groups", l,
                 veil_cmp_level_of(l).k);
    const struct veil_cmp_level last = veil_cmp_level_of(VEIL_CMP_LEVELS - 1);
    VT_CHECK(last.last && veil_cmp_next_rows(&last) == 1, "the last level keeps G only");
    const struct veil_cmp_level l0 = veil_cmp_level_of(0);
    VT_CHECK(!l0.last && veil_cmp_next_rows(&l0) == 32, "level 0 leaves G and P of 16 groups");
    /* level 0, group 15: members 60, 61, 62 and a padded member 3 (G = 0, P = 1 at party 0) */
    enum { NB = 2 };
    uint64_t *st = malloc(2 * VEIL_CMP_LEAVES * NB * sizeof *st);
    if (!st) {
        VT_CHECK(0, "out of memory");
        return;
    }
    for (size_t i = 0; i < 2 * VEIL_CMP_LEAVES * NB; i++)
        st[i] = i + 1; /* word = 1 + its index: rows are recognisable */
    const uint64_t pub = ~UINT64_C(0);
#define ROW(r, b) ((uint64_t)(r) * NB + (b) + 1)
    VT_CHECK(veil_cmp_gather_word(&l0, st, NB, 15, VEIL_C4_P3, 1, pub) == pub &&
                 veil_cmp_gather_word(&l0, st, NB, 15, VEIL_C4_P3, 1, 0) == 0,
             "a padded P is 1 at party 0 and 0 elsewhere");
    VT_CHECK(veil_cmp_top_g(&l0, st, NB, 15, 1) == 0, "a padded G3 is 0");
    VT_CHECK(veil_cmp_gather_word(&l0, st, NB, 15, VEIL_C4_P2, 1, pub) == ROW(63 + 62, 1) &&
                 veil_cmp_gather_word(&l0, st, NB, 15, VEIL_C4_G2, 1, pub) == ROW(62, 1) &&
                 veil_cmp_gather_word(&l0, st, NB, 15, VEIL_C4_G0, 0, pub) == ROW(60, 0) &&
                 veil_cmp_gather_word(&l0, st, NB, 15, VEIL_C4_P0, 0, pub) == ROW(63 + 60, 0),
             "group 15's rows");
    VT_CHECK(veil_cmp_top_g(&l0, st, NB, 2, 1) == ROW(11, 1) &&
                 veil_cmp_gather_word(&l0, st, NB, 2, VEIL_C4_P1, 1, pub) == ROW(63 + 9, 1) &&
                 veil_cmp_gather_word(&l0, st, NB, 2, VEIL_C4_G1, 1, pub) == ROW(9, 1),
             "group 2's rows");
#undef ROW
    free(st);
}

/*
 * The whole circuit: level 0 from c and r XOR-shared among 3 parties (mask bits and CMPPROD
 * words), the parties' level-1 states XORed, then levels 1 and 2 in the clear (one party, masks
 * a = 0 and products 0, so e = the input). The carry for 128 random elements with the edge values
 * mixed in must be bit 63 of c + r XOR c_63 XOR r_63, and the leaf rows are checked once.
 */
static void check_chain(void)
{
    enum { N = 128, NB = N / 64, NP = 3 };
    uint64_t c[N], r[N];
    veil_test_random(42, c, N);
    veil_test_random(43, r, N);
    veil_test_mix_edges(c, r, N);
    VT_CHECK(veil_prodk_row(3) == 0 && veil_prodk_row(9) == 4 && veil_prodk_row(15) == 10,
             "leaf product rows");
    VT_CHECK(veil_prodk_nprods(4) == VEIL_C4_LEAF_PRODS, "11 products per leaf group");
    const size_t nst = 2 * VEIL_CMP_LEAVES * NB;
    uint64_t *st = calloc(nst, 8), *next = calloc(nst, 8), *part = calloc(nst, 8);
    uint64_t *rec = calloc(VEIL_C4_INPUTS * 16 * NB, 8), *zero = calloc(VEIL_C4_PRODS * 16 * NB, 8);
    const uint64_t pub = ~UINT64_C(0);
    uint64_t tag = 9000;
    if (!st || !next || !part || !rec || !zero) {
        VT_CHECK(0, "out of memory");
        goto done;
    }
    for (size_t b = 0; b < NB; b++) {
        uint64_t ct[64], rt[64], pi[VEIL_C4_LEAF_WORDS], rs[NP][64], ps[NP][VEIL_C4_LEAF_WORDS];
        memcpy(ct, c + 64 * b, sizeof ct);
        memcpy(rt, r + 64 * b, sizeof rt);
        veil_transpose64(ct);
        veil_transpose64(rt);
        veil_test_leaf_products(rt, pi);
        for (int i = 0; i < 64; i++) {
            uint64_t sh[NP];
            split(rt[i], NP, &tag, sh);
            for (int q = 0; q < NP; q++)
                rs[q][i] = sh[q];
        }
        for (int i = 0; i < VEIL_C4_LEAF_WORDS; i++) {
            uint64_t sh[NP];
            split(pi[i], NP, &tag, sh);
            for (int q = 0; q < NP; q++)
                ps[q][i] = sh[q];
        }
        for (int q = 0; q < NP; q++) {
            veil_cmp_leaf_groups(ct, rs[q], ps[q], q == 0 ? pub : 0, part, NB, b);
            for (int row = 0; row < 2 * VEIL_C4_LEAF_GROUPS; row++)
                st[(size_t)row * NB + b] ^= part[(size_t)row * NB + b];
        }
        /* group 0's G and P in the clear: the carry out of bits 0..3 and "all four propagate" */
        uint64_t g = 0, p = ~UINT64_C(0);
        for (int q = 0; q < 4; q++) {
            g = (ct[q] & rt[q]) | ((ct[q] ^ rt[q]) & g);
            p &= ct[q] ^ rt[q];
        }
        VT_CHECK(st[b] == g && st[(size_t)VEIL_C4_LEAF_GROUPS * NB + b] == p,
                 "level-0 group 0 of block %zu", b);
    }
    for (int l = 1; l < VEIL_CMP_LEVELS; l++) {
        const struct veil_cmp_level v = veil_cmp_level_of(l);
        for (int j = 0; j < v.knext; j++)
            for (size_t b = 0; b < NB; b++) {
                const size_t w = (size_t)j * NB + b;
                for (int i = 0; i < VEIL_C4_INPUTS; i++)
                    rec[w * VEIL_C4_INPUTS + (size_t)i] =
                        veil_cmp_gather_word(&v, st, NB, j, i, b, pub);
            }
        for (int j = 0; j < v.knext; j++)
            for (size_t b = 0; b < NB; b++)
                veil_cmp_group_record(&v, rec, zero, zero, st, next, NB, j, b, pub);
        memcpy(st, next, nst * 8);
    }
    int bad = 0;
    for (int e = 0; e < N; e++) {
        const uint64_t carry = (st[e / 64] >> (e % 64)) & 1;
        const uint64_t want = ((c[e] + r[e]) ^ c[e] ^ r[e]) >> 63;
        bad += carry != want;
    }
    VT_CHECK(bad == 0, "chained circuit: %d of %d carries wrong", bad, N);
done:
    free(st), free(next), free(part), free(rec), free(zero);
}

/* The leaf codelet's eight-block vector path (tasks/compare_leaf8.c) gives the words of the
 * block-by-block one (slice, leaf groups, top) for random c, r and products, both parties' pub, at
 * block offsets 0 and 8 of a 24-block tile (every lane of every row checked). */
static void check_leaf8(void)
{
    enum { NB = 24, N = 64 * NB };
    static uint64_t c[N], r[N], pr[NB * VEIL_C4_LEAF_WORDS];
    static uint64_t st_ref[32 * NB], st_vec[32 * NB], top_ref[NB], top_vec[NB];
    uint64_t x = 0x9e3779b97f4a7c15u;
    for (int round = 0; round < 4; round++) {
        for (size_t i = 0; i < N; i++) {
            c[i] = x = x * 6364136223846793005u + 1442695040888963407u;
            r[i] = x = x * 6364136223846793005u + 1442695040888963407u;
        }
        for (size_t i = 0; i < NB * VEIL_C4_LEAF_WORDS; i++)
            pr[i] = x = x * 6364136223846793005u + 1442695040888963407u;
        const uint64_t pub = round % 2 ? 0 : ~UINT64_C(0);
        memset(st_vec, 0xee, sizeof st_vec);
        memset(top_vec, 0xee, sizeof top_vec);
        uint64_t ct[64], rt[64];
        for (size_t b = 0; b < NB; b++) {
            veil_cmp_slice_block(c, r, N, b, ct, rt);
            veil_cmp_leaf_groups(ct, rt, pr + b * VEIL_C4_LEAF_WORDS, pub, st_ref, NB, b);
            top_ref[b] = veil_cmp_leaf_p(ct[63], rt[63], pub);
        }
        for (size_t b0 = 0; b0 + 8 <= 16; b0 += 8)
            veil_cmp_leaf8(c, r, pr, pub, st_vec, top_vec, NB, b0);
        int bad = 0;
        for (int row = 0; row < 32; row++)
            for (size_t b = 0; b < 16; b++)
                bad += st_vec[row * NB + b] != st_ref[row * NB + b];
        for (size_t b = 0; b < 16; b++)
            bad += top_vec[b] != top_ref[b];
        for (int row = 0; row < 32; row++) /* blocks 16..23 untouched */
            for (size_t b = 16; b < NB; b++)
                bad += st_vec[row * NB + b] != 0xeeeeeeeeeeeeeeeeu;
        VT_CHECK(bad == 0, "leaf8 against the block-by-block leaf (pub %d): %d words differ",
                 pub != 0, bad);
        /* the slicing alone (the octave circuit's leaf uses it) */
        uint64_t ct8[8][64], rt8[8][64];
        bad = 0;
        veil_cmp_slice8(c, r, 8, ct8, rt8);
        for (int k = 0; k < 8; k++) {
            veil_cmp_slice_block(c, r, N, 8 + (size_t)k, ct, rt);
            bad += memcmp(ct, ct8[k], sizeof ct) != 0;
            bad += memcmp(rt, rt8[k], sizeof rt) != 0;
        }
        VT_CHECK(bad == 0, "slice8 against slice_block: %d blocks differ", bad);
    }
}

int main(void)
{
    check_group();
    check_shape();
    check_chain();
    check_leaf8();
    if (veil_test_failures)
        fprintf(stderr, "test_tasks_carry4: %d failures\n", veil_test_failures);
    return veil_test_failures ? 1 : 0;
}

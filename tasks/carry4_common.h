/*
 * carry4_common.h — one 4-to-1 group of the LTZ carry circuit in ONE round: a multi-input AND
 * with dealer-made mask products (the CARRY4 item, tasks/preproc.h). Shared by the dealer
 * (preproc_gen.c: which products it makes), the party codelets (compare.c) and their CUDA bodies
 * (cuda/compare.cu): one inline function is the math of every evaluator.
 *
 * THE GROUP. Members 0..3 (member 3 the most significant) with generate/propagate bits (G_q, P_q)
 * combine into
 *     G = G3 ^ P3 G2 ^ P3 P2 G1 ^ P3 P2 P1 G0,      P = P3 P2 P1 P0
 * (the terms of G are mutually exclusive, so XOR is OR). Every bit is XOR-shared. The seven
 * inputs that enter a product, in record order: u = (P3, P2, P1, G0, G1, G2, P0); G3 enters only
 * linearly and is never opened.
 *
 * ONE ROUND. Each input u_i has a fresh uniform mask a_i (XOR-shared); the parties open
 * e_i = u_i ^ a_i, all seven in one message. A monomial over the input set S is then
 *     prod_{i in S} (e_i ^ a_i) = XOR over T subset of S of (AND_{i in S \ T} e_i) & a_T,
 * a_T = AND_{i in T} a_i: linear in the shares of a_T once the e_i are public. a_{} = 1 is added
 * by party 0 only (pub), a_{i} is the mask share, and the 22 a_T with |T| >= 2 that lie inside
 * one of the four monomials are the item's corrected products, row r holding the product over the
 * input set VEIL_C4_PROD_SETS[r] (bit i = input i; ascending). Online bytes per group: 7 words;
 * dealer: 22 words; two levels of two-input ANDs take 2 rounds, 12 words opened and 6 from
 * the dealer, for the same group.
 * Each mask is used for one open only, so the e_i are uniform and reveal nothing.
 */
#ifndef VEIL_TASKS_CARRY4_COMMON_H
#define VEIL_TASKS_CARRY4_COMMON_H

#include "codelets/hd_common.h"
#include "tasks/prodk_common.h"

#include <stdint.h>

#define VEIL_C4_INPUTS 7 /* words of a record: opened inputs, and masks */
#define VEIL_C4_PRODS 22 /* words of a record: corrected mask products */
#define VEIL_C4_FANIN 4  /* members per group */

/* Record positions of the inputs. */
enum { VEIL_C4_P3, VEIL_C4_P2, VEIL_C4_P1, VEIL_C4_G0, VEIL_C4_G1, VEIL_C4_G2, VEIL_C4_P0 };

/* Input sets of the product rows (bit i = input i), ascending: the subsets of size >= 2 of
 * {P3, G2}, {P3, P2, G1}, {P3, P2, P1, G0} and {P3, P2, P1, P0}. For the dealer (host code). */
#define VEIL_C4_PROD_SETS                                                                          \
    {0x03, 0x05, 0x06, 0x07, 0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f,                             \
     0x11, 0x12, 0x13, 0x21, 0x41, 0x42, 0x43, 0x44, 0x45, 0x46, 0x47}

/*
 * This party's shares of (G, P) of one group from the opened inputs e[7] (public), its mask
 * shares a[7], its product shares pr[22] and its share g3 of G3; pub is all ones at party 0 and
 * 0 elsewhere. Each line is one monomial expanded over the subsets T of its inputs (the rule
 * above), the term of T written as (share of a_T) & (the e of the other inputs); e0..e6 and
 * a0..a6 are the inputs in record order.
 */
static inline VEIL_HD void veil_c4_group(const uint64_t *e, const uint64_t *a, const uint64_t *pr,
                                         uint64_t g3, uint64_t pub, uint64_t *G, uint64_t *P)
{
    const uint64_t e0 = e[0], e1 = e[1], e2 = e[2], e3 = e[3], e4 = e[4], e5 = e[5], e6 = e[6];
    const uint64_t a0 = a[0], a1 = a[1], a2 = a[2], a3 = a[3], a4 = a[4], a5 = a[5], a6 = a[6];
    /* P3 G2 */
    const uint64_t m1 = (pub & e0 & e5) ^ (a0 & e5) ^ (a5 & e0) ^ pr[14];
    /* P3 P2 G1 */
    const uint64_t m2 = (pub & e0 & e1 & e4) ^ (a0 & e1 & e4) ^ (a1 & e0 & e4) ^ (pr[0] & e4) ^
                        (a4 & e0 & e1) ^ (pr[11] & e1) ^ (pr[12] & e0) ^ pr[13];
    /* P3 P2 P1 G0 */
    const uint64_t m3 = (pub & e0 & e1 & e2 & e3) ^ (a0 & e1 & e2 & e3) ^ (a1 & e0 & e2 & e3) ^
                        (pr[0] & e2 & e3) ^ (a2 & e0 & e1 & e3) ^ (pr[1] & e1 & e3) ^
                        (pr[2] & e0 & e3) ^ (pr[3] & e3) ^ (a3 & e0 & e1 & e2) ^
                        (pr[4] & e1 & e2) ^ (pr[5] & e0 & e2) ^ (pr[6] & e2) ^ (pr[7] & e0 & e1) ^
                        (pr[8] & e1) ^ (pr[9] & e0) ^ pr[10];
    /* P3 P2 P1 P0 */
    const uint64_t pp = (pub & e0 & e1 & e2 & e6) ^ (a0 & e1 & e2 & e6) ^ (a1 & e0 & e2 & e6) ^
                        (pr[0] & e2 & e6) ^ (a2 & e0 & e1 & e6) ^ (pr[1] & e1 & e6) ^
                        (pr[2] & e0 & e6) ^ (pr[3] & e6) ^ (a6 & e0 & e1 & e2) ^
                        (pr[15] & e1 & e2) ^ (pr[16] & e0 & e2) ^ (pr[17] & e2) ^
                        (pr[18] & e0 & e1) ^ (pr[19] & e1) ^ (pr[20] & e0) ^ pr[21];
    *G = g3 ^ m1 ^ m2 ^ m3;
    *P = pp;
}

/*
 * LEVEL 0 WITHOUT A ROUND. A group of leaves reads bits q = 4j .. 4j + 3 of x = c + r (c public,
 * r the CMPMASK item's mask): G_q = c_q r_q and P_q = c_q ^ r_q, each a public function of ONE
 * mask bit. So every monomial of the group is (public) AND a product of literals r_q ^ c_q, and
 *     prod_{q in Q} (r_q ^ c_q) = XOR over T subset of Q of (AND_{q in Q \ T} c_q) & r_T,
 * linear in the shares of r_T = AND_{q in T} r_q: r_{} = 1 (party 0), r_{q} the XOR share of the
 * mask bit, and the 11 r_T with |T| >= 2 (T within the group's 4 positions, in the order of
 * veil_prodk_row) that the CMPPROD item holds (tasks/preproc.h). Nothing is opened: the leaves and
 * level 0 are one local step.
 */
/* products per leaf group: the subsets of its 4 bits of size >= 2, row veil_prodk_row(t) */
#define VEIL_C4_LEAF_PRODS 11
#define VEIL_C4_LEAF_GROUPS 16 /* 63 leaves in groups of 4 (the last of 3) */
#define VEIL_C4_LEAF_WORDS (VEIL_C4_LEAF_PRODS * VEIL_C4_LEAF_GROUPS) /* per 64-element block */

/*
 * This party's shares of (G, P) of a leaf group of nm members (4; 3 for the last group, whose
 * missing top member is the identity): c[q] the public bit-sliced words of c at the group's
 * positions, s[q] this party's shares of r's bits there, pi[11] its shares of the products.
 * G and P are built as public coefficient words over the basis r_T (T a set of members), by
 * Horner's rule G = G_{nm-1} ^ P_{nm-1} (... (G_1 ^ P_1 G_0)) and P = P_{nm-1} ... P_0: a product
 * with P_q = r_q ^ c_q keeps each coefficient at T ANDed with c_q and moves it to T + {q}; G_q =
 * c_q r_q adds c_q at {q}. The shares are then XOR over T of (coefficient of T) & (share of r_T):
 * pub for T empty, s[q] for T = {q}, the product row in ascending T (veil_prodk_row) otherwise.
 */
/* Its body for a word type T with the bitwise operators of uint64_t (uint64_t here, a vector of
 * eight blocks in tasks/compare_leaf8.c): zero T's 0, PRODUCT(dst, row) a statement that loads
 * the group's product row `row` into the T dst (evaluating row once), pub the public word as a
 * T. */
#define VEIL_C4_LEAF_GROUP_BODY(T, zero, c, s, nm, pub, G, P, PRODUCT)                             \
    do {                                                                                           \
        T hg_[1 << VEIL_C4_FANIN], hp_[1 << VEIL_C4_FANIN];                                        \
        hg_[0] = (zero), hg_[1] = (c)[0];  /* G_0 = c_0 r_0 */                                     \
        hp_[0] = (c)[0], hp_[1] = ~(zero); /* P_0 = c_0 ^ r_0 */                                   \
        for (int q_ = 1; q_ < (nm); q_++) {                                                        \
            const unsigned bit_ = 1u << q_;                                                        \
            for (unsigned t_ = 0; t_ < bit_; t_++) {                                               \
                hg_[t_ | bit_] = hg_[t_], hg_[t_] &= (c)[q_];                                      \
                hp_[t_ | bit_] = hp_[t_], hp_[t_] &= (c)[q_];                                      \
            }                                                                                      \
            hg_[bit_] ^= (c)[q_];                                                                  \
        }                                                                                          \
        T g_ = hg_[0] & (pub), p_ = hp_[0] & (pub);                                                \
        int row_ = 0, member_ = 0;                                                                 \
        for (unsigned t_ = 1; t_ < (1u << (nm)); t_++) {                                           \
            T share_;                                                                              \
            if ((t_ & (t_ - 1)) == 0)                                                              \
                share_ = (s)[member_++];                                                           \
            else                                                                                   \
                PRODUCT(share_, row_++);                                                           \
            g_ ^= hg_[t_] & share_;                                                                \
            p_ ^= hp_[t_] & share_;                                                                \
        }                                                                                          \
        *(G) = g_;                                                                                 \
        *(P) = p_;                                                                                 \
    } while (0)

#define VEIL_C4_PI_ROW_(dst, row) ((dst) = pi[(row)])
static inline VEIL_HD void veil_c4_leaf_group(const uint64_t *c, const uint64_t *s,
                                              const uint64_t *pi, int nm, uint64_t pub, uint64_t *G,
                                              uint64_t *P)
{
    VEIL_C4_LEAF_GROUP_BODY(uint64_t, UINT64_C(0), c, s, nm, pub, G, P, VEIL_C4_PI_ROW_);
}
#undef VEIL_C4_PI_ROW_

#endif /* VEIL_TASKS_CARRY4_COMMON_H */

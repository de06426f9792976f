/*
 * bitcirc.h — bit-sliced boolean circuits over the bits of a masked value (internal; Veil issue
 * 17). A circuit reads the public bits c_q and the XOR-shared bits r_q (q < nbits) of x = c + r
 * (the open of a CMPMASK item) and computes output wires by free gates (XOR, NOT, AND or XOR
 * with a public bit) and AND gates, each AND a gate of veil_mpc_and. The builder drops every gate
 * no output needs and gives each AND its level (1 + the deepest AND below it), so that the
 * protocol runs level by level: one round per level, every AND of a level in it.
 *
 * THE OCTAVE CIRCUIT (veil_bitc_octave(p0, p1)): outputs o_i = [x < 2^(p0 + i)] for
 * i = 0 .. p1 - p0, for x read as a (p1 + 1)-bit word (bits above p1 ignored: for x in
 * [0, 2^(p1 + 1)) it is the comparison). How:
 *   1. the bits s_p of x = c + r for p in [p0, p1]: s_p = c_p ^ r_p ^ C_p with the carries C_p
 *      of every prefix [0, p) from one Sklansky prefix network of (generate, propagate) pairs
 *      over positions 0 .. p1 - 1 (ceil(log2 p1) levels);
 *   2. o_i = AND of NOT s_q over q = p0 + i .. p1: a suffix AND over the k = p1 - p0 + 1 bits,
 *      another Sklansky network (ceil(log2 k) levels).
 * One comparison circuit for all k thresholds instead of k comparisons: at p0 = 1, p1 = 30
 * (f = 16 over [2^-16, 2^15)) 194 AND gates per 64 elements instead of 30 x 118.
 */
#ifndef VEIL_TASKS_BITCIRC_H
#define VEIL_TASKS_BITCIRC_H

#include <stddef.h>
#include <stdint.h>

#define VEIL_BITC_MAX_BITS 63   /* bit positions a circuit may read (c_q, r_q for q < 63) */
#define VEIL_BITC_MAX_LEVELS 16 /* AND levels */
#define VEIL_BITC_MAX_OUT 128

enum veil_bitc_kind {
    VEIL_BITC_RIN,  /* dst = r_b (this party's XOR share of bit b of the mask) */
    VEIL_BITC_CAND, /* dst = c_b & a (c public: local) */
    VEIL_BITC_CXOR, /* dst = c_b ^ a (party 0 adds the public bit) */
    VEIL_BITC_XOR,  /* dst = a ^ b */
    VEIL_BITC_NOT,  /* dst = ~a (party 0 flips) */
    VEIL_BITC_AND,  /* dst = a & b: a gate of veil_mpc_and at level `level` */
};

struct veil_bitc_op {
    uint8_t kind;
    uint8_t level;      /* AND: its level (>= 1); free gates: the level after whose ANDs they run */
    uint16_t dst, a, b; /* wires; b is the bit position for RIN, CAND and CXOR */
};

/*
 * A built circuit: ops sorted by level, at each level its ANDs first (the j-th AND of level l
 * writes row j of that level's AND result), then the free gates that need them. Built once per
 * (p0, p1) and kept for the process's life (veil_bitc_octave): tasks read it by pointer.
 */
struct veil_bitc {
    int nbits;                          /* positions read: c_q, r_q for q < nbits */
    int nwires;                         /* rows of the wire state */
    int levels;                         /* AND levels (rounds) */
    int nand[VEIL_BITC_MAX_LEVELS + 1]; /* ANDs per level 1..levels (nand[0] = 0) */
    int nand_total;
    int nout;
    uint16_t out[VEIL_BITC_MAX_OUT]; /* output wires */
    int nops;
    struct veil_bitc_op ops[]; /* nops */
};

/**
 * Gate o on 64 bits at once, the semantics every evaluator shares (the party codelets of
 * octave_bits.c and veil_bitc_eval): cbits[q] and rbits[q] are the public bits and this party's
 * share of the mask's bits at position q (read by RIN, CAND and CXOR only: level 0), w[j * stride]
 * is wire j's word, pub is all ones at party 0 (the public terms' adder) and 0 at the others.
 */
static inline uint64_t veil_bitc_gate(const struct veil_bitc_op *o, const uint64_t *cbits,
                                      const uint64_t *rbits, const uint64_t *w, size_t stride,
                                      uint64_t pub)
{
    const uint64_t *a = w + (size_t)o->a * stride;
    switch (o->kind) {
    case VEIL_BITC_RIN:
        return rbits[o->b];
    case VEIL_BITC_CAND:
        return cbits[o->b] & *a;
    case VEIL_BITC_CXOR:
        return (cbits[o->b] & pub) ^ *a;
    case VEIL_BITC_XOR:
        return *a ^ w[(size_t)o->b * stride];
    case VEIL_BITC_NOT:
        return *a ^ pub;
    default:
        return *a & w[(size_t)o->b * stride];
    }
}

/**
 * The octave circuit above for 1 <= p0 <= p1 < VEIL_BITC_MAX_BITS and p1 - p0 < VEIL_BITC_MAX_OUT
 * (NULL otherwise, or out of memory): built on first use, then shared (thread-safe; never freed).
 */
const struct veil_bitc *veil_bitc_octave(int p0, int p1);

/** Plaintext evaluation of circuit b on one element: c and r are the public and the mask's bit
 * words (bit q = position q), out[i] = output i (0 or 1). For the tests and the models. */
void veil_bitc_eval(const struct veil_bitc *b, uint64_t c, uint64_t r, uint8_t *out);

#endif

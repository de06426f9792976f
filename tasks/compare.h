/*
 * compare.h — secure comparison (LTZ / MSB), B2A of bits, ReLU and selection over arithmetic
 * shares in Z_2^64 (internal). Every function is SPMD (parties and the dealer call it with the
 * same shapes), requests its correlated randomness, submits tasks and messages, and returns.
 *
 * LTZ (x < 0, x read as two's complement over the full ring): material CMPMASK(n) (r
 * arithmetic, <r> XOR-shared) and CMPPROD (products of r's bits, bit-sliced), then
 *   round 1      open c = x - r (public), so x = c + r;
 *   rounds 2, 3  msb(x) = c_63 ^ r_63 ^ carry, carry = carry-out of the 63-bit addition
 *                c_low + r_low, by the generate/propagate circuit over the leaves g_i = c_i & r_i,
 *                p_i = c_i ^ r_i in 3 levels of 4-to-1 groups (63 -> 16 -> 4 -> 1),
 *                (G, P) = (G3 ^ P3 G2 ^ P3 P2 G1 ^ P3 P2 P1 G0, P3 P2 P1 P0)
 *                (tasks/carry4_common.h). Level 0 is LOCAL: with c public each leaf is a public
 *                function of one mask bit, so its groups are linear in the dealer's products of
 *                r's bits (CMPPROD). Levels 1 and 2 take a round each: a group's 7 product inputs
 *                are opened against the masks of a CARRY4 item and the dealer's mask products
 *                make every monomial local. Words opened per 64 elements: 7 per group, 4 + 1 = 5
 *                groups, 35 (one CARRY4 item per level);
 *   round 4      B2A of msb = (c_63 ^ rb_63) ^ carry (binary, already packed 64 to a word by
 *                the bit-slicing) with a BIT item (shared random bit beta): open f = msb ^ beta
 *                (packed: one word per 64 elements), then [msb] = f + [beta] - 2 f [beta].
 * The sign bit c_63 ^ r_63 is folded in the BINARY domain (rb's bit 63, c public), so the only
 * conversion is that one B2A of the final bit: no separate B2A of r_63 and no extra product.
 * ReLU / MAX IN LTZ'S ROUNDS AND BYTES. Since [x < 0] = f XOR beta and beta is material, the
 * product x * beta does not wait for f, and after round 4, x [x >= 0] = f ? x beta : x - x beta
 * is local. Round 1 made c = x - r public, so x beta = c [beta] + [r beta]: local, with an RBETA
 * item (the dealer's shares of r beta, tasks/preproc.h). ReLU and the elementwise max therefore
 * take LTZ's 4 rounds and LTZ's bytes. veil_mpc_relu_of compares s but multiplies x, so its
 * x * beta is a Beaver product whose two opens travel in round 1 together with c.
 * Elements are bit-sliced per tile (one word = one bit position of 64 elements), so tiles must
 * be a multiple of 64 elements (or the tensor one tile). Each tile runs its own circuit: its
 * level-k opens are their own messages, so levels of different tiles overlap (a wavefront).
 *
 * COSTS (per party; N parties; n elements; W = sum over tiles of ceil(tile_numel / 64), the
 * 64-bit words of one packed bit per element, W = n / 64 when 64 divides every tile):
 *   veil_mpc_ltz    rounds 4;  bytes (N-1) * 8 * (n + 35 W + W) = (N-1) * 8 * (n + 36 W)
 *                   (N = 2, 64 | n: 12.5 B per element; CrypTen: 216 B)
 *   veil_mpc_b2a    rounds 1;  bytes (N-1) * 8 * W
 *   veil_mpc_relu   rounds 4;  bytes (N-1) * 8 * (n + 36 W), LTZ's (x * beta is local:
 *                   N = 2: 12.5 B per element; CrypTen: 9 rounds, 232 B)
 *   veil_mpc_relu_of rounds 4; bytes (N-1) * 8 * (3 n + 36 W) (LTZ on s + the Beaver product
 *                   x * beta in LTZ's first round: N = 2: 28.5 B per element)
 *   veil_mpc_relu_trunc rounds 4; bytes as ReLU (relu(trunc(u)), the truncation local: below)
 *   veil_mpc_max    rounds 4;  bytes as ReLU (max(x, y) = y + relu(x - y))
 *   veil_mpc_select rounds 1;  bytes (N-1) * 16 * n
 * The dealer sends the designated party, per LTZ: 2 n (CMPMASK) + 176 W (CMPPROD: 11 words per
 * level-0 group) + n (BIT) + 110 W (CARRY4 items: 22 words per group, 88 W and 22 W) words;
 * ReLU / max add n (RBETA: each party stores n words), veil_mpc_relu_of n (BEAVER: 3 n stored),
 * veil_mpc_relu_trunc 3 n (CMPTRUNC: 3 n stored). Items are requested in that order: CMPMASK,
 * CMPPROD, BIT, the two CARRY4s, then RBETA, BEAVER or CMPTRUNC.
 */
#ifndef VEIL_TASKS_COMPARE_H
#define VEIL_TASKS_COMPARE_H

#include "tasks/mpc.h"

/** Words LTZ opens per 64-element block besides c's n (the carry circuit's 35 and the B2A's
 * 1), and the LTZ and ReLU rounds. */
#define VEIL_LTZ_BLOCK_WORDS 36
#define VEIL_LTZ_ROUNDS 4
#define VEIL_RELU_ROUNDS 4

/**
 * b = [x < 0] as arithmetic 0/1 shares (initialised here like x). x arithmetic, tiles a multiple
 * of 64 or one tile (VEIL_ERR_INVAL otherwise). Exact for every x in Z_2^64. Costs above.
 */
int veil_mpc_ltz(veil_mpc_t *m, const struct veil_sec *x, struct veil_sec *b);

/**
 * out = arithmetic 0/1 shares of binary-shared bits (bit 0 of each word; the other bits are
 * ignored), initialised like bits; same tiling rule as LTZ. Costs above.
 */
int veil_mpc_b2a(veil_mpc_t *m, const struct veil_sec *bits, struct veil_sec *out);

/**
 * y = max(x, 0) = x * [x >= 0]; when mask is non-NULL it receives the arithmetic 0/1 shares of
 * [x >= 0] (the derivative, for the backward pass dy * mask). Outputs initialised like x.
 * Costs above.
 */
int veil_mpc_relu(veil_mpc_t *m, const struct veil_sec *x, struct veil_sec *y,
                  struct veil_sec *mask);

/**
 * y = x [s >= 0] (no mask): the sign from s, the value from x, same layout (VEIL_ERR_SHAPE
 * otherwise). For y = relu(trunc(u)): the LTZ on u starts with the truncation's open, x =
 * veil_mpc_trunc_unmarked(u) feeds only the product with beta, so the pair takes ReLU's 4 rounds
 * (bytes: veil_mpc_relu_of's above plus the truncation's; veil_mpc_relu_trunc does the pair in
 * LTZ's bytes alone), and [trunc(u) >= 0] and [u >= 0] differ only where trunc(u) = 0, whose
 * product is 0 either way: y is bit for bit relu(trunc(u)).
 */
int veil_mpc_relu_of(veil_mpc_t *m, const struct veil_sec *s, const struct veil_sec *x,
                     struct veil_sec *y);

/**
 * y = relu(trunc(u)) = trunc(u) [u >= 0] for a fixed-point product u (|u| < 2^62, trunc.h's
 * range), f in [1, 62] (VEIL_ERR_INVAL otherwise): the truncation takes no round and no byte of
 * its own. LTZ's first round opens c = u - r; trunc(u) is linear in [r >> f] and [r >> 63] with
 * public coefficients, and trunc(u) beta in [(r >> f) beta] and [(r >> 63) beta], which a
 * CMPTRUNC item holds (tasks/trunc_common.h, veil_trunc_neg_elem). trunc(u) - floor(u / 2^f) is
 * 0 or 1, as veil_mpc_trunc's; [u >= 0] and [trunc(u) >= 0] differ only where trunc(u) = 0, so y
 * is relu of that truncation. y initialised like u. Rounds 4, bytes LTZ's: (N-1) * 8 * (n + 36 W)
 * (N = 2: 12.5 B per element, against 36.5 for veil_mpc_trunc_unmarked and veil_mpc_relu_of);
 * the dealer sends 3 n words for the CMPTRUNC item (each party stores 3 n).
 */
int veil_mpc_relu_trunc(veil_mpc_t *m, const struct veil_sec *u, int f, struct veil_sec *y);

/** z = max(x, y) elementwise (signed; |x - y| < 2^63); same layout; z like x. Costs above. */
int veil_mpc_max(veil_mpc_t *m, const struct veil_sec *x, const struct veil_sec *y,
                 struct veil_sec *z);

/** z = b ? x : y = y + b (x - y) for arithmetic 0/1 shares b; all the same layout. */
int veil_mpc_select(veil_mpc_t *m, const struct veil_sec *b, const struct veil_sec *x,
                    const struct veil_sec *y, struct veil_sec *z);

#endif

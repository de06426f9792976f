/*
 * preproc.h — the offline phase's correlated randomness (internal): item kinds and their share
 * layouts, the seeded dealer's correction computation, each party's local expansion, and the
 * per-party preprocessing file (writer, and a reader that hands out items in plan order).
 *
 * MODEL. N parties (2..16) and a dealer. Party p shares a 128-bit seed s_p with the dealer and
 * expands every share it holds from s_p with the PRG (veil_prg_*, AES-128-CTR). Only the
 * "corrected" parts of an item cannot be pure PRG output (c = a*b is not random given a and b):
 * for those one designated party d (layout.designated, N-1 by default, fixed per session) holds
 * the correction instead of PRG words, and the dealer sends d ONE correction tensor per item.
 *
 * STREAM LAYOUT (the contract between dealer and parties). Given the session id sid (16 bytes,
 * sid_lo = bytes 0..7 and sid_hi = bytes 8..15 read big-endian) and item (kind K, index i):
 *     root_p  = veil_seed_derive(s_p, label = sid_lo, index = sid_hi)
 *     seed_pi = veil_seed_derive(root_p, label = VEIL_PREPROC_LABEL | K, index = i)
 * and party p's stream for the item is PRG(seed_pi) from word 0. The item's parts (table below)
 * occupy consecutive word ranges of that stream in part order: part j starts at word
 * sum_{j' < j} numel(j'). For a PRG part, party p's share is its stream words over the part's
 * range. For a corrected part, every party q != d takes its stream words, and party d's share
 * is the correction itself (its stream words over that range are skipped, never used):
 *     arithmetic: corr = secret - sum_{q != d} stream_q      (mod 2^64)
 *     binary:     corr = secret XOR (XOR_{q != d} stream_q)
 * The correction tensor is the corrected parts' corrections, concatenated in part order.
 * The item index must be unique within a session (it is the item's position in the plan's list);
 * a repeated (kind, index) would repeat randomness. Mixing the session id into root_p makes a
 * seed accidentally reused across sessions still yield independent material.
 *
 * WEIGHT STREAM (the weight-stationary kinds MATMUL_WS and CONV_WS, tasks/wstat.h). Their B part
 * is not drawn from the item's stream: every item naming weight id wid takes party p's words
 * [0, numel(B)) of
 *     wseed_p = veil_seed_derive(root_p, label = VEIL_PREPROC_LABEL_WEIGHT, index = wid)
 * so every such item of the session carries the SAME B = sum_p PRG(wseed_p) (one mask per weight
 * tensor for the whole session; uniform, unknown to any N-1 parties). The B part is never
 * corrected (no party's words are replaced), and the item stream's words over B's range are
 * skipped, never used; the other parts (fresh A, corrected C = A.B) follow the item's stream as
 * for MATMUL / CONV. The weight label differs from every item label, so a weight stream never
 * overlaps an item stream. A wid must name one weight tensor per session: the online layer
 * refuses a second claim of the same wid (tasks/wstat.h says why).
 *
 * ITEMS (n = element count; parts in order; A = arithmetic share, B = binary/XOR share;
 * * = corrected; "words" are 64-bit):
 *   BEAVER  (n)            a[n] A, b[n] A, *c[n] A = a*b
 *   MATMUL  (m, k, n)      A[m*k] A, B[k*n] A, *C[m*n] A = A.B (row-major)
 *   CONV    (batch, c, h, w, oc, kh, kw, stride_h, stride_w, pad_h, pad_w)
 *                          X[batch*c*h*w] A (NCHW), W[oc*c*kh*kw] A (OIHW),
 *                          *Y[batch*oc*oh*ow] A = conv2d(X, W) (NCHW, zero padding, no dilation),
 *                          oh = (h + 2 pad_h - kh) / stride_h + 1, ow likewise; pad < kernel,
 *                          each of c..pad_w below 2^32 (the im2col geometry is 32-bit)
 *   MATMUL_WS (m, k, n, wid)  A[m*k] A, B[k*n] A (weight stream of wid), *C[m*n] A = A.B
 *   CONV_WS (CONV's 11 params, wid)  X A, W A (weight stream of wid), *Y A = conv2d(X, W)
 *                          (wid: any 64-bit value, 0 included; the other params as MATMUL/CONV)
 *   SQUARE  (n)            a[n] A, *a2[n] A = a*a
 *   AND     (n words)      a[n] B, b[n] B, *c[n] B = a AND b (64 independent gates per word)
 *   TRUNC   (n, f)         r[n] A (r uniform in Z_2^64), *r_hi[n] A = r >> f,
 *                          *r_63[n] A = r >> 63 (0 or 1). f in [1, 62], normally layout's f.
 *   BIT     (n)            *b[n] A (0 or 1), bp[ceil(n/64)] B: the same bits packed, bit j of
 *                          bp[i] is b[64 i + j] (LSB first); the padding bits of the last word
 *                          are 0 in every party's share. The bits are the XOR of the parties'
 *                          bp streams (padding masked), so they are uniform and unknown to any
 *                          N-1 parties; [b] is the corrected part.
 *   CMPMASK (n)            r[n] A (r uniform), *rb[n] B (XOR sharing of the same r: its bits are
 *                          r's bit decomposition; bit slicing is the online layer's job),
 *                          *r_63[n] A = r >> 63 (so msb(x) = c_63 XOR r_63 XOR borrow can be
 *                          taken to arithmetic form for c_63 XOR r_63 locally: c_63 + r_63 -
 *                          2 c_63 r_63, c_63 public).
 *   CARRY4  (n records)    a[7n] B, *pr[22n] B: record w is a[7w .. 7w + 6], seven uniform
 *                          masks, and pr[22w .. 22w + 21], row r the AND of the masks of the
 *                          inputs in set VEIL_C4_PROD_SETS[r] (tasks/carry4_common.h): one
 *                          4-to-1 group of the LTZ carry circuit in one round. Its parts are
 *                          tiled by records (tasks/mpc.h, veil_mpc_material).
 *   CMPPROD (n, tile, k)   *pr[176 W] B, W = sum over the tiles of tile elements (the last one
 *                          shorter) of ceil(tile_numel / 64): products of the bits of the mask r
 *                          of CMPMASK item #k (same session; n its element count), bit-sliced:
 *                          block w (64 elements of a tile, zeros past its end) holds 16 groups
 *                          of 11 words, word (w, j, row) with bit l = AND over q in set t of bit
 *                          4 j + q of r of the block's element l, t the row'th subset of size
 *                          >= 2 of {0, 1, 2, 3} in ascending order (tasks/carry4_common.h: the
 *                          carry circuit's level 0 without a round). Its part tiles by blocks:
 *                          176 ceil(tile / 64) words per tile of the item's own tile.
 *   PRODK   (n records, k) a[k n] A, *pr[(2^k - k - 1) n] A: record w is a[k w .. k w + k - 1],
 *                          k uniform masks, and pr[P w .. P w + P - 1] (P = 2^k - k - 1), row r
 *                          the product of the masks in the r'th subset of size >= 2 of
 *                          {0..k-1} in ascending order (tasks/prodk_common.h): a product of k
 *                          factors in one round. 2 <= k <= 5.
 *   RBETA   (n, k, j)      *rb[n] A = r[i] * b[i]: the products of the mask r of CMPMASK item #k
 *                          and the bits b of BIT item #j (same session, both of n elements).
 *                          Once LTZ has opened c = x - r, a product x * b is c [b] + [r b],
 *                          local (ReLU and the max's tournament, tasks/compare.h). Its part tiles
 *                          like the two items'.
 *   CMPTRUNC (n, k, j, f)  *rhi[n] A = r[i] >> f, *rhib[n] A = (r[i] >> f) b[i],
 *                          *r63b[n] A = (r[i] >> 63) b[i]: r and b as RBETA's, f in [1, 62]. Once
 *                          LTZ has opened c = x - r, trunc(x) is linear in [r >> f] and CMPMASK's
 *                          [r >> 63] with public coefficients, and trunc(x) * b linear in the two
 *                          products: ReLU of a truncation with no round and no byte of its own
 *                          (veil_mpc_relu_trunc, tasks/compare.h). Its parts tile like RBETA's.
 *
 * SIZES (words; multiply by 8 for bytes; N parties). "dealer" = correction words sent to d per
 * item, "party" = words each party stores (the expanded share; d stores the same count):
 *   BEAVER  n:         dealer n,            party 3n
 *   MATMUL  m,k,n:     dealer m n,          party m k + k n + m n
 *   CONV:              dealer B OC OH OW,   party B C H W + OC C KH KW + B OC OH OW
 *   SQUARE  n:         dealer n,            party 2n
 *   AND     n:         dealer n,            party 3n
 *   TRUNC   n:         dealer 2n,           party 3n
 *   BIT     n:         dealer n,            party n + ceil(n/64)
 *   CMPMASK n:         dealer 2n,           party 3n
 *   CARRY4  n:         dealer 22n,          party 29n
 *   CMPPROD n,tile:    dealer 176 W,        party 176 W
 *   PRODK   n,k:       dealer P n,          party (k + P) n, P = 2^k - k - 1
 *   RBETA   n:         dealer n,            party n
 *   CMPTRUNC n:        dealer 3n,           party 3n
 *   MATMUL_WS, CONV_WS: as MATMUL and CONV (the weight-stationary gain is online: E = W - B is
 *                      opened once per session instead of once per item; see tasks/wstat.h)
 * Total dealer traffic per item is the dealer column (one tensor, to d only), independent of N;
 * the seeds cost 16 bytes per party per session. A file adds 88 + 128 * items + 32 bytes.
 *
 * TRUSTED FIRST PARTY (development only: party 0 learns every secret). Party 0 generates every
 * seed (veil_seed_random), sends s_p to party p, sets layout.designated = 0, and for each item
 * calls veil_preproc_dealer_correction itself with all seeds, then veil_preproc_party_expand as
 * party 0 with that correction. Other parties call veil_preproc_party_expand with their seed and
 * NULL exactly as with a dealer: no correction ever travels.
 *
 * Threads: all functions are reentrant; distinct readers/writers may be used from distinct
 * threads. Nothing here logs a secret.
 */
#ifndef VEIL_TASKS_PREPROC_H
#define VEIL_TASKS_PREPROC_H

#include "veil.h"

#include <stddef.h>
#include <stdint.h>

#define VEIL_PREPROC_MAX_PARTIES 16
#define VEIL_PREPROC_MAX_PARAMS 12
#define VEIL_PREPROC_MAX_PARTS 3
#define VEIL_PREPROC_SID_BYTES 16
#define VEIL_PREPROC_DIGEST_BYTES 32
/** File format v2 sizes (layout below, under storage). */
#define VEIL_PREPROC_FILE_HEADER_BYTES 88
#define VEIL_PREPROC_FILE_ENTRY_BYTES 128
/** High bits of the seed-derivation label ("VEILPR" then 0, 0); the low byte is the kind. */
#define VEIL_PREPROC_LABEL UINT64_C(0x5645494c50520000)
/** Seed-derivation label of the weight streams ("VEILWT" then 0, 0); the index is the wid. */
#define VEIL_PREPROC_LABEL_WEIGHT UINT64_C(0x5645494c57540000)
/** Largest share or correction of one item, in words (2^36 words = 512 GiB): sanity bound. */
#define VEIL_PREPROC_MAX_ITEM_WORDS (UINT64_C(1) << 36)

enum veil_preproc_kind {
    VEIL_PREPROC_BEAVER = 1,
    VEIL_PREPROC_MATMUL,
    VEIL_PREPROC_CONV,
    VEIL_PREPROC_SQUARE,
    VEIL_PREPROC_AND,
    VEIL_PREPROC_TRUNC,
    VEIL_PREPROC_BIT,
    VEIL_PREPROC_CMPMASK,
    /* appended: files store kinds, never renumber */
    VEIL_PREPROC_MATMUL_WS,
    VEIL_PREPROC_CONV_WS,
    VEIL_PREPROC_CARRY4,
    VEIL_PREPROC_CMPPROD,
    VEIL_PREPROC_PRODK,
    VEIL_PREPROC_RBETA,
    VEIL_PREPROC_CMPTRUNC,
    VEIL_PREPROC_KIND_COUNT
};

/* Part indices, per kind (see the table above). */
/* BEAVER, MATMUL, CONV, AND and the weight-stationary MATMUL_WS, CONV_WS: */
enum { VEIL_PRE_A = 0, VEIL_PRE_B = 1, VEIL_PRE_C = 2 };
enum { VEIL_PRE_SQ_A = 0, VEIL_PRE_SQ_A2 = 1 };                       /* SQUARE */
enum { VEIL_PRE_TR_R = 0, VEIL_PRE_TR_RHI = 1, VEIL_PRE_TR_R63 = 2 }; /* TRUNC */
enum { VEIL_PRE_BIT_A = 0, VEIL_PRE_BIT_B = 1 };                      /* BIT */
enum { VEIL_PRE_CM_R = 0, VEIL_PRE_CM_RB = 1, VEIL_PRE_CM_R63 = 2 };  /* CMPMASK */
enum { VEIL_PRE_C4_A = 0, VEIL_PRE_C4_PROD = 1 };                     /* CARRY4 */
enum { VEIL_PRE_PK_A = 0, VEIL_PRE_PK_PROD = 1 };                     /* PRODK */

/* Parameter indices of a CONV item. */
enum {
    VEIL_PRE_CONV_BATCH,
    VEIL_PRE_CONV_C,
    VEIL_PRE_CONV_H,
    VEIL_PRE_CONV_W,
    VEIL_PRE_CONV_OC,
    VEIL_PRE_CONV_KH,
    VEIL_PRE_CONV_KW,
    VEIL_PRE_CONV_SH,
    VEIL_PRE_CONV_SW,
    VEIL_PRE_CONV_PH,
    VEIL_PRE_CONV_PW,
    VEIL_PRE_CONV_WID /* CONV_WS only */
};
/* Parameter indices of a MATMUL item (A is m x k, B is k x n, C m x n); MATMUL_WS adds the weight
 * id. */
enum {
    VEIL_PRE_MATMUL_M = 0,
    VEIL_PRE_MATMUL_K = 1,
    VEIL_PRE_MATMUL_N = 2,
    VEIL_PRE_MATMUL_WID = 3 /* MATMUL_WS only */
};
/* Parameter indices of the elementwise kinds: BEAVER, SQUARE, BIT and CMPMASK have their element
 * count only, AND its count of 64-bit words, CARRY4 its count of records, TRUNC its element count
 * then the shift in bits. */
enum { VEIL_PRE_N = 0, VEIL_PRE_TRUNC_BITS = 1 };
/* Parameter index of a PRODK item's factor count (the record count is VEIL_PRE_N). */
enum { VEIL_PRE_PRODK_K = 1 };
/* Parameter indices of a CMPPROD item (the element count is VEIL_PRE_N). */
enum { VEIL_PRE_CMPPROD_TILE = 1, VEIL_PRE_CMPPROD_MASK = 2 };
/* Parameter indices of an RBETA item (the element count is VEIL_PRE_N). */
enum { VEIL_PRE_RBETA_MASK = 1, VEIL_PRE_RBETA_BIT = 2 };
/* CMPTRUNC: the mask and bit indices as RBETA's, then the shift; its parts. */
enum { VEIL_PRE_CMPTRUNC_BITS = 3 };
enum { VEIL_PRE_CT_RHI = 0, VEIL_PRE_CT_RHIB = 1, VEIL_PRE_CT_R63B = 2 };

/** The session-wide layout; identical at the dealer and every party. */
struct veil_preproc_layout {
    int nparties;   /* N in [2, 16] */
    int designated; /* party that holds the corrections, in [0, N); N-1 with a dealer */
    int frac_bits;  /* fixed-point f in [0, 48] (TRUNC items normally use it) */
    uint8_t session_id[VEIL_PREPROC_SID_BYTES];
};

/**
 * One item of correlated randomness: kind, its position index in the session's item list, and
 * its parameters (p[0..] as in the table above; unused entries must be 0 so that comparisons
 * and digests are exact). Build items with the veil_preproc_item_* helpers.
 */
struct veil_preproc_item {
    enum veil_preproc_kind kind;
    uint64_t index;
    uint64_t p[VEIL_PREPROC_MAX_PARAMS];
};

/** Description of an item's parts: what veil_preproc_item_describe computes from its params. */
struct veil_preproc_desc {
    int nparts;
    struct {
        size_t numel;              /* words in the part */
        enum veil_share_kind form; /* VEIL_SHARE_ARITH or VEIL_SHARE_BINARY */
        int corrected;             /* 1: party d holds the correction here */
        int weight;                /* 1: words [0, numel) of the item's weight stream */
        size_t offset;             /* first word in the share (= in the item's PRG stream) */
    } part[VEIL_PREPROC_MAX_PARTS];
    size_t share_words;      /* words of every party's share (sum of the parts) */
    size_t correction_words; /* words the dealer sends to the designated party */
};

/**
 * One party's share of one item. words (owned, 64-byte aligned, share_words long) holds the
 * parts back to back; part[j] points into it. Zero-initialise before first use; release with
 * veil_preproc_share_clear (which wipes). Functions that fill a share clear it first, so one
 * struct can be refilled in a loop.
 */
struct veil_preproc_share {
    struct veil_preproc_item item;
    int nparts;
    uint64_t *words;
    size_t nwords;
    uint64_t *part[VEIL_PREPROC_MAX_PARTS];
    size_t part_numel[VEIL_PREPROC_MAX_PARTS];
};

/* ---- layout, items, sizes (preproc_item.c) */

/**
 * Sets a layout for a dealer session: nparties, designated = nparties - 1, frac_bits and the
 * session id (copied). Returns VEIL_ERR_INVAL (message) when a value is out of range.
 */
int veil_preproc_layout_init(struct veil_preproc_layout *layout, int nparties, int frac_bits,
                             const uint8_t session_id[VEIL_PREPROC_SID_BYTES]);

/** Checks a layout's ranges: VEIL_OK or VEIL_ERR_INVAL with a message. */
int veil_preproc_layout_check(const struct veil_preproc_layout *layout);

/** Item constructors: zero every unused parameter. No validation (describe does it). */
struct veil_preproc_item veil_preproc_item_beaver(uint64_t index, uint64_t n);
struct veil_preproc_item veil_preproc_item_matmul(uint64_t index, uint64_t m, uint64_t k,
                                                  uint64_t n);
struct veil_preproc_item veil_preproc_item_conv(uint64_t index, uint64_t batch, uint64_t c,
                                                uint64_t h, uint64_t w, uint64_t oc, uint64_t kh,
                                                uint64_t kw, uint64_t stride, uint64_t pad);
struct veil_preproc_item veil_preproc_item_square(uint64_t index, uint64_t n);
struct veil_preproc_item veil_preproc_item_and(uint64_t index, uint64_t nwords);
struct veil_preproc_item veil_preproc_item_trunc(uint64_t index, uint64_t n, uint64_t frac_bits);
struct veil_preproc_item veil_preproc_item_bit(uint64_t index, uint64_t n);
struct veil_preproc_item veil_preproc_item_cmpmask(uint64_t index, uint64_t n);
struct veil_preproc_item veil_preproc_item_carry4(uint64_t index, uint64_t nrecords);
/** tile: elements per tile, 1..n (n: one tile); mask_index: the CMPMASK item's index. */
struct veil_preproc_item veil_preproc_item_cmpprod(uint64_t index, uint64_t n, uint64_t tile,
                                                   uint64_t mask_index);
struct veil_preproc_item veil_preproc_item_prodk(uint64_t index, uint64_t nrecords, uint64_t k);
/** mask_index, bit_index: the CMPMASK and BIT items (of n elements each) whose r and b it
 * multiplies. */
struct veil_preproc_item veil_preproc_item_rbeta(uint64_t index, uint64_t n, uint64_t mask_index,
                                                 uint64_t bit_index);
/** As RBETA's indices; frac_bits the truncation's shift, 1..62. */
struct veil_preproc_item veil_preproc_item_cmptrunc(uint64_t index, uint64_t n, uint64_t mask_index,
                                                    uint64_t bit_index, uint64_t frac_bits);
/** 64-element blocks of n elements tiled by tile (each tile padded to whole blocks): the words of
 * one packed bit per element, W = sum over tiles of ceil(tile_numel / 64) (0 when n or tile is
 * 0). The bit-sliced layout of the comparison protocols and of CMPPROD. */
uint64_t veil_preproc_sliced_blocks(uint64_t n, uint64_t tile);
/** Weight-stationary items (WEIGHT STREAM above): wid names the weight tensor. */
struct veil_preproc_item veil_preproc_item_matmul_ws(uint64_t index, uint64_t m, uint64_t k,
                                                     uint64_t n, uint64_t wid);
struct veil_preproc_item veil_preproc_item_conv_ws(uint64_t index, uint64_t batch, uint64_t c,
                                                   uint64_t h, uint64_t w, uint64_t oc, uint64_t kh,
                                                   uint64_t kw, uint64_t stride, uint64_t pad,
                                                   uint64_t wid);
/** 1 for the kinds with a weight-stream part (MATMUL_WS, CONV_WS), storing its wid in *wid. */
int veil_preproc_item_wid(const struct veil_preproc_item *item, uint64_t *wid);

/** Short lower-case name of a kind ("beaver", ...), "unknown" for others. Never NULL. */
const char *veil_preproc_kind_name(int kind);

/**
 * Validates an item (known kind, every size >= 1, unused params 0, shapes consistent, sizes
 * within VEIL_PREPROC_MAX_ITEM_WORDS without overflow) and describes its parts. Returns VEIL_OK,
 * or VEIL_ERR_INVAL / VEIL_ERR_SHAPE / VEIL_ERR_RANGE with a message naming the parameter. Safe
 * on items read from untrusted files.
 */
int veil_preproc_item_describe(const struct veil_preproc_item *item,
                               struct veil_preproc_desc *desc);

/** A CONV item's output height and width from its params p (already in range, as describe
 *  checks): VEIL_OK, or VEIL_ERR_SHAPE when the padding or the kernel does not fit. Shared by
 *  preproc_item.c (describe) and preproc_gen.c (the dealer's im2col). */
int veil_preproc_conv_out(const uint64_t *p, uint64_t *oh, uint64_t *ow);

/** Words of the dealer's correction for item (0 when the item is invalid). */
size_t veil_preproc_correction_words(const struct veil_preproc_item *item);
/** Words of each party's share of item (0 when the item is invalid). */
size_t veil_preproc_share_words(const struct veil_preproc_item *item);

/**
 * Totals for a list of items (what a plan consumes): the dealer's correction words (its traffic
 * to the designated party, all items), the words of each party's shares, and the bytes of each
 * party's file (the words it stores * 8 plus the format's overhead: a weight's mask only in its
 * first item). Any output may be NULL. Returns VEIL_OK, or the first invalid item's error (the
 * message names its position).
 */
int veil_preproc_items_size(const struct veil_preproc_item *items, size_t nitems,
                            uint64_t *correction_words, uint64_t *share_words,
                            uint64_t *file_bytes);

/**
 * Formats an item as "kind #index (params)" into buf (always NUL-terminated) for messages.
 * Returns buf.
 */
const char *veil_preproc_item_format(const struct veil_preproc_item *item, char *buf, size_t size);

/**
 * SHA-256 of a list of items (kind, index, params, little-endian), usable as the plan digest
 * when the plan is nothing but its item list. VEIL_ERR_CRYPTO if OpenSSL fails.
 */
int veil_preproc_items_digest(const struct veil_preproc_item *items, size_t nitems,
                              uint8_t digest[VEIL_PREPROC_DIGEST_BYTES]);

/* ---- generation (preproc_gen.c; the share buffers, veil_preproc_share_*, preproc_item.c) */

/**
 * Dealer side: computes item's correction for the designated party from every party's seed
 * (seeds[p] for p in [0, N)) into out[0, out_words); out_words must be at least
 * veil_preproc_correction_words(item). Deterministic in (layout, item, seeds). Temporary memory:
 * elementwise kinds O(1); MATMUL m k + k n; CONV the input, weight and one image's im2col.
 * Returns VEIL_OK, VEIL_ERR_INVAL (bad layout/item/NULL), VEIL_ERR_RANGE (out too small),
 * VEIL_ERR_NOMEM, VEIL_ERR_CRYPTO. The secret values never leave this function except folded
 * into the correction; temporaries are wiped.
 */
int veil_preproc_dealer_correction(const struct veil_preproc_layout *layout,
                                   const struct veil_preproc_item *item,
                                   const uint8_t (*seeds)[VEIL_SEED_BYTES], uint64_t *out,
                                   size_t out_words);

/**
 * Party side: expands party's share of item from its own seed into *out (cleared, then
 * allocated). correction must be the dealer's correction (correction_words(item) words) when
 * party == layout->designated and NULL otherwise (VEIL_ERR_INVAL if not). Returns VEIL_OK or
 * VEIL_ERR_INVAL / VEIL_ERR_NOMEM / VEIL_ERR_CRYPTO; on error *out is empty.
 */
int veil_preproc_party_expand(const struct veil_preproc_layout *layout,
                              const struct veil_preproc_item *item, int party,
                              const uint8_t seed[VEIL_SEED_BYTES], const uint64_t *correction,
                              struct veil_preproc_share *out);

/**
 * As veil_preproc_party_expand, into a share already initialised for item with
 * veil_preproc_share_init (its words are overwritten in place, so StarPU handles registered on
 * them stay valid). Used by the online layer's expansion task. Same errors; on error the words
 * are unspecified.
 */
int veil_preproc_party_fill(const struct veil_preproc_layout *layout,
                            const struct veil_preproc_item *item, int party,
                            const uint8_t seed[VEIL_SEED_BYTES], const uint64_t *correction,
                            struct veil_preproc_share *out);

/**
 * The item's own stream seed for a party (the STREAM LAYOUT above): child = derive(derive(s_p,
 * sid), label | kind, index). Wipe it after use.
 */
int veil_preproc_item_seed(const struct veil_preproc_layout *layout,
                           const struct veil_preproc_item *item,
                           const uint8_t seed[VEIL_SEED_BYTES], uint8_t out[VEIL_SEED_BYTES]);

/**
 * A party's weight-stream seed for weight id wid (WEIGHT STREAM above): derive(derive(s_p, sid),
 * VEIL_PREPROC_LABEL_WEIGHT, wid). Wipe it after use.
 */
int veil_preproc_weight_seed(const struct veil_preproc_layout *layout, uint64_t wid,
                             const uint8_t seed[VEIL_SEED_BYTES], uint8_t out[VEIL_SEED_BYTES]);

/**
 * Fills words [start, start + count) of part `part` of party's share of item into dst: the
 * party's PRG words (of the item's stream, or of the weight stream for a weight part), or — for
 * the designated party's corrected parts — the same range of the
 * correction (the whole correction tensor as the dealer computes it). BIT's padding bits are
 * masked. This is what the online layer's per-tile expansion tasks run; the concatenation of
 * all ranges equals veil_preproc_party_expand's share. VEIL_ERR_INVAL for a bad range/item.
 */
int veil_preproc_part_fill(const struct veil_preproc_layout *layout,
                           const struct veil_preproc_item *item, int party,
                           const uint8_t seed[VEIL_SEED_BYTES], int part, size_t start,
                           size_t count, const uint64_t *correction, uint64_t *dst);

/**
 * Allocates *out for item (zero words, parts pointed, item copied), clearing it first.
 * VEIL_ERR_INVAL for an invalid item, VEIL_ERR_NOMEM.
 */
int veil_preproc_share_init(struct veil_preproc_share *out, const struct veil_preproc_item *item);
/** Wipes and frees the share's words and zeroes the struct; NULL-safe. */
void veil_preproc_share_clear(struct veil_preproc_share *s);

/* ---- storage (writer preproc_store.c, reader preproc_read.c)
 *
 * FILE FORMAT v2 (one file per party; all integers little-endian):
 *   header, 88 bytes:
 *     0  magic "VEILPRE\0" (8)        8  u32 version (2)        12 u32 party
 *     16 u32 nparties                 20 u32 frac_bits          24 u32 designated
 *     28 u32 reserved (0)             32 session id (16)        48 plan digest (32)
 *     80 u64 item count
 *   item table, 128 bytes per item:
 *     0 u32 kind   4 u32 reserved (0)   8 u64 index   16 u64 params[12]
 *     112 u64 offset (in words, from the start of the data)   120 u64 words
 *   data: the party's share words of every item, in table order, contiguous, except the weight
 *     mask (part B) of a MATMUL_WS or CONV_WS item whose weight (kind and wid) an earlier item of
 *     the file has: every item of a weight carries the same B, which a party keeps from the
 *     weight's first item (tasks/wstat.h), so only that item stores it; the later ones hold A
 *     then C (version 1 stored B in each: VGG16 at batch 2 for 8 runs, 1.72 GB per party, now
 *     0.87 GB)
 *   SHA-256 (32 bytes) of every byte before it.
 * The reader verifies on open: exact file size from the table, each entry's params valid and
 * its words equal to the share size they imply (without B where it is left out; two items of
 * one weight must agree on its size), offsets contiguous, the digest, then the header against
 * the caller's expectation. Nothing read from the file is trusted before it is checked. Asking
 * for a left-out B (veil_preproc_next, veil_preproc_next_into with a B destination, a peek once
 * the weight's first item is consumed) is refused with VEIL_ERR_MISMATCH, the cursor unmoved.
 *
 * Errors: VEIL_ERR_IO (cannot open/read/write), VEIL_ERR_FORMAT (not a Veil preprocessing file,
 * other version, truncated, inconsistent table, digest mismatch = corrupted), VEIL_ERR_MISMATCH
 * (another session, party, party count, designated party, frac bits or plan; the next item is of
 * another kind, index or params than the caller expects; the caller expects more items than the
 * file holds). Every message says what was expected and what was found.
 */
typedef struct veil_preproc_writer veil_preproc_writer_t;
typedef struct veil_preproc_reader veil_preproc_reader_t;

/**
 * Starts writing party's file at path: a temporary file next to it (path.tmp.XXXXXX, mode 0600:
 * the file holds secret shares) that receives the header and the table of the nitems items
 * (copied; each validated). Items are then added in order with veil_preproc_writer_put and the
 * file is published by veil_preproc_writer_commit. On success *out owns the writer. Returns
 * VEIL_OK, VEIL_ERR_INVAL (bad argument or item), VEIL_ERR_IO, VEIL_ERR_NOMEM, VEIL_ERR_CRYPTO.
 */
int veil_preproc_writer_open(const char *path, const struct veil_preproc_layout *layout, int party,
                             const uint8_t plan_digest[VEIL_PREPROC_DIGEST_BYTES],
                             const struct veil_preproc_item *items, size_t nitems,
                             veil_preproc_writer_t **out);

/**
 * Appends the share of the next item; share->item must equal the next table entry
 * (VEIL_ERR_MISMATCH otherwise, VEIL_ERR_STATE when all items are written). VEIL_ERR_IO.
 */
int veil_preproc_writer_put(veil_preproc_writer_t *w, const struct veil_preproc_share *share);

/**
 * Checks every item was written (VEIL_ERR_STATE if not), appends the digest, fsyncs, renames the
 * temporary file onto path atomically and fsyncs the directory. Always destroys *w (removing the
 * temporary file on failure) and sets it to NULL.
 */
int veil_preproc_writer_commit(veil_preproc_writer_t **w);

/** Abandons a writer: removes the temporary file, frees, sets *w = NULL. NULL-safe. */
void veil_preproc_writer_abort(veil_preproc_writer_t **w);

/**
 * Opens party's file at path and checks it fully (format, size, table, digest) and against the
 * expectation (layout's session id, nparties, designated, frac_bits; party; plan digest).
 * On success *out owns a cursor positioned at the first item.
 */
int veil_preproc_reader_open(const char *path, const struct veil_preproc_layout *layout, int party,
                             const uint8_t plan_digest[VEIL_PREPROC_DIGEST_BYTES],
                             veil_preproc_reader_t **out);

/**
 * Consumes the next item into *out (cleared, then allocated) after checking that it is the
 * expected one (kind, index and params equal). Returns VEIL_OK; VEIL_ERR_MISMATCH (wrong item,
 * or none left) with the cursor not advanced; VEIL_ERR_FORMAT / VEIL_ERR_IO when the file
 * changed under the reader (short read).
 */
int veil_preproc_next(veil_preproc_reader_t *r, const struct veil_preproc_item *expected,
                      struct veil_preproc_share *out);

/**
 * As veil_preproc_next, but reads each part j of the item straight into dst[j] (the caller's
 * buffers of the part's numel words, veil_preproc_item_describe; a NULL dst[j] skips part j,
 * which is not read, and must skip a weight mask the file stores with the weight's first item
 * only): no share is allocated, so a party's material lands in its tensors in one copy. On an
 * error the cursor is not advanced and
 * the buffers' contents are unspecified (the caller wipes them).
 */
int veil_preproc_next_into(veil_preproc_reader_t *r, const struct veil_preproc_item *expected,
                           uint64_t *const dst[VEIL_PREPROC_MAX_PARTS]);

/**
 * Reads, without consuming anything, the weight mask part (B) of the first item not yet consumed
 * that has like's kind (MATMUL_WS or CONV_WS) and weight id, into dst (B's numel words, which
 * must equal like's): every item of a weight carries the same B, so a party can open W - B before
 * its first product (tasks/wstat.h, veil_mpc_wstat_prime). VEIL_ERR_MISMATCH when no such item is
 * left, its B has another size, or it is not the weight's first item (the only one that stores
 * B); VEIL_ERR_INVAL for a kind without a weight part.
 */
int veil_preproc_peek_weight(const veil_preproc_reader_t *r, const struct veil_preproc_item *like,
                             uint64_t *dst);

/** Items not yet consumed. */
size_t veil_preproc_reader_remaining(const veil_preproc_reader_t *r);

/**
 * Reads ahead of the cursor (tasks/preproc_prefetch.c): a thread at the SCHED_IDLE class reads
 * each part of at least min_part_bytes that lies in the file, item after item from the cursor,
 * into a buffer of the pool (veil_secbuf_get), holding at most budget_bytes at a time (a larger
 * part is never read ahead). veil_preproc_take_prefetched hands such a buffer over. The walk never
 * waits for the thread, nor for its lock: a part it has not read (or holds behind its lock at
 * that moment) is read by the caller as without it. A read that
 * fails stops the thread (the caller's own read then reports it). Once per reader; before any
 * take. VEIL_ERR_STATE when already started, VEIL_ERR_NOMEM when the thread cannot start.
 */
int veil_preproc_reader_prefetch(veil_preproc_reader_t *r, size_t budget_bytes,
                                 size_t min_part_bytes);

/**
 * Part j of the item at the cursor, read ahead, when the prefetcher holds it with exactly bytes
 * bytes: the buffer (the caller owns it; veil_secbuf_put gives it back) and the prefetcher will
 * not read that part again; NULL otherwise (no prefetcher, not read yet, being read: it is then
 * dropped; the thread holding its lock that moment; another size). Parts taken this way are then
 * skipped by veil_preproc_next_into (a NULL dst[j]), which checks the item as always. The cursor is
 * not moved.
 */
void *veil_preproc_take_prefetched(veil_preproc_reader_t *r, int part, size_t bytes);

/** What a reader's prefetcher did so far (all 0 without one). */
struct veil_preproc_prefetch_stats {
    uint64_t read_bytes; /* read ahead */
    uint64_t taken;      /* takes that got a buffer */
    uint64_t missed;     /* takes that got NULL */
    uint64_t dropped;    /* parts read ahead and given back unused */
    size_t held_bytes;   /* read ahead and not taken yet */
    int stopped;         /* the thread has ended: the file is read, a read failed, or no memory */
};
void veil_preproc_reader_prefetch_stats(const veil_preproc_reader_t *r,
                                        struct veil_preproc_prefetch_stats *s);

/**
 * Offline generation of a whole session (preproc_offline.c): draws fresh seeds, computes every
 * item's correction and every party's share, and writes party p's file at paths[p] (atomically;
 * all files or none). The seeds are wiped when done: the files are the only copy of the material.
 * Returns VEIL_OK or the first error (invalid item, I/O, ...).
 */
int veil_preproc_generate_files(const struct veil_preproc_layout *layout,
                                const struct veil_preproc_item *items, size_t nitems,
                                const uint8_t plan_digest[VEIL_PREPROC_DIGEST_BYTES],
                                const char *const *paths);

/** Closes the reader and sets *r = NULL; NULL-safe. */
void veil_preproc_reader_close(veil_preproc_reader_t **r);

#endif

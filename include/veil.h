/*
 * veil.h — the public API of Veil, secure multi-party machine learning on StarPU task DAGs.
 *
 * This is the only header a user includes. It declares the library's status codes and error
 * reporting, the Z_2^64 ring with its fixed-point encoding, the seeded CSPRNG every share is
 * derived from, and arithmetic / binary share tensors. Later parts of the API (the party mesh,
 * the DSL, the compiler) live in include/veil/ and are included from here. No StarPU, ZeroMQ,
 * hwloc or CUDA type appears in the public API: all objects are opaque.
 *
 * Threads: unless a function says otherwise, objects are not thread-safe, and distinct objects
 * may be used from distinct threads. The last-error message is per thread.
 */
#ifndef VEIL_H
#define VEIL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define VEIL_VERSION_MAJOR 0
#define VEIL_VERSION_MINOR 1
#define VEIL_VERSION_PATCH 0

/* ---------------------------------------------------------------------------------------------
 * Status codes. 0 is success, errors are negative. The table is the single source of the codes
 * and of their names (veil_strerror).
 */
#define VEIL_STATUS_TABLE(X)                                                                       \
    X(VEIL_OK, 0, "success")                                                                       \
    X(VEIL_ERR_NOMEM, -1, "out of memory")                                                         \
    X(VEIL_ERR_INVAL, -2, "invalid argument")                                                      \
    X(VEIL_ERR_RANGE, -3, "value out of the representable range")                                  \
    X(VEIL_ERR_SHAPE, -4, "shape mismatch")                                                        \
    X(VEIL_ERR_IO, -5, "input/output error")                                                       \
    X(VEIL_ERR_FORMAT, -6, "malformed file or data")                                               \
    X(VEIL_ERR_CRYPTO, -7, "cryptographic library failure")                                        \
    X(VEIL_ERR_STARPU, -8, "StarPU runtime error")                                                 \
    X(VEIL_ERR_NET, -9, "network error")                                                           \
    X(VEIL_ERR_PROTO, -10, "protocol violation by a peer")                                         \
    X(VEIL_ERR_TIMEOUT, -11, "timed out")                                                          \
    X(VEIL_ERR_PEER_LOST, -12, "peer lost")                                                        \
    X(VEIL_ERR_MISMATCH, -13, "session parameters differ between parties")                        \
    X(VEIL_ERR_AUTH, -14, "authentication failed")                                                 \
    X(VEIL_ERR_UNSUPPORTED, -15, "not supported")                                                  \
    X(VEIL_ERR_STATE, -16, "call not valid in the current state")                                  \
    X(VEIL_ERR_CHILD, -17, "a child process failed")

enum veil_status {
#define VEIL_STATUS_ENUM(name, value, text) name = value,
    VEIL_STATUS_TABLE(VEIL_STATUS_ENUM)
#undef VEIL_STATUS_ENUM
        VEIL_STATUS_COUNT = 18
};
typedef enum veil_status veil_status_t;

/** Short English text for a status code; never NULL ("unknown status" for foreign values). */
const char *veil_strerror(int status);

/**
 * The message of the last error recorded in this thread: names what failed and what to change.
 * Valid until the next failing call in the same thread. Never NULL (empty when none).
 */
const char *veil_last_error(void);

/* ---------------------------------------------------------------------------------------------
 * Logging. Messages go to stderr with a level and, once set, a party prefix. Veil never logs a
 * secret value; it logs shapes, sizes, peers and counts.
 */
enum veil_log_level {
    VEIL_LOG_ERROR,
    VEIL_LOG_WARN,
    VEIL_LOG_INFO,
    VEIL_LOG_DEBUG,
    VEIL_LOG_LEVEL_COUNT
};

/** Sets the most verbose level printed (default VEIL_LOG_WARN, or $VEIL_LOG: error|warn|info|debug). */
void veil_log_set_level(enum veil_log_level level);
/** Sets the prefix printed before every message of this process (e.g. "p1"); copied. */
void veil_log_set_prefix(const char *prefix);

/* ---------------------------------------------------------------------------------------------
 * The ring Z_2^64 and fixed point.
 *
 * Ring elements are uint64_t with wrap-around arithmetic. A real x is encoded with f fractional
 * bits as round(x * 2^f) in two's complement, rounding to nearest with ties away from zero.
 * Encodable range: |x| < 2^(62 - f) (for f = 16: about 7.0e13). The two top bits are kept free
 * so that sums of a few values and the protocols' +2^62 offsets never wrap; values outside the
 * range, NaN and infinities are refused with VEIL_ERR_RANGE. Decoding is exact up to the
 * double's 53-bit mantissa. f must be in [0, 48].
 */
#define VEIL_FIXED_FRAC_BITS_DEFAULT 16
#define VEIL_FIXED_FRAC_BITS_MAX 48

/** Encodes x with frac_bits fractional bits into *out. VEIL_ERR_RANGE for NaN, inf, |x| too big. */
int veil_fixed_encode(double x, int frac_bits, uint64_t *out);
/** Decodes a ring element as a signed fixed-point value. */
double veil_fixed_decode(uint64_t v, int frac_bits);
/** Encodes n values; on error nothing past the bad element is written and its index is in the message. */
int veil_fixed_encode_array(const double *x, size_t n, int frac_bits, uint64_t *out);
/** Decodes n values. */
void veil_fixed_decode_array(const uint64_t *v, size_t n, int frac_bits, double *out);
/** Largest magnitude veil_fixed_encode accepts for frac_bits (exclusive bound). */
double veil_fixed_max_abs(int frac_bits);

/* ---------------------------------------------------------------------------------------------
 * PRG: AES-128 in counter mode (OpenSSL libcrypto) expanding a 128-bit seed into a stream of
 * 64-bit words. The stream is a pure function of the seed and the word position; it can be
 * positioned anywhere in O(1) (seek), so a dealer and a party expand identical shares from the
 * same seed, independently and in any order. Word i is bytes [8i, 8i+8) of the AES-CTR
 * keystream with key = seed and IV = 0, read little-endian.
 */
#define VEIL_SEED_BYTES 16
typedef struct veil_prg veil_prg_t;

/** Fills seed with VEIL_SEED_BYTES bytes from the operating system's CSPRNG. */
int veil_seed_random(uint8_t seed[VEIL_SEED_BYTES]);
/** New PRG positioned at word 0. NULL on failure (veil_last_error says why). */
veil_prg_t *veil_prg_new(const uint8_t seed[VEIL_SEED_BYTES]);
/** Destroys *prg and sets it to NULL; NULL-safe. The key schedule is wiped. */
void veil_prg_destroy(veil_prg_t **prg);
/** Positions the stream at 64-bit word index word. */
int veil_prg_seek(veil_prg_t *prg, uint64_t word);
/** Current word index. */
uint64_t veil_prg_tell(const veil_prg_t *prg);
/** Writes the next n words to out and advances. */
int veil_prg_fill(veil_prg_t *prg, uint64_t *out, size_t n);
/** Derives an independent child seed for (label, index): AES-128 of the block (label, index) under
 * the parent seed as key (AES as a PRF), so children of one parent are independent. */
int veil_seed_derive(const uint8_t parent[VEIL_SEED_BYTES], uint64_t label, uint64_t index,
                     uint8_t child[VEIL_SEED_BYTES]);

/* ---------------------------------------------------------------------------------------------
 * Share tensors: one party's share of a secret tensor of any shape, arithmetic (the parties'
 * words add up to the secret mod 2^64) or binary (they XOR to it). Data is row-major, contiguous,
 * 64-byte aligned.
 */
#define VEIL_MAX_DIMS 8
enum veil_share_kind { VEIL_SHARE_ARITH, VEIL_SHARE_BINARY, VEIL_SHARE_KIND_COUNT };
typedef struct veil_share veil_share_t;

/** New zero-filled share tensor of the given shape (ndim in [0, VEIL_MAX_DIMS], dims > 0). */
veil_share_t *veil_share_new(enum veil_share_kind kind, int ndim, const size_t *dims);
/** Destroys *s (wiping its words) and sets it to NULL; NULL-safe. */
void veil_share_destroy(veil_share_t **s);
enum veil_share_kind veil_share_kind(const veil_share_t *s);
int veil_share_ndim(const veil_share_t *s);
/** Size of dimension i, or 0 when i is out of range. */
size_t veil_share_dim(const veil_share_t *s, int i);
size_t veil_share_numel(const veil_share_t *s);
uint64_t *veil_share_data(veil_share_t *s);
const uint64_t *veil_share_cdata(const veil_share_t *s);
/** 1 when a and b have the same kind and shape. */
int veil_share_same_shape(const veil_share_t *a, const veil_share_t *b);

/**
 * Splits a secret (numel words) into nparties shares of the same shape and kind. Party p < n-1
 * gets its share as the PRG stream of seeds[p] (words [offset, offset+numel)); the last party
 * gets the correction secret - sum (or XOR) of the others. This is the seeded-dealer layout: a
 * party holding seeds[p] expands its own share with veil_share_expand and only the correction
 * ever travels. shares_out[p] receive new tensors (caller owns them).
 */
int veil_share_split(const uint64_t *secret, enum veil_share_kind kind, int ndim,
                     const size_t *dims, int nparties,
                     const uint8_t (*seeds)[VEIL_SEED_BYTES], uint64_t offset,
                     veil_share_t **shares_out);
/** Fills s with the PRG stream of seed from word offset (a seeded party's share). */
int veil_share_expand(veil_share_t *s, const uint8_t seed[VEIL_SEED_BYTES], uint64_t offset);
/** Reconstructs the secret from all nparties shares (same kind and shape) into out. */
int veil_share_reconstruct(const veil_share_t *const *shares, int nparties, uint64_t *out);

#ifdef __cplusplus
}
#endif

#include "veil/net.h"
#include "veil/data.h"
#include "veil/graph.h"
#include "veil/party.h"

#endif /* VEIL_H */

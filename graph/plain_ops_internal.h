/*
 * plain_ops_internal.h — helpers shared by the plaintext executor's op files (plain_forward.c:
 * linear and rearranging ops, the op table; plain_forward_nn.c: normalisation, softmax, GELU,
 * argmax, the loss): value allocation per mode, the floor truncation, the encoding of public
 * constants, and the nonlinear forward evaluations. Never installed.
 *
 * SAVED STATE (e->daux / e->waux [node][slot], element count in e->aux_numel; DOUBLE mode holds
 * doubles, FIXED mode ring words), written when n->saved is set (SOFTMAX_XENT: always):
 *   RELU         [0] mask [x >= 0], numel entries, 0 or 1 (an integer, NOT encoded: dy * mask
 *                needs no truncation)
 *   MAXPOOL      [0] route (B, C, OH, OW, k*k): one-hot of each window's first maximum, 0 or 1
 *                (integers, not encoded), window positions row-major (ki, kj)
 *   LAYERNORM    [0] xhat (numel, fixed point f bits) and [1] r = 1/sigma (rows = numel / d,
 *                fixed point f bits)
 *   SOFTMAX      [0] the output s (numel, fixed point)
 *   SOFTMAX_XENT [0] s = softmax(logits) (B, C, fixed point)
 */
#ifndef VEIL_GRAPH_PLAIN_OPS_INTERNAL_H
#define VEIL_GRAPH_PLAIN_OPS_INTERNAL_H

#include "graph/plain_internal.h"

#include <math.h>
#include <stdint.h>

/** floor(x / 2^s) on the signed word: the plaintext truncation (arithmetic shift). */
static inline uint64_t veil_plain_trunc(uint64_t x, int s)
{
    return (uint64_t)((int64_t)x >> s);
}

/** enc(c) = round(c 2^f), ties away from zero, as a ring word (public constants). */
static inline uint64_t veil_plain_enc(double c, int f)
{
    return (uint64_t)(int64_t)llround(ldexp(c, f));
}

/** Allocates node n's value array (numel doubles or words, per e->mode; contents undefined).
 * VEIL_OK or VEIL_ERR_NOMEM naming the node. */
int veil_plain_alloc(struct veil_plain_exec *e, const struct veil_node *n);
/** Allocates saved-state slot k of node n with numel entries (per mode, zero-filled). */
int veil_plain_alloc_aux(struct veil_plain_exec *e, const struct veil_node *n, int k,
                         size_t numel);

/* plain_forward_nn.c: forward evaluations (contract: veil_plain_fn). */
int veil_plain_layernorm(struct veil_plain_exec *e, const struct veil_node *n);
int veil_plain_softmax(struct veil_plain_exec *e, const struct veil_node *n);
int veil_plain_gelu(struct veil_plain_exec *e, const struct veil_node *n);
int veil_plain_argmax(struct veil_plain_exec *e, const struct veil_node *n);
int veil_plain_softmax_xent(struct veil_plain_exec *e, const struct veil_node *n);

#endif

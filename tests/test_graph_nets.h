/*
 * test_graph_nets.h — the small networks the secure-executor tests share (test_graph_secure.c,
 * test_graph_placement.c): an MLP with argmax; a CNN with conv2d stride 1 and 2, padding, a
 * folded batch norm, relu, max and average pooling, global average pooling, flatten and a
 * residual add; an attention block with transpose, matmul of two secrets, scale, softmax, layer
 * norm, GELU and concat; one dense layer for cost checks; and the training MLP graph of the
 * micro-batch and weight-averaging tests. Feeds come from one seeded generator,
 * drawn in the order the networks are built, and the plaintext FIXED executor gives each
 * network's reference outputs.
 */
#ifndef VEIL_TEST_GRAPH_NETS_H
#define VEIL_TEST_GRAPH_NETS_H

#include "veil.h"

#include <stddef.h>
#include <stdint.h>

#define VEIL_TEST_NET_MAXOUT 4
#define VEIL_TEST_NET_MAXFEED 24

/** One network: plan, feeds, plaintext FIXED reference and tolerance (and what tests vary). */
struct veil_test_net {
    const char *name;
    veil_plan_t *plan;
    veil_plan_t *other; /* bad input: the plan party 1 opens instead, or NULL */
    struct veil_feed feeds[VEIL_TEST_NET_MAXFEED];
    size_t nfeeds;
    double *want[VEIL_TEST_NET_MAXOUT];
    double tol;    /* absolute, per element */
    int drop_feed; /* bad input: the owner of the first feed runs without it */
    int runs;      /* runs per session; 0: the test's default */
};

/** The weight_stationary and microbatches compile options of the plans built next (defaults 0
 * and 1). */
extern int veil_test_net_weight_stationary;
extern int veil_test_net_microbatches;
/** The lookahead and serialized compile options of the plans built next (defaults
 * VEIL_LOOKAHEAD_UNBOUNDED and 0). */
extern int veil_test_net_lookahead;
extern int veil_test_net_serialized;

/** Compiles g with frac_bits, 128-element tiles (every elementwise protocol runs on several)
 * and the options above; a failure is a test failure (NULL). */
veil_plan_t *veil_test_net_compile(veil_graph_t *g, int frac_bits);
/** Appends a feed of numel values uniform in [lo, hi) (owned by t). */
void veil_test_net_feed(struct veil_test_net *t, const char *name, size_t numel, double lo,
                        double hi);

void veil_test_net_mlp(struct veil_test_net *t);
void veil_test_net_cnn(struct veil_test_net *t);
void veil_test_net_relu_pool(struct veil_test_net *t);
void veil_test_net_attention(struct veil_test_net *t);
/** x (batch, 16, 16, 16) of party 1 -> relu -> 2 x 2 max pool -> global average pool -> revealed
 * to all: 1,024 pool windows per image, so at batch 2 the pairwise rule (pool.h) takes them and at
 * batch 4 it does not. */
void veil_test_net_relu_maxpool(struct veil_test_net *t, size_t batch);
/** x (1, 4) of party 1 -> dense (4, hidden) -> relu -> dense (hidden, 1) -> revealed to all:
 * a plain ReLU after a linear layer, which truncates inside the ReLU (veil_mpc_relu_trunc). */
void veil_test_net_wide_relu(struct veil_test_net *t, size_t hidden);
/** x (3, 5) of party x_owner times w (5, 4) of party 0, revealed to all. */
veil_plan_t *veil_test_net_linear_plan(int x_owner, int frac_bits);
void veil_test_net_linear(struct veil_test_net *t);
/** A graph (not compiled) of a 2-layer MLP with a loss, named name: x (8, 6) of party 1 -> dense
 * fc1 (w1 (6, 5), b1 (5) of party 0) -> relu -> dense fc2 (w2 (5, 3), no bias) -> softmax
 * cross-entropy against one-hot "labels" (8, 3) of party 1. */
veil_graph_t *veil_test_train_mlp(const char *name);
/** Its values from seed (an LCG): x[48] in [-1, 1), w1[30] and w2[15] in [-0.5, 0.5), b1[5] =
 * 0.01 i. The labels are the caller's. */
void veil_test_train_mlp_values(uint64_t seed, double *x, double *w1, double *b1, double *w2);

/** Fills t->want with the plaintext FIXED outputs (at most 256 elements each). */
void veil_test_net_reference(struct veil_test_net *t);
/** Frees the plans, feeds and references. */
void veil_test_net_free(struct veil_test_net *t);

#endif

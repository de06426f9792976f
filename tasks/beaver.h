/*
 * beaver.h — multiplication protocols over Beaver-style correlated randomness (Veil issue 4):
 * elementwise product and square, matrix product, 2-D convolution and its two backward products,
 * all exact ring operations over Z_2^64 (no truncation: fixed-point callers truncate with
 * veil_mpc_trunc, tasks/trunc.h). N-party semi-honest.
 *
 * Every function follows the protocol rules of tasks/mpc.h: SPMD (parties and the dealer call it
 * with the same shapes), requests its material first, returns at the dealer / a recorder after
 * shaping the output, validates before submitting (VEIL_ERR_SHAPE / VEIL_ERR_INVAL with a message
 * naming the op), never waits. Each opens its masked operands in ONE round (both opens in flight
 * together). A matrix product (not split over devices) accumulates its local products onto the
 * correction part C, which becomes the result: A E first, which needs E alone (the weights' open,
 * the smaller one, or an earlier call's), so it runs while D's transfer goes on, then D B. Party
 * 0's D E rides on one of them, D (B + E) or (A + D) E, whichever sum is smaller (one elementwise
 * task), so every party runs two products; a split placement computes per-block temporaries and one
 * block sum. The elementwise product and square combine each tile in one task (z = c + D b + a E (+
 * D E)), per tile (the inner-layer pipeline); a product's D and E travel packed, one message per
 * tile and peer.
 *
 * Costs (N parties, bytes each party sends, 8-byte words):
 *   mul      1 round, 2 (N-1) numel 8            (16 B/element at N = 2, as CrypTen)
 *   square   1 round,   (N-1) numel 8
 *   matmul   1 round, 8 (N-1)(ab + bc)           x: a x b, y: b x c
 *   conv2d   1 round, 8 (N-1)(|X| + |W|)         the input- and weight-sized opens
 *   conv2d_grad_weight  1 round, 8 (N-1) B OH OW (OC + C KH KW)   (im2col-sized; see conv.c)
 *   conv2d_grad_input   1 round, 8 (N-1) OC (C KH KW + B OH OW)   (= |W| + |dY|)
 * For inference with fixed weights, tasks/wstat.h has matmul and conv2d forms that open W - B
 * once per session (later calls: 8 (N-1) ab and 8 (N-1) |x|).
 */
#ifndef VEIL_TASKS_BEAVER_H
#define VEIL_TASKS_BEAVER_H

#include "tasks/mpc.h"

/**
 * z = x * y elementwise (ring product). x and y arithmetic, same shape and tiling; z gets their
 * layout. BEAVER material (a, b, c = ab): D = x - a and E = y - b opened in one round, then
 * z_p = c_p + D b_p + a_p E (+ D E at party 0), per tile. Rounds 1; bytes 16 (N-1) numel.
 */
int veil_mpc_mul(veil_mpc_t *m, const struct veil_sec *x, const struct veil_sec *y,
                 struct veil_sec *z);

/**
 * z = x * x elementwise. SQUARE material (a, a^2): D = x - a opened, z = a^2 + 2 D a (+ D^2 at
 * party 0). Rounds 1; bytes 8 (N-1) numel.
 */
int veil_mpc_square(veil_mpc_t *m, const struct veil_sec *x, struct veil_sec *z);

/**
 * z = x . y for x (a x b) and y (b x c), both 2-D, arithmetic and one handle each (tile SIZE_MAX,
 * or a matrix no larger than the tile); z is a x c, one handle. MATMUL material (A, B, C = AB): D =
 * x - A and E = y - B opened in one round; z = C + D B + A E (+ D E at party 0) with two GEMMs at
 * every party, D B running when D lands and A E when E lands (party 0's D E folded into one of
 * them: D (B + E) when y is not larger than x, else (A + D) E). Rounds 1; bytes 8 (N-1)(ab + bc).
 */
int veil_mpc_matmul(veil_mpc_t *m, const struct veil_sec *x, const struct veil_sec *y,
                    struct veil_sec *z);

/** z = x^T . y for x (b x a) and y (b x c): a local transpose of x's shares, then
 * veil_mpc_matmul (same cost with x^T's shape: 8 (N-1)(ab + bc)). */
int veil_mpc_matmul_tn(veil_mpc_t *m, const struct veil_sec *x, const struct veil_sec *y,
                       struct veil_sec *z);
/** z = x . y^T for x (a x b) and y (c x b): a local transpose of y, then veil_mpc_matmul. */
int veil_mpc_matmul_nt(veil_mpc_t *m, const struct veil_sec *x, const struct veil_sec *y,
                       struct veil_sec *z);

/** 2-D convolution geometry: NCHW input (batch, c, h, w), OIHW weight (oc, c, kh, kw), square
 * stride and zero padding (pad < kernel), dilation 1. Output (batch, oc, oh, ow) with
 * oh = (h + 2 pad - kh) / stride + 1 and ow likewise. Every size below 2^32. */
struct veil_conv_geom {
    size_t batch, c, h, w, oc, kh, kw, stride, pad;
};

/**
 * y = conv2d(x, w) (cross-correlation, as in deep-learning frameworks). x is 4-D NCHW and w 4-D
 * OIHW with g's sizes, arithmetic, one handle each; y is 4-D (batch, oc, oh, ow), one handle. CONV
 * material (A input-sized, B weight-sized, Y = conv(A, B)): D = x - A and E = w - B opened in one
 * round; locally y = Y + conv(D, B) + conv(A, E) (+ conv(D, E) at party 0, folded into conv(D, B +
 * E) or conv(A + D, E), the smaller sum) through im2col and per-image GEMMs. Rounds 1; bytes 8
 * (N-1)(|x| + |w|).
 */
int veil_mpc_conv2d(veil_mpc_t *m, const struct veil_sec *x, const struct veil_sec *w,
                    const struct veil_conv_geom *g, struct veil_sec *y);

/**
 * dx = the gradient of conv2d with respect to its input: conv_transpose(dy, w), computed as
 * col2im(W^T . dY) where W is w as an OC x (C KH KW) matrix and dY the images of dy side by side
 * (OC x B OH OW): one MATMUL triple. w OIHW and dy (batch, oc, oh, ow) 4-D, one handle each;
 * dx NCHW. Rounds 1; bytes 8 (N-1) OC (C KH KW + B OH OW), i.e. |w| + |dy|: the same opens a
 * dedicated triple would need.
 */
int veil_mpc_conv2d_grad_input(veil_mpc_t *m, const struct veil_sec *w, const struct veil_sec *dy,
                               const struct veil_conv_geom *g, struct veil_sec *dx);

/**
 * dw = the gradient of conv2d with respect to its weight: sum over images of
 * dY_b . im2col(x_b)^T, as one MATMUL triple on dY (OC x B OH OW) and im2col(x)^T
 * (B OH OW x C KH KW). x NCHW and dy 4-D, one handle each; dw OIHW. Rounds 1; bytes
 * 8 (N-1) B OH OW (OC + C KH KW): the im2col-sized open costs about KH KW / stride^2 times the
 * input-sized open a dedicated correlation triple (masks X, dY and their correlation) would need.
 */
int veil_mpc_conv2d_grad_weight(veil_mpc_t *m, const struct veil_sec *x, const struct veil_sec *dy,
                                const struct veil_conv_geom *g, struct veil_sec *dw);

#endif

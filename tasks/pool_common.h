/*
 * pool_common.h — the by-value argument blocks of the pooling protocols' local codelets and
 * their element math (tournament pair differences, the product operands, the winners and the
 * one-hot update, window gathers, sums and the backward scatter-add), written once for the CPU
 * bodies (pool_codelets.c) and the CUDA kernels (tasks/cuda/pool.cu). Each function computes one
 * output element from its row and column, so the CPU tests of the protocols exercise exactly the
 * arithmetic the GPU runs. Plain C, no StarPU.
 */
#ifndef VEIL_TASKS_POOL_COMMON_H
#define VEIL_TASKS_POOL_COMMON_H

#include "codelets/hd_common.h"

#include <stddef.h>
#include <stdint.h>

/**
 * One tournament level over rows of k original positions: kl candidates per row (p = kl / 2
 * pairs, an odd last one passes through), product rows of m = p + cov words (cov: the original
 * positions under the compared pairs, 0 without argmax and at level 0), s = 2^level positions
 * per candidate range. party0 selects who adds public constants.
 */
struct veil_pool_tour_arg {
    size_t rows, kl, k, m, s;
    int party0;
};

/** Window codelet modes (see veil_pool_win_arg). */
enum veil_pool_win_mode {
    VEIL_POOL_WIN_GATHER,  /* x (image) -> X (rows x k k): each window's taps */
    VEIL_POOL_WIN_SUM,     /* x (image) -> S (rows): each window's sum */
    VEIL_POOL_WIN_EXPAND,  /* dy (rows) -> E (rows x k k): dy repeated over its window */
    VEIL_POOL_WIN_SCATTER, /* P (rows x k k) -> dx (image): each entry added to its pixel */
    VEIL_POOL_WIN_COUNT
};

/**
 * NCHW images (batch, c, h, w), k x k windows at the given stride, oh x ow windows per plane;
 * rows = batch c oh ow windows, row r = (plane, y, x) in row-major order. mode: a
 * veil_pool_win_mode.
 */
struct veil_pool_win_arg {
    size_t batch, c, h, w, k, stride, oh, ow;
    int mode;
};

/* ---- tournament ------------------------------------------------------------------------ */

/** The bit of pair idx in the packed public f (one bit per pair, row-major, 64 per word). */
static inline VEIL_HD int veil_pool_fbit(const uint64_t *f, size_t idx)
{
    return (int)((f[idx / 64] >> (idx % 64)) & 1);
}

/** D[r, j] = V[r, 2j] - V[r, 2j + 1] (V rows of kl, D rows of p). */
static inline VEIL_HD uint64_t veil_pool_diff_at(const struct veil_pool_tour_arg *a,
                                                 const uint64_t *v, size_t r, size_t j)
{
    return v[r * a->kl + 2 * j] - v[r * a->kl + 2 * j + 1];
}

/** Product operands of pair j < p of row r: D against beta. */
static inline VEIL_HD void veil_pool_prep_pair(const struct veil_pool_tour_arg *a,
                                               const uint64_t *beta, const uint64_t *d, size_t r,
                                               size_t j, uint64_t *x, uint64_t *y)
{
    const size_t p = a->kl / 2;
    *x = d[r * p + j];
    *y = beta[r * p + j];
}

/** Product operands of covered position q < m - p of row r: OH against the beta of the pair
 * whose range (2 s positions) holds q. */
static inline VEIL_HD void veil_pool_prep_cov(const struct veil_pool_tour_arg *a,
                                              const uint64_t *beta, const uint64_t *oh, size_t r,
                                              size_t q, uint64_t *x, uint64_t *y)
{
    *x = oh[r * a->k + q];
    *y = beta[r * (a->kl / 2) + q / (2 * a->s)];
}

/** The winner of pair j < p of row r: V[2j + 1] + b D with b D = f ? W : D - W (W = D beta). */
static inline VEIL_HD uint64_t veil_pool_combv_pair(const struct veil_pool_tour_arg *a,
                                                    const uint64_t *v, const uint64_t *w,
                                                    const uint64_t *d, const uint64_t *f, size_t r,
                                                    size_t j)
{
    const size_t p = a->kl / 2;
    const uint64_t wj = w[r * a->m + j], dj = d[r * p + j];
    return v[r * a->kl + 2 * j + 1] + (veil_pool_fbit(f, r * p + j) ? wj : dj - wj);
}

/** The candidate of row r passing through an odd level unchanged (its last one). */
static inline VEIL_HD uint64_t veil_pool_combv_last(const struct veil_pool_tour_arg *a,
                                                    const uint64_t *v, size_t r)
{
    return v[r * a->kl + a->kl - 1];
}

/** Level 0's one-hot at position q of row r: b = [D >= 0] on a pair's left, 1 - b on its right,
 * 1 for a candidate passing through (the constants at party 0 only). */
static inline VEIL_HD uint64_t veil_pool_oh0_at(const struct veil_pool_tour_arg *a,
                                                const uint64_t *f, const uint64_t *beta, size_t r,
                                                size_t q)
{
    const size_t p = a->k / 2;
    const uint64_t one = a->party0 ? 1 : 0;
    if (q >= 2 * p)
        return one;
    const size_t idx = r * p + q / 2;
    const uint64_t b = veil_pool_fbit(f, idx) ? beta[idx] : one - beta[idx];
    return q % 2 ? one - b : b;
}

/** A later level's one-hot at position q of row r: b oh on a pair's left range, oh - b oh on its
 * right range (b oh = f ? W : oh - W), oh beyond the covered positions. */
static inline VEIL_HD uint64_t veil_pool_oh_at(const struct veil_pool_tour_arg *a,
                                               const uint64_t *oh, const uint64_t *w,
                                               const uint64_t *f, size_t r, size_t q)
{
    const size_t p = a->kl / 2, cov = a->m - p;
    const uint64_t v = oh[r * a->k + q];
    if (q >= cov)
        return v;
    const uint64_t wq = w[r * a->m + p + q];
    const uint64_t bo = veil_pool_fbit(f, r * p + q / (2 * a->s)) ? wq : v - wq;
    return (q / a->s) % 2 == 0 ? bo : v - bo;
}

/* ---- pairwise picks (max_pairwise.c) ----------------------------------------------------- */

/** Pattern entries of a pick: at most this many per output row (out_row * per). */
#define VEIL_POOL_PICK_MAX 256
/** Sources of a pick: at most this many. */
#define VEIL_POOL_PICK_SRC 4

/** One term of a pick: +- column col of the same row of source src. */
struct veil_pool_pick_term {
    uint8_t src, neg;
    uint16_t col;
};

/**
 * A row-wise rearrangement of nsrc sources that all have `rows` rows (source s has in_row[s]
 * words per row) into an output of rows x out_row words: output word c of row r is the sum of
 * the `per` terms term[c per .. c per + per - 1], each +- one word of row r of one source.
 * per = 1 is a gather; per = 2 with a negated term a difference; per = k a row sum.
 */
struct veil_pool_pick_arg {
    size_t rows, out_row, per;
    size_t in_row[VEIL_POOL_PICK_SRC];
    int nsrc;
    struct veil_pool_pick_term term[VEIL_POOL_PICK_MAX];
};

/** Output word c of row r of a pick over the sources src[0 .. nsrc - 1] (mod 2^64). */
static inline VEIL_HD uint64_t veil_pool_pick_at(const struct veil_pool_pick_arg *a,
                                                 const uint64_t *const *src, size_t r, size_t c)
{
    uint64_t acc = 0;
    for (size_t e = 0; e < a->per; e++) {
        const struct veil_pool_pick_term t = a->term[c * a->per + e];
        const uint64_t v = src[t.src][r * a->in_row[t.src] + t.col];
        acc += t.neg ? (uint64_t)0 - v : v;
    }
    return acc;
}

/* ---- windows --------------------------------------------------------------------------- */

/** The pixel index of the top-left tap of window (plane bc, y, x). */
static inline VEIL_HD size_t veil_pool_win_base(const struct veil_pool_win_arg *a, size_t bc,
                                                size_t y, size_t x)
{
    return (bc * a->h + y * a->stride) * a->w + x * a->stride;
}

/** The same for window row r (row-major over plane, y, x). */
static inline VEIL_HD size_t veil_pool_win_base_of(const struct veil_pool_win_arg *a, size_t r)
{
    const size_t x = r % a->ow, t = r / a->ow;
    return veil_pool_win_base(a, t / a->oh, t % a->oh, x);
}

/** The pixel of tap (i, j) of the window whose top-left tap is base. */
static inline VEIL_HD size_t veil_pool_win_pixel(const struct veil_pool_win_arg *a, size_t base,
                                                 size_t i, size_t j)
{
    return base + i * a->w + j;
}

/** The sum of the window whose top-left tap is base (mod 2^64). */
static inline VEIL_HD uint64_t veil_pool_win_sum(const struct veil_pool_win_arg *a,
                                                 const uint64_t *in, size_t base)
{
    uint64_t acc = 0;
    for (size_t i = 0; i < a->k; i++)
        for (size_t j = 0; j < a->k; j++)
            acc += in[veil_pool_win_pixel(a, base, i, j)];
    return acc;
}

/**
 * The scatter-add as a gather: pixel pix of the image receives the sum of the entries P[r, i k +
 * j] of every window r whose tap (i, j) lands on it (0 outside every window). The CPU body
 * scatters (one pass, no divisions); the CUDA kernel gathers (one thread per pixel, no atomics);
 * ring addition is exact, so the order of the terms does not change the result.
 */
static inline VEIL_HD uint64_t veil_pool_win_gather_back(const struct veil_pool_win_arg *a,
                                                         const uint64_t *in, size_t pix)
{
    const size_t k = a->k, s = a->stride, px = pix % a->w, t = pix / a->w;
    const size_t py = t % a->h, bc = t / a->h;
    /* windows y with y s <= py < y s + k and y < oh; likewise x */
    const size_t ylo = py >= k ? (py - k) / s + 1 : 0, xlo = px >= k ? (px - k) / s + 1 : 0;
    const size_t yhi = py / s < a->oh ? py / s : a->oh - 1;
    const size_t xhi = px / s < a->ow ? px / s : a->ow - 1;
    uint64_t acc = 0;
    for (size_t y = ylo; y <= yhi; y++)
        for (size_t x = xlo; x <= xhi; x++) {
            const size_t r = (bc * a->oh + y) * a->ow + x;
            acc += in[r * k * k + (py - y * s) * k + (px - x * s)];
        }
    return acc;
}

#endif /* VEIL_TASKS_POOL_COMMON_H */

/*
 * test_graph_plain_util.h — naive reference layers for the plaintext executor's tests, written
 * independently of it (plain loops, no im2col, no GEMM): dense, conv2d and pooling in double and in
 * the fixed-point sequence of graph_internal.h (floor truncation), plus deterministic test values
 * and a one-output plaintext run helper. Header-only (static functions), for test programs.
 */
#ifndef VEIL_TEST_GRAPH_PLAIN_UTIL_H
#define VEIL_TEST_GRAPH_PLAIN_UTIL_H

#include "veil.h"
#include "veil/graph.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

/* Deterministic values in [-amp, amp), multiples of 1/1024 (exact in fixed point at f >= 10),
 * from a 64-bit LCG seeded by seed. */
static inline void tg_fill(double *v, size_t n, double amp, uint64_t seed)
{
    uint64_t s = seed * 6364136223846793005ULL + 1442695040888963407ULL;
    for (size_t i = 0; i < n; i++) {
        s = s * 6364136223846793005ULL + 1442695040888963407ULL;
        double u = (double)(s >> 11) / 9007199254740992.0; /* [0, 1) */
        v[i] = floor((2 * u - 1) * amp * 1024) / 1024;
    }
}

static inline uint64_t tg_enc(double x, int f)
{
    return (uint64_t)(int64_t)llround(ldexp(x, f));
}

static inline double tg_dec(uint64_t w, int f)
{
    return ldexp((double)(int64_t)w, -f);
}

static inline uint64_t tg_tr(uint64_t x, int f)
{
    return (uint64_t)((int64_t)x >> f);
}

static inline void tg_enc_array(const double *x, size_t n, int f, uint64_t *w)
{
    for (size_t i = 0; i < n; i++)
        w[i] = tg_enc(x[i], f);
}

/* y (b, o) = x (b, in) W (in, o) + bias (bias may be NULL). */
static inline void tg_dense_d(size_t b, size_t in, size_t o, const double *x, const double *w,
                              const double *bias, double *y)
{
    for (size_t i = 0; i < b; i++)
        for (size_t j = 0; j < o; j++) {
            double s = 0;
            for (size_t k = 0; k < in; k++)
                s += x[i * in + k] * w[k * o + j];
            y[i * o + j] = s + (bias ? bias[j] : 0);
        }
}

static inline void tg_dense_w(size_t b, size_t in, size_t o, const uint64_t *x, const uint64_t *w,
                              const uint64_t *bias, int f, uint64_t *y)
{
    for (size_t i = 0; i < b; i++)
        for (size_t j = 0; j < o; j++) {
            uint64_t s = 0;
            for (size_t k = 0; k < in; k++)
                s += x[i * in + k] * w[k * o + j];
            y[i * o + j] = tg_tr(s, f) + (bias ? bias[j] : 0);
        }
}

struct tg_conv {
    size_t b, c, h, w, o, kh, kw, stride, pad, oh, ow;
};

static inline void tg_conv_geom(struct tg_conv *g)
{
    g->oh = (g->h + 2 * g->pad - g->kh) / g->stride + 1;
    g->ow = (g->w + 2 * g->pad - g->kw) / g->stride + 1;
}

/* The input pixel under output (i, j) and tap (ki, kj) of channel c of image n, or -1 (padding). */
static inline long tg_conv_src(const struct tg_conv *g, size_t n, size_t c, size_t i, size_t j,
                               size_t ki, size_t kj)
{
    long y = (long)(i * g->stride + ki) - (long)g->pad;
    long x = (long)(j * g->stride + kj) - (long)g->pad;
    if (y < 0 || x < 0 || y >= (long)g->h || x >= (long)g->w)
        return -1;
    return (long)(((n * g->c + c) * g->h + (size_t)y) * g->w + (size_t)x);
}

static inline void tg_conv_d(const struct tg_conv *g, const double *x, const double *w,
                             const double *bias, double *y)
{
    for (size_t n = 0; n < g->b; n++)
        for (size_t o = 0; o < g->o; o++)
            for (size_t i = 0; i < g->oh; i++)
                for (size_t j = 0; j < g->ow; j++) {
                    double s = 0;
                    for (size_t c = 0; c < g->c; c++)
                        for (size_t ki = 0; ki < g->kh; ki++)
                            for (size_t kj = 0; kj < g->kw; kj++) {
                                long src = tg_conv_src(g, n, c, i, j, ki, kj);
                                if (src >= 0)
                                    s += x[src] * w[((o * g->c + c) * g->kh + ki) * g->kw + kj];
                            }
                    y[((n * g->o + o) * g->oh + i) * g->ow + j] = s + (bias ? bias[o] : 0);
                }
}

static inline void tg_conv_w(const struct tg_conv *g, const uint64_t *x, const uint64_t *w,
                             const uint64_t *bias, int f, uint64_t *y)
{
    for (size_t n = 0; n < g->b; n++)
        for (size_t o = 0; o < g->o; o++)
            for (size_t i = 0; i < g->oh; i++)
                for (size_t j = 0; j < g->ow; j++) {
                    uint64_t s = 0;
                    for (size_t c = 0; c < g->c; c++)
                        for (size_t ki = 0; ki < g->kh; ki++)
                            for (size_t kj = 0; kj < g->kw; kj++) {
                                long src = tg_conv_src(g, n, c, i, j, ki, kj);
                                if (src >= 0)
                                    s += x[src] * w[((o * g->c + c) * g->kh + ki) * g->kw + kj];
                            }
                    y[((n * g->o + o) * g->oh + i) * g->ow + j] =
                        tg_tr(s, f) + (bias ? bias[o] : 0);
                }
}

/* Max pooling (first maximum on ties) over planes of h x w, k x k windows, stride s; in double
 * (wx NULL) or on signed words (x NULL). */
static inline void tg_maxpool(size_t planes, size_t h, size_t w, size_t k, size_t s,
                              const double *x, const uint64_t *wx, double *y, uint64_t *wy)
{
    size_t oh = (h - k) / s + 1, ow = (w - k) / s + 1;
    for (size_t p = 0; p < planes; p++)
        for (size_t i = 0; i < oh; i++)
            for (size_t j = 0; j < ow; j++) {
                size_t best = (p * h + i * s) * w + j * s;
                for (size_t a = 0; a < k; a++)
                    for (size_t c = 0; c < k; c++) {
                        size_t idx = (p * h + i * s + a) * w + j * s + c;
                        if (x ? x[idx] > x[best] : (int64_t)wx[idx] > (int64_t)wx[best])
                            best = idx;
                    }
                if (x)
                    y[(p * oh + i) * ow + j] = x[best];
                else
                    wy[(p * oh + i) * ow + j] = wx[best];
            }
}

/* Compiles g (one output), runs it in mode with feeds, writes the output into out. Returns the
 * run's status (or the compile's). */
static inline int tg_run(veil_graph_t *g, enum veil_plain_mode mode, const struct veil_feed *feeds,
                         size_t nfeeds, double *out)
{
    veil_plan_t *p = veil_compile(g, NULL);
    if (!p)
        return veil_graph_status(g) != VEIL_OK ? veil_graph_status(g) : VEIL_ERR_INVAL;
    double *outs[1] = {out};
    int rc = veil_plain_run(p, mode, feeds, nfeeds, outs);
    veil_plan_destroy(&p);
    return rc;
}

#endif

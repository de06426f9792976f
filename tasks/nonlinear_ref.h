/*
 * nonlinear_ref.h — the plaintext fixed-point model of Veil's nonlinear protocols (internal): the
 * public constants every protocol and its model share (start tables of the reciprocal and the
 * inverse square root, the GELU polynomial), and veil_ref_* functions that run the SAME ring
 * arithmetic as the protocols of tasks/nonlinear.h on plaintext words, step for step, with the
 * secure truncation modelled as floor plus a 0/1 error. Tests compare the protocols' revealed
 * outputs with double references and use the model to measure the approximation error over
 * whole input ranges without any party process. No StarPU, no allocation except where noted.
 */
#ifndef VEIL_TASKS_NONLINEAR_REF_H
#define VEIL_TASKS_NONLINEAR_REF_H

#include "codelets/flatop_internal.h"
#include "tasks/nonlinear.h"

#include <stddef.h>
#include <stdint.h>

/** Start table of a range-normalised Newton method over [2^lo, 2^hi): k thresholds t[1..k]
 * (fixed point, t[0] unused) splitting the range into k + 1 segments of equal ratio, and the
 * linear form y0 = c0 + sum_i w[i] [x < t[i]] (fixed point) that yields segment j's start. */
struct veil_nl_table {
    int k;
    uint64_t t[VEIL_FLATOP_MAX_COPIES + 1];
    uint64_t w[VEIL_FLATOP_MAX_COPIES + 1]; /* w[i] for i in [1, k] */
    uint64_t c0;
};

enum veil_nl_fn { VEIL_NL_RECIPROCAL, VEIL_NL_INV_SQRT };

/**
 * Fills *tab for fn over [2^lo, 2^hi) with steps segments per octave at f fractional bits. The
 * start on segment [a, b) is the constant minimising the worst relative error of 1/x (2/(a+b))
 * or 1/sqrt(x) (2/(sqrt a + sqrt b)). VEIL_ERR_INVAL (message) unless -f/2 <= lo < hi <= 24 - f/2
 * and k <= VEIL_FLATOP_MAX_COPIES.
 */
int veil_nl_table_init(struct veil_nl_table *tab, enum veil_nl_fn fn, int lo, int hi, int steps,
                       int f);

/** GELU constants at f fractional bits (see nonlinear.h): the cut a, and what the protocol
 * multiplies and adds. */
struct veil_nl_gelu {
    uint64_t a;    /* a at f bits */
    uint64_t cv;   /* round(2^VEIL_GELU_CV_BITS / a^2) */
    uint64_t cvt;  /* round(C_DEG 2^VEIL_GELU_CV_BITS / a^2): the top coefficient */
    uint64_t c[VEIL_GELU_DEG + 1]; /* C_i at VEIL_GELU_FRAC bits (c[DEG] unused, c[0] = 0) */
    int shift_v;   /* truncation from x^2 * cv to v at VEIL_GELU_FRAC bits */
};
/** Fills *g for f fractional bits (f <= VEIL_GELU_FRAC - 2). */
void veil_nl_gelu_init(struct veil_nl_gelu *g, int f);

/** The model's truncation: floor(x / 2^s) plus an error bit drawn from *state (xorshift), or
 * plain floor when state is NULL. */
uint64_t veil_ref_trunc_model(uint64_t x, int s, uint64_t *state);

/* Models of the protocols on n plaintext fixed-point words (f fractional bits). state: the
 * truncation error stream (NULL: floor). Output arrays must not overlap inputs. */
void veil_ref_exp(size_t n, const uint64_t *x, int f, uint64_t *state, uint64_t *y);
void veil_ref_reciprocal_range(size_t n, const uint64_t *x, int lo, int hi, int f, uint64_t *state,
                               uint64_t *y);
void veil_ref_inv_sqrt_range(size_t n, const uint64_t *x, int lo, int hi, int f, uint64_t *state,
                             uint64_t *y);
void veil_ref_gelu(size_t n, const uint64_t *x, int f, uint64_t *state, uint64_t *y);
/** Softmax of rows of k words (k < 2^16), row after row. */
void veil_ref_softmax_lastdim(size_t rows, size_t k, const uint64_t *x, int f, uint64_t *state,
                              uint64_t *y);

/** Double references. */
double veil_ref_gelu_f64(double x);

#endif

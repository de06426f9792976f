/*
 * plain_forward_nn.c — plaintext evaluation of the nonlinear forward ops: layer normalisation,
 * softmax, GELU, argmax and the softmax cross-entropy loss. DOUBLE mode is the real function
 * (softmax with the row maximum subtracted, GELU by erf, 1/sqrt(var + eps)); FIXED mode runs the
 * fixed-point sequence of graph_internal.h with the plaintext models of the secure protocols
 * (tasks/nonlinear_ref.h, truncation state NULL: floor), so its results are those of the secure
 * run up to the secure truncation's ulp. Saved state layouts: plain_ops_internal.h.
 */
#include "config.h"

#include "base/base_internal.h"
#include "graph/plain/plain_ops_internal.h"
#include "tasks/nonlinear.h"
#include "tasks/nonlinear_ref.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>


/* Last dimension of node i (the reduced one) and the number of rows before it. */
static void rows_of(const struct veil_node *x, size_t *rows, size_t *k)
{
    *k = x->dims[x->ndim - 1];
    *rows = *k ? x->numel / *k : 0;
}

void veil_ln_form_init(struct veil_ln_form *lf, size_t d, double eps, int f)
{
    const int H = VEIL_LN_SCALES, c2 = 2 * VEIL_LN_COARSE_FRAC;
    lf->s0 = UINT64_C(1) << (VEIL_LN_SCALE_BITS - H);
    lf->e0 = veil_plain_enc(eps, f);
    for (int j = 1; j <= H; j++) { /* var >= 2^(5+2j): scale 2^-j */
        lf->thr[j - 1] = (uint64_t)d << (c2 + 5 + 2 * j);
        lf->sw[j - 1] = UINT64_C(1) << (VEIL_LN_SCALE_BITS - j);
        lf->ew[j - 1] = 0;
    }
    for (int i = 1; i <= VEIL_LN_UP; i++) { /* var < 2^(-5-2i): scale 2^(3+i), eps 4^(3+i) */
        lf->thr[H + i - 1] = (uint64_t)d << (c2 - 5 - 2 * i);
        lf->sw[H + i - 1] = i == 1 ? (UINT64_C(1) << 19) - (UINT64_C(1) << 15)
                                   : UINT64_C(1) << (17 + i);
        lf->ew[H + i - 1] = veil_plain_enc(ldexp(eps, 2 * (3 + i)), f) -
                            (i == 1 ? lf->e0 : veil_plain_enc(ldexp(eps, 2 * (2 + i)), f));
    }
}

double veil_plain_row_spread(const struct veil_plain_exec *e, const struct veil_node *x,
                             size_t r, size_t d)
{
    const uint64_t *xr = e->w[x->index] + r * d;
    int64_t mn = (int64_t)xr[0], mx = mn;
    for (size_t j = 1; j < d; j++) {
        const int64_t v = (int64_t)xr[j];
        mn = v < mn ? v : mn;
        mx = v > mx ? v : mx;
    }
    return ldexp((double)mx - (double)mn, -e->f);
}

double veil_plain_row_dvar(const struct veil_plain_exec *e, const struct veil_node *x, size_t r,
                           size_t d)
{
    const uint64_t *xr = e->w[x->index] + r * d;
    double mean = 0, ss = 0;
    for (size_t j = 0; j < d; j++)
        mean += ldexp((double)(int64_t)xr[j], -e->f);
    mean /= (double)d;
    for (size_t j = 0; j < d; j++) {
        const double c = ldexp((double)(int64_t)xr[j], -e->f) - mean;
        ss += c * c;
    }
    return ss;
}

/* The rows the secure layer norm computes right (graph_internal.h, LAYERNORM): the FIXED run
 * refuses a row beyond VEIL_LN_SPREAD_BITS or VEIL_LN_DVAR_BITS (VEIL_ERR_RANGE naming the
 * node and the row) instead of modelling a wrong value. */
static int check_ln_rows(const struct veil_plain_exec *e, const struct veil_node *n,
                         const struct veil_node *x, size_t rows, size_t d)
{
    const double lim = ldexp(1.0, VEIL_LN_SPREAD_BITS(e->f));
    const double vlim = ldexp(1.0, VEIL_LN_DVAR_BITS);
    for (size_t r = 0; r < rows; r++) {
        const double spread = veil_plain_row_spread(e, x, r, d);
        const double ss = spread >= lim ? 0 : veil_plain_row_dvar(e, x, r, d);
        if (spread >= lim || ss >= vlim)
            return veil_error(VEIL_ERR_RANGE, "plain run: layernorm '%s': row %zu has %s %g, "
                              "beyond the op's domain (%s < %g): the secure run would compute a "
                              "wrong value; scale the rows down", n->name, r,
                              spread >= lim ? "spread (max - min)" : "d x variance",
                              spread >= lim ? spread : ss, spread >= lim ? "spread" : "d var",
                              spread >= lim ? lim : vlim);
    }
    return VEIL_OK;
}

int veil_plain_layernorm(struct veil_plain_exec *e, const struct veil_node *n)
{
    const struct veil_node *x = &e->p->nodes[n->in[0]];
    const int gi = n->in[1], bi = n->in[2], i = n->index;
    size_t rows, d;
    rows_of(x, &rows, &d);
    int rc = veil_plain_alloc(e, n);
    if (rc == VEIL_OK && n->saved) {
        rc = veil_plain_alloc_aux(e, n, 0, n->numel);
        if (rc == VEIL_OK)
            rc = veil_plain_alloc_aux(e, n, 1, rows);
    }
    if (rc != VEIL_OK)
        return rc;
    if (!IS_FIXED(e)) {
        for (size_t r = 0; r < rows; r++) {
            const double *xr = e->d[x->index] + r * d;
            double *yr = e->d[i] + r * d, mean = 0.0, var = 0.0;
            for (size_t j = 0; j < d; j++)
                mean += xr[j];
            mean /= (double)d;
            for (size_t j = 0; j < d; j++)
                var += (xr[j] - mean) * (xr[j] - mean);
            const double inv = 1.0 / sqrt(var / (double)d + n->a.eps);
            for (size_t j = 0; j < d; j++) {
                const double xhat = (xr[j] - mean) * inv;
                yr[j] = xhat * e->d[gi][j] + e->d[bi][j];
                if (n->saved)
                    e->daux[i][0][r * d + j] = xhat;
            }
            if (n->saved)
                e->daux[i][1][r] = inv;
        }
        return VEIL_OK;
    }
    struct veil_nl_table tab;
    if (veil_nl_table_init(&tab, VEIL_NL_INV_SQRT, VEIL_ISQRT_LO, VEIL_ISQRT_HI, VEIL_ISQRT_STEPS,
                           e->f) != VEIL_OK)
        return veil_error(VEIL_ERR_UNSUPPORTED, "plain run: layernorm '%s': the inverse square "
                          "root over [2^%d, 2^%d) cannot run with %d fractional bits; compile "
                          "with frac_bits 16 or more", n->name, VEIL_ISQRT_LO, VEIL_ISQRT_HI, e->f);
    if ((rc = check_ln_rows(e, n, x, rows, d)) != VEIL_OK)
        return rc;
    const int f = e->f;
    const uint64_t inv_d = veil_plain_enc(1.0 / (double)d, f);
    struct veil_ln_form lf;
    veil_ln_form_init(&lf, d, n->a.eps, f);
    const uint64_t inv_dm = veil_plain_enc(1.0 / (double)d, VEIL_LN_MEAN_BITS);
    uint64_t *xc = malloc(n->numel * sizeof *xc), *var = malloc(rows * sizeof *var);
    uint64_t *r = malloc(rows * sizeof *r), *sc = malloc(rows * sizeof *sc);
    if (!xc || !var || !r || !sc) {
        free(xc);
        free(var);
        free(r);
        free(sc);
        return veil_error(VEIL_ERR_NOMEM, "plain run: layernorm '%s': out of memory", n->name);
    }
    for (size_t row = 0; row < rows; row++) {
        const uint64_t *xr = e->w[x->index] + row * d;
        uint64_t *c = xc + row * d, s = 0, ss = 0, ssq = 0;
        for (size_t j = 0; j < d; j++)
            s += xr[j] - xr[0]; /* shifted by the row's first value, as the lowering */
        const uint64_t mean = veil_plain_trunc(e, s * inv_dm, VEIL_LN_MEAN_BITS);
        for (size_t j = 0; j < d; j++) {
            c[j] = xr[j] - xr[0] - mean;
            const uint64_t q = veil_plain_trunc(e, c[j], f - VEIL_LN_COARSE_FRAC);
            ssq += q * q;
        }
        /* the row scale S and eps' from the bits [ssq < thr_k] (graph_internal.h) */
        uint64_t epsr = lf.e0;
        sc[row] = lf.s0;
        for (int k = 0; k < VEIL_LN_NBITS; k++)
            if ((int64_t)(ssq - lf.thr[k]) < 0) {
                sc[row] += lf.sw[k];
                epsr += lf.ew[k];
            }
        for (size_t j = 0; j < d; j++) {
            c[j] = veil_plain_trunc(e, c[j] * sc[row], VEIL_LN_SCALE_BITS);
            ss += c[j] * c[j]; /* the products summed before one truncation */
        }
        var[row] = veil_plain_trunc(e, veil_plain_trunc(e, ss, f) * inv_d, f) + epsr;
    }
    veil_ref_inv_sqrt_range(rows, var, VEIL_ISQRT_LO, VEIL_ISQRT_HI, f, NULL, r);
    for (size_t row = 0; row < rows; row++) {
        for (size_t j = 0; j < d; j++) {
            const uint64_t xhat = veil_plain_trunc(e, xc[row * d + j] * r[row], f);
            e->w[i][row * d + j] = veil_plain_trunc(e, xhat * e->w[gi][j], f) + e->w[bi][j];
            if (n->saved)
                e->waux[i][0][row * d + j] = xhat;
        }
        if (n->saved) /* 1/sigma of the row itself: r S / 2^15 */
            e->waux[i][1][row] = veil_plain_trunc(e, r[row] * sc[row], VEIL_LN_SCALE_BITS);
    }
    free(xc);
    free(var);
    free(r);
    free(sc);
    return VEIL_OK;
}

/* Softmax of rows of k from node xi's value into y (double or words per mode). */
static int softmax_rows(struct veil_plain_exec *e, const struct veil_node *n, int xi, size_t rows,
                        size_t k, void *y)
{
    if (IS_FIXED(e)) {
        int hi = 1;
        while (((size_t)1 << hi) <= k)
            hi++;
        struct veil_nl_table tab;
        if (veil_nl_table_init(&tab, VEIL_NL_RECIPROCAL, 0, hi, VEIL_RECIP_STEPS, e->f) !=
            VEIL_OK)
            return veil_error(VEIL_ERR_UNSUPPORTED, "plain run: %s '%s': the reciprocal of sums "
                              "of %zu terms cannot run with %d fractional bits; use fewer "
                              "fractional bits or a shorter last dimension", veil_op_name(n->op),
                              n->name, k, e->f);
        veil_ref_softmax_lastdim(rows, k, e->w[xi], e->f, NULL, y);
        return VEIL_OK;
    }
    for (size_t r = 0; r < rows; r++) {
        const double *xr = e->d[xi] + r * k;
        double *yr = (double *)y + r * k, mx = xr[0], s = 0.0;
        for (size_t j = 1; j < k; j++)
            mx = xr[j] > mx ? xr[j] : mx;
        for (size_t j = 0; j < k; j++) {
            yr[j] = exp(xr[j] - mx);
            s += yr[j];
        }
        for (size_t j = 0; j < k; j++)
            yr[j] /= s;
    }
    return VEIL_OK;
}

int veil_plain_softmax(struct veil_plain_exec *e, const struct veil_node *n)
{
    size_t rows, k;
    rows_of(n, &rows, &k);
    const int i = n->index;
    int rc = veil_plain_alloc(e, n);
    if (rc == VEIL_OK)
        rc = softmax_rows(e, n, n->in[0], rows, k, IS_FIXED(e) ? (void *)e->w[i] : (void *)e->d[i]);
    if (rc == VEIL_OK && n->saved) {
        rc = veil_plain_alloc_aux(e, n, 0, n->numel);
        if (rc == VEIL_OK && IS_FIXED(e))
            memcpy(e->waux[i][0], e->w[i], n->numel * sizeof(uint64_t));
        else if (rc == VEIL_OK)
            memcpy(e->daux[i][0], e->d[i], n->numel * sizeof(double));
    }
    return rc;
}

int veil_plain_gelu(struct veil_plain_exec *e, const struct veil_node *n)
{
    const int i = n->index, xi = n->in[0];
    if (IS_FIXED(e) && e->f > VEIL_GELU_FRAC - 2)
        return veil_error(VEIL_ERR_UNSUPPORTED, "plain run: gelu '%s': the GELU polynomial needs "
                          "at most %d fractional bits (frac_bits is %d)", n->name,
                          VEIL_GELU_FRAC - 2, e->f);
    int rc = veil_plain_alloc(e, n);
    if (rc != VEIL_OK)
        return rc;
    if (IS_FIXED(e)) {
        veil_ref_gelu(n->numel, e->w[xi], e->f, NULL, e->w[i]);
    } else {
        for (size_t k = 0; k < n->numel; k++)
            e->d[i][k] = e->d[xi][k] * 0.5 * (1.0 + erf(e->d[xi][k] / sqrt(2.0)));
    }
    return VEIL_OK;
}

int veil_plain_argmax(struct veil_plain_exec *e, const struct veil_node *n)
{
    const struct veil_node *x = &e->p->nodes[n->in[0]];
    size_t rows, k;
    rows_of(x, &rows, &k);
    int rc = veil_plain_alloc(e, n);
    if (rc != VEIL_OK)
        return rc;
    for (size_t r = 0; r < rows; r++) {
        size_t best = 0;
        for (size_t j = 1; j < k; j++) {
            /* strictly greater: the first maximum wins, as the secure tournament's ties */
            if (IS_FIXED(e) ? (int64_t)e->w[x->index][r * k + j] >
                                  (int64_t)e->w[x->index][r * k + best]
                            : e->d[x->index][r * k + j] > e->d[x->index][r * k + best])
                best = j;
        }
        if (IS_FIXED(e))
            e->w[n->index][r] = (uint64_t)best << e->f; /* sum_j onehot_j enc(j) */
        else
            e->d[n->index][r] = (double)best;
    }
    return VEIL_OK;
}

int veil_plain_softmax_xent(struct veil_plain_exec *e, const struct veil_node *n)
{
    const struct veil_node *x = &e->p->nodes[n->in[0]];
    const int li = n->in[1], i = n->index;
    const size_t b = x->dims[0], c = x->dims[1];
    int rc = veil_plain_alloc(e, n);
    if (rc == VEIL_OK)
        rc = veil_plain_alloc_aux(e, n, 0, x->numel);
    if (rc == VEIL_OK)
        rc = softmax_rows(e, n, x->index, b, c,
                          IS_FIXED(e) ? (void *)e->waux[i][0] : (void *)e->daux[i][0]);
    if (rc != VEIL_OK)
        return rc;
    /* The loss, in double in both modes: -mean over rows of sum_j labels_j log s_j. */
    double loss = 0.0;
    for (size_t r = 0; r < b; r++) {
        if (!IS_FIXED(e)) {
            /* log-softmax from the logits: finite even where s_j underflows */
            const double *xr = e->d[x->index] + r * c;
            double mx = xr[0], s = 0.0;
            for (size_t j = 1; j < c; j++)
                mx = xr[j] > mx ? xr[j] : mx;
            for (size_t j = 0; j < c; j++)
                s += exp(xr[j] - mx);
            for (size_t j = 0; j < c; j++) {
                const double lab = e->d[li][r * c + j];
                if (lab != 0.0)
                    loss -= lab * (xr[j] - mx - log(s));
            }
        } else {
            for (size_t j = 0; j < c; j++) {
                const double lab = veil_fixed_decode(e->w[li][r * c + j], e->f);
                double s = veil_fixed_decode(e->waux[i][0][r * c + j], e->f);
                const double tiny = ldexp(1.0, -e->f); /* fixed point's smallest positive */
                if (lab != 0.0)
                    loss -= lab * log(s > tiny ? s : tiny);
            }
        }
    }
    loss /= (double)b;
    if (!IS_FIXED(e)) {
        e->d[i][0] = loss;
        return VEIL_OK;
    }
    rc = veil_fixed_encode(loss, e->f, &e->w[i][0]);
    if (rc != VEIL_OK)
        return veil_error(rc, "plain run: softmax_cross_entropy '%s': the loss %g does not fit "
                          "fixed point (labels out of range?)", n->name, loss);
    return VEIL_OK;
}

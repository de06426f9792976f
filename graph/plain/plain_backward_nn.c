/*
 * plain_backward_nn.c — plaintext evaluation of the gradients of the nonlinear forward ops: layer
 * normalisation (input and gamma), softmax, GELU and the softmax cross-entropy loss. Except for
 * GELU (whose FIXED sequence recomputes the forward's comparisons and v from its input, exactly
 * what the forward computed) they read the forward node's saved state (plain_ops_internal.h: xhat
 * and 1/sigma, the softmax output) rather than recomputing a nonlinear function, so the FIXED
 * sequences (graph_internal.h, BACKWARD FIXED-POINT SEQUENCES) need only products, sums and public
 * constants; DOUBLE mode is the real derivative evaluated at the saved state.
 */
#include "config.h"

#include "base/base_internal.h"
#include "graph/plain/plain_ops_internal.h"
#include "tasks/gelu.h"
#include "tasks/nonlinear.h"

#include <stdlib.h>
#include <string.h>


/* Rows and last dimension of node n. */
static void rows_of(const struct veil_node *n, size_t *rows, size_t *d)
{
    *d = n->dims[n->ndim - 1];
    *rows = *d ? n->numel / *d : 0;
}

/*
 * dx = r (g - mean(g) - xhat mean(g xhat)) with g = dy gamma, per row. FIXED: g = trunc(dy *
 * gamma); m1 = trunc(sum(g) * enc(1/d)); m2 = trunc(trunc(sum(g * xhat)) * enc(1/d)) (the products
 * summed before one truncation); u = g - m1 - trunc(xhat * m2); dx = trunc(r * u). The means are
 * taken before the products by r so that every intermediate stays of the size of g, and the
 * relative error of enc(1/d) touches only the two correction terms.
 */
int veil_plain_layernorm_grad(struct veil_plain_exec *e, const struct veil_node *n)
{
    const struct veil_node *ln = &e->p->nodes[n->fwd];
    const int i = n->index, dy = n->in[0], gm = ln->in[1], L = ln->index;
    size_t rows, d;
    rows_of(n, &rows, &d);
    int rc = veil_plain_alloc(e, n);
    if (rc != VEIL_OK)
        return rc;
    if (!IS_FIXED(e)) {
        for (size_t row = 0; row < rows; row++) {
            const double *dyr = e->d[dy] + row * d, *xh = e->daux[L][0] + row * d;
            double s1 = 0.0, s2 = 0.0;
            for (size_t j = 0; j < d; j++) {
                s1 += dyr[j] * e->d[gm][j];
                s2 += dyr[j] * e->d[gm][j] * xh[j];
            }
            s1 /= (double)d;
            s2 /= (double)d;
            for (size_t j = 0; j < d; j++)
                e->d[i][row * d + j] =
                    e->daux[L][1][row] * (dyr[j] * e->d[gm][j] - s1 - xh[j] * s2);
        }
        return VEIL_OK;
    }
    const int f = e->f;
    const uint64_t inv_d = veil_plain_enc(1.0 / (double)d, f);
    uint64_t *g = e->w[i]; /* g first, then dx in place */
    for (size_t row = 0; row < rows; row++) {
        const uint64_t *dyr = e->w[dy] + row * d, *xh = e->waux[L][0] + row * d;
        uint64_t *gr = g + row * d, s1 = 0, s2 = 0;
        for (size_t j = 0; j < d; j++) {
            gr[j] = veil_plain_trunc(e, dyr[j] * e->w[gm][j], f);
            s1 += gr[j];
            s2 += gr[j] * xh[j];
        }
        const uint64_t m1 = veil_plain_trunc(e, s1 * inv_d, f);
        const uint64_t m2 = veil_plain_trunc(e, veil_plain_trunc(e, s2, f) * inv_d, f);
        const uint64_t r = e->waux[L][1][row];
        for (size_t j = 0; j < d; j++) {
            const uint64_t u = gr[j] - m1 - veil_plain_trunc(e, xh[j] * m2, f);
            gr[j] = veil_plain_trunc(e, r * u, f);
        }
    }
    return VEIL_OK;
}

/* dgamma (d) = sum over rows of dy * xhat; FIXED: the exact products summed, one truncation. */
int veil_plain_layernorm_grad_gamma(struct veil_plain_exec *e, const struct veil_node *n)
{
    const struct veil_node *ln = &e->p->nodes[n->fwd];
    const int i = n->index, dy = n->in[0], L = ln->index;
    size_t rows, d;
    rows_of(ln, &rows, &d);
    int rc = veil_plain_alloc(e, n);
    if (rc != VEIL_OK)
        return rc;
    for (size_t j = 0; j < d; j++) {
        uint64_t sw = 0;
        double sd = 0.0;
        for (size_t row = 0; row < rows; row++) {
            if (IS_FIXED(e))
                sw += e->w[dy][row * d + j] * e->waux[L][0][row * d + j];
            else
                sd += e->d[dy][row * d + j] * e->daux[L][0][row * d + j];
        }
        if (IS_FIXED(e))
            e->w[i][j] = veil_plain_trunc(e, sw, e->f);
        else
            e->d[i][j] = sd;
    }
    return VEIL_OK;
}

/* dx = s (dy - rowsum(dy s)); FIXED: t = trunc(dy * s); q = rowsum(t) (exact);
 * dx = trunc(s * (dy - q)). */
int veil_plain_softmax_grad(struct veil_plain_exec *e, const struct veil_node *n)
{
    const int i = n->index, dy = n->in[0], S = n->fwd;
    size_t rows, k;
    rows_of(n, &rows, &k);
    int rc = veil_plain_alloc(e, n);
    if (rc != VEIL_OK)
        return rc;
    for (size_t row = 0; row < rows; row++) {
        const size_t o = row * k;
        if (IS_FIXED(e)) {
            const uint64_t *s = e->waux[S][0] + o, *g = e->w[dy] + o;
            uint64_t q = 0;
            for (size_t j = 0; j < k; j++)
                q += veil_plain_trunc(e, g[j] * s[j], e->f);
            for (size_t j = 0; j < k; j++)
                e->w[i][o + j] = veil_plain_trunc(e, s[j] * (g[j] - q), e->f);
        } else {
            const double *s = e->daux[S][0] + o, *g = e->d[dy] + o;
            double q = 0.0;
            for (size_t j = 0; j < k; j++)
                q += g[j] * s[j];
            for (size_t j = 0; j < k; j++)
                e->d[i][o + j] = s[j] * (g[j] - q);
        }
    }
    return VEIL_OK;
}

/* GELU_GRAD dx = dy GELU'(x), x = in[1] (the gelu's input): DOUBLE the derivative
 * Phi(x) + x phi(x); FIXED the protocol's ring sequence (veil_ref_gelu_grad, tasks/gelu.h). */
int veil_plain_gelu_grad(struct veil_plain_exec *e, const struct veil_node *n)
{
    const int i = n->index, dy = n->in[0], xi = n->in[1];
    if (IS_FIXED(e) && e->f > VEIL_GELU_FRAC - 2)
        return veil_error(VEIL_ERR_UNSUPPORTED, "plain run: gelu_grad '%s': the GELU polynomial "
                          "needs at most %d fractional bits (frac_bits is %d)", n->name,
                          VEIL_GELU_FRAC - 2, e->f);
    int rc = veil_plain_alloc(e, n);
    if (rc != VEIL_OK)
        return rc;
    if (IS_FIXED(e)) {
        veil_ref_gelu_grad(n->numel, e->w[dy], e->w[xi], e->f, NULL, e->w[i]);
        return VEIL_OK;
    }
    for (size_t k = 0; k < n->numel; k++)
        e->d[i][k] = e->d[dy][k] * veil_ref_gelu_grad_f64(e->d[xi][k]);
    return VEIL_OK;
}

/* dlogits = (s - labels) / B; FIXED: trunc((s - labels) * enc(1/B)). */
int veil_plain_xent_grad(struct veil_plain_exec *e, const struct veil_node *n)
{
    const struct veil_node *loss = &e->p->nodes[n->fwd];
    const int i = n->index, L = loss->index, lab = loss->in[1];
    const size_t batch = n->dims[0];
    if ((IS_FIXED(e) ? !e->waux[L][0] : !e->daux[L][0]) || (IS_FIXED(e) ? !e->w[lab] : !e->d[lab]))
        return veil_error(VEIL_ERR_STATE,
                          "plain run: %s '%s': the loss '%s' was not computed in "
                          "this walk (run the forward pass first)",
                          veil_op_name(n->op), n->name, loss->name);
    int rc = veil_plain_alloc(e, n);
    if (rc != VEIL_OK)
        return rc;
    const uint64_t inv_b = veil_plain_enc(1.0 / (double)batch, e->f);
    for (size_t k = 0; k < n->numel; k++) {
        if (IS_FIXED(e))
            e->w[i][k] = veil_plain_trunc(e, (e->waux[L][0][k] - e->w[lab][k]) * inv_b, e->f);
        else
            e->d[i][k] = (e->daux[L][0][k] - e->d[lab][k]) / (double)batch;
    }
    return VEIL_OK;
}

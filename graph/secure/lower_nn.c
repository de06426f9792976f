/*
 * lower_nn.c — secure lowerings of the nonlinear forward ops: layer normalisation, softmax, GELU,
 * argmax and the softmax of the training loss. They follow graph_internal.h's FIXED-POINT
 * SEQUENCES (the plaintext FIXED executor, plain_forward_nn.c, runs the same ring operations)
 * with the protocols of tasks/nonlinear.h and tasks/pool.h; saved state as in
 * plain_ops_internal.h.
 */
#include "config.h"

#include "base/base_internal.h"
#include "graph/secure/exec_internal.h"
#include "tasks/beaver.h"
#include "tasks/compare.h"
#include "tasks/gelu.h"
#include "tasks/nonlinear.h"
#include "tasks/nonlinear_internal.h"
#include "tasks/pool.h"
#include "tasks/trunc.h"

#include <stdlib.h>
#include <string.h>

#define VAL(x, i) (&(x)->val[(i)])

/* Releases every tensor of a list (empty ones are fine). */
static void release_all(struct veil_exec *x, struct veil_sec *t, int n)
{
    for (int i = 0; i < n; i++)
        veil_mpc_release(x->m, &t[i]);
}

/* Layer norm's row scale (graph_internal.h, LAYERNORM): from xc (numel, laid out like the input)
 * the coarse sum of squares ssq = sum(trunc_{f-8}(xc)^2), its comparisons with the thresholds
 * in one ltz call, the scale S and eps' (rows) as linear forms of the bits (veil_ln_form), and
 * xcs = trunc_15(xc * S) (exact: xc unchanged when S = 2^15, the rows of var in [2^-7, 2^7)). */
static int ln_scale(struct veil_exec *x, const struct veil_node *n, const struct veil_sec *xc,
                    const struct veil_sec *like, size_t d, size_t rows, struct veil_sec *xcs,
                    struct veil_sec *sc, struct veil_sec *epsv)
{
    enum { XQ, SQQ, SSQ, STK, BITS, BS, XS15, NT };
    struct veil_sec t[NT];
    memset(t, 0, sizeof t);
    veil_mpc_t *m = x->m;
    const size_t rdims[1] = {rows}, sdims[1] = {VEIL_LN_NBITS * rows};
    const int f = x->frac_bits;
    struct veil_ln_form lf;
    veil_ln_form_init(&lf, d, n->a.eps, f);
    int rc = veil_mpc_trunc(m, xc, f - VEIL_LN_COARSE_FRAC, &t[XQ]);
    if (rc == VEIL_OK)
        rc = veil_mpc_square(m, &t[XQ], &t[SQQ]);
    if (rc == VEIL_OK)
        rc = veil_exec_rowsum(x, &t[SQQ], d, 1, rdims, &t[SSQ]);
    if (rc == VEIL_OK)
        rc = veil_sec_init(m, &t[STK], VEIL_SHARE_ARITH, 1, sdims, veil_nl_stack_tile(m));
    if (rc == VEIL_OK) { /* [ssq - thr_0; ...; ssq - thr_(K-1)] */
        struct veil_flatop_args a;
        memset(&a, 0, sizeof a);
        a.kind = VEIL_FLATOP_REPLICATE;
        a.k = VEIL_LN_NBITS;
        a.add_const = 1;
        for (int k = 0; k < VEIL_LN_NBITS; k++)
            a.c[k] = 0 - lf.thr[k];
        struct veil_sec *outs[1] = {&t[STK]};
        const struct veil_sec *ins[1] = {&t[SSQ]};
        rc = veil_nl_flat(m, a, outs, 1, ins, 1);
    }
    if (rc == VEIL_OK)
        rc = veil_mpc_ltz(m, &t[STK], &t[BITS]);
    if (rc == VEIL_OK)
        rc = veil_nl_bits_wsum(m, &t[SSQ], &t[BITS], VEIL_LN_NBITS, lf.s0, lf.sw, sc);
    if (rc == VEIL_OK)
        rc = veil_nl_bits_wsum(m, &t[SSQ], &t[BITS], VEIL_LN_NBITS, lf.e0, lf.ew, epsv);
    if (rc == VEIL_OK)
        rc = veil_exec_broadcast(x, sc, d, like, &t[BS]);
    if (rc == VEIL_OK)
        rc = veil_mpc_mul(m, xc, &t[BS], &t[XS15]);
    if (rc == VEIL_OK)
        rc = veil_mpc_trunc(m, &t[XS15], VEIL_LN_SCALE_BITS, xcs);
    release_all(x, t, NT);
    return rc;
}

int veil_lower_layernorm(struct veil_exec *x, const struct veil_node *n)
{
    const struct veil_node *xn = &x->p->nodes[n->in[0]];
    const size_t d = xn->dims[xn->ndim - 1], rows = xn->numel / d;
    const size_t rdims[1] = {rows};
    const struct veil_sec *in = VAL(x, n->in[0]);
    enum { X0, BX0, XS, S, SC, MEAN, BMEAN, XC, XCS, SCL, EPSV, SQ, SS, VAR, VARE, R, BR, PROD,
           XHAT, BG, YG, RS, R1, NT };
    struct veil_sec t[NT];
    memset(t, 0, sizeof t);
    veil_mpc_t *m = x->m;
    /* xs = x - x[row, 0] (exact, local): the row's spread, not its magnitude, reaches the sum */
    int rc = veil_sec_init(m, &t[X0], VEIL_SHARE_ARITH, 1, rdims, x->tile);
    if (rc == VEIL_OK) {
        struct veil_flatop_args a;
        memset(&a, 0, sizeof a);
        a.kind = VEIL_FLATOP_SLICE;
        a.k = 1;
        a.c[0] = d;
        struct veil_sec *outs[1] = {&t[X0]};
        const struct veil_sec *ins[1] = {in};
        rc = veil_nl_flat(m, a, outs, 1, ins, 1);
    }
    if (rc == VEIL_OK)
        rc = veil_exec_broadcast(x, &t[X0], d, in, &t[BX0]);
    if (rc == VEIL_OK)
        rc = veil_mpc_sub(m, in, &t[BX0], &t[XS]);
    if (rc == VEIL_OK)
        rc = veil_exec_rowsum(x, &t[XS], d, 1, rdims, &t[S]);
    /* mean = trunc(s round(2^B / d), B): 1/d at B = VEIL_LN_MEAN_BITS bits, not f */
    if (rc == VEIL_OK)
        rc = veil_mpc_mul_scalar(m, &t[S], veil_exec_fixed(1.0 / (double)d, VEIL_LN_MEAN_BITS),
                                 &t[SC]);
    if (rc == VEIL_OK)
        rc = veil_mpc_trunc(m, &t[SC], VEIL_LN_MEAN_BITS, &t[MEAN]);
    if (rc == VEIL_OK)
        rc = veil_exec_broadcast(x, &t[MEAN], d, in, &t[BMEAN]);
    if (rc == VEIL_OK)
        rc = veil_mpc_sub(m, &t[XS], &t[BMEAN], &t[XC]);
    /* xc scaled by a power of two: its squares cannot wrap and var lands in inv_sqrt's range */
    if (rc == VEIL_OK)
        rc = ln_scale(x, n, &t[XC], in, d, rows, &t[XCS], &t[SCL], &t[EPSV]);
    /* var = trunc(trunc(sum(xc xc)) enc(1/d)) + eps': the products summed before one trunc */
    if (rc == VEIL_OK)
        rc = veil_mpc_square(m, &t[XCS], &t[SQ]);
    if (rc == VEIL_OK)
        rc = veil_exec_rowsum(x, &t[SQ], d, 1, rdims, &t[SS]);
    if (rc == VEIL_OK)
        rc = veil_exec_trunc_inplace(x, &t[SS]);
    if (rc == VEIL_OK)
        rc = veil_exec_scale(x, &t[SS], 1.0 / (double)d, &t[VAR]);
    if (rc == VEIL_OK)
        rc = veil_mpc_add(m, &t[VAR], &t[EPSV], &t[VARE]);
    if (rc == VEIL_OK)
        rc = veil_mpc_inv_sqrt(m, &t[VARE], &t[R]);
    if (rc == VEIL_OK)
        rc = veil_exec_broadcast(x, &t[R], d, in, &t[BR]);
    if (rc == VEIL_OK)
        rc = veil_mpc_mul(m, &t[XCS], &t[BR], &t[PROD]);
    if (rc == VEIL_OK)
        rc = veil_mpc_trunc(m, &t[PROD], x->frac_bits, &t[XHAT]);
    if (rc == VEIL_OK)
        rc = veil_exec_broadcast(x, VAL(x, n->in[1]), 1, in, &t[BG]);
    if (rc == VEIL_OK)
        rc = veil_mpc_mul(m, &t[XHAT], &t[BG], &t[YG]);
    struct veil_sec *y = VAL(x, n->index);
    if (rc == VEIL_OK)
        rc = veil_mpc_trunc(m, &t[YG], x->frac_bits, y);
    if (rc == VEIL_OK)
        rc = veil_exec_add_broadcast(x, y, VAL(x, n->in[2]), 1);
    /* the backward pass needs 1/sigma of the row itself: r S / 2^15 = trunc_15(r S) */
    if (rc == VEIL_OK && n->saved)
        rc = veil_mpc_mul(m, &t[R], &t[SCL], &t[RS]);
    if (rc == VEIL_OK && n->saved)
        rc = veil_mpc_trunc(m, &t[RS], VEIL_LN_SCALE_BITS, &t[R1]);
    if (rc == VEIL_OK && n->saved) {
        x->aux[n->index][0] = t[XHAT];
        x->aux[n->index][1] = t[R1];
        memset(&t[XHAT], 0, sizeof t[XHAT]);
        memset(&t[R1], 0, sizeof t[R1]);
    }
    release_all(x, t, NT);
    return rc;
}

int veil_lower_softmax(struct veil_exec *x, const struct veil_node *n)
{
    struct veil_sec *y = VAL(x, n->index);
    int rc = veil_mpc_softmax_lastdim(x->m, VAL(x, n->in[0]), y);
    if (rc == VEIL_OK && n->saved)
        rc = veil_exec_copy(x, y, y->ndim, y->dims, y->tile, &x->aux[n->index][0]);
    return rc;
}

/* With a GELU_GRAD after it (n->saved), the comparison bits and v stay for the backward pass. */
int veil_lower_gelu(struct veil_exec *x, const struct veil_node *n)
{
    if (n->saved)
        return veil_mpc_gelu_saved(x->m, VAL(x, n->in[0]), VAL(x, n->index), &x->aux[n->index][0],
                                   &x->aux[n->index][1]);
    return veil_mpc_gelu(x->m, VAL(x, n->in[0]), VAL(x, n->index));
}

/* y = sum_j onehot_j enc(j) over each row of k: the index of the first maximum, in fixed point. */
int veil_lower_argmax(struct veil_exec *x, const struct veil_node *n)
{
    const struct veil_node *xn = &x->p->nodes[n->in[0]];
    const size_t k = xn->dims[xn->ndim - 1];
    struct veil_sec t[4]; /* max, one-hot, index words, weighted one-hot */
    memset(t, 0, sizeof t);
    /* the one-hot alone; by the pairwise protocol where the rows are few (pool.h, PAIRWISE) */
    const size_t rows = veil_exec_batch_rows(x, n, VAL(x, n->in[0])->numel / k);
    int rc = veil_pool_pairwise_pays(rows, k)
                 ? veil_mpc_max_lastdim_pairwise(x->m, VAL(x, n->in[0]), NULL, &t[1])
                 : veil_mpc_max_lastdim(x->m, VAL(x, n->in[0]), &t[0], &t[1]);
    uint64_t *j = NULL;
    if (rc == VEIL_OK && veil_mpc_computes(x->m)) {
        j = malloc(t[1].numel * sizeof *j);
        if (!j)
            rc = veil_error(VEIL_ERR_NOMEM, "argmax '%s': out of memory", n->name);
        for (size_t i = 0; j && i < t[1].numel; i++)
            j[i] = (uint64_t)(i % k) << x->frac_bits;
    }
    if (rc == VEIL_OK)
        rc = veil_exec_public(x, &t[1], j, &t[2]);
    free(j);
    if (rc == VEIL_OK)
        rc = veil_mpc_mul_public(x->m, &t[1], &t[2], &t[3]);
    if (rc == VEIL_OK)
        rc = veil_exec_rowsum(x, &t[3], k, n->ndim, n->dims, VAL(x, n->index));
    release_all(x, t, 4);
    return rc;
}

/* The loss node keeps s = softmax(logits) (its gradient's operand); no loss value online. */
int veil_lower_softmax_xent(struct veil_exec *x, const struct veil_node *n)
{
    return veil_mpc_softmax_lastdim(x->m, VAL(x, n->in[0]), &x->aux[n->index][0]);
}

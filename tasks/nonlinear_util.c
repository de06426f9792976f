/*
 * nonlinear_util.c — shared steps of the nonlinear protocols (contract in nonlinear_internal.h).
 */
#include "config.h"

#include "tasks/nonlinear_internal.h"

#include "base/base_internal.h"
#include "tasks/beaver.h"
#include "tasks/compare.h"
#include "tasks/nonlinear.h"
#include "tasks/trunc.h"

#include <stdlib.h>
#include <string.h>

int veil_nl_check_unary(const char *op, const struct veil_sec *x, const struct veil_sec *y)
{
    if (!x || !y)
        return veil_error(VEIL_ERR_INVAL, "%s: NULL tensor", op);
    if (x->kind != VEIL_SHARE_ARITH)
        return veil_error(VEIL_ERR_INVAL, "%s: the input must be an arithmetic sharing", op);
    if (x->numel == 0 || x->ntiles < 1)
        return veil_error(VEIL_ERR_SHAPE, "%s: empty input tensor", op);
    return VEIL_OK;
}

size_t veil_nl_stack_tile(const veil_mpc_t *m)
{
    size_t t = veil_mpc_tile(m) & ~(size_t)63;
    return t < 64 ? 64 : t;
}

int veil_nl_flat(veil_mpc_t *m, struct veil_flatop_args a, struct veil_sec *const *outs, int nouts,
                 const struct veil_sec *const *ins, int nins)
{
    if (!veil_mpc_computes(m))
        return VEIL_OK;
    int no = 0, ni = 0;
    for (int i = 0; i < nouts; i++)
        no += outs[i]->ntiles;
    for (int i = 0; i < nins; i++)
        ni += ins[i]->ntiles;
    starpu_data_handle_t *h = malloc(sizeof *h * (size_t)(no + ni));
    if (!h)
        return veil_error(VEIL_ERR_NOMEM, "nonlinear: out of memory");
    int k = 0;
    for (int i = 0; i < nouts; i++)
        for (int t = 0; t < outs[i]->ntiles; t++)
            h[k++] = outs[i]->h[t];
    for (int i = 0; i < nins; i++)
        for (int t = 0; t < ins[i]->ntiles; t++)
            h[k++] = ins[i]->h[t];
    a.nout = no;
    a.nin = ni;
    if (veil_mpc_self(m) != 0)
        a.add_const = 0;
    int rc = veil_task_flatop(&a, h, h + no, veil_mpc_priority(m));
    free(h);
    return rc;
}

int veil_nl_mul_trunc(veil_mpc_t *m, const struct veil_sec *x, const struct veil_sec *y, int s,
                      struct veil_sec *z)
{
    struct veil_sec p = {0};
    int rc = veil_mpc_mul(m, x, y, &p);
    if (rc == VEIL_OK)
        rc = veil_mpc_trunc(m, &p, s, z);
    veil_mpc_release(m, &p);
    return rc;
}

int veil_nl_square_trunc(veil_mpc_t *m, const struct veil_sec *x, int s, struct veil_sec *z)
{
    struct veil_sec p = {0};
    int rc = veil_mpc_square(m, x, &p);
    if (rc == VEIL_OK)
        rc = veil_mpc_trunc(m, &p, s, z);
    veil_mpc_release(m, &p);
    return rc;
}

int veil_nl_rsub_scalar(veil_mpc_t *m, const struct veil_sec *x, uint64_t c, struct veil_sec *z)
{
    struct veil_sec neg = {0};
    int rc = veil_mpc_mul_scalar(m, x, UINT64_MAX, &neg);
    if (rc == VEIL_OK)
        rc = veil_mpc_add_scalar(m, &neg, c, z);
    veil_mpc_release(m, &neg);
    return rc;
}

int veil_nl_recip_newton(veil_mpc_t *m, const struct veil_sec *d, struct veil_sec *cur, int bits,
                         int iters, struct veil_sec *y)
{
    struct veil_sec xy = {0}, c = {0}, p = {0};
    int rc = VEIL_OK;
    for (int it = 0; it < iters && rc == VEIL_OK; it++) {
        if ((rc = veil_mpc_mul(m, d, cur, &xy)) != VEIL_OK ||
            (rc = veil_nl_rsub_scalar(m, &xy, UINT64_C(2) << 2 * bits, &c)) != VEIL_OK ||
            (rc = veil_mpc_mul(m, cur, &c, &p)) != VEIL_OK)
            break;
        veil_mpc_release(m, &c);
        veil_mpc_release(m, &xy);
        veil_mpc_release(m, cur);
        rc = veil_mpc_trunc(m, &p, 2 * bits, it + 1 == iters ? y : cur);
        veil_mpc_release(m, &p);
    }
    veil_mpc_release(m, cur);
    veil_mpc_release(m, &xy);
    veil_mpc_release(m, &c);
    veil_mpc_release(m, &p);
    return rc;
}

int veil_nl_start(veil_mpc_t *m, const struct veil_sec *x, const struct veil_nl_table *tab,
                  struct veil_sec *y0)
{
    struct veil_sec stack = {0}, bits = {0};
    size_t dims[1] = {x->numel * (size_t)tab->k};
    struct veil_flatop_args a;
    memset(&a, 0, sizeof a);
    int rc = veil_sec_init(m, &stack, VEIL_SHARE_ARITH, 1, dims, veil_nl_stack_tile(m));
    if (rc == VEIL_OK) {
        a.kind = VEIL_FLATOP_REPLICATE;
        a.k = (uint64_t)tab->k;
        a.add_const = 1;
        for (int i = 0; i < tab->k; i++)
            a.c[i] = 0 - tab->t[i + 1];
        struct veil_sec *outs[1] = {&stack};
        const struct veil_sec *ins[1] = {x};
        rc = veil_nl_flat(m, a, outs, 1, ins, 1);
    }
    if (rc == VEIL_OK)
        rc = veil_mpc_ltz(m, &stack, &bits);
    if (rc == VEIL_OK)
        rc = veil_sec_init_like(m, y0, x);
    if (rc == VEIL_OK) {
        a.kind = VEIL_FLATOP_WSUM;
        a.add_const = 1;
        a.c0 = tab->c0;
        for (int i = 0; i < tab->k; i++)
            a.c[i] = tab->w[i + 1];
        struct veil_sec *outs[1] = {y0};
        const struct veil_sec *ins[1] = {&bits};
        rc = veil_nl_flat(m, a, outs, 1, ins, 1);
    }
    veil_mpc_release(m, &stack);
    veil_mpc_release(m, &bits);
    return rc;
}

uint64_t veil_nl_ltz_bytes(uint64_t n)
{
    return 8 * (n + VEIL_LTZ_BLOCK_WORDS * ((n + 63) / 64));
}

/* veil_mpc_max_lastdim without argmax (pool.h): rounds and bytes / (N-1). */
static void max_cost(uint64_t rows, uint64_t k, uint64_t *rounds, uint64_t *bytes)
{
    *rounds = 0;
    *bytes = 0;
    for (uint64_t kl = k; kl > 1; kl = (kl + 1) / 2) {
        const uint64_t p = rows * (kl / 2);
        /* the select is local: d beta from the ltz's own c and an RBETA item (pool.h) */
        *rounds += VEIL_LTZ_ROUNDS;
        *bytes += veil_nl_ltz_bytes(p);
    }
}

int veil_nl_cost(enum veil_nl_op op, int nparties, size_t n, size_t k, int lo, int hi,
                 uint64_t *rounds, uint64_t *bytes)
{
    if (nparties < 2 || n == 0)
        return VEIL_ERR_INVAL;
    const uint64_t n1 = (uint64_t)nparties - 1, R = VEIL_LTZ_ROUNDS;
    uint64_t r = 0, b = 0;
    switch (op) {
    case VEIL_NL_EXP:
        r = 2 * (VEIL_EXP_SQUARINGS + 1);
        b = 16 * (VEIL_EXP_SQUARINGS + 1) * (uint64_t)n;
        break;
    case VEIL_NL_RECIP:
    case VEIL_NL_ISQRT: {
        const int steps = op == VEIL_NL_RECIP ? VEIL_RECIP_STEPS : VEIL_ISQRT_STEPS;
        const uint64_t K = (uint64_t)(steps * (hi - lo) - 1);
        if (hi <= lo)
            return VEIL_ERR_INVAL;
        r = R + (op == VEIL_NL_RECIP ? 3 * VEIL_RECIP_ITERS : 5 * VEIL_ISQRT_ITERS);
        b = veil_nl_ltz_bytes(K * n) +
            (op == VEIL_NL_RECIP ? 40 * VEIL_RECIP_ITERS : 64 * VEIL_ISQRT_ITERS) * (uint64_t)n;
        break;
    }
    case VEIL_NL_SOFTMAX: {
        if (k == 0 || n % k)
            return VEIL_ERR_INVAL;
        const uint64_t rows = n / k;
        int h = 1;
        while (((size_t)1 << h) <= k)
            h++;
        uint64_t mr, mb, rr = 0, rb = 0, er = 0, eb = 0;
        max_cost(rows, k, &mr, &mb);
        veil_nl_cost(VEIL_NL_EXP, 2, n, 0, 0, 0, &er, &eb);
        veil_nl_cost(VEIL_NL_RECIP, 2, rows, 0, 0, h, &rr, &rb);
        /* + the floor: ltz and a product (bits times words) on n words */
        r = mr + R + er + 1 + rr + 2;
        b = mb + veil_nl_ltz_bytes(n) + eb + 16 * (uint64_t)n + rb + 24 * (uint64_t)n;
        break;
    }
    case VEIL_NL_GELU:
        r = R + 2 * VEIL_GELU_DEG + 1;
        b = veil_nl_ltz_bytes(2 * (uint64_t)n) + (32 + 24 * VEIL_GELU_DEG) * (uint64_t)n;
        break;
    default:
        return VEIL_ERR_INVAL;
    }
    if (rounds)
        *rounds = r;
    if (bytes)
        *bytes = b * n1;
    return VEIL_OK;
}

int veil_nl_copy2(veil_mpc_t *m, struct veil_sec *o0, struct veil_sec *o1, int nouts,
                  const struct veil_sec *i0, const struct veil_sec *i1, int nins)
{
    struct veil_flatop_args a;
    memset(&a, 0, sizeof a);
    a.kind = VEIL_FLATOP_COPY;
    struct veil_sec *outs[2] = {o0, o1};
    const struct veil_sec *ins[2] = {i0, i1};
    return veil_nl_flat(m, a, outs, nouts, ins, nins);
}

int veil_nl_bits_wsum(veil_mpc_t *m, const struct veil_sec *like, const struct veil_sec *bits,
                        int k, uint64_t c0, const uint64_t *c, struct veil_sec *out)
{
    int rc = veil_sec_init_like(m, out, like);
    if (rc != VEIL_OK)
        return rc;
    struct veil_flatop_args a;
    memset(&a, 0, sizeof a);
    a.kind = VEIL_FLATOP_WSUM;
    a.k = (uint64_t)k;
    a.add_const = 1;
    a.c0 = c0;
    for (int i = 0; i < k; i++)
        a.c[i] = c[i];
    struct veil_sec *outs[1] = {out};
    const struct veil_sec *ins[1] = {bits};
    return veil_nl_flat(m, a, outs, 1, ins, 1);
}

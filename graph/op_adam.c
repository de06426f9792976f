/*
 * op_adam.c — the Adam and AdamW update (ADAM_UPDATE, a row of the op table emitted by autodiff.c
 * per parameter when veil_compile_options.optimizer is ADAM or ADAMW): the options' checks, the
 * moments' scale, the plaintext evaluation in both modes (DOUBLE: the float rule of
 * include/veil/graph.h, enum veil_optimizer; FIXED: the ring sequence of graph_internal.h,
 * ADAM_UPDATE) and the secure lowering, which follows that sequence step for step. The moments
 * are executor state per parameter (plaintext: e->vd/vw and e->sd/sw; secure: x->velocity and
 * x->moment2, which checkpoints save), the step t is public (the trainer's and the session's step
 * count), so the bias corrections are public reals.
 *
 * WHY A SCALE AND A SUM. In fixed point a gradient of a few ulps has a square below one ulp. The
 * moments are therefore kept for S g, S = 2^s chosen from eps so that S^2 eps >= 2^lo, lo =
 * -floor(f/2): z = S^2 (vhat + eps) is never below the inverse square root's range [2^lo,
 * 2^(lo+32)), whatever the gradients, and the update mhat / sqrt(vhat + eps) = S mhat / sqrt(z)
 * does not depend on S. The second moment is kept as the sum v / (1 - beta2) = sum_k
 * beta2^(t-k) (S g_k)^2: each step adds the new square whole instead of (1 - beta2) of it, which
 * fixed point would floor to nothing for every square below about 1000 ulps at beta2 = 0.999
 * (the small gradients of an MLP then moved their weights by up to lr |g| / sqrt(eps) instead of
 * about lr); the public c2 = (1 - beta2) / (1 - beta2^t) turns it into vhat. Its decay is v -
 * trunc(v enc(1 - beta2)), not trunc(v enc(beta2)), so that the product stays below 2^62 for
 * sums up to 2^(40-f) (the product by c2 is z itself, inside the range). The inverse square root
 * is the normalised one (tasks/rsqrt_norm.h) over those 32 octaves, its result at f + 8 bits
 * (rr = 2^8 / sqrt(z) at f bits), so that small values of 1/sqrt(z) keep their precision.
 */
#include "config.h"

#include "base/base_internal.h"
#include "graph/graph_internal.h"
#include "graph/plain/plain_ops_internal.h"
#include "graph/secure/exec_internal.h"
#include "tasks/beaver.h"
#include "tasks/rsqrt_norm.h"
#include "tasks/trunc.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define OCTAVES 32 /* of the inverse square root: z in [2^lo, 2^(lo+32)) */
#define RR_BITS 8  /* rr = 2^8 / sqrt(z) at f bits: the inverse square root at f + 8 bits */

/* The lowest octave of the inverse square root's range at f bits. */
static int isqrt_lo(int f)
{
    return -(f / 2);
}

int veil_adam_scale_bits(double eps, int f)
{
    int s = 0;
    while (s < 62 && ldexp(eps, 2 * s) < ldexp(1.0, isqrt_lo(f)))
        s++;
    return s;
}

int veil_adam_check_options(const struct veil_compile_options *o)
{
    const char *nm = o->optimizer == VEIL_OPTIMIZER_ADAMW ? "AdamW" : "Adam";
    const int f = o->frac_bits;
    if (!(o->beta1 >= 0.0 && o->beta1 < 1.0))
        return veil_error(VEIL_ERR_INVAL, "veil_compile: %s beta1 %g; give a value in [0, 1) (0.9 "
                          "is the default)", nm, o->beta1);
    if (!(o->beta2 >= 0.0 && o->beta2 < 1.0))
        return veil_error(VEIL_ERR_INVAL, "veil_compile: %s beta2 %g; give a value in [0, 1) "
                          "(0.999 is the default)", nm, o->beta2);
    if (!(o->eps > 0.0 && o->eps <= 1.0))
        return veil_error(VEIL_ERR_INVAL, "veil_compile: %s eps %g; give a value in (0, 1] (1e-8 "
                          "is the default)", nm, o->eps);
    if (o->beta1 != 0.0 && llround(ldexp(o->beta1, f)) < 16)
        return veil_error(VEIL_ERR_RANGE, "veil_compile: %s beta1 %g is below what %d fractional "
                          "bits can represent (at least %g); use 0, a larger beta1 or more "
                          "frac_bits", nm, o->beta1, f, ldexp(15.5, -f));
    if (llround(ldexp(1.0 - o->beta2, f)) < 16)
        return veil_error(VEIL_ERR_RANGE, "veil_compile: %s 1 - beta2 = %g is below what %d "
                          "fractional bits can represent (at least %g); use a smaller beta2 or "
                          "more frac_bits", nm, 1.0 - o->beta2, f, ldexp(15.5, -f));
    if (veil_rsqrt_norm_check(o->optimizer == VEIL_OPTIMIZER_ADAMW ? "veil_compile: AdamW"
                                                                   : "veil_compile: Adam",
                              f, isqrt_lo(f), isqrt_lo(f) + OCTAVES, RR_BITS) != VEIL_OK)
        return VEIL_ERR_UNSUPPORTED; /* its message names the limits */
    if (veil_adam_scale_bits(o->eps, f) > f)
        return veil_error(VEIL_ERR_RANGE, "veil_compile: %s eps %g is too small for %d fractional "
                          "bits (the moments are kept for the gradient times 2^s with 2^2s eps >= "
                          "2^%d, and s may not exceed %d); use eps >= %g", nm, o->eps, f,
                          isqrt_lo(f), f, ldexp(1.0, isqrt_lo(f) - 2 * f));
    return VEIL_OK;
}

/* The public constants of step t: the bias corrections c1 = 1 / (1 - beta1^t) and, for the
 * second moment kept as a sum (v / (1 - beta2)), c2 = (1 - beta2) / (1 - beta2^t), both public;
 * and enc(2^2s eps). */
struct adam_k {
    double c1, c2, c2d; /* c2d = 1 / (1 - beta2^t): the float rule's */
    uint64_t eps_w;
    int lo, s, f;
};

static int constants(const struct veil_node *n, uint64_t t, int f, const char *who,
                     struct adam_k *k)
{
    if (t < 1)
        return veil_error(VEIL_ERR_STATE, "%s: adam_update '%s': no step number (a training "
                          "step sets it)", who, n->name);
    k->f = f;
    k->s = n->a.adam_s;
    k->lo = isqrt_lo(f);
    k->c1 = 1.0 / (1.0 - pow(n->a.beta1, (double)t));
    k->c2 = (1.0 - n->a.beta2) / (1.0 - pow(n->a.beta2, (double)t));
    k->c2d = 1.0 / (1.0 - pow(n->a.beta2, (double)t));
    k->eps_w = veil_exec_fixed(ldexp(n->a.adam_eps, 2 * k->s), f);
    return VEIL_OK;
}

/* ---- plaintext ------------------------------------------------------------------------------ */

/* veil_exec_scale's arithmetic: x c for an integer c, else trunc(x enc(c)). */
static uint64_t pscale(const struct veil_plain_exec *e, uint64_t x, double c)
{
    if (c == nearbyint(c) && fabs(c) < 0x1p62)
        return x * (uint64_t)(int64_t)c;
    return veil_plain_trunc(e, x * veil_plain_enc(c, e->f), e->f);
}

/* DOUBLE: the float rule (include/veil/graph.h), moments unscaled. ga: the applied gradient. */
static void plain_double(struct veil_plain_exec *e, const struct veil_node *n,
                         const struct adam_k *k, double *ga)
{
    const int p = n->in[0], gm = n->a.grad_mul > 1 ? n->a.grad_mul : 1;
    const double b1 = n->a.beta1, b2 = n->a.beta2, wd = n->a.weight_decay;
    double *w = e->d[p], *m = e->vd[p], *v = e->sd[p];
    const double *gr = e->d[n->in[1]];
    for (size_t i = 0; i < n->numel; i++) {
        ga[i] = (double)gm * gr[i];
        const double g = n->a.adamw ? ga[i] : ga[i] + wd * w[i];
        m[i] = b1 * m[i] + (1.0 - b1) * g;
        v[i] = b2 * v[i] + (1.0 - b2) * g * g;
        double u = m[i] * k->c1 / sqrt(v[i] * k->c2d + n->a.adam_eps);
        if (n->a.adamw)
            u += wd * w[i];
        w[i] -= n->a.lr * u;
    }
}

/* FIXED: graph_internal.h's ADAM_UPDATE sequence. tmp: TMP_ARRAYS x numel words. */
#define TMP_ARRAYS 3
static void plain_fixed(struct veil_plain_exec *e, const struct veil_node *n,
                        const struct adam_k *k, uint64_t *ga, uint64_t *tmp)
{
    const int p = n->in[0], f = e->f;
    const uint64_t gm = n->a.grad_mul > 1 ? (uint64_t)n->a.grad_mul : 1;
    const double wd = n->a.weight_decay;
    const size_t cnt = n->numel;
    uint64_t *w = e->w[p], *m = e->vw[p], *v = e->sw[p];
    const uint64_t *gr = e->w[n->in[1]];
    uint64_t *mh = tmp, *z = tmp + cnt, *rr = tmp + 2 * cnt;
    for (size_t i = 0; i < cnt; i++) {
        ga[i] = gm * gr[i];
        uint64_t g = ga[i];
        if (!n->a.adamw && wd != 0.0)
            g += pscale(e, w[i], wd);
        const uint64_t gs = g * (UINT64_C(1) << k->s);
        m[i] = gs + pscale(e, m[i] - gs, n->a.beta1);
        v[i] = veil_plain_trunc(e, gs * gs, f) + (v[i] - pscale(e, v[i], 1.0 - n->a.beta2));
        mh[i] = pscale(e, m[i], k->c1);
        z[i] = pscale(e, v[i], k->c2) + k->eps_w;
    }
    veil_ref_rsqrt_norm(cnt, z, k->lo, k->lo + OCTAVES, f, RR_BITS, NULL, rr);
    for (size_t i = 0; i < cnt; i++) {
        uint64_t u = veil_plain_trunc(e, mh[i] * rr[i], f + RR_BITS);
        if (n->a.adamw && wd != 0.0)
            u += pscale(e, w[i], wd);
        w[i] -= pscale(e, u, n->a.lr);
    }
}

/* Allocates *slot (numel entries of size sz, zeroed) on first use; 0 when out of memory. */
static int state(void **slot, size_t numel, size_t sz)
{
    if (!*slot)
        *slot = calloc(numel ? numel : 1, sz);
    return *slot != NULL;
}

/* The update in place in the parameter's array; the applied gradient copied for the trainer
 * (plain_internal.h), the moments kept in vd/vw (first) and sd/sw (second). */
static int plain_adam(struct veil_plain_exec *e, const struct veil_node *n)
{
    const int p = n->in[0];
    struct adam_k k;
    int rc = constants(n, e->step, e->f, "plain run", &k);
    if (rc != VEIL_OK)
        return rc;
    const int fx = IS_FIXED(e);
    const size_t sz = fx ? sizeof(uint64_t) : sizeof(double);
    const size_t cnt = n->numel;
    int ok = fx ? state((void **)&e->gw[p], cnt, sz) && state((void **)&e->vw[p], cnt, sz) &&
                      state((void **)&e->sw[p], cnt, sz)
                : state((void **)&e->gd[p], cnt, sz) && state((void **)&e->vd[p], cnt, sz) &&
                      state((void **)&e->sd[p], cnt, sz);
    uint64_t *tmp = ok && fx ? malloc((cnt ? cnt : 1) * TMP_ARRAYS * sizeof *tmp) : NULL;
    if (!ok || (fx && !tmp))
        return veil_error(VEIL_ERR_NOMEM, "plain run: adam_update '%s': out of memory", n->name);
    if (fx)
        plain_fixed(e, n, &k, e->gw[p], tmp);
    else
        plain_double(e, n, &k, e->gd[p]);
    free(tmp);
    return VEIL_OK;
}

/* ---- secure ---------------------------------------------------------------------------------- */

/* The temporaries of the lowering, released together. */
enum { G, GM, WD1, GG, GS, D1, D2, M1, SQ0, SQ, D3, D4, V1, MH, VH, Z, RR, U0, U, WD2, U1, DW,
       W1, NT };

/* rr = 2^8 / sqrt(z) (the inverse square root at f + 8 bits over [2^lo, 2^(lo+32))), then
 * u = trunc_(f+8)(mh rr). */
static int lower_ratio(struct veil_exec *x, const struct adam_k *k, struct veil_sec *t)
{
    veil_mpc_t *m = x->m;
    int rc = veil_mpc_rsqrt_norm(m, &t[Z], k->lo, k->lo + OCTAVES, RR_BITS, &t[RR]);
    if (rc == VEIL_OK)
        rc = veil_mpc_mul(m, &t[MH], &t[RR], &t[U0]);
    if (rc == VEIL_OK)
        rc = veil_mpc_trunc(m, &t[U0], k->f + RR_BITS, &t[U]);
    return rc;
}

/* The moments: m' = gs + scale(m - gs, beta1), v' = trunc(gs gs) + (v - scale(v, 1 - beta2)),
 * then mh and z = scale(v', c2) + enc(2^2s eps). */
static int lower_moments(struct veil_exec *x, const struct veil_node *n, const struct adam_k *k,
                         const struct veil_sec *m0, const struct veil_sec *v0, struct veil_sec *t)
{
    veil_mpc_t *m = x->m;
    int rc = veil_mpc_sub(m, m0, &t[GS], &t[D1]);
    if (rc == VEIL_OK)
        rc = veil_exec_scale(x, &t[D1], n->a.beta1, &t[D2]);
    if (rc == VEIL_OK)
        rc = veil_mpc_add(m, &t[GS], &t[D2], &t[M1]);
    if (rc == VEIL_OK)
        rc = veil_mpc_square(m, &t[GS], &t[SQ0]);
    if (rc == VEIL_OK)
        rc = veil_mpc_trunc(m, &t[SQ0], k->f, &t[SQ]);
    if (rc == VEIL_OK)
        rc = veil_exec_scale(x, v0, 1.0 - n->a.beta2, &t[D3]);
    if (rc == VEIL_OK)
        rc = veil_mpc_sub(m, v0, &t[D3], &t[D4]);
    if (rc == VEIL_OK)
        rc = veil_mpc_add(m, &t[SQ], &t[D4], &t[V1]);
    if (rc == VEIL_OK)
        rc = veil_exec_scale(x, &t[M1], k->c1, &t[MH]);
    if (rc == VEIL_OK)
        rc = veil_exec_scale(x, &t[V1], k->c2, &t[VH]);
    if (rc == VEIL_OK)
        rc = veil_mpc_add_scalar(m, &t[VH], k->eps_w, &t[Z]);
    return rc;
}

/* The sequence of graph_internal.h (ADAM_UPDATE) on the parameter's layout; w', m' and v'
 * replace the parameter's tensor and its moments (as SGD's update, lower_backward.c). */
static int lower_adam(struct veil_exec *x, const struct veil_node *n)
{
    const int pi = n->in[0];
    struct veil_sec *w = &x->val[pi], *m0 = &x->velocity[pi], *v0 = &x->moment2[pi];
    struct adam_k k;
    int rc = constants(n, x->step, x->frac_bits, "secure run", &k);
    if (rc != VEIL_OK)
        return rc;
    struct veil_sec t[NT];
    memset(t, 0, sizeof t);
    const struct veil_sec *g;
    if (m0->numel == 0)
        rc = veil_exec_public_share(x, w->ndim, w->dims, w->tile, NULL, m0);
    if (rc == VEIL_OK && v0->numel == 0)
        rc = veil_exec_public_share(x, w->ndim, w->dims, w->tile, NULL, v0);
    if (rc == VEIL_OK)
        rc = veil_exec_like_layout(x, &x->val[n->in[1]], w, &t[G], &g);
    if (rc == VEIL_OK && n->a.grad_mul > 1) {
        rc = veil_exec_scale(x, g, (double)n->a.grad_mul, &t[GM]);
        g = &t[GM];
    }
    const double wd = n->a.weight_decay;
    if (rc == VEIL_OK && !n->a.adamw && wd != 0.0) {
        rc = veil_exec_scale(x, w, wd, &t[WD1]);
        if (rc == VEIL_OK)
            rc = veil_mpc_add(x->m, g, &t[WD1], &t[GG]);
        g = &t[GG];
    }
    if (rc == VEIL_OK)
        rc = veil_exec_scale(x, g, ldexp(1.0, k.s), &t[GS]);
    if (rc == VEIL_OK)
        rc = lower_moments(x, n, &k, m0, v0, t);
    if (rc == VEIL_OK)
        rc = lower_ratio(x, &k, t);
    const struct veil_sec *u = &t[U];
    if (rc == VEIL_OK && n->a.adamw && wd != 0.0) {
        rc = veil_exec_scale(x, w, wd, &t[WD2]);
        if (rc == VEIL_OK)
            rc = veil_mpc_add(x->m, &t[U], &t[WD2], &t[U1]);
        u = &t[U1];
    }
    if (rc == VEIL_OK)
        rc = veil_exec_scale(x, u, n->a.lr, &t[DW]);
    if (rc == VEIL_OK)
        rc = veil_mpc_sub(x->m, w, &t[DW], &t[W1]);
    if (rc == VEIL_OK) {
        const int keep[3] = {W1, M1, V1};
        struct veil_sec *dst[3] = {w, m0, v0};
        for (int j = 0; j < 3; j++) {
            veil_mpc_release(x->m, dst[j]);
            *dst[j] = t[keep[j]];
            memset(&t[keep[j]], 0, sizeof t[keep[j]]);
        }
    }
    for (int j = 0; j < NT; j++)
        veil_mpc_release(x->m, &t[j]);
    return rc;
}

/* Cost at f = 16: 32 rounds counted (the 22-round inverse square root over 32 octaves, the
 * products and truncations around it; 29 deep), two passes each. */
const struct veil_op_desc veil_opd_adam_update = {
    .name = "adam_update",
    .nin_min = 2,
    .nin_max = 2,
    .flags = VEIL_OPF_BACKWARD | VEIL_OPF_ELEMENTWISE,
    .region = VEIL_REGION_OTHER,
    .passes = 64,
    .plain = plain_adam,
    .lower = lower_adam,
};

/*
 * compare.c — LTZ (x < 0) by a masked open and a bit-sliced generate/propagate carry circuit
 * (costs and the protocol in compare.h). Per tile: a leaf task bit-slices the public c = x - r
 * and this party's XOR share of r into the 63 (g, p) leaves (local: c is public), then six
 * levels of AND gates (and_gates.c), each a "prepare operands" task, one AND layer, and a
 * "combine" task, then the msb word and its B2A (b2a.c). Nothing waits across tiles.
 */
#include "config.h"
#include "base/base_internal.h"
#include "codelets/bits_common.h"
#include "codelets/codelets_internal.h"
#include "tasks/compare.h"
#include "tasks/compare_common.h"
#include "tasks/compare_internal.h"
#ifdef VEIL_USE_CUDA
#include "tasks/cuda/compare_cuda_internal.h"
#endif

#include <string.h>

#define LEAVES VEIL_CMP_LEAVES

/* ---- codelets (word math in compare_common.h, CUDA bodies in cuda/compare.cu) --------- */

/* c (public, T), rb (share, T) -> state (G[63][B] | P[63][B]), top (B): the leaves. */
static void leaf_cpu(void *buffers[], void *cl_arg)
{
    const struct veil_cmp_party_arg *arg = veil_cmp_arg(cl_arg);
    const uint64_t *c = (const uint64_t *)STARPU_VECTOR_GET_PTR(buffers[0]);
    const uint64_t *r = (const uint64_t *)STARPU_VECTOR_GET_PTR(buffers[1]);
    uint64_t *st = (uint64_t *)STARPU_VECTOR_GET_PTR(buffers[2]);
    uint64_t *top = (uint64_t *)STARPU_VECTOR_GET_PTR(buffers[3]);
    const size_t n = STARPU_VECTOR_GET_NX(buffers[0]);
    const size_t nb = STARPU_VECTOR_GET_NX(buffers[3]);
    const uint64_t pub = arg->party0 ? ~UINT64_C(0) : 0;
    uint64_t ct[64], rt[64];
    for (size_t b = 0; b < nb; b++) {
        veil_cmp_slice_block(c, r, n, b, ct, rt);
        for (int i = 0; i < LEAVES; i++) {
            st[(size_t)i * nb + b] = veil_cmp_leaf_g(ct[i], rt[i]);
            st[((size_t)LEAVES + (size_t)i) * nb + b] = veil_cmp_leaf_p(ct[i], rt[i], pub);
        }
        top[b] = veil_cmp_leaf_p(ct[63], rt[63], pub);
    }
}

/* state_l -> X, Y: the AND operands of level l (G gates first, then P gates). */
static void prep_cpu(void *buffers[], void *cl_arg)
{
    const struct veil_cmp_level_arg *arg = veil_cmp_arg(cl_arg);
    const struct veil_cmp_level v = veil_cmp_level_of(arg->l);
    const uint64_t *st = (const uint64_t *)STARPU_VECTOR_GET_PTR(buffers[0]);
    uint64_t *x = (uint64_t *)STARPU_VECTOR_GET_PTR(buffers[1]);
    uint64_t *y = (uint64_t *)STARPU_VECTOR_GET_PTR(buffers[2]);
    if (v.words == 0)
        return;
    const size_t nb = STARPU_VECTOR_GET_NX(buffers[1]) / (size_t)v.words;
    for (int w = 0; w < v.words; w++) {
        int xr, yr;
        veil_cmp_prep_src(&v, w, &xr, &yr);
        memcpy(x + (size_t)w * nb, st + (size_t)xr * nb, nb * 8);
        memcpy(y + (size_t)w * nb, st + (size_t)yr * nb, nb * 8);
    }
}

/* state_l, z (AND results) -> state_{l+1} (only G at the last level). */
static void comb_cpu(void *buffers[], void *cl_arg)
{
    const struct veil_cmp_level_arg *arg = veil_cmp_arg(cl_arg);
    const struct veil_cmp_level v = veil_cmp_level_of(arg->l);
    const uint64_t *st = (const uint64_t *)STARPU_VECTOR_GET_PTR(buffers[0]);
    const uint64_t *z = (const uint64_t *)STARPU_VECTOR_GET_PTR(buffers[1]);
    uint64_t *out = (uint64_t *)STARPU_VECTOR_GET_PTR(buffers[2]);
    if (v.words == 0)
        return;
    const size_t nb = STARPU_VECTOR_GET_NX(buffers[1]) / (size_t)v.words;
    const int rows = veil_cmp_comb_rows(&v);
    for (int row = 0; row < rows; row++) {
        int sr, zr;
        veil_cmp_comb_src(&v, row, &sr, &zr);
        uint64_t *o = out + (size_t)row * nb;
        const uint64_t *s = sr >= 0 ? st + (size_t)sr * nb : NULL;
        const uint64_t *zz = zr >= 0 ? z + (size_t)zr * nb : NULL;
        /* whole rows: copies and one vectorised XOR loop */
        if (s && zz) {
            for (size_t b = 0; b < nb; b++)
                o[b] = s[b] ^ zz[b];
        } else if (s || zz) {
            memcpy(o, s ? s : zz, nb * 8);
        } else {
            memset(o, 0, nb * 8);
        }
    }
}

static struct starpu_perfmodel leaf_model = {.type = STARPU_HISTORY_BASED,
                                             .symbol = "veil_ltz_leaf"};
static struct starpu_perfmodel prep_model = {.type = STARPU_HISTORY_BASED,
                                             .symbol = "veil_ltz_prep"};
static struct starpu_perfmodel comb_model = {.type = STARPU_HISTORY_BASED,
                                             .symbol = "veil_ltz_comb"};

struct starpu_codelet veil_cmp_leaf_cl = {
    .cpu_funcs = {leaf_cpu},
    .cpu_funcs_name = {"leaf_cpu"},
#ifdef VEIL_USE_CUDA
    .cuda_funcs = {veil_cmp_leaf_cuda},
    .cuda_flags = {STARPU_CUDA_ASYNC},
#endif
    .nbuffers = 4,
    .modes = {STARPU_R, STARPU_R, STARPU_W, STARPU_W},
    .model = &leaf_model,
    .name = "veil_ltz_leaf",
};
struct starpu_codelet veil_cmp_prep_cl = {
    .cpu_funcs = {prep_cpu},
    .cpu_funcs_name = {"prep_cpu"},
#ifdef VEIL_USE_CUDA
    .cuda_funcs = {veil_cmp_prep_cuda},
    .cuda_flags = {STARPU_CUDA_ASYNC},
#endif
    .nbuffers = 3,
    .modes = {STARPU_R, STARPU_W, STARPU_W},
    .model = &prep_model,
    .name = "veil_ltz_prep",
};
struct starpu_codelet veil_cmp_comb_cl = {
    .cpu_funcs = {comb_cpu},
    .cpu_funcs_name = {"comb_cpu"},
#ifdef VEIL_USE_CUDA
    .cuda_funcs = {veil_cmp_comb_cuda},
    .cuda_flags = {STARPU_CUDA_ASYNC},
#endif
    .nbuffers = 3,
    .modes = {STARPU_R, STARPU_R, STARPU_W},
    .model = &comb_model,
    .name = "veil_ltz_comb",
};

/* ---- protocol ------------------------------------------------------------------------- */

struct veil_sec veil_cmp_flat(const struct veil_sec *x)
{
    struct veil_sec v = *x;
    v.ndim = 1;
    memset(v.dims, 0, sizeof v.dims);
    v.dims[0] = x->numel;
    return v;
}

/* The six AND levels: state (the leaves, consumed) -> *g, the carry into bit 63. */
static int carry_tree(veil_mpc_t *m, const struct veil_sec *x, struct veil_sec *state,
                      struct veil_sec *g)
{
    const int party = veil_mpc_computes(m);
    int rc = VEIL_OK;
    for (int l = 0; rc == VEIL_OK; l++) {
        const struct veil_cmp_level v = veil_cmp_level_of(l);
        if (v.k == 1)
            break;
        struct veil_sec xs = {0}, ys = {0}, zs = {0}, next = {0};
        const struct veil_cmp_level_arg arg = {.l = l};
        if ((rc = veil_cmp_sliced(m, "ltz", x, (size_t)v.words, &xs)) == VEIL_OK &&
            (rc = veil_cmp_sliced(m, "ltz", x, (size_t)v.words, &ys)) == VEIL_OK &&
            (rc = veil_cmp_sliced(m, "ltz", x, v.last ? 1 : 2 * (size_t)v.knext, &next)) ==
                VEIL_OK) {
            for (int t = 0; party && t < x->ntiles && rc == VEIL_OK; t++) {
                const starpu_data_handle_t h[3] = {state->h[t], xs.h[t], ys.h[t]};
                rc = veil_cmp_submit(m, &veil_cmp_prep_cl, "ltz", h, NULL, 3, &arg, sizeof arg);
            }
            if (rc == VEIL_OK)
                rc = veil_mpc_and(m, &xs, &ys, &zs);
            for (int t = 0; party && t < x->ntiles && rc == VEIL_OK; t++) {
                const starpu_data_handle_t h[3] = {state->h[t], zs.h[t], next.h[t]};
                rc = veil_cmp_submit(m, &veil_cmp_comb_cl, "ltz", h, NULL, 3, &arg, sizeof arg);
            }
        }
        veil_mpc_release(m, &xs);
        veil_mpc_release(m, &ys);
        veil_mpc_release(m, &zs);
        veil_mpc_release(m, state);
        *state = next;
    }
    if (rc != VEIL_OK) {
        veil_mpc_release(m, state);
        return rc;
    }
    *g = *state;
    memset(state, 0, sizeof *state);
    return VEIL_OK;
}

static int check_input(const char *op, const struct veil_sec *x)
{
    if (x->kind != VEIL_SHARE_ARITH)
        return veil_error(VEIL_ERR_INVAL, "%s: the input must be an arithmetic sharing", op);
    size_t wn, wt;
    return veil_cmp_sliced_layout(op, x, 1, &wn, &wt);
}

int veil_cmp_ltz_open(veil_mpc_t *m, const struct veil_sec *x, struct veil_mpc_mat *bit,
                      struct veil_pub *f)
{
    memset(bit, 0, sizeof *bit);
    memset(f, 0, sizeof *f);
    int rc = check_input("ltz", x);
    if (rc != VEIL_OK)
        return rc;
    struct veil_mpc_mat mask;
    const size_t mtile = x->ntiles > 1 ? x->tile : SIZE_MAX;
    if ((rc = veil_mpc_material(m, veil_preproc_item_cmpmask(0, x->numel), mtile, &mask)) !=
        VEIL_OK)
        return rc;
    if ((rc = veil_mpc_material(m, veil_preproc_item_bit(0, x->numel), mtile, bit)) != VEIL_OK) {
        veil_mpc_mat_release(m, &mask);
        return rc;
    }
    const int party = veil_mpc_computes(m);
    struct veil_sec xf = veil_cmp_flat(x), c = {0}, state = {0}, top = {0}, g = {0}, msb = {0};

    veil_mpc_round(m);
    if ((rc = veil_mpc_open(m, &xf, &mask.part[VEIL_PRE_CM_R], &c)) != VEIL_OK ||
        (rc = veil_cmp_sliced(m, "ltz", x, 2 * LEAVES, &state)) != VEIL_OK ||
        (rc = veil_cmp_sliced(m, "ltz", x, 1, &top)) != VEIL_OK)
        goto out;
    const struct veil_cmp_party_arg la = {.party0 = veil_mpc_self(m) == 0};
    for (int t = 0; party && t < x->ntiles && rc == VEIL_OK; t++) {
        const starpu_data_handle_t h[4] = {c.h[t], mask.part[VEIL_PRE_CM_RB].h[t], state.h[t],
                                           top.h[t]};
        rc = veil_cmp_submit(m, &veil_cmp_leaf_cl, "ltz", h, NULL, 4, &la, sizeof la);
    }
    if (rc == VEIL_OK)
        rc = carry_tree(m, x, &state, &g);
    if (rc == VEIL_OK)
        rc = veil_cmp_sliced(m, "ltz", x, 1, &msb);
    for (int t = 0; party && t < x->ntiles && rc == VEIL_OK; t++)
        rc = veil_task_xor(top.h[t], g.h[t], msb.h[t], veil_mpc_priority(m));
    if (rc == VEIL_OK)
        rc = veil_cmp_b2a_open(m, &msb, x, bit, f);
out:
    veil_mpc_release(m, &c);
    veil_mpc_release(m, &state);
    veil_mpc_release(m, &top);
    veil_mpc_release(m, &g);
    veil_mpc_release(m, &msb);
    veil_mpc_mat_release(m, &mask);
    if (rc != VEIL_OK) {
        veil_mpc_mat_release(m, bit);
        veil_mpc_release(m, f);
    }
    return rc;
}

int veil_mpc_ltz(veil_mpc_t *m, const struct veil_sec *x, struct veil_sec *b)
{
    if (!m || !x || !b)
        return veil_error(VEIL_ERR_INVAL, "ltz: NULL argument");
    memset(b, 0, sizeof *b);
    struct veil_mpc_mat bit;
    struct veil_pub f;
    int rc = veil_cmp_ltz_open(m, x, &bit, &f);
    if (rc != VEIL_OK)
        return rc;
    rc = veil_cmp_b2a_finish(m, &f, &bit, x, b);
    veil_mpc_release(m, &f);
    veil_mpc_mat_release(m, &bit);
    return rc;
}

/*
 * compare.c — LTZ (x < 0) by a masked open and a bit-sliced generate/propagate carry circuit
 * (costs and the protocol in compare.h). Per tile: a leaf task bit-slices the public c = x - r
 * and this party's XOR share of r and combines the 63 (g, p) leaves into 16 groups of 4 with the
 * CMPPROD item's products of r's bits (local: c is public), then two levels of 4-to-1 groups,
 * each a "gather" task (the groups' inputs), one open against a CARRY4 item's masks and a
 * "group" task (carry4_common.h), then the msb word and its B2A (b2a.c). Nothing waits across
 * tiles.
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

/* ---- codelets (word math in compare_common.h, CUDA bodies in cuda/compare.cu) --------- */

/* c (public, T), rb (share, T), pr (CMPPROD, 176 B) -> state of level 1 (G[16][B] | P[16][B]),
 * top (B): the leaves and the level-0 groups, local (carry4_common.h). */
static void leaf_cpu(void *buffers[], void *cl_arg)
{
    const struct veil_cmp_party_arg *arg = veil_cmp_arg(cl_arg);
    const uint64_t *c = (const uint64_t *)STARPU_VECTOR_GET_PTR(buffers[0]);
    const uint64_t *r = (const uint64_t *)STARPU_VECTOR_GET_PTR(buffers[1]);
    const uint64_t *pr = (const uint64_t *)STARPU_VECTOR_GET_PTR(buffers[2]);
    uint64_t *st = (uint64_t *)STARPU_VECTOR_GET_PTR(buffers[3]);
    uint64_t *top = (uint64_t *)STARPU_VECTOR_GET_PTR(buffers[4]);
    const size_t n = STARPU_VECTOR_GET_NX(buffers[0]);
    const size_t nb = STARPU_VECTOR_GET_NX(buffers[4]);
    const uint64_t pub = arg->party0 ? ~UINT64_C(0) : 0;
    uint64_t ct[64], rt[64];
    size_t b = 0;
    for (; b + 8 <= n / 64; b += 8) /* eight full blocks at a time (compare_leaf8.c) */
        veil_cmp_leaf8(c, r, pr, pub, st, top, nb, b);
    for (; b < nb; b++) {
        veil_cmp_slice_block(c, r, n, b, ct, rt);
        veil_cmp_leaf_groups(ct, rt, pr + b * VEIL_C4_LEAF_WORDS, pub, st, nb, b);
        top[b] = veil_cmp_leaf_p(ct[63], rt[63], pub);
    }
}

/* state_l -> the level's records (7 input words per group and block, carry4_common.h). */
static void gather_cpu(void *buffers[], void *cl_arg)
{
    const struct veil_cmp_level_arg *arg = veil_cmp_arg(cl_arg);
    const struct veil_cmp_level v = veil_cmp_level_of(arg->l);
    const uint64_t *st = (const uint64_t *)STARPU_VECTOR_GET_PTR(buffers[0]);
    uint64_t *rec = (uint64_t *)STARPU_VECTOR_GET_PTR(buffers[1]);
    const size_t nb = STARPU_VECTOR_GET_NX(buffers[1]) / ((size_t)VEIL_C4_INPUTS * v.knext);
    const uint64_t pub = arg->party0 ? ~UINT64_C(0) : 0;
    for (int j = 0; j < v.knext; j++)
        for (size_t b = 0; b < nb; b++) {
            uint64_t *r = rec + ((size_t)j * nb + b) * VEIL_C4_INPUTS;
            for (int i = 0; i < VEIL_C4_INPUTS; i++)
                r[i] = veil_cmp_gather_word(&v, st, nb, j, i, b, pub);
        }
}

/* e (opened records), a (masks), pr (products), state_l -> state_{l+1} (only G at the last
 * level). */
static void group_cpu(void *buffers[], void *cl_arg)
{
    const struct veil_cmp_level_arg *arg = veil_cmp_arg(cl_arg);
    const struct veil_cmp_level v = veil_cmp_level_of(arg->l);
    const uint64_t *e = (const uint64_t *)STARPU_VECTOR_GET_PTR(buffers[0]);
    const uint64_t *a = (const uint64_t *)STARPU_VECTOR_GET_PTR(buffers[1]);
    const uint64_t *pr = (const uint64_t *)STARPU_VECTOR_GET_PTR(buffers[2]);
    const uint64_t *st = (const uint64_t *)STARPU_VECTOR_GET_PTR(buffers[3]);
    uint64_t *out = (uint64_t *)STARPU_VECTOR_GET_PTR(buffers[4]);
    const size_t nb = STARPU_VECTOR_GET_NX(buffers[4]) / (size_t)veil_cmp_next_rows(&v);
    const uint64_t pub = arg->party0 ? ~UINT64_C(0) : 0;
    for (int j = 0; j < v.knext; j++)
        for (size_t b = 0; b < nb; b++)
            veil_cmp_group_record(&v, e, a, pr, st, out, nb, j, b, pub);
}

static struct starpu_perfmodel leaf_model = {.type = STARPU_HISTORY_BASED,
                                             .symbol = "veil_ltz_leaf"};
static struct starpu_perfmodel gather_model = {.type = STARPU_HISTORY_BASED,
                                               .symbol = "veil_ltz_gather"};
static struct starpu_perfmodel group_model = {.type = STARPU_HISTORY_BASED,
                                              .symbol = "veil_ltz_group"};

struct starpu_codelet veil_cmp_leaf_cl = {
    .cpu_funcs = {leaf_cpu},
    .cpu_funcs_name = {"leaf_cpu"},
#ifdef VEIL_USE_CUDA
    .cuda_funcs = {veil_cmp_leaf_cuda},
    .cuda_flags = {STARPU_CUDA_ASYNC},
#endif
    .nbuffers = 5,
    .modes = {STARPU_R, STARPU_R, STARPU_R, STARPU_W, STARPU_W},
    .model = &leaf_model,
    .name = "veil_ltz_leaf",
};
struct starpu_codelet veil_cmp_gather_cl = {
    .cpu_funcs = {gather_cpu},
    .cpu_funcs_name = {"gather_cpu"},
#ifdef VEIL_USE_CUDA
    .cuda_funcs = {veil_cmp_gather_cuda},
    .cuda_flags = {STARPU_CUDA_ASYNC},
#endif
    .nbuffers = 2,
    .modes = {STARPU_R, STARPU_W},
    .model = &gather_model,
    .name = "veil_ltz_gather",
};
struct starpu_codelet veil_cmp_group_cl = {
    .cpu_funcs = {group_cpu},
    .cpu_funcs_name = {"group_cpu"},
#ifdef VEIL_USE_CUDA
    .cuda_funcs = {veil_cmp_group_cuda},
    .cuda_flags = {STARPU_CUDA_ASYNC},
#endif
    .nbuffers = 5,
    .modes = {STARPU_R, STARPU_R, STARPU_R, STARPU_R, STARPU_W},
    .model = &group_model,
    .name = "veil_ltz_group",
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

/* One level: gather the groups' inputs, open them against the CARRY4 masks (one round, one
 * message per tile), combine each group locally (carry4_common.h). */
static int carry_level(veil_mpc_t *m, const struct veil_sec *x, int l, const struct veil_sec *state,
                       struct veil_sec *next)
{
    const struct veil_cmp_level v = veil_cmp_level_of(l);
    const struct veil_cmp_level_arg arg = {.l = l, .party0 = veil_mpc_self(m) == 0};
    const int party = veil_mpc_computes(m);
    size_t groups, gtile;
    struct veil_mpc_mat mat;
    int rc = veil_cmp_sliced_layout("ltz", x, (size_t)v.knext, &groups, &gtile);
    if (rc != VEIL_OK)
        return rc;
    rc = veil_mpc_material(m, veil_preproc_item_carry4(0, groups), x->ntiles > 1 ? gtile : SIZE_MAX,
                           &mat);
    if (rc != VEIL_OK)
        return rc;
    struct veil_sec rec = {0};
    struct veil_pub e = {0};
    rc = veil_cmp_sliced(m, "ltz", x, (size_t)VEIL_C4_INPUTS * (size_t)v.knext, &rec);
    if (rc == VEIL_OK)
        rc = veil_cmp_sliced(m, "ltz", x, (size_t)veil_cmp_next_rows(&v), next);
    for (int t = 0; party && t < x->ntiles && rc == VEIL_OK; t++) {
        const starpu_data_handle_t h[2] = {state->h[t], rec.h[t]};
        rc = veil_cmp_submit(m, &veil_cmp_gather_cl, "ltz", h, NULL, 2, &arg, sizeof arg);
    }
    if (rc == VEIL_OK) {
        veil_mpc_round(m);
        rc = veil_mpc_open(m, &rec, &mat.part[VEIL_PRE_C4_A], &e);
    }
    for (int t = 0; party && t < x->ntiles && rc == VEIL_OK; t++) {
        const starpu_data_handle_t h[5] = {e.h[t], mat.part[VEIL_PRE_C4_A].h[t],
                                           mat.part[VEIL_PRE_C4_PROD].h[t], state->h[t],
                                           next->h[t]};
        rc = veil_cmp_submit(m, &veil_cmp_group_cl, "ltz", h, NULL, 5, &arg, sizeof arg);
    }
    veil_mpc_release(m, &rec);
    veil_mpc_release(m, &e);
    veil_mpc_mat_release(m, &mat);
    return rc;
}

/* Levels 1 and 2: state (level 1's, consumed) -> *g, the carry into bit 63. */
static int carry_tree(veil_mpc_t *m, const struct veil_sec *x, struct veil_sec *state,
                      struct veil_sec *g)
{
    int rc = VEIL_OK;
    for (int l = 1; l < VEIL_CMP_LEVELS && rc == VEIL_OK; l++) {
        struct veil_sec next = {0};
        rc = carry_level(m, x, l, state, &next);
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
                      struct veil_pub *f, struct veil_cmp_opened *keep)
{
    memset(bit, 0, sizeof *bit);
    memset(f, 0, sizeof *f);
    if (keep)
        memset(keep, 0, sizeof *keep);
    int rc = check_input("ltz", x);
    if (rc != VEIL_OK)
        return rc;
    struct veil_mpc_mat mask, prod = {0};
    const size_t mtile = x->ntiles > 1 ? x->tile : SIZE_MAX;
    if ((rc = veil_mpc_material(m, veil_preproc_item_cmpmask(0, x->numel), mtile, &mask)) !=
        VEIL_OK)
        return rc;
    const uint64_t ptile = x->ntiles > 1 ? x->tile : x->numel;
    if ((rc = veil_mpc_material(m, veil_preproc_item_cmpprod(0, x->numel, ptile, mask.item.index),
                                0, &prod)) != VEIL_OK ||
        (rc = veil_mpc_material(m, veil_preproc_item_bit(0, x->numel), mtile, bit)) != VEIL_OK) {
        veil_mpc_mat_release(m, &prod);
        veil_mpc_mat_release(m, &mask);
        return rc;
    }
    const int party = veil_mpc_computes(m);
    struct veil_sec xf = veil_cmp_flat(x), c = {0}, state = {0}, top = {0}, g = {0}, msb = {0};

    veil_mpc_round(m);
    if ((rc = veil_mpc_open(m, &xf, &mask.part[VEIL_PRE_CM_R], &c)) != VEIL_OK ||
        (rc = veil_cmp_sliced(m, "ltz", x, 2 * VEIL_C4_LEAF_GROUPS, &state)) != VEIL_OK ||
        (rc = veil_cmp_sliced(m, "ltz", x, 1, &top)) != VEIL_OK)
        goto out;
    const struct veil_cmp_party_arg la = {.party0 = veil_mpc_self(m) == 0};
    for (int t = 0; party && t < x->ntiles && rc == VEIL_OK; t++) {
        const starpu_data_handle_t h[5] = {c.h[t], mask.part[VEIL_PRE_CM_RB].h[t],
                                           prod.part[0].h[t], state.h[t], top.h[t]};
        rc = veil_cmp_submit(m, &veil_cmp_leaf_cl, "ltz", h, NULL, 5, &la, sizeof la);
    }
    if (rc == VEIL_OK)
        rc = carry_tree(m, x, &state, &g);
    if (rc == VEIL_OK)
        rc = veil_cmp_sliced(m, "ltz", x, 1, &msb);
    for (int t = 0; party && t < x->ntiles && rc == VEIL_OK; t++)
        rc = veil_task_xor(top.h[t], g.h[t], msb.h[t], veil_mpc_priority(m));
    if (rc == VEIL_OK)
        rc = veil_cmp_b2a_open(m, &msb, x, bit, f);
    if (rc == VEIL_OK && keep) {
        keep->c = c;
        keep->r63 = mask.part[VEIL_PRE_CM_R63];
        keep->mask_index = mask.item.index;
        memset(&c, 0, sizeof c);
        memset(&mask.part[VEIL_PRE_CM_R63], 0, sizeof mask.part[VEIL_PRE_CM_R63]);
    }
out:
    veil_mpc_release(m, &c);
    veil_mpc_release(m, &state);
    veil_mpc_release(m, &top);
    veil_mpc_release(m, &g);
    veil_mpc_release(m, &msb);
    veil_mpc_mat_release(m, &prod);
    veil_mpc_mat_release(m, &mask);
    if (rc != VEIL_OK) {
        veil_mpc_mat_release(m, bit);
        veil_mpc_release(m, f);
    }
    return rc;
}

void veil_cmp_opened_release(veil_mpc_t *m, struct veil_cmp_opened *o)
{
    veil_mpc_release(m, &o->c);
    veil_mpc_release(m, &o->r63);
}

int veil_mpc_ltz(veil_mpc_t *m, const struct veil_sec *x, struct veil_sec *b)
{
    if (!m || !x || !b)
        return veil_error(VEIL_ERR_INVAL, "ltz: NULL argument");
    memset(b, 0, sizeof *b);
    struct veil_mpc_mat bit;
    struct veil_pub f;
    int rc = veil_cmp_ltz_open(m, x, &bit, &f, NULL);
    if (rc != VEIL_OK)
        return rc;
    rc = veil_cmp_b2a_finish(m, &f, &bit, x, b);
    veil_mpc_release(m, &f);
    veil_mpc_mat_release(m, &bit);
    return rc;
}

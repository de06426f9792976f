/*
 * octave_bits.c — the octave bits of a secret x (veil_nl_octave_bits, nonlinear_internal.h) by
 * one bit-sliced circuit (bitcirc.h's octave circuit) instead of one comparison per octave:
 *   round 1        open c = x - r (a CMPMASK item: r arithmetic and XOR-shared);
 *   rounds 2..L+1  the circuit's AND levels (veil_mpc_and, one round each), every other gate
 *                  local: a leaf task bit-slices c and this party's share of r per 64-element
 *                  block and runs the level-0 gates, then per level a "prepare" task gathers the
 *                  AND operands, and a "combine" task stores the results and runs the free gates
 *                  that follow; the wire state of a tile is one buffer, updated in place;
 *   round L+2      B2A of the k outputs (one BIT item each, opened together), then the k
 *                  arithmetic 0/1 tensors stacked into k blocks of numel (the stack tile).
 * Costs per party for n elements in W words of packed bits (W = n / 64 when 64 divides the
 * stack tile's tiles): rounds L + 2, bytes (N-1) (8 n + 16 A W + 8 k W) with A the circuit's
 * AND gates (veil_octave_bits_cost). x is first copied to the stack tile (local), so any tiling
 * of x is accepted. These codelets have CPU bodies only.
 */
#include "config.h"

#include "base/base_internal.h"
#include "codelets/bits_common.h"
#include "tasks/bitcirc.h"
#include "tasks/compare_internal.h"
#include "tasks/nonlinear_internal.h"

#include <stdlib.h>
#include <string.h>

struct oct_arg {
    const struct veil_bitc *b; /* kept for the process's life (veil_bitc_octave) */
    int level;
    int party0;
    size_t offset; /* the mask task: first word of this tile in a BIT item's packed part */
    size_t nbits;  /* the mask task: elements of this tile */
};

static uint64_t *row(uint64_t *w, int r, size_t nb)
{
    return w + (size_t)r * nb;
}

/* The level-0 gates of block b, from its bit-sliced c and share of r. */
static void level0(const struct veil_bitc *bc, const uint64_t *ct, const uint64_t *rt, uint64_t *w,
                   size_t nb, size_t b, uint64_t pub)
{
    for (int i = 0; i < bc->nops && bc->ops[i].level == 0; i++)
        w[(size_t)bc->ops[i].dst * nb + b] = veil_bitc_gate(&bc->ops[i], ct, rt, w + b, nb, pub);
}

/* c (public, T), r (share, T) -> wires (nwires rows of B words): the level-0 gates. */
static void leaf_cpu(void *buffers[], void *cl_arg)
{
    const struct oct_arg *arg = cl_arg;
    const struct veil_bitc *bc = arg->b;
    const uint64_t *c = (const uint64_t *)STARPU_VECTOR_GET_PTR(buffers[0]);
    const uint64_t *r = (const uint64_t *)STARPU_VECTOR_GET_PTR(buffers[1]);
    uint64_t *w = (uint64_t *)STARPU_VECTOR_GET_PTR(buffers[2]);
    const size_t n = STARPU_VECTOR_GET_NX(buffers[0]);
    const size_t nb = STARPU_VECTOR_GET_NX(buffers[2]) / (size_t)bc->nwires;
    const uint64_t pub = arg->party0 ? ~UINT64_C(0) : 0;
    uint64_t ct[8][64], rt[8][64];
    size_t b = 0;
    for (; b + 8 <= n / 64; b += 8) { /* eight full blocks sliced at once (compare_leaf8.c) */
        veil_cmp_slice8(c, r, b, ct, rt);
        for (int k = 0; k < 8; k++)
            level0(bc, ct[k], rt[k], w, nb, b + (size_t)k, pub);
    }
    for (; b < nb; b++) {
        veil_cmp_slice_block(c, r, n, b, ct[0], rt[0]);
        level0(bc, ct[0], rt[0], w, nb, b, pub);
    }
}

/* wires -> X, Y: the operands of level l's ANDs (row j: the j-th AND). */
static void prep_cpu(void *buffers[], void *cl_arg)
{
    const struct oct_arg *arg = cl_arg;
    const struct veil_bitc *bc = arg->b;
    uint64_t *w = (uint64_t *)STARPU_VECTOR_GET_PTR(buffers[0]);
    uint64_t *x = (uint64_t *)STARPU_VECTOR_GET_PTR(buffers[1]);
    uint64_t *y = (uint64_t *)STARPU_VECTOR_GET_PTR(buffers[2]);
    const size_t nb = STARPU_VECTOR_GET_NX(buffers[0]) / (size_t)bc->nwires;
    int j = 0;
    for (int i = 0; i < bc->nops; i++) {
        const struct veil_bitc_op *o = &bc->ops[i];
        if (o->level != arg->level || o->kind != VEIL_BITC_AND)
            continue;
        memcpy(row(x, j, nb), row(w, o->a, nb), nb * 8);
        memcpy(row(y, j, nb), row(w, o->b, nb), nb * 8);
        j++;
    }
}

/* wires, Z (level l's AND results) -> wires: the results stored, then the free gates of l. */
static void comb_cpu(void *buffers[], void *cl_arg)
{
    const struct oct_arg *arg = cl_arg;
    const struct veil_bitc *bc = arg->b;
    uint64_t *w = (uint64_t *)STARPU_VECTOR_GET_PTR(buffers[0]);
    const uint64_t *z = (const uint64_t *)STARPU_VECTOR_GET_PTR(buffers[1]);
    const size_t nb = STARPU_VECTOR_GET_NX(buffers[0]) / (size_t)bc->nwires;
    const uint64_t pub = arg->party0 ? ~UINT64_C(0) : 0;
    int j = 0;
    for (int i = 0; i < bc->nops; i++) {
        const struct veil_bitc_op *o = &bc->ops[i];
        if (o->level != arg->level)
            continue;
        uint64_t *d = row(w, o->dst, nb);
        if (o->kind == VEIL_BITC_AND) {
            memcpy(d, z + (size_t)j++ * nb, nb * 8);
        } else { /* XOR, NOT: RIN, CAND and CXOR read c and r, level 0 only (the leaf) */
            for (size_t q = 0; q < nb; q++)
                d[q] = veil_bitc_gate(o, NULL, NULL, w + q, nb, pub);
        }
    }
}

/* wires, then k BIT packed parts, then k outputs: e_i = out_i ^ bp_i[offset..], tail cleared. */
static void mask_cpu(void *buffers[], void *cl_arg)
{
    const struct oct_arg *arg = cl_arg;
    const struct veil_bitc *bc = arg->b;
    const uint64_t *w = (const uint64_t *)STARPU_VECTOR_GET_PTR(buffers[0]);
    const size_t nb = STARPU_VECTOR_GET_NX(buffers[0]) / (size_t)bc->nwires;
    for (int i = 0; i < bc->nout; i++) {
        const uint64_t *bp = (const uint64_t *)STARPU_VECTOR_GET_PTR(buffers[1 + i]);
        uint64_t *e = (uint64_t *)STARPU_VECTOR_GET_PTR(buffers[1 + bc->nout + i]);
        const uint64_t *o = w + (size_t)bc->out[i] * nb;
        for (size_t q = 0; q < nb; q++)
            e[q] = o[q] ^ bp[arg->offset + q];
        if (nb > 0)
            e[nb - 1] &= veil_b2a_tail_mask(arg->nbits);
    }
}

#define OCT_CODELET(var, fn, nbuf, sym, ...)                                                       \
    static struct starpu_perfmodel var##_model = {.type = STARPU_HISTORY_BASED, .symbol = sym};    \
    static struct starpu_codelet var = {.cpu_funcs = {fn},                                         \
                                        .cpu_funcs_name = {#fn},                                   \
                                        .nbuffers = nbuf,                                          \
                                        .modes = {__VA_ARGS__},                                    \
                                        .model = &var##_model,                                     \
                                        .name = sym}
OCT_CODELET(leaf_cl, leaf_cpu, 3, "veil_octave_leaf", STARPU_R, STARPU_R, STARPU_W);
OCT_CODELET(prep_cl, prep_cpu, 3, "veil_octave_prep", STARPU_R, STARPU_W, STARPU_W);
OCT_CODELET(comb_cl, comb_cpu, 2, "veil_octave_comb", STARPU_RW, STARPU_R);
static struct starpu_perfmodel mask_model = {.type = STARPU_HISTORY_BASED,
                                             .symbol = "veil_octave_mask"};
static struct starpu_codelet mask_cl = {.cpu_funcs = {mask_cpu},
                                        .cpu_funcs_name = {"mask_cpu"},
                                        .nbuffers = STARPU_VARIABLE_NBUFFERS,
                                        .model = &mask_model,
                                        .name = "veil_octave_mask"};

/* The AND levels: wires updated in place, level by level. */
static int and_levels(veil_mpc_t *m, const struct veil_bitc *bc, const struct veil_sec *xs,
                      struct veil_sec *wires)
{
    const int party = veil_mpc_computes(m);
    int rc = VEIL_OK;
    for (int l = 1; l <= bc->levels && rc == VEIL_OK; l++) {
        struct veil_sec xa = {0}, ya = {0}, za = {0};
        const struct oct_arg arg = {.b = bc, .level = l, .party0 = veil_mpc_self(m) == 0};
        if ((rc = veil_cmp_sliced(m, "octave bits", xs, (size_t)bc->nand[l], &xa)) == VEIL_OK &&
            (rc = veil_cmp_sliced(m, "octave bits", xs, (size_t)bc->nand[l], &ya)) == VEIL_OK) {
            for (int t = 0; party && t < xs->ntiles && rc == VEIL_OK; t++) {
                const starpu_data_handle_t h[3] = {wires->h[t], xa.h[t], ya.h[t]};
                rc = veil_cmp_submit(m, &prep_cl, "octave bits", h, NULL, 3, &arg, sizeof arg);
            }
            if (rc == VEIL_OK)
                rc = veil_mpc_and(m, &xa, &ya, &za);
            for (int t = 0; party && t < xs->ntiles && rc == VEIL_OK; t++) {
                const starpu_data_handle_t h[2] = {wires->h[t], za.h[t]};
                rc = veil_cmp_submit(m, &comb_cl, "octave bits", h, NULL, 2, &arg, sizeof arg);
            }
        }
        veil_mpc_release(m, &xa);
        veil_mpc_release(m, &ya);
        veil_mpc_release(m, &za);
    }
    return rc;
}

/* B2A of the k outputs into k arithmetic tensors like xs (one BIT item each, one round). */
static int outputs_b2a(veil_mpc_t *m, const struct veil_bitc *bc, const struct veil_sec *xs,
                       const struct veil_sec *wires, struct veil_sec *o)
{
    const int k = bc->nout, party = veil_mpc_computes(m);
    const size_t mtile = xs->ntiles > 1 ? xs->tile : SIZE_MAX;
    struct veil_mpc_mat *bit = calloc((size_t)k, sizeof *bit);
    struct veil_sec *e = calloc((size_t)k, sizeof *e), *f = calloc((size_t)k, sizeof *f);
    starpu_data_handle_t *h = malloc(sizeof *h * (size_t)(1 + 2 * k));
    enum starpu_data_access_mode *md = malloc(sizeof *md * (size_t)(1 + 2 * k));
    int rc = bit && e && f && h && md ? VEIL_OK
                                      : veil_error(VEIL_ERR_NOMEM, "octave bits: out of memory");
    int got = 0;
    for (; got < k && rc == VEIL_OK; got++)
        if ((rc = veil_mpc_material(m, veil_preproc_item_bit(0, xs->numel), mtile, &bit[got])) ==
            VEIL_OK)
            rc = veil_cmp_sliced(m, "octave bits", xs, 1, &e[got]);
    for (int t = 0; party && t < xs->ntiles && rc == VEIL_OK; t++) {
        const struct oct_arg arg = {.b = bc,
                                    .offset = (size_t)t * ((xs->tile + 63) / 64),
                                    .nbits = veil_sec_tile_numel(xs, t)};
        h[0] = wires->h[t];
        md[0] = STARPU_R;
        for (int i = 0; i < k; i++) {
            h[1 + i] = bit[i].part[VEIL_PRE_BIT_B].h[0];
            md[1 + i] = STARPU_R;
            h[1 + k + i] = e[i].h[t];
            md[1 + k + i] = STARPU_W;
        }
        rc = veil_cmp_submit(m, &mask_cl, "octave bits", h, md, 1 + 2 * k, &arg, sizeof arg);
    }
    if (rc == VEIL_OK)
        veil_mpc_round(m);
    for (int i = 0; i < k && rc == VEIL_OK; i++)
        rc = veil_mpc_open(m, &e[i], NULL, &f[i]);
    for (int i = 0; i < k && rc == VEIL_OK; i++)
        rc = veil_cmp_b2a_finish(m, &f[i], &bit[i], xs, &o[i]);
    for (int i = 0; i < k && e && f; i++) {
        veil_mpc_release(m, &e[i]);
        veil_mpc_release(m, &f[i]);
    }
    for (int i = 0; bit && i < got; i++)
        veil_mpc_mat_release(m, &bit[i]);
    free(bit);
    free(e);
    free(f);
    free(h);
    free(md);
    return rc;
}

int veil_nl_octave_bits(veil_mpc_t *m, const struct veil_sec *x, int lo, int hi,
                        struct veil_sec *bits)
{
    memset(bits, 0, sizeof *bits);
    const int f = veil_mpc_frac_bits(m), p0 = f + lo + 1, p1 = f + hi - 1, k = hi - lo - 1;
    const struct veil_bitc *bc = veil_bitc_octave(p0, p1);
    if (!bc)
        return veil_error(VEIL_ERR_UNSUPPORTED,
                          "octave bits: range [2^%d, 2^%d) at %d fractional "
                          "bits: bit positions %d..%d outside 1..%d, or out of memory",
                          lo, hi, f, p0, p1, VEIL_BITC_MAX_BITS - 1);
    const int party = veil_mpc_computes(m);
    struct veil_sec xs = {0}, c = {0}, wires = {0};
    struct veil_sec *o = calloc((size_t)k, sizeof *o);
    struct veil_mpc_mat mask;
    memset(&mask, 0, sizeof mask);
    struct veil_flatop_args fa;
    memset(&fa, 0, sizeof fa);
    fa.kind = VEIL_FLATOP_COPY;
    const size_t dims[1] = {x->numel}, sdims[1] = {x->numel * (size_t)k};
    int rc = o ? VEIL_OK : veil_error(VEIL_ERR_NOMEM, "octave bits: out of memory");
    if (rc == VEIL_OK &&
        (rc = veil_sec_init(m, &xs, VEIL_SHARE_ARITH, 1, dims, veil_nl_stack_tile(m))) == VEIL_OK) {
        struct veil_sec *outs[1] = {&xs};
        const struct veil_sec *ins[1] = {x};
        rc = veil_nl_flat(m, fa, outs, 1, ins, 1); /* x at the stack tile: a multiple of 64 */
    }
    if (rc == VEIL_OK)
        rc = veil_mpc_material(m, veil_preproc_item_cmpmask(0, xs.numel),
                               xs.ntiles > 1 ? xs.tile : SIZE_MAX, &mask);
    if (rc == VEIL_OK) {
        veil_mpc_round(m);
        if ((rc = veil_mpc_open(m, &xs, &mask.part[VEIL_PRE_CM_R], &c)) == VEIL_OK)
            rc = veil_cmp_sliced(m, "octave bits", &xs, (size_t)bc->nwires, &wires);
    }
    const struct oct_arg la = {.b = bc, .party0 = veil_mpc_self(m) == 0};
    for (int t = 0; party && t < xs.ntiles && rc == VEIL_OK; t++) {
        const starpu_data_handle_t h[3] = {c.h[t], mask.part[VEIL_PRE_CM_RB].h[t], wires.h[t]};
        rc = veil_cmp_submit(m, &leaf_cl, "octave bits", h, NULL, 3, &la, sizeof la);
    }
    if (rc == VEIL_OK)
        rc = and_levels(m, bc, &xs, &wires);
    if (rc == VEIL_OK)
        rc = outputs_b2a(m, bc, &xs, &wires, o);
    if (rc == VEIL_OK && (rc = veil_sec_init(m, bits, VEIL_SHARE_ARITH, 1, sdims,
                                             veil_nl_stack_tile(m))) == VEIL_OK) {
        const struct veil_sec **ins = malloc(sizeof *ins * (size_t)k);
        struct veil_sec *outs[1] = {bits};
        for (int i = 0; ins && i < k; i++)
            ins[i] = &o[i];
        rc = ins ? veil_nl_flat(m, fa, outs, 1, ins, k)
                 : veil_error(VEIL_ERR_NOMEM, "octave bits: out of memory");
        free((void *)ins);
    }
    for (int i = 0; o && i < k; i++)
        veil_mpc_release(m, &o[i]);
    free(o);
    veil_mpc_release(m, &xs);
    veil_mpc_release(m, &c);
    veil_mpc_release(m, &wires);
    veil_mpc_mat_release(m, &mask);
    if (rc != VEIL_OK)
        veil_mpc_release(m, bits);
    return rc;
}

void veil_octave_bits_cost(int nparties, size_t n, int p0, int p1, uint64_t *rounds,
                           uint64_t *bytes)
{
    const struct veil_bitc *bc = veil_bitc_octave(p0, p1);
    const uint64_t w = (n + 63) / 64, k = (uint64_t)(p1 - p0 + 1);
    if (rounds)
        *rounds = bc ? (uint64_t)bc->levels + 2 : 0;
    if (bytes)
        *bytes =
            bc ? (uint64_t)(nparties - 1) * 8 * (n + 2 * (uint64_t)bc->nand_total * w + k * w) : 0;
}

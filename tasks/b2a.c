/*
 * b2a.c — B2A of bits: XOR-shared bits become arithmetic 0/1 shares with one BIT item (shared
 * random bit b in both forms). The bits are packed 64 to a word per tile, e = bits ^ b is opened
 * (one round, one packed word per 64 elements), then [bit] = e + [b] - 2 e [b] locally. The
 * comparison circuit's msb words are already packed, so LTZ enters at veil_cmp_b2a_open.
 */
#include "config.h"
#include "base/base_internal.h"
#include "codelets/codelets_internal.h"
#include "tasks/compare.h"
#include "tasks/compare_common.h"
#include "tasks/compare_internal.h"
#ifdef VEIL_USE_CUDA
#include "tasks/cuda/compare_cuda_internal.h"
#endif

#include <string.h>

/* packed tile (R), bp (R, the whole packed part) -> e = packed ^ bp[offset..] (W), the tail
 * past nbits cleared. Word math in compare_common.h, CUDA bodies in cuda/compare.cu. */
static void mask_cpu(void *buffers[], void *cl_arg)
{
    const struct veil_b2a_mask_arg *arg = veil_cmp_arg(cl_arg);
    const uint64_t *in = (const uint64_t *)STARPU_VECTOR_GET_PTR(buffers[0]);
    const uint64_t *bp = (const uint64_t *)STARPU_VECTOR_GET_PTR(buffers[1]);
    uint64_t *e = (uint64_t *)STARPU_VECTOR_GET_PTR(buffers[2]);
    const size_t nw = STARPU_VECTOR_GET_NX(buffers[2]);
    for (size_t i = 0; i < nw; i++)
        e[i] = in[i] ^ bp[arg->offset + i];
    if (nw > 0)
        e[nw - 1] &= veil_b2a_tail_mask(arg->nbits);
}

/* e (public packed bits, R), [b] (R) -> [bit] = e + [b] - 2 e [b] (W). */
static void fin_cpu(void *buffers[], void *cl_arg)
{
    const struct veil_cmp_party_arg *arg = veil_cmp_arg(cl_arg);
    const uint64_t *e = (const uint64_t *)STARPU_VECTOR_GET_PTR(buffers[0]);
    const uint64_t *b = (const uint64_t *)STARPU_VECTOR_GET_PTR(buffers[1]);
    uint64_t *out = (uint64_t *)STARPU_VECTOR_GET_PTR(buffers[2]);
    const size_t n = STARPU_VECTOR_GET_NX(buffers[2]);
    const uint64_t one = arg->party0 ? 1 : 0;
    for (size_t i = 0; i < n; i++)
        out[i] = veil_b2a_fin_elem(veil_cmp_packed_bit(e, i), b[i], one);
}

static struct starpu_perfmodel mask_model = {.type = STARPU_HISTORY_BASED,
                                             .symbol = "veil_b2a_mask"};
static struct starpu_perfmodel fin_model = {.type = STARPU_HISTORY_BASED,
                                            .symbol = "veil_b2a_finish"};
struct starpu_codelet veil_b2a_mask_cl = {
    .cpu_funcs = {mask_cpu},
    .cpu_funcs_name = {"mask_cpu"},
#ifdef VEIL_USE_CUDA
    .cuda_funcs = {veil_b2a_mask_cuda},
    .cuda_flags = {STARPU_CUDA_ASYNC},
#endif
    .nbuffers = 3,
    .modes = {STARPU_R, STARPU_R, STARPU_W},
    .model = &mask_model,
    .name = "veil_b2a_mask",
};
struct starpu_codelet veil_b2a_fin_cl = {
    .cpu_funcs = {fin_cpu},
    .cpu_funcs_name = {"fin_cpu"},
#ifdef VEIL_USE_CUDA
    .cuda_funcs = {veil_b2a_fin_cuda},
    .cuda_flags = {STARPU_CUDA_ASYNC},
#endif
    .nbuffers = 3,
    .modes = {STARPU_R, STARPU_R, STARPU_W},
    .model = &fin_model,
    .name = "veil_b2a_finish",
};

int veil_cmp_b2a_open(veil_mpc_t *m, const struct veil_sec *packed, const struct veil_sec *like,
                      const struct veil_mpc_mat *bit, struct veil_pub *f)
{
    memset(f, 0, sizeof *f);
    if (packed->ntiles != like->ntiles ||
        packed->numel != veil_preproc_sliced_blocks(like->numel, like->tile))
        return veil_error(VEIL_ERR_SHAPE,
                          "b2a: %zu packed words in %d tiles do not match %zu "
                          "elements in %d tiles",
                          packed->numel, packed->ntiles, like->numel, like->ntiles);
    struct veil_sec e = {0};
    int rc = veil_sec_init_like(m, &e, packed);
    if (rc != VEIL_OK)
        return rc;
    e.kind = VEIL_SHARE_BINARY;
    for (int t = 0; veil_mpc_computes(m) && t < like->ntiles && rc == VEIL_OK; t++) {
        const struct veil_b2a_mask_arg arg = {.offset = (size_t)t * ((like->tile + 63) / 64),
                                              .nbits = veil_sec_tile_numel(like, t)};
        const starpu_data_handle_t h[3] = {packed->h[t], bit->part[VEIL_PRE_BIT_B].h[0], e.h[t]};
        rc = veil_cmp_submit(m, &veil_b2a_mask_cl, "b2a", h, NULL, 3, &arg, sizeof arg);
    }
    if (rc == VEIL_OK) {
        veil_mpc_round(m);
        rc = veil_mpc_open(m, &e, NULL, f);
    }
    veil_mpc_release(m, &e);
    return rc;
}

int veil_cmp_b2a_finish(veil_mpc_t *m, const struct veil_pub *f, const struct veil_mpc_mat *bit,
                        const struct veil_sec *like, struct veil_sec *out)
{
    int rc = veil_sec_init_like(m, out, like);
    if (rc != VEIL_OK)
        return rc;
    out->kind = VEIL_SHARE_ARITH;
    const struct veil_cmp_party_arg fa = {.party0 = veil_mpc_self(m) == 0};
    for (int t = 0; veil_mpc_computes(m) && t < like->ntiles && rc == VEIL_OK; t++) {
        const starpu_data_handle_t h[3] = {f->h[t], bit->part[VEIL_PRE_BIT_A].h[t], out->h[t]};
        rc = veil_cmp_submit(m, &veil_b2a_fin_cl, "b2a", h, NULL, 3, &fa, sizeof fa);
    }
    return rc;
}

int veil_mpc_b2a(veil_mpc_t *m, const struct veil_sec *bits, struct veil_sec *out)
{
    if (!m || !bits || !out)
        return veil_error(VEIL_ERR_INVAL, "b2a: NULL argument");
    memset(out, 0, sizeof *out);
    if (bits->kind != VEIL_SHARE_BINARY)
        return veil_error(VEIL_ERR_INVAL, "b2a: the input must be a binary (XOR) sharing");
    size_t wn, wt;
    int rc = veil_cmp_sliced_layout("b2a", bits, 1, &wn, &wt);
    if (rc != VEIL_OK)
        return rc;
    struct veil_sec packed = {0};
    struct veil_pub f = {0};
    struct veil_mpc_mat bit;
    const size_t dims[1] = {wn};
    const size_t tile = bits->ntiles > 1 ? bits->tile : SIZE_MAX;
    if ((rc = veil_mpc_material(m, veil_preproc_item_bit(0, bits->numel), tile, &bit)) != VEIL_OK)
        return rc;
    if ((rc = veil_sec_init(m, &packed, VEIL_SHARE_BINARY, 1, dims,
                            bits->ntiles > 1 ? wt : SIZE_MAX)) != VEIL_OK)
        goto out;
    for (int t = 0; veil_mpc_computes(m) && t < bits->ntiles && rc == VEIL_OK; t++)
        rc = veil_task_bit_pack(bits->h[t], 0, packed.h[t], veil_mpc_priority(m));
    if (rc == VEIL_OK)
        rc = veil_cmp_b2a_open(m, &packed, bits, &bit, &f);
    if (rc == VEIL_OK)
        rc = veil_cmp_b2a_finish(m, &f, &bit, bits, out);
out:
    veil_mpc_release(m, &packed);
    veil_mpc_release(m, &f);
    veil_mpc_mat_release(m, &bit);
    return rc;
}

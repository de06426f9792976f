/*
 * prodk.c — the product of k secret values in one round (veil_mpc_prodk, contract in
 * compare_internal.h; the math in prodk_common.h): one masked open of the k factors of every
 * record against a PRODK item's masks, then a local task that expands each record's product over
 * the dealer's mask products.
 */
#include "config.h"
#include "base/base_internal.h"
#include "tasks/compare_common.h"
#include "tasks/compare_internal.h"
#include "tasks/prodk_common.h"
#ifdef VEIL_USE_CUDA
#include "tasks/cuda/compare_cuda_internal.h"
#endif

#include <string.h>

/* e (opened, k n), a (masks, k n), pr (products, P(k) n) -> z (n); struct veil_prodk_arg. */
static void prodk_cpu(void *buffers[], void *cl_arg)
{
    const struct veil_prodk_arg *arg = veil_cmp_arg(cl_arg);
    const uint64_t *e = (const uint64_t *)STARPU_VECTOR_GET_PTR(buffers[0]);
    const uint64_t *a = (const uint64_t *)STARPU_VECTOR_GET_PTR(buffers[1]);
    const uint64_t *pr = (const uint64_t *)STARPU_VECTOR_GET_PTR(buffers[2]);
    uint64_t *z = (uint64_t *)STARPU_VECTOR_GET_PTR(buffers[3]);
    const size_t n = STARPU_VECTOR_GET_NX(buffers[3]), k = (size_t)arg->k;
    const size_t np = (size_t)veil_prodk_nprods(arg->k);
    const uint64_t one = arg->party0 ? 1 : 0;
    for (size_t w = 0; w < n; w++)
        z[w] = veil_prodk_finish(e + w * k, a + w * k, pr + w * np, arg->k, one);
}

static struct starpu_perfmodel prodk_model = {.type = STARPU_HISTORY_BASED, .symbol = "veil_prodk"};

struct starpu_codelet veil_prodk_cl = {
    .cpu_funcs = {prodk_cpu},
    .cpu_funcs_name = {"prodk_cpu"},
#ifdef VEIL_USE_CUDA
    .cuda_funcs = {veil_prodk_cuda},
    .cuda_flags = {STARPU_CUDA_ASYNC},
#endif
    .nbuffers = 4,
    .modes = {STARPU_R, STARPU_R, STARPU_R, STARPU_W},
    .model = &prodk_model,
    .name = "veil_prodk",
};

int veil_mpc_prodk(veil_mpc_t *m, const struct veil_sec *x, int k, struct veil_sec *z)
{
    memset(z, 0, sizeof *z);
    if (!m || !x)
        return veil_error(VEIL_ERR_INVAL, "prodk: NULL argument");
    if (k < VEIL_PRODK_MIN || k > VEIL_PRODK_MAX)
        return veil_error(VEIL_ERR_INVAL, "prodk: %d factors; use %d to %d", k, VEIL_PRODK_MIN,
                          VEIL_PRODK_MAX);
    if (x->kind != VEIL_SHARE_ARITH || x->ntiles != 1 || x->numel == 0 || x->numel % (size_t)k != 0)
        return veil_error(VEIL_ERR_INVAL,
                          "prodk: the factors must be one arithmetic tile of records of %d "
                          "(%zu words in %d tiles)",
                          k, x->numel, x->ntiles);
    const size_t n = x->numel / (size_t)k;
    struct veil_mpc_mat mat;
    int rc = veil_mpc_material(m, veil_preproc_item_prodk(0, n, (uint64_t)k), SIZE_MAX, &mat);
    if (rc != VEIL_OK)
        return rc;
    struct veil_sec xf = veil_cmp_flat(x);
    struct veil_pub e = {0};
    const size_t dims[1] = {n};
    veil_mpc_round(m);
    if ((rc = veil_mpc_open(m, &xf, &mat.part[VEIL_PRE_PK_A], &e)) == VEIL_OK &&
        (rc = veil_sec_init(m, z, VEIL_SHARE_ARITH, 1, dims, SIZE_MAX)) == VEIL_OK &&
        veil_mpc_computes(m)) {
        const struct veil_prodk_arg arg = {.k = k, .party0 = veil_mpc_self(m) == 0};
        const starpu_data_handle_t h[4] = {e.h[0], mat.part[VEIL_PRE_PK_A].h[0],
                                           mat.part[VEIL_PRE_PK_PROD].h[0], z->h[0]};
        rc = veil_cmp_submit(m, &veil_prodk_cl, "prodk", h, NULL, 4, &arg, sizeof arg);
    }
    veil_mpc_release(m, &e);
    veil_mpc_mat_release(m, &mat);
    if (rc != VEIL_OK)
        veil_mpc_release(m, z);
    return rc;
}

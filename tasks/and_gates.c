/*
 * and_gates.c — binary AND gates on bit-sliced words with AND triples (64 independent gates per
 * word): the one interactive step of the comparison circuit. Per tile, d = x ^ a and e = y ^ b
 * are opened together (two messages of the same round, each its own tag), then a finishing task
 * computes z = c ^ (d & b) ^ (e & a) ^ (d & e at party 0). Tiles never wait for each other, so
 * a tile's next circuit level runs while later tiles' messages are still in flight. Also the
 * family's small task-submission helpers.
 */
#include "config.h"
#include "base/base_internal.h"
#include "base/trace.h"
#include "codelets/codelets_internal.h"
#include "net/idle.h"
#include "tasks/compare_common.h"
#include "tasks/compare_internal.h"
#ifdef VEIL_USE_CUDA
#include "tasks/cuda/compare_cuda_internal.h"
#endif

#include <stdlib.h>
#include <string.h>

/* The argument block travels as a heap copy freed by StarPU with the task (cl_arg_free). */
int veil_cmp_submit(veil_mpc_t *m, struct starpu_codelet *cl, const char *name,
                    const starpu_data_handle_t *h,
                    const enum starpu_data_access_mode *modes, int nh, const void *arg,
                    size_t arg_size)
{
    struct starpu_task *task = starpu_task_create();
    if (!task)
        return veil_error(VEIL_ERR_STARPU, "%s: cannot create a task", name);
    task->cl = cl;
    if (nh > STARPU_NMAXBUFS) {
        task->dyn_handles = malloc(sizeof *task->dyn_handles * (size_t)nh);
        task->dyn_modes = malloc(sizeof *task->dyn_modes * (size_t)nh);
        if (!task->dyn_handles || !task->dyn_modes) {
            free(task->dyn_handles);
            free(task->dyn_modes);
            task->dyn_handles = NULL;
            task->dyn_modes = NULL;
            starpu_task_destroy(task);
            return veil_error(VEIL_ERR_NOMEM, "%s: out of memory", name);
        }
    }
    task->nbuffers = nh;
    starpu_data_handle_t written = NULL;
    for (int i = 0; i < nh; i++) {
        enum starpu_data_access_mode md = modes ? modes[i] : cl->modes[i];
        if (!written && (md & STARPU_W))
            written = h[i]; /* the placement follows the first handle written */
        if (task->dyn_handles) {
            task->dyn_handles[i] = h[i];
            task->dyn_modes[i] = md;
        } else {
            task->handles[i] = h[i];
            if (cl->nbuffers == STARPU_VARIABLE_NBUFFERS)
                task->modes[i] = md;
        }
    }
    if (arg && arg_size) {
        void *copy = malloc(arg_size);
        if (!copy) {
            starpu_task_destroy(task);
            return veil_error(VEIL_ERR_NOMEM, "%s: out of memory", name);
        }
        memcpy(copy, arg, arg_size);
        task->cl_arg = copy;
        task->cl_arg_size = arg_size;
        task->cl_arg_free = 1;
    }
    task->priority = veil_mpc_priority(m);
    veil_trace_task_attach(task);
    veil_place_pin_task(task, written);
    int rc = starpu_task_submit(task);
    veil_net_idle_kick(); /* it may be ready: resume paused workers */
    if (rc != 0) {
        starpu_task_destroy(task);
        return veil_error(VEIL_ERR_STARPU, "%s: task submission failed (%d)", name, rc);
    }
    return VEIL_OK;
}

int veil_cmp_sliced_layout(const char *op, const struct veil_sec *x, size_t per_block,
                           size_t *numel, size_t *tile)
{
    if (x->ntiles > 1 && x->tile % 64 != 0)
        return veil_error(VEIL_ERR_INVAL,
                          "%s: tiles of %zu elements; the bit-sliced circuit "
                          "needs tiles that are a multiple of 64 (or a single tile)",
                          op, x->tile);
    *numel = per_block * (size_t)veil_preproc_sliced_blocks(x->numel, x->tile);
    *tile = per_block * ((x->tile + 63) / 64);
    return VEIL_OK;
}

int veil_cmp_sliced(veil_mpc_t *m, const char *op, const struct veil_sec *x, size_t per_block,
                    struct veil_sec *t)
{
    size_t numel, tile;
    int rc = veil_cmp_sliced_layout(op, x, per_block, &numel, &tile);
    if (rc != VEIL_OK)
        return rc;
    const size_t dims[1] = {numel};
    return veil_sec_init(m, t, VEIL_SHARE_BINARY, 1, dims, x->ntiles > 1 ? tile : SIZE_MAX);
}

/* ---- the finishing codelet: buffers d, e (opened, public), a, b, c (triple), z ----------
 * (word math in compare_common.h, CUDA body in cuda/compare.cu) */

static void and_finish_cpu(void *buffers[], void *cl_arg)
{
    const struct veil_cmp_party_arg *arg = veil_cmp_arg(cl_arg);
    const uint64_t *d = (const uint64_t *)STARPU_VECTOR_GET_PTR(buffers[0]);
    const uint64_t *e = (const uint64_t *)STARPU_VECTOR_GET_PTR(buffers[1]);
    const uint64_t *a = (const uint64_t *)STARPU_VECTOR_GET_PTR(buffers[2]);
    const uint64_t *b = (const uint64_t *)STARPU_VECTOR_GET_PTR(buffers[3]);
    const uint64_t *c = (const uint64_t *)STARPU_VECTOR_GET_PTR(buffers[4]);
    uint64_t *z = (uint64_t *)STARPU_VECTOR_GET_PTR(buffers[5]);
    const size_t n = STARPU_VECTOR_GET_NX(buffers[5]);
    const uint64_t de = arg->party0 ? ~UINT64_C(0) : 0;
    for (size_t i = 0; i < n; i++)
        z[i] = veil_and_finish_word(d[i], e[i], a[i], b[i], c[i], de);
}

static struct starpu_perfmodel and_finish_model = {.type = STARPU_HISTORY_BASED,
                                                   .symbol = "veil_and_finish"};

struct starpu_codelet veil_and_finish_cl = {
    .cpu_funcs = {and_finish_cpu},
    .cpu_funcs_name = {"and_finish_cpu"},
#ifdef VEIL_USE_CUDA
    .cuda_funcs = {veil_and_finish_cuda},
    .cuda_flags = {STARPU_CUDA_ASYNC},
#endif
    .nbuffers = 6,
    .modes = {STARPU_R, STARPU_R, STARPU_R, STARPU_R, STARPU_R, STARPU_W},
    .model = &and_finish_model,
    .name = "veil_and_finish",
};

int veil_mpc_and(veil_mpc_t *m, const struct veil_sec *x, const struct veil_sec *y,
                 struct veil_sec *z)
{
    if (!x || !y || !z)
        return veil_error(VEIL_ERR_INVAL, "and: NULL tensor");
    if (!veil_sec_same_layout(x, y) || x->ndim != 1)
        return veil_error(VEIL_ERR_SHAPE,
                          "and: operands must be 1-D with the same layout "
                          "(%zu vs %zu words)",
                          x->numel, y->numel);
    struct veil_mpc_mat mat;
    const size_t tile = x->ntiles > 1 ? x->tile : SIZE_MAX;
    int rc = veil_mpc_material(m, veil_preproc_item_and(0, x->numel), tile, &mat);
    if (rc != VEIL_OK)
        return rc;
    struct veil_pub d = {0}, e = {0};
    veil_mpc_round(m);
    if ((rc = veil_mpc_open(m, x, &mat.part[VEIL_PRE_A], &d)) != VEIL_OK ||
        (rc = veil_mpc_open(m, y, &mat.part[VEIL_PRE_B], &e)) != VEIL_OK ||
        (rc = veil_sec_init_like(m, z, x)) != VEIL_OK)
        goto out;
    z->kind = VEIL_SHARE_BINARY;
    if (!veil_mpc_computes(m))
        goto out;
    const struct veil_cmp_party_arg arg = {.party0 = veil_mpc_self(m) == 0};
    for (int t = 0; t < x->ntiles && rc == VEIL_OK; t++) {
        const starpu_data_handle_t h[6] = {d.h[t],
                                           e.h[t],
                                           mat.part[VEIL_PRE_A].h[t],
                                           mat.part[VEIL_PRE_B].h[t],
                                           mat.part[VEIL_PRE_C].h[t],
                                           z->h[t]};
        rc = veil_cmp_submit(m, &veil_and_finish_cl, "and", h, NULL, 6, &arg, sizeof arg);
    }
out:
    veil_mpc_release(m, &d);
    veil_mpc_release(m, &e);
    veil_mpc_mat_release(m, &mat);
    return rc;
}

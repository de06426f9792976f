/*
 * transpose.c — codelet, perf model and submit helper of the 2-D transpose of a uint64_t matrix
 * (starpu_matrix handles, row-major). CPU body in cpu/transpose.c.
 */
#include "config.h"

#include "codelets/codelets_internal.h"
#ifdef VEIL_USE_CUDA
#include "codelets/cuda/cuda_internal.h"
#endif

#include "base/base_internal.h"
#include "base/trace.h"
#include "net/idle.h"

#include <string.h>

static struct starpu_perfmodel transpose_model = {
    .type = STARPU_HISTORY_BASED, .symbol = "veil_transpose", .size_base = veil_codelet_size_base};

/* The CUDA body (codelets/cuda/) is registered when the StarPU found has CUDA (VEIL_USE_CUDA). */
struct starpu_codelet veil_transpose_cl = {
    .cpu_funcs = {veil_transpose_cpu},
    .cpu_funcs_name = {"veil_transpose_cpu"},
#ifdef VEIL_USE_CUDA
    .cuda_funcs = {veil_transpose_cuda},
    .cuda_flags = {STARPU_CUDA_ASYNC},
#endif
    .nbuffers = 2,
    .modes = {STARPU_R, STARPU_W},
    .model = &transpose_model,
    .name = "veil_transpose",
};

static int check_matrix(starpu_data_handle_t h, const char *what, size_t *rows, size_t *cols)
{
    if (h == NULL)
        return veil_error(VEIL_ERR_INVAL, "transpose: %s handle is NULL", what);
    if (starpu_data_get_interface_id(h) != STARPU_MATRIX_INTERFACE_ID)
        return veil_error(VEIL_ERR_INVAL, "transpose: %s is not a starpu_matrix handle", what);
    if (starpu_matrix_get_elemsize(h) != sizeof(uint64_t))
        return veil_error(VEIL_ERR_INVAL, "transpose: %s element size is %zu bytes, expected 8",
                          what, starpu_matrix_get_elemsize(h));
    *cols = starpu_matrix_get_nx(h);
    *rows = starpu_matrix_get_ny(h);
    if (*rows == 0 || *cols == 0)
        return veil_error(VEIL_ERR_INVAL, "transpose: %s matrix is empty", what);
    return VEIL_OK;
}

int veil_task_transpose(starpu_data_handle_t in, starpu_data_handle_t out, int priority)
{
    size_t ir, ic, orow, ocol;
    int rc;

    if ((rc = check_matrix(in, "input", &ir, &ic)) != VEIL_OK)
        return rc;
    if ((rc = check_matrix(out, "output", &orow, &ocol)) != VEIL_OK)
        return rc;
    if (in == out)
        return veil_error(VEIL_ERR_INVAL,
                          "transpose: the output handle must differ from the input");
    if (orow != ic || ocol != ir)
        return veil_error(VEIL_ERR_SHAPE,
                          "transpose: input is %zu x %zu, so output must be %zu x %zu, not "
                          "%zu x %zu",
                          ir, ic, ic, ir, orow, ocol);
    rc = starpu_task_insert(&veil_transpose_cl, STARPU_R, in, STARPU_W, out, STARPU_PRIORITY,
                            priority, STARPU_EXECUTE_ON_WORKER, veil_place_worker(out), VEIL_TRACE_TASK, 0);
    veil_net_idle_kick(); /* it may be ready: resume paused workers */
    if (rc != 0)
        return veil_error(VEIL_ERR_STARPU, "transpose: starpu_task_insert failed (%s)",
                          strerror(-rc));
    return VEIL_OK;
}

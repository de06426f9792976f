/*
 * gemm.c — the StarPU side of the Z_2^64 matrix product: the two GEMM codelets (C written, or C
 * accumulated), their shared history-based perf model keyed on (m, n, k), the CPU body that
 * unpacks a task into veil_gemm_u64 (cpu/gemm.c), and the submit helper that checks shapes
 * before anything reaches StarPU. Handles are row-major matrices as gemm_internal.h describes.
 */
#include "config.h"
#include "codelets/codelets_internal.h"
#include "codelets/gemm_internal.h"
#ifdef VEIL_USE_CUDA
#include "codelets/cuda/cuda_internal.h"
#endif
#include "base/base_internal.h"
#include "base/trace.h"
#include "net/idle.h"

#include <string.h>

/* (m, n, k) of a GEMM task, read from its handles: C is m x n; A holds m * k elements whichever
 * way it is stored, so k needs no trans flag (which lives in the packed arguments). */
static void task_dims(struct starpu_task *task, size_t *m, size_t *n, size_t *k)
{
    starpu_data_handle_t a = STARPU_TASK_GET_HANDLE(task, 0);
    starpu_data_handle_t c = STARPU_TASK_GET_HANDLE(task, 2);
    *m = starpu_matrix_get_ny(c);
    *n = starpu_matrix_get_nx(c);
    size_t numel_a = (size_t)starpu_matrix_get_nx(a) * starpu_matrix_get_ny(a);
    *k = *m ? numel_a / *m : 0;
}

/* History key: the product's shape, not the handles' byte sizes (the default footprint), since a
 * 64 x 4096 by 4096 x 64 product and a 512 x 512 by 512 x 512 one hold similar bytes but cost
 * 16 M and 134 M multiply-adds. The transposes change only the packing, a small term. */
static uint32_t gemm_footprint(struct starpu_task *task)
{
    size_t m, n, k;
    task_dims(task, &m, &n, &k);
    uint64_t dims[3] = {m, n, k};
    return starpu_hash_crc32c_be_n(dims, sizeof dims, 0);
}

/* Multiply-adds: what the regression-based views of the history (starpu_perfmodel_plot) fit. */
static size_t gemm_size_base(struct starpu_task *task, unsigned nimpl)
{
    (void)nimpl;
    size_t m, n, k;
    task_dims(task, &m, &n, &k);
    return m * n * k;
}

static struct starpu_perfmodel gemm_model = {
    .type = STARPU_HISTORY_BASED,
    .symbol = "veil_gemm",
    .footprint = gemm_footprint,
    .size_base = gemm_size_base,
};

/* Two codelets rather than one with per-task modes: with C in STARPU_W, StarPU neither fetches
 * nor waits to transfer C's old contents for a product that overwrites it. */
struct starpu_codelet veil_gemm_cl = {
    .cpu_funcs = {veil_gemm_cpu},
    .cpu_funcs_name = {"veil_gemm_cpu"},
#ifdef VEIL_USE_CUDA
    .cuda_funcs = {veil_gemm_cuda, veil_gemm_int_cuda},
    .cuda_flags = {STARPU_CUDA_ASYNC, STARPU_CUDA_ASYNC},
#endif
    .nbuffers = 3,
    .modes = {STARPU_R, STARPU_R, STARPU_W},
    .model = &gemm_model,
    .name = "veil_gemm",
};

struct starpu_codelet veil_gemm_acc_cl = {
    .cpu_funcs = {veil_gemm_cpu},
    .cpu_funcs_name = {"veil_gemm_cpu"},
#ifdef VEIL_USE_CUDA
    .cuda_funcs = {veil_gemm_cuda, veil_gemm_int_cuda},
    .cuda_flags = {STARPU_CUDA_ASYNC, STARPU_CUDA_ASYNC},
#endif
    .nbuffers = 3,
    .modes = {STARPU_R, STARPU_R, STARPU_RW},
    .model = &gemm_model,
    .name = "veil_gemm_acc",
};

void veil_gemm_cpu(void *buffers[], void *cl_arg)
{
    int trans_a, trans_b, accumulate;
    starpu_codelet_unpack_args(cl_arg, &trans_a, &trans_b, &accumulate);
    const uint64_t *a = (const uint64_t *)STARPU_MATRIX_GET_PTR(buffers[0]);
    const uint64_t *b = (const uint64_t *)STARPU_MATRIX_GET_PTR(buffers[1]);
    uint64_t *c = (uint64_t *)STARPU_MATRIX_GET_PTR(buffers[2]);
    size_t m = STARPU_MATRIX_GET_NY(buffers[2]), n = STARPU_MATRIX_GET_NX(buffers[2]);
    size_t k = trans_a ? STARPU_MATRIX_GET_NY(buffers[0]) : STARPU_MATRIX_GET_NX(buffers[0]);
    veil_gemm_u64(trans_a, trans_b, m, n, k, a, STARPU_MATRIX_GET_LD(buffers[0]), b,
                  STARPU_MATRIX_GET_LD(buffers[1]), accumulate, c,
                  STARPU_MATRIX_GET_LD(buffers[2]));
}

/* Reads a handle's row-major shape after checking it is a non-empty uint64_t matrix. */
static int check_matrix(starpu_data_handle_t h, const char *what, size_t *rows, size_t *cols)
{
    if (h == NULL)
        return veil_error(VEIL_ERR_INVAL, "gemm: %s handle is NULL", what);
    if (starpu_data_get_interface_id(h) != STARPU_MATRIX_INTERFACE_ID)
        return veil_error(VEIL_ERR_INVAL, "gemm: %s is not a starpu_matrix handle", what);
    if (starpu_matrix_get_elemsize(h) != sizeof(uint64_t))
        return veil_error(VEIL_ERR_INVAL, "gemm: %s element size is %zu bytes, expected 8", what,
                          starpu_matrix_get_elemsize(h));
    *cols = starpu_matrix_get_nx(h);
    *rows = starpu_matrix_get_ny(h);
    if (*rows == 0 || *cols == 0)
        return veil_error(VEIL_ERR_INVAL, "gemm: %s matrix is empty (%zu x %zu)", what, *rows,
                          *cols);
    return VEIL_OK;
}

int veil_task_gemm(starpu_data_handle_t a, starpu_data_handle_t b, starpu_data_handle_t c,
                   int trans_a, int trans_b, int accumulate, int priority)
{
    size_t ar, ac, br, bc, cr, cc;
    int rc;

    if ((rc = check_matrix(a, "A", &ar, &ac)) != VEIL_OK ||
        (rc = check_matrix(b, "B", &br, &bc)) != VEIL_OK ||
        (rc = check_matrix(c, "C", &cr, &cc)) != VEIL_OK)
        return rc;
    if (c == a || c == b)
        return veil_error(VEIL_ERR_INVAL, "gemm: C must be a handle distinct from A and B");

    trans_a = trans_a != 0;
    trans_b = trans_b != 0;
    accumulate = accumulate != 0;
    size_t m = trans_a ? ac : ar, k = trans_a ? ar : ac;
    size_t kb = trans_b ? bc : br, n = trans_b ? br : bc;
    if (kb != k)
        return veil_error(VEIL_ERR_SHAPE,
                          "gemm: inner dimensions differ: op(A) is %zu x %zu (A %zu x %zu%s), "
                          "op(B) is %zu x %zu (B %zu x %zu%s)",
                          m, k, ar, ac, trans_a ? " transposed" : "", kb, n, br, bc,
                          trans_b ? " transposed" : "");
    if (cr != m || cc != n)
        return veil_error(VEIL_ERR_SHAPE, "gemm: op(A) op(B) is %zu x %zu, but C is %zu x %zu", m,
                          n, cr, cc);

    rc = starpu_task_insert(accumulate ? &veil_gemm_acc_cl : &veil_gemm_cl, STARPU_R, a, STARPU_R,
                            b, accumulate ? STARPU_RW : STARPU_W, c, STARPU_VALUE, &trans_a,
                            sizeof trans_a, STARPU_VALUE, &trans_b, sizeof trans_b, STARPU_VALUE,
                            &accumulate, sizeof accumulate, STARPU_PRIORITY, priority,
                            STARPU_EXECUTE_ON_WORKER,
                            veil_place_worker_work(c, (uint64_t)m * n * k), VEIL_TRACE_TASK, 0);
    veil_net_idle_kick(); /* it may be ready: resume paused workers */
    if (rc != 0)
        return veil_error(VEIL_ERR_STARPU, "gemm: starpu_task_insert failed (%s)", strerror(-rc));
    return VEIL_OK;
}

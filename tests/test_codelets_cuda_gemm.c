/* Tests the two CUDA GEMM bodies — limb split + cuBLAS DGEMMs (veil_gemm_cuda) and the tiled
 * integer kernel (veil_gemm_int_cuda) — against the CPU body and the exact ring GEMM, bit for
 * bit: odd shapes and shapes crossing the 16 x 16 tiles, all four transpose combinations with
 * padded leading dimensions, overwrite and accumulate, edge values, and an inner dimension of
 * 2^19 + 5 that makes the limb body cut k into two chunks (all-ones words, the worst case of the
 * exactness bound). Each body is forced through a codelet copy that has only that implementation.
 * Skips (77) when Veil was built without VEIL_USE_CUDA or StarPU finds no CUDA worker. */
#include "config.h"

#include "codelets/gemm_internal.h"
#include "codelets/limb_common.h"
#include "codelets/reference.h"
#include "test_util.h"

#include <stdlib.h>
#include <string.h>

#ifdef VEIL_USE_CUDA
#include "codelets/cuda/cuda_internal.h"

/* Runs C (=|+=) op(A) op(B) with the given CUDA body (or the CPU body when cuda_body is NULL). */
static void run_gemm(void (*cuda_body)(void *[], void *), int ta, int tb, int acc, size_t ar,
                     size_t ac, size_t lda, const uint64_t *a, size_t br, size_t bc, size_t ldb,
                     const uint64_t *b, size_t m, size_t n, size_t ldc, uint64_t *c)
{
    struct starpu_codelet cl = acc ? veil_gemm_acc_cl : veil_gemm_cl;
    cl.model = NULL;
    if (cuda_body != NULL) {
        cl.where = STARPU_CUDA;
        memset(cl.cuda_funcs, 0, sizeof(cl.cuda_funcs));
        cl.cuda_funcs[0] = cuda_body;
    } else {
        cl.where = STARPU_CPU;
    }
    starpu_data_handle_t ha, hb, hc;
    starpu_matrix_data_register(&ha, STARPU_MAIN_RAM, (uintptr_t)a, lda, ac, ar, 8);
    starpu_matrix_data_register(&hb, STARPU_MAIN_RAM, (uintptr_t)b, ldb, bc, br, 8);
    starpu_matrix_data_register(&hc, STARPU_MAIN_RAM, (uintptr_t)c, ldc, n, m, 8);
    int rc = starpu_task_insert(&cl, STARPU_R, ha, STARPU_R, hb, acc ? STARPU_RW : STARPU_W, hc,
                                STARPU_VALUE, &ta, sizeof(int), STARPU_VALUE, &tb, sizeof(int),
                                STARPU_VALUE, &acc, sizeof(int), 0);
    VT_CHECK(rc == 0, "gemm submit %d", rc);
    starpu_task_wait_for_all();
    starpu_data_unregister(ha);
    starpu_data_unregister(hb);
    starpu_data_unregister(hc);
}

static void check_case(size_t m, size_t n, size_t k, int all_ones, uint64_t tag)
{
    void (*bodies[3])(void *[], void *) = {veil_gemm_cuda, veil_gemm_int_cuda, NULL};
    static const char *names[3] = {"limb/cuBLAS", "integer", "CPU"};
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++)
            for (int acc = 0; acc < 2; acc++) {
                size_t ar = ta ? k : m, ac = ta ? m : k, br = tb ? n : k, bc = tb ? k : n;
                size_t lda = ac + 1, ldb = bc + 2, ldc = n + 3;
                uint64_t *a = malloc(ar * lda * 8), *b = malloc(br * ldb * 8);
                uint64_t *c0 = malloc(m * ldc * 8), *c = malloc(m * ldc * 8);
                uint64_t *oa = malloc(m * k * 8), *ob = malloc(k * n * 8);
                uint64_t *want = malloc(m * n * 8), *got = malloc(m * n * 8);
                if (!a || !b || !c0 || !c || !oa || !ob || !want || !got) {
                    VT_CHECK(0, "out of memory");
                    goto next;
                }
                if (all_ones) {
                    memset(a, 0xff, ar * lda * 8);
                    memset(b, 0xff, br * ldb * 8);
                } else {
                    veil_test_random(tag * 8 + 1, a, ar * lda);
                    veil_test_random(tag * 8 + 2, b, br * ldb);
                    veil_test_mix_edges(a, b, ar * lda < br * ldb ? ar * lda : br * ldb);
                }
                veil_test_random(tag * 8 + 3, c0, m * ldc);
                for (size_t r = 0; r < m; r++)
                    for (size_t p = 0; p < k; p++)
                        oa[r * k + p] = ta ? a[p * lda + r] : a[r * lda + p];
                for (size_t p = 0; p < k; p++)
                    for (size_t col = 0; col < n; col++)
                        ob[p * n + col] = tb ? b[col * ldb + p] : b[p * ldb + col];
                veil_ref_gemm(m, n, k, oa, ob, want);
                if (acc)
                    for (size_t r = 0; r < m; r++)
                        for (size_t col = 0; col < n; col++)
                            want[r * n + col] += c0[r * ldc + col];
                for (int w = 0; w < 3; w++) {
                    memcpy(c, c0, m * ldc * 8);
                    run_gemm(bodies[w], ta, tb, acc, ar, ac, lda, a, br, bc, ldb, b, m, n, ldc, c);
                    for (size_t r = 0; r < m; r++)
                        memcpy(got + r * n, c + r * ldc, n * 8);
                    char what[128];
                    snprintf(what, sizeof(what), "%s m=%zu n=%zu k=%zu ta=%d tb=%d acc=%d",
                             names[w], m, n, k, ta, tb, acc);
                    veil_test_compare_u64(what, got, want, m * n);
                }
            next:
                free(a), free(b), free(c0), free(c), free(oa), free(ob), free(want), free(got);
            }
}

int main(void)
{
    int rc = veil_test_starpu_start();
    if (rc != 0)
        return rc;
    if (starpu_cuda_worker_get_count() == 0) {
        veil_test_log("SKIP: no CUDA worker");
        veil_test_starpu_stop();
        return 77;
    }
    starpu_cublas_init();
    static const size_t shapes[][3] = {{1, 1, 1},     {3, 5, 7},      {16, 16, 16}, {17, 15, 33},
                                       {64, 48, 100}, {129, 70, 257}, {5, 3, 3000}};
    for (size_t s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++)
        check_case(shapes[s][0], shapes[s][1], shapes[s][2], 0, s + 1);
    check_case(2, 3, VEIL_LIMB_GEMM_KMAX + 5, 1, 99);
    starpu_cublas_shutdown();
    veil_test_starpu_stop();
    return veil_test_status();
}

#else /* !VEIL_USE_CUDA */

int main(void)
{
    veil_test_log("SKIP: built without VEIL_USE_CUDA (no CUDA-enabled StarPU)");
    return 77;
}

#endif

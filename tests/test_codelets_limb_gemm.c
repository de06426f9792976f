/* Tests the limb-split Z_2^64 GEMM in plain C (veil_limb_gemm_u64, the arithmetic the cuBLAS body
 * runs on GPUs) against the exact ring GEMM veil_ref_gemm bit for bit: random and edge-valued
 * matrices (0, 1, 2^63 - 1, 2^63, 2^64 - 1 and all-0xFFFF limbs), odd shapes, all four transpose
 * combinations with padded leading dimensions, overwrite and accumulate, k = 0, inner dimensions
 * up to 3000, forced small chunks of the inner dimension (1, 7, 64) against unchunked, and the
 * exactness bound itself: k = 2^19 (one chunk at VEIL_LIMB_GEMM_KMAX) and 2^19 + 3 (two chunks) of
 * all-ones words, where every per-level double sum reaches its maximum 4 * 2^19 * (2^16-1)^2.
 * Runs on every machine (no GPU, no StarPU). */
#include "config.h"

#include "codelets/limb_gemm_internal.h"
#include "codelets/reference.h"
#include "test_util.h"

#include <stdlib.h>
#include <string.h>

/* Row-major copy of op(X) (rows x cols) from storage with row stride ld, transposed if trans. */
static void materialise(int trans, size_t rows, size_t cols, const uint64_t *x, size_t ld,
                        uint64_t *out)
{
    for (size_t r = 0; r < rows; r++)
        for (size_t c = 0; c < cols; c++)
            out[r * cols + c] = trans ? x[c * ld + r] : x[r * ld + c];
}

/* One case: random op(A), op(B) with edge values mixed in, every transpose combination,
 * accumulate on and off, checked against the reference. */
static void check_case(size_t m, size_t n, size_t k, size_t kchunk, uint64_t tag)
{
    size_t pad = 3;
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++)
            for (int acc = 0; acc < 2; acc++) {
                size_t ar = ta ? k : m, ac = ta ? m : k, br = tb ? n : k, bc = tb ? k : n;
                size_t lda = ac + pad, ldb = bc + pad, ldc = n + pad;
                uint64_t *a = calloc(ar * lda + 1, 8), *b = calloc(br * ldb + 1, 8);
                uint64_t *c = calloc(m * ldc + 1, 8), *c0 = calloc(m * n + 1, 8);
                uint64_t *oa = calloc(m * k + 1, 8), *ob = calloc(k * n + 1, 8);
                uint64_t *want = calloc(m * n + 1, 8), *got = calloc(m * n + 1, 8);
                if (!a || !b || !c || !c0 || !oa || !ob || !want || !got) {
                    VT_CHECK(0, "out of memory");
                    goto done;
                }
                veil_test_random(tag * 16 + 1, a, ar * lda);
                veil_test_random(tag * 16 + 2, b, br * ldb);
                veil_test_mix_edges(a, b, ar * lda < br * ldb ? ar * lda : br * ldb);
                veil_test_random(tag * 16 + 3, c, m * ldc);
                for (size_t r = 0; r < m; r++)
                    memcpy(c0 + r * n, c + r * ldc, n * 8);
                materialise(ta, m, k, a, lda, oa);
                materialise(tb, k, n, b, ldb, ob);
                veil_ref_gemm(m, n, k, oa, ob, want);
                if (k == 0)
                    memset(want, 0, m * n * 8);
                if (acc)
                    for (size_t i = 0; i < m * n; i++)
                        want[i] += c0[i];
                int rc = veil_limb_gemm_u64(ta, tb, m, n, k, a, lda, b, ldb, acc, c, ldc, kchunk);
                VT_CHECK(rc == VEIL_OK, "limb gemm returned %d", rc);
                for (size_t r = 0; r < m; r++)
                    memcpy(got + r * n, c + r * ldc, n * 8);
                char what[128];
                snprintf(what, sizeof(what), "m=%zu n=%zu k=%zu chunk=%zu ta=%d tb=%d acc=%d", m, n,
                         k, kchunk, ta, tb, acc);
                veil_test_compare_u64(what, got, want, m * n);
            done:
                free(a), free(b), free(c), free(c0), free(oa), free(ob), free(want), free(got);
            }
}

/* The exactness limit: 1 x 1 product of k all-ones words (every limb 0xFFFF, so each of the 4
 * pair products of level 3 sums k * (2^16-1)^2). */
static void check_bound(size_t k)
{
    uint64_t *a = malloc(k * 8), *b = malloc(k * 8), c = 0, want = 0;
    if (!a || !b) {
        VT_CHECK(0, "out of memory");
        goto done;
    }
    for (size_t i = 0; i < k; i++)
        a[i] = b[i] = UINT64_MAX;
    want = (uint64_t)k; /* (-1) * (-1) summed k times */
    VT_CHECK(veil_limb_gemm_u64(0, 0, 1, 1, k, a, k, b, 1, 0, &c, 1, 0) == VEIL_OK, "bound call");
    VT_CHECK(c == want, "k=%zu all ones: got %llu, want %llu", k, (unsigned long long)c,
             (unsigned long long)want);
    /* 0xFFFF...FFFF times 0x0000FFFF0000FFFF-style words: different limb pattern, same bound. */
    for (size_t i = 0; i < k; i++)
        b[i] = UINT64_C(0xFFFF0000FFFF0000) ^ (uint64_t)i;
    want = 0;
    for (size_t i = 0; i < k; i++)
        want += a[i] * b[i];
    VT_CHECK(veil_limb_gemm_u64(1, 1, 1, 1, k, a, 1, b, k, 0, &c, 1, 0) == VEIL_OK, "bound call");
    VT_CHECK(c == want, "k=%zu mixed: got %llu, want %llu", k, (unsigned long long)c,
             (unsigned long long)want);
done:
    free(a);
    free(b);
}

int main(void)
{
    static const size_t shapes[][3] = {{1, 1, 1},  {1, 1, 0},  {2, 3, 5},  {7, 5, 3},
                                       {4, 4, 64}, {3, 9, 17}, {5, 2, 130}};
    uint64_t tag = 1;
    for (size_t s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++)
        check_case(shapes[s][0], shapes[s][1], shapes[s][2], 0, tag++);
    /* Chunking: the same results with tiny chunks as with one chunk. */
    check_case(3, 4, 50, 1, tag++);
    check_case(3, 4, 50, 7, tag++);
    check_case(6, 5, 200, 64, tag++);
    /* Long inner dimensions (a few thousand). */
    check_case(2, 3, 1000, 0, tag++);
    check_case(1, 2, 3000, 0, tag++);
    /* Exactly at the bound, then just past it (two chunks). */
    check_bound(VEIL_LIMB_GEMM_KMAX);
    check_bound(VEIL_LIMB_GEMM_KMAX + 3);
    veil_test_log("limb gemm: %d failures", veil_test_failures);
    return veil_test_status();
}

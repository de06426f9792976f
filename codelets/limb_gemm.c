/*
 * limb_gemm.c — the limb-split Z_2^64 GEMM in plain C: op(A) and op(B) are split into 16-bit limbs
 * held in doubles, the 10 limb-pair products that matter mod 2^64 are double GEMMs accumulated
 * per shift level, and the levels are recombined with shifts (limb_common.h explains why every
 * double stays exact). It mirrors the cuBLAS body step for step so that the CPU test suite checks
 * the decomposition, the chunking of long inner dimensions and the recombination.
 */
#include "config.h"

#include "codelets/limb_gemm_internal.h"

#include "base/base_internal.h"

#include <string.h>

/* The exactness bound of limb_common.h: a level's sum of 4 * kc terms below 2^32 fits 2^53. */
_Static_assert((uint64_t)VEIL_LIMB_GEMM_KMAX * 4 * 0xFFFF * 0xFFFF <= (UINT64_C(1) << 53),
               "limb chunk too long for exact double sums");

/* op(X)(r, col) for a row-major matrix stored with row stride ld, transposed when trans. */
static uint64_t op_at(const uint64_t *x, size_t ld, int trans, size_t r, size_t col)
{
    return trans ? x[col * ld + r] : x[r * ld + col];
}

/* d (rows x cols, row-major) += x (rows x kc) * y (kc x cols), in double. */
static void dgemm_acc(size_t rows, size_t cols, size_t kc, const double *x, const double *y,
                      double *d)
{
    for (size_t r = 0; r < rows; r++) {
        double *dr = d + r * cols;
        for (size_t p = 0; p < kc; p++) {
            double xv = x[r * kc + p];
            const double *yp = y + p * cols;
            for (size_t col = 0; col < cols; col++)
                dr[col] += xv * yp[col];
        }
    }
}

static int mul_overflows(size_t x, size_t y, size_t *out)
{
    if (y != 0 && x > SIZE_MAX / y)
        return 1;
    *out = x * y;
    return 0;
}

int veil_limb_gemm_u64(int trans_a, int trans_b, size_t m, size_t n, size_t k, const uint64_t *a,
                       size_t lda, const uint64_t *b, size_t ldb, int accumulate, uint64_t *c,
                       size_t ldc, size_t kchunk)
{
    size_t kc_max = (kchunk == 0 || kchunk > VEIL_LIMB_GEMM_KMAX) ? VEIL_LIMB_GEMM_KMAX : kchunk;
    size_t kc_alloc = k < kc_max ? k : kc_max;
    size_t mk, kn, mn, total;
    double *work = NULL;

    if (m == 0 || n == 0)
        return VEIL_OK;
    if (mul_overflows(m, kc_alloc, &mk) || mul_overflows(kc_alloc, n, &kn) ||
        mul_overflows(m, n, &mn) || mk > SIZE_MAX / 4 - kn || mk + kn > SIZE_MAX / 4 - mn ||
        mul_overflows(4 * (mk + kn + mn), sizeof(double), &total))
        return veil_error(VEIL_ERR_RANGE, "limb gemm: %zu x %zu x %zu workspace overflows", m, n,
                          k);
    work = veil_aligned_alloc(total ? total : sizeof(double));
    if (work == NULL)
        return veil_error(VEIL_ERR_NOMEM, "limb gemm: cannot allocate %zu bytes of workspace",
                          total);
    double *al = work;        /* 4 limbs of op(A)'s chunk, each m x kc */
    double *bl = al + 4 * mk; /* 4 limbs of op(B)'s chunk, each kc x n */
    double *d = bl + 4 * kn;  /* per-level sums, each m x n */

    if (k == 0 && !accumulate)
        for (size_t r = 0; r < m; r++)
            memset(c + r * ldc, 0, n * sizeof(uint64_t));
    for (size_t k0 = 0; k0 < k; k0 += kc_max) {
        size_t kc = k - k0 < kc_max ? k - k0 : kc_max;
        for (size_t r = 0; r < m; r++)
            for (size_t p = 0; p < kc; p++) {
                uint64_t v = op_at(a, lda, trans_a, r, k0 + p);
                for (unsigned l = 0; l < 4; l++)
                    al[l * mk + r * kc + p] = veil_limb_of(v, l);
            }
        for (size_t p = 0; p < kc; p++)
            for (size_t col = 0; col < n; col++) {
                uint64_t v = op_at(b, ldb, trans_b, k0 + p, col);
                for (unsigned l = 0; l < 4; l++)
                    bl[l * kn + p * n + col] = veil_limb_of(v, l);
            }
        memset(d, 0, 4 * mn * sizeof(double));
        /* The 10 pairs (i, j) with i + j <= 3, each summed into its level i + j. */
        for (unsigned i = 0; i < 4; i++)
            for (unsigned j = 0; i + j < 4; j++)
                dgemm_acc(m, n, kc, al + i * mk, bl + j * kn, d + (i + j) * mn);
        int add = accumulate || k0 > 0;
        for (size_t r = 0; r < m; r++)
            for (size_t col = 0; col < n; col++) {
                size_t e = r * n + col;
                uint64_t v = veil_limb_combine(d[e], d[mn + e], d[2 * mn + e], d[3 * mn + e]);
                c[r * ldc + col] = add ? c[r * ldc + col] + v : v;
            }
    }
    veil_aligned_free(work);
    return VEIL_OK;
}

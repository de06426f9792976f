/* Tests the plaintext oracle itself (codelets/reference.c), which every other test trusts: the
 * ring GEMM and the double GEMM on a hand-computed example; every ring op against its double
 * meaning on small signed integers (exact in both, negatives in two's complement) for add, sub,
 * neg, mul, mul/add by a scalar, sum, im2col, col2im, transpose and GEMM; the GEMM reference
 * wrapping mod 2^64; and veil_ref_fixed_mul against real products of fixed-point numbers (floor,
 * within 1 ulp) and against its documented definition. No StarPU. */
#include "config.h"

#include "codelets/reference.h"
#include "test_util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define N 60

/* Two's-complement ring encoding of a small integer-valued double, and back. */
static uint64_t enc(double v)
{
    return (uint64_t)(int64_t)v;
}

static void check_ring_vs_double(const char *what, const uint64_t *ring, const double *real,
                                 size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if ((int64_t)ring[i] != (int64_t)real[i]) {
            fprintf(stderr, "FAIL %s: index %zu: ring %lld, double %.17g\n", what, i,
                    (long long)(int64_t)ring[i], real[i]);
            veil_test_failures++;
            return;
        }
    }
}

static void check_gemm_example(void)
{
    const uint64_t a[6] = {1, 2, 3, 4, 5, 6};    /* 2x3 */
    const uint64_t b[6] = {7, 8, 9, 10, 11, 12}; /* 3x2 */
    const uint64_t want[4] = {58, 64, 139, 154};
    uint64_t c[4] = {99, 99, 99, 99};
    veil_ref_gemm(2, 2, 3, a, b, c);
    veil_test_compare_u64("ref gemm 2x3x2", c, want, 4);
    const double ad[6] = {1, 2, 3, 4, 5, 6}, bd[6] = {7, 8, 9, 10, 11, 12};
    double cd[4] = {-1, -1, -1, -1};
    veil_ref_gemm_f64(2, 2, 3, ad, bd, cd);
    VT_CHECK(cd[0] == 58 && cd[1] == 64 && cd[2] == 139 && cd[3] == 154, "ref gemm_f64 2x3x2");
    /* Wrap-around: (2^63) * 2 + (2^64 - 1) * 1 = 2^64 - 1 mod 2^64. */
    const uint64_t wa[2] = {UINT64_C(1) << 63, UINT64_MAX}, wb[2] = {2, 1};
    uint64_t wc = 0;
    veil_ref_gemm(1, 1, 2, wa, wb, &wc);
    VT_CHECK(wc == UINT64_MAX, "ref gemm wraps mod 2^64: %llx", (unsigned long long)wc);
}

static void check_elementwise(void)
{
    uint64_t ra[N], rb[N], rout[N], rw[N];
    double da[N], db[N], dout[N];
    uint64_t r[N];
    veil_test_random(13000, r, N);
    for (int i = 0; i < N; i++) {
        da[i] = (double)((int64_t)(r[i] % 2001) - 1000);
        db[i] = (double)((int64_t)((r[i] >> 20) % 2001) - 1000);
        ra[i] = enc(da[i]);
        rb[i] = enc(db[i]);
    }
    veil_ref_add(N, ra, rb, rout), veil_ref_add_f64(N, da, db, dout);
    check_ring_vs_double("add", rout, dout, N);
    veil_ref_sub(N, ra, rb, rout), veil_ref_sub_f64(N, da, db, dout);
    check_ring_vs_double("sub", rout, dout, N);
    veil_ref_neg(N, ra, rout), veil_ref_neg_f64(N, da, dout);
    check_ring_vs_double("neg", rout, dout, N);
    veil_ref_mul(N, ra, rb, rout), veil_ref_mul_f64(N, da, db, dout);
    check_ring_vs_double("mul", rout, dout, N);
    veil_ref_mul_scalar(N, ra, enc(-7), rout), veil_ref_mul_scalar_f64(N, da, -7, dout);
    check_ring_vs_double("mul_scalar", rout, dout, N);
    veil_ref_add_scalar(N, ra, enc(-7), rout), veil_ref_add_scalar_f64(N, da, -7, dout);
    check_ring_vs_double("add_scalar", rout, dout, N);
    const uint64_t *rin[3] = {ra, rb, ra};
    const double *din[3] = {da, db, da};
    veil_ref_sum(3, N, rin, rout), veil_ref_sum_f64(3, N, din, dout);
    check_ring_vs_double("sum", rout, dout, N);
    veil_ref_transpose(6, 10, ra, rout), veil_ref_transpose_f64(6, 10, da, dout);
    check_ring_vs_double("transpose", rout, dout, N);
    veil_ref_transpose(10, 6, rout, rw);
    veil_test_compare_u64("transpose twice", rw, ra, N);
    veil_ref_gemm(5, 4, 3, ra, rb, rout), veil_ref_gemm_f64(5, 4, 3, da, db, dout);
    check_ring_vs_double("gemm", rout, dout, 20);
    /* not = -x - 1, xor with all-ones = not. */
    veil_ref_not(N, ra, rout), veil_ref_xor_mask(N, ra, UINT64_MAX, rw);
    veil_test_compare_u64("not vs xor all-ones", rout, rw, N);
    for (int i = 0; i < N; i++)
        dout[i] = -da[i] - 1;
    check_ring_vs_double("not = -x - 1", rout, dout, N);
}

static void check_im2col(void)
{
    const struct veil_im2col_geom g = {2, 2, 5, 4, 3, 2, 2, 1, 1, 1};
    /* oh = (5+2-3)/2+1 = 3, ow = (4+2-2)/1+1 = 5: cols = 2 * 12 * 15 = 360, image = 80. */
    uint64_t x[80], c[360], back[80], r[80];
    double dx[80], dc[360], dback[80];
    veil_test_random(14000, r, 80);
    for (int i = 0; i < 80; i++) {
        dx[i] = (double)((int64_t)(r[i] % 201) - 100);
        x[i] = enc(dx[i]);
    }
    veil_ref_im2col(&g, x, c), veil_ref_im2col_f64(&g, dx, dc);
    check_ring_vs_double("im2col", c, dc, 360);
    veil_ref_col2im(&g, c, back), veil_ref_col2im_f64(&g, dc, dback);
    check_ring_vs_double("col2im", back, dback, 80);
}

static void check_fixed_mul(void)
{
    const int f = 16;
    const double vals[] = {
        1.5,       -2.25, 0.0, 3.0517578125e-05, -3.0517578125e-05, 1000.125, -0.999984741210937,
        12345.678, -7.0};
    const size_t nv = sizeof(vals) / sizeof(vals[0]);
    for (size_t i = 0; i < nv; i++) {
        for (size_t j = 0; j < nv; j++) {
            uint64_t a, b;
            VT_CHECK(veil_fixed_encode(vals[i], f, &a) == VEIL_OK, "encode");
            VT_CHECK(veil_fixed_encode(vals[j], f, &b) == VEIL_OK, "encode");
            double exact = veil_fixed_decode(a, f) * veil_fixed_decode(b, f);
            double got = veil_fixed_decode(veil_ref_fixed_mul(a, b, f), f);
            double ulp = ldexp(1.0, -f);
            /* floor: got <= exact < got + 1 ulp. */
            VT_CHECK(got <= exact && exact - got < ulp, "fixed_mul(%g, %g) = %.10g, exact %.10g",
                     vals[i], vals[j], got, exact);
        }
    }
    VT_CHECK(veil_ref_fixed_mul(enc(-1), 1, 0) == enc(-1), "f = 0 is the ring product");
    VT_CHECK(veil_ref_fixed_mul(enc(-1), 1, 1) == enc(-1), "-1 >> 1 = -1 (floor)");
    VT_CHECK(veil_ref_fixed_mul(enc(-3), 1, 1) == enc(-2), "-3 >> 1 = -2 (floor)");
    VT_CHECK(veil_ref_fixed_mul(3, 1, 1) == 1, "3 >> 1 = 1");
    VT_CHECK(veil_ref_fixed_mul(UINT64_C(1) << 62, 2, 63) == UINT64_MAX, "2^63 >> 63 = -1");
}

int main(void)
{
    check_gemm_example();
    check_elementwise();
    check_im2col();
    check_fixed_mul();
    return veil_test_status();
}

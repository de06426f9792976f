/*
 * cuda/gemm.cu — the Z_2^64 GEMM on GPUs, two ways, both bit for bit equal to veil_gemm_u64:
 *  - limb split + cuBLAS: op(A) and op(B) are cut into four 16-bit limbs held in doubles, the 10
 *    limb-pair products with i + j <= 3 run as cuBLAS DGEMMs accumulated per shift level i + j
 *    (exact below 2^53 for inner chunks of at most VEIL_LIMB_GEMM_KMAX = 2^19; limb_common.h has
 *    the bound and the element math shared with the plain-C twin codelets/limb_gemm.c), and a
 *    kernel recombines the four levels with shifts mod 2^64 into C. Math mode is forced to
 *    CUBLAS_PEDANTIC_MATH for the calls so no reduced-precision or emulated path is taken.
 *  - a tiled integer kernel: 16 x 16 tiles of 64-bit words in shared memory, multiply-add in
 *    uint64_t.
 * Workspace comes from the stream-ordered allocator (cudaMallocAsync / cudaFreeAsync), so nothing
 * synchronises the device.
 */
#include "config.h"

#include "codelets/cuda/cuda_common.cuh"
#include "codelets/limb_common.h"

#include <cublas_v2.h>
#include <limits.h>

#ifdef VEIL_USE_CUDA
#include <starpu_cublas_v2.h>
#endif

#define GT 16 /* integer kernel tile */

/* op(X)(r, c) for row-major storage with row stride ld, transposed when trans. */
__device__ __forceinline__ uint64_t op_at(const uint64_t *x, size_t ld, int trans, size_t r,
                                          size_t c)
{
    return trans ? x[c * ld + r] : x[r * ld + c];
}

__global__ void gemm_int_kernel(int ta, int tb, size_t m, size_t n, size_t k,
                                const uint64_t *__restrict__ a, size_t lda,
                                const uint64_t *__restrict__ b, size_t ldb, int acc,
                                uint64_t *__restrict__ c, size_t ldc)
{
    __shared__ uint64_t as[GT][GT], bs[GT][GT];
    size_t row = (size_t)blockIdx.y * GT + threadIdx.y, col = (size_t)blockIdx.x * GT + threadIdx.x;
    uint64_t sum = 0;
    for (size_t k0 = 0; k0 < k; k0 += GT) {
        size_t ka = k0 + threadIdx.x, kb = k0 + threadIdx.y;
        as[threadIdx.y][threadIdx.x] = (row < m && ka < k) ? op_at(a, lda, ta, row, ka) : 0;
        bs[threadIdx.y][threadIdx.x] = (kb < k && col < n) ? op_at(b, ldb, tb, kb, col) : 0;
        __syncthreads();
        for (unsigned p = 0; p < GT; p++)
            sum += as[threadIdx.y][p] * bs[p][threadIdx.x];
        __syncthreads();
    }
    if (row < m && col < n)
        c[row * ldc + col] = acc ? c[row * ldc + col] + sum : sum;
}

/* Limbs of the rows x cols window of op(X) at (r0, c0): out[l * plane + r * cols + c]. */
__global__ void split_kernel(const uint64_t *__restrict__ x, size_t ld, int trans, size_t r0,
                             size_t c0, size_t rows, size_t cols, double *__restrict__ out,
                             size_t plane)
{
    size_t stride = (size_t)gridDim.x * blockDim.x, total = rows * cols;
    for (size_t e = (size_t)blockIdx.x * blockDim.x + threadIdx.x; e < total; e += stride) {
        size_t r = e / cols, c = e % cols;
        uint64_t v = op_at(x, ld, trans, r0 + r, c0 + c);
        for (unsigned l = 0; l < 4; l++)
            out[l * plane + e] = veil_limb_of(v, l);
    }
}

/* C (=|+=) sum_s d_s 2^(16 s) mod 2^64, d_s row-major m x n at d + s * m * n. */
__global__ void combine_kernel(const double *__restrict__ d, size_t m, size_t n, int add,
                               uint64_t *__restrict__ c, size_t ldc)
{
    size_t stride = (size_t)gridDim.x * blockDim.x, mn = m * n;
    for (size_t e = (size_t)blockIdx.x * blockDim.x + threadIdx.x; e < mn; e += stride) {
        uint64_t v = veil_limb_combine(d[e], d[mn + e], d[2 * mn + e], d[3 * mn + e]);
        uint64_t *dst = c + (e / n) * ldc + e % n;
        *dst = add ? *dst + v : v;
    }
}

extern "C" cudaError_t veil_cuda_gemm_int(int trans_a, int trans_b, size_t m, size_t n, size_t k,
                                          const uint64_t *a, size_t lda, const uint64_t *b,
                                          size_t ldb, int accumulate, uint64_t *c, size_t ldc,
                                          cudaStream_t s)
{
    if (m == 0 || n == 0)
        return cudaSuccess;
    size_t gx = (n + GT - 1) / GT, gy = (m + GT - 1) / GT;
    if (gx > 0x7FFFFFFF || gy > 65535)
        return cudaErrorInvalidValue;
    gemm_int_kernel<<<dim3((unsigned)gx, (unsigned)gy), dim3(GT, GT), 0, s>>>(
        trans_a, trans_b, m, n, k, a, lda, b, ldb, accumulate, c, ldc);
    return cudaGetLastError();
}

/* The 10 DGEMMs of one inner chunk: d_{i+j} (+)= A_i B_j, cuBLAS column-major view of row-major
 * data (D^T = B_j^T A_i^T). The first pair of each level overwrites (beta 0). */
static cublasStatus_t limb_products(cublasHandle_t h, int m, int n, int kc, const double *al,
                                    size_t mk, const double *bl, size_t kn, double *d, size_t mn)
{
    const double one = 1.0, zero = 0.0;
    int started[4] = {0, 0, 0, 0};
    for (unsigned i = 0; i < 4; i++)
        for (unsigned j = 0; i + j < 4; j++) {
            unsigned lvl = i + j;
            cublasStatus_t st =
                cublasDgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, m, kc, &one, bl + j * kn, n,
                            al + i * mk, kc, started[lvl] ? &one : &zero, d + lvl * mn, n);
            if (st != CUBLAS_STATUS_SUCCESS)
                return st;
            started[lvl] = 1;
        }
    return CUBLAS_STATUS_SUCCESS;
}

extern "C" cudaError_t veil_cuda_gemm_limb(void *handle, int trans_a, int trans_b, size_t m,
                                           size_t n, size_t k, const uint64_t *a, size_t lda,
                                           const uint64_t *b, size_t ldb, int accumulate,
                                           uint64_t *c, size_t ldc, cudaStream_t s)
{
    cublasHandle_t h = (cublasHandle_t)handle;
    size_t kc_max = VEIL_LIMB_GEMM_KMAX;
    size_t kc_alloc = k < kc_max ? k : kc_max;
    cudaError_t err;
    cublasStatus_t st = CUBLAS_STATUS_SUCCESS;
    cublasMath_t old_mode;
    double *work = NULL;

    if (m == 0 || n == 0)
        return cudaSuccess;
    if (k == 0 || h == NULL)
        return veil_cuda_gemm_int(trans_a, trans_b, m, n, k, a, lda, b, ldb, accumulate, c, ldc, s);
    if (m > INT_MAX || n > INT_MAX || m > SIZE_MAX / 8 / n / 4 || m > SIZE_MAX / 8 / kc_alloc / 4 ||
        n > SIZE_MAX / 8 / kc_alloc / 4)
        return cudaErrorInvalidValue;
    size_t mk = m * kc_alloc, kn = kc_alloc * n, mn = m * n;
    if (cudaMallocAsync((void **)&work, 4 * (mk + kn + mn) * sizeof(double), s) != cudaSuccess) {
        /* No room for the limb workspace: the integer kernel needs none. */
        (void)cudaGetLastError();
        return veil_cuda_gemm_int(trans_a, trans_b, m, n, k, a, lda, b, ldb, accumulate, c, ldc, s);
    }
    double *al = work, *bl = al + 4 * mk, *d = bl + 4 * kn;

    if (cublasGetMathMode(h, &old_mode) != CUBLAS_STATUS_SUCCESS ||
        cublasSetMathMode(h, CUBLAS_PEDANTIC_MATH) != CUBLAS_STATUS_SUCCESS ||
        cublasSetStream(h, s) != CUBLAS_STATUS_SUCCESS) {
        cudaFreeAsync(work, s);
        return cudaErrorUnknown;
    }
    for (size_t k0 = 0; k0 < k && st == CUBLAS_STATUS_SUCCESS; k0 += kc_max) {
        size_t kc = k - k0 < kc_max ? k - k0 : kc_max;
        split_kernel<<<veil_cuda_blocks(m * kc), VEIL_CUDA_THREADS, 0, s>>>(a, lda, trans_a, 0, k0,
                                                                            m, kc, al, mk);
        split_kernel<<<veil_cuda_blocks(kc * n), VEIL_CUDA_THREADS, 0, s>>>(b, ldb, trans_b, k0, 0,
                                                                            kc, n, bl, kn);
        /* Every chunk uses planes of the first chunk's size (mk, kn) with row length kc. */
        st = limb_products(h, (int)m, (int)n, (int)kc, al, mk, bl, kn, d, mn);
        if (st == CUBLAS_STATUS_SUCCESS)
            combine_kernel<<<veil_cuda_blocks(mn), VEIL_CUDA_THREADS, 0, s>>>(
                d, m, n, accumulate || k0 > 0, c, ldc);
    }
    cublasSetMathMode(h, old_mode);
    err = cudaGetLastError();
    cudaFreeAsync(work, s);
    if (st != CUBLAS_STATUS_SUCCESS)
        return cudaErrorUnknown;
    return err;
}

#ifdef VEIL_USE_CUDA
struct gemm_args {
    int trans_a, trans_b, accumulate;
    size_t m, n, k;
};

static struct gemm_args unpack(void *buffers[], void *cl_arg)
{
    struct gemm_args g;
    starpu_codelet_unpack_args(cl_arg, &g.trans_a, &g.trans_b, &g.accumulate);
    g.m = STARPU_MATRIX_GET_NY(buffers[2]);
    g.n = STARPU_MATRIX_GET_NX(buffers[2]);
    g.k = g.trans_a ? STARPU_MATRIX_GET_NY(buffers[0]) : STARPU_MATRIX_GET_NX(buffers[0]);
    return g;
}

/* The calling worker's cuBLAS handle is NULL until the application calls starpu_cublas_init():
 * veil_cuda_gemm_limb then runs the integer kernel, as it does when its workspace cannot be had. */
extern "C" cudaError_t veil_cuda_gemm_worker(int trans_a, int trans_b, size_t m, size_t n, size_t k,
                                             const uint64_t *a, size_t lda, const uint64_t *b,
                                             size_t ldb, int accumulate, uint64_t *c, size_t ldc,
                                             cudaStream_t s)
{
    return veil_cuda_gemm_limb((void *)starpu_cublas_get_local_handle(), trans_a, trans_b, m, n, k,
                               a, lda, b, ldb, accumulate, c, ldc, s);
}

extern "C" void veil_gemm_cuda(void *buffers[], void *cl_arg)
{
    struct gemm_args g = unpack(buffers, cl_arg);
    VEIL_CUDA_BODY_CHECK(veil_cuda_gemm_worker(
        g.trans_a, g.trans_b, g.m, g.n, g.k, (const uint64_t *)STARPU_MATRIX_GET_PTR(buffers[0]),
        STARPU_MATRIX_GET_LD(buffers[0]), (const uint64_t *)STARPU_MATRIX_GET_PTR(buffers[1]),
        STARPU_MATRIX_GET_LD(buffers[1]), g.accumulate,
        (uint64_t *)STARPU_MATRIX_GET_PTR(buffers[2]), STARPU_MATRIX_GET_LD(buffers[2]),
        starpu_cuda_get_local_stream()));
}

extern "C" void veil_gemm_int_cuda(void *buffers[], void *cl_arg)
{
    struct gemm_args g = unpack(buffers, cl_arg);
    VEIL_CUDA_BODY_CHECK(veil_cuda_gemm_int(
        g.trans_a, g.trans_b, g.m, g.n, g.k, (const uint64_t *)STARPU_MATRIX_GET_PTR(buffers[0]),
        STARPU_MATRIX_GET_LD(buffers[0]), (const uint64_t *)STARPU_MATRIX_GET_PTR(buffers[1]),
        STARPU_MATRIX_GET_LD(buffers[1]), g.accumulate,
        (uint64_t *)STARPU_MATRIX_GET_PTR(buffers[2]), STARPU_MATRIX_GET_LD(buffers[2]),
        starpu_cuda_get_local_stream()));
}
#endif /* VEIL_USE_CUDA */

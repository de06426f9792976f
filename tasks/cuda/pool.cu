/*
 * cuda/pool.cu — CUDA kernels and StarPU CUDA bodies of pool.c's local codelets: the tournament's
 * pair differences, product operands, winners and one-hot updates (one thread per output word,
 * its row and column split from the flat index), the window gather / sum / expand (one thread per
 * output word or window), the pairwise maximum's row-wise picks (one thread per output word) and
 * the backward scatter-add written as a gather (one thread per pixel
 * summing the taps that land on it: no atomics, no zeroing pass), and the tile concatenation
 * (device-to-device copies on the worker's stream). The element math is pool_common.h's, the
 * same the CPU bodies run.
 */
#include "config.h"

#include "codelets/cuda/cuda_common.cuh"
#include "tasks/compare_common.h"
#include "tasks/cuda/pool_cuda_internal.h"

/* The first index of this thread and the grid stride of the 64-bit grid-stride loops. */
static __device__ __forceinline__ size_t first(void)
{
    return (size_t)blockIdx.x * blockDim.x + threadIdx.x;
}

static __device__ __forceinline__ size_t stride(void)
{
    return (size_t)gridDim.x * blockDim.x;
}

/* ---- tournament ------------------------------------------------------------------------- */

static __global__ void diff_kernel(struct veil_pool_tour_arg a, const uint64_t *__restrict__ v,
                                   uint64_t *__restrict__ d, size_t n)
{
    const size_t p = a.kl / 2;
    for (size_t i = first(); i < n; i += stride())
        d[i] = veil_pool_diff_at(&a, v, i / p, i % p);
}

static __global__ void prep_kernel(struct veil_pool_tour_arg a, const uint64_t *__restrict__ beta,
                                   const uint64_t *__restrict__ d, const uint64_t *__restrict__ oh,
                                   uint64_t *__restrict__ x, uint64_t *__restrict__ y, size_t n)
{
    const size_t p = a.kl / 2;
    for (size_t i = first(); i < n; i += stride()) {
        const size_t r = i / a.m, c = i % a.m;
        if (c < p)
            veil_pool_prep_pair(&a, beta, d, r, c, &x[i], &y[i]);
        else
            veil_pool_prep_cov(&a, beta, oh, r, c - p, &x[i], &y[i]);
    }
}

static __global__ void combv_kernel(struct veil_pool_tour_arg a, const uint64_t *__restrict__ v,
                                    const uint64_t *__restrict__ w, const uint64_t *__restrict__ d,
                                    const uint64_t *__restrict__ f, uint64_t *__restrict__ o,
                                    size_t n)
{
    const size_t p = a.kl / 2, kn = (a.kl + 1) / 2;
    for (size_t i = first(); i < n; i += stride()) {
        const size_t r = i / kn, j = i % kn;
        o[i] = j < p ? veil_pool_combv_pair(&a, v, w, d, f, r, j) : veil_pool_combv_last(&a, v, r);
    }
}

static __global__ void oh0_kernel(struct veil_pool_tour_arg a, const uint64_t *__restrict__ f,
                                  const uint64_t *__restrict__ beta, uint64_t *__restrict__ o,
                                  size_t n)
{
    for (size_t i = first(); i < n; i += stride())
        o[i] = veil_pool_oh0_at(&a, f, beta, i / a.k, i % a.k);
}

static __global__ void oh_kernel(struct veil_pool_tour_arg a, const uint64_t *__restrict__ oh,
                                 const uint64_t *__restrict__ w, const uint64_t *__restrict__ f,
                                 uint64_t *__restrict__ o, size_t n)
{
    for (size_t i = first(); i < n; i += stride())
        o[i] = veil_pool_oh_at(&a, oh, w, f, i / a.k, i % a.k);
}

extern "C" cudaError_t veil_cuda_pool_diff(const struct veil_pool_tour_arg *a, const uint64_t *v,
                                           uint64_t *d, cudaStream_t s)
{
    const size_t n = a->rows * (a->kl / 2);
    if (n == 0)
        return cudaSuccess;
    diff_kernel<<<veil_cuda_blocks(n), VEIL_CUDA_THREADS, 0, s>>>(*a, v, d, n);
    return cudaGetLastError();
}

extern "C" cudaError_t veil_cuda_pool_prep(const struct veil_pool_tour_arg *a, const uint64_t *beta,
                                           const uint64_t *d, const uint64_t *oh, uint64_t *x,
                                           uint64_t *y, cudaStream_t s)
{
    const size_t n = a->rows * a->m;
    if (n == 0)
        return cudaSuccess;
    prep_kernel<<<veil_cuda_blocks(n), VEIL_CUDA_THREADS, 0, s>>>(*a, beta, d, oh, x, y, n);
    return cudaGetLastError();
}

extern "C" cudaError_t veil_cuda_pool_combv(const struct veil_pool_tour_arg *a, const uint64_t *v,
                                            const uint64_t *w, const uint64_t *d, const uint64_t *f,
                                            uint64_t *o, cudaStream_t s)
{
    const size_t n = a->rows * ((a->kl + 1) / 2);
    if (n == 0)
        return cudaSuccess;
    combv_kernel<<<veil_cuda_blocks(n), VEIL_CUDA_THREADS, 0, s>>>(*a, v, w, d, f, o, n);
    return cudaGetLastError();
}

extern "C" cudaError_t veil_cuda_pool_oh0(const struct veil_pool_tour_arg *a, const uint64_t *f,
                                          const uint64_t *beta, uint64_t *o, cudaStream_t s)
{
    const size_t n = a->rows * a->k;
    if (n == 0)
        return cudaSuccess;
    oh0_kernel<<<veil_cuda_blocks(n), VEIL_CUDA_THREADS, 0, s>>>(*a, f, beta, o, n);
    return cudaGetLastError();
}

extern "C" cudaError_t veil_cuda_pool_oh(const struct veil_pool_tour_arg *a, const uint64_t *oh,
                                         const uint64_t *w, const uint64_t *f, uint64_t *o,
                                         cudaStream_t s)
{
    const size_t n = a->rows * a->k;
    if (n == 0)
        return cudaSuccess;
    oh_kernel<<<veil_cuda_blocks(n), VEIL_CUDA_THREADS, 0, s>>>(*a, oh, w, f, o, n);
    return cudaGetLastError();
}

/* ---- windows ---------------------------------------------------------------------------- */

/* GATHER: entry e = (window r, tap t) of X. */
static __global__ void win_gather_kernel(struct veil_pool_win_arg a,
                                         const uint64_t *__restrict__ in,
                                         uint64_t *__restrict__ out, size_t n)
{
    const size_t kk = a.k * a.k;
    for (size_t e = first(); e < n; e += stride()) {
        const size_t t = e % kk;
        out[e] = in[veil_pool_win_pixel(&a, veil_pool_win_base_of(&a, e / kk), t / a.k, t % a.k)];
    }
}

/* SUM: window r. */
static __global__ void win_sum_kernel(struct veil_pool_win_arg a, const uint64_t *__restrict__ in,
                                      uint64_t *__restrict__ out, size_t n)
{
    for (size_t r = first(); r < n; r += stride())
        out[r] = veil_pool_win_sum(&a, in, veil_pool_win_base_of(&a, r));
}

/* EXPAND: entry e of E repeats dy of its window. */
static __global__ void win_expand_kernel(struct veil_pool_win_arg a,
                                         const uint64_t *__restrict__ in,
                                         uint64_t *__restrict__ out, size_t n)
{
    const size_t kk = a.k * a.k;
    for (size_t e = first(); e < n; e += stride())
        out[e] = in[e / kk];
}

/* SCATTER: pixel e of dx; words past the image (none when dx is the image) get 0 as on the CPU. */
static __global__ void win_scatter_kernel(struct veil_pool_win_arg a,
                                          const uint64_t *__restrict__ in,
                                          uint64_t *__restrict__ out, size_t n, size_t image)
{
    for (size_t e = first(); e < n; e += stride())
        out[e] = e < image ? veil_pool_win_gather_back(&a, in, e) : 0;
}

extern "C" cudaError_t veil_cuda_pool_win(const struct veil_pool_win_arg *a, const uint64_t *in,
                                          uint64_t *out, size_t out_len, cudaStream_t s)
{
    const size_t rows = a->batch * a->c * a->oh * a->ow, kk = a->k * a->k;
    const size_t image = a->batch * a->c * a->h * a->w;
    size_t n;
    switch (a->mode) {
    case VEIL_POOL_WIN_GATHER:
    case VEIL_POOL_WIN_EXPAND:
        n = rows * kk;
        break;
    case VEIL_POOL_WIN_SUM:
        n = rows;
        break;
    default:
        n = out_len;
        break;
    }
    if (n == 0)
        return cudaSuccess;
    const unsigned blocks = veil_cuda_blocks(n);
    switch (a->mode) {
    case VEIL_POOL_WIN_GATHER:
        win_gather_kernel<<<blocks, VEIL_CUDA_THREADS, 0, s>>>(*a, in, out, n);
        break;
    case VEIL_POOL_WIN_SUM:
        win_sum_kernel<<<blocks, VEIL_CUDA_THREADS, 0, s>>>(*a, in, out, n);
        break;
    case VEIL_POOL_WIN_EXPAND:
        win_expand_kernel<<<blocks, VEIL_CUDA_THREADS, 0, s>>>(*a, in, out, n);
        break;
    default:
        win_scatter_kernel<<<blocks, VEIL_CUDA_THREADS, 0, s>>>(*a, in, out, n, image);
        break;
    }
    return cudaGetLastError();
}

/* ---- pairwise picks ---------------------------------------------------------------------- */

struct pick_src {
    const uint64_t *p[VEIL_POOL_PICK_SRC];
};

static __global__ void pick_kernel(struct veil_pool_pick_arg a, struct pick_src src,
                                   uint64_t *__restrict__ out, size_t n)
{
    for (size_t i = first(); i < n; i += stride())
        out[i] = veil_pool_pick_at(&a, src.p, i / a.out_row, i % a.out_row);
}

extern "C" cudaError_t veil_cuda_pool_pick(const struct veil_pool_pick_arg *a,
                                           const uint64_t *const *src, uint64_t *out,
                                           cudaStream_t s)
{
    const size_t n = a->rows * a->out_row;
    if (n == 0)
        return cudaSuccess;
    struct pick_src ps = {{NULL}};
    for (int i = 0; i < a->nsrc && i < VEIL_POOL_PICK_SRC; i++)
        ps.p[i] = src[i];
    pick_kernel<<<veil_cuda_blocks(n), VEIL_CUDA_THREADS, 0, s>>>(*a, ps, out, n);
    return cudaGetLastError();
}

/* ---- StarPU bodies ---------------------------------------------------------------------- */

#ifdef VEIL_USE_CUDA
#define PTR(i) ((uint64_t *)STARPU_VECTOR_GET_PTR(buffers[i]))
#define NX(i) STARPU_VECTOR_GET_NX(buffers[i])
#define TOUR(cl_arg) ((const struct veil_pool_tour_arg *)veil_cmp_arg(cl_arg))

/* One device-to-device copy per input tile, in order, on the worker's stream (asynchronous: the
 * copy engine or a driver kernel does it; the host does not wait). */
extern "C" void veil_pool_concat_cuda(void *buffers[], void *cl_arg)
{
    const int nin = *(const int *)veil_cmp_arg(cl_arg);
    const cudaStream_t s = starpu_cuda_get_local_stream();
    uint64_t *out = PTR(0);
    size_t at = 0;
    for (int i = 0; i < nin; i++) {
        const size_t n = NX(1 + i);
        if (n)
            VEIL_CUDA_BODY_CHECK(
                cudaMemcpyAsync(out + at, PTR(1 + i), n * 8, cudaMemcpyDeviceToDevice, s));
        at += n;
    }
}

extern "C" void veil_pool_diff_cuda(void *buffers[], void *cl_arg)
{
    VEIL_CUDA_BODY_CHECK(
        veil_cuda_pool_diff(TOUR(cl_arg), PTR(0), PTR(1), starpu_cuda_get_local_stream()));
}

extern "C" void veil_pool_prep_cuda(void *buffers[], void *cl_arg)
{
    VEIL_CUDA_BODY_CHECK(veil_cuda_pool_prep(TOUR(cl_arg), PTR(0), PTR(1), PTR(2), PTR(3), PTR(4),
                                             starpu_cuda_get_local_stream()));
}

extern "C" void veil_pool_combv_cuda(void *buffers[], void *cl_arg)
{
    VEIL_CUDA_BODY_CHECK(veil_cuda_pool_combv(TOUR(cl_arg), PTR(0), PTR(1), PTR(2), PTR(3), PTR(4),
                                              starpu_cuda_get_local_stream()));
}

extern "C" void veil_pool_oh0_cuda(void *buffers[], void *cl_arg)
{
    VEIL_CUDA_BODY_CHECK(
        veil_cuda_pool_oh0(TOUR(cl_arg), PTR(0), PTR(1), PTR(2), starpu_cuda_get_local_stream()));
}

extern "C" void veil_pool_oh_cuda(void *buffers[], void *cl_arg)
{
    VEIL_CUDA_BODY_CHECK(veil_cuda_pool_oh(TOUR(cl_arg), PTR(0), PTR(1), PTR(2), PTR(3),
                                           starpu_cuda_get_local_stream()));
}

extern "C" void veil_pool_win_cuda(void *buffers[], void *cl_arg)
{
    const struct veil_pool_win_arg *a = (const struct veil_pool_win_arg *)veil_cmp_arg(cl_arg);
    VEIL_CUDA_BODY_CHECK(
        veil_cuda_pool_win(a, PTR(0), PTR(1), NX(1), starpu_cuda_get_local_stream()));
}

extern "C" void veil_pool_pick_cuda(void *buffers[], void *cl_arg)
{
    const struct veil_pool_pick_arg *a = (const struct veil_pool_pick_arg *)veil_cmp_arg(cl_arg);
    const uint64_t *src[VEIL_POOL_PICK_SRC] = {NULL};
    for (int i = 0; i < a->nsrc && i < VEIL_POOL_PICK_SRC; i++)
        src[i] = PTR(i);
    VEIL_CUDA_BODY_CHECK(
        veil_cuda_pool_pick(a, src, PTR(a->nsrc), starpu_cuda_get_local_stream()));
}
#endif /* VEIL_USE_CUDA */

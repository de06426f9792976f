/*
 * cuda/flatop.cu — CUDA kernels and StarPU CUDA body of the flat relayout codelet
 * (flatop_internal.h has the contract, cpu/flatop.c the CPU twin). The body gathers the input
 * tiles into one contiguous device scratch buffer (device-to-device copies on the worker's stream,
 * stream-ordered allocation), runs one kernel for the operation on flat input -> flat output, and
 * scatters the flat output into the output tiles; a list of exactly one tile is used in place. A
 * copy moves spans straight from tile to tile. Each output word is owned by one thread, so the
 * sums (ROWSUM, WSUM, FOLD) loop over their terms without atomics; ring addition is exact and
 * commutative, so the order of the terms does not change a bit.
 */
#include "config.h"

#include "codelets/cuda/cuda_common.cuh"

#include <starpu.h>

extern "C" {
#include "codelets/flatop_internal.h"
}

/* out[i] = in[i / k] */
__global__ void bcast_kernel(const uint64_t *__restrict__ in, uint64_t *__restrict__ out,
                             size_t lout, uint64_t k)
{
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < lout; i += stride)
        out[i] = in[i / k];
}

/* out[i n + e] = in[e] + c[i] (c only with add_const), n = lin */
__global__ void replicate_kernel(struct veil_flatop_args a, const uint64_t *__restrict__ in,
                                 size_t lin, uint64_t *__restrict__ out, size_t lout)
{
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t o = (size_t)blockIdx.x * blockDim.x + threadIdx.x; o < lout; o += stride)
        out[o] = in[o % lin] + (a.add_const ? a.c[o / lin] : 0);
}

/* out[e] = c0 (with add_const) + sum_{i < k} c[i] in[i lout + e] */
__global__ void wsum_kernel(struct veil_flatop_args a, const uint64_t *__restrict__ in,
                            uint64_t *__restrict__ out, size_t lout)
{
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t e = (size_t)blockIdx.x * blockDim.x + threadIdx.x; e < lout; e += stride) {
        uint64_t s = a.add_const ? a.c0 : 0;
        for (uint64_t i = 0; i < a.k; i++)
            s += a.c[i] * in[i * lout + e];
        out[e] = s;
    }
}

/* out[i] = in[(i / k) % lin] */
__global__ void tile_kernel(const uint64_t *__restrict__ in, size_t lin, uint64_t *__restrict__ out,
                            size_t lout, uint64_t k)
{
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < lout; i += stride)
        out[i] = in[(i / k) % lin];
}

/* out[j] = sum over q < periods, r < k of in[(q lout + j) k + r]: FOLD, and ROWSUM with one
 * period. One thread per output word, for outputs with few terms each. */
__global__ void fold_kernel(const uint64_t *__restrict__ in, uint64_t *__restrict__ out,
                            size_t lout, uint64_t k, size_t periods)
{
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t j = (size_t)blockIdx.x * blockDim.x + threadIdx.x; j < lout; j += stride) {
        uint64_t s = 0;
        for (size_t q = 0; q < periods; q++) {
            const uint64_t *run = in + (q * lout + j) * k;
            for (uint64_t r = 0; r < k; r++)
                s += run[r];
        }
        out[j] = s;
    }
}

/* The same sum with one block per output word, for few outputs of many terms each (a column sum
 * over a batch, long rows), where one thread per output would leave most of the GPU idle: the
 * block's threads add strided terms, then halve in shared memory. Still one owner per output
 * word (no atomics); the order of ring additions does not change the result. */
__global__ void fold_block_kernel(const uint64_t *__restrict__ in, uint64_t *__restrict__ out,
                                  size_t lout, uint64_t k, size_t periods)
{
    __shared__ uint64_t part[VEIL_CUDA_THREADS];
    const size_t terms = periods * k;
    for (size_t j = blockIdx.x; j < lout; j += gridDim.x) {
        uint64_t s = 0;
        for (size_t t = threadIdx.x; t < terms; t += blockDim.x)
            s += in[((t / k) * lout + j) * k + t % k];
        part[threadIdx.x] = s;
        __syncthreads();
        for (unsigned h = VEIL_CUDA_THREADS / 2; h > 0; h /= 2) {
            if (threadIdx.x < h)
                part[threadIdx.x] += part[threadIdx.x + h];
            __syncthreads();
        }
        if (threadIdx.x == 0)
            out[j] = part[0];
        __syncthreads(); /* part is reused by the next output */
    }
}

static void launch_fold(const uint64_t *in, uint64_t *out, size_t lout, uint64_t k, size_t periods,
                        cudaStream_t s)
{
    const unsigned blocks = lout < 65535 ? (unsigned)lout : 65535u; /* one per output word */
    if (periods * k >= VEIL_CUDA_THREADS)
        fold_block_kernel<<<blocks, VEIL_CUDA_THREADS, 0, s>>>(in, out, lout, k, periods);
    else
        fold_kernel<<<veil_cuda_blocks(lout), VEIL_CUDA_THREADS, 0, s>>>(in, out, lout, k, periods);
}

/* Word offsets within an interleaved row: part p covers [pre[p], pre[p + 1]) of each row of
 * pre[k] words; its rows start at rows pre[p] in the stacked input. */
struct interleave_table {
    uint64_t pre[VEIL_FLATOP_MAX_COPIES + 1];
    unsigned k;
};

__global__ void interleave_kernel(struct interleave_table t, const uint64_t *__restrict__ in,
                                  uint64_t *__restrict__ out, size_t n)
{
    const uint64_t row = t.pre[t.k];
    const size_t rows = n / row;
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t o = (size_t)blockIdx.x * blockDim.x + threadIdx.x; o < n; o += stride) {
        size_t r = o / row, w = o % row;
        /* the last part whose range starts at or before w: empty parts before it share its
         * start, a trailing empty part starts at row > w */
        unsigned lo = 0, hi = t.k - 1;
        while (lo < hi) {
            unsigned mid = (lo + hi + 1) / 2;
            if (t.pre[mid] <= w)
                lo = mid;
            else
                hi = mid - 1;
        }
        const uint64_t width = t.pre[lo + 1] - t.pre[lo];
        out[o] = in[rows * t.pre[lo] + r * width + (w - t.pre[lo])];
    }
}

/* out[r k + j] = in[r width + first + j] */
__global__ void slice_kernel(const uint64_t *__restrict__ in, uint64_t width, uint64_t first,
                             uint64_t *__restrict__ out, size_t lout, uint64_t k)
{
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t o = (size_t)blockIdx.x * blockDim.x + threadIdx.x; o < lout; o += stride)
        out[o] = in[(o / k) * width + first + o % k];
}

extern "C" cudaError_t veil_cuda_flatop(const struct veil_flatop_args *a, const uint64_t *in,
                                        size_t lin, uint64_t *out, size_t lout, cudaStream_t s)
{
    const unsigned nb = veil_cuda_blocks(lout), nt = VEIL_CUDA_THREADS;
    if (lout == 0)
        return cudaSuccess;
    switch (a->kind) {
    case VEIL_FLATOP_COPY:
        return cudaMemcpyAsync(out, in, lout * sizeof *out, cudaMemcpyDeviceToDevice, s);
    case VEIL_FLATOP_ROWSUM: /* a fold of one period */
        launch_fold(in, out, lout, a->k, 1, s);
        break;
    case VEIL_FLATOP_BCAST:
        bcast_kernel<<<nb, nt, 0, s>>>(in, out, lout, a->k);
        break;
    case VEIL_FLATOP_REPLICATE:
        replicate_kernel<<<nb, nt, 0, s>>>(*a, in, lin, out, lout);
        break;
    case VEIL_FLATOP_WSUM:
        wsum_kernel<<<nb, nt, 0, s>>>(*a, in, out, lout);
        break;
    case VEIL_FLATOP_TILE:
        tile_kernel<<<nb, nt, 0, s>>>(in, lin, out, lout, a->k);
        break;
    case VEIL_FLATOP_FOLD:
        launch_fold(in, out, lout, a->k, lin / (a->k * lout), s);
        break;
    case VEIL_FLATOP_INTERLEAVE: {
        struct interleave_table t;
        if (a->k < 1 || a->k > VEIL_FLATOP_MAX_COPIES)
            return cudaErrorInvalidValue;
        t.k = (unsigned)a->k;
        t.pre[0] = 0;
        for (unsigned p = 0; p < t.k; p++)
            t.pre[p + 1] = t.pre[p] + a->c[p];
        interleave_kernel<<<nb, nt, 0, s>>>(t, in, out, lout);
        break;
    }
    case VEIL_FLATOP_SLICE:
        slice_kernel<<<nb, nt, 0, s>>>(in, a->c[0], a->c[1], out, lout, a->k);
        break;
    default:
        return cudaErrorInvalidValue;
    }
    return cudaGetLastError();
}

#ifdef VEIL_USE_CUDA
static uint64_t *tile_ptr(void *buf)
{
    return (uint64_t *)STARPU_VECTOR_GET_PTR(buf);
}

static size_t tile_len(void *buf)
{
    return STARPU_VECTOR_GET_NX(buf);
}

/* Copies the concatenation of tiles src[0..ns) into tiles dst[0..nd) span by span (COPY: the
 * lengths total the same). */
static cudaError_t copy_tiles(void *const *dst, int nd, void *const *src, int ns, cudaStream_t s)
{
    size_t od = 0, os = 0;
    for (int i = 0, j = 0; i < nd && j < ns;) {
        size_t ld = tile_len(dst[i]), ls = tile_len(src[j]);
        if (od == ld) {
            i++, od = 0;
            continue;
        }
        if (os == ls) {
            j++, os = 0;
            continue;
        }
        size_t len = ld - od < ls - os ? ld - od : ls - os;
        cudaError_t err = cudaMemcpyAsync(tile_ptr(dst[i]) + od, tile_ptr(src[j]) + os, len * 8,
                                          cudaMemcpyDeviceToDevice, s);
        if (err != cudaSuccess)
            return err;
        od += len, os += len;
    }
    return cudaSuccess;
}

/* Flat words of tiles t[0..n) <-> one contiguous buffer, in tile order. */
static cudaError_t gather(void *const *t, int n, uint64_t *flat, cudaStream_t s)
{
    for (int i = 0; i < n; i++) {
        size_t len = tile_len(t[i]);
        cudaError_t err = cudaSuccess;
        if (len > 0)
            err = cudaMemcpyAsync(flat, tile_ptr(t[i]), len * 8, cudaMemcpyDeviceToDevice, s);
        if (err != cudaSuccess)
            return err;
        flat += len;
    }
    return cudaSuccess;
}

static cudaError_t scatter(const uint64_t *flat, void *const *t, int n, cudaStream_t s)
{
    for (int i = 0; i < n; i++) {
        size_t len = tile_len(t[i]);
        cudaError_t err = cudaSuccess;
        if (len > 0)
            err = cudaMemcpyAsync(tile_ptr(t[i]), flat, len * 8, cudaMemcpyDeviceToDevice, s);
        if (err != cudaSuccess)
            return err;
        flat += len;
    }
    return cudaSuccess;
}

static size_t total(void *const *t, int n)
{
    size_t len = 0;
    for (int i = 0; i < n; i++)
        len += tile_len(t[i]);
    return len;
}

/* Scratch allocation failing (device memory exhausted) is reported like a failed launch: the
 * operation has no path without the flat copies. */
extern "C" void veil_flatop_cuda(void *buffers[], void *cl_arg)
{
    struct veil_flatop_args a;
    starpu_codelet_unpack_args(cl_arg, &a);
    void *const *outs = buffers, *const *ins = buffers + a.nout;
    const cudaStream_t s = starpu_cuda_get_local_stream();
    if (a.kind == VEIL_FLATOP_COPY) {
        VEIL_CUDA_BODY_CHECK(copy_tiles(outs, a.nout, ins, a.nin, s));
        return;
    }
    const size_t lout = total(outs, a.nout), lin = total(ins, a.nin);
    const size_t words_in = a.nin > 1 ? lin : 0, words_out = a.nout > 1 ? lout : 0;
    uint64_t *scratch = NULL;
    if (words_in + words_out > 0)
        VEIL_CUDA_BODY_CHECK(cudaMallocAsync((void **)&scratch, (words_in + words_out) * 8, s));
    const uint64_t *in = a.nin > 1 ? scratch : tile_ptr(ins[0]);
    uint64_t *out = a.nout > 1 ? scratch + words_in : tile_ptr(outs[0]);
    if (a.nin > 1)
        VEIL_CUDA_BODY_CHECK(gather(ins, a.nin, scratch, s));
    VEIL_CUDA_BODY_CHECK(veil_cuda_flatop(&a, in, lin, out, lout, s));
    if (a.nout > 1)
        VEIL_CUDA_BODY_CHECK(scatter(out, outs, a.nout, s));
    if (scratch != NULL)
        VEIL_CUDA_BODY_CHECK(cudaFreeAsync(scratch, s));
}
#endif /* VEIL_USE_CUDA */

/*
 * cuda/im2col.cu — CUDA kernels and StarPU CUDA bodies of im2col and col2im (NCHW, dilation 1,
 * zero padding; geometry in im2col_common.h, layouts as veil_task_im2col documents). im2col has
 * one thread per column entry; col2im has one thread per image element that gathers the entries
 * copied from it, so no atomics are needed and the result does not depend on thread order (it
 * would not anyway: ring addition is exact).
 */
#include "config.h"

#include "codelets/cuda/cuda_common.cuh"
#include "codelets/im2col_common.h"

struct dims {
    size_t oh, ow, rows, plane, image_len, cols_len;
};

static struct dims dims_of(const struct veil_im2col_geom &g)
{
    struct dims d;
    d.oh = ((size_t)g.h + 2 * (size_t)g.ph - g.kh) / g.sh + 1;
    d.ow = ((size_t)g.w + 2 * (size_t)g.pw - g.kw) / g.sw + 1;
    d.rows = (size_t)g.c * g.kh * g.kw;
    d.plane = d.oh * d.ow;
    d.image_len = (size_t)g.n * g.c * g.h * g.w;
    d.cols_len = (size_t)g.n * d.rows * d.plane;
    return d;
}

__global__ void im2col_kernel(struct veil_im2col_geom g, struct dims d,
                              const uint64_t *__restrict__ image, uint64_t *__restrict__ cols)
{
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t e = (size_t)blockIdx.x * blockDim.x + threadIdx.x; e < d.cols_len; e += stride) {
        size_t b = e / (d.rows * d.plane), rem = e % (d.rows * d.plane);
        size_t row = rem / d.plane, q = rem % d.plane;
        size_t y = q / d.ow, x = q % d.ow;
        size_t ci = row / ((size_t)g.kh * g.kw), i = (row / g.kw) % g.kh, j = row % g.kw;
        size_t iyp = y * g.sh + i, ixp = x * g.sw + j; /* padded coordinates */
        uint64_t v = 0;
        if (iyp >= g.ph && iyp - g.ph < g.h && ixp >= g.pw && ixp - g.pw < g.w)
            v = image[((b * g.c + ci) * g.h + (iyp - g.ph)) * g.w + (ixp - g.pw)];
        cols[e] = v;
    }
}

__global__ void col2im_kernel(struct veil_im2col_geom g, struct dims d,
                              const uint64_t *__restrict__ cols, uint64_t *__restrict__ image)
{
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t e = (size_t)blockIdx.x * blockDim.x + threadIdx.x; e < d.image_len; e += stride) {
        size_t ix = e % g.w, iy = (e / g.w) % g.h, ci = (e / ((size_t)g.w * g.h)) % g.c;
        size_t b = e / ((size_t)g.w * g.h * g.c);
        const uint64_t *col = cols + b * d.rows * d.plane;
        uint64_t acc = 0;
        for (size_t i = 0; i < g.kh; i++) {
            size_t yy = iy + g.ph; /* = y * sh + i */
            if (yy < i || (yy - i) % g.sh != 0 || (yy - i) / g.sh >= d.oh)
                continue;
            size_t y = (yy - i) / g.sh;
            for (size_t j = 0; j < g.kw; j++) {
                size_t xx = ix + g.pw;
                if (xx < j || (xx - j) % g.sw != 0 || (xx - j) / g.sw >= d.ow)
                    continue;
                size_t x = (xx - j) / g.sw;
                acc += col[((ci * g.kh + i) * g.kw + j) * d.plane + y * d.ow + x];
            }
        }
        image[e] = acc;
    }
}

/* Launchers: g must satisfy veil_im2col_geom_check (the submit helpers ensured it). */
extern "C" cudaError_t veil_cuda_im2col(const struct veil_im2col_geom *g, const uint64_t *image,
                                        uint64_t *cols, cudaStream_t s)
{
    struct dims d = dims_of(*g);
    if (d.cols_len == 0)
        return cudaSuccess;
    im2col_kernel<<<veil_cuda_blocks(d.cols_len), VEIL_CUDA_THREADS, 0, s>>>(*g, d, image, cols);
    return cudaGetLastError();
}

extern "C" cudaError_t veil_cuda_col2im(const struct veil_im2col_geom *g, const uint64_t *cols,
                                        uint64_t *image, cudaStream_t s)
{
    struct dims d = dims_of(*g);
    if (d.image_len == 0)
        return cudaSuccess;
    col2im_kernel<<<veil_cuda_blocks(d.image_len), VEIL_CUDA_THREADS, 0, s>>>(*g, d, cols, image);
    return cudaGetLastError();
}

#ifdef VEIL_USE_CUDA
extern "C" void veil_im2col_cuda(void *buffers[], void *cl_arg)
{
    struct veil_im2col_geom g;
    starpu_codelet_unpack_args(cl_arg, &g);
    VEIL_CUDA_BODY_CHECK(veil_cuda_im2col(&g, (const uint64_t *)STARPU_VECTOR_GET_PTR(buffers[0]),
                                          (uint64_t *)STARPU_VECTOR_GET_PTR(buffers[1]),
                                          starpu_cuda_get_local_stream()));
}

extern "C" void veil_col2im_cuda(void *buffers[], void *cl_arg)
{
    struct veil_im2col_geom g;
    starpu_codelet_unpack_args(cl_arg, &g);
    VEIL_CUDA_BODY_CHECK(veil_cuda_col2im(&g, (const uint64_t *)STARPU_VECTOR_GET_PTR(buffers[0]),
                                          (uint64_t *)STARPU_VECTOR_GET_PTR(buffers[1]),
                                          starpu_cuda_get_local_stream()));
}
#endif /* VEIL_USE_CUDA */

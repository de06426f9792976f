/*
 * cuda/compare.cu — CUDA kernels and StarPU CUDA bodies of the comparison family's local
 * codelets: the LTZ leaves (bit-slicing of c and of the mask share, and the carry circuit's
 * level-0 groups on them), the gather and group steps of each carry-circuit level, the AND-triple finish, the
 * ReLU finish and the B2A mask and finish. The word math is compare_common.h's, the same inline
 * functions as the CPU bodies. The leaves transpose each 64-element block with warp ballots (a
 * warp per block, 32 bits per vote) and stage the transposed words of 32 blocks in shared memory
 * so that every state row is written coalesced; the other kernels are grid-stride loops, the
 * circuit steps with one thread per group record.
 */
#include "config.h"

#include "codelets/cuda/cuda_common.cuh"
#include "tasks/compare_common.h"
#include "tasks/prodk_common.h"
#include "tasks/trunc_common.h"
#include "tasks/cuda/compare_cuda_internal.h"

#define FULL_MASK 0xFFFFFFFFu
#define LEAF_BLOCKS 32                      /* 64-element blocks per thread block */
#define LEAF_WARPS (VEIL_CUDA_THREADS / 32) /* warps per thread block */

/* ---- leaves ----------------------------------------------------------------------------- */

/* Word i of the transposed block whose elements lane L holds as lo (element L) and hi (element
 * 32 + L): bit j = bit i of element j. Every lane of the warp must call it. */
__device__ __forceinline__ uint64_t vote(uint64_t lo, uint64_t hi, unsigned i)
{
    const uint64_t l = __ballot_sync(FULL_MASK, (int)((lo >> i) & 1));
    const uint64_t h = __ballot_sync(FULL_MASK, (int)((hi >> i) & 1));
    return l | h << 32;
}

/*
 * Thread block t handles blocks 32t .. 32t + 31: phase 1, one warp per block, transposes c and r
 * into shared memory (ct[i][bl] = word i of block bl, bit j = bit i of element 64 b + j, zero past
 * n: veil_transpose64's layout); phase 2 computes each level-0 group of the 32 blocks from the
 * staged words and the CMPPROD products, writing row j of the state for the 32 blocks as one
 * coalesced run. Rows are padded to 33 words against bank conflicts.
 */
__global__ void __launch_bounds__(VEIL_CUDA_THREADS)
    leaf_kernel(const uint64_t *__restrict__ c, const uint64_t *__restrict__ r, size_t n,
                const uint64_t *__restrict__ pr, uint64_t *__restrict__ st,
                uint64_t *__restrict__ top, size_t nb, uint64_t pub)
{
    __shared__ uint64_t ct[64][LEAF_BLOCKS + 1], rt[64][LEAF_BLOCKS + 1];
    const unsigned lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const size_t ntiles = (nb + LEAF_BLOCKS - 1) / LEAF_BLOCKS;
    for (size_t t = blockIdx.x; t < ntiles; t += gridDim.x) {
        const size_t b0 = t * LEAF_BLOCKS;
        /* b is the same for the whole warp, so every vote has all 32 lanes */
        for (unsigned bl = warp; bl < LEAF_BLOCKS && b0 + bl < nb; bl += LEAF_WARPS) {
            const size_t lo = 64 * (b0 + bl) + lane, hi = lo + 32;
            const uint64_t cl = lo < n ? c[lo] : 0, ch = hi < n ? c[hi] : 0;
            const uint64_t rl = lo < n ? r[lo] : 0, rh = hi < n ? r[hi] : 0;
            uint64_t c0 = 0, c1 = 0, r0 = 0, r1 = 0;
#pragma unroll
            for (unsigned i = 0; i < 32; i++) {
                const uint64_t cw = vote(cl, ch, i), rw = vote(rl, rh, i);
                if (lane == i) {
                    c0 = cw;
                    r0 = rw;
                }
            }
#pragma unroll
            for (unsigned i = 0; i < 32; i++) {
                const uint64_t cw = vote(cl, ch, 32 + i), rw = vote(rl, rh, 32 + i);
                if (lane == i) {
                    c1 = cw;
                    r1 = rw;
                }
            }
            ct[lane][bl] = c0;
            ct[lane + 32][bl] = c1;
            rt[lane][bl] = r0;
            rt[lane + 32][bl] = r1;
        }
        __syncthreads();
        /* one thread per (level-0 group, block): the group's G and P, local */
        for (unsigned e = threadIdx.x; e < VEIL_C4_LEAF_GROUPS * LEAF_BLOCKS; e += blockDim.x) {
            const unsigned j = e / LEAF_BLOCKS, bl = e % LEAF_BLOCKS;
            const size_t b = b0 + bl;
            if (b >= nb)
                continue;
            uint64_t cw[4], rw[4], G, P;
            for (unsigned q = 0; q < 4; q++) {
                cw[q] = ct[4 * j + q][bl];
                rw[q] = rt[4 * j + q][bl];
            }
            veil_c4_leaf_group(cw, rw, pr + b * VEIL_C4_LEAF_WORDS + j * VEIL_C4_LEAF_PRODS,
                               j == VEIL_C4_LEAF_GROUPS - 1 ? 3 : 4, pub, &G, &P);
            st[(size_t)j * nb + b] = G;
            st[((size_t)VEIL_C4_LEAF_GROUPS + j) * nb + b] = P;
            if (j == 0)
                top[b] = veil_cmp_leaf_p(ct[63][bl], rt[63][bl], pub);
        }
        __syncthreads(); /* the next tile reuses the staging arrays */
    }
}

extern "C" cudaError_t veil_cuda_cmp_leaf(const uint64_t *c, const uint64_t *r, size_t n,
                                          const uint64_t *pr, uint64_t *state, uint64_t *top,
                                          size_t nb, int party0, cudaStream_t s)
{
    if (nb == 0)
        return cudaSuccess;
    const size_t ntiles = (nb + LEAF_BLOCKS - 1) / LEAF_BLOCKS;
    const unsigned grid = ntiles > 65535 ? 65535u : (unsigned)ntiles;
    leaf_kernel<<<grid, VEIL_CUDA_THREADS, 0, s>>>(c, r, n, pr, state, top, nb,
                                                   party0 ? ~UINT64_C(0) : 0);
    return cudaGetLastError();
}

/* ---- circuit levels: one thread per record (group j, block b), w = j nb + b ---------------- */

__global__ void gather_kernel(struct veil_cmp_level v, const uint64_t *__restrict__ st,
                              uint64_t *__restrict__ rec, size_t nb, uint64_t pub)
{
    const size_t nrec = (size_t)v.knext * nb, stride = (size_t)gridDim.x * blockDim.x;
    for (size_t w = (size_t)blockIdx.x * blockDim.x + threadIdx.x; w < nrec; w += stride) {
        const int j = (int)(w / nb);
        const size_t b = w % nb;
#pragma unroll
        for (int i = 0; i < VEIL_C4_INPUTS; i++)
            rec[w * VEIL_C4_INPUTS + i] = veil_cmp_gather_word(&v, st, nb, j, i, b, pub);
    }
}

__global__ void group_kernel(struct veil_cmp_level v, const uint64_t *__restrict__ e,
                             const uint64_t *__restrict__ a, const uint64_t *__restrict__ pr,
                             const uint64_t *__restrict__ st, uint64_t *__restrict__ out, size_t nb,
                             uint64_t pub)
{
    const size_t nrec = (size_t)v.knext * nb, stride = (size_t)gridDim.x * blockDim.x;
    for (size_t w = (size_t)blockIdx.x * blockDim.x + threadIdx.x; w < nrec; w += stride) {
        veil_cmp_group_record(&v, e, a, pr, st, out, nb, (int)(w / nb), w % nb, pub);
    }
}

extern "C" cudaError_t veil_cuda_cmp_gather(int l, const uint64_t *state, uint64_t *rec, size_t nb,
                                            int party0, cudaStream_t s)
{
    const struct veil_cmp_level v = veil_cmp_level_of(l);
    if (nb == 0)
        return cudaSuccess;
    gather_kernel<<<veil_cuda_blocks((size_t)v.knext * nb), VEIL_CUDA_THREADS, 0, s>>>(
        v, state, rec, nb, party0 ? ~UINT64_C(0) : 0);
    return cudaGetLastError();
}

extern "C" cudaError_t veil_cuda_cmp_group(int l, const uint64_t *e, const uint64_t *a,
                                           const uint64_t *pr, const uint64_t *state,
                                           uint64_t *out, size_t nb, int party0, cudaStream_t s)
{
    const struct veil_cmp_level v = veil_cmp_level_of(l);
    if (nb == 0)
        return cudaSuccess;
    group_kernel<<<veil_cuda_blocks((size_t)v.knext * nb), VEIL_CUDA_THREADS, 0, s>>>(
        v, e, a, pr, state, out, nb, party0 ? ~UINT64_C(0) : 0);
    return cudaGetLastError();
}

/* ---- one-round product of k factors ------------------------------------------------------ */

__global__ void prodk_kernel(const uint64_t *__restrict__ e, const uint64_t *__restrict__ a,
                             const uint64_t *__restrict__ pr, uint64_t *__restrict__ z, size_t n,
                             int k, uint64_t one)
{
    const size_t stride = (size_t)gridDim.x * blockDim.x, np = (size_t)veil_prodk_nprods(k);
    for (size_t w = (size_t)blockIdx.x * blockDim.x + threadIdx.x; w < n; w += stride)
        z[w] = veil_prodk_finish(e + w * k, a + w * k, pr + w * np, k, one);
}

extern "C" cudaError_t veil_cuda_prodk(const uint64_t *e, const uint64_t *a, const uint64_t *pr,
                                       uint64_t *z, size_t n, int k, int party0, cudaStream_t s)
{
    if (n == 0)
        return cudaSuccess;
    prodk_kernel<<<veil_cuda_blocks(n), VEIL_CUDA_THREADS, 0, s>>>(e, a, pr, z, n, k,
                                                                   party0 ? 1 : 0);
    return cudaGetLastError();
}

/* ---- AND finish, ReLU finish, B2A --------------------------------------------------------- */

__global__ void and_finish_kernel(const uint64_t *__restrict__ d, const uint64_t *__restrict__ e,
                                  const uint64_t *__restrict__ a, const uint64_t *__restrict__ b,
                                  const uint64_t *__restrict__ c, uint64_t *__restrict__ z,
                                  size_t n, uint64_t de)
{
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        z[i] = veil_and_finish_word(d[i], e[i], a[i], b[i], c[i], de);
}

__global__ void relu_fin_kernel(const uint64_t *__restrict__ f, const uint64_t *__restrict__ beta,
                                const uint64_t *__restrict__ w, const uint64_t *__restrict__ x,
                                uint64_t *__restrict__ y, uint64_t *__restrict__ mask, size_t n,
                                uint64_t one)
{
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        const uint64_t fi = veil_cmp_packed_bit(f, i);
        y[i] = veil_relu_fin_y(fi, w[i], x[i]);
        mask[i] = veil_relu_fin_mask(fi, beta[i], one);
    }
}

__global__ void relu_trunc_kernel(const uint64_t *__restrict__ c, const uint64_t *__restrict__ rhi,
                                  const uint64_t *__restrict__ r63,
                                  const uint64_t *__restrict__ beta,
                                  const uint64_t *__restrict__ rhib,
                                  const uint64_t *__restrict__ r63b, uint64_t *__restrict__ z,
                                  uint64_t *__restrict__ zb, size_t n, unsigned f, uint64_t p0)
{
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        veil_trunc_neg_elem(c[i], rhi[i], r63[i], beta[i], rhib[i], r63b[i], f, p0, &z[i], &zb[i]);
}

__global__ void b2a_mask_kernel(const uint64_t *__restrict__ in, const uint64_t *__restrict__ bp,
                                uint64_t *__restrict__ e, size_t nw, uint64_t tail)
{
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < nw; i += stride) {
        const uint64_t word = in[i] ^ bp[i];
        e[i] = i == nw - 1 ? word & tail : word;
    }
}

__global__ void b2a_fin_kernel(const uint64_t *__restrict__ e, const uint64_t *__restrict__ b,
                               uint64_t *__restrict__ out, size_t n, uint64_t one)
{
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        out[i] = veil_b2a_fin_elem(veil_cmp_packed_bit(e, i), b[i], one);
}

extern "C" cudaError_t veil_cuda_and_finish(const uint64_t *d, const uint64_t *e, const uint64_t *a,
                                            const uint64_t *b, const uint64_t *c, uint64_t *z,
                                            size_t n, int party0, cudaStream_t s)
{
    if (n == 0)
        return cudaSuccess;
    and_finish_kernel<<<veil_cuda_blocks(n), VEIL_CUDA_THREADS, 0, s>>>(d, e, a, b, c, z, n,
                                                                        party0 ? ~UINT64_C(0) : 0);
    return cudaGetLastError();
}

extern "C" cudaError_t veil_cuda_relu_fin(const uint64_t *f, const uint64_t *beta,
                                          const uint64_t *w, const uint64_t *x, uint64_t *y,
                                          uint64_t *mask, size_t n, int party0, cudaStream_t s)
{
    if (n == 0)
        return cudaSuccess;
    relu_fin_kernel<<<veil_cuda_blocks(n), VEIL_CUDA_THREADS, 0, s>>>(f, beta, w, x, y, mask, n,
                                                                      party0 ? 1 : 0);
    return cudaGetLastError();
}

extern "C" cudaError_t veil_cuda_relu_trunc(const uint64_t *c, const uint64_t *rhi,
                                            const uint64_t *r63, const uint64_t *beta,
                                            const uint64_t *rhib, const uint64_t *r63b, uint64_t *z,
                                            uint64_t *zb, size_t n, int f, int party0,
                                            cudaStream_t s)
{
    if (n == 0)
        return cudaSuccess;
    relu_trunc_kernel<<<veil_cuda_blocks(n), VEIL_CUDA_THREADS, 0, s>>>(
        c, rhi, r63, beta, rhib, r63b, z, zb, n, (unsigned)f, party0 ? ~UINT64_C(0) : 0);
    return cudaGetLastError();
}

extern "C" cudaError_t veil_cuda_b2a_mask(const uint64_t *in, const uint64_t *bp, size_t offset,
                                          size_t nbits, uint64_t *e, size_t nw, cudaStream_t s)
{
    if (nw == 0)
        return cudaSuccess;
    b2a_mask_kernel<<<veil_cuda_blocks(nw), VEIL_CUDA_THREADS, 0, s>>>(in, bp + offset, e, nw,
                                                                       veil_b2a_tail_mask(nbits));
    return cudaGetLastError();
}

extern "C" cudaError_t veil_cuda_b2a_fin(const uint64_t *e, const uint64_t *b, uint64_t *out,
                                         size_t n, int party0, cudaStream_t s)
{
    if (n == 0)
        return cudaSuccess;
    b2a_fin_kernel<<<veil_cuda_blocks(n), VEIL_CUDA_THREADS, 0, s>>>(e, b, out, n, party0 ? 1 : 0);
    return cudaGetLastError();
}

/* ---- StarPU bodies: buffers and the raw argument block exactly as the CPU bodies read them
 * (veil_cmp_submit hands cl_arg over as a plain copy of the struct) ---------------------- */

#ifdef VEIL_USE_CUDA
#define VEC(i) ((uint64_t *)STARPU_VECTOR_GET_PTR(buffers[i]))
#define NX(i) STARPU_VECTOR_GET_NX(buffers[i])

extern "C" void veil_cmp_leaf_cuda(void *buffers[], void *cl_arg)
{
    const struct veil_cmp_party_arg *arg = (const struct veil_cmp_party_arg *)cl_arg;
    VEIL_CUDA_BODY_CHECK(veil_cuda_cmp_leaf(VEC(0), VEC(1), NX(0), VEC(2), VEC(3), VEC(4), NX(4),
                                            arg->party0, starpu_cuda_get_local_stream()));
}

extern "C" void veil_cmp_gather_cuda(void *buffers[], void *cl_arg)
{
    const struct veil_cmp_level_arg *arg = (const struct veil_cmp_level_arg *)cl_arg;
    const struct veil_cmp_level v = veil_cmp_level_of(arg->l);
    VEIL_CUDA_BODY_CHECK(veil_cuda_cmp_gather(arg->l, VEC(0), VEC(1),
                                              NX(1) / ((size_t)VEIL_C4_INPUTS * v.knext),
                                              arg->party0, starpu_cuda_get_local_stream()));
}

extern "C" void veil_cmp_group_cuda(void *buffers[], void *cl_arg)
{
    const struct veil_cmp_level_arg *arg = (const struct veil_cmp_level_arg *)cl_arg;
    const struct veil_cmp_level v = veil_cmp_level_of(arg->l);
    VEIL_CUDA_BODY_CHECK(veil_cuda_cmp_group(arg->l, VEC(0), VEC(1), VEC(2), VEC(3), VEC(4),
                                             NX(4) / (size_t)veil_cmp_next_rows(&v), arg->party0,
                                             starpu_cuda_get_local_stream()));
}

extern "C" void veil_prodk_cuda(void *buffers[], void *cl_arg)
{
    const struct veil_prodk_arg *arg = (const struct veil_prodk_arg *)cl_arg;
    VEIL_CUDA_BODY_CHECK(veil_cuda_prodk(VEC(0), VEC(1), VEC(2), VEC(3), NX(3), arg->k, arg->party0,
                                         starpu_cuda_get_local_stream()));
}

extern "C" void veil_and_finish_cuda(void *buffers[], void *cl_arg)
{
    const struct veil_cmp_party_arg *arg = (const struct veil_cmp_party_arg *)cl_arg;
    VEIL_CUDA_BODY_CHECK(veil_cuda_and_finish(VEC(0), VEC(1), VEC(2), VEC(3), VEC(4), VEC(5), NX(5),
                                              arg->party0, starpu_cuda_get_local_stream()));
}

extern "C" void veil_relu_fin_cuda(void *buffers[], void *cl_arg)
{
    const struct veil_cmp_party_arg *arg = (const struct veil_cmp_party_arg *)cl_arg;
    VEIL_CUDA_BODY_CHECK(veil_cuda_relu_fin(VEC(0), VEC(1), VEC(2), VEC(3), VEC(4), VEC(5), NX(4),
                                            arg->party0, starpu_cuda_get_local_stream()));
}

extern "C" void veil_relu_trunc_cuda(void *buffers[], void *cl_arg)
{
    const struct veil_relu_trunc_arg *arg = (const struct veil_relu_trunc_arg *)cl_arg;
    VEIL_CUDA_BODY_CHECK(veil_cuda_relu_trunc(VEC(0), VEC(1), VEC(2), VEC(3), VEC(4), VEC(5),
                                              VEC(6), VEC(7), NX(6), arg->f, arg->party0,
                                              starpu_cuda_get_local_stream()));
}

extern "C" void veil_b2a_mask_cuda(void *buffers[], void *cl_arg)
{
    const struct veil_b2a_mask_arg *arg = (const struct veil_b2a_mask_arg *)cl_arg;
    VEIL_CUDA_BODY_CHECK(veil_cuda_b2a_mask(VEC(0), VEC(1), arg->offset, arg->nbits, VEC(2), NX(2),
                                            starpu_cuda_get_local_stream()));
}

extern "C" void veil_b2a_fin_cuda(void *buffers[], void *cl_arg)
{
    const struct veil_cmp_party_arg *arg = (const struct veil_cmp_party_arg *)cl_arg;
    VEIL_CUDA_BODY_CHECK(veil_cuda_b2a_fin(VEC(0), VEC(1), VEC(2), NX(2), arg->party0,
                                           starpu_cuda_get_local_stream()));
}
#endif /* VEIL_USE_CUDA */

/*
 * reference.c — the plaintext oracle (see reference.h): one naive loop per operation, written
 * from the definition rather than for speed, sharing no code with the codelet bodies.
 */
#include "config.h"

#include "codelets/reference.h"

/* Bit j of x as 0/1. */
static uint64_t bit(uint64_t x, unsigned j)
{
    return (x >> j) & 1u;
}

void veil_ref_add(size_t n, const uint64_t *a, const uint64_t *b, uint64_t *out)
{
    for (size_t i = 0; i < n; i++)
        out[i] = a[i] + b[i];
}

void veil_ref_sub(size_t n, const uint64_t *a, const uint64_t *b, uint64_t *out)
{
    for (size_t i = 0; i < n; i++)
        out[i] = a[i] - b[i];
}

void veil_ref_neg(size_t n, const uint64_t *a, uint64_t *out)
{
    /* -x = ~x + 1 in two's complement: a definition independent of the body's 0 - x. */
    for (size_t i = 0; i < n; i++)
        out[i] = ~a[i] + 1u;
}

void veil_ref_mul(size_t n, const uint64_t *a, const uint64_t *b, uint64_t *out)
{
    for (size_t i = 0; i < n; i++)
        out[i] = a[i] * b[i];
}

void veil_ref_mul_scalar(size_t n, const uint64_t *a, uint64_t s, uint64_t *out)
{
    for (size_t i = 0; i < n; i++)
        out[i] = s * a[i];
}

void veil_ref_add_scalar(size_t n, const uint64_t *a, uint64_t s, uint64_t *out)
{
    for (size_t i = 0; i < n; i++)
        out[i] = s + a[i];
}

void veil_ref_xor(size_t n, const uint64_t *a, const uint64_t *b, uint64_t *out)
{
    for (size_t i = 0; i < n; i++)
        out[i] = a[i] ^ b[i];
}

void veil_ref_and(size_t n, const uint64_t *a, const uint64_t *b, uint64_t *out)
{
    for (size_t i = 0; i < n; i++)
        out[i] = a[i] & b[i];
}

void veil_ref_not(size_t n, const uint64_t *a, uint64_t *out)
{
    for (size_t i = 0; i < n; i++)
        out[i] = UINT64_MAX - a[i];
}

void veil_ref_xor_mask(size_t n, const uint64_t *a, uint64_t mask, uint64_t *out)
{
    for (size_t i = 0; i < n; i++)
        out[i] = a[i] ^ mask;
}

void veil_ref_and_mask(size_t n, const uint64_t *a, uint64_t mask, uint64_t *out)
{
    for (size_t i = 0; i < n; i++)
        out[i] = a[i] & mask;
}

void veil_ref_shl(size_t n, const uint64_t *a, unsigned k, uint64_t *out)
{
    for (size_t i = 0; i < n; i++) {
        uint64_t r = 0;
        for (unsigned j = k; j < 64; j++)
            r |= bit(a[i], j - k) << j;
        out[i] = r;
    }
}

void veil_ref_shr(size_t n, const uint64_t *a, unsigned k, uint64_t *out)
{
    for (size_t i = 0; i < n; i++) {
        uint64_t r = 0;
        for (unsigned j = 0; j + k < 64; j++)
            r |= bit(a[i], j + k) << j;
        out[i] = r;
    }
}

void veil_ref_sar(size_t n, const uint64_t *a, unsigned k, uint64_t *out)
{
    for (size_t i = 0; i < n; i++) {
        uint64_t r = 0;
        for (unsigned j = 0; j < 64; j++)
            r |= bit(a[i], j + k < 64 ? j + k : 63) << j;
        out[i] = r;
    }
}

void veil_ref_bit_extract(size_t n, const uint64_t *a, unsigned k, uint64_t *out)
{
    for (size_t i = 0; i < n; i++)
        out[i] = bit(a[i], k);
}

void veil_ref_bit_pack(size_t n, const uint64_t *a, unsigned k, uint64_t *out)
{
    size_t words = (n + 63) / 64;
    for (size_t w = 0; w < words; w++)
        out[w] = 0;
    for (size_t j = 0; j < n; j++)
        out[j / 64] |= bit(a[j], k) << (j % 64);
}

void veil_ref_bit_unpack(size_t n, const uint64_t *words, uint64_t *out)
{
    for (size_t j = 0; j < n; j++)
        out[j] = bit(words[j / 64], (unsigned)(j % 64));
}

void veil_ref_bitslice(size_t na, const uint64_t *a, size_t nout, uint64_t *out)
{
    for (size_t o = 0; o < nout; o++) {
        size_t t = o / 64;
        unsigned b = (unsigned)(o % 64);
        uint64_t r = 0;
        for (unsigned j = 0; j < 64; j++) {
            size_t src = 64 * t + j;
            uint64_t x = src < na ? a[src] : 0;
            r |= bit(x, b) << j;
        }
        out[o] = r;
    }
}

void veil_ref_sum(size_t k, size_t n, const uint64_t *const *in, uint64_t *out)
{
    for (size_t i = 0; i < n; i++) {
        uint64_t s = 0;
        for (size_t t = 0; t < k; t++)
            s += in[t][i];
        out[i] = s;
    }
}

void veil_ref_xor_sum(size_t k, size_t n, const uint64_t *const *in, uint64_t *out)
{
    for (size_t i = 0; i < n; i++) {
        uint64_t s = 0;
        for (size_t t = 0; t < k; t++)
            s ^= in[t][i];
        out[i] = s;
    }
}

/* Output height and width of a valid geometry. */
static void conv_out(const struct veil_im2col_geom *g, long *oh, long *ow)
{
    *oh = ((long)g->h + 2L * g->ph - g->kh) / g->sh + 1;
    *ow = ((long)g->w + 2L * g->pw - g->kw) / g->sw + 1;
}

/*
 * Visits every column-matrix entry in order and gives its index and, when it came from the
 * image rather than the padding, the image index (else -1). Shared by the ring and the double
 * versions so that the geometry is written once in the reference.
 */
static void im2col_walk(const struct veil_im2col_geom *g, void (*visit)(void *, size_t, long),
                        void *ctx)
{
    long oh, ow;
    conv_out(g, &oh, &ow);
    size_t idx = 0;
    for (long b = 0; b < (long)g->n; b++)
        for (long ci = 0; ci < (long)g->c; ci++)
            for (long i = 0; i < (long)g->kh; i++)
                for (long j = 0; j < (long)g->kw; j++)
                    for (long y = 0; y < oh; y++)
                        for (long x = 0; x < ow; x++) {
                            long iy = y * g->sh + i - g->ph;
                            long ix = x * g->sw + j - g->pw;
                            long src = -1;
                            if (iy >= 0 && iy < (long)g->h && ix >= 0 && ix < (long)g->w)
                                src = ((b * g->c + ci) * g->h + iy) * g->w + ix;
                            visit(ctx, idx++, src);
                        }
}

struct walk_u64 {
    const uint64_t *from;
    uint64_t *to;
};
struct walk_f64 {
    const double *from;
    double *to;
};

static void im2col_u64(void *ctx, size_t idx, long src)
{
    struct walk_u64 *w = ctx;
    w->to[idx] = src >= 0 ? w->from[src] : 0;
}

static void col2im_u64(void *ctx, size_t idx, long dst)
{
    struct walk_u64 *w = ctx;
    if (dst >= 0)
        w->to[dst] += w->from[idx];
}

static void im2col_f64(void *ctx, size_t idx, long src)
{
    struct walk_f64 *w = ctx;
    w->to[idx] = src >= 0 ? w->from[src] : 0.0;
}

static void col2im_f64(void *ctx, size_t idx, long dst)
{
    struct walk_f64 *w = ctx;
    if (dst >= 0)
        w->to[dst] += w->from[idx];
}

static size_t image_len(const struct veil_im2col_geom *g)
{
    return (size_t)g->n * g->c * g->h * g->w;
}

void veil_ref_im2col(const struct veil_im2col_geom *g, const uint64_t *image, uint64_t *cols)
{
    struct walk_u64 w = {image, cols};
    im2col_walk(g, im2col_u64, &w);
}

void veil_ref_col2im(const struct veil_im2col_geom *g, const uint64_t *cols, uint64_t *image)
{
    struct walk_u64 w = {cols, image};
    for (size_t i = 0; i < image_len(g); i++)
        image[i] = 0;
    im2col_walk(g, col2im_u64, &w);
}

void veil_ref_transpose(size_t rows, size_t cols, const uint64_t *in, uint64_t *out)
{
    for (size_t r = 0; r < rows; r++)
        for (size_t c = 0; c < cols; c++)
            out[c * rows + r] = in[r * cols + c];
}

void veil_ref_swap_axes(const size_t p[4], const uint64_t *in, uint64_t *out)
{
    for (size_t i0 = 0; i0 < p[0]; i0++)
        for (size_t i1 = 0; i1 < p[1]; i1++)
            for (size_t i2 = 0; i2 < p[2]; i2++)
                for (size_t i3 = 0; i3 < p[3]; i3++)
                    out[((i0 * p[2] + i2) * p[1] + i1) * p[3] + i3] =
                        in[((i0 * p[1] + i1) * p[2] + i2) * p[3] + i3];
}

void veil_ref_gemm(size_t m, size_t n, size_t k, const uint64_t *a, const uint64_t *b, uint64_t *c)
{
    for (size_t i = 0; i < m; i++)
        for (size_t j = 0; j < n; j++) {
            uint64_t s = 0;
            for (size_t l = 0; l < k; l++)
                s += a[i * k + l] * b[l * n + j];
            c[i * n + j] = s;
        }
}

uint64_t veil_ref_fixed_mul(uint64_t a, uint64_t b, int f)
{
    uint64_t p = a * b;
    uint64_t r = 0;
    veil_ref_sar(1, &p, (unsigned)f, &r);
    return r;
}

void veil_ref_add_f64(size_t n, const double *a, const double *b, double *out)
{
    for (size_t i = 0; i < n; i++)
        out[i] = a[i] + b[i];
}

void veil_ref_sub_f64(size_t n, const double *a, const double *b, double *out)
{
    for (size_t i = 0; i < n; i++)
        out[i] = a[i] - b[i];
}

void veil_ref_neg_f64(size_t n, const double *a, double *out)
{
    for (size_t i = 0; i < n; i++)
        out[i] = -a[i];
}

void veil_ref_mul_f64(size_t n, const double *a, const double *b, double *out)
{
    for (size_t i = 0; i < n; i++)
        out[i] = a[i] * b[i];
}

void veil_ref_mul_scalar_f64(size_t n, const double *a, double s, double *out)
{
    for (size_t i = 0; i < n; i++)
        out[i] = s * a[i];
}

void veil_ref_add_scalar_f64(size_t n, const double *a, double s, double *out)
{
    for (size_t i = 0; i < n; i++)
        out[i] = s + a[i];
}

void veil_ref_sum_f64(size_t k, size_t n, const double *const *in, double *out)
{
    for (size_t i = 0; i < n; i++) {
        double s = 0.0;
        for (size_t t = 0; t < k; t++)
            s += in[t][i];
        out[i] = s;
    }
}

void veil_ref_im2col_f64(const struct veil_im2col_geom *g, const double *image, double *cols)
{
    struct walk_f64 w = {image, cols};
    im2col_walk(g, im2col_f64, &w);
}

void veil_ref_col2im_f64(const struct veil_im2col_geom *g, const double *cols, double *image)
{
    struct walk_f64 w = {cols, image};
    for (size_t i = 0; i < image_len(g); i++)
        image[i] = 0.0;
    im2col_walk(g, col2im_f64, &w);
}

void veil_ref_transpose_f64(size_t rows, size_t cols, const double *in, double *out)
{
    for (size_t r = 0; r < rows; r++)
        for (size_t c = 0; c < cols; c++)
            out[c * rows + r] = in[r * cols + c];
}

void veil_ref_gemm_f64(size_t m, size_t n, size_t k, const double *a, const double *b, double *c)
{
    for (size_t i = 0; i < m; i++)
        for (size_t j = 0; j < n; j++) {
            double s = 0.0;
            for (size_t l = 0; l < k; l++)
                s += a[i * k + l] * b[l * n + j];
            c[i * n + j] = s;
        }
}

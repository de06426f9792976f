/* Tests every CUDA codelet body except GEMM against the CPU body and the plaintext reference, bit
 * for bit: the elementwise ring, bitwise and shift ops (shift amounts 0, 1, 31, 63), bit extract /
 * pack / unpack / bit-slice (both directions, partial blocks), the k-operand sum and XOR-sum
 * (k = 1, 2, 7, 64),
 * im2col / col2im (padding, strides) and transpose (padded leading dimensions), on sizes around
 * warp and block boundaries with the ring edge values mixed in. Each task runs on a copy of the
 * codelet restricted to one architecture (where = STARPU_CUDA, then STARPU_CPU). Skips (77) when
 * Veil was built without VEIL_USE_CUDA or StarPU finds no CUDA worker. */
#include "config.h"

#include "codelets/codelets_internal.h"
#include "codelets/reference.h"
#include "test_util.h"

#include <stdlib.h>
#include <string.h>

#ifdef VEIL_USE_CUDA

/* Runs one task of a copy of orig restricted to where on the handles h[0..nh): h[0] is written
 * when out_first, else h[nh - 1]; the others are read. arg (arg_size bytes) is packed with
 * STARPU_VALUE when not NULL. Waits for the task. Returns 0 or -1. */
static int run(const struct starpu_codelet *orig, uint32_t where, starpu_data_handle_t *h, int nh,
               int out_first, const void *arg, size_t arg_size)
{
    struct starpu_codelet cl = *orig;
    struct starpu_data_descr descr[VEIL_SUM_MAX_OPERANDS + 1];
    int rc;
    cl.where = where;
    cl.model = NULL;
    for (int i = 0; i < nh; i++) {
        descr[i].handle = h[i];
        descr[i].mode = (out_first ? i == 0 : i == nh - 1) ? STARPU_W : STARPU_R;
    }
    if (arg != NULL)
        rc = starpu_task_insert(&cl, STARPU_DATA_MODE_ARRAY, descr, nh, STARPU_VALUE, arg, arg_size,
                                0);
    else
        rc = starpu_task_insert(&cl, STARPU_DATA_MODE_ARRAY, descr, nh, 0);
    VT_CHECK(rc == 0, "task %s on %s: submit %d", orig->name, where == STARPU_CUDA ? "CUDA" : "CPU",
             rc);
    starpu_task_wait_for_all();
    return rc == 0 ? 0 : -1;
}

static starpu_data_handle_t vec(uint64_t *p, size_t n)
{
    starpu_data_handle_t h;
    starpu_vector_data_register(&h, STARPU_MAIN_RAM, (uintptr_t)p, n, sizeof(uint64_t));
    return h;
}

/* Runs a vector codelet with inputs in[0..nin) (lengths nin_len) and one output of out_len on
 * both architectures; compares both outputs with want. */
static void check_vec(const struct starpu_codelet *cl, const char *what, uint64_t **in,
                      const size_t *in_len, int nin, size_t out_len, int out_first, const void *arg,
                      size_t arg_size, const uint64_t *want)
{
    static const uint32_t arch[2] = {STARPU_CUDA, STARPU_CPU};
    uint64_t *out = malloc(out_len * sizeof(uint64_t) + 8);
    if (out == NULL) {
        VT_CHECK(0, "out of memory");
        return;
    }
    for (int w = 0; w < 2; w++) {
        starpu_data_handle_t h[VEIL_SUM_MAX_OPERANDS + 1];
        memset(out, 0xa5, out_len * sizeof(uint64_t));
        int o = out_first ? 0 : nin;
        for (int i = 0; i < nin; i++)
            h[out_first ? i + 1 : i] = vec(in[i], in_len[i]);
        h[o] = vec(out, out_len);
        run(cl, arch[w], h, nin + 1, out_first, arg, arg_size);
        for (int i = 0; i < nin + 1; i++)
            starpu_data_unregister(h[i]);
        char label[128];
        snprintf(label, sizeof(label), "%s (%s)", what, w == 0 ? "CUDA" : "CPU");
        veil_test_compare_u64(label, out, want, out_len);
    }
    free(out);
}

static void check_elementwise(size_t n, uint64_t *a, uint64_t *b, uint64_t *want)
{
    uint64_t *in2[2] = {a, b};
    size_t len2[2] = {n, n};
    char what[64];
#define BIN(name)                                                                                  \
    do {                                                                                           \
        veil_ref_##name(n, a, b, want);                                                            \
        snprintf(what, sizeof(what), #name " n=%zu", n);                                           \
        check_vec(&veil_##name##_cl, what, in2, len2, 2, n, 0, NULL, 0, want);                     \
    } while (0)
    BIN(add);
    BIN(sub);
    BIN(mul);
    BIN(xor);
    BIN(and);
#undef BIN
    veil_ref_neg(n, a, want);
    check_vec(&veil_neg_cl, "neg", in2, len2, 1, n, 0, NULL, 0, want);
    veil_ref_not(n, a, want);
    check_vec(&veil_not_cl, "not", in2, len2, 1, n, 0, NULL, 0, want);
    uint64_t s = b[0] | 1;
#define PAR(name, p)                                                                               \
    do {                                                                                           \
        uint64_t param_ = (p);                                                                     \
        veil_ref_##name(n, a, p, want);                                                            \
        snprintf(what, sizeof(what), #name " n=%zu p=%llu", n, (unsigned long long)param_);        \
        check_vec(&veil_##name##_cl, what, in2, len2, 1, n, 0, &param_, sizeof(param_), want);     \
    } while (0)
    PAR(mul_scalar, s);
    PAR(add_scalar, s);
    PAR(xor_mask, s);
    PAR(and_mask, s);
    static const unsigned ks[] = {0, 1, 31, 63};
    for (size_t t = 0; t < 4; t++) {
        PAR(shl, ks[t]);
        PAR(shr, ks[t]);
        PAR(sar, ks[t]);
        PAR(bit_extract, ks[t]);
    }
#undef PAR
}

static void check_bits(size_t n, uint64_t *a, uint64_t *want)
{
    size_t nw = (n + 63) / 64, nblk = 64 * nw;
    uint64_t *packed = calloc(nw, 8), *sliced = calloc(nblk, 8);
    char what[64];
    if (packed == NULL || sliced == NULL) {
        VT_CHECK(0, "out of memory");
        goto done;
    }
    uint64_t *in[1] = {a};
    size_t len[1] = {n};
    static const unsigned ks[] = {0, 31, 63};
    for (size_t t = 0; t < 3; t++) {
        uint64_t k = ks[t];
        veil_ref_bit_pack(n, a, (unsigned)k, want);
        snprintf(what, sizeof(what), "bit_pack n=%zu k=%u", n, ks[t]);
        check_vec(&veil_bit_pack_cl, what, in, len, 1, nw, 0, &k, sizeof(k), want);
        memcpy(packed, want, nw * 8);
    }
    uint64_t *pin[1] = {packed};
    size_t plen[1] = {nw};
    veil_ref_bit_unpack(n, packed, want);
    snprintf(what, sizeof(what), "bit_unpack n=%zu", n);
    check_vec(&veil_bit_unpack_cl, what, pin, plen, 1, n, 0, NULL, 0, want);
    veil_ref_bitslice(n, a, nblk, want);
    snprintf(what, sizeof(what), "bitslice n=%zu -> %zu", n, nblk);
    check_vec(&veil_bitslice_cl, what, in, len, 1, nblk, 0, NULL, 0, want);
    memcpy(sliced, want, nblk * 8);
    uint64_t *sin[1] = {sliced};
    size_t slen[1] = {nblk};
    veil_ref_bitslice(nblk, sliced, n, want);
    snprintf(what, sizeof(what), "bitslice %zu -> n=%zu", nblk, n);
    check_vec(&veil_bitslice_cl, what, sin, slen, 1, n, 0, NULL, 0, want);
done:
    free(packed);
    free(sliced);
}

static void check_sum(size_t n, uint64_t *a, uint64_t *b, uint64_t *want)
{
    static const int ks[] = {1, 2, 7, VEIL_SUM_MAX_OPERANDS};
    uint64_t *in[VEIL_SUM_MAX_OPERANDS];
    size_t len[VEIL_SUM_MAX_OPERANDS];
    char what[64];
    for (size_t t = 0; t < 4; t++) {
        int k = ks[t];
        for (int i = 0; i < k; i++) {
            in[i] = i % 2 ? b : a; /* repeated operands are allowed */
            len[i] = n;
        }
        veil_ref_sum((size_t)k, n, (const uint64_t *const *)in, want);
        snprintf(what, sizeof(what), "sum k=%d n=%zu", k, n);
        check_vec(&veil_sum_cl, what, in, len, k, n, 1, NULL, 0, want);
        veil_ref_xor_sum((size_t)k, n, (const uint64_t *const *)in, want);
        snprintf(what, sizeof(what), "xor_sum k=%d n=%zu", k, n);
        check_vec(&veil_xor_sum_cl, what, in, len, k, n, 1, NULL, 0, want);
    }
}

static void check_im2col(void)
{
    static const struct veil_im2col_geom geoms[] = {
        {1, 1, 5, 5, 3, 3, 1, 1, 1, 1},
        {2, 3, 7, 6, 3, 2, 2, 1, 1, 0},
        {1, 2, 9, 9, 4, 4, 3, 3, 2, 3},
    };
    for (size_t t = 0; t < sizeof(geoms) / sizeof(geoms[0]); t++) {
        const struct veil_im2col_geom *g = &geoms[t];
        size_t oh, ow, il, cl;
        VT_CHECK(veil_im2col_geom_check(g, &oh, &ow, &il, &cl) == VEIL_OK, "geometry %zu", t);
        uint64_t *img = malloc(il * 8), *cols = malloc(cl * 8), *want = malloc((il + cl) * 8);
        if (img == NULL || cols == NULL || want == NULL) {
            VT_CHECK(0, "out of memory");
        } else {
            veil_test_random(900 + t, img, il);
            veil_test_random(950 + t, cols, cl);
            uint64_t *in[1] = {img};
            size_t len[1] = {il};
            veil_ref_im2col(g, img, want);
            check_vec(&veil_im2col_cl, "im2col", in, len, 1, cl, 0, g, sizeof(*g), want);
            in[0] = cols;
            len[0] = cl;
            veil_ref_col2im(g, cols, want);
            check_vec(&veil_col2im_cl, "col2im", in, len, 1, il, 0, g, sizeof(*g), want);
        }
        free(img);
        free(cols);
        free(want);
    }
}

static void check_transpose(size_t rows, size_t cols, size_t pad)
{
    static const uint32_t arch[2] = {STARPU_CUDA, STARPU_CPU};
    size_t ld_in = cols + pad, ld_out = rows + pad;
    uint64_t *in = malloc(rows * ld_in * 8), *out = malloc(cols * ld_out * 8);
    uint64_t *dense = malloc(rows * cols * 8), *want = malloc(rows * cols * 8);
    uint64_t *got = malloc(rows * cols * 8);
    if (!in || !out || !dense || !want || !got) {
        VT_CHECK(0, "out of memory");
        goto done;
    }
    veil_test_random(77 + rows * 1000 + cols, in, rows * ld_in);
    for (size_t r = 0; r < rows; r++)
        memcpy(dense + r * cols, in + r * ld_in, cols * 8);
    veil_ref_transpose(rows, cols, dense, want);
    for (int w = 0; w < 2; w++) {
        starpu_data_handle_t h[2];
        memset(out, 0xa5, cols * ld_out * 8);
        starpu_matrix_data_register(&h[0], STARPU_MAIN_RAM, (uintptr_t)in, ld_in, cols, rows, 8);
        starpu_matrix_data_register(&h[1], STARPU_MAIN_RAM, (uintptr_t)out, ld_out, rows, cols, 8);
        run(&veil_transpose_cl, arch[w], h, 2, 0, NULL, 0);
        starpu_data_unregister(h[0]);
        starpu_data_unregister(h[1]);
        for (size_t c = 0; c < cols; c++)
            memcpy(got + c * rows, out + c * ld_out, rows * 8);
        char what[64];
        snprintf(what, sizeof(what), "transpose %zux%zu (%s)", rows, cols, w ? "CPU" : "CUDA");
        veil_test_compare_u64(what, got, want, rows * cols);
    }
done:
    free(in), free(out), free(dense), free(want), free(got);
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
    static const size_t sizes[] = {1, 31, 32, 63, 64, 65, 257, 1000, 100003};
    for (size_t t = 0; t < sizeof(sizes) / sizeof(sizes[0]); t++) {
        size_t n = sizes[t], nblk = 64 * ((n + 63) / 64);
        uint64_t *a = malloc(nblk * 8), *b = malloc(nblk * 8), *want = malloc(nblk * 8);
        if (a == NULL || b == NULL || want == NULL) {
            VT_CHECK(0, "out of memory");
        } else {
            veil_test_random(10 + t, a, n);
            veil_test_random(20 + t, b, n);
            veil_test_mix_edges(a, b, n);
            check_elementwise(n, a, b, want);
            check_bits(n, a, want);
            check_sum(n, a, b, want);
        }
        free(a), free(b), free(want);
    }
    check_im2col();
    check_transpose(1, 1, 0);
    check_transpose(33, 70, 3);
    check_transpose(300, 129, 1);
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

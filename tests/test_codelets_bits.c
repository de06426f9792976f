/* Tests bit packing, unpacking and bit-slicing run as StarPU tasks: pack of bit k (k = 0, 1, 31,
 * 63) and unpack against the reference for sizes 1, 63, 64, 65, 200, 4097 (tail words zero);
 * unpack(pack(x)) gives bit k of x; bit-slice against the naive 64x64 transpose definition
 * (written here, independent of the reference too), for full and partial blocks, in both
 * directions (n -> 64*ceil(n/64) and back, which restores the input); and that k = 64, a wrong
 * packed length and mismatched block counts are refused. */
#include "config.h"

#include "codelets/codelets_internal.h"
#include "codelets/reference.h"
#include "test_util.h"

#include <stdlib.h>
#include <string.h>

static const size_t sizes[] = {1, 63, 64, 65, 200, 4097};
static const unsigned bits[] = {0, 1, 31, 63};

static size_t words_for(size_t n)
{
    return (n + 63) / 64;
}

static void check_pack(size_t n, uint64_t *a, uint64_t *packed, uint64_t *want, uint64_t *back,
                       uint64_t *bitk)
{
    char what[96];
    size_t nw = words_for(n);
    veil_test_random(6000 + n, a, n);
    veil_test_mix_edges(a, NULL, n);
    for (size_t t = 0; t < sizeof(bits) / sizeof(bits[0]); t++) {
        unsigned k = bits[t];
        memset(packed, 0xa5, nw * sizeof(uint64_t));
        memset(back, 0xa5, n * sizeof(uint64_t));
        starpu_data_handle_t ha = veil_test_vec(a, n), hp = veil_test_vec(packed, nw),
                             hb = veil_test_vec(back, n);
        VT_CHECK(veil_task_bit_pack(ha, k, hp, 0) == VEIL_OK, "pack: %s", veil_last_error());
        VT_CHECK(veil_task_bit_unpack(hp, hb, 0) == VEIL_OK, "unpack: %s", veil_last_error());
        starpu_task_wait_for_all();
        starpu_data_unregister(ha);
        starpu_data_unregister(hp);
        starpu_data_unregister(hb);

        veil_ref_bit_pack(n, a, k, want);
        snprintf(what, sizeof(what), "bit_pack n=%zu k=%u", n, k);
        veil_test_compare_u64(what, packed, want, nw);
        if (n % 64 != 0)
            VT_CHECK((packed[nw - 1] >> (n % 64)) == 0, "pack n=%zu: tail bits not zero", n);
        veil_ref_bit_unpack(n, packed, want);
        snprintf(what, sizeof(what), "bit_unpack n=%zu k=%u", n, k);
        veil_test_compare_u64(what, back, want, n);
        veil_ref_bit_extract(n, a, k, bitk);
        snprintf(what, sizeof(what), "unpack(pack(x)) == bit %u of x, n=%zu", k, n);
        veil_test_compare_u64(what, back, bitk, n);
    }
}

/* The definition, written directly: bit j of out[64t + b] = bit b of in[64t + j]. */
static void naive_slice(size_t na, const uint64_t *in, size_t nout, uint64_t *out)
{
    memset(out, 0, nout * sizeof(uint64_t));
    for (size_t t = 0; t * 64 < nout; t++)
        for (size_t b = 0; b < 64 && 64 * t + b < nout; b++)
            for (size_t j = 0; j < 64 && 64 * t + j < na; j++)
                if ((in[64 * t + j] >> b) & 1)
                    out[64 * t + b] |= UINT64_C(1) << j;
}

static void check_bitslice(size_t n, uint64_t *a, uint64_t *sliced, uint64_t *want, uint64_t *back)
{
    char what[96];
    size_t ns = 64 * words_for(n);
    veil_test_random(7000 + n, a, n);
    veil_test_mix_edges(a, NULL, n);
    memset(sliced, 0xa5, ns * sizeof(uint64_t));
    memset(back, 0xa5, n * sizeof(uint64_t));
    starpu_data_handle_t ha = veil_test_vec(a, n), hs = veil_test_vec(sliced, ns),
                         hb = veil_test_vec(back, n);
    VT_CHECK(veil_task_bitslice(ha, hs, 0) == VEIL_OK, "bitslice: %s", veil_last_error());
    VT_CHECK(veil_task_bitslice(hs, hb, 0) == VEIL_OK, "unslice: %s", veil_last_error());
    starpu_task_wait_for_all();
    starpu_data_unregister(ha);
    starpu_data_unregister(hs);
    starpu_data_unregister(hb);

    naive_slice(n, a, ns, want);
    snprintf(what, sizeof(what), "bitslice n=%zu vs naive", n);
    veil_test_compare_u64(what, sliced, want, ns);
    veil_ref_bitslice(n, a, ns, want);
    snprintf(what, sizeof(what), "bitslice n=%zu vs reference", n);
    veil_test_compare_u64(what, sliced, want, ns);
    snprintf(what, sizeof(what), "unslice(bitslice(x)) n=%zu", n);
    veil_test_compare_u64(what, back, a, n);
}

static void check_bad_input(void)
{
    uint64_t a[130] = {0}, w[3] = {0}, s[192] = {0};
    starpu_data_handle_t ha = veil_test_vec(a, 130), hw2 = veil_test_vec(w, 2),
                         hw3 = veil_test_vec(w, 3), hs = veil_test_vec(s, 192),
                         hs128 = veil_test_vec(s, 128);
    VT_CHECK(veil_task_bit_pack(ha, 64, hw3, 0) == VEIL_ERR_INVAL, "pack k=64");
    VT_CHECK(veil_task_bit_pack(ha, 0, hw2, 0) == VEIL_ERR_SHAPE, "pack 130 into 2 words");
    VT_CHECK(veil_task_bit_unpack(hw2, ha, 0) == VEIL_ERR_SHAPE, "unpack 130 from 2 words");
    VT_CHECK(veil_task_bit_unpack(hw3, NULL, 0) == VEIL_ERR_INVAL, "unpack NULL output");
    VT_CHECK(veil_task_bitslice(ha, hs128, 0) == VEIL_ERR_SHAPE, "slice 3 blocks into 2");
    VT_CHECK(veil_task_bitslice(hs, hs, 0) == VEIL_ERR_INVAL, "slice in place");
    starpu_task_wait_for_all();
    starpu_data_unregister(ha);
    starpu_data_unregister(hw2);
    starpu_data_unregister(hw3);
    starpu_data_unregister(hs);
    starpu_data_unregister(hs128);
}

int main(void)
{
    int rc = veil_test_starpu_start();
    if (rc != 0)
        return rc;
    size_t nmax = sizes[sizeof(sizes) / sizeof(sizes[0]) - 1], ns = 64 * words_for(nmax);
    uint64_t *a = malloc(nmax * 8), *x = malloc(ns * 8), *want = malloc(ns * 8),
             *back = malloc(nmax * 8), *bitk = malloc(nmax * 8);
    if (a == NULL || x == NULL || want == NULL || back == NULL || bitk == NULL) {
        fprintf(stderr, "FAIL: out of memory\n");
        veil_test_failures++;
        goto done;
    }
    for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
        check_pack(sizes[s], a, x, want, back, bitk);
        check_bitslice(sizes[s], a, x, want, back);
    }
    check_bad_input();
done:
    free(a);
    free(x);
    free(want);
    free(back);
    free(bitk);
    veil_test_starpu_stop();
    return veil_test_status();
}

/* Tests the bitwise codelets (xor, and, not, xor / and with a public word mask) run as StarPU
 * tasks against the plaintext reference, bit for bit, on random inputs of several sizes mixed
 * with all pairs of the edge values, with edge and random masks; and that the submit helpers
 * refuse mismatched sizes, NULL handles and an output aliasing an input. */
#include "config.h"

#include "codelets/codelets_internal.h"
#include "codelets/reference.h"
#include "test_util.h"

#include <stdlib.h>
#include <string.h>

typedef int (*binary_task)(starpu_data_handle_t, starpu_data_handle_t, starpu_data_handle_t, int);
typedef void (*binary_ref)(size_t, const uint64_t *, const uint64_t *, uint64_t *);
typedef int (*mask_task)(starpu_data_handle_t, uint64_t, starpu_data_handle_t, int);
typedef void (*mask_ref)(size_t, const uint64_t *, uint64_t, uint64_t *);

static const struct {
    const char *name;
    binary_task task;
    binary_ref ref;
} binary_ops[] = {
    {"xor", veil_task_xor, veil_ref_xor},
    {"and", veil_task_and, veil_ref_and},
};

static const struct {
    const char *name;
    mask_task task;
    mask_ref ref;
} mask_ops[] = {
    {"xor_mask", veil_task_xor_mask, veil_ref_xor_mask},
    {"and_mask", veil_task_and_mask, veil_ref_and_mask},
};

static const size_t sizes[] = {1, 3, 25, 64, 127, 1000, 4097};

static void check_sizes(size_t n, uint64_t *a, uint64_t *b, uint64_t *got, uint64_t *want)
{
    char what[96];
    veil_test_random(3000 + n, a, n);
    veil_test_random(4000 + n, b, n);
    veil_test_mix_edges(a, b, n);

    for (size_t o = 0; o < sizeof(binary_ops) / sizeof(binary_ops[0]); o++) {
        memset(got, 0xa5, n * sizeof(uint64_t));
        starpu_data_handle_t ha = veil_test_vec(a, n), hb = veil_test_vec(b, n),
                             hout = veil_test_vec(got, n);
        VT_CHECK(binary_ops[o].task(ha, hb, hout, 1) == VEIL_OK, "%s n=%zu: %s", binary_ops[o].name,
                 n, veil_last_error());
        starpu_task_wait_for_all();
        starpu_data_unregister(ha);
        starpu_data_unregister(hb);
        starpu_data_unregister(hout);
        binary_ops[o].ref(n, a, b, want);
        snprintf(what, sizeof(what), "%s n=%zu", binary_ops[o].name, n);
        veil_test_compare_u64(what, got, want, n);
    }

    {
        memset(got, 0xa5, n * sizeof(uint64_t));
        starpu_data_handle_t ha = veil_test_vec(a, n), hout = veil_test_vec(got, n);
        VT_CHECK(veil_task_not(ha, hout, 0) == VEIL_OK, "not: %s", veil_last_error());
        starpu_task_wait_for_all();
        starpu_data_unregister(ha);
        starpu_data_unregister(hout);
        veil_ref_not(n, a, want);
        snprintf(what, sizeof(what), "not n=%zu", n);
        veil_test_compare_u64(what, got, want, n);
    }

    uint64_t masks[VEIL_TEST_NEDGE + 1];
    memcpy(masks, veil_test_edge, sizeof(veil_test_edge));
    masks[VEIL_TEST_NEDGE] = UINT64_C(0x00ff0f0f3333aaaa);
    for (size_t o = 0; o < sizeof(mask_ops) / sizeof(mask_ops[0]); o++) {
        for (size_t s = 0; s < sizeof(masks) / sizeof(masks[0]); s++) {
            memset(got, 0xa5, n * sizeof(uint64_t));
            starpu_data_handle_t ha = veil_test_vec(a, n), hout = veil_test_vec(got, n);
            VT_CHECK(mask_ops[o].task(ha, masks[s], hout, 0) == VEIL_OK, "%s: %s", mask_ops[o].name,
                     veil_last_error());
            starpu_task_wait_for_all();
            starpu_data_unregister(ha);
            starpu_data_unregister(hout);
            mask_ops[o].ref(n, a, masks[s], want);
            snprintf(what, sizeof(what), "%s n=%zu mask=0x%llx", mask_ops[o].name, n,
                     (unsigned long long)masks[s]);
            veil_test_compare_u64(what, got, want, n);
        }
    }
}

static void check_bad_input(void)
{
    uint64_t a[8] = {0}, b[9] = {0}, c[8] = {0};
    starpu_data_handle_t ha = veil_test_vec(a, 8), hb = veil_test_vec(b, 9),
                         hc = veil_test_vec(c, 8);
    VT_CHECK(veil_task_xor(ha, hb, hc, 0) == VEIL_ERR_SHAPE, "xor 8 ^ 9 elements");
    VT_CHECK(veil_task_and(ha, hc, hb, 0) == VEIL_ERR_SHAPE, "and into 9 elements");
    VT_CHECK(veil_task_and(ha, NULL, hc, 0) == VEIL_ERR_INVAL, "and NULL b");
    VT_CHECK(veil_task_not(ha, NULL, 0) == VEIL_ERR_INVAL, "not NULL output");
    VT_CHECK(veil_task_xor_mask(hc, 1, hc, 0) == VEIL_ERR_INVAL, "xor_mask in place");
    VT_CHECK(veil_task_and_mask(hb, 1, hc, 0) == VEIL_ERR_SHAPE, "and_mask 9 -> 8");
    starpu_task_wait_for_all();
    starpu_data_unregister(ha);
    starpu_data_unregister(hb);
    starpu_data_unregister(hc);
}

int main(void)
{
    int rc = veil_test_starpu_start();
    if (rc != 0)
        return rc;
    size_t nmax = sizes[sizeof(sizes) / sizeof(sizes[0]) - 1];
    uint64_t *a = malloc(nmax * 8), *b = malloc(nmax * 8), *got = malloc(nmax * 8),
             *want = malloc(nmax * 8);
    if (a == NULL || b == NULL || got == NULL || want == NULL) {
        fprintf(stderr, "FAIL: out of memory\n");
        veil_test_failures++;
        goto done;
    }
    for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++)
        check_sizes(sizes[s], a, b, got, want);
    check_bad_input();
done:
    free(a);
    free(b);
    free(got);
    free(want);
    veil_test_starpu_stop();
    return veil_test_status();
}

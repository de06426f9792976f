/* Tests the ring-arithmetic codelets (add, sub, neg, elementwise mul, mul by a public scalar,
 * add a public scalar) run as StarPU tasks against the plaintext reference, bit for bit, on
 * random inputs of several sizes mixed with the edge values 0, 1, 2^63-1, 2^63, 2^64-1 (all
 * pairs), with edge-value scalars; and that the submit helpers refuse bad input (mismatched
 * sizes, NULL handles, output aliasing an input, non-8-byte elements, matrix handles). */
#include "config.h"

#include "codelets/codelets_internal.h"
#include "codelets/reference.h"
#include "test_util.h"

#include <stdlib.h>
#include <string.h>

typedef int (*binary_task)(starpu_data_handle_t, starpu_data_handle_t, starpu_data_handle_t, int);
typedef void (*binary_ref)(size_t, const uint64_t *, const uint64_t *, uint64_t *);
typedef int (*scalar_task)(starpu_data_handle_t, uint64_t, starpu_data_handle_t, int);
typedef void (*scalar_ref)(size_t, const uint64_t *, uint64_t, uint64_t *);

static const struct {
    const char *name;
    binary_task task;
    binary_ref ref;
} binary_ops[] = {
    {"add", veil_task_add, veil_ref_add},
    {"sub", veil_task_sub, veil_ref_sub},
    {"mul", veil_task_mul, veil_ref_mul},
};

static const struct {
    const char *name;
    scalar_task task;
    scalar_ref ref;
} scalar_ops[] = {
    {"mul_scalar", veil_task_mul_scalar, veil_ref_mul_scalar},
    {"add_scalar", veil_task_add_scalar, veil_ref_add_scalar},
};

static const size_t sizes[] = {1, 2, 25, 63, 64, 65, 1000, 4097};

static void check_sizes(size_t n, uint64_t *a, uint64_t *b, uint64_t *got, uint64_t *want)
{
    char what[96];
    veil_test_random(1000 + n, a, n);
    veil_test_random(2000 + n, b, n);
    veil_test_mix_edges(a, b, n);

    for (size_t o = 0; o < sizeof(binary_ops) / sizeof(binary_ops[0]); o++) {
        memset(got, 0xa5, n * sizeof(uint64_t));
        starpu_data_handle_t ha = veil_test_vec(a, n), hb = veil_test_vec(b, n),
                             hout = veil_test_vec(got, n);
        int rc = binary_ops[o].task(ha, hb, hout, 0);
        VT_CHECK(rc == VEIL_OK, "%s n=%zu: %s", binary_ops[o].name, n, veil_last_error());
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
        VT_CHECK(veil_task_neg(ha, hout, 3) == VEIL_OK, "neg: %s", veil_last_error());
        starpu_task_wait_for_all();
        starpu_data_unregister(ha);
        starpu_data_unregister(hout);
        veil_ref_neg(n, a, want);
        snprintf(what, sizeof(what), "neg n=%zu", n);
        veil_test_compare_u64(what, got, want, n);
    }

    /* Scalars: every edge value and one random word. */
    uint64_t scalars[VEIL_TEST_NEDGE + 1];
    memcpy(scalars, veil_test_edge, sizeof(veil_test_edge));
    scalars[VEIL_TEST_NEDGE] = UINT64_C(0x9e3779b97f4a7c15);
    for (size_t o = 0; o < sizeof(scalar_ops) / sizeof(scalar_ops[0]); o++) {
        for (size_t s = 0; s < sizeof(scalars) / sizeof(scalars[0]); s++) {
            memset(got, 0xa5, n * sizeof(uint64_t));
            starpu_data_handle_t ha = veil_test_vec(a, n), hout = veil_test_vec(got, n);
            int rc = scalar_ops[o].task(ha, scalars[s], hout, -1);
            VT_CHECK(rc == VEIL_OK, "%s: %s", scalar_ops[o].name, veil_last_error());
            starpu_task_wait_for_all();
            starpu_data_unregister(ha);
            starpu_data_unregister(hout);
            scalar_ops[o].ref(n, a, scalars[s], want);
            snprintf(what, sizeof(what), "%s n=%zu s=0x%llx", scalar_ops[o].name, n,
                     (unsigned long long)scalars[s]);
            veil_test_compare_u64(what, got, want, n);
        }
    }
}

static void check_bad_input(void)
{
    uint64_t a[8] = {0}, b[7] = {0}, c[8] = {0};
    uint32_t small[8] = {0};
    starpu_data_handle_t ha = veil_test_vec(a, 8), hb = veil_test_vec(b, 7),
                         hc = veil_test_vec(c, 8), hs, hm;
    starpu_vector_data_register(&hs, STARPU_MAIN_RAM, (uintptr_t)small, 8, sizeof(uint32_t));
    starpu_matrix_data_register(&hm, STARPU_MAIN_RAM, (uintptr_t)c, 4, 4, 2, sizeof(uint64_t));

    VT_CHECK(veil_task_add(ha, hb, hc, 0) == VEIL_ERR_SHAPE, "add 8+7 elements");
    VT_CHECK(strstr(veil_last_error(), "add") != NULL, "message names the op: %s",
             veil_last_error());
    VT_CHECK(veil_task_sub(ha, ha, hb, 0) == VEIL_ERR_SHAPE, "sub output of 7 for 8 inputs");
    VT_CHECK(veil_task_mul(ha, NULL, hc, 0) == VEIL_ERR_INVAL, "mul NULL b");
    VT_CHECK(veil_task_neg(NULL, hc, 0) == VEIL_ERR_INVAL, "neg NULL input");
    VT_CHECK(veil_task_neg(ha, ha, 0) == VEIL_ERR_INVAL, "neg output aliasing input");
    VT_CHECK(veil_task_add(ha, hc, hc, 0) == VEIL_ERR_INVAL, "add output aliasing b");
    VT_CHECK(veil_task_add(ha, hs, hc, 0) == VEIL_ERR_INVAL, "add with 4-byte elements");
    VT_CHECK(veil_task_mul_scalar(hm, 3, hc, 0) == VEIL_ERR_INVAL, "mul_scalar on a matrix");
    VT_CHECK(veil_task_add_scalar(ha, 3, hb, 0) == VEIL_ERR_SHAPE, "add_scalar 8 -> 7");
    starpu_task_wait_for_all();
    starpu_data_unregister(ha);
    starpu_data_unregister(hb);
    starpu_data_unregister(hc);
    starpu_data_unregister(hs);
    starpu_data_unregister(hm);
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
    veil_test_log("test_codelets_ring_arith: %d failures", veil_test_failures);
    return veil_test_status();
}

/* Tests the shift codelets (logical left, logical right, arithmetic right by k in [0, 63]) and
 * bit extraction, run as StarPU tasks against the bit-by-bit reference, for k in {0, 1, 7, 31,
 * 32, 33, 62, 63}, on random inputs of several sizes with the edge values 0, 1, 2^63-1, 2^63,
 * 2^64-1 at the front; checks the reference's sar against floor division on a few values; and
 * that a shift of 64 (or more), mismatched sizes and NULL handles are refused before
 * submission. */
#include "config.h"

#include "codelets/codelets_internal.h"
#include "codelets/reference.h"
#include "test_util.h"

#include <stdlib.h>
#include <string.h>

typedef int (*shift_task)(starpu_data_handle_t, unsigned, starpu_data_handle_t, int);
typedef void (*shift_ref)(size_t, const uint64_t *, unsigned, uint64_t *);

static const struct {
    const char *name;
    shift_task task;
    shift_ref ref;
} ops[] = {
    {"shl", veil_task_shl, veil_ref_shl},
    {"shr", veil_task_shr, veil_ref_shr},
    {"sar", veil_task_sar, veil_ref_sar},
    {"bit_extract", veil_task_bit_extract, veil_ref_bit_extract},
};

static const size_t sizes[] = {1, 5, 64, 65, 1001};
static const unsigned amounts[] = {0, 1, 7, 31, 32, 33, 62, 63};

static void check_size(size_t n, uint64_t *a, uint64_t *got, uint64_t *want)
{
    char what[96];
    veil_test_random(5000 + n, a, n);
    veil_test_mix_edges(a, NULL, n < VEIL_TEST_NEDGE ? n : VEIL_TEST_NEDGE);
    for (size_t o = 0; o < sizeof(ops) / sizeof(ops[0]); o++) {
        for (size_t t = 0; t < sizeof(amounts) / sizeof(amounts[0]); t++) {
            unsigned k = amounts[t];
            memset(got, 0xa5, n * sizeof(uint64_t));
            starpu_data_handle_t ha = veil_test_vec(a, n), hout = veil_test_vec(got, n);
            VT_CHECK(ops[o].task(ha, k, hout, 0) == VEIL_OK, "%s k=%u: %s", ops[o].name, k,
                     veil_last_error());
            starpu_task_wait_for_all();
            starpu_data_unregister(ha);
            starpu_data_unregister(hout);
            ops[o].ref(n, a, k, want);
            snprintf(what, sizeof(what), "%s n=%zu k=%u", ops[o].name, n, k);
            veil_test_compare_u64(what, got, want, n);
        }
    }
}

/* The reference's sar is floor division by 2^k of the signed value. */
static void check_reference(void)
{
    const int64_t vals[] = {0, 1, -1, -2, -3, 5, -5, INT64_MIN, INT64_MAX, -1000000007};
    for (size_t i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
        for (unsigned k = 0; k < 63; k += 5) {
            uint64_t x = (uint64_t)vals[i], r;
            veil_ref_sar(1, &x, k, &r);
            int64_t d = (int64_t)(UINT64_C(1) << k);
            int64_t q = vals[i] / d;
            if (vals[i] % d != 0 && vals[i] < 0)
                q -= 1;
            VT_CHECK(r == (uint64_t)q, "ref sar(%lld, %u) = %lld, floor division gives %lld",
                     (long long)vals[i], k, (long long)(int64_t)r, (long long)q);
        }
    }
}

static void check_bad_input(void)
{
    uint64_t a[4] = {0}, b[5] = {0};
    starpu_data_handle_t ha = veil_test_vec(a, 4), hb = veil_test_vec(b, 5);
    for (size_t o = 0; o < sizeof(ops) / sizeof(ops[0]); o++) {
        VT_CHECK(ops[o].task(ha, 64, hb, 0) == VEIL_ERR_INVAL, "%s by 64", ops[o].name);
        VT_CHECK(ops[o].task(ha, 1000, hb, 0) == VEIL_ERR_INVAL, "%s by 1000", ops[o].name);
        VT_CHECK(ops[o].task(ha, 3, hb, 0) == VEIL_ERR_SHAPE, "%s 4 -> 5", ops[o].name);
        VT_CHECK(ops[o].task(NULL, 3, hb, 0) == VEIL_ERR_INVAL, "%s NULL input", ops[o].name);
    }
    starpu_task_wait_for_all();
    starpu_data_unregister(ha);
    starpu_data_unregister(hb);
}

int main(void)
{
    int rc = veil_test_starpu_start();
    if (rc != 0)
        return rc;
    size_t nmax = sizes[sizeof(sizes) / sizeof(sizes[0]) - 1];
    uint64_t *a = malloc(nmax * 8), *got = malloc(nmax * 8), *want = malloc(nmax * 8);
    if (a == NULL || got == NULL || want == NULL) {
        fprintf(stderr, "FAIL: out of memory\n");
        veil_test_failures++;
        goto done;
    }
    check_reference();
    for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++)
        check_size(sizes[s], a, got, want);
    check_bad_input();
done:
    free(a);
    free(got);
    free(want);
    veil_test_starpu_stop();
    return veil_test_status();
}

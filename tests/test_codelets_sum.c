/* Tests the k-operand sum and XOR-sum codelets (STARPU_VARIABLE_NBUFFERS, more buffers than StarPU's
 * STARPU_NMAXBUFS = 8) run as a StarPU task against the reference, for k = 1, 2, 8, 9, 33 and 64
 * on sizes 1, 65 and 3000 with edge values (k copies of 2^64-1 wrap), including an operand given
 * twice; and that k = 0, k = 65, a NULL operand array, mismatched sizes and an output that is
 * also an operand are refused. */
#include "config.h"

#include "codelets/codelets_internal.h"
#include "codelets/reference.h"
#include "test_util.h"

#include <stdlib.h>
#include <string.h>

static const int ks[] = {1, 2, 8, 9, 33, 64};
static const size_t sizes[] = {1, 65, 3000};

static void check(int k, size_t n, uint64_t **in, uint64_t *got, uint64_t *want)
{
    char what[64];
    starpu_data_handle_t h[VEIL_SUM_MAX_OPERANDS];
    const uint64_t *ptr[VEIL_SUM_MAX_OPERANDS];
    for (int t = 0; t < k; t++) {
        veil_test_random(8000 + 100 * (uint64_t)t + n, in[t], n);
        /* Edge value t mod 5 in the first slot of every operand: all-ones columns wrap. */
        in[t][0] = veil_test_edge[t % VEIL_TEST_NEDGE];
        if (n > 1)
            in[t][1] = UINT64_MAX;
        h[t] = veil_test_vec(in[t], n);
        ptr[t] = in[t];
    }
    /* With k >= 3 the last operand repeats the first handle (read twice). */
    if (k >= 3) {
        starpu_data_unregister(h[k - 1]);
        h[k - 1] = h[0];
        ptr[k - 1] = in[0];
    }
    memset(got, 0xa5, n * sizeof(uint64_t));
    starpu_data_handle_t hout = veil_test_vec(got, n);
    VT_CHECK(veil_task_sum(h, k, hout, 0) == VEIL_OK, "sum k=%d: %s", k, veil_last_error());
    starpu_task_wait_for_all();
    starpu_data_unregister(hout);
    uint64_t *gotx = malloc(n * sizeof(uint64_t)), *wantx = malloc(n * sizeof(uint64_t));
    memset(gotx, 0x5a, n * sizeof(uint64_t));
    hout = veil_test_vec(gotx, n);
    VT_CHECK(veil_task_xor_sum(h, k, hout, 0) == VEIL_OK, "xor_sum k=%d: %s", k,
             veil_last_error());
    starpu_task_wait_for_all();
    starpu_data_unregister(hout);
    for (int t = 0; t < (k >= 3 ? k - 1 : k); t++)
        starpu_data_unregister(h[t]);
    veil_ref_sum((size_t)k, n, ptr, want);
    snprintf(what, sizeof(what), "sum k=%d n=%zu", k, n);
    veil_test_compare_u64(what, got, want, n);
    veil_ref_xor_sum((size_t)k, n, ptr, wantx);
    snprintf(what, sizeof(what), "xor_sum k=%d n=%zu", k, n);
    veil_test_compare_u64(what, gotx, wantx, n);
    free(gotx);
    free(wantx);
}

static void check_bad_input(uint64_t **in)
{
    starpu_data_handle_t h[VEIL_SUM_MAX_OPERANDS + 1];
    for (int t = 0; t < VEIL_SUM_MAX_OPERANDS + 1; t++)
        h[t] = veil_test_vec(in[t], 4);
    uint64_t out4[4], out5[5];
    starpu_data_handle_t hout = veil_test_vec(out4, 4), h5 = veil_test_vec(out5, 5);
    VT_CHECK(veil_task_sum(h, 0, hout, 0) == VEIL_ERR_INVAL, "k = 0");
    VT_CHECK(veil_task_xor_sum(h, 0, hout, 0) == VEIL_ERR_INVAL, "xor_sum k = 0");
    VT_CHECK(veil_task_sum(h, -1, hout, 0) == VEIL_ERR_INVAL, "k = -1");
    VT_CHECK(veil_task_sum(h, VEIL_SUM_MAX_OPERANDS + 1, hout, 0) == VEIL_ERR_INVAL, "k = 65");
    VT_CHECK(veil_task_sum(NULL, 2, hout, 0) == VEIL_ERR_INVAL, "NULL array");
    VT_CHECK(veil_task_sum(h, 3, h5, 0) == VEIL_ERR_SHAPE, "4-element operands, 5-element out");
    VT_CHECK(veil_task_sum(h, 3, h[1], 0) == VEIL_ERR_INVAL, "output is an operand");
    VT_CHECK(veil_task_sum(h, 2, NULL, 0) == VEIL_ERR_INVAL, "NULL output");
    starpu_data_handle_t mixed[2] = {h[0], h5};
    VT_CHECK(veil_task_sum(mixed, 2, hout, 0) == VEIL_ERR_SHAPE, "operands of 4 and 5");
    starpu_task_wait_for_all();
    for (int t = 0; t < VEIL_SUM_MAX_OPERANDS + 1; t++)
        starpu_data_unregister(h[t]);
    starpu_data_unregister(hout);
    starpu_data_unregister(h5);
}

int main(void)
{
    int rc = veil_test_starpu_start();
    if (rc != 0)
        return rc;
    size_t nmax = sizes[sizeof(sizes) / sizeof(sizes[0]) - 1];
    uint64_t *in[VEIL_SUM_MAX_OPERANDS + 1] = {0};
    uint64_t *got = malloc(nmax * 8), *want = malloc(nmax * 8);
    int ok = got != NULL && want != NULL;
    for (int t = 0; t < VEIL_SUM_MAX_OPERANDS + 1; t++)
        ok = ok && (in[t] = calloc(nmax, 8)) != NULL;
    if (!ok) {
        fprintf(stderr, "FAIL: out of memory\n");
        veil_test_failures++;
        goto done;
    }
    for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++)
        for (size_t i = 0; i < sizeof(ks) / sizeof(ks[0]); i++)
            check(ks[i], sizes[s], in, got, want);
    check_bad_input(in);
done:
    for (int t = 0; t < VEIL_SUM_MAX_OPERANDS + 1; t++)
        free(in[t]);
    free(got);
    free(want);
    veil_test_starpu_stop();
    return veil_test_status();
}

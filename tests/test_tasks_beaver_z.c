/* Tests the elementwise product's local step (veil_task_beaver_z, tasks/beaver_kernels.c) as a
 * StarPU task against a sum of reference products (veil_ref_mul, veil_ref_sum): z = c + d b + a e
 * with and without d e (party 0's term), in a product's form and a square's (b = a, e = d: handles
 * given twice), on 1, 65 and 3,000 words with ring edge values; and that a z longer than its
 * inputs, a z among the inputs and a NULL input are refused. (The protocol around it is
 * test_tasks_mul's; the CUDA body is compared with this CPU body in test_tasks_cuda_beaver.) */
#include "config.h"

#include "codelets/reference.h"
#include "tasks/beaver_internal.h"
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NMAX 3000

static uint64_t in[9][NMAX], got[NMAX], want[NMAX];

static void check(size_t n)
{
    starpu_data_handle_t h[5]; /* c d b a e */
    for (int t = 0; t < 5; t++) {
        veil_test_random(9100 + 10 * (uint64_t)t + n, in[t], n);
        in[t][0] = veil_test_edge[t % VEIL_TEST_NEDGE];
        h[t] = veil_test_vec(in[t], n);
    }
    uint64_t *db = in[5], *ae = in[6], *de = in[7];
    for (int square = 0; square < 2; square++)
        for (int with_de = 0; with_de < 2; with_de++) {
            const int ib = square ? 3 : 2, ie = square ? 1 : 4; /* a square: b = a, e = d */
            veil_ref_mul(n, in[1], in[ib], db);
            veil_ref_mul(n, in[3], in[ie], ae);
            veil_ref_mul(n, in[1], in[ie], de);
            const uint64_t *terms[4] = {in[0], db, ae, de};
            veil_ref_sum(with_de ? 4 : 3, n, terms, want);
            memset(got, 0xa5, n * 8);
            starpu_data_handle_t hz = veil_test_vec(got, n);
            VT_CHECK(veil_task_beaver_z(h[0], h[1], h[ib], h[3], h[ie], with_de, hz, 0) == VEIL_OK,
                     "beaver_z: %s", veil_last_error());
            starpu_task_wait_for_all();
            starpu_data_unregister(hz);
            char what[64];
            snprintf(what, sizeof what, "beaver_z n=%zu%s%s", n, square ? " (square)" : "",
                     with_de ? " with d e" : "");
            veil_test_compare_u64(what, got, want, n);
        }
    if (n < NMAX) {
        starpu_data_handle_t hl = veil_test_vec(in[8], n + 1);
        VT_CHECK(veil_task_beaver_z(h[0], h[1], h[2], h[3], h[4], 0, hl, 0) == VEIL_ERR_SHAPE,
                 "a z longer than its inputs refused");
        starpu_data_unregister(hl);
    }
    VT_CHECK(veil_task_beaver_z(h[0], h[1], h[2], h[3], h[4], 0, h[2], 0) == VEIL_ERR_INVAL,
             "a z among the inputs refused");
    VT_CHECK(veil_task_beaver_z(h[0], NULL, h[2], h[3], h[4], 1, h[2], 0) == VEIL_ERR_INVAL,
             "a NULL input refused");
    starpu_task_wait_for_all();
    for (int t = 0; t < 5; t++)
        starpu_data_unregister(h[t]);
}

int main(void)
{
    int rc = veil_test_starpu_start();
    if (rc != 0)
        return rc;
    static const size_t sizes[] = {1, 65, NMAX};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
        check(sizes[s]);
    veil_test_starpu_stop();
    return veil_test_status();
}

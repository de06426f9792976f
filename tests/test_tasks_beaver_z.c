/* Tests the elementwise product's local step (veil_task_beaver_z, tasks/beaver_kernels.c) as a
 * StarPU task against a sum of reference products (veil_ref_mul, veil_ref_sum): z = c + d b + a e
 * with and without d e (party 0's term), in a product's form and a square's (b = a, e = d: handles
 * given twice), on 1, 65 and 3,000 words with ring edge values; and that a z longer than its
 * inputs, a z among the inputs and a NULL input are refused. The packed form a product uses
 * (veil_task_sub_pair: de = (x - a, y - b) in one vector; veil_task_beaver_z_pair reading d and e
 * from it) against the same references, and its bad shapes refused. (The protocol around them is
 * test_tasks_mul's; the CUDA bodies of the unpacked step are compared with the CPU body in
 * test_tasks_cuda_beaver.) */
#include "config.h"

#include "codelets/reference.h"
#include "tasks/beaver_internal.h"
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NMAX 3000

static uint64_t in[9][NMAX], got[NMAX], want[NMAX], pair[2 * NMAX], pair_want[2 * NMAX];

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

    /* the packed form: in[1] and in[4] play x and y, in[3] and in[2] their masks a and b */
    memset(pair, 0xa5, 2 * n * 8);
    starpu_data_handle_t hp = veil_test_vec(pair, 2 * n), hz = veil_test_vec(got, n);
    VT_CHECK(veil_task_sub_pair(h[1], h[3], h[4], h[2], hp, 0) == VEIL_OK, "sub_pair: %s",
             veil_last_error());
    for (size_t i = 0; i < n; i++) {
        pair_want[i] = in[1][i] - in[3][i];
        pair_want[n + i] = in[4][i] - in[2][i];
    }
    starpu_task_wait_for_all();
    char what[64];
    snprintf(what, sizeof what, "sub_pair n=%zu", n);
    starpu_data_acquire(hp, STARPU_R);
    veil_test_compare_u64(what, pair, pair_want, 2 * n);
    starpu_data_release(hp);
    for (int with_de = 0; with_de < 2; with_de++) {
        const uint64_t *d = pair, *e = pair + n;
        veil_ref_mul(n, d, in[2], db); /* d b + a e (+ d e) + c */
        veil_ref_mul(n, in[3], e, ae);
        veil_ref_mul(n, d, e, de);
        const uint64_t *terms[4] = {in[0], db, ae, de};
        veil_ref_sum(with_de ? 4 : 3, n, terms, want);
        VT_CHECK(veil_task_beaver_z_pair(h[0], hp, h[2], h[3], with_de, hz, 0) == VEIL_OK,
                 "beaver_z_pair: %s", veil_last_error());
        starpu_task_wait_for_all();
        starpu_data_acquire(hz, STARPU_R);
        snprintf(what, sizeof what, "beaver_z_pair n=%zu%s", n, with_de ? " with d e" : "");
        veil_test_compare_u64(what, got, want, n);
        starpu_data_release(hz);
    }
    VT_CHECK(veil_task_beaver_z_pair(h[0], h[1], h[2], h[3], 0, hz, 0) == VEIL_ERR_SHAPE,
             "a packed d e of one length refused");
    VT_CHECK(veil_task_sub_pair(h[1], h[3], h[4], h[2], h[0], 0) == VEIL_ERR_SHAPE,
             "a packed output of one length refused");
    VT_CHECK(veil_task_beaver_z_pair(h[0], hp, h[2], h[3], 0, h[3], 0) == VEIL_ERR_INVAL,
             "a packed step's z among its inputs refused");
    starpu_task_wait_for_all();
    starpu_data_unregister(hp);
    starpu_data_unregister(hz);
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

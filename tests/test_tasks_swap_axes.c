/* Tests the Beaver kernels' axis swap (veil_task_swap_axes, tasks/beaver_kernels.c) as a StarPU
 * task on the CPU: a p0 x p1 x p2 x p3 tensor comes out p0 x p2 x p1 x p3, against the plaintext
 * reference (veil_ref_swap_axes), for a plain transpose (p3 = 1) smaller than, equal to and
 * crossing the 32 x 32 tiles it is done in, batched transposes, and regroupings of runs of p3
 * words; and that a size that does not match the shape, or one handle given as both input and
 * output, is refused. (The CUDA body is compared with this one in test_tasks_cuda_beaver.) */
#include "config.h"

#include "codelets/reference.h"
#include "tasks/beaver_internal.h"
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void check(size_t p0, size_t p1, size_t p2, size_t p3, uint64_t tag)
{
    const size_t p[4] = {p0, p1, p2, p3}, n = p0 * p1 * p2 * p3;
    uint64_t *in = malloc(n * 8), *out = malloc(n * 8), *want = malloc(n * 8);
    if (!in || !out || !want) {
        VT_CHECK(0, "out of memory");
        goto done;
    }
    veil_test_random(tag, in, n);
    veil_test_mix_edges(in, NULL, n);
    veil_ref_swap_axes(p, in, want);
    memset(out, 0xa5, n * 8);
    starpu_data_handle_t hi = veil_test_vec(in, n), ho = veil_test_vec(out, n);
    VT_CHECK(veil_task_swap_axes(hi, ho, p, 0) == VEIL_OK, "swap_axes: %s", veil_last_error());
    starpu_task_wait_for_all();
    starpu_data_unregister(hi);
    starpu_data_unregister(ho);
    char what[96];
    snprintf(what, sizeof what, "swap_axes %zux%zux%zux%zu", p0, p1, p2, p3);
    veil_test_compare_u64(what, out, want, n);
done:
    free(in), free(out), free(want);
}

static void check_refusals(void)
{
    static uint64_t a[24], b[24];
    starpu_data_handle_t ha = veil_test_vec(a, 24), hb = veil_test_vec(b, 24);
    const size_t wrong[4] = {1, 5, 5, 1}, right[4] = {2, 3, 4, 1};
    VT_CHECK(veil_task_swap_axes(ha, hb, wrong, 0) == VEIL_ERR_SHAPE, "25 elements for 24 refused");
    VT_CHECK(veil_task_swap_axes(ha, ha, right, 0) == VEIL_ERR_SHAPE, "in place refused");
    starpu_task_wait_for_all();
    starpu_data_unregister(ha);
    starpu_data_unregister(hb);
}

int main(void)
{
    int rc = veil_test_starpu_start();
    if (rc != 0)
        return rc;
    check(1, 1, 1, 1, 1);
    check(1, 33, 70, 1, 2);   /* a transpose crossing the tiles, partial ones at both ends */
    check(1, 32, 32, 1, 3);   /* exactly one tile */
    check(3, 5, 7, 1, 4);     /* a batched transpose inside one tile */
    check(2, 300, 129, 1, 5); /* a batched transpose of many tiles */
    check(1, 2, 4608, 1, 6);  /* two images against many rows, as a convolution's regrouping */
    check(2, 3, 4, 5, 7);     /* runs of p3 words */
    check(4, 17, 9, 32, 8);   /* (b, oc, hw) regroupings */
    check(5, 1, 8, 33, 9);
    check_refusals();
    veil_test_starpu_stop();
    return veil_test_status();
}

/* Tests the Beaver kernels' batched GEMM (veil_task_bgemm, tasks/beaver_kernels.c) as a StarPU
 * task on the CPU against one reference product per image (veil_ref_gemm on dense copies): C[i]
 * (=|+=) op(A[i]) B[i] for batches of 1 to 7 images, with A shared (a convolution's weights, sa =
 * 0) or per image, A as stored or transposed, B's rows padded, offsets into A and B, overwrite and
 * accumulate, a batch summed into one C (sc = 0), and n of 1, 4, 5 and 12 columns (the products
 * that run as one over several images' columns) against 8 and 16 (per image). */
#include "config.h"

#include "codelets/reference.h"
#include "tasks/beaver_internal.h"
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One task against the reference; shared: sa = 0; sum: sc = 0. */
static void check(size_t m, size_t n, size_t k, size_t batch, int trans_a, int acc, int shared,
                  int sum, uint64_t tag)
{
    const size_t lda = (trans_a ? m : k) + 1, ldb = n + 3, oa = 5, ob = 7;
    const size_t arows = trans_a ? k : m, sa = shared ? 0 : arows * lda, sb = k * ldb;
    const size_t sc = sum ? 0 : m * n, na = oa + (shared ? 1 : batch) * arows * lda,
                 nb = ob + batch * sb, nc = (sum ? 1 : batch) * m * n;
    uint64_t *a = malloc(na * 8), *b = malloc(nb * 8), *c = malloc(nc * 8), *want = malloc(nc * 8);
    uint64_t *da = malloc(m * k * 8), *db = malloc(k * n * 8), *prod = malloc(m * n * 8);
    if (!a || !b || !c || !want || !da || !db || !prod) {
        VT_CHECK(0, "out of memory");
        goto done;
    }
    veil_test_random(tag, a, na);
    veil_test_random(tag + 1, b, nb);
    veil_test_random(tag + 2, c, nc);
    veil_test_mix_edges(a, b, na < nb ? na : nb);
    memcpy(want, c, nc * 8);
    for (size_t i = 0; i < batch; i++) {
        const uint64_t *ai = a + oa + i * sa, *bi = b + ob + i * sb;
        for (size_t r = 0; r < m; r++)
            for (size_t p = 0; p < k; p++)
                da[r * k + p] = trans_a ? ai[p * lda + r] : ai[r * lda + p];
        for (size_t p = 0; p < k; p++)
            memcpy(db + p * n, bi + p * ldb, n * 8);
        veil_ref_gemm(m, n, k, da, db, prod);
        uint64_t *wi = want + i * sc;
        const int adds = acc || (sum && i > 0);
        for (size_t e = 0; e < m * n; e++)
            wi[e] = (adds ? wi[e] : 0) + prod[e];
    }
    struct veil_bgemm_args g = {.m = m,
                                .n = n,
                                .k = k,
                                .trans_a = trans_a,
                                .accumulate = acc,
                                .batch = batch,
                                .sa = sa,
                                .sb = sb,
                                .sc = sc,
                                .oa = oa,
                                .ob = ob,
                                .lda = lda,
                                .ldb = ldb};
    starpu_data_handle_t ha = veil_test_vec(a, na), hb = veil_test_vec(b, nb),
                         hc = veil_test_vec(c, nc);
    VT_CHECK(veil_task_bgemm(ha, hb, hc, &g, 0) == VEIL_OK, "bgemm: %s", veil_last_error());
    starpu_task_wait_for_all();
    starpu_data_unregister(ha);
    starpu_data_unregister(hb);
    starpu_data_unregister(hc);
    char what[128];
    snprintf(what, sizeof what, "bgemm %zux%zux%zu batch %zu trans_a %d acc %d shared %d sum %d", m,
             n, k, batch, trans_a, acc, shared, sum);
    veil_test_compare_u64(what, c, want, nc);
done:
    free(a), free(b), free(c), free(want), free(da), free(db), free(prod);
}

int main(void)
{
    int rc = veil_test_starpu_start();
    if (rc != 0)
        return rc;
    static const size_t ns[] = {1, 4, 5, 12, 8, 16};
    static const size_t batches[] = {1, 2, 3, 7};
    uint64_t tag = 1;
    for (size_t in = 0; in < sizeof ns / sizeof *ns; in++)
        for (size_t ib = 0; ib < sizeof batches / sizeof *batches; ib++)
            for (int v = 0; v < 16; v++, tag += 3)
                check(13, ns[in], 37, batches[ib], v & 1, (v >> 1) & 1, (v >> 2) & 1, (v >> 3) & 1,
                      tag);
    check(64, 4, 600, 6, 0, 0, 1, 0, tag); /* a deep layer's shape: six images in one product */
    veil_test_starpu_stop();
    return veil_test_status();
}

/* Tests the flat relayout codelet the nonlinear protocols use (codelets/flatop_internal.h): copy
 * (concatenate two tensors into one with other tile boundaries, and split back), row sums and
 * row broadcasts over rows that cross tile boundaries, replication with per-copy constants (with
 * and without the constants), the weighted sum of stacked copies, periodic tiling (bias
 * broadcasts), interleaving of stacked parts row by row (concatenation along an axis) and the
 * slice of every row — each against a plain loop on the flat vectors, tiles of uneven sizes. Bad input (lengths that do not fit the operation,
 * a handle both read and written, too many copies) is refused before submission. */
#include "config.h"
#include "base/base_internal.h"
#include "codelets/flatop_internal.h"
#include "test_util.h"

#include <stdlib.h>
#include <string.h>

#define MAXT 8

struct flat {
    uint64_t *data;
    size_t n;
    int nt;
    starpu_data_handle_t h[MAXT];
};

/* Registers n words split at the given cut sizes (the last tile takes the rest). */
static void reg(struct flat *f, size_t n, const size_t *cuts, int ncuts)
{
    f->data = calloc(n, 8);
    f->n = n;
    f->nt = 0;
    size_t off = 0;
    for (int i = 0; i <= ncuts && off < n; i++) {
        size_t len = i < ncuts && cuts[i] < n - off ? cuts[i] : n - off;
        starpu_vector_data_register(&f->h[f->nt++], STARPU_MAIN_RAM, (uintptr_t)(f->data + off),
                                    (uint32_t)len, 8);
        off += len;
    }
}

static void unreg(struct flat *f)
{
    for (int i = 0; i < f->nt; i++)
        starpu_data_unregister(f->h[i]);
}

/* Brings f's tiles to host memory without unregistering them (a tile written on a GPU is copied
 * back), so f can be read and then used again. */
static void host(struct flat *f)
{
    for (int i = 0; i < f->nt; i++)
        if (starpu_data_acquire(f->h[i], STARPU_R) == 0)
            starpu_data_release(f->h[i]);
}

static void fin(struct flat *f)
{
    free(f->data);
}

static int run(struct veil_flatop_args a, struct flat *out, struct flat *in)
{
    a.nout = out->nt;
    a.nin = in->nt;
    int rc = veil_task_flatop(&a, out->h, in->h, 0);
    starpu_task_wait_for_all();
    return rc;
}

int main(void)
{
    int rc = veil_test_starpu_start();
    if (rc)
        return rc;
    enum { N = 1000, K = 10, C = 3 };
    static uint64_t x[N], want[C * N];
    veil_test_random(7, x, N);
    const size_t cx[] = {300, 300, 7}, co[] = {256, 256, 256, 256, 256, 256, 256};
    struct veil_flatop_args a;
    struct flat in, out;

    /* COPY: retile */
    memset(&a, 0, sizeof a);
    a.kind = VEIL_FLATOP_COPY;
    reg(&in, N, cx, 3);
    memcpy(in.data, x, sizeof x);
    reg(&out, N, co, 7);
    VT_CHECK(run(a, &out, &in) == VEIL_OK, "copy: %s", veil_last_error());
    unreg(&out);
    veil_test_compare_u64("copy", out.data, x, N);
    fin(&out);

    /* ROWSUM over rows of K crossing the 300/300/7 cuts */
    a.kind = VEIL_FLATOP_ROWSUM;
    a.k = K;
    reg(&out, N / K, co, 0);
    VT_CHECK(run(a, &out, &in) == VEIL_OK, "rowsum: %s", veil_last_error());
    unreg(&out);
    for (size_t r = 0; r < N / K; r++) {
        want[r] = 0;
        for (size_t j = 0; j < K; j++)
            want[r] += x[r * K + j];
    }
    veil_test_compare_u64("rowsum", out.data, want, N / K);
    fin(&out);

    /* BCAST: rows of 100 words (cut 33 / rest) to rows of K */
    unreg(&in);
    fin(&in);
    const size_t c33[] = {33};
    reg(&in, N / K, c33, 1);
    memcpy(in.data, x, N / K * 8);
    a.kind = VEIL_FLATOP_BCAST;
    reg(&out, N, cx, 3);
    VT_CHECK(run(a, &out, &in) == VEIL_OK, "bcast: %s", veil_last_error());
    unreg(&out);
    for (size_t i = 0; i < N; i++)
        want[i] = x[i / K];
    veil_test_compare_u64("bcast", out.data, want, N);
    fin(&out);
    unreg(&in);
    fin(&in);

    /* REPLICATE with constants, then WSUM back */
    reg(&in, N, cx, 3);
    memcpy(in.data, x, sizeof x);
    a.kind = VEIL_FLATOP_REPLICATE;
    a.k = C;
    a.add_const = 1;
    for (int i = 0; i < C; i++)
        a.c[i] = (uint64_t)(i + 1) * 1000;
    reg(&out, C * N, co, 7);
    VT_CHECK(run(a, &out, &in) == VEIL_OK, "replicate: %s", veil_last_error());
    for (size_t i = 0; i < C * N; i++)
        want[i] = x[i % N] + (i / N + 1) * 1000;
    struct flat sum;
    a.kind = VEIL_FLATOP_WSUM;
    a.c0 = 5;
    a.c[0] = 1;
    a.c[1] = 2;
    a.c[2] = UINT64_MAX; /* -1 */
    reg(&sum, N, c33, 1);
    VT_CHECK(run(a, &sum, &out) == VEIL_OK, "wsum: %s", veil_last_error());
    unreg(&out);
    unreg(&sum);
    veil_test_compare_u64("replicate", out.data, want, C * N);
    fin(&out);
    for (size_t i = 0; i < N; i++)
        want[i] = 5 + (x[i] + 1000) + 2 * (x[i] + 2000) - (x[i] + 3000);
    veil_test_compare_u64("wsum", sum.data, want, N);
    fin(&sum);

    /* without the constants (another party than 0) */
    a.kind = VEIL_FLATOP_REPLICATE;
    a.add_const = 0;
    reg(&out, C * N, co, 7);
    VT_CHECK(run(a, &out, &in) == VEIL_OK, "replicate: %s", veil_last_error());
    unreg(&out);
    for (size_t i = 0; i < C * N; i++)
        want[i] = x[i % N];
    veil_test_compare_u64("replicate without constants", out.data, want, C * N);
    fin(&out);

    /* TILE: 10 words (cut 3 / rest), each repeated 4 times, the period of 40 repeated 25 times */
    const size_t c3[] = {3};
    struct flat small;
    reg(&small, 10, c3, 1);
    memcpy(small.data, x, 10 * 8);
    memset(&a, 0, sizeof a);
    a.kind = VEIL_FLATOP_TILE;
    a.k = 4;
    reg(&out, N, cx, 3);
    VT_CHECK(run(a, &out, &small) == VEIL_OK, "tile: %s", veil_last_error());
    unreg(&out);
    for (size_t i = 0; i < N; i++)
        want[i] = x[(i / 4) % 10];
    veil_test_compare_u64("tile", out.data, want, N);
    fin(&out);
    a.k = 3; /* 1000 is no multiple of 30 */
    reg(&out, N, cx, 3);
    VT_CHECK(run(a, &out, &small) == VEIL_ERR_SHAPE, "tile of a wrong period refused");
    unreg(&out);
    fin(&out);
    unreg(&small);
    fin(&small);

    /* INTERLEAVE: parts of 10 rows x 30, 20, 0 and 50 words (stacked in the input, cut unevenly)
     * into rows of 100; then SLICE takes the second part back */
    a.kind = VEIL_FLATOP_INTERLEAVE;
    a.k = 4;
    a.c[0] = 30;
    a.c[1] = 20;
    a.c[2] = 0;
    a.c[3] = 50;
    reg(&out, N, co, 7);
    VT_CHECK(run(a, &out, &in) == VEIL_OK, "interleave: %s", veil_last_error());
    for (size_t r = 0; r < 10; r++)
        for (size_t j = 0; j < 100; j++)
            want[r * 100 + j] = j < 30   ? x[r * 30 + j]
                                : j < 50 ? x[300 + r * 20 + (j - 30)]
                                         : x[500 + r * 50 + (j - 50)];
    host(&out);
    veil_test_compare_u64("interleave", out.data, want, N);
    a.kind = VEIL_FLATOP_SLICE;
    a.k = 20;
    a.c[0] = 100;
    a.c[1] = 30;
    struct flat part;
    reg(&part, 200, c33, 1);
    VT_CHECK(run(a, &part, &out) == VEIL_OK, "slice: %s", veil_last_error());
    unreg(&part);
    veil_test_compare_u64("slice", part.data, x + 300, 200);
    fin(&part);
    a.c[1] = 90; /* columns [90, 110) of rows of 100 */
    reg(&part, 200, c33, 1);
    VT_CHECK(run(a, &part, &out) == VEIL_ERR_SHAPE, "slice past the row refused");
    unreg(&part);
    fin(&part);
    unreg(&out);
    fin(&out);

    /* bad input */
    reg(&out, N - 1, co, 0);
    a.kind = VEIL_FLATOP_COPY;
    VT_CHECK(run(a, &out, &in) == VEIL_ERR_SHAPE, "copy of N into N-1 refused");
    a.kind = VEIL_FLATOP_ROWSUM;
    a.k = 7;
    VT_CHECK(run(a, &out, &in) == VEIL_ERR_SHAPE, "rowsum with k not dividing refused");
    a.kind = VEIL_FLATOP_REPLICATE;
    a.k = VEIL_FLATOP_MAX_COPIES + 1;
    VT_CHECK(run(a, &out, &in) == VEIL_ERR_INVAL, "too many copies refused");
    a.kind = VEIL_FLATOP_COPY;
    VT_CHECK(run(a, &in, &in) == VEIL_ERR_INVAL, "in-place refused");
    unreg(&out);
    fin(&out);
    unreg(&in);
    fin(&in);
    veil_test_starpu_stop();
    return veil_test_status();
}

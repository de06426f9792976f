/* Tests the CUDA bodies of pool.c's local codelets (tasks/pool_internal.h) against their CPU
 * bodies, bit for bit: the tile concatenation (1 to 12 tiles, beyond STARPU_NMAXBUFS buffers),
 * every level of the tournament for several row lengths k (odd and even candidate counts, with
 * and without argmax so that the product rows have covered positions or not, both parties for
 * level 0's constants): pair differences, product operands, winners, one-hot updates; and the
 * four window modes (gather, sum, expand, scatter-add) over geometries with overlapping
 * windows, gaps between windows, partial coverage at the right and bottom edges, k = 1 and a
 * window as large as the image; the pairwise maximum's row-wise picks (differences, a gather from
 * four sources, row sums) for k = 3, 4, 5, 10. Row counts put the element counts around warp and
 * block boundaries, one case crosses the grid-size cap (grid-stride loop), and inputs mix the
 * ring's edge values into seeded random words. Each task runs on a copy of the codelet restricted
 * to one architecture (where = STARPU_CUDA, then STARPU_CPU), with the outputs prefilled with
 * different patterns so that an unwritten word shows. Skips (77) when Veil was built without
 * VEIL_USE_CUDA or StarPU finds no CUDA worker. */
#include "config.h"

#include "tasks/pool_internal.h"
#include "test_util.h"

#include <stdlib.h>
#include <string.h>

#ifdef VEIL_USE_CUDA

#define MAXBUF 16

/* One buffer of a task: p (inputs; NULL for an output, which the check allocates) of n words. */
struct buf {
    const uint64_t *p;
    size_t n;
};

/* Runs one synchronous task of a copy of orig restricted to where over h[0..nh) with modes md
 * and a raw copy of arg (as veil_cmp_submit passes it). Returns 0 or -1. */
static int run(const struct starpu_codelet *orig, uint32_t where, starpu_data_handle_t *h,
               const enum starpu_data_access_mode *md, int nh, const void *arg, size_t size)
{
    struct starpu_codelet cl = *orig;
    cl.where = where;
    cl.model = NULL;
    struct starpu_task *task = starpu_task_create();
    void *copy = malloc(size);
    if (task == NULL || copy == NULL) {
        VT_CHECK(0, "out of memory");
        free(copy);
        if (task != NULL)
            starpu_task_destroy(task);
        return -1;
    }
    task->cl = &cl;
    task->nbuffers = nh;
    if (nh > STARPU_NMAXBUFS) { /* freed by StarPU with the task */
        task->dyn_handles = malloc(sizeof *task->dyn_handles * (size_t)nh);
        task->dyn_modes = malloc(sizeof *task->dyn_modes * (size_t)nh);
        if (task->dyn_handles == NULL || task->dyn_modes == NULL) {
            VT_CHECK(0, "out of memory");
            free(copy);
            starpu_task_destroy(task);
            return -1;
        }
    }
    for (int i = 0; i < nh; i++) {
        if (task->dyn_handles != NULL) {
            task->dyn_handles[i] = h[i];
            task->dyn_modes[i] = md[i];
        } else {
            task->handles[i] = h[i];
            task->modes[i] = md[i];
        }
    }
    memcpy(copy, arg, size);
    task->cl_arg = copy;
    task->cl_arg_size = size;
    task->cl_arg_free = 1;
    task->synchronous = 1; /* cl lives on this stack frame */
    int rc = starpu_task_submit(task);
    VT_CHECK(rc == 0, "task %s on %s: submit %d", orig->name, where == STARPU_CUDA ? "CUDA" : "CPU",
             rc);
    if (rc != 0)
        starpu_task_destroy(task);
    return rc == 0 ? 0 : -1;
}

/* Runs cl over the buffers b[0..nb) (outputs: p == NULL, written, the others read) on CUDA and
 * on CPU and compares every output bit for bit. */
static void both(const struct starpu_codelet *cl, const char *what, const struct buf *b, int nb,
                 const void *arg, size_t size)
{
    static const uint32_t arch[2] = {STARPU_CUDA, STARPU_CPU};
    uint64_t *out[2][MAXBUF] = {{NULL}};
    enum starpu_data_access_mode md[MAXBUF];
    starpu_data_handle_t h[MAXBUF];
    int ok = 1;
    for (int i = 0; i < nb; i++) {
        md[i] = b[i].p == NULL ? STARPU_W : STARPU_R;
        for (int w = 0; w < 2 && b[i].p == NULL; w++) {
            out[w][i] = malloc(b[i].n * 8);
            if (out[w][i] == NULL)
                ok = 0;
            else
                memset(out[w][i], w ? 0x5a : 0xa5, b[i].n * 8);
        }
    }
    VT_CHECK(ok, "out of memory");
    for (int w = 0; w < 2 && ok; w++) {
        for (int i = 0; i < nb; i++) {
            const uint64_t *p = b[i].p != NULL ? b[i].p : out[w][i];
            starpu_vector_data_register(&h[i], STARPU_MAIN_RAM, (uintptr_t)p, b[i].n, 8);
        }
        run(cl, arch[w], h, md, nb, arg, size);
        for (int i = 0; i < nb; i++)
            starpu_data_unregister(h[i]);
    }
    for (int i = 0; i < nb && ok; i++) {
        if (b[i].p != NULL)
            continue;
        char label[192];
        snprintf(label, sizeof label, "%s, buffer %d (CUDA vs CPU)", what, i);
        veil_test_compare_u64(label, out[0][i], out[1][i], b[i].n);
    }
    for (int i = 0; i < nb; i++)
        free(out[0][i]), free(out[1][i]);
    veil_test_log("%s: done", what);
}

/* n seeded random words (tag) with edge values on every third word; NULL (failure counted) when
 * out of memory. */
static uint64_t *words(uint64_t tag, size_t n)
{
    uint64_t *p = malloc((n ? n : 1) * 8);
    if (p == NULL) {
        VT_CHECK(0, "out of memory");
        return NULL;
    }
    veil_test_random(tag, p, n);
    for (size_t i = 0; i < n; i += 3)
        p[i] = veil_test_edge[(i / 3 + tag) % VEIL_TEST_NEDGE];
    return p;
}

/* ---- concat ----------------------------------------------------------------------------- */

static void check_concat(int nin, const size_t *len)
{
    struct buf b[MAXBUF];
    uint64_t *in[MAXBUF] = {NULL};
    size_t total = 0;
    int ok = 1;
    for (int i = 0; i < nin; i++) {
        in[i] = words(100 + (uint64_t)i, len[i]);
        ok = ok && in[i] != NULL;
        b[1 + i] = (struct buf){in[i], len[i]};
        total += len[i];
    }
    b[0] = (struct buf){NULL, total};
    char what[64];
    snprintf(what, sizeof what, "concat of %d tiles, %zu words", nin, total);
    if (ok)
        both(&veil_pool_concat_cl, what, b, nin + 1, &nin, sizeof nin);
    for (int i = 0; i < nin; i++)
        free(in[i]);
}

/* ---- tournament ------------------------------------------------------------------------- */

/* One level of the tournament over rows x k (kl candidates, 2^level = s positions per range),
 * as pool.c's tournament() submits it, with and without argmax; inputs of any content. */
static void check_level(size_t rows, size_t k, size_t kl, size_t s, int l, const uint64_t *v,
                        const uint64_t *d, const uint64_t *beta, const uint64_t *f,
                        const uint64_t *oh, const uint64_t *w)
{
    const size_t p = kl / 2, kn = (kl + 1) / 2, nf = (rows * p + 63) / 64;
    struct veil_pool_tour_arg a = {.rows = rows, .kl = kl, .k = k, .m = p, .s = s};
    char what[128];
    snprintf(what, sizeof what, "diff rows %zu k %zu level %d", rows, k, l);
    const struct buf bd[2] = {{v, rows * kl}, {NULL, rows * p}};
    both(&veil_pool_diff_cl, what, bd, 2, &a, sizeof a);
    for (int argmax = 0; argmax < 2; argmax++) {
        const size_t cov = argmax && l > 0 ? (2 * p * s < k ? 2 * p * s : k) : 0;
        a.m = p + cov;
        if (cov) {
            snprintf(what, sizeof what, "prep rows %zu k %zu level %d", rows, k, l);
            const struct buf bp[5] = {{beta, rows * p},
                                      {d, rows * p},
                                      {oh, rows * k},
                                      {NULL, rows * a.m},
                                      {NULL, rows * a.m}};
            both(&veil_pool_prep_cl, what, bp, 5, &a, sizeof a);
        }
        snprintf(what, sizeof what, "combv rows %zu k %zu level %d m %zu", rows, k, l, a.m);
        const struct buf bc[5] = {
            {v, rows * kl}, {w, rows * a.m}, {d, rows * p}, {f, nf}, {NULL, rows * kn}};
        both(&veil_pool_combv_cl, what, bc, 5, &a, sizeof a);
        if (!argmax)
            continue;
        if (l == 0) { /* the constants: both parties */
            for (a.party0 = 0; a.party0 < 2; a.party0++) {
                snprintf(what, sizeof what, "oh0 rows %zu k %zu party0 %d", rows, k, a.party0);
                const struct buf bo[3] = {{f, nf}, {beta, rows * p}, {NULL, rows * k}};
                both(&veil_pool_oh0_cl, what, bo, 3, &a, sizeof a);
            }
        } else {
            snprintf(what, sizeof what, "oh rows %zu k %zu level %d", rows, k, l);
            const struct buf bo[4] = {{oh, rows * k}, {w, rows * a.m}, {f, nf}, {NULL, rows * k}};
            both(&veil_pool_oh_cl, what, bo, 4, &a, sizeof a);
        }
    }
}

/* Every level of the tournament over rows x k. */
static void check_tournament(size_t rows, size_t k)
{
    size_t kl = k, s = 1;
    for (int l = 0; kl > 1; l++, s *= 2) {
        const size_t p = kl / 2;
        const uint64_t tag = 1000 * (uint64_t)k + 10 * (uint64_t)l + rows;
        uint64_t *v = words(tag, rows * kl), *d = words(tag + 1, rows * p);
        uint64_t *beta = words(tag + 2, rows * p), *f = words(tag + 3, (rows * p + 63) / 64);
        uint64_t *oh = words(tag + 4, rows * k), *w = words(tag + 5, rows * (p + k));
        if (v != NULL && d != NULL && beta != NULL && f != NULL && oh != NULL && w != NULL)
            check_level(rows, k, kl, s, l, v, d, beta, f, oh, w);
        free(v), free(d), free(beta), free(f), free(oh), free(w);
        kl = (kl + 1) / 2;
    }
}

/* diff over more words than the capped grid has threads: the grid-stride loop's second lap. */
static void check_grid_stride(void)
{
    const size_t rows = ((size_t)65535 * 256) / 2 + 4099, kl = 4, p = 2;
    uint64_t *v = words(7, rows * kl);
    if (v == NULL)
        return;
    const struct veil_pool_tour_arg a = {.rows = rows, .kl = kl, .k = kl, .m = p, .s = 1};
    const struct buf b[2] = {{v, rows * kl}, {NULL, rows * p}};
    both(&veil_pool_diff_cl, "diff beyond the grid cap", b, 2, &a, sizeof a);
    free(v);
}

/* ---- pairwise picks ---------------------------------------------------------------------- */

/* The three pick shapes max_pairwise.c submits over rows of k: the pair differences (two terms,
 * one negated), a gather from four sources of different row lengths, and a row sum of k terms. */
static void check_pick(size_t rows, size_t k)
{
    const size_t np = k * (k - 1) / 2;
    const uint64_t tag = 5000 + 100 * (uint64_t)k + rows;
    uint64_t *v = words(tag, rows * k), *b = words(tag + 1, rows * np);
    uint64_t *nb = words(tag + 2, rows * np), *one = words(tag + 3, rows);
    static struct veil_pool_pick_arg a;
    char what[128];
    if (v != NULL && b != NULL && nb != NULL && one != NULL) {
        memset(&a, 0, sizeof a);
        a.rows = rows, a.per = 2, a.nsrc = 1, a.in_row[0] = k, a.out_row = np;
        size_t at = 0;
        for (size_t i = 0; i < k; i++)
            for (size_t j = i + 1; j < k; j++) {
                a.term[at++] = (struct veil_pool_pick_term){0, 0, (uint16_t)i};
                a.term[at++] = (struct veil_pool_pick_term){0, 1, (uint16_t)j};
            }
        snprintf(what, sizeof what, "pick differences rows %zu k %zu", rows, k);
        const struct buf bd[2] = {{v, rows * k}, {NULL, rows * np}};
        both(&veil_pool_pick_cl, what, bd, 2, &a, sizeof a);

        memset(&a, 0, sizeof a);
        a.rows = rows, a.per = 1, a.nsrc = 4;
        a.in_row[0] = np, a.in_row[1] = np, a.in_row[2] = k, a.in_row[3] = 1;
        at = 0;
        for (size_t i = 0; i < 2 * k && at + k <= VEIL_POOL_PICK_MAX; i++)
            for (size_t j = 0; j < k; j++) {
                const int src = j == k - 1 ? (i < k ? 2 : 3) : (int)((i + j) % 2);
                const size_t col = src == 2 ? i : src == 3 ? 0 : (i * 7 + j) % np;
                a.term[at++] = (struct veil_pool_pick_term){(uint8_t)src, 0, (uint16_t)col};
            }
        a.out_row = at;
        snprintf(what, sizeof what, "pick factors rows %zu k %zu", rows, k);
        const struct buf bf[5] = {
            {b, rows * np}, {nb, rows * np}, {v, rows * k}, {one, rows}, {NULL, rows * at}};
        both(&veil_pool_pick_cl, what, bf, 5, &a, sizeof a);

        memset(&a, 0, sizeof a);
        a.rows = rows, a.per = k, a.nsrc = 1, a.in_row[0] = k, a.out_row = 1;
        for (size_t i = 0; i < k; i++)
            a.term[i] = (struct veil_pool_pick_term){0, (uint8_t)(i % 3 == 2), (uint16_t)i};
        snprintf(what, sizeof what, "pick row sum rows %zu k %zu", rows, k);
        const struct buf bs[2] = {{v, rows * k}, {NULL, rows}};
        both(&veil_pool_pick_cl, what, bs, 2, &a, sizeof a);
    }
    free(v), free(b), free(nb), free(one);
}

/* ---- windows ---------------------------------------------------------------------------- */

static void check_windows(size_t batch, size_t c, size_t h, size_t w, size_t k, size_t stride)
{
    struct veil_pool_win_arg a = {.batch = batch, .c = c, .h = h, .w = w, .k = k, .stride = stride};
    a.oh = (h - k) / stride + 1;
    a.ow = (w - k) / stride + 1;
    const size_t image = batch * c * h * w, rows = batch * c * a.oh * a.ow, kk = k * k;
    const uint64_t tag = 5000 + image + 10 * k + stride;
    uint64_t *img = words(tag, image), *col = words(tag + 1, rows * kk);
    uint64_t *dy = words(tag + 2, rows);
    static const char *const name[VEIL_POOL_WIN_COUNT] = {"gather", "sum", "expand", "scatter"};
    for (int mode = 0; mode < VEIL_POOL_WIN_COUNT && img && col && dy; mode++) {
        struct buf b[2];
        switch (mode) {
        case VEIL_POOL_WIN_GATHER:
            b[0] = (struct buf){img, image}, b[1] = (struct buf){NULL, rows * kk};
            break;
        case VEIL_POOL_WIN_SUM:
            b[0] = (struct buf){img, image}, b[1] = (struct buf){NULL, rows};
            break;
        case VEIL_POOL_WIN_EXPAND:
            b[0] = (struct buf){dy, rows}, b[1] = (struct buf){NULL, rows * kk};
            break;
        default:
            b[0] = (struct buf){col, rows * kk}, b[1] = (struct buf){NULL, image};
            break;
        }
        a.mode = mode;
        char what[128];
        snprintf(what, sizeof what, "window %s (%zu, %zu, %zu, %zu) k %zu stride %zu", name[mode],
                 batch, c, h, w, k, stride);
        both(&veil_pool_win_cl, what, b, 2, &a, sizeof a);
    }
    free(img), free(col), free(dy);
}

int main(void)
{
    int rc = veil_test_starpu_start();
    if (rc != 0)
        return rc;
    if (starpu_cuda_worker_get_count() == 0) {
        veil_test_log("SKIP: no CUDA worker");
        veil_test_starpu_stop();
        return 77;
    }
    static const size_t lens[12] = {1, 31, 32, 33, 64, 255, 256, 257, 1000, 7, 4096, 65};
    static const int nins[] = {1, 2, 7, 12};
    for (size_t t = 0; t < sizeof nins / sizeof nins[0]; t++)
        check_concat(nins[t], lens);
    /* k: 2 x 2, 3 x 3 and 5 x 5 windows, odd counts at every level (7, 9, 33), a power of two */
    static const size_t ks[] = {2, 3, 4, 5, 7, 9, 16, 25, 33};
    static const size_t rows[] = {1, 3, 37, 129, 1031};
    for (size_t i = 0; i < sizeof ks / sizeof ks[0]; i++)
        for (size_t j = 0; j < sizeof rows / sizeof rows[0]; j++)
            check_tournament(rows[j], ks[i]);
    check_tournament(70001, 4);
    check_grid_stride();
    static const size_t pk[] = {3, 4, 5, 10};
    for (size_t i = 0; i < sizeof pk / sizeof pk[0]; i++)
        for (size_t j = 0; j < sizeof rows / sizeof rows[0]; j++)
            check_pick(rows[j], pk[i]);
    check_windows(1, 1, 2, 2, 2, 2);   /* one window */
    check_windows(2, 3, 8, 8, 2, 2);   /* tiled 2 x 2 */
    check_windows(2, 3, 5, 7, 2, 2);   /* last row / column of pixels in no window */
    check_windows(1, 2, 6, 6, 3, 1);   /* overlapping windows */
    check_windows(2, 1, 7, 5, 3, 2);   /* overlap and partial coverage */
    check_windows(1, 3, 9, 10, 2, 3);  /* gaps between windows */
    check_windows(1, 2, 4, 4, 1, 1);   /* k = 1 */
    check_windows(1, 1, 5, 5, 5, 1);   /* window = image */
    check_windows(3, 4, 28, 28, 2, 2); /* LeNet-sized */
    check_windows(4, 16, 33, 33, 3, 2);
    veil_test_starpu_stop();
    return veil_test_status();
}

#else /* !VEIL_USE_CUDA */

int main(void)
{
    veil_test_log("SKIP: built without VEIL_USE_CUDA (no CUDA-enabled StarPU)");
    return 77;
}

#endif

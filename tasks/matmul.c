/*
 * matmul.c — the secure matrix product with one MATMUL triple (contract and cost in beaver.h),
 * and its transposed variants through a local transpose of the shares. The local combination runs
 * as two GEMM tasks at every party, accumulated onto the correction part C: A E when E lands and D
 * B when D lands, party 0's D E folded into one of them (veil_mpc_fold_de), so neither product
 * waits for the other open. The same core serves the weight-stationary product (tasks/wstat.c),
 * which reuses an opened E.
 */
#include "config.h"
#include "tasks/beaver.h"

#include "base/base_internal.h"
#include "codelets/codelets_internal.h"
#include "tasks/beaver_internal.h"
#include "tasks/mpc_internal.h"

#include <string.h>

static int check_matrix(const char *op, const char *what, const struct veil_sec *x)
{
    if (!x)
        return veil_error(VEIL_ERR_INVAL, "%s: %s is NULL", op, what);
    if (x->kind != VEIL_SHARE_ARITH)
        return veil_error(VEIL_ERR_INVAL, "%s: %s holds binary shares; use arithmetic shares", op,
                          what);
    if (x->ndim != 2)
        return veil_error(VEIL_ERR_SHAPE, "%s: %s has %d dimensions; pass a 2-D matrix", op, what,
                          x->ndim);
    if (x->ntiles != 1)
        return veil_error(VEIL_ERR_SHAPE,
                          "%s: %s is split into %d tiles; create it with tile "
                          "SIZE_MAX (one handle)",
                          op, what, x->ntiles);
    return VEIL_OK;
}

static struct veil_bgemm_args gemm1(size_t a, size_t c, size_t b, int acc)
{
    struct veil_bgemm_args g = {.m = a, .n = c, .k = b, .accumulate = acc, .batch = 1};
    return g;
}

/* Parts i of n of [0, len): [len i / n, len (i + 1) / n). */
static size_t cut(size_t len, int i, int n)
{
    return len * (size_t)i / (size_t)n;
}

/*
 * The local products of a split placement (codelets_internal.h, struct veil_place): the a x c
 * result is cut into pr row blocks x pc column blocks x pk inner-dimension slices; block q computes
 * its D mb and ma E (at party 0 one of them folds D E in, veil_mpc_fold_de) over sub-blocks of the
 * same opened D, E and mask shares into its own temporaries, tagged q so that a spread placement
 * runs them on device q mod D; one block sum adds C and every part back into z. The same products
 * as the unsplit path, exactly.
 */
static int matmul_split(veil_mpc_t *m, const struct veil_sec *d, const struct veil_sec *e,
                        const struct veil_sec *ma, const struct veil_sec *mb,
                        const struct veil_sec *c_part, size_t a, size_t b, size_t c, int pr, int pc,
                        int pk, struct veil_sec *z)
{
    const int nblk = pr * pc * pk;
    struct veil_sec t[VEIL_BLOCK_MAX];
    starpu_data_handle_t parts[VEIL_BLOCK_MAX];
    struct veil_block_sum_args bs = {.B = 1, .R = a, .C = c, .nparts = 2 * nblk};
    int rc = VEIL_OK, q = 0;
    memset(t, 0, sizeof t);
    for (int i = 0; i < pr && rc == VEIL_OK; i++)
        for (int j = 0; j < pc && rc == VEIL_OK; j++)
            for (int l = 0; l < pk && rc == VEIL_OK; l++, q++) {
                const size_t r0 = cut(a, i, pr), r1 = cut(a, i + 1, pr);
                const size_t c0 = cut(c, j, pc), c1 = cut(c, j + 1, pc);
                const size_t k0 = cut(b, l, pk), k1 = cut(b, l + 1, pk);
                const size_t dims[2] = {r1 - r0, c1 - c0};
                if ((rc = veil_sec_init(m, &t[2 * q], VEIL_SHARE_ARITH, 2, dims, SIZE_MAX)) ||
                    (rc = veil_sec_init(m, &t[2 * q + 1], VEIL_SHARE_ARITH, 2, dims, SIZE_MAX)))
                    break;
                veil_place_tag(t[2 * q].h[0], q);
                veil_place_tag(t[2 * q + 1].h[0], q);
                struct veil_bgemm_args g = {.m = r1 - r0,
                                            .n = c1 - c0,
                                            .k = k1 - k0,
                                            .batch = 1,
                                            .oa = r0 * b + k0,
                                            .lda = b,
                                            .ob = k0 * c + c0,
                                            .ldb = c};
                const int prio = veil_mpc_priority(m);
                if ((rc = veil_task_bgemm(d->h[0], mb->h[0], t[2 * q].h[0], &g, prio)) ||
                    (rc = veil_task_bgemm(ma->h[0], e->h[0], t[2 * q + 1].h[0], &g, prio)))
                    break;
                for (int h = 0; h < 2; h++) {
                    parts[2 * q + h] = t[2 * q + h].h[0];
                    bs.blk[2 * q + h] = (struct veil_block){0, 1, r0, r1 - r0, c0, c1 - c0};
                }
            }
    if (rc == VEIL_OK)
        rc = veil_task_block_sum(c_part->h[0], parts, &bs, z->h[0], veil_mpc_priority(m));
    for (int i = 0; i < 2 * nblk; i++)
        veil_mpc_release(m, &t[i]);
    return rc;
}

/* The split of the calling thread's placement, clamped to the product's dimensions and to
 * VEIL_BLOCK_MAX / 2 blocks; 1 x 1 x 1 when there is none. */
void veil_mpc_product_split(size_t rows, size_t cols, size_t inner, int *pr, int *pc, int *pk)
{
    const struct veil_place *pl = veil_place_get();
    int r = pl->ndev > 0 && pl->rows > 1 ? pl->rows : 1;
    int c = pl->ndev > 0 && pl->cols > 1 ? pl->cols : 1;
    int k = pl->ndev > 0 && pl->inner > 1 ? pl->inner : 1;
    r = (size_t)r > rows ? (int)rows : r;
    c = (size_t)c > cols ? (int)cols : c;
    k = (size_t)k > inner ? (int)inner : k;
    while (r * c * k > VEIL_BLOCK_MAX / 2) {
        if (k > 1)
            k--;
        else if (c > 1)
            c--;
        else
            r--;
    }
    *pr = r;
    *pc = c;
    *pk = k;
}

int veil_mpc_matmul_beaver(veil_mpc_t *m, const struct veil_sec *x, const struct veil_sec *y,
                           const uint64_t *wid, struct veil_pub *e_keep, struct veil_sec *b_keep,
                           struct veil_sec *z)
{
    const size_t a = x->dims[0], b = x->dims[1], c = y->dims[1];
    const size_t zdims[2] = {a, c};
    struct veil_mpc_mat mat;
    memset(z, 0, sizeof *z);
    int rc = veil_mpc_ws_material(m,
                                  wid ? veil_preproc_item_matmul_ws(0, a, b, c, *wid)
                                      : veil_preproc_item_matmul(0, a, b, c),
                                  b_keep, &mat);
    if (rc != VEIL_OK)
        return rc;
    struct veil_sec d = {0}, e_tmp = {0}, de = {0}, ua = {0}, ub = {0};
    struct veil_pub *e = e_keep ? e_keep : &e_tmp;
    const int reuse = e->data != NULL; /* E = y - B of this B opened by an earlier call */
    int pr, pc, pk;
    veil_mpc_product_split(a, c, b, &pr, &pc, &pk);
    /* unsplit, a computing party's z is the correction part C (below); else allocated here */
    if (!veil_mpc_computes(m) || pr * pc * pk > 1) {
        rc = veil_sec_init(m, z, VEIL_SHARE_ARITH, 2, zdims, SIZE_MAX);
        if (rc != VEIL_OK || !veil_mpc_computes(m))
            goto out;
    }
    struct veil_sec ma = veil_mpc_part_view(&mat.part[VEIL_PRE_A], x);
    struct veil_sec mb = veil_mpc_part_view(&mat.part[VEIL_PRE_B], y);
    if ((rc = veil_mpc_open(m, x, &ma, &d)) != VEIL_OK ||
        (!reuse && (rc = veil_mpc_open(m, y, &mb, e)) != VEIL_OK))
        goto out;
    veil_mpc_round(m);
    if ((rc = veil_mpc_fold_de(m, &ma, d.h[0], &mb, e->h[0], &de, &ua, &ub)) != VEIL_OK)
        goto out;
    if (pr * pc * pk > 1) {
        rc = matmul_split(m, &d, e, &ua, &ub, &mat.part[VEIL_PRE_C], a, b, c, pr, pc, pk, z);
        goto out;
    }
    /* Every local term accumulates onto C, which then is z: A E first (E is often an earlier
     * call's, so it runs while D's open travels), then D B; party 0's D E rides on one of them
     * (veil_mpc_fold_de): two products at every party. No sum task; the same words (addition
     * mod 2^64). */
    const struct veil_bgemm_args acc = gemm1(a, c, b, 1);
    starpu_data_handle_t cz = mat.part[VEIL_PRE_C].h[0];
    if ((rc = veil_task_bgemm(ua.h[0], e->h[0], cz, &acc, veil_mpc_priority(m))) != VEIL_OK ||
        (rc = veil_task_bgemm(d.h[0], ub.h[0], cz, &acc, veil_mpc_priority(m))) != VEIL_OK)
        goto out;
    veil_mpc_part_adopt(&mat.part[VEIL_PRE_C], 2, zdims, z);
out:
    veil_mpc_release(m, &de);
    veil_mpc_release(m, &d);
    veil_mpc_release(m, &e_tmp);
    veil_mpc_ws_settle(&mat, b_keep, rc);
    veil_mpc_mat_release(m, &mat);
    return rc;
}

int veil_mpc_matmul_core(veil_mpc_t *m, const struct veil_sec *x, const struct veil_sec *y,
                         struct veil_sec *z)
{
    return veil_mpc_matmul_beaver(m, x, y, NULL, NULL, NULL, z);
}

int veil_mpc_matmul_check(const char *op, const struct veil_sec *x, const struct veil_sec *y,
                          const struct veil_sec *z)
{
    int rc;
    if ((rc = check_matrix(op, "x", x)) != VEIL_OK || (rc = check_matrix(op, "y", y)) != VEIL_OK)
        return rc;
    if (!z)
        return veil_error(VEIL_ERR_INVAL, "%s: z is NULL", op);
    if (x->dims[1] != y->dims[0])
        return veil_error(VEIL_ERR_SHAPE,
                          "%s: x is %zu x %zu but y is %zu x %zu; y needs %zu "
                          "rows",
                          op, x->dims[0], x->dims[1], y->dims[0], y->dims[1], x->dims[1]);
    return VEIL_OK;
}

int veil_mpc_matmul(veil_mpc_t *m, const struct veil_sec *x, const struct veil_sec *y,
                    struct veil_sec *z)
{
    int rc = veil_mpc_matmul_check("matmul", x, y, z);
    return rc != VEIL_OK ? rc : veil_mpc_matmul_core(m, x, y, z);
}

/* t = x^T (a local transpose of the shares), one handle. */
static int transpose(veil_mpc_t *m, const struct veil_sec *x, struct veil_sec *t)
{
    const size_t dims[2] = {x->dims[1], x->dims[0]};
    int rc = veil_sec_init(m, t, VEIL_SHARE_ARITH, 2, dims, SIZE_MAX);
    if (rc != VEIL_OK || !veil_mpc_computes(m))
        return rc;
    const size_t p[4] = {1, x->dims[0], x->dims[1], 1};
    return veil_task_swap_axes(x->h[0], t->h[0], p, veil_mpc_priority(m));
}

int veil_mpc_matmul_tn(veil_mpc_t *m, const struct veil_sec *x, const struct veil_sec *y,
                       struct veil_sec *z)
{
    int rc;
    if ((rc = check_matrix("matmul_tn", "x", x)) != VEIL_OK ||
        (rc = check_matrix("matmul_tn", "y", y)) != VEIL_OK)
        return rc;
    if (!z)
        return veil_error(VEIL_ERR_INVAL, "matmul_tn: z is NULL");
    if (x->dims[0] != y->dims[0])
        return veil_error(VEIL_ERR_SHAPE,
                          "matmul_tn: x^T is %zu x %zu but y is %zu x %zu; y "
                          "needs %zu rows",
                          x->dims[1], x->dims[0], y->dims[0], y->dims[1], x->dims[0]);
    struct veil_sec xt = {0};
    if ((rc = transpose(m, x, &xt)) == VEIL_OK)
        rc = veil_mpc_matmul_core(m, &xt, y, z);
    veil_mpc_release(m, &xt);
    return rc;
}

int veil_mpc_matmul_nt(veil_mpc_t *m, const struct veil_sec *x, const struct veil_sec *y,
                       struct veil_sec *z)
{
    int rc;
    if ((rc = check_matrix("matmul_nt", "x", x)) != VEIL_OK ||
        (rc = check_matrix("matmul_nt", "y", y)) != VEIL_OK)
        return rc;
    if (!z)
        return veil_error(VEIL_ERR_INVAL, "matmul_nt: z is NULL");
    if (x->dims[1] != y->dims[1])
        return veil_error(VEIL_ERR_SHAPE,
                          "matmul_nt: x is %zu x %zu but y^T is %zu x %zu; y "
                          "needs %zu columns",
                          x->dims[0], x->dims[1], y->dims[1], y->dims[0], x->dims[1]);
    struct veil_sec yt = {0};
    if ((rc = transpose(m, y, &yt)) == VEIL_OK)
        rc = veil_mpc_matmul_core(m, x, &yt, z);
    veil_mpc_release(m, &yt);
    return rc;
}

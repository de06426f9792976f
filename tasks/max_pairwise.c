/*
 * max_pairwise.c — the maximum (and one-hot argmax) over rows of k by every pairwise comparison
 * in one LTZ, then per candidate a product of its factors: tree levels while more than 5
 * remain, then one product of the last 2 to 5 in a single round (veil_mpc_prodk; protocol and
 * costs in pool.h). Its
 * rearrangements are row-wise picks (veil_pool_pick_cl: gathers, differences, row sums with
 * their patterns built here).
 */
#include "config.h"
#include "base/base_internal.h"
#include "tasks/beaver.h"
#include "tasks/compare.h"
#include "tasks/compare_internal.h"
#include "tasks/pool.h"
#include "tasks/pool_internal.h"
#include "tasks/prodk_common.h"

#include <string.h>

int veil_pool_pairwise_pays(size_t rows, size_t k)
{
    return k >= 3 && k <= VEIL_PAIRWISE_MAX_K && rows <= VEIL_PAIRWISE_MAX_PAIRS &&
           rows * (k * (k - 1) / 2) <= VEIL_PAIRWISE_MAX_PAIRS;
}

/* The rounds and bytes per party of rows of k candidates with `vgroups` value groups (k, or
 * k - 1 when the last candidate is the constant 0) and, with want_onehot, k one-hot groups. */
static void pairwise_cost(size_t rows, size_t k, size_t vgroups, int want_onehot, int nparties,
                          uint64_t *rounds, uint64_t *bytes)
{
    const uint64_t n = (uint64_t)rows * (k * (k - 1) / 2), N1 = (uint64_t)(nparties - 1);
    const size_t g = vgroups ? k : k - 1, groups = vgroups + (want_onehot ? k : 0);
    uint64_t words = n + VEIL_LTZ_BLOCK_WORDS * ((n + 63) / 64);
    size_t m = g;
    *rounds = VEIL_LTZ_ROUNDS;
    for (; m > VEIL_PRODK_MAX; m = (m + 1) / 2, ++*rounds) /* tree levels */
        words += 2 * (uint64_t)rows * groups * (m / 2);
    if (m >= VEIL_PRODK_MIN) { /* then one product of the last m factors per group */
        words += (uint64_t)rows * groups * m;
        ++*rounds;
    }
    *bytes = N1 * 8 * words;
}

void veil_pool_pairwise_cost(size_t rows, size_t k, int want_max, int want_onehot, int nparties,
                             uint64_t *rounds, uint64_t *bytes)
{
    pairwise_cost(rows, k, want_max ? k : 0, want_onehot, nparties, rounds, bytes);
}

void veil_pool_pairwise_relu_cost(size_t rows, size_t k, int nparties, uint64_t *rounds,
                                  uint64_t *bytes)
{
    pairwise_cost(rows, k + 1, k, 0, nparties, rounds, bytes);
}

/* out (rows x nterms / per, new single handle) = the pick a of nterms terms over the sources
 * (single handles of rows rows: their row lengths come from their sizes). */
static int pick(veil_mpc_t *m, struct veil_pool_pick_arg *a, size_t nterms,
                const struct veil_sec *const *src, struct veil_sec *out)
{
    if (nterms > VEIL_POOL_PICK_MAX || a->nsrc > VEIL_POOL_PICK_SRC)
        return veil_error(VEIL_ERR_INVAL,
                          "max (pairwise): a pick of %zu terms from %d sources "
                          "(at most %d and %d)",
                          nterms, a->nsrc, VEIL_POOL_PICK_MAX, VEIL_POOL_PICK_SRC);
    a->out_row = nterms / a->per;
    for (int s = 0; s < a->nsrc; s++)
        a->in_row[s] = src[s]->numel / a->rows;
    const size_t dims[1] = {a->rows * a->out_row};
    int rc = veil_sec_init(m, out, VEIL_SHARE_ARITH, 1, dims, SIZE_MAX);
    if (rc != VEIL_OK || !veil_mpc_computes(m))
        return rc;
    starpu_data_handle_t h[VEIL_POOL_PICK_SRC + 1];
    enum starpu_data_access_mode md[VEIL_POOL_PICK_SRC + 1];
    for (int s = 0; s < a->nsrc; s++) {
        h[s] = src[s]->h[0];
        md[s] = STARPU_R;
    }
    h[a->nsrc] = out->h[0];
    md[a->nsrc] = STARPU_W;
    return veil_cmp_submit(m, &veil_pool_pick_cl, "max", h, md, a->nsrc + 1, a, sizeof *a);
}

/* An empty pick over nsrc sources of rows rows, `per` terms per output word. */
static void pick_init(struct veil_pool_pick_arg *a, size_t rows, size_t per, int nsrc)
{
    memset(a, 0, sizeof *a);
    a->rows = rows;
    a->per = per;
    a->nsrc = nsrc;
}

/* Term `at` of a pick; one beyond VEIL_POOL_PICK_MAX is dropped (pick() then refuses the pick). */
static void term(struct veil_pool_pick_arg *a, size_t at, int src, int neg, size_t col)
{
    if (at >= VEIL_POOL_PICK_MAX)
        return;
    a->term[at] = (struct veil_pool_pick_term){
        .src = (uint8_t)src, .neg = (uint8_t)neg, .col = (uint16_t)col};
}

/* The index of pair (i, j), i < j, in the row-major list of pairs of k candidates. */
static size_t pair_index(size_t k, size_t i, size_t j)
{
    return i * k - i * (i + 1) / 2 + (j - i - 1);
}

/*
 * The factors of each candidate i: [v_i >= v_j] for j > i (1 - b), [v_j < v_i] for j < i (b),
 * so that exactly the first maximum keeps every factor 1; then v_i for a value group, the
 * constant 1 for a one-hot group padded to the value groups' length. With zero_last the last
 * candidate is the constant 0 and has no value group (its product would be 0).
 */
static size_t factor_pattern(struct veil_pool_pick_arg *a, size_t rows, size_t k, int want_max,
                             int want_onehot, int zero_last)
{
    /* sources: b = [v_i < v_j], nb = 1 - b (rows of k (k - 1) / 2), v (rows of k), the constant 1
     */
    pick_init(a, rows, 1, want_max && want_onehot ? 4 : 3);
    size_t at = 0;
    for (int kind = 0; kind < 2; kind++) {
        if ((kind == 0 && !want_max) || (kind == 1 && !want_onehot))
            continue;
        for (size_t i = 0; i < (kind == 0 && zero_last ? k - 1 : k); i++) {
            for (size_t j = 0; j < k; j++)
                if (j != i)
                    term(a, at++, j > i ? 1 : 0, 0,
                         j > i ? pair_index(k, i, j) : pair_index(k, j, i));
            if (kind == 0)
                term(a, at++, 2, 0, i);
            else if (want_max)
                term(a, at++, 3, 0, 0);
        }
    }
    return at;
}

/* veil_pool_pairwise; zero_last (max alone): the last candidate of each row is the constant 0,
 * whose value group is left out (max sums the k - 1 others). */
static int pairwise(veil_mpc_t *m, const struct veil_sec *in, const struct veil_sec *cmp,
                    size_t rows, size_t k, struct veil_sec *max, struct veil_sec *onehot,
                    int zero_last)
{
    if (k < 2 || k > VEIL_PAIRWISE_MAX_K)
        return veil_error(VEIL_ERR_INVAL, "max (pairwise): rows of %zu; use 2 to %d", k,
                          VEIL_PAIRWISE_MAX_K);
    const int want_max = max != NULL, want_onehot = onehot != NULL;
    const size_t g = want_max ? k : k - 1, vgroups = want_max ? k - (zero_last ? 1 : 0) : 0;
    const size_t groups = vgroups + (want_onehot ? k : 0);
    struct veil_pool_pick_arg a; /* about 1 KB of terms, copied by each submission */
    struct veil_sec d = {0}, b = {0}, neg = {0}, nb = {0}, zero = {0}, one = {0}, f = {0};
    int rc = VEIL_OK;

    /* d[r, pair (i, j)] = v_i - v_j; b = [d < 0] = [v_i < v_j]; nb = 1 - b */
    pick_init(&a, rows, 2, 1);
    size_t at = 0;
    for (size_t i = 0; i < k; i++)
        for (size_t j = i + 1; j < k; j++) {
            term(&a, at++, 0, 0, i);
            term(&a, at++, 0, 1, j);
        }
    const struct veil_sec *src[VEIL_POOL_PICK_SRC] = {cmp ? cmp : in};
    rc = pick(m, &a, at, src, &d);
    if (rc == VEIL_OK)
        rc = veil_mpc_ltz(m, &d, &b);
    if (rc == VEIL_OK)
        rc = veil_mpc_mul_scalar(m, &b, (uint64_t)-1, &neg);
    if (rc == VEIL_OK)
        rc = veil_mpc_add_scalar(m, &neg, 1, &nb);
    if (rc == VEIL_OK && want_max && want_onehot) {
        const size_t dims[1] = {rows};
        if ((rc = veil_sec_init(m, &zero, VEIL_SHARE_ARITH, 1, dims, SIZE_MAX)) == VEIL_OK)
            rc = veil_mpc_add_scalar(m, &zero, 1, &one);
    }
    /* F: rows x groups x g factors */
    if (rc == VEIL_OK) {
        const size_t nf = factor_pattern(&a, rows, k, want_max, want_onehot, zero_last);
        const struct veil_sec *fs[VEIL_POOL_PICK_SRC] = {&b, &nb, in, &one};
        rc = pick(m, &a, nf, fs, &f);
    }
    /* the product tree while a group has more than 5 factors: each level multiplies factor 2t
     * by factor 2t + 1 of every group (one Beaver product, one round); an odd last factor passes
     * to the next level */
    size_t mw = g;
    for (; mw > VEIL_PRODK_MAX && rc == VEIL_OK; mw = (mw + 1) / 2) {
        const size_t h = mw / 2, odd = mw % 2;
        struct veil_sec x = {0}, y = {0}, z = {0}, next = {0};
        for (int side = 0; side < 2 && rc == VEIL_OK; side++) {
            pick_init(&a, rows, 1, 1);
            at = 0;
            for (size_t q = 0; q < groups; q++)
                for (size_t t = 0; t < h; t++)
                    term(&a, at++, 0, 0, q * mw + 2 * t + (size_t)side);
            const struct veil_sec *fs[VEIL_POOL_PICK_SRC] = {&f};
            rc = pick(m, &a, at, fs, side ? &y : &x);
        }
        if (rc == VEIL_OK)
            rc = veil_mpc_mul(m, &x, &y, &z);
        if (rc == VEIL_OK && odd) {
            pick_init(&a, rows, 1, 2);
            at = 0;
            for (size_t q = 0; q < groups; q++) {
                for (size_t t = 0; t < h; t++)
                    term(&a, at++, 0, 0, q * h + t);
                term(&a, at++, 1, 0, q * mw + mw - 1);
            }
            const struct veil_sec *fs[VEIL_POOL_PICK_SRC] = {&z, &f};
            rc = pick(m, &a, at, fs, &next);
            veil_mpc_release(m, &z);
        } else {
            next = z;
        }
        veil_mpc_release(m, &x);
        veil_mpc_release(m, &y);
        veil_mpc_release(m, &f);
        f = next;
    }
    /* then the product of each group's last 2 to 5 factors in one round (prodk_common.h) */
    if (rc == VEIL_OK && mw >= VEIL_PRODK_MIN) {
        struct veil_sec z = {0};
        rc = veil_mpc_prodk(m, &f, (int)mw, &z);
        veil_mpc_release(m, &f);
        f = z;
    }
    /* f: rows x groups products: v_i [i wins] for the value groups, [i wins] for the others */
    if (rc == VEIL_OK && want_max) {
        pick_init(&a, rows, vgroups, 1);
        for (size_t i = 0; i < vgroups; i++)
            term(&a, i, 0, 0, i);
        const struct veil_sec *fs[VEIL_POOL_PICK_SRC] = {&f};
        rc = pick(m, &a, vgroups, fs, max);
    }
    if (rc == VEIL_OK && want_onehot) {
        if (want_max) {
            pick_init(&a, rows, 1, 1);
            for (size_t i = 0; i < k; i++)
                term(&a, i, 0, 0, vgroups + i);
            const struct veil_sec *fs[VEIL_POOL_PICK_SRC] = {&f};
            rc = pick(m, &a, k, fs, onehot);
        } else {
            *onehot = f;
            memset(&f, 0, sizeof f);
        }
    }
    struct veil_sec *tmp[] = {&d, &b, &neg, &nb, &zero, &one, &f};
    for (size_t i = 0; i < sizeof tmp / sizeof tmp[0]; i++)
        veil_mpc_release(m, tmp[i]);
    if (rc != VEIL_OK) {
        if (max)
            veil_mpc_release(m, max);
        if (onehot)
            veil_mpc_release(m, onehot);
    }
    return rc;
}

int veil_pool_pairwise(veil_mpc_t *m, const struct veil_sec *in, const struct veil_sec *cmp,
                       size_t rows, size_t k, struct veil_sec *max, struct veil_sec *onehot)
{
    return pairwise(m, in, cmp, rows, k, max, onehot, 0);
}

/* *out = in (rows x k) with a column of 0 appended (a zero tensor is a sharing of 0). */
static int append_zero(veil_mpc_t *m, const struct veil_sec *in, size_t rows, size_t k,
                       struct veil_sec *out)
{
    struct veil_pool_pick_arg a;
    pick_init(&a, rows, 1, 2);
    for (size_t i = 0; i <= k; i++)
        term(&a, i, i < k ? 0 : 1, 0, i < k ? i : 0);
    struct veil_sec zero = {0};
    const size_t dims[1] = {rows};
    int rc = veil_sec_init(m, &zero, VEIL_SHARE_ARITH, 1, dims, SIZE_MAX);
    if (rc == VEIL_OK) {
        const struct veil_sec *src[VEIL_POOL_PICK_SRC] = {in, &zero};
        rc = pick(m, &a, k + 1, src, out);
    }
    veil_mpc_release(m, &zero);
    return rc;
}

int veil_pool_pairwise_relu(veil_mpc_t *m, const struct veil_sec *in, const struct veil_sec *cmp,
                            size_t rows, size_t k, struct veil_sec *max)
{
    if (k + 1 > VEIL_PAIRWISE_MAX_K)
        return veil_error(VEIL_ERR_INVAL,
                          "max (pairwise, with ReLU): rows of %zu and 0; use at "
                          "most %d candidates",
                          k, VEIL_PAIRWISE_MAX_K);
    struct veil_sec in0 = {0}, cmp0 = {0};
    int rc = append_zero(m, in, rows, k, &in0);
    if (rc == VEIL_OK && cmp)
        rc = append_zero(m, cmp, rows, k, &cmp0);
    if (rc == VEIL_OK)
        rc = pairwise(m, &in0, cmp ? &cmp0 : NULL, rows, k + 1, max, NULL, 1);
    veil_mpc_release(m, &in0);
    veil_mpc_release(m, &cmp0);
    return rc;
}

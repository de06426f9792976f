/* Tests the CUDA bodies of the comparison family's local codelets (tasks/cuda/compare.cu) against
 * their CPU bodies bit for bit, and both against plaintext oracles: the LTZ leaves with their
 * level-0 groups (party 0 and the others, the 3-member last group, partial last blocks, sizes
 * around the 32-block tiles of the kernel; with the true CMPPROD products against the ripple
 * carry of each group), the gather and group steps of levels 1 and 2 (the G-only last level) on
 * random states and records, the whole carry circuit chained on each architecture (leaves, two
 * levels with the masks, their products and the opened records made here) against bit 63 of
 * c + r, the one-round product of 2 to 5 factors (random and true mask products; against the
 * product in the clear), the AND-triple finish, the ReLU finish, the truncation inside the ReLU
 * (veil_mpc_relu_trunc: f = 1, 16, 62, against its linear formula written out) and the
 * B2A mask (offsets, full and partial last words) and finish, for party 0 and the others, on
 * sizes around warp and block boundaries with the ring edge values mixed in. Each task runs on a
 * copy of the codelet restricted to one architecture (where = STARPU_CUDA, then STARPU_CPU), with
 * the argument block passed raw as veil_cmp_submit does. Skips (77) when Veil was built without
 * VEIL_USE_CUDA or StarPU finds no CUDA worker. */
#include "config.h"

#include "tasks/carry4_common.h"
#include "tasks/compare_common.h"
#include "tasks/compare_internal.h"
#include "tasks/prodk_common.h"
#include "tasks/trunc_common.h"
#include "test_cmp_oracle.h"
#include "test_util.h"

#include <stdlib.h>
#include <string.h>

#ifdef VEIL_USE_CUDA

#define MAXBUF 8

/* A vector buffer of a task: n words at p. */
struct vbuf {
    uint64_t *p;
    size_t n;
};

/* Runs one task of a copy of orig restricted to where over v[0..nv) (the codelet's modes), with
 * the argument block handed over raw (not freed). Waits for it. */
static void run(const struct starpu_codelet *orig, uint32_t where, const struct vbuf *v, int nv,
                const void *arg, size_t arg_size)
{
    struct starpu_codelet cl = *orig;
    struct starpu_data_descr descr[MAXBUF];
    cl.where = where;
    cl.model = NULL;
    for (int i = 0; i < nv; i++) {
        starpu_vector_data_register(&descr[i].handle, STARPU_MAIN_RAM, (uintptr_t)v[i].p, v[i].n,
                                    sizeof(uint64_t));
        descr[i].mode = orig->modes[i];
    }
    int rc = starpu_task_insert(&cl, STARPU_DATA_MODE_ARRAY, descr, nv, STARPU_CL_ARGS_NFREE,
                                (void *)arg, arg_size, 0);
    VT_CHECK(rc == 0, "task %s on %s: submit %d", orig->name, where == STARPU_CUDA ? "CUDA" : "CPU",
             rc);
    starpu_task_wait_for_all();
    for (int i = 0; i < nv; i++)
        starpu_data_unregister(descr[i].handle);
}

/* Runs cl on CUDA, then on CPU, and compares every buffer it writes bit for bit. The outputs are
 * filled with different patterns before each run, so a word either body leaves unwritten shows
 * up. Afterwards the written buffers hold the CPU results. */
static void both(const struct starpu_codelet *cl, const char *what, const struct vbuf *v, int nv,
                 const void *arg, size_t arg_size)
{
    uint64_t *saved[MAXBUF] = {0};
    for (int i = 0; i < nv; i++)
        if (cl->modes[i] & STARPU_W) {
            saved[i] = malloc(v[i].n * sizeof(uint64_t));
            if (saved[i] == NULL) {
                VT_CHECK(0, "out of memory");
                goto done;
            }
            memset(v[i].p, 0xa5, v[i].n * sizeof(uint64_t));
        }
    run(cl, STARPU_CUDA, v, nv, arg, arg_size);
    for (int i = 0; i < nv; i++)
        if (saved[i]) {
            memcpy(saved[i], v[i].p, v[i].n * sizeof(uint64_t));
            memset(v[i].p, 0x5a, v[i].n * sizeof(uint64_t));
        }
    run(cl, STARPU_CPU, v, nv, arg, arg_size);
    for (int i = 0; i < nv; i++)
        if (saved[i]) {
            char label[160];
            snprintf(label, sizeof label, "%s: buffer %d CUDA vs CPU", what, i);
            veil_test_compare_u64(label, saved[i], v[i].p, v[i].n);
        }
done:
    for (int i = 0; i < nv; i++)
        free(saved[i]);
}

/* n random words from tag with the ring edge values in front (a and b paired: every pair). */
static uint64_t *words(uint64_t tag, size_t n, uint64_t *pair)
{
    uint64_t *p = malloc((n ? n : 1) * sizeof(uint64_t));
    if (p == NULL) {
        VT_CHECK(0, "out of memory");
        return NULL;
    }
    veil_test_random(tag, p, n);
    if (pair)
        veil_test_mix_edges(p, pair, n);
    return p;
}

/* ---- the carry circuit ---------------------------------------------------------------- */

/* Plaintext sliced words: word i of block b has bit j = bit i of element 64 b + j (0 past n). */
static uint64_t sliced_word(const uint64_t *a, size_t n, size_t b, unsigned i)
{
    uint64_t w = 0;
    for (unsigned j = 0; j < 64; j++) {
        size_t e = 64 * b + j;
        if (e < n)
            w |= ((a[e] >> i) & 1) << j;
    }
    return w;
}

/* The CMPPROD words of nb blocks of r (n elements) as the dealer makes them. */
static void leaf_products(const uint64_t *r, size_t n, size_t nb, uint64_t *pr)
{
    uint64_t rt[64];
    for (size_t b = 0; b < nb; b++) {
        for (unsigned i = 0; i < 64; i++)
            rt[i] = sliced_word(r, n, b, i);
        veil_test_leaf_products(rt, pr + b * VEIL_C4_LEAF_WORDS);
    }
}

/* Level 1's state in the clear (one party holding c, r and the true products): G and P of each
 * level-0 group by the ripple rule, and top = c_63 ^ r_63. */
static void leaf_oracle(const uint64_t *c, const uint64_t *r, size_t n, size_t nb, uint64_t *st,
                        uint64_t *top)
{
    for (size_t b = 0; b < nb; b++) {
        for (unsigned j = 0; j < VEIL_C4_LEAF_GROUPS; j++) {
            uint64_t g = 0, p = ~UINT64_C(0);
            for (unsigned q = 4 * j; q < 4 * j + 4 && q < VEIL_CMP_LEAVES; q++) {
                const uint64_t cw = sliced_word(c, n, b, q), rw = sliced_word(r, n, b, q);
                g = (cw & rw) | ((cw ^ rw) & g);
                p &= cw ^ rw;
            }
            st[(size_t)j * nb + b] = g;
            st[((size_t)VEIL_C4_LEAF_GROUPS + j) * nb + b] = p;
        }
        top[b] = sliced_word(c, n, b, 63) ^ sliced_word(r, n, b, 63);
    }
}

/* The products of masks a (nrec records of 7) as the dealer makes them. */
static void products(const uint64_t *a, size_t nrec, uint64_t *pr)
{
    static const uint8_t sets[VEIL_C4_PRODS] = VEIL_C4_PROD_SETS;
    for (size_t w = 0; w < nrec; w++)
        for (int r = 0; r < VEIL_C4_PRODS; r++) {
            uint64_t v = ~UINT64_C(0);
            for (int i = 0; i < VEIL_C4_INPUTS; i++)
                if (sets[r] >> i & 1)
                    v &= a[w * VEIL_C4_INPUTS + (size_t)i];
            pr[w * VEIL_C4_PRODS + (size_t)r] = v;
        }
}

/*
 * The leaves and level-0 groups of n elements for party0 = 0 (random product words) and 1
 * (CUDA vs CPU, and with the true products against the ripple oracle), then, with the whole mask
 * r held by "party 0", levels 1 and 2 chained with random masks a, their products and
 * e = records ^ a computed here: the carry into bit 63 XOR top is bit 63 of c + r, which checks
 * gather and group of every level on real states.
 */
static void check_circuit(size_t n)
{
    const size_t nb = (n + 63) / 64, nst = 2 * (size_t)VEIL_CMP_LEAVES * nb;
    const size_t nrec = 4 * nb; /* records of the widest level with an open (level 1) */
    const size_t nst1 = 2 * (size_t)VEIL_C4_LEAF_GROUPS * nb, nlp = VEIL_C4_LEAF_WORDS * nb;
    uint64_t *r = words(100 + n, n, NULL), *c = words(200 + n, n, r);
    uint64_t *lp = words(150 + n, nlp, NULL);
    uint64_t *st = malloc(nst * 8), *top = malloc(nb * 8), *want = malloc(nst * 8);
    uint64_t *wtop = malloc(nb * 8), *next = malloc(nst * 8);
    uint64_t *rec = malloc(nrec * VEIL_C4_INPUTS * 8), *e = malloc(nrec * VEIL_C4_INPUTS * 8);
    uint64_t *a = words(250 + n, nrec * VEIL_C4_INPUTS, NULL);
    uint64_t *pr = malloc(nrec * VEIL_C4_PRODS * 8);
    char what[96];
    if (!r || !c || !lp || !st || !top || !want || !wtop || !next || !rec || !e || !a || !pr) {
        VT_CHECK(0, "out of memory");
        goto done;
    }
    /* the other parties' form on random product words, then party 0 holding everything */
    const struct veil_cmp_party_arg other = {.party0 = 0}, first = {.party0 = 1};
    const struct vbuf leafv[5] = {{c, n}, {r, n}, {lp, nlp}, {st, nst1}, {top, nb}};
    snprintf(what, sizeof what, "leaf n=%zu party0=0", n);
    both(&veil_cmp_leaf_cl, what, leafv, 5, &other, sizeof other);
    leaf_products(r, n, nb, lp);
    snprintf(what, sizeof what, "leaf n=%zu party0=1", n);
    both(&veil_cmp_leaf_cl, what, leafv, 5, &first, sizeof first);
    leaf_oracle(c, r, n, nb, want, wtop);
    veil_test_compare_u64(what, st, want, nst1);
    veil_test_compare_u64(what, top, wtop, nb);
    products(a, nrec, pr);
    /* st, top: party 0's level-1 state (the last run) */
    for (int l = 1; l < VEIL_CMP_LEVELS; l++) {
        const struct veil_cmp_level lv = veil_cmp_level_of(l);
        const struct veil_cmp_level_arg arg = {.l = l, .party0 = 1};
        const size_t nin = 2 * (size_t)lv.k * nb, nr = (size_t)lv.knext * nb;
        const size_t nout = (size_t)veil_cmp_next_rows(&lv) * nb;
        const struct vbuf gv[2] = {{st, nin}, {rec, nr * VEIL_C4_INPUTS}};
        snprintf(what, sizeof what, "gather l=%d nb=%zu (chain)", l, nb);
        both(&veil_cmp_gather_cl, what, gv, 2, &arg, sizeof arg);
        for (size_t i = 0; i < nr * VEIL_C4_INPUTS; i++)
            e[i] = rec[i] ^ a[i];
        const struct vbuf cv[5] = {{e, nr * VEIL_C4_INPUTS},
                                   {a, nr * VEIL_C4_INPUTS},
                                   {pr, nr * VEIL_C4_PRODS},
                                   {st, nin},
                                   {next, nout}};
        snprintf(what, sizeof what, "group l=%d nb=%zu (chain)", l, nb);
        both(&veil_cmp_group_cl, what, cv, 5, &arg, sizeof arg);
        memcpy(st, next, nout * 8);
    }
    VT_CHECK(veil_cmp_level_of(VEIL_CMP_LEVELS).k == 1, "the circuit ends with one group");
    for (size_t el = 0; el < 64 * nb; el++) {
        uint64_t got = ((top[el / 64] ^ st[el / 64]) >> (el % 64)) & 1;
        uint64_t exp = el < n ? (c[el] + r[el]) >> 63 : 0;
        if (got != exp) {
            VT_CHECK(0, "circuit n=%zu: element %zu msb %llu, want %llu", n, el,
                     (unsigned long long)got, (unsigned long long)exp);
            break;
        }
    }
done:
    free(r), free(c), free(lp), free(st), free(top), free(want), free(wtop);
    free(next), free(rec), free(e), free(a), free(pr);
}

/* gather and group of every level, both parties' forms, on random states, records and parts of
 * nb blocks. */
static void check_levels(size_t nb)
{
    const size_t nst = 2 * (size_t)VEIL_CMP_LEAVES * nb, nrec = 16 * nb;
    uint64_t *st = words(300 + nb, nst, NULL), *e = words(400 + nb, nrec * VEIL_C4_INPUTS, NULL);
    uint64_t *a = words(410 + nb, nrec * VEIL_C4_INPUTS, NULL);
    uint64_t *pr = words(420 + nb, nrec * VEIL_C4_PRODS, NULL);
    uint64_t *rec = malloc(nrec * VEIL_C4_INPUTS * 8), *out = malloc(nst * 8);
    char what[96];
    if (!st || !e || !a || !pr || !rec || !out) {
        VT_CHECK(0, "out of memory");
        goto done;
    }
    for (int party0 = 0; party0 <= 1; party0++)
        for (int l = 1; l < VEIL_CMP_LEVELS; l++) {
            const struct veil_cmp_level lv = veil_cmp_level_of(l);
            const struct veil_cmp_level_arg arg = {.l = l, .party0 = party0};
            const size_t nin = 2 * (size_t)lv.k * nb, nr = (size_t)lv.knext * nb;
            const size_t nout = (size_t)veil_cmp_next_rows(&lv) * nb;
            const struct vbuf gv[2] = {{st, nin}, {rec, nr * VEIL_C4_INPUTS}};
            snprintf(what, sizeof what, "gather l=%d nb=%zu party0=%d", l, nb, party0);
            both(&veil_cmp_gather_cl, what, gv, 2, &arg, sizeof arg);
            const struct vbuf cv[5] = {{e, nr * VEIL_C4_INPUTS},
                                       {a, nr * VEIL_C4_INPUTS},
                                       {pr, nr * VEIL_C4_PRODS},
                                       {st, nin},
                                       {out, nout}};
            snprintf(what, sizeof what, "group l=%d nb=%zu party0=%d", l, nb, party0);
            both(&veil_cmp_group_cl, what, cv, 5, &arg, sizeof arg);
        }
done:
    free(st), free(e), free(a), free(pr), free(rec), free(out);
}

/* ---- AND finish, ReLU finish, B2A ------------------------------------------------------ */

/* The one-round product of k factors (veil_prodk_cl) on n random records, k = 2..5, both
 * parties' forms; with the true mask products and party 0 holding everything, against the
 * product of e + a in the clear. */
static void check_prodk(size_t n)
{
    for (int k = VEIL_PRODK_MIN; k <= VEIL_PRODK_MAX; k++) {
        const size_t kn = (size_t)k * n, np = (size_t)veil_prodk_nprods(k) * n;
        uint64_t *e = words(600 + n + (size_t)k, kn, NULL), *a = words(610 + n + (size_t)k, kn, e);
        uint64_t *pr = words(620 + n, np, NULL), *z = malloc(n * 8);
        char what[96];
        if (!e || !a || !pr || !z) {
            VT_CHECK(0, "out of memory");
            free(e), free(a), free(pr), free(z);
            return;
        }
        const struct vbuf v[4] = {{e, kn}, {a, kn}, {pr, np}, {z, n}};
        struct veil_prodk_arg arg = {.k = k, .party0 = 0};
        snprintf(what, sizeof what, "prodk k=%d n=%zu party0=0", k, n);
        both(&veil_prodk_cl, what, v, 4, &arg, sizeof arg);
        for (size_t w = 0; w < n; w++) /* the dealer's products of the masks */
            for (unsigned t = 3; t < (1u << k); t++)
                if (t & (t - 1)) {
                    uint64_t p = 1;
                    for (int i = 0; i < k; i++)
                        if (t >> i & 1)
                            p *= a[w * (size_t)k + (size_t)i];
                    pr[w * (size_t)veil_prodk_nprods(k) + (size_t)veil_prodk_row(t)] = p;
                }
        arg.party0 = 1;
        snprintf(what, sizeof what, "prodk k=%d n=%zu party0=1", k, n);
        both(&veil_prodk_cl, what, v, 4, &arg, sizeof arg);
        for (size_t w = 0; w < n; w++) {
            uint64_t want = 1;
            for (int i = 0; i < k; i++)
                want *= e[w * (size_t)k + (size_t)i] + a[w * (size_t)k + (size_t)i];
            if (z[w] != want) {
                VT_CHECK(0, "%s: record %zu", what, w);
                break;
            }
        }
        free(e), free(a), free(pr), free(z);
    }
}

static void check_and(size_t n)
{
    uint64_t *d = words(500 + n, n, NULL), *e = words(510 + n, n, d);
    uint64_t *a = words(520 + n, n, NULL), *b = words(530 + n, n, a);
    uint64_t *c = words(540 + n, n, NULL), *z = malloc(n * 8), *want = malloc(n * 8);
    char what[96];
    if (!d || !e || !a || !b || !c || !z || !want) {
        VT_CHECK(0, "out of memory");
        goto done;
    }
    for (int party0 = 0; party0 <= 1; party0++) {
        const struct veil_cmp_party_arg arg = {.party0 = party0};
        const struct vbuf v[6] = {{d, n}, {e, n}, {a, n}, {b, n}, {c, n}, {z, n}};
        snprintf(what, sizeof what, "and_finish n=%zu party0=%d", n, party0);
        both(&veil_and_finish_cl, what, v, 6, &arg, sizeof arg);
        for (size_t i = 0; i < n; i++)
            want[i] = c[i] ^ (d[i] & b[i]) ^ (e[i] & a[i]) ^ (party0 ? d[i] & e[i] : 0);
        veil_test_compare_u64(what, z, want, n);
    }
done:
    free(d), free(e), free(a), free(b), free(c), free(z), free(want);
}

static void check_relu(size_t n)
{
    const size_t nf = (n + 63) / 64;
    uint64_t *f = words(600 + n, nf, NULL), *beta = words(610 + n, n, NULL);
    uint64_t *w = words(620 + n, n, NULL), *x = words(630 + n, n, w);
    uint64_t *y = malloc(n * 8), *mask = malloc(n * 8), *wy = malloc(n * 8), *wm = malloc(n * 8);
    char what[96];
    if (!f || !beta || !w || !x || !y || !mask || !wy || !wm) {
        VT_CHECK(0, "out of memory");
        goto done;
    }
    for (int party0 = 0; party0 <= 1; party0++) {
        const struct veil_cmp_party_arg arg = {.party0 = party0};
        const struct vbuf v[6] = {{f, nf}, {beta, n}, {w, n}, {x, n}, {y, n}, {mask, n}};
        snprintf(what, sizeof what, "relu_fin n=%zu party0=%d", n, party0);
        both(&veil_relu_fin_cl, what, v, 6, &arg, sizeof arg);
        for (size_t i = 0; i < n; i++) {
            int fi = (int)((f[i / 64] >> (i % 64)) & 1);
            wy[i] = fi ? w[i] : x[i] - w[i];
            wm[i] = fi ? beta[i] : (uint64_t)party0 - beta[i];
        }
        veil_test_compare_u64(what, y, wy, n);
        veil_test_compare_u64(what, mask, wm, n);
    }
done:
    free(f), free(beta), free(w), free(x), free(y), free(mask), free(wy), free(wm);
}

/* The truncation inside a ReLU: z and z beta from c and the CMPTRUNC / CMPMASK / BIT words, on
 * random words with the ring edge values in c (the top bits of c + 2^62 decide the wrap term). */
static void check_relu_trunc(size_t n)
{
    uint64_t *c = words(800 + n, n, NULL), *rhi = words(810 + n, n, c),
             *r63 = words(820 + n, n, NULL);
    uint64_t *beta = words(830 + n, n, NULL), *rhib = words(840 + n, n, NULL);
    uint64_t *r63b = words(850 + n, n, NULL), *z = malloc(n * 8), *zb = malloc(n * 8);
    uint64_t *wz = malloc(n * 8), *wzb = malloc(n * 8);
    char what[96];
    if (!c || !rhi || !r63 || !beta || !rhib || !r63b || !z || !zb || !wz || !wzb) {
        VT_CHECK(0, "out of memory");
        goto done;
    }
    static const int shifts[] = {1, 16, 62};
    for (int party0 = 0; party0 <= 1; party0++)
        for (size_t t = 0; t < sizeof shifts / sizeof shifts[0]; t++) {
            const int f = shifts[t];
            const struct veil_relu_trunc_arg arg = {.party0 = party0, .f = f};
            const struct vbuf v[8] = {{c, n},    {rhi, n},  {r63, n}, {beta, n},
                                      {rhib, n}, {r63b, n}, {z, n},   {zb, n}};
            snprintf(what, sizeof what, "relu_trunc n=%zu f=%d party0=%d", n, f, party0);
            both(&veil_relu_trunc_cl, what, v, 8, &arg, sizeof arg);
            for (size_t i = 0; i < n; i++) {
                const uint64_t cp = c[i] + (UINT64_C(1) << 62), top = cp >> 63;
                const uint64_t a = (cp >> f) + 1 - (UINT64_C(1) << (62 - f)) - (top << (64 - f));
                const uint64_t k = top ? 0 : UINT64_C(1) << (64 - f);
                wz[i] = (party0 ? a : 0) + rhi[i] - k * r63[i];
                wzb[i] = a * beta[i] + rhib[i] - k * r63b[i];
            }
            veil_test_compare_u64(what, z, wz, n);
            veil_test_compare_u64(what, zb, wzb, n);
        }
done:
    free(c), free(rhi), free(r63), free(beta), free(rhib), free(r63b), free(z), free(zb);
    free(wz), free(wzb);
}

/* B2A mask of a tile of nbits elements at word offset 0 and 5 of the packed part, then the finish
 * of n = nbits elements. */
static void check_b2a(size_t nbits)
{
    const size_t nw = (nbits + 63) / 64, np = nw + 7;
    uint64_t *in = words(700 + nbits, nw, NULL), *bp = words(710 + nbits, np, NULL);
    uint64_t *e = malloc(nw * 8), *want = malloc((nbits > nw ? nbits : nw) * 8);
    uint64_t *b = words(720 + nbits, nbits, NULL), *out = malloc(nbits * 8);
    char what[96];
    if (!in || !bp || !e || !want || !b || !out) {
        VT_CHECK(0, "out of memory");
        goto done;
    }
    static const size_t offsets[] = {0, 5};
    for (size_t t = 0; t < 2; t++) {
        const struct veil_b2a_mask_arg arg = {.offset = offsets[t], .nbits = nbits};
        const struct vbuf v[3] = {{in, nw}, {bp, np}, {e, nw}};
        snprintf(what, sizeof what, "b2a_mask nbits=%zu offset=%zu", nbits, offsets[t]);
        both(&veil_b2a_mask_cl, what, v, 3, &arg, sizeof arg);
        for (size_t i = 0; i < nw; i++)
            want[i] = in[i] ^ bp[offsets[t] + i];
        if (nbits % 64)
            want[nw - 1] &= (UINT64_C(1) << (nbits % 64)) - 1;
        veil_test_compare_u64(what, e, want, nw);
    }
    for (int party0 = 0; party0 <= 1; party0++) {
        const struct veil_cmp_party_arg arg = {.party0 = party0};
        const struct vbuf v[3] = {{in, nw}, {b, nbits}, {out, nbits}};
        snprintf(what, sizeof what, "b2a_fin n=%zu party0=%d", nbits, party0);
        both(&veil_b2a_fin_cl, what, v, 3, &arg, sizeof arg);
        for (size_t i = 0; i < nbits; i++)
            want[i] = (in[i / 64] >> (i % 64)) & 1 ? (uint64_t)party0 - b[i] : b[i];
        veil_test_compare_u64(what, out, want, nbits);
    }
done:
    free(in), free(bp), free(e), free(want), free(b), free(out);
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
    /* elements: partial and full 64-element blocks, 31 / 32 / 33 blocks (the leaf kernel's tiles
     * of 32), many tiles with a partial last one */
    static const size_t circuit_n[] = {1,    31,   63,   64,   65,    1984,  2047,
                                       2048, 2049, 2113, 4096, 16465, 100003};
    for (size_t t = 0; t < sizeof circuit_n / sizeof circuit_n[0]; t++)
        check_circuit(circuit_n[t]);
    /* blocks per row: around the 256-thread blocks of the level kernels */
    static const size_t level_nb[] = {1, 2, 31, 32, 33, 255, 256, 257, 1563};
    for (size_t t = 0; t < sizeof level_nb / sizeof level_nb[0]; t++)
        check_levels(level_nb[t]);
    static const size_t sizes[] = {1, 31, 32, 63, 64, 65, 255, 256, 257, 1000, 100003};
    for (size_t t = 0; t < sizeof sizes / sizeof sizes[0]; t++) {
        check_and(sizes[t]);
        check_prodk(sizes[t]);
        check_relu(sizes[t]);
        check_relu_trunc(sizes[t]);
        check_b2a(sizes[t]);
    }
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

/* Tests the weight-stationary products (tasks/wstat.h) with real party processes: N = 2 and 3
 * with a dealer process, N = 3 in trusted-first-party mode (party 0 computes the corrections from
 * the weight streams too), and N = 2 from preprocessing files (the recorded MATMUL_WS / CONV_WS
 * items through veil_preproc_generate_files and FILE material). Three successive products
 * x_i . W with one weight state (the third with another row count) and three conv2d(x_i, K) with
 * another state (the third with another batch) are revealed and compared bit for bit with the
 * plaintext ring products; each call costs 1 round, the first one 8 (N-1)(|x| + |w|) bytes per
 * party (E = W - B opened) and the later ones 8 (N-1) |x| (E reused); a party's material words
 * are A, B and C at the first call and A and C later (its share of B kept in the state, neither
 * expanded nor read again; none at the dealer); leaving out a corrected part, or one the item
 * lacks, is refused without taking an item. A third weight primed (veil_mpc_wstat_prime: E
 * opened before any product, 8 (N-1) |w| bytes, B's share from the weight stream or the file
 * without taking an item) then multiplies opening D alone, its material without B, and agrees
 * with the plaintext; a prime with another weight's item, and a second prime, are refused. Misuse
 * is refused with VEIL_ERR_STATE before any material is requested: a second claim of a weight id
 * (also after release), re-initialising a state in use, another weight tensor of the same shape
 * under a bound state (parties: the dealer's tensors have no identity), a conv2d with a matmul's
 * state, a state of another context's making (uninitialised). */
#include "config.h"
#include "base/base_internal.h"
#include "codelets/reference.h"
#include "tasks/wstat.h"
#include "test_mpc_util.h"
#include "test_util.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* dense: x_i (A_i x B) . W (B x C) */
#define NRUN 3
#define B 24
#define C 10
static const size_t rows[NRUN] = {6, 6, 11};
static uint64_t mx[NRUN][11 * B], mw[B * C], mw2[B * C];

/* conv: batch_i x 2 x 6 x 6 input, 3 x 2 x 3 x 3 kernel, stride 1, pad 1 */
static const size_t batches[NRUN] = {2, 2, 3};
#define CC 2
#define CH 6
#define COC 3
#define CK 3
#define XMAX (3 * CC * CH * CH)
#define KW (COC * CC * CK * CK)
#define YMAX (3 * COC * CH * CH)
static uint64_t cx[NRUN][XMAX], ck[KW];

/* shared results: the three dense products then the three convolutions (each at its max) */
#define OUT_WORDS (NRUN * 11 * C + NRUN * YMAX + 6 * C)
static uint64_t *out;

static struct veil_conv_geom geom(size_t batch)
{
    struct veil_conv_geom g = {.batch = batch,
                               .c = CC,
                               .h = CH,
                               .w = CH,
                               .oc = COC,
                               .kh = CK,
                               .kw = CK,
                               .stride = 1,
                               .pad = 1};
    return g;
}

static int share(veil_mpc_t *m, int owner, const uint64_t *v, int ndim, const size_t *dims,
                 struct veil_sec *s)
{
    return veil_mpc_share_input(m, owner, veil_mpc_self(m) == owner ? v : NULL, ndim, dims,
                                SIZE_MAX, s);
}

/* Direct NCHW convolution (stride 1, pad 1) in the ring. */
static void conv_ref(size_t batch, const uint64_t *x, const uint64_t *k, uint64_t *y)
{
    for (size_t b = 0; b < batch; b++)
        for (size_t o = 0; o < COC; o++)
            for (size_t i = 0; i < CH; i++)
                for (size_t j = 0; j < CH; j++) {
                    uint64_t acc = 0;
                    for (size_t c = 0; c < CC; c++)
                        for (size_t u = 0; u < CK; u++)
                            for (size_t v = 0; v < CK; v++) {
                                long yy = (long)i - 1 + (long)u, xx = (long)j - 1 + (long)v;
                                if (yy < 0 || xx < 0 || yy >= CH || xx >= CH)
                                    continue;
                                acc += x[((b * CC + c) * CH + (size_t)yy) * CH + (size_t)xx] *
                                       k[((o * CC + c) * CK + u) * CK + v];
                            }
                    y[((b * COC + o) * CH + i) * CH + j] = acc;
                }
}

/* Refused calls: each returns VEIL_ERR_STATE and requests no material. */
static void misuse(veil_mpc_t *m, const struct veil_sec *sx, const struct veil_sec *sw2,
                   const struct veil_sec *scx, const struct veil_sec *sk,
                   struct veil_mpc_wstat *ws_mm)
{
    size_t n0, n1;
    struct veil_sec z = {0};
    struct veil_mpc_wstat other = {0};
    veil_mpc_items(m, &n0);
    VT_CHECK(veil_mpc_wstat_init(m, &other, 7) == VEIL_ERR_STATE, "wid 7 claimed twice");
    VT_CHECK(strstr(veil_last_error(), "already claimed") != NULL, "message: %s",
             veil_last_error());
    VT_CHECK(veil_mpc_wstat_init(m, ws_mm, 99) == VEIL_ERR_STATE && ws_mm->wid == 7 &&
                 veil_mpc_wstat_bound(ws_mm),
             "a state in use is not re-initialised");
    /* another tensor, same shape: only parties hold an identity to compare */
    if (veil_mpc_computes(m)) {
        VT_CHECK(veil_mpc_matmul_ws(m, sx, sw2, ws_mm, &z) == VEIL_ERR_STATE,
                 "another w under a bound state refused");
        VT_CHECK(strstr(veil_last_error(), "matmul_ws") &&
                     strstr(veil_last_error(), "another weight tensor"),
                 "message: %s", veil_last_error());
    }
    struct veil_conv_geom g = geom(batches[0]);
    VT_CHECK(veil_mpc_conv2d_ws(m, scx, sk, &g, ws_mm, &z) == VEIL_ERR_STATE,
             "conv2d with a matmul's state refused");
    VT_CHECK(veil_mpc_matmul_ws(m, sx, sw2, &other, &z) == VEIL_ERR_STATE,
             "uninitialised state refused");
    VT_CHECK(veil_mpc_matmul_ws(m, sx, sw2, NULL, &z) == VEIL_ERR_INVAL, "NULL state refused");
    veil_mpc_items(m, &n1);
    VT_CHECK(n0 == n1, "a refused call requested material (%zu -> %zu)", n0, n1);
}

static int body(veil_mpc_t *m, void *arg)
{
    (void)arg;
    const uint64_t n1 = (uint64_t)veil_mpc_nparties(m) - 1;
    struct veil_sec sx[NRUN] = {{0}}, scx[NRUN] = {{0}}, sw = {0}, sw2 = {0}, sk = {0};
    struct veil_sec z[2 * NRUN] = {{0}}, r[2 * NRUN] = {{0}};
    struct veil_mpc_wstat ws_mm = {0}, ws_cv = {0}, again = {0};
    struct veil_test_mpc_counters c;
    const size_t wd[2] = {B, C}, kd[4] = {COC, CC, CK, CK};
    int rc = share(m, 1, mw, 2, wd, &sw);
    if (rc == VEIL_OK)
        rc = share(m, 1, mw2, 2, wd, &sw2);
    if (rc == VEIL_OK)
        rc = share(m, 1, ck, 4, kd, &sk);
    for (int i = 0; i < NRUN && rc == VEIL_OK; i++) {
        const size_t xd[2] = {rows[i], B}, cd[4] = {batches[i], CC, CH, CH};
        rc = share(m, 0, mx[i], 2, xd, &sx[i]);
        if (rc == VEIL_OK)
            rc = share(m, 0, cx[i], 4, cd, &scx[i]);
    }
    if (rc == VEIL_OK)
        rc = veil_mpc_wstat_init(m, &ws_mm, 7);
    if (rc == VEIL_OK)
        rc = veil_mpc_wstat_init(m, &ws_cv, 8);
    if (rc != VEIL_OK || veil_mpc_wait(m) != VEIL_OK) {
        VT_CHECK(0, "inputs: %s", veil_last_error());
        return 1;
    }
    /* only a part the item has and no correction writes can be left out; a refusal takes no
     * item (every process refuses alike) */
    struct veil_mpc_mat bad;
    size_t taken0 = 0, taken1 = 0;
    veil_mpc_items(m, &taken0);
    VT_CHECK(veil_mpc_material_skip(m, veil_preproc_item_beaver(0, 8), SIZE_MAX, 1u << VEIL_PRE_C,
                                    &bad) == VEIL_ERR_INVAL &&
                 strstr(veil_last_error(), "corrected"),
             "a corrected part left out: %s", veil_last_error());
    VT_CHECK(veil_mpc_material_skip(m, veil_preproc_item_square(0, 8), SIZE_MAX, 1u << 2, &bad) ==
                 VEIL_ERR_INVAL,
             "a part the item does not have left out");
    veil_mpc_items(m, &taken1);
    VT_CHECK(taken0 == taken1, "a refused request took an item (%zu -> %zu)", taken0, taken1);
    veil_test_mpc_counters(m, &c);
    const int party = veil_mpc_computes(m);
    const uint64_t *kept = NULL;
    for (int i = 0; i < NRUN; i++) {
        VT_CHECK(veil_mpc_wstat_bound(&ws_mm) == (i > 0), "bound after the first call only");
        const uint64_t words0 = veil_mpc_material_words(m);
        if (veil_mpc_matmul_ws(m, &sx[i], &sw, &ws_mm, &z[i]) != VEIL_OK)
            VT_CHECK(0, "matmul_ws %d: %s", i, veil_last_error());
        uint64_t bytes = 8 * n1 * (rows[i] * B + (i == 0 ? B * C : 0));
        veil_test_mpc_check_cost(m, i == 0 ? "matmul_ws first" : "matmul_ws later", &c, 1, bytes);
        const uint64_t words = veil_mpc_material_words(m) - words0,
                       want = party ? rows[i] * B + rows[i] * C + (i == 0 ? B * C : 0) : 0;
        VT_CHECK(words == want, "matmul_ws %d: %" PRIu64 " material words, expected %" PRIu64, i,
                 words, want);
        if (i == 0)
            kept = ws_mm.b.data;
        VT_CHECK((kept != NULL) == party && ws_mm.b.data == kept &&
                     ws_mm.b.numel == B * C * (size_t)party,
                 "matmul_ws %d: the state keeps the first call's share of B", i);
    }
    for (int i = 0; i < NRUN; i++) {
        struct veil_conv_geom g = geom(batches[i]);
        const uint64_t words0 = veil_mpc_material_words(m);
        if (veil_mpc_conv2d_ws(m, &scx[i], &sk, &g, &ws_cv, &z[NRUN + i]) != VEIL_OK)
            VT_CHECK(0, "conv2d_ws %d: %s", i, veil_last_error());
        uint64_t bytes = 8 * n1 * (batches[i] * CC * CH * CH + (i == 0 ? KW : 0));
        veil_test_mpc_check_cost(m, i == 0 ? "conv2d_ws first" : "conv2d_ws later", &c, 1, bytes);
        const uint64_t xw = batches[i] * CC * CH * CH, yw = batches[i] * COC * CH * CH;
        const uint64_t words = veil_mpc_material_words(m) - words0,
                       want = party ? xw + yw + (i == 0 ? KW : 0) : 0;
        VT_CHECK(words == want, "conv2d_ws %d: %" PRIu64 " material words, expected %" PRIu64, i,
                 words, want);
        VT_CHECK((ws_cv.b.data != NULL) == party, "conv2d_ws %d: the state keeps B", i);
    }
    misuse(m, &sx[0], &sw2, &scx[0], &sk, &ws_mm);
    veil_test_mpc_check_cost(m, "refused calls", &c, 0, 0);
    /* W2 primed (E = W2 - B2 opened before any product, B2's share fetched without taking an
     * item), then x_0 . W2 opens D alone and its material has no B */
    struct veil_mpc_wstat ws_pr = {0};
    struct veil_sec zp = {0}, rp = {0};
    const struct veil_preproc_item like = veil_preproc_item_matmul_ws(0, 1, B, C, 9);
    const struct veil_preproc_item other = veil_preproc_item_matmul_ws(0, 1, B, C, 10);
    VT_CHECK(veil_mpc_wstat_init(m, &ws_pr, 9) == VEIL_OK, "init 9: %s", veil_last_error());
    VT_CHECK(veil_mpc_wstat_prime(m, &ws_pr, &sw2, &other) == VEIL_ERR_INVAL,
             "prime with another weight's item refused");
    VT_CHECK(veil_mpc_wstat_prime(m, &ws_pr, &sw2, &like) == VEIL_OK, "prime: %s",
             veil_last_error());
    VT_CHECK(veil_mpc_wstat_bound(&ws_pr) && (ws_pr.b.data != NULL) == party,
             "a primed state is bound and holds B at a party");
    VT_CHECK(veil_mpc_wstat_prime(m, &ws_pr, &sw2, &like) == VEIL_ERR_STATE, "primed twice");
    veil_test_mpc_check_cost(m, "prime", &c, 0, 8 * n1 * B * C);
    const uint64_t pw0 = veil_mpc_material_words(m);
    if (veil_mpc_matmul_ws(m, &sx[0], &sw2, &ws_pr, &zp) != VEIL_OK)
        VT_CHECK(0, "matmul_ws after prime: %s", veil_last_error());
    veil_test_mpc_check_cost(m, "matmul_ws after prime", &c, 1, 8 * n1 * rows[0] * B);
    VT_CHECK(veil_mpc_material_words(m) - pw0 == (party ? rows[0] * (B + C) : 0),
             "matmul_ws after prime: B was fetched again");
    if (veil_test_failures)
        return 1;
    for (int i = 0; i < 2 * NRUN && rc == VEIL_OK; i++)
        rc = veil_mpc_reveal(m, &z[i], -1, &r[i]);
    if (rc == VEIL_OK)
        rc = veil_mpc_reveal(m, &zp, -1, &rp);
    if (rc != VEIL_OK || veil_mpc_wait(m) != VEIL_OK) {
        VT_CHECK(0, "reveal: %s", veil_last_error());
        return 1;
    }
    if (veil_mpc_self(m) == 0) {
        for (int i = 0; i < NRUN; i++) {
            VT_CHECK(r[i].ndim == 2 && r[i].dims[0] == rows[i] && r[i].dims[1] == C,
                     "z %d is rows x C", i);
            memcpy(out + (size_t)i * 11 * C, veil_test_host(&r[i]), rows[i] * C * 8);
            memcpy(out + NRUN * 11 * C + (size_t)i * YMAX, veil_test_host(&r[NRUN + i]),
                   batches[i] * COC * CH * CH * 8);
        }
        memcpy(out + NRUN * 11 * C + NRUN * YMAX, veil_test_host(&rp), rows[0] * C * 8);
    }
    veil_mpc_wstat_release(m, &ws_pr);
    veil_mpc_release(m, &zp);
    veil_mpc_release(m, &rp);
    /* a released state's wid stays claimed */
    veil_mpc_wstat_release(m, &ws_mm);
    VT_CHECK(ws_mm.e.data == NULL && ws_mm.b.data == NULL && !veil_mpc_wstat_bound(&ws_mm),
             "release empties the state");
    VT_CHECK(veil_mpc_wstat_init(m, &again, 7) == VEIL_ERR_STATE, "wid 7 reclaimed after release");
    veil_mpc_wstat_release(m, &ws_cv);
    veil_mpc_wstat_release(m, &ws_cv); /* twice is harmless */
    struct veil_sec *all[] = {&sw, &sw2, &sk};
    for (size_t i = 0; i < 3; i++)
        veil_mpc_release(m, all[i]);
    for (int i = 0; i < NRUN; i++) {
        veil_mpc_release(m, &sx[i]);
        veil_mpc_release(m, &scx[i]);
    }
    for (int i = 0; i < 2 * NRUN; i++) {
        veil_mpc_release(m, &z[i]);
        veil_mpc_release(m, &r[i]);
    }
    return veil_test_failures ? 1 : 0;
}

int main(void)
{
    static uint64_t want[OUT_WORDS];
    veil_test_random(71, mw, B * C);
    veil_test_random(72, mw2, B * C);
    veil_test_random(73, ck, KW);
    for (int i = 0; i < NRUN; i++) {
        veil_test_random(80 + (uint64_t)i, mx[i], rows[i] * B);
        veil_test_random(90 + (uint64_t)i, cx[i], batches[i] * CC * CH * CH);
    }
    veil_test_mix_edges(mx[0], mw, B * C < rows[0] * B ? B * C : rows[0] * B);
    for (int i = 0; i < NRUN; i++) {
        veil_ref_gemm(rows[i], C, B, mx[i], mw, want + (size_t)i * 11 * C);
        conv_ref(batches[i], cx[i], ck, want + NRUN * 11 * C + (size_t)i * YMAX);
    }
    veil_ref_gemm(rows[0], C, B, mx[0], mw2, want + NRUN * 11 * C + NRUN * YMAX);
    out = veil_test_mpc_shared(OUT_WORDS * 8);
    if (!out)
        return 1;
    struct veil_test_mpc_opts runs[] = {
        {.nparties = 2, .material = VEIL_MPC_MAT_DEALER, .frac_bits = -1},
        {.nparties = 3, .material = VEIL_MPC_MAT_DEALER, .frac_bits = -1},
        {.nparties = 3, .material = VEIL_MPC_MAT_TRUSTED_FIRST_PARTY, .frac_bits = -1},
        {.nparties = 2, .material = VEIL_MPC_MAT_FILE, .frac_bits = -1},
    };
    for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) {
        memset(out, 0, OUT_WORDS * 8);
        if (veil_test_mpc_run(&runs[i], body, NULL) != 0) {
            veil_test_failures++;
            continue;
        }
        char what[64];
        snprintf(what, sizeof what, "%s: products", veil_test_mpc_name(&runs[i]));
        veil_test_compare_u64(what, out, want, OUT_WORDS);
        veil_test_log("%s: done", veil_test_mpc_name(&runs[i]));
    }
    veil_test_mpc_shared_free(out, OUT_WORDS * 8);
    return veil_test_status();
}

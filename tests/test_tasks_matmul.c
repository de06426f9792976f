/* Tests the secure matrix product (tasks/beaver.h) with real party processes: N = 2, 3, 4 with a
 * dealer process and N = 3 in trusted-first-party mode and N = 2 from preprocessing files. x (7 x
 * 13) . y (13 x 9), a larger 70 x 48 . 48 x 33 (the blocked GEMM path), u^T . y for u (13 x 7) and
 * x . v^T for v (9 x 13), revealed and compared bit for bit with veil_ref_gemm (so every mode and N
 * gives the same words). Each product costs exactly 1 round and 8 (N-1)(ab + bc) bytes per party
 * (the transposes are local). The local step of an unsplit product is two accumulating GEMMs onto
 * the correction part at every party, no sum task (from a trace). Bad input (x 3 x 4 times y 5 x 2,
 * a 1-D operand, a tiled operand, binary shares) is refused with a message before anything is
 * submitted. */
#include "config.h"
#include "base/base_internal.h"
#include "base/trace.h"
#include "codelets/reference.h"
#include "tasks/beaver.h"
#include "test_mpc_util.h"
#include "test_util.h"

#include <inttypes.h>
#include <string.h>

#define A 7
#define B 13
#define C 9 /* y larger than x: party 0 folds D E in as (A + D) E; the large pair as D (B + E) */
#define LA 70
#define LB 48
#define LC 33

static uint64_t x[A * B], y[B * C], u[B * A], v[C * B], lx[LA * LB], ly[LB * LC];
/* shared results: x.y, u^T.y, x.v^T, lx.ly */
#define OUT_WORDS (3 * A * C + LA * LC)
static uint64_t *out;


static int share(veil_mpc_t *m, int owner, const uint64_t *v_, size_t r, size_t c,
                 struct veil_sec *s)
{
    const size_t dims[2] = {r, c};
    return veil_mpc_share_input(m, owner, veil_mpc_self(m) == owner ? v_ : NULL, 2, dims, SIZE_MAX,
                                s);
}

/* The local step of an unsplit product, from the trace of one x . y: every term accumulates onto
 * the correction part (a veil_bgemm_acc task each: A E and D B, party 0 folding its D E into one of
 * them with one veil_add task), with no temporary GEMM (veil_bgemm) and no sum task. */
static void local_step(veil_mpc_t *m, const struct veil_sec *sx, const struct veil_sec *sy)
{
    const int party = veil_mpc_computes(m); /* the dealer and a recorder call it too (SPMD) */
    struct veil_sec z = {0};
    int acc, plain, sums, adds;
    int rc = party ? veil_trace_start() : VEIL_OK;
    if (rc == VEIL_OK && (rc = veil_mpc_matmul(m, sx, sy, &z)) == VEIL_OK)
        rc = veil_mpc_wait(m);
    if (!party) {
        VT_CHECK(rc == VEIL_OK, "process %d: product: %s", veil_mpc_self(m), veil_last_error());
        veil_mpc_release(m, &z);
        return;
    }
    veil_trace_stop();
    acc = veil_test_trace_tasks("veil_bgemm_acc");
    plain = veil_test_trace_tasks("veil_bgemm");
    sums = veil_test_trace_tasks("veil_sum");
    adds = veil_test_trace_tasks("veil_add");
    veil_trace_free();
    const int want_adds = veil_mpc_self(m) == 0;
    VT_CHECK(rc == VEIL_OK && acc == 2 && adds == want_adds && plain == 0 && sums == 0,
             "party %d: the product's local step ran %d accumulating GEMMs (expected 2), %d adds "
             "(expected %d), %d plain GEMMs and %d sums (expected 0): %s",
             veil_mpc_self(m), acc, adds, want_adds, plain, sums,
             rc == VEIL_OK ? "ok" : veil_last_error());
    veil_mpc_release(m, &z);
}

static void bad_inputs(veil_mpc_t *m, const struct veil_sec *sx)
{
    size_t n0, n1;
    veil_mpc_items(m, &n0);
    struct veil_sec s34 = {0}, s52 = {0}, flat = {0}, tiled = {0}, z = {0};
    const size_t d34[2] = {3, 4}, d52[2] = {5, 2}, d12[1] = {12}, d4x100[2] = {4, 100};
    if (veil_sec_init(m, &s34, VEIL_SHARE_ARITH, 2, d34, SIZE_MAX) == VEIL_OK &&
        veil_sec_init(m, &s52, VEIL_SHARE_ARITH, 2, d52, SIZE_MAX) == VEIL_OK &&
        veil_sec_init(m, &flat, VEIL_SHARE_ARITH, 1, d12, SIZE_MAX) == VEIL_OK &&
        veil_sec_init(m, &tiled, VEIL_SHARE_ARITH, 2, d4x100, 64) == VEIL_OK) {
        VT_CHECK(veil_mpc_matmul(m, &s34, &s52, &z) == VEIL_ERR_SHAPE, "3x4 . 5x2 refused");
        VT_CHECK(strstr(veil_last_error(), "matmul") && strstr(veil_last_error(), "3 x 4"),
              "message names the op and shapes: %s", veil_last_error());
        VT_CHECK(veil_mpc_matmul(m, &flat, &s52, &z) == VEIL_ERR_SHAPE, "1-D operand refused");
        VT_CHECK(veil_mpc_matmul(m, &s34, &tiled, &z) == VEIL_ERR_SHAPE, "tiled operand refused");
        VT_CHECK(veil_mpc_matmul_tn(m, sx, &s52, &z) == VEIL_ERR_SHAPE, "tn mismatch refused");
        VT_CHECK(veil_mpc_matmul_nt(m, sx, &s52, &z) == VEIL_ERR_SHAPE, "nt mismatch refused");
        s52.kind = VEIL_SHARE_BINARY;
        VT_CHECK(veil_mpc_matmul(m, &s34, &s52, &z) == VEIL_ERR_INVAL, "binary refused");
    }
    struct veil_sec *all[] = {&s34, &s52, &flat, &tiled};
    for (size_t i = 0; i < 4; i++)
        veil_mpc_release(m, all[i]);
    veil_mpc_items(m, &n1);
    VT_CHECK(n0 == n1, "a refused call requested material");
}

static int body(veil_mpc_t *m, void *arg)
{
    (void)arg;
    const uint64_t n1 = (uint64_t)veil_mpc_nparties(m) - 1;
    struct veil_sec sx = {0}, sy = {0}, su = {0}, sv = {0}, slx = {0}, sly = {0};
    struct veil_sec z[4] = {{0}}, r[4] = {{0}};
    struct veil_test_mpc_counters c;
    int rc = share(m, 0, x, A, B, &sx);
    if (rc == VEIL_OK)
        rc = share(m, 1, y, B, C, &sy);
    if (rc == VEIL_OK)
        rc = share(m, 0, u, B, A, &su);
    if (rc == VEIL_OK)
        rc = share(m, 1, v, C, B, &sv);
    if (rc == VEIL_OK)
        rc = share(m, 0, lx, LA, LB, &slx);
    if (rc == VEIL_OK)
        rc = share(m, 1, ly, LB, LC, &sly);
    if (rc != VEIL_OK || veil_mpc_wait(m) != VEIL_OK) {
        VT_CHECK(0, "inputs: %s", veil_last_error());
        return 1;
    }
    veil_test_mpc_counters(m, &c);
    bad_inputs(m, &sx);
    if (veil_mpc_matmul(m, &sx, &sy, &z[0]) != VEIL_OK)
        VT_CHECK(0, "matmul: %s", veil_last_error());
    veil_test_mpc_check_cost(m, "matmul", &c, 1, 8 * n1 * (A * B + B * C));
    if (veil_mpc_matmul_tn(m, &su, &sy, &z[1]) != VEIL_OK)
        VT_CHECK(0, "matmul_tn: %s", veil_last_error());
    veil_test_mpc_check_cost(m, "matmul_tn", &c, 1, 8 * n1 * (A * B + B * C));
    if (veil_mpc_matmul_nt(m, &sx, &sv, &z[2]) != VEIL_OK)
        VT_CHECK(0, "matmul_nt: %s", veil_last_error());
    veil_test_mpc_check_cost(m, "matmul_nt", &c, 1, 8 * n1 * (A * B + B * C));
    if (veil_mpc_matmul(m, &slx, &sly, &z[3]) != VEIL_OK)
        VT_CHECK(0, "matmul large: %s", veil_last_error());
    veil_test_mpc_check_cost(m, "matmul large", &c, 1, 8 * n1 * (LA * LB + LB * LC));
    if (veil_test_failures)
        return 1;
    local_step(m, &sx, &sy);
    for (int i = 0; i < 4 && rc == VEIL_OK; i++)
        rc = veil_mpc_reveal(m, &z[i], -1, &r[i]);
    if (rc != VEIL_OK || veil_mpc_wait(m) != VEIL_OK) {
        VT_CHECK(0, "reveal: %s", veil_last_error());
        return 1;
    }
    if (veil_mpc_self(m) == 0) {
        VT_CHECK(r[0].ndim == 2 && r[0].dims[0] == A && r[0].dims[1] == C, "z is a x c");
        for (int i = 0; i < 3; i++)
            memcpy(out + i * A * C, veil_test_host(&r[i]), A * C * 8);
        memcpy(out + 3 * A * C, veil_test_host(&r[3]), LA * LC * 8);
    }
    struct veil_sec *all[] = {&sx, &sy, &su, &sv, &slx, &sly};
    for (size_t i = 0; i < 6; i++)
        veil_mpc_release(m, all[i]);
    for (int i = 0; i < 4; i++) {
        veil_mpc_release(m, &z[i]);
        veil_mpc_release(m, &r[i]);
    }
    return veil_test_failures ? 1 : 0;
}

int main(void)
{
    veil_test_random(21, x, A * B);
    veil_test_random(22, y, B * C);
    veil_test_random(23, u, B * A);
    veil_test_random(24, v, C * B);
    veil_test_random(25, lx, LA * LB);
    veil_test_random(26, ly, LB * LC);
    veil_test_mix_edges(x, y, A * B < B * C ? A * B : B * C);
    static uint64_t want[OUT_WORDS], ut[A * B], vt[B * C];
    veil_ref_gemm(A, C, B, x, y, want);
    veil_ref_transpose(B, A, u, ut);
    veil_ref_gemm(A, C, B, ut, y, want + A * C);
    veil_ref_transpose(C, B, v, vt);
    veil_ref_gemm(A, C, B, x, vt, want + 2 * A * C);
    veil_ref_gemm(LA, LC, LB, lx, ly, want + 3 * A * C);
    out = veil_test_mpc_shared(OUT_WORDS * 8);
    if (!out)
        return 1;
    struct veil_test_mpc_opts runs[] = {
        {.nparties = 2, .material = VEIL_MPC_MAT_DEALER, .frac_bits = -1},
        {.nparties = 3, .material = VEIL_MPC_MAT_DEALER, .frac_bits = -1},
        {.nparties = 4, .material = VEIL_MPC_MAT_DEALER, .frac_bits = -1},
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

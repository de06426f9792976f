/* Tests the elementwise nonlinear protocols (tasks/nonlinear.h: exp, reciprocal, inverse square
 * root, GELU) with real party processes: N = 2, 3 and 4 with a dealer process, N = 3 in trusted-
 * first-party mode, N = 2 from preprocessing files. 600 inputs per function (tiles of 256, the
 * last short) spread over each documented range are shared by party 0; the revealed outputs are
 * compared with double references within the error bounds stated in nonlinear.h; every party's
 * rounds and bytes over each protocol equal veil_nl_cost's formulas. Bad input (NULL, binary
 * shares, an empty or too-wide reciprocal range) is refused before any material is requested. */
#include "config.h"
#include "base/base_internal.h"
#include "tasks/nonlinear.h"
#include "tasks/nonlinear_ref.h"
#include "test_mpc_util.h"
#include "test_util.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

#define NUMEL 600
#define TILE 256
#define NFN 4

static uint64_t in[NFN][NUMEL];
static uint64_t *out; /* shared: NFN x NUMEL words written by party 0 */

static const char *names[NFN] = {"exp", "reciprocal", "inv_sqrt", "gelu"};
static const double max_abs[NFN] = {1e-4, 3e-5, 1.5e-4, 4.5e-4};


static double ref(int fn, double x)
{
    switch (fn) {
    case 0:
        return exp(x);
    case 1:
        return 1 / x;
    case 2:
        return 1 / sqrt(x);
    default:
        return veil_ref_gelu_f64(x);
    }
}

static int run_fn(veil_mpc_t *m, int fn, const struct veil_sec *x, struct veil_sec *y)
{
    switch (fn) {
    case 0:
        return veil_mpc_exp(m, x, y);
    case 1:
        return veil_mpc_reciprocal(m, x, y);
    case 2:
        return veil_mpc_inv_sqrt(m, x, y);
    default:
        return veil_mpc_gelu(m, x, y);
    }
}

static void expected_cost(int fn, int nparties, uint64_t *r, uint64_t *b)
{
    static const enum veil_nl_op ops[NFN] = {VEIL_NL_EXP, VEIL_NL_RECIP, VEIL_NL_ISQRT,
                                             VEIL_NL_GELU};
    int lo = fn == 1 ? VEIL_RECIP_LO : VEIL_ISQRT_LO, hi = fn == 1 ? VEIL_RECIP_HI : VEIL_ISQRT_HI;
    veil_nl_cost(ops[fn], nparties, NUMEL, 0, lo, hi, r, b);
}

static void bad_input(veil_mpc_t *m, const struct veil_sec *x)
{
    size_t n0, n1;
    struct veil_sec y = {0}, bx = *x;
    veil_mpc_items(m, &n0);
    VT_CHECK(veil_mpc_exp(m, NULL, &y) == VEIL_ERR_INVAL, "exp(NULL) refused");
    bx.kind = VEIL_SHARE_BINARY;
    VT_CHECK(veil_mpc_gelu(m, &bx, &y) == VEIL_ERR_INVAL, "gelu of binary shares refused");
    VT_CHECK(strstr(veil_last_error(), "gelu") != NULL, "message names the op: %s", veil_last_error());
    VT_CHECK(veil_mpc_reciprocal_range(m, x, 4, 4, &y) == VEIL_ERR_INVAL, "empty range refused");
    VT_CHECK(veil_mpc_reciprocal_range(m, x, -20, 10, &y) == VEIL_ERR_INVAL, "lo < -f/2 refused");
    VT_CHECK(veil_mpc_inv_sqrt_range(m, x, -8, 30, &y) == VEIL_ERR_INVAL, "too wide refused");
    veil_mpc_items(m, &n1);
    VT_CHECK(n0 == n1, "a refused call requested material");
}

static int body(veil_mpc_t *m, void *arg)
{
    (void)arg;
    const int self = veil_mpc_self(m);
    const size_t dims[2] = {NUMEL / 20, 20};
    for (int fn = 0; fn < NFN; fn++) {
        struct veil_sec x = {0}, y = {0}, r = {0};
        struct veil_test_mpc_counters c0, c1;
        if (veil_mpc_share_input(m, 0, self == 0 ? in[fn] : NULL, 2, dims, TILE, &x) != VEIL_OK ||
            veil_mpc_wait(m) != VEIL_OK) {
            VT_CHECK(0, "input: %s", veil_last_error());
            return 1;
        }
        if (fn == 0)
            bad_input(m, &x);
        veil_test_mpc_counters(m, &c0);
        if (run_fn(m, fn, &x, &y) != VEIL_OK || veil_mpc_wait(m) != VEIL_OK) {
            VT_CHECK(0, "%s: %s", names[fn], veil_last_error());
            return 1;
        }
        if (veil_mpc_computes(m)) {
            uint64_t er, eb;
            veil_test_mpc_counters(m, &c1);
            expected_cost(fn, veil_mpc_nparties(m), &er, &eb);
            VT_CHECK(c1.rounds - c0.rounds == er, "%s: party %d: %" PRIu64 " rounds, formula %" PRIu64,
                  names[fn], self, c1.rounds - c0.rounds, er);
            VT_CHECK(c1.bytes - c0.bytes == eb, "%s: party %d: %" PRIu64 " bytes, formula %" PRIu64,
                  names[fn], self, c1.bytes - c0.bytes, eb);
            VT_CHECK(y.ndim == 2 && y.dims[0] == dims[0] && y.dims[1] == dims[1], "%s keeps the shape",
                  names[fn]);
        }
        if (veil_mpc_reveal(m, &y, -1, &r) != VEIL_OK || veil_mpc_wait(m) != VEIL_OK) {
            VT_CHECK(0, "reveal: %s", veil_last_error());
            return 1;
        }
        if (self == 0)
            memcpy(out + (size_t)fn * NUMEL, veil_test_host(&r), NUMEL * 8);
        veil_mpc_release(m, &x);
        veil_mpc_release(m, &y);
        veil_mpc_release(m, &r);
    }
    return veil_test_failures ? 1 : 0;
}

static uint64_t enc(double v)
{
    uint64_t w = 0;
    veil_fixed_encode(v, VEIL_FIXED_FRAC_BITS_DEFAULT, &w);
    return w;
}

int main(void)
{
    const int f = VEIL_FIXED_FRAC_BITS_DEFAULT;
    for (int i = 0; i < NUMEL; i++) {
        double u = (i + 0.5) / NUMEL;
        in[0][i] = enc(-64 * u);
        in[1][i] = enc(exp2(VEIL_RECIP_LO + (VEIL_RECIP_HI - VEIL_RECIP_LO) * u * 0.9999));
        in[2][i] = enc(exp2(VEIL_ISQRT_LO + (VEIL_ISQRT_HI - VEIL_ISQRT_LO) * u * 0.9999));
        in[3][i] = enc(i < 8 ? (i < 4 ? -1000.0 + i : 1000.0 + i) : -8 + 16 * u);
    }
    in[0][0] = 0;
    in[1][0] = enc(1);
    in[2][0] = enc(1.0 / 256);
    out = veil_test_mpc_shared(NFN * NUMEL * 8);
    if (!out)
        return 1;
    struct veil_test_mpc_opts runs[] = {
        {.nparties = 2, .material = VEIL_MPC_MAT_DEALER, .frac_bits = -1},
        {.nparties = 3, .material = VEIL_MPC_MAT_DEALER, .frac_bits = -1},
        {.nparties = 4, .material = VEIL_MPC_MAT_DEALER, .frac_bits = -1},
        {.nparties = 3, .material = VEIL_MPC_MAT_TRUSTED_FIRST_PARTY, .frac_bits = -1},
        {.nparties = 2, .material = VEIL_MPC_MAT_FILE, .frac_bits = -1},
    };
    for (size_t r = 0; r < sizeof runs / sizeof runs[0]; r++) {
        memset(out, 0, NFN * NUMEL * 8);
        if (veil_test_mpc_run(&runs[r], body, NULL) != 0) {
            veil_test_failures++;
            continue;
        }
        const char *name = veil_test_mpc_name(&runs[r]);
        for (int fn = 0; fn < NFN; fn++) {
            double worst = 0, at = 0;
            for (int i = 0; i < NUMEL; i++) {
                double x = veil_fixed_decode(in[fn][i], f);
                double e = fabs(veil_fixed_decode(out[fn * NUMEL + i], f) - ref(fn, x));
                if (e > worst) {
                    worst = e;
                    at = x;
                }
            }
            veil_test_log("%s: %s: max abs error %.3g at %g", name, names[fn], worst, at);
            if (!(worst <= max_abs[fn])) {
                fprintf(stderr, "FAIL %s: %s: max abs error %.3g at %g > %.3g\n", name, names[fn],
                        worst, at, max_abs[fn]);
                veil_test_failures++;
            }
        }
    }
    veil_test_mpc_shared_free(out, NFN * NUMEL * 8);
    return veil_test_status();
}

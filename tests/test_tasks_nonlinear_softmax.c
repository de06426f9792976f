/* Tests the secure softmax over the last dimension (tasks/nonlinear.h) with real party
 * processes: N = 2, 3 and 4 with a dealer process, N = 2 in trusted-first-party mode. Two inputs
 * shared by party 0: 30 rows of 10 and 3 rows of 128 (tiles of 256, so rows cross tile
 * boundaries), with logits spread over [-12, 12] plus one row of equal values, one row with a
 * gap of 60 and one spread over 40,000 (its terms below exp's domain come back exactly 0); each
 * revealed value is within the stated absolute error of the double softmax, every row sums to 1
 * within the stated bound, and every party's rounds and bytes equal veil_nl_cost's formulas. Bad
 * input (a last dimension of size 0, binary shares, NULL) is refused before any material is
 * requested. */
#include "config.h"
#include "base/base_internal.h"
#include "tasks/nonlinear.h"
#include "test_mpc_util.h"
#include "test_util.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

#define TILE 256
#define NCASE 2
static const size_t rows_of[NCASE] = {30, 3}, k_of[NCASE] = {10, 128};
static const double row_sum_tol[NCASE] = {2e-4, 1.5e-3};
#define MAX_ABS 3e-4
#define MAXN 384

static uint64_t in[NCASE][MAXN];
static uint64_t *out; /* shared: NCASE x MAXN words, written by party 0 */


static void bad_input(veil_mpc_t *m, const struct veil_sec *x)
{
    size_t n0, n1;
    struct veil_sec y = {0}, z = *x;
    veil_mpc_items(m, &n0);
    z.dims[z.ndim - 1] = 0;
    z.numel = 0;
    VT_CHECK(veil_mpc_softmax_lastdim(m, &z, &y) == VEIL_ERR_SHAPE, "last dimension 0 refused");
    VT_CHECK(strstr(veil_last_error(), "softmax") != NULL, "message names the op: %s",
          veil_last_error());
    z = *x;
    z.kind = VEIL_SHARE_BINARY;
    VT_CHECK(veil_mpc_softmax_lastdim(m, &z, &y) == VEIL_ERR_INVAL, "binary shares refused");
    VT_CHECK(veil_mpc_softmax_lastdim(m, NULL, &y) == VEIL_ERR_INVAL, "NULL refused");
    veil_mpc_items(m, &n1);
    VT_CHECK(n0 == n1, "a refused call requested material");
}

static int body(veil_mpc_t *m, void *arg)
{
    (void)arg;
    const int self = veil_mpc_self(m);
    for (int c = 0; c < NCASE; c++) {
        const size_t dims[2] = {rows_of[c], k_of[c]}, n = rows_of[c] * k_of[c];
        struct veil_sec x = {0}, y = {0}, r = {0};
        struct veil_test_mpc_counters c0, c1;
        if (veil_mpc_share_input(m, 0, self == 0 ? in[c] : NULL, 2, dims, TILE, &x) != VEIL_OK ||
            veil_mpc_wait(m) != VEIL_OK) {
            VT_CHECK(0, "input: %s", veil_last_error());
            return 1;
        }
        if (c == 0)
            bad_input(m, &x);
        veil_test_mpc_counters(m, &c0);
        if (veil_mpc_softmax_lastdim(m, &x, &y) != VEIL_OK || veil_mpc_wait(m) != VEIL_OK) {
            VT_CHECK(0, "softmax: %s", veil_last_error());
            return 1;
        }
        if (veil_mpc_computes(m)) {
            uint64_t er, eb;
            veil_test_mpc_counters(m, &c1);
            veil_nl_cost(VEIL_NL_SOFTMAX, veil_mpc_nparties(m), n, k_of[c], 0, 0, &er, &eb);
            VT_CHECK(c1.rounds - c0.rounds == er,
                  "softmax/%zu: party %d: %" PRIu64 " rounds, formula %" PRIu64, k_of[c], self,
                  c1.rounds - c0.rounds, er);
            VT_CHECK(c1.bytes - c0.bytes == eb,
                  "softmax/%zu: party %d: %" PRIu64 " bytes, formula %" PRIu64, k_of[c], self,
                  c1.bytes - c0.bytes, eb);
        }
        if (veil_mpc_reveal(m, &y, -1, &r) != VEIL_OK || veil_mpc_wait(m) != VEIL_OK) {
            VT_CHECK(0, "reveal: %s", veil_last_error());
            return 1;
        }
        if (self == 0)
            memcpy(out + (size_t)c * MAXN, veil_test_host(&r), n * 8);
        veil_mpc_release(m, &x);
        veil_mpc_release(m, &y);
        veil_mpc_release(m, &r);
    }
    return veil_test_failures ? 1 : 0;
}

int main(void)
{
    const int f = VEIL_FIXED_FRAC_BITS_DEFAULT;
    uint64_t rnd[MAXN];
    for (int c = 0; c < NCASE; c++) {
        veil_test_random(40 + (uint64_t)c, rnd, MAXN);
        for (size_t i = 0; i < rows_of[c] * k_of[c]; i++) {
            size_t row = i / k_of[c], j = i % k_of[c];
            double v = -12 + 24 * (double)(rnd[i] >> 11) / 9007199254740992.0;
            if (row == 1)
                v = 2.5; /* equal values */
            if (row == 2 && c == 0)
                v = j == 3 ? 30 : -30; /* a gap of 60 */
            if (row == 3 && c == 0)
                v = j == 5 ? 20000 : j == 6 ? 19999 : -20000 + 100.0 * (double)j; /* > 112 */
            veil_fixed_encode(v, f, &in[c][i]);
        }
    }
    out = veil_test_mpc_shared(NCASE * MAXN * 8);
    if (!out)
        return 1;
    struct veil_test_mpc_opts runs[] = {
        {.nparties = 2, .material = VEIL_MPC_MAT_DEALER, .frac_bits = -1},
        {.nparties = 3, .material = VEIL_MPC_MAT_DEALER, .frac_bits = -1},
        {.nparties = 4, .material = VEIL_MPC_MAT_DEALER, .frac_bits = -1},
        {.nparties = 2, .material = VEIL_MPC_MAT_TRUSTED_FIRST_PARTY, .frac_bits = -1},
    };
    for (size_t r = 0; r < sizeof runs / sizeof runs[0]; r++) {
        memset(out, 0, NCASE * MAXN * 8);
        if (veil_test_mpc_run(&runs[r], body, NULL) != 0) {
            veil_test_failures++;
            continue;
        }
        const char *name = veil_test_mpc_name(&runs[r]);
        for (int c = 0; c < NCASE; c++) {
            const size_t k = k_of[c];
            double worst = 0, worst_sum = 0;
            for (size_t row = 0; row < rows_of[c]; row++) {
                double xs[128], mx = -1e300, s = 0, got_sum = 0;
                for (size_t j = 0; j < k; j++) {
                    xs[j] = veil_fixed_decode(in[c][row * k + j], f);
                    mx = fmax(mx, xs[j]);
                }
                for (size_t j = 0; j < k; j++)
                    s += exp(xs[j] - mx);
                for (size_t j = 0; j < k; j++) {
                    double got = veil_fixed_decode(out[c * MAXN + row * k + j], f);
                    if (xs[j] - mx < -VEIL_SOFTMAX_FLOOR && got != 0) {
                        fprintf(stderr, "FAIL %s: softmax/%zu: row %zu: x - max = %g gives %g, "
                                "not 0\n", name, k, row, xs[j] - mx, got);
                        veil_test_failures++;
                    }
                    worst = fmax(worst, fabs(got - exp(xs[j] - mx) / s));
                    got_sum += got;
                }
                worst_sum = fmax(worst_sum, fabs(got_sum - 1));
            }
            veil_test_log("%s: softmax/%zu: max abs error %.3g, max |row sum - 1| %.3g", name, k,
                          worst, worst_sum);
            if (!(worst <= MAX_ABS) || !(worst_sum <= row_sum_tol[c])) {
                fprintf(stderr,
                        "FAIL %s: softmax/%zu: max abs error %.3g (bound %.3g), row sum "
                        "off by %.3g (bound %.3g)\n",
                        name, k, worst, MAX_ABS, worst_sum, row_sum_tol[c]);
                veil_test_failures++;
            }
        }
    }
    veil_test_mpc_shared_free(out, NCASE * MAXN * 8);
    return veil_test_status();
}

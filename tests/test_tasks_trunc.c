/* Tests secure truncation and the fixed-point product (tasks/trunc.h) with real party processes:
 * N = 2 with a dealer on 4 x 10^6 values, N = 3 and 4 on 2 x 10^6, N = 3 in trusted-first-party
 * mode on 1.5 x 10^6, N = 2 from preprocessing files on 5 x 10^5 (with the smaller cases below,
 * over 10^7 truncations in all), x of every magnitude below 2^62 in both signs with edge values
 * (0, +-1, +-(2^62 - 1), +-2^f +- 1, ...).
 * z = trunc(x, 16) is revealed and z - floor(x / 2^16) must be 0 or 1 for every element (at most
 * 1 ulp, never a large error; both values must occur); also f = 1 and f = 40 on 4 x 10^4 values,
 * and mul_fixed of 4 x 10^4 fixed-point pairs (|a|, |b| < 2^30) against veil_ref_fixed_mul
 * within +1 ulp. Costs per party: trunc 1 round, 8 (N-1) n bytes; mul_fixed 2 rounds,
 * 24 (N-1) n bytes. f out of range (0, 63, -1) and binary shares are refused with a message
 * before anything is submitted. */
#include "config.h"
#include "base/base_internal.h"
#include "codelets/reference.h"
#include "tasks/beaver.h"
#include "tasks/trunc.h"
#include "test_mpc_util.h"
#include "test_util.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define MAXN 4000000
#define SMALLN 40000
#define F 16
#define LIM ((int64_t)((UINT64_C(1) << 62) - 1))

static uint64_t *x, *fa, *fb; /* x: MAXN in-range values; fa, fb: SMALLN fixed-point values */
static size_t n_run;          /* elements of x this run truncates by F */
static uint64_t *out;         /* shared: trunc F (n_run), trunc 1, trunc 40, mul_fixed */
#define OUT_WORDS (MAXN + 3 * SMALLN)


static void bad_inputs(veil_mpc_t *m, struct veil_sec *s)
{
    size_t n0, n1;
    struct veil_sec z = {0};
    veil_mpc_items(m, &n0);
    VT_CHECK(veil_mpc_trunc(m, s, 0, &z) == VEIL_ERR_INVAL, "f = 0 refused");
    VT_CHECK(strstr(veil_last_error(), "trunc") != NULL, "message names the op: %s",
          veil_last_error());
    VT_CHECK(veil_mpc_trunc(m, s, 63, &z) == VEIL_ERR_INVAL, "f = 63 refused");
    VT_CHECK(veil_mpc_trunc(m, s, -1, &z) == VEIL_ERR_INVAL, "f = -1 refused");
    s->kind = VEIL_SHARE_BINARY;
    VT_CHECK(veil_mpc_trunc(m, s, F, &z) == VEIL_ERR_INVAL, "binary refused");
    s->kind = VEIL_SHARE_ARITH;
    veil_mpc_items(m, &n1);
    VT_CHECK(n0 == n1, "a refused call requested material");
}

static int body(veil_mpc_t *m, void *arg)
{
    (void)arg;
    const int self = veil_mpc_self(m);
    const uint64_t n1 = (uint64_t)veil_mpc_nparties(m) - 1;
    const size_t dn[1] = {n_run}, ds[1] = {SMALLN};
    struct veil_sec sx = {0}, ss = {0}, sa = {0}, sb = {0}, z[4] = {{0}}, r[4] = {{0}};
    struct veil_test_mpc_counters c;
    int rc = veil_mpc_share_input(m, 0, self == 0 ? x : NULL, 1, dn, 0, &sx);
    if (rc == VEIL_OK)
        rc = veil_mpc_share_input(m, 0, self == 0 ? x : NULL, 1, ds, 0, &ss);
    if (rc == VEIL_OK)
        rc = veil_mpc_share_input(m, 0, self == 0 ? fa : NULL, 1, ds, 0, &sa);
    if (rc == VEIL_OK)
        rc = veil_mpc_share_input(m, 1, self == 1 ? fb : NULL, 1, ds, 0, &sb);
    if (rc != VEIL_OK || veil_mpc_wait(m) != VEIL_OK) {
        VT_CHECK(0, "inputs: %s", veil_last_error());
        return 1;
    }
    veil_test_mpc_counters(m, &c);
    bad_inputs(m, &ss);
    if (veil_mpc_trunc(m, &sx, F, &z[0]) != VEIL_OK)
        VT_CHECK(0, "trunc: %s", veil_last_error());
    veil_test_mpc_check_cost(m, "trunc", &c, 1, 8 * n1 * n_run);
    if (veil_mpc_trunc(m, &ss, 1, &z[1]) != VEIL_OK || veil_mpc_trunc(m, &ss, 40, &z[2]) != VEIL_OK)
        VT_CHECK(0, "trunc 1, 40: %s", veil_last_error());
    veil_test_mpc_check_cost(m, "trunc 1 and 40", &c, 2, 16 * n1 * SMALLN);
    if (veil_mpc_mul_fixed(m, &sa, &sb, &z[3]) != VEIL_OK)
        VT_CHECK(0, "mul_fixed: %s", veil_last_error());
    veil_test_mpc_check_cost(m, "mul_fixed", &c, 2, 24 * n1 * SMALLN);
    if (veil_test_failures)
        return 1;
    for (int i = 0; i < 4 && rc == VEIL_OK; i++)
        rc = veil_mpc_reveal(m, &z[i], -1, &r[i]);
    if (rc != VEIL_OK || veil_mpc_wait(m) != VEIL_OK) {
        VT_CHECK(0, "reveal: %s", veil_last_error());
        return 1;
    }
    if (self == 0) {
        memcpy(out, veil_test_host(&r[0]), n_run * 8);
        for (int i = 1; i < 4; i++)
            memcpy(out + MAXN + (size_t)(i - 1) * SMALLN, veil_test_host(&r[i]), SMALLN * 8);
    }
    struct veil_sec *all[] = {&sx, &ss, &sa, &sb};
    for (int i = 0; i < 4; i++) {
        veil_mpc_release(m, all[i]);
        veil_mpc_release(m, &z[i]);
        veil_mpc_release(m, &r[i]);
    }
    return veil_test_failures ? 1 : 0;
}

/* Counts results off by more than the allowed +1 over floor(x / 2^f); *up gets the +1 count. */
static size_t bad_results(const char *what, const uint64_t *got, const uint64_t *want, size_t n,
                          size_t *up)
{
    size_t bad = 0;
    *up = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t err = got[i] - want[i];
        if (err == 1)
            (*up)++;
        else if (err != 0 && bad++ < 3)
            fprintf(stderr, "FAIL %s: element %zu: error %" PRId64 " ulp\n", what, i, (int64_t)err);
    }
    if (bad)
        veil_test_failures++;
    return bad;
}

static void check_run(const struct veil_test_mpc_opts *o)
{
    static uint64_t want[MAXN];
    size_t up;
    char what[96];
    snprintf(what, sizeof what, "%s: trunc %d", veil_test_mpc_name(o), F);
    for (size_t i = 0; i < n_run; i++)
        want[i] = (uint64_t)((int64_t)x[i] >> F);
    bad_results(what, out, want, n_run, &up);
    VT_CHECK(up > 0 && up < n_run, "%s: %zu of %zu results one ulp up", what, up, n_run);
    veil_test_log("%s: %zu values, %zu one ulp up", what, n_run, up);
    const int fs[2] = {1, 40};
    for (int k = 0; k < 2; k++) {
        snprintf(what, sizeof what, "%s: trunc %d", veil_test_mpc_name(o), fs[k]);
        for (size_t i = 0; i < SMALLN; i++)
            want[i] = (uint64_t)((int64_t)x[i] >> fs[k]);
        bad_results(what, out + MAXN + (size_t)k * SMALLN, want, SMALLN, &up);
    }
    snprintf(what, sizeof what, "%s: mul_fixed", veil_test_mpc_name(o));
    for (size_t i = 0; i < SMALLN; i++)
        want[i] = veil_ref_fixed_mul(fa[i], fb[i], F);
    bad_results(what, out + MAXN + 2 * SMALLN, want, SMALLN, &up);
}

int main(void)
{
    x = malloc(MAXN * 8);
    fa = malloc(SMALLN * 8);
    fb = malloc(SMALLN * 8);
    uint64_t *w = malloc(MAXN * 8);
    if (!x || !fa || !fb || !w)
        return 1;
    /* every magnitude: a uniform signed 63-bit value shifted right by 0..62 bits */
    veil_test_random(41, x, MAXN);
    veil_test_random(42, w, MAXN);
    for (size_t i = 0; i < MAXN; i++) {
        int64_t v = ((int64_t)x[i] >> 1) >> (w[i] % 63);
        x[i] = (uint64_t)(v < -LIM ? -LIM : v);
    }
    const int64_t edge[] = {0,
                            1,
                            2,
                            3,
                            LIM,
                            LIM - 1,
                            1 << F,
                            (1 << F) - 1,
                            (1 << F) + 1,
                            INT64_C(1) << 61,
                            INT64_C(1) << 40,
                            (INT64_C(1) << 40) - 1};
    size_t ne = 0;
    for (size_t i = 0; i < sizeof edge / sizeof edge[0]; i++) {
        x[ne++] = (uint64_t)edge[i];
        x[ne++] = (uint64_t)-edge[i];
    }
    veil_test_random(43, fa, SMALLN);
    veil_test_random(44, fb, SMALLN);
    for (size_t i = 0; i < SMALLN; i++) {
        fa[i] = (uint64_t)((int64_t)fa[i] >> 34);
        fb[i] = (uint64_t)((int64_t)fb[i] >> 34);
    }
    free(w);
    out = veil_test_mpc_shared(OUT_WORDS * 8);
    if (!out)
        return 1;
    struct {
        struct veil_test_mpc_opts o;
        size_t n;
    } runs[] = {
        {{.nparties = 2, .material = VEIL_MPC_MAT_DEALER, .frac_bits = F}, MAXN},
        {{.nparties = 3, .material = VEIL_MPC_MAT_DEALER, .frac_bits = F}, MAXN / 2},
        {{.nparties = 4, .material = VEIL_MPC_MAT_DEALER, .frac_bits = F}, MAXN / 2},
        {{.nparties = 3, .material = VEIL_MPC_MAT_TRUSTED_FIRST_PARTY, .frac_bits = F},
         MAXN * 3 / 8},
        {{.nparties = 2, .material = VEIL_MPC_MAT_FILE, .frac_bits = F}, MAXN / 8},
    };
    for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) {
        n_run = runs[i].n;
        memset(out, 0, OUT_WORDS * 8);
        if (veil_test_mpc_run(&runs[i].o, body, NULL) != 0) {
            veil_test_failures++;
            continue;
        }
        check_run(&runs[i].o);
    }
    veil_test_mpc_shared_free(out, OUT_WORDS * 8);
    free(x);
    free(fa);
    free(fb);
    return veil_test_status();
}

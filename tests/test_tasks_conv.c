/* Tests secure 2-D convolution and its backward products (tasks/beaver.h) with real party
 * processes: N = 2, 3, 4 with a dealer process and N = 3 in trusted-first-party mode and N = 2 from
 * preprocessing files, on three geometries (batch 2, 3 -> 4 channels, 7 x 6 input, 3 x 3 kernel,
 * stride 2, pad 1; batch 1, 2 -> 3 channels, 5 x 5 input, 3 x 2 kernel, stride 1, pad 1; and batch
 * 1, 2 -> 5 channels, 3 x 3 input, 3 x 3 kernel, stride 1, pad 1: a weight larger than the input).
 * y = conv2d(x, w), dx = grad_input(w, dy) and dw = grad_weight(x, dy) are revealed and compared
 * bit for bit with direct convolution loops written here (so every mode and N gives the same
 * words). Costs per party equal the formulas: forward 1 round, 8 (N-1)(|x| + |w|); grad_input 1
 * round, 8 (N-1) OC (CKK + B OH OW); grad_weight 1 round, 8 (N-1) B OH OW (OC + CKK). The forward
 * local step is two accumulating GEMMs onto the correction part at every party, no sum task (from a
 * trace of the first and the third geometry: party 0's conv(D, E) folded into either product).
 * Invalid geometry
 * (padding >= kernel, kernel larger than the padded input, a zero size) and a mismatched tensor
 * shape are refused with a message before anything is submitted. */
#include "config.h"
#include "base/base_internal.h"
#include "base/trace.h"
#include "tasks/beaver.h"
#include "test_mpc_util.h"
#include "test_util.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define NGEOM 3
/* x larger than w in the first two (party 0 folds conv(D, E) in as conv(D, B + E)), w larger in
 * the third (conv(A + D, E)) */
static const struct veil_conv_geom geoms[NGEOM] = {
    {.batch = 2, .c = 3, .h = 7, .w = 6, .oc = 4, .kh = 3, .kw = 3, .stride = 2, .pad = 1},
    {.batch = 1, .c = 2, .h = 5, .w = 5, .oc = 3, .kh = 3, .kw = 2, .stride = 1, .pad = 1},
    {.batch = 1, .c = 2, .h = 3, .w = 3, .oc = 5, .kh = 3, .kw = 3, .stride = 1, .pad = 1},
};

struct sizes {
    size_t oh, ow, x, w, y;
};

static struct sizes sizes_of(const struct veil_conv_geom *g)
{
    struct sizes s;
    s.oh = (g->h + 2 * g->pad - g->kh) / g->stride + 1;
    s.ow = (g->w + 2 * g->pad - g->kw) / g->stride + 1;
    s.x = g->batch * g->c * g->h * g->w;
    s.w = g->oc * g->c * g->kh * g->kw;
    s.y = g->batch * g->oc * s.oh * s.ow;
    return s;
}

/* Plaintext inputs per geometry and the shared result area: y, dx, dw per geometry. */
static uint64_t *in_x[NGEOM], *in_w[NGEOM], *in_dy[NGEOM];
static uint64_t *out;
static size_t out_off[NGEOM][3], out_words;


/* Input pixel (iy, ix) that output (oy, ox) reads through kernel tap (ki, kj), or -1. */
static long pix(const struct veil_conv_geom *g, size_t oy, size_t ox, size_t ki, size_t kj)
{
    long iy = (long)(oy * g->stride + ki) - (long)g->pad,
         ix = (long)(ox * g->stride + kj) - (long)g->pad;
    if (iy < 0 || ix < 0 || iy >= (long)g->h || ix >= (long)g->w)
        return -1;
    return iy * (long)g->w + ix;
}

/* Direct loops: y = conv(x, w), dx = conv^T(dy, w), dw = corr(x, dy). */
static void oracle(const struct veil_conv_geom *g, const uint64_t *x, const uint64_t *w,
                   const uint64_t *dy, uint64_t *y, uint64_t *dx, uint64_t *dw)
{
    struct sizes s = sizes_of(g);
    const size_t hw = g->h * g->w, ohow = s.oh * s.ow, kk = g->kh * g->kw;
    memset(y, 0, s.y * 8);
    memset(dx, 0, s.x * 8);
    memset(dw, 0, s.w * 8);
    for (size_t b = 0; b < g->batch; b++)
        for (size_t o = 0; o < g->oc; o++)
            for (size_t oy = 0; oy < s.oh; oy++)
                for (size_t ox = 0; ox < s.ow; ox++) {
                    size_t yi = (b * g->oc + o) * ohow + oy * s.ow + ox;
                    for (size_t c = 0; c < g->c; c++)
                        for (size_t ki = 0; ki < g->kh; ki++)
                            for (size_t kj = 0; kj < g->kw; kj++) {
                                long p = pix(g, oy, ox, ki, kj);
                                if (p < 0)
                                    continue;
                                size_t xi = (b * g->c + c) * hw + (size_t)p;
                                size_t wi = (o * g->c + c) * kk + ki * g->kw + kj;
                                y[yi] += x[xi] * w[wi];
                                dx[xi] += dy[yi] * w[wi];
                                dw[wi] += dy[yi] * x[xi];
                            }
                }
}

static void bad_inputs(veil_mpc_t *m, const struct veil_sec *x, const struct veil_sec *w)
{
    size_t n0, n1;
    veil_mpc_items(m, &n0);
    struct veil_sec y = {0};
    struct veil_conv_geom g = geoms[0];
    g.pad = 3; /* >= kernel */
    VT_CHECK(veil_mpc_conv2d(m, x, w, &g, &y) == VEIL_ERR_INVAL, "pad >= kernel refused");
    VT_CHECK(strstr(veil_last_error(), "conv2d") != NULL, "message names the op: %s",
          veil_last_error());
    g = geoms[0];
    g.kh = g.kw = 10; /* larger than the padded input */
    g.pad = 1;
    VT_CHECK(veil_mpc_conv2d(m, x, w, &g, &y) == VEIL_ERR_INVAL, "kernel too large refused");
    g = geoms[0];
    g.stride = 0;
    VT_CHECK(veil_mpc_conv2d_grad_weight(m, x, x, &g, &y) == VEIL_ERR_INVAL, "stride 0 refused");
    g = geoms[0];
    g.c = 2; /* x has 3 channels */
    VT_CHECK(veil_mpc_conv2d(m, x, w, &g, &y) == VEIL_ERR_SHAPE, "channel mismatch refused");
    VT_CHECK(strstr(veil_last_error(), "x must be 4-D") != NULL, "message: %s", veil_last_error());
    VT_CHECK(veil_mpc_conv2d_grad_input(m, w, x, &geoms[0], &y) == VEIL_ERR_SHAPE,
          "dy of the wrong shape refused");
    veil_mpc_items(m, &n1);
    VT_CHECK(n0 == n1, "a refused call requested material");
}

static int run_geom(veil_mpc_t *m, int gi, struct veil_test_mpc_counters *c)
{
    const struct veil_conv_geom *g = &geoms[gi];
    const int self = veil_mpc_self(m);
    const uint64_t n1 = (uint64_t)veil_mpc_nparties(m) - 1;
    struct sizes s = sizes_of(g);
    const size_t xd[4] = {g->batch, g->c, g->h, g->w}, wd[4] = {g->oc, g->c, g->kh, g->kw};
    const size_t yd[4] = {g->batch, g->oc, s.oh, s.ow};
    const uint64_t ckk = g->c * g->kh * g->kw, bohow = g->batch * s.oh * s.ow;
    struct veil_sec sx = {0}, sw = {0}, sdy = {0}, y = {0}, dx = {0}, dw = {0};
    struct veil_sec r[3] = {{0}};
    int rc = veil_mpc_share_input(m, 0, self == 0 ? in_x[gi] : NULL, 4, xd, SIZE_MAX, &sx);
    if (rc == VEIL_OK)
        rc = veil_mpc_share_input(m, 1, self == 1 ? in_w[gi] : NULL, 4, wd, SIZE_MAX, &sw);
    if (rc == VEIL_OK)
        rc = veil_mpc_share_input(m, 0, self == 0 ? in_dy[gi] : NULL, 4, yd, SIZE_MAX, &sdy);
    if (rc != VEIL_OK || veil_mpc_wait(m) != VEIL_OK) {
        VT_CHECK(0, "inputs: %s", veil_last_error());
        return 1;
    }
    veil_test_mpc_counters(m, c);
    if (gi == 0)
        bad_inputs(m, &sx, &sw);
    if (veil_mpc_conv2d(m, &sx, &sw, g, &y) != VEIL_OK)
        VT_CHECK(0, "conv2d: %s", veil_last_error());
    veil_test_mpc_check_cost(m, "conv2d", c, 1, 8 * n1 * (s.x + s.w));
    if (veil_mpc_conv2d_grad_input(m, &sw, &sdy, g, &dx) != VEIL_OK)
        VT_CHECK(0, "grad_input: %s", veil_last_error());
    veil_test_mpc_check_cost(m, "grad_input", c, 1, 8 * n1 * g->oc * (ckk + bohow));
    if (veil_mpc_conv2d_grad_weight(m, &sx, &sdy, g, &dw) != VEIL_OK)
        VT_CHECK(0, "grad_weight: %s", veil_last_error());
    veil_test_mpc_check_cost(m, "grad_weight", c, 1, 8 * n1 * bohow * (g->oc + ckk));
    if (veil_test_failures)
        return 1;
    if (gi == 0 || gi == 2) { /* the unsplit local step, from a trace: accumulating GEMMs, no sum */
        const int party = veil_mpc_computes(m); /* the dealer and a recorder call it too */
        struct veil_sec y2 = {0};
        rc = party ? veil_trace_start() : VEIL_OK;
        if (rc == VEIL_OK && (rc = veil_mpc_conv2d(m, &sx, &sw, g, &y2)) == VEIL_OK)
            rc = veil_mpc_wait(m);
        VT_CHECK(rc == VEIL_OK, "process %d: traced conv2d: %s", self, veil_last_error());
        if (party) {
            veil_trace_stop();
            const int acc = veil_test_trace_tasks("veil_bgemm_acc"),
                      plain = veil_test_trace_tasks("veil_bgemm"),
                      sums = veil_test_trace_tasks("veil_sum"),
                      adds = veil_test_trace_tasks("veil_add"), want_adds = self == 0;
            veil_trace_free();
            VT_CHECK(
                acc == 2 && adds == want_adds && plain == 0 && sums == 0,
                "party %d: conv2d's local step ran %d accumulating GEMMs (expected 2, "
                "conv(D, E) folded in at party 0), %d adds (expected %d), %d plain GEMMs and %d "
                "sums (expected 0)",
                self, acc, adds, want_adds, plain, sums);
        }
        veil_mpc_release(m, &y2);
    }
    if ((rc = veil_mpc_reveal(m, &y, -1, &r[0])) == VEIL_OK &&
        (rc = veil_mpc_reveal(m, &dx, -1, &r[1])) == VEIL_OK)
        rc = veil_mpc_reveal(m, &dw, -1, &r[2]);
    if (rc != VEIL_OK || veil_mpc_wait(m) != VEIL_OK) {
        VT_CHECK(0, "reveal: %s", veil_last_error());
        return 1;
    }
    if (self == 0) {
        VT_CHECK(r[0].ndim == 4 && r[0].dims[2] == s.oh && r[0].dims[3] == s.ow, "y shape");
        VT_CHECK(r[1].ndim == 4 && r[1].dims[1] == g->c && r[1].dims[2] == g->h, "dx shape");
        VT_CHECK(r[2].ndim == 4 && r[2].dims[0] == g->oc && r[2].dims[3] == g->kw, "dw shape");
        memcpy(out + out_off[gi][0], veil_test_host(&r[0]), s.y * 8);
        memcpy(out + out_off[gi][1], veil_test_host(&r[1]), s.x * 8);
        memcpy(out + out_off[gi][2], veil_test_host(&r[2]), s.w * 8);
    }
    struct veil_sec *all[] = {&sx, &sw, &sdy, &y, &dx, &dw, &r[0], &r[1], &r[2]};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        veil_mpc_release(m, all[i]);
    return veil_test_failures ? 1 : 0;
}

static int body(veil_mpc_t *m, void *arg)
{
    (void)arg;
    struct veil_test_mpc_counters c;
    for (int gi = 0; gi < NGEOM; gi++)
        if (run_geom(m, gi, &c) != 0)
            return 1;
    return 0;
}

int main(void)
{
    uint64_t *want[NGEOM][3];
    out_words = 0;
    for (int gi = 0; gi < NGEOM; gi++) {
        struct sizes s = sizes_of(&geoms[gi]);
        in_x[gi] = malloc(s.x * 8);
        in_w[gi] = malloc(s.w * 8);
        in_dy[gi] = malloc(s.y * 8);
        want[gi][0] = malloc(s.y * 8);
        want[gi][1] = malloc(s.x * 8);
        want[gi][2] = malloc(s.w * 8);
        if (!in_x[gi] || !in_w[gi] || !in_dy[gi] || !want[gi][0] || !want[gi][1] || !want[gi][2])
            return 1;
        veil_test_random(31 + 10 * (uint64_t)gi, in_x[gi], s.x);
        veil_test_random(32 + 10 * (uint64_t)gi, in_w[gi], s.w);
        veil_test_random(33 + 10 * (uint64_t)gi, in_dy[gi], s.y);
        veil_test_mix_edges(in_x[gi], in_w[gi], s.w < s.x ? s.w : s.x);
        oracle(&geoms[gi], in_x[gi], in_w[gi], in_dy[gi], want[gi][0], want[gi][1], want[gi][2]);
        out_off[gi][0] = out_words;
        out_off[gi][1] = out_words + s.y;
        out_off[gi][2] = out_words + s.y + s.x;
        out_words += s.y + s.x + s.w;
    }
    out = veil_test_mpc_shared(out_words * 8);
    if (!out)
        return 1;
    struct veil_test_mpc_opts runs[] = {
        {.nparties = 2, .material = VEIL_MPC_MAT_DEALER, .frac_bits = -1},
        {.nparties = 3, .material = VEIL_MPC_MAT_DEALER, .frac_bits = -1},
        {.nparties = 4, .material = VEIL_MPC_MAT_DEALER, .frac_bits = -1},
        {.nparties = 3, .material = VEIL_MPC_MAT_TRUSTED_FIRST_PARTY, .frac_bits = -1},
        {.nparties = 2, .material = VEIL_MPC_MAT_FILE, .frac_bits = -1},
    };
    static const char *names[3] = {"conv2d", "grad_input", "grad_weight"};
    for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) {
        memset(out, 0, out_words * 8);
        if (veil_test_mpc_run(&runs[i], body, NULL) != 0) {
            veil_test_failures++;
            continue;
        }
        for (int gi = 0; gi < NGEOM; gi++) {
            struct sizes s = sizes_of(&geoms[gi]);
            const size_t len[3] = {s.y, s.x, s.w};
            for (int k = 0; k < 3; k++) {
                char what[96];
                snprintf(what, sizeof what, "%s: geometry %d: %s", veil_test_mpc_name(&runs[i]), gi,
                         names[k]);
                veil_test_compare_u64(what, out + out_off[gi][k], want[gi][k], len[k]);
            }
        }
        veil_test_log("%s: done", veil_test_mpc_name(&runs[i]));
    }
    veil_test_mpc_shared_free(out, out_words * 8);
    for (int gi = 0; gi < NGEOM; gi++) {
        free(in_x[gi]);
        free(in_w[gi]);
        free(in_dy[gi]);
        for (int k = 0; k < 3; k++)
            free(want[gi][k]);
    }
    return veil_test_status();
}

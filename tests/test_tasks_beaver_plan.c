/* Tests what the Beaver-family protocols (tasks/beaver.h, tasks/trunc.h) request from the offline
 * phase: a RECORDER context (no network, no StarPU) runs mul, square, matmul (and its tn / nt
 * forms), conv2d, both conv2d backward products, trunc and mul_fixed, and the recorded items
 * must be exactly the expected kinds, parameters and consecutive indices (what the generator
 * turns into per-party files); output tensors carry the right shapes; refused calls record
 * nothing. */
#include "config.h"
#include "base/base_internal.h"
#include "tasks/beaver.h"
#include "tasks/trunc.h"
#include "test_util.h"

#include <string.h>

int main(void)
{
    struct veil_mpc_options o;
    veil_mpc_options_defaults(&o);
    o.frac_bits = 16;
    veil_mpc_t *m = veil_mpc_new_recorder(3, &o);
    VT_CHECK(m != NULL, "recorder: %s", veil_last_error());
    if (!m)
        return 1;
    const size_t d1[1] = {1000}, dx[2] = {6, 4}, dy[2] = {4, 5}, dv[2] = {5, 4};
    const struct veil_conv_geom g = {
        .batch = 2, .c = 3, .h = 8, .w = 7, .oc = 5, .kh = 3, .kw = 3, .stride = 2, .pad = 1};
    const size_t oh = 4, ow = 4, ckk = 27;
    const size_t gx[4] = {2, 3, 8, 7}, gw[4] = {5, 3, 3, 3}, gy[4] = {2, 5, oh, ow};
    struct veil_sec a = {0}, b = {0}, x = {0}, y = {0}, v = {0}, cx = {0}, cw = {0}, cy = {0};
    struct veil_sec z[12];
    memset(z, 0, sizeof z);
    int rc = VEIL_OK;
    if (veil_sec_init(m, &a, VEIL_SHARE_ARITH, 1, d1, 0) != VEIL_OK ||
        veil_sec_init(m, &b, VEIL_SHARE_ARITH, 1, d1, 0) != VEIL_OK ||
        veil_sec_init(m, &x, VEIL_SHARE_ARITH, 2, dx, SIZE_MAX) != VEIL_OK ||
        veil_sec_init(m, &y, VEIL_SHARE_ARITH, 2, dy, SIZE_MAX) != VEIL_OK ||
        veil_sec_init(m, &v, VEIL_SHARE_ARITH, 2, dv, SIZE_MAX) != VEIL_OK ||
        veil_sec_init(m, &cx, VEIL_SHARE_ARITH, 4, gx, SIZE_MAX) != VEIL_OK ||
        veil_sec_init(m, &cw, VEIL_SHARE_ARITH, 4, gw, SIZE_MAX) != VEIL_OK ||
        veil_sec_init(m, &cy, VEIL_SHARE_ARITH, 4, gy, SIZE_MAX) != VEIL_OK) {
        VT_CHECK(0, "tensors: %s", veil_last_error());
        return 1;
    }
    /* refused: nothing recorded */
    VT_CHECK(veil_mpc_matmul(m, &x, &v, &z[0]) == VEIL_ERR_SHAPE, "6x4 . 5x4 refused");
    VT_CHECK(veil_mpc_trunc(m, &a, 63, &z[0]) == VEIL_ERR_INVAL, "f 63 refused");
    size_t n = 1;
    veil_mpc_items(m, &n);
    VT_CHECK(n == 0, "refused calls recorded %zu items", n);

    if (rc == VEIL_OK)
        rc = veil_mpc_mul(m, &a, &b, &z[0]);
    if (rc == VEIL_OK)
        rc = veil_mpc_square(m, &a, &z[1]);
    if (rc == VEIL_OK)
        rc = veil_mpc_matmul(m, &x, &y, &z[2]);
    if (rc == VEIL_OK)
        rc = veil_mpc_matmul_tn(m, &x, &x, &z[3]); /* 4x6 . 6x4 */
    if (rc == VEIL_OK)
        rc = veil_mpc_matmul_nt(m, &x, &x, &z[4]); /* 6x4 . 4x6 */
    if (rc == VEIL_OK)
        rc = veil_mpc_conv2d(m, &cx, &cw, &g, &z[5]);
    if (rc == VEIL_OK)
        rc = veil_mpc_conv2d_grad_input(m, &cw, &cy, &g, &z[6]);
    if (rc == VEIL_OK)
        rc = veil_mpc_conv2d_grad_weight(m, &cx, &cy, &g, &z[7]);
    if (rc == VEIL_OK)
        rc = veil_mpc_trunc(m, &a, 16, &z[8]);
    if (rc == VEIL_OK)
        rc = veil_mpc_mul_fixed(m, &a, &b, &z[9]);
    VT_CHECK(rc == VEIL_OK, "recording: %s", veil_last_error());

    const struct veil_preproc_item want[] = {
        veil_preproc_item_beaver(0, 1000),
        veil_preproc_item_square(1, 1000),
        veil_preproc_item_matmul(2, 6, 4, 5),
        veil_preproc_item_matmul(3, 4, 6, 4),
        veil_preproc_item_matmul(4, 6, 4, 6),
        veil_preproc_item_conv(5, 2, 3, 8, 7, 5, 3, 3, 2, 1),
        veil_preproc_item_matmul(6, ckk, 5, 2 * oh * ow),
        veil_preproc_item_matmul(7, 5, 2 * oh * ow, ckk),
        veil_preproc_item_trunc(8, 1000, 16),
        veil_preproc_item_beaver(9, 1000),
        veil_preproc_item_trunc(10, 1000, 16),
    };
    const size_t nwant = sizeof want / sizeof want[0];
    const struct veil_preproc_item *got = veil_mpc_items(m, &n);
    VT_CHECK(n == nwant, "%zu items recorded, expected %zu", n, nwant);
    for (size_t i = 0; i < n && i < nwant; i++) {
        char gb[128], wb[128];
        VT_CHECK(got[i].kind == want[i].kind && got[i].index == want[i].index &&
                     memcmp(got[i].p, want[i].p, sizeof want[i].p) == 0,
                 "item %zu: %s, expected %s", i, veil_preproc_item_format(&got[i], gb, sizeof gb),
                 veil_preproc_item_format(&want[i], wb, sizeof wb));
    }
    /* output shapes */
    VT_CHECK(z[0].numel == 1000 && z[1].numel == 1000, "elementwise shapes");
    VT_CHECK(z[2].ndim == 2 && z[2].dims[0] == 6 && z[2].dims[1] == 5, "matmul 6 x 5");
    VT_CHECK(z[3].dims[0] == 4 && z[3].dims[1] == 4, "tn 4 x 4");
    VT_CHECK(z[4].dims[0] == 6 && z[4].dims[1] == 6, "nt 6 x 6");
    VT_CHECK(z[5].ndim == 4 && z[5].dims[1] == 5 && z[5].dims[2] == oh && z[5].dims[3] == ow,
             "conv output 2 x 5 x 4 x 4");
    VT_CHECK(z[6].ndim == 4 && memcmp(z[6].dims, gx, sizeof gx) == 0, "grad_input NCHW");
    VT_CHECK(z[7].ndim == 4 && memcmp(z[7].dims, gw, sizeof gw) == 0, "grad_weight OIHW");
    VT_CHECK(z[8].numel == 1000 && z[9].numel == 1000, "trunc shapes");
    struct veil_sec *all[] = {&a, &b, &x, &y, &v, &cx, &cw, &cy};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        veil_mpc_release(m, all[i]);
    for (int i = 0; i < 12; i++)
        veil_mpc_release(m, &z[i]);
    veil_mpc_destroy(&m);
    return veil_test_status();
}

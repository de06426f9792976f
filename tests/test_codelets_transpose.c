/* Tests the matrix transpose codelet run as a StarPU task against the reference, bit for bit, for
 * shapes 1x1, 1x100, 100x1, 31x33, 64x64, 65x130 and 100x37 (not multiples of the 32-wide tile),
 * also with an input row pitch ld > nx and an output with ld > nx (padding left untouched);
 * and that a wrongly shaped output, a vector handle, an in-place call and NULL are refused. */
#include "config.h"

#include "codelets/codelets_internal.h"
#include "codelets/reference.h"
#include "test_util.h"

#include <stdlib.h>
#include <string.h>

static const size_t shapes[][2] = {{1, 1},   {1, 100},  {100, 1}, {31, 33},
                                   {64, 64}, {65, 130}, {100, 37}};

static starpu_data_handle_t mat(uint64_t *p, size_t rows, size_t cols, size_t ld)
{
    starpu_data_handle_t h;
    starpu_matrix_data_register(&h, STARPU_MAIN_RAM, (uintptr_t)p, (uint32_t)ld, (uint32_t)cols,
                                (uint32_t)rows, sizeof(uint64_t));
    return h;
}

static void check(size_t rows, size_t cols, size_t pad)
{
    char what[96];
    size_t ld_in = cols + pad, ld_out = rows + pad;
    uint64_t *in = malloc(rows * ld_in * 8), *out = malloc(cols * ld_out * 8);
    uint64_t *dense = malloc(rows * cols * 8), *want = malloc(rows * cols * 8),
             *got = malloc(rows * cols * 8);
    if (in == NULL || out == NULL || dense == NULL || want == NULL || got == NULL) {
        fprintf(stderr, "FAIL: out of memory\n");
        veil_test_failures++;
        goto done;
    }
    veil_test_random(9000 + rows * 1000 + cols, in, rows * ld_in);
    veil_test_mix_edges(in, NULL, rows * ld_in);
    for (size_t r = 0; r < rows; r++)
        memcpy(dense + r * cols, in + r * ld_in, cols * 8);
    memset(out, 0xa5, cols * ld_out * 8);
    starpu_data_handle_t hi = mat(in, rows, cols, ld_in), ho = mat(out, cols, rows, ld_out);
    VT_CHECK(veil_task_transpose(hi, ho, 0) == VEIL_OK, "transpose %zux%zu: %s", rows, cols,
             veil_last_error());
    starpu_task_wait_for_all();
    starpu_data_unregister(hi);
    starpu_data_unregister(ho);
    for (size_t c = 0; c < cols; c++) {
        memcpy(got + c * rows, out + c * ld_out, rows * 8);
        for (size_t p = rows; p < ld_out; p++)
            VT_CHECK(out[c * ld_out + p] == UINT64_C(0xa5a5a5a5a5a5a5a5),
                     "transpose wrote into the row padding");
    }
    veil_ref_transpose(rows, cols, dense, want);
    snprintf(what, sizeof(what), "transpose %zux%zu pad %zu", rows, cols, pad);
    veil_test_compare_u64(what, got, want, rows * cols);
done:
    free(in);
    free(out);
    free(dense);
    free(want);
    free(got);
}

static void check_bad_input(void)
{
    uint64_t a[24] = {0}, b[24] = {0}, c[24] = {0}, d[24] = {0};
    starpu_data_handle_t h46 = mat(a, 4, 6, 6), h64 = mat(b, 6, 4, 4), h46b = mat(c, 4, 6, 6), hv;
    starpu_vector_data_register(&hv, STARPU_MAIN_RAM, (uintptr_t)d, 24, sizeof(uint64_t));
    VT_CHECK(veil_task_transpose(h46, h46b, 0) == VEIL_ERR_SHAPE, "4x6 into 4x6");
    VT_CHECK(veil_task_transpose(h46, hv, 0) == VEIL_ERR_INVAL, "into a vector");
    VT_CHECK(veil_task_transpose(h46, h46, 0) == VEIL_ERR_INVAL, "in place");
    VT_CHECK(veil_task_transpose(NULL, h64, 0) == VEIL_ERR_INVAL, "NULL input");
    starpu_task_wait_for_all();
    starpu_data_unregister(h46);
    starpu_data_unregister(h64);
    starpu_data_unregister(h46b);
    starpu_data_unregister(hv);
}

int main(void)
{
    int rc = veil_test_starpu_start();
    if (rc != 0)
        return rc;
    for (size_t s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++) {
        check(shapes[s][0], shapes[s][1], 0);
        check(shapes[s][0], shapes[s][1], 3);
    }
    check_bad_input();
    veil_test_starpu_stop();
    return veil_test_status();
}

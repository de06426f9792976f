/*
 * Tests weights from a safetensors file in PyTorch's layout (as torch writes a state_dict:
 * "__metadata__" {"format": "pt"}, F32, nn.Linear's weight as (out, in)) loaded by name into a
 * dense layer built with the DSL: the weight is transposed and the plaintext run equals
 * x W^T + b; a missing tensor and a tensor of another shape are refused naming them.
 */
#include "config.h"

#include "veil/onnx.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A safetensors file written byte by byte as PyTorch does; bias_len 4 or (bad) 5. */
static int write_pt(const char *path, const float *w, const float *b, int bias_len,
                    const char *wname)
{
    char hdr[512];
    int len = snprintf(hdr, sizeof hdr,
                       "{\"__metadata__\":{\"format\":\"pt\"},\"fc.bias\":{\"dtype\":\"F32\","
                       "\"shape\":[%d],\"data_offsets\":[0,%d]},\"%s\":{\"dtype\":\"F32\","
                       "\"shape\":[4,3],\"data_offsets\":[%d,%d]}}",
                       bias_len, 4 * bias_len, wname, 4 * bias_len, 4 * bias_len + 48);
    while (len % 8)
        hdr[len++] = ' ';
    FILE *f = fopen(path, "wb");
    if (!f)
        return 1;
    uint64_t h = (uint64_t)len;
    unsigned char le[8];
    for (int i = 0; i < 8; i++)
        le[i] = (unsigned char)(h >> (8 * i));
    float zero = 0;
    int ok = fwrite(le, 1, 8, f) == 8 && fwrite(hdr, 1, (size_t)len, f) == (size_t)len &&
             fwrite(b, 4, 4, f) == 4 && (bias_len == 4 || fwrite(&zero, 4, 1, f) == 1) &&
             fwrite(w, 4, 12, f) == 12;
    return (fclose(f) == 0 && ok) ? 0 : 1;
}

int main(void)
{
    int fail = 0;
    char path[] = "/tmp/veil-pt-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0)
        return 1;
    close(fd);
    float w[12] = {0.5f, -1, 0.25f, 1, 2, -0.5f, -2, 0.75f, 1.5f, 0.125f, -0.25f, 1}; /* (4, 3) */
    float b[4] = {0.1f, -0.2f, 0.3f, -0.4f};
    veil_graph_t *g = veil_graph_new("pt");
    size_t xd[2] = {2, 3}, wd[2] = {3, 4}, bd[1] = {4};
    veil_node_t *x = veil_input(g, "x", 1, 2, xd);
    veil_node_t *y = veil_dense(g, "fc", x, veil_param(g, "fc.weight", 0, 2, wd),
                                veil_param(g, "fc.bias", 0, 1, bd));
    veil_reveal(g, y, 1);
    veil_plan_t *p = veil_compile(g, NULL);
    struct veil_feed *feeds = NULL;
    size_t n = 0;
    if (!p || write_pt(path, w, b, 4, "fc.weight") ||
        veil_onnx_pt_feeds(path, g, p, &feeds, &n) != VEIL_OK || n != 2) {
        printf("FAIL: PyTorch weights: %s\n", veil_last_error());
        fail = 1;
    } else {
        double xv[6] = {1, -2, 0.5, 3, 0.25, -1}, out[8], *outs[1] = {out};
        struct veil_feed all[3] = {feeds[0], feeds[1], {"x", xv, 6}};
        if (veil_plain_run(p, VEIL_PLAIN_DOUBLE, all, 3, outs) != VEIL_OK) {
            printf("FAIL: run: %s\n", veil_last_error());
            fail = 1;
        }
        for (int r = 0; r < 2 && !fail; r++)
            for (int o = 0; o < 4; o++) {
                double want = b[o];
                for (int i = 0; i < 3; i++)
                    want += xv[r * 3 + i] * w[o * 3 + i];
                if (fabs(out[r * 4 + o] - want) > 1e-6) {
                    printf("FAIL: y[%d][%d] = %g, expected %g\n", r, o, out[r * 4 + o], want);
                    fail = 1;
                }
            }
    }
    veil_onnx_feeds_free(&feeds, n);
    write_pt(path, w, b, 4, "fc.other");
    if (veil_onnx_pt_feeds(path, g, p, &feeds, &n) == VEIL_OK ||
        !strstr(veil_last_error(), "fc.weight")) {
        printf("FAIL: a missing tensor: %s\n", veil_last_error());
        fail = 1;
    }
    veil_onnx_feeds_free(&feeds, n);
    write_pt(path, w, b, 5, "fc.weight");
    if (veil_onnx_pt_feeds(path, g, p, &feeds, &n) == VEIL_OK ||
        !strstr(veil_last_error(), "fc.bias")) {
        printf("FAIL: a tensor of another shape: %s\n", veil_last_error());
        fail = 1;
    }
    veil_onnx_feeds_free(&feeds, n);
    veil_plan_destroy(&p);
    veil_graph_destroy(&g);
    unlink(path);
    return fail;
}

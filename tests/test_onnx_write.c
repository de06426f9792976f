/*
 * Tests veil_onnx_write: a model of every layer kind it writes (Conv with padding, Relu, MaxPool,
 * AveragePool, Reshape, Gemm, Flatten) goes through veil_onnx_load with its parameters' names and
 * values unchanged, and its plaintext run in double equals, bit for bit, the same network built
 * with the DSL; with ArgMax as last layer the output is each row's class. Bad input: a Conv
 * without its weight, an ArgMax before the last layer and a pool without a kernel are refused
 * (VEIL_ERR_INVAL naming the layer).
 */
#include "config.h"

#include "veil.h"
#include "veil/onnx.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define B 2

static double cw[3 * 9], cb[3], fw[3 * 4], fb[4], xin[B * 36];

/* The DSL's network, run in double on xin: out (B, 4). */
static int dsl_run(double *out)
{
    veil_graph_t *g = veil_graph_new("ref");
    size_t xd[4] = {B, 1, 6, 6}, cwd[4] = {3, 1, 3, 3}, cbd[1] = {3}, fwd[2] = {3, 4}, fbd[1] = {4},
           rd[2] = {B, 3};
    veil_node_t *x = veil_input(g, "x", 1, 4, xd);
    veil_node_t *h = veil_conv2d(g, "c", x, veil_param(g, "c.weight", 0, 4, cwd),
                                 veil_param(g, "c.bias", 0, 1, cbd), 1, 1);
    h = veil_avgpool2d(g, NULL, veil_maxpool2d(g, NULL, veil_relu(g, NULL, h), 2, 2), 3, 3);
    h = veil_reshape(g, NULL, h, 2, rd);
    h = veil_dense(g, "fc", h, veil_param(g, "fc.weight", 0, 2, fwd),
                   veil_param(g, "fc.bias", 0, 1, fbd));
    veil_reveal(g, veil_flatten(g, NULL, veil_relu(g, NULL, h)), 1);
    struct veil_compile_options co;
    veil_compile_options_defaults(&co);
    veil_plan_t *p = veil_compile(g, &co);
    struct veil_feed f[5] = {{"x", xin, B * 36}, {"c.weight", cw, 27}, {"c.bias", cb, 3},
                             {"fc.weight", fw, 12}, {"fc.bias", fb, 4}};
    double *outs[1] = {out};
    int rc = p ? veil_plain_run(p, VEIL_PLAIN_DOUBLE, f, 5, outs) : VEIL_ERR_INVAL;
    veil_plan_destroy(&p);
    veil_graph_destroy(&g);
    return rc;
}

/* The written model loaded and run in double on xin: out (numel of its output). */
static int onnx_run(const char *path, double *out, size_t *numel)
{
    veil_onnx_model_t *m = NULL;
    int rc = veil_onnx_load(path, NULL, &m);
    veil_plan_t *p = NULL;
    if (rc == VEIL_OK) {
        struct veil_compile_options co;
        veil_compile_options_defaults(&co);
        p = veil_compile(veil_onnx_graph(m), &co);
        rc = p ? VEIL_OK : VEIL_ERR_INVAL;
    }
    size_t nf = 0;
    const struct veil_feed *pf = rc == VEIL_OK ? veil_onnx_param_feeds(m, &nf) : NULL;
    struct veil_feed f[8];
    for (size_t i = 0; i < nf && i < 7; i++)
        f[i] = pf[i];
    if (rc == VEIL_OK && nf != 4) {
        printf("FAIL: %zu parameters loaded, 4 written\n", nf);
        rc = VEIL_ERR_INVAL;
    }
    for (size_t i = 0; rc == VEIL_OK && i < nf; i++) { /* names and values as written */
        const double *want = !strcmp(f[i].name, "c.weight")    ? cw
                             : !strcmp(f[i].name, "c.bias")    ? cb
                             : !strcmp(f[i].name, "fc.weight") ? fw
                             : !strcmp(f[i].name, "fc.bias")   ? fb
                                                               : NULL;
        if (!want || memcmp(want, f[i].values, f[i].numel * sizeof(double))) {
            printf("FAIL: parameter %s not loaded as written\n", f[i].name);
            rc = VEIL_ERR_INVAL;
        }
    }
    if (rc == VEIL_OK) {
        f[nf] = (struct veil_feed){veil_onnx_input_leaf(m, 0), xin, B * 36};
        *numel = veil_plan_output_numel(p, 0);
        double *outs[1] = {out};
        rc = veil_plain_run(p, VEIL_PLAIN_DOUBLE, f, nf + 1, outs);
    }
    if (rc != VEIL_OK)
        printf("FAIL: %s: %s\n", path, veil_last_error());
    veil_plan_destroy(&p);
    veil_onnx_destroy(&m);
    return rc;
}

int main(void)
{
    for (int i = 0; i < 27; i++)
        cw[i] = sin(1.0 + i) * 0.5;
    for (int i = 0; i < 12; i++)
        fw[i] = cos(2.0 + i);
    for (int i = 0; i < 3; i++)
        cb[i] = 0.1 * (i - 1);
    for (int i = 0; i < 4; i++)
        fb[i] = 0.05 * i;
    for (int i = 0; i < B * 36; i++)
        xin[i] = sin(0.3 * i);
    struct veil_onnx_layer l[9];
    memset(l, 0, sizeof l);
    l[0] = (struct veil_onnx_layer){VEIL_ONNX_LAYER_CONV, "c", cw, cb, 4, {3, 1, 3, 3}, 0, 1, 1};
    l[1].kind = VEIL_ONNX_LAYER_RELU;
    l[2] = (struct veil_onnx_layer){.kind = VEIL_ONNX_LAYER_MAXPOOL, .kernel = 2, .stride = 2};
    l[3] = (struct veil_onnx_layer){.kind = VEIL_ONNX_LAYER_AVGPOOL, .kernel = 3};
    l[4] = (struct veil_onnx_layer){.kind = VEIL_ONNX_LAYER_RESHAPE, .ndim = 2, .dims = {0, 3}};
    l[5] = (struct veil_onnx_layer){VEIL_ONNX_LAYER_GEMM, "fc", fw, fb, 2, {3, 4}, 0, 0, 0};
    l[6].kind = VEIL_ONNX_LAYER_RELU;
    l[7].kind = VEIL_ONNX_LAYER_FLATTEN;
    l[8] = (struct veil_onnx_layer){.kind = VEIL_ONNX_LAYER_ARGMAX, .name = "class"};
    char dir[] = "/tmp/veil-onnx-write-XXXXXX", a[64], c[64];
    if (!mkdtemp(dir))
        return 1;
    snprintf(a, sizeof a, "%s/a.onnx", dir);
    snprintf(c, sizeof c, "%s/c.onnx", dir);
    size_t xd[4] = {B, 1, 6, 6}, n = 0;
    int fail = 0;
    double ref[B * 4], got[B * 4], cls[B];
    if (veil_onnx_write(a, "x", 4, xd, l, 8, "y") != VEIL_OK ||
        veil_onnx_write(c, "x", 4, xd, l, 9, "class") != VEIL_OK) {
        printf("FAIL: write: %s\n", veil_last_error());
        fail = 1;
    } else if (dsl_run(ref) != VEIL_OK || onnx_run(a, got, &n) != VEIL_OK || n != B * 4 ||
               memcmp(ref, got, sizeof ref)) {
        printf("FAIL: the written model's run differs from the DSL's (%zu values)\n", n);
        fail = 1;
    } else if (onnx_run(c, cls, &n) != VEIL_OK || n != B) {
        printf("FAIL: the model with ArgMax has %zu outputs\n", n);
        fail = 1;
    } else {
        for (int r = 0; r < B; r++) {
            int best = 0;
            for (int k = 1; k < 4; k++)
                best = ref[r * 4 + k] > ref[r * 4 + best] ? k : best;
            if (cls[r] != best) {
                printf("FAIL: row %d: class %g, the DSL's logits give %d\n", r, cls[r], best);
                fail = 1;
            }
        }
    }
    /* bad input: a Conv without its weight, ArgMax before the end, a pool without a kernel */
    struct veil_onnx_layer bad = l[0];
    bad.weight = NULL;
    if (veil_onnx_write(a, "x", 4, xd, &bad, 1, "y") != VEIL_ERR_INVAL ||
        !strstr(veil_last_error(), "'c'")) {
        printf("FAIL: a Conv without weight: %s\n", veil_last_error());
        fail = 1;
    }
    struct veil_onnx_layer two[2] = {l[8], l[1]};
    if (veil_onnx_write(a, "x", 4, xd, two, 2, "y") != VEIL_ERR_INVAL) {
        printf("FAIL: ArgMax before the last layer was written\n");
        fail = 1;
    }
    bad = l[2];
    bad.kernel = 0;
    if (veil_onnx_write(a, "x", 4, xd, &bad, 1, "y") != VEIL_ERR_INVAL) {
        printf("FAIL: a pool without a kernel was written\n");
        fail = 1;
    }
    unlink(a);
    unlink(c);
    rmdir(dir);
    if (!fail && getenv("VEIL_TEST_VERBOSE"))
        printf("ok: written model equals the DSL's, classes, bad layers refused\n");
    return fail;
}

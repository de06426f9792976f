/*
 * Tests that the ONNX loader refuses bad input with a clear error and never crashes: truncated
 * and corrupted files, a cycle, a dangling name, shapes that do not match, huge dimensions,
 * opsets out of range, an unsupported op (the message names the node, the op type and the
 * supported list), external data that escapes the model's folder (absolute path, "..", a
 * symbolic link) next to external data beside the model that loads; and a few thousand random
 * mutations of a valid model parsed from memory. Models are written here with protobuf-c.
 */
#include "config.h"

#include "onnx/onnx.pb-c.h"
#include "veil/onnx.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int failures;
static char tmp[] = "/tmp/veil-onnx-load-XXXXXX";

#define CHECK(c, ...)                                                                              \
    do {                                                                                           \
        if (!(c)) {                                                                                \
            printf("FAIL line %d: ", __LINE__);                                                    \
            printf(__VA_ARGS__);                                                                   \
            printf("\n");                                                                          \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

struct spec {
    int64_t opset;
    int64_t xdims[2];     /* input x's shape */
    const char *n0_in[3]; /* node 0: op, inputs, output */
    const char *n0_op, *n0_out;
    const char *n1_in[1], *n1_op, *n1_out; /* optional node 1 (n1_op NULL: none) */
    const char *output;
    int64_t wdims[2]; /* initializer "w" (wdims[0] 0: none) */
    const char *ext;  /* external data location for w, or NULL */
};

/* Packs the model of s into *buf (owned). */
static size_t build(const struct spec *s, uint8_t **buf)
{
    Onnx__ModelProto mp = ONNX__MODEL_PROTO__INIT;
    Onnx__GraphProto gp = ONNX__GRAPH_PROTO__INIT;
    Onnx__OperatorSetIdProto op = ONNX__OPERATOR_SET_ID_PROTO__INIT, *ops[1] = {&op};
    op.domain = "", op.has_version = 1, op.version = s->opset;
    mp.has_ir_version = 1, mp.ir_version = 8, mp.n_opset_import = 1, mp.opset_import = ops;
    mp.graph = &gp;
    gp.name = "t";
    Onnx__TensorShapeProto__Dimension d0 = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__INIT, d1 = d0;
    d0.value_case = d1.value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
    d0.dim_value = s->xdims[0], d1.dim_value = s->xdims[1];
    Onnx__TensorShapeProto__Dimension *dims[2] = {&d0, &d1};
    Onnx__TensorShapeProto shp = ONNX__TENSOR_SHAPE_PROTO__INIT;
    shp.n_dim = 2, shp.dim = dims;
    Onnx__TypeProto__Tensor tt = ONNX__TYPE_PROTO__TENSOR__INIT;
    tt.has_elem_type = 1, tt.elem_type = 1, tt.shape = &shp;
    Onnx__TypeProto tp = ONNX__TYPE_PROTO__INIT;
    tp.value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE, tp.tensor_type = &tt;
    Onnx__ValueInfoProto in = ONNX__VALUE_INFO_PROTO__INIT, out = ONNX__VALUE_INFO_PROTO__INIT;
    in.name = "x", in.type = &tp, out.name = (char *)s->output;
    Onnx__ValueInfoProto *ins[1] = {&in}, *outs[1] = {&out};
    gp.n_input = 1, gp.input = ins, gp.n_output = 1, gp.output = outs;
    float wv[64] = {0};
    Onnx__TensorProto w = ONNX__TENSOR_PROTO__INIT, *inits[1] = {&w};
    Onnx__StringStringEntryProto loc = ONNX__STRING_STRING_ENTRY_PROTO__INIT, *ext[1] = {&loc};
    if (s->wdims[0]) {
        w.name = "w", w.n_dims = 2, w.dims = (int64_t *)s->wdims, w.has_data_type = 1;
        w.data_type = 1;
        if (s->ext) {
            loc.key = "location", loc.value = (char *)s->ext;
            w.has_data_location = 1;
            w.data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
            w.n_external_data = 1, w.external_data = ext;
        } else {
            w.n_float_data = (size_t)(s->wdims[0] * s->wdims[1]), w.float_data = wv;
        }
        gp.n_initializer = 1, gp.initializer = inits;
    }
    Onnx__NodeProto n0 = ONNX__NODE_PROTO__INIT, n1 = ONNX__NODE_PROTO__INIT, *nodes[2];
    size_t k = 0;
    while (k < 3 && s->n0_in[k])
        k++;
    n0.name = "node0", n0.op_type = (char *)s->n0_op, n0.n_input = k;
    n0.input = (char **)s->n0_in, n0.n_output = 1, n0.output = (char **)&s->n0_out;
    nodes[0] = &n0;
    gp.n_node = 1, gp.node = nodes;
    if (s->n1_op) {
        n1.name = "node1", n1.op_type = (char *)s->n1_op, n1.n_input = 1;
        n1.input = (char **)s->n1_in, n1.n_output = 1, n1.output = (char **)&s->n1_out;
        nodes[1] = &n1;
        gp.n_node = 2;
    }
    size_t sz = onnx__model_proto__get_packed_size(&mp);
    *buf = malloc(sz + 1);
    onnx__model_proto__pack(&mp, *buf);
    return sz;
}

static int write_file(const char *path, const void *b, size_t n)
{
    FILE *f = fopen(path, "wb");
    int ok = f && fwrite(b, 1, n, f) == n;
    if (f)
        ok = fclose(f) == 0 && ok;
    return ok ? 0 : 1;
}

/* Loads s (through a file when path) and returns the status; msg receives the error. */
static int load(const struct spec *s, const char *path, char *msg, size_t len)
{
    uint8_t *b;
    size_t n = build(s, &b);
    veil_onnx_model_t *m = NULL;
    int rc;
    if (path) {
        rc = write_file(path, b, n) ? VEIL_ERR_IO : veil_onnx_load(path, NULL, &m);
    } else {
        rc = veil_onnx_parse(b, n, "mem", NULL, &m);
    }
    snprintf(msg, len, "%s", rc == VEIL_OK ? "" : veil_last_error());
    veil_onnx_destroy(&m);
    free(b);
    return rc;
}

static const struct spec relu = {13,   {2, 3}, {"x"}, "Relu", "y", {NULL},
                                 NULL, NULL,   "y",   {0, 0}, NULL};

/* The cases one after another, each a few lines (one scenario per paragraph). */
int main(void)
{
    if (!mkdtemp(tmp))
        return 1;
    char msg[2048], path[256];
    int rc;
    CHECK((rc = load(&relu, NULL, msg, sizeof msg)) == VEIL_OK, "valid Relu model: %s", msg);

    /* truncated and corrupted */
    uint8_t *b;
    size_t n = build(&relu, &b);
    int refused = 0;
    for (size_t cut = 0; cut < n; cut++) {
        veil_onnx_model_t *m = NULL;
        if (veil_onnx_parse(b, cut, "cut", NULL, &m) != VEIL_OK)
            refused++;
        veil_onnx_destroy(&m);
    }
    CHECK(refused > 0, "no truncation was refused");
    snprintf(path, sizeof path, "%s/trunc.onnx", tmp);
    write_file(path, b, n / 2);
    veil_onnx_model_t *m = NULL;
    rc = veil_onnx_load(path, NULL, &m);
    CHECK(rc != VEIL_OK && strstr(veil_last_error(), "trunc.onnx"), "truncated file: %d %s", rc,
          veil_last_error());
    srand(7);
    uint8_t *c = malloc(n);
    for (int i = 0; i < 3000; i++) { /* mutations: never a crash, a leak or a hang */
        memcpy(c, b, n);
        for (int k = 0; k < 1 + i % 4; k++)
            c[(size_t)rand() % n] = (uint8_t)rand();
        veil_onnx_parse(c, n, "mut", NULL, &m);
        veil_onnx_destroy(&m);
    }
    free(c);
    free(b);

    /* cycle, dangling name */
    struct spec s = relu;
    s.n0_in[0] = "z", s.n0_op = "Relu", s.n0_out = "y";
    s.n1_in[0] = "y", s.n1_op = "Relu", s.n1_out = "z";
    rc = load(&s, NULL, msg, sizeof msg);
    CHECK(rc == VEIL_ERR_FORMAT && strstr(msg, "cycle") && strstr(msg, "node0"), "cycle: %s", msg);
    s = relu;
    s.n0_in[0] = "nope";
    rc = load(&s, NULL, msg, sizeof msg);
    CHECK(rc == VEIL_ERR_FORMAT && strstr(msg, "'nope'") && strstr(msg, "defined by no"),
          "dangling: %s", msg);
    s = relu;
    s.output = "missing";
    rc = load(&s, NULL, msg, sizeof msg);
    CHECK(rc == VEIL_ERR_FORMAT && strstr(msg, "missing"), "dangling output: %s", msg);

    /* shapes */
    s = relu;
    s.n0_in[0] = "x", s.n0_in[1] = "w", s.n0_op = "MatMul";
    s.wdims[0] = 4, s.wdims[1] = 5;
    rc = load(&s, NULL, msg, sizeof msg);
    CHECK(rc == VEIL_ERR_SHAPE && strstr(msg, "MatMul"), "shape mismatch: %s", msg);
    s = relu;
    s.xdims[0] = (int64_t)1 << 40, s.xdims[1] = (int64_t)1 << 40;
    rc = load(&s, NULL, msg, sizeof msg);
    CHECK(rc != VEIL_OK && strstr(msg, "dimension"), "huge dims: %s", msg);

    /* opsets */
    s = relu;
    s.opset = 6;
    rc = load(&s, NULL, msg, sizeof msg);
    CHECK(rc == VEIL_ERR_UNSUPPORTED && strstr(msg, "opset 6"), "opset 6: %s", msg);
    s.opset = 18;
    rc = load(&s, NULL, msg, sizeof msg);
    CHECK(rc == VEIL_ERR_UNSUPPORTED && strstr(msg, "opset 18"), "opset 18: %s", msg);

    /* unsupported op */
    s = relu;
    s.n0_op = "Atanh";
    rc = load(&s, NULL, msg, sizeof msg);
    CHECK(rc == VEIL_ERR_UNSUPPORTED && strstr(msg, "node0") && strstr(msg, "Atanh") &&
              strstr(msg, "veil_onnx_supported_ops") && strstr(veil_onnx_supported_ops(), "Gemm"),
          "unsupported op: %s", msg);

    /* external data */
    s = relu;
    s.n0_in[0] = "x", s.n0_in[1] = "w", s.n0_op = "MatMul";
    s.wdims[0] = 3, s.wdims[1] = 2;
    const char *bad[] = {"/etc/passwd", "../escape.bin", "sub/../../escape.bin", "link.bin"};
    char sub[300], target[300];
    snprintf(target, sizeof target, "%s/../veil-onnx-outside.bin", tmp);
    float zeros[6] = {0};
    write_file(target, zeros, sizeof zeros);
    snprintf(sub, sizeof sub, "%s/link.bin", tmp);
    CHECK(symlink(target, sub) == 0, "symlink");
    snprintf(path, sizeof path, "%s/ext.onnx", tmp);
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        s.ext = bad[i];
        rc = load(&s, path, msg, sizeof msg);
        CHECK(rc == VEIL_ERR_FORMAT && strstr(msg, "folder"), "external %s: %s", bad[i], msg);
    }
    snprintf(sub, sizeof sub, "%s/w.bin", tmp);
    write_file(sub, zeros, sizeof zeros);
    s.ext = "w.bin";
    rc = load(&s, path, msg, sizeof msg);
    CHECK(rc == VEIL_OK, "external data beside the model: %s", msg);
    write_file(sub, zeros, 8); /* too short */
    rc = load(&s, path, msg, sizeof msg);
    CHECK(rc == VEIL_ERR_FORMAT, "short external data: %s", msg);
    rc = load(&s, NULL, msg, sizeof msg);
    CHECK(rc == VEIL_ERR_UNSUPPORTED, "external data from memory: %s", msg);
    unlink(target);

    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
    if (system(cmd) != 0)
        failures++;
    return failures ? 1 : 0;
}

/*
 * Tests the import of GELU as PyTorch exports it, x * 0.5 * (1 + erf(x / sqrt(2))) with its
 * constants as initializers: the five nodes become one DSL gelu node, the plaintext fixed-point
 * run agrees with x * Phi(x) within 2^-6 + 2^-6 |y| (the DSL's GELU approximation), the stripped
 * model keeps the three constants (read as public numbers) and has no parameters, and an Erf
 * outside the pattern is refused naming the node.
 */
#include "config.h"

#include "onnx/onnx.pb-c.h"
#include "veil/onnx.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static size_t build(int broken, uint8_t **buf)
{
    Onnx__ModelProto mp = ONNX__MODEL_PROTO__INIT;
    Onnx__GraphProto gp = ONNX__GRAPH_PROTO__INIT;
    Onnx__OperatorSetIdProto op = ONNX__OPERATOR_SET_ID_PROTO__INIT, *ops[1] = {&op};
    op.domain = "", op.has_version = 1, op.version = 17;
    mp.has_ir_version = 1, mp.ir_version = 8, mp.n_opset_import = 1, mp.opset_import = ops;
    mp.graph = &gp;
    gp.name = "gelu";
    Onnx__TensorShapeProto__Dimension d0 = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__INIT, d1 = d0;
    d0.value_case = d1.value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
    d0.dim_value = 2, d1.dim_value = 8;
    Onnx__TensorShapeProto__Dimension *dims[2] = {&d0, &d1};
    Onnx__TensorShapeProto shp = ONNX__TENSOR_SHAPE_PROTO__INIT;
    shp.n_dim = 2, shp.dim = dims;
    Onnx__TypeProto__Tensor tt = ONNX__TYPE_PROTO__TENSOR__INIT;
    tt.has_elem_type = 1, tt.elem_type = 1, tt.shape = &shp;
    Onnx__TypeProto tp = ONNX__TYPE_PROTO__INIT;
    tp.value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE, tp.tensor_type = &tt;
    Onnx__ValueInfoProto in = ONNX__VALUE_INFO_PROTO__INIT, out = ONNX__VALUE_INFO_PROTO__INIT;
    in.name = "x", in.type = &tp, out.name = "y";
    Onnx__ValueInfoProto *ins[1] = {&in}, *outs[1] = {&out};
    gp.n_input = 1, gp.input = ins, gp.n_output = 1, gp.output = outs;
    float cv[3] = {1.4142135f, 1.0f, 0.5f};
    char *cn[3] = {"sqrt2", "one", "half"};
    Onnx__TensorProto c[3], *inits[3];
    for (int i = 0; i < 3; i++) {
        Onnx__TensorProto t = ONNX__TENSOR_PROTO__INIT;
        c[i] = t;
        c[i].name = cn[i], c[i].has_data_type = 1, c[i].data_type = 1;
        c[i].n_float_data = 1, c[i].float_data = &cv[i];
        inits[i] = &c[i];
    }
    gp.n_initializer = 3, gp.initializer = inits;
    const char *io[5][3] = {{"Div", "x", "sqrt2"},
                            {"Erf", "u", NULL},
                            {"Add", "e", "one"},
                            {"Mul", "x", "p"},
                            {"Mul", "q", "half"}};
    const char *outn[5] = {"u", "e", "p", "q", "y"};
    if (broken) /* Erf of x itself */
        io[1][1] = "x";
    Onnx__NodeProto nd[5], *nodes[5];
    char *inl[5][2], *outl[5][1], names[5][8];
    for (int i = 0; i < 5; i++) {
        Onnx__NodeProto t = ONNX__NODE_PROTO__INIT;
        nd[i] = t;
        snprintf(names[i], sizeof names[i], "n%d", i);
        nd[i].name = names[i], nd[i].op_type = (char *)io[i][0];
        inl[i][0] = (char *)io[i][1], inl[i][1] = (char *)io[i][2];
        nd[i].n_input = io[i][2] ? 2 : 1, nd[i].input = inl[i];
        outl[i][0] = (char *)outn[i];
        nd[i].n_output = 1, nd[i].output = outl[i];
        nodes[i] = &nd[i];
    }
    gp.n_node = 5, gp.node = nodes;
    size_t sz = onnx__model_proto__get_packed_size(&mp);
    *buf = malloc(sz);
    onnx__model_proto__pack(&mp, *buf);
    return sz;
}

int main(void)
{
    int fail = 0;
    char dir[] = "/tmp/veil-onnx-gelu-XXXXXX", path[128], pub[128], cmd[300];
    if (!mkdtemp(dir))
        return 1;
    snprintf(path, sizeof path, "%s/gelu.onnx", dir);
    snprintf(pub, sizeof pub, "%s/gelu.public.onnx", dir);
    uint8_t *b;
    size_t n = build(0, &b);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(b, 1, n, f) != n || fclose(f) != 0)
        return 1;
    free(b);
    veil_onnx_model_t *m = NULL;
    int rc = veil_onnx_load(path, NULL, &m);
    if (rc != VEIL_OK) {
        printf("FAIL: load: %s\n", veil_last_error());
        return 1;
    }
    const veil_node_t *g = veil_onnx_node_result(m, 4);
    if (!g || strcmp(veil_node_op(g), "gelu")) {
        printf("FAIL: the pattern did not become a gelu node\n");
        fail = 1;
    }
    veil_plan_t *p = veil_compile(veil_onnx_graph(m), NULL);
    double x[16], y[16], *outs[1] = {y};
    for (int i = 0; i < 16; i++)
        x[i] = -4 + 0.5 * i;
    struct veil_feed feed = {veil_onnx_input_leaf(m, 0), x, 16};
    if (!p || veil_plain_run(p, VEIL_PLAIN_FIXED, &feed, 1, outs) != VEIL_OK) {
        printf("FAIL: run: %s\n", veil_last_error());
        fail = 1;
    }
    for (int i = 0; p && i < 16; i++) {
        double want = x[i] * 0.5 * (1 + erf(x[i] / sqrt(2)));
        if (!(fabs(y[i] - want) <= ldexp(1, -6) * (1 + fabs(want)))) {
            printf("FAIL: gelu(%g) = %g, expected %g\n", x[i], y[i], want);
            fail = 1;
        }
    }
    veil_plan_destroy(&p);
    veil_onnx_destroy(&m);
    if ((rc = veil_onnx_strip(path, pub, NULL)) != VEIL_OK) {
        printf("FAIL: strip: %s\n", veil_last_error());
        fail = 1;
    }
    struct veil_onnx_options o;
    veil_onnx_options_defaults(&o);
    o.weights = 0;
    size_t nf = 1;
    if ((rc = veil_onnx_load(pub, &o, &m)) != VEIL_OK || (veil_onnx_param_feeds(m, &nf), nf)) {
        printf("FAIL: the stripped GELU model: %s\n", rc ? veil_last_error() : "has parameters");
        fail = 1;
    }
    veil_onnx_destroy(&m);
    n = build(1, &b);
    rc = veil_onnx_parse(b, n, "broken", NULL, &m);
    free(b);
    if (rc != VEIL_ERR_UNSUPPORTED || !strstr(veil_last_error(), "n1") ||
        !strstr(veil_last_error(), "GELU")) {
        printf("FAIL: an Erf outside the pattern: %d %s\n", rc, veil_last_error());
        fail = 1;
    }
    veil_onnx_destroy(&m);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fail = 1;
    return fail;
}

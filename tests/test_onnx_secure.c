/*
 * Tests secure inference of imported ONNX models under veil-run with a dealer: a sample of ONNX's
 * node conformance tests (Relu, Gemm with C, a padded strided Conv, MaxPool, Softmax, Exp) run by
 * `veil-onnx run --secure` with 2 parties (the first three also with 3), each output compared with
 * the suite's output_<k>.pb within the conformance test's tolerance (2^-9 + 2^-9 |want|; 2^-5 for
 * Softmax); and a model with weights (a Gemm layer whose initializers are the model owner's,
 * written here) where party 0 reads the full model and every other process the stripped one from
 * `veil-onnx strip`: the result equals the plaintext run, and a party handed the full model as its
 * public one refuses the weights (non-zero exit naming the parameter); `veil-onnx check` prints
 * what README.md shows, and the rounds and bytes it measured for a first run (on a loopback
 * session of zeros) equal those the secure run counted, with 2 and 3 parties. Exit 77 without the
 * suite.
 */
#include "config.h"

#include "onnx/onnx.pb-c.h"
#include "veil/onnx.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char tool[1024], vrun[1024], tmp[] = "/tmp/veil-onnx-sec-XXXXXX";
static int failures;

static int sh(const char *cmd)
{
    fflush(stdout); /* the command's output after ours, in order */
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
}

static int compare(const char *got_path, const char *want_path, double tol, const char *what)
{
    struct veil_onnx_tensor got, want;
    if (veil_onnx_tensor_read(got_path, &got) != VEIL_OK) {
        printf("FAIL %s: %s\n", what, veil_last_error());
        return 1;
    }
    if (veil_onnx_tensor_read(want_path, &want) != VEIL_OK) {
        printf("FAIL %s: %s\n", what, veil_last_error());
        veil_onnx_tensor_free(&got);
        return 1;
    }
    int bad = got.numel != want.numel;
    for (size_t i = 0; !bad && i < got.numel; i++)
        if (!(fabs(got.values[i] - want.values[i]) <= tol + tol * fabs(want.values[i]))) {
            printf("FAIL %s: element %zu is %.6g, expected %.6g\n", what, i, got.values[i],
                   want.values[i]);
            bad = 1;
        }
    veil_onnx_tensor_free(&got);
    veil_onnx_tensor_free(&want);
    return bad;
}

static void node_test(const char *dir, const char *name, int n, double tol)
{
    char model[1024], pub[1100], cmd[8192], out[1100], want[1100];
    snprintf(model, sizeof model, "%s/%s/model.onnx", dir, name);
    snprintf(pub, sizeof pub, "%s/%s.public.onnx", tmp, name);
    snprintf(out, sizeof out, "%s/%s.%d.out.pb", tmp, name, n);
    snprintf(want, sizeof want, "%s/%s/test_data_set_0/output_0.pb", dir, name);
    snprintf(cmd, sizeof cmd, "'%s' strip '%s' -o '%s'", tool, model, pub);
    if (sh(cmd) != 0) {
        printf("FAIL %s: strip\n", name);
        failures++;
        return;
    }
    int k = snprintf(cmd, sizeof cmd,
                     "STARPU_SILENT=1 '%s' -n %d --dealer -- '%s' run --secure "
                     "'%s' --public '%s' --data-owner %d",
                     vrun, n, tool, model, pub, n - 1);
    for (int i = 0; i < 8; i++) {
        char in[1100];
        struct stat st;
        snprintf(in, sizeof in, "%s/%s/test_data_set_0/input_%d.pb", dir, name, i);
        if (stat(in, &st) == 0)
            k += snprintf(cmd + k, sizeof cmd - (size_t)k, " '%s'", in);
    }
    snprintf(cmd + k, sizeof cmd - (size_t)k, " -o '%s' > '%s/log' 2>&1", out, tmp);
    int rc = sh(cmd);
    char what[256];
    snprintf(what, sizeof what, "%s with %d parties", name, n);
    if (rc != 0) {
        printf("FAIL %s: exit %d\n", what, rc);
        snprintf(cmd, sizeof cmd, "cat '%s/log'", tmp);
        sh(cmd);
        failures++;
        return;
    }
    int bad = compare(out, want, tol, what);
    failures += bad;
    printf("%s: %s\n", what, bad ? "FAIL" : "ok");
}

/* A Gemm layer y = relu(x W^T + b) (x 2x3, W 4x3 with transB, b 4) with W, b initializers. */
static int write_model(const char *path)
{
    Onnx__ModelProto mp = ONNX__MODEL_PROTO__INIT;
    Onnx__GraphProto gp = ONNX__GRAPH_PROTO__INIT;
    Onnx__OperatorSetIdProto op = ONNX__OPERATOR_SET_ID_PROTO__INIT, *ops[1] = {&op};
    op.domain = "";
    op.has_version = 1;
    op.version = 13;
    mp.has_ir_version = 1;
    mp.ir_version = 8;
    mp.n_opset_import = 1;
    mp.opset_import = ops;
    mp.graph = &gp;
    gp.name = "gemm_relu";
    float wv[12] = {0.5f, -1, 0.25f, 1, 2, -0.5f, -2, 0.75f, 1.5f, 0.125f, -0.25f, 1};
    float bv[4] = {0.1f, -0.2f, 0.3f, -0.4f};
    int64_t wd[2] = {4, 3}, bd[1] = {4};
    Onnx__TensorProto w = ONNX__TENSOR_PROTO__INIT, b = ONNX__TENSOR_PROTO__INIT;
    w.name = "fc.weight", w.n_dims = 2, w.dims = wd, w.has_data_type = 1, w.data_type = 1;
    w.n_float_data = 12, w.float_data = wv;
    b.name = "fc.bias", b.n_dims = 1, b.dims = bd, b.has_data_type = 1, b.data_type = 1;
    b.n_float_data = 4, b.float_data = bv;
    Onnx__TensorProto *inits[2] = {&w, &b};
    gp.n_initializer = 2;
    gp.initializer = inits;
    Onnx__TensorShapeProto__Dimension d0 = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__INIT, d1 = d0;
    d0.value_case = d1.value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
    d0.dim_value = 2, d1.dim_value = 3;
    Onnx__TensorShapeProto__Dimension *dims[2] = {&d0, &d1};
    Onnx__TensorShapeProto shp = ONNX__TENSOR_SHAPE_PROTO__INIT;
    shp.n_dim = 2, shp.dim = dims;
    Onnx__TypeProto__Tensor tt = ONNX__TYPE_PROTO__TENSOR__INIT;
    tt.has_elem_type = 1, tt.elem_type = 1, tt.shape = &shp;
    Onnx__TypeProto tp = ONNX__TYPE_PROTO__INIT;
    tp.value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE, tp.tensor_type = &tt;
    Onnx__ValueInfoProto in = ONNX__VALUE_INFO_PROTO__INIT, outv = ONNX__VALUE_INFO_PROTO__INIT;
    in.name = "x", in.type = &tp;
    outv.name = "y";
    Onnx__ValueInfoProto *ins[1] = {&in}, *outs[1] = {&outv};
    gp.n_input = 1, gp.input = ins, gp.n_output = 1, gp.output = outs;
    Onnx__AttributeProto tb = ONNX__ATTRIBUTE_PROTO__INIT, *attrs[1] = {&tb};
    tb.name = "transB", tb.has_type = 1, tb.type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
    tb.has_i = 1, tb.i = 1;
    char *gin[3] = {"x", "fc.weight", "fc.bias"}, *gout[1] = {"h"}, *rin[1] = {"h"},
         *rout[1] = {"y"};
    Onnx__NodeProto gemm = ONNX__NODE_PROTO__INIT, relu = ONNX__NODE_PROTO__INIT;
    gemm.op_type = "Gemm", gemm.name = "fc", gemm.n_input = 3, gemm.input = gin;
    gemm.n_output = 1, gemm.output = gout, gemm.n_attribute = 1, gemm.attribute = attrs;
    relu.op_type = "Relu", relu.name = "act", relu.n_input = 1, relu.input = rin;
    relu.n_output = 1, relu.output = rout;
    Onnx__NodeProto *nodes[2] = {&gemm, &relu};
    gp.n_node = 2, gp.node = nodes;
    size_t sz = onnx__model_proto__get_packed_size(&mp);
    uint8_t *buf = malloc(sz);
    if (!buf)
        return 1;
    onnx__model_proto__pack(&mp, buf);
    FILE *f = fopen(path, "wb");
    int ok = f && fwrite(buf, 1, sz, f) == sz;
    if (f)
        ok = fclose(f) == 0 && ok;
    free(buf);
    return !ok;
}

/* The rounds and party 0's bytes that `veil-onnx check` (check.out) printed for the first run
 * with n parties equal those party 0 of the secure run counted (its -v line in log). 0 when
 * they do. */
static int check_cost(int n)
{
    char path[1100], line[512];
    unsigned long long cr = 0, cs = 0, rr = 1, rs = 1;
    int section = 0, found = 0;
    snprintf(path, sizeof path, "%s/check.out", tmp);
    FILE *f = fopen(path, "r");
    while (f && fgets(line, sizeof line, f)) {
        int k;
        if (sscanf(line, "  %d parties: dealer", &k) == 1)
            section = k == n;
        else if (section && sscanf(line, "    first run: %llu rounds; bytes sent: party 0 %llu",
                                   &cr, &cs) == 2)
            found |= 1;
    }
    if (f)
        fclose(f);
    snprintf(path, sizeof path, "%s/log", tmp);
    f = fopen(path, "r");
    while (f && fgets(line, sizeof line, f)) {
        double secs;
        if (sscanf(line, "[p0] party 0: %lf s, %llu rounds, %llu bytes sent", &secs, &rr, &rs) ==
            3)
            found |= 2;
    }
    if (f)
        fclose(f);
    if (found != 3 || cr != rr || cs != rs) {
        printf("FAIL: check says %llu rounds and %llu bytes for party 0, the run %llu and %llu "
               "(found %d)\n", cr, cs, rr, rs, found);
        return 1;
    }
    return 0;
}

static void weights_test(int n)
{
    char model[1100], pub[1100], x[1100], ref[1100], out[1100], cmd[8192];
    snprintf(model, sizeof model, "%s/gemm.onnx", tmp);
    snprintf(pub, sizeof pub, "%s/gemm.public.onnx", tmp);
    snprintf(x, sizeof x, "%s/x.npy", tmp);
    snprintf(ref, sizeof ref, "%s/ref.pb", tmp);
    snprintf(out, sizeof out, "%s/sec.pb", tmp);
    double xv[6] = {1, -2, 0.5, 3, 0.25, -1};
    struct veil_onnx_tensor t = {.ndim = 2, .dims = {2, 3}, .numel = 6, .values = xv};
    if (write_model(model) || veil_onnx_tensor_write(x, &t) != VEIL_OK) {
        printf("FAIL: writing the Gemm model or its input\n");
        failures++;
        return;
    }
    snprintf(cmd, sizeof cmd, "'%s' strip '%s' -o '%s' && '%s' run --fixed '%s' '%s' -o '%s'", tool,
             model, pub, tool, model, x, ref);
    if (sh(cmd) != 0) {
        printf("FAIL: strip or plaintext run of the Gemm model\n");
        failures++;
        return;
    }
    veil_onnx_model_t *m = NULL;
    struct veil_onnx_options o;
    veil_onnx_options_defaults(&o);
    o.weights = 0;
    int rc = veil_onnx_load(pub, &o, &m);
    size_t nf = 0;
    if (rc != VEIL_OK || veil_onnx_has_weights(m) || (veil_onnx_param_feeds(m, &nf), nf)) {
        printf("FAIL: the stripped model still has weights or does not load: %s\n",
               veil_last_error());
        failures++;
    }
    veil_onnx_destroy(&m);
    /* `veil-onnx check` on this model (as fc.onnx) prints what the README shows, line for line */
    const char *srcdir = getenv("VEIL_TOP_SRCDIR");
    snprintf(cmd, sizeof cmd,
             "cd '%s' && cp gemm.onnx fc.onnx && '%s' check fc.onnx > check.out 2>&1 && "
             "sed -n '/^\\$ veil-onnx check fc.onnx$/,/^```$/p' '%s/README.md' | sed '1d;$d' "
             "> check.want && [ -s check.want ] && diff check.want check.out",
             tmp, tool, srcdir ? srcdir : "..");
    if (n == 2 && sh(cmd) != 0) {
        printf("FAIL: veil-onnx check fc.onnx does not print what README.md shows:\n");
        snprintf(cmd, sizeof cmd, "cd '%s' && diff check.want check.out", tmp);
        sh(cmd);
        failures++;
    }
    snprintf(cmd, sizeof cmd,
             "STARPU_SILENT=1 '%s' -n %d --dealer -- '%s' run --secure '%s' "
             "--public '%s' --model-owner 0 --data-owner 1 -v '%s' -o '%s' > '%s/log' 2>&1",
             vrun, n, tool, model, pub, x, out, tmp);
    if ((rc = sh(cmd)) != 0) {
        printf("FAIL: secure Gemm with weights, %d parties: exit %d\n", n, rc);
        snprintf(cmd, sizeof cmd, "cat '%s/log'", tmp);
        sh(cmd);
        failures++;
        return;
    }
    char what[64];
    snprintf(what, sizeof what, "Gemm with the model owner's weights, %d parties", n);
    int bad = compare(out, ref, ldexp(1, -9), what);
    failures += bad;
    printf("%s: %s\n", what, bad ? "FAIL" : "ok");
    bad = check_cost(n);
    failures += bad;
    printf("veil-onnx check's first run, %d parties, against the secure run's counts: %s\n", n,
           bad ? "FAIL" : "ok");
    /* a party handed the full model as its public one refuses the weights */
    snprintf(cmd, sizeof cmd,
             "STARPU_SILENT=1 '%s' -n 2 --dealer -- '%s' run --secure '%s' "
             "--public '%s' '%s' -o '%s' > '%s/log' 2>&1; grep -q \"does not own the model\" "
             "'%s/log'",
             vrun, tool, model, model, x, out, tmp, tmp);
    if (n == 2 && sh(cmd) != 0) {
        printf("FAIL: a party given weights it does not own did not refuse them\n");
        failures++;
    }
}

int main(void)
{
    const char *dir = getenv("VEIL_ONNX_TESTDATA");
    if (!dir || !*dir)
        dir = "/usr/share/libonnx-testdata/data/node";
    struct stat st;
    if (stat(dir, &st) != 0) {
        printf("SKIP: %s missing (apt-get install libonnx-testdata)\n", dir);
        return 77;
    }
    const char *top = getenv("VEIL_TOP_BUILDDIR");
    snprintf(tool, sizeof tool, "%s/tools/veil-onnx", top ? top : ".");
    snprintf(vrun, sizeof vrun, "%s/tools/veil-run", top ? top : ".");
    if (!mkdtemp(tmp))
        return 1;
    const char *sample[] = {"test_relu", "test_gemm_all_attributes",
                            "test_conv_with_strides_padding", "test_maxpool_2d_default",
                            "test_softmax_example", "test_exp_example", "test_sigmoid_example",
                            "test_reciprocal"};
    for (int n = 2; n <= 3; n++) {
        for (size_t i = 0; i < (n == 2 ? sizeof sample / sizeof *sample : 3); i++)
            node_test(dir, sample[i], n,
                      strstr(sample[i], "softmax") ? ldexp(1, -5) : ldexp(1, -9));
        weights_test(n);
    }
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
    sh(cmd);
    return failures ? 1 : 0;
}

/*
 * run.c — veil_onnx_run_files: plaintext inference of an ONNX model on tensor files, the path
 * behind `veil-onnx run` and the conformance test: inputs bound to the graph inputs in order
 * (integer ones public, given to the loader), the plan compiled and run by the plaintext
 * executor in double or fixed point, outputs written as TensorProto or .npy files.
 */
#include "config.h"

#include "base/base_internal.h"
#include "onnx/onnx_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define RUN_MAX_IO 64

static int check_range(const struct veil_onnx_tensor *t, const char *path, int frac_bits)
{
    double lim = ldexp(1.0, 31 - frac_bits);
    for (size_t e = 0; e < t->numel; e++)
        if (!(fabs(t->values[e]) < lim))
            return veil_error(VEIL_ERR_RANGE,
                              "%s: value %g is outside +-2^%d, the range of the "
                              "secure run at %d fractional bits",
                              path, t->values[e], 31 - frac_bits, frac_bits);
    return VEIL_OK;
}

static int write_outputs(veil_onnx_model_t *m, const char *const *out, int nout,
                         double *const *vals)
{
    for (int i = 0; i < nout; i++) {
        struct veil_onnx_tensor t;
        memset(&t, 0, sizeof t);
        t.ndim = veil_onnx_output_shape(m, (size_t)i, t.dims);
        t.numel = 1;
        for (int k = 0; k < t.ndim; k++)
            t.numel *= t.dims[k];
        t.values = vals[i];
        snprintf(t.name, sizeof t.name, "%s", veil_onnx_output_name(m, (size_t)i));
        int rc = veil_onnx_tensor_write(out[i], &t);
        if (rc != VEIL_OK)
            return rc;
    }
    return VEIL_OK;
}

int veil_onnx_run_files(const char *model, const char *const *in, int nin, const char *const *out,
                        int nout, int mode, int frac_bits)
{
    if (!model || nin < 0 || nin > RUN_MAX_IO || nout < 0 || nout > RUN_MAX_IO ||
        (mode != VEIL_PLAIN_DOUBLE && mode != VEIL_PLAIN_FIXED))
        return veil_error(VEIL_ERR_INVAL, "veil_onnx_run_files: bad argument");
    char names[RUN_MAX_IO][128];
    int is_int[RUN_MAX_IO];
    int n = veil_onnx_list_inputs(model, names, is_int, RUN_MAX_IO);
    if (n < 0)
        return n;
    if (n != nin)
        return veil_error(VEIL_ERR_INVAL, "%s: the model has %d graph inputs, %d files given",
                          model, n, nin);
    for (int i = 0; i < n; i++)
        if (is_int[i] < 0)
            return veil_error(VEIL_ERR_UNSUPPORTED,
                              "%s: graph input '%s' is not a tensor "
                              "(sequences, maps and optionals are not supported)",
                              model, names[i]);
    struct veil_onnx_tensor t[RUN_MAX_IO], known[RUN_MAX_IO];
    memset(t, 0, sizeof t);
    size_t nk = 0;
    int rc = VEIL_OK;
    for (int i = 0; i < n && rc == VEIL_OK; i++) {
        rc = veil_onnx_tensor_read(in[i], &t[i]);
        if (rc == VEIL_OK && is_int[i])
            snprintf(t[i].name, sizeof t[i].name, "%s", names[i]), known[nk++] = t[i];
    }
    veil_onnx_model_t *m = NULL;
    veil_plan_t *plan = NULL;
    if (rc == VEIL_OK) {
        struct veil_onnx_options o;
        veil_onnx_options_defaults(&o);
        o.known = known;
        o.nknown = nk;
        rc = veil_onnx_load(model, &o, &m);
    }
    for (int i = 0; i < n && rc == VEIL_OK && mode == VEIL_PLAIN_FIXED; i++)
        if (!is_int[i]) /* after the import: a model Veil refuses is reported as such first */
            rc = check_range(&t[i], in[i], frac_bits);
    if (rc == VEIL_OK) {
        struct veil_compile_options co;
        veil_compile_options_defaults(&co);
        co.frac_bits = frac_bits;
        if (!(plan = veil_compile(veil_onnx_graph(m), &co)))
            rc = veil_error(VEIL_ERR_UNSUPPORTED, "%s: the DSL refuses the imported graph: %s",
                            model, veil_last_error());
    }
    size_t nf = 0, no = m ? veil_onnx_output_count(m) : 0;
    const struct veil_feed *pf = m ? veil_onnx_param_feeds(m, &nf) : NULL;
    struct veil_feed *feeds = rc == VEIL_OK ? calloc(nf + (size_t)n + 1, sizeof *feeds) : NULL;
    double *vals[RUN_MAX_IO] = {0};
    if (rc == VEIL_OK && (!feeds || nout > (int)no))
        rc = veil_error(feeds ? VEIL_ERR_INVAL : VEIL_ERR_NOMEM,
                        "%s: %d output files for %zu "
                        "outputs",
                        model, nout, no);
    size_t k = 0;
    for (size_t i = 0; rc == VEIL_OK && i < nf; i++)
        feeds[k++] = pf[i];
    for (int i = 0, j = 0; rc == VEIL_OK && i < n; i++)
        if (!is_int[i])
            feeds[k++] =
                (struct veil_feed){veil_onnx_input_leaf(m, (size_t)j++), t[i].values, t[i].numel};
    for (size_t i = 0; rc == VEIL_OK && i < no && i < RUN_MAX_IO; i++)
        if (!(vals[i] = calloc(veil_plan_output_numel(plan, i), sizeof(double))))
            rc = veil_error(VEIL_ERR_NOMEM, "out of memory");
    if (rc == VEIL_OK)
        rc = veil_plain_run(plan, (enum veil_plain_mode)mode, feeds, k, vals);
    if (rc == VEIL_OK)
        rc = write_outputs(m, out, nout, vals);
    for (size_t i = 0; i < RUN_MAX_IO; i++)
        free(vals[i]);
    free(feeds);
    veil_plan_destroy(&plan);
    veil_onnx_destroy(&m);
    for (int i = 0; i < n; i++)
        veil_onnx_tensor_free(&t[i]);
    return rc;
}

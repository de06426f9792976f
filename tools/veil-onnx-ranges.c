/*
 * veil-onnx-ranges.c — `veil-onnx check-ranges MODEL.onnx [--frac-bits F] [--batch N] IN...`:
 * the step before deploying a model. The model owner runs its full model on its own sample data
 * in the secure run's fixed point, in plaintext (veil_plain_check_ranges, include/veil/graph.h),
 * and reads per node the largest values reached against the ring's limit and each op's domain
 * (sums of products before their truncation, softmax and layer-norm rows, the inputs of exp,
 * gelu, reciprocal, sqrt, div). Nothing is sent anywhere. Inputs bind as in `run` (graph inputs in
 * order, .pb or .npy, integer ones public); with --batch N the inputs' first dimension counts
 * examples, checked N at a time (the last batch filled up with copies of its first examples, not
 * zeros, which could fall outside a domain the data never reaches), the report taking the
 * extremes over every batch. Exit status 0 when no node is OVER, 4 when one is, 1 on an error,
 * 2 on bad usage, 3 for a model Veil does not import.
 */
#include "config.h"

#include "veil.h"
#include "veil/onnx.h"
#include "tools/veil_onnx_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_IN 64

struct ranges_args {
    const char *model;
    const char *in[MAX_IN];
    int nin, frac_bits;
    size_t batch;
};

static int parse(int argc, char **argv, struct ranges_args *a)
{
    memset(a, 0, sizeof *a);
    a->frac_bits = VEIL_FIXED_FRAC_BITS_DEFAULT;
    for (int i = 0; i < argc; i++) {
        const char *s = argv[i];
        if (!strcmp(s, "--frac-bits") && i + 1 < argc) {
            a->frac_bits = atoi(argv[++i]);
        } else if (!strcmp(s, "--batch") && i + 1 < argc) {
            long v = atol(argv[++i]);
            if (v < 1 || v > (1L << 24))
                return usage();
            a->batch = (size_t)v;
        } else if (s[0] == '-') {
            return usage();
        } else if (!a->model) {
            a->model = s;
        } else if (a->nin < MAX_IN) {
            a->in[a->nin++] = s;
        } else {
            return usage();
        }
    }
    return !a->model || a->frac_bits < 1 || a->frac_bits > 30 ? usage() : 0;
}

/* Reads every input file (t[i]); integer ones are the loader's public values (known). The exit
 * code (0: read). */
static int read_all(const struct ranges_args *a, struct veil_onnx_tensor *t, int *is_int,
                    struct veil_onnx_tensor *known, size_t *nknown)
{
    char names[MAX_IN][128];
    int n = a->nin, rc0 = veil_onnx_cli_inputs(a->model, n, names, is_int, MAX_IN);
    if (rc0 != 0)
        return rc0;
    for (int i = 0; i < n; i++) {
        int rc = veil_onnx_tensor_read(a->in[i], &t[i]);
        if (rc != VEIL_OK) {
            fprintf(stderr, "veil-onnx: %s\n", veil_last_error());
            return exit_code(rc);
        }
        snprintf(t[i].name, sizeof t[i].name, "%s", names[i]);
        if (is_int[i])
            known[(*nknown)++] = t[i];
    }
    return 0;
}

/* The secret inputs' feeds for batch b: rows [b N, b N + N) of each (with --batch; the rows past
 * the end taken again from the batch's start), or the whole tensor. */
static int batch_feeds(const struct ranges_args *a, const veil_onnx_model_t *m,
                       const struct veil_onnx_tensor *t, const int *is_int, size_t b, size_t count,
                       double **buf, struct veil_feed *f)
{
    for (int i = 0, j = 0; i < a->nin; i++) {
        if (is_int[i])
            continue;
        size_t idx = (size_t)j++;
        f[idx].name = veil_onnx_input_leaf(m, idx);
        if (!a->batch) {
            f[idx].values = t[i].values;
            f[idx].numel = t[i].numel;
            continue;
        }
        const size_t per = t[i].numel / count, first = b * a->batch;
        if (!buf[i] && !(buf[i] = malloc(a->batch * per * sizeof(double))))
            return 1;
        for (size_t r = 0; r < a->batch; r++) {
            const size_t src = first + (first + r < count ? r : r % (count - first));
            memcpy(buf[i] + r * per, t[i].values + src * per, per * sizeof(double));
        }
        f[idx].values = buf[i];
        f[idx].numel = a->batch * per;
    }
    return 0;
}

/* The examples every secret input holds with --batch (its first dimension, equal for all), or 1;
 * 0 after printing why they disagree. */
static size_t examples(const struct ranges_args *a, const struct veil_onnx_tensor *t,
                       const int *is_int)
{
    size_t count = 0;
    for (int i = 0; a->batch && i < a->nin; i++) {
        if (is_int[i])
            continue;
        size_t c = t[i].ndim ? t[i].dims[0] : 0;
        if (!c || (count && c != count)) {
            fprintf(stderr,
                    "veil-onnx: --batch %zu: %s must hold examples along its first "
                    "dimension, as many as the other inputs\n",
                    a->batch, a->in[i]);
            return 0;
        }
        count = c;
    }
    return a->batch ? count : 1;
}

int cmd_check_ranges(int argc, char **argv)
{
    struct ranges_args a;
    if (parse(argc, argv, &a))
        return 2;
    struct veil_onnx_tensor t[MAX_IN], known[MAX_IN];
    int is_int[MAX_IN];
    double *buf[MAX_IN] = {NULL};
    size_t nknown = 0;
    memset(t, 0, sizeof t);
    int code = read_all(&a, t, is_int, known, &nknown);
    veil_onnx_model_t *m = NULL;
    veil_plan_t *plan = NULL;
    veil_range_report_t *report = NULL;
    struct veil_feed *feeds = NULL;
    size_t count = code ? 0 : examples(&a, t, is_int);
    if (!code && !count)
        code = 2;
    if (!code) {
        struct veil_onnx_options o;
        veil_onnx_options_defaults(&o);
        o.known = known;
        o.nknown = nknown;
        o.batch = a.batch;
        o.weights = 1; /* the model owner's full model: the weights are what is checked */
        int st = veil_onnx_load(a.model, &o, &m);
        if (st != VEIL_OK) {
            fprintf(stderr, "veil-onnx: %s\n", veil_last_error());
            code = exit_code(st);
        }
    }
    if (!code) {
        struct veil_compile_options co;
        veil_compile_options_defaults(&co);
        co.frac_bits = a.frac_bits;
        if (!(plan = veil_compile(veil_onnx_graph(m), &co))) {
            fprintf(stderr, "veil-onnx: compile: %s\n", veil_last_error());
            code = 3;
        }
    }
    size_t np = 0;
    const struct veil_feed *pf = code ? NULL : veil_onnx_param_feeds(m, &np);
    if (!code && !(feeds = calloc(np + MAX_IN, sizeof *feeds)))
        code = 1;
    const size_t nb = a.batch ? (count + a.batch - 1) / a.batch : 1;
    for (size_t b = 0; !code && b < nb; b++) {
        if (np)
            memcpy(feeds, pf, np * sizeof *feeds);
        if (batch_feeds(&a, m, t, is_int, b, count, buf, feeds + np)) {
            code = 1;
            break;
        }
        int st = veil_plain_check_ranges(plan, feeds, np + veil_onnx_input_count(m), &report);
        if (st != VEIL_OK) {
            fprintf(stderr, "veil-onnx: check-ranges: %s\n", veil_last_error());
            code = exit_code(st);
        }
    }
    if (!code) {
        if (a.batch)
            printf("%s: %zu examples in %zu batches of %zu\n", a.model, count, nb, a.batch);
        else
            printf("%s: the inputs as given, one run\n", a.model);
        veil_range_report_print(report, stdout);
        code = veil_range_report_worst(report) == VEIL_RANGE_OVER ? 4 : 0;
    }
    veil_range_report_destroy(&report);
    free(feeds);
    veil_plan_destroy(&plan);
    veil_onnx_destroy(&m);
    for (int i = 0; i < MAX_IN; i++) {
        free(buf[i]);
        veil_onnx_tensor_free(&t[i]);
    }
    return code;
}

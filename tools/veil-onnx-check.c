/*
 * veil-onnx-check.c — `veil-onnx check MODEL.onnx`: the graph as Veil imports it (each ONNX node
 * with its op, the DSL node it became and its shape; inputs, parameters and their owners;
 * unsupported nodes) and the cost of the plan `veil-onnx run --secure` compiles (weights
 * stationary): the dealer's material per inference, recorded by the compiler, and the online
 * rounds and bytes each party sends, measured by two runs of a loopback session (the parties and
 * the dealer forked by Veil's harness, every input zero: the protocols' costs do not depend on
 * the values), the first run apart since it shares the parameters and opens the weight masks.
 */
#include "config.h"

#include "veil.h"
#include "veil/onnx.h"
#include "base/harness.h"
#include "tools/veil_onnx_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void shape_str(int nd, const size_t *d, char *buf, size_t len)
{
    size_t k = (size_t)snprintf(buf, len, "[");
    for (int i = 0; i < nd && k < len; i++)
        k += (size_t)snprintf(buf + k, len - k, "%s%zu", i ? "," : "", d[i]);
    if (k < len)
        snprintf(buf + k, len - k, "]");
}

static void node_shape(const veil_node_t *n, char *buf, size_t len)
{
    size_t d[VEIL_MAX_DIMS];
    int nd = veil_node_ndim(n);
    for (int i = 0; i < nd; i++)
        d[i] = veil_node_dim(n, i);
    shape_str(nd, d, buf, len);
}

/* In each forked process of the measurement: open this process's side of the session, run the
 * plan twice with zeros for every leaf it owns, print "cost R1 S1 R2 S2" (rounds and bytes
 * sent of each run). The exit code. */
static int measure_party(const struct veil_harness_party *id, void *arg)
{
    const veil_plan_t *plan = arg;
    struct veil_party_options po;
    veil_party_options_defaults(&po);
    veil_party_t *me = veil_party_open(plan, &po);
    if (!me) {
        fprintf(stderr, "%s\n", veil_last_error());
        return 1;
    }
    size_t nl = veil_plan_leaf_count(plan), k = 0;
    struct veil_feed *f = calloc(nl + 1, sizeof *f);
    int rc = f ? VEIL_OK : VEIL_ERR_NOMEM;
    for (size_t i = 0; rc == VEIL_OK && i < nl; i++) {
        if (id->is_dealer || veil_plan_leaf_owner(plan, i) != id->id)
            continue;
        f[k].name = veil_plan_leaf_name(plan, i);
        f[k].numel = veil_plan_leaf_numel(plan, i);
        if (!(f[k++].values = calloc(veil_plan_leaf_numel(plan, i), sizeof(double))))
            rc = VEIL_ERR_NOMEM;
    }
    size_t no = veil_plan_output_count(plan);
    double **outs = calloc(no + 1, sizeof *outs);
    for (size_t i = 0; outs && rc == VEIL_OK && i < no; i++)
        if (!(outs[i] = calloc(veil_plan_output_numel(plan, i), sizeof(double))))
            rc = VEIL_ERR_NOMEM;
    struct veil_run_stats s[2];
    for (int r = 0; r < 2 && rc == VEIL_OK; r++)
        if ((rc = veil_run(me, f, k, outs)) == VEIL_OK)
            rc = veil_party_last_stats(me, &s[r]);
    int cl = veil_party_close(&me);
    if (rc == VEIL_OK && cl == VEIL_OK)
        printf("cost %llu %llu %llu %llu\n", (unsigned long long)s[0].rounds,
               (unsigned long long)s[0].bytes_sent, (unsigned long long)s[1].rounds,
               (unsigned long long)s[1].bytes_sent);
    else
        fprintf(stderr, "%s\n", veil_last_error());
    for (size_t i = 0; i < k; i++)
        free((void *)f[i].values);
    for (size_t i = 0; outs && i < no; i++)
        free(outs[i]);
    free(outs);
    free(f);
    return rc == VEIL_OK && cl == VEIL_OK ? 0 : 1;
}

/* The cost lines for n parties: dealer material (recorded) and the measured online costs. */
static void print_cost(const veil_plan_t *plan, int n)
{
    uint64_t items = 0, bytes = 0, items2 = 0, bytes2 = 0;
    if (veil_plan_preproc(plan, n, &items, &bytes) != VEIL_OK ||
        veil_plan_preproc_runs(plan, n, 2, &items2, &bytes2) != VEIL_OK) {
        printf("  %d parties: %s\n", n, veil_last_error());
        return;
    }
    printf("  %d parties: dealer material %llu bytes (%llu items) for the first inference, "
           "%llu bytes (%llu items) for each later one\n", n, (unsigned long long)bytes,
           (unsigned long long)items, (unsigned long long)(bytes2 - bytes),
           (unsigned long long)(items2 - items));
    struct veil_harness_opts ho;
    memset(&ho, 0, sizeof ho);
    ho.nparties = n;
    ho.dealer = 1;
    ho.timeout_s = 300;
    ho.grace_s = 5;
    /* loopback, every value zero: nothing to protect, and payload bytes do not depend on it */
    static const char *const env[] = {"VEIL_INSECURE_PLAINTEXT=1", NULL};
    ho.extra_env = env;
    struct veil_harness_result res[VEIL_HARNESS_MAX_PROCS];
    memset(res, 0, sizeof res);
    fflush(stdout); /* the forked processes must not write our buffer again */
    int rc = veil_harness_run(&ho, measure_party, (void *)plan, res);
    unsigned long long v[VEIL_HARNESS_MAX_PROCS][4];
    for (int i = 0; rc == VEIL_OK && i < n; i++)
        if (!res[i].output || !strstr(res[i].output, "cost ") ||
            sscanf(strstr(res[i].output, "cost "), "cost %llu %llu %llu %llu", &v[i][0],
                   &v[i][1], &v[i][2], &v[i][3]) != 4)
            rc = VEIL_ERR_PROTO;
    if (rc != VEIL_OK) {
        printf("    online cost not measured: %s\n", veil_last_error());
        for (int i = 0; i <= n; i++)
            if (res[i].exit_code && res[i].output)
                printf("    process %d: %s", i, res[i].output);
    } else {
        for (int r = 0; r < 2; r++) {
            printf("    %-15s %llu rounds; bytes sent:", r ? "each later run:" : "first run:",
                   v[0][2 * r]);
            for (int i = 0; i < n; i++)
                printf(" party %d %llu%s", i, v[i][2 * r + 1], i + 1 < n ? "," : "\n");
        }
    }
    veil_harness_results_free(res, n + 1);
}

int cmd_check(int argc, char **argv)
{
    const char *path = NULL;
    int nparties = 2;
    struct veil_onnx_options o;
    veil_onnx_options_defaults(&o);
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--nparties") && i + 1 < argc)
            nparties = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--batch") && i + 1 < argc && atol(argv[i + 1]) > 0)
            o.batch = (size_t)atol(argv[++i]); /* as veil-onnx run --batch sizes the model */
        else if (!path)
            path = argv[i];
        else
            return usage();
    }
    if (!path || nparties < 2 || nparties > VEIL_HARNESS_MAX_PROCS - 1)
        return usage();
    int bad = veil_onnx_list_unsupported(path, stdout);
    if (bad < 0) {
        fprintf(stderr, "veil-onnx: %s\n", veil_last_error());
        return 1;
    }
    veil_onnx_model_t *m = NULL;
    int rc = veil_onnx_load(path, &o, &m);
    if (rc != VEIL_OK) {
        printf("%s: %d unsupported node(s); import fails: %s\n", path, bad, veil_last_error());
        return exit_code(rc);
    }
    char s[128];
    printf("%s: opset %d, %zu ONNX nodes, %s\n", path, veil_onnx_opset(m), veil_onnx_node_count(m),
           veil_onnx_has_weights(m) ? "with weights" : "stripped");
    struct veil_compile_options co;
    veil_compile_options_defaults(&co);
    co.weight_stationary = 1; /* as veil-onnx run --secure compiles it */
    veil_plan_t *plan = veil_compile(veil_onnx_graph(m), &co);
    if (!plan) {
        printf("compile: %s\n", veil_last_error());
        veil_onnx_destroy(&m);
        return 3;
    }
    for (size_t i = 0; i < veil_plan_leaf_count(plan); i++) {
        const veil_node_t *p = veil_graph_find(veil_onnx_graph(m), veil_plan_leaf_name(plan, i));
        if (p)
            node_shape(p, s, sizeof s);
        printf("  %-6s %-24s %-16s owner: party %d (%s)\n",
               veil_plan_leaf_is_param(plan, i) ? "param" : "input", veil_plan_leaf_name(plan, i),
               p ? s : "", veil_plan_leaf_owner(plan, i),
               veil_plan_leaf_is_param(plan, i) ? "model owner" : "data owner");
    }
    for (size_t i = 0; i < veil_onnx_node_count(m); i++) {
        const veil_node_t *r = veil_onnx_node_result(m, i);
        if (r)
            node_shape(r, s, sizeof s);
        printf("  node   %-18s %-24s -> %-14s %s %s\n", veil_onnx_node_op(m, i),
               veil_onnx_node_name(m, i), r ? veil_node_op(r) : "(public, computed at load)",
               r ? veil_node_name(r) : "", r ? s : "");
    }
    for (size_t i = 0; i < veil_onnx_output_count(m); i++) {
        size_t d[VEIL_MAX_DIMS];
        int nd = veil_onnx_output_shape(m, i, d);
        shape_str(nd, d, s, sizeof s);
        printf("  output %-24s %-16s revealed to party %d\n", veil_onnx_output_name(m, i), s,
               veil_plan_output_to(plan, i));
    }
    printf("plan: %zu DSL nodes; per inference (veil-onnx run --secure, weights stationary):\n",
           veil_graph_node_count(veil_onnx_graph(m)));
    for (int n = 2; n <= (nparties > 3 ? nparties : 3); n++)
        print_cost(plan, n);
    veil_plan_destroy(&plan);
    veil_onnx_destroy(&m);
    return 0;
}

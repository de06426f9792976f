/*
 * pt.c — weights from a safetensors file in PyTorch's own layout into a graph built with the DSL:
 * each parameter of the plan is looked up by name (the state_dict's, e.g. "fc1.weight"); a 2-D
 * tensor stored as (out, in), nn.Linear's layout, is transposed into the dense layer's (in, out);
 * every other tensor (convolution weights are OIHW in both) must have the parameter's shape.
 */
#include "config.h"

#include "base/base_internal.h"
#include "veil/onnx.h"

#include <stdlib.h>
#include <string.h>

void veil_onnx_feeds_free(struct veil_feed **feeds, size_t n)
{
    if (!feeds || !*feeds)
        return;
    for (size_t i = 0; i < n; i++) {
        free((char *)(*feeds)[i].name);
        free((double *)(*feeds)[i].values);
    }
    free(*feeds);
    *feeds = NULL;
}

static int one(const veil_weights_t *w, const char *path, const veil_node_t *p, double **out)
{
    const char *name = veil_node_name(p);
    int nd = veil_node_ndim(p), fnd;
    size_t pd[VEIL_MAX_DIMS], fd[VEIL_WEIGHTS_MAX_DIMS], numel = veil_node_numel(p);
    for (int i = 0; i < nd; i++)
        pd[i] = veil_node_dim(p, i);
    int rc = veil_weights_info(w, name, NULL, &fnd, fd);
    if (rc != VEIL_OK)
        return veil_error(VEIL_ERR_INVAL, "%s: no tensor '%s' for the parameter of that name", path,
                          name);
    double *v = malloc(numel * sizeof *v);
    if (!v)
        return veil_error(VEIL_ERR_NOMEM, "out of memory");
    if (nd == 2 && fnd == 2 && fd[0] == pd[1] && fd[1] == pd[0] && pd[0] != pd[1]) {
        rc = veil_weights_read_f64(w, name, 2, fd, v); /* (out, in) */
    } else if (nd == 2 && fnd == 2 && pd[0] == pd[1]) {
        rc = veil_weights_read_f64(w, name, 2, pd, v); /* square: PyTorch's (out, in) as well */
    } else {
        rc = veil_weights_read_f64(w, name, nd, pd, v);
        nd = 0; /* no transpose */
    }
    if (rc == VEIL_OK && nd == 2) { /* (out, in) -> (in, out) */
        double *t = malloc(numel * sizeof *t);
        if (!t) {
            free(v);
            return veil_error(VEIL_ERR_NOMEM, "out of memory");
        }
        for (size_t o = 0; o < pd[1]; o++)
            for (size_t i = 0; i < pd[0]; i++)
                t[i * pd[1] + o] = v[o * pd[0] + i];
        free(v);
        v = t;
    }
    if (rc != VEIL_OK) {
        free(v);
        return rc;
    }
    *out = v;
    return VEIL_OK;
}

int veil_onnx_pt_feeds(const char *path, const veil_graph_t *g, const veil_plan_t *plan,
                       struct veil_feed **feeds, size_t *n)
{
    if (!path || !g || !plan || !feeds || !n)
        return veil_error(VEIL_ERR_INVAL, "veil_onnx_pt_feeds: NULL argument");
    *feeds = NULL;
    *n = 0;
    veil_weights_t *w = veil_weights_open(path);
    if (!w)
        return veil_error(VEIL_ERR_FORMAT, "%s", veil_last_error());
    size_t count = veil_plan_leaf_count(plan), k = 0;
    struct veil_feed *f = calloc(count + 1, sizeof *f);
    int rc = f ? VEIL_OK : veil_error(VEIL_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < count && rc == VEIL_OK; i++) {
        const char *name = veil_plan_leaf_name(plan, i);
        const veil_node_t *p = veil_graph_find(g, name);
        if (!veil_plan_leaf_is_param(plan, i) || !p)
            continue; /* inputs; a replica of another parameter */
        double *v = NULL;
        rc = one(w, path, p, &v);
        char *nm = rc == VEIL_OK ? strdup(name) : NULL;
        if (rc == VEIL_OK && !nm) {
            free(v);
            rc = veil_error(VEIL_ERR_NOMEM, "out of memory");
        }
        if (rc == VEIL_OK)
            f[k++] = (struct veil_feed){nm, v, veil_node_numel(p)};
    }
    veil_weights_destroy(&w);
    if (rc != VEIL_OK) {
        veil_onnx_feeds_free(&f, k);
        return rc;
    }
    *feeds = f;
    *n = k;
    return VEIL_OK;
}

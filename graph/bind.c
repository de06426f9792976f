/*
 * bind.c — turns a run's feeds (values by leaf name) into per-node double arrays for both
 * executors: every input and parameter a party owns is found by name, checked (present, right
 * element count, finite) and copied; then the batch norms the compiler folded into a conv2d or
 * dense layer are applied to that layer's weight and bias here, in double, at the weight owner
 * (W' = W s per output channel, b' = (b - mean) s + beta, s = gamma / sqrt(var + eps)), creating
 * the synthetic bias of a layer that had none. The secure run and the plaintext executor both
 * start from these arrays, so folding happens once, the same way, for both.
 */
#include "config.h"

#include "base/base_internal.h"
#include "graph/graph_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *leaf_kind(const struct veil_node *n)
{
    return n->op == VEIL_OP_INPUT ? "input" : "parameter";
}

/* The feed named like n (a parameter replica: like its replica 0), or NULL; a second feed with
 * the same name is an error (which one was meant cannot be told). */
static int find_feed(const veil_plan_t *p, const struct veil_node *n,
                     const struct veil_feed *feeds, size_t nfeeds, const struct veil_feed **out)
{
    const char *name = veil_plan_feed_name(p, n);
    *out = NULL;
    for (size_t i = 0; i < nfeeds; i++) {
        if (!feeds[i].name || strcmp(feeds[i].name, name) != 0)
            continue;
        if (*out)
            return veil_error(VEIL_ERR_INVAL, "%s '%s': fed twice (feeds %zu and %zu); give one "
                              "feed per name", leaf_kind(n), n->name,
                              (size_t)(*out - feeds), i);
        *out = &feeds[i];
    }
    return VEIL_OK;
}

static int bind_leaf(const veil_plan_t *p, const struct veil_node *n,
                     const struct veil_feed *feeds, size_t nfeeds, double **out)
{
    char shape[128];
    const struct veil_feed *fd;
    int rc = find_feed(p, n, feeds, nfeeds, &fd);
    if (rc != VEIL_OK)
        return rc;
    veil_shape_str(n->ndim, n->dims, shape, sizeof shape);
    if (!fd)
        return veil_error(VEIL_ERR_INVAL, "%s '%s' (owner %d, shape %s): no feed; give a "
                          "struct veil_feed named \"%s\" with %zu values", leaf_kind(n), n->name,
                          n->owner, shape, veil_plan_feed_name(p, n), n->numel);
    if (fd->numel != n->numel)
        return veil_error(VEIL_ERR_INVAL, "%s '%s': the feed has %zu values; give %zu (shape %s)",
                          leaf_kind(n), n->name, fd->numel, n->numel, shape);
    if (!fd->values)
        return veil_error(VEIL_ERR_INVAL, "%s '%s': the feed's values are NULL; give %zu values",
                          leaf_kind(n), n->name, n->numel);
    for (size_t i = 0; i < n->numel; i++)
        if (!isfinite(fd->values[i]))
            return veil_error(VEIL_ERR_INVAL, "%s '%s': element %zu is %s; give finite values",
                              leaf_kind(n), n->name, i,
                              isnan(fd->values[i]) ? "NaN" : "infinite");
    double *v = malloc(n->numel * sizeof *v);
    if (!v)
        return veil_error(VEIL_ERR_NOMEM, "%s '%s': out of memory binding %zu values",
                          leaf_kind(n), n->name, n->numel);
    memcpy(v, fd->values, n->numel * sizeof *v);
    *out = v;
    return VEIL_OK;
}

/* Folds the batch norm p->nodes[l.fold_bn] into layer l's weight and bias values (the compiler
 * checked that no other layer reads them, but l's twins, which bind() folds once). */
static int fold_one(const veil_plan_t *p, const struct veil_node *l, double **values)
{
    const struct veil_node *bn = &p->nodes[l->fold_bn];
    const int wi = l->in[1], bi = l->nin > 2 ? l->in[2] : -1;
    if (bi < 0)
        return veil_error(VEIL_ERR_STATE, "batchnorm '%s': folded into %s '%s', which has no "
                          "bias node (the compiler should have added one)", bn->name,
                          veil_op_name(l->op), l->name);
    const size_t c = l->op == VEIL_OP_CONV2D ? p->nodes[wi].dims[0] : p->nodes[wi].dims[1];
    const struct veil_node *bias = &p->nodes[bi];
    if (bias->numel != c || bn->nin != 5)
        return veil_error(VEIL_ERR_STATE, "batchnorm '%s': %zu channels but the bias of '%s' has "
                          "%zu", bn->name, c, l->name, bias->numel);
    const double *gamma = values[bn->in[1]], *beta = values[bn->in[2]];
    const double *mean = values[bn->in[3]], *var = values[bn->in[4]];
    if (!gamma || !beta || !mean || !var)
        return veil_error(VEIL_ERR_UNSUPPORTED, "batchnorm '%s': its parameters are not held by "
                          "the owner of '%s''s weight; give all four to that party", bn->name,
                          l->name);
    if (!values[bi] && !bias->synthetic)
        return veil_error(VEIL_ERR_UNSUPPORTED, "batchnorm '%s': the bias '%s' of '%s' belongs to "
                          "another party than its weight; give both to the same party to fold",
                          bn->name, bias->name, l->name);
    double *s = malloc(c * sizeof *s);
    if (!s)
        return veil_error(VEIL_ERR_NOMEM, "batchnorm '%s': out of memory", bn->name);
    for (size_t j = 0; j < c; j++) {
        double v = var[j] + bn->a.eps;
        if (!(v > 0)) {
            free(s);
            return veil_error(VEIL_ERR_INVAL, "batchnorm '%s': var[%zu] + eps = %g; the variance "
                              "must be >= 0 (give the running variance)", bn->name, j, v);
        }
        s[j] = gamma[j] / sqrt(v);
    }
    if (!values[bi]) {
        values[bi] = calloc(c, sizeof(double));
        if (!values[bi]) {
            free(s);
            return veil_error(VEIL_ERR_NOMEM, "batchnorm '%s': out of memory", bn->name);
        }
    }
    double *w = values[wi], *b = values[bi];
    const size_t wn = p->nodes[wi].numel;
    if (l->op == VEIL_OP_CONV2D) {
        const size_t per = wn / c; /* OIHW: output channel o owns w[o * per .. (o + 1) * per) */
        for (size_t o = 0; o < c; o++)
            for (size_t k = 0; k < per; k++)
                w[o * per + k] *= s[o];
    } else {
        for (size_t i = 0; i < wn; i++) /* (in, out): channel = column */
            w[i] *= s[i % c];
    }
    for (size_t j = 0; j < c; j++)
        b[j] = (b[j] - mean[j]) * s[j] + beta[j];
    free(s);
    return VEIL_OK;
}

/* Binds the leaves party owns (every leaf for party -1): inputs unless params is 2, parameters
 * (and the batch-norm folding of their layers) when params is set (1: with the inputs, 2:
 * alone). */
static int bind(const veil_plan_t *p, int party, int params, const struct veil_feed *feeds,
                size_t nfeeds, double **values)
{
    if (!p || !values)
        return veil_error(VEIL_ERR_INVAL, "bind: NULL plan or values table");
    if (nfeeds && !feeds)
        return veil_error(VEIL_ERR_INVAL, "bind: %zu feeds announced but the array is NULL",
                          nfeeds);
    for (size_t i = 0; i < p->count; i++)
        values[i] = NULL;
    int rc = VEIL_OK;
    for (size_t li = 0; li < p->nleaves; li++) {
        const struct veil_node *n = &p->nodes[p->leaves[li]];
        if ((party >= 0 && n->owner != party) || n->synthetic ||
            (!params && n->op == VEIL_OP_PARAM) || (params == 2 && n->op == VEIL_OP_INPUT))
            continue;
        if ((rc = bind_leaf(p, n, feeds, nfeeds, &values[n->index])) != VEIL_OK)
            goto fail;
    }
    for (size_t i = 0; params && i < p->count; i++) {
        const struct veil_node *l = &p->nodes[i];
        if (l->fold_bn < 0 || (l->op != VEIL_OP_CONV2D && l->op != VEIL_OP_DENSE))
            continue;
        if (!values[l->in[1]])
            continue; /* another party holds the weight and folds it */
        int done = 0; /* a twin (micro-batching) shares weight and bias and folded them already */
        for (size_t t = 0; t < i && !done; t++)
            done = p->nodes[t].fold_bn >= 0 && p->nodes[t].in[1] == l->in[1];
        if (!done && (rc = fold_one(p, l, values)) != VEIL_OK)
            goto fail;
    }
    for (size_t li = 0; li < p->nleaves; li++) {
        const struct veil_node *n = &p->nodes[p->leaves[li]];
        if (params && n->synthetic && (party < 0 || n->owner == party) && !values[n->index]) {
            rc = veil_error(VEIL_ERR_STATE, "parameter '%s': a synthetic bias that no folded "
                            "batch norm computed", n->name);
            goto fail;
        }
    }
    return VEIL_OK;
fail:
    veil_plan_values_free(p, values);
    return rc;
}

int veil_plan_bind(const veil_plan_t *p, int party, const struct veil_feed *feeds, size_t nfeeds,
                   double **values)
{
    return bind(p, party, 1, feeds, nfeeds, values);
}

int veil_plan_bind_inputs(const veil_plan_t *p, int party, const struct veil_feed *feeds,
                          size_t nfeeds, double **values)
{
    return bind(p, party, 0, feeds, nfeeds, values);
}

int veil_plan_bind_params(const veil_plan_t *p, int party, const struct veil_feed *feeds,
                          size_t nfeeds, double **values)
{
    return bind(p, party, 2, feeds, nfeeds, values);
}

void veil_plan_values_free(const veil_plan_t *p, double **values)
{
    if (!p || !values)
        return;
    for (size_t i = 0; i < p->count; i++) {
        free(values[i]);
        values[i] = NULL;
    }
}

/*
 * plain.c — the plaintext executor's walk (contract in plain_internal.h) and veil_plain_run: leaf
 * values bound (encoded in FIXED mode), constants materialised when reached, every other node
 * evaluated in plan order by its op's function (plain_forward.c, plain_backward.c), temporaries
 * freed after their last reader, outputs decoded. Single-threaded, no StarPU: the oracle of the
 * secure run, so it stays simple.
 */
#include "config.h"

#include "base/base_internal.h"
#include "graph/plain/plain_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int veil_plain_exec_init(struct veil_plain_exec *e, const veil_plan_t *p, enum veil_plain_mode mode)
{
    if (!e || !p)
        return veil_error(VEIL_ERR_INVAL, "plain run: NULL executor or plan");
    memset(e, 0, sizeof *e);
    if (mode < 0 || mode >= VEIL_PLAIN_MODE_COUNT)
        return veil_error(VEIL_ERR_INVAL, "plain run: mode %d; give VEIL_PLAIN_DOUBLE, "
                          "VEIL_PLAIN_FIXED or VEIL_PLAIN_FIXED_NEAREST", (int)mode);
    e->p = p;
    e->mode = mode;
    e->f = p->opts.frac_bits;
    size_t n = p->count ? p->count : 1;
    e->d = calloc(n, sizeof *e->d);
    e->w = calloc(n, sizeof *e->w);
    e->daux = calloc(n, sizeof *e->daux);
    e->waux = calloc(n, sizeof *e->waux);
    e->aux_numel = calloc(n, sizeof *e->aux_numel);
    e->vd = calloc(n, sizeof *e->vd);
    e->vw = calloc(n, sizeof *e->vw);
    e->gd = calloc(n, sizeof *e->gd);
    e->gw = calloc(n, sizeof *e->gw);
    e->sd = calloc(n, sizeof *e->sd);
    e->sw = calloc(n, sizeof *e->sw);
    if (!e->d || !e->w || !e->daux || !e->waux || !e->aux_numel || !e->vd || !e->vw || !e->gd ||
        !e->gw || !e->sd || !e->sw) {
        veil_plain_exec_fini(e);
        return veil_error(VEIL_ERR_NOMEM, "plain run: out of memory (%zu nodes)", p->count);
    }
    return VEIL_OK;
}

/* Frees node i's value and saved state. */
static void drop(struct veil_plain_exec *e, size_t i)
{
    free(e->d[i]);
    free(e->w[i]);
    e->d[i] = NULL;
    e->w[i] = NULL;
    for (int k = 0; k < VEIL_PLAIN_MAX_AUX; k++) {
        free(e->daux[i][k]);
        free(e->waux[i][k]);
        e->daux[i][k] = NULL;
        e->waux[i][k] = NULL;
        e->aux_numel[i][k] = 0;
    }
}

/* Sets node n's value from numel doubles (copied, or encoded in FIXED mode). what names the
 * node's kind in a range error. */
static int set_value(struct veil_plain_exec *e, const struct veil_node *n, const double *v,
                     const char *what)
{
    size_t i = (size_t)n->index;
    drop(e, i);
    if (e->mode == VEIL_PLAIN_DOUBLE) {
        e->d[i] = malloc(n->numel * sizeof(double));
        if (!e->d[i])
            return veil_error(VEIL_ERR_NOMEM, "plain run: %s '%s': out of memory", what, n->name);
        memcpy(e->d[i], v, n->numel * sizeof(double));
        return VEIL_OK;
    }
    e->w[i] = malloc(n->numel * sizeof(uint64_t));
    if (!e->w[i])
        return veil_error(VEIL_ERR_NOMEM, "plain run: %s '%s': out of memory", what, n->name);
    int rc = veil_fixed_encode_array(v, n->numel, e->f, e->w[i]);
    if (rc != VEIL_OK) {
        char why[256];
        snprintf(why, sizeof why, "%s", veil_last_error());
        drop(e, i);
        return veil_error(rc, "plain run: %s '%s' does not fit fixed point with %d fractional "
                          "bits (%s); scale it into (-%.3g, %.3g)", what, n->name, e->f, why,
                          veil_fixed_max_abs(e->f), veil_fixed_max_abs(e->f));
    }
    return VEIL_OK;
}

int veil_plain_exec_bind(struct veil_plain_exec *e, double *const *values)
{
    if (!e || !e->p || !values)
        return veil_error(VEIL_ERR_INVAL, "plain run: NULL executor or values");
    for (size_t i = 0; i < e->p->count; i++) {
        if (!values[i])
            continue;
        const struct veil_node *n = &e->p->nodes[i];
        int rc = set_value(e, n, values[i],
                           n->op == VEIL_OP_INPUT ? "input"
                           : n->op == VEIL_OP_PARAM ? "parameter" : veil_op_name(n->op));
        if (rc != VEIL_OK)
            return rc;
    }
    return VEIL_OK;
}

static int has_value(const struct veil_plain_exec *e, size_t i)
{
    return e->mode == VEIL_PLAIN_DOUBLE ? e->d[i] != NULL : e->w[i] != NULL;
}

/* Whether node i must survive the walk (leaves, outputs, the loss). */
static int keep(const veil_plan_t *p, size_t i)
{
    const struct veil_node *n = &p->nodes[i];
    return n->op == VEIL_OP_INPUT || n->op == VEIL_OP_PARAM || n->output >= 0 ||
           (int)i == p->loss;
}

/* Frees the operands (and saved state) whose last reader is node i. */
static void free_after(struct veil_plain_exec *e, size_t i)
{
    const veil_plan_t *p = e->p;
    const struct veil_node *n = &p->nodes[i];
    for (int k = 0; k <= n->nin; k++) {
        int j = k < n->nin ? n->in[k] : n->fwd;
        if (j >= 0 && p->nodes[j].last_use == (int)i && !keep(p, (size_t)j))
            drop(e, (size_t)j);
    }
}

static int eval(struct veil_plain_exec *e, size_t i)
{
    const struct veil_node *n = &e->p->nodes[i];
    if (n->op == VEIL_OP_INPUT || n->op == VEIL_OP_PARAM) {
        if (!has_value(e, i))
            return veil_error(VEIL_ERR_INVAL, "plain run: %s '%s' has no value; feed it",
                              n->op == VEIL_OP_INPUT ? "input" : "parameter", n->name);
        return VEIL_OK;
    }
    if (n->op == VEIL_OP_CONST)
        return n->cvalues ? set_value(e, n, n->cvalues, "constant")
                          : veil_error(VEIL_ERR_STATE, "plain run: constant '%s' has no values",
                                       n->name);
    for (int k = 0; k <= n->nin; k++) {
        int j = k < n->nin ? n->in[k] : n->fwd;
        if (j < 0)
            continue;
        if ((size_t)j >= e->p->count || (k < n->nin && !has_value(e, (size_t)j)))
            return veil_error(VEIL_ERR_STATE, "plain run: %s '%s': operand '%s' is not computed "
                              "(was it freed, or is the range of nodes run too short?)",
                              veil_op_name(n->op), n->name,
                              (size_t)j < e->p->count ? e->p->nodes[j].name : "?");
    }
    veil_plain_fn fn = veil_op_desc(n->op)->plain;
    if (!fn)
        return veil_error(VEIL_ERR_UNSUPPORTED, "plain run: node '%s' (op %s) has no plaintext "
                          "evaluation in this build", n->name, veil_op_name(n->op));
    drop(e, i);
    int rc = fn(e, n);
    if (rc != VEIL_OK) {
        drop(e, i);
        return rc;
    }
    /* an update's effect is the parameter's new value; the node itself holds none. */
    if (!has_value(e, i) && n->op != VEIL_OP_SGD_UPDATE && n->op != VEIL_OP_ADAM_UPDATE)
        return veil_error(VEIL_ERR_STATE, "plain run: %s '%s' produced no value",
                          veil_op_name(n->op), n->name);
    return VEIL_OK;
}

int veil_plain_exec_run(struct veil_plain_exec *e, size_t from, size_t to, int free_dead)
{
    if (!e || !e->p)
        return veil_error(VEIL_ERR_INVAL, "plain run: NULL executor");
    if (from > to || to > e->p->count)
        return veil_error(VEIL_ERR_INVAL, "plain run: nodes [%zu, %zu) of a plan of %zu", from, to,
                          e->p->count);
    for (size_t i = from; i < to; i++) {
        int rc = eval(e, i);
        if (rc != VEIL_OK)
            return rc;
        if (free_dead)
            free_after(e, i);
    }
    return VEIL_OK;
}

int veil_plain_exec_get(const struct veil_plain_exec *e, int i, double *out)
{
    if (!e || !e->p || !out || i < 0 || (size_t)i >= e->p->count)
        return veil_error(VEIL_ERR_INVAL, "plain run: no node %d to read", i);
    const struct veil_node *n = &e->p->nodes[i];
    if (!has_value(e, (size_t)i))
        return veil_error(VEIL_ERR_STATE, "plain run: %s '%s' has no value (not computed, or "
                          "freed after its last use)", veil_op_name(n->op), n->name);
    if (e->mode == VEIL_PLAIN_DOUBLE)
        memcpy(out, e->d[i], n->numel * sizeof(double));
    else
        veil_fixed_decode_array(e->w[i], n->numel, e->f, out);
    return VEIL_OK;
}

void veil_plain_exec_fini(struct veil_plain_exec *e)
{
    if (!e)
        return;
    if (e->p && e->d && e->w && e->daux && e->waux && e->aux_numel)
        for (size_t i = 0; i < e->p->count; i++)
            drop(e, i);
    if (e->p && e->vd && e->vw && e->gd && e->gw && e->sd && e->sw)
        for (size_t i = 0; i < e->p->count; i++) {
            free(e->vd[i]);
            free(e->vw[i]);
            free(e->gd[i]);
            free(e->gw[i]);
            free(e->sd[i]);
            free(e->sw[i]);
        }
    free(e->d);
    free(e->w);
    free(e->daux);
    free(e->waux);
    free(e->aux_numel);
    free(e->vd);
    free(e->vw);
    free(e->gd);
    free(e->gw);
    free(e->sd);
    free(e->sw);
    memset(e, 0, sizeof *e);
}

int veil_plain_run(const veil_plan_t *p, enum veil_plain_mode mode, const struct veil_feed *feeds,
                   size_t nfeeds, double *const *outputs)
{
    if (!p)
        return veil_error(VEIL_ERR_INVAL, "veil_plain_run: no plan");
    if (p->noutputs && !outputs)
        return veil_error(VEIL_ERR_INVAL, "veil_plain_run: the plan has %zu outputs; give an "
                          "array of %zu output buffers", p->noutputs, p->noutputs);
    for (size_t k = 0; k < p->noutputs; k++)
        if (!outputs[k])
            return veil_error(VEIL_ERR_INVAL, "veil_plain_run: output %zu ('%s') has no buffer; "
                              "give %zu doubles", k, p->nodes[p->outputs[k]].name,
                              p->nodes[p->outputs[k]].numel);
    struct veil_plain_exec e;
    double **values = calloc(p->count ? p->count : 1, sizeof *values);
    if (!values)
        return veil_error(VEIL_ERR_NOMEM, "veil_plain_run: out of memory");
    int rc = veil_plain_exec_init(&e, p, mode);
    if (rc != VEIL_OK) {
        free(values);
        return rc;
    }
    rc = veil_plan_bind(p, -1, feeds, nfeeds, values);
    if (rc == VEIL_OK)
        rc = veil_plain_exec_bind(&e, values);
    veil_plan_values_free(p, values);
    free(values);
    /* Forward pass only: the backward nodes of a training plan are the trainer's business. */
    if (rc == VEIL_OK)
        rc = veil_plain_exec_run(&e, 0, p->nforward, 1);
    for (size_t k = 0; rc == VEIL_OK && k < p->noutputs; k++)
        rc = veil_plain_exec_get(&e, p->outputs[k], outputs[k]);
    veil_plain_exec_fini(&e);
    return rc;
}

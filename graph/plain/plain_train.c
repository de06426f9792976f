/*
 * plain_train.c — the plaintext trainer (include/veil/graph.h): one plaintext executor kept
 * across steps, whose parameter arrays are bound once and then rewritten by the SGD_UPDATE nodes
 * (plain_backward.c) at every step, with the velocities and last gradients that the executor
 * holds per parameter. Each step or run binds only the inputs: feeds go through veil_plan_bind
 * (the same checks and messages as every run) with placeholder feeds for the leaves the caller
 * does not give there, whose values are then discarded. Under weight averaging it counts its
 * steps and averages the parameters' replicas after every average_every-th, as a session does.
 */
#include "config.h"

#include "base/base_internal.h"
#include "graph/plain/plain_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct veil_plain_trainer {
    const veil_plan_t *p;
    struct veil_plain_exec e;
    double **values;        /* p->count: veil_plan_bind's output, emptied after each bind */
    double *ones;           /* placeholder values (the largest leaf's numel) */
    struct veil_feed *fill; /* caller feeds + placeholders, rebuilt per bind */
    char *label_only;       /* per node: an input read only as a loss's labels */
    int stepped;
    uint64_t steps;         /* steps done: weight averaging after every average_every-th */
};

/* Re-records the current error with the calling function's name in front. */
static int wrap(int rc, const char *fn)
{
    char msg[600];
    snprintf(msg, sizeof msg, "%s", veil_last_error());
    return veil_error(rc, "%s: %s", fn, msg);
}

/* Whether a feed names leaf n. */
static int fed(const struct veil_node *n, const struct veil_feed *feeds, size_t nfeeds)
{
    for (size_t k = 0; k < nfeeds; k++)
        if (feeds[k].name && strcmp(feeds[k].name, n->name) == 0)
            return 1;
    return 0;
}

/*
 * Binds the leaves of kind `kind` (INPUT or PARAM) from feeds into the executor, leaving the
 * others as they are. A feed naming a leaf of the other kind is refused (wrong place). The other
 * kind gets placeholder feeds for veil_plan_bind, as do labels-only inputs that are not fed when
 * optional_labels is set. fn names the public call in errors.
 */
static int bind_kind(veil_plain_trainer_t *t, enum veil_op kind, const struct veil_feed *feeds,
                     size_t nfeeds, int optional_labels, const char *fn)
{
    const veil_plan_t *p = t->p;
    size_t nfill = nfeeds;
    if (nfeeds && !feeds)
        return veil_error(VEIL_ERR_INVAL, "%s: %zu feeds but the array is NULL", fn, nfeeds);
    for (size_t k = 0; k < p->nleaves; k++) {
        const struct veil_node *n = &p->nodes[p->leaves[k]];
        if (n->op != kind && !n->synthetic && fed(n, feeds, nfeeds))
            return veil_error(VEIL_ERR_INVAL, "%s: '%s' is %s; %s", fn, n->name,
                              n->op == VEIL_OP_PARAM ? "a parameter" : "an input",
                              n->op == VEIL_OP_PARAM
                                  ? "parameters are bound once by veil_plain_trainer_new"
                                  : "inputs are fed to each veil_plain_trainer_step or run");
    }
    if (nfeeds)
        memcpy(t->fill, feeds, nfeeds * sizeof *feeds);
    for (size_t k = 0; k < p->nleaves; k++) {
        const struct veil_node *n = &p->nodes[p->leaves[k]];
        /* a parameter replica is bound from its replica 0's feed (name), placeholder or not */
        int placeholder = n->op != kind && !n->synthetic && n->replica == 0;
        if (optional_labels && t->label_only[n->index] && !fed(n, feeds, nfeeds))
            placeholder = 1;
        if (placeholder)
            t->fill[nfill++] = (struct veil_feed){n->name, t->ones, n->numel};
    }
    int rc = veil_plan_bind(p, -1, t->fill, nfill, t->values);
    if (rc == VEIL_OK) {
        for (size_t i = 0; i < p->count; i++)
            if (t->values[i] && p->nodes[i].op != kind) {
                free(t->values[i]);
                t->values[i] = NULL;
            }
        rc = veil_plain_exec_bind(&t->e, t->values);
    }
    for (size_t i = 0; i < p->count; i++) {
        free(t->values[i]);
        t->values[i] = NULL;
    }
    return rc == VEIL_OK ? VEIL_OK : wrap(rc, fn);
}

/* Marks the inputs whose every reader is a softmax_cross_entropy reading them as labels. */
static void find_labels(veil_plain_trainer_t *t)
{
    const veil_plan_t *p = t->p;
    for (size_t k = 0; k < p->nleaves; k++) {
        const int j = p->leaves[k];
        if (p->nodes[j].op != VEIL_OP_INPUT)
            continue;
        int labels = 0, other = 0;
        for (size_t i = 0; i < p->nforward; i++)
            for (int a = 0; a < p->nodes[i].nin; a++)
                if (p->nodes[i].in[a] == j) {
                    if (p->nodes[i].op == VEIL_OP_SOFTMAX_XENT && a == 1)
                        labels = 1;
                    else
                        other = 1;
                }
        t->label_only[j] = (char)(labels && !other);
    }
}

veil_plain_trainer_t *veil_plain_trainer_new(const veil_plan_t *p, enum veil_plain_mode mode,
                                             const struct veil_feed *params, size_t nparams)
{
    static const char fn[] = "veil_plain_trainer_new";
    if (!p) {
        veil_error(VEIL_ERR_INVAL, "%s: no plan", fn);
        return NULL;
    }
    if (!p->opts.training || p->loss < 0) {
        veil_error(VEIL_ERR_INVAL,
                   "%s: plan '%s' was not compiled for training; compile with "
                   "veil_compile_options.training = 1 (and a softmax_cross_entropy loss)",
                   fn, p->model);
        return NULL;
    }
    veil_plain_trainer_t *t = calloc(1, sizeof *t);
    if (!t) {
        veil_error(VEIL_ERR_NOMEM, "%s: out of memory", fn);
        return NULL;
    }
    t->p = p;
    int rc = veil_plain_exec_init(&t->e, p, mode);
    if (rc != VEIL_OK) {
        wrap(rc, fn);
        free(t);
        return NULL;
    }
    size_t maxn = 1;
    for (size_t k = 0; k < p->nleaves; k++)
        if (p->nodes[p->leaves[k]].numel > maxn)
            maxn = p->nodes[p->leaves[k]].numel;
    t->values = calloc(p->count ? p->count : 1, sizeof *t->values);
    t->ones = malloc(maxn * sizeof *t->ones);
    t->fill = malloc((nparams + p->nleaves + 1) * sizeof *t->fill);
    t->label_only = calloc(p->count ? p->count : 1, 1);
    if (!t->values || !t->ones || !t->label_only || !t->fill) {
        veil_error(VEIL_ERR_NOMEM, "%s: out of memory", fn);
        goto fail;
    }
    for (size_t k = 0; k < maxn; k++)
        t->ones[k] = 1.0;
    find_labels(t);
    if (bind_kind(t, VEIL_OP_PARAM, params, nparams, 0, fn) != VEIL_OK)
        goto fail;
    return t;
fail:
    veil_plain_trainer_destroy(&t);
    return NULL;
}

/* Makes room in t->fill for nfeeds caller feeds plus one placeholder per leaf. */
static int fill_room(veil_plain_trainer_t *t, size_t nfeeds, const char *fn)
{
    struct veil_feed *f = realloc(t->fill, (nfeeds + t->p->nleaves + 1) * sizeof *f);
    if (!f)
        return veil_error(VEIL_ERR_NOMEM, "%s: out of memory", fn);
    t->fill = f;
    return VEIL_OK;
}

int veil_plain_trainer_step(veil_plain_trainer_t *t, const struct veil_feed *feeds, size_t nfeeds,
                            double *loss)
{
    static const char fn[] = "veil_plain_trainer_step";
    if (!t)
        return veil_error(VEIL_ERR_INVAL, "%s: no trainer", fn);
    int rc = fill_room(t, nfeeds, fn);
    if (rc == VEIL_OK)
        rc = bind_kind(t, VEIL_OP_INPUT, feeds, nfeeds, 0, fn);
    if (rc != VEIL_OK)
        return rc;
    t->e.step = t->steps + 1; /* Adam's bias corrections */
    rc = veil_plain_exec_run(&t->e, 0, t->p->count, 1);
    if (rc == VEIL_OK && veil_plan_average_due(t->p, t->steps + 1))
        rc = veil_plain_exec_average_replicas(&t->e);
    if (rc != VEIL_OK)
        return wrap(rc, fn);
    t->steps++;
    t->stepped = 1;
    if (loss) {
        double l[1];
        rc = veil_plain_exec_get(&t->e, t->p->loss, l);
        if (rc != VEIL_OK)
            return wrap(rc, fn);
        *loss = l[0];
    }
    return VEIL_OK;
}

int veil_plain_trainer_run(veil_plain_trainer_t *t, const struct veil_feed *feeds, size_t nfeeds,
                           double *const *outputs)
{
    static const char fn[] = "veil_plain_trainer_run";
    if (!t)
        return veil_error(VEIL_ERR_INVAL, "%s: no trainer", fn);
    const veil_plan_t *p = t->p;
    if (p->noutputs && !outputs)
        return veil_error(VEIL_ERR_INVAL,
                          "%s: the plan has %zu outputs; give an array of %zu "
                          "output buffers",
                          fn, p->noutputs, p->noutputs);
    for (size_t k = 0; k < p->noutputs; k++)
        if (!outputs[k])
            return veil_error(VEIL_ERR_INVAL,
                              "%s: output %zu ('%s') has no buffer; give %zu "
                              "doubles",
                              fn, k, p->nodes[p->outputs[k]].name, p->nodes[p->outputs[k]].numel);
    int rc = fill_room(t, nfeeds, fn);
    if (rc == VEIL_OK)
        rc = bind_kind(t, VEIL_OP_INPUT, feeds, nfeeds, 1, fn);
    if (rc != VEIL_OK)
        return rc;
    rc = veil_plain_exec_run(&t->e, 0, p->nforward, 1);
    for (size_t k = 0; rc == VEIL_OK && k < p->noutputs; k++)
        rc = veil_plain_exec_get(&t->e, p->outputs[k], outputs[k]);
    return rc == VEIL_OK ? VEIL_OK : wrap(rc, fn);
}

/* The PARAM node called name, or -1 with VEIL_ERR_INVAL recorded. */
static int find_param(const veil_plain_trainer_t *t, const char *name, const char *fn)
{
    int i = t && name ? veil_plan_find(t->p, name) : -1;
    if (i < 0 || t->p->nodes[i].op != VEIL_OP_PARAM) {
        veil_error(VEIL_ERR_INVAL, "%s: the plan has no parameter named '%s'", fn,
                   name ? name : "(null)");
        return -1;
    }
    return i;
}

int veil_plain_trainer_param(const veil_plain_trainer_t *t, const char *name, double *out)
{
    int i = find_param(t, name, "veil_plain_trainer_param");
    if (i < 0)
        return VEIL_ERR_INVAL;
    if (!out)
        return veil_error(VEIL_ERR_INVAL, "veil_plain_trainer_param: no output buffer");
    int rc = veil_plain_exec_get(&t->e, i, out);
    return rc == VEIL_OK ? VEIL_OK : wrap(rc, "veil_plain_trainer_param");
}

int veil_plain_trainer_grad(const veil_plain_trainer_t *t, const char *name, double *out)
{
    static const char fn[] = "veil_plain_trainer_grad";
    int i = find_param(t, name, fn);
    if (i < 0)
        return VEIL_ERR_INVAL;
    if (!out)
        return veil_error(VEIL_ERR_INVAL, "%s: no output buffer", fn);
    const struct veil_node *n = &t->p->nodes[i];
    if (t->e.mode != VEIL_PLAIN_DOUBLE ? !t->e.gw[i] : !t->e.gd[i])
        return veil_error(VEIL_ERR_STATE, "%s: parameter '%s' has no gradient %s", fn, name,
                          t->stepped ? "(it does not reach the loss)" : "before the first step");
    if (t->e.mode != VEIL_PLAIN_DOUBLE)
        veil_fixed_decode_array(t->e.gw[i], n->numel, t->e.f, out);
    else
        memcpy(out, t->e.gd[i], n->numel * sizeof *out);
    return VEIL_OK;
}

void veil_plain_trainer_destroy(veil_plain_trainer_t **tp)
{
    if (!tp || !*tp)
        return;
    veil_plain_trainer_t *t = *tp;
    veil_plain_exec_fini(&t->e);
    if (t->values)
        for (size_t i = 0; i < t->p->count; i++)
            free(t->values[i]);
    free(t->values);
    free(t->ones);
    free(t->fill);
    free(t->label_only);
    free(t);
    *tp = NULL;
}

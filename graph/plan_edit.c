/*
 * plan_edit.c — the plan-editing helpers the compiler's passes share (compile.c, fold.c,
 * autodiff.c): finding a node by name, naming a node a pass makes, a node's defaults, inserting
 * a node and renumbering every reference, and rebuilding the leaf and output lists after the
 * node array changed. Nothing here knows an op's meaning; the passes call these helpers, and
 * this file calls none of them.
 */
#include "config.h"

#include "base/base_internal.h"
#include "graph/graph_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int veil_plan_find(const veil_plan_t *p, const char *name)
{
    for (size_t i = 0; p && name && i < p->count; i++)
        if (strcmp(p->nodes[i].name, name) == 0)
            return (int)i;
    return -1;
}

/* A name for a node made by the compiler: "<base><suffix>", or, when that is too long or taken,
 * base shortened and "~k" appended so that it fits and is unique. */
void veil_plan_unique_name(const veil_plan_t *p, const char *base, const char *suffix, char *out)
{
    int n = snprintf(out, VEIL_NODE_NAME_MAX, "%s%s", base, suffix);
    if (n >= 0 && n < VEIL_NODE_NAME_MAX && veil_plan_find(p, out) < 0)
        return;
    /* Suffixes are short literals, so base keeps most of the room. */
    for (int k = 2;; k++) {
        char tail[32];
        snprintf(tail, sizeof tail, "~%d", k);
        size_t lb = strlen(base), ls = strlen(suffix), lt = strlen(tail);
        size_t room = VEIL_NODE_NAME_MAX - 1 - ls - lt;
        if (lb > room)
            lb = room;
        memcpy(out, base, lb);
        memcpy(out + lb, suffix, ls);
        memcpy(out + lb + ls, tail, lt + 1);
        if (veil_plan_find(p, out) < 0)
            return;
    }
}

void veil_plan_node_init(struct veil_node *n)
{
    memset(n, 0, sizeof *n);
    for (int j = 0; j < VEIL_NODE_MAX_IN; j++)
        n->in[j] = -1;
    n->owner = -1;
    n->fwd = -1;
    n->output = -1;
    n->reveal_to = VEIL_ALL_PARTIES;
    n->folded_into = -1;
    n->fold_bn = -1;
    n->last_use = -1;
    n->grad_of = -1;
    n->replica_of = -1;
}

static int shift(int idx, int pos)
{
    return idx >= pos ? idx + 1 : idx;
}

/* Inserts node nn at position pos, moving nodes [pos, count) up one and renumbering every
 * reference to them, so that an order that was topological stays so when nn only reads nodes
 * before pos. */
int veil_plan_insert(veil_plan_t *p, int pos, const struct veil_node *nn)
{
    struct veil_node *nodes = realloc(p->nodes, (p->count + 1) * sizeof *nodes);
    if (!nodes)
        return veil_error(VEIL_ERR_NOMEM, "veil_compile: out of memory");
    p->nodes = nodes;
    memmove(&nodes[pos + 1], &nodes[pos], (p->count - (size_t)pos) * sizeof *nodes);
    nodes[pos] = *nn;
    p->count++;
    for (size_t k = 0; k < p->count; k++) {
        struct veil_node *n = &nodes[k];
        n->index = (int)k;
        if ((int)k == pos)
            continue;
        for (int j = 0; j < n->nin; j++)
            if (n->in[j] >= 0)
                n->in[j] = shift(n->in[j], pos);
        if (n->fwd >= 0)
            n->fwd = shift(n->fwd, pos);
        if (n->folded_into >= 0)
            n->folded_into = shift(n->folded_into, pos);
        if (n->fold_bn >= 0)
            n->fold_bn = shift(n->fold_bn, pos);
        if (n->grad_of >= 0)
            n->grad_of = shift(n->grad_of, pos);
        if (n->last_use >= 0)
            n->last_use = shift(n->last_use, pos);
    }
    if (p->loss >= 0)
        p->loss = shift(p->loss, pos);
    if ((size_t)pos < p->nforward)
        p->nforward++;
    return VEIL_OK;
}

/* Rebuilds the leaf and output index lists after the node array changed. */
int veil_plan_index(veil_plan_t *p)
{
    free(p->leaves);
    free(p->outputs);
    p->leaves = calloc(p->count ? p->count : 1, sizeof *p->leaves);
    p->outputs = calloc(p->count ? p->count : 1, sizeof *p->outputs);
    if (!p->leaves || !p->outputs)
        return veil_error(VEIL_ERR_NOMEM, "veil_compile: out of memory");
    p->nleaves = 0;
    p->noutputs = 0;
    for (size_t i = 0; i < p->count; i++) {
        const struct veil_node *n = &p->nodes[i];
        if (n->op == VEIL_OP_INPUT || n->op == VEIL_OP_PARAM)
            p->leaves[p->nleaves++] = (int)i;
        if (n->output >= 0)
            p->noutputs++;
    }
    for (size_t i = 0; i < p->count; i++)
        if (p->nodes[i].output >= 0)
            p->outputs[p->nodes[i].output] = (int)i;
    return VEIL_OK;
}

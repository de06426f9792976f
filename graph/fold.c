/*
 * fold.c — batch-norm folding, a compiler pass over a plan. An inference batch norm is an affine
 * map per channel, so it folds into the conv2d or dense layer that produces its input: the weight
 * owner rescales W and shifts b before sharing them (bind.c), and the batch norm costs nothing
 * online. This pass only decides and records: it checks that folding is sound (the producer is a
 * conv2d or dense layer whose output only the batch norm reads, whose weight and bias are
 * parameters that no other node reads (except the layer's twins: the same layer on another
 * micro-batch, followed by the same batch norm), and whose weight owner also owns the four batch-norm
 * parameters), sets the batch norm's folded_into and the producer's fold_bn, and gives a layer
 * without bias a synthetic bias parameter (bind.c computes its values). A folded batch norm stays
 * in the plan and its consumers keep reading it: both executors evaluate it as the identity of its
 * input (the producer's output, already normalised by the folded weights), so nothing downstream
 * has to be rewired.
 */
#include "config.h"

#include "base/base_internal.h"
#include "graph/graph_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Index of a node other than `except` that reads node i (operand or saved state), or -1. */
static int other_reader(const veil_plan_t *p, int i, int except)
{
    for (size_t k = 0; k < p->count; k++) {
        const struct veil_node *n = &p->nodes[k];
        if ((int)k == except)
            continue;
        for (int j = 0; j < n->nin; j++)
            if (n->in[j] == i)
                return (int)k;
        if (n->fwd == i)
            return (int)k;
    }
    return -1;
}

/* "an input", "a parameter", ... for messages. */
static const char *what_is(const struct veil_node *n)
{
    return n->op == VEIL_OP_INPUT   ? "an input"
           : n->op == VEIL_OP_PARAM ? "a parameter"
           : n->op == VEIL_OP_CONST ? "a constant"
                                    : "a computed tensor";
}

static const char *const bn_what[4] = {"gamma", "beta", "mean", "var"};

/* The bias of layer l, or -1. */
static int bias_of(const struct veil_node *l)
{
    return l->nin > 2 ? l->in[2] : -1;
}

/*
 * 1 when layer r is a twin of layer x, which batch norm bn follows: the same op, weight and bias
 * (an absent bias matches a compiler-made one: the twins end up sharing it), and an output that
 * only a batch norm with bn's four parameters and eps reads. Twins are what micro-batching
 * (microbatch.c) makes of one layer: they can share one folded weight, folded once (bind.c).
 */
static int twin(const veil_plan_t *p, const struct veil_node *x, const struct veil_node *bn,
                const struct veil_node *r)
{
    if (r->op != x->op || r->in[1] != x->in[1] || r->a.stride != x->a.stride ||
        r->a.pad != x->a.pad)
        return 0;
    int bx = bias_of(x), br = bias_of(r);
    if (bx != br && !(bx < 0 && p->nodes[br].synthetic) && !(br < 0 && p->nodes[bx].synthetic))
        return 0;
    int b2 = other_reader(p, r->index, -1);
    if (b2 < 0 || other_reader(p, r->index, b2) >= 0)
        return 0;
    const struct veil_node *n2 = &p->nodes[b2];
    if (n2->op != VEIL_OP_BATCHNORM || n2->in[0] != r->index || n2->a.eps != bn->a.eps)
        return 0;
    for (int j = 1; j < 5; j++)
        if (n2->in[j] != bn->in[j])
            return 0;
    return 1;
}

/* A reader of node i other than layer x and x's twins, or -1. */
static int foreign_reader(const veil_plan_t *p, int i, const struct veil_node *x,
                          const struct veil_node *bn)
{
    for (size_t k = 0; k < p->count; k++) {
        const struct veil_node *n = &p->nodes[k];
        if ((int)k == x->index)
            continue;
        int reads = n->fwd == i;
        for (int j = 0; j < n->nin; j++)
            reads |= n->in[j] == i;
        if (reads && !twin(p, x, bn, n))
            return (int)k;
    }
    return -1;
}

/* Checks that batch norm bn can be folded into its producer; VEIL_OK or the refusal. */
static int check_foldable(const veil_plan_t *p, const struct veil_node *bn)
{
    const struct veil_node *x = &p->nodes[bn->in[0]];
    if (x->op != VEIL_OP_CONV2D && x->op != VEIL_OP_DENSE)
        return veil_error(VEIL_ERR_UNSUPPORTED, "veil_compile: batchnorm '%s' follows %s '%s'; "
                          "only the output of a conv2d or dense layer can absorb a batch norm: "
                          "put it right after one", bn->name, veil_op_name(x->op), x->name);
    int r = other_reader(p, x->index, bn->index);
    if (r >= 0)
        return veil_error(VEIL_ERR_UNSUPPORTED, "veil_compile: batchnorm '%s': the output of %s "
                          "'%s' is also read by %s '%s'; folding changes that output, so let only "
                          "the batch norm read it (give '%s' the batch norm's output)", bn->name,
                          veil_op_name(x->op), x->name, veil_op_name(p->nodes[r].op),
                          p->nodes[r].name, p->nodes[r].name);
    if (x->output >= 0)
        return veil_error(VEIL_ERR_UNSUPPORTED, "veil_compile: batchnorm '%s': the output of %s "
                          "'%s' is revealed; folding changes it, so reveal the batch norm instead",
                          bn->name, veil_op_name(x->op), x->name);
    const struct veil_node *w = &p->nodes[x->in[1]];
    if (w->op != VEIL_OP_PARAM)
        return veil_error(VEIL_ERR_UNSUPPORTED, "veil_compile: batchnorm '%s': the weight '%s' of "
                          "%s '%s' is not a parameter but %s; folding rescales the weight at its "
                          "owner, so give the layer a parameter weight (veil_param)", bn->name,
                          w->name, veil_op_name(x->op), x->name, what_is(w));
    for (int j = 1; j < x->nin; j++) {
        const struct veil_node *o = &p->nodes[x->in[j]];
        const char *role = j == 1 ? "weight" : "bias";
        if (j == 2 && (o->op != VEIL_OP_PARAM || o->owner != w->owner))
            return veil_error(VEIL_ERR_UNSUPPORTED, "veil_compile: batchnorm '%s': the bias '%s' "
                              "of %s '%s' is %s (party %d); the fold shifts the bias at the "
                              "weight owner: make it a parameter of party %d", bn->name, o->name,
                              veil_op_name(x->op), x->name, what_is(o), o->owner, w->owner);
        r = foreign_reader(p, o->index, x, bn);
        if (r >= 0)
            return veil_error(VEIL_ERR_UNSUPPORTED, "veil_compile: batchnorm '%s': the %s '%s' of "
                              "%s '%s' is also read by %s '%s'; folding would change it there too: "
                              "give the folded layer its own %s", bn->name, role, o->name,
                              veil_op_name(x->op), x->name, veil_op_name(p->nodes[r].op),
                              p->nodes[r].name, role);
    }
    for (int j = 1; j < 5; j++) {
        const struct veil_node *q = &p->nodes[bn->in[j]];
        if (q->op != VEIL_OP_PARAM || q->owner != w->owner)
            return veil_error(VEIL_ERR_UNSUPPORTED, "veil_compile: batchnorm '%s': its %s '%s' "
                              "belongs to party %d but the weight '%s' of %s '%s' belongs to party "
                              "%d; the fold happens at the weight owner: give the batch norm's "
                              "parameters to party %d", bn->name, bn_what[j - 1], q->name,
                              q->owner, w->name, veil_op_name(x->op), x->name, w->owner,
                              w->owner);
    }
    return VEIL_OK;
}

int veil_plan_fold_batchnorm(veil_plan_t *p)
{
    /* Nodes are inserted while walking, so the walk re-reads p->count and indices. */
    for (size_t i = 0; i < p->count; i++) {
        if (p->nodes[i].op != VEIL_OP_BATCHNORM || p->nodes[i].folded_into >= 0)
            continue;
        int rc = check_foldable(p, &p->nodes[i]);
        if (rc != VEIL_OK)
            return rc;
        int bn = (int)i;
        int x = p->nodes[bn].in[0];
        int shared = -1; /* a folded twin's compiler-made bias, which x then shares */
        for (int t = 0; t < x && bias_of(&p->nodes[x]) < 0 && shared < 0; t++)
            if (p->nodes[t].fold_bn >= 0 && bias_of(&p->nodes[t]) >= 0 &&
                p->nodes[bias_of(&p->nodes[t])].synthetic &&
                twin(p, &p->nodes[x], &p->nodes[bn], &p->nodes[t]))
                shared = bias_of(&p->nodes[t]);
        if (shared >= 0) {
            p->nodes[x].nin = 3;
            p->nodes[x].in[2] = shared;
        } else if (p->nodes[x].nin < 3 || p->nodes[x].in[2] < 0) {
            const struct veil_node *w = &p->nodes[p->nodes[x].in[1]];
            struct veil_node b;
            veil_plan_node_init(&b);
            b.op = VEIL_OP_PARAM;
            veil_plan_unique_name(p, p->nodes[bn].name, ".folded_bias", b.name);
            size_t c = p->nodes[x].dims[1];
            veil_node_set_shape(&b, 1, &c);
            b.owner = w->owner;
            b.synthetic = 1;
            rc = veil_plan_insert(p, x, &b);
            if (rc != VEIL_OK)
                return rc;
            /* The producer moved up one, so did the batch norm; the bias sits at x. */
            int bias = x;
            x++;
            bn++;
            i++;
            p->nodes[x].nin = 3;
            p->nodes[x].in[2] = bias;
        }
        p->nodes[bn].folded_into = x;
        p->nodes[x].fold_bn = bn;
    }
    return veil_plan_index(p);
}

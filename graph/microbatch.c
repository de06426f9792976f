/*
 * microbatch.c — the inter-batch pipeline as a graph transformation. With microbatches = k the
 * compiler rewrites the graph before anything else: every node that depends on an input (a
 * "batched" node; axis 0 of every input is the batch, B rows) is replaced by k copies over B/k
 * rows each, which read slices [j B/k, (j+1) B/k) of the inputs and share the parameters and
 * constants (and whatever is computed from those alone). Revealed outputs, and the logits of a
 * training loss, are the concatenation of their k copies along axis 0 under the original name,
 * so feeds, outputs and the loss keep their names, shapes and meaning. The k copies are k
 * independent sub-DAGs: the executor submits them together (layer by layer, interleaved) and
 * StarPU overlaps one micro-batch's messages with another's computation. In training the single
 * loss over the concatenated logits sends each copy its rows of the gradient, and every
 * parameter's gradient is the sum over the copies (the autodiff adds the contributions of a
 * node's consumers): the update equals the unsplit batch's, up to the truncations' 0/1 ulp.
 *
 * WEIGHT AVERAGING (replicas set): copy j is also a replica with its own parameters. Every
 * parameter gets k leaves (replica 0 under its name, replica j > 0 as "<name>~r<j>" with
 * replica = j, bound from the original name's feed), every node computed from parameters alone
 * k copies under the same naming, and micro-batch copy j reads replica j. The autodiff then
 * gives each replica its own gradient (only its copy's rows) and its own SGD_UPDATE.
 *
 * Refused with a message naming the node: inputs of different batch sizes, a batch that k does
 * not divide, and ops that mix rows along axis 0 (matmul and transpose, as in attention where
 * axis 0 is a sequence; concat along axis 0; a reshape that changes axis 0), a linear layer whose
 * weight depends on an input, and an add or concat of a batched with an unbatched operand.
 */
#include "config.h"

#include "base/base_internal.h"
#include "graph/graph_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct split {
    const veil_graph_t *g;
    veil_graph_t *out;
    int k;
    size_t batch, rows; /* B and B / k */
    int replicas;       /* weight averaging: parameters and their functions get k copies */
    char *batched;      /* per node of g */
    char *replicated;   /* per node of g: computed from parameters alone, replicas set */
    struct veil_node **reps;   /* per replicated node of g: its k replicas */
    struct veil_node **one;   /* per node of g: its single copy (unbatched nodes, full inputs) */
    struct veil_node **copies; /* per node of g: k copies (batched non-input nodes) */
    struct veil_node **slices; /* per input of g: k slices, made when first read */
    struct veil_node **full;   /* per batched node of g: the concatenation of its copies */
};

static struct veil_node **at(struct veil_node **v, const struct split *s, size_t i, int j)
{
    return &v[i * (size_t)s->k + (size_t)j];
}

static int refuse(struct split *s, const struct veil_node *n, const char *why)
{
    return veil_error(VEIL_ERR_UNSUPPORTED,
                      "veil_compile: microbatches %d: %s '%s' %s; compile with microbatches = 1",
                      s->k, veil_op_name(n->op), n->name, why);
}

/* Which nodes depend on an input, and whether each op may be split along axis 0. */
static int classify(struct split *s)
{
    const veil_graph_t *g = s->g;
    s->batch = 0;
    for (size_t i = 0; i < g->count; i++) {
        const struct veil_node *n = g->nodes[i];
        if (n->op != VEIL_OP_INPUT)
            continue;
        if (n->ndim < 1 || (s->batch && n->dims[0] != s->batch))
            return veil_error(VEIL_ERR_UNSUPPORTED,
                              "veil_compile: microbatches %d: input '%s' has %zu rows along axis 0 "
                              "where another input has %zu; every input's axis 0 must be the batch",
                              s->k, n->name, n->ndim ? n->dims[0] : (size_t)0, s->batch);
        s->batch = n->dims[0];
    }
    if (s->batch == 0)
        return veil_error(VEIL_ERR_INVAL, "veil_compile: microbatches %d: the graph has no input "
                          "to split", s->k);
    if (s->batch % (size_t)s->k != 0)
        return veil_error(VEIL_ERR_INVAL, "veil_compile: microbatches %d does not divide the "
                          "batch of %zu rows; give a divisor of it", s->k, s->batch);
    s->rows = s->batch / (size_t)s->k;
    for (size_t i = 0; i < g->count; i++) {
        const struct veil_node *n = g->nodes[i];
        int any = n->op == VEIL_OP_INPUT, all = 1;
        for (int o = 0; o < n->nin; o++) {
            any |= s->batched[n->in[o]];
            all &= s->batched[n->in[o]];
        }
        s->batched[i] = (char)any;
        int rep = s->replicas && n->op == VEIL_OP_PARAM;
        for (int o = 0; o < n->nin; o++)
            rep |= s->replicated[n->in[o]];
        s->replicated[i] = (char)(rep && !any);
        if (!any || n->op == VEIL_OP_INPUT)
            continue;
        const unsigned fl = veil_op_desc(n->op)->flags;
        if (fl & VEIL_OPF_MIXES_ROWS)
            return refuse(s, n, "mixes rows along axis 0, the batch axis (attention's axis 0 is "
                                "a sequence)");
        if (fl & VEIL_OPF_LOSS) {
            if (!s->batched[n->in[0]] || g->nodes[n->in[1]]->op != VEIL_OP_INPUT)
                return refuse(s, n, "needs logits computed from the inputs and labels that are an "
                                    "input");
            continue; /* computed once, over the concatenated logits */
        }
        if (fl & VEIL_OPF_WEIGHTED)
            for (int o = 1; o < n->nin; o++)
                if (s->batched[n->in[o]])
                    return refuse(s, n, "has a weight or bias computed from the inputs");
        if (fl & VEIL_OPF_COMBINES) {
            if (!all)
                return refuse(s, n, "combines an operand computed from the inputs with one that is "
                                    "not");
            if (n->op == VEIL_OP_CONCAT && n->a.axis == 0)
                return refuse(s, n, "concatenates along axis 0, the batch axis");
        }
        if (n->ndim < 1 || n->dims[0] != s->batch)
            return refuse(s, n, "does not keep the batch along axis 0");
        if (n->op == VEIL_OP_RESHAPE && g->nodes[n->in[0]]->dims[0] != s->batch)
            return refuse(s, n, "changes axis 0, the batch axis");
    }
    return VEIL_OK;
}

/* A node of op over operands in (n of them) with n0's attributes and shape, axis 0 = rows. */
static struct veil_node *emit(struct split *s, const struct veil_node *n0, const char *name,
                              enum veil_op op, int nin, veil_node_t *const *in, size_t rows)
{
    struct veil_node *c = veil_graph_add_node(s->out, op, name, nin, in);
    if (!c)
        return NULL;
    c->a = n0->a;
    size_t dims[VEIL_MAX_DIMS];
    memcpy(dims, n0->dims, sizeof dims);
    dims[0] = rows;
    veil_node_set_shape(c, n0->ndim, dims);
    return c;
}

static int suffixed(struct split *s, const struct veil_node *n, const char *tag, int j,
                    char out[VEIL_NODE_NAME_MAX])
{
    int len = snprintf(out, VEIL_NODE_NAME_MAX, "%s@%s%d", n->name, tag, j);
    if (len < 0 || len >= VEIL_NODE_NAME_MAX)
        return refuse(s, n, "has a name too long for its micro-batch copies' names");
    return VEIL_OK;
}

/* Replica j's name: n's own for j = 0, "<name>~r<j>" otherwise (compile.c strips it back). */
static int replica_name(struct split *s, const struct veil_node *n, int j,
                        char out[VEIL_NODE_NAME_MAX])
{
    int len = j ? snprintf(out, VEIL_NODE_NAME_MAX, "%s~r%d", n->name, j)
                : snprintf(out, VEIL_NODE_NAME_MAX, "%s", n->name);
    if (len < 0 || len >= VEIL_NODE_NAME_MAX)
        return refuse(s, n, "has a name too long for its replicas' names");
    return VEIL_OK;
}

/* Slice j of input i (made on first use). */
static struct veil_node *slice_of(struct split *s, size_t i, int j)
{
    struct veil_node **sl = at(s->slices, s, i, j);
    if (*sl)
        return *sl;
    const struct veil_node *n = s->g->nodes[i];
    char name[VEIL_NODE_NAME_MAX];
    if (suffixed(s, n, "mb", j, name) != VEIL_OK)
        return NULL;
    veil_node_t *in[1] = {s->one[i]};
    *sl = emit(s, n, name, VEIL_OP_SLICE, 1, in, s->rows);
    if (*sl) {
        (*sl)->a.axis = 0;
        (*sl)->a.start = (size_t)j * s->rows;
    }
    return *sl;
}

/* The operand o of a copy j (j < 0: the single copy of an unbatched node). */
static struct veil_node *operand(struct split *s, int o, int j)
{
    if (s->replicated[o])
        return *at(s->reps, s, (size_t)o, j < 0 ? 0 : j);
    if (!s->batched[o] || j < 0)
        return s->one[o];
    if (s->g->nodes[o]->op == VEIL_OP_INPUT)
        return slice_of(s, (size_t)o, j);
    return *at(s->copies, s, (size_t)o, j);
}

/* Node i's copies concatenated along axis 0 under its own name (made once). */
static struct veil_node *full_of(struct split *s, size_t i)
{
    if (s->full[i])
        return s->full[i];
    const struct veil_node *n = s->g->nodes[i];
    struct veil_node *c = *at(s->copies, s, i, 0);
    for (int j = 1; j < s->k && c; j++) {
        char name[VEIL_NODE_NAME_MAX];
        if (j < s->k - 1 && suffixed(s, n, "cat", j, name) != VEIL_OK)
            return NULL;
        veil_node_t *in[2] = {c, *at(s->copies, s, i, j)};
        c = emit(s, n, j == s->k - 1 ? n->name : name, VEIL_OP_CONCAT, 2, in,
                 (size_t)(j + 1) * s->rows);
        if (c)
            c->a = (struct veil_node_attrs){.axis = 0};
    }
    return s->full[i] = c;
}

/* The copy of leaf i in the new graph (a replicated parameter: its replicas). */
static int copy_leaf(struct split *s, size_t i)
{
    const struct veil_node *n = s->g->nodes[i];
    if (n->op == VEIL_OP_INPUT) {
        s->one[i] = veil_input(s->out, n->name, n->owner, n->ndim, n->dims);
    } else if (n->op == VEIL_OP_CONST) {
        s->one[i] = veil_constant(s->out, n->name, n->ndim, n->dims, n->cvalues);
    } else if (!s->replicated[i]) {
        s->one[i] = veil_param(s->out, n->name, n->owner, n->ndim, n->dims);
    } else {
        for (int j = 0; j < s->k; j++) {
            char name[VEIL_NODE_NAME_MAX];
            if (replica_name(s, n, j, name) != VEIL_OK)
                return VEIL_ERR_UNSUPPORTED;
            struct veil_node *r = veil_param(s->out, name, n->owner, n->ndim, n->dims);
            if (r)
                r->replica = j;
            *at(s->reps, s, i, j) = r;
        }
        s->one[i] = *at(s->reps, s, i, 0);
    }
    return VEIL_OK;
}

/* The copies of computed node i: the loss once over all the rows, replicas, one copy of an
 * unbatched node, or one per micro-batch. */
static int copy_computed(struct split *s, size_t i)
{
    const struct veil_node *n = s->g->nodes[i];
    veil_node_t *in[VEIL_NODE_MAX_IN];
    if (n->op == VEIL_OP_SOFTMAX_XENT && s->batched[i]) { /* once, over all the rows */
        in[0] = full_of(s, (size_t)n->in[0]);
        in[1] = s->one[n->in[1]];
        s->one[i] = emit(s, n, n->name, n->op, 2, in, n->dims[0]);
        return VEIL_OK;
    }
    if (s->replicated[i]) {
        for (int j = 0; j < s->k; j++) {
            char name[VEIL_NODE_NAME_MAX];
            if (replica_name(s, n, j, name) != VEIL_OK)
                return VEIL_ERR_UNSUPPORTED;
            for (int o = 0; o < n->nin; o++)
                in[o] = operand(s, n->in[o], j);
            *at(s->reps, s, i, j) = emit(s, n, name, n->op, n->nin, in, n->ndim ? n->dims[0] : 0);
        }
        s->one[i] = *at(s->reps, s, i, 0);
        return VEIL_OK;
    }
    if (!s->batched[i]) {
        for (int o = 0; o < n->nin; o++)
            in[o] = operand(s, n->in[o], -1);
        s->one[i] = emit(s, n, n->name, n->op, n->nin, in, n->ndim ? n->dims[0] : 0);
        return VEIL_OK;
    }
    for (int j = 0; j < s->k; j++) {
        char name[VEIL_NODE_NAME_MAX];
        if (suffixed(s, n, "mb", j, name) != VEIL_OK)
            return VEIL_ERR_UNSUPPORTED;
        for (int o = 0; o < n->nin; o++)
            in[o] = operand(s, n->in[o], j);
        *at(s->copies, s, i, j) = emit(s, n, name, n->op, n->nin, in, s->rows);
    }
    return VEIL_OK;
}

static int build(struct split *s)
{
    const veil_graph_t *g = s->g;
    for (size_t i = 0; i < g->count; i++) {
        const struct veil_node *n = g->nodes[i];
        int rc = veil_op_is(n->op, VEIL_OPF_LEAF) ? copy_leaf(s, i) : copy_computed(s, i);
        if (rc != VEIL_OK)
            return rc;
        if (s->out->status != VEIL_OK)
            return veil_error(s->out->status, "veil_compile: microbatches %d: %s", s->k,
                              s->out->error);
    }
    /* Outputs in their original order, under their original names. */
    for (int k = 0; k < g->noutputs; k++)
        for (size_t i = 0; i < g->count; i++) {
            const struct veil_node *n = g->nodes[i];
            if (n->output != k)
                continue;
            struct veil_node *o = s->batched[i] && n->op != VEIL_OP_INPUT ? full_of(s, i)
                                                                         : s->one[i];
            if (veil_reveal(s->out, o, n->reveal_to) != VEIL_OK)
                return veil_error(VEIL_ERR_STATE, "veil_compile: microbatches %d: %s", s->k,
                                  veil_last_error());
        }
    return s->out->status == VEIL_OK
               ? VEIL_OK
               : veil_error(s->out->status, "veil_compile: microbatches %d: %s", s->k,
                            s->out->error);
}

veil_graph_t *veil_graph_split_microbatches(const veil_graph_t *g, int k, int replicas)
{
    struct split s = {.g = g, .k = k, .replicas = replicas};
    const size_t n = g->count ? g->count : 1;
    s.batched = calloc(n, 1);
    s.replicated = calloc(n, 1);
    s.reps = calloc(n * (size_t)k, sizeof *s.reps);
    s.one = calloc(n, sizeof *s.one);
    s.full = calloc(n, sizeof *s.full);
    s.copies = calloc(n * (size_t)k, sizeof *s.copies);
    s.slices = calloc(n * (size_t)k, sizeof *s.slices);
    s.out = veil_graph_new(g->name);
    int rc = s.batched && s.replicated && s.reps && s.one && s.full && s.copies && s.slices && s.out
                 ? VEIL_OK
                 : veil_error(VEIL_ERR_NOMEM, "veil_compile: out of memory for micro-batches");
    if (rc == VEIL_OK)
        rc = classify(&s);
    if (rc == VEIL_OK)
        rc = build(&s);
    free(s.batched);
    free(s.replicated);
    free(s.reps);
    free(s.one);
    free(s.full);
    free(s.copies);
    free(s.slices);
    if (rc != VEIL_OK)
        veil_graph_destroy(&s.out);
    return s.out;
}

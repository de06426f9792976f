/*
 * graph.c — the graph object of Veil's DSL: the node arena (nodes in creation order, which is a
 * topological order), unique names, the first-error rule that lets builders return NULL without
 * aborting, node queries, leaves (inputs, parameters, constants) and veil_reveal. The layer
 * builders, each with its shape inference, are in op_layers.c.
 */
#include "config.h"

#include "base/base_internal.h"
#include "graph/graph_internal.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

veil_graph_t *veil_graph_new(const char *name)
{
    veil_graph_t *g = calloc(1, sizeof *g);
    if (!g) {
        veil_error(VEIL_ERR_NOMEM, "veil_graph_new: out of memory");
        return NULL;
    }
    snprintf(g->name, sizeof g->name, "%s", name ? name : "model");
    return g;
}

void veil_graph_destroy(veil_graph_t **gp)
{
    if (!gp || !*gp)
        return;
    veil_graph_t *g = *gp;
    for (size_t i = 0; i < g->count; i++) {
        free(g->nodes[i]->cvalues);
        free(g->nodes[i]);
    }
    free(g->nodes);
    free(g);
    *gp = NULL;
}

int veil_graph_status(const veil_graph_t *g)
{
    return g ? g->status : VEIL_ERR_INVAL;
}

const char *veil_graph_error(const veil_graph_t *g)
{
    return g ? g->error : "no graph";
}

const char *veil_graph_name(const veil_graph_t *g)
{
    return g ? g->name : "";
}

size_t veil_graph_node_count(const veil_graph_t *g)
{
    return g ? g->count : 0;
}

veil_node_t *veil_graph_find(const veil_graph_t *g, const char *name)
{
    if (!g || !name)
        return NULL;
    for (size_t i = 0; i < g->count; i++)
        if (strcmp(g->nodes[i]->name, name) == 0)
            return g->nodes[i];
    return NULL;
}

const char *veil_node_name(const veil_node_t *n)
{
    return n ? n->name : "";
}

int veil_node_ndim(const veil_node_t *n)
{
    return n ? n->ndim : 0;
}

size_t veil_node_dim(const veil_node_t *n, int i)
{
    return n && i >= 0 && i < n->ndim ? n->dims[i] : 0;
}

size_t veil_node_numel(const veil_node_t *n)
{
    return n ? n->numel : 0;
}

const char *veil_node_op(const veil_node_t *n)
{
    return n ? veil_op_name(n->op) : "";
}

veil_node_t *veil_graph_fail(veil_graph_t *g, int status, const char *fmt, ...)
{
    if (!g)
        return NULL;
    if (g->status == VEIL_OK) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(g->error, sizeof g->error, fmt, ap);
        va_end(ap);
        g->status = status;
    }
    return NULL;
}

const char *veil_shape_str(int ndim, const size_t *dims, char *buf, size_t len)
{
    size_t off = 0;
    if (len == 0)
        return buf;
    buf[0] = '\0';
    off += (size_t)snprintf(buf + off, len - off, "[");
    for (int i = 0; i < ndim && off < len; i++)
        off += (size_t)snprintf(buf + off, len - off, "%s%zu", i ? "," : "", dims[i]);
    if (off < len)
        snprintf(buf + off, len - off, "]");
    return buf;
}

void veil_node_set_shape(struct veil_node *n, int ndim, const size_t *dims)
{
    n->ndim = ndim;
    n->numel = 1;
    for (int i = 0; i < ndim; i++) {
        n->dims[i] = dims[i];
        n->numel *= dims[i];
    }
}

/* 1 when name is a usable node name: 1..63 printable characters without quotes or spaces (names
 * appear in weights files, messages and traces). */
static int name_ok(const char *name)
{
    size_t len = strlen(name);
    if (len == 0 || len >= VEIL_NODE_NAME_MAX)
        return 0;
    for (size_t i = 0; i < len; i++)
        if (name[i] <= ' ' || name[i] > '~' || name[i] == '"' || name[i] == '\\')
            return 0;
    return 1;
}

struct veil_node *veil_graph_add_node(veil_graph_t *g, enum veil_op op, const char *name, int nin,
                                      veil_node_t *const *in)
{
    /* builders pass their op's operand count: a mismatch is a bug here, not user input */
    VEIL_ASSERT(nin >= veil_op_desc(op)->nin_min && nin <= veil_op_desc(op)->nin_max);
    if (!g)
        return NULL;
    for (int i = 0; i < nin; i++) {
        if (!in[i])
            return NULL; /* an earlier builder failed (its error is recorded) or a NULL operand */
        if (in[i]->index < 0 || (size_t)in[i]->index >= g->count || g->nodes[in[i]->index] != in[i])
            return veil_graph_fail(g, VEIL_ERR_INVAL, "%s '%s': operand %d belongs to another graph",
                                   veil_op_name(op), name ? name : "?", i);
    }
    if (g->status != VEIL_OK)
        return NULL; /* keep the first error; nothing after it is meaningful */
    char auto_name[VEIL_NODE_NAME_MAX];
    if (!name) {
        snprintf(auto_name, sizeof auto_name, "%s%zu", veil_op_name(op), g->count);
        name = auto_name;
    }
    if (!name_ok(name))
        return veil_graph_fail(g, VEIL_ERR_INVAL,
                               "%s: name \"%.80s\" is not usable: give 1 to %d printable characters "
                               "without spaces or quotes",
                               veil_op_name(op), name, VEIL_NODE_NAME_MAX - 1);
    if (veil_graph_find(g, name))
        return veil_graph_fail(g, VEIL_ERR_INVAL, "%s '%s': the name is already used by another node",
                               veil_op_name(op), name);
    if (g->count == g->cap) {
        size_t cap = g->cap ? 2 * g->cap : 32;
        struct veil_node **nodes = realloc(g->nodes, cap * sizeof *nodes);
        if (!nodes)
            return veil_graph_fail(g, VEIL_ERR_NOMEM, "%s '%s': out of memory", veil_op_name(op),
                                   name);
        g->nodes = nodes;
        g->cap = cap;
    }
    struct veil_node *n = calloc(1, sizeof *n);
    if (!n)
        return veil_graph_fail(g, VEIL_ERR_NOMEM, "%s '%s': out of memory", veil_op_name(op), name);
    veil_plan_node_init(n); /* the "none" defaults every node starts from */
    n->op = op;
    n->index = (int)g->count;
    snprintf(n->name, sizeof n->name, "%s", name);
    n->nin = nin;
    for (int i = 0; i < nin; i++)
        n->in[i] = in[i]->index;
    g->nodes[g->count++] = n;
    return n;
}

/* Checks a leaf's shape: 1..VEIL_MAX_DIMS dimensions, each >= 1, numel below 2^40. */
static int leaf_shape_ok(veil_graph_t *g, const char *what, const char *name, int ndim,
                         const size_t *dims)
{
    if (ndim < 1 || ndim > VEIL_MAX_DIMS || !dims) {
        veil_graph_fail(g, VEIL_ERR_SHAPE, "%s '%s': %d dimensions given; use 1 to %d", what,
                        name ? name : "?", ndim, VEIL_MAX_DIMS);
        return 0;
    }
    size_t numel = 1;
    for (int i = 0; i < ndim; i++) {
        if (dims[i] == 0 || dims[i] > ((size_t)1 << 40) / numel) {
            veil_graph_fail(g, VEIL_ERR_SHAPE, "%s '%s': dimension %d is %zu; give 1 to 2^40 "
                            "elements in all", what, name ? name : "?", i, dims[i]);
            return 0;
        }
        numel *= dims[i];
    }
    return 1;
}

static veil_node_t *leaf(veil_graph_t *g, enum veil_op op, const char *name, int owner, int ndim,
                         const size_t *dims)
{
    if (!g)
        return NULL;
    if (g->status != VEIL_OK)
        return NULL;
    if (op != VEIL_OP_CONST && (owner < 0 || owner >= VEIL_GRAPH_MAX_PARTIES))
        return veil_graph_fail(g, VEIL_ERR_INVAL, "%s '%s': owner %d is not a party id (0..%d)",
                               veil_op_name(op), name ? name : "?", owner,
                               VEIL_GRAPH_MAX_PARTIES - 1);
    if (!leaf_shape_ok(g, veil_op_name(op), name, ndim, dims))
        return NULL;
    struct veil_node *n = veil_graph_add_node(g, op, name, 0, NULL);
    if (!n)
        return NULL;
    n->owner = op == VEIL_OP_CONST ? -1 : owner;
    veil_node_set_shape(n, ndim, dims);
    return n;
}

veil_node_t *veil_input(veil_graph_t *g, const char *name, int owner, int ndim, const size_t *dims)
{
    return leaf(g, VEIL_OP_INPUT, name, owner, ndim, dims);
}

veil_node_t *veil_param(veil_graph_t *g, const char *name, int owner, int ndim, const size_t *dims)
{
    return leaf(g, VEIL_OP_PARAM, name, owner, ndim, dims);
}

veil_node_t *veil_constant(veil_graph_t *g, const char *name, int ndim, const size_t *dims,
                           const double *values)
{
    if (g && g->status == VEIL_OK && !values)
        return veil_graph_fail(g, VEIL_ERR_INVAL, "constant '%s': no values given",
                               name ? name : "?");
    struct veil_node *n = leaf(g, VEIL_OP_CONST, name, -1, ndim, dims);
    if (!n)
        return NULL;
    for (size_t i = 0; i < n->numel; i++)
        if (!isfinite(values[i]))
            return veil_graph_fail(g, VEIL_ERR_INVAL, "constant '%s': element %zu is not finite",
                                   n->name, i);
    n->cvalues = malloc(n->numel * sizeof *n->cvalues);
    if (!n->cvalues)
        return veil_graph_fail(g, VEIL_ERR_NOMEM, "constant '%s': out of memory", n->name);
    memcpy(n->cvalues, values, n->numel * sizeof *n->cvalues);
    return n;
}

int veil_reveal(veil_graph_t *g, veil_node_t *n, int to)
{
    if (!g)
        return veil_error(VEIL_ERR_INVAL, "veil_reveal: no graph");
    if (g->status != VEIL_OK)
        return veil_error(g->status, "%s", g->error);
    if (!n) {
        veil_graph_fail(g, VEIL_ERR_INVAL, "veil_reveal: no node (an earlier builder failed?)");
        return veil_error(g->status, "%s", g->error);
    }
    if (to != VEIL_ALL_PARTIES && (to < 0 || to >= VEIL_GRAPH_MAX_PARTIES)) {
        veil_graph_fail(g, VEIL_ERR_INVAL, "veil_reveal '%s': %d is not a party id; give 0..N-1 "
                        "or VEIL_ALL_PARTIES", n->name, to);
        return veil_error(g->status, "%s", g->error);
    }
    if (n->output >= 0) {
        veil_graph_fail(g, VEIL_ERR_INVAL, "veil_reveal '%s': already revealed", n->name);
        return veil_error(g->status, "%s", g->error);
    }
    if (n->op == VEIL_OP_PARAM) {
        veil_graph_fail(g, VEIL_ERR_INVAL, "veil_reveal '%s': revealing a parameter would disclose "
                        "the model; reveal a layer's output", n->name);
        return veil_error(g->status, "%s", g->error);
    }
    n->output = g->noutputs++;
    n->reveal_to = to;
    return VEIL_OK;
}

/*
 * load.c — veil_onnx_load: parses an ONNX ModelProto (protobuf-c), checks it (opset of the
 * default domain in 7..17, graph inputs with fixed shapes, initializers, names defined once),
 * imports its nodes in dependency order (a cycle or a dangling name is an error naming the node)
 * through ops.c, reveals its outputs, and keeps what a run needs: the graph, the parameters'
 * values as feeds, the inputs' and outputs' names and shapes. Also the value table the ops use
 * and the model's accessors.
 */
#include "config.h"

#include "base/base_internal.h"
#include "onnx/onnx_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OX_MODEL_MAX ((size_t)1 << 31) /* protobuf's own limit is 2 GiB */

int ox_fail(struct veil_onnx_model *m, int status, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (m->rc == VEIL_OK)
        m->rc = status;
    if (m->cur)
        return veil_error(status, "%s: node '%s' (%s): %s", m->path,
                          m->cur->name && *m->cur->name ? m->cur->name : "(unnamed)",
                          m->cur->op_type ? m->cur->op_type : "?", msg);
    return veil_error(status, "%s: %s", m->path, msg);
}

int ox_graph_fail(struct veil_onnx_model *m)
{
    int st = veil_graph_status(m->g);
    return ox_fail(m, st != VEIL_OK ? st : VEIL_ERR_INVAL, "%s", veil_graph_error(m->g));
}

struct ox_value *ox_find(struct veil_onnx_model *m, const char *name)
{
    for (size_t i = m->nvals; i-- > 0;)
        if (!strcmp(m->vals[i].name, name))
            return &m->vals[i];
    return NULL;
}

struct ox_value *ox_define(struct veil_onnx_model *m, const char *name, int ndim,
                           const size_t *dims, int is_int)
{
    if (!name || !*name) {
        ox_fail(m, VEIL_ERR_FORMAT, "a value without a name");
        return NULL;
    }
    if (ox_find(m, name)) {
        ox_fail(m, VEIL_ERR_FORMAT, "value '%.100s' is defined twice", name);
        return NULL;
    }
    if (ndim < 0 || ndim > VEIL_MAX_DIMS) {
        ox_fail(m, VEIL_ERR_UNSUPPORTED, "value '%.100s' has %d dimensions (at most %d)", name,
                ndim, VEIL_MAX_DIMS);
        return NULL;
    }
    size_t numel = 1;
    for (int i = 0; i < ndim; i++) {
        if (dims[i] == 0 || dims[i] > OX_MAX_NUMEL / numel) {
            ox_fail(m, dims[i] ? VEIL_ERR_RANGE : VEIL_ERR_UNSUPPORTED,
                    "value '%.100s': dimension %d is %zu (empty tensors and more than %zu "
                    "elements are not supported)",
                    name, i, dims[i], OX_MAX_NUMEL);
            return NULL;
        }
        numel *= dims[i];
    }
    if (m->nvals == m->capvals) {
        size_t cap = m->capvals ? 2 * m->capvals : 64;
        struct ox_value *nv = realloc(m->vals, cap * sizeof *nv);
        if (!nv) {
            ox_fail(m, VEIL_ERR_NOMEM, "out of memory");
            return NULL;
        }
        m->vals = nv;
        m->capvals = cap;
    }
    struct ox_value *v = &m->vals[m->nvals++];
    memset(v, 0, sizeof *v);
    v->name = name;
    v->ndim = ndim;
    for (int i = 0; i < ndim; i++)
        v->dims[i] = dims[i];
    v->numel = numel;
    v->is_int = is_int;
    v->init = -1;
    v->defined = 1;
    return v;
}

const char *ox_name(struct veil_onnx_model *m, const char *base, char *buf)
{
    int ok = base && *base && strlen(base) < 64;
    for (const char *c = base; ok && *c; c++)
        if (*c <= ' ' || *c > '~' || *c == '"' || *c == '\\')
            ok = 0;
    if (ok && !veil_graph_find(m->g, base)) {
        snprintf(buf, 64, "%s", base);
        return buf;
    }
    do
        snprintf(buf, 64, "v%u", m->uniq++);
    while (veil_graph_find(m->g, buf));
    return buf;
}

int ox_dsl_shape(int ndim, const size_t *dims, size_t *out)
{
    if (ndim == 0) {
        out[0] = 1;
        return 1;
    }
    for (int i = 0; i < ndim; i++)
        out[i] = dims[i];
    return ndim;
}

int ox_init_values(struct veil_onnx_model *m, int init, double **out)
{
    const Onnx__TensorProto *t = m->proto->graph->initializer[init];
    char what[200];
    snprintf(what, sizeof what, "%s: initializer '%.100s'", m->path, t->name ? t->name : "");
    int present = 1;
    int rc = ox_tensor_values(t, m->dir, what, out, &present);
    if (rc == VEIL_OK && !present)
        m->stripped_seen = 1;
    if (rc != VEIL_OK && m->rc == VEIL_OK)
        m->rc = rc; /* the import returns this status (its message is the tensor reader's) */
    return rc;
}

static int add_feed(struct veil_onnx_model *m, const char *name, const double *values, size_t n)
{
    if (m->nfeeds == m->capfeeds) {
        size_t cap = m->capfeeds ? 2 * m->capfeeds : 16;
        struct veil_feed *nf = realloc(m->feeds, cap * sizeof *nf);
        if (!nf)
            return ox_fail(m, VEIL_ERR_NOMEM, "out of memory");
        m->feeds = nf;
        m->capfeeds = cap;
    }
    char *nm = strdup(name);
    double *v = malloc(n * sizeof *v);
    if (!nm || !v) {
        free(nm);
        free(v);
        return ox_fail(m, VEIL_ERR_NOMEM, "out of memory");
    }
    memcpy(v, values, n * sizeof *v);
    m->feeds[m->nfeeds++] = (struct veil_feed){nm, v, n};
    return VEIL_OK;
}

veil_node_t *ox_param(struct veil_onnx_model *m, const char *base, int ndim, const size_t *dims,
                      const double *values)
{
    char buf[64];
    size_t d[VEIL_MAX_DIMS];
    int nd = ox_dsl_shape(ndim, dims, d);
    const char *nm = ox_name(m, base, buf);
    veil_node_t *p = veil_param(m->g, nm, m->o.model_owner, nd, d);
    if (!p) {
        ox_graph_fail(m);
        return NULL;
    }
    if (values) {
        if (m->o.weights == 0) {
            ox_fail(m, VEIL_ERR_INVAL,
                    "the file carries the values of parameter '%s', but this "
                    "party does not own the model (load the stripped PUBLIC.onnx instead)",
                    nm);
            return NULL;
        }
        if (add_feed(m, nm, values, veil_node_numel(p)) != VEIL_OK)
            return NULL;
    } else {
        if (m->o.weights == 1) {
            ox_fail(m, VEIL_ERR_INVAL,
                    "parameter '%s' has no values in this file (a stripped "
                    "model); the model owner needs the full model",
                    nm);
            return NULL;
        }
        m->has_weights = 0;
    }
    return p;
}

veil_node_t *ox_node(struct veil_onnx_model *m, struct ox_value *v)
{
    if (v->node)
        return v->node;
    char buf[64];
    size_t d[VEIL_MAX_DIMS];
    int nd = ox_dsl_shape(v->ndim, v->dims, d);
    if (v->cval) {
        v->node = veil_constant(m->g, ox_name(m, v->name, buf), nd, d, v->cval);
        if (!v->node)
            ox_graph_fail(m);
        return v->node;
    }
    if (v->init >= 0) {
        double *vals = NULL;
        if (ox_init_values(m, v->init, &vals) != VEIL_OK)
            return NULL;
        m->usage[v->init] = OX_AS_PARAM;
        v->node = ox_param(m, v->name, v->ndim, v->dims, vals);
        free(vals);
        return v->node;
    }
    if (v->gelu)
        ox_fail(m, VEIL_ERR_UNSUPPORTED,
                "'%.100s' is part of an Erf expression; Veil imports Erf "
                "only inside GELU's pattern x * 0.5 * (1 + erf(x / sqrt(2)))",
                v->name);
    else
        ox_fail(m, VEIL_ERR_FORMAT, "value '%.100s' has no producer", v->name);
    return NULL;
}

const double *ox_public(struct veil_onnx_model *m, struct ox_value *v)
{
    if (v->cval)
        return v->cval;
    if (v->init >= 0) {
        double *vals = NULL;
        if (ox_init_values(m, v->init, &vals) != VEIL_OK)
            return NULL;
        m->usage[v->init] = OX_AS_PUBLIC;
        if (!vals) {
            ox_fail(m, VEIL_ERR_FORMAT,
                    "initializer '%.100s' is read as public numbers but has "
                    "no values (stripped wrongly?)",
                    v->name);
            return NULL;
        }
        v->cval = vals;
        return vals;
    }
    ox_fail(m, VEIL_ERR_UNSUPPORTED,
            "'%.100s' must be a constant (an initializer, a Constant "
            "node or an input given at load), not a computed or secret tensor",
            v->name);
    return NULL;
}

static int find_opset(struct veil_onnx_model *m)
{
    m->opset = -1;
    for (size_t i = 0; i < m->proto->n_opset_import; i++) {
        const Onnx__OperatorSetIdProto *o = m->proto->opset_import[i];
        if ((!o->domain || !*o->domain || !strcmp(o->domain, "ai.onnx")) && o->has_version)
            m->opset = (int)o->version;
    }
    if (m->opset < 0)
        return ox_fail(m, VEIL_ERR_UNSUPPORTED,
                       "no opset of the default ONNX domain is "
                       "imported (other domains are not supported)");
    if (m->opset < 7 || m->opset > 17)
        return ox_fail(m, VEIL_ERR_UNSUPPORTED,
                       "opset %d; Veil imports opsets 7 to 17 (convert "
                       "the model with onnx.version_converter)",
                       m->opset);
    return VEIL_OK;
}

static const struct veil_onnx_tensor *known(const struct veil_onnx_model *m, const char *name)
{
    for (size_t i = 0; i < m->o.nknown; i++)
        if (!strcmp(m->o.known[i].name, name))
            return &m->o.known[i];
    return NULL;
}

static int add_input(struct veil_onnx_model *m, const Onnx__ValueInfoProto *vi)
{
    const char *name = vi->name;
    const Onnx__TypeProto *tp = vi->type;
    if (!tp || tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !tp->tensor_type)
        return ox_fail(m, VEIL_ERR_UNSUPPORTED, "graph input '%.100s' is not a tensor",
                       name ? name : "");
    const Onnx__TypeProto__Tensor *tt = tp->tensor_type;
    const Onnx__TensorShapeProto *sh = tt->shape;
    if (!sh)
        return ox_fail(m, VEIL_ERR_UNSUPPORTED, "graph input '%.100s' has no shape", name);
    if (sh->n_dim > VEIL_MAX_DIMS)
        return ox_fail(m, VEIL_ERR_UNSUPPORTED, "graph input '%.100s' has %zu dimensions", name,
                       sh->n_dim);
    size_t dims[VEIL_MAX_DIMS];
    int is_int = tt->has_elem_type && ox_is_int_type(tt->elem_type);
    const struct veil_onnx_tensor *k = known(m, name);
    for (size_t i = 0; i < sh->n_dim; i++) {
        const Onnx__TensorShapeProto__Dimension *d = sh->dim[i];
        if (i == 0 && m->o.batch && !is_int && !k) { /* the run's batch, declared or symbolic */
            dims[0] = m->o.batch;
            continue;
        }
        if (d->value_case != ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE)
            return ox_fail(m, VEIL_ERR_UNSUPPORTED,
                           "graph input '%.100s': dimension %zu is "
                           "symbolic ('%.40s'); export the model with fixed sizes, or give "
                           "the batch (veil-onnx run --batch N) if it is the first one",
                           name, i,
                           d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM
                               ? d->dim_param
                               : "");
        if (d->dim_value <= 0)
            return ox_fail(m, VEIL_ERR_UNSUPPORTED, "graph input '%.100s': dimension %zu is %lld",
                           name, i, (long long)d->dim_value);
        dims[i] = (size_t)d->dim_value;
    }
    struct ox_value *v = ox_define(m, name, (int)sh->n_dim, dims, is_int);
    if (!v)
        return VEIL_ERR_FORMAT;
    if (k) {
        if (k->numel != v->numel)
            return ox_fail(m, VEIL_ERR_SHAPE,
                           "input '%.100s' given at load has %zu values, the "
                           "model declares %zu",
                           name, k->numel, v->numel);
        if (!(v->cval = malloc(v->numel * sizeof(double))))
            return ox_fail(m, VEIL_ERR_NOMEM, "out of memory");
        memcpy(v->cval, k->values, v->numel * sizeof(double));
        return VEIL_OK;
    }
    if (is_int)
        return ox_fail(m, VEIL_ERR_UNSUPPORTED,
                       "graph input '%.100s' is an integer tensor "
                       "(element type %d): give its values at load (shapes, axes, indices are "
                       "public), or export them as initializers",
                       name, tt->elem_type);
    struct ox_io *io = &m->inputs[m->ninputs++];
    io->name = name;
    io->ndim = v->ndim;
    memcpy(io->dims, v->dims, sizeof io->dims);
    char buf[64];
    size_t d[VEIL_MAX_DIMS];
    int nd = ox_dsl_shape(v->ndim, v->dims, d);
    if (!strcmp(ox_name(m, name, buf), name))
        snprintf(io->leaf, sizeof io->leaf, "%s", name);
    else
        snprintf(io->leaf, sizeof io->leaf, "in%zu", m->ninputs - 1);
    v->node = veil_input(m->g, io->leaf, m->o.data_owner, nd, d);
    return v->node ? VEIL_OK : ox_graph_fail(m);
}

/* Nodes in dependency order: each pass imports every node whose inputs are all defined. */
static int import_nodes(struct veil_onnx_model *m)
{
    const Onnx__GraphProto *g = m->proto->graph;
    char *done = calloc(g->n_node + 1, 1);
    if (!done)
        return ox_fail(m, VEIL_ERR_NOMEM, "out of memory");
    size_t left = g->n_node;
    int rc = VEIL_OK;
    while (left && rc == VEIL_OK) {
        size_t progress = 0;
        for (size_t i = 0; i < g->n_node && rc == VEIL_OK; i++) {
            const Onnx__NodeProto *n = g->node[i];
            if (done[i])
                continue;
            int ready = 1;
            for (size_t k = 0; k < n->n_input && ready; k++)
                if (n->input[k] && *n->input[k] && !ox_find(m, n->input[k]))
                    ready = 0;
            if (!ready)
                continue;
            m->cur = n;
            rc = ox_import_node(m, n);
            if (rc != VEIL_OK && m->rc != VEIL_OK)
                rc = m->rc; /* the status of the first message, not a helper's placeholder */
            m->cur = NULL;
            done[i] = 1;
            left--;
            progress++;
        }
        if (rc == VEIL_OK && !progress) {
            /* Nothing ready: an input nobody defines, or nodes waiting on each other. */
            for (size_t i = 0; i < g->n_node; i++) {
                if (done[i])
                    continue;
                const Onnx__NodeProto *n = g->node[i];
                for (size_t k = 0; k < n->n_input; k++) {
                    if (!n->input[k] || !*n->input[k] || ox_find(m, n->input[k]))
                        continue;
                    int produced = 0;
                    for (size_t j = 0; j < g->n_node && !produced; j++)
                        for (size_t o = 0; !done[j] && o < g->node[j]->n_output; o++)
                            if (g->node[j]->output[o] &&
                                !strcmp(g->node[j]->output[o], n->input[k]))
                                produced = 1;
                    m->cur = n;
                    rc = produced ? ox_fail(m, VEIL_ERR_FORMAT,
                                            "input '%.100s' depends on this "
                                            "node's own output (a cycle in the graph)",
                                            n->input[k])
                                  : ox_fail(m, VEIL_ERR_FORMAT,
                                            "input '%.100s' is defined by no "
                                            "node, initializer or graph input",
                                            n->input[k]);
                    m->cur = NULL;
                    break;
                }
                if (rc != VEIL_OK)
                    break;
            }
            if (rc == VEIL_OK)
                rc = ox_fail(m, VEIL_ERR_FORMAT, "graph cannot be ordered");
        }
    }
    free(done);
    return rc;
}

static int reveal_outputs(struct veil_onnx_model *m)
{
    const Onnx__GraphProto *g = m->proto->graph;
    if (!g->n_output)
        return ox_fail(m, VEIL_ERR_FORMAT, "the graph has no outputs");
    for (size_t i = 0; i < g->n_output; i++) {
        const char *name = g->output[i]->name ? g->output[i]->name : "";
        struct ox_value *v = ox_find(m, name);
        if (!v)
            return ox_fail(m, VEIL_ERR_FORMAT, "graph output '%.100s' is computed by no node",
                           name);
        veil_node_t *n = ox_node(m, v);
        if (!n)
            return VEIL_ERR_FORMAT;
        const char *op = veil_node_op(n);
        int again = !strcmp(op, "input") || !strcmp(op, "param") || !strcmp(op, "constant");
        for (size_t k = 0; k < m->noutputs && !again; k++)
            if (veil_graph_find(m->g, m->outputs[k].leaf) == n)
                again = 1;
        if (again) { /* a leaf, or a value already revealed: reveal a copy */
            char buf[64];
            size_t d[VEIL_MAX_DIMS];
            for (int k = 0; k < veil_node_ndim(n); k++)
                d[k] = veil_node_dim(n, k);
            n = veil_reshape(m->g, ox_name(m, NULL, buf), n, veil_node_ndim(n), d);
        }
        int to = m->o.reveal_to == -2 ? m->o.data_owner : m->o.reveal_to;
        if (!n || veil_reveal(m->g, n, to) != VEIL_OK)
            return ox_graph_fail(m);
        struct ox_io *io = &m->outputs[m->noutputs++];
        io->name = name;
        snprintf(io->leaf, sizeof io->leaf, "%s", veil_node_name(n));
        io->ndim = v->ndim;
        memcpy(io->dims, v->dims, sizeof io->dims);
    }
    return VEIL_OK;
}

static int build(struct veil_onnx_model *m)
{
    int rc = find_opset(m);
    if (rc != VEIL_OK)
        return rc;
    const Onnx__GraphProto *g = m->proto->graph;
    m->g = veil_graph_new(g->name && strlen(g->name) < 64 ? g->name : "onnx");
    m->usage = calloc(g->n_initializer + 1, sizeof *m->usage);
    m->inputs = calloc(g->n_input + 1, sizeof *m->inputs);
    m->outputs = calloc(g->n_output + 1, sizeof *m->outputs);
    m->recs = calloc(g->n_node + 1, sizeof *m->recs);
    if (!m->g || !m->usage || !m->inputs || !m->outputs || !m->recs)
        return ox_fail(m, VEIL_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < g->n_initializer; i++) {
        const Onnx__TensorProto *t = g->initializer[i];
        char what[160];
        snprintf(what, sizeof what, "%s: initializer '%.100s'", m->path, t->name ? t->name : "");
        int nd;
        size_t dims[VEIL_MAX_DIMS], numel;
        if ((rc = ox_tensor_shape(t, what, &nd, dims, &numel)) != VEIL_OK)
            return rc;
        struct ox_value *v =
            ox_define(m, t->name, nd, dims, t->has_data_type && ox_is_int_type(t->data_type));
        if (!v)
            return VEIL_ERR_FORMAT;
        v->init = (int)i;
    }
    for (size_t i = 0; i < g->n_input; i++) {
        const char *name = g->input[i]->name;
        struct ox_value *v = name ? ox_find(m, name) : NULL;
        if (v && v->init >= 0)
            continue; /* IR < 4 lists initializers among the inputs */
        if ((rc = add_input(m, g->input[i])) != VEIL_OK)
            return rc;
    }
    if ((rc = import_nodes(m)) != VEIL_OK)
        return rc;
    return reveal_outputs(m);
}


static int parse(struct veil_onnx_model *m, const void *bytes, size_t len)
{
    m->proto = onnx__model_proto__unpack(NULL, len, bytes);
    if (!m->proto)
        return ox_fail(m, VEIL_ERR_FORMAT,
                       "not an ONNX model (the protobuf does not parse: "
                       "truncated or corrupt)");
    if (!m->proto->graph)
        return ox_fail(m, VEIL_ERR_FORMAT, "the model has no graph");
    return build(m);
}

static int finish(struct veil_onnx_model *m, int rc, veil_onnx_model_t **out)
{
    if (rc != VEIL_OK) {
        veil_onnx_destroy(&m);
        return rc;
    }
    *out = m;
    return VEIL_OK;
}

static struct veil_onnx_model *model_new(const char *name, const struct veil_onnx_options *o)
{
    struct veil_onnx_model *m = calloc(1, sizeof *m);
    if (!m || !(m->path = strdup(name))) {
        free(m);
        veil_error(VEIL_ERR_NOMEM, "%s: out of memory", name);
        return NULL;
    }
    if (o)
        m->o = *o;
    else
        veil_onnx_options_defaults(&m->o);
    if (!m->o.max_linmap)
        m->o.max_linmap = (size_t)1 << 22;
    m->has_weights = 1;
    return m;
}

int veil_onnx_parse(const void *bytes, size_t len, const char *name,
                    const struct veil_onnx_options *o, veil_onnx_model_t **out)
{
    if (!out || (!bytes && len))
        return veil_error(VEIL_ERR_INVAL, "veil_onnx_parse: NULL argument");
    *out = NULL;
    struct veil_onnx_model *m = model_new(name ? name : "(memory)", o);
    if (!m)
        return VEIL_ERR_NOMEM;
    return finish(m, parse(m, bytes, len), out);
}

int veil_onnx_load(const char *path, const struct veil_onnx_options *o, veil_onnx_model_t **out)
{
    if (!path || !out)
        return veil_error(VEIL_ERR_INVAL, "veil_onnx_load: NULL argument");
    *out = NULL;
    struct veil_onnx_model *m = model_new(path, o);
    if (!m)
        return VEIL_ERR_NOMEM;
    const char *slash = strrchr(path, '/');
    m->dir = slash ? strndup(path, (size_t)(slash - path) + (slash == path)) : strdup(".");
    if (!m->dir)
        return finish(m, veil_error(VEIL_ERR_NOMEM, "out of memory"), out);
    unsigned char *b;
    size_t len;
    int rc = ox_read_file(path, OX_MODEL_MAX, &b, &len);
    if (rc == VEIL_OK) {
        rc = parse(m, b, len);
        free(b);
    }
    return finish(m, rc, out);
}

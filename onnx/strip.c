/*
 * strip.c — the model's options, destruction and accessors; veil_onnx_strip (the model without
 * its parameters' values: what the parties other than the model owner load);
 * veil_onnx_list_unsupported (the nodes whose op type Veil does not import, for veil-onnx check)
 * and veil_onnx_list_inputs (the graph inputs in order, for binding input files).
 */
#include "config.h"

#include "base/base_internal.h"
#include "onnx/onnx_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void veil_onnx_options_defaults(struct veil_onnx_options *o)
{
    memset(o, 0, sizeof *o);
    o->model_owner = 0;
    o->data_owner = 1;
    o->reveal_to = -2;
    o->weights = -1;
    o->max_linmap = (size_t)1 << 22;
}

void veil_onnx_destroy(veil_onnx_model_t **pm)
{
    if (!pm || !*pm)
        return;
    struct veil_onnx_model *m = *pm;
    for (size_t i = 0; i < m->nvals; i++)
        free(m->vals[i].cval);
    for (size_t i = 0; i < m->nfeeds; i++) {
        free((char *)m->feeds[i].name);
        free((double *)m->feeds[i].values);
    }
    free(m->feeds);
    free(m->vals);
    free(m->usage);
    free(m->inputs);
    free(m->outputs);
    free(m->recs);
    veil_graph_destroy(&m->g);
    if (m->proto)
        onnx__model_proto__free_unpacked(m->proto, NULL);
    free(m->path);
    free(m->dir);
    free(m);
    *pm = NULL;
}

veil_graph_t *veil_onnx_graph(const veil_onnx_model_t *m)
{
    return m ? m->g : NULL;
}
int veil_onnx_opset(const veil_onnx_model_t *m)
{
    return m ? m->opset : -1;
}
int veil_onnx_has_weights(const veil_onnx_model_t *m)
{
    return m && m->has_weights;
}
size_t veil_onnx_input_count(const veil_onnx_model_t *m)
{
    return m ? m->ninputs : 0;
}
size_t veil_onnx_output_count(const veil_onnx_model_t *m)
{
    return m ? m->noutputs : 0;
}
size_t veil_onnx_node_count(const veil_onnx_model_t *m)
{
    return m ? m->nrecs : 0;
}

const char *veil_onnx_input_name(const veil_onnx_model_t *m, size_t i)
{
    return m && i < m->ninputs ? m->inputs[i].name : NULL;
}

const char *veil_onnx_input_leaf(const veil_onnx_model_t *m, size_t i)
{
    return m && i < m->ninputs ? m->inputs[i].leaf : NULL;
}

static int shape(const struct ox_io *io, size_t *dims)
{
    for (int k = 0; dims && k < io->ndim; k++)
        dims[k] = io->dims[k];
    return io->ndim;
}

int veil_onnx_input_shape(const veil_onnx_model_t *m, size_t i, size_t *dims)
{
    return m && i < m->ninputs ? shape(&m->inputs[i], dims) : -1;
}

const char *veil_onnx_output_name(const veil_onnx_model_t *m, size_t i)
{
    return m && i < m->noutputs ? m->outputs[i].name : NULL;
}

int veil_onnx_output_shape(const veil_onnx_model_t *m, size_t i, size_t *dims)
{
    return m && i < m->noutputs ? shape(&m->outputs[i], dims) : -1;
}

const struct veil_feed *veil_onnx_param_feeds(const veil_onnx_model_t *m, size_t *n)
{
    *n = m ? m->nfeeds : 0;
    return m ? m->feeds : NULL;
}

const char *veil_onnx_node_op(const veil_onnx_model_t *m, size_t i)
{
    return m && i < m->nrecs ? m->recs[i].op : NULL;
}

const char *veil_onnx_node_name(const veil_onnx_model_t *m, size_t i)
{
    return m && i < m->nrecs ? m->recs[i].name : NULL;
}

const veil_node_t *veil_onnx_node_result(const veil_onnx_model_t *m, size_t i)
{
    return m && i < m->nrecs ? m->recs[i].result : NULL;
}

int veil_onnx_list_unsupported(const char *path, void *fp)
{
    FILE *f = fp;
    unsigned char *b;
    size_t len;
    int rc = ox_read_file(path, (size_t)1 << 31, &b, &len);
    if (rc != VEIL_OK)
        return rc;
    Onnx__ModelProto *p = onnx__model_proto__unpack(NULL, len, b);
    free(b);
    if (!p || !p->graph) {
        if (p)
            onnx__model_proto__free_unpacked(p, NULL);
        return veil_error(VEIL_ERR_FORMAT, "%s: not an ONNX model", path);
    }
    int count = 0;
    for (size_t i = 0; i < p->graph->n_node; i++) {
        const Onnx__NodeProto *n = p->graph->node[i];
        const char *op = n->op_type ? n->op_type : "";
        int foreign = n->domain && *n->domain && strcmp(n->domain, "ai.onnx");
        if (foreign || !ox_op_supported(op)) {
            if (f)
                fprintf(f, "  unsupported: node '%s' op %s%s%s\n", n->name ? n->name : "", op,
                        foreign ? " domain " : "", foreign ? n->domain : "");
            count++;
        }
    }
    onnx__model_proto__free_unpacked(p, NULL);
    return count;
}

int veil_onnx_list_inputs(const char *path, char (*names)[128], int *is_int, size_t max)
{
    unsigned char *b;
    size_t len;
    int rc = ox_read_file(path, (size_t)1 << 31, &b, &len);
    if (rc != VEIL_OK)
        return rc;
    Onnx__ModelProto *p = onnx__model_proto__unpack(NULL, len, b);
    free(b);
    if (!p || !p->graph) {
        if (p)
            onnx__model_proto__free_unpacked(p, NULL);
        return veil_error(VEIL_ERR_FORMAT, "%s: not an ONNX model", path);
    }
    const Onnx__GraphProto *g = p->graph;
    size_t count = 0;
    for (size_t i = 0; i < g->n_input; i++) {
        const Onnx__ValueInfoProto *v = g->input[i];
        int init = 0;
        for (size_t k = 0; v->name && k < g->n_initializer && !init; k++)
            init = g->initializer[k]->name && !strcmp(g->initializer[k]->name, v->name);
        if (init)
            continue;
        if (count < max) {
            snprintf(names[count], 128, "%s", v->name ? v->name : "");
            int tensor = v->type && v->type->value_case == ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE &&
                         v->type->tensor_type && v->type->tensor_type->has_elem_type;
            if (is_int)
                is_int[count] = !tensor ? -1 : ox_is_int_type(v->type->tensor_type->elem_type);
        }
        count++;
    }
    onnx__model_proto__free_unpacked(p, NULL);
    return (int)count;
}

/* Saved fields of one initializer while it is packed without its data. */
struct saved {
    size_t nf, ni32, ni64, nd, nu64, next;
    protobuf_c_boolean raw;
};

int veil_onnx_strip(const char *in, const char *out, const struct veil_onnx_options *o)
{
    struct veil_onnx_options opt;
    if (o)
        opt = *o;
    else
        veil_onnx_options_defaults(&opt);
    opt.weights = -1;
    veil_onnx_model_t *m = NULL;
    int rc = veil_onnx_load(in, &opt, &m);
    if (rc != VEIL_OK)
        return rc;
    Onnx__GraphProto *g = m->proto->graph;
    struct saved *sv = calloc(g->n_initializer + 1, sizeof *sv);
    if (!sv) {
        veil_onnx_destroy(&m);
        return veil_error(VEIL_ERR_NOMEM, "out of memory");
    }
    for (size_t i = 0; i < g->n_initializer; i++) {
        Onnx__TensorProto *t = g->initializer[i];
        if (m->usage[i] == OX_AS_PUBLIC)
            continue;
        if (m->usage[i] == OX_UNUSED && t->has_data_type && ox_is_int_type(t->data_type))
            continue;
        if (t->has_data_location &&
            t->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL) {
            free(sv);
            veil_onnx_destroy(&m);
            return veil_error(VEIL_ERR_UNSUPPORTED,
                              "%s: initializer '%s' is external data; "
                              "strip models with their weights inline",
                              in, t->name);
        }
        sv[i] =
            (struct saved){t->n_float_data,  t->n_int32_data,    t->n_int64_data, t->n_double_data,
                           t->n_uint64_data, t->n_external_data, t->has_raw_data};
        t->n_float_data = t->n_int32_data = t->n_int64_data = t->n_double_data = 0;
        t->n_uint64_data = t->n_external_data = 0;
        t->has_raw_data = 0;
    }
    size_t sz = onnx__model_proto__get_packed_size(m->proto);
    unsigned char *buf = malloc(sz + 1);
    if (buf)
        onnx__model_proto__pack(m->proto, buf);
    for (size_t i = 0; i < g->n_initializer; i++) {
        Onnx__TensorProto *t = g->initializer[i];
        if (!sv[i].raw && !sv[i].nf && !sv[i].ni32 && !sv[i].ni64 && !sv[i].nd && !sv[i].nu64)
            continue;
        t->n_float_data = sv[i].nf, t->n_int32_data = sv[i].ni32, t->n_int64_data = sv[i].ni64;
        t->n_double_data = sv[i].nd, t->n_uint64_data = sv[i].nu64;
        t->n_external_data = sv[i].next, t->has_raw_data = sv[i].raw;
    }
    free(sv);
    veil_onnx_destroy(&m);
    if (!buf)
        return veil_error(VEIL_ERR_NOMEM, "out of memory");
    FILE *f = fopen(out, "wb");
    rc = f && fwrite(buf, 1, sz, f) == sz ? VEIL_OK : VEIL_ERR_IO;
    if (f && fclose(f) != 0)
        rc = VEIL_ERR_IO;
    free(buf);
    return rc == VEIL_OK ? rc : veil_error(rc, "%s: cannot write: %s", out, strerror(errno));
}

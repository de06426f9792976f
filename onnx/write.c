/*
 * write.c — veil_onnx_write: a sequential model of the importer's supported subset (Conv, Gemm,
 * Relu, MaxPool, AveragePool, Flatten, Reshape, ArgMax) packed as an ONNX ModelProto with
 * protobuf-c, its parameters as double initializers named "<layer>.weight" and "<layer>.bias",
 * so that a model trained with the DSL (examples/lenet_fmnist train --onnx) goes through
 * veil_onnx_load with its values unrounded. Opset 13, the graph input of the given shape in
 * double, one output. Everything is built on the stack and in one arena of small allocations
 * freed at the end; the file is written in one piece.
 */
#include "config.h"

#include "base/base_internal.h"
#include "onnx/onnx_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_ATTRS 4

/* Everything one node needs beside the NodeProto itself. */
struct wnode {
    Onnx__NodeProto node;
    Onnx__AttributeProto attr[MAX_ATTRS];
    Onnx__AttributeProto *attrp[MAX_ATTRS];
    int64_t ints[MAX_ATTRS][4];
    char *in[3], *out[1];
    char names[4][160]; /* inputs (up to 3) and the output */
    Onnx__TensorProto init[2];
    Onnx__TensorProto *initp[2];
    int64_t idims[2][VEIL_MAX_DIMS];
    int64_t shape[VEIL_MAX_DIMS]; /* Reshape's target, an int64 initializer */
};

static Onnx__AttributeProto *attr_ints(struct wnode *w, const char *name, int n, int64_t a,
                                       int64_t b)
{
    size_t k = w->node.n_attribute++;
    Onnx__AttributeProto *at = &w->attr[k];
    onnx__attribute_proto__init(at);
    at->name = (char *)name;
    at->has_type = 1;
    w->ints[k][0] = a, w->ints[k][1] = b, w->ints[k][2] = a, w->ints[k][3] = b;
    if (n == 0) { /* a single int */
        at->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
        at->has_i = 1, at->i = a;
    } else {
        at->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS;
        at->n_ints = (size_t)n, at->ints = w->ints[k];
    }
    w->attrp[k] = at;
    return at;
}

/* Initializer k of node w: name, shape, doubles (borrowed) or int64 values. */
static void add_init(struct wnode *w, int k, const char *name, int ndim, const size_t *dims,
                     const double *dv, int64_t *iv, size_t numel)
{
    Onnx__TensorProto *t = &w->init[k];
    onnx__tensor_proto__init(t);
    t->name = (char *)name;
    t->n_dims = (size_t)ndim;
    for (int i = 0; i < ndim; i++)
        w->idims[k][i] = (int64_t)dims[i];
    t->dims = w->idims[k];
    t->has_data_type = 1;
    if (dv) {
        t->data_type = ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE;
        t->n_double_data = numel, t->double_data = (double *)dv;
    } else {
        t->data_type = ONNX__TENSOR_PROTO__DATA_TYPE__INT64;
        t->n_int64_data = numel, t->int64_data = iv;
    }
    w->initp[k] = t;
}

static size_t numel_of(int ndim, const size_t *dims)
{
    size_t n = 1;
    for (int i = 0; i < ndim; i++)
        n *= dims[i];
    return n;
}

/* Fills w for layer i (l) reading value `prev` and writing `cur`; *ninit receives the
 * initializers it adds. VEIL_OK or VEIL_ERR_INVAL naming the layer. */
static int build_node(struct wnode *w, const struct veil_onnx_layer *l, size_t i,
                      const char *prev, const char *cur, int *ninit)
{
    static const char *const ops[VEIL_ONNX_LAYER_COUNT] = {
        "Conv", "Gemm", "Relu", "MaxPool", "AveragePool", "Flatten", "Reshape", "ArgMax"};
    onnx__node_proto__init(&w->node);
    const char *lname = l->name && *l->name ? l->name : NULL;
    char def[32];
    snprintf(def, sizeof def, "layer%zu", i);
    if (!lname)
        lname = def;
    snprintf(w->names[0], sizeof w->names[0], "%s", prev);
    snprintf(w->names[3], sizeof w->names[3], "%s", cur);
    w->in[0] = w->names[0], w->out[0] = w->names[3];
    w->node.op_type = (char *)ops[l->kind];
    w->node.n_input = 1, w->node.input = w->in;
    w->node.n_output = 1, w->node.output = w->out;
    w->node.attribute = w->attrp;
    *ninit = 0;
    int k = l->kernel, s = l->stride > 0 ? l->stride : 1, p = l->pad;
    switch (l->kind) {
    case VEIL_ONNX_LAYER_CONV:
    case VEIL_ONNX_LAYER_GEMM: {
        int conv = l->kind == VEIL_ONNX_LAYER_CONV;
        if (!l->weight || !l->bias || l->ndim != (conv ? 4 : 2) || p < 0)
            return veil_error(VEIL_ERR_INVAL,
                              "veil_onnx_write: layer %zu ('%s'): a %s needs a weight of rank %d "
                              "and a bias (and a padding >= 0)",
                              i, lname, ops[l->kind], conv ? 4 : 2);
        size_t nout = conv ? l->dims[0] : l->dims[1];
        snprintf(w->names[1], sizeof w->names[1], "%.150s.weight", lname);
        snprintf(w->names[2], sizeof w->names[2], "%.150s.bias", lname);
        w->in[1] = w->names[1], w->in[2] = w->names[2];
        w->node.n_input = 3;
        add_init(w, 0, w->names[1], l->ndim, l->dims, l->weight, NULL,
                 numel_of(l->ndim, l->dims));
        add_init(w, 1, w->names[2], 1, &nout, l->bias, NULL, nout);
        *ninit = 2; /* a Gemm's weight is the DSL's (in, out): B without transB */
        if (conv) {
            attr_ints(w, "kernel_shape", 2, (int64_t)l->dims[2], (int64_t)l->dims[3]);
            attr_ints(w, "strides", 2, s, s);
            attr_ints(w, "pads", 4, p, p);
        }
        break;
    }
    case VEIL_ONNX_LAYER_MAXPOOL:
    case VEIL_ONNX_LAYER_AVGPOOL:
        if (k < 1)
            return veil_error(VEIL_ERR_INVAL, "veil_onnx_write: layer %zu ('%s'): pooling needs "
                              "a kernel >= 1", i, lname);
        attr_ints(w, "kernel_shape", 2, k, k);
        attr_ints(w, "strides", 2, l->stride > 0 ? s : k, l->stride > 0 ? s : k);
        break;
    case VEIL_ONNX_LAYER_FLATTEN:
        attr_ints(w, "axis", 0, 1, 0);
        break;
    case VEIL_ONNX_LAYER_RESHAPE:
        if (l->ndim < 1 || l->ndim > VEIL_MAX_DIMS)
            return veil_error(VEIL_ERR_INVAL, "veil_onnx_write: layer %zu ('%s'): a Reshape "
                              "needs its target shape (1 to %d dimensions)", i, lname,
                              VEIL_MAX_DIMS);
        for (int d = 0; d < l->ndim; d++)
            w->shape[d] = (int64_t)l->dims[d];
        snprintf(w->names[1], sizeof w->names[1], "%.150s.shape", lname);
        w->in[1] = w->names[1];
        w->node.n_input = 2;
        size_t nd = (size_t)l->ndim;
        add_init(w, 0, w->names[1], 1, &nd, NULL, w->shape, nd);
        *ninit = 1;
        break;
    case VEIL_ONNX_LAYER_ARGMAX:
        attr_ints(w, "axis", 0, 1, 0);
        attr_ints(w, "keepdims", 0, 0, 0);
        break;
    default:
        break;
    }
    w->node.name = (char *)(l->name && *l->name ? l->name : NULL);
    return VEIL_OK;
}

static Onnx__ValueInfoProto *value_info(Onnx__ValueInfoProto *vi, Onnx__TypeProto *tp,
                                        Onnx__TypeProto__Tensor *tt, const char *name,
                                        int elem_type)
{
    onnx__value_info_proto__init(vi);
    onnx__type_proto__init(tp);
    onnx__type_proto__tensor__init(tt);
    tt->has_elem_type = 1, tt->elem_type = elem_type;
    tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE, tp->tensor_type = tt;
    vi->name = (char *)name, vi->type = tp;
    return vi;
}

/* Packs the graph built in w[0..n) and writes it to path. */
static int pack_write(const char *path, struct wnode *w, size_t n, const char *input, int ndim,
                      const size_t *dims, const char *output, int out_int)
{
    Onnx__ModelProto mp = ONNX__MODEL_PROTO__INIT;
    Onnx__GraphProto gp = ONNX__GRAPH_PROTO__INIT;
    Onnx__OperatorSetIdProto op = ONNX__OPERATOR_SET_ID_PROTO__INIT, *ops[1] = {&op};
    op.domain = "", op.has_version = 1, op.version = 13;
    mp.has_ir_version = 1, mp.ir_version = 8;
    mp.producer_name = "veil";
    mp.n_opset_import = 1, mp.opset_import = ops;
    mp.graph = &gp;
    gp.name = "veil";
    Onnx__TensorShapeProto__Dimension dv[VEIL_MAX_DIMS], *dp[VEIL_MAX_DIMS];
    for (int i = 0; i < ndim; i++) {
        onnx__tensor_shape_proto__dimension__init(&dv[i]);
        dv[i].value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
        dv[i].dim_value = (int64_t)dims[i];
        dp[i] = &dv[i];
    }
    Onnx__TensorShapeProto shp = ONNX__TENSOR_SHAPE_PROTO__INIT;
    shp.n_dim = (size_t)ndim, shp.dim = dp;
    Onnx__ValueInfoProto in, out, *ins[1] = {&in}, *outs[1] = {&out};
    Onnx__TypeProto tpi, tpo;
    Onnx__TypeProto__Tensor tti, tto;
    value_info(&in, &tpi, &tti, input, ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE);
    tti.shape = &shp;
    value_info(&out, &tpo, &tto, output,
               out_int ? ONNX__TENSOR_PROTO__DATA_TYPE__INT64
                       : ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE);
    gp.n_input = 1, gp.input = ins, gp.n_output = 1, gp.output = outs;
    Onnx__NodeProto **nodes = calloc(n, sizeof *nodes);
    Onnx__TensorProto **inits = calloc(2 * n + 1, sizeof *inits);
    uint8_t *buf = NULL;
    int rc = nodes && inits ? VEIL_OK : veil_error(VEIL_ERR_NOMEM, "veil_onnx_write: no memory");
    for (size_t i = 0; rc == VEIL_OK && i < n; i++) {
        nodes[i] = &w[i].node;
        for (int k = 0; k < 2; k++)
            if (w[i].initp[k])
                inits[gp.n_initializer++] = w[i].initp[k];
    }
    gp.n_node = n, gp.node = nodes, gp.initializer = inits;
    size_t sz = rc == VEIL_OK ? onnx__model_proto__get_packed_size(&mp) : 0;
    if (rc == VEIL_OK && !(buf = malloc(sz)))
        rc = veil_error(VEIL_ERR_NOMEM, "veil_onnx_write: no memory for %zu bytes", sz);
    if (rc == VEIL_OK) {
        onnx__model_proto__pack(&mp, buf);
        FILE *f = fopen(path, "wb");
        int ok = f && fwrite(buf, 1, sz, f) == sz;
        if (f)
            ok = fclose(f) == 0 && ok;
        if (!ok)
            rc = veil_error(VEIL_ERR_IO, "veil_onnx_write: cannot write %s", path);
    }
    free(buf);
    free(inits);
    free(nodes);
    return rc;
}

int veil_onnx_write(const char *path, const char *input, int ndim, const size_t *dims,
                    const struct veil_onnx_layer *layers, size_t n, const char *output)
{
    if (!path || !input || !output || !dims || !layers || n == 0 || ndim < 1 ||
        ndim > VEIL_MAX_DIMS)
        return veil_error(VEIL_ERR_INVAL, "veil_onnx_write: a path, the input's name and shape "
                          "(1 to %d dimensions), layers and the output's name are needed",
                          VEIL_MAX_DIMS);
    for (size_t i = 0; i < n; i++)
        if ((int)layers[i].kind < 0 || layers[i].kind >= VEIL_ONNX_LAYER_COUNT ||
            (layers[i].kind == VEIL_ONNX_LAYER_ARGMAX && i + 1 != n))
            return veil_error(VEIL_ERR_INVAL, "veil_onnx_write: layer %zu: kind %d is not "
                              "written (ArgMax only as the last layer)", i, (int)layers[i].kind);
    struct wnode *w = calloc(n, sizeof *w);
    if (!w)
        return veil_error(VEIL_ERR_NOMEM, "veil_onnx_write: no memory");
    int rc = VEIL_OK;
    char prev[160], cur[160];
    snprintf(prev, sizeof prev, "%s", input);
    for (size_t i = 0; i < n && rc == VEIL_OK; i++) {
        if (i + 1 == n)
            snprintf(cur, sizeof cur, "%s", output);
        else
            snprintf(cur, sizeof cur, "%.120s_out%zu", layers[i].name ? layers[i].name : "", i);
        int ninit;
        rc = build_node(&w[i], &layers[i], i, prev, cur, &ninit);
        snprintf(prev, sizeof prev, "%s", cur);
    }
    if (rc == VEIL_OK)
        rc = pack_write(path, w, n, input, ndim, dims, output,
                        layers[n - 1].kind == VEIL_ONNX_LAYER_ARGMAX);
    free(w);
    return rc;
}

/*
 * onnx_internal.h — what the files of onnx/ share: the model being imported (its parsed
 * protobuf, the table of ONNX value names with their shapes and DSL nodes or public values, the
 * parameters' feeds), the helpers that turn a value into a DSL node or into public numbers, and
 * the lowering of index-moving ops to one constant matrix product (linmap.c). Built only on the
 * public DSL (veil/graph.h): nothing here reaches into graph/.
 */
#ifndef VEIL_ONNX_INTERNAL_H
#define VEIL_ONNX_INTERNAL_H

#include "veil/onnx.h"
#include "onnx/onnx.pb-c.h"

#include <stddef.h>

#define OX_MAX_NUMEL ((size_t)1 << 32) /* largest tensor accepted (elements) */

/* One ONNX value (a tensor name of the graph). */
struct ox_value {
    const char *name; /* borrowed from the protobuf */
    int ndim;         /* ONNX rank (0: scalar; its DSL node has shape (1)) */
    size_t dims[VEIL_MAX_DIMS];
    size_t numel;
    int is_int;        /* an integer or bool tensor (shapes, axes, indices) */
    veil_node_t *node; /* the DSL node, once materialised */
    double *cval;      /* public values (Constant, known input, public initializer) */
    int init;          /* index of its initializer, or -1 */
    int defined;
    /* GELU's pattern x * 0.5 * (1 + erf(x / sqrt 2)) as PyTorch exports it, recognised step by
     * step: src/factor record that this value is src times a public number; gelu > 0 marks a
     * partial pattern of gelu_x (1: erf(x / sqrt 2), 2: 1 + erf, 3: x (1 + erf)), which has no
     * node of its own. */
    veil_node_t *src, *gelu_x;
    double factor;
    int gelu;
};

/* Per initializer: how the importer used it. */
enum { OX_UNUSED, OX_AS_PARAM, OX_AS_PUBLIC };

struct ox_node_rec {
    const char *op, *name;
    const veil_node_t *result;
};

struct ox_io {
    const char *name;
    char leaf[64];
    int ndim;
    size_t dims[VEIL_MAX_DIMS];
};

struct veil_onnx_model {
    veil_graph_t *g;
    Onnx__ModelProto *proto;
    char *path; /* for messages */
    char *dir;  /* the model's folder (external data), NULL when parsed */
    int opset;
    struct veil_onnx_options o;
    struct ox_value *vals;
    size_t nvals, capvals;
    int *usage; /* per initializer (OX_*) */
    int has_weights, stripped_seen;
    struct ox_io *inputs, *outputs;
    size_t ninputs, noutputs;
    struct veil_feed *feeds; /* values owned */
    size_t nfeeds, capfeeds;
    struct ox_node_rec *recs;
    size_t nrecs;
    const Onnx__NodeProto *cur; /* the node being imported (messages) */
    unsigned uniq;
    int rc; /* the first error recorded (ox_fail) */
};

/* ---- load.c ---- */
/** Records an error naming the file and the current node; returns status. */
int ox_fail(struct veil_onnx_model *m, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
struct ox_value *ox_find(struct veil_onnx_model *m, const char *name);
/** Defines output name with a shape (and optionally its node / public values, owned). */
struct ox_value *ox_define(struct veil_onnx_model *m, const char *name, int ndim,
                           const size_t *dims, int is_int);
/** A fresh DSL name: base when usable and free, else "v<k>" (buf: 64 bytes). */
const char *ox_name(struct veil_onnx_model *m, const char *base, char *buf);
/** The value's DSL node: a public constant, a parameter of the model owner (initializer), or
 * what the producing node made. NULL with the error recorded. */
veil_node_t *ox_node(struct veil_onnx_model *m, struct ox_value *v);
/** The value's public numbers (numel doubles, borrowed); NULL with an error when not known. */
const double *ox_public(struct veil_onnx_model *m, struct ox_value *v);
/** A parameter of the model owner made from initializer data transformed by the caller:
 * values (numel, copied; NULL when stripped). */
veil_node_t *ox_param(struct veil_onnx_model *m, const char *base, int ndim, const size_t *dims,
                      const double *values);
/** The initializer's values (owned by the caller; *out NULL and VEIL_OK when stripped). */
int ox_init_values(struct veil_onnx_model *m, int init, double **out);
/** A DSL shape for an ONNX shape (rank 0 -> (1)); returns the DSL rank. */
int ox_dsl_shape(int ndim, const size_t *dims, size_t *out);
/** The graph builder's error as an import error (after a builder returned NULL). */
int ox_graph_fail(struct veil_onnx_model *m);

/* ---- tensor.c ---- */
/** Converts a TensorProto's data to doubles (numel values, owned). dir: folder for external
 * data (NULL: refused). *present 0 when the tensor has no data (stripped). */
int ox_tensor_values(const Onnx__TensorProto *t, const char *dir, const char *what, double **out,
                     int *present);
/** Shape of a TensorProto, checked (rank <= VEIL_MAX_DIMS, numel <= OX_MAX_NUMEL). */
int ox_tensor_shape(const Onnx__TensorProto *t, const char *what, int *ndim, size_t *dims,
                    size_t *numel);
int ox_is_int_type(int data_type);
int ox_read_file(const char *path, size_t max, unsigned char **buf, size_t *len);

/* ---- ops.c ---- */
/** Imports one node (m->cur). VEIL_OK or the recorded error. */
int ox_import_node(struct veil_onnx_model *m, const Onnx__NodeProto *n);
int ox_op_supported(const char *op);

/* ---- linmap.c ---- */
/**
 * y (ndim, dims) with y[j] = x[idx[j]] (idx[j] < 0: 0) for the flat row-major indices of x and
 * y: a reshape when idx is the identity, else one product with a public 0/1 matrix (exact in
 * fixed point: each product is x times 2^f, truncated back). NULL with the error recorded.
 */
veil_node_t *ox_gather(struct veil_onnx_model *m, veil_node_t *x, int ndim, const size_t *dims,
                       const long *idx);
/** y = x . M for a public matrix M (numel(x) x numel(y)), reshaped to (ndim, dims). */
veil_node_t *ox_linmap(struct veil_onnx_model *m, veil_node_t *x, int ndim, const size_t *dims,
                       const double *M);
/** x broadcast (numpy rules) to (ndim, dims); v's public values are expanded instead when known.
 */
veil_node_t *ox_broadcast(struct veil_onnx_model *m, struct ox_value *v, int ndim,
                          const size_t *dims);
/** The numpy broadcast of two shapes into out; VEIL_ERR_SHAPE when they do not broadcast. */
int ox_broadcast_shape(struct veil_onnx_model *m, int na, const size_t *a, int nb, const size_t *b,
                       int *nout, size_t *out);
/** Index map of a broadcast of (n, d) into (nout, dout) (idx: numel(out) entries, owned). */
long *ox_broadcast_index(int n, const size_t *d, int nout, const size_t *dout);
/** Index map of an axis permutation of (n, d) (idx owned; out dims in dout). */
long *ox_transpose_index(int n, const size_t *d, const int *perm, size_t *dout);

/* ---- ops.c: helpers the op files share ---- */
/** Input k of the node, or NULL when absent (k past the end or an empty name). */
struct ox_value *ox_in(struct veil_onnx_model *m, const Onnx__NodeProto *n, size_t k);
const Onnx__AttributeProto *ox_attr(const Onnx__NodeProto *n, const char *name);
int64_t ox_attr_int(const Onnx__NodeProto *n, const char *name, int64_t def);
double ox_attr_float(const Onnx__NodeProto *n, const char *name, double def);
/** The ints of attribute name (borrowed; *count 0 when absent). */
const int64_t *ox_attr_ints(const Onnx__NodeProto *n, const char *name, size_t *count);
/** Defines output k with a DSL node of ONNX shape (ndim, dims). */
int ox_out(struct veil_onnx_model *m, const Onnx__NodeProto *n, size_t k, veil_node_t *node,
           int ndim, const size_t *dims);
/** Defines output k as public numbers (vals owned by the value from now on). */
int ox_out_const(struct veil_onnx_model *m, const Onnx__NodeProto *n, size_t k, int ndim,
                 const size_t *dims, double *vals, int is_int);
/** The DSL name for output k of the node (buf: 64 bytes). */
const char *ox_out_name(struct veil_onnx_model *m, const Onnx__NodeProto *n, size_t k, char *buf);
/** x (a node of ONNX shape (ndim, dims)) times public c broadcast to it (c: cn values of shape
 * (cnd, cdims)): a scale when c is one number, else a diagonal product. */
veil_node_t *ox_mul_const(struct veil_onnx_model *m, veil_node_t *x, int ndim, const size_t *dims,
                          const double *c, int cnd, const size_t *cdims, const char *name);
/** Public integer values of input k (shape tensors, axes); NULL with an error when unknown. */
const double *ox_ints(struct veil_onnx_model *m, const Onnx__NodeProto *n, size_t k, size_t *count);
/** Normalises axis (negative: from the end) into [0, ndim) or fails. */
int ox_axis(struct veil_onnx_model *m, int64_t axis, int ndim, int *out);
/** Reshape of node x to ONNX shape (ndim, dims) named name. */
veil_node_t *ox_reshape(struct veil_onnx_model *m, veil_node_t *x, int ndim, const size_t *dims,
                        const char *name);

/** A value whose numbers are public (a Constant, a known input, an integer initializer). */
int ox_is_public(const struct ox_value *v);

/* ---- ops_elem.c, ops_nn.c, ops_shape.c, ops_move.c ---- */
int ox_op_unary(struct veil_onnx_model *m, const Onnx__NodeProto *n, const char *op);
int ox_op_prelu(struct veil_onnx_model *m, const Onnx__NodeProto *n);
int ox_op_clip(struct veil_onnx_model *m, const Onnx__NodeProto *n);
int ox_op_constant(struct veil_onnx_model *m, const Onnx__NodeProto *n);
int ox_op_shape(struct veil_onnx_model *m, const Onnx__NodeProto *n);
int ox_op_argmax(struct veil_onnx_model *m, const Onnx__NodeProto *n, int is_min);
int ox_op_cast(struct veil_onnx_model *m, const Onnx__NodeProto *n);
int ox_op_erf(struct veil_onnx_model *m, const Onnx__NodeProto *n);
/** The GELU pattern's next step for a binary node (Add, Mul) when an operand is part of it:
 * *handled 1 and the status; else *handled 0. */
int ox_gelu_step(struct veil_onnx_model *m, const Onnx__NodeProto *n, int is_mul,
                 struct ox_value *a, struct ox_value *b, int *handled);
int ox_op_constant_of_shape(struct veil_onnx_model *m, const Onnx__NodeProto *n);
int ox_op_gemm(struct veil_onnx_model *m, const Onnx__NodeProto *n);
int ox_op_matmul(struct veil_onnx_model *m, const Onnx__NodeProto *n);
int ox_op_conv(struct veil_onnx_model *m, const Onnx__NodeProto *n);
int ox_op_pool(struct veil_onnx_model *m, const Onnx__NodeProto *n, int is_avg);
int ox_op_gap(struct veil_onnx_model *m, const Onnx__NodeProto *n);
int ox_op_batchnorm(struct veil_onnx_model *m, const Onnx__NodeProto *n);
int ox_op_softmax(struct veil_onnx_model *m, const Onnx__NodeProto *n);
int ox_op_layernorm(struct veil_onnx_model *m, const Onnx__NodeProto *n);
int ox_op_reshape(struct veil_onnx_model *m, const Onnx__NodeProto *n, int kind);
int ox_op_transpose(struct veil_onnx_model *m, const Onnx__NodeProto *n);
int ox_op_concat(struct veil_onnx_model *m, const Onnx__NodeProto *n);
int ox_op_slice(struct veil_onnx_model *m, const Onnx__NodeProto *n);
int ox_op_pad(struct veil_onnx_model *m, const Onnx__NodeProto *n);
int ox_op_gather(struct veil_onnx_model *m, const Onnx__NodeProto *n);
int ox_op_split(struct veil_onnx_model *m, const Onnx__NodeProto *n);
int ox_op_tile(struct veil_onnx_model *m, const Onnx__NodeProto *n);
int ox_op_expand(struct veil_onnx_model *m, const Onnx__NodeProto *n);
int ox_op_space(struct veil_onnx_model *m, const Onnx__NodeProto *n, int to_depth);
/** kind: 0 ReduceSum, 1 ReduceMean, 2 ReduceMax, 3 ReduceMin. */
int ox_op_reduce(struct veil_onnx_model *m, const Onnx__NodeProto *n, int kind);
enum { OX_RESHAPE, OX_FLATTEN, OX_SQUEEZE, OX_UNSQUEEZE };
/** ops_shape.c's output k = x moved by idx (owned; idx[j] < 0: fill), folded when x is public. */
int ox_move(struct veil_onnx_model *m, const Onnx__NodeProto *n, size_t k, struct ox_value *x,
            int ndim, const size_t *dims, long *idx, double fill);

#endif

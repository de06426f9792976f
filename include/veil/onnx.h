/*
 * veil/onnx.h — importing ONNX models: an ONNX ModelProto (opsets 7 to 17 of the default domain)
 * becomes a Veil graph built through the public DSL (veil/graph.h). Initializers become
 * parameters owned by the model owner, with their values (in the DSL's layouts: a Gemm weight
 * used with transB = 1 is transposed, for instance); graph inputs become inputs of the data
 * owner; graph outputs are revealed to a chosen party. Initializers an operator needs as public
 * numbers (a Reshape's shape, a Mul's constant factor) become public constants instead, and a
 * stripped model (veil_onnx_strip) keeps exactly those values. Every operator the DSL cannot
 * express exactly is refused at load with a message naming the node, its op type and the
 * supported list's accessor (veil_onnx_supported_ops; veil-onnx prints the list, which does
 * not fit the 512-byte last-error message); nothing is skipped. Bad files (truncated, corrupt,
 * cyclic, dangling names, shapes that do not match, huge dimensions, opsets out of range,
 * external data outside the model's folder) fail with VEIL_ERR_FORMAT, VEIL_ERR_SHAPE,
 * VEIL_ERR_UNSUPPORTED or VEIL_ERR_IO and a veil_last_error() message naming the file and node.
 *
 * veil_onnx_write writes a sequential model of the supported subset (Conv, Gemm, Relu, pools,
 * Flatten, Reshape, ArgMax) with its parameters, for a model trained with the DSL.
 *
 * Tensors (.pb: ONNX TensorProto, as in ONNX's test data; .npy: NumPy's format, little-endian
 * float32/float64/int32/int64) are read and written with veil_onnx_tensor_read / _write.
 *
 * Threads: a model is used by one thread at a time; distinct models are independent.
 */
#ifndef VEIL_ONNX_H
#define VEIL_ONNX_H

#include "veil.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct veil_onnx_model veil_onnx_model_t;

/** A dense tensor as doubles, with its ONNX shape (ndim 0: a scalar, numel 1). */
struct veil_onnx_tensor {
    char name[128]; /* the TensorProto's name ("" when it has none) */
    int ndim;       /* 0..VEIL_MAX_DIMS */
    size_t dims[VEIL_MAX_DIMS];
    size_t numel;
    int data_type;  /* ONNX's TensorProto.DataType (1 float, 7 int64, 11 double, ...) */
    double *values; /* numel values, owned (veil_onnx_tensor_free) */
};

struct veil_onnx_options {
    int model_owner; /* party owning the initializers (parameters); default 0 */
    int data_owner;  /* party owning the graph inputs; default 1 */
    int reveal_to;   /* party the outputs are revealed to, or VEIL_ALL_PARTIES; default -2:
                        the data owner */
    int weights;     /* 1: the file must carry every parameter's values (the model owner's
                        full model); 0: the file must be stripped (PUBLIC.onnx: a party that is
                        given weights it does not own refuses them); -1 (default): either */
    /* Values of graph inputs known at load time, public to every party: integer inputs (shapes,
     * axes) must be given here; a float input given here becomes a public constant. */
    const struct veil_onnx_tensor *known;
    size_t nknown;
    size_t max_linmap; /* largest constant matrix (elements) an index-moving op (Transpose of 3
                          or more dimensions, Slice, Pad, broadcasting of a secret tensor, ...)
                          may be lowered to; default 1 << 22 */
    size_t batch;      /* > 0: the first dimension of every secret graph input is batch, whatever
                          the file declares (a symbolic dimension too): the model runs on batches
                          of that many examples; 0 (default): the declared sizes */
};
void veil_onnx_options_defaults(struct veil_onnx_options *o);

/**
 * Loads the ONNX model at path and builds its graph. On success *out receives an owned model
 * (veil_onnx_destroy) holding the graph and the parameters' values. Returns VEIL_OK or an error
 * with veil_last_error() naming the file, the node and what is wrong; *out is then NULL.
 */
int veil_onnx_load(const char *path, const struct veil_onnx_options *o, veil_onnx_model_t **out);
/** Parses a model held in memory (name is used in messages; external data is refused). */
int veil_onnx_parse(const void *bytes, size_t len, const char *name,
                    const struct veil_onnx_options *o, veil_onnx_model_t **out);
void veil_onnx_destroy(veil_onnx_model_t **m);

/** The graph (owned by the model: valid while it lives; outputs already revealed). */
veil_graph_t *veil_onnx_graph(const veil_onnx_model_t *m);
/** Opset of the default domain the model imports. */
int veil_onnx_opset(const veil_onnx_model_t *m);
/** 1 when the file carried the parameters' values (not stripped). */
int veil_onnx_has_weights(const veil_onnx_model_t *m);

/** The graph inputs that are secret inputs of the data owner (known ones excluded), in file
 * order: their ONNX name (also the DSL leaf's name when it fits, else the leaf is "in<i>"), the
 * leaf's name and the ONNX shape. */
size_t veil_onnx_input_count(const veil_onnx_model_t *m);
const char *veil_onnx_input_name(const veil_onnx_model_t *m, size_t i);
const char *veil_onnx_input_leaf(const veil_onnx_model_t *m, size_t i);
int veil_onnx_input_shape(const veil_onnx_model_t *m, size_t i, size_t *dims);
/** The outputs in file order (= the plan's outputs): ONNX name and shape (returns ndim). */
size_t veil_onnx_output_count(const veil_onnx_model_t *m);
const char *veil_onnx_output_name(const veil_onnx_model_t *m, size_t i);
int veil_onnx_output_shape(const veil_onnx_model_t *m, size_t i, size_t *dims);
/** Feeds for every parameter (names and values in the DSL's layout; borrowed). Empty for a
 * stripped model. */
const struct veil_feed *veil_onnx_param_feeds(const veil_onnx_model_t *m, size_t *n);
/** The ONNX nodes as imported: op type, node name, the DSL node of its first output. */
size_t veil_onnx_node_count(const veil_onnx_model_t *m);
const char *veil_onnx_node_op(const veil_onnx_model_t *m, size_t i);
const char *veil_onnx_node_name(const veil_onnx_model_t *m, size_t i);
const veil_node_t *veil_onnx_node_result(const veil_onnx_model_t *m, size_t i);

/**
 * The graph inputs of the model at path that are not initializers, in file order (the order of
 * ONNX test data's input_<k>.pb): up to max names copied into names (128 bytes each) and whether
 * each is an integer tensor (1), a real one (0) or no tensor at all (-1: a sequence, an optional,
 * a map); is_int may be NULL. Returns their number or a negative status.
 */
int veil_onnx_list_inputs(const char *path, char (*names)[128], int *is_int, size_t max);

/**
 * Plaintext inference from files, what `veil-onnx run` does: reads the input tensors (in[k] binds
 * to the k-th graph input; integer ones are given to the loader as public values), loads the
 * model, compiles it with frac_bits, runs it with the plaintext executor in mode (enum
 * veil_plain_mode: VEIL_PLAIN_DOUBLE or VEIL_PLAIN_FIXED) and writes output k to out[k] (nout may
 * be fewer than the outputs). In FIXED mode an input beyond +-2^(31 - frac_bits), the secure
 * run's range, is VEIL_ERR_RANGE. Returns VEIL_OK, VEIL_ERR_UNSUPPORTED for what Veil does not
 * import, or another error, with veil_last_error() saying which file and node.
 */
int veil_onnx_run_files(const char *model, const char *const *in, int nin, const char *const *out,
                        int nout, int mode, int frac_bits);

/** The supported op types, comma-separated (static string). */
const char *veil_onnx_supported_ops(void);
/**
 * Lists to f (a FILE*) every node of the model at path whose op type is not supported (one line
 * each) and returns their number (0: all supported), or a negative status for an unreadable
 * file.
 */
int veil_onnx_list_unsupported(const char *path, void *f);

/**
 * Writes the model at in without the values of its parameters (the initializers the importer
 * makes parameters of; those it reads as public numbers are kept) to out: the file the parties
 * other than the model owner load. VEIL_OK or an error.
 */
int veil_onnx_strip(const char *in, const char *out, const struct veil_onnx_options *o);

/**
 * PYTORCH WEIGHTS. Feeds for every parameter of plan p (compiled from graph g, built with the DSL)
 * from a safetensors file as PyTorch writes it (torch / safetensors.torch.save_file of a
 * state_dict: F32, F64 or I64 tensors, "__metadata__" {"format": "pt"} or none), by name: each
 * parameter is the tensor of its name; a 2-D parameter is taken in nn.Linear's (out, in) layout
 * and transposed into the dense layer's (in, out) (a square one too: in a PyTorch file every
 * 2-D tensor is a Linear weight), other tensors must have the parameter's shape (convolution
 * weights are OIHW in both). *feeds receives n owned feeds (veil_onnx_feeds_free). VEIL_OK, or an
 * error naming the file and the tensor (absent, or of another shape).
 */
int veil_onnx_pt_feeds(const char *path, const veil_graph_t *g, const veil_plan_t *p,
                       struct veil_feed **feeds, size_t *n);
void veil_onnx_feeds_free(struct veil_feed **feeds, size_t n);

/* ---- writing a model --------------------------------------------------------------------- */

/** The layers veil_onnx_write writes (the importer's supported subset). */
enum veil_onnx_layer_kind {
    VEIL_ONNX_LAYER_CONV,    /* Conv 2-D: weight (out, in, k, k) as veil_conv2d holds it, bias */
    VEIL_ONNX_LAYER_GEMM,    /* Gemm: weight (in, out) as veil_dense holds it, bias (out) */
    VEIL_ONNX_LAYER_RELU,    /* Relu */
    VEIL_ONNX_LAYER_MAXPOOL, /* MaxPool: kernel x kernel, stride (0: the kernel) */
    VEIL_ONNX_LAYER_AVGPOOL, /* AveragePool: the same */
    VEIL_ONNX_LAYER_FLATTEN, /* Flatten (axis 1): (batch, rest) */
    VEIL_ONNX_LAYER_RESHAPE, /* Reshape to dims[0..ndim) (ONNX's rules: 0 copies, -1 infers) */
    VEIL_ONNX_LAYER_ARGMAX,  /* ArgMax over axis 1, keepdims 0: the class (last layer only) */
    VEIL_ONNX_LAYER_COUNT
};

/** One layer of a sequential model. Its parameters are named "<name>.weight" and
 * "<name>.bias" (the names the importer gives them back). Values are borrowed. */
struct veil_onnx_layer {
    enum veil_onnx_layer_kind kind;
    const char *name;              /* the node's name (and its parameters' prefix) */
    const double *weight, *bias;   /* CONV, GEMM */
    int ndim;                      /* CONV 4, GEMM 2: the weight's shape; RESHAPE: the target */
    size_t dims[VEIL_MAX_DIMS];
    int kernel, stride, pad;       /* pools: kernel, stride; CONV: stride (0: 1), pad */
};

/**
 * Writes a sequential model as ONNX (opset 13) to path: graph input `input` of shape (ndim,
 * dims) in double, the layers in order, graph output `output` (int64 after an ARGMAX, else
 * double); parameters as double initializers, so that veil_onnx_load gives back exactly the
 * values written. VEIL_OK, VEIL_ERR_INVAL naming the layer that lacks something, or
 * VEIL_ERR_IO.
 */
int veil_onnx_write(const char *path, const char *input, int ndim, const size_t *dims,
                    const struct veil_onnx_layer *layers, size_t n, const char *output);

/** Reads a TensorProto (.pb) or .npy file (by content). *t is filled; free with
 * veil_onnx_tensor_free. VEIL_OK or an error naming the file. */
int veil_onnx_tensor_read(const char *path, struct veil_onnx_tensor *t);
/** Writes t as a float32 TensorProto (.pb) or, when path ends in ".npy", a float64 .npy. */
int veil_onnx_tensor_write(const char *path, const struct veil_onnx_tensor *t);
void veil_onnx_tensor_free(struct veil_onnx_tensor *t);

#ifdef __cplusplus
}
#endif
#endif

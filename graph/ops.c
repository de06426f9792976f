/*
 * ops.c — the op table: the descriptor of every op whose stages live in the executors' files
 * (builders in op_layers.c, gradient rules in autodiff.c, plaintext evaluations in plain_*.c,
 * lowerings in lower_*.c), and the array veil_op_descs that VEIL_OP_TABLE (graph_internal.h)
 * indexes by op. Everything the compiler, the executors and the cost model once decided with a
 * switch on the op is a field here: flags (leaf, backward, elementwise, what micro-batching and
 * liveness must know), the trace region, the operands the secure run reads as one handle, the
 * cost (elementwise passes, local GEMMs), and the function of each stage. An op whose stages
 * all live in one file (graph/op_elementwise.c) defines its descriptor there instead.
 */
#include "config.h"

#include "graph/secure/exec_internal.h"
#include "graph/graph_internal.h"
#include "graph/plain/plain_ops_internal.h"

/* ---- leaves: bound (plaintext) or shared (run.c), never evaluated ---------------------------- */

const struct veil_op_desc veil_opd_input = {
    .name = "input",
    .nin_min = 0,
    .nin_max = 0,
    .flags = VEIL_OPF_LEAF | VEIL_OPF_PATH_FREE,
    .region = VEIL_REGION_INPUT,
    .passes = 2,
};
const struct veil_op_desc veil_opd_param = {
    .name = "param",
    .nin_min = 0,
    .nin_max = 0,
    .flags = VEIL_OPF_LEAF | VEIL_OPF_PATH_FREE,
    .region = VEIL_REGION_INPUT,
    .passes = 2,
};
const struct veil_op_desc veil_opd_constant = {
    .name = "constant",
    .nin_min = 0,
    .nin_max = 0,
    .flags = VEIL_OPF_LEAF | VEIL_OPF_PATH_FREE,
    .region = VEIL_REGION_INPUT,
    .passes = 2,
};

/* ---- forward ops ----------------------------------------------------------------------------- */

const struct veil_op_desc veil_opd_dense = {
    .name = "dense",
    .nin_min = 2,
    .nin_max = 3,
    .flags = VEIL_OPF_WEIGHTED,
    .region = VEIL_REGION_LINEAR,
    .matrix_in = 0x3,
    .passes = 2,
    .product = VEIL_PRODUCT_MATMUL,
    .plain = veil_plain_dense,
    .lower = veil_lower_dense,
    .grad = veil_grad_dense,
};
const struct veil_op_desc veil_opd_conv2d = {
    .name = "conv2d",
    .nin_min = 2,
    .nin_max = 3,
    .flags = VEIL_OPF_WEIGHTED,
    .region = VEIL_REGION_LINEAR,
    .matrix_in = 0x3,
    .passes = 2,
    .product = VEIL_PRODUCT_CONV,
    .plain = veil_plain_conv2d,
    .lower = veil_lower_conv2d,
    .grad = veil_grad_conv2d,
};
const struct veil_op_desc veil_opd_relu = {
    .name = "relu",
    .nin_min = 1,
    .nin_max = 1,
    .flags = VEIL_OPF_ELEMENTWISE,
    .region = VEIL_REGION_RELU,
    .passes = 64,
    .plain = veil_plain_relu,
    .lower = veil_lower_relu,
    .grad = veil_grad_saved,
    .grad_op = VEIL_OP_RELU_GRAD,
};
const struct veil_op_desc veil_opd_maxpool = {
    .name = "maxpool2d",
    .nin_min = 1,
    .nin_max = 1,
    .region = VEIL_REGION_POOLING,
    .passes = 64,
    .plain = veil_plain_pool,
    .lower = veil_lower_pool,
    .grad = veil_grad_saved,
    .grad_op = VEIL_OP_MAXPOOL_GRAD,
};
const struct veil_op_desc veil_opd_avgpool = {
    .name = "avgpool2d",
    .nin_min = 1,
    .nin_max = 1,
    .region = VEIL_REGION_POOLING,
    .passes = 2,
    .plain = veil_plain_pool,
    .lower = veil_lower_pool,
    .grad = veil_grad_saved,
    .grad_op = VEIL_OP_AVGPOOL_GRAD,
};
const struct veil_op_desc veil_opd_gavgpool = {
    .name = "global_avgpool",
    .nin_min = 1,
    .nin_max = 1,
    .region = VEIL_REGION_POOLING,
    .passes = 2,
    .plain = veil_plain_gavgpool,
    .lower = veil_lower_gavgpool,
    .grad = veil_grad_saved,
    .grad_op = VEIL_OP_GAVGPOOL_GRAD,
};
const struct veil_op_desc veil_opd_reshape = {
    .name = "reshape",
    .nin_min = 1,
    .nin_max = 1,
    .flags = VEIL_OPF_PATH_FREE,
    .region = VEIL_REGION_OTHER,
    .passes = 2,
    .plain = veil_plain_copy,
    .lower = veil_lower_reshape,
    .grad = veil_grad_self,
};
const struct veil_op_desc veil_opd_add = {
    .name = "add",
    .nin_min = 2,
    .nin_max = 2,
    .flags = VEIL_OPF_ELEMENTWISE | VEIL_OPF_PATH_FREE | VEIL_OPF_COMBINES,
    .region = VEIL_REGION_OTHER,
    .passes = 2,
    .plain = veil_plain_add,
    .lower = veil_lower_add,
    .grad = veil_grad_add,
};
const struct veil_op_desc veil_opd_concat = {
    .name = "concat",
    .nin_min = 2,
    .nin_max = 2,
    .flags = VEIL_OPF_COMBINES,
    .region = VEIL_REGION_OTHER,
    .passes = 2,
    .plain = veil_plain_concat,
    .lower = veil_lower_concat,
    .grad = veil_grad_concat,
};
/* Folded into its producer at compile time: at run time an identity of it. */
const struct veil_op_desc veil_opd_batchnorm = {
    .name = "batchnorm",
    .nin_min = 5,
    .nin_max = 5,
    .region = VEIL_REGION_NORM,
    .passes = 2,
    .plain = veil_plain_copy,
    .lower = veil_lower_reshape,
    .no_grad_hint = " (batch norm is folded for inference only: train without it)",
};
const struct veil_op_desc veil_opd_layernorm = {
    .name = "layernorm",
    .nin_min = 3,
    .nin_max = 3,
    .region = VEIL_REGION_NORM,
    .passes = 128,
    .plain = veil_plain_layernorm,
    .lower = veil_lower_layernorm,
    .grad = veil_grad_layernorm,
};
const struct veil_op_desc veil_opd_matmul = {
    .name = "matmul",
    .nin_min = 2,
    .nin_max = 2,
    .flags = VEIL_OPF_MIXES_ROWS,
    .region = VEIL_REGION_LINEAR,
    .matrix_in = 0x3,
    .passes = 2,
    .product = VEIL_PRODUCT_MATMUL,
    .plain = veil_plain_matmul,
    .lower = veil_lower_matmul,
    .grad = veil_grad_matmul,
};
const struct veil_op_desc veil_opd_transpose = {
    .name = "transpose",
    .nin_min = 1,
    .nin_max = 1,
    .flags = VEIL_OPF_MIXES_ROWS,
    .region = VEIL_REGION_OTHER,
    .matrix_in = 0x1,
    .passes = 2,
    .plain = veil_plain_transpose,
    .lower = veil_lower_transpose,
    .grad = veil_grad_self,
};
const struct veil_op_desc veil_opd_scale = {
    .name = "scale",
    .nin_min = 1,
    .nin_max = 1,
    .flags = VEIL_OPF_ELEMENTWISE,
    .region = VEIL_REGION_OTHER,
    .passes = 2,
    .plain = veil_plain_scale,
    .lower = veil_lower_scale,
    .grad = veil_grad_self,
};
const struct veil_op_desc veil_opd_softmax = {
    .name = "softmax",
    .nin_min = 1,
    .nin_max = 1,
    .region = VEIL_REGION_SOFTMAX,
    .passes = 128,
    .plain = veil_plain_softmax,
    .lower = veil_lower_softmax,
    .grad = veil_grad_saved,
    .grad_op = VEIL_OP_SOFTMAX_GRAD,
};
const struct veil_op_desc veil_opd_gelu = {
    .name = "gelu",
    .nin_min = 1,
    .nin_max = 1,
    .flags = VEIL_OPF_ELEMENTWISE,
    .region = VEIL_REGION_RELU,
    .passes = 128,
    .plain = veil_plain_gelu,
    .lower = veil_lower_gelu,
    .grad = veil_grad_gelu,
};
const struct veil_op_desc veil_opd_argmax = {
    .name = "argmax",
    .nin_min = 1,
    .nin_max = 1,
    .region = VEIL_REGION_ARGMAX,
    .passes = 64,
    .plain = veil_plain_argmax,
    .lower = veil_lower_argmax,
};
/* Its gradient is autodiff's starting point (XENT_GRAD), not a rule. */
const struct veil_op_desc veil_opd_softmax_xent = {
    .name = "softmax_cross_entropy",
    .nin_min = 2,
    .nin_max = 2,
    .flags = VEIL_OPF_LOSS,
    .region = VEIL_REGION_SOFTMAX,
    .passes = 2,
    .plain = veil_plain_softmax_xent,
    .lower = veil_lower_softmax_xent,
};

/* ---- backward ops (emitted by autodiff.c) ----------------------------------------------------- */

const struct veil_op_desc veil_opd_matmul_nt = {
    .name = "matmul_nt",
    .nin_min = 2,
    .nin_max = 2,
    .flags = VEIL_OPF_BACKWARD,
    .region = VEIL_REGION_LINEAR,
    .matrix_in = 0x3,
    .passes = 2,
    .plain = veil_plain_matmul_grad,
    .lower = veil_lower_matmul_grad,
};
const struct veil_op_desc veil_opd_matmul_tn = {
    .name = "matmul_tn",
    .nin_min = 2,
    .nin_max = 2,
    .flags = VEIL_OPF_BACKWARD,
    .region = VEIL_REGION_LINEAR,
    .matrix_in = 0x3,
    .passes = 2,
    .plain = veil_plain_matmul_grad,
    .lower = veil_lower_matmul_grad,
};
const struct veil_op_desc veil_opd_sum_rows = {
    .name = "sum_rows",
    .nin_min = 1,
    .nin_max = 1,
    .flags = VEIL_OPF_BACKWARD,
    .region = VEIL_REGION_OTHER,
    .passes = 2,
    .plain = veil_plain_sum,
    .lower = veil_lower_sum,
};
const struct veil_op_desc veil_opd_sum_channels = {
    .name = "sum_channels",
    .nin_min = 1,
    .nin_max = 1,
    .flags = VEIL_OPF_BACKWARD,
    .region = VEIL_REGION_OTHER,
    .passes = 2,
    .plain = veil_plain_sum,
    .lower = veil_lower_sum,
};
const struct veil_op_desc veil_opd_conv_grad_input = {
    .name = "conv2d_grad_input",
    .nin_min = 2,
    .nin_max = 2,
    .flags = VEIL_OPF_BACKWARD,
    .region = VEIL_REGION_LINEAR,
    .matrix_in = 0x3,
    .passes = 2,
    .plain = veil_plain_conv_grad,
    .lower = veil_lower_conv_grad,
};
const struct veil_op_desc veil_opd_conv_grad_weight = {
    .name = "conv2d_grad_weight",
    .nin_min = 2,
    .nin_max = 2,
    .flags = VEIL_OPF_BACKWARD,
    .region = VEIL_REGION_LINEAR,
    .matrix_in = 0x3,
    .passes = 2,
    .plain = veil_plain_conv_grad,
    .lower = veil_lower_conv_grad,
};
const struct veil_op_desc veil_opd_relu_grad = {
    .name = "relu_grad",
    .nin_min = 1,
    .nin_max = 1,
    .flags = VEIL_OPF_BACKWARD,
    .region = VEIL_REGION_RELU,
    .passes = 2,
    .plain = veil_plain_relu_grad,
    .lower = veil_lower_relu_grad,
};
const struct veil_op_desc veil_opd_gelu_grad = {
    .name = "gelu_grad",
    .nin_min = 2,
    .nin_max = 2,
    .flags = VEIL_OPF_BACKWARD,
    .region = VEIL_REGION_RELU,
    .passes = 32,
    .plain = veil_plain_gelu_grad,
    .lower = veil_lower_gelu_grad,
};
const struct veil_op_desc veil_opd_maxpool_grad = {
    .name = "maxpool2d_grad",
    .nin_min = 1,
    .nin_max = 1,
    .flags = VEIL_OPF_BACKWARD,
    .region = VEIL_REGION_POOLING,
    .passes = 2,
    .plain = veil_plain_pool_grad,
    .lower = veil_lower_pool_grad,
};
const struct veil_op_desc veil_opd_avgpool_grad = {
    .name = "avgpool2d_grad",
    .nin_min = 1,
    .nin_max = 1,
    .flags = VEIL_OPF_BACKWARD,
    .region = VEIL_REGION_POOLING,
    .passes = 2,
    .plain = veil_plain_pool_grad,
    .lower = veil_lower_pool_grad,
};
const struct veil_op_desc veil_opd_gavgpool_grad = {
    .name = "global_avgpool_grad",
    .nin_min = 1,
    .nin_max = 1,
    .flags = VEIL_OPF_BACKWARD,
    .region = VEIL_REGION_POOLING,
    .passes = 2,
    .plain = veil_plain_gavgpool_grad,
    .lower = veil_lower_gavgpool_grad,
};
const struct veil_op_desc veil_opd_layernorm_grad = {
    .name = "layernorm_grad",
    .nin_min = 1,
    .nin_max = 1,
    .flags = VEIL_OPF_BACKWARD | VEIL_OPF_READS_FWD_IN1,
    .region = VEIL_REGION_NORM,
    .passes = 2,
    .plain = veil_plain_layernorm_grad,
    .lower = veil_lower_layernorm_grad,
};
const struct veil_op_desc veil_opd_layernorm_grad_gamma = {
    .name = "layernorm_grad_gamma",
    .nin_min = 1,
    .nin_max = 1,
    .flags = VEIL_OPF_BACKWARD,
    .region = VEIL_REGION_NORM,
    .passes = 2,
    .plain = veil_plain_layernorm_grad_gamma,
    .lower = veil_lower_layernorm_grad_gamma,
};
const struct veil_op_desc veil_opd_softmax_grad = {
    .name = "softmax_grad",
    .nin_min = 1,
    .nin_max = 1,
    .flags = VEIL_OPF_BACKWARD,
    .region = VEIL_REGION_SOFTMAX,
    .passes = 2,
    .plain = veil_plain_softmax_grad,
    .lower = veil_lower_softmax_grad,
};
const struct veil_op_desc veil_opd_xent_grad = {
    .name = "softmax_cross_entropy_grad",
    .nin_min = 0,
    .nin_max = 0,
    .flags = VEIL_OPF_BACKWARD | VEIL_OPF_READS_FWD_IN1,
    .region = VEIL_REGION_SOFTMAX,
    .passes = 2,
    .plain = veil_plain_xent_grad,
    .lower = veil_lower_xent_grad,
};
const struct veil_op_desc veil_opd_slice = {
    .name = "slice",
    .nin_min = 1,
    .nin_max = 1,
    .flags = VEIL_OPF_BACKWARD,
    .region = VEIL_REGION_OTHER,
    .passes = 2,
    .plain = veil_plain_slice,
    .lower = veil_lower_slice,
};
const struct veil_op_desc veil_opd_sgd_update = {
    .name = "sgd_update",
    .nin_min = 2,
    .nin_max = 2,
    .flags = VEIL_OPF_BACKWARD | VEIL_OPF_ELEMENTWISE,
    .region = VEIL_REGION_OTHER,
    .passes = 2,
    .plain = veil_plain_sgd_update,
    .lower = veil_lower_sgd_update,
};

/* ---- the table ------------------------------------------------------------------------------- */

const struct veil_op_desc *const veil_op_descs[VEIL_OP_COUNT] = {
#define X(op, id) [VEIL_OP_##op] = &veil_opd_##id,
    VEIL_OP_TABLE(X)
#undef X
};

const struct veil_op_desc veil_opd_unknown = {
    .name = "?",
    .passes = 2,
};

const char *veil_op_name(enum veil_op op)
{
    return veil_op_desc(op)->name;
}

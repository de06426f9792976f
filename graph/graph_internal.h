/*
 * graph_internal.h — the node and plan structures and the op table (THE OP TABLE below: one row
 * per op, naming its descriptor) shared by the DSL builders (graph.c, op_*.c), the compiler
 * (compile.c and its passes fold.c, autodiff.c, microbatch.c, with plan_edit.c's helpers), the
 * plaintext executor (plain*.c) and the secure executor (run*.c, lower*.c). Never installed.
 *
 * A graph is an array of nodes in creation order, which is a topological order (a builder can
 * only use nodes that exist). A plan copies the graph's nodes into its own array (the graph may
 * be destroyed after compiling), then the compiler appends the backward and update nodes when
 * training, marks batch norms folded into their producer, and computes each node's last use.
 * Operands are node indices into the same array; the plan executes nodes 0..count-1 in order.
 *
 * OP SEMANTICS (forward; shapes as in include/veil/graph.h). Fixed point: every product of two
 * fixed-point values (dense, conv2d, matmul, mul, scale by a non-integer) is followed by one
 * truncation by f (the secure run's veil_mpc_trunc; the FIXED plaintext mode's floor). Biases
 * are added after the truncation. The plaintext FIXED mode and the secure run execute the same
 * ring operations in the same order; only truncation differs (floor vs floor + {0, 1}).
 *
 * FIXED-POINT SEQUENCES (forward; both executors follow them step for step; trunc = the secure
 * truncation by f, floor in the plaintext FIXED mode; enc(c) = round(c 2^f); "sum" is exact):
 *   DENSE      y = trunc(x . W) + b (b broadcast over rows)
 *   CONV2D     y = trunc(conv(x, W)) + b (b broadcast over each channel's pixels)
 *   RELU, MAXPOOL, RESHAPE, ADD, CONCAT, TRANSPOSE: exact (no truncation)
 *   AVGPOOL    y = trunc(window_sum(x) * enc(1/k^2))                 (tasks/pool.h)
 *   GAVGPOOL   y = trunc(sum_hw(x) * enc(1/(H W)))
 *   SCALE      y = x * c when c is an integer, else trunc(x * enc(c))
 *   MATMUL     y = trunc(a . b)
 *   SOFTMAX    veil_mpc_softmax_lastdim / veil_ref_softmax_lastdim (tasks/nonlinear_ref.h)
 *   GELU       veil_mpc_gelu / veil_ref_gelu
 *   EXP        veil_mpc_exp / veil_ref_exp (tasks/nonlinear.h: accurate over [-64, 0]); its
 *              gradient is MUL(dy, y): dx = trunc(dy * y), y the forward's output
 *   RECIPROCAL, RSQRT  veil_mpc_reciprocal_norm / veil_mpc_rsqrt_norm over [2^-f, 2^15)
 *              (veil_ref_reciprocal_norm, veil_ref_rsqrt_norm); SQRT y = trunc_(f+8)(x * r), r
 *              the rsqrt at f + 8 bits (veil_mpc_rsqrt_norm's xb = 8); DIV z = trunc(x *
 *              reciprocal(y)); SIGMOID, TANH veil_mpc_sigmoid_tanh / veil_ref_sigmoid_tanh
 *              (tasks/nonlinear_sigmoid.h); their gradients are MUL / SCALE / ADD chains and,
 *              for SQRT and DIV, a fresh RSQRT / RECIPROCAL node (graph/op_nonlinear.c)
 *   ARGMAX     one-hot of the first maximum (veil_mpc_max_lastdim's argmax), then
 *              y = sum_j onehot_j * enc(j) (local): the index as a fixed-point real
 *   LAYERNORM  over the last dimension d, per row: xs = x - x[0] (exact; the sum sees the
 *              row's spread, not its magnitude); mean = trunc_B(sum(xs) * enc_B(1/d)) with
 *              B = VEIL_LN_MEAN_BITS (the product stays below 2^62 while the row's spread is
 *              below 2^(62-f-B), 2^18 at f = 16; the mean is off by at most 1 ulp plus
 *              d spread 2^(f-B-1) ulps, a relative 2^-B of the spread); xc = xs - mean
 *              (exactly 0 on a constant row, which then gives beta);
 *              ROW SCALE (so that no square or sum wraps and var lands in inv_sqrt's range):
 *              ssq = sum(trunc_{f-8}(xc)^2) (xc at 8 bits: d var 2^16, below 2^62 while
 *              d var < 2^46); one ltz on 16 words per row gives b_k = [ssq < thr_k] for
 *              thr_j = d 2^(21+2j), j = 1..12 (var reaches 2^(5+2j)) and d 2^(11-2i), i = 1..4
 *              (var below 2^(-5-2i)); S = 2^(15-h) for h = #{j : ssq >= thr_j} > 0, 2^(18+i)
 *              for i = #{i : ssq < thr_i} > 0, 2^15 otherwise, and eps' = enc(eps 4^(3+i)) for
 *              the latter (enc(eps) otherwise), both linear forms of the bits (veil_ln_form,
 *              local); xc := trunc_15(xc * S) (exact where S >= 2^15; rows of var in
 *              [2^-7, 2^7) get S = 2^15 and are unchanged), so var lands in [2^-7, 2^7) for every
 *              row whose spread is below 2^16 (every row of values the feeds accept) and var
 *              below 2^-15 becomes small beside eps' (>= 2^-8 for eps >= 2^-22);
 *              var = trunc(trunc(sum(xc * xc)) * enc(1/d)) + eps'
 *              (the products xc*xc summed before one truncation); r = inv_sqrt(var) over
 *              [2^-8, 2^8) (veil_mpc_inv_sqrt / veil_ref_inv_sqrt_range(-8, 8));
 *              xhat = trunc(xc * r) (s = S / 2^15 cancels: xc s / sqrt(var s^2 + eps'), eps
 *              acting as eps 4^h where var >= 2^7, a relative change below eps / 2^6);
 *              y = trunc(xhat * gamma) + beta; the saved 1/sigma is trunc_15(r * S) = r s
 *              (2 rounds more when a backward op reads it). Limit: the mean is rounded to an
 *              ulp, so rows whose centred values are a few ulps carry that ulp times 1/sigma
 *   BATCHNORM  folded at bind time (W' = W s, b' = (b - mean) s + beta, s = gamma/sqrt(var +
 *              eps), in double at the weight owner, then encoded): no online op
 *   SOFTMAX_XENT  s = softmax(logits) (saved for XENT_GRAD); the node's own value is the loss
 *              only in the plaintext executor (double: -mean(log s[label])); the secure run
 *              keeps s and computes no loss online (see the training API for revealing it)
 *
 * BACKWARD OPS (emitted by autodiff.c only; in[] and `fwd` as listed; all outputs are gradients
 * in fixed point, each product truncated once):
 *   MATMUL_NT    in[0] (m, k), in[1] (n, k) -> (m, n) = a . b^T   (dense dx = dy . W^T)
 *   MATMUL_TN    in[0] (k, m), in[1] (k, n) -> (m, n) = a^T . b   (dense dW = x^T . dy)
 *   SUM_ROWS     in[0] (r, c) -> (c): column sums (dense db), no truncation
 *   SUM_CHANNELS in[0] (B, C, H, W) -> (C) (conv db), no truncation
 *   CONV_GRAD_INPUT  in[0] = w (O,C,KH,KW), in[1] = dy; fwd = the conv2d node -> dx like its x
 *   CONV_GRAD_WEIGHT in[0] = x, in[1] = dy; fwd = the conv2d node -> dw like its w
 *   RELU_GRAD    in[0] = dy; fwd = the relu node -> dy * [x >= 0] (the forward mask, saved)
 *   GELU_GRAD    in[0] = dy, in[1] = the gelu's input x; fwd = the gelu node -> dy GELU'(x)
 *                (the secure run reuses the forward's comparison bits and v, saved)
 *   MAXPOOL_GRAD in[0] = dy; fwd = the maxpool node -> dx (route saved by the forward)
 *   AVGPOOL_GRAD in[0] = dy; fwd = the avgpool node -> dx (dy * round(2^f/k^2), truncated,
 *                scattered to each window; overlapping windows add)
 *   GAVGPOOL_GRAD in[0] = dy (B, C); fwd = the global avgpool node -> dx (B, C, H, W)
 *   LAYERNORM_GRAD in[0] = dy; fwd = the layernorm node -> dx (xhat and 1/sigma saved);
 *                  its gamma and beta gradients are separate nodes:
 *   LAYERNORM_GRAD_GAMMA in[0] = dy; fwd = the layernorm node -> (d): sum over rows dy * xhat
 *   SOFTMAX_GRAD in[0] = dy; fwd = the softmax node -> s * (dy - rowsum(dy * s))
 *   XENT_GRAD    fwd = the softmax_cross_entropy node -> (softmax - labels) / batch (B, C)
 *   SLICE        in[0]; attrs axis, start -> the part of a concat's gradient (shape given)
 *   MUL          in[0] * in[1] elementwise, same shape, truncated (general product)
 *   SGD_UPDATE   in[0] = the parameter leaf, in[1] = its gradient (same shape); attrs lr,
 *                momentum, weight_decay: v = momentum v + g + weight_decay w; w' = w - lr v
 *                (v is executor state per parameter, zero at start; each product by a public
 *                real is mul_scalar(round(c 2^f)) + trunc). The executor replaces the
 *                parameter's value by w' at the end of the step.
 * RESHAPE, TRANSPOSE, ADD, SCALE serve backward too (gradient of reshape is reshape, ...).
 *
 * BACKWARD FIXED-POINT SEQUENCES (the plaintext FIXED mode, plain_backward*.c, and the secure
 * lowering follow them step for step; notation as above; "*" on two secrets is an elementwise
 * Beaver product, exact in the ring before its trunc; sums and scatters are local and exact;
 * masks and routes are integers 0/1 and multiply WITHOUT truncation; enc(c) is a public constant):
 *   MATMUL_NT    y = trunc(a . b^T)          MATMUL_TN   y = trunc(a^T . b)   (one trunc/entry)
 *   SUM_ROWS, SUM_CHANNELS  exact sums, no truncation
 *   CONV_GRAD_INPUT   dx_b = trunc(col2im(W^T . dY_b)) for each image b: W viewed (O, C KH KW),
 *                dY_b (O, OH OW); the product and the col2im scatter-add exact, ONE trunc per
 *                element of dx at the end
 *   CONV_GRAD_WEIGHT  dW = trunc(sum_b dY_b . im2col(x_b)^T): exact over all images, ONE trunc
 *   RELU_GRAD    dx = dy * mask (mask 0/1 saved by the forward; no truncation)
 *   GELU_GRAD    veil_mpc_gelu_grad / veil_ref_gelu_grad (tasks/gelu.h): w = trunc(dy * x),
 *                Horner of Q at the forward's v, u = trunc_F(w * Q + dy 2^(F-1)), then the exact
 *                select dx = dy + [x < a] (u - dy) - [x < -a] u by the forward's bits
 *   MAXPOOL_GRAD dx[tap] = sum over windows containing tap of dy[window] * route[window][tap]
 *                (route one-hot 0/1, saved; no truncation; overlapping windows add)
 *   AVGPOOL_GRAD t = trunc(dy * q), q = floor((2^f + k^2/2) / k^2) (the forward's constant, =
 *                round(2^f/k^2)); dx[tap] = sum over windows containing tap of t[window]
 *   GAVGPOOL_GRAD  dx[b,c,:,:] = trunc(dy[b,c] * enc(1/(H W))) broadcast (the forward's constant)
 *   LAYERNORM_GRAD per row of d (gamma = the layer norm's in[1]; xhat, r = 1/sigma saved):
 *                g = trunc(dy * gamma); m1 = trunc(sum_j(g) * enc(1/d));
 *                m2 = trunc(trunc(sum_j(g * xhat)) * enc(1/d))   (products summed, one trunc);
 *                u = g - m1 - trunc(xhat * bcast(m2)); dx = trunc(bcast(r) * u).
 *                The means come before the product by r, so every intermediate has the size of
 *                g (the largest, sum_j g*xhat before its trunc, is at most d max|g| sqrt(d) 2^2f)
 *                and enc(1/d)'s rounding error touches only the correction terms m1, m2
 *   LAYERNORM_GRAD_GAMMA dgamma_j = trunc(sum_rows(dy * xhat)) (products summed, one trunc)
 *                (dbeta is SUM_ROWS of dy, emitted separately)
 *   SOFTMAX_GRAD t = trunc(dy * s); q = rowsum(t) (exact); dx = trunc(s * (dy - bcast(q)))
 *                (s = the softmax output, saved)
 *   XENT_GRAD    dlogits = trunc((s - labels) * enc(1/B)) (s saved by the loss, labels its in[1])
 *   SLICE        exact copy                    MUL  y = trunc(a * b)
 *   SGD_UPDATE   v = trunc(v * enc(momentum)) + g + trunc(w * enc(weight_decay)) (each term
 *                skipped when its coefficient is 0; v = 0 before the first step);
 *                w' = w - trunc(v * enc(lr)). Elementwise, public constants only. With grad_mul
                R >= 2 (weight averaging), g is replaced by R g first (exact, no truncation).
 *   ADAM_UPDATE  (graph/op_adam.c; scale(x, c) = x * c for an integer c, else trunc(x * enc(c)),
 *                as veil_exec_scale; t = the step, public; s = a.adam_s, lo = -floor(f/2)):
 *                g = R g (grad_mul); ADAM with weight_decay: g = g + trunc(w * enc(wd));
 *                gs = g 2^s (exact); m = gs + scale(m - gs, beta1);
 *                v = trunc(gs * gs) + (v - scale(v, 1 - beta2)) (the float rule's v / (1 - beta2));
 *                mh = scale(m, 1 / (1 - beta1^t)); z = scale(v, (1 - beta2) / (1 - beta2^t))
 *                + enc(2^2s eps);
 *                rr = 2^8 / sqrt(z): the normalised inverse square root over [2^lo, 2^(lo+32))
 *                with its result at f + 8 bits (veil_mpc_rsqrt_norm / veil_ref_rsqrt_norm,
 *                xb = 8);
 *                u = trunc_(f+8)(mh * rr); ADAMW with weight_decay: u = u + trunc(w * enc(wd));
 *                w' = w - scale(u, lr). m and v start at 0 (executor state, as SGD's v).
 * WEIGHT AVERAGING (after every average_every-th step, both executors; not a node): for each
 *                parameter with replicas w_0 .. w_{R-1}: s = sum_i w_i (exact);
 *                a = trunc(s * enc(1/R)); every w_i = a. Velocities untouched.
 * Bound: every value above stays well inside |x| < 2^(62-f) as reals when activations, weights
 * and gradients do (|x| < 2^10 at f = 16), the condition of the secure truncation.
 */
#ifndef VEIL_GRAPH_INTERNAL_H
#define VEIL_GRAPH_INTERNAL_H

#include "veil.h"

#include <stddef.h>
#include <stdint.h>

#define VEIL_NODE_NAME_MAX 64
/** Fractional bits of 1/d in layer norm's mean (FIXED-POINT SEQUENCES, LAYERNORM). */
#define VEIL_LN_MEAN_BITS 28
/** Layer norm's domain at f fractional bits: rows of spread below 2^VEIL_LN_SPREAD_BITS(f)
 * (the mean's product wraps beyond) and of d var below 2^VEIL_LN_DVAR_BITS (the row scale's sum
 * of squares wraps beyond). */
#define VEIL_LN_SPREAD_BITS(f) (62 - (f) - VEIL_LN_MEAN_BITS)
#define VEIL_LN_DVAR_BITS 46
/** Layer norm's row scale (FIXED-POINT SEQUENCES, LAYERNORM): fractional bits of the coarse
 * values, thresholds that scale a row down (2^-h, h <= VEIL_LN_SCALES) and up (2^(3+i),
 * i <= VEIL_LN_UP), and the bits of S (the scale at 2^15). */
#define VEIL_LN_COARSE_FRAC 8
#define VEIL_LN_SCALES 12
#define VEIL_LN_UP 4
#define VEIL_LN_NBITS (VEIL_LN_SCALES + VEIL_LN_UP)
#define VEIL_LN_SCALE_BITS 15
/** The row scale as linear forms of the bits b_k = [ssq < thr[k]] (k < VEIL_LN_NBITS):
 * S = s0 + sum_k sw[k] b_k and eps' = e0 + sum_k ew[k] b_k (at f bits). */
struct veil_ln_form {
    uint64_t thr[VEIL_LN_NBITS], sw[VEIL_LN_NBITS], ew[VEIL_LN_NBITS], s0, e0;
};
/** Fills *lf for rows of d, layer norm epsilon eps, f fractional bits (plain_forward_nn.c). */
void veil_ln_form_init(struct veil_ln_form *lf, size_t d, double eps, int f);
#define VEIL_NODE_MAX_IN 5
/* Owners and reveal targets are checked against this at build time, against N at run time. */
#define VEIL_GRAPH_MAX_PARTIES 63

/* THE OP TABLE. X-macro: op, id. One row per op gives the enum value VEIL_OP_<op> and names the
 * op's descriptor, `veil_opd_<id>` (struct veil_op_desc below): its name, flags, cost and the
 * functions of every stage. Forward ops first (users build them), then backward ops (autodiff);
 * no code depends on the order (ask the descriptor's flags). Adding an op: a row here, its
 * descriptor and functions in one file (graph/op_elementwise.c shows one: MUL and EXP), and its
 * builder in include/veil/graph.h. The descriptors of the ops whose stages live in the
 * executors' files are in graph/ops.c. */
#define VEIL_OP_TABLE(X)                                                                          \
    X(INPUT, input)                                                                               \
    X(PARAM, param)                                                                               \
    X(CONST, constant)                                                                            \
    X(DENSE, dense)                                                                               \
    X(CONV2D, conv2d)                                                                             \
    X(RELU, relu)                                                                                 \
    X(MAXPOOL, maxpool)                                                                           \
    X(AVGPOOL, avgpool)                                                                           \
    X(GAVGPOOL, gavgpool)                                                                         \
    X(RESHAPE, reshape)                                                                           \
    X(ADD, add)                                                                                   \
    X(CONCAT, concat)                                                                             \
    X(BATCHNORM, batchnorm)                                                                       \
    X(LAYERNORM, layernorm)                                                                       \
    X(MATMUL, matmul)                                                                             \
    X(TRANSPOSE, transpose)                                                                       \
    X(SCALE, scale)                                                                               \
    X(SOFTMAX, softmax)                                                                           \
    X(GELU, gelu)                                                                                 \
    X(ARGMAX, argmax)                                                                             \
    X(EXP, exp)                                                                                   \
    X(RECIPROCAL, reciprocal)                                                                     \
    X(RSQRT, rsqrt)                                                                               \
    X(SQRT, sqrt)                                                                                 \
    X(DIV, div)                                                                                   \
    X(SIGMOID, sigmoid)                                                                           \
    X(TANH, tanh)                                                                                 \
    X(SOFTMAX_XENT, softmax_xent)                                                                 \
    X(MATMUL_NT, matmul_nt)                                                                       \
    X(MATMUL_TN, matmul_tn)                                                                       \
    X(SUM_ROWS, sum_rows)                                                                         \
    X(SUM_CHANNELS, sum_channels)                                                                 \
    X(CONV_GRAD_INPUT, conv_grad_input)                                                           \
    X(CONV_GRAD_WEIGHT, conv_grad_weight)                                                         \
    X(RELU_GRAD, relu_grad)                                                                       \
    X(GELU_GRAD, gelu_grad)                                                                       \
    X(MAXPOOL_GRAD, maxpool_grad)                                                                 \
    X(AVGPOOL_GRAD, avgpool_grad)                                                                 \
    X(GAVGPOOL_GRAD, gavgpool_grad)                                                               \
    X(LAYERNORM_GRAD, layernorm_grad)                                                             \
    X(LAYERNORM_GRAD_GAMMA, layernorm_grad_gamma)                                                 \
    X(SOFTMAX_GRAD, softmax_grad)                                                                 \
    X(XENT_GRAD, xent_grad)                                                                       \
    X(SLICE, slice)                                                                               \
    X(MUL, mul)                                                                                   \
    X(SGD_UPDATE, sgd_update)                                                                     \
    X(ADAM_UPDATE, adam_update)

enum veil_op {
#define X(op, id) VEIL_OP_##op,
    VEIL_OP_TABLE(X)
#undef X
        VEIL_OP_COUNT
};

/** The op's name, as its descriptor gives it ("?" out of range). */
const char *veil_op_name(enum veil_op op);

/* Attributes; which are meaningful depends on the op. */
struct veil_node_attrs {
    int stride, pad;    /* CONV2D; MAXPOOL/AVGPOOL: stride */
    int k;              /* MAXPOOL/AVGPOOL window */
    int axis;           /* CONCAT, SLICE */
    size_t start;       /* SLICE: first index along axis */
    double eps;         /* BATCHNORM, LAYERNORM */
    double c;           /* SCALE */
    double lr, momentum, weight_decay; /* SGD_UPDATE */
    int grad_mul;       /* SGD_UPDATE, ADAM_UPDATE: the gradient is multiplied by this public
                           integer first (weight averaging: R, a replica's own mean loss); 0 or 1:
                           unchanged */
    double beta1, beta2, adam_eps; /* ADAM_UPDATE (lr and weight_decay above) */
    int adamw;          /* ADAM_UPDATE: 1 decoupled weight decay (AdamW), 0 coupled (Adam) */
    int adam_s;         /* ADAM_UPDATE: the moments' scale bits s (veil_adam_scale_bits) */
};

struct veil_node {
    enum veil_op op;
    int index;                        /* position in its graph / plan */
    char name[VEIL_NODE_NAME_MAX];
    int ndim;
    size_t dims[VEIL_MAX_DIMS];
    size_t numel;
    int nin;
    int in[VEIL_NODE_MAX_IN];         /* operand indices; -1 for an absent optional operand
                                         (dense/conv bias) */
    int owner;                        /* INPUT/PARAM: the owning party; CONST: -1 */
    double *cvalues;                  /* CONST: numel values (owned) */
    struct veil_node_attrs a;
    int fwd;                          /* backward ops: the forward node whose saved state they
                                         use; -1 otherwise */
    /* outputs */
    int output;                       /* output number, -1 when not revealed */
    int reveal_to;                    /* party or VEIL_ALL_PARTIES */
    /* filled by the compiler */
    int folded_into;                  /* BATCHNORM: the conv/dense node it is folded into; -1 */
    int fold_bn;                      /* CONV2D/DENSE: the batchnorm folded into it; -1 */
    int last_use;                     /* index of the last node reading this one (-1: none;
                                         outputs and parameters live to the end) */
    int saved;                        /* 1: a backward op reads this node's saved state */
    double priority;                  /* critical-path length from here to the end (larger:
                                         earlier), used for StarPU task priorities */
    int grad_of;                      /* backward: the node this one is the gradient of; -1 */
    int synthetic;                    /* PARAM made by the compiler (a folded batch norm's bias
                                         for a layer without one): bind.c computes it, no feed */
    int replica;                      /* PARAM under weight averaging: replica j of a parameter
                                         (j >= 1, named "<name>~r<j>"); 0 otherwise */
    int replica_of;                   /* PARAM with replica >= 1: the plan index of replica 0 (the
                                         original name, whose feed it is bound from); -1
                                         otherwise. Set by compile.c once the nodes are final */
};

struct veil_graph {
    char name[VEIL_NODE_NAME_MAX];
    struct veil_node **nodes;
    size_t count, cap;
    int status;                       /* first error */
    char error[512];
    int noutputs;
};

struct veil_plan {
    char model[VEIL_NODE_NAME_MAX];
    struct veil_compile_options opts;
    struct veil_node *nodes;          /* count nodes, in execution order */
    size_t count;
    size_t nforward;                  /* nodes [0, nforward) are the forward pass */
    int *outputs;                     /* node index of each output, in output order */
    size_t noutputs;
    int *leaves;                      /* node indices of INPUT and PARAM nodes */
    size_t nleaves;
    int loss;                         /* training: the SOFTMAX_XENT node; -1 */
    uint8_t digest[32];
};

/* ---- the op descriptors (rows of VEIL_OP_TABLE) ------------------------------------------- */

struct veil_plain_exec; /* plain_internal.h */
struct veil_exec;       /* exec_internal.h */
struct veil_ad;         /* autodiff.c: the backward pass being built */

/** One op's plaintext evaluation (plain_internal.h): reads operands' arrays, allocates and fills
 * node n's array (and its aux when n->saved). VEIL_OK, VEIL_ERR_NOMEM, or an error naming n. */
typedef int (*veil_plain_fn)(struct veil_plain_exec *e, const struct veil_node *n);
/** One op's secure lowering (exec_internal.h); VEIL_OK or an error with a message naming n. */
typedef int (*veil_lower_fn)(struct veil_exec *x, const struct veil_node *n);
/** One forward op's gradient rule (autodiff.c): node i of the plan being differentiated, its
 * complete gradient gy; emits the backward nodes (veil_ad_emit*) and records their
 * contributions to the operands that need one (veil_ad_contrib, veil_ad_needs). */
typedef int (*veil_grad_fn)(struct veil_ad *a, int i, int gy);

enum veil_op_flag {
    VEIL_OPF_LEAF = 1 << 0,        /* INPUT, PARAM, CONST: bound or shared, never evaluated */
    VEIL_OPF_BACKWARD = 1 << 1,    /* a backward op (emitted by autodiff; SLICE also by micro-batching) */
    VEIL_OPF_ELEMENTWISE = 1 << 2, /* y[k] depends on x[k] alone (same shape, any layout) */
    VEIL_OPF_PATH_FREE = 1 << 3,   /* counts 0 on the critical path of compile.c's priorities
                                      (no communication: reshape, add, leaves) */
    VEIL_OPF_MIXES_ROWS = 1 << 4,  /* mixes rows along axis 0: micro-batches cannot split it */
    VEIL_OPF_WEIGHTED = 1 << 5,    /* operands 1.. are weights and bias, not batch data */
    VEIL_OPF_COMBINES = 1 << 6,    /* its operands must all be batch data or none (add, concat) */
    VEIL_OPF_LOSS = 1 << 7,        /* the training loss (softmax cross-entropy) */
    VEIL_OPF_READS_FWD_IN1 = 1 << 8, /* backward op that also reads in[1] of its fwd node (the
                                        loss's labels, the layer norm's gamma): liveness */
};

/** The product an op's cost model counts (placement.c): none, a matrix product (m, k) . (k, c)
 * of in[0] and in[1], or a convolution of in[0] by the weight in[1]. */
enum veil_op_product { VEIL_PRODUCT_NONE, VEIL_PRODUCT_MATMUL, VEIL_PRODUCT_CONV };

struct veil_op_desc {
    const char *name;      /* in messages and plan listings */
    int nin_min, nin_max;  /* arity: operands in[0..nin) with nin in [nin_min, nin_max] (dense
                              and conv2d: 2 or 3, the bias optional) */
    unsigned flags;        /* enum veil_op_flag */
    int region;            /* enum veil_region of its tasks and messages (trace, lookahead) */
    unsigned matrix_in;    /* bit j: the secure run reads operand j as one handle (a matrix) */
    double passes;         /* cost: elementwise passes its protocols make over its elements
                              (comparisons: 64; polynomial or iterative nonlinearities: 128) */
    enum veil_op_product product; /* cost: its local GEMMs */
    veil_plain_fn plain;   /* plaintext evaluation (both modes); NULL: none (leaves) */
    veil_lower_fn lower;   /* secure lowering; NULL: none (leaves are run.c's) */
    veil_grad_fn grad;     /* forward ops: the gradient rule; NULL: not differentiable */
    enum veil_op grad_op;  /* for veil_grad_saved: the backward op it emits */
    const char *no_grad_hint; /* appended to the "has no gradient" message, or NULL */
};

#define X(op, id) extern const struct veil_op_desc veil_opd_##id;
VEIL_OP_TABLE(X)
#undef X

/** The descriptor of every op, indexed by enum veil_op (graph/ops.c), and that of a value out
 * of the enum's range: named "?", no flags, no functions (executors refuse it by name). */
extern const struct veil_op_desc *const veil_op_descs[VEIL_OP_COUNT];
extern const struct veil_op_desc veil_opd_unknown;

/** op's descriptor. */
static inline const struct veil_op_desc *veil_op_desc(enum veil_op op)
{
    return (unsigned)op < VEIL_OP_COUNT ? veil_op_descs[op] : &veil_opd_unknown;
}

/** Whether op's descriptor has every flag of f. */
static inline int veil_op_is(enum veil_op op, unsigned f)
{
    return (veil_op_desc(op)->flags & f) == f;
}

/* ---- graph.c ----------------------------------------------------------------------------- */

/**
 * Appends a node of op with nin operands (NULL operands: returns NULL without a new error) and
 * the given name (NULL: "<op><index>"); a duplicate name is an error. Returns the node with
 * shape unset (ndim 0) for the builder to fill, or NULL (error recorded on g).
 */
struct veil_node *veil_graph_add_node(veil_graph_t *g, enum veil_op op, const char *name,
                                      int nin, veil_node_t *const *in);
/** Records the first error on g (later ones are dropped) and returns NULL, for builders:
 * `return veil_graph_fail(g, VEIL_ERR_SHAPE, "conv2d '%s': ...", ...);`. */
veil_node_t *veil_graph_fail(veil_graph_t *g, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/** Sets n's shape; numel computed. */
void veil_node_set_shape(struct veil_node *n, int ndim, const size_t *dims);
/** Formats a shape as "[2,3,4]" into buf (returns buf). */
const char *veil_shape_str(int ndim, const size_t *dims, char *buf, size_t len);

/* ---- plan_edit.c: helpers of the compiler's passes ------------------------------------------ */

/** Index of the node called name in p, or -1. */
int veil_plan_find(const veil_plan_t *p, const char *name);
/** A name for a node the compiler makes: "<base><suffix>" into out (VEIL_NODE_NAME_MAX bytes),
 * base shortened and "~k" appended when that is too long or already taken in p. */
void veil_plan_unique_name(const veil_plan_t *p, const char *base, const char *suffix, char *out);
/** A node's defaults: zero, with every index field (operands, owner, fwd, output, folded_into,
 * fold_bn, last_use, grad_of, replica_of) -1 and reveal_to VEIL_ALL_PARTIES. */
void veil_plan_node_init(struct veil_node *n);
/** Inserts node nn at position pos, moving nodes [pos, count) up one and renumbering every
 * reference to them (operands, fwd, folded_into, fold_bn, grad_of, last_use, the loss,
 * nforward), so that an order that was topological stays so when nn only reads nodes before
 * pos. VEIL_ERR_NOMEM. */
int veil_plan_insert(veil_plan_t *p, int pos, const struct veil_node *nn);
/** Rebuilds p->leaves and p->outputs from the node array (after nodes were added). */
int veil_plan_index(veil_plan_t *p);

/* ---- compile.c ----------------------------------------------------------------------------- */

/** The name a leaf is fed by: its own, or for a parameter replica that of its replica 0. */
const char *veil_plan_feed_name(const veil_plan_t *p, const struct veil_node *n);
/** Whether training step `step` (counted from 1) ends with the replicas' weight averaging:
 * dp_average WEIGHTS and step a multiple of average_every. */
int veil_plan_average_due(const veil_plan_t *p, uint64_t step);
/** Weight averaging: the replicas of parameter node i when it is a replica 0 (reps[0] = i, then
 * its replicas 1.. in plan order; at most VEIL_MAX_REPLICAS); *nr 0 for any other node.
 * VEIL_ERR_STATE (named) when their count is not the plan's micro-batch count. */
#define VEIL_MAX_REPLICAS 64 /* microbatches <= 64 (compile.c) */
int veil_plan_replicas(const veil_plan_t *p, size_t i, int reps[VEIL_MAX_REPLICAS], int *nr);

/* ---- microbatch.c ------------------------------------------------------------------------- */

/**
 * The inter-batch pipeline: a new graph in which every node computed from the inputs is split
 * into k copies over B/k rows of axis 0 (slices of the inputs, shared parameters), outputs and
 * a loss's logits concatenated back under their names (details in microbatch.c). replicas set
 * (weight averaging): every parameter, and every node computed from parameters alone, gets k
 * copies too (replica j > 0 of parameter w named "w~r<j>", replica field j), copy j reading
 * replica j. NULL with
 * veil_last_error() for a graph k cannot split (named node and reason) or out of memory.
 */
veil_graph_t *veil_graph_split_microbatches(const veil_graph_t *g, int k, int replicas);

/* ---- fold.c ------------------------------------------------------------------------------- */

/**
 * Marks every BATCHNORM of p folded into its producer (a CONV2D or DENSE whose output only the
 * batch norm reads, whose weight owner owns the four batch-norm parameters): sets folded_into
 * and the producer's fold_bn; a producer without bias gets a synthetic PARAM bias node inserted
 * before it (name "<batchnorm>.folded_bias", owner the weight owner, synthetic = 1). Consumers of
 * the batch norm read it as an identity of its producer. A batch norm that cannot be folded is
 * VEIL_ERR_UNSUPPORTED with a message naming it and why.
 */
int veil_plan_fold_batchnorm(veil_plan_t *p);

/* ---- autodiff.c --------------------------------------------------------------------------- */

/* The gradient rules' tools (contract of veil_grad_fn above). Indices, not pointers: emitting
 * may move the plan's node array. */
/** The plan being differentiated. */
veil_plan_t *veil_ad_plan(struct veil_ad *a);
/** Whether node j (j < 0: an absent operand, never) is on a path from a parameter to the loss,
 * that is, needs a gradient. */
int veil_ad_needs(const struct veil_ad *a, int j);
/** Appends a node of op named after node `base` with suffix (".dx", ...); operands
 * in[0..nin), shape (ndim, dims), attributes from attrs (NULL: zero), fwd and grad_of as given.
 * Returns its index, or -1 with the error recorded. */
int veil_ad_emit(struct veil_ad *a, enum veil_op op, int base, const char *suffix, int nin,
                 const int *in, int ndim, const size_t *dims,
                 const struct veil_node_attrs *attrs, int fwd, int grad_of);
/** As veil_ad_emit with the shape of node like. */
int veil_ad_emit_like(struct veil_ad *a, enum veil_op op, int base, const char *suffix, int nin,
                      const int *in, int like, const struct veil_node_attrs *attrs, int fwd,
                      int grad_of);
/** Records node grad (an index from veil_ad_emit*, or -1 after a failed emit: then
 * VEIL_ERR_NOMEM) as one contribution to the gradient of node target. */
int veil_ad_contrib(struct veil_ad *a, int target, int grad);
/* The rules of the table's forward ops (graph_internal.h's BACKWARD OPS give what they emit):
 * saved: one node of the descriptor's grad_op reading dy and the forward node's saved state
 * (relu, pooling, softmax); self: the same op applied to dy (reshape, transpose, scale). */
int veil_grad_dense(struct veil_ad *a, int i, int gy);
int veil_grad_conv2d(struct veil_ad *a, int i, int gy);
int veil_grad_saved(struct veil_ad *a, int i, int gy);
int veil_grad_self(struct veil_ad *a, int i, int gy);
int veil_grad_add(struct veil_ad *a, int i, int gy);
int veil_grad_concat(struct veil_ad *a, int i, int gy);
int veil_grad_layernorm(struct veil_ad *a, int i, int gy);
int veil_grad_gelu(struct veil_ad *a, int i, int gy);
int veil_grad_matmul(struct veil_ad *a, int i, int gy);

/**
 * Training: appends to p the backward nodes of every node on a path from a parameter to the
 * loss (p->loss), gradients accumulated with ADD where a node has several consumers, then one
 * SGD_UPDATE (or ADAM_UPDATE, per the optimizer option) per parameter (attrs from the training
 * options). nforward stays the forward count.
 */
int veil_plan_build_backward(veil_plan_t *p);

/* ---- op_adam.c ---------------------------------------------------------------------------- */

/** Adam's scale bits s for eps at f fractional bits (include/veil/graph.h, enum veil_optimizer):
 * the smallest s >= 0 with 2^2s eps >= 2^-floor(f/2). */
int veil_adam_scale_bits(double eps, int f);
/** The Adam / AdamW options of o (training with optimizer ADAM or ADAMW): VEIL_OK, or
 * VEIL_ERR_INVAL / VEIL_ERR_RANGE with a message saying what to change. */
int veil_adam_check_options(const struct veil_compile_options *o);

/* ---- bind.c: feeds -> per-leaf values (shared by both executors) ---------------------------- */

/**
 * Resolves the feeds of every leaf of p that party `party` owns (party -1: every leaf, as the
 * plaintext executor does) into values[node index] (numel doubles, owned by the caller: free
 * with veil_plan_values_free). Applies batch-norm folding to the weights and biases of the
 * layers it was folded into (the owner holds both), creating the folded bias of a layer that had
 * none. Missing feeds, wrong element counts, NaN or infinite values: VEIL_ERR_INVAL naming the
 * leaf. Leaves not owned by party get NULL. values has p->count entries.
 */
int veil_plan_bind(const veil_plan_t *p, int party, const struct veil_feed *feeds, size_t nfeeds,
                   double **values);
/** As veil_plan_bind for the INPUT leaves only (parameters are left NULL and nothing is folded):
 * the runs after the first, whose parameters are already shared. */
int veil_plan_bind_inputs(const veil_plan_t *p, int party, const struct veil_feed *feeds,
                          size_t nfeeds, double **values);
/** As veil_plan_bind for the PARAM leaves only (inputs are left NULL and their feeds ignored):
 * veil_party_prepare, which shares the parameters before the first run. */
int veil_plan_bind_params(const veil_plan_t *p, int party, const struct veil_feed *feeds,
                          size_t nfeeds, double **values);
void veil_plan_values_free(const veil_plan_t *p, double **values);

#endif

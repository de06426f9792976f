/*
 * veil/graph.h — Veil's network DSL, its compiler and the plaintext executor and trainer (double
 * or exact fixed point: the oracle of tests and examples). The secure run between parties, which
 * runs the same compiled plans, is declared in veil/party.h.
 *
 * BUILDING. A graph owns its nodes (the ggml habit): builders take the graph and their operand
 * nodes and return a new node, or NULL when something is wrong. Nothing runs while building;
 * shapes are inferred at once. The first error is kept on the graph (veil_graph_status /
 * veil_graph_error) with a message that names the layer and what to change, every later builder
 * given a NULL operand returns NULL quietly, and veil_compile returns that first error: a program
 * can build a whole network and check once. Builders never abort and never print.
 *
 * NAMES. Every node has a name (given, or "<op><index>" when name is NULL); names are unique in a
 * graph (a duplicate is an error). Inputs and parameters are bound to data by name, so a
 * parameter's name is also its tensor name in a weights file.
 *
 * LAYOUTS. Row-major. Images are NCHW; convolution weights OIHW; dense weights (in, out) so
 * y = x W + b with x (batch, in). Values are reals encoded in fixed point with f fractional
 * bits (veil_compile_options.frac_bits) in the secure run and the FIXED plaintext mode.
 *
 * OWNERS. An input or a parameter is owned by a party (0..N-1): only the owner supplies its
 * values, which are secret-shared at the start of a run. Constants are public.
 *
 * THREADS. A graph and a plan are used by one thread at a time; a compiled plan is immutable and
 * may be shared by readers (the plaintext executor does not modify it).
 */
#ifndef VEIL_GRAPH_H
#define VEIL_GRAPH_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct veil_graph veil_graph_t;
typedef struct veil_node veil_node_t;
typedef struct veil_plan veil_plan_t;

/** veil_reveal's "to every party". */
#define VEIL_ALL_PARTIES (-1)

/* ---- graph ---------------------------------------------------------------------------------- */

/** New empty graph; name (may be NULL) names the model (weights files are checked against it). */
veil_graph_t *veil_graph_new(const char *name);
/** Frees the graph and every node; NULL-safe; sets *g to NULL. Plans compiled from it stay valid. */
void veil_graph_destroy(veil_graph_t **g);
/** VEIL_OK, or the first error a builder met. */
int veil_graph_status(const veil_graph_t *g);
/** The first error's message ("" when none). Borrowed, valid while the graph lives. */
const char *veil_graph_error(const veil_graph_t *g);
const char *veil_graph_name(const veil_graph_t *g);
size_t veil_graph_node_count(const veil_graph_t *g);
/** The node called name, or NULL. */
veil_node_t *veil_graph_find(const veil_graph_t *g, const char *name);

const char *veil_node_name(const veil_node_t *n);
int veil_node_ndim(const veil_node_t *n);
size_t veil_node_dim(const veil_node_t *n, int i);
size_t veil_node_numel(const veil_node_t *n);
/** The op's name ("dense", "conv2d", ...). */
const char *veil_node_op(const veil_node_t *n);

/* ---- leaves --------------------------------------------------------------------------------- */

/** A secret input of party owner (data, images, labels), fed per run. */
veil_node_t *veil_input(veil_graph_t *g, const char *name, int owner, int ndim, const size_t *dims);
/** A parameter (weight) of party owner (the model owner); trainable in training. */
veil_node_t *veil_param(veil_graph_t *g, const char *name, int owner, int ndim, const size_t *dims);
/** A public constant; values (numel doubles) are copied. */
veil_node_t *veil_constant(veil_graph_t *g, const char *name, int ndim, const size_t *dims,
                           const double *values);

/* ---- layers (name may be NULL) --------------------------------------------------------------- */

/** y (batch, out) = x (batch, in) . w (in, out) + b (out); b may be NULL. */
veil_node_t *veil_dense(veil_graph_t *g, const char *name, veil_node_t *x, veil_node_t *w,
                        veil_node_t *b);
/** y (B, O, OH, OW) = conv2d(x (B, C, H, W), w (O, C, KH, KW)) + b (O); groups 1, square stride,
 * zero padding pad < KH, KW; b may be NULL. */
veil_node_t *veil_conv2d(veil_graph_t *g, const char *name, veil_node_t *x, veil_node_t *w,
                         veil_node_t *b, int stride, int pad);
veil_node_t *veil_relu(veil_graph_t *g, const char *name, veil_node_t *x);
/** k x k windows, stride s, no padding, on NCHW. */
veil_node_t *veil_maxpool2d(veil_graph_t *g, const char *name, veil_node_t *x, int k, int stride);
veil_node_t *veil_avgpool2d(veil_graph_t *g, const char *name, veil_node_t *x, int k, int stride);
/** (B, C, H, W) -> (B, C): the mean of each channel. */
veil_node_t *veil_global_avgpool(veil_graph_t *g, const char *name, veil_node_t *x);
/** (B, ...) -> (B, prod ...). */
veil_node_t *veil_flatten(veil_graph_t *g, const char *name, veil_node_t *x);
/** Same elements, new shape (equal element count). */
veil_node_t *veil_reshape(veil_graph_t *g, const char *name, veil_node_t *x, int ndim,
                          const size_t *dims);
/** a + b, same shape (residual connections). */
veil_node_t *veil_add(veil_graph_t *g, const char *name, veil_node_t *a, veil_node_t *b);
/** Concatenation along axis (other dimensions equal). */
veil_node_t *veil_concat(veil_graph_t *g, const char *name, veil_node_t *a, veil_node_t *b,
                         int axis);
/**
 * Batch normalisation in inference form over channel axis 1 (NCHW or (B, C)):
 * y = gamma (x - mean) / sqrt(var + eps) + beta, every parameter of shape (C). The compiler folds
 * it into the preceding conv2d or dense layer (x must be such a layer's output used only here,
 * and the parameters must belong to that layer's weight owner): it costs nothing online.
 */
veil_node_t *veil_batchnorm(veil_graph_t *g, const char *name, veil_node_t *x, veil_node_t *gamma,
                            veil_node_t *beta, veil_node_t *mean, veil_node_t *var, double eps);
/** Layer normalisation over the last dimension (d): gamma, beta of shape (d). Right for every
 * row whose spread (max - min) is below 2^(62-f-28) (2^18 at f = 16: any row the feeds accept)
 * and whose d var is below 2^46; the FIXED plaintext run refuses other rows (VEIL_ERR_RANGE naming
 * the node and the row), the secure run cannot see them (veil_plain_check_ranges reports both). */
veil_node_t *veil_layernorm(veil_graph_t *g, const char *name, veil_node_t *x, veil_node_t *gamma,
                            veil_node_t *beta, double eps);
/** c (m, n) = a (m, k) . b (k, n), both secret (attention). */
veil_node_t *veil_matmul(veil_graph_t *g, const char *name, veil_node_t *a, veil_node_t *b);
/** Transpose of a 2-D tensor. */
veil_node_t *veil_transpose(veil_graph_t *g, const char *name, veil_node_t *x);
/** x * c for a public real c (e.g. 1/sqrt(d) in attention). */
veil_node_t *veil_scale(veil_graph_t *g, const char *name, veil_node_t *x, double c);
/** Softmax over the last dimension. */
veil_node_t *veil_softmax(veil_graph_t *g, const char *name, veil_node_t *x);
/** GELU x Phi(x), elementwise, |x| < 2^14 (abs error 4.5e-4); trainable: dx = dy GELU'(x) within
 * 1.5e-3 |dy| (tasks/gelu.h). */
veil_node_t *veil_gelu(veil_graph_t *g, const char *name, veil_node_t *x);
/**
 * y = exp(x), elementwise, same shape; trainable (dx = dy * y). The secure run evaluates it with
 * squarings of a quadratic (tasks/nonlinear.h, veil_mpc_exp; 14 rounds, 112 (N-1) bytes per
 * element at f = 16): accurate for x in [-64, 0] (absolute error under 1e-4 at f = 16); within
 * 2e-5 of exp(x), that is about 0, for x in [-112, -64); for x > 0 the relative error grows like
 * x^3 / 24576 (2% at x = 8); below about -112 and from x = 16.6 the result is wrong (nothing
 * checks secret values: keep inputs in range, e.g. subtract a maximum first). Needs frac_bits
 * <= 20. NULL on bad input (x NULL or from another graph), the error recorded on g.
 */
veil_node_t *veil_exp(veil_graph_t *g, const char *name, veil_node_t *x);
/**
 * Nonlinear elementwise ops, same shape as x; trainable; NULL on bad input (an operand NULL or
 * from another graph, div's shapes unequal), the error recorded on g. Nothing checks secret
 * values: an input outside an op's domain gives a wrong result, not an error. Costs per element
 * at N = 2, f = 16 (bytes each party sends; multiply by N - 1) and measured worst errors:
 *   veil_reciprocal  1/x, x in [2^-16, 2^15) (every positive accepted input; by normalisation,
 *                    tasks/reciprocal_norm.h): 22 rounds, 193.75 B; relative error 2^-12 plus
 *                    1 ulp (the test's bound).
 *   veil_div         x / y, y in [2^-16, 2^15), |x / y| < 2^29: reciprocal + product +
 *                    truncation, 24 rounds, 217.75 B; error 2^-12 |x / y| + 2^-15 (1 + |x|).
 *   veil_rsqrt       1/sqrt(x), x in [2^-16, 2^15) (every positive accepted input; by
 *                    normalisation, tasks/rsqrt_norm.h): 21 rounds, 201.75 B; relative error
 *                    1.2e-5 plus 1 ulp (test: 2^-15 |y| + 2^-15).
 *   veil_sqrt        sqrt(x) = x rsqrt(x) (rsqrt kept at f + 8 bits), x in [2^-16, 2^15): 23
 *                    rounds, 225.75 B; relative error 1.2e-5 plus 1 ulp (test: 2^-15 sqrt(x) +
 *                    2^-15).
 *   (x = 0 at f = 16: the secure rsqrt returns 604.31 and sqrt 0, the FIXED plaintext run refuses it with
 *   VEIL_ERR_RANGE, as every input outside an op's domain; negative x: an unspecified value.)
 *   veil_sigmoid     1/(1 + exp(-x)), every accepted x (saturates beyond |x| = 16): 31 rounds,
 *                    377 B; abs error 7.0e-5 (test: 1e-4).
 *   veil_tanh        tanh(x) = 2 sigmoid(2x) - 1, every accepted x: 31 rounds, 377 B; abs
 *                    error 1.4e-4 (test: 2e-4).
 * Protocols and figures: tasks/nonlinear.h, tasks/nonlinear_sigmoid.h. Gradients: reciprocal
 * -dy y^2, rsqrt -dy y^3 / 2, sqrt dy rsqrt(x) / 2, div (dy / y, -dy z / y), sigmoid
 * dy y (1 - y), tanh dy (1 - y^2), each a chain of products truncated once each.
 */
veil_node_t *veil_reciprocal(veil_graph_t *g, const char *name, veil_node_t *x);
veil_node_t *veil_div(veil_graph_t *g, const char *name, veil_node_t *x, veil_node_t *y);
veil_node_t *veil_sqrt(veil_graph_t *g, const char *name, veil_node_t *x);
veil_node_t *veil_rsqrt(veil_graph_t *g, const char *name, veil_node_t *x);
veil_node_t *veil_sigmoid(veil_graph_t *g, const char *name, veil_node_t *x);
veil_node_t *veil_tanh(veil_graph_t *g, const char *name, veil_node_t *x);
/** (..., k) -> (...): the index of the (first) maximum over the last dimension, as a real. */
veil_node_t *veil_argmax(veil_graph_t *g, const char *name, veil_node_t *x);
/**
 * Training loss: the mean over the batch of cross-entropy(softmax(logits), labels), logits and
 * labels (one-hot, secret) of shape (batch, classes); the result has shape (1). Its gradient with
 * respect to the logits is (softmax - labels) / batch.
 */
veil_node_t *veil_softmax_cross_entropy(veil_graph_t *g, const char *name, veil_node_t *logits,
                                        veil_node_t *labels);

/**
 * Marks n as an output revealed to party to (0..N-1) or to every party (VEIL_ALL_PARTIES).
 * Outputs are numbered in the order of these calls. VEIL_OK or the graph's (first) error.
 */
int veil_reveal(veil_graph_t *g, veil_node_t *n, int to);

/* ---- compiling ------------------------------------------------------------------------------ */

#define VEIL_LOOKAHEAD_UNBOUNDED (-1)
#define VEIL_LOOKAHEAD_MAX 64

/**
 * Data-parallel training over the micro-batches (veil_compile_options.dp_average), the two
 * schemes of SHM-Learn-Dist:
 *  - GRADIENTS (the default): the R micro-batch copies share the parameters and their gradients
 *    are summed into one update, which equals the unsplit batch's.
 *  - WEIGHTS: each copy is a replica with its own weights and SGD velocity, trained on its own
 *    B/R rows (its gradient is that of the mean loss over those rows: the autodiff's, which is
 *    1/R of it since the loss is the mean over all B rows, times the public integer R, exact in
 *    the ring), and after every average_every-th training step every parameter's replicas are
 *    replaced by their mean w = (1/R) sum_i w_i (the sum local, then one product by the public
 *    fixed-point constant 1/R and one truncation: 0/+1 ulp in the secure run). Velocities stay
 *    per replica. Replica 0 keeps the parameter's name, replica j > 0 is the parameter
 *    "<name>~r<j>"; every replica is fed from the feed of the original name, and
 *    veil_party_reveal_param / veil_plain_trainer_param of that name give replica 0 (the
 *    replicas' own names give the others; veil_plan_leaf_* list them). Checkpoints hold every
 *    replica. Steps are counted by the session (veil_party_steps, checkpoints included) and by
 *    the plaintext trainer, which averages the same way. A forward run of such a plan (veil_run,
 *    veil_plain_trainer_run) computes micro-batch j's rows with replica j, and the replicas
 *    differ between averagings.
 */
enum veil_dp_average {
    VEIL_DP_AVERAGE_GRADIENTS,
    VEIL_DP_AVERAGE_WEIGHTS,
    VEIL_DP_AVERAGE_COUNT
};

/**
 * The update rule of training (veil_compile_options.optimizer; each parameter's state is kept by
 * the session, the plaintext trainer and checkpoints):
 *  - SGD (the default): v = momentum v + g + weight_decay w; w -= lr v.
 *  - ADAM: g += weight_decay w (coupled, as torch.optim.Adam); m = beta1 m + (1 - beta1) g;
 *    v = beta2 v + (1 - beta2) g^2; mhat = m / (1 - beta1^t), vhat = v / (1 - beta2^t), t the
 *    step (1, 2, ...: public, so both bias corrections are public reals);
 *    w -= lr mhat / sqrt(vhat + eps) (eps inside the square root).
 *  - ADAMW: the same without the coupled decay, and w -= lr (mhat / sqrt(vhat + eps) +
 *    weight_decay w) (decoupled decay, as torch.optim.AdamW).
 * IN FIXED POINT (the secure run and VEIL_PLAIN_FIXED; graph_internal.h gives the ring sequence)
 * the moments are kept for the scaled gradient S g, S = 2^s with s >= 0 the smallest integer such
 * that S^2 eps >= 2^lo, lo = -floor(f/2) (-8 at f = 16): a gradient of one ulp (2^-f) then has a
 * square of 2^(2s-f) that the fixed point still holds, and S^2 (vhat + eps), whose inverse square
 * root the update needs, is never below the secure inverse square root's domain [2^lo, ...).
 * That inverse square root covers [2^lo, 2^(lo+32)) (the normalised one, the octave from one
 * bit-sliced circuit, its result at f + 8 bits: graph_internal.h, ADAM_UPDATE), so the update is
 * right while S^2 (vhat + eps) < 2^(lo+32), that is while |g| stays below about 2^(lo/2+16) / S:
 * 4.0 at f = 16 with the default eps = 1e-8 (s = 10), 2^12 at eps >= 2^-8. Above it the result is
 * wrong (undetected). Costs per parameter element and step: README, "Secure training".
 * ACCURACY: the secure run performs the FIXED trainer's ring operations (the truncations 0/+1 ulp
 * apart: FIXED rounds down, the secure truncation at random without bias, so over many steps
 * compare with VEIL_PLAIN_FIXED_NEAREST; README, "Secure training"), but Adam divides by sqrt(vhat + eps) where SGD multiplies by lr, so a gradient error of
 * E ulps moves a step by about lr E 2^-f / sqrt(vhat + eps): negligible for gradients well above
 * the ulp, up to a good part of lr where they are a few ulps and eps is small (sqrt(1e-8) is 6.5
 * ulps at f = 16); choose eps well above the square of the gradients' error. Measured after 2
 * steps at lr 0.01, eps 1e-8 / 1e-6 / 1e-4: the transformer example (--small) 0.0235 / 0.0032 /
 * 4.1e-4 from the FIXED trainer, examples/mlp --small 0.0046 / 4.7e-4 / 1.2e-4;
 * tests/test_graph_adam.c (MLP 6-5-3, 4 steps) <= 3.2e-4.
 */
enum veil_optimizer {
    VEIL_OPTIMIZER_SGD,
    VEIL_OPTIMIZER_ADAM,
    VEIL_OPTIMIZER_ADAMW,
    VEIL_OPTIMIZER_COUNT
};

struct veil_compile_options {
    int frac_bits;        /* fixed-point fractional bits; default 16 */
    size_t tile;          /* elements per tile of elementwise protocols; 0: default (16384) */
    int microbatches;     /* inter-batch pipeline: k micro-batches of B/k rows in flight together
                             as independent sub-DAGs sharing the parameters (axis 0 of every
                             input is the batch; k must divide it); outputs, feeds and the loss
                             keep their names and shapes, training sums the k weight gradients
                             before one update (or keeps k replicas: dp_average). Graphs whose
                             ops mix rows along axis 0 (matmul, transpose, concat or reshape of
                             axis 0) are refused. Default 1 */
    int lookahead;        /* inter-linear pipeline: L >= 0 submits a linear layer (its weight
                             open included) only once the linear layer L + 1 places before it
                             has finished: at most L layers ahead (MPC-Pipe: 1; 0: each weight
                             opened at need). VEIL_LOOKAHEAD_UNBOUNDED (-1, the default): every
                             layer is submitted at once, priorities order the opens, memory is
                             bounded by the executor's budget alone. At most VEIL_LOOKAHEAD_MAX */
    int serialized;       /* 1: the blocking baseline: each node's messages and tasks complete
                             before the next node is submitted (no overlap across layers) */
    int weight_stationary; /* 1: one weight mask per session (inference): W - B opened once */
    int training;         /* 1: also build the backward pass and the update (veil_train_*) */
    /* SGD, used only when training: v = momentum v + g + weight_decay w; w -= lr v (optimizer
     * below: Adam and AdamW use lr and weight_decay too). Each must be representable at
     * frac_bits (at least 16 ulps when not 0), else veil_compile refuses it. */
    double lr;            /* learning rate in (0, 1]; default 0.01 */
    double momentum;      /* in [0, 1); default 0.9 */
    double weight_decay;  /* in [0, 0.1]; default 0 */
    /* Data parallelism over the micro-batches (enum veil_dp_average above). WEIGHTS needs
     * training = 1 and microbatches >= 2, else veil_compile refuses it saying what to change. */
    int dp_average;       /* enum veil_dp_average; default VEIL_DP_AVERAGE_GRADIENTS */
    int average_every;    /* WEIGHTS: replicas averaged after every K-th step, K >= 1; default 1 */
    /* The update rule (enum veil_optimizer above), used only when training; default SGD. ADAM and
     * ADAMW also read lr and weight_decay (momentum is SGD's alone) and: */
    int optimizer;
    double beta1;         /* in [0, 1); default 0.9 */
    double beta2;         /* in [0, 1); default 0.999; 1 - beta2 representable at frac_bits */
    double eps;           /* in (0, 1]; default 1e-8 */
};
/** The defaults above. */
void veil_compile_options_defaults(struct veil_compile_options *o);

/**
 * Checks and compiles g (which must have at least one output, or a loss when training) into a
 * plan: batch normalisation folded, nodes ordered, each temporary's last use known, task
 * priorities from the critical path. opts NULL: defaults. Returns an owned plan, or NULL with
 * veil_last_error() set (the graph's first error, or what the compiler refused and why).
 */
veil_plan_t *veil_compile(const veil_graph_t *g, const struct veil_compile_options *opts);
/** NULL-safe; sets *p to NULL. */
void veil_plan_destroy(veil_plan_t **p);
/** The plan digest: SHA-256 of the canonical plan (ops, shapes, owners, options); every party
 * computes the same one and the network handshake compares it. 32 bytes, borrowed. */
const uint8_t *veil_plan_digest(const veil_plan_t *p);
/** Number of outputs and the i-th one's name and element count. */
size_t veil_plan_output_count(const veil_plan_t *p);
const char *veil_plan_output_name(const veil_plan_t *p, size_t i);
size_t veil_plan_output_numel(const veil_plan_t *p, size_t i);
/** The party the i-th output is revealed to (VEIL_ALL_PARTIES for all). */
int veil_plan_output_to(const veil_plan_t *p, size_t i);
/** Inputs and parameters: count, name, owner, element count, and whether it is a parameter. */
size_t veil_plan_leaf_count(const veil_plan_t *p);
const char *veil_plan_leaf_name(const veil_plan_t *p, size_t i);
int veil_plan_leaf_owner(const veil_plan_t *p, size_t i);
size_t veil_plan_leaf_numel(const veil_plan_t *p, size_t i);
int veil_plan_leaf_is_param(const veil_plan_t *p, size_t i);
/**
 * The preprocessing one run of the plan consumes with nparties parties: number of items and the
 * bytes of correlated randomness the dealer sends (all parties together). Computed by recording
 * the run's protocol calls, not estimated.
 */
int veil_plan_preproc(const veil_plan_t *p, int nparties, uint64_t *items, uint64_t *dealer_bytes);
/** The same for `runs` consecutive runs of one session (1 to 1000000): a later run may need less
 * than the first (weights stationary: their masks are opened once per session). */
int veil_plan_preproc_runs(const veil_plan_t *p, int nparties, int runs, uint64_t *items,
                           uint64_t *dealer_bytes);
/**
 * THE OFFLINE PHASE AHEAD OF A SESSION: writes every party's preprocessing file for `runs` runs
 * (veil_run calls, or veil_train_step calls without the loss reveal) of plan p with nparties
 * parties in session `session` (the 16-byte id the session will have: veil-run --session HEX).
 * path_fmt holds one "%d", replaced by each party id (e.g. "/tmp/lenet-%d.pre"); each file is
 * written atomically, mode 0600, and bound to the session, the party, the party count and the
 * plan digest. The parties then open the session without a dealer, with material
 * VEIL_MATERIAL_FILE and their own file as preproc_path; a file of another session, party or
 * plan is refused at open, and a run beyond the runs generated fails naming the missing item.
 * Whoever calls this knows every party's material (the dealer's trust, exercised ahead of time):
 * hand each party its own file only. *items and *bytes (may be NULL) receive the items and the
 * bytes of correlated randomness a dealer would have sent for those runs.
 */
int veil_plan_preproc_files(const veil_plan_t *p, int nparties, int runs,
                            const uint8_t session[16], const char *path_fmt, uint64_t *items,
                            uint64_t *bytes);
/** Writes a human-readable listing of the plan (one line per step, with shapes) to f (a FILE*). */
void veil_plan_print(const veil_plan_t *p, void *file);

/* ---- data binding --------------------------------------------------------------------------- */

/** Values for one input or parameter, by name: numel doubles, row-major. */
struct veil_feed {
    const char *name;
    const double *values;
    size_t numel;
};

/* ---- plaintext executor --------------------------------------------------------------------- */

enum veil_plain_mode {
    VEIL_PLAIN_DOUBLE, /* IEEE doubles: the float model */
    VEIL_PLAIN_FIXED,  /* the ring arithmetic of the secure run, with exact (floor) truncation */
    VEIL_PLAIN_FIXED_NEAREST, /* the same with round-to-nearest truncation (ties up) for the
                          linear layers, norms, pools and SGD (the nonlinear approximations keep
                          their floor): an unbiased, deterministic stand-in for the secure
                          truncation, which rounds stochastically (up with probability equal to
                          the dropped fraction). Long training follows the secure run with it;
                          floor's -1/2 ulp bias per truncation can make it drift (LeNet-5: 10%
                          after one epoch with floor, 85.6% with nearest) */
    VEIL_PLAIN_MODE_COUNT
};

/**
 * Runs p on plaintext: every input and parameter must be fed (feeds may hold extra entries; a
 * missing one, or one with the wrong numel, is VEIL_ERR_INVAL naming it). outputs[i] receives
 * veil_plan_output_numel(p, i) doubles for every output (reveal targets ignored). In FIXED mode
 * the results are what the secure run computes, up to the secure truncation's 1-ulp error per
 * truncation. Single-threaded, no StarPU.
 */
int veil_plain_run(const veil_plan_t *p, enum veil_plain_mode mode, const struct veil_feed *feeds,
                   size_t nfeeds, double *const *outputs);

/* ---- range check: the step before deploying a model ----------------------------------------- */

/**
 * Nothing in the secure run checks secret values: a sum of products that passes the ring's limit
 * before its truncation, a reciprocal of a negative number or a layer-norm row of variance 300
 * give a wrong result silently. veil_plain_check_ranges runs the FIXED plaintext executor (the
 * secure run's ring arithmetic) on sample data the caller holds in the clear, the model owner
 * before deployment, and measures per node every quantity the secure run needs inside a domain:
 *   value         every node's output (and every leaf's feed) against the ring: |x| < 2^(62-f)
 *                 (inputs and parameters: the feed range +-2^(31-f), beyond which sharing
 *                 refuses them; constants: the encoder's 2^(62-f))
 *   accumulation  dense, conv2d, matmul: each output's sum of products before its truncation,
 *                 as a real, |acc| < 2^(62-2f) (2^30 at f = 16: the truncation's |x| < 2^62
 *                 words); `peak` also gives the largest partial sum (in the summation order);
 *                 the ring's sum is modular, so only the final sum decides the verdict
 *   product       scale by a non-integer, avgpool, global avgpool: the same for one product
 *   row spread    softmax: max - min per row, right for any spread within the ring, but terms
 *                 below the row maximum - 64 (beyond exp's domain) count as an exact 0 (NEAR);
 *                 layernorm: the mean's product needs a spread below 2^(62-f-28) (2^18)
 *   variance      layernorm: var + eps in the inverse square root's domain [2^-8, 2^8)
 *                 (constant rows, whose centred values are exactly 0, are exempt: they give beta)
 *   input         exp: [-112, 16.6) at f = 16, accurate over [-64, 0] (NEAR outside it); gelu:
 *                 |x| < 2^14 at f = 16; reciprocal, sqrt, rsqrt: [2^-f, 2^15)
 *   divisor, quotient  div: y in [2^-f, 2^15), |x / y| < 2^(61-2f) (2^29 at f = 16)
 * (domains: include/veil/graph.h's op comments, tasks/nonlinear.h, tasks/reciprocal_norm.h.)
 * Nothing leaves the caller's process: the check is plaintext, for the data owner's own use.
 */
enum veil_range_verdict {
    VEIL_RANGE_OK,        /* inside the domain, at least VEIL_RANGE_NEAR_BITS from its ends */
    VEIL_RANGE_NEAR,      /* inside, but within VEIL_RANGE_NEAR_BITS of an end (real data may
                             pass it) or outside an op's accurate range (exp above 0 or below
                             -64, softmax terms set to 0): right, or nearly, on this data */
    VEIL_RANGE_UNREACHED, /* not computed: an operand was not (it, or a node before it, OVER
                             in a way the fixed-point run cannot go past) */
    VEIL_RANGE_OVER,      /* outside the domain: the secure run computes a wrong value */
    VEIL_RANGE_VERDICT_COUNT
};
/** A value within this many bits (a factor 4) of a domain's end is NEAR. */
#define VEIL_RANGE_NEAR_BITS 2

/** One quantity of one node, over every run checked. Strings are static or borrowed from the
 * plan (valid while the plan lives). */
struct veil_range_check {
    const char *node;     /* the node's name */
    const char *op;       /* its op ("dense", "softmax", ...) */
    const char *quantity; /* "value", "accumulation", "product", "row spread", "variance",
                             "input", "divisor", "quotient" */
    double min, max;      /* the smallest and largest value of the quantity seen (reals) */
    double max_abs;       /* max(|min|, |max|) */
    double peak;          /* accumulations: the largest |partial sum|; otherwise max_abs */
    double lo, limit;     /* the domain [lo, limit); lo = -limit for a magnitude */
    double margin;        /* bits between what was seen and the nearest end of the domain
                             (log2(limit / max_abs) for a magnitude): negative when OVER,
                             HUGE_VAL when nothing was seen */
    size_t count;         /* values measured over every run (0: none) */
    int verdict;          /* enum veil_range_verdict */
    const char *note;     /* why, for a verdict other than OK; "" otherwise */
};

/** The checks of one plan, accumulated over runs (owned: veil_range_report_destroy). */
typedef struct veil_range_report veil_range_report_t;

/**
 * Runs p (its forward pass) on feeds in the FIXED plaintext mode and records every check above
 * into *report: a new report when *report is NULL, else the existing one of the same plan
 * (maxima over every run: call it once per batch of sample data). A node OVER does not stop the
 * run; a node the fixed-point run cannot compute (a reciprocal of a value outside its domain, a
 * leaf the encoder refuses) and the nodes that read it are UNREACHED for that run. Returns
 * VEIL_OK whatever the verdicts (read them from the report), or an error: NULL arguments, a
 * report of another plan (VEIL_ERR_INVAL), a missing or malformed feed (VEIL_ERR_INVAL naming
 * it), out of memory; a report passed in may then hold part of that run. Single-threaded, no
 * StarPU.
 */
int veil_plain_check_ranges(const veil_plan_t *p, const struct veil_feed *feeds, size_t nfeeds,
                            veil_range_report_t **report);
/** Number of checks (rows; a node has one to three) and the i-th, in plan order. */
size_t veil_range_report_count(const veil_range_report_t *r);
const struct veil_range_check *veil_range_report_get(const veil_range_report_t *r, size_t i);
/** Runs recorded. */
size_t veil_range_report_runs(const veil_range_report_t *r);
/** The worst verdict (enum veil_range_verdict order: OVER worst), and how many checks have v. */
int veil_range_report_worst(const veil_range_report_t *r);
size_t veil_range_report_tally(const veil_range_report_t *r, int v);
/** "OK", "NEAR", "UNREACHED", "OVER" ("?" out of range). */
const char *veil_range_verdict_name(int v);
/** Writes the table (one line per check: node, op, quantity, min, max, domain, margin in bits,
 * verdict; a note line under each one that is not OK) and a summary line to f (a FILE*). */
void veil_range_report_print(const veil_range_report_t *r, void *file);
/** NULL-safe; sets *r to NULL. */
void veil_range_report_destroy(veil_range_report_t **r);

/* ---- plaintext trainer ---------------------------------------------------------------------- */

/**
 * A plaintext trainer over a plan compiled with training = 1: it holds the parameters (bound
 * once), their SGD velocities (Adam: both moments, and the step count) and last gradients, and runs forward + backward + update per batch
 * in DOUBLE or FIXED mode (FIXED: the ring operations the secure training performs, with floor
 * truncation). The oracle of secure training and a way to train a model in the clear.
 */
typedef struct veil_plain_trainer veil_plain_trainer_t;

/**
 * New trainer for p (compiled with training = 1; borrowed: it must outlive the trainer) in mode.
 * params feeds every parameter by name (values copied, encoded in FIXED mode; a feed naming an
 * input is refused: inputs come with each step; unknown names are ignored). Velocities start at
 * 0. Returns an owned trainer, or NULL with veil_last_error(): a plan not compiled for training,
 * a missing or malformed parameter feed (VEIL_ERR_INVAL naming it), a value FIXED mode cannot
 * encode (VEIL_ERR_RANGE), out of memory.
 */
veil_plain_trainer_t *veil_plain_trainer_new(const veil_plan_t *p, enum veil_plain_mode mode,
                                             const struct veil_feed *params, size_t nparams);

/**
 * One training step (SGD, Adam or AdamW: the plan's optimizer) on one batch: binds every input (feeds by name: images and labels; a missing one
 * is VEIL_ERR_INVAL naming it, a feed naming a parameter is refused), runs the forward pass, the
 * backward pass and every parameter's update. *loss (loss may be NULL) receives the batch loss of
 * the forward pass, before the update (FIXED mode: as the executor encoded it, to 2^-f). A
 * binding error leaves the parameters untouched. VEIL_OK or an error status.
 */
int veil_plain_trainer_step(veil_plain_trainer_t *t, const struct veil_feed *feeds, size_t nfeeds,
                            double *loss);

/**
 * Forward pass only with the current parameters (inference during or after training), as
 * veil_plain_run: outputs[i] receives veil_plan_output_numel(p, i) doubles for every output.
 * Inputs read only by the loss (the labels) may be left out. Parameters are not changed.
 */
int veil_plain_trainer_run(veil_plain_trainer_t *t, const struct veil_feed *feeds, size_t nfeeds,
                           double *const *outputs);

/** The current value of parameter name (numel doubles, decoded in FIXED mode) into out.
 * VEIL_ERR_INVAL when the plan has no parameter of that name. */
int veil_plain_trainer_param(const veil_plain_trainer_t *t, const char *name, double *out);

/** The gradient of parameter name that the last step applied (numel doubles) into out, for tests
 * and diagnostics. VEIL_ERR_INVAL for an unknown parameter, VEIL_ERR_STATE before the first step
 * or for a parameter that does not reach the loss (it has no gradient). */
int veil_plain_trainer_grad(const veil_plain_trainer_t *t, const char *name, double *out);

/** Frees the trainer; NULL-safe; sets *t to NULL. The plan is not freed. */
void veil_plain_trainer_destroy(veil_plain_trainer_t **t);

#ifdef __cplusplus
}
#endif
#endif

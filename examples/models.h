/*
 * models.h — what the model examples (mlp, lenet, vgg16, resnet, transformer) share: graph builders for
 * the four networks with deterministic synthetic weights and inputs, and the driver that runs a
 * built model securely between the processes veil-run starts and checks the revealed output
 * against the plaintext executor. Parameters (batch-norm statistics included) belong to party 0,
 * the model owner; inputs to party 1, the data owner, who alone receives the outputs. Compiled
 * into each example through a convenience library; not part of the installed API.
 */
#ifndef VEIL_EXAMPLES_MODELS_H
#define VEIL_EXAMPLES_MODELS_H

#include "veil.h"

#include <stddef.h>

#define MODEL_OWNER 0 /* the party that owns every parameter */
#define DATA_OWNER 1  /* the party that owns the inputs and receives the outputs */

/* How one leaf's synthetic values are drawn: uniform in [lo, hi), from a generator seeded by the
 * leaf's name (and, for inputs, the run number), so every process draws the same values. */
struct model_leaf {
    char name[64];
    size_t numel;
    int is_input;
    double lo, hi;
    size_t onehot; /* > 0: a labels input, one-hot rows of this many classes (lo, hi unused) */
};

/* A built model: the graph (owned) and its leaves' recipes. */
struct model {
    char name[32];
    char shape[96]; /* a human description of the size: "3x32x32, width 1/16" */
    veil_graph_t *g;
    struct model_leaf *leaves;
    size_t nleaves, cap;
    double tol; /* the largest accepted |secure - plaintext FIXED| per output element */
    double train_tol; /* training: the largest accepted |secure - plaintext| per parameter
                         element after one momentum-free step (example_train.c scales it by the
                         steps, weighted by momentum's geometric sums) */
    int err;    /* VEIL_ERR_NOMEM when a leaf could not be recorded */
    int no_bn;  /* training: batch norms are left out (Veil folds them into the convolution,
                   an inference form with no gradient); such a convolution gets a bias, and its
                   weights the scale the batch norm's gamma would give (model_resnet) */
};

/* Sizes. Zeros take each model's default (the figures in brackets). */
struct model_opts {
    int batch;     /* images (mlp, vgg16, resnet) or sequences (transformer) per run [1] */
    int width_div; /* vgg16 / resnet: every channel count divided by this [1] */
    int big;       /* vgg16: ImageNet shapes; resnet: ResNet-50; transformer: BERT-large */
    size_t mlp[8]; /* mlp: layer widths, input first [784 128 128 10] */
    int mlp_n;     /* number of entries of mlp */
    size_t hidden, heads, seq, ff; /* transformer [64 4 16 256]; big: [1024 16 512 4096] */
    int train; /* 1: the output feeds a softmax cross-entropy loss against one-hot labels of the
                  data owner (input "labels", one row per output row; the transformer classifies
                  each token over the H features) instead of being revealed */
};

/* Builders: fill m (zeroed by the caller) with the graph and its leaves; the output (logits, or
 * the encoder's output) is revealed to DATA_OWNER, or with o->train becomes the loss's logits. Return VEIL_OK, VEIL_ERR_NOMEM, or
 * VEIL_ERR_INVAL for a transformer whose heads (1..64) do not divide H; a graph error (a shape
 * that does not fit) stays on the graph and veil_compile reports it. */
int model_mlp(struct model *m, const struct model_opts *o);
int model_lenet(struct model *m, const struct model_opts *o);
int model_vgg16(struct model *m, const struct model_opts *o);
int model_resnet(struct model *m, const struct model_opts *o);
int model_transformer(struct model *m, const struct model_opts *o);
/* Frees the graph and the leaves; m may be reused after. */
void model_free(struct model *m);

/*
 * The feeds of run `run` (0, 1, ...) for the leaves party `who` owns, or for every leaf when who
 * is -1 (what only a demonstration can do: it made up every party's data); the parameter leaves
 * only with with_params (a session shares its parameters once: later runs and steps ignore their
 * feeds, and VGG16's 15 M weights cost the owner tens of milliseconds per run to make up). *feeds
 * is an owned array of *n feeds; free it with model_feeds_free.
 */
int model_feeds(const struct model *m, int who, int run, int with_params, struct veil_feed **feeds,
                size_t *n);
void model_feeds_free(struct veil_feed **feeds, size_t n);

/* Driver options. */
struct example_opts {
    int runs;           /* secure runs in the session [2]; training: SGD steps */
    int verbose;        /* print the plan */
    const char *config; /* a session configuration file (parties on real hosts); NULL: the
                           environment veil-run sets */
    /* pipeline settings (veil_compile_options): micro-batches [1], look-ahead
     * [VEIL_LOOKAHEAD_UNBOUNDED], serialized baseline [0] */
    int microbatches;
    int lookahead;
    int serialized;
    int optimizer;      /* training: enum veil_optimizer [SGD] (--optimizer sgd|adam|adamw) */
    int cold;           /* no veil_party_prepare, the first run or step shares the parameters
                           itself [0] (--cold) */
    /* the offline phase ahead (inference): with preproc set, the parties read their correlated
     * randomness from these files ("%d": the party id) and the session has no dealer; in
     * `preproc` mode (write_preproc) the process writes them for `parties` parties, session
     * id `session` (32 hex digits) and `runs` runs, and exits */
    const char *preproc;
    int write_preproc;
    int parties;
    const char *session;
};

/*
 * Compiles m and runs it securely as this process (party or dealer, from the environment
 * veil-run sets): every process makes the same calls; the data owner then checks each run's
 * revealed output against veil_plain_run in FIXED mode (failing beyond m->tol) and reports the
 * DOUBLE error; every process prints its costs and, last, a line of key=value pairs. Returns the
 * process's exit status: 0, 1 (a failed run or a disagreement).
 */
int example_run(struct model *m, const struct model_opts *mo, const struct example_opts *eo);

/*
 * The training driver (a model built with mo->train): compiles for training, runs eo->runs SGD
 * steps securely (each step's batch is run number `step` of model_feeds; the data owner learns
 * each step's loss through the opt-in loss reveal), then reveals every parameter to the model
 * owner, who checks them against the plaintext trainer in FIXED_NEAREST mode on the same data
 * (failing beyond m->train_tol times the momentum-weighted step count); every process prints its per-step costs and a last key=value
 * line (step_online_s, bytes_sent, rounds; with tracing on, the last step's busy fields as
 * example_run's: compute_s, network_s, compute_pct, network_pct, overlap_pct, overlap_share,
 * stretch). Returns the process's exit status: 0, 1 (a failed step or a disagreement).
 */
int example_train(struct model *m, const struct model_opts *mo, const struct example_opts *eo);
/* The warm first run or step (veil_party_prepare): the parameters shared, and the first run's share
 * buffers reserved, before it, from run 0's feeds (the inputs among them are ignored); prints what
 * it cost, naming the first "run" or "step"; *secs receives its seconds. VEIL_OK or the error
 * (printed). */
int example_prepare(const struct model *m, veil_party_t *pt, const char *first, double *secs);

/* Compiles m (for inference, weight-stationary, or with training) with eo's pipeline settings and
 * opens this process's side of the session; NULL after printing why. *plan is the compiled plan
 * (owned by the caller; NULL on failure). Also makes stdout line-buffered (veil-run forwards
 * line by line). */
veil_party_t *example_open(const struct model *m, const struct example_opts *eo, int training,
                           veil_plan_t **plan);

/*
 * With tracing on (VEIL_TRACE), the profile of pt's last run or step into *prof and a line
 * "WHAT INDEX: compute C%, network N%, overlap O%, idle I%, overlap share S, stretch X" on stdout
 * ("run 3", "step 3"); returns 1, or 0 (nothing printed, *prof untouched) when the party does not
 * trace.
 */
int example_print_busy(const veil_party_t *pt, const char *what, int index,
                       struct veil_run_profile *prof);
/* Appends prof's fields to a key=value line on stdout: " compute_s=.. network_s=.. compute_pct=..
 * network_pct=.. overlap_pct=.. overlap_share=.. stretch=.." (the names bench/suite.sh reads). */
void example_print_busy_fields(const struct veil_run_profile *prof);

/*
 * The offline phase ahead of an inference session: compiles m as example_open does and writes
 * every party's preprocessing file (eo->preproc, "%d": the party id) for eo->runs runs of a
 * session of eo->parties parties with id eo->session, timed; prints the command that runs the
 * session from them and a key=value line with offline_s. Returns the exit status (0, 1).
 */
int example_preproc(const struct model *m, const struct example_opts *eo);

/* Runs the built model as the options ask: example_preproc in preproc mode, example_train with
 * mo->train, else example_run. */
int example_main(struct model *m, const struct model_opts *mo, const struct example_opts *eo);

/* Builds the model with build (a model_* builder), runs it with example_main and frees it: the
 * tail of every model example's main. Returns the process's exit status. */
int example_build_and_run(const char *prog, int (*build)(struct model *, const struct model_opts *),
                          const struct model_opts *mo, const struct example_opts *eo);

/* The command line every model example takes; flags says which optional options exist. */
enum { CLI_WIDTH = 1, CLI_MLP = 2, CLI_TRANSFORMER = 4, CLI_TRAIN = 8 };
struct example_cli {
    const char *prog;       /* "vgg16" */
    const char *summary;    /* one line for --help */
    const char *small_help; /* what --small means */
    const char *big_flag;   /* "--imagenet", or NULL */
    const char *big_help;
    int flags;
};
/* Parses argv into mo, eo and *small (1 when --small was given); with CLI_TRAIN a first argument
 * "train" sets mo->train ("infer", the default, may be written too); a first argument "preproc"
 * sets eo->write_preproc. Returns -1 to go on, or the exit status: 0 after --help, 2 after a
 * message for bad usage. */
int example_parse(const struct example_cli *c, int argc, char **argv, struct model_opts *mo,
                  struct example_opts *eo, int *small);

/* Parses a session id of 32 hex digits into sid (NULL: only checks); -1 if it is not one. */
int example_parse_session(const char *hex, uint8_t sid[16]);

/* Parses a decimal integer in [lo, hi] into *out; -1 if it is not one. */
int example_parse_int(const char *s, long lo, long hi, long *out);

#endif

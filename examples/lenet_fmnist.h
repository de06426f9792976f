/*
 * lenet_fmnist.h — what the files of the main example share: LeNet-5's parameters and graph,
 * the command-line options, the weights and dataset helpers, progress lines, and the modes'
 * entry points (lenet_fmnist_infer.c: infer, check, its range check and preproc;
 * lenet_fmnist_train.c: plaintext and secure training; lenet_fmnist.c: the command line).
 */
#ifndef VEIL_EXAMPLE_LENET_FMNIST_H
#define VEIL_EXAMPLE_LENET_FMNIST_H

#include "veil.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define MODEL "lenet5-fmnist"
#define CLASSES 10
#define SIDE 28
#define PIXELS (SIDE * SIDE)
#define DEFAULT_DATA "/usr/share/datasets/fashion-mnist"
#define DEFAULT_WEIGHTS "lenet5-fmnist.safetensors"
#define NPARAMS 10

/* The parameters: name, shape (lenet_fmnist_common.c). */
struct lenet_param {
    const char *name;
    int ndim;
    size_t dims[4];
};
extern const struct lenet_param lenet_params[NPARAMS];

struct opts {
    const char *mode;
    const char *data;
    const char *weights;
    size_t images; /* infer, check: test images (0: all) */
    size_t passes; /* infer, preproc: times the session goes over the images (default 1) */
    size_t batch;
    int epochs;
    double lr;
    size_t limit; /* train: training images (0: all) */
    int weight_stationary;
    int quiet;
    const char *config; /* infer: a session configuration file (real hosts); NULL: veil-run's */
    int secure;         /* train: secure training between the parties (under veil-run) */
    size_t loss_every;  /* secure training: reveal the batch loss to party 1 every k steps */
    const char *checkpoint; /* secure training: checkpoint file pattern ("%d": process id) */
    size_t checkpoint_every;
    int resume;             /* secure training: start from the checkpoint */
    const char *preproc;    /* infer: preprocessing files ("%d": party id), no dealer; preproc:
                               where to write them */
    int parties;            /* preproc: the session's party count */
    const char *session;    /* preproc: the session id (32 hex digits) */
    const char *onnx;        /* train: also write the trained model there as ONNX */
    const char *predictions; /* infer: where the data owner writes the revealed classes;
                                check: the file to compare with the plaintext model */
    int check_ranges;        /* check: the range check of the model on sample images instead */
};

/* Elements of parameter i. */
size_t param_numel(int i);
/* LeNet-5 for a batch, with its training pass (and loss) or not; compile prints why it failed. */
veil_graph_t *lenet_graph(size_t batch, int training);
veil_plan_t *lenet_compile(size_t batch, int training, const struct opts *o);
double now_s(void);

/* Reads every parameter into w[i] (allocated); 0, or 1 after printing why. */
int load_weights(const char *path, double **w);
void free_weights(double **w);
/* f[0..NPARAMS) = the parameters' feeds. */
void weight_feeds(double **w, struct veil_feed *f);
int save_weights(const char *path, double **w);
/* The model with weights w as ONNX (train --onnx); 0, or 1 after printing why. */
int save_onnx(const char *path, double **w);
/* He-uniform initialisation from the fixed seed, biases zero; lenet_rng_reset restarts it. */
int init_weights(double **w);
void lenet_rng_reset(void);
uint64_t rng(void);

/* A Fashion-MNIST set ("train" or "t10k") from dir; NULL after printing why. */
veil_dataset_t *load_set(const char *dir, const char *prefix);
/* Images [first, first + count) of d (in order's order if given) as a batch, zero-padded. */
void fill_batch(const veil_dataset_t *d, const size_t *order, size_t first, size_t count,
                size_t batch, double *x, double *onehot);
/* The visiting order of epoch e from the joint seed. */
int shuffle(const uint8_t seed[16], int epoch, size_t *order, size_t n);
/* Plaintext predictions of the batch x with plan p; feeds[0..NPARAMS) hold the weights. */
int plain_predict(const veil_plan_t *p, enum veil_plain_mode mode, struct veil_feed *feeds,
                  double *x, double *pred);

/* Progress lines: rewritten in place on a terminal, a plain line every few seconds otherwise
 * (a log file, a pipe, veil-run), nothing with --quiet. */
enum { PROGRESS_OFF, PROGRESS_TTY, PROGRESS_LINES };
int progress_mode(int quiet);
void progress(int mode, int last, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Compiles LeNet-5 and opens this process's side of the session; NULL after printing why. */
veil_party_t *open_session(const struct opts *o, int training, veil_plan_t **p);

int infer(const struct opts *o);
int check(const struct opts *o);
int check_ranges(const struct opts *o);
int preproc(const struct opts *o);
int train(const struct opts *o);
int train_secure(const struct opts *o);

#endif

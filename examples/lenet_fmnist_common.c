/*
 * lenet_fmnist_common.c — the pieces every mode of the main example uses: LeNet-5's parameters
 * and graph, the weights file, the Fashion-MNIST sets and batches, the seeded initialisation
 * and visiting orders, progress lines and opening a party's session.
 */
#include "config.h"
#include "lenet_fmnist.h"
#include "veil/onnx.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* The parameters: name, shape. */
const struct lenet_param lenet_params[NPARAMS] = {
    {"conv1.weight", 4, {6, 1, 5, 5}}, {"conv1.bias", 1, {6}},
    {"conv2.weight", 4, {16, 6, 5, 5}}, {"conv2.bias", 1, {16}},
    {"fc1.weight", 2, {400, 120}},     {"fc1.bias", 1, {120}},
    {"fc2.weight", 2, {120, 84}},      {"fc2.bias", 1, {84}},
    {"fc3.weight", 2, {84, 10}},       {"fc3.bias", 1, {10}},
};

size_t param_numel(int i)
{
    size_t n = 1;
    for (int d = 0; d < lenet_params[i].ndim; d++)
        n *= lenet_params[i].dims[d];
    return n;
}

/*
 * LeNet-5 (the Caffe/PyTorch variant with ReLU and max pooling): conv 5x5 (6, pad 2), pool,
 * conv 5x5 (16), pool, dense 400-120-84-10. Images are owned by party 1, the weights by party 0.
 * Inference reveals the predicted class to party 1; training ends in the loss with labels.
 */
veil_graph_t *lenet_graph(size_t batch, int training)
{
    veil_graph_t *g = veil_graph_new(MODEL);
    veil_node_t *p[NPARAMS];
    for (int i = 0; i < NPARAMS; i++)
        p[i] = veil_param(g, lenet_params[i].name, 0, lenet_params[i].ndim, lenet_params[i].dims);
    size_t dx[4] = {batch, 1, SIDE, SIDE};
    veil_node_t *x = veil_input(g, "image", 1, 4, dx);
    x = veil_maxpool2d(g, "pool1", veil_relu(g, "relu1", veil_conv2d(g, "conv1", x, p[0], p[1],
                                                                     1, 2)),
                       2, 2);
    x = veil_maxpool2d(g, "pool2", veil_relu(g, "relu2", veil_conv2d(g, "conv2", x, p[2], p[3],
                                                                     1, 0)),
                       2, 2);
    x = veil_flatten(g, "flat", x);
    x = veil_relu(g, "relu3", veil_dense(g, "fc1", x, p[4], p[5]));
    x = veil_relu(g, "relu4", veil_dense(g, "fc2", x, p[6], p[7]));
    veil_node_t *logits = veil_dense(g, "fc3", x, p[8], p[9]);
    if (training) {
        size_t dl[2] = {batch, CLASSES};
        veil_softmax_cross_entropy(g, "loss", logits, veil_input(g, "label", 1, 2, dl));
    }
    /* the class, to party 1: a run of the training plan is an inference of the current model */
    veil_reveal(g, veil_argmax(g, "class", logits), 1);
    return g;
}

veil_plan_t *lenet_compile(size_t batch, int training, const struct opts *o)
{
    veil_graph_t *g = lenet_graph(batch, training);
    struct veil_compile_options co;
    veil_compile_options_defaults(&co);
    co.training = training;
    co.weight_stationary = o->weight_stationary;
    if (training) {
        co.lr = o->lr;
        co.momentum = 0.9;
    }
    veil_plan_t *p = veil_compile(g, &co);
    if (!p)
        fprintf(stderr, "lenet_fmnist: %s\n", veil_last_error());
    veil_graph_destroy(&g);
    return p;
}

double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- weights --------------------------------------------------------------------------------- */

/* Reads every parameter from the weights file into w[i] (param_numel(i) doubles each). */
int load_weights(const char *path, double **w)
{
    veil_weights_t *f = veil_weights_open(path);
    if (!f) {
        fprintf(stderr, "lenet_fmnist: %s\n", veil_last_error());
        if (access(path, F_OK) != 0)
            fprintf(stderr, "lenet_fmnist: make it with: lenet_fmnist train --weights %s\n", path);
        return 1;
    }
    int rc = veil_weights_check_model(f, MODEL);
    for (int i = 0; i < NPARAMS && rc == VEIL_OK; i++) {
        w[i] = malloc(param_numel(i) * sizeof(double));
        const struct lenet_param *lp = &lenet_params[i];
        rc = w[i] ? veil_weights_read_f64(f, lp->name, lp->ndim, lp->dims, w[i])
                  : VEIL_ERR_NOMEM;
    }
    if (rc != VEIL_OK)
        fprintf(stderr, "lenet_fmnist: %s\n", veil_last_error());
    veil_weights_destroy(&f);
    return rc == VEIL_OK ? 0 : 1;
}

void free_weights(double **w)
{
    for (int i = 0; i < NPARAMS; i++) {
        free(w[i]);
        w[i] = NULL;
    }
}

void weight_feeds(double **w, struct veil_feed *f)
{
    for (int i = 0; i < NPARAMS; i++)
        f[i] = (struct veil_feed){.name = lenet_params[i].name, .values = w[i],
                                  .numel = param_numel(i)};
}

veil_dataset_t *load_set(const char *dir, const char *prefix)
{
    char img[4096], lab[4096];
    snprintf(img, sizeof img, "%s/%s-images-idx3-ubyte.gz", dir, prefix);
    snprintf(lab, sizeof lab, "%s/%s-labels-idx1-ubyte.gz", dir, prefix);
    veil_dataset_t *d = veil_dataset_load_idx(img, lab, 1);
    if (!d)
        fprintf(stderr, "lenet_fmnist: %s\n", veil_last_error());
    else if (veil_dataset_rows(d) != SIDE || veil_dataset_cols(d) != SIDE) {
        fprintf(stderr, "lenet_fmnist: %s: %zu x %zu images; LeNet-5 here takes 28 x 28\n", img,
                veil_dataset_rows(d), veil_dataset_cols(d));
        veil_dataset_destroy(&d);
    }
    return d;
}

/* Images [first, first + count) of d (count <= batch) as a batch; the rest is zero padding. */
void fill_batch(const veil_dataset_t *d, const size_t *order, size_t first, size_t count,
                       size_t batch, double *x, double *onehot)
{
    memset(x, 0, batch * PIXELS * sizeof *x);
    if (onehot)
        memset(onehot, 0, batch * CLASSES * sizeof *onehot);
    for (size_t b = 0; b < count; b++) {
        size_t idx = order ? order[first + b] : first + b;
        veil_dataset_image_f64(d, idx, x + b * PIXELS);
        if (onehot)
            onehot[b * CLASSES + veil_dataset_labels(d)[idx]] = 1.0;
    }
}

/* Plaintext predictions of images [first, first + count) with plan p (batch b). */
int plain_predict(const veil_plan_t *p, enum veil_plain_mode mode, struct veil_feed *feeds,
                         double *x, double *pred)
{
    feeds[NPARAMS] = (struct veil_feed){.name = "image", .values = x,
                                        .numel = veil_plan_output_numel(p, 0) * PIXELS};
    double *outs[1] = {pred};
    return veil_plain_run(p, mode, feeds, NPARAMS + 1, outs);
}

/*
 * Progress of long runs: a line rewritten in place when stderr is a terminal; otherwise (a log
 * file, a pipe, veil-run, which forwards each process's output line by line) a full line every
 * 5 seconds and at the end, so that a redirected run shows it is alive.
 */
int progress_mode(int quiet)
{
    return quiet ? PROGRESS_OFF : isatty(2) ? PROGRESS_TTY : PROGRESS_LINES;
}

/* Shows one progress message (printf-style); last: the final one of the run. */
void progress(int mode, int last, const char *fmt, ...)
{
    static double shown;
    if (mode == PROGRESS_OFF || (mode == PROGRESS_LINES && !last && now_s() - shown < 5))
        return;
    shown = now_s();
    va_list ap;
    va_start(ap, fmt);
    fputs(mode == PROGRESS_TTY ? "\r  " : "  ", stderr);
    vfprintf(stderr, fmt, ap);
    fputs(mode == PROGRESS_TTY && !last ? "   " : "\n", stderr);
    va_end(ap);
}

/* Compiles LeNet-5 for batch (with the training pass or not) and opens this process's side of
 * the session (o->config, or the environment veil-run sets); NULL after printing why. */
veil_party_t *open_session(const struct opts *o, int training, veil_plan_t **p)
{
    if (!(*p = lenet_compile(o->batch, training, o)))
        return NULL;
    struct veil_party_options po;
    veil_party_options_defaults(&po);
    po.config_path = o->config;
    if (o->preproc && !training) { /* the offline phase was run ahead: no dealer */
        po.material = VEIL_MATERIAL_FILE;
        po.preproc_path = o->preproc;
    }
    veil_party_t *me = veil_party_open(*p, &po);
    if (!me) {
        fprintf(stderr, "lenet_fmnist: %s\n", veil_last_error());
        veil_plan_destroy(p);
    }
    return me;
}

#define RNG_SEED UINT64_C(0x2545f4914f6cdd1d)
static uint64_t rng_state = RNG_SEED;

void lenet_rng_reset(void)
{
    rng_state = RNG_SEED;
}

uint64_t rng(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static double uniform(void)
{
    return (double)(rng() >> 11) / 9007199254740992.0;
}

/* He-uniform initialisation (fan-in), biases zero: deterministic for a given seed. */
int init_weights(double **w)
{
    for (int i = 0; i < NPARAMS; i++) {
        w[i] = calloc(param_numel(i), sizeof(double));
        if (!w[i])
            return 1;
        if (lenet_params[i].ndim == 1)
            continue;
        const struct lenet_param *lp = &lenet_params[i];
        size_t fan_in = lp->ndim == 4 ? param_numel(i) / lp->dims[0] : lp->dims[0];
        double a = sqrt(6.0 / (double)fan_in);
        for (size_t k = 0; k < param_numel(i); k++)
            w[i][k] = a * (2.0 * uniform() - 1.0);
    }
    return 0;
}

int save_weights(const char *path, double **w)
{
    struct veil_weights_tensor t[NPARAMS];
    memset(t, 0, sizeof t);
    for (int i = 0; i < NPARAMS; i++) {
        t[i].name = lenet_params[i].name;
        t[i].dtype = VEIL_DTYPE_F64;
        t[i].ndim = lenet_params[i].ndim;
        memcpy(t[i].dims, lenet_params[i].dims, sizeof lenet_params[i].dims);
        t[i].data = w[i];
    }
    if (veil_weights_write(path, MODEL, t, NPARAMS) != VEIL_OK) {
        fprintf(stderr, "lenet_fmnist: %s\n", veil_last_error());
        return 1;
    }
    return 0;
}

/* The model as ONNX (veil_onnx_write): conv, relu, pool twice, flatten, three dense layers with
 * relus between, the class (ArgMax); one image per run (veil-onnx run --batch B for more). */
int save_onnx(const char *path, double **w)
{
    struct veil_onnx_layer l[13];
    memset(l, 0, sizeof l);
    static const char *const conv[2] = {"conv1", "conv2"}, *const fc[3] = {"fc1", "fc2", "fc3"},
                             *const pool[2] = {"pool1", "pool2"},
                             *const relu[4] = {"relu1", "relu2", "relu3", "relu4"};
    int k = 0;
    for (int c = 0; c < 2; c++) {
        l[k++] = (struct veil_onnx_layer){VEIL_ONNX_LAYER_CONV, conv[c], w[2 * c], w[2 * c + 1],
                                          4, {0}, 0, 1, c == 0 ? 2 : 0};
        memcpy(l[k - 1].dims, lenet_params[2 * c].dims, sizeof lenet_params[0].dims);
        l[k++] = (struct veil_onnx_layer){.kind = VEIL_ONNX_LAYER_RELU, .name = relu[c]};
        l[k++] = (struct veil_onnx_layer){.kind = VEIL_ONNX_LAYER_MAXPOOL, .name = pool[c],
                                          .kernel = 2, .stride = 2};
    }
    l[k++] = (struct veil_onnx_layer){.kind = VEIL_ONNX_LAYER_FLATTEN, .name = "flat"};
    for (int f = 0; f < 3; f++) {
        const struct lenet_param *p = &lenet_params[4 + 2 * f];
        l[k++] = (struct veil_onnx_layer){VEIL_ONNX_LAYER_GEMM, fc[f], w[4 + 2 * f],
                                          w[5 + 2 * f], 2, {p->dims[0], p->dims[1]}, 0, 0, 0};
        if (f < 2)
            l[k++] = (struct veil_onnx_layer){.kind = VEIL_ONNX_LAYER_RELU, .name = relu[2 + f]};
    }
    l[k++] = (struct veil_onnx_layer){.kind = VEIL_ONNX_LAYER_ARGMAX, .name = "class"};
    size_t dims[4] = {1, 1, SIDE, SIDE};
    if (veil_onnx_write(path, "image", 4, dims, l, (size_t)k, "class") != VEIL_OK) {
        fprintf(stderr, "lenet_fmnist: %s\n", veil_last_error());
        return 1;
    }
    return 0;
}

/* The visiting order of epoch e: a Fisher-Yates shuffle driven by the PRG of (seed, e). */
int shuffle(const uint8_t seed[16], int epoch, size_t *order, size_t n)
{
    uint8_t es[16];
    veil_prg_t *prg = NULL;
    if (veil_seed_derive(seed, UINT64_C(0x5348554646), (uint64_t)epoch, es) != VEIL_OK ||
        !(prg = veil_prg_new(es)))
        return 1;
    for (size_t i = 0; i < n; i++)
        order[i] = i;
    for (size_t i = n - 1; i > 0; i--) {
        uint64_t r;
        veil_prg_fill(prg, &r, 1);
        size_t j = (size_t)(r % (i + 1)), t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    veil_prg_destroy(&prg);
    return 0;
}

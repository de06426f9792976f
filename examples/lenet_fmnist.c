/*
 * lenet_fmnist — LeNet-5 on Fashion-MNIST, Veil's main example.
 *
 *   lenet_fmnist train [options]   trains LeNet-5 in plaintext (the plaintext executor in double
 *                                  precision: SGD with momentum) and writes the weights file;
 *   lenet_fmnist infer [options]   one process of a secure inference session, started by
 *                                  veil-run: party 0 owns the model (it reads the weights file),
 *                                  party 1 owns the images (it reads the test set), the dealer
 *                                  deals correlated randomness; party 1 learns the predicted
 *                                  class of each image and nothing else, party 0 learns nothing.
 *
 *   build/examples/lenet_fmnist train && \
 *   build/tools/veil-run -n 2 --dealer -- build/examples/lenet_fmnist infer
 *
 * After the secure run, party 1 checks its predictions against the plaintext fixed-point and
 * floating-point models. Only this demonstration can do that: it reads the weights file too,
 * which a real data owner never sees. Party 1's last line is machine-readable key=value pairs.
 */
#include "config.h"
#include "veil.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MODEL "lenet5-fmnist"
#define CLASSES 10
#define SIDE 28
#define PIXELS (SIDE * SIDE)
#define DEFAULT_DATA "/usr/share/datasets/fashion-mnist"
#define DEFAULT_WEIGHTS "lenet5-fmnist.safetensors"
#define NPARAMS 10

/* The parameters: name, shape. */
static const struct {
    const char *name;
    int ndim;
    size_t dims[4];
} params[NPARAMS] = {
    {"conv1.weight", 4, {6, 1, 5, 5}}, {"conv1.bias", 1, {6}},
    {"conv2.weight", 4, {16, 6, 5, 5}}, {"conv2.bias", 1, {16}},
    {"fc1.weight", 2, {400, 120}},     {"fc1.bias", 1, {120}},
    {"fc2.weight", 2, {120, 84}},      {"fc2.bias", 1, {84}},
    {"fc3.weight", 2, {84, 10}},       {"fc3.bias", 1, {10}},
};

static size_t numel(int i)
{
    size_t n = 1;
    for (int d = 0; d < params[i].ndim; d++)
        n *= params[i].dims[d];
    return n;
}

struct opts {
    const char *mode;
    const char *data;
    const char *weights;
    size_t images; /* infer: test images (0: all) */
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
};

/*
 * LeNet-5 (the Caffe/PyTorch variant with ReLU and max pooling): conv 5x5 (6, pad 2), pool,
 * conv 5x5 (16), pool, dense 400-120-84-10. Images are owned by party 1, the weights by party 0.
 * Inference reveals the predicted class to party 1; training ends in the loss with labels.
 */
static veil_graph_t *lenet(size_t batch, int training)
{
    veil_graph_t *g = veil_graph_new(MODEL);
    veil_node_t *p[NPARAMS];
    for (int i = 0; i < NPARAMS; i++)
        p[i] = veil_param(g, params[i].name, 0, params[i].ndim, params[i].dims);
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

static veil_plan_t *compile(size_t batch, int training, const struct opts *o)
{
    veil_graph_t *g = lenet(batch, training);
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

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- weights --------------------------------------------------------------------------------- */

/* Reads every parameter from the weights file into w[i] (numel(i) doubles each, allocated). */
static int load_weights(const char *path, double **w)
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
        w[i] = malloc(numel(i) * sizeof(double));
        rc = w[i] ? veil_weights_read_f64(f, params[i].name, params[i].ndim, params[i].dims, w[i])
                  : VEIL_ERR_NOMEM;
    }
    if (rc != VEIL_OK)
        fprintf(stderr, "lenet_fmnist: %s\n", veil_last_error());
    veil_weights_destroy(&f);
    return rc == VEIL_OK ? 0 : 1;
}

static void free_weights(double **w)
{
    for (int i = 0; i < NPARAMS; i++) {
        free(w[i]);
        w[i] = NULL;
    }
}

static void weight_feeds(double **w, struct veil_feed *f)
{
    for (int i = 0; i < NPARAMS; i++)
        f[i] = (struct veil_feed){.name = params[i].name, .values = w[i], .numel = numel(i)};
}

static veil_dataset_t *load_set(const char *dir, const char *prefix)
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
static void fill_batch(const veil_dataset_t *d, const size_t *order, size_t first, size_t count,
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
static int plain_predict(const veil_plan_t *p, enum veil_plain_mode mode, struct veil_feed *feeds,
                         double *x, double *pred)
{
    feeds[NPARAMS] = (struct veil_feed){.name = "image", .values = x,
                                        .numel = veil_plan_output_numel(p, 0) * PIXELS};
    double *outs[1] = {pred};
    return veil_plain_run(p, mode, feeds, NPARAMS + 1, outs);
}

/* ---- infer: one process of the secure session ------------------------------------------------ */

/*
 * Progress of long runs: a line rewritten in place when stderr is a terminal; under veil-run
 * (which forwards each process's output line by line, and sets VEIL_PROGRESS=1 when its own
 * stderr is a terminal) a full line every 10 seconds and at the end; nothing otherwise.
 */
enum { PROGRESS_OFF, PROGRESS_TTY, PROGRESS_LINES };

static int progress_mode(int quiet)
{
    const char *v = getenv("VEIL_PROGRESS");
    return quiet ? PROGRESS_OFF
           : isatty(2) ? PROGRESS_TTY
           : v && !strcmp(v, "1") ? PROGRESS_LINES
                                  : PROGRESS_OFF;
}

/* Shows one progress message (printf-style); last: the final one of the run. */
static void progress(int mode, int last, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void progress(int mode, int last, const char *fmt, ...)
{
    static double shown;
    if (mode == PROGRESS_OFF || (mode == PROGRESS_LINES && !last && now_s() - shown < 10))
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
static veil_party_t *open_session(const struct opts *o, int training, veil_plan_t **p)
{
    if (!(*p = compile(o->batch, training, o)))
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

static int infer(const struct opts *o)
{
    veil_plan_t *p = NULL;
    veil_party_t *me = open_session(o, 0, &p);
    if (!me)
        return 1;
    const int self = veil_party_id(me), n = veil_party_nparties(me);
    int code = 1;
    double *w[NPARAMS] = {NULL};
    struct veil_feed feeds[NPARAMS + 2];
    memset(feeds, 0, sizeof feeds);
    size_t nfeeds = 0;
    veil_dataset_t *test = NULL;
    size_t total = o->images;
    double *x = NULL, *pred = NULL, *pfix = NULL, *pdbl = NULL;
    if (self == 0) {
        if (load_weights(o->weights, w) != 0)
            goto out;
        weight_feeds(w, feeds);
        nfeeds = NPARAMS;
    }
    if (self == 1) {
        if (!(test = load_set(o->data, "t10k")))
            goto out;
        if (total == 0 || total > veil_dataset_count(test))
            total = veil_dataset_count(test);
        /* verification only (see the file comment): the demo's data owner reads the model too */
        if (load_weights(o->weights, w) != 0)
            goto out;
        weight_feeds(w, feeds);
    }
    if (total == 0)
        total = 10000; /* every process makes the same number of runs */
    x = calloc(o->batch * PIXELS, sizeof *x);
    pred = calloc(o->batch, sizeof *pred);
    pfix = calloc(o->batch, sizeof *pfix);
    pdbl = calloc(o->batch, sizeof *pdbl);
    if (!x || !pred || !pfix || !pdbl) {
        fprintf(stderr, "lenet_fmnist: out of memory\n");
        goto out;
    }
    uint64_t items = 0, dealer_bytes = 0;
    veil_plan_preproc(p, n, &items, &dealer_bytes);
    if (self == 1)
        printf("lenet_fmnist: secure inference of %zu test images, batch %zu, %d parties%s\n"
               "lenet_fmnist: preprocessing per batch: %" PRIu64 " items, %.1f MB %s\n", total,
               o->batch, n, o->preproc ? ", material from preprocessing files" : " and the dealer",
               items, (double)dealer_bytes / 1e6,
               o->preproc ? "read from the file (generated offline)" : "from the dealer");
    size_t correct = 0, agree = 0, correct_fix = 0, correct_dbl = 0;
    double online = 0;
    uint64_t bytes = 0, rounds = 0;
    const int pmode = progress_mode(o->quiet);
    const double t0 = now_s();
    for (size_t first = 0; first < total; first += o->batch) {
        size_t count = total - first < o->batch ? total - first : o->batch;
        if (self == 1) {
            fill_batch(test, NULL, first, count, o->batch, x, NULL);
            feeds[NPARAMS] = (struct veil_feed){.name = "image", .values = x,
                                                .numel = o->batch * PIXELS};
            nfeeds = NPARAMS + 1;
        }
        double *outs[1] = {pred};
        int rc = veil_run(me, self == 1 ? feeds + NPARAMS : feeds, self == 1 ? 1 : nfeeds, outs);
        if (rc != VEIL_OK) {
            fprintf(stderr, "lenet_fmnist: batch at image %zu: %s\n", first, veil_last_error());
            goto out;
        }
        struct veil_run_stats st;
        veil_party_last_stats(me, &st);
        online += st.online_s;
        bytes += st.bytes_sent;
        rounds += st.rounds;
        if (self == 1) {
            if (plain_predict(p, VEIL_PLAIN_FIXED, feeds, x, pfix) != VEIL_OK ||
                plain_predict(p, VEIL_PLAIN_DOUBLE, feeds, x, pdbl) != VEIL_OK) {
                fprintf(stderr, "lenet_fmnist: plaintext check: %s\n", veil_last_error());
                goto out;
            }
            const uint8_t *lab = veil_dataset_labels(test) + first;
            for (size_t b = 0; b < count; b++) {
                correct += (int)pred[b] == lab[b];
                agree += pred[b] == pfix[b];
                correct_fix += (int)pfix[b] == lab[b];
                correct_dbl += (int)pdbl[b] == lab[b];
            }
            const double el = now_s() - t0, rate = el > 0 ? (double)(first + count) / el : 0;
            progress(pmode, first + count == total, "%zu / %zu images, %.1f images/s, %.0f s left",
                     first + count, total, rate,
                     rate > 0 ? (double)(total - first - count) / rate : 0.0);
        }
    }
    const double wall = now_s() - t0;
    if (self == 1) {
        double acc = 100.0 * (double)correct / (double)total;
        double acc_dbl = 100.0 * (double)correct_dbl / (double)total;
        printf("lenet_fmnist: secure accuracy %.2f%% (%zu / %zu); float model %.2f%%, "
               "fixed-point model %.2f%%\n", acc, correct, total, acc_dbl,
               100.0 * (double)correct_fix / (double)total);
        printf("lenet_fmnist: secure predictions agree with the plaintext fixed-point model on "
               "%.2f%% of the images (%zu / %zu)\n", 100.0 * (double)agree / (double)total, agree,
               total);
        printf("lenet_fmnist: online %.1f s (%.1f images/s), wall %.1f s; this party sent %.1f MB "
               "in %" PRIu64 " rounds\n", online, (double)total / online, wall, (double)bytes / 1e6,
               rounds);
        printf("model=%s parties=%d images=%zu batch=%zu accuracy=%.2f float_accuracy=%.2f "
               "agreement=%.3f online_s=%.2f offline=%s "
               "dealer_bytes_per_batch=%" PRIu64
               " bytes_sent=%" PRIu64 " rounds=%" PRIu64 "\n",
               MODEL, n, total, o->batch, acc, acc_dbl, 100.0 * (double)agree / (double)total,
               online, o->preproc ? "files" : "dealer_streamed", dealer_bytes, bytes, rounds);
    } else if (!veil_party_is_dealer(me)) {
        printf("lenet_fmnist: party %d: online %.1f s, sent %.1f MB in %" PRIu64 " rounds\n", self,
               online, (double)bytes / 1e6, rounds);
    }
    code = 0;
out:
    free(x);
    free(pred);
    free(pfix);
    free(pdbl);
    free_weights(w);
    veil_dataset_destroy(&test);
    if (veil_party_close(&me) != VEIL_OK && code == 0) { /* the dealer learns it here */
        fprintf(stderr, "lenet_fmnist: %s\n", veil_last_error());
        code = 1;
    }
    veil_plan_destroy(&p);
    return code;
}

/* ---- train: plaintext SGD -------------------------------------------------------------------- */

static uint64_t rng_state = 0x2545f4914f6cdd1dULL;
static uint64_t rng(void)
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
static int init_weights(double **w)
{
    for (int i = 0; i < NPARAMS; i++) {
        w[i] = calloc(numel(i), sizeof(double));
        if (!w[i])
            return 1;
        if (params[i].ndim == 1)
            continue;
        size_t fan_in = params[i].ndim == 4 ? numel(i) / params[i].dims[0] : params[i].dims[0];
        double a = sqrt(6.0 / (double)fan_in);
        for (size_t k = 0; k < numel(i); k++)
            w[i][k] = a * (2.0 * uniform() - 1.0);
    }
    return 0;
}

static int save_weights(const char *path, double **w)
{
    struct veil_weights_tensor t[NPARAMS];
    memset(t, 0, sizeof t);
    for (int i = 0; i < NPARAMS; i++) {
        t[i].name = params[i].name;
        t[i].dtype = VEIL_DTYPE_F64;
        t[i].ndim = params[i].ndim;
        memcpy(t[i].dims, params[i].dims, sizeof params[i].dims);
        t[i].data = w[i];
    }
    if (veil_weights_write(path, MODEL, t, NPARAMS) != VEIL_OK) {
        fprintf(stderr, "lenet_fmnist: %s\n", veil_last_error());
        return 1;
    }
    return 0;
}

/* The visiting order of epoch e: a Fisher-Yates shuffle driven by the PRG of (seed, e). */
static int shuffle(const uint8_t seed[16], int epoch, size_t *order, size_t n)
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

/* Test accuracy of the model in the session: a run of the training plan per test batch (the
 * labels feed the loss node's softmax, which reveals nothing). Party 1 counts; 0 elsewhere. */
static int secure_test(veil_party_t *me, const struct opts *o, const veil_dataset_t *te,
                       size_t ntest, double *x, double *y, double *pred, size_t *correct)
{
    *correct = 0;
    for (size_t first = 0; first < ntest; first += o->batch) {
        size_t count = ntest - first < o->batch ? ntest - first : o->batch;
        if (te)
            fill_batch(te, NULL, first, count, o->batch, x, y);
        struct veil_feed in[2] = {{"image", x, o->batch * PIXELS},
                                  {"label", y, o->batch * CLASSES}};
        double *outs[1] = {pred};
        if (veil_run(me, in, te ? 2 : 0, outs) != VEIL_OK) {
            fprintf(stderr, "lenet_fmnist: test batch at %zu: %s\n", first, veil_last_error());
            return 1;
        }
        for (size_t b = 0; te && b < count; b++)
            *correct += (int)pred[b] == veil_dataset_labels(te)[first + b];
    }
    return 0;
}

/* The plaintext fixed-point run with the same initialisation and data order (the comparison the
 * issue asks for; only this demo's data owner can make it, as it knows the initial weights):
 * its test accuracy in percent, or a negative value on failure. */
static double fixed_reference(const struct opts *o, const veil_plan_t *tp, const uint8_t seed[16],
                              const veil_dataset_t *tr, const veil_dataset_t *te, size_t ntrain,
                              size_t ntest)
{
    double *w[NPARAMS] = {NULL}, acc = -1;
    struct veil_feed pf[NPARAMS];
    veil_plain_trainer_t *t = NULL;
    size_t *order = malloc(ntrain * sizeof *order), correct = 0;
    double *x = malloc(o->batch * PIXELS * sizeof *x), *y = malloc(o->batch * CLASSES * sizeof *y);
    double *pred = malloc(o->batch * sizeof *pred);
    rng_state = 0x2545f4914f6cdd1dULL; /* the initialisation party 0 made */
    if (!order || !x || !y || !pred || init_weights(w) != 0)
        goto out;
    weight_feeds(w, pf);
    /* round-to-nearest truncation: floor's -1/2 ulp bias per truncation makes a long run drift
     * away from the secure one, whose truncation rounds stochastically (unbiased) */
    if (!(t = veil_plain_trainer_new(tp, VEIL_PLAIN_FIXED_NEAREST, pf, NPARAMS)))
        goto out;
    for (int e = 0; e < o->epochs; e++) {
        if (shuffle(seed, e, order, ntrain) != 0)
            goto out;
        for (size_t s = 0; s < ntrain / o->batch; s++) {
            fill_batch(tr, order, s * o->batch, o->batch, o->batch, x, y);
            struct veil_feed in[2] = {{"image", x, o->batch * PIXELS},
                                      {"label", y, o->batch * CLASSES}};
            if (veil_plain_trainer_step(t, in, 2, NULL) != VEIL_OK)
                goto out;
        }
    }
    for (size_t first = 0; first < ntest; first += o->batch) {
        size_t count = ntest - first < o->batch ? ntest - first : o->batch;
        fill_batch(te, NULL, first, count, o->batch, x, y);
        struct veil_feed in[2] = {{"image", x, o->batch * PIXELS},
                                  {"label", y, o->batch * CLASSES}};
        double *outs[1] = {pred};
        if (veil_plain_trainer_run(t, in, 2, outs) != VEIL_OK)
            goto out;
        for (size_t b = 0; b < count; b++)
            correct += (int)pred[b] == veil_dataset_labels(te)[first + b];
    }
    acc = 100.0 * (double)correct / (double)ntest;
out:
    if (acc < 0)
        fprintf(stderr, "lenet_fmnist: fixed-point reference: %s\n", veil_last_error());
    veil_plain_trainer_destroy(&t);
    free_weights(w);
    free(order);
    free(x);
    free(y);
    free(pred);
    return acc;
}

/*
 * Secure training, one process of the session: party 0 owns the (deterministically initialised)
 * weights, party 1 the training and test sets; the visiting order comes from a seed the parties
 * draw jointly. Every loss_every steps party 1 learns the batch loss (and so the batch's
 * per-example confidences: see veil_train_step_reveal_loss). At the end the test accuracy of
 * the secret model (party 1 learns the classes), party 0 receives the trained weights, and party
 * 1 compares with the plaintext fixed-point run of the same initialisation and order.
 */
static int train_secure(const struct opts *o)
{
    veil_plan_t *tp = NULL;
    veil_party_t *me = open_session(o, 1, &tp);
    if (!me)
        return 1;
    const int self = veil_party_id(me), n = veil_party_nparties(me);
    int code = 1;
    double *w[NPARAMS] = {NULL};
    struct veil_feed feeds[NPARAMS + 2];
    veil_dataset_t *tr = NULL, *te = NULL;
    size_t ntrain = o->limit ? o->limit : 60000, ntest = o->images ? o->images : 10000;
    size_t *order = malloc(ntrain * sizeof *order);
    double *x = calloc(o->batch * PIXELS, sizeof *x), *y = calloc(o->batch * CLASSES, sizeof *y);
    double *pred = calloc(o->batch, sizeof *pred), *probs = calloc(o->batch, sizeof *probs);
    if (!order || !x || !y || !pred || !probs)
        goto out;
    if (self == 0) {
        if (init_weights(w) != 0)
            goto out;
        weight_feeds(w, feeds);
    }
    if (self == 1) {
        if (!(tr = load_set(o->data, "train")) || !(te = load_set(o->data, "t10k")))
            goto out;
        if (veil_dataset_count(tr) < ntrain || veil_dataset_count(te) < ntest) {
            fprintf(stderr, "lenet_fmnist: the data has %zu / %zu images, fewer than asked\n",
                    veil_dataset_count(tr), veil_dataset_count(te));
            goto out;
        }
    }
    if (o->resume && o->checkpoint) {
        char path[4096];
        snprintf(path, sizeof path, o->checkpoint, self);
        if (veil_party_load(me, path) != VEIL_OK) {
            fprintf(stderr, "lenet_fmnist: %s\n", veil_last_error());
            goto out;
        }
    }
    uint8_t seed[16];
    if (veil_party_joint_seed(me, seed) != VEIL_OK) {
        fprintf(stderr, "lenet_fmnist: %s\n", veil_last_error());
        goto out;
    }
    const size_t steps = ntrain / o->batch;
    if (self == 1) {
        char hex[33]; /* public: every process knows it, and it only orders the data */
        for (int i = 0; i < 16; i++)
            snprintf(hex + 2 * i, 3, "%02x", seed[i]);
        printf("lenet_fmnist: secure training of LeNet-5 on %zu images, %d parties and the "
               "dealer, %d epoch(s) of %zu steps, batch %zu, lr %g, momentum 0.9; visiting "
               "order from the joint seed %s\n",
               ntrain, n, o->epochs, steps, o->batch, o->lr, hex);
    }
    double online = 0, t0 = now_s(), last_loss = NAN;
    uint64_t bytes = 0, rounds = 0;
    const uint64_t done = veil_party_steps(me);
    const int pmode = progress_mode(o->quiet);
    for (int e = 0; e < o->epochs; e++) {
        if (shuffle(seed, e, order, ntrain) != 0)
            goto out;
        for (size_t s = 0; s < steps; s++) {
            const uint64_t step = (uint64_t)e * steps + s;
            if (step < done)
                continue; /* resumed: done before the checkpoint */
            size_t nf = 0;
            if (self == 0) {
                nf = NPARAMS;
            } else if (self == 1) {
                fill_batch(tr, order, s * o->batch, o->batch, o->batch, x, y);
                feeds[0] = (struct veil_feed){"image", x, o->batch * PIXELS};
                feeds[1] = (struct veil_feed){"label", y, o->batch * CLASSES};
                nf = 2;
            }
            int rc, reveal = o->loss_every && (step + 1) % o->loss_every == 0;
            double loss = NAN;
            rc = reveal ? veil_train_step_reveal_loss(me, feeds, nf, 1, probs, &loss)
                        : veil_train_step(me, feeds, nf);
            if (rc != VEIL_OK) {
                fprintf(stderr, "lenet_fmnist: step %llu: %s\n", (unsigned long long)step,
                        veil_last_error());
                goto out;
            }
            struct veil_run_stats st;
            veil_party_last_stats(me, &st);
            online += st.online_s;
            bytes += st.bytes_sent;
            rounds += st.rounds;
            if (reveal && self == 1)
                last_loss = loss;
            if (self == 1) {
                double el = now_s() - t0, left = (double)(o->epochs * steps - step - 1);
                progress(pmode, left == 0, "epoch %d, step %zu / %zu, %.1f images/s, loss %.4f, "
                         "%.0f s left", e + 1, s + 1, steps,
                         (double)((step + 1 - done) * o->batch) / el, last_loss,
                         el / (double)(step + 1 - done) * left);
            }
            if (o->checkpoint && o->checkpoint_every && (step + 1) % o->checkpoint_every == 0) {
                char path[4096];
                snprintf(path, sizeof path, o->checkpoint, self);
                if (veil_party_save(me, path) != VEIL_OK) {
                    fprintf(stderr, "lenet_fmnist: %s\n", veil_last_error());
                    goto out;
                }
            }
        }
    }
    const double train_online = online;
    const uint64_t train_steps = veil_party_steps(me) - done;
    size_t correct = 0;
    if (secure_test(me, o, self == 1 ? te : NULL, ntest, x, y, pred, &correct) != 0)
        goto out;
    for (int i = 0; i < NPARAMS; i++) {
        double *v = self == 0 ? w[i] : NULL;
        if (veil_party_reveal_param(me, params[i].name, 0, v) != VEIL_OK) {
            fprintf(stderr, "lenet_fmnist: %s\n", veil_last_error());
            goto out;
        }
    }
    if (self == 0 && save_weights(o->weights, w) != 0)
        goto out;
    if (self == 1) {
        /* close the session first: the peers need not wait for the plaintext reference */
        if (veil_party_close(&me) != VEIL_OK) {
            fprintf(stderr, "lenet_fmnist: %s\n", veil_last_error());
            goto out;
        }
        double acc = 100.0 * (double)correct / (double)ntest;
        double ref = fixed_reference(o, tp, seed, tr, te, ntrain, ntest);
        double per_step = train_steps ? (double)bytes / (double)train_steps : 0;
        printf("lenet_fmnist: secure test accuracy %.2f%% (%zu / %zu); plaintext fixed-point run "
               "(round-to-nearest) with the same initialisation and order %.2f%%\n", acc, correct,
               ntest, ref);
        printf("lenet_fmnist: training %.1f s online, %.2f images/s, %.1f MB sent and %.0f "
               "rounds per step by this party\n", train_online,
               train_online > 0 ? (double)(train_steps * o->batch) / train_online : 0.0,
               per_step / 1e6, train_steps ? (double)rounds / (double)train_steps : 0.0);
        printf("model=%s mode=train-secure parties=%d epochs=%d batch=%zu train_images=%zu "
               "test_images=%zu accuracy=%.2f fixed_accuracy=%.2f steps=%llu online_s=%.2f "
               "images_per_s=%.3f bytes_per_step=%.0f\n",
               MODEL, n, o->epochs, o->batch, ntrain, ntest, acc, ref,
               (unsigned long long)train_steps, train_online,
               train_online > 0 ? (double)(train_steps * o->batch) / train_online : 0.0, per_step);
        code = ref >= 0 ? 0 : 1;
    } else {
        if (self == 0)
            printf("lenet_fmnist: party 0: trained weights written to %s\n", o->weights);
        code = 0;
    }
out:
    free(order);
    free(x);
    free(y);
    free(pred);
    free(probs);
    free_weights(w);
    veil_dataset_destroy(&tr);
    veil_dataset_destroy(&te);
    if (veil_party_close(&me) != VEIL_OK && code == 0) {
        fprintf(stderr, "lenet_fmnist: %s\n", veil_last_error());
        code = 1;
    }
    veil_plan_destroy(&tp);
    return code;
}

static int train(const struct opts *o)
{
    int code = 1;
    veil_dataset_t *tr = load_set(o->data, "train"), *te = load_set(o->data, "t10k");
    veil_plan_t *tp = compile(o->batch, 1, o), *ip = compile(o->batch, 0, o);
    double *w[NPARAMS] = {NULL};
    veil_plain_trainer_t *t = NULL;
    size_t *order = NULL;
    double *x = NULL, *y = NULL, *pred = NULL;
    if (!tr || !te || !tp || !ip || init_weights(w) != 0)
        goto out;
    struct veil_feed feeds[NPARAMS + 2];
    weight_feeds(w, feeds);
    if (!(t = veil_plain_trainer_new(tp, VEIL_PLAIN_DOUBLE, feeds, NPARAMS))) {
        fprintf(stderr, "lenet_fmnist: %s\n", veil_last_error());
        goto out;
    }
    size_t ntrain = veil_dataset_count(tr);
    if (o->limit && o->limit < ntrain)
        ntrain = o->limit;
    order = malloc(ntrain * sizeof *order);
    x = malloc(o->batch * PIXELS * sizeof *x);
    y = malloc(o->batch * CLASSES * sizeof *y);
    pred = malloc(o->batch * sizeof *pred);
    if (!order || !x || !y || !pred)
        goto out;
    printf("lenet_fmnist: training LeNet-5 on %zu Fashion-MNIST images in plaintext (double), "
           "%d epochs, batch %zu, lr %g, momentum 0.9\n", ntrain, o->epochs, o->batch, o->lr);
    const size_t steps = ntrain / o->batch;
    const int pmode = progress_mode(o->quiet);
    for (int e = 0; e < o->epochs; e++) {
        for (size_t i = 0; i < ntrain; i++)
            order[i] = i;
        for (size_t i = ntrain - 1; i > 0; i--) { /* Fisher-Yates, seeded */
            size_t j = (size_t)(rng() % (i + 1)), s = order[i];
            order[i] = order[j];
            order[j] = s;
        }
        double loss_sum = 0, t0 = now_s();
        for (size_t s = 0; s < steps; s++) {
            fill_batch(tr, order, s * o->batch, o->batch, o->batch, x, y);
            struct veil_feed in[2] = {{"image", x, o->batch * PIXELS},
                                      {"label", y, o->batch * CLASSES}};
            double loss = 0;
            if (veil_plain_trainer_step(t, in, 2, &loss) != VEIL_OK) {
                fprintf(stderr, "lenet_fmnist: step %zu: %s\n", s, veil_last_error());
                goto out;
            }
            loss_sum += loss;
            if (s % 20 == 0 || s + 1 == steps)
                progress(pmode, s + 1 == steps, "epoch %d: step %zu / %zu, loss %.4f", e + 1,
                         s + 1, steps, loss_sum / (double)(s + 1));
        }
        printf("lenet_fmnist: epoch %d: mean loss %.4f (%.1f s)\n", e + 1,
               loss_sum / (double)(steps ? steps : 1), now_s() - t0);
    }
    for (int i = 0; i < NPARAMS; i++)
        if (veil_plain_trainer_param(t, params[i].name, w[i]) != VEIL_OK) {
            fprintf(stderr, "lenet_fmnist: %s\n", veil_last_error());
            goto out;
        }
    /* test accuracy of the float and fixed-point models */
    size_t correct[2] = {0, 0}, ntest = veil_dataset_count(te);
    for (size_t first = 0; first < ntest; first += o->batch) {
        size_t count = ntest - first < o->batch ? ntest - first : o->batch;
        fill_batch(te, NULL, first, count, o->batch, x, NULL);
        for (int m = 0; m < 2; m++) {
            if (plain_predict(ip, m ? VEIL_PLAIN_FIXED : VEIL_PLAIN_DOUBLE, feeds, x, pred) !=
                VEIL_OK) {
                fprintf(stderr, "lenet_fmnist: %s\n", veil_last_error());
                goto out;
            }
            for (size_t b = 0; b < count; b++)
                correct[m] += (int)pred[b] == veil_dataset_labels(te)[first + b];
        }
    }
    if (save_weights(o->weights, w) != 0)
        goto out;
    printf("lenet_fmnist: test accuracy %.2f%% (float), %.2f%% (fixed point, 16 fractional "
           "bits); weights written to %s\n", 100.0 * (double)correct[0] / (double)ntest,
           100.0 * (double)correct[1] / (double)ntest, o->weights);
    printf("model=%s mode=train epochs=%d batch=%zu train_images=%zu float_accuracy=%.2f "
           "fixed_accuracy=%.2f\n", MODEL, o->epochs, o->batch, ntrain,
           100.0 * (double)correct[0] / (double)ntest, 100.0 * (double)correct[1] / (double)ntest);
    code = 0;
out:
    veil_plain_trainer_destroy(&t);
    veil_plan_destroy(&tp);
    veil_plan_destroy(&ip);
    veil_dataset_destroy(&tr);
    veil_dataset_destroy(&te);
    free_weights(w);
    free(order);
    free(x);
    free(y);
    free(pred);
    return code;
}

/* ---- preproc: the offline phase ahead of an inference session ------------------------------- */

/* Writes every party's preprocessing file for the runs `infer` makes (ceil(images / batch)), for
 * a session of o->parties parties with id o->session, and says how long it took. */
static int preproc(const struct opts *o)
{
    uint8_t sid[16];
    for (int i = 0; i < 16; i++) {
        char hex[3] = {o->session[2 * i], o->session[2 * i + 1], 0}, *end;
        sid[i] = (uint8_t)strtoul(hex, &end, 16);
    }
    const size_t images = o->images ? o->images : 10000;
    const int runs = (int)((images + o->batch - 1) / o->batch);
    veil_plan_t *p = compile(o->batch, 0, o);
    if (!p)
        return 1;
    uint64_t items = 0, bytes = 0;
    const double t0 = now_s();
    int rc = veil_plan_preproc_files(p, o->parties, runs, sid, o->preproc, &items, &bytes);
    const double secs = now_s() - t0;
    veil_plan_destroy(&p);
    if (rc != VEIL_OK) {
        fprintf(stderr, "lenet_fmnist: preproc: %s\n", veil_last_error());
        return 1;
    }
    printf("lenet_fmnist: offline phase: %d parties' files for %d batches of %zu images "
           "(%" PRIu64 " items, %.1f MB of correlated randomness) in %.1f s\n"
           "lenet_fmnist: run the session with: veil-run -n %d --session %s -- lenet_fmnist infer "
           "--preproc %s --images %zu --batch %zu%s\n",
           o->parties, runs, o->batch, items, (double)bytes / 1e6, secs, o->parties, o->session,
           o->preproc, images, o->batch, o->weight_stationary ? " --weight-stationary" : "");
    printf("model=%s parties=%d images=%zu batch=%zu runs=%d offline_s=%.2f preproc_items=%" PRIu64
           " preproc_bytes=%" PRIu64 "\n",
           MODEL, o->parties, images, o->batch, runs, secs, items, bytes);
    return 0;
}

/* ---- command line ---------------------------------------------------------------------------- */

static int usage(FILE *f, int code)
{
    fprintf(f,
            "usage: lenet_fmnist train [--epochs E] [--batch B] [--lr LR] [--limit N]\n"
            "                          [--weights FILE] [--data DIR] [--quiet]\n"
            "       veil-run -n N --dealer -- lenet_fmnist infer [--images N] [--batch B]\n"
            "                          [--weight-stationary] [--weights FILE] [--data DIR]\n"
            "                          [--config FILE] [--quiet]\n"
            "       lenet_fmnist infer --config FILE ...   (one party of a session on real hosts)\n"
            "       lenet_fmnist preproc --parties N --session HEX --out FILE%%d [--images N]\n"
            "                          [--batch B] [--weight-stationary]\n"
            "       veil-run -n N --session HEX -- lenet_fmnist infer --preproc FILE%%d ...\n"
            "       veil-run -n N --dealer -- lenet_fmnist train --secure [--epochs E]\n"
            "                          [--batch B] [--limit N] [--images N] [--loss-every K]\n"
            "                          [--checkpoint FILE%%d [--checkpoint-every K] [--resume]]\n"
            "  train   plaintext training; writes the weights file (default %s)\n"
            "  train --secure  training inside MPC: party 0 initialises the weights, party 1\n"
            "          holds the data; the order is drawn jointly; party 1 learns the loss every\n"
            "          K steps (with the per-example confidences) and the test accuracy, party 0\n"
            "          the trained weights (written to --weights)\n"
            "  infer   secure inference of the test set (default all 10000 images, batch 100):\n"
            "          party 0 holds the weights, party 1 the images and learns the classes\n"
            "  preproc the offline phase ahead of an inference session: writes each party's\n"
            "          preprocessing file (FILE%%d: %%d the party id) for the batches infer runs;\n"
            "          infer --preproc then needs no dealer (the files are bound to the session\n"
            "          id, party count and plan, so give infer the same --images, --batch and\n"
            "          --weight-stationary). Whoever runs it knows every party's material: it\n"
            "          plays the dealer, ahead of time; hand each party only its own file\n"
            "  --data DIR  the Fashion-MNIST IDX files (default %s)\n"
            "  defaults: 2 epochs, batch 64, lr 0.02, all 60000 training images\n",
            DEFAULT_WEIGHTS, DEFAULT_DATA);
    return code;
}

static int parse_size(const char *s, size_t lo, size_t hi, size_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (*s == '\0' || *s == '-' || *end != '\0' || errno || v < lo || v > hi)
        return -1;
    *out = (size_t)v;
    return 0;
}

int main(int argc, char **argv)
{
    struct opts o = {.data = DEFAULT_DATA, .weights = DEFAULT_WEIGHTS, .epochs = 2, .lr = 0.02};
    if (argc < 2)
        return usage(stderr, 2);
    o.mode = argv[1];
    if (!strcmp(o.mode, "-h") || !strcmp(o.mode, "--help"))
        return usage(stdout, 0);
    const int is_train = !strcmp(o.mode, "train"), is_preproc = !strcmp(o.mode, "preproc");
    if (!is_train && !is_preproc && strcmp(o.mode, "infer") != 0) {
        fprintf(stderr, "lenet_fmnist: unknown mode '%s'; give train, infer or preproc\n",
                o.mode);
        return usage(stderr, 2);
    }
    o.batch = is_train ? 64 : 100;
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        size_t sv;
        if (!strcmp(a, "--quiet")) {
            o.quiet = 1;
            continue;
        }
        if (!strcmp(a, "--weight-stationary") && !is_train) { /* infer, preproc */
            o.weight_stationary = 1;
            continue;
        }
        if (!strcmp(a, "--secure") && is_train) {
            o.secure = 1;
            continue;
        }
        if (!strcmp(a, "--resume") && is_train) {
            o.resume = 1;
            continue;
        }
        if (!v) {
            fprintf(stderr, "lenet_fmnist: unknown option or missing value: '%s'\n", a);
            return usage(stderr, 2);
        }
        i++;
        if (!strcmp(a, "--data")) {
            o.data = v;
        } else if ((!strcmp(a, "--preproc") && !is_train && !is_preproc) ||
                   (!strcmp(a, "--out") && is_preproc)) {
            o.preproc = v;
        } else if (!strcmp(a, "--parties") && is_preproc && parse_size(v, 2, 16, &sv) == 0) {
            o.parties = (int)sv;
        } else if (!strcmp(a, "--session") && is_preproc && strlen(v) == 32 &&
                   strspn(v, "0123456789abcdefABCDEF") == 32) {
            o.session = v;
        } else if (!strcmp(a, "--config")) {
            o.config = v;
        } else if (!strcmp(a, "--checkpoint") && is_train) {
            o.checkpoint = v;
        } else if (!strcmp(a, "--checkpoint-every") && is_train &&
                   parse_size(v, 1, 1000000, &sv) == 0) {
            o.checkpoint_every = sv;
        } else if (!strcmp(a, "--loss-every") && is_train && parse_size(v, 1, 1000000, &sv) == 0) {
            o.loss_every = sv;
        } else if (!strcmp(a, "--weights")) {
            o.weights = v;
        } else if (!strcmp(a, "--batch") && parse_size(v, 1, 4096, &sv) == 0) {
            o.batch = sv;
        } else if (!strcmp(a, "--images") && parse_size(v, 1, 10000, &sv) == 0) {
            o.images = sv;
        } else if (!strcmp(a, "--limit") && is_train && parse_size(v, 1, 60000, &sv) == 0) {
            o.limit = sv;
        } else if (!strcmp(a, "--epochs") && is_train && parse_size(v, 1, 100, &sv) == 0) {
            o.epochs = (int)sv;
        } else if (!strcmp(a, "--lr") && is_train) {
            char *end;
            o.lr = strtod(v, &end);
            if (*end != '\0' || !(o.lr > 0 && o.lr <= 1)) {
                fprintf(stderr, "lenet_fmnist: --lr %s: give a rate in (0, 1]\n", v);
                return 2;
            }
        } else {
            fprintf(stderr, "lenet_fmnist: bad option or value: %s %s\n", a, v);
            return usage(stderr, 2);
        }
    }
    if (o.resume && !o.checkpoint) {
        fprintf(stderr, "lenet_fmnist: --resume needs --checkpoint FILE\n");
        return 2;
    }
    if (is_train && !o.secure && (o.checkpoint || o.loss_every || o.config)) {
        fprintf(stderr, "lenet_fmnist: --checkpoint, --loss-every and --config are for "
                        "train --secure\n");
        return 2;
    }
    if (is_preproc && (!o.preproc || !o.parties || !o.session)) {
        fprintf(stderr, "lenet_fmnist: preproc needs --parties N, --session HEX (32 hex digits) "
                        "and --out FILE%%d\n");
        return 2;
    }
    const char *pattern = o.checkpoint ? o.checkpoint : o.preproc;
    if (pattern) { /* one %d (the process id), nothing else that printf would read */
        const char *pc = strchr(pattern, '%');
        if (!pc || pc[1] != 'd' || strchr(pc + 2, '%')) {
            fprintf(stderr, "lenet_fmnist: %s: give a path with one %%d (the party id), e.g. "
                            "/tmp/lenet-%%d.pre\n", pattern);
            return 2;
        }
    }
    if (is_preproc)
        return preproc(&o);
    if (o.checkpoint) { /* one %d (the process id), nothing else that printf would read */
        const char *pc = strchr(o.checkpoint, '%');
        if (!pc || pc[1] != 'd' || strchr(pc + 2, '%')) {
            fprintf(stderr, "lenet_fmnist: --checkpoint %s: give a path with one %%d (the "
                            "process id), e.g. /tmp/lenet-%%d.ckpt\n", o.checkpoint);
            return 2;
        }
    }
    if (is_train)
        return o.secure ? train_secure(&o) : train(&o);
    return infer(&o);
}

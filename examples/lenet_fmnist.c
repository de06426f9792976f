/*
 * lenet_fmnist — LeNet-5 on Fashion-MNIST, Veil's main example: its command line.
 *
 *   lenet_fmnist train [options]   trains LeNet-5 in plaintext (the plaintext executor in double
 *                                  precision: SGD with momentum) and writes the weights file;
 *   lenet_fmnist infer [options]   one process of a secure inference session, started by
 *                                  veil-run: party 0 owns the model (it reads the weights file),
 *                                  party 1 owns the images (it reads the test set), the dealer
 *                                  deals correlated randomness; party 1 learns the predicted
 *                                  class of each image and nothing else, party 0 learns nothing.
 *   lenet_fmnist check [options]   compares the classes infer revealed with the plaintext model;
 *                                  with --check-ranges, the step before deploying: per node, the
 *                                  largest values sample images reach against the ring's limit
 *                                  and each op's domain (exit 4 when one is beyond).
 *
 *   build/examples/lenet_fmnist train && \
 *   build/tools/veil-run -n 2 --dealer -- build/examples/lenet_fmnist infer
 *
 * Party 1's last line is machine-readable key=value pairs. The modes live in
 * lenet_fmnist_infer.c and lenet_fmnist_train.c, what they share in lenet_fmnist_common.c.
 */
#include "config.h"
#include "lenet_fmnist.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* ---- command line ---------------------------------------------------------------------------- */

static int usage(FILE *f, int code)
{
    fprintf(f,
            "usage: lenet_fmnist train [--epochs E] [--batch B] [--lr LR] [--limit N]\n"
            "                          [--weights FILE] [--onnx FILE] [--data DIR] [--quiet]\n"
            "       veil-run -n N --dealer -- lenet_fmnist infer [--images N] [--batch B]\n"
            "                          [--passes P] [--weight-stationary] [--weights FILE]\n"
            "                          [--data DIR] [--config FILE] [--predictions FILE]\n"
            "                          [--quiet]\n"
            "       lenet_fmnist infer --config FILE ...   (one party of a session on real hosts)\n"
            "       lenet_fmnist check --predictions FILE [--images N] [--weights FILE]\n"
            "                          [--data DIR]\n"
            "       lenet_fmnist check --check-ranges [--images N] [--batch B] [--weights FILE]\n"
            "                          [--data DIR]\n"
            "       lenet_fmnist preproc --parties N --session HEX --out FILE%%d [--images N]\n"
            "                          [--batch B] [--passes P] [--weight-stationary]\n"
            "       veil-run -n N --session HEX -- lenet_fmnist infer --preproc FILE%%d ...\n"
            "       veil-run -n N --dealer -- lenet_fmnist train --secure [--epochs E]\n"
            "                          [--batch B] [--limit N] [--images N] [--loss-every K]\n"
            "                          [--checkpoint FILE%%d [--checkpoint-every K] [--resume]]\n"
            "  train   plaintext training; writes the weights file (default %s) and, with\n"
            "          --onnx FILE, the model as ONNX (for veil-onnx run --secure)\n"
            "  train --secure  training inside MPC: party 0 initialises the weights, party 1\n"
            "          holds the data; the order is drawn jointly; party 1 learns the loss every\n"
            "          K steps (with the per-example confidences) and the test accuracy, party 0\n"
            "          the trained weights (written to --weights); the weights are shared before\n"
            "          the first step (veil_party_prepare; a --resume takes them from the\n"
            "          checkpoint instead)\n"
            "  infer   secure inference of the test set (default all 10000 images, batch 100):\n"
            "          party 0 holds the weights (--weights), party 1 the images (--data) and\n"
            "          learns the classes (--predictions FILE: written there, one a line); no\n"
            "          party reads another's file; --passes P goes over the images P times in\n"
            "          one session (a long run: accuracy and the predictions file cover every\n"
            "          pass; check compares the first)\n"
            "  check   compares the classes of an infer --predictions file with the plaintext\n"
            "          model (fixed point and float) on the same images: it reads the weights\n"
            "          and the images, so it runs where both may be held (a test, or the model\n"
            "          owner on its own sample data), never inside the secure session\n"
            "  check --check-ranges  before deploying: runs the model on the first N test\n"
            "          images in the secure run's fixed point (plaintext) and prints per node the\n"
            "          largest values against the ring's limit and each op's domain; exit status\n"
            "          4 when a node is OVER (the secure run would compute a wrong value)\n"
            "  preproc the offline phase ahead of an inference session: writes each party's\n"
            "          preprocessing file (FILE%%d: %%d the party id) for the batches infer runs;\n"
            "          infer --preproc then needs no dealer (the files are bound to the session\n"
            "          id, party count and plan, so give infer the same --images, --batch,\n"
            "          --passes and --weight-stationary). Whoever runs it knows every party's\n"
            "          material: it plays the dealer, ahead of time; hand each party only its\n"
            "          own file\n"
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
    const int is_check = !strcmp(o.mode, "check"), is_infer = !strcmp(o.mode, "infer");
    if (!is_train && !is_preproc && !is_check && !is_infer) {
        fprintf(stderr, "lenet_fmnist: unknown mode '%s'; give train, infer, check or preproc\n",
                o.mode);
        return usage(stderr, 2);
    }
    o.batch = is_train ? 64 : 100;
    o.passes = 1;
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
        if (!strcmp(a, "--check-ranges") && is_check) {
            o.check_ranges = 1;
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
        } else if (!strcmp(a, "--predictions") && (is_infer || is_check)) {
            o.predictions = v;
        } else if (!strcmp(a, "--config")) {
            o.config = v;
        } else if (!strcmp(a, "--onnx") && is_train) {
            o.onnx = v;
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
        } else if (!strcmp(a, "--passes") && (is_infer || is_preproc) &&
                   parse_size(v, 1, 1000, &sv) == 0) {
            o.passes = sv;
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
    if (is_check && !o.predictions && !o.check_ranges) {
        fprintf(stderr, "lenet_fmnist: check needs --predictions FILE (written by infer "
                        "--predictions), or --check-ranges\n");
        return 2;
    }
    if (is_preproc)
        return preproc(&o);
    if (is_check)
        return o.check_ranges ? check_ranges(&o) : check(&o);
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

/*
 * lenet_fmnist_train.c — training LeNet-5: in plaintext (double precision, SGD with momentum),
 * writing the weights file `infer` reads; and inside MPC (`train --secure`, one process of the
 * session), with the loss revealed to the data owner every k steps, checkpoints, and at the end
 * the trained weights revealed to the model owner.
 */
#include "config.h"
#include "lenet_fmnist.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

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
    lenet_rng_reset(); /* the initialisation party 0 made */
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
int train_secure(const struct opts *o)
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
    double prepare_s = -1; /* resumed: the parameters come from the checkpoint */
    if (o->resume && o->checkpoint) {
        char path[4096];
        snprintf(path, sizeof path, o->checkpoint, self);
        if (veil_party_load(me, path) != VEIL_OK) {
            fprintf(stderr, "lenet_fmnist: %s\n", veil_last_error());
            goto out;
        }
    } else { /* a warm first step: the weights shared and its buffers reserved ahead */
        struct veil_run_stats pst;
        if (veil_party_prepare(me, self == 0 ? feeds : NULL, self == 0 ? NPARAMS : 0) !=
            VEIL_OK) {
            fprintf(stderr, "lenet_fmnist: prepare: %s\n", veil_last_error());
            goto out;
        }
        veil_party_last_stats(me, &pst);
        prepare_s = pst.online_s;
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
    double online = 0, first_step_s = -1, t0 = now_s(), last_loss = NAN;
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
            if (first_step_s < 0)
                first_step_s = st.online_s;
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
        if (veil_party_reveal_param(me, lenet_params[i].name, 0, v) != VEIL_OK) {
            fprintf(stderr, "lenet_fmnist: %s\n", veil_last_error());
            goto out;
        }
    }
    if (self == 0 && (save_weights(o->weights, w) != 0 || (o->onnx && save_onnx(o->onnx, w))))
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
               "images_per_s=%.3f bytes_per_step=%.0f first_step_online_s=%.3f",
               MODEL, n, o->epochs, o->batch, ntrain, ntest, acc, ref,
               (unsigned long long)train_steps, train_online,
               train_online > 0 ? (double)(train_steps * o->batch) / train_online : 0.0, per_step,
               first_step_s);
        if (prepare_s >= 0)
            printf(" prepare_s=%.3f", prepare_s);
        printf("\n");
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

int train(const struct opts *o)
{
    int code = 1;
    veil_dataset_t *tr = load_set(o->data, "train"), *te = load_set(o->data, "t10k");
    veil_plan_t *tp = lenet_compile(o->batch, 1, o), *ip = lenet_compile(o->batch, 0, o);
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
        if (veil_plain_trainer_param(t, lenet_params[i].name, w[i]) != VEIL_OK) {
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
    if (save_weights(o->weights, w) != 0 || (o->onnx && save_onnx(o->onnx, w) != 0))
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


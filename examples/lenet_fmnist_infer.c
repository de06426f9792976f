/*
 * lenet_fmnist_infer.c — secure inference of the test set (one process of the session: party 0
 * owns the model and reads the weights file, party 1 owns the images and reads the test set and
 * learns the predicted classes, the dealer deals), the plaintext check of its revealed classes,
 * and the offline phase ahead of a session (preproc). No party reads another's file.
 */
#include "config.h"
#include "lenet_fmnist.h"
#include "models.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

int infer(const struct opts *o)
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
    double *x = NULL, *pred = NULL;
    FILE *pf = NULL;
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
        if (o->predictions && !(pf = fopen(o->predictions, "w"))) {
            fprintf(stderr, "lenet_fmnist: cannot write '%s': %s\n", o->predictions,
                    strerror(errno));
            goto out;
        }
    }
    if (total == 0)
        total = 10000; /* every process makes the same number of runs */
    x = calloc(o->batch * PIXELS, sizeof *x);
    pred = calloc(o->batch, sizeof *pred);
    if (!x || !pred) {
        fprintf(stderr, "lenet_fmnist: out of memory\n");
        goto out;
    }
    uint64_t items = 0, dealer_bytes = 0;
    veil_plan_preproc(p, n, &items, &dealer_bytes);
    if (self == 1)
        printf("lenet_fmnist: secure inference of %zu test images%s, batch %zu, %d parties%s\n"
               "lenet_fmnist: preprocessing per batch: %" PRIu64 " items, %.1f MB %s\n", total,
               o->passes > 1 ? " (each pass)" : "", o->batch, n,
               o->preproc ? ", material from preprocessing files" : " and the dealer",
               items, (double)dealer_bytes / 1e6,
               o->preproc ? "read from the file (generated offline)" : "from the dealer");
    size_t correct = 0;
    double online = 0, prepare_s = 0, first_s = 0;
    uint64_t bytes = 0, rounds = 0;
    /* a warm first batch: the weights shared before it (the same call at every process; party 0
     * feeds them, the others nothing); its costs count toward the session's totals */
    if (veil_party_prepare(me, feeds, self == 0 ? NPARAMS : 0) != VEIL_OK) {
        fprintf(stderr, "lenet_fmnist: sharing the weights: %s\n", veil_last_error());
        goto out;
    }
    struct veil_run_stats pst;
    veil_party_last_stats(me, &pst);
    prepare_s = online = pst.online_s;
    bytes = pst.bytes_sent;
    rounds = pst.rounds;
    const int pmode = progress_mode(o->quiet);
    const double t0 = now_s();
    const size_t per_pass = (total + o->batch - 1) / o->batch, nbatches = per_pass * o->passes;
    const size_t all = total * o->passes; /* images over every pass */
    size_t done = 0;
    for (size_t k = 0; k < nbatches; k++) {
        const size_t first = (k % per_pass) * o->batch;
        const size_t count = total - first < o->batch ? total - first : o->batch;
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
        struct veil_run_profile prof;
        example_print_busy(me, "batch", (int)k, &prof); /* when tracing */
        if (k == 0)
            first_s = st.online_s;
        online += st.online_s;
        bytes += st.bytes_sent;
        rounds += st.rounds;
        if (self == 1) {
            const uint8_t *lab = veil_dataset_labels(test) + first;
            for (size_t b = 0; b < count; b++) {
                correct += (int)pred[b] == lab[b];
                if (pf && fprintf(pf, "%d\n", (int)pred[b]) < 0) {
                    fprintf(stderr, "lenet_fmnist: writing '%s' failed\n", o->predictions);
                    goto out;
                }
            }
            done += count;
            const double el = now_s() - t0, rate = el > 0 ? (double)done / el : 0;
            progress(pmode, done == all, "%zu / %zu images, %.1f images/s, %.0f s left", done, all,
                     rate, rate > 0 ? (double)(all - done) / rate : 0.0);
        }
    }
    const double wall = now_s() - t0;
    if (self == 1) {
        double acc = 100.0 * (double)correct / (double)all;
        if (pf) {
            int bad = fclose(pf) != 0;
            pf = NULL;
            if (bad) {
                fprintf(stderr, "lenet_fmnist: writing '%s' failed\n", o->predictions);
                goto out;
            }
        }
        printf("lenet_fmnist: secure accuracy %.2f%% (%zu / %zu), against this party's labels\n",
               acc, correct, all);
        if (o->predictions)
            printf("lenet_fmnist: the %zu predicted classes are in %s (compare them with the "
                   "plaintext model: lenet_fmnist check --predictions %s)\n", all,
                   o->predictions, o->predictions);
        printf("lenet_fmnist: online %.1f s (%.1f images/s), wall %.1f s; this party sent %.1f MB "
               "in %" PRIu64 " rounds\n", online, (double)all / online, wall, (double)bytes / 1e6,
               rounds);
        printf("model=%s parties=%d images=%zu batch=%zu accuracy=%.2f online_s=%.2f offline=%s "
               "dealer_bytes_per_batch=%" PRIu64 " bytes_sent=%" PRIu64 " rounds=%" PRIu64
               " prepare_s=%.3f first_online_s=%.3f\n",
               MODEL, n, all, o->batch, acc, online, o->preproc ? "files" : "dealer_streamed",
               dealer_bytes, bytes, rounds, prepare_s, first_s);
    } else if (!veil_party_is_dealer(me)) {
        printf("lenet_fmnist: party %d: online %.1f s, sent %.1f MB in %" PRIu64 " rounds\n", self,
               online, (double)bytes / 1e6, rounds);
    }
    code = 0;
out:
    free(x);
    free(pred);
    if (pf)
        fclose(pf);
    free_weights(w);
    veil_dataset_destroy(&test);
    if (veil_party_close(&me) != VEIL_OK && code == 0) { /* the dealer learns it here */
        fprintf(stderr, "lenet_fmnist: %s\n", veil_last_error());
        code = 1;
    }
    veil_plan_destroy(&p);
    return code;
}

/*
 * check: compares a secure run's revealed classes (the file infer --predictions wrote) with the
 * plaintext model on the same images, in fixed point (the arithmetic of the secure run) and in
 * double. It reads the weights and the images together, so it is run where one process
 * legitimately holds both: a test on one machine, or the model owner on its own sample data.
 * The secure parties never do it.
 */
static int read_predictions(const char *path, size_t total, int *cls)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "lenet_fmnist: cannot open '%s': %s\n", path, strerror(errno));
        return 1;
    }
    size_t k = 0;
    int c, bad = 0;
    while (k < total && fscanf(f, "%d", &c) == 1) {
        if (c < 0 || c >= CLASSES) {
            bad = 1;
            break;
        }
        cls[k++] = c;
    }
    fclose(f);
    if (bad || k != total) {
        fprintf(stderr, "lenet_fmnist: %s: %s at line %zu (expected %zu classes 0..%d, one a "
                "line)\n", path, bad ? "a class out of range" : "too few classes", k + 1, total,
                CLASSES - 1);
        return 1;
    }
    return 0;
}

int check(const struct opts *o)
{
    int code = 1;
    veil_dataset_t *test = load_set(o->data, "t10k");
    veil_plan_t *p = test ? lenet_compile(o->batch, 0, o) : NULL;
    double *w[NPARAMS] = {NULL};
    struct veil_feed feeds[NPARAMS + 1];
    double *x = calloc(o->batch * PIXELS, sizeof *x), *pfix = calloc(o->batch, sizeof *pfix);
    double *pdbl = calloc(o->batch, sizeof *pdbl);
    int *cls = NULL;
    if (!p || !x || !pfix || !pdbl || load_weights(o->weights, w) != 0)
        goto out;
    size_t total = o->images;
    if (total == 0 || total > veil_dataset_count(test))
        total = veil_dataset_count(test);
    if (!(cls = malloc(total * sizeof *cls)) || read_predictions(o->predictions, total, cls) != 0)
        goto out;
    weight_feeds(w, feeds);
    size_t agree = 0, correct = 0, correct_fix = 0, correct_dbl = 0;
    const uint8_t *lab = veil_dataset_labels(test);
    for (size_t first = 0; first < total; first += o->batch) {
        size_t count = total - first < o->batch ? total - first : o->batch;
        fill_batch(test, NULL, first, count, o->batch, x, NULL);
        if (plain_predict(p, VEIL_PLAIN_FIXED, feeds, x, pfix) != VEIL_OK ||
            plain_predict(p, VEIL_PLAIN_DOUBLE, feeds, x, pdbl) != VEIL_OK) {
            fprintf(stderr, "lenet_fmnist: plaintext model: %s\n", veil_last_error());
            goto out;
        }
        for (size_t b = 0; b < count; b++) {
            agree += cls[first + b] == (int)pfix[b];
            correct += cls[first + b] == lab[first + b];
            correct_fix += (int)pfix[b] == lab[first + b];
            correct_dbl += (int)pdbl[b] == lab[first + b];
        }
    }
    const double pct = 100.0 / (double)total;
    printf("lenet_fmnist: the secure predictions agree with the plaintext fixed-point model on "
           "%.2f%% of the images (%zu / %zu); accuracy: secure %.2f%%, fixed point %.2f%%, "
           "float %.2f%%\n", pct * (double)agree, agree, total, pct * (double)correct,
           pct * (double)correct_fix, pct * (double)correct_dbl);
    printf("model=%s mode=check images=%zu agreement=%.3f accuracy=%.2f fixed_accuracy=%.2f "
           "float_accuracy=%.2f\n", MODEL, total, pct * (double)agree, pct * (double)correct,
           pct * (double)correct_fix, pct * (double)correct_dbl);
    code = 0;
out:
    free(x);
    free(pfix);
    free(pdbl);
    free(cls);
    free_weights(w);
    veil_plan_destroy(&p);
    veil_dataset_destroy(&test);
    return code;
}

/*
 * check --check-ranges: the step before deploying the model. The model owner runs it on its
 * weights and sample images (here the first --images test images) in the secure run's fixed
 * point, in plaintext (veil_plain_check_ranges), and reads per node the largest values reached
 * against the ring's limit and each op's domain. Exit status 4 when a node is OVER (the secure
 * run would compute a wrong value), 0 otherwise, 1 on an error.
 */
int check_ranges(const struct opts *o)
{
    int code = 1;
    veil_dataset_t *test = load_set(o->data, "t10k");
    veil_plan_t *p = test ? lenet_compile(o->batch, 0, o) : NULL;
    double *w[NPARAMS] = {NULL};
    struct veil_feed feeds[NPARAMS + 1];
    double *x = calloc(o->batch * PIXELS, sizeof *x);
    veil_range_report_t *r = NULL;
    if (!p || !x || load_weights(o->weights, w) != 0)
        goto out;
    size_t total = o->images;
    if (total == 0 || total > veil_dataset_count(test))
        total = veil_dataset_count(test);
    weight_feeds(w, feeds);
    for (size_t first = 0; first < total; first += o->batch) {
        size_t count = total - first < o->batch ? total - first : o->batch;
        fill_batch(test, NULL, first, count, o->batch, x, NULL);
        feeds[NPARAMS] = (struct veil_feed){.name = "image", .values = x,
                                            .numel = o->batch * PIXELS};
        if (veil_plain_check_ranges(p, feeds, NPARAMS + 1, &r) != VEIL_OK) {
            fprintf(stderr, "lenet_fmnist: check-ranges: %s\n", veil_last_error());
            goto out;
        }
    }
    printf("lenet_fmnist: the model %s on %zu test images (batches of %zu)\n", o->weights, total,
           o->batch);
    veil_range_report_print(r, stdout);
    const int worst = veil_range_report_worst(r);
    printf("model=%s mode=check-ranges images=%zu over=%zu near=%zu ok=%zu\n", MODEL, total,
           veil_range_report_tally(r, VEIL_RANGE_OVER), veil_range_report_tally(r, VEIL_RANGE_NEAR),
           veil_range_report_tally(r, VEIL_RANGE_OK));
    code = worst == VEIL_RANGE_OVER ? 4 : 0;
out:
    veil_range_report_destroy(&r);
    free(x);
    free_weights(w);
    veil_plan_destroy(&p);
    veil_dataset_destroy(&test);
    return code;
}


/* Writes every party's preprocessing file for the runs `infer` makes (ceil(images / batch) times
 * passes), for
 * a session of o->parties parties with id o->session, and says how long it took. */
int preproc(const struct opts *o)
{
    uint8_t sid[16];
    for (int i = 0; i < 16; i++) {
        char hex[3] = {o->session[2 * i], o->session[2 * i + 1], 0}, *end;
        sid[i] = (uint8_t)strtoul(hex, &end, 16);
    }
    const size_t images = o->images ? o->images : 10000;
    const int runs = (int)((images + o->batch - 1) / o->batch * o->passes);
    veil_plan_t *p = lenet_compile(o->batch, 0, o);
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
           "--preproc %s --images %zu --batch %zu --passes %zu%s\n",
           o->parties, runs, o->batch, items, (double)bytes / 1e6, secs, o->parties, o->session,
           o->preproc, images, o->batch, o->passes,
           o->weight_stationary ? " --weight-stationary" : "");
    printf("model=%s parties=%d images=%zu batch=%zu runs=%d offline_s=%.2f preproc_items=%" PRIu64
           " preproc_bytes=%" PRIu64 "\n",
           MODEL, o->parties, images, o->batch, runs, secs, items, bytes);
    return 0;
}

/*
 * example_train.c — the secure-training driver the model examples share (`mlp train`, `lenet
 * train`, `transformer train`). Every process veil-run starts builds the same graph (its output
 * feeding a softmax cross-entropy loss against the data owner's one-hot labels), compiles it for
 * training, and makes the same calls: veil_party_prepare (not with --cold), R SGD steps
 * (veil_train_step_reveal_loss, the data owner learning each step's loss), then a reveal of every
 * parameter to the model owner. The model owner checks the trained parameters against the
 * plaintext fixed-point trainer with round-to-nearest truncation (VEIL_PLAIN_FIXED_NEAREST) on the
 * same data, and every process prints what its steps cost (with tracing on, also their busy and
 * overlap figures, as example_run prints them for runs), the last line as key=value pairs.
 */
#include "models.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* The plaintext fixed-point trainer over the same steps, truncating to nearest: the secure
 * truncation rounds stochastically (up with probability equal to the dropped fraction, so
 * unbiased), and FIXED's floor is biased by -1/2 ulp at every truncation, all of the same sign.
 * That bias does not stay at an ulp a step: measured with mlp --batch 64 (momentum 0.9), secure
 * minus FIXED has a mean of -1.1 ulp a step over all weights and a maximum of 15 ulp after 4
 * steps, 567 after 21, 3,400 after 100, where secure minus NEAREST keeps a mean near 0 and a
 * maximum of 11, 79 and 1,084 ulp. *err receives the largest |secure - plain|
 * over every parameter element, *loss the plaintext loss of each step (steps entries). */
static int check_params(const struct model *m, const veil_plan_t *plan, int steps,
                        double *const *got, double *err, double *loss)
{
    struct veil_feed *params = NULL;
    size_t np = 0;
    veil_plain_trainer_t *tr = NULL;
    double *want = NULL;
    int rc = model_feeds(m, MODEL_OWNER, 0, 1, &params, &np);
    if (rc == VEIL_OK &&
        !(tr = veil_plain_trainer_new(plan, VEIL_PLAIN_FIXED_NEAREST, params, np)))
        rc = VEIL_ERR_INVAL;
    for (int s = 0; s < steps && rc == VEIL_OK; s++) {
        struct veil_feed *in = NULL;
        size_t ni = 0;
        rc = model_feeds(m, DATA_OWNER, s, 0, &in, &ni);
        if (rc == VEIL_OK)
            rc = veil_plain_trainer_step(tr, in, ni, &loss[s]);
        model_feeds_free(&in, ni);
    }
    *err = 0;
    for (size_t i = 0, k = 0; i < m->nleaves && rc == VEIL_OK; i++) {
        const struct model_leaf *l = &m->leaves[i];
        if (l->is_input)
            continue;
        double *w = realloc(want, l->numel * sizeof *w);
        if (!w) {
            rc = VEIL_ERR_NOMEM;
            break;
        }
        want = w;
        rc = veil_plain_trainer_param(tr, l->name, want);
        for (size_t e = 0; e < l->numel && rc == VEIL_OK; e++) {
            double d = fabs(got[k][e] - want[e]);
            *err = isnan(d) ? INFINITY : fmax(*err, d);
        }
        k++;
    }
    if (rc != VEIL_OK)
        fprintf(stderr, "%s: plaintext trainer: %s\n", m->name, veil_last_error());
    free(want);
    veil_plain_trainer_destroy(&tr);
    model_feeds_free(&params, np);
    return rc;
}

/*
 * The tolerance of S SGD steps in units of one momentum-free step's (m->train_tol: the update's
 * truncations and lr times the gradient's error E, the bound of tests/test_graph_secure_train.c).
 * With momentum m the velocity v_s = m v_(s-1) + g_s keeps every earlier step's gradient error
 * (and the truncation of m v) with weight m^j, so its error after step s is up to
 * 1 + m + ... + m^(s-1) = (1 - m^s) / (1 - m) times a step's, and step s moves the weights by
 * lr v_s: its part of the weight error is up to that many momentum-free steps'. Summed over the
 * steps: G(S) = sum_(s=1..S) (1 - m^s) / (1 - m) = (S - m (1 - m^S) / (1 - m)) / (1 - m), which is
 * S at m = 0 and tends to S / (1 - m) (m = 0.9: G(4) = 9.05, G(21) = 129.8, G(100) = 910). G
 * bounds the errors each step makes, not what the later gradients make of them (the weights'
 * differences feed back through the next forward and backward passes): measured, that stays
 * inside G (mlp --batch 64: 79 ulp after 21 steps against G's 1,700, 1,084 after 100 against
 * 11,900; tests/test_graph_secure_drift.c checks a small MLP over 24 steps).
 */
static double momentum_steps(int steps, double m)
{
    if (m <= 0.0)
        return steps;
    return ((double)steps - m * (1.0 - pow(m, steps)) / (1.0 - m)) / (1.0 - m);
}

/* The secure steps and the parameters' reveal to the model owner (got[k]: the k-th parameter);
 * with tracing on, *prof ends as the last step's profile. */
static int secure_steps(const struct model *m, veil_party_t *pt, int steps, int cold,
                        double *loss, struct veil_run_stats *st, struct veil_run_profile *prof,
                        double **got)
{
    const int id = veil_party_id(pt), dealer = veil_party_is_dealer(pt);
    for (int s = 0; s < steps; s++) {
        struct veil_feed *feeds = NULL;
        size_t nf = 0;
        /* the parameters only at the first step of a --cold session, which shares them */
        int rc = dealer ? VEIL_OK : model_feeds(m, id, s, s == 0 && cold, &feeds, &nf);
        if (rc == VEIL_OK)
            rc = veil_train_step_reveal_loss(pt, feeds, nf, DATA_OWNER, NULL, &loss[s]);
        model_feeds_free(&feeds, nf);
        if (rc != VEIL_OK) {
            fprintf(stderr, "%s: secure step %d: %s\n", m->name, s, veil_last_error());
            return rc;
        }
        veil_party_last_stats(pt, &st[s]);
        printf("step %d: online %.4f s, sent %" PRIu64 " bytes, received %" PRIu64 " (%" PRIu64
               " from the dealer), %" PRIu64 " rounds",
               s, st[s].online_s, st[s].bytes_sent, st[s].bytes_recv, st[s].dealer_bytes_recv,
               st[s].rounds);
        if (!dealer && id == DATA_OWNER)
            printf(", loss %.5f", loss[s]);
        printf("\n");
        /* with tracing on (VEIL_TRACE): busy and overlap of the step, as example_run's runs */
        example_print_busy(pt, "step", s, prof);
    }
    for (size_t i = 0, k = 0; i < m->nleaves; i++) {
        if (m->leaves[i].is_input)
            continue;
        int rc = veil_party_reveal_param(pt, m->leaves[i].name, MODEL_OWNER, got ? got[k] : NULL);
        if (rc != VEIL_OK) {
            fprintf(stderr, "%s: revealing '%s': %s\n", m->name, m->leaves[i].name,
                    veil_last_error());
            return rc;
        }
        k++;
    }
    return VEIL_OK;
}

int example_train(struct model *m, const struct model_opts *mo, const struct example_opts *eo)
{
    const int steps = eo->runs > 0 ? eo->runs : 2;
    const int batch = mo->batch > 0 ? mo->batch : 1;
    veil_plan_t *plan = NULL;
    veil_party_t *pt = example_open(m, eo, 1, &plan);
    if (!pt)
        return 1;
    const int id = veil_party_id(pt), nparties = veil_party_nparties(pt);
    const int dealer = veil_party_is_dealer(pt), owner = !dealer && id == MODEL_OWNER;
    double *loss = calloc((size_t)steps, sizeof *loss), **got = NULL;
    struct veil_run_stats *st = calloc((size_t)steps, sizeof *st);
    size_t nparams = 0, nvalues = 0;
    for (size_t i = 0; i < m->nleaves; i++)
        if (!m->leaves[i].is_input) {
            nparams++;
            nvalues += m->leaves[i].numel;
        }
    int code = !loss || !st;
    if (owner && !code) {
        got = calloc(nparams, sizeof *got);
        code = !got;
        for (size_t i = 0, k = 0; i < m->nleaves && !code; i++)
            if (!m->leaves[i].is_input && !(got[k++] = calloc(m->leaves[i].numel, sizeof **got)))
                code = 1;
    }
    struct veil_compile_options co; /* example_open compiles with the defaults and --optimizer */
    veil_compile_options_defaults(&co);
    co.eps = 1e-4; /* example_open's, for Adam */
    static const char *const opt_name[VEIL_OPTIMIZER_COUNT] = {"SGD", "Adam", "AdamW"};
    printf("%s (%s) training, batch %d, %d parties%s: %zu parameters (%zu values), %s, lr %g, ",
           m->name, m->shape, batch, nparties, dealer ? ", this is the dealer" : "", nparams,
           nvalues, opt_name[eo->optimizer], co.lr);
    if (eo->optimizer == VEIL_OPTIMIZER_SGD)
        printf("momentum %g\n", co.momentum);
    else
        printf("betas %g %g, eps %g%s\n", co.beta1, co.beta2, co.eps,
               eo->optimizer == VEIL_OPTIMIZER_ADAMW ? ", weight decay 0.01" : "");
    struct veil_run_profile prof = {.run = -1};
    double prepare_s = -1; /* --cold: none */
    if (!code && !eo->cold && example_prepare(m, pt, "step", &prepare_s) != VEIL_OK)
        code = 1;
    if (!code && secure_steps(m, pt, steps, eo->cold, loss, st, &prof, got) != VEIL_OK)
        code = 1;
    if (veil_party_close(&pt) != VEIL_OK && !code) { /* the dealer learns it here */
        fprintf(stderr, "%s: %s\n", m->name, veil_last_error());
        code = 1;
    }

    /* Only the model owner learns the parameters; it checks them once StarPU is down and prints
     * the plaintext trainer's loss of each step beside the data owner's secure ones. */
    /* Adam moves a parameter by about lr a step whatever the gradient's size: it divides the
     * gradient by sqrt(vhat + eps), so the secure truncations' E ulps of gradient error, which
     * SGD multiplies by lr, move a step by up to lr E 2^-f / sqrt(vhat + eps): with eps = 1e-4,
     * 2% of lr a step measured (transformer and mlp --small); the check accepts 10%. */
    const int sgd = eo->optimizer == VEIL_OPTIMIZER_SGD;
    const double per_step = sgd ? m->train_tol : fmax(m->train_tol, 0.1 * co.lr);
    double err = 0, tol = per_step * (sgd ? momentum_steps(steps, co.momentum) : steps);
    int agree = 0;
    if (owner && code == 0) {
        double *plain_loss = calloc((size_t)steps, sizeof *plain_loss);
        if (!plain_loss || check_params(m, plan, steps, got, &err, plain_loss) != VEIL_OK)
            code = 1;
        agree = code == 0 && err <= tol;
        printf("check: trained parameters vs plaintext fixed-point trainer (round to nearest): "
               "max error %.3g (tolerance %.3g after %d steps): %s\n",
               err, tol, steps, agree ? "agree" : "DISAGREE");
        if (code == 0)
            for (int s = 0; s < steps; s++)
                printf("plaintext fixed-point step %d: loss %.5f\n", s, plain_loss[s]);
        free(plain_loss);
        if (!agree)
            code = 1;
    }
    const struct veil_run_stats *last = &st[steps - 1];
    char who[16] = "dealer";
    if (!dealer)
        snprintf(who, sizeof who, "%d", id);
    printf("model=%s parties=%d party=%s batch=%d steps=%d", m->name, nparties, who, batch, steps);
    if (owner)
        printf(" max_err=%.3g agree=%d", err, agree);
    if (!dealer && id == DATA_OWNER && code == 0)
        printf(" loss_first=%.5f loss_last=%.5f", loss[0], loss[steps - 1]);
    printf(" step_online_s=%.3f first_step_online_s=%.3f bytes_sent=%" PRIu64 " rounds=%" PRIu64,
           last->online_s, st[0].online_s, last->bytes_sent, last->rounds);
    if (prepare_s >= 0)
        printf(" prepare_s=%.3f", prepare_s);
    if (prof.run == steps - 1) /* the last step's profile (tracing on); a step is one run */
        example_print_busy_fields(&prof);
    printf("\n");
    if (got)
        for (size_t k = 0; k < nparams; k++)
            free(got[k]);
    free(got);
    free(loss);
    free(st);
    veil_plan_destroy(&plan);
    return code;
}

int example_main(struct model *m, const struct model_opts *mo, const struct example_opts *eo)
{
    if (eo->write_preproc)
        return example_preproc(m, eo);
    return mo->train ? example_train(m, mo, eo) : example_run(m, mo, eo);
}

int example_build_and_run(const char *prog, int (*build)(struct model *, const struct model_opts *),
                          const struct model_opts *mo, const struct example_opts *eo)
{
    struct model m;
    int rc = build(&m, mo);
    if (rc != VEIL_OK) {
        fprintf(stderr, "%s: %s\n", prog, veil_strerror(rc));
        return 1;
    }
    rc = example_main(&m, mo, eo);
    model_free(&m);
    return rc;
}

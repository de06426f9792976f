/* Tests Adam and AdamW training (veil_compile_options.optimizer) on a small MLP (dense 6->5, relu,
 * dense 5->3, softmax cross-entropy; 53 parameters, batch 4) for K = 4 steps:
 *  - the DOUBLE plaintext trainer against Adam written out here in doubles, step by step on the
 *    gradients the trainer applied (bias corrections included): within 1e-12;
 *  - the FIXED plaintext trainer against the DOUBLE one: within TOL_FIXED;
 *  - secure training, 2 parties and the dealer as real processes, Adam (eps 1e-8, coupled decay)
 *    and AdamW (eps 1e-6, decoupled decay): every parameter after K steps against the FIXED
 *    trainer within TOL_SECURE_FIXED and against the DOUBLE trainer within TOL_SECURE_DOUBLE;
 *  - a checkpoint after step 2 of the Adam session, loaded by a new session of the same processes
 *    (same session id and material seed), which does steps 3 and 4: its weights equal the
 *    uninterrupted run's bit for bit (the moments and the step count round-trip); the same files
 *    rewritten as version 1, or as version 2 (whose records cannot hold a second moment), are
 *    refused by every process naming why;
 *  - the update's cost: the second step of Adam minus that of SGD (momentum 0, no decay) on the
 *    same model, bytes sent by party 0, equals the formula per parameter tensor of n elements
 *    (N = 2) B_oct(n) + 232 n - 8 n (the normalised inverse square root over 32 octaves,
 *    tasks/rsqrt_norm.h, B_oct(n) + 144 n, and 10 products and truncations; SGD's 8 n), B_oct
 *    the octave bits' bytes (veil_octave_bits_cost, bit positions 9..39), and its rounds
 *    R_oct + 18 per parameter tensor (R_oct = 13, the octave bits' rounds; counted); the
 *    offline phase (veil_plan_preproc_runs) of 2 Adam steps needs more material than SGD's;
 *  - bad options refused by veil_compile with a message naming the option, its value and what to
 *    give (beta1 or beta2 outside [0, 1), eps <= 0, lr <= 0, an unknown optimizer, 1 - beta2 or eps
 *    too small for the fixed point), and an SGD plan's digest does not depend on Adam's fields.
 * TOLERANCES. Adam's step is lr mhat / sqrt(vhat + eps), at most about lr per step and element
 * whatever the gradient's size, so its errors are relative to lr K: a gradient element's
 * fixed-point error (a few ulps, 2^-16, from the truncations of the forward and backward passes,
 * and enc(1 - beta2)'s rounding, 0.7% of the second moment's decay) moves its update by that
 * error over sqrt(vhat + eps), a small fraction of lr except where the gradient itself is a few
 * ulps. Measured worst over the 53 parameters after K = 4 steps with lr = 0.01: FIXED vs DOUBLE
 * 6.8e-5 (Adam) and 2.8e-4 (AdamW), secure vs FIXED 6.1e-5 and 3.1e-4, secure vs DOUBLE 3.7e-5 and
 * 5.2e-5. Asserted: TOL_FIXED = TOL_SECURE_FIXED = 0.05 lr K = 2e-3 and TOL_SECURE_DOUBLE = their
 * sum, 4e-3 (1% and 2% of the largest possible move, lr K).
 * The measured errors are printed with VEIL_TEST_VERBOSE=1. */
#include "config.h"
#include "data/data_internal.h"
#include "tasks/nonlinear_internal.h"
#include "test_graph_util.h"
#include "test_mpc_util.h"
#include "test_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define K 4
#define B 4
#define NP 4
#define MAXN 32
#define LR 0.01
#define WD 0.01
#define TOL_FIXED (0.05 * LR * K)
#define TOL_SECURE_FIXED (0.05 * LR * K)
#define TOL_SECURE_DOUBLE (TOL_FIXED + TOL_SECURE_FIXED)
#define SEED "adad0000000000000000000000000001"
#define SESSION "adad5e55105e55105e55105e55105e55"

static const char *pnames[NP] = {"w1", "b1", "w2", "b2"};
static const size_t pnumel[NP] = {30, 5, 15, 3};

enum mode { FULL, SAVE, RESUME, COST, REFUSE };

struct shared {
    double w[3][NP][MAXN]; /* per mode FULL, SAVE (unused), RESUME: party 0's final weights */
    uint64_t steps_after_load[3];
    char refusal[2][3][256]; /* per altered file (version 1; version 2 with moments), process */
    int refusal_rc[2][3];
    struct veil_run_stats stats;
};

static struct shared *sh;
static double xs[K][B * 6], ls[K][B * 3], w0[NP][MAXN];
static char dir[64];
static enum mode mode;
static const veil_plan_t *cur;

static veil_plan_t *mlp(int optimizer, double eps, const struct veil_compile_options *base)
{
    veil_graph_t *g = veil_graph_new("mlp_adam");
    size_t dx[2] = {B, 6}, dw1[2] = {6, 5}, db1[1] = {5}, dw2[2] = {5, 3}, db2[1] = {3};
    size_t dl[2] = {B, 3};
    veil_node_t *x = veil_input(g, "x", 1, 2, dx), *lab = veil_input(g, "labels", 1, 2, dl);
    veil_node_t *h = veil_relu(g, "r", veil_dense(g, "fc1", x, veil_param(g, "w1", 0, 2, dw1),
                                                  veil_param(g, "b1", 0, 1, db1)));
    veil_node_t *y =
        veil_dense(g, "fc2", h, veil_param(g, "w2", 0, 2, dw2), veil_param(g, "b2", 0, 1, db2));
    veil_softmax_cross_entropy(g, "loss", y, lab);
    struct veil_compile_options o;
    veil_compile_options_defaults(&o);
    if (base)
        o = *base;
    o.training = 1;
    if (!base) {
        o.optimizer = optimizer;
        o.lr = LR;
        o.weight_decay = optimizer == VEIL_OPTIMIZER_SGD ? 0.0 : WD;
        o.momentum = optimizer == VEIL_OPTIMIZER_SGD ? 0.0 : o.momentum;
        o.eps = eps;
    }
    veil_plan_t *p = veil_compile(g, &o);
    veil_graph_destroy(&g);
    return p;
}

static size_t feeds(int s, struct veil_feed *f)
{
    f[0] = (struct veil_feed){"x", xs[s], B * 6};
    f[1] = (struct veil_feed){"labels", ls[s], B * 3};
    for (int i = 0; i < NP; i++)
        f[2 + i] = (struct veil_feed){pnames[i], w0[i], pnumel[i]};
    return 2 + NP;
}

static void ckpt_path(char *out, size_t len, int id)
{
    snprintf(out, len, "%s/adam.p%d", dir, id);
}

/* One process: FULL: K steps with a checkpoint after step 2; RESUME: load it, steps 3..K;
 * COST: one step. Party 0 receives every parameter at the end. */
static int child(const struct veil_harness_party *me, void *arg)
{
    (void)arg;
    struct veil_party_options po;
    veil_party_options_defaults(&po);
    po.material_seed = SEED;
    veil_party_t *pt = veil_party_open(cur, &po);
    if (!pt) {
        fprintf(stderr, "process %d: open: %s\n", me->id, veil_last_error());
        return 3;
    }
    char path[128];
    ckpt_path(path, sizeof path, me->id);
    int rc = VEIL_OK, first = 0;
    if (mode == REFUSE) {
        for (int v = 0; v < 2; v++) {
            char alt[160];
            snprintf(alt, sizeof alt, "%s.v%d", path, v + 1);
            sh->refusal_rc[v][me->id] = veil_party_load(pt, alt);
            snprintf(sh->refusal[v][me->id], 256, "%s", veil_last_error());
        }
        veil_party_close(&pt);
        return 0;
    }
    if (mode == RESUME) {
        rc = veil_party_load(pt, path);
        first = (int)veil_party_steps(pt);
        sh->steps_after_load[me->id] = (uint64_t)first;
    }
    const int last = mode == COST ? 2 : K; /* COST: the second step's (c2 is 1 at the first) */
    for (int s = first; rc == VEIL_OK && s < last; s++) {
        struct veil_feed f[2 + NP];
        rc = veil_train_step(pt, f, feeds(s, f));
        if (rc == VEIL_OK && mode == FULL && s == 1)
            rc = veil_party_save(pt, path);
        if (rc == VEIL_OK && mode == COST && me->id == 0)
            veil_party_last_stats(pt, &sh->stats);
    }
    for (int i = 0; rc == VEIL_OK && mode != COST && i < NP; i++)
        rc = veil_party_reveal_param(pt, pnames[i], 0, me->id == 0 ? sh->w[mode][i] : NULL);
    if (rc != VEIL_OK)
        fprintf(stderr, "process %d: %s\n", me->id, veil_last_error());
    veil_party_close(&pt);
    return rc == VEIL_OK ? 0 : 4;
}

static int run(enum mode m, const veil_plan_t *p)
{
    mode = m;
    cur = p;
    struct veil_test_graph_opts o = {.nparties = 2, .dealer = 1, .timeout_s = 240,
                                     .session = SESSION};
    return veil_test_graph_run(&o, child, NULL, NULL);
}

/* Trains p for K steps in mode into out[param][element]; grads (may be NULL) receives each step's
 * applied gradients. */
static int train_plain(const veil_plan_t *p, enum veil_plain_mode pm, double out[NP][MAXN],
                       double grads[K][NP][MAXN])
{
    struct veil_feed pf[NP];
    for (int i = 0; i < NP; i++)
        pf[i] = (struct veil_feed){pnames[i], w0[i], pnumel[i]};
    veil_plain_trainer_t *t = veil_plain_trainer_new(p, pm, pf, NP);
    VT_CHECK(t != NULL, "trainer: %s", veil_last_error());
    if (!t)
        return 1;
    int rc = VEIL_OK;
    for (int s = 0; s < K && rc == VEIL_OK; s++) {
        struct veil_feed f[2 + NP];
        (void)feeds(s, f);
        rc = veil_plain_trainer_step(t, f, 2, NULL); /* x, labels: parameters are bound */
        for (int i = 0; grads && rc == VEIL_OK && i < NP; i++)
            rc = veil_plain_trainer_grad(t, pnames[i], grads[s][i]);
    }
    for (int i = 0; rc == VEIL_OK && i < NP; i++)
        rc = veil_plain_trainer_param(t, pnames[i], out[i]);
    VT_CHECK(rc == VEIL_OK, "plain training: %s", veil_last_error());
    veil_plain_trainer_destroy(&t);
    return rc != VEIL_OK;
}

/* The largest |a - b| over every parameter element. */
static double max_diff(double a[NP][MAXN], double b[NP][MAXN])
{
    double worst = 0;
    for (int i = 0; i < NP; i++)
        for (size_t e = 0; e < pnumel[i]; e++) {
            const double d = fabs(a[i][e] - b[i][e]);
            worst = d > worst || isnan(d) ? d : worst;
        }
    return worst;
}

/* The DOUBLE trainer against Adam / AdamW written out here, on the trainer's own gradients. */
static void check_double_rule(const veil_plan_t *p, int adamw, double eps)
{
    static double grads[K][NP][MAXN], got[NP][MAXN], ref[NP][MAXN], m[NP][MAXN], v[NP][MAXN];
    if (train_plain(p, VEIL_PLAIN_DOUBLE, got, grads))
        return;
    memcpy(ref, w0, sizeof ref);
    memset(m, 0, sizeof m);
    memset(v, 0, sizeof v);
    for (int s = 0; s < K; s++)
        for (int i = 0; i < NP; i++)
            for (size_t e = 0; e < pnumel[i]; e++) {
                const double g = grads[s][i][e] + (adamw ? 0.0 : WD * ref[i][e]);
                m[i][e] = 0.9 * m[i][e] + 0.1 * g;
                v[i][e] = 0.999 * v[i][e] + 0.001 * g * g;
                const double mh = m[i][e] / (1 - pow(0.9, s + 1));
                const double vh = v[i][e] / (1 - pow(0.999, s + 1));
                ref[i][e] -= LR * (mh / sqrt(vh + eps) + (adamw ? WD * ref[i][e] : 0.0));
            }
    const double d = max_diff(got, ref);
    VT_CHECK(d <= 1e-12, "%s DOUBLE trainer differs from the rule by %.3g",
             adamw ? "AdamW" : "Adam", d);
}

/* Compile-time refusals, each naming its option. */
static void check_refusals(void)
{
    static const struct {
        int optimizer;
        double beta1, beta2, eps, lr;
        const char *says, *hint;
    } bad[] = {
        {VEIL_OPTIMIZER_ADAM, 1.0, 0.999, 1e-8, 0.01, "Adam beta1 1", "[0, 1)"},
        {VEIL_OPTIMIZER_ADAM, -0.1, 0.999, 1e-8, 0.01, "Adam beta1 -0.1", "[0, 1)"},
        {VEIL_OPTIMIZER_ADAMW, 0.9, 1.0, 1e-8, 0.01, "AdamW beta2 1", "[0, 1)"},
        {VEIL_OPTIMIZER_ADAM, 0.9, NAN, 1e-8, 0.01, "Adam beta2 nan", "[0, 1)"},
        {VEIL_OPTIMIZER_ADAM, 0.9, 0.999, 0.0, 0.01, "Adam eps 0", "(0, 1]"},
        {VEIL_OPTIMIZER_ADAMW, 0.9, 0.999, -1e-8, 0.01, "AdamW eps -1e-08", "(0, 1]"},
        {VEIL_OPTIMIZER_ADAM, 0.9, 0.999, 1e-8, 0.0, "learning rate 0", "(0, 1]"},
        {VEIL_OPTIMIZER_ADAMW, 0.9, 0.999, 1e-8, -0.001, "learning rate -0.001", "(0, 1]"},
        {7, 0.9, 0.999, 1e-8, 0.01, "optimizer 7", "VEIL_OPTIMIZER_ADAM"},
        {VEIL_OPTIMIZER_ADAM, 0.9, 0.99999, 1e-8, 0.01, "1 - beta2", "smaller beta2"},
        {VEIL_OPTIMIZER_ADAM, 0.9, 0.999, 1e-15, 0.01, "eps 1e-15", "use eps >="},
    };
    for (size_t c = 0; c < sizeof bad / sizeof bad[0]; c++) {
        struct veil_compile_options o;
        veil_compile_options_defaults(&o);
        o.optimizer = bad[c].optimizer;
        o.beta1 = bad[c].beta1;
        o.beta2 = bad[c].beta2;
        o.eps = bad[c].eps;
        o.lr = bad[c].lr;
        veil_plan_t *p = mlp(0, 0, &o);
        const char *msg = veil_last_error();
        VT_CHECK(!p && strstr(msg, bad[c].says) && strstr(msg, bad[c].hint),
                 "case %zu: expected a refusal naming '%s' and saying '%s', got %s: %s", c,
                 bad[c].says, bad[c].hint, p ? "a plan" : "no plan", msg);
        veil_test_log("refused: %s", msg);
        veil_plan_destroy(&p);
    }
    /* an SGD plan's digest ignores Adam's fields; Adam and AdamW plans differ from it */
    struct veil_compile_options o;
    veil_compile_options_defaults(&o);
    veil_plan_t *a = mlp(0, 0, &o);
    o.beta1 = 0.5;
    o.eps = 1e-3;
    veil_plan_t *b = mlp(0, 0, &o);
    o.optimizer = VEIL_OPTIMIZER_ADAM;
    veil_plan_t *c = mlp(0, 0, &o);
    VT_CHECK(a && b && c && memcmp(veil_plan_digest(a), veil_plan_digest(b), 32) == 0 &&
                 memcmp(veil_plan_digest(a), veil_plan_digest(c), 32) != 0,
             "SGD digest depends on Adam's fields, or Adam's equals SGD's");
    veil_plan_destroy(&a);
    veil_plan_destroy(&b);
    veil_plan_destroy(&c);
}

/* Each process's checkpoint rewritten as version 1 (.v1) and, moments kept, as version 2 (.v2),
 * with a valid SHA-256: both must be refused naming why. */
static void check_old_versions(const veil_plan_t *p)
{
    for (int id = 0; id < 3; id++) {
        char path[128], alt[160];
        ckpt_path(path, sizeof path, id);
        uint8_t *b = NULL;
        size_t len = 0;
        VT_CHECK(veil_data_read_file(path, 0, &b, &len) == VEIL_OK && len > 44, "read %s: %s",
                 path, veil_last_error());
        VT_CHECK(b && b[8] == 3, "an Adam checkpoint is version 3, not %d", b ? b[8] : -1);
        for (int v = 0; b && v < 2; v++) {
            b[8] = (uint8_t)(v + 1);
            veil_data_sha256(b, len - 32, b + len - 32, "test");
            snprintf(alt, sizeof alt, "%s.v%d", path, v + 1);
            FILE *f = fopen(alt, "wb");
            VT_CHECK(f && fwrite(b, 1, len, f) == len, "write %s", alt);
            if (f)
                fclose(f);
        }
        free(b);
    }
    VT_CHECK(run(REFUSE, p) == VEIL_OK, "refusal run failed");
    static const char *const says[2] = {"version 1, this build reads 2 and 3", "bad flags"};
    for (int v = 0; v < 2; v++)
        for (int id = 0; id < 3; id++) {
            VT_CHECK(sh->refusal_rc[v][id] != VEIL_OK && strstr(sh->refusal[v][id], says[v]),
                     "process %d loading a version %d file: rc %d, \"%s\" (expected '%s')", id,
                     v + 1, sh->refusal_rc[v][id], sh->refusal[v][id], says[v]);
            veil_test_log("version %d file at process %d: %s", v + 1, id, sh->refusal[v][id]);
        }
    for (int id = 0; id < 3; id++)
        for (int v = 0; v < 2; v++) {
            char path[128], alt[160];
            ckpt_path(path, sizeof path, id);
            snprintf(alt, sizeof alt, "%s.v%d", path, v + 1);
            unlink(alt);
        }
}

/* Bytes party 0 sends (N = 2) for the inverse square root's octave bits over Adam's 32
 * octaves [2^-8, 2^24) at f = 16 (tasks/nonlinear_internal.h, veil_octave_bits_cost); *rounds
 * its rounds. */
static uint64_t b_octave(uint64_t n, uint64_t *rounds)
{
    uint64_t b = 0;
    veil_octave_bits_cost(2, n, 16 - 8 + 1, 16 + 24 - 1, rounds, &b);
    return b;
}

/* Secure Adam (with the checkpoint round trip) or AdamW against both plaintext trainers. */
static void check_secure(int adamw, double eps)
{
    const char *nm = adamw ? "AdamW" : "Adam";
    veil_plan_t *p = mlp(adamw ? VEIL_OPTIMIZER_ADAMW : VEIL_OPTIMIZER_ADAM, eps, NULL);
    VT_CHECK(p != NULL, "%s compile: %s", nm, veil_last_error());
    if (!p)
        return;
    static double wd[NP][MAXN], wf[NP][MAXN];
    check_double_rule(p, adamw, eps);
    if (train_plain(p, VEIL_PLAIN_DOUBLE, wd, NULL) || train_plain(p, VEIL_PLAIN_FIXED, wf, NULL))
        goto out;
    const double dfd = max_diff(wf, wd);
    VT_CHECK(dfd <= TOL_FIXED, "%s: FIXED trainer vs DOUBLE %.4g > %.4g", nm, dfd, TOL_FIXED);
    memset(sh, 0, sizeof *sh);
    if (run(FULL, p) != VEIL_OK) {
        VT_CHECK(0, "%s: secure training failed", nm);
        goto out;
    }
    const double dsf = max_diff(sh->w[FULL], wf), dsd = max_diff(sh->w[FULL], wd);
    VT_CHECK(dsf <= TOL_SECURE_FIXED, "%s: secure vs FIXED trainer %.4g > %.4g", nm, dsf,
             TOL_SECURE_FIXED);
    VT_CHECK(dsd <= TOL_SECURE_DOUBLE, "%s: secure vs DOUBLE trainer %.4g > %.4g", nm, dsd,
             TOL_SECURE_DOUBLE);
    double moved = 0;
    for (int i = 0; i < NP; i++)
        for (size_t e = 0; e < pnumel[i]; e++)
            moved = fmax(moved, fabs(sh->w[FULL][i][e] - w0[i][e]));
    VT_CHECK(moved > 0.5 * LR, "%s: the weights barely moved (%.3g)", nm, moved);
    veil_test_log("%s after %d steps: FIXED-DOUBLE %.3g, secure-FIXED %.3g, secure-DOUBLE %.3g "
                  "(largest move %.3g)", nm, K, dfd, dsf, dsd, moved);
    if (!adamw) {
        VT_CHECK(run(RESUME, p) == VEIL_OK, "%s: resumed run failed", nm);
        for (int id = 0; id < 3; id++)
            VT_CHECK(sh->steps_after_load[id] == 2, "process %d resumed after step %llu, not 2",
                     id, (unsigned long long)sh->steps_after_load[id]);
        for (int i = 0; i < NP; i++)
            VT_CHECK(memcmp(sh->w[FULL][i], sh->w[RESUME][i], pnumel[i] * 8) == 0,
                     "%s: '%s' after a resumption differs from the uninterrupted run", nm,
                     pnames[i]);
        check_old_versions(p);
        /* the update's cost: an Adam step minus an SGD step */
        VT_CHECK(run(COST, p) == VEIL_OK, "cost run (Adam) failed");
        const struct veil_run_stats adam = sh->stats;
        veil_plan_t *sgd = mlp(VEIL_OPTIMIZER_SGD, eps, NULL);
        VT_CHECK(sgd && run(COST, sgd) == VEIL_OK, "cost run (SGD) failed");
        uint64_t want = 0, elems = 0, orounds = 0;
        for (int i = 0; i < NP; i++) {
            const uint64_t n = pnumel[i];
            want += b_octave(n, &orounds) + 224 * n;
            elems += n;
        }
        const uint64_t got = adam.bytes_sent - sh->stats.bytes_sent;
        VT_CHECK(got == want, "Adam's update sent %llu bytes more than SGD's, the formula says "
                 "%llu", (unsigned long long)got, (unsigned long long)want);
        VT_CHECK(adam.rounds - sh->stats.rounds == (18 + orounds) * NP, "Adam's update counted "
                 "%llu rounds more than SGD's, not %llu",
                 (unsigned long long)(adam.rounds - sh->stats.rounds),
                 (unsigned long long)((18 + orounds) * NP));
        /* the offline phase records the update's material for every step (the step number of
         * each recorded run sets the public constants, not the items) */
        uint64_t ia = 0, ba = 0, is = 0, bs = 0;
        VT_CHECK(veil_plan_preproc_runs(p, 2, 2, &ia, &ba) == VEIL_OK && sgd &&
                     veil_plan_preproc_runs(sgd, 2, 2, &is, &bs) == VEIL_OK && ba > bs &&
                     ia > is,
                 "preprocessing of 2 Adam steps: %llu items, %llu bytes (SGD: %llu, %llu): %s",
                 (unsigned long long)ia, (unsigned long long)ba, (unsigned long long)is,
                 (unsigned long long)bs, veil_last_error());
        veil_test_log("Adam step: %llu bytes, %llu rounds; SGD step: %llu bytes, %llu rounds; "
                      "the update: %.1f bytes per parameter element (%llu elements)",
                      (unsigned long long)adam.bytes_sent, (unsigned long long)adam.rounds,
                      (unsigned long long)sh->stats.bytes_sent,
                      (unsigned long long)sh->stats.rounds, (double)got / (double)elems,
                      (unsigned long long)elems);
        veil_plan_destroy(&sgd);
    }
out:
    veil_plan_destroy(&p);
}

int main(void)
{
    sh = veil_test_mpc_shared(sizeof *sh);
    snprintf(dir, sizeof dir, "/tmp/veil-adam-XXXXXX");
    if (!sh || !mkdtemp(dir))
        return 1;
    uint64_t r = 0x9e3779b97f4a7c15u;
    for (int s = 0; s < K; s++) {
        for (int i = 0; i < B * 6; i++) {
            r ^= r << 13, r ^= r >> 7, r ^= r << 17;
            xs[s][i] = (double)(r % 2000) / 1000.0 - 1.0;
        }
        for (int b = 0; b < B; b++)
            ls[s][b * 3 + (s + b) % 3] = 1.0;
    }
    for (int i = 0; i < NP; i++)
        for (size_t e = 0; e < pnumel[i]; e++) {
            r ^= r << 13, r ^= r >> 7, r ^= r << 17;
            w0[i][e] = (double)(r % 1000) / 1000.0 * 0.8 - 0.4;
        }
    check_refusals();
    check_secure(0, 1e-8);
    check_secure(1, 1e-6);
    for (int id = 0; id < 3; id++) {
        char path[128], prev[160];
        ckpt_path(path, sizeof path, id);
        snprintf(prev, sizeof prev, "%s.prev", path);
        unlink(path);
        unlink(prev);
    }
    rmdir(dir);
    veil_test_mpc_shared_free(sh, sizeof *sh);
    return veil_test_status();
}

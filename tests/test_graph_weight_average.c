/* Tests weight-averaged data parallelism (veil_compile_options.dp_average = WEIGHTS) with the
 * plaintext trainer: an MLP with a loss (batch 8) in R = 2 micro-batches, each a replica with its
 * own weights ("w1" and "w1~r1", both fed from "w1"). With K = 1, momentum and weight decay 0,
 * one step equals gradient averaging's step: replica j moves by lr R g_j (g_j its autodiff
 * gradient, 1/R of its own rows' mean loss's), and their mean, w - lr (g_0 + g_1), is the
 * gradient-averaged update, whose gradient is the same sum of the same per-copy products. In
 * DOUBLE the two differ only by the roundings of lr (R g_j), of w - that and of the mean (a few
 * ulps of |w| < 1, far below 1e-12); in FIXED by the truncations (floor of each replica's lr
 * product, then of the mean: 2 ulp). With K = 2 and momentum on: after step 1 the replicas
 * differ (each trained on its own rows, not averaged yet), after step 2 they are equal word for
 * word (averaged), and the result differs from gradient averaging's (the control: per-replica
 * momentum and gradients at per-replica weights make the schemes differ). The plan digest
 * differs between the schemes and between K = 1 and 2; with K = 1 momentum does not break the
 * equality (SGD with momentum is linear in the gradients and the replicas start every step
 * equal: the mean velocity is gradient averaging's), checked over 2 steps in DOUBLE; the offline
 * phase's count (veil_plan_preproc, one run = step 1) includes the averaging's truncations with
 * K = 1 and not with K = 2. Bad input, refused with a message saying
 * what to change: WEIGHTS with microbatches 1, K = 0, an inference plan, an unknown scheme. */
#include "config.h"
#include "graph/graph_internal.h"
#include "test_graph_nets.h"
#include "test_util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define B 8 /* veil_test_train_mlp's batch */
#define NP 3

static const char *pname[NP] = {"w1", "b1", "w2"};
static const size_t pnumel[NP] = {30, 5, 15};
static double x[B * 6], labels[B * 3], w1[30], b1[5], w2[15];

static void data(void)
{
    veil_test_train_mlp_values(11, x, w1, b1, w2);
    for (size_t r = 0; r < B; r++)
        labels[r * 3 + (r * 7 + r / 3) % 3] = 1;
}

static veil_plan_t *compile(int scheme, int every, double momentum)
{
    veil_graph_t *g = veil_test_train_mlp("wavg_mlp");
    struct veil_compile_options o;
    veil_compile_options_defaults(&o);
    o.training = 1;
    o.lr = 0.125;
    o.momentum = momentum;
    o.microbatches = 2;
    o.dp_average = scheme;
    o.average_every = every;
    veil_plan_t *p = veil_compile(g, &o);
    VT_CHECK(p != NULL, "compile (scheme %d, K %d): %s", scheme, every, veil_last_error());
    veil_graph_destroy(&g);
    return p;
}

/* got[s][i][e]: parameter i (replica 0, by its name) after step s + 1; rep[s][i][e]: replica 1. */
struct trained {
    double got[2][NP][30], rep[2][NP][30];
};

static void train(veil_plan_t *p, enum veil_plain_mode mode, int steps, struct trained *out)
{
    const struct veil_feed params[] = {{"w1", w1, 30}, {"b1", b1, 5}, {"w2", w2, 15}};
    const struct veil_feed in[] = {{"x", x, B * 6}, {"labels", labels, B * 3}};
    memset(out, 0, sizeof *out);
    veil_plain_trainer_t *t = p ? veil_plain_trainer_new(p, mode, params, NP) : NULL;
    VT_CHECK(t != NULL, "trainer: %s", veil_last_error());
    const int replicas = p && p->opts.dp_average == VEIL_DP_AVERAGE_WEIGHTS;
    for (int s = 0; t && s < steps; s++) {
        VT_CHECK(veil_plain_trainer_step(t, in, 2, NULL) == VEIL_OK, "step %d: %s", s + 1,
                 veil_last_error());
        for (int i = 0; i < NP; i++) {
            char name[32];
            snprintf(name, sizeof name, "%s~r1", pname[i]);
            VT_CHECK(veil_plain_trainer_param(t, pname[i], out->got[s][i]) == VEIL_OK, "%s: %s",
                     pname[i], veil_last_error());
            if (replicas)
                VT_CHECK(veil_plain_trainer_param(t, name, out->rep[s][i]) == VEIL_OK, "%s: %s",
                         name, veil_last_error());
        }
    }
    veil_plain_trainer_destroy(&t);
}

static double max_diff(double (*a)[30], double (*b)[30])
{
    double worst = 0;
    for (int i = 0; i < NP; i++)
        for (size_t e = 0; e < pnumel[i]; e++)
            worst = fmax(worst, fabs(a[i][e] - b[i][e]));
    return worst;
}

/* K = 1: the steps of weight averaging equal gradient averaging's. */
static void one_step_equal(enum veil_plain_mode mode, double tol, const char *what, double mom,
                           int steps)
{
    veil_plan_t *ga = compile(VEIL_DP_AVERAGE_GRADIENTS, 1, mom);
    veil_plan_t *wa = compile(VEIL_DP_AVERAGE_WEIGHTS, 1, mom);
    if (wa) /* replica 1 of every parameter, fed from the original name */
        VT_CHECK(veil_plan_find(wa, "w1~r1") >= 0 && veil_plan_find(wa, "b1~r1") >= 0 &&
                     veil_plan_find(wa, "w2~r1") >= 0 && veil_plan_find(ga, "w1~r1") < 0,
                 "WEIGHTS: no replica parameters in the plan");
    static struct trained a, b;
    train(ga, mode, steps, &a);
    train(wa, mode, steps, &b);
    const double d = max_diff(a.got[steps - 1], b.got[steps - 1]);
    VT_CHECK(d <= tol, "%s: K = 1, %d steps: weight averaging differs from gradient averaging by "
             "%.3g > %.3g", what, steps, d, tol);
    VT_CHECK(max_diff(b.got[steps - 1], b.rep[steps - 1]) == 0.0, "%s: K = 1: replicas not "
             "averaged", what);
    /* the step moved the weights (the comparison is not vacuous) */
    VT_CHECK(fabs(a.got[0][0][0] - w1[0]) > 1e-4 || fabs(a.got[0][0][1] - w1[1]) > 1e-4,
             "%s: the step did not move w1", what);
    veil_test_log("%s: K = 1, momentum %g: %d step(s) within %.3g of gradient averaging (bound "
                  "%.3g)", what, mom, steps, d, tol);
    veil_plan_destroy(&ga);
    veil_plan_destroy(&wa);
}

/* K = 2, momentum on: replicas differ after step 1, equal after step 2, and the result is not
 * gradient averaging's. */
static void every_two(enum veil_plain_mode mode, const char *what)
{
    veil_plan_t *ga = compile(VEIL_DP_AVERAGE_GRADIENTS, 1, 0.9);
    veil_plan_t *wa = compile(VEIL_DP_AVERAGE_WEIGHTS, 2, 0.9);
    static struct trained a, b;
    train(ga, mode, 2, &a);
    train(wa, mode, 2, &b);
    const double d1 = max_diff(b.got[0], b.rep[0]), d2 = max_diff(b.got[1], b.rep[1]);
    const double dc = max_diff(a.got[1], b.got[1]);
    VT_CHECK(d1 > 1e-4, "%s: K = 2: after step 1 the replicas differ by only %.3g", what, d1);
    VT_CHECK(d2 == 0.0, "%s: K = 2: after step 2 the replicas differ by %.3g (not averaged)",
             what, d2);
    VT_CHECK(dc > 1e-4, "%s: K = 2, momentum 0.9: weight averaging equals gradient averaging "
             "within %.3g (the control)", what, dc);
    veil_test_log("%s: K = 2: replicas differ by %.3g after step 1, %.3g after step 2; %.3g from "
                  "gradient averaging", what, d1, d2, dc);
    veil_plan_destroy(&ga);
    veil_plan_destroy(&wa);
}

static void digests_and_preproc(void)
{
    veil_plan_t *ga = compile(VEIL_DP_AVERAGE_GRADIENTS, 1, 0.9);
    veil_plan_t *k1 = compile(VEIL_DP_AVERAGE_WEIGHTS, 1, 0.9);
    veil_plan_t *k2 = compile(VEIL_DP_AVERAGE_WEIGHTS, 2, 0.9);
    if (ga && k1 && k2) {
        VT_CHECK(memcmp(veil_plan_digest(ga), veil_plan_digest(k1), 32) != 0 &&
                     memcmp(veil_plan_digest(k1), veil_plan_digest(k2), 32) != 0,
                 "the plan digest does not tell the averaging settings apart");
        uint64_t i1 = 0, i2 = 0, b1b = 0, b2b = 0;
        VT_CHECK(veil_plan_preproc(k1, 2, &i1, &b1b) == VEIL_OK &&
                     veil_plan_preproc(k2, 2, &i2, &b2b) == VEIL_OK,
                 "veil_plan_preproc: %s", veil_last_error());
        VT_CHECK(i1 > i2 && b1b > b2b, "preproc of step 1: %llu items with K = 1, %llu with K = 2",
                 (unsigned long long)i1, (unsigned long long)i2);
        veil_test_log("preproc of step 1: %llu items, %llu bytes with K = 1 (averaging); %llu, "
                      "%llu with K = 2", (unsigned long long)i1, (unsigned long long)b1b,
                      (unsigned long long)i2, (unsigned long long)b2b);
    }
    veil_plan_destroy(&ga);
    veil_plan_destroy(&k1);
    veil_plan_destroy(&k2);
}

static void refused(int training, int microbatches, int scheme, int every, const char *says)
{
    veil_graph_t *g = veil_test_train_mlp("wavg_mlp");
    struct veil_compile_options o;
    veil_compile_options_defaults(&o);
    o.training = training;
    o.microbatches = microbatches;
    o.dp_average = scheme;
    o.average_every = every;
    if (!training) /* an inference plan needs an output */
        veil_reveal(g, veil_graph_find(g, "fc2"), 0);
    veil_plan_t *p = veil_compile(g, &o);
    VT_CHECK(!p, "compiled: training %d, microbatches %d, dp_average %d, K %d", training,
             microbatches, scheme, every);
    VT_CHECK(strstr(veil_last_error(), says) != NULL, "message '%s' does not say '%s'",
             veil_last_error(), says);
    veil_test_log("refused: %s", veil_last_error());
    veil_plan_destroy(&p);
    veil_graph_destroy(&g);
}

int main(void)
{
    data();
    one_step_equal(VEIL_PLAIN_DOUBLE, 1e-12, "DOUBLE", 0.0, 1);
    one_step_equal(VEIL_PLAIN_FIXED, 2.0 / 65536, "FIXED", 0.0, 1);
    one_step_equal(VEIL_PLAIN_DOUBLE, 1e-12, "DOUBLE", 0.9, 2);
    every_two(VEIL_PLAIN_DOUBLE, "DOUBLE");
    every_two(VEIL_PLAIN_FIXED, "FIXED");
    every_two(VEIL_PLAIN_FIXED_NEAREST, "FIXED_NEAREST");
    digests_and_preproc();
    refused(1, 1, VEIL_DP_AVERAGE_WEIGHTS, 1, "set microbatches to R >= 2");
    refused(1, 2, VEIL_DP_AVERAGE_WEIGHTS, 0, "average_every 0; give K >= 1");
    refused(0, 2, VEIL_DP_AVERAGE_WEIGHTS, 1, "set training = 1");
    refused(1, 2, 7, 1, "dp_average 7");
    return veil_test_status();
}

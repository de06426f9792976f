/* Tests secure training (veil_train_step, veil_party_reveal_param, the opt-in loss reveal)
 * against the plaintext trainer in FIXED mode, parties and the dealer as real processes. Three
 * networks cover every trainable layer: an MLP (dense, relu, softmax cross-entropy), a CNN
 * (conv2d stride 1 and 2 with padding, relu, max pooling, average pooling, global average
 * pooling, flatten, residual add, concat) and an attention block (dense projections, transpose,
 * matmul of two secrets, scale, softmax, residual add, layer norm). Momentum and weight decay are
 * on; N = 2 and 3; two steps; after each, every parameter is revealed and compared with the
 * trainer's, and the gradient the first step implies, (w0 - w1) / lr - wd w0, with the trainer's.
 * The MLP (N = 2, 3) and the CNN (N = 2) also train in 2 micro-batches (the inter-batch pipeline),
 * and the MLP (N = 2) with weight averaging (dp_average WEIGHTS, R = 2 replicas, averaged after
 * every K = 2 steps): both replicas of every parameter are revealed after each step (they differ
 * after step 1, the averaging makes them equal after step 2) and compared with the plaintext
 * trainer on the same plan; between the steps every process saves a checkpoint and loads it back
 * in place (the replicas and their velocities round-trip, and the step count that schedules the
 * averaging).
 *
 * PLACEMENT. The MLP and the CNN train on 2 devices (CPU workers) per party under DP (batch
 * slices and tiles spread; the weight gradients, which reduce over the batch, are summed inside
 * the party), TP, HYBRID and PP, with the dealer's material from a fixed seed: every revealed
 * parameter and the revealed loss equal the single-device session's bit for bit. The MLP with
 * weight averaging (2 replicas) also trains under DP over 2 devices, where each micro-batch copy
 * runs whole on its own device: with tracing on, every task of a node that belongs to copy j
 * (veil_placement_microbatch_of, itself checked against the copies' names "@mb<j>" and "~r<j>")
 * ran on device j, and both devices ran such tasks.
 *
 * BOUND. The secure truncation adds 0 or 1 ulp (u = 2^-16) to the floor of the plaintext, so a
 * gradient entry computed by a product reducing over F terms after D truncating layers on its
 * backward path carries at most about D F u of error times the operands' size (here <= 1), and
 * the update adds 3 u per step (momentum, weight decay, lr products). Over S steps the parameter
 * error is at most S (3 + lr D F) u; we assert that with each network's largest F and D (nonlinear
 * layers count 4 each for their Newton iterations), and the implied gradient within D F u + 4 u /
 * lr. Weight averaging multiplies each replica's gradient by R (exact), so its error too: R D F u
 * in place of D F u; the averaging adds the mean's truncation, 1 u, from its first step on (the
 * mean of the replicas' errors is no larger than the largest). The measured errors are printed
 * with VEIL_TEST_VERBOSE=1.
 *
 * Bad input: veil_train_step on an inference plan (VEIL_ERR_INVAL, says so); the owner of the
 * labels runs a step without them (it names 'labels', the peers stop naming the lost peer). */
#include "config.h"
#include "base/trace.h"
#include "graph/secure/exec_internal.h"
#include "test_graph_util.h"
#include "test_mpc_util.h"
#include "test_util.h"

#include <math.h>
#include <starpu.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAXP 10
#define MAXN 512
#define MAXFEED 16
#define MAXPROC 4
#define LR 0.0625
#define MOM 0.5
#define WD 0.015625

struct net {
    const char *name;
    veil_plan_t *plan;
    struct veil_feed feeds[MAXFEED];
    size_t nfeeds;
    const char *params[MAXP];
    size_t np;
    double want[2][MAXP][MAXN]; /* trainer's parameters after steps 1 and 2 */
    double grad1[MAXP][MAXN];   /* trainer's gradient of step 1 */
    double loss2;               /* trainer's loss of step 2 (before its update) */
    double fan_in, depth;       /* the bound's F and D */
    int drop_labels;
    int replicas;               /* weight averaging: "<param>~r1" too; a checkpoint round trip */
    double want_rep[2][MAXP][MAXN]; /* trainer's replica 1 after steps 1 and 2 */
};

struct shared {
    double got[2][MAXP][MAXN]; /* revealed at party 0 after steps 1 and 2 */
    double got_rep[2][MAXP][MAXN]; /* weight averaging: replica 1, the same way */
    double probs[16];          /* party 1: true-class probabilities of step 2 */
    double loss;
    struct veil_run_stats stats[MAXPROC];
    int inference_refused;
    /* check_copies, per party: tasks of copy j on device j / elsewhere, nodes whose copy
     * disagrees with their name */
    long copy_tasks[MAXPROC][2], copy_misplaced[MAXPROC], copy_misnamed[MAXPROC];
};

static struct net *cur;
static struct shared *sh;
/* Placement sessions (check_placement): the devices and placement of the next sessions and the
 * dealer's fixed material seed; devices 0: the default open (no placement, a drawn seed). */
static struct {
    int devices;
    enum veil_placement placement;
    int check_copies; /* DP over micro-batch copies: check where each copy's tasks ran */
} placed;
static int microbatches = 1; /* of the plans compiled next */
static int dp_average = VEIL_DP_AVERAGE_GRADIENTS, average_every = 1; /* likewise */
static char ckdir[64];          /* weight averaging's checkpoint round trip */
static uint64_t rng = 0x2545f4914f6cdd1du;

static double uniform(double lo, double hi)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return lo + (hi - lo) * (double)(rng >> 11) / 9007199254740992.0;
}

static void feed(struct net *t, const char *name, size_t numel, double lo, double hi, int param)
{
    double *v = malloc(numel * sizeof *v);
    for (size_t i = 0; i < numel; i++)
        v[i] = uniform(lo, hi);
    t->feeds[t->nfeeds++] = (struct veil_feed){.name = name, .values = v, .numel = numel};
    if (param)
        t->params[t->np++] = name;
}

/* One-hot labels (batch, classes). */
static void labels(struct net *t, size_t batch, size_t classes)
{
    double *v = calloc(batch * classes, sizeof *v);
    for (size_t r = 0; r < batch; r++)
        v[r * classes + (size_t)uniform(0, (double)classes) % classes] = 1.0;
    t->feeds[t->nfeeds++] = (struct veil_feed){.name = "labels", .values = v,
                                               .numel = batch * classes};
}

static veil_plan_t *compile(veil_graph_t *g, int training)
{
    struct veil_compile_options o;
    veil_compile_options_defaults(&o);
    o.tile = 128;
    o.training = training;
    o.lr = LR;
    o.momentum = MOM;
    o.weight_decay = WD;
    o.microbatches = microbatches;
    o.dp_average = dp_average;
    o.average_every = average_every;
    veil_plan_t *p = veil_compile(g, &o);
    VT_CHECK(p != NULL, "compile '%s': %s", veil_graph_name(g), veil_last_error());
    veil_graph_destroy(&g);
    return p;
}

static void mlp(struct net *t)
{
    veil_graph_t *g = veil_graph_new("mlp_train");
    size_t dx[2] = {4, 12}, dw1[2] = {12, 16}, db1[1] = {16}, dw2[2] = {16, 5}, db2[1] = {5};
    size_t dl[2] = {4, 5};
    veil_node_t *x = veil_input(g, "x", 1, 2, dx), *lab = veil_input(g, "labels", 1, 2, dl);
    veil_node_t *h = veil_relu(g, "r", veil_dense(g, "fc1", x, veil_param(g, "w1", 0, 2, dw1),
                                                  veil_param(g, "b1", 0, 1, db1)));
    veil_node_t *y =
        veil_dense(g, "fc2", h, veil_param(g, "w2", 0, 2, dw2), veil_param(g, "b2", 0, 1, db2));
    veil_softmax_cross_entropy(g, "loss", y, lab);
    t->name = "mlp";
    t->plan = compile(g, 1);
    feed(t, "x", 48, -1, 1, 0);
    labels(t, 4, 5);
    feed(t, "w1", 192, -0.4, 0.4, 1);
    feed(t, "b1", 16, -0.1, 0.1, 1);
    feed(t, "w2", 80, -0.4, 0.4, 1);
    feed(t, "b2", 5, -0.1, 0.1, 1);
    t->fan_in = 16;
    t->depth = 4;
}

static void cnn(struct net *t)
{
    veil_graph_t *g = veil_graph_new("cnn_train");
    size_t dx[4] = {2, 2, 8, 8}, dw1[4] = {4, 2, 3, 3}, d4[1] = {4}, dw2[4] = {4, 4, 3, 3};
    size_t dwd[2] = {64, 4}, dwf[2] = {8, 3}, d3[1] = {3}, dl[2] = {2, 3};
    veil_node_t *x = veil_input(g, "x", 1, 4, dx), *lab = veil_input(g, "labels", 1, 2, dl);
    veil_node_t *c1 = veil_conv2d(g, "c1", x, veil_param(g, "w1", 0, 4, dw1),
                                  veil_param(g, "b1", 0, 1, d4), 1, 1);
    veil_node_t *r = veil_relu(g, "r", c1);
    veil_node_t *mp = veil_maxpool2d(g, "mp", r, 2, 2);
    veil_node_t *c2 = veil_conv2d(g, "c2", mp, veil_param(g, "w2", 0, 4, dw2), NULL, 2, 1);
    veil_node_t *ga = veil_global_avgpool(g, "gap", c2);
    veil_node_t *ap = veil_flatten(g, "flat", veil_avgpool2d(g, "ap", r, 2, 2));
    veil_node_t *d = veil_dense(g, "fcd", ap, veil_param(g, "wd", 0, 2, dwd), NULL);
    veil_node_t *s = veil_add(g, "res", ga, d);
    veil_node_t *cat = veil_concat(g, "cat", s, ga, 1);
    veil_node_t *y =
        veil_dense(g, "fcf", cat, veil_param(g, "wf", 0, 2, dwf), veil_param(g, "bf", 0, 1, d3));
    veil_softmax_cross_entropy(g, "loss", y, lab);
    t->name = "cnn";
    t->plan = compile(g, 1);
    feed(t, "x", 256, -1, 1, 0);
    labels(t, 2, 3);
    feed(t, "w1", 72, -0.4, 0.4, 1);
    feed(t, "b1", 4, -0.1, 0.1, 1);
    feed(t, "w2", 144, -0.3, 0.3, 1);
    feed(t, "wd", 256, -0.2, 0.2, 1);
    feed(t, "wf", 24, -0.4, 0.4, 1);
    feed(t, "bf", 3, -0.1, 0.1, 1);
    t->fan_in = 2 * 8 * 8; /* conv1's weight gradient: B OH OW */
    t->depth = 7;
}

static void attention(struct net *t)
{
    veil_graph_t *g = veil_graph_new("attn_train");
    size_t dx[2] = {4, 8}, dw[2] = {8, 8}, d8[1] = {8}, dwo[2] = {8, 3}, d3[1] = {3};
    size_t dl[2] = {4, 3};
    veil_node_t *x = veil_input(g, "x", 1, 2, dx), *lab = veil_input(g, "labels", 1, 2, dl);
    veil_node_t *q = veil_dense(g, "q", x, veil_param(g, "wq", 0, 2, dw), NULL);
    veil_node_t *k = veil_dense(g, "k", x, veil_param(g, "wk", 0, 2, dw), NULL);
    veil_node_t *v = veil_dense(g, "v", x, veil_param(g, "wv", 0, 2, dw), NULL);
    veil_node_t *sc = veil_scale(g, "sc", veil_matmul(g, "qk", q, veil_transpose(g, "kt", k)),
                                 0.35355339059327373);
    veil_node_t *o = veil_matmul(g, "av", veil_softmax(g, "att", sc), v);
    veil_node_t *ln = veil_layernorm(g, "ln", veil_add(g, "res", x, o),
                                     veil_param(g, "gamma", 0, 1, d8),
                                     veil_param(g, "beta", 0, 1, d8), 1e-5);
    veil_node_t *y =
        veil_dense(g, "out", ln, veil_param(g, "wo", 0, 2, dwo), veil_param(g, "bo", 0, 1, d3));
    veil_softmax_cross_entropy(g, "loss", y, lab);
    t->name = "attention";
    t->plan = compile(g, 1);
    feed(t, "x", 32, -1, 1, 0);
    labels(t, 4, 3);
    feed(t, "wq", 64, -0.4, 0.4, 1);
    feed(t, "wk", 64, -0.4, 0.4, 1);
    feed(t, "wv", 64, -0.4, 0.4, 1);
    feed(t, "gamma", 8, 0.8, 1.2, 1);
    feed(t, "beta", 8, -0.1, 0.1, 1);
    feed(t, "wo", 24, -0.4, 0.4, 1);
    feed(t, "bo", 3, -0.1, 0.1, 1);
    t->fan_in = 8;
    t->depth = 4 * 4 + 6; /* layer norm and softmax count 4 each, besides the products */
}

/* The plaintext FIXED trainer's parameters after steps 1 and 2, step 1's gradient, step 2's
 * loss. */
static void reference(struct net *t)
{
    veil_plain_trainer_t *tr = veil_plain_trainer_new(t->plan, VEIL_PLAIN_FIXED, t->feeds + 2,
                                                      t->nfeeds - 2);
    VT_CHECK(tr != NULL, "%s: trainer: %s", t->name, veil_last_error());
    if (!tr)
        return;
    for (int s = 0; s < 2; s++) {
        double loss = 0;
        int rc = veil_plain_trainer_step(tr, t->feeds, 2, &loss); /* x and labels come first */
        VT_CHECK(rc == VEIL_OK, "%s: trainer step: %s", t->name, veil_last_error());
        if (s == 1)
            t->loss2 = loss;
        for (size_t i = 0; i < t->np; i++) {
            veil_plain_trainer_param(tr, t->params[i], t->want[s][i]);
            char rname[64];
            snprintf(rname, sizeof rname, "%s~r1", t->params[i]);
            if (t->replicas)
                VT_CHECK(veil_plain_trainer_param(tr, rname, t->want_rep[s][i]) == VEIL_OK,
                         "%s: trainer replica '%s': %s", t->name, rname, veil_last_error());
            if (s == 0)
                veil_plain_trainer_grad(tr, t->params[i], t->grad1[i]);
        }
    }
    veil_plain_trainer_destroy(&tr);
}

/* The copy j a name says a node computes for: "@mb<j>" (a micro-batch copy) or "~r<j>" (a
 * replica), -1 when it says neither. */
static int copy_in_name(const char *name)
{
    const char *m = strstr(name, "@mb"), *r = strstr(name, "~r");
    const char *at = m ? m + 3 : r ? r + 2 : NULL;
    return at && *at >= '0' && *at <= '9' ? atoi(at) : -1;
}

/* After a DP session over micro-batch copies (tracing on): where each copy's tasks ran. */
static void check_copies(const veil_plan_t *p, int id)
{
    int *mb = calloc(p->count, sizeof *mb), workers[2];
    if (!mb || starpu_worker_get_ids_by_type(STARPU_CPU_WORKER, workers, 2) != 2 || id >= MAXPROC) {
        free(mb);
        return;
    }
    veil_placement_microbatch_of(p, mb);
    for (size_t i = 0; i < p->nforward; i++) { /* forward names carry the copy */
        const int named = copy_in_name(p->nodes[i].name);
        if (named >= 0 && p->nodes[i].op != VEIL_OP_CONCAT && named != mb[i])
            sh->copy_misnamed[id]++;
    }
    for (size_t e = 0; e < veil_trace_count(); e++) {
        const struct veil_trace_event *ev = veil_trace_event_at(e);
        if (!ev || ev->kind != VEIL_TRACE_TASK_EV || ev->node < 0 || (size_t)ev->node >= p->count)
            continue;
        const int j = mb[ev->node];
        if (j < 0)
            continue;
        if (ev->lane == workers[j % 2])
            sh->copy_tasks[id][j % 2]++;
        else
            sh->copy_misplaced[id]++;
    }
    free(mb);
}

static int child(const struct veil_harness_party *me, void *arg)
{
    (void)arg;
    struct veil_party_options po;
    veil_party_options_defaults(&po);
    if (placed.devices > 0) {
        setenv("STARPU_NCPU", placed.devices > 1 ? "2" : "1", 1); /* before starpu_init */
        po.material_seed = "7e57da7a000000000000000000000001";
        po.placement = placed.placement;
        po.devices = placed.devices;
        po.device_kind = VEIL_DEVICE_CPU;
        if (placed.check_copies)
            po.trace_path = "/dev/null"; /* the events are read in process, the file unused */
    }
    veil_party_t *pt = veil_party_open(cur->plan, &po);
    if (!pt) {
        fprintf(stderr, "process %d: open: %s\n", me->id, veil_last_error());
        return 3;
    }
    int code = 0;
    for (int s = 0; s < 2 && code == 0; s++) {
        struct veil_feed f[MAXFEED];
        size_t nf = 0;
        for (size_t i = 0; i < cur->nfeeds; i++)
            if (!(cur->drop_labels && me->id == 1 && i == 1)) /* feeds[1] is the labels */
                f[nf++] = cur->feeds[i];
        int rc = s == 0 ? veil_train_step(pt, f, nf)
                        : veil_train_step_reveal_loss(pt, f, nf, 1, sh->probs, &sh->loss);
        if (rc == VEIL_OK && me->id < MAXPROC)
            veil_party_last_stats(pt, &sh->stats[me->id]);
        for (size_t i = 0; rc == VEIL_OK && i < cur->np; i++)
            rc = veil_party_reveal_param(pt, cur->params[i], 0,
                                         me->id == 0 ? sh->got[s][i] : NULL);
        for (size_t i = 0; rc == VEIL_OK && cur->replicas && i < cur->np; i++) {
            char rname[64];
            snprintf(rname, sizeof rname, "%s~r1", cur->params[i]);
            rc = veil_party_reveal_param(pt, rname, 0, me->id == 0 ? sh->got_rep[s][i] : NULL);
        }
        if (rc == VEIL_OK && cur->replicas && s == 0) { /* checkpoint round trip, in place */
            char path[128];
            snprintf(path, sizeof path, "%s/wavg-%d.ckpt", ckdir, me->id);
            rc = veil_party_save(pt, path);
            if (rc == VEIL_OK)
                rc = veil_party_load(pt, path);
            if (rc == VEIL_OK && veil_party_steps(pt) != 1) {
                fprintf(stderr, "process %d: %llu steps after the load, not 1\n", me->id,
                        (unsigned long long)veil_party_steps(pt));
                code = 5;
            }
        }
        if (rc != VEIL_OK) {
            fprintf(stderr, "process %d: step %d: %s\n", me->id, s + 1, veil_last_error());
            code = 4;
        }
    }
    if (code == 0 && placed.check_copies && !me->is_dealer)
        check_copies(cur->plan, me->id);
    /* the close reports a failure that reached this process after its last call (the dealer,
     * which deals ahead, can finish both steps before a party's abort arrives) */
    if (veil_party_close(&pt) != VEIL_OK && code == 0) {
        fprintf(stderr, "process %d: close: %s\n", me->id, veil_last_error());
        code = 6;
    }
    return code;
}

static double param_numel(const struct net *t, size_t i)
{
    const veil_plan_t *p = t->plan;
    for (size_t l = 0; l < veil_plan_leaf_count(p); l++)
        if (!strcmp(veil_plan_leaf_name(p, l), t->params[i]))
            return (double)veil_plan_leaf_numel(p, l);
    return 0;
}

static void check_net(struct net *t, int n)
{
    cur = t;
    memset(sh, 0, sizeof *sh);
    struct veil_test_graph_opts o = {.nparties = n, .dealer = 1, .timeout_s = 180};
    if (veil_test_graph_run(&o, child, NULL, NULL) != VEIL_OK) {
        VT_CHECK(0, "%s N=%d: secure training failed", t->name, n);
        return;
    }
    const double u = ldexp(1.0, -16);
    /* weight averaging: gradients times R, and the averaging's truncation (K = 2: at step 2) */
    const double gmul = t->replicas ? 2.0 : 1.0;
    for (int s = 0; s < 2; s++) {
        const double tol = (s + 1) * (3 + LR * gmul * t->depth * t->fan_in) * u +
                           (t->replicas && s == 1 ? 1.0 : 0.0) * u;
        double worst = 0;
        for (int r = 0; r <= t->replicas; r++)
            for (size_t i = 0; i < t->np; i++)
                for (size_t e = 0; e < (size_t)param_numel(t, i); e++) {
                    const double got = r ? sh->got_rep[s][i][e] : sh->got[s][i][e];
                    const double want = r ? t->want_rep[s][i][e] : t->want[s][i][e];
                    double err = fabs(got - want);
                    if (!(err <= worst))
                        worst = isnan(err) ? INFINITY : err;
                    VT_CHECK(err <= tol, "%s N=%d step %d: '%s%s'[%zu] = %.7f, plaintext FIXED "
                             "%.7f (error %.3g > bound %.3g)", t->name, n, s + 1, t->params[i],
                             r ? "~r1" : "", e, got, want, err, tol);
                }
        if (t->replicas) { /* the replicas differ after step 1 and are one after step 2 */
            double spread = 0;
            for (size_t i = 0; i < t->np; i++)
                for (size_t e = 0; e < (size_t)param_numel(t, i); e++)
                    spread = fmax(spread, fabs(sh->got[s][i][e] - sh->got_rep[s][i][e]));
            VT_CHECK(s == 0 ? spread > 1e-3 : spread == 0.0, "%s N=%d step %d: replicas differ "
                     "by %.3g", t->name, n, s + 1, spread);
            veil_test_log("%s N=%d step %d: replicas differ by %.3g", t->name, n, s + 1, spread);
        }
        veil_test_log("%s N=%d step %d: parameters max error %.3g (%.1f ulp), bound %.3g", t->name,
                      n, s + 1, worst, worst / u, tol);
    }
    /* the gradient of step 1 implied by the revealed w1: (w0 - w1) / lr - wd w0 */
    const double gtol = (gmul * t->depth * t->fan_in + 4 / LR) * u;
    double gworst = 0;
    for (size_t i = 0; i < t->np; i++) {
        const double *w0 = t->feeds[2 + i].values;
        for (size_t e = 0; e < (size_t)param_numel(t, i); e++) {
            double g = (w0[e] - sh->got[0][i][e]) / LR - WD * w0[e];
            double err = fabs(g - t->grad1[i][e]);
            gworst = err > gworst ? err : gworst;
            VT_CHECK(err <= gtol, "%s N=%d: gradient of '%s'[%zu] implied %.6f, trainer %.6f "
                     "(error %.3g > %.3g)", t->name, n, t->params[i], e, g, t->grad1[i][e], err,
                     gtol);
        }
    }
    veil_test_log("%s N=%d: implied gradient max error %.3g, bound %.3g", t->name, n, gworst,
                  gtol);
    VT_CHECK(fabs(sh->loss - t->loss2) < 0.01, "%s N=%d: revealed loss %.5f, trainer %.5f",
             t->name, n, sh->loss, t->loss2);
    veil_test_log("%s N=%d: step 2 at party 0: %llu bytes sent, %llu rounds, %.3f s; loss %.5f "
                  "(trainer %.5f)", t->name, n, (unsigned long long)sh->stats[0].bytes_sent,
                  (unsigned long long)sh->stats[0].rounds, sh->stats[0].online_s, sh->loss,
                  t->loss2);
}

/* Training placed over 2 devices per party gives the single-device session's bits (see the
 * PLACEMENT paragraph at the top); dp_only: DP alone, with the copies' devices checked. */
static void check_placement(struct net *t, int dp_only)
{
    static const enum veil_placement kinds[] = {VEIL_PLACEMENT_DP, VEIL_PLACEMENT_TP,
                                                VEIL_PLACEMENT_HYBRID, VEIL_PLACEMENT_PP};
    struct shared *base = malloc(sizeof *base);
    if (!base) {
        VT_CHECK(0, "out of memory");
        return;
    }
    cur = t;
    /* the session id and the seed fix every mask, so truncations round alike in every session */
    struct veil_test_graph_opts o = {.nparties = 2,
                                     .dealer = 1,
                                     .timeout_s = 180,
                                     .session = "7e57da7a7e57da7a7e57da7a7e57da7a"};
    placed.devices = 1;
    placed.placement = VEIL_PLACEMENT_SINGLE;
    memset(sh, 0, sizeof *sh);
    int ok = veil_test_graph_run(&o, child, NULL, NULL) == VEIL_OK;
    VT_CHECK(ok, "%s: single-device training session failed", t->name);
    memcpy(base, sh, sizeof *sh);
    for (size_t k = 0; ok && k < (dp_only ? 1 : sizeof kinds / sizeof kinds[0]); k++) {
        placed.devices = 2;
        placed.placement = kinds[k];
        placed.check_copies = dp_only;
        memset(sh, 0, sizeof *sh);
        const char *name = veil_placement_name(kinds[k]);
        if (veil_test_graph_run(&o, child, NULL, NULL) != VEIL_OK) {
            VT_CHECK(0, "%s %s x2: training session failed", t->name, name);
            continue;
        }
        const int failures = veil_test_failures;
        for (int s = 0; s < 2; s++)
            for (size_t i = 0; i < t->np; i++)
                VT_CHECK(memcmp(sh->got[s][i], base->got[s][i],
                                (size_t)param_numel(t, i) * sizeof(double)) == 0,
                         "%s %s x2 step %d: parameter '%s' differs from the single-device "
                         "session", t->name, name, s + 1, t->params[i]);
        VT_CHECK(memcmp(&sh->loss, &base->loss, sizeof sh->loss) == 0,
                 "%s %s x2: loss %.9f, single device %.9f", t->name, name, sh->loss, base->loss);
        for (int q = 0; dp_only && q < 2; q++) {
            VT_CHECK(sh->copy_misnamed[q] == 0,
                     "%s: party %d: %ld nodes belong to another copy than their name says",
                     t->name, q, sh->copy_misnamed[q]);
            VT_CHECK(sh->copy_misplaced[q] == 0 && sh->copy_tasks[q][0] > 0 &&
                         sh->copy_tasks[q][1] > 0,
                     "%s dp x2: party %d ran %ld and %ld tasks of copies 0 and 1 on their "
                     "devices, %ld elsewhere",
                     t->name, q, sh->copy_tasks[q][0], sh->copy_tasks[q][1],
                     sh->copy_misplaced[q]);
            veil_test_log("%s dp x2: party %d: %ld + %ld tasks of copies 0 and 1 on devices 0 "
                          "and 1",
                          t->name, q, sh->copy_tasks[q][0], sh->copy_tasks[q][1]);
        }
        if (veil_test_failures == failures)
            veil_test_log("%s %s x2: 2 steps equal the single-device session bit for bit (step 2 "
                      "%.3f s, single %.3f s)", t->name, name, sh->stats[0].online_s,
                      base->stats[0].online_s);
    }
    placed.devices = 0;
    placed.check_copies = 0;
    free(base);
}

/* Every process opens an inference plan and asks for a training step: refused, nothing sent. */
static int child_inference(const struct veil_harness_party *me, void *arg)
{
    veil_party_t *pt = veil_party_open((const veil_plan_t *)arg, NULL);
    if (!pt)
        return 3;
    int rc = veil_train_step(pt, cur->feeds, cur->nfeeds);
    if (rc == VEIL_ERR_INVAL && strstr(veil_last_error(), "compiled for inference") &&
        me->id == 0)
        sh->inference_refused = 1;
    veil_party_close(&pt);
    return rc == VEIL_ERR_INVAL ? 0 : 5;
}

static void check_bad_input(struct net *t)
{
    cur = t;
    memset(sh, 0, sizeof *sh);
    veil_graph_t *g = veil_graph_new("mlp_infer");
    size_t dx[2] = {4, 12}, dw[2] = {12, 5};
    veil_node_t *x = veil_input(g, "x", 1, 2, dx);
    veil_reveal(g, veil_dense(g, "fc", x, veil_param(g, "w1", 0, 2, dw), NULL), 0);
    veil_plan_t *inf = compile(g, 0);
    struct veil_test_graph_opts o = {.nparties = 2, .dealer = 1, .timeout_s = 60};
    int rc = veil_test_graph_run(&o, child_inference, inf, NULL);
    VT_CHECK(rc == VEIL_OK && sh->inference_refused,
             "veil_train_step on an inference plan should be refused with VEIL_ERR_INVAL");
    veil_plan_destroy(&inf);

    t->drop_labels = 1;
    struct veil_harness_result res[MAXPROC];
    o.expect_fail = 1;
    rc = veil_test_graph_run(&o, child, NULL, res);
    VT_CHECK(rc != VEIL_OK, "a step without the labels should fail");
    for (int q = 0; q <= 2; q++)
        VT_CHECK(res[q].exit_code != 0 && !res[q].timed_out,
                 "missing labels: process %d exited %d%s (expected non-zero, no hang)", q,
                 res[q].exit_code, res[q].timed_out ? " at the time bound" : "");
    VT_CHECK(res[1].output && strstr(res[1].output, "'labels'"),
             "the labels' owner should name them; it said:\n%s",
             res[1].output ? res[1].output : "");
    veil_harness_results_free(res, 3);
    t->drop_labels = 0;
}

int main(void)
{
    sh = veil_test_mpc_shared(sizeof *sh);
    if (!sh)
        return 1;
    static struct net nets[3];
    mlp(&nets[0]);
    cnn(&nets[1]);
    attention(&nets[2]);
    for (int i = 0; i < 3; i++)
        if (nets[i].plan)
            reference(&nets[i]);
    if (veil_test_failures)
        return veil_test_status();
    for (int i = 0; i < 3; i++) {
        check_net(&nets[i], 2);
        check_net(&nets[i], 3);
    }
    check_bad_input(&nets[0]);
    check_placement(&nets[0], 0);
    check_placement(&nets[1], 0);
    /* the inter-batch pipeline: the MLP (batch 4) and the CNN (batch 2) in 2 micro-batches,
     * against the plaintext trainer on the same split plan (equal to the unsplit batch's update:
     * test_graph_microbatch) */
    static struct net mb[2];
    microbatches = 2;
    mlp(&mb[0]);
    cnn(&mb[1]);
    microbatches = 1;
    mb[0].name = "mlp/2 micro-batches";
    mb[1].name = "cnn/2 micro-batches";
    for (int i = 0; i < 2; i++)
        if (mb[i].plan) {
            reference(&mb[i]);
            check_net(&mb[i], 2);
        }
    check_net(&mb[0], 3);
    /* weight averaging: the MLP in R = 2 replicas averaged every K = 2 steps, against the
     * plaintext trainer on the same plan (test_graph_weight_average checks that trainer) */
    static struct net wa;
    snprintf(ckdir, sizeof ckdir, "/tmp/veil-wavg-XXXXXX");
    VT_CHECK(mkdtemp(ckdir) != NULL, "mkdtemp");
    microbatches = 2;
    dp_average = VEIL_DP_AVERAGE_WEIGHTS;
    average_every = 2;
    wa.replicas = 1;
    mlp(&wa);
    microbatches = 1;
    dp_average = VEIL_DP_AVERAGE_GRADIENTS;
    average_every = 1;
    wa.name = "mlp/2 replicas, weights averaged every 2 steps";
    if (wa.plan) {
        reference(&wa);
        check_net(&wa, 2);
        check_placement(&wa, 1);
    }
    for (int id = 0; id <= 2; id++) {
        char path[128];
        snprintf(path, sizeof path, "%s/wavg-%d.ckpt", ckdir, id);
        unlink(path);
    }
    rmdir(ckdir);
    veil_plan_destroy(&wa.plan);
    for (size_t f = 0; f < wa.nfeeds; f++)
        free((void *)wa.feeds[f].values);
    for (int i = 0; i < 2; i++) {
        veil_plan_destroy(&mb[i].plan);
        for (size_t f = 0; f < mb[i].nfeeds; f++)
            free((void *)mb[i].feeds[f].values);
    }
    for (int i = 0; i < 3; i++) {
        veil_plan_destroy(&nets[i].plan);
        for (size_t f = 0; f < nets[i].nfeeds; f++)
            free((void *)nets[i].feeds[f].values);
    }
    veil_test_mpc_shared_free(sh, sizeof *sh);
    return veil_test_status();
}

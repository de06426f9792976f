/*
 * compile.c — veil_compile: turns a checked graph into an immutable plan. It checks the options
 * (training's SGD and Adam hyper-parameters against what the fixed-point encoding represents),
 * copies the nodes (the graph may be destroyed afterwards), checks what only a whole graph can tell (at
 * least one output, or a loss when training), folds batch normalisation into its producer
 * (fold.c), appends the backward pass when training (autodiff.c), computes each node's last use
 * (liveness: the executors release a temporary right after it) and its critical-path priority,
 * and the plan digest that the parties' handshake compares. The plan's read-only queries live
 * here too.
 */
#include "config.h"

#include "base/base_internal.h"
#include "graph/graph_internal.h"

#include <math.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void veil_compile_options_defaults(struct veil_compile_options *o)
{
    memset(o, 0, sizeof *o);
    o->frac_bits = VEIL_FIXED_FRAC_BITS_DEFAULT;
    o->tile = 0;
    o->microbatches = 1;
    o->lookahead = VEIL_LOOKAHEAD_UNBOUNDED;
    o->lr = 0.01;
    o->momentum = 0.9;
    o->weight_decay = 0.0;
    o->dp_average = VEIL_DP_AVERAGE_GRADIENTS;
    o->average_every = 1;
    o->optimizer = VEIL_OPTIMIZER_SGD;
    o->beta1 = 0.9;
    o->beta2 = 0.999;
    o->eps = 1e-8;
}

/* Whether a public real c in (0, 1] keeps at least 4 significant bits in fixed point at f
 * fractional bits: its encoding round(c 2^f) must be 16 ulps or more, else the rounding error
 * exceeds 1/32 of c (and c < 2^-(f+1) encodes to 0). */
static int fixed_representable(double c, int f)
{
    return llround(ldexp(c, f)) >= 16;
}

/* The SGD hyper-parameters, checked only when training (they are unused otherwise). */
static int check_sgd(const struct veil_compile_options *o)
{
    int f = o->frac_bits;
    if (!(o->lr > 0.0 && o->lr <= 1.0))
        return veil_error(VEIL_ERR_INVAL, "veil_compile: learning rate %g; give a rate in (0, 1] "
                          "(0.01 is the default)", o->lr);
    if (!fixed_representable(o->lr, f))
        return veil_error(VEIL_ERR_RANGE, "veil_compile: learning rate %g is below what %d "
                          "fractional bits can represent (at least %g); use a larger rate or more "
                          "frac_bits", o->lr, f, ldexp(15.5, -f));
    if (!(o->momentum >= 0.0 && o->momentum < 1.0))
        return veil_error(VEIL_ERR_INVAL, "veil_compile: momentum %g; give a value in [0, 1) (0.9 "
                          "is the default, 0 turns it off)", o->momentum);
    if (o->momentum != 0.0 && !fixed_representable(o->momentum, f))
        return veil_error(VEIL_ERR_RANGE, "veil_compile: momentum %g is below what %d fractional "
                          "bits can represent (at least %g); use 0, a larger momentum or more "
                          "frac_bits", o->momentum, f, ldexp(15.5, -f));
    if (!(o->weight_decay >= 0.0 && o->weight_decay <= 0.1))
        return veil_error(VEIL_ERR_INVAL, "veil_compile: weight decay %g; give a value in "
                          "[0, 0.1] (0 is the default)", o->weight_decay);
    if (o->weight_decay != 0.0 && !fixed_representable(o->weight_decay, f))
        return veil_error(VEIL_ERR_RANGE, "veil_compile: weight decay %g is below what %d "
                          "fractional bits can represent (at least %g); use 0, a larger decay or "
                          "more frac_bits", o->weight_decay, f, ldexp(15.5, -f));
    if (o->weight_stationary)
        return veil_error(VEIL_ERR_INVAL, "veil_compile: weight_stationary is for inference (the "
                          "weight mask is opened once per session) but training changes the "
                          "weights every step; set weight_stationary to 0");
    return VEIL_OK;
}

static int check_options(const struct veil_compile_options *o)
{
    if (o->frac_bits < 8 || o->frac_bits > 24)
        return veil_error(VEIL_ERR_INVAL, "veil_compile: frac_bits %d; give 8 to 24 (16 is the "
                          "default)", o->frac_bits);
    if (o->tile != 0 && (o->tile < 64 || o->tile % 64 != 0))
        return veil_error(VEIL_ERR_INVAL, "veil_compile: tile %zu; give 0 (default) or a multiple "
                          "of 64 elements (the comparison circuit packs 64 elements a word)",
                          o->tile);
    if (o->microbatches < 1 || o->microbatches > 64)
        return veil_error(VEIL_ERR_INVAL, "veil_compile: microbatches %d; give 1 to 64",
                          o->microbatches);
    if (o->lookahead < VEIL_LOOKAHEAD_UNBOUNDED || o->lookahead > VEIL_LOOKAHEAD_MAX)
        return veil_error(VEIL_ERR_INVAL, "veil_compile: lookahead %d; give 0 to %d layers, or "
                          "%d for no bound", o->lookahead, VEIL_LOOKAHEAD_MAX,
                          VEIL_LOOKAHEAD_UNBOUNDED);
    if (o->serialized != 0 && o->serialized != 1)
        return veil_error(VEIL_ERR_INVAL, "veil_compile: serialized must be 0 or 1");
    if (o->weight_stationary != 0 && o->weight_stationary != 1)
        return veil_error(VEIL_ERR_INVAL, "veil_compile: weight_stationary must be 0 or 1");
    if (o->training != 0 && o->training != 1)
        return veil_error(VEIL_ERR_INVAL, "veil_compile: training must be 0 or 1");
    if (o->dp_average < 0 || o->dp_average >= VEIL_DP_AVERAGE_COUNT)
        return veil_error(VEIL_ERR_INVAL, "veil_compile: dp_average %d; give "
                          "VEIL_DP_AVERAGE_GRADIENTS (0, the default) or VEIL_DP_AVERAGE_WEIGHTS "
                          "(1)", o->dp_average);
    if (o->dp_average == VEIL_DP_AVERAGE_WEIGHTS) {
        if (!o->training)
            return veil_error(VEIL_ERR_INVAL, "veil_compile: dp_average WEIGHTS averages trained "
                              "replicas but the plan is for inference; set training = 1 or "
                              "dp_average = VEIL_DP_AVERAGE_GRADIENTS");
        if (o->microbatches < 2)
            return veil_error(VEIL_ERR_INVAL, "veil_compile: dp_average WEIGHTS with microbatches "
                              "%d has no replicas to average; set microbatches to R >= 2 (one "
                              "replica per micro-batch) or dp_average = "
                              "VEIL_DP_AVERAGE_GRADIENTS", o->microbatches);
        if (o->average_every < 1)
            return veil_error(VEIL_ERR_INVAL, "veil_compile: average_every %d; give K >= 1 (the "
                              "replicas are averaged after every K-th step; 1 is the default)",
                              o->average_every);
    }
    if (o->optimizer < 0 || o->optimizer >= VEIL_OPTIMIZER_COUNT)
        return veil_error(VEIL_ERR_INVAL, "veil_compile: optimizer %d; give VEIL_OPTIMIZER_SGD "
                          "(0, the default), VEIL_OPTIMIZER_ADAM (1) or VEIL_OPTIMIZER_ADAMW (2)",
                          o->optimizer);
    if (!o->training)
        return VEIL_OK;
    int rc = check_sgd(o);
    if (rc == VEIL_OK && o->optimizer != VEIL_OPTIMIZER_SGD)
        rc = veil_adam_check_options(o);
    return rc;
}

int veil_plan_average_due(const veil_plan_t *p, uint64_t step)
{
    return p->opts.training && p->opts.dp_average == VEIL_DP_AVERAGE_WEIGHTS && step > 0 &&
           step % (uint64_t)p->opts.average_every == 0;
}

int veil_plan_replicas(const veil_plan_t *p, size_t i, int reps[VEIL_MAX_REPLICAS], int *nr)
{
    const struct veil_node *n = &p->nodes[i];
    *nr = 0;
    if (n->op != VEIL_OP_PARAM || n->replica != 0)
        return VEIL_OK;
    int k = 0;
    reps[k++] = (int)i;
    for (size_t j = i + 1; j < p->count && k < VEIL_MAX_REPLICAS; j++)
        if (p->nodes[j].op == VEIL_OP_PARAM && p->nodes[j].replica > 0 &&
            p->nodes[j].replica_of == (int)i)
            reps[k++] = (int)j;
    if (k < 2)
        return VEIL_OK; /* not replicated */
    if (k != p->opts.microbatches)
        return veil_error(VEIL_ERR_STATE, "parameter '%s' has %d replicas, the plan %d "
                          "micro-batches", n->name, k, p->opts.microbatches);
    *nr = k;
    return VEIL_OK;
}

const char *veil_plan_feed_name(const veil_plan_t *p, const struct veil_node *n)
{
    return n->replica > 0 && n->replica_of >= 0 ? p->nodes[n->replica_of].name : n->name;
}

/* Links every parameter replica to its replica 0, whose name is its own without the "~r<j>"
 * that microbatch.c appended (indices are only final here: folding inserts nodes). */
static int link_replicas(veil_plan_t *p)
{
    for (size_t i = 0; i < p->count; i++) {
        struct veil_node *n = &p->nodes[i];
        n->replica_of = -1;
        if (n->op != VEIL_OP_PARAM || n->replica < 1)
            continue;
        char suffix[32], base[VEIL_NODE_NAME_MAX];
        const size_t ls = (size_t)snprintf(suffix, sizeof suffix, "~r%d", n->replica);
        const size_t ln = strlen(n->name);
        int b = -1;
        if (ln > ls && strcmp(n->name + ln - ls, suffix) == 0) {
            memcpy(base, n->name, ln - ls);
            base[ln - ls] = '\0';
            b = veil_plan_find(p, base);
        }
        if (b < 0 || p->nodes[b].op != VEIL_OP_PARAM || p->nodes[b].replica != 0)
            return veil_error(VEIL_ERR_STATE, "veil_compile: parameter replica '%s' has no "
                              "replica 0", n->name);
        n->replica_of = b;
    }
    return VEIL_OK;
}

/* Liveness: a node lives until its last reader, through operands or through `fwd` (a backward
 * op reading the forward node's saved state, which must survive until then). XENT_GRAD reads
 * the labels of its loss through fwd as well (softmax - labels), and LAYERNORM_GRAD the layer
 * norm's gamma (dy * gamma), so they live until it. */
static void compute_liveness(veil_plan_t *p)
{
    for (size_t i = 0; i < p->count; i++)
        p->nodes[i].last_use = -1;
    for (size_t i = 0; i < p->count; i++) {
        struct veil_node *n = &p->nodes[i];
        for (int j = 0; j < n->nin; j++)
            if (n->in[j] >= 0)
                p->nodes[n->in[j]].last_use = (int)i;
        if (n->fwd >= 0) {
            p->nodes[n->fwd].saved = 1;
            p->nodes[n->fwd].last_use = (int)i;
            /* XENT_GRAD reads the loss's labels, LAYERNORM_GRAD the layer norm's gamma */
            if (veil_op_is(n->op, VEIL_OPF_READS_FWD_IN1))
                p->nodes[p->nodes[n->fwd].in[1]].last_use = (int)i;
        }
    }
}

/* Critical path: priority = cost of the longest chain from the node to the end, counting one
 * per node that communicates (everything but reshapes, adds, leaves): nodes on long chains are
 * submitted with higher StarPU priority so their messages go first. A backward op depends on its
 * forward node's saved state (fwd) as on an operand. */
static void compute_priorities(veil_plan_t *p)
{
    for (size_t k = 0; k < p->count; k++)
        p->nodes[k].priority = 0.0;
    for (size_t k = p->count; k-- > 0;) {
        struct veil_node *n = &p->nodes[k];
        double own = veil_op_is(n->op, VEIL_OPF_PATH_FREE) ? 0.0 : 1.0;
        n->priority += own;
        for (int j = -1; j < n->nin; j++) {
            int s = j < 0 ? n->fwd : n->in[j];
            if (s < 0)
                continue;
            struct veil_node *src = &p->nodes[s];
            if (src->priority < n->priority)
                src->priority = n->priority;
        }
    }
}

static int compute_digest(veil_plan_t *p)
{
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    int ok = ctx && EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) == 1 &&
             EVP_DigestUpdate(ctx, "VEILGRAPH1", 10) == 1;
    /* Options that change what runs (not the performance knobs that leave results and traffic
     * identical are still included: every party must run the same DAG shape). */
    int64_t o[10] = {p->opts.frac_bits,   (int64_t)p->opts.tile, p->opts.microbatches,
                     p->opts.lookahead,   p->opts.serialized,    p->opts.weight_stationary,
                     p->opts.training,    (int64_t)p->count,     p->opts.dp_average,
                     p->opts.dp_average == VEIL_DP_AVERAGE_WEIGHTS ? p->opts.average_every : 0};
    /* The SGD hyper-parameters only matter (and are only checked) when training. */
    double sgd[3] = {0.0, 0.0, 0.0};
    if (p->opts.training) {
        sgd[0] = p->opts.lr;
        sgd[1] = p->opts.momentum;
        sgd[2] = p->opts.weight_decay;
    }
    ok = ok && EVP_DigestUpdate(ctx, o, sizeof o) == 1 &&
         EVP_DigestUpdate(ctx, sgd, sizeof sgd) == 1;
    /* Adam's options, hashed only when it is on: an SGD plan keeps the digest it always had */
    if (p->opts.training && p->opts.optimizer != VEIL_OPTIMIZER_SGD) {
        const double adam[4] = {(double)p->opts.optimizer, p->opts.beta1, p->opts.beta2,
                                p->opts.eps};
        ok = ok && EVP_DigestUpdate(ctx, adam, sizeof adam) == 1;
    }
    ok = ok && EVP_DigestUpdate(ctx, p->model, strlen(p->model) + 1) == 1;
    for (size_t i = 0; ok && i < p->count; i++) {
        const struct veil_node *n = &p->nodes[i];
        int64_t w[14 + VEIL_NODE_MAX_IN + VEIL_MAX_DIMS] = {0};
        int k = 0;
        w[k++] = n->op;
        w[k++] = n->ndim;
        w[k++] = n->nin;
        w[k++] = n->owner;
        w[k++] = n->output;
        w[k++] = n->reveal_to;
        w[k++] = n->fwd;
        w[k++] = n->folded_into;
        w[k++] = n->fold_bn;
        w[k++] = n->grad_of;
        w[k++] = n->synthetic;
        w[k++] = n->replica;
        w[k++] = n->replica_of;
        w[k++] = n->a.grad_mul;
        for (int j = 0; j < VEIL_NODE_MAX_IN; j++)
            w[k++] = n->in[j];
        for (int j = 0; j < VEIL_MAX_DIMS; j++)
            w[k++] = j < n->ndim ? (int64_t)n->dims[j] : 0;
        double a[10] = {n->a.stride, n->a.pad,          n->a.k,        n->a.axis,
                        (double)n->a.start, n->a.eps, n->a.c, n->a.lr, n->a.momentum,
                        n->a.weight_decay};
        ok = EVP_DigestUpdate(ctx, w, sizeof w) == 1 && EVP_DigestUpdate(ctx, a, sizeof a) == 1 &&
             EVP_DigestUpdate(ctx, n->name, strlen(n->name) + 1) == 1;
        if (ok && n->op == VEIL_OP_CONST)
            ok = EVP_DigestUpdate(ctx, n->cvalues, n->numel * sizeof(double)) == 1;
    }
    unsigned len = 0;
    ok = ok && EVP_DigestFinal_ex(ctx, p->digest, &len) == 1 && len == 32;
    EVP_MD_CTX_free(ctx);
    return ok ? VEIL_OK : veil_error(VEIL_ERR_CRYPTO, "veil_compile: SHA-256 of the plan failed");
}

veil_plan_t *veil_compile(const veil_graph_t *g, const struct veil_compile_options *opts)
{
    if (!g) {
        veil_error(VEIL_ERR_INVAL, "veil_compile: no graph");
        return NULL;
    }
    if (g->status != VEIL_OK) {
        veil_error(g->status, "%s", g->error);
        return NULL;
    }
    struct veil_compile_options o;
    if (opts)
        o = *opts;
    else
        veil_compile_options_defaults(&o);
    if (check_options(&o) != VEIL_OK)
        return NULL;
    int has_loss = 0;
    for (size_t i = 0; i < g->count; i++)
        has_loss |= g->nodes[i]->op == VEIL_OP_SOFTMAX_XENT;
    if (g->noutputs == 0 && !(o.training && has_loss)) {
        veil_error(VEIL_ERR_INVAL, "veil_compile: graph '%s' has no output; mark the result with "
                   "veil_reveal", g->name);
        return NULL;
    }
    if (o.training && !has_loss) {
        veil_error(VEIL_ERR_INVAL, "veil_compile: training asked but graph '%s' has no loss; end "
                   "it with veil_softmax_cross_entropy", g->name);
        return NULL;
    }
    veil_graph_t *split = NULL; /* microbatches > 1: the graph compiled instead of g */
    if (o.microbatches > 1) {
        if (!(split = veil_graph_split_microbatches(
                  g, o.microbatches, o.dp_average == VEIL_DP_AVERAGE_WEIGHTS)))
            return NULL;
        g = split;
    }
    veil_plan_t *p = calloc(1, sizeof *p);
    if (!p)
        goto nomem;
    snprintf(p->model, sizeof p->model, "%s", g->name);
    p->opts = o;
    p->loss = -1;
    p->count = g->count;
    p->nodes = calloc(g->count ? g->count : 1, sizeof *p->nodes);
    if (!p->nodes)
        goto nomem;
    for (size_t i = 0; i < g->count; i++) {
        p->nodes[i] = *g->nodes[i];
        p->nodes[i].cvalues = NULL;
        if (g->nodes[i]->cvalues) {
            p->nodes[i].cvalues = malloc(g->nodes[i]->numel * sizeof(double));
            if (!p->nodes[i].cvalues)
                goto nomem;
            memcpy(p->nodes[i].cvalues, g->nodes[i]->cvalues, g->nodes[i]->numel * sizeof(double));
        }
        if (p->nodes[i].op == VEIL_OP_SOFTMAX_XENT)
            p->loss = (int)i;
    }
    p->nforward = p->count;
    if (veil_plan_index(p) != VEIL_OK)
        goto fail;
    if (veil_plan_fold_batchnorm(p) != VEIL_OK)
        goto fail;
    if (o.training && veil_plan_build_backward(p) != VEIL_OK)
        goto fail;
    if (veil_plan_index(p) != VEIL_OK || link_replicas(p) != VEIL_OK)
        goto fail;
    compute_liveness(p);
    compute_priorities(p);
    if (compute_digest(p) != VEIL_OK)
        goto fail;
    veil_graph_destroy(&split);
    return p;
nomem:
    veil_error(VEIL_ERR_NOMEM, "veil_compile: out of memory");
fail:
    veil_plan_destroy(&p);
    veil_graph_destroy(&split);
    return NULL;
}

void veil_plan_destroy(veil_plan_t **pp)
{
    if (!pp || !*pp)
        return;
    veil_plan_t *p = *pp;
    for (size_t i = 0; p->nodes && i < p->count; i++)
        free(p->nodes[i].cvalues);
    free(p->nodes);
    free(p->leaves);
    free(p->outputs);
    free(p);
    *pp = NULL;
}

const uint8_t *veil_plan_digest(const veil_plan_t *p)
{
    return p ? p->digest : NULL;
}

size_t veil_plan_output_count(const veil_plan_t *p)
{
    return p ? p->noutputs : 0;
}

static const struct veil_node *output_node(const veil_plan_t *p, size_t i)
{
    return p && i < p->noutputs ? &p->nodes[p->outputs[i]] : NULL;
}

const char *veil_plan_output_name(const veil_plan_t *p, size_t i)
{
    const struct veil_node *n = output_node(p, i);
    return n ? n->name : NULL;
}

size_t veil_plan_output_numel(const veil_plan_t *p, size_t i)
{
    const struct veil_node *n = output_node(p, i);
    return n ? n->numel : 0;
}

int veil_plan_output_to(const veil_plan_t *p, size_t i)
{
    const struct veil_node *n = output_node(p, i);
    return n ? n->reveal_to : VEIL_ALL_PARTIES;
}

static const struct veil_node *leaf_node(const veil_plan_t *p, size_t i)
{
    return p && i < p->nleaves ? &p->nodes[p->leaves[i]] : NULL;
}

size_t veil_plan_leaf_count(const veil_plan_t *p)
{
    return p ? p->nleaves : 0;
}

const char *veil_plan_leaf_name(const veil_plan_t *p, size_t i)
{
    const struct veil_node *n = leaf_node(p, i);
    return n ? n->name : NULL;
}

int veil_plan_leaf_owner(const veil_plan_t *p, size_t i)
{
    const struct veil_node *n = leaf_node(p, i);
    return n ? n->owner : -1;
}

size_t veil_plan_leaf_numel(const veil_plan_t *p, size_t i)
{
    const struct veil_node *n = leaf_node(p, i);
    return n ? n->numel : 0;
}

int veil_plan_leaf_is_param(const veil_plan_t *p, size_t i)
{
    const struct veil_node *n = leaf_node(p, i);
    return n ? n->op == VEIL_OP_PARAM : 0;
}

void veil_plan_print(const veil_plan_t *p, void *file)
{
    FILE *f = file ? file : stdout;
    if (!p)
        return;
    fprintf(f, "plan '%s': %zu nodes (%zu forward), %zu outputs, f = %d\n", p->model, p->count,
            p->nforward, p->noutputs, p->opts.frac_bits);
    for (size_t i = 0; i < p->count; i++) {
        const struct veil_node *n = &p->nodes[i];
        char s[128];
        fprintf(f, "  %4zu %-24s %-28s %-18s", i, veil_op_name(n->op), n->name,
                veil_shape_str(n->ndim, n->dims, s, sizeof s));
        for (int j = 0; j < n->nin; j++)
            if (n->in[j] >= 0)
                fprintf(f, " %s", p->nodes[n->in[j]].name);
        if (n->owner >= 0)
            fprintf(f, " owner=%d", n->owner);
        if (n->folded_into >= 0)
            fprintf(f, " folded-into=%s", p->nodes[n->folded_into].name);
        if (n->output >= 0)
            fprintf(f, " output#%d->%d", n->output, n->reveal_to);
        fprintf(f, "\n");
    }
}

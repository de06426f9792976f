/*
 * autodiff.c — reverse-mode differentiation of a plan for training. Given the forward nodes and
 * the loss (a softmax_cross_entropy node), it appends the backward nodes of every node on a path
 * from a parameter to the loss, in reverse topological order of the forward pass, then gives each
 * parameter that reaches the loss one SGD_UPDATE (ADAM_UPDATE under Adam). A node's gradient is
 * complete when the walk reaches it (every consumer comes later in the forward order, so it was
 * visited first); several contributions are summed with ADD at that moment. Only what a
 * parameter's gradient needs is built: no gradient flows into inputs, constants or nodes that no
 * parameter influences (the first layer's dx is skipped), and a parameter that does not reach the
 * loss gets no update. The backward ops and their operands are specified in graph_internal.h. A
 * parameter's update is emitted as soon as its gradient is complete, which is after every
 * backward op that reads the parameter (they belong to its consumers, visited first): updates
 * overlap the rest of the backward pass and are correct even where an executor writes w' at once
 * rather than at the end of the step.
 *
 * Names of generated nodes: "<layer>.dx", ".dw", ".db" (conv2d, dense; ".dx" for one-operand
 * layers), "<matmul or concat>.da" / ".db", "<layernorm>.dgamma" / ".dbeta", "<loss>.dlogits",
 * "<node>.grad" for a sum of several contributions ("<node>.grad_part<k>" for its partial sums),
 * "<param>.update" for the SGD step; a name that is too long or taken gets "~k" appended.
 */
#include "config.h"

#include "base/base_internal.h"
#include "graph/graph_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One contribution to a node's gradient (a node computing part of it), in a per-node list. */
struct contrib {
    int grad;
    int next;
};

struct veil_ad {
    veil_plan_t *p;
    size_t cap;               /* allocated entries of p->nodes */
    int *head;                /* nforward list heads into c (-1: none) */
    struct contrib *c;
    size_t nc, ccap;
    const char *needs;        /* nforward flags: on a path from a parameter to the loss */
};

veil_plan_t *veil_ad_plan(struct veil_ad *a)
{
    return a->p;
}

int veil_ad_needs(const struct veil_ad *a, int j)
{
    return j >= 0 && a->needs[j];
}

int veil_ad_emit(struct veil_ad *a, enum veil_op op, int base, const char *suffix, int nin,
                 const int *in, int ndim, const size_t *dims,
                 const struct veil_node_attrs *attrs, int fwd, int grad_of)
{
    VEIL_ASSERT(nin >= veil_op_desc(op)->nin_min && nin <= veil_op_desc(op)->nin_max);
    veil_plan_t *p = a->p;
    if (p->count == a->cap) {
        size_t cap = 2 * a->cap + 16;
        struct veil_node *nodes = realloc(p->nodes, cap * sizeof *nodes);
        if (!nodes) {
            veil_error(VEIL_ERR_NOMEM, "veil_compile: out of memory building the backward pass");
            return -1;
        }
        p->nodes = nodes;
        a->cap = cap;
    }
    struct veil_node n;
    veil_plan_node_init(&n);
    n.op = op;
    n.index = (int)p->count;
    veil_plan_unique_name(p, p->nodes[base].name, suffix, n.name);
    veil_node_set_shape(&n, ndim, dims);
    n.nin = nin;
    for (int j = 0; j < nin; j++)
        n.in[j] = in[j];
    if (attrs)
        n.a = *attrs;
    n.fwd = fwd;
    n.grad_of = grad_of;
    p->nodes[p->count++] = n;
    return n.index;
}

int veil_ad_emit_like(struct veil_ad *a, enum veil_op op, int base, const char *suffix, int nin,
                      const int *in, int like, const struct veil_node_attrs *attrs, int fwd,
                      int grad_of)
{
    size_t dims[VEIL_MAX_DIMS];
    int ndim = a->p->nodes[like].ndim;
    memcpy(dims, a->p->nodes[like].dims, sizeof dims);
    return veil_ad_emit(a, op, base, suffix, nin, in, ndim, dims, attrs, fwd, grad_of);
}

int veil_ad_contrib(struct veil_ad *a, int target, int grad)
{
    if (grad < 0)
        return VEIL_ERR_NOMEM; /* emit failed; its error is recorded */
    if (a->nc == a->ccap) {
        size_t cap = 2 * a->ccap + 16;
        struct contrib *c = realloc(a->c, cap * sizeof *c);
        if (!c)
            return veil_error(VEIL_ERR_NOMEM, "veil_compile: out of memory building the backward "
                              "pass");
        a->c = c;
        a->ccap = cap;
    }
    a->c[a->nc].grad = grad;
    a->c[a->nc].next = a->head[target];
    a->head[target] = (int)a->nc++;
    return VEIL_OK;
}

/* The complete gradient of node i: its one contribution, or the ADD chain of all of them. */
static int finalize(struct veil_ad *a, int i)
{
    int e = a->head[i];
    if (e < 0) {
        veil_error(VEIL_ERR_STATE, "veil_compile: internal: node '%s' has no gradient",
                   a->p->nodes[i].name);
        return -1;
    }
    int acc = a->c[e].grad;
    int part = 1;
    for (e = a->c[e].next; e >= 0; e = a->c[e].next) {
        char suffix[32];
        if (a->c[e].next >= 0)
            snprintf(suffix, sizeof suffix, ".grad_part%d", part++);
        else
            snprintf(suffix, sizeof suffix, ".grad");
        int in[2] = {acc, a->c[e].grad};
        acc = veil_ad_emit_like(a, VEIL_OP_ADD, i, suffix, 2, in, i, NULL, -1, i);
        if (acc < 0)
            return -1;
    }
    return acc;
}

static int unsupported(const veil_plan_t *p, int i)
{
    const struct veil_node *n = &p->nodes[i];
    const char *hint = veil_op_desc(n->op)->no_grad_hint;
    return veil_error(VEIL_ERR_UNSUPPORTED, "veil_compile: training: %s '%s' lies between a "
                      "parameter and the loss but has no gradient in Veil; remove it from the "
                      "trained path%s", veil_op_name(n->op), n->name, hint ? hint : "");
}

/* ---- the gradient rules of the op table (contract: veil_grad_fn in graph_internal.h) ------- */

/* Node i's operands and which of them need a gradient. */
struct operands {
    struct veil_node n; /* a copy: emitting may move the node array */
    int x, y, z;        /* in[0..2], -1 when absent */
    int nx, ny, nz;     /* each needs a gradient */
};

static struct operands operands_of(const struct veil_ad *a, int i)
{
    struct operands o;
    o.n = a->p->nodes[i];
    o.x = o.n.in[0];
    o.y = o.n.nin > 1 ? o.n.in[1] : -1;
    o.z = o.n.nin > 2 ? o.n.in[2] : -1;
    o.nx = veil_ad_needs(a, o.x);
    o.ny = veil_ad_needs(a, o.y);
    o.nz = veil_ad_needs(a, o.z);
    return o;
}

int veil_grad_dense(struct veil_ad *a, int i, int gy)
{
    struct operands o = operands_of(a, i);
    int rc = VEIL_OK;
    if (o.nx) {
        int in[2] = {gy, o.y};
        rc = veil_ad_contrib(a, o.x, veil_ad_emit_like(a, VEIL_OP_MATMUL_NT, i, ".dx", 2, in, o.x,
                                                       NULL, -1, o.x));
    }
    if (rc == VEIL_OK && o.ny) {
        int in[2] = {o.x, gy};
        rc = veil_ad_contrib(a, o.y, veil_ad_emit_like(a, VEIL_OP_MATMUL_TN, i, ".dw", 2, in, o.y,
                                                       NULL, -1, o.y));
    }
    if (rc == VEIL_OK && o.nz) {
        int in[1] = {gy};
        rc = veil_ad_contrib(a, o.z, veil_ad_emit_like(a, VEIL_OP_SUM_ROWS, i, ".db", 1, in, o.z,
                                                       NULL, -1, o.z));
    }
    return rc;
}

int veil_grad_conv2d(struct veil_ad *a, int i, int gy)
{
    struct operands o = operands_of(a, i);
    int rc = VEIL_OK;
    if (o.nx) {
        int in[2] = {o.y, gy};
        rc = veil_ad_contrib(a, o.x, veil_ad_emit_like(a, VEIL_OP_CONV_GRAD_INPUT, i, ".dx", 2, in,
                                                       o.x, &o.n.a, i, o.x));
    }
    if (rc == VEIL_OK && o.ny) {
        int in[2] = {o.x, gy};
        rc = veil_ad_contrib(a, o.y, veil_ad_emit_like(a, VEIL_OP_CONV_GRAD_WEIGHT, i, ".dw", 2,
                                                       in, o.y, &o.n.a, i, o.y));
    }
    if (rc == VEIL_OK && o.nz) {
        int in[1] = {gy};
        rc = veil_ad_contrib(a, o.z, veil_ad_emit_like(a, VEIL_OP_SUM_CHANNELS, i, ".db", 1, in,
                                                       o.z, NULL, -1, o.z));
    }
    return rc;
}

int veil_grad_saved(struct veil_ad *a, int i, int gy)
{
    struct operands o = operands_of(a, i);
    if (!o.nx)
        return VEIL_OK;
    int in[1] = {gy};
    return veil_ad_contrib(a, o.x, veil_ad_emit_like(a, veil_op_desc(o.n.op)->grad_op, i, ".dx", 1,
                                                     in, o.x, &o.n.a, i, o.x));
}

int veil_grad_self(struct veil_ad *a, int i, int gy)
{
    struct operands o = operands_of(a, i);
    if (!o.nx)
        return VEIL_OK;
    int in[1] = {gy};
    return veil_ad_contrib(a, o.x, veil_ad_emit_like(a, o.n.op, i, ".dx", 1, in, o.x, &o.n.a, -1,
                                                     o.x));
}

int veil_grad_add(struct veil_ad *a, int i, int gy)
{
    struct operands o = operands_of(a, i);
    int rc = VEIL_OK;
    if (o.nx)
        rc = veil_ad_contrib(a, o.x, gy);
    if (rc == VEIL_OK && o.ny)
        rc = veil_ad_contrib(a, o.y, gy);
    return rc;
}

int veil_grad_concat(struct veil_ad *a, int i, int gy)
{
    struct operands o = operands_of(a, i);
    int rc = VEIL_OK;
    struct veil_node_attrs at;
    memset(&at, 0, sizeof at);
    at.axis = o.n.a.axis;
    int in[1] = {gy};
    if (o.nx) {
        at.start = 0;
        rc = veil_ad_contrib(a, o.x, veil_ad_emit_like(a, VEIL_OP_SLICE, i, ".da", 1, in, o.x, &at,
                                                       -1, o.x));
    }
    if (rc == VEIL_OK && o.ny) {
        at.start = a->p->nodes[o.x].dims[o.n.a.axis];
        rc = veil_ad_contrib(a, o.y, veil_ad_emit_like(a, VEIL_OP_SLICE, i, ".db", 1, in, o.y, &at,
                                                       -1, o.y));
    }
    return rc;
}

int veil_grad_layernorm(struct veil_ad *a, int i, int gy)
{
    struct operands o = operands_of(a, i);
    const struct veil_node *n = &o.n;
    int rc = VEIL_OK;
    int in[1] = {gy};
    if (o.nx)
        rc = veil_ad_contrib(a, o.x, veil_ad_emit_like(a, VEIL_OP_LAYERNORM_GRAD, i, ".dx", 1, in,
                                                       o.x, &n->a, i, o.x));
    if (rc == VEIL_OK && o.ny)
        rc = veil_ad_contrib(a, o.y, veil_ad_emit_like(a, VEIL_OP_LAYERNORM_GRAD_GAMMA, i,
                                                       ".dgamma", 1, in, o.y, &n->a, i, o.y));
    if (rc == VEIL_OK && o.nz) {
        /* SUM_ROWS is 2-D: view dy as (rows, d) first when the input is not. */
        int rows = gy;
        if (n->ndim != 2) {
            size_t d = n->dims[n->ndim - 1];
            size_t dims[2] = {n->numel / d, d};
            rows = veil_ad_emit(a, VEIL_OP_RESHAPE, i, ".dbeta_rows", 1, in, 2, dims, NULL, -1, i);
            if (rows < 0)
                return VEIL_ERR_NOMEM;
        }
        int in2[1] = {rows};
        rc = veil_ad_contrib(a, o.z, veil_ad_emit_like(a, VEIL_OP_SUM_ROWS, i, ".dbeta", 1, in2,
                                                       o.z, NULL, -1, o.z));
    }
    return rc;
}

/* GELU_GRAD(dy, x): the forward's input as an operand (kept alive until then), its saved
 * comparison bits and v through fwd. */
int veil_grad_gelu(struct veil_ad *a, int i, int gy)
{
    struct operands o = operands_of(a, i);
    if (!o.nx)
        return VEIL_OK;
    int in[2] = {gy, o.x};
    return veil_ad_contrib(a, o.x, veil_ad_emit_like(a, VEIL_OP_GELU_GRAD, i, ".dx", 2, in, o.x,
                                                     &o.n.a, i, o.x));
}

int veil_grad_matmul(struct veil_ad *a, int i, int gy)
{
    struct operands o = operands_of(a, i);
    int rc = VEIL_OK;
    if (o.nx) {
        int in[2] = {gy, o.y};
        rc = veil_ad_contrib(a, o.x, veil_ad_emit_like(a, VEIL_OP_MATMUL_NT, i, ".da", 2, in, o.x,
                                                       NULL, -1, o.x));
    }
    if (rc == VEIL_OK && o.ny) {
        int in[2] = {o.x, gy};
        rc = veil_ad_contrib(a, o.y, veil_ad_emit_like(a, VEIL_OP_MATMUL_TN, i, ".db", 2, in, o.y,
                                                       NULL, -1, o.y));
    }
    return rc;
}

/* Checks the loss: one of them, labels not influenced by a parameter, a batch whose 1/B the
 * fixed-point encoding still represents to 16 ulps (XENT_GRAD divides by B). */
static int check_loss(const veil_plan_t *p, const char *from_param)
{
    int L = p->loss, nloss = 0, other = -1;
    for (size_t i = 0; i < p->nforward; i++)
        if (p->nodes[i].op == VEIL_OP_SOFTMAX_XENT) {
            nloss++;
            if ((int)i != L)
                other = (int)i;
        }
    if (L < 0)
        return veil_error(VEIL_ERR_INVAL, "veil_compile: training asked but the graph has no "
                          "loss; end it with veil_softmax_cross_entropy");
    if (nloss > 1)
        return veil_error(VEIL_ERR_UNSUPPORTED, "veil_compile: training: the graph has %d losses "
                          "('%s', '%s'); training takes one: keep a single "
                          "softmax_cross_entropy", nloss, p->nodes[other].name, p->nodes[L].name);
    const struct veil_node *l = &p->nodes[L];
    if (from_param[l->in[1]])
        return veil_error(VEIL_ERR_UNSUPPORTED, "veil_compile: training: the labels '%s' of "
                          "softmax_cross_entropy '%s' depend on a parameter; labels must be data "
                          "(an input), gradients flow only through the logits",
                          p->nodes[l->in[1]].name, l->name);
    if (!from_param[l->in[0]])
        return veil_error(VEIL_ERR_INVAL, "veil_compile: training: no parameter reaches the "
                          "logits '%s' of softmax_cross_entropy '%s'; there is nothing to train",
                          p->nodes[l->in[0]].name, l->name);
    int f = p->opts.frac_bits;
    size_t batch = p->nodes[l->in[0]].dims[0];
    if (llround(ldexp(1.0 / (double)batch, f)) < 16) {
        long long bmax = (long long)floor(ldexp(1.0, f) / 15.5);
        return veil_error(VEIL_ERR_RANGE, "veil_compile: training: batch size %zu of '%s' is "
                          "beyond what %d fractional bits can represent (the gradient divides by "
                          "the batch: 1/%zu is under 16 ulps); use a batch of at most %lld or more "
                          "frac_bits", batch, l->name, f, batch, bmax);
    }
    return VEIL_OK;
}

int veil_plan_build_backward(veil_plan_t *p)
{
    size_t nf = p->nforward;
    struct veil_ad a;
    memset(&a, 0, sizeof a);
    a.p = p;
    a.cap = p->count;
    int rc = VEIL_ERR_NOMEM, L = p->loss;
    char *from_param = calloc(nf ? nf : 1, 1);
    char *needs = calloc(nf ? nf : 1, 1);
    a.head = malloc((nf ? nf : 1) * sizeof *a.head);
    a.needs = needs;
    if (!from_param || !needs || !a.head) {
        veil_error(VEIL_ERR_NOMEM, "veil_compile: out of memory building the backward pass");
        goto done;
    }
    for (size_t i = 0; i < nf; i++) {
        const struct veil_node *n = &p->nodes[i];
        a.head[i] = -1;
        from_param[i] = n->op == VEIL_OP_PARAM && !n->synthetic;
        for (int j = 0; j < n->nin; j++)
            if (n->in[j] >= 0 && from_param[n->in[j]])
                from_param[i] = 1;
    }
    rc = check_loss(p, from_param);
    if (rc != VEIL_OK)
        goto done;
    /* needs: on a path from a parameter to the loss (reaches the loss and a parameter reaches
     * it). The loss's labels were checked above to carry no parameter. */
    needs[L] = 1;
    for (int i = L; i >= 0; i--) {
        if (!needs[i])
            continue;
        const struct veil_node *n = &p->nodes[i];
        for (int j = 0; j < n->nin; j++)
            if (n->in[j] >= 0 && from_param[n->in[j]])
                needs[n->in[j]] = 1;
    }
    for (int i = L; i >= 0; i--) {
        if (!needs[i])
            continue;
        enum veil_op op = p->nodes[i].op;
        if (op == VEIL_OP_SOFTMAX_XENT) {
            int logits = p->nodes[i].in[0];
            rc = veil_ad_contrib(&a, logits, veil_ad_emit_like(&a, VEIL_OP_XENT_GRAD, i,
                                                               ".dlogits", 0, NULL, logits, NULL,
                                                               i, logits));
            if (rc != VEIL_OK)
                goto done;
            continue;
        }
        int g = finalize(&a, i);
        if (g < 0) {
            rc = VEIL_ERR_NOMEM;
            goto done;
        }
        if (op == VEIL_OP_PARAM) {
            struct veil_node_attrs at;
            memset(&at, 0, sizeof at);
            at.lr = p->opts.lr;
            at.momentum = p->opts.momentum;
            at.weight_decay = p->opts.weight_decay;
            /* weight averaging: a replica's gradient is 1/R of its own rows' mean loss's */
            if (p->opts.dp_average == VEIL_DP_AVERAGE_WEIGHTS)
                at.grad_mul = p->opts.microbatches;
            enum veil_op up = VEIL_OP_SGD_UPDATE;
            if (p->opts.optimizer != VEIL_OPTIMIZER_SGD) {
                up = VEIL_OP_ADAM_UPDATE;
                at.momentum = 0.0;
                at.beta1 = p->opts.beta1;
                at.beta2 = p->opts.beta2;
                at.adam_eps = p->opts.eps;
                at.adamw = p->opts.optimizer == VEIL_OPTIMIZER_ADAMW;
                at.adam_s = veil_adam_scale_bits(p->opts.eps, p->opts.frac_bits);
            }
            int in[2] = {i, g};
            if (veil_ad_emit_like(&a, up, i, ".update", 2, in, i, &at, -1, -1) < 0) {
                rc = VEIL_ERR_NOMEM;
                goto done;
            }
            continue;
        }
        veil_grad_fn grad = veil_op_desc(op)->grad;
        rc = grad ? grad(&a, i, g) : unsupported(p, i);
        if (rc != VEIL_OK)
            goto done;
    }
    rc = veil_plan_index(p);
done:
    free(from_param);
    free(needs);
    free(a.head);
    free(a.c);
    return rc;
}

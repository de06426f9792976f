/*
 * plain_ranges.c — veil_plain_check_ranges (contract in include/veil/graph.h): the FIXED
 * plaintext executor walks the plan's forward pass one node at a time, and around each node this
 * file measures what the secure run needs inside a domain (rows and domains:
 * plain_ranges_report.c). Before a node runs, from its operands' ring words: the sums of products
 * of dense, conv2d and matmul before their truncation (recomputed in doubles at 2f bits, with the
 * largest partial sum, since the ring's own sum would wrap silently), the single products of
 * scale, avgpool and global avgpool, the row spreads of softmax and layer norm, layer norm's
 * variance by the executor's own fixed-point sequence, the inputs of exp, gelu, reciprocal,
 * sqrt, rsqrt and div. After it runs, its value. Leaves are measured from the feeds as doubles,
 * before encoding. A node the executor refuses (VEIL_ERR_RANGE: an input outside reciprocal's
 * domain, a leaf or constant the encoder cannot hold) is OVER and the nodes reading it are not
 * computed in that run.
 */
#include "config.h"

#include "base/base_internal.h"
#include "graph/plain/plain_ops_internal.h"
#include "graph/plain/ranges_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* A ring word as a real at s fractional bits. */
static double real(uint64_t w, int s)
{
    return ldexp((double)(int64_t)w, -s);
}

/* The sums of products c (m, n) = a (m, k) . b (k, n) (ring words, row-major, b's rows ldb
 * apart) as reals at 2f bits, without wrapping: each final sum into w, the largest partial
 * |sum| into w's peak. acc: n doubles of scratch. */
static void sums(struct veil_range_row *w, const uint64_t *a, const uint64_t *b, size_t m, size_t n,
                 size_t k, size_t ldb, int f, double *acc)
{
    double peak = w->c.peak;
    for (size_t i = 0; i < m; i++) {
        for (size_t j = 0; j < n; j++)
            acc[j] = 0.0;
        for (size_t l = 0; l < k; l++) {
            const double av = real(a[i * k + l], 2 * f);
            const uint64_t *bl = b + l * ldb;
            for (size_t j = 0; j < n; j++) {
                acc[j] += av * (double)(int64_t)bl[j];
                peak = fabs(acc[j]) > peak ? fabs(acc[j]) : peak;
            }
        }
        for (size_t j = 0; j < n; j++)
            veil_range_row_add(w, acc[j]);
    }
    w->c.peak = peak;
}

static int nomem(const struct veil_node *n)
{
    return veil_error(VEIL_ERR_NOMEM, "range check: %s '%s': out of memory", veil_op_name(n->op),
                      n->name);
}

/* dense (x (B, in) . W (in, out)) and matmul (a (m, k) . b (k, n)). */
static int check_gemm(const struct veil_plain_exec *e, const struct veil_node *n,
                      struct veil_range_row *w)
{
    const struct veil_node *a = &e->p->nodes[n->in[0]], *b = &e->p->nodes[n->in[1]];
    const size_t m = a->dims[0], k = a->dims[1], nn = b->dims[1];
    double *acc = malloc((nn ? nn : 1) * sizeof *acc);
    if (!acc)
        return nomem(n);
    sums(w, e->w[a->index], e->w[b->index], m, nn, k, nn, e->f, acc);
    free(acc);
    return VEIL_OK;
}

/* conv2d: per image, W (O, C KH KW) . im2col(x) (C KH KW, OH OW), a band of output rows at a
 * time as the executor does. */
static int check_conv(const struct veil_plain_exec *e, const struct veil_node *n,
                      struct veil_range_row *w)
{
    const struct veil_node *x = &e->p->nodes[n->in[0]], *wt = &e->p->nodes[n->in[1]];
    const struct veil_plain_conv_geom g = {x->dims[1],  x->dims[2],          x->dims[3],
                                           wt->dims[2], wt->dims[3],         n->dims[2],
                                           n->dims[3],  (size_t)n->a.stride, (size_t)n->a.pad};
    const size_t ckk = g.c * g.kh * g.kw, chw = g.c * g.h * g.w;
    const size_t row_words = ckk * g.ow > 0 ? ckk * g.ow : 1;
    size_t band = VEIL_PLAIN_COLS_MAX / row_words;
    band = band < 1 ? 1 : band > g.oh ? g.oh : band;
    const size_t cw_max = band * g.ow > 0 ? band * g.ow : 1;
    uint64_t *cols = malloc(row_words * band * sizeof *cols);
    double *acc = malloc(cw_max * sizeof *acc);
    if (!cols || !acc) {
        free(cols);
        free(acc);
        return nomem(n);
    }
    for (size_t b = 0; b < x->dims[0]; b++)
        for (size_t r0 = 0; r0 < g.oh; r0 += band) {
            const size_t r1 = r0 + band < g.oh ? r0 + band : g.oh, cw = (r1 - r0) * g.ow;
            veil_plain_im2col_w(&g, e->w[x->index] + b * chw, r0, r1, cols);
            sums(w, e->w[wt->index], cols, wt->dims[0], cw, ckk, cw, e->f, acc);
        }
    free(cols);
    free(acc);
    return VEIL_OK;
}

/* The single products before their truncation: scale by enc(c), avgpool's window sum by
 * round(2^f / k^2), global avgpool's plane sum by enc(1/(H W)) (the executor's constants). */
static void check_products(const struct veil_plain_exec *e, const struct veil_node *n,
                           struct veil_range_row *w)
{
    const struct veil_node *x = &e->p->nodes[n->in[0]];
    const uint64_t *xv = e->w[x->index];
    const int f = e->f;
    if (n->op == VEIL_OP_SCALE) {
        const double c = (double)(int64_t)veil_plain_enc(n->a.c, f);
        for (size_t k = 0; k < x->numel; k++)
            veil_range_row_add(w, real(xv[k], 2 * f) * c);
        return;
    }
    if (n->op == VEIL_OP_GAVGPOOL) {
        const size_t hw = x->dims[2] * x->dims[3];
        const double c = (double)(int64_t)veil_plain_enc(1.0 / (double)hw, f);
        for (size_t pl = 0; pl < n->numel; pl++) {
            double s = 0.0;
            for (size_t t = 0; t < hw; t++)
                s += real(xv[pl * hw + t], 2 * f);
            veil_range_row_add(w, s * c);
        }
        return;
    }
    const size_t k = (size_t)n->a.k, st = (size_t)n->a.stride, kk = k * k;
    const size_t h = x->dims[2], wd = x->dims[3], oh = n->dims[2], ow = n->dims[3];
    const double c = (double)(((UINT64_C(1) << f) + kk / 2) / kk);
    for (size_t pl = 0; pl < x->dims[0] * x->dims[1]; pl++)
        for (size_t oi = 0; oi < oh; oi++)
            for (size_t oj = 0; oj < ow; oj++) {
                const uint64_t *base = xv + (pl * h + oi * st) * wd + oj * st;
                double s = 0.0;
                for (size_t a = 0; a < k; a++)
                    for (size_t b = 0; b < k; b++)
                        s += real(base[a * wd + b], 2 * f);
                veil_range_row_add(w, s * c);
            }
}

/* Row spreads (max - min over the last dimension) of softmax and layer norm. */
static void check_spread(const struct veil_plain_exec *e, const struct veil_node *x,
                         struct veil_range_row *w)
{
    const size_t d = x->dims[x->ndim - 1], rows = d ? x->numel / d : 0;
    for (size_t r = 0; r < rows; r++)
        veil_range_row_add(w, veil_plain_row_spread(e, x, r, d));
}

/* Layer norm's d var per row (graph_internal.h, LAYERNORM): the quantity the row scale squares
 * and sums at 8 fractional bits (it fits while d var < 2^VEIL_LN_DVAR_BITS). */
static void check_variance(const struct veil_plain_exec *e, const struct veil_node *n,
                           struct veil_range_row *w)
{
    const struct veil_node *x = &e->p->nodes[n->in[0]];
    const size_t d = x->dims[x->ndim - 1], rows = d ? x->numel / d : 0;
    for (size_t r = 0; r < rows; r++)
        veil_range_row_add(w, veil_plain_row_dvar(e, x, r, d));
}

/* Every element of node j's value, as reals, into w. */
static void check_values(const struct veil_plain_exec *e, int j, struct veil_range_row *w)
{
    const struct veil_node *x = &e->p->nodes[j];
    for (size_t k = 0; k < x->numel; k++)
        veil_range_row_add(w, real(e->w[j][k], e->f));
}

/* div's |x / y| for divisors inside the domain (the others are the divisor row's OVER). */
static void check_quotient(const struct veil_plain_exec *e, const struct veil_node *n,
                           struct veil_range_row *w)
{
    const uint64_t *xv = e->w[n->in[0]], *yv = e->w[n->in[1]];
    for (size_t k = 0; k < n->numel; k++) {
        const double y = real(yv[k], e->f);
        if (y > 0)
            veil_range_row_add(w, fabs(real(xv[k], e->f) / y));
    }
}

/* The measurements of node i taken from its operands, before it runs. */
static int check_before(veil_range_report_t *r, const struct veil_plain_exec *e, int i)
{
    const struct veil_node *n = &e->p->nodes[i];
    struct veil_range_row *w;
    int rc = VEIL_OK;
    if ((w = veil_range_row(r, i, VEIL_RK_ACC)))
        rc = n->op == VEIL_OP_CONV2D ? check_conv(e, n, w) : check_gemm(e, n, w);
    if ((w = veil_range_row(r, i, VEIL_RK_PRODUCT)))
        check_products(e, n, w);
    if ((w = veil_range_row(r, i, VEIL_RK_SOFTMAX)) ||
        (w = veil_range_row(r, i, VEIL_RK_LN_SPREAD)))
        check_spread(e, &e->p->nodes[n->in[0]], w);
    if ((w = veil_range_row(r, i, VEIL_RK_VARIANCE)))
        check_variance(e, n, w);
    if ((w = veil_range_row(r, i, VEIL_RK_QUOTIENT)))
        check_quotient(e, n, w);
    static const enum veil_range_kind inputs[] = {VEIL_RK_EXP, VEIL_RK_GELU, VEIL_RK_RECIP,
                                                  VEIL_RK_ISQRT, VEIL_RK_DIVISOR};
    for (size_t k = 0; k < sizeof inputs / sizeof inputs[0]; k++)
        if ((w = veil_range_row(r, i, inputs[k])))
            check_values(e, n->in[inputs[k] == VEIL_RK_DIVISOR ? 1 : 0], w);
    return rc;
}

/* Node i computed: every row reached. Refused by the executor: its first row (the domain its
 * operands are checked on, or a leaf's or constant's value) is OVER with the executor's message,
 * its other measurements from the operands count, its value is not reached in this run. */
static void mark(veil_range_report_t *r, int i, int refused)
{
    for (int j = 0; j < r->nrow[i]; j++) {
        struct veil_range_row *w = &r->rows[r->first[i] + (size_t)j];
        if (!refused || (j > 0 && w->kind != VEIL_RK_VALUE)) {
            w->reached = 1; /* computed, or measured before the node ran */
        } else if (j == 0 && !w->refused) {
            w->reached = w->refused = 1;
            snprintf(w->msg, sizeof w->msg, "the fixed-point run refused it: %s",
                     veil_last_error());
        }
    }
}

/* The leaves' feeds, as doubles before encoding; a leaf the encoder cannot hold is refused (its
 * values dropped: the nodes reading it are not computed). */
static void check_leaves(veil_range_report_t *r, const veil_plan_t *p, double **values)
{
    const double enc_max = veil_fixed_max_abs(p->opts.frac_bits);
    for (size_t l = 0; l < p->nleaves; l++) {
        const int i = p->leaves[l];
        struct veil_range_row *w = veil_range_row(r, i, VEIL_RK_LEAF);
        if (!values[i] || !w)
            continue;
        int fits = 1;
        for (size_t k = 0; k < p->nodes[i].numel; k++) {
            veil_range_row_add(w, values[i][k]);
            fits &= fabs(values[i][k]) < enc_max;
        }
        w->reached = 1;
        if (!fits) {
            veil_error(VEIL_ERR_RANGE, "a value beyond the encoder's +-%.3g", enc_max);
            mark(r, i, 1);
            free(values[i]);
            values[i] = NULL;
        }
    }
}

/* Whether every operand of node i has a value (computed and not refused). */
static int operands_ready(const struct veil_plain_exec *e, const struct veil_node *n)
{
    for (int k = 0; k < n->nin; k++)
        if (n->in[k] >= 0 && !e->w[n->in[k]])
            return 0;
    return 1;
}

/* One run of the forward pass, node by node, with the measurements around each. */
static int walk(veil_range_report_t *r, struct veil_plain_exec *e)
{
    const veil_plan_t *p = e->p;
    for (size_t i = 0; i < p->nforward; i++) {
        const struct veil_node *n = &p->nodes[i];
        if (n->op == VEIL_OP_INPUT || n->op == VEIL_OP_PARAM)
            continue; /* measured from the feeds */
        if (!operands_ready(e, n))
            continue; /* unreached in this run */
        struct veil_range_row *w = veil_range_row(r, (int)i, VEIL_RK_CONST);
        for (size_t k = 0; w && n->cvalues && k < n->numel; k++)
            veil_range_row_add(w, n->cvalues[k]);
        int rc = check_before(r, e, (int)i);
        if (rc == VEIL_OK)
            rc = veil_plain_exec_run(e, i, i + 1, 1);
        if (rc == VEIL_ERR_RANGE) {
            mark(r, (int)i, 1);
            continue;
        }
        if (rc != VEIL_OK)
            return rc;
        mark(r, (int)i, 0);
        if ((w = veil_range_row(r, (int)i, VEIL_RK_VALUE)))
            check_values(e, (int)i, w);
    }
    return VEIL_OK;
}

int veil_plain_check_ranges(const veil_plan_t *p, const struct veil_feed *feeds, size_t nfeeds,
                            veil_range_report_t **report)
{
    if (!p || !report)
        return veil_error(VEIL_ERR_INVAL, "veil_plain_check_ranges: NULL plan or report");
    if (*report && (*report)->p != p)
        return veil_error(VEIL_ERR_INVAL, "veil_plain_check_ranges: the report was made for "
                                          "another plan; give a NULL report for a new one");
    veil_range_report_t *mine = NULL;
    int rc = *report ? VEIL_OK : veil_range_report_new(p, &mine);
    if (rc != VEIL_OK)
        return rc;
    veil_range_report_t *r = *report ? *report : mine;
    double **values = calloc(p->count ? p->count : 1, sizeof *values);
    struct veil_plain_exec e;
    memset(&e, 0, sizeof e);
    if (!values)
        rc = veil_error(VEIL_ERR_NOMEM, "veil_plain_check_ranges: out of memory");
    if (rc == VEIL_OK)
        rc = veil_plan_bind(p, -1, feeds, nfeeds, values);
    if (rc == VEIL_OK)
        rc = veil_plain_exec_init(&e, p, VEIL_PLAIN_FIXED);
    if (rc == VEIL_OK) {
        check_leaves(r, p, values);
        rc = veil_plain_exec_bind(&e, values);
    }
    if (rc == VEIL_OK)
        rc = walk(r, &e);
    veil_plain_exec_fini(&e);
    if (values)
        veil_plan_values_free(p, values);
    free(values);
    if (rc == VEIL_OK) {
        r->runs++;
        veil_range_report_finish(r);
        *report = r;
    } else {
        veil_range_report_destroy(&mine);
    }
    return rc;
}

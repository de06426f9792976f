/*
 * plain_ranges_report.c — the range check's report (contract in include/veil/graph.h,
 * veil_plain_check_ranges; structure in ranges_internal.h): which quantities each op is checked
 * on, the domain of each kind of quantity as a function of the fractional bits f (taken from the
 * protocols' headers: tasks/trunc.h for the ring, tasks/nonlinear.h for exp and softmax,
 * tasks/reciprocal_norm.h, tasks/rsqrt_norm.h, graph/secure/run.c's feed range), the margin and
 * verdict of each row, and the printed table.
 */
#include "config.h"

#include "base/base_internal.h"
#include "graph/plain/ranges_internal.h"
#include "tasks/nonlinear.h"
#include "tasks/reciprocal_norm.h"
#include "tasks/rsqrt_norm.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* exp's domain (tasks/nonlinear.h, veil_mpc_exp): wrong below about -112; the last squaring
 * holds exp(x) 2^(2 (f + 3)) (2^38 at f = 16), which passes 2^62 from x = (56 - 2f) ln 2 (16.6). */
#define EXP_LO (-112.0)
#define EXP_ACCURATE_LO (-64.0)

static const struct {
    const char *quantity, *near, *over;
} kinds[VEIL_RK_COUNT] = {
    [VEIL_RK_LEAF] = {"value", "within a factor 4 of the feed range +-2^(31-f)",
                      "beyond the feed range +-2^(31-f): the secure run refuses to share it; "
                      "scale the data or the weights down"},
    [VEIL_RK_CONST] = {"value", "within a factor 4 of the encoder's range +-2^(62-f)",
                       "beyond the encoder's range +-2^(62-f)"},
    [VEIL_RK_VALUE] = {"value", "within a factor 4 of the ring's range +-2^(62-f)",
                       "beyond the ring's range +-2^(62-f): the value wraps"},
    [VEIL_RK_ACC] = {"accumulation",
                     "a sum of products within a factor 4 of 2^(62-2f) before "
                     "its truncation",
                     "a sum of products passes 2^62 ring words before its "
                     "truncation: the secure run returns a wrong value, silently; scale the "
                     "inputs or the weights down"},
    [VEIL_RK_PRODUCT] = {"product",
                         "a product within a factor 4 of 2^(62-2f) before its "
                         "truncation",
                         "a product passes 2^62 ring words before its "
                         "truncation: the secure run returns a wrong value, silently"},
    [VEIL_RK_SOFTMAX] = {"row spread",
                         "terms below the row maximum - 64 (beyond exp's domain) "
                         "are set to an exact 0: right to exp(-64)",
                         "the spread wraps the ring"},
    [VEIL_RK_LN_SPREAD] = {"row spread",
                           "within a factor 4 of 2^(62-f-28), where the row "
                           "mean's product wraps",
                           "beyond 2^(62-f-28): the row mean's product "
                           "wraps; scale the rows down"},
    [VEIL_RK_VARIANCE] = {"d x variance",
                          "within a factor 4 of 2^46, where the row scale's sum of "
                          "squares wraps",
                          "reaches 2^46: the row scale's sum of squares wraps and the "
                          "secure run normalises the row wrongly; scale the layer's input"},
    [VEIL_RK_EXP] = {"input",
                     "outside exp's accurate range [-64, 0] (relative error about "
                     "x^3/24576 above 0, a result of about 0 below -64)",
                     "outside exp's domain "
                     "[-112, 16.6) (f = 16): the secure exp returns a wrong value; subtract a "
                     "maximum first"},
    [VEIL_RK_GELU] = {"input", "within a factor 4 of gelu's domain +-2^(30-f)",
                      "beyond gelu's domain +-2^(30-f)"},
    [VEIL_RK_RECIP] = {"input", "within a factor 4 of an end of the domain [2^-f, 2^15)",
                       "outside the domain [2^-f, 2^15) (0 and negative values included): the "
                       "secure run returns a wrong value"},
    [VEIL_RK_ISQRT] = {"input", "within a factor 4 of an end of the domain [2^-f, 2^15)",
                       "outside the domain [2^-f, 2^15) (0 and negative values included): the "
                       "secure run returns a wrong value"},
    [VEIL_RK_DIVISOR] = {"divisor", "within a factor 4 of an end of the domain [2^-f, 2^15)",
                         "outside the domain [2^-f, 2^15) (0 and negative values included): the "
                         "secure run returns a wrong value"},
    [VEIL_RK_QUOTIENT] = {"quotient", "within a factor 4 of 2^(61-2f)",
                          "|x / y| passes "
                          "2^(61-2f): the product x (1/y) wraps before its truncation"},
};

/* Kind k's domain [*lo, *hi) and accurate range [*slo, *shi] at f fractional bits. */
static void domain(enum veil_range_kind k, int f, double *lo, double *hi, double *slo, double *shi)
{
    double h = ldexp(1.0, 62 - f);
    *slo = -HUGE_VAL;
    *shi = HUGE_VAL;
    switch (k) {
    case VEIL_RK_LEAF:
        h = ldexp(1.0, 31 - f);
        break;
    case VEIL_RK_ACC:
    case VEIL_RK_PRODUCT:
        h = ldexp(1.0, 62 - 2 * f);
        break;
    case VEIL_RK_SOFTMAX:
        *shi = VEIL_SOFTMAX_FLOOR;
        break;
    case VEIL_RK_LN_SPREAD:
        h = ldexp(1.0, VEIL_LN_SPREAD_BITS(f));
        break;
    case VEIL_RK_GELU:
        h = ldexp(1.0, 30 - f);
        break;
    case VEIL_RK_QUOTIENT:
        h = ldexp(1.0, 61 - 2 * f);
        break;
    case VEIL_RK_VARIANCE: /* rows of any variance are scaled into inv_sqrt's domain */
        *lo = 0;
        *hi = ldexp(1.0, VEIL_LN_DVAR_BITS);
        return;
    case VEIL_RK_ISQRT:
        *lo = ldexp(1.0, -f);
        *hi = ldexp(1.0, VEIL_RSQRT_NORM_HI);
        return;
    case VEIL_RK_RECIP:
    case VEIL_RK_DIVISOR:
        *lo = ldexp(1.0, -f);
        *hi = ldexp(1.0, VEIL_RECIP_NORM_HI);
        return;
    case VEIL_RK_EXP:
        *lo = EXP_LO;
        *hi = (56 - 2 * f) * log(2.0);
        *slo = EXP_ACCURATE_LO;
        *shi = 0.0;
        return;
    default:
        break;
    }
    *lo = -h;
    *hi = h;
}

/* The kinds node n is checked on (at most VEIL_RANGE_MAX_ROWS); 0 for backward nodes. */
static int kinds_of(const struct veil_node *n, enum veil_range_kind *k)
{
    if (veil_op_is(n->op, VEIL_OPF_BACKWARD))
        return 0;
    switch (n->op) {
    case VEIL_OP_INPUT:
    case VEIL_OP_PARAM:
        k[0] = VEIL_RK_LEAF;
        return 1;
    case VEIL_OP_CONST:
        k[0] = VEIL_RK_CONST;
        return 1;
    case VEIL_OP_DENSE:
    case VEIL_OP_CONV2D:
    case VEIL_OP_MATMUL:
        k[0] = VEIL_RK_ACC;
        break;
    case VEIL_OP_AVGPOOL:
    case VEIL_OP_GAVGPOOL:
        k[0] = VEIL_RK_PRODUCT;
        break;
    case VEIL_OP_SCALE:
        if (n->a.c == nearbyint(n->a.c)) {
            k[0] = VEIL_RK_VALUE; /* an integer factor: no truncation, only the value */
            return 1;
        }
        k[0] = VEIL_RK_PRODUCT;
        break;
    case VEIL_OP_SOFTMAX:
        k[0] = VEIL_RK_SOFTMAX;
        break;
    case VEIL_OP_SOFTMAX_XENT:
        k[0] = VEIL_RK_SOFTMAX;
        return 1; /* its value is the loss */
    case VEIL_OP_LAYERNORM:
        k[0] = VEIL_RK_LN_SPREAD;
        k[1] = VEIL_RK_VARIANCE;
        k[2] = VEIL_RK_VALUE;
        return 3;
    case VEIL_OP_EXP:
        k[0] = VEIL_RK_EXP;
        break;
    case VEIL_OP_GELU:
        k[0] = VEIL_RK_GELU;
        break;
    case VEIL_OP_RECIPROCAL:
        k[0] = VEIL_RK_RECIP;
        break;
    case VEIL_OP_RSQRT:
    case VEIL_OP_SQRT:
        k[0] = VEIL_RK_ISQRT;
        break;
    case VEIL_OP_DIV:
        k[0] = VEIL_RK_DIVISOR;
        k[1] = VEIL_RK_QUOTIENT;
        k[2] = VEIL_RK_VALUE;
        return 3;
    default:
        k[0] = VEIL_RK_VALUE;
        return 1;
    }
    k[1] = VEIL_RK_VALUE;
    return 2;
}

int veil_range_report_new(const veil_plan_t *p, veil_range_report_t **out)
{
    veil_range_report_t *r = calloc(1, sizeof *r);
    size_t n = p->count ? p->count : 1;
    if (r) {
        r->first = calloc(n, sizeof *r->first);
        r->nrow = calloc(n, sizeof *r->nrow);
        r->rows = calloc(n * VEIL_RANGE_MAX_ROWS, sizeof *r->rows);
    }
    if (!r || !r->first || !r->nrow || !r->rows) {
        veil_range_report_destroy(&r);
        return veil_error(VEIL_ERR_NOMEM, "range check: out of memory (%zu nodes)", p->count);
    }
    r->p = p;
    for (size_t i = 0; i < p->nforward; i++) {
        const struct veil_node *nd = &p->nodes[i];
        enum veil_range_kind k[VEIL_RANGE_MAX_ROWS];
        r->first[i] = r->nrows;
        r->nrow[i] = kinds_of(nd, k);
        for (int j = 0; j < r->nrow[i]; j++) {
            struct veil_range_row *w = &r->rows[r->nrows++];
            w->kind = k[j];
            w->c.node = nd->name;
            w->c.op = veil_op_name(nd->op);
            w->c.quantity = kinds[k[j]].quantity;
            w->c.min = HUGE_VAL;
            w->c.max = -HUGE_VAL;
            domain(k[j], p->opts.frac_bits, &w->c.lo, &w->c.limit, &w->soft_lo, &w->soft_hi);
        }
    }
    veil_range_report_finish(r);
    *out = r;
    return VEIL_OK;
}

struct veil_range_row *veil_range_row(veil_range_report_t *r, int i, enum veil_range_kind k)
{
    for (int j = 0; j < r->nrow[i]; j++)
        if (r->rows[r->first[i] + (size_t)j].kind == k)
            return &r->rows[r->first[i] + (size_t)j];
    return NULL;
}

void veil_range_row_add(struct veil_range_row *w, double v)
{
    w->c.min = v < w->c.min ? v : w->c.min;
    w->c.max = v > w->c.max ? v : w->c.max;
    w->c.count++;
}

/* Bits between [min, max] and the nearest end of [lo, hi) (hi > 0): negative outside, 0 at hi
 * itself (outside too: the domain is open there). */
static double margin(double min, double max, double lo, double hi)
{
    const double up = max <= 0 ? HUGE_VAL : log2(hi / max);
    double dn;
    if (lo > 0)
        dn = min > 0 ? log2(min / lo) : -HUGE_VAL;
    else
        dn = min >= 0 ? HUGE_VAL : log2(lo / min);
    return up < dn ? up : dn;
}

void veil_range_report_finish(veil_range_report_t *r)
{
    for (size_t i = 0; i < r->nrows; i++) {
        struct veil_range_row *w = &r->rows[i];
        struct veil_range_check *c = &w->c;
        const int seen = c->count > 0;
        c->max_abs = seen ? fmax(fabs(c->min), fabs(c->max)) : 0.0;
        if (w->kind != VEIL_RK_ACC)
            c->peak = c->max_abs;
        c->margin = seen ? margin(c->min, c->max, c->lo, c->limit) : HUGE_VAL;
        c->note = "";
        if (w->refused) {
            c->verdict = VEIL_RANGE_OVER;
            c->note = w->msg;
        } else if (!w->reached) {
            c->verdict = VEIL_RANGE_UNREACHED;
            c->note = "not computed: an operand was not (see the rows above marked OVER)";
        } else if (seen && (c->min < c->lo || c->max >= c->limit)) {
            c->verdict = VEIL_RANGE_OVER;
            c->note = kinds[w->kind].over;
        } else if (seen && (isfinite(w->soft_lo) || isfinite(w->soft_hi)
                                ? c->min < w->soft_lo || c->max > w->soft_hi
                                : c->margin < VEIL_RANGE_NEAR_BITS)) {
            c->verdict = VEIL_RANGE_NEAR;
            c->note = kinds[w->kind].near;
        } else {
            c->verdict = VEIL_RANGE_OK;
        }
    }
}

/* ---- public accessors and the printer ------------------------------------------------------- */

size_t veil_range_report_count(const veil_range_report_t *r)
{
    return r ? r->nrows : 0;
}

const struct veil_range_check *veil_range_report_get(const veil_range_report_t *r, size_t i)
{
    return r && i < r->nrows ? &r->rows[i].c : NULL;
}

size_t veil_range_report_runs(const veil_range_report_t *r)
{
    return r ? r->runs : 0;
}

int veil_range_report_worst(const veil_range_report_t *r)
{
    int worst = VEIL_RANGE_OK;
    for (size_t i = 0; r && i < r->nrows; i++)
        worst = r->rows[i].c.verdict > worst ? r->rows[i].c.verdict : worst;
    return worst;
}

size_t veil_range_report_tally(const veil_range_report_t *r, int v)
{
    size_t n = 0;
    for (size_t i = 0; r && i < r->nrows; i++)
        n += r->rows[i].c.verdict == v;
    return n;
}

const char *veil_range_verdict_name(int v)
{
    static const char *const names[VEIL_RANGE_VERDICT_COUNT] = {"OK", "NEAR", "UNREACHED", "OVER"};
    return v >= 0 && v < VEIL_RANGE_VERDICT_COUNT ? names[v] : "?";
}

void veil_range_report_print(const veil_range_report_t *r, void *file)
{
    FILE *f = file ? file : stdout;
    if (!r)
        return;
    fprintf(f,
            "range check of %s: %zu run%s of the fixed-point plaintext executor, %d "
            "fractional bits\n(margin: bits to the domain's nearest end; NEAR: under %d, or "
            "outside an op's accurate range)\n",
            r->p->model[0] ? r->p->model : "the plan", r->runs, r->runs == 1 ? "" : "s",
            r->p->opts.frac_bits, VEIL_RANGE_NEAR_BITS);
    fprintf(f, "%-16s %-11s %-12s %10s %10s  %-23s %6s  %s\n", "node", "op", "quantity", "min",
            "max", "domain", "margin", "verdict");
    for (size_t i = 0; i < r->nrows; i++) {
        const struct veil_range_check *c = &r->rows[i].c;
        char dom[64], mn[16] = "-", mx[16] = "-", mg[16] = "-";
        snprintf(dom, sizeof dom, "[%.4g, %.4g)", c->lo, c->limit);
        if (c->count) {
            snprintf(mn, sizeof mn, "%.4g", c->min);
            snprintf(mx, sizeof mx, "%.4g", c->max);
            snprintf(mg, sizeof mg, "%.2f", c->margin); /* inf, -inf: an open side */
        }
        fprintf(f, "%-16s %-11s %-12s %10s %10s  %-23s %6s  %s\n", c->node, c->op, c->quantity, mn,
                mx, dom, mg, veil_range_verdict_name(c->verdict));
        if (c->verdict != VEIL_RANGE_OK)
            fprintf(f, "    %s: %s\n", c->node, c->note);
        else if (r->rows[i].kind == VEIL_RK_ACC && c->peak > c->max_abs &&
                 c->peak >= ldexp(c->limit, -VEIL_RANGE_NEAR_BITS))
            fprintf(f,
                    "    %s: largest partial sum %.4g (the ring's sum is modular: only the "
                    "final one must fit)\n",
                    c->node, c->peak);
    }
    fprintf(f, "summary: %zu OK, %zu NEAR, %zu OVER, %zu UNREACHED: %s\n",
            veil_range_report_tally(r, VEIL_RANGE_OK), veil_range_report_tally(r, VEIL_RANGE_NEAR),
            veil_range_report_tally(r, VEIL_RANGE_OVER),
            veil_range_report_tally(r, VEIL_RANGE_UNREACHED),
            veil_range_report_worst(r) == VEIL_RANGE_OVER
                ? "the secure run would compute wrong values (rows marked OVER)"
                : "every value inside its domain on this data");
}

void veil_range_report_destroy(veil_range_report_t **r)
{
    if (!r || !*r)
        return;
    free((*r)->rows);
    free((*r)->first);
    free((*r)->nrow);
    free(*r);
    *r = NULL;
}

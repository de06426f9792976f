/*
 * ranges_internal.h — the range check's report (veil_plain_check_ranges, include/veil/graph.h),
 * shared by plain_ranges.c (the walk over the plan and each op's measurements) and
 * plain_ranges_report.c (the rows, their domains, verdicts and the printer). A row is one
 * quantity of one node; each kind of quantity has its domain as a function of the fractional
 * bits f, and its notes. Never installed.
 */
#ifndef VEIL_GRAPH_PLAIN_RANGES_INTERNAL_H
#define VEIL_GRAPH_PLAIN_RANGES_INTERNAL_H

#include "graph/graph_internal.h"

#include <stddef.h>

/* The kinds of quantity (the domains: plain_ranges_report.c). */
enum veil_range_kind {
    VEIL_RK_LEAF,      /* an input's or parameter's feed: +-2^(31-f) */
    VEIL_RK_CONST,     /* a constant: the encoder's +-2^(62-f) */
    VEIL_RK_VALUE,     /* a computed node's value: +-2^(62-f) */
    VEIL_RK_ACC,       /* a sum of products before its truncation: +-2^(62-2f) */
    VEIL_RK_PRODUCT,   /* one product before its truncation: +-2^(62-2f) */
    VEIL_RK_SOFTMAX,   /* softmax row spread: the ring; accurate up to VEIL_SOFTMAX_FLOOR */
    VEIL_RK_LN_SPREAD, /* layer norm row spread: 2^(62-f-VEIL_LN_MEAN_BITS) */
    VEIL_RK_VARIANCE,  /* layer norm: d var per row, below 2^46 */
    VEIL_RK_EXP,       /* exp's input: [-112, 16.6) at f = 16, accurate on [-64, 0] */
    VEIL_RK_GELU,      /* gelu's input: +-2^(30-f) */
    VEIL_RK_RECIP,     /* reciprocal's input: [2^-f, 2^VEIL_RECIP_NORM_HI) */
    VEIL_RK_ISQRT,     /* sqrt's and rsqrt's input: [2^-f, 2^VEIL_RSQRT_NORM_HI) */
    VEIL_RK_DIVISOR,   /* div's divisor: as the reciprocal's input */
    VEIL_RK_QUOTIENT,  /* div's |x / y|: 2^(61-2f) */
    VEIL_RK_COUNT
};

/** Most rows a node has. */
#define VEIL_RANGE_MAX_ROWS 3

struct veil_range_row {
    struct veil_range_check c; /* the public view (veil_range_report_get) */
    enum veil_range_kind kind;
    double soft_lo, soft_hi; /* the accurate range inside the domain (+-HUGE_VAL: none) */
    int reached;             /* computed in at least one run */
    int refused;             /* the fixed-point run refused the node (msg says why) */
    char msg[256];
};

struct veil_range_report {
    const veil_plan_t *p;
    struct veil_range_row *rows;
    size_t nrows;
    size_t *first; /* per plan node: its first row */
    int *nrow;     /* per plan node: its number of rows (0: none, e.g. backward nodes) */
    size_t runs;
};

/** A new report for p: every forward node's rows, nothing seen (VEIL_ERR_NOMEM). */
int veil_range_report_new(const veil_plan_t *p, veil_range_report_t **out);
/** Node i's row of kind k, or NULL when it has none. */
struct veil_range_row *veil_range_row(veil_range_report_t *r, int i, enum veil_range_kind k);
/** Records one value v (a real) of the row's quantity. */
void veil_range_row_add(struct veil_range_row *w, double v);
/** Recomputes every row's margin, verdict and note from what was seen (after each run). */
void veil_range_report_finish(veil_range_report_t *r);

#endif

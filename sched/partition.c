/*
 * partition.c — placement arithmetic: the pipeline time of a layer partition by the bubble model
 * of the multi-GPU Piranha report, two solvers for the best partition under a per-device memory
 * limit (exhaustive search for small networks, a Pareto-front dynamic programme for deep ones),
 * and the tensor-parallel split chooser for one matrix product. Pure functions, no hwloc/StarPU.
 */
#include "config.h"

#include "sched/sched_internal.h"

#include "base/base_internal.h"

#include <stdlib.h>
#include <string.h>

/* Completion time of the last micro-batch on the last stage of a flow through stages with
 * per-micro-batch times t[0..p) (in that order), by the report's bubble recursion (eqs. 2-4):
 * B_m^i = max(0, m t_{i-1} + sum_{j<=m} B_j^{i-1} - (m-1) t_i - sum_{j<m} B_j^i), B^1 = 0,
 * F_i = sum_m B_m^i + M t_i. cum_prev / cum_cur hold running sums of the bubbles (M each).
 * Returns max_i F_i. */
static double flow_time(const double *t, unsigned p, unsigned nmb, double *cum_prev,
                        double *cum_cur)
{
    double fmax = 0;
    for (unsigned i = 0; i < p; i++) {
        double sum_cur = 0; /* sum_{j < m} B_j^i */
        for (unsigned m = 1; m <= nmb; m++) {
            double b = 0;
            if (i > 0) {
                b = m * t[i - 1] + cum_prev[m - 1] - (m - 1) * t[i] - sum_cur;
                if (b < 0)
                    b = 0;
            }
            sum_cur += b;
            cum_cur[m - 1] = sum_cur;
        }
        double f = sum_cur + nmb * t[i];
        if (f > fmax)
            fmax = f;
        memcpy(cum_prev, cum_cur, nmb * sizeof(double));
    }
    return fmax;
}

double veil_pipeline_time(const struct veil_layer_cost *layers, unsigned nlayers,
                          const struct veil_pipeline_plan *plan, unsigned micro_batches)
{
    double f[VEIL_PIPE_MAX_STAGES], g[VEIL_PIPE_MAX_STAGES];
    unsigned p, next = 0;
    if (layers == NULL || plan == NULL || nlayers == 0 || micro_batches == 0 ||
        plan->nstages == 0 || plan->nstages > VEIL_PIPE_MAX_STAGES)
        return -1;
    p = plan->nstages;
    for (unsigned s = 0; s < p; s++)
        f[s] = g[s] = 0;
    for (unsigned s = 0; s < p; s++) {
        if (plan->first[s] != next || plan->count[s] == 0 || plan->count[s] > nlayers - next)
            return -1;
        for (unsigned l = next; l < next + plan->count[s]; l++) {
            f[s] += layers[l].fwd;
            g[p - 1 - s] += layers[l].bwd; /* backward visits the stages in reverse */
        }
        next += plan->count[s];
    }
    if (next != nlayers)
        return -1;
    double *work = malloc(2 * (size_t)micro_batches * sizeof(double));
    if (work == NULL)
        return -1;
    memset(work, 0, 2 * (size_t)micro_batches * sizeof(double));
    double tf = flow_time(f, p, micro_batches, work, work + micro_batches);
    memset(work, 0, 2 * (size_t)micro_batches * sizeof(double));
    double tg = flow_time(g, p, micro_batches, work, work + micro_batches);
    free(work);
    return tf + tg;
}

static int check_args(const struct veil_layer_cost *layers, unsigned nlayers, unsigned ndevices,
                      unsigned micro_batches, struct veil_pipeline_plan *out)
{
    if (layers == NULL || out == NULL || nlayers == 0 || micro_batches == 0)
        return veil_error(VEIL_ERR_INVAL, "partition: no layers, no micro-batch or no output");
    if (ndevices == 0 || ndevices > nlayers || ndevices > VEIL_PIPE_MAX_STAGES)
        return veil_error(VEIL_ERR_INVAL,
                          "partition: %u devices for %u layers (need 1 <= devices <= layers, "
                          "at most %d)",
                          ndevices, nlayers, VEIL_PIPE_MAX_STAGES);
    for (unsigned l = 0; l < nlayers; l++)
        if (!(layers[l].fwd >= 0) || !(layers[l].bwd >= 0) || !(layers[l].mem >= 0))
            return veil_error(VEIL_ERR_INVAL, "partition: layer %u has a negative or NaN cost", l);
    return VEIL_OK;
}

static void plan_from_cuts(const unsigned *cuts, unsigned ndevices, unsigned nlayers,
                           struct veil_pipeline_plan *plan)
{
    /* cuts[s] = first layer of stage s + 1, s < ndevices - 1 */
    plan->nstages = ndevices;
    for (unsigned s = 0; s < ndevices; s++) {
        plan->first[s] = s == 0 ? 0 : cuts[s - 1];
        unsigned end = s + 1 < ndevices ? cuts[s] : nlayers;
        plan->count[s] = end - plan->first[s];
    }
}

struct search {
    const struct veil_layer_cost *layers;
    unsigned nlayers, ndevices, nmb;
    double cap;
    unsigned cuts[VEIL_PIPE_MAX_STAGES];
    struct veil_pipeline_plan best;
    int found;
};

static double seg_mem(const struct veil_layer_cost *layers, unsigned from, unsigned to)
{
    double m = 0;
    for (unsigned l = from; l < to; l++)
        m += layers[l].mem;
    return m;
}

/* Places cut s (stage s starts at `start`), recursing over the later cuts. */
static void search_cuts(struct search *st, unsigned s, unsigned start)
{
    if (s == st->ndevices - 1) {
        if (seg_mem(st->layers, start, st->nlayers) > st->cap)
            return;
        struct veil_pipeline_plan plan;
        plan_from_cuts(st->cuts, st->ndevices, st->nlayers, &plan);
        plan.time = veil_pipeline_time(st->layers, st->nlayers, &plan, st->nmb);
        if (plan.time >= 0 && (!st->found || plan.time < st->best.time)) {
            st->best = plan;
            st->found = 1;
        }
        return;
    }
    /* stage s is [start, c); leave at least one layer for each later stage */
    for (unsigned c = start + 1; c + (st->ndevices - 1 - s) <= st->nlayers; c++) {
        if (seg_mem(st->layers, start, c) > st->cap)
            break; /* memory only grows with c */
        st->cuts[s] = c;
        search_cuts(st, s + 1, c);
    }
}

int veil_partition_exhaustive(const struct veil_layer_cost *layers, unsigned nlayers,
                              unsigned ndevices, unsigned micro_batches, double device_mem,
                              struct veil_pipeline_plan *out)
{
    int rc = check_args(layers, nlayers, ndevices, micro_batches, out);
    if (rc != VEIL_OK)
        return rc;
    /* C(nlayers - 1, ndevices - 1), stopping once past the limit */
    double cand = 1;
    for (unsigned i = 1; i < ndevices && cand <= 1e7; i++)
        cand = cand * (double)(nlayers - i) / (double)i;
    if (cand > 1e7)
        return veil_error(VEIL_ERR_RANGE,
                          "partition: %u layers on %u devices is too many candidates for the "
                          "exhaustive search; use veil_partition_dp",
                          nlayers, ndevices);
    struct search st = {.layers = layers,
                        .nlayers = nlayers,
                        .ndevices = ndevices,
                        .nmb = micro_batches,
                        .cap = device_mem};
    search_cuts(&st, 0, 0);
    if (!st.found)
        return veil_error(VEIL_ERR_RANGE,
                          "partition: no split of %u layers over %u devices fits %.3g per device",
                          nlayers, ndevices, device_mem);
    *out = st.best;
    return VEIL_OK;
}

/* Pareto front entry of the DP: bottlenecks so far and where it came from. */
struct entry {
    double a, b;       /* max forward / backward stage time so far */
    unsigned prev_j;   /* layers placed before the last stage */
    unsigned prev_idx; /* entry index in front[s - 1][prev_j] */
};

struct front {
    struct entry *e;
    unsigned n, cap;
};

/* Adds (a, b) unless an entry dominates it; drops the entries it dominates. -1 on OOM. */
static int front_add(struct front *f, struct entry x)
{
    for (unsigned i = 0; i < f->n; i++)
        if (f->e[i].a <= x.a && f->e[i].b <= x.b)
            return 0;
    unsigned w = 0;
    for (unsigned i = 0; i < f->n; i++)
        if (!(x.a <= f->e[i].a && x.b <= f->e[i].b))
            f->e[w++] = f->e[i];
    f->n = w;
    if (f->n == f->cap) {
        unsigned ncap = f->cap ? 2 * f->cap : 8;
        struct entry *ne = realloc(f->e, ncap * sizeof(*ne));
        if (ne == NULL)
            return -1;
        f->e = ne;
        f->cap = ncap;
    }
    f->e[f->n++] = x;
    return 0;
}

int veil_partition_dp(const struct veil_layer_cost *layers, unsigned nlayers, unsigned ndevices,
                      unsigned micro_batches, double device_mem, struct veil_pipeline_plan *out)
{
    int rc = check_args(layers, nlayers, ndevices, micro_batches, out);
    if (rc != VEIL_OK)
        return rc;
    size_t L = nlayers, P = ndevices;
    double *pf = calloc(3 * (L + 1), sizeof(double));
    struct front *fr = calloc((P + 1) * (L + 1), sizeof(*fr));
    if (pf == NULL || fr == NULL) {
        rc = veil_error(VEIL_ERR_NOMEM, "partition: out of memory");
        goto done;
    }
    double *pg = pf + (L + 1), *pm = pg + (L + 1);
    for (size_t l = 0; l < L; l++) {
        pf[l + 1] = pf[l] + layers[l].fwd;
        pg[l + 1] = pg[l] + layers[l].bwd;
        pm[l + 1] = pm[l] + layers[l].mem;
    }
#define FR(s, j) fr[(size_t)(s) * (L + 1) + (j)]
    if (front_add(&FR(0, 0), (struct entry){0, 0, 0, 0}) != 0) {
        rc = veil_error(VEIL_ERR_NOMEM, "partition: out of memory");
        goto done;
    }
    for (size_t s = 1; s <= P; s++)
        for (size_t j = s; j + (P - s) <= L; j++) /* stage s ends after layer j */
            for (size_t i = s - 1; i < j; i++) {  /* and starts at layer i */
                if (pm[j] - pm[i] > device_mem || FR(s - 1, i).n == 0)
                    continue;
                double a = pf[j] - pf[i], b = pg[j] - pg[i];
                for (unsigned t = 0; t < FR(s - 1, i).n; t++) {
                    const struct entry *e = &FR(s - 1, i).e[t];
                    struct entry x = {e->a > a ? e->a : a, e->b > b ? e->b : b, (unsigned)i, t};
                    if (front_add(&FR(s, j), x) != 0) {
                        rc = veil_error(VEIL_ERR_NOMEM, "partition: out of memory");
                        goto done;
                    }
                }
            }
    if (FR(P, L).n == 0) {
        rc = veil_error(VEIL_ERR_RANGE,
                        "partition: no split of %u layers over %u devices fits %.3g per device",
                        nlayers, ndevices, device_mem);
        goto done;
    }
    unsigned best = 0;
    for (unsigned t = 1; t < FR(P, L).n; t++)
        if (FR(P, L).e[t].a + FR(P, L).e[t].b < FR(P, L).e[best].a + FR(P, L).e[best].b)
            best = t;
    /* Walk back: stage s covers [prev_j, j). */
    out->nstages = ndevices;
    size_t j = L;
    unsigned idx = best;
    for (size_t s = P; s >= 1; s--) {
        const struct entry *e = &FR(s, j).e[idx];
        out->first[s - 1] = e->prev_j;
        out->count[s - 1] = (unsigned)(j - e->prev_j);
        j = e->prev_j;
        idx = e->prev_idx;
    }
#undef FR
    out->time = veil_pipeline_time(layers, nlayers, out, micro_batches);
    rc = out->time >= 0 ? VEIL_OK : veil_error(VEIL_ERR_NOMEM, "partition: out of memory");
done:
    if (fr != NULL)
        for (size_t k = 0; k < (P + 1) * (L + 1); k++)
            free(fr[k].e);
    free(fr);
    free(pf);
    return rc;
}

/* Elements moved to give every device the part of an operand of `size` elements a split needs:
 * need_full (all of it everywhere) or a shard along dimension `need` (ROW/COL) given where it
 * is. A shard along the other dimension costs an all-to-all: each device lacks (d - 1) / d of
 * its shard, (d - 1) / d * size in total; a full copy from shards costs (d - 1) * size. */
static double gather_cost(double size, unsigned d, enum veil_tp_layout have, int need_full,
                          enum veil_tp_layout need)
{
    if (have == VEIL_TP_REPLICATED)
        return 0;
    if (need_full)
        return (d - 1) * size;
    if (have == need)
        return 0;
    return size * (d - 1) / d;
}

enum veil_tp_split veil_tp_choose(size_t m, size_t k, size_t n, unsigned ndevices,
                                  enum veil_tp_layout a, enum veil_tp_layout b, double *cost)
{
    double d = ndevices, sa = (double)m * k, sb = (double)k * n, sc = (double)m * n;
    double c[VEIL_TP_COUNT];
    if (ndevices <= 1) {
        if (cost != NULL)
            *cost = 0;
        return VEIL_TP_ROWS;
    }
    /* rows: A's rows sharded, B full. columns: A full, B's columns sharded. inner: A's columns
     * and B's rows sharded, then the (d - 1) partial m x n products are summed. */
    c[VEIL_TP_ROWS] = gather_cost(sa, ndevices, a, 0, VEIL_TP_ROW_SHARDED) +
                      gather_cost(sb, ndevices, b, 1, VEIL_TP_REPLICATED);
    c[VEIL_TP_COLUMNS] = gather_cost(sa, ndevices, a, 1, VEIL_TP_REPLICATED) +
                         gather_cost(sb, ndevices, b, 0, VEIL_TP_COL_SHARDED);
    c[VEIL_TP_INNER] = gather_cost(sa, ndevices, a, 0, VEIL_TP_COL_SHARDED) +
                       gather_cost(sb, ndevices, b, 0, VEIL_TP_ROW_SHARDED) + (d - 1) * sc;
    enum veil_tp_split best = VEIL_TP_ROWS;
    for (int s = 1; s < VEIL_TP_COUNT; s++)
        if (c[s] < c[best])
            best = (enum veil_tp_split)s;
    if (cost != NULL)
        *cost = c[best];
    return best;
}

const char *veil_tp_split_name(enum veil_tp_split s)
{
    switch (s) {
    case VEIL_TP_ROWS:
        return "rows";
    case VEIL_TP_COLUMNS:
        return "columns";
    case VEIL_TP_INNER:
        return "inner";
    default:
        return "?";
    }
}

/*
 * trace_summary.c — busy and overlap of one run, computed from the recorder's events (the same
 * events the Chrome trace shows): unions of task intervals and of message intervals, their
 * intersection, per run and per region, as struct veil_run_profile defines them
 * (include/veil/party.h); and the profile's printer. Interval unions are computed by sorting
 * and merging, intersections by walking two merged lists: O(n log n) per window.
 */
#include "config.h"
#include "base/base_internal.h"
#include "base/trace.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A run's event as the summary needs it. */
struct item {
    double a, b;
    uint64_t bytes;
    int region;
    int net; /* 1: a message, 0: a task */
};

static int by_start(const void *x, const void *y)
{
    const struct veil_trace_span *p = x, *q = y;
    return (p->a > q->a) - (p->a < q->a);
}

/* Sorts v and merges overlapping intervals in place; returns the number left. */
static size_t merge(struct veil_trace_span *v, size_t n)
{
    if (n == 0)
        return 0;
    qsort(v, n, sizeof *v, by_start);
    size_t k = 0;
    for (size_t i = 1; i < n; i++) {
        if (v[i].a <= v[k].b) {
            if (v[i].b > v[k].b)
                v[k].b = v[i].b;
        } else {
            v[++k] = v[i];
        }
    }
    return k + 1;
}

static double length(const struct veil_trace_span *v, size_t n)
{
    double s = 0;
    for (size_t i = 0; i < n; i++)
        s += v[i].b - v[i].a;
    return s;
}

/* |X n Y| for two merged (sorted, disjoint) lists. */
static double intersection(const struct veil_trace_span *x, size_t nx,
                           const struct veil_trace_span *y, size_t ny)
{
    double s = 0;
    size_t i = 0, j = 0;
    while (i < nx && j < ny) {
        double a = x[i].a > y[j].a ? x[i].a : y[j].a;
        double b = x[i].b < y[j].b ? x[i].b : y[j].b;
        if (b > a)
            s += b - a;
        if (x[i].b < y[j].b)
            i++;
        else
            j++;
    }
    return s;
}

/* Busy figures of the items matching region (-1: all) within [w0, w1] (microseconds). */
static void busy(const struct item *it, size_t n, int region, double w0, double w1,
                 struct veil_trace_span *c, struct veil_trace_span *m, struct veil_busy *out)
{
    memset(out, 0, sizeof *out);
    size_t nc = 0, nm = 0;
    for (size_t i = 0; i < n; i++) {
        if (region >= 0 && it[i].region != region)
            continue;
        if (it[i].net) {
            out->messages++;
            out->bytes += it[i].bytes;
        } else {
            out->tasks++;
        }
        double a = it[i].a < w0 ? w0 : it[i].a, b = it[i].b > w1 ? w1 : it[i].b;
        if (b <= a)
            continue;
        if (it[i].net)
            m[nm++] = (struct veil_trace_span){a, b};
        else
            c[nc++] = (struct veil_trace_span){a, b};
    }
    veil_trace_busy_figures(c, nc, m, nm, w1 > w0 ? w1 - w0 : 0, out);
}

void veil_trace_busy_figures(struct veil_trace_span *c, size_t nc, struct veil_trace_span *m,
                             size_t nm, double wall, struct veil_busy *out)
{
    nc = merge(c, nc);
    nm = merge(m, nm);
    const double tc = length(c, nc), tm = length(m, nm), to = intersection(c, nc, m, nm);
    out->wall_s = wall * 1e-6;
    out->compute_s = tc * 1e-6;
    out->network_s = tm * 1e-6;
    out->overlap_s = to * 1e-6;
    out->compute_pct = out->network_pct = out->overlap_pct = out->idle_pct = 0;
    if (wall > 0) {
        out->compute_pct = 100.0 * tc / wall;
        out->network_pct = 100.0 * tm / wall;
        out->overlap_pct = 100.0 * to / wall;
        out->idle_pct = 100.0 * (wall - (tc + tm - to)) / wall;
        if (out->idle_pct < 0)
            out->idle_pct = 0; /* rounding only: the union lies within the window */
    }
    const double longer = tc > tm ? tc : tm;
    out->overlap_share = longer > 0 ? to / longer : 0;
    out->stretch = longer > 0 ? wall / longer : 0;
}

int veil_trace_summarize(int run, double t0, double t1, struct veil_run_profile *out)
{
    memset(out, 0, sizeof *out);
    out->run = run;
    veil_trace_run_cpu(run, &out->cpu); /* kept by the party before the run's event */
    const size_t total = veil_trace_count();
    size_t n = 0;
    for (size_t i = 0; i < total; i++) {
        const struct veil_trace_event *e = veil_trace_event_at(i);
        n += e && e->run == run && e->kind != VEIL_TRACE_RUN;
    }
    struct item *it = malloc((n ? n : 1) * sizeof *it);
    struct veil_trace_span *c = malloc((n ? n : 1) * sizeof *c),
                           *m = malloc((n ? n : 1) * sizeof *m);
    if (!it || !c || !m) {
        free(it);
        free(c);
        free(m);
        return veil_error(VEIL_ERR_NOMEM, "trace summary: out of memory (%zu events)", n);
    }
    size_t k = 0;
    for (size_t i = 0; i < total && k < n; i++) {
        const struct veil_trace_event *e = veil_trace_event_at(i);
        if (!e || e->run != run || e->kind == VEIL_TRACE_RUN)
            continue;
        it[k++] = (struct item){.a = e->t0,
                                .b = e->t1,
                                .bytes = e->bytes,
                                .region = e->region,
                                .net = e->kind != VEIL_TRACE_TASK_EV};
    }
    busy(it, k, -1, t0, t1, c, m, &out->total);
    for (int r = 0; r < VEIL_REGION_COUNT; r++) {
        double a = 0, b = 0;
        int any = 0;
        for (size_t i = 0; i < k; i++) {
            if (it[i].region != r)
                continue;
            a = !any || it[i].a < a ? it[i].a : a;
            b = !any || it[i].b > b ? it[i].b : b;
            any = 1;
        }
        if (!any)
            continue;
        busy(it, k, r, a < t0 ? t0 : a, b > t1 ? t1 : b, c, m, &out->region[r]);
    }
    free(it);
    free(c);
    free(m);
    return VEIL_OK;
}

static void print_line(FILE *f, const char *name, const struct veil_busy *b)
{
    fprintf(f, "%-8s %10.3f %8.1f %8.1f %8.1f %8.1f %6.3f %7.2f %7llu %6llu %12llu\n", name,
            b->wall_s * 1e3, b->compute_pct, b->network_pct, b->overlap_pct, b->idle_pct,
            b->overlap_share, b->stretch, (unsigned long long)b->tasks,
            (unsigned long long)b->messages, (unsigned long long)b->bytes);
}

void veil_run_profile_print(const struct veil_run_profile *p, void *file)
{
    FILE *f = file ? file : stdout;
    if (!p)
        return;
    char label[24];
    snprintf(label, sizeof label, "run %d", p->run);
    fprintf(f, "%-8s %10s %8s %8s %8s %8s %6s %7s %7s %6s %12s\n", label, "wall_ms", "comp%",
            "net%", "ovl%", "idle%", "share", "stretch", "tasks", "msgs", "bytes");
    print_line(f, "all", &p->total);
    for (int r = 0; r < VEIL_REGION_COUNT; r++)
        if (p->region[r].tasks + p->region[r].messages > 0)
            print_line(f, veil_trace_region_name(r), &p->region[r]);
    const struct veil_cpu_use *c = &p->cpu;
    if (c->cpus <= 0)
        return;
    fprintf(f, "cpu      %d CPU(s), %.1f%% used: ms on a CPU (waiting for one, slices)", c->cpus,
            c->busy_pct);
    for (int r = 0; r < VEIL_CPU_ROLE_COUNT; r++)
        fprintf(f, "%s %s %.2f (%.2f, %llu)", r ? "," : "", veil_cpu_role_name(r),
                1e3 * c->cpu_s[r], 1e3 * c->wait_s[r], (unsigned long long)c->slices[r]);
    fputc('\n', f);
}

/*
 * trace_write.c — writes the recorder's events as Chrome trace JSON (the Trace Event Format that
 * Perfetto and chrome://tracing open): {"traceEvents": [...], "displayTimeUnit": "ms",
 * "otherData": {...}}. Every event is a complete event ("ph": "X", "ts" and "dur" in
 * microseconds of CLOCK_MONOTONIC, so the files of processes on one machine line up) with
 * "pid" = the process's id in the session (parties 0..N-1, the dealer N) and "tid" = its lane:
 *   0            "runs": one event per veil_run ("run k"), args: run, bytes_sent, bytes_recv
 *                (veil_party_last_stats) and the run's busy / overlap summary;
 *   1 + w        "worker w (<StarPU's name>)": the tasks worker w ran, named by codelet, args:
 *                region, run, node (the plan node whose lowering submitted it, -1: none);
 *   1000 + 2q    "send to <q>" and 1001 + 2q "receive from <q>": the messages with process q,
 *                named "send <bytes> B" / "recv <bytes> B", args: peer, tag (hex string),
 *                bytes, region, run (-1 outside a run).
 * Metadata events ("ph": "M") name the process and every lane used and order the lanes. Only
 * names, sizes, tags and times are written: never a tensor value.
 */
#include "config.h"
#include "base/base_internal.h"
#include "base/trace.h"

#include <errno.h>
#include <string.h>
#include <time.h>

#define LANE_RUNS 0
#define LANE_WORKER0 1
#define LANE_NET0 1000
#define MAX_LANES 512 /* workers and peers named (StarPU has at most a few hundred workers) */

int veil_trace_path(const char *path, int id, char *out, size_t n)
{
    if (!path || !out || n == 0)
        return veil_error(VEIL_ERR_INVAL, "trace: no path");
    size_t k = 0;
    int seen = 0;
    for (const char *s = path; *s; s++) {
        char buf[16];
        const char *add = buf;
        if (s[0] == '%' && s[1] == 'd' && !seen) {
            snprintf(buf, sizeof buf, "%d", id);
            seen = 1;
            s++;
        } else if (s[0] == '%' && s[1] == '%') {
            buf[0] = '%';
            buf[1] = 0;
            s++;
        } else if (s[0] == '%') {
            return veil_error(VEIL_ERR_INVAL,
                              "trace path '%s': only one %%d (the party id) and %%%% "
                              "may follow a %% sign",
                              path);
        } else {
            buf[0] = s[0];
            buf[1] = 0;
        }
        size_t l = strlen(add);
        if (k + l >= n)
            return veil_error(VEIL_ERR_INVAL, "trace path '%s' is too long", path);
        memcpy(out + k, add, l);
        k += l;
    }
    out[k] = 0;
    return VEIL_OK;
}

/* Writes s as a JSON string (codelet names are ours, but escape anyway). */
static void json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; s && *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\')
            fprintf(f, "\\%c", ch);
        else if (ch < 0x20)
            fprintf(f, "\\u%04x", ch);
        else
            fputc(ch, f);
    }
    fputc('"', f);
}

static void peer_name(const struct veil_trace_meta *m, int q, char *buf, size_t n)
{
    if (q == m->nparties)
        snprintf(buf, n, "dealer");
    else
        snprintf(buf, n, "p%d", q);
}

static void meta_thread(FILE *f, int *first, int pid, int tid, const char *name)
{
    fprintf(f,
            "%s\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":%d,\"args\":{\"name\":",
            *first ? "" : ",", pid, tid);
    json_str(f, name);
    fprintf(f,
            "}},\n{\"name\":\"thread_sort_index\",\"ph\":\"M\",\"pid\":%d,\"tid\":%d,"
            "\"args\":{\"sort_index\":%d}}",
            pid, tid, tid);
    *first = 0;
}

static void busy_args(FILE *f, const struct veil_busy *b)
{
    fprintf(f,
            ",\"wall_ms\":%.3f,\"compute_pct\":%.2f,\"network_pct\":%.2f,\"overlap_pct\":%.2f,"
            "\"idle_pct\":%.2f,\"overlap_share\":%.3f,\"stretch\":%.3f",
            b->wall_s * 1e3, b->compute_pct, b->network_pct, b->overlap_pct, b->idle_pct,
            b->overlap_share, b->stretch);
}

/* The run's CPU use: ,"cpus":N,"cpu_window_ms":W,"cpu_busy_pct":P,"cpu_ms":{role:ms,...},
 * "cpu_wait_ms":{...},"cpu_slices":{role:count,...} */
static void cpu_args(FILE *f, const struct veil_cpu_use *c)
{
    fprintf(f, ",\"cpus\":%d,\"cpu_window_ms\":%.3f,\"cpu_busy_pct\":%.2f", c->cpus,
            1e3 * c->window_s, c->busy_pct);
    for (int k = 0; k < 3; k++) {
        fprintf(f, ",\"%s\":{", k == 0 ? "cpu_ms" : k == 1 ? "cpu_wait_ms" : "cpu_slices");
        for (int r = 0; r < VEIL_CPU_ROLE_COUNT; r++) {
            fprintf(f, "%s\"%s\":", r ? "," : "", veil_cpu_role_name(r));
            if (k == 2)
                fprintf(f, "%llu", (unsigned long long)c->slices[r]);
            else
                fprintf(f, "%.3f", 1e3 * (k ? c->wait_s[r] : c->cpu_s[r]));
        }
        fputc('}', f);
    }
}

static void write_event(FILE *f, const struct veil_trace_event *e, int pid, double off,
                        unsigned char *used_w, unsigned char *used_n)
{
    const double ts = e->t0 + off, dur = e->t1 > e->t0 ? e->t1 - e->t0 : 0;
    const char *region = veil_trace_region_name(e->region);
    if (e->kind == VEIL_TRACE_TASK_EV) {
        int w = e->lane >= 0 && e->lane < MAX_LANES ? e->lane : MAX_LANES - 1;
        used_w[w] = 1;
        fputs("{\"name\":", f);
        json_str(f, e->name);
        fprintf(f,
                ",\"cat\":\"task\",\"ph\":\"X\",\"ts\":%.3f,\"dur\":%.3f,\"pid\":%d,\"tid\":%d,"
                "\"args\":{\"region\":\"%s\",\"run\":%d,\"node\":%d}}",
                ts, dur, pid, LANE_WORKER0 + w, region, e->run, (int)e->node);
    } else if (e->kind == VEIL_TRACE_SEND || e->kind == VEIL_TRACE_RECV) {
        const int recv = e->kind == VEIL_TRACE_RECV;
        int q = e->lane >= 0 && e->lane < MAX_LANES ? e->lane : MAX_LANES - 1;
        used_n[q] |= (unsigned char)(recv ? 2 : 1);
        fprintf(f,
                "{\"name\":\"%s %llu B\",\"cat\":\"%s\",\"ph\":\"X\",\"ts\":%.3f,\"dur\":%.3f,"
                "\"pid\":%d,\"tid\":%d,\"args\":{\"peer\":%d,\"tag\":\"0x%llx\",\"bytes\":%llu,"
                "\"region\":\"%s\",\"run\":%d}}",
                recv ? "recv" : "send", (unsigned long long)e->bytes, recv ? "recv" : "send", ts,
                dur, pid, LANE_NET0 + 2 * q + recv, e->lane, (unsigned long long)e->tag,
                (unsigned long long)e->bytes, region, e->run);
    } else {
        struct veil_run_profile prof;
        int run = (int)e->tag;
        fprintf(f,
                "{\"name\":\"run %d\",\"cat\":\"run\",\"ph\":\"X\",\"ts\":%.3f,\"dur\":%.3f,"
                "\"pid\":%d,\"tid\":%d,\"args\":{\"run\":%d,\"bytes_sent\":%llu,"
                "\"bytes_recv\":%llu",
                run, ts, dur, pid, LANE_RUNS, run, (unsigned long long)e->bytes,
                (unsigned long long)e->aux);
        if (veil_trace_summarize(run, e->t0, e->t1, &prof) == VEIL_OK)
            busy_args(f, &prof.total);
        if (prof.cpu.cpus > 0) /* the summary takes the run's CPU use first, whatever follows */
            cpu_args(f, &prof.cpu);
        fputs("}}", f);
    }
}

static double monotonic_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}

int veil_trace_write(const char *path, const struct veil_trace_meta *meta)
{
    char file[4096];
    int rc = veil_trace_path(path, meta->pid, file, sizeof file);
    if (rc != VEIL_OK)
        return rc;
    FILE *f = fopen(file, "w");
    if (!f)
        return veil_error(VEIL_ERR_IO, "trace: cannot write '%s': %s", file, strerror(errno));
    /* StarPU's clock and CLOCK_MONOTONIC differ by a constant (both monotonic). */
    const double off = monotonic_us() - veil_trace_now();
    unsigned char used_w[MAX_LANES], used_n[MAX_LANES];
    memset(used_w, 0, sizeof used_w);
    memset(used_n, 0, sizeof used_n);
    const int pid = meta->pid;
    fputs("{\"traceEvents\":[", f);
    int first = 1;
    const size_t n = veil_trace_count();
    for (size_t i = 0; i < n; i++) {
        const struct veil_trace_event *e = veil_trace_event_at(i);
        if (!e)
            continue;
        fputs(first ? "\n" : ",\n", f);
        write_event(f, e, pid, off, used_w, used_n);
        first = 0;
    }
    char name[96];
    if (pid == meta->nparties)
        snprintf(name, sizeof name, "dealer (process %d)", pid);
    else
        snprintf(name, sizeof name, "party %d", pid);
    fprintf(f,
            "%s\n{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%d,\"args\":{\"name\":\"%s\"}},"
            "\n{\"name\":\"process_sort_index\",\"ph\":\"M\",\"pid\":%d,\"args\":"
            "{\"sort_index\":%d}}",
            first ? "" : ",", pid, name, pid, pid);
    first = 0;
    meta_thread(f, &first, pid, LANE_RUNS, "runs");
    for (int w = 0; w < MAX_LANES; w++) {
        if (!used_w[w])
            continue;
        char wn[64] = "";
        if (w < (int)starpu_worker_get_count())
            starpu_worker_get_name(w, wn, sizeof wn);
        snprintf(name, sizeof name, "worker %d%s%s%s", w, wn[0] ? " (" : "", wn, wn[0] ? ")" : "");
        meta_thread(f, &first, pid, LANE_WORKER0 + w, name);
    }
    for (int q = 0; q < MAX_LANES; q++) {
        char pn[16];
        peer_name(meta, q, pn, sizeof pn);
        if (used_n[q] & 1) {
            snprintf(name, sizeof name, "send to %s", pn);
            meta_thread(f, &first, pid, LANE_NET0 + 2 * q, name);
        }
        if (used_n[q] & 2) {
            snprintf(name, sizeof name, "receive from %s", pn);
            meta_thread(f, &first, pid, LANE_NET0 + 2 * q + 1, name);
        }
    }
    fprintf(f,
            "\n],\"displayTimeUnit\":\"ms\",\"otherData\":{\"party\":%d,\"nparties\":%d,"
            "\"nprocs\":%d,\"clock\":\"CLOCK_MONOTONIC microseconds\",\"dropped_events\":%llu}}\n",
            pid, meta->nparties, meta->nprocs, (unsigned long long)veil_trace_dropped());
    int bad = ferror(f);
    if (fclose(f) != 0 || bad)
        return veil_error(VEIL_ERR_IO, "trace: writing '%s' failed", file);
    return VEIL_OK;
}

/*
 * trace.c — the trace recorder (contract and the choice of hook in base/trace.h): a process-wide
 * buffer of chunks of events, appended without locks — a writer takes a slot with one atomic
 * fetch-add, fills it and publishes it with a release store of its ready flag; a chunk missing
 * when its first slot is taken is allocated under a mutex (rare: once per CHUNK events). The
 * first chunk is allocated by veil_trace_start, so a small run never allocates while tracing.
 * Also the current region and run labels, and the StarPU task callback.
 */
#include "config.h"
#include "base/base_internal.h"
#include "base/trace.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define CHUNK 4096      /* events per chunk (72 bytes each: 288 KiB) */
#define MAX_CHUNKS 4096 /* at most 16 M events (1.1 GiB) */
#define VEIL_TRACE_MAX_EVENTS ((size_t)CHUNK * MAX_CHUNKS)

int veil_trace_on;

static struct veil_trace_event *chunks[MAX_CHUNKS];
static size_t next_slot; /* atomic: slots taken */
static uint64_t dropped; /* atomic */
static int cur_region;   /* atomic */
static int cur_node = -1; /* atomic */
static int cur_run = -1; /* atomic */
static pthread_mutex_t grow_mu = PTHREAD_MUTEX_INITIALIZER;

#define LOAD(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)
#define STORE(x, v) __atomic_store_n(&(x), (v), __ATOMIC_RELAXED)

double veil_trace_now(void)
{
    return starpu_timing_now();
}

static struct veil_trace_event *chunk_get(size_t c)
{
    struct veil_trace_event *ch = __atomic_load_n(&chunks[c], __ATOMIC_ACQUIRE);
    if (ch)
        return ch;
    pthread_mutex_lock(&grow_mu);
    ch = chunks[c];
    if (!ch) {
        ch = calloc(CHUNK, sizeof *ch);
        __atomic_store_n(&chunks[c], ch, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&grow_mu);
    return ch;
}

/* A slot to fill, or NULL (not recording, full, out of memory: counted as dropped). */
static struct veil_trace_event *slot(void)
{
    if (!veil_trace_active())
        return NULL;
    size_t i = __atomic_fetch_add(&next_slot, 1, __ATOMIC_RELAXED);
    struct veil_trace_event *ch = i < VEIL_TRACE_MAX_EVENTS ? chunk_get(i / CHUNK) : NULL;
    if (!ch) {
        __atomic_fetch_add(&dropped, 1, __ATOMIC_RELAXED);
        return NULL;
    }
    struct veil_trace_event *e = &ch[i % CHUNK];
    e->run = LOAD(cur_run);
    return e;
}

static void publish(struct veil_trace_event *e)
{
    __atomic_store_n(&e->ready, 1, __ATOMIC_RELEASE);
}

/* The runs' CPU use (veil_trace_run_cpu_set), indexed by run; set by the submitting thread. */
static struct veil_cpu_use *run_cpu;
static size_t run_cpu_cap;

static void free_chunks(void)
{
    for (size_t c = 0; c < MAX_CHUNKS; c++) { /* all: a failed allocation leaves a hole */
        free(chunks[c]);
        chunks[c] = NULL;
    }
    STORE(next_slot, 0);
    STORE(dropped, 0);
    pthread_mutex_lock(&grow_mu);
    free(run_cpu);
    run_cpu = NULL;
    run_cpu_cap = 0;
    pthread_mutex_unlock(&grow_mu);
}

int veil_trace_run_cpu_set(int run, const struct veil_cpu_use *c)
{
    if (run < 0)
        return veil_error(VEIL_ERR_INVAL, "trace: run %d", run);
    int rc = VEIL_OK;
    pthread_mutex_lock(&grow_mu);
    if ((size_t)run >= run_cpu_cap) {
        size_t cap = run_cpu_cap ? run_cpu_cap : 16;
        while (cap <= (size_t)run)
            cap *= 2;
        struct veil_cpu_use *v = realloc(run_cpu, cap * sizeof *v);
        if (v) {
            memset(v + run_cpu_cap, 0, (cap - run_cpu_cap) * sizeof *v); /* cpus 0: none */
            run_cpu = v;
            run_cpu_cap = cap;
        } else {
            rc = veil_error(VEIL_ERR_NOMEM, "trace: out of memory for run %d's CPU use", run);
        }
    }
    if (rc == VEIL_OK)
        run_cpu[run] = *c;
    pthread_mutex_unlock(&grow_mu);
    return rc;
}

int veil_trace_run_cpu(int run, struct veil_cpu_use *out)
{
    pthread_mutex_lock(&grow_mu);
    int ok = run >= 0 && (size_t)run < run_cpu_cap && run_cpu[run].cpus > 0;
    if (ok)
        *out = run_cpu[run];
    pthread_mutex_unlock(&grow_mu);
    return ok;
}

int veil_trace_start(void)
{
    if (veil_trace_active())
        return veil_error(VEIL_ERR_STATE, "trace: already recording");
    free_chunks();
    if (!chunk_get(0))
        return veil_error(VEIL_ERR_NOMEM, "trace: out of memory for the event buffer");
    STORE(cur_region, VEIL_REGION_OTHER);
    STORE(cur_node, -1);
    STORE(cur_run, -1);
    starpu_profiling_status_set(STARPU_PROFILING_ENABLE);
    __atomic_store_n(&veil_trace_on, 1, __ATOMIC_RELEASE);
    return VEIL_OK;
}

void veil_trace_stop(void)
{
    if (!veil_trace_active())
        return;
    __atomic_store_n(&veil_trace_on, 0, __ATOMIC_RELEASE);
    starpu_profiling_status_set(STARPU_PROFILING_DISABLE);
}

void veil_trace_free(void)
{
    veil_trace_stop();
    free_chunks();
}

size_t veil_trace_count(void)
{
    size_t n = __atomic_load_n(&next_slot, __ATOMIC_ACQUIRE);
    return n < VEIL_TRACE_MAX_EVENTS ? n : VEIL_TRACE_MAX_EVENTS;
}

const struct veil_trace_event *veil_trace_event_at(size_t i)
{
    if (i >= veil_trace_count())
        return NULL;
    struct veil_trace_event *ch = __atomic_load_n(&chunks[i / CHUNK], __ATOMIC_ACQUIRE);
    if (!ch || !__atomic_load_n(&ch[i % CHUNK].ready, __ATOMIC_ACQUIRE))
        return NULL;
    return &ch[i % CHUNK];
}

uint64_t veil_trace_dropped(void)
{
    return LOAD(dropped);
}

void veil_trace_set_region(int region)
{
    STORE(cur_region, region >= 0 && region < VEIL_REGION_COUNT ? region : VEIL_REGION_OTHER);
}

int veil_trace_region(void)
{
    return LOAD(cur_region);
}

void veil_trace_set_node(int node)
{
    STORE(cur_node, node >= 0 ? node : -1);
}

/* The task callback's argument: the region in the low 8 bits, node + 1 above them (0: none). */
#define ARG_REGION(a) ((uint8_t)((uintptr_t)(a) & 0xff))
#define ARG_NODE(a) ((int32_t)((uintptr_t)(a) >> 8) - 1)

void veil_trace_run_begin(int run)
{
    STORE(cur_run, run);
}

void veil_trace_run_end(double t0, double t1, uint64_t bytes_sent, uint64_t bytes_recv)
{
    struct veil_trace_event *e = slot();
    if (e) {
        e->kind = VEIL_TRACE_RUN;
        e->t0 = t0;
        e->t1 = t1;
        e->name = NULL;
        e->tag = (uint64_t)(e->run < 0 ? 0 : e->run);
        e->bytes = bytes_sent;
        e->aux = bytes_recv;
        e->lane = 0;
        e->node = -1;
        e->region = VEIL_REGION_OTHER;
        publish(e);
    }
    STORE(cur_run, -1);
}

/* Runs on the worker (or driver) that completes the task, after its end time was taken. */
static void task_done(void *arg)
{
    struct starpu_task *t = starpu_task_get_current();
    if (!t || !t->profiling_info)
        return; /* submitted before profiling was enabled */
    struct veil_trace_event *e = slot();
    if (!e)
        return;
    struct starpu_profiling_task_info *pi = t->profiling_info;
    e->kind = VEIL_TRACE_TASK_EV;
    e->t0 = starpu_timing_timespec_to_us(&pi->start_time);
    e->t1 = starpu_timing_timespec_to_us(&pi->end_time);
    e->name = t->cl && t->cl->name ? t->cl->name : "task";
    e->lane = pi->workerid;
    e->region = ARG_REGION(arg);
    e->node = ARG_NODE(arg);
    e->bytes = e->tag = e->aux = 0;
    publish(e);
}

void (*veil_trace_task_func(void))(void *)
{
    return veil_trace_active() ? task_done : NULL;
}

void *veil_trace_task_arg(void)
{
    const int node = LOAD(cur_node);
    return (void *)((uintptr_t)LOAD(cur_region) | (uintptr_t)(node + 1) << 8);
}

void veil_trace_task_attach(struct starpu_task *t)
{
    if (!veil_trace_active())
        return;
    t->callback_func = task_done;
    t->callback_arg = veil_trace_task_arg();
    t->callback_arg_free = 0; /* a region and node number, not memory */
}

void veil_trace_message(int dir, int peer, uint64_t tag, uint64_t bytes, int region, double t0,
                        double t1)
{
    struct veil_trace_event *e = slot();
    if (!e)
        return;
    e->kind = (uint8_t)dir;
    e->t0 = t0 > 0 && t0 <= t1 ? t0 : t1;
    e->t1 = t1;
    e->name = NULL;
    e->lane = peer;
    e->tag = tag;
    e->bytes = bytes;
    e->aux = 0;
    e->node = -1;
    e->region = (uint8_t)region;
    publish(e);
}

const char *veil_trace_region_name(int region)
{
    static const char *const names[VEIL_REGION_COUNT] = {"other",   "input",   "linear", "relu",
                                                         "pooling", "softmax", "norm",   "argmax"};
    return region >= 0 && region < VEIL_REGION_COUNT ? names[region] : "other";
}

const char *veil_region_name(enum veil_region r)
{
    return veil_trace_region_name((int)r);
}

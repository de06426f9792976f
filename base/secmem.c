/*
 * secmem.c — keeping secrets out of core dumps (see secmem.h): the process-wide protection
 * (PR_SET_DUMPABLE, with the VEIL_ALLOW_CORE_DUMPS opt-out read through env.c) and
 * MADV_DONTDUMP on the page-aligned parts of buffers that hold keys and shares; and the
 * process-wide pool of wiped share buffers, so that a run reuses its tensors' memory instead of
 * paying malloc, memset and fresh page faults for every tensor; veil_secbuf_reserve fills it ahead
 * with faulted-in buffers (veil_party_prepare, for the first run).
 */
#include "config.h"
#include "base/secmem.h"
#include "base/base_internal.h"
#include "base/env.h"

#include <pthread.h>
#include <stdio.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#define DONTDUMP_MIN (64u << 10)

void veil_secmem_protect_process(void)
{
#ifdef __linux__
    if (veil_env_allow_core_dumps()) {
        VEIL_LOG_DEBUG("VEIL_ALLOW_CORE_DUMPS=1: this process stays dumpable (debugging only: a "
                       "core file would hold keys and shares)");
        return;
    }
    if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0)
        VEIL_LOG_WARN("cannot make the process non-dumpable: a core file could hold secrets");
#endif
}

/* Marks [start, end) rounded inwards to whole pages. */
static void dontdump_pages(void *p, size_t n)
{
#if defined(__linux__) && defined(MADV_DONTDUMP)
    const uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t start = ((uintptr_t)p + page - 1) & ~(page - 1);
    uintptr_t end = ((uintptr_t)p + n) & ~(page - 1);
    if (end > start)
        (void)madvise((void *)start, end - start, MADV_DONTDUMP); /* best effort */
#else
    (void)p, (void)n;
#endif
}

void veil_secmem_dontdump(void *p, size_t n)
{
    if (p && n >= DONTDUMP_MIN)
        dontdump_pages(p, n);
}

void *veil_secmem_calloc_pages(size_t n)
{
    const size_t page = (size_t)sysconf(_SC_PAGESIZE);
    const size_t len = (n + page - 1) / page * page;
    void *p = NULL;
    if (posix_memalign(&p, page, len ? len : page) != 0)
        return NULL;
    memset(p, 0, len ? len : page);
    dontdump_pages(p, len ? len : page);
    return p;
}

/* ---- the buffer pool ----------------------------------------------------------------------
 * Buffers are kept by their exact byte size (a compiled plan allocates the same shapes run after
 * run), so any 64-byte-aligned buffer of at least that many bytes may be given back: nothing has
 * to remember where a buffer came from. Bounded: POOL_SIZES sizes, pool_max_bytes in all (a
 * quarter of the memory the process may use, at least 1 GiB, or VEIL_POOL_MAX_MB), none over
 * POOL_MAX_BUF;
 * what does not fit is wiped and freed. The bound is a run's working set, not a few buffers:
 * LeNet-5 at batch 100 releases about 1,150 buffers of some 110 sizes, 570 MB, per run (up to 83
 * of one size), and a pool that kept only part of them made every run fault in and release most
 * of that memory again (bench/README-latency.md); a VGG16 training step at batch 2 gives back
 * about 3.1 GB per party, and the former fixed bound of 1 GiB made each step wipe, unmap and
 * fault in again some 2.3 GB (5.4-7.5 s a step against 4.3-5.2 s with the working set kept).
 * Keeping them costs no more than the run itself held at its end.
 *
 * THE WIPE OFF THE CRITICAL PATH. A given-back buffer enters its size's dirty stack; the pool's
 * own thread (the wiper, started at the first give-back) wipes dirty buffers and moves them to
 * the clean stack. A get takes a clean buffer, else wipes a dirty one itself (the wiper is
 * behind), else allocates: a buffer handed out is all zeros either way, like a fresh one. So a
 * run's end (veil_mpc_wait gives back every tensor the run released: 10.7 MB at LeNet-5 batch 1,
 * 83 MB at batch 16) no longer waits for the wipe, which fills the parties' idle time instead.
 * A dirty buffer holds shares for as long as the wiper needs (the process is not dumpable and
 * the pages are MADV_DONTDUMP); drain wipes what is still dirty. If the thread cannot be
 * started, give-back wipes inline as before; it does so anyway for a buffer of at most
 * WIPE_HERE_MAX bytes. Fork: the child gets a consistent pool (atfork
 * holds the lock across fork) and starts its own wiper when it needs one. */
#define POOL_SIZES 256
#define POOL_MIN_BOUND ((size_t)1 << 30)
#define POOL_MAX_BUF ((size_t)256 << 20)
/* A buffer up to this size is wiped by the thread that gives it back: waking the wiper for it
 * would cost more than the wipe (a futex wake, an IPI and two context switches, tens of
 * microseconds on a virtual machine, against well under one for 16 KiB). A dealer gives back a
 * few small buffers per round, and each woke the wiper (bench/README-latency.md). */
#define WIPE_HERE_MAX ((size_t)16 << 10)

struct stack {
    size_t n, cap;
    void **buf;
};
struct pool_slot {
    size_t bytes; /* 0: unused */
    struct stack clean, dirty;
};
static struct pool_slot pool[POOL_SIZES];
static size_t pool_bytes, pool_dirty; /* bytes held (clean and dirty); dirty buffers */
static pthread_mutex_t pool_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wiper_cv = PTHREAD_COND_INITIALIZER; /* dirty buffers to wipe */
static pthread_cond_t idle_cv = PTHREAD_COND_INITIALIZER;  /* the wiper put one down */
static int wiper_state;   /* 0 not started, 1 running, -1 could not start (wipe inline) */
static void *wiper_holds; /* the buffer the wiper is wiping outside the lock, or NULL */
static struct pool_slot *wiper_slot; /* the slot it goes back to */
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;
static pthread_once_t bound_once = PTHREAD_ONCE_INIT;
static size_t pool_max_bytes; /* set once (pool_bound_init) */
static uint64_t fresh_count, fresh_bytes; /* gets the pool could not serve (atomic) */
static int pool_full_told;    /* the bound has made a give-back free its buffer (logged once) */

/* The memory this process may use: the machine's, or its control group's limit when lower
 * (cgroup v2 memory.max, v1 memory.limit_in_bytes; "max" reads as no limit). 0: unknown. */
static size_t usable_memory(void)
{
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    size_t mem = pages > 0 && page > 0 ? (size_t)pages * (size_t)page : 0;
    static const char *const limits[] = {"/sys/fs/cgroup/memory.max",
                                         "/sys/fs/cgroup/memory/memory.limit_in_bytes"};
    for (size_t i = 0; i < sizeof limits / sizeof *limits; i++) {
        FILE *f = fopen(limits[i], "r");
        unsigned long long v;
        if (!f)
            continue;
        if (fscanf(f, "%llu", &v) == 1 && v > 0 && v < SIZE_MAX && (mem == 0 || v < mem))
            mem = (size_t)v;
        fclose(f);
    }
    return mem;
}

static void pool_bound_init(void)
{
    const size_t quarter = usable_memory() / 4;
    const size_t dflt = quarter > POOL_MIN_BOUND ? quarter : POOL_MIN_BOUND;
    const long mb = veil_env_pool_max_mb();
    if (mb < 0)
        VEIL_LOG_WARN("VEIL_POOL_MAX_MB=%s: not a number of MiB in %d..%ld; the buffer pool keeps "
                      "up to %zu MiB",
                      veil_env_get("VEIL_POOL_MAX_MB"), VEIL_ENV_POOL_MIN_MB, VEIL_ENV_POOL_MAX_MB,
                      dflt >> 20);
    pool_max_bytes = mb > 0 ? (size_t)mb << 20 : dflt;
}

size_t veil_secbuf_max_bytes(void)
{
    pthread_once(&bound_once, pool_bound_init);
    return pool_max_bytes;
}

static int stack_push(struct stack *k, void *p)
{
    if (k->n == k->cap) {
        const size_t cap = k->cap ? 2 * k->cap : 16;
        void **b = realloc(k->buf, cap * sizeof *b);
        if (!b)
            return 0;
        k->buf = b;
        k->cap = cap;
    }
    k->buf[k->n++] = p;
    return 1;
}

/* ---- fresh buffers ------------------------------------------------------------------------
 * A buffer of at least MAP_MIN bytes that the pool cannot serve is mapped straight from the
 * kernel (anonymous pages read as zeros until written), instead of malloc plus a memset that
 * faulted in and zeroed every page on the calling thread: the submitting thread, while the
 * workers waited for its tasks (a network's first run allocates every tensor that way, and
 * malloc's large chunks are typically fresh mappings anyway, so the memset zeroed zeros). The
 * pages now fault in where a task first writes them. The pool remembers what it mapped (address and
 * length, in a set under map_mu) so that such a buffer is unmapped, not freed, when it leaves. */
#ifdef VEIL_SANITIZERS
#define MAP_MIN SIZE_MAX /* a sanitizer build keeps malloc, so ASan checks every tensor's bounds */
#else
#define MAP_MIN ((size_t)256 << 10)
#endif

struct mapping {
    uintptr_t p; /* 0: empty slot; MAP_GONE: a removed entry */
    size_t len;
};
#define MAP_GONE ((uintptr_t)1)
static pthread_mutex_t map_mu = PTHREAD_MUTEX_INITIALIZER;
static struct mapping *map_set;            /* open addressing, map_cap a power of two */
static size_t map_cap, map_used, map_live; /* slots; slots not empty; live entries */

static size_t map_slot(uintptr_t p, size_t cap)
{
    return (size_t)(((uint64_t)(p >> 12) * 0x9E3779B97F4A7C15ull) >> 20) & (cap - 1);
}

/* With map_mu held: adds (p, len); 0 when out of memory. */
static int map_add(uintptr_t p, size_t len)
{
    if (2 * (map_used + 1) > map_cap) { /* rebuild: sized by the live entries, removed ones go */
        size_t cap = 64;
        while (cap < 4 * (map_live + 1))
            cap *= 2;
        struct mapping *n = calloc(cap, sizeof *n);
        if (!n)
            return 0;
        size_t used = 0;
        for (size_t i = 0; i < map_cap; i++)
            if (map_set[i].p > MAP_GONE) {
                size_t j = map_slot(map_set[i].p, cap);
                while (n[j].p)
                    j = (j + 1) & (cap - 1);
                n[j] = map_set[i];
                used++;
            }
        free(map_set);
        map_set = n;
        map_cap = cap;
        map_used = used;
    }
    size_t j = map_slot(p, map_cap);
    while (map_set[j].p)
        j = (j + 1) & (map_cap - 1);
    map_set[j] = (struct mapping){.p = p, .len = len};
    map_used++;
    map_live++;
    return 1;
}

/* With map_mu held: removes p and returns its length; 0 when the pool did not map it. */
static size_t map_remove(uintptr_t p)
{
    if (!map_cap)
        return 0;
    for (size_t j = map_slot(p, map_cap); map_set[j].p; j = (j + 1) & (map_cap - 1))
        if (map_set[j].p == p) {
            map_set[j].p = MAP_GONE;
            map_live--;
            return map_set[j].len;
        }
    return 0;
}

/* A fresh zero buffer of bytes >= MAP_MIN, its pages MADV_DONTDUMP (and with populate, faulted in
 * now by the kernel in one call); NULL when it cannot be mapped (the caller falls back to
 * malloc). */
static void register_atfork(void);
static void *map_fresh(size_t bytes, int populate)
{
    pthread_once(&atfork_once, register_atfork); /* map_mu is held across a fork */
    const size_t page = (size_t)sysconf(_SC_PAGESIZE);
    const size_t len = (bytes + page - 1) / page * page;
    const int flags = MAP_PRIVATE | MAP_ANONYMOUS | (populate ? MAP_POPULATE : 0);
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, flags, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
    dontdump_pages(p, len);
    pthread_mutex_lock(&map_mu);
    const int ok = map_add((uintptr_t)p, len);
    pthread_mutex_unlock(&map_mu);
    if (!ok) {
        munmap(p, len);
        return NULL;
    }
    return p;
}

/* Frees a buffer leaving the pool (wiped by the caller): unmapped if map_fresh made it. */
static void release(void *p)
{
    pthread_mutex_lock(&map_mu);
    const size_t len = map_remove((uintptr_t)p);
    pthread_mutex_unlock(&map_mu);
    if (len)
        munmap(p, len);
    else
        veil_aligned_free(p);
}

static void *wiper_main(void *arg)
{
    (void)arg;
    pthread_setname_np(pthread_self(), "veil-wipe"); /* its CPU time in a run's profile */
    pthread_mutex_lock(&pool_mu);
    for (;;) {
        while (pool_dirty == 0)
            pthread_cond_wait(&wiper_cv, &pool_mu);
        struct pool_slot *s = NULL;
        for (int i = 0; i < POOL_SIZES && !s; i++)
            if (pool[i].dirty.n > 0)
                s = &pool[i];
        void *p = s->dirty.buf[--s->dirty.n];
        const size_t bytes = s->bytes;
        pool_dirty--;
        wiper_holds = p;
        wiper_slot = s;
        pthread_mutex_unlock(&pool_mu);
        veil_wipe(p, bytes);
        pthread_mutex_lock(&pool_mu);
        wiper_holds = NULL;
        wiper_slot = NULL;
        if (!stack_push(&s->clean, p)) { /* s is still p's: drain and put leave it alone */
            pool_bytes -= bytes;
            release(p);
        }
        pthread_cond_broadcast(&idle_cv);
    }
    return NULL;
}

static void atfork_prepare(void)
{
    pthread_mutex_lock(&pool_mu);
    pthread_mutex_lock(&map_mu);
}
static void atfork_parent(void)
{
    pthread_mutex_unlock(&map_mu);
    pthread_mutex_unlock(&pool_mu);
}
static void atfork_child(void)
{
    /* no wiper here: the next give-back starts one; a buffer the parent's wiper held is lost
     * to the child's pool (never handed out). The condition variables are made anew: the
     * parent's waiters (its wiper, asleep in wiper_cv) do not exist here, and a signal would wait
     * for them forever (glibc's condition variables keep their waiters' groups). */
    pthread_cond_init(&wiper_cv, NULL);
    pthread_cond_init(&idle_cv, NULL);
    if (wiper_state == 1)
        wiper_state = 0;
    wiper_holds = NULL;
    wiper_slot = NULL;
    pthread_mutex_unlock(&map_mu);
    pthread_mutex_unlock(&pool_mu);
}
static void register_atfork(void)
{
    (void)pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
}

/* With pool_mu held: whether the wiper runs (started now if it was not). */
static int wiper_ready(void)
{
    if (wiper_state == 0) {
        pthread_t t;
        pthread_attr_t at;
        int ok = pthread_attr_init(&at) == 0;
        ok = ok && pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED) == 0;
        ok = ok && pthread_create(&t, &at, wiper_main, NULL) == 0;
        pthread_attr_destroy(&at);
        wiper_state = ok ? 1 : -1;
        if (!ok)
            VEIL_LOG_WARN("secmem: cannot start the pool's wiper thread; buffers are wiped when "
                          "given back");
    }
    return wiper_state == 1;
}

void *veil_secbuf_get(size_t bytes)
{
    void *p = NULL;
    int dirty = 0;
    if (bytes && bytes <= POOL_MAX_BUF) {
        pthread_mutex_lock(&pool_mu);
        for (;;) {
            for (int i = 0; i < POOL_SIZES && !p; i++)
                if (pool[i].bytes == bytes && pool[i].clean.n > 0) {
                    p = pool[i].clean.buf[--pool[i].clean.n];
                } else if (pool[i].bytes == bytes && pool[i].dirty.n > 0) {
                    p = pool[i].dirty.buf[--pool[i].dirty.n];
                    pool_dirty--;
                    dirty = 1;
                }
            if (p || !wiper_slot || wiper_slot->bytes != bytes)
                break;
            pthread_cond_wait(&idle_cv, &pool_mu); /* the wiper is about to put one back */
        }
        if (p)
            pool_bytes -= bytes;
        pthread_mutex_unlock(&pool_mu);
        if (p) { /* marked again: it may not have come from here */
            if (dirty)
                veil_wipe(p, bytes);
            veil_secmem_dontdump(p, bytes);
            return p;
        }
    }
    __atomic_fetch_add(&fresh_count, 1, __ATOMIC_RELAXED);
    __atomic_fetch_add(&fresh_bytes, (uint64_t)bytes, __ATOMIC_RELAXED);
    if (bytes >= MAP_MIN && (p = map_fresh(bytes, 0)) != NULL)
        return p;
    p = veil_aligned_alloc(bytes);
    if (!p)
        return NULL;
    veil_secmem_dontdump(p, bytes);
    memset(p, 0, bytes);
    return p;
}

/* With pool_mu held: the slot of buffers of exactly bytes, taking a free one if there is none;
 * NULL when all POOL_SIZES slots hold other sizes. */
static struct pool_slot *slot_for(size_t bytes)
{
    struct pool_slot *free_slot = NULL;
    for (int i = 0; i < POOL_SIZES; i++) {
        if (pool[i].bytes == bytes)
            return &pool[i];
        if (!free_slot && pool[i].clean.n == 0 && pool[i].dirty.n == 0 &&
            &pool[i] != wiper_slot) /* the wiper will put its buffer back there */
            free_slot = &pool[i];
    }
    if (free_slot)
        free_slot->bytes = bytes;
    return free_slot;
}

void veil_secbuf_put(void *p, size_t bytes)
{
    if (!p)
        return;
    pthread_once(&atfork_once, register_atfork);
    pthread_once(&bound_once, pool_bound_init);
    int kept = 0, wiped = 0, full = 0;
    if (bytes && bytes <= POOL_MAX_BUF && ((uintptr_t)p & 63) == 0) {
        pthread_mutex_lock(&pool_mu);
        struct pool_slot *s = slot_for(bytes);
        full = s && pool_bytes + bytes > pool_max_bytes && !pool_full_told;
        if (full)
            pool_full_told = 1;
        if (s && pool_bytes + bytes <= pool_max_bytes) {
            if (bytes > WIPE_HERE_MAX && wiper_ready()) {
                if ((kept = stack_push(&s->dirty, p)) != 0) {
                    pool_dirty++;
                    pthread_cond_signal(&wiper_cv);
                }
            } else { /* small, or no wiper: wipe here, outside the lock, and keep it clean */
                pthread_mutex_unlock(&pool_mu);
                veil_wipe(p, bytes);
                wiped = 1;
                pthread_mutex_lock(&pool_mu);
                kept = s->bytes == bytes && stack_push(&s->clean, p); /* drain may have run */
            }
            if (kept)
                pool_bytes += bytes;
        }
        pthread_mutex_unlock(&pool_mu);
    }
    if (full)
        VEIL_LOG_INFO("the buffer pool holds its bound, %zu MiB: buffers given back beyond it are "
                      "freed and allocated again when needed (VEIL_POOL_MAX_MB raises it)",
                      pool_max_bytes >> 20);
    if (!kept) {
        if (!wiped)
            veil_wipe(p, bytes);
        release(p);
    }
}

size_t veil_secbuf_reserve(const size_t *bytes, size_t n)
{
    pthread_once(&atfork_once, register_atfork);
    pthread_once(&bound_once, pool_bound_init);
    size_t added = 0;
    for (size_t i = 0; bytes && i < n; i++) {
        const size_t b = bytes[i];
        if (!b || b > POOL_MAX_BUF)
            continue;
        pthread_mutex_lock(&pool_mu);
        const int room = pool_bytes + b <= pool_max_bytes && slot_for(b);
        pthread_mutex_unlock(&pool_mu);
        if (!room)
            continue; /* a smaller buffer later in the list may still fit */
        void *p = b >= MAP_MIN ? map_fresh(b, 1) : NULL;
        if (!p) {
            if (!(p = veil_aligned_alloc(b)))
                break;
            veil_secmem_dontdump(p, b);
            memset(p, 0, b); /* the pages fault in here */
        }
        pthread_mutex_lock(&pool_mu);
        struct pool_slot *s = slot_for(b); /* a get or put may have run meanwhile */
        const int kept = s && pool_bytes + b <= pool_max_bytes && stack_push(&s->clean, p);
        if (kept)
            pool_bytes += b;
        pthread_mutex_unlock(&pool_mu);
        if (kept)
            added += b;
        else
            release(p); /* all zeros: nothing to wipe */
    }
    return added;
}

void veil_secbuf_drain(void)
{
    pthread_mutex_lock(&pool_mu);
    while (wiper_holds)
        pthread_cond_wait(&idle_cv, &pool_mu);
    for (int i = 0; i < POOL_SIZES; i++) {
        while (pool[i].clean.n > 0)
            release(pool[i].clean.buf[--pool[i].clean.n]);
        while (pool[i].dirty.n > 0) {
            void *p = pool[i].dirty.buf[--pool[i].dirty.n];
            veil_wipe(p, pool[i].bytes);
            release(p);
        }
        free(pool[i].clean.buf);
        free(pool[i].dirty.buf);
        memset(&pool[i], 0, sizeof pool[i]);
    }
    pool_bytes = 0;
    pool_dirty = 0;
    pthread_mutex_unlock(&pool_mu);
}

size_t veil_secbuf_pooled_bytes(void)
{
    pthread_mutex_lock(&pool_mu);
    const size_t n = pool_bytes;
    pthread_mutex_unlock(&pool_mu);
    return n;
}

size_t veil_secbuf_dirty(void)
{
    pthread_mutex_lock(&pool_mu);
    const size_t n = pool_dirty + (wiper_holds != NULL); /* the one being wiped is not yet */
    pthread_mutex_unlock(&pool_mu);
    return n;
}

void veil_secbuf_fresh(uint64_t *count, uint64_t *bytes)
{
    *count = __atomic_load_n(&fresh_count, __ATOMIC_RELAXED);
    *bytes = __atomic_load_n(&fresh_bytes, __ATOMIC_RELAXED);
}

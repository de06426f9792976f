/*
 * secmem.c — keeping secrets out of core dumps (see secmem.h): the process-wide protection
 * (PR_SET_DUMPABLE, with the VEIL_ALLOW_CORE_DUMPS opt-out read through env.c) and
 * MADV_DONTDUMP on the page-aligned parts of buffers that hold keys and shares; and the
 * process-wide pool of wiped share buffers, so that a run reuses its tensors' memory instead of
 * paying malloc, memset and fresh page faults for every tensor.
 */
#include "config.h"
#include "base/secmem.h"
#include "base/base_internal.h"
#include "base/env.h"

#include <pthread.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/mman.h>
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
 * to remember where a buffer came from. Bounded: POOL_SIZES sizes, POOL_MAX_BYTES in all, none
 * over POOL_MAX_BUF; what does not fit is freed. The bound is a run's working set, not a few
 * buffers: LeNet-5 at batch 100 releases about 1,150 buffers of some 110 sizes, 570 MB, per run
 * (up to 83 of one size), and a pool that kept only part of them made every run fault in and
 * release most of that memory again (bench/README-latency.md). Keeping them costs no more than
 * the run itself held at its end. A buffer is wiped before it enters the pool, so a buffer taken
 * from it is all zeros, like a fresh one. */
#define POOL_SIZES 256
#define POOL_MAX_BYTES ((size_t)1 << 30)
#define POOL_MAX_BUF ((size_t)256 << 20)

struct pool_slot {
    size_t bytes; /* 0: unused */
    size_t n, cap;
    void **buf;
};
static struct pool_slot pool[POOL_SIZES];
static size_t pool_bytes;
static pthread_mutex_t pool_mu = PTHREAD_MUTEX_INITIALIZER;

void *veil_secbuf_get(size_t bytes)
{
    void *p = NULL;
    if (bytes && bytes <= POOL_MAX_BUF) {
        pthread_mutex_lock(&pool_mu);
        for (int i = 0; i < POOL_SIZES && !p; i++)
            if (pool[i].bytes == bytes && pool[i].n > 0) {
                p = pool[i].buf[--pool[i].n];
                pool_bytes -= bytes;
            }
        pthread_mutex_unlock(&pool_mu);
        if (p) { /* wiped when it was given back; marked again: it may not have come from here */
            veil_secmem_dontdump(p, bytes);
            return p;
        }
    }
    p = veil_aligned_alloc(bytes);
    if (!p)
        return NULL;
    veil_secmem_dontdump(p, bytes);
    memset(p, 0, bytes);
    return p;
}

void veil_secbuf_put(void *p, size_t bytes)
{
    if (!p)
        return;
    veil_wipe(p, bytes);
    int kept = 0;
    if (bytes && bytes <= POOL_MAX_BUF && ((uintptr_t)p & 63) == 0) {
        pthread_mutex_lock(&pool_mu);
        struct pool_slot *s = NULL, *free_slot = NULL;
        for (int i = 0; i < POOL_SIZES && !s; i++) {
            if (pool[i].bytes == bytes)
                s = &pool[i];
            else if (!free_slot && pool[i].n == 0)
                free_slot = &pool[i];
        }
        if (!s && free_slot) {
            s = free_slot;
            s->bytes = bytes;
        }
        if (s && pool_bytes + bytes <= POOL_MAX_BYTES && s->n == s->cap) {
            const size_t cap = s->cap ? 2 * s->cap : 16;
            void **b = realloc(s->buf, cap * sizeof *b);
            if (b) {
                s->buf = b;
                s->cap = cap;
            }
        }
        if (s && s->n < s->cap && pool_bytes + bytes <= POOL_MAX_BYTES) {
            s->buf[s->n++] = p;
            pool_bytes += bytes;
            kept = 1;
        }
        pthread_mutex_unlock(&pool_mu);
    }
    if (!kept)
        veil_aligned_free(p);
}

void veil_secbuf_drain(void)
{
    pthread_mutex_lock(&pool_mu);
    for (int i = 0; i < POOL_SIZES; i++) {
        while (pool[i].n > 0)
            veil_aligned_free(pool[i].buf[--pool[i].n]);
        free(pool[i].buf);
        pool[i].buf = NULL;
        pool[i].cap = 0;
        pool[i].bytes = 0;
    }
    pool_bytes = 0;
    pthread_mutex_unlock(&pool_mu);
}

size_t veil_secbuf_pooled_bytes(void)
{
    pthread_mutex_lock(&pool_mu);
    const size_t n = pool_bytes;
    pthread_mutex_unlock(&pool_mu);
    return n;
}

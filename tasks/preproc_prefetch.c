/*
 * preproc_prefetch.c — reading a preprocessing file ahead of the walk (contract in preproc.h,
 * veil_preproc_reader_prefetch). A thread of its own, at the lowest scheduling class the kernel
 * has (SCHED_IDLE), reads the large parts of the items after the reader's cursor, in file order,
 * into buffers of the pool (base/secmem.h), up to a bound in bytes. The walk then takes such a
 * buffer as the part's tensor instead of reading it (veil_preproc_take_prefetched): the copy from
 * the page cache, 62.9 MB per LeNet-5 batch-100 run (bench/README-latency.md), happens while the
 * party's core would otherwise be idle, not on the thread that submits the run's tasks.
 *
 * The walk never waits for the thread: a part the thread has not read yet, or is reading, is read
 * by the walk as before (the thread's copy, if any, is dropped), and the thread moves past it;
 * so does every part the walk passes without asking for it (one it leaves out).
 * A read the thread cannot finish is dropped and the thread stops; the walk then reads that part
 * itself and meets the error with its message. Every buffer that is not taken goes back to the
 * pool, which wipes it.
 */
#include "config.h"
#include "base/base_internal.h"
#include "base/secmem.h"
#include "tasks/preproc_file.h"

#include <pthread.h>
#include <sched.h>

struct pf_entry {
    size_t item;
    int part;
    void *buf;
    size_t bytes;
};

struct veil_preproc_prefetch {
    const veil_preproc_reader_t *r;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t room; /* the thread waits here for room under the bound, or for stop */
    size_t budget, min_bytes;
    /* with mu held: */
    size_t cur_item; /* the next part the thread considers */
    int cur_part;
    struct pf_entry *q; /* read parts, oldest first (a ring of cap entries) */
    size_t qhead, qn, qcap;
    size_t ahead;     /* bytes held: the queue's and the one being read */
    size_t walk_item; /* the walk will not ask for any part before this one */
    int walk_part;
    size_t fly_item; /* the part being read outside the lock */
    int fly_part;
    int stop;
    struct veil_preproc_prefetch_stats stats;
    uint64_t busy_misses; /* takes that found the lock taken (atomic, outside the lock) */
};

/* (a_item, a_part) before (b_item, b_part) in file order. */
static int before(size_t ai, int ap, size_t bi, int bp)
{
    return ai < bi || (ai == bi && ap < bp);
}

/* Reads bytes at off into buf in steps of at most 256 KiB: at each step's return to user space a
 * thread of the party that woke meanwhile takes the core back. */
static int read_steps(const veil_preproc_reader_t *r, uint8_t *buf, size_t bytes, uint64_t off)
{
    const size_t step = (size_t)256 << 10;
    for (size_t done = 0; done < bytes;) {
        size_t n = bytes - done < step ? bytes - done : step;
        int rc = veil_pf_read_at(r, buf + done, n, off + done);
        if (rc != VEIL_OK)
            return rc;
        done += n;
    }
    return VEIL_OK;
}

static void *prefetch_main(void *arg)
{
    struct veil_preproc_prefetch *pf = arg;
    pthread_setname_np(pthread_self(), "veil-prefetch"); /* "other" in a run's CPU profile */
#ifdef SCHED_IDLE
    struct sched_param sp = {0};
    (void)pthread_setschedparam(pthread_self(), SCHED_IDLE, &sp); /* only when nothing else runs */
#endif
    pthread_mutex_lock(&pf->mu);
    while (!pf->stop) {
        uint64_t off = 0;
        size_t bytes = 0;
        int in = veil_pf_part_span(pf->r, pf->cur_item, pf->cur_part, &off, &bytes);
        if (in < 0) { /* past the item's parts */
            if (pf->cur_item >= veil_pf_item_count(pf->r))
                break; /* the whole file is read or taken */
            pf->cur_item++;
            pf->cur_part = 0;
            continue;
        }
        if (in == 0 || bytes < pf->min_bytes || bytes > pf->budget) {
            pf->cur_part++; /* not in the file, read inline by the walk, or never fits */
            continue;
        }
        if (pf->ahead + bytes > pf->budget) {
            pthread_cond_wait(&pf->room, &pf->mu);
            continue; /* the walk may have moved the cursor */
        }
        if (pf->qn == pf->qcap) { /* the ring holds at most budget / min_bytes entries */
            size_t cap = pf->qcap ? 2 * pf->qcap : 64;
            struct pf_entry *q = malloc(cap * sizeof *q);
            if (!q)
                break;
            for (size_t k = 0; k < pf->qn; k++)
                q[k] = pf->q[(pf->qhead + k) % pf->qcap];
            free(pf->q);
            pf->q = q;
            pf->qhead = 0;
            pf->qcap = cap;
        }
        pf->fly_item = pf->cur_item;
        pf->fly_part = pf->cur_part;
        pf->ahead += bytes;
        pf->cur_part++;
        pthread_mutex_unlock(&pf->mu);

        void *buf = veil_secbuf_get(bytes);
        int rc = buf ? read_steps(pf->r, buf, bytes, off) : VEIL_ERR_NOMEM;
        if (rc == VEIL_OK)
            veil_pf_words_le(buf, bytes / 8);

        pthread_mutex_lock(&pf->mu);
        if (rc != VEIL_OK || pf->stop ||
            before(pf->fly_item, pf->fly_part, pf->walk_item,
                   pf->walk_part)) { /* the walk read it itself */
            pf->ahead -= bytes;
            pf->stats.dropped += rc == VEIL_OK;
            pthread_mutex_unlock(&pf->mu);
            veil_secbuf_put(buf, bytes);
            pthread_mutex_lock(&pf->mu);
            if (rc != VEIL_OK)
                break; /* the walk reads from here on, and reports what failed */
            continue;
        }
        pf->q[(pf->qhead + pf->qn++) % pf->qcap] = (struct pf_entry){
            .item = pf->fly_item, .part = pf->fly_part, .buf = buf, .bytes = bytes};
        pf->stats.read_bytes += bytes;
    }
    pf->stats.stopped = 1;
    pthread_mutex_unlock(&pf->mu);
    return NULL;
}

int veil_pf_start(const veil_preproc_reader_t *r, size_t first_item, size_t budget,
                  size_t min_bytes, struct veil_preproc_prefetch **out)
{
    struct veil_preproc_prefetch *pf = calloc(1, sizeof *pf);
    if (!pf)
        return veil_error(VEIL_ERR_NOMEM, "preproc prefetch: out of memory");
    pf->r = r;
    pf->budget = budget;
    pf->min_bytes = min_bytes ? min_bytes : 1;
    pf->cur_item = first_item;
    pthread_mutex_init(&pf->mu, NULL);
    pthread_cond_init(&pf->room, NULL);
    if (pthread_create(&pf->thread, NULL, prefetch_main, pf) != 0) {
        pthread_cond_destroy(&pf->room);
        pthread_mutex_destroy(&pf->mu);
        free(pf);
        return veil_error(VEIL_ERR_NOMEM, "preproc prefetch: cannot start its thread");
    }
    *out = pf;
    return VEIL_OK;
}

/* With mu held: pops the queue's oldest entry into *e. */
static void pop(struct veil_preproc_prefetch *pf, struct pf_entry *e)
{
    *e = pf->q[pf->qhead];
    pf->qhead = (pf->qhead + 1) % pf->qcap;
    pf->qn--;
    pf->ahead -= e->bytes;
}

/* With mu held: the walk is past everything before (item, part). Moves the entries before it
 * into stale[] (at most cap; returns how many) and keeps the thread from reading any of them. */
static size_t pass(struct veil_preproc_prefetch *pf, size_t item, int part, struct pf_entry *stale,
                   size_t cap)
{
    size_t n = 0;
    if (before(pf->walk_item, pf->walk_part, item, part)) {
        pf->walk_item = item;
        pf->walk_part = part;
    }
    while (n < cap && pf->qn && before(pf->q[pf->qhead].item, pf->q[pf->qhead].part, item, part))
        pop(pf, &stale[n++]);
    if (before(pf->cur_item, pf->cur_part, item, part)) {
        pf->cur_item = item;
        pf->cur_part = part;
    }
    return n;
}

/* The walk's two calls below never wait for the thread's lock: the thread, at SCHED_IDLE, may
 * lose its core while it holds the lock and get it back only when the core has nothing else to
 * run. When the lock is taken, a take gets nothing (the walk reads the part, and the thread's
 * copy is dropped by a later call), and a note is left to a later call. */
void *veil_pf_take(struct veil_preproc_prefetch *pf, size_t item, int part, size_t bytes)
{
    struct pf_entry stale[9], got = {0};
    if (pthread_mutex_trylock(&pf->mu) != 0) {
        __atomic_fetch_add(&pf->busy_misses, 1, __ATOMIC_RELAXED);
        return NULL;
    }
    /* at most 8 passed entries per call (nearly always none: the walk takes parts in the order
     * the thread reads them); more are dropped by the next calls */
    size_t n = pass(pf, item, part, stale, 8);
    if (pf->qn && pf->q[pf->qhead].item == item && pf->q[pf->qhead].part == part) {
        pop(pf, &got);
        if (got.bytes != bytes) { /* the caller asks for another size: it reads it itself */
            stale[n++] = got;
            got.buf = NULL;
        }
    }
    (void)pass(pf, item, part + 1, stale + n, 0); /* the walk has this part now, either way */
    if (got.buf)
        pf->stats.taken++;
    else
        pf->stats.missed++;
    pf->stats.dropped += n;
    pthread_cond_signal(&pf->room);
    pthread_mutex_unlock(&pf->mu);
    for (size_t k = 0; k < n; k++)
        veil_secbuf_put(stale[k].buf, stale[k].bytes);
    return got.buf;
}

void veil_pf_note_next(struct veil_preproc_prefetch *pf, size_t next)
{
    struct pf_entry stale[8];
    if (pthread_mutex_trylock(&pf->mu) != 0)
        return;
    size_t n = pass(pf, next, 0, stale, 8);
    pf->stats.dropped += n;
    if (n)
        pthread_cond_signal(&pf->room);
    pthread_mutex_unlock(&pf->mu);
    for (size_t k = 0; k < n; k++)
        veil_secbuf_put(stale[k].buf, stale[k].bytes);
}

void veil_pf_stats(struct veil_preproc_prefetch *pf, struct veil_preproc_prefetch_stats *s)
{
    pthread_mutex_lock(&pf->mu);
    *s = pf->stats;
    s->missed += __atomic_load_n(&pf->busy_misses, __ATOMIC_RELAXED);
    s->held_bytes = 0;
    for (size_t k = 0; k < pf->qn; k++)
        s->held_bytes += pf->q[(pf->qhead + k) % pf->qcap].bytes;
    pthread_mutex_unlock(&pf->mu);
}

void veil_pf_stop(struct veil_preproc_prefetch **pfp)
{
    if (!pfp || !*pfp)
        return;
    struct veil_preproc_prefetch *pf = *pfp;
    pthread_mutex_lock(&pf->mu);
    pf->stop = 1;
    pthread_cond_signal(&pf->room);
    pthread_mutex_unlock(&pf->mu);
    pthread_join(pf->thread, NULL);
    struct pf_entry e;
    while (pf->qn) {
        pop(pf, &e);
        veil_secbuf_put(e.buf, e.bytes);
    }
    free(pf->q);
    pthread_cond_destroy(&pf->room);
    pthread_mutex_destroy(&pf->mu);
    free(pf);
    *pfp = NULL;
}

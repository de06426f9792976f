/*
 * mpc_release.c — released tensors (contracts in mpc.h, TENSORS, and mpc_internal.h): queued at
 * veil_mpc_release until the next barrier, when no task can use them any more; then unregistered
 * and their buffers returned to the pool, or kept registered for the next tensor of the same
 * shape.
 *
 * Why keep them: a run of a compiled network releases its temporaries and the next run asks for
 * the same shapes again; without the cache every small tensor cost a calloc of its handle array,
 * a StarPU registration per tile and, at the barrier, an unregistration (about 290 of each per
 * LeNet-5 batch-1 run at each party). A released tensor of at most VEIL_MPC_CACHE_MAX_BYTES
 * whose handles tile its buffer is instead wiped at the barrier and kept with its handles, still
 * registered; the next tensor of the same element count and tile takes both (the dealer's
 * corrections and the designated party's correction buffers are such tensors). It is only done
 * where main memory is StarPU's one memory node (no CUDA worker, no separate NUMA nodes): there
 * the buffer is every handle's only copy, so the barrier's wipe reaches all of it and the next
 * tensor's tasks see zeros, as from a fresh allocation. The handles keep nothing else of their
 * past: the one per-handle setting Veil makes (the placement tag, which the GEMM and convolution
 * splits retag) is set again when a tensor takes them, and StarPU's implicit dependencies point
 * at tasks the barrier saw end. A failed session keeps nothing.
 */
#include "config.h"
#include "base/base_internal.h"
#include "base/secmem.h"
#include "codelets/codelets_internal.h"
#include "tasks/mpc_internal.h"

#include <stdlib.h>
#include <string.h>

int veil_mpc_defer(veil_mpc_t *m, starpu_data_handle_t *handles, int nhandles, void *data,
                   size_t bytes)
{
    if (m->ngarbage == m->garbage_cap) {
        size_t cap = m->garbage_cap ? 2 * m->garbage_cap : 64;
        struct veil_mpc_garbage *g = realloc(m->garbage, cap * sizeof *g);
        if (!g)
            return veil_error(VEIL_ERR_NOMEM, "mpc: out of memory for deferred releases");
        m->garbage = g;
        m->garbage_cap = cap;
    }
    m->garbage[m->ngarbage++] = (struct veil_mpc_garbage){
        .handles = handles, .nhandles = nhandles, .data = data, .bytes = bytes};
    m->garbage_bytes += data ? bytes : 0;
    return VEIL_OK;
}

size_t veil_mpc_garbage_bytes(const veil_mpc_t *m)
{
    return m->garbage_bytes;
}

/* Unregisters g's handles, frees their array and returns its buffer to the pool (which wipes
 * it, or wipes and frees it); no task may use them any more. */
static void drop(const struct veil_mpc_garbage *g)
{
    for (int t = 0; t < g->nhandles; t++)
        starpu_data_unregister(g->handles[t]);
    free(g->handles);
    veil_secbuf_put(g->data, g->bytes);
}

void veil_mpc_release(veil_mpc_t *m, struct veil_sec *t)
{
    if (!t)
        return;
    if (t->h || t->data) {
        /* Unregistered and freed at the next barrier, when no task can still use them. */
        const struct veil_mpc_garbage g = {.handles = t->h,
                                           .nhandles = t->h ? t->ntiles : 0,
                                           .data = t->data,
                                           .bytes = t->numel * 8};
        if (veil_mpc_defer(m, g.handles, g.nhandles, g.data, g.bytes) != VEIL_OK) {
            veil_mpc_wait(m);
            drop(&g);
        }
    }
    memset(t, 0, sizeof *t);
}

/* Unregisters the deferred handles and frees the deferred buffers, or keeps a tensor's (keep:
 * after a barrier that succeeded); everything is quiescent. */
void veil_mpc_collect(veil_mpc_t *m, int keep)
{
    for (size_t i = 0; i < m->ngarbage; i++)
        if (!keep || !veil_mpc_cache_keep(m, &m->garbage[i]))
            drop(&m->garbage[i]);
    m->ngarbage = 0;
    m->garbage_bytes = 0;
}

/* A kept tensor: its buffer (wiped) and registered handles. */
struct veil_mpc_cached {
    struct veil_mpc_garbage g;
    struct veil_mpc_cached *next;
};

/* The kept tensors of one element count and tile, a stack. A bucket chains its shelves, so a
 * take or a miss walks the few shapes that hash there, never the tensors kept of other shapes
 * (VGG16 keeps about 1,100, mostly of a few shapes: walking them was 7 % of the walk's thread). */
struct veil_mpc_shelf {
    size_t numel, tile;
    struct veil_mpc_cached *top;
    struct veil_mpc_shelf *next;
};

/* The shelf of (numel, tile), made when make is set (NULL: none, or out of memory). */
static struct veil_mpc_shelf *shelf_of(veil_mpc_t *m, size_t numel, size_t tile, int make)
{
    struct veil_mpc_shelf **b =
        &m->cache.bucket[(numel * 0x9e3779b97f4a7c15u ^ tile) % VEIL_MPC_CACHE_BUCKETS];
    for (struct veil_mpc_shelf *s = *b; s; s = s->next)
        if (s->numel == numel && s->tile == tile)
            return s;
    struct veil_mpc_shelf *s = make ? malloc(sizeof *s) : NULL;
    if (s) {
        *s = (struct veil_mpc_shelf){.numel = numel, .tile = tile, .next = *b};
        *b = s;
    }
    return s;
}

void veil_mpc_cache_init(veil_mpc_t *m)
{
    m->cache.enabled = m->opt.role != VEIL_MPC_RECORDER && starpu_memory_nodes_get_count() == 1;
}

int veil_mpc_cache_take(veil_mpc_t *m, struct veil_sec *t)
{
    if (!m->cache.enabled || t->numel * 8 > VEIL_MPC_CACHE_MAX_BYTES)
        return 0;
    struct veil_mpc_shelf *s = shelf_of(m, t->numel, t->tile, 0);
    struct veil_mpc_cached *c = s ? s->top : NULL;
    if (!c) {
        m->cache.misses++;
        return 0;
    }
    s->top = c->next;
    t->data = c->g.data; /* wiped when it was kept */
    t->h = c->g.handles;
    for (int i = 0; i < t->ntiles; i++)
        veil_place_tag(t->h[i], i);
    m->cache.bytes -= t->numel * 8;
    m->cache.count--;
    m->cache.hits++;
    free(c);
    return 1;
}

/* Whether g's handles are one vector of 8-byte words per tile of its buffer, in order, with
 * every tile but the last of the first one's length: the layout veil_sec_register makes. */
static int tiles_buffer(const struct veil_mpc_garbage *g, size_t *tile)
{
    if (!g->handles || !g->data || g->nhandles < 1 || g->bytes % 8 != 0 || g->bytes == 0)
        return 0;
    const size_t numel = g->bytes / 8;
    *tile = starpu_vector_get_nx(g->handles[0]);
    if (*tile == 0 || (numel + *tile - 1) / *tile != (size_t)g->nhandles)
        return 0;
    for (int i = 0; i < g->nhandles; i++) {
        const starpu_data_handle_t h = g->handles[i];
        const size_t start = (size_t)i * *tile;
        const size_t n = numel - start < *tile ? numel - start : *tile;
        if (starpu_data_get_interface_id(h) != STARPU_VECTOR_INTERFACE_ID ||
            starpu_vector_get_elemsize(h) != 8 || starpu_vector_get_nx(h) != n ||
            starpu_vector_get_local_ptr(h) != (uintptr_t)((uint64_t *)g->data + start))
            return 0;
    }
    return 1;
}

int veil_mpc_cache_keep(veil_mpc_t *m, struct veil_mpc_garbage *g)
{
    size_t tile;
    if (!m->cache.enabled || g->bytes > VEIL_MPC_CACHE_MAX_BYTES ||
        m->cache.bytes + g->bytes > VEIL_MPC_CACHE_TOTAL_BYTES || !tiles_buffer(g, &tile))
        return 0;
    struct veil_mpc_shelf *s = shelf_of(m, g->bytes / 8, tile, 1);
    struct veil_mpc_cached *c = s ? malloc(sizeof *c) : NULL;
    if (!c)
        return 0;
    veil_wipe(g->data, g->bytes);
    *c = (struct veil_mpc_cached){.g = *g, .next = s->top};
    s->top = c;
    m->cache.bytes += g->bytes;
    m->cache.count++;
    return 1;
}

void veil_mpc_cache_drain(veil_mpc_t *m)
{
    if (m->cache.enabled)
        VEIL_LOG_DEBUG("mpc: %llu tensors took released memory and handles back, %llu were "
                       "allocated and registered; %zu (%zu bytes) kept at the end",
                       (unsigned long long)m->cache.hits, (unsigned long long)m->cache.misses,
                       m->cache.count, m->cache.bytes);
    for (int b = 0; b < VEIL_MPC_CACHE_BUCKETS; b++)
        while (m->cache.bucket[b]) {
            struct veil_mpc_shelf *s = m->cache.bucket[b];
            m->cache.bucket[b] = s->next;
            while (s->top) {
                struct veil_mpc_cached *c = s->top;
                s->top = c->next;
                drop(&c->g);
                free(c);
            }
            free(s);
        }
    m->cache.bytes = 0;
    m->cache.count = 0;
}

void veil_mpc_cache_stats(const veil_mpc_t *m, struct veil_mpc_cache_stats *s)
{
    s->hits = m->cache.hits;
    s->misses = m->cache.misses;
    s->tensors = m->cache.count;
    s->bytes = m->cache.bytes;
}

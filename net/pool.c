/*
 * pool.c — the preallocated pool of host staging buffers for outgoing chunks. Every buffer is
 * allocated when the session opens, so the hot path never calls malloc; the I/O thread takes a
 * buffer to stage a chunk and ZeroMQ gives it back through its free function (from its own
 * thread, hence the mutex) once the bytes are encoded onto the wire. The buffers come from
 * sched/locality.c: on the NUMA node of the party's network device, page-locked when StarPU has
 * CUDA workers (docs/gpu.md). They are written once when allocated, so their pages fault in then
 * (and on that node): the I/O thread used to fault them in while sealing the first runs' chunks.
 */
#include "config.h"
#include "base/base_internal.h"
#include "net/net_internal.h"
#include "sched/sched_internal.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

struct veil_net_pool {
    pthread_mutex_t mu;
    size_t count;
    size_t size;
    size_t nfree;
    void **free; /* stack of free buffers */
    void **all;  /* every buffer, for destroy */
    int *flags;  /* how each of all[] was allocated (veil_locality_staging_alloc) */
    void (*wake)(void *);
    void *wake_arg;
};

struct veil_net_pool *veil_net_pool_new(size_t count, size_t size, void (*wake)(void *), void *arg)
{
    struct veil_net_pool *p = calloc(1, sizeof *p);
    if (!p)
        goto fail;
    pthread_mutex_init(&p->mu, NULL);
    p->count = count;
    p->size = size;
    p->wake = wake;
    p->wake_arg = arg;
    p->free = calloc(count ? count : 1, sizeof *p->free);
    p->all = calloc(count ? count : 1, sizeof *p->all);
    p->flags = calloc(count ? count : 1, sizeof *p->flags);
    if (!p->free || !p->all || !p->flags)
        goto fail;
    for (size_t i = 0; i < count; i++) {
        p->all[i] = veil_locality_staging_alloc(size, &p->flags[i]);
        if (!p->all[i])
            goto fail;
        memset(p->all[i], 0, size); /* faulted in now, not under the first runs' sealing */
        p->free[p->nfree++] = p->all[i];
    }
    return p;
fail:
    veil_net_pool_destroy(&p);
    veil_error(VEIL_ERR_NOMEM, "net: cannot allocate %zu staging buffers of %zu bytes", count,
               size);
    return NULL;
}

void veil_net_pool_destroy(struct veil_net_pool **pp)
{
    if (!pp || !*pp)
        return;
    struct veil_net_pool *p = *pp;
    if (p->all && p->flags)
        for (size_t i = 0; i < p->count; i++)
            veil_locality_staging_free(p->all[i], p->size, p->flags[i]);
    free(p->all);
    free(p->flags);
    free(p->free);
    pthread_mutex_destroy(&p->mu);
    free(p);
    *pp = NULL;
}

void *veil_net_pool_get(struct veil_net_pool *p)
{
    void *b = NULL;
    pthread_mutex_lock(&p->mu);
    if (p->nfree > 0)
        b = p->free[--p->nfree];
    pthread_mutex_unlock(&p->mu);
    return b;
}

void veil_net_pool_put(struct veil_net_pool *p, void *buf)
{
    if (!buf)
        return;
    pthread_mutex_lock(&p->mu);
    VEIL_ASSERT(p->nfree < p->count);
    int was_empty = p->nfree == 0;
    p->free[p->nfree++] = buf;
    pthread_mutex_unlock(&p->mu);
    if (was_empty && p->wake)
        p->wake(p->wake_arg);
}

void veil_net_pool_zmq_free(void *data, void *hint)
{
    veil_net_pool_put(hint, data);
}

size_t veil_net_pool_available(struct veil_net_pool *p)
{
    pthread_mutex_lock(&p->mu);
    size_t n = p->nfree;
    pthread_mutex_unlock(&p->mu);
    return n;
}

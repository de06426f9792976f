/*
 * locality.c — what one party uses of its machine, chosen from hwloc: its network device, the
 * NUMA node of that device (where its network I/O thread runs and its staging buffers live) and
 * the CUDA devices local to that node. veil_locality_choose is a pure function of a topology, so
 * tests check it on synthetic XML (2 packages x 4 GPUs) and veil-topo prints it. The session uses
 * it through two calls made once per process: the I/O thread binds itself to the node's cores
 * (net/io.c) and net/pool.c allocates its staging buffers on the node, page-locked when StarPU
 * has CUDA workers. A machine with one NUMA node (every development VM) loads no I/O topology and
 * binds nothing; only the page-locking applies there.
 */
#include "config.h"

#include "sched/sched_internal.h"

#include "base/base_internal.h"

#include <pthread.h>
#include <starpu.h>
#include <string.h>

static int is_loopback(const struct veil_topo_nic *n)
{
    return strcmp(n->name, "lo") == 0;
}

/* The NUMA node of that OS index, or NULL. */
static hwloc_obj_t numa_by_os(const struct veil_topo *t, int os)
{
    hwloc_obj_t n = NULL;
    while ((n = hwloc_get_next_obj_by_type(t->topology, HWLOC_OBJ_NUMANODE, n)) != NULL)
        if ((int)n->os_index == os)
            return n;
    return NULL;
}

int veil_locality_choose(const struct veil_topo *t, int party, struct veil_locality *out)
{
    if (t == NULL || out == NULL || party < 0)
        return veil_error(VEIL_ERR_INVAL, "locality: bad arguments (topology, result or party)");
    memset(out, 0, sizeof *out);
    out->nic = -1;
    /* Network interfaces first: an OpenFabrics device and its interface are the same card. */
    for (int openfabrics = 0; openfabrics <= 1 && out->nic < 0; openfabrics++) {
        int count = 0;
        for (unsigned i = 0; i < t->nnics; i++)
            count += t->nics[i].openfabrics == openfabrics && !is_loopback(&t->nics[i]);
        for (unsigned i = 0, k = 0; count > 0 && i < t->nnics; i++) {
            if (t->nics[i].openfabrics != openfabrics || is_loopback(&t->nics[i]))
                continue;
            if ((int)k++ == party % count)
                out->nic = (int)i;
        }
    }
    out->numa_obj = out->nic >= 0 ? numa_by_os(t, t->nics[out->nic].numa) : NULL;
    if (out->numa_obj == NULL) { /* no NIC, or one attached machine-wide */
        int nodes = hwloc_get_nbobjs_by_type(t->topology, HWLOC_OBJ_NUMANODE);
        out->numa_obj = hwloc_get_obj_by_type(t->topology, HWLOC_OBJ_NUMANODE,
                                              nodes > 0 ? (unsigned)(party % nodes) : 0);
    }
    if (out->numa_obj == NULL)
        return veil_error(VEIL_ERR_INVAL, "locality: the topology has no NUMA node");
    out->numa = (int)out->numa_obj->os_index;
    out->npus = out->numa_obj->cpuset ? (unsigned)hwloc_bitmap_weight(out->numa_obj->cpuset) : 0;
    for (unsigned i = 0; i < t->ngpus; i++)
        if (t->gpus[i].numa == out->numa)
            out->gpus[out->ngpus++] = t->gpus[i].cuda_index;
    if (out->ngpus == 0) /* none local to the node (or attached machine-wide): every GPU */
        for (unsigned i = 0; i < t->ngpus; i++)
            out->gpus[out->ngpus++] = t->gpus[i].cuda_index;
    return VEIL_OK;
}

int veil_locality_print(const struct veil_topo *t, const struct veil_locality *c, FILE *f)
{
    if (t == NULL || c == NULL || f == NULL)
        return veil_error(VEIL_ERR_INVAL, "locality: nothing to print");
    int ok = fprintf(f, "network device: %s\n", c->nic >= 0 ? t->nics[c->nic].name : "none") >= 0;
    ok &= fprintf(f, "NUMA node: %d (%u PUs: the network I/O thread and the staging buffers)\n",
                  c->numa, c->npus) >= 0;
    ok &= fprintf(f, "CUDA devices near it:") >= 0;
    for (int i = 0; i < c->ngpus; i++)
        ok &= fprintf(f, " %d", c->gpus[i]) >= 0;
    ok &= fprintf(f, "%s\n", c->ngpus ? "" : " none") >= 0;
    return ok ? VEIL_OK : veil_error(VEIL_ERR_IO, "locality: write failed");
}

/* ---- once per process ----------------------------------------------------------------------- */

static pthread_once_t proc_once = PTHREAD_ONCE_INIT;
static struct veil_topo *proc_topo; /* NULL on a one-node machine; kept for the process's life */
static struct veil_locality proc_choice;

/* Counting NUMA nodes without I/O devices is cheap; the I/O topology (PCI scan) is loaded only
 * where there is a choice to make. */
static void proc_init(void)
{
    hwloc_topology_t h;
    int nodes = 1;
    if (hwloc_topology_init(&h) == 0) {
        if (hwloc_topology_load(h) == 0)
            nodes = hwloc_get_nbobjs_by_type(h, HWLOC_OBJ_NUMANODE);
        hwloc_topology_destroy(h);
    }
    if (nodes <= 1)
        return;
    if (veil_topo_load(NULL, &proc_topo) != VEIL_OK ||
        veil_locality_choose(proc_topo, 0, &proc_choice) != VEIL_OK) {
        VEIL_LOG_WARN("locality: %s; the network thread and buffers stay unbound",
                      veil_last_error());
        veil_topo_destroy(&proc_topo);
        return;
    }
    VEIL_LOG_DEBUG("locality: NIC %s, NUMA node %d (%u PUs), %d GPUs near",
                   proc_choice.nic >= 0 ? proc_topo->nics[proc_choice.nic].name : "none",
                   proc_choice.numa, proc_choice.npus, proc_choice.ngpus);
}

void veil_locality_bind_io_thread(void)
{
    pthread_once(&proc_once, proc_init);
    if (proc_topo == NULL || proc_choice.numa_obj == NULL || proc_choice.numa_obj->cpuset == NULL)
        return;
    /* within the process's own binding (veil-run gives each process its share of the CPUs): the
     * node's CPUs among those, or none when the share lies outside the node */
    hwloc_bitmap_t cur = hwloc_bitmap_alloc(), set = hwloc_bitmap_alloc();
    if (!cur || !set) {
        hwloc_bitmap_free(cur);
        hwloc_bitmap_free(set);
        return;
    }
    if (hwloc_get_cpubind(proc_topo->topology, cur, HWLOC_CPUBIND_PROCESS) == 0)
        hwloc_bitmap_and(set, proc_choice.numa_obj->cpuset, cur);
    else
        hwloc_bitmap_copy(set, proc_choice.numa_obj->cpuset);
    if (!hwloc_bitmap_iszero(set) &&
        hwloc_set_cpubind(proc_topo->topology, set, HWLOC_CPUBIND_THREAD) != 0)
        VEIL_LOG_WARN("locality: the OS refused to bind the network thread to NUMA node %d",
                      proc_choice.numa);
    hwloc_bitmap_free(cur);
    hwloc_bitmap_free(set);
}

/* Page-locking pays only when a CUDA worker copies from these buffers. */
static int want_locked(void)
{
    return starpu_is_initialized() && starpu_cuda_worker_get_count() > 0;
}

void *veil_locality_staging_alloc(size_t len, int *flags)
{
    pthread_once(&proc_once, proc_init);
    int lock = want_locked();
    void *p = NULL;
    int bound = 0, registered = 0;
    if (proc_topo != NULL) {
        hwloc_obj_t dev = proc_choice.nic >= 0 ? proc_topo->nics[proc_choice.nic].obj : NULL;
        if (veil_pin_alloc_near(proc_topo, dev, len, lock, &p, &bound, &registered) != VEIL_OK)
            return NULL;
        bound = 1; /* hwloc's memory, bound or not: freed with hwloc_free */
    } else {
        if ((p = veil_aligned_alloc(len)) == NULL)
            return NULL;
        registered = lock ? veil_pin_register(p, len) : 0;
    }
    *flags = (bound ? VEIL_STAGING_NUMA : 0) | (registered ? VEIL_STAGING_LOCKED : 0);
    return p;
}

void veil_locality_staging_free(void *p, size_t len, int flags)
{
    if (p == NULL)
        return;
    if (flags & VEIL_STAGING_NUMA) {
        veil_pin_free(proc_topo, p, len, flags & VEIL_STAGING_LOCKED);
    } else {
        veil_pin_unregister(p, flags & VEIL_STAGING_LOCKED);
        veil_aligned_free(p);
    }
}

int veil_locality_cuda_conf(const struct veil_locality *c, struct starpu_conf *conf)
{
    /* STARPU_NCUDA (read into conf->ncuda by starpu_conf_init) or an application's explicit
     * list wins; StarPU itself prefers STARPU_WORKERS_CUDAID to what conf says */
    if (c == NULL || conf == NULL || c->ngpus <= 0 || conf->ncuda >= 0 ||
        conf->use_explicit_workers_cuda_gpuid)
        return 0;
    conf->use_explicit_workers_cuda_gpuid = 1;
    for (int i = 0; i < c->ngpus && i < STARPU_NMAXWORKERS; i++)
        conf->workers_cuda_gpuid[i] = (unsigned)c->gpus[i];
    conf->ncuda = c->ngpus;
    return 1;
}

int veil_locality_starpu_conf(struct starpu_conf *conf)
{
    pthread_once(&proc_once, proc_init);
    if (proc_topo == NULL)
        return 0; /* one NUMA node: every GPU is as near as any other, StarPU takes them all */
    const int set = veil_locality_cuda_conf(&proc_choice, conf);
    if (set)
        VEIL_LOG_INFO("locality: StarPU's CUDA workers on the %d GPUs near NUMA node %d",
                      proc_choice.ngpus, proc_choice.numa);
    return set;
}

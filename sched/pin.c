/*
 * pin.c — puts a thread and its staging buffers next to the device it feeds: binds the calling
 * thread (e.g. the network I/O thread, near its NIC) to the cores of the device's locality and
 * allocates host memory on the nearest NUMA node, page-locked with cudaHostRegister when asked
 * (the caller has CUDA workers), Veil is built for a CUDA StarPU and a device is present, so host
 * <-> GPU copies are DMA without bounce buffers. sched/locality.c uses it for the session's network
 * staging.
 */
#include "config.h"

#include "sched/sched_internal.h"

#include "base/base_internal.h"

#ifdef VEIL_USE_CUDA
#include <cuda_runtime_api.h>
#endif

#include <stdlib.h>

hwloc_obj_t veil_topo_nearest_numa(const struct veil_topo *t, hwloc_obj_t dev)
{
    hwloc_obj_t anc = dev ? hwloc_get_non_io_ancestor_obj(t->topology, dev) : NULL;
    int os = -1;
    if (anc != NULL && anc->nodeset != NULL)
        os = hwloc_bitmap_first(anc->nodeset);
    if (os >= 0) {
        hwloc_obj_t n = NULL;
        while ((n = hwloc_get_next_obj_by_type(t->topology, HWLOC_OBJ_NUMANODE, n)) != NULL)
            if ((int)n->os_index == os)
                return n;
    }
    return hwloc_get_obj_by_type(t->topology, HWLOC_OBJ_NUMANODE, 0);
}

int veil_pin_thread_near(const struct veil_topo *t, hwloc_obj_t dev)
{
    if (t == NULL)
        return veil_error(VEIL_ERR_INVAL, "pin: topology is NULL");
    hwloc_obj_t anc =
        dev ? hwloc_get_non_io_ancestor_obj(t->topology, dev) : hwloc_get_root_obj(t->topology);
    if (anc == NULL || anc->cpuset == NULL)
        return veil_error(VEIL_ERR_INVAL, "pin: the device has no CPU locality");
    if (hwloc_set_cpubind(t->topology, anc->cpuset, HWLOC_CPUBIND_THREAD) != 0)
        return veil_error(VEIL_ERR_UNSUPPORTED, "pin: the OS refused to bind the thread");
    return VEIL_OK;
}

/* Page-locks p when a CUDA device exists; 1 when registered. */
int veil_pin_register(void *p, size_t len)
{
#ifdef VEIL_USE_CUDA
    int ndev = 0;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
        (void)cudaGetLastError(); /* clear the "no device" error */
        return 0;
    }
    if (cudaHostRegister(p, len, cudaHostRegisterPortable) != cudaSuccess) {
        (void)cudaGetLastError();
        VEIL_LOG_WARN("pin: cudaHostRegister of %zu bytes failed; staging memory is pageable", len);
        return 0;
    }
    return 1;
#else
    (void)p;
    (void)len;
    return 0;
#endif
}

int veil_pin_alloc_near(const struct veil_topo *t, hwloc_obj_t dev, size_t len, int lock, void **p,
                        int *bound, int *registered)
{
    if (t == NULL || p == NULL || len == 0)
        return veil_error(VEIL_ERR_INVAL, "pin: bad arguments (topology, pointer or length)");
    *p = NULL;
    hwloc_obj_t numa = veil_topo_nearest_numa(t, dev);
    void *mem = NULL;
    int is_bound = 0;
    if (numa != NULL)
        mem = hwloc_alloc_membind(t->topology, len, numa->nodeset, HWLOC_MEMBIND_BIND,
                                  HWLOC_MEMBIND_BYNODESET);
    if (mem != NULL) {
        is_bound = 1;
    } else {
        mem = hwloc_alloc(t->topology, len); /* the OS cannot bind: page-aligned anyway */
        if (mem == NULL)
            return veil_error(VEIL_ERR_NOMEM, "pin: cannot allocate %zu bytes", len);
    }
    int reg = lock ? veil_pin_register(mem, len) : 0;
    if (bound != NULL)
        *bound = is_bound;
    if (registered != NULL)
        *registered = reg;
    *p = mem;
    return VEIL_OK;
}

void veil_pin_unregister(void *p, int registered)
{
#ifdef VEIL_USE_CUDA
    if (p != NULL && registered && cudaHostUnregister(p) != cudaSuccess)
        (void)cudaGetLastError();
#else
    (void)p;
    (void)registered;
#endif
}

void veil_pin_free(const struct veil_topo *t, void *p, size_t len, int registered)
{
    if (t == NULL || p == NULL)
        return;
    veil_pin_unregister(p, registered);
    hwloc_free(t->topology, p, len);
}

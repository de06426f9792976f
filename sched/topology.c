/*
 * topology.c — hwloc discovery of what Veil schedules on: packages, NUMA nodes, cores, PUs, the
 * CUDA GPUs (OS devices "cudaN" of type COPROC) and network devices (NETWORK / OPENFABRICS OS
 * devices) with their PCI address and locality (the NUMA node and package of their first non-I/O
 * ancestor), and NVLink bandwidths when hwloc's NVML backend reported an "NVLinkBandwidth"
 * distance matrix (its objects are the "nvmlN" GPU OS devices, matched to CUDA devices through
 * their common PCI device). The machine itself or an XML export can be loaded, so tests run on
 * synthetic multi-socket, multi-GPU topologies. hwloc builds without the CUDA plugin (Debian's)
 * report no "cudaN" devices: on the real machine, when built for a CUDA StarPU (VEIL_USE_CUDA),
 * the CUDA runtime's device list is then mapped to hwloc's PCI devices by bus id (as
 * hwloc/cudart.h does); a build for a StarPU without CUDA, which cannot use a GPU, lists none.
 */
#include "config.h"

#include "sched/sched_internal.h"

#include "base/base_internal.h"

#include <hwloc.h>
#include <stdlib.h>
#include <string.h>

#ifdef VEIL_USE_CUDA
#include <cuda_runtime_api.h>
#endif

/* The PCI device an I/O object hangs off (itself if it is one), or NULL. */
static hwloc_obj_t pci_parent(hwloc_obj_t o)
{
    while (o != NULL && o->type != HWLOC_OBJ_PCI_DEVICE)
        o = o->parent;
    return o;
}

static void pci_string(hwloc_obj_t o, char *buf, size_t len)
{
    hwloc_obj_t p = pci_parent(o);
    if (p == NULL) {
        buf[0] = '\0';
        return;
    }
    snprintf(buf, len, "%04x:%02x:%02x.%01x", p->attr->pcidev.domain, p->attr->pcidev.bus,
             p->attr->pcidev.dev, p->attr->pcidev.func);
}

/* NUMA OS index and package logical index of the non-I/O ancestor of o (-1 when ambiguous). */
static void locality(hwloc_topology_t topo, hwloc_obj_t o, int *numa, int *package)
{
    hwloc_obj_t anc = hwloc_get_non_io_ancestor_obj(topo, o);
    *numa = -1;
    *package = -1;
    if (anc == NULL)
        return;
    if (anc->nodeset != NULL && hwloc_bitmap_weight(anc->nodeset) == 1)
        *numa = hwloc_bitmap_first(anc->nodeset);
    hwloc_obj_t pkg = anc->type == HWLOC_OBJ_PACKAGE
                          ? anc
                          : hwloc_get_ancestor_obj_by_type(topo, HWLOC_OBJ_PACKAGE, anc);
    if (pkg != NULL)
        *package = (int)pkg->logical_index;
}

static int gpu_cmp(const void *x, const void *y)
{
    const struct veil_topo_gpu *a = x, *b = y;
    return (a->cuda_index > b->cuda_index) - (a->cuda_index < b->cuda_index);
}

static void collect_devices(struct veil_topo *t)
{
    hwloc_obj_t o = NULL;
    while ((o = hwloc_get_next_osdev(t->topology, o)) != NULL) {
        if (o->name == NULL)
            continue;
        hwloc_obj_osdev_type_t ty = o->attr->osdev.type;
        if (ty == HWLOC_OBJ_OSDEV_COPROC && strncmp(o->name, "cuda", 4) == 0) {
            char *end;
            long idx = strtol(o->name + 4, &end, 10);
            if (end == o->name + 4 || *end != '\0' || idx < 0 || idx > 1000000)
                continue;
            if (t->ngpus == VEIL_TOPO_MAX_GPUS) {
                VEIL_LOG_WARN("topology: more than %d CUDA devices, ignoring %s",
                              VEIL_TOPO_MAX_GPUS, o->name);
                continue;
            }
            struct veil_topo_gpu *g = &t->gpus[t->ngpus++];
            g->cuda_index = (int)idx;
            snprintf(g->name, sizeof(g->name), "%s", o->name);
            pci_string(o, g->pci, sizeof(g->pci));
            locality(t->topology, o, &g->numa, &g->package);
            g->obj = o;
        } else if (ty == HWLOC_OBJ_OSDEV_NETWORK || ty == HWLOC_OBJ_OSDEV_OPENFABRICS) {
            if (t->nnics == VEIL_TOPO_MAX_NICS) {
                VEIL_LOG_WARN("topology: more than %d network devices, ignoring %s",
                              VEIL_TOPO_MAX_NICS, o->name);
                continue;
            }
            struct veil_topo_nic *n = &t->nics[t->nnics++];
            snprintf(n->name, sizeof(n->name), "%s", o->name);
            n->openfabrics = ty == HWLOC_OBJ_OSDEV_OPENFABRICS;
            pci_string(o, n->pci, sizeof(n->pci));
            locality(t->topology, o, &n->numa, &n->package);
            n->obj = o;
        }
    }
    qsort(t->gpus, t->ngpus, sizeof(t->gpus[0]), gpu_cmp);
}

#ifdef VEIL_USE_CUDA
/* CUDA device i -> its hwloc PCI device, for hwloc builds without the CUDA plugin. This
 * initialises the CUDA runtime in the process: call veil_topo_load after forking parties. */
static void collect_cuda_runtime(struct veil_topo *t)
{
    int ndev = 0;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess) {
        (void)cudaGetLastError(); /* no driver or no device: no GPU */
        return;
    }
    for (int i = 0; i < ndev && t->ngpus < VEIL_TOPO_MAX_GPUS; i++) {
        char bus[32];
        unsigned dom, b, d, f = 0;
        if (cudaDeviceGetPCIBusId(bus, (int)sizeof(bus), i) != cudaSuccess) {
            (void)cudaGetLastError();
            continue;
        }
        if (sscanf(bus, "%x:%x:%x.%x", &dom, &b, &d, &f) < 3)
            continue;
        struct veil_topo_gpu *g = &t->gpus[t->ngpus++];
        g->cuda_index = i;
        snprintf(g->name, sizeof(g->name), "cuda%d", i);
        g->obj = hwloc_get_pcidev_by_busid(t->topology, dom, b, d, f);
        g->numa = g->package = -1;
        g->pci[0] = '\0';
        if (g->obj != NULL) {
            pci_string(g->obj, g->pci, sizeof(g->pci));
            locality(t->topology, g->obj, &g->numa, &g->package);
        } else {
            snprintf(g->pci, sizeof(g->pci), "%04x:%02x:%02x.%01x", dom, b, d, f);
        }
    }
}
#endif

/* Index in t->gpus of the GPU sharing o's PCI device, or -1. */
static int gpu_of_pci(const struct veil_topo *t, hwloc_obj_t o)
{
    hwloc_obj_t p = pci_parent(o);
    if (p == NULL)
        return -1;
    for (unsigned i = 0; i < t->ngpus; i++)
        if (pci_parent(t->gpus[i].obj) == p)
            return (int)i;
    return -1;
}

static void collect_nvlink(struct veil_topo *t)
{
    struct hwloc_distances_s *d = NULL;
    unsigned nr = 1;
    if (hwloc_distances_get_by_name(t->topology, "NVLinkBandwidth", &nr, &d, 0) != 0 || nr == 0)
        return;
    t->nvlink_found = 1;
    for (unsigned i = 0; i < d->nbobjs; i++) {
        int gi = gpu_of_pci(t, d->objs[i]);
        for (unsigned j = 0; j < d->nbobjs && gi >= 0; j++) {
            int gj = gpu_of_pci(t, d->objs[j]);
            if (gj >= 0 && gj != gi)
                t->nvlink_bw[gi][gj] = d->values[i * d->nbobjs + j];
        }
    }
    hwloc_distances_release(t->topology, d);
}

static unsigned count(hwloc_topology_t topo, hwloc_obj_type_t type)
{
    int n = hwloc_get_nbobjs_by_type(topo, type);
    return n > 0 ? (unsigned)n : 0;
}

int veil_topo_load(const char *xml_path, struct veil_topo **out)
{
    struct veil_topo *t = NULL;
    int rc = VEIL_ERR_IO;

    if (out == NULL)
        return veil_error(VEIL_ERR_INVAL, "topology: out is NULL");
    *out = NULL;
    t = calloc(1, sizeof(*t));
    if (t == NULL)
        return veil_error(VEIL_ERR_NOMEM, "topology: out of memory");
    if (hwloc_topology_init(&t->topology) != 0) {
        free(t);
        return veil_error(VEIL_ERR_NOMEM, "topology: hwloc_topology_init failed");
    }
    if (hwloc_topology_set_io_types_filter(t->topology, HWLOC_TYPE_FILTER_KEEP_IMPORTANT) != 0) {
        rc = veil_error(VEIL_ERR_IO, "topology: hwloc refuses to keep I/O devices");
        goto fail;
    }
    if (xml_path != NULL && hwloc_topology_set_xml(t->topology, xml_path) != 0) {
        rc = veil_error(VEIL_ERR_IO, "topology: cannot read hwloc XML '%s'", xml_path);
        goto fail;
    }
    if (hwloc_topology_load(t->topology) != 0) {
        rc = xml_path ? veil_error(VEIL_ERR_IO, "topology: cannot load hwloc XML '%s'", xml_path)
                      : veil_error(VEIL_ERR_IO, "topology: hwloc cannot discover this machine");
        goto fail;
    }
    t->npackages = count(t->topology, HWLOC_OBJ_PACKAGE);
    t->nnuma = count(t->topology, HWLOC_OBJ_NUMANODE);
    t->ncores = count(t->topology, HWLOC_OBJ_CORE);
    t->npus = count(t->topology, HWLOC_OBJ_PU);
    collect_devices(t);
#ifdef VEIL_USE_CUDA
    if (t->ngpus == 0 && xml_path == NULL)
        collect_cuda_runtime(t);
#endif
    collect_nvlink(t);
    *out = t;
    return VEIL_OK;
fail:
    hwloc_topology_destroy(t->topology);
    free(t);
    return rc;
}

void veil_topo_destroy(struct veil_topo **t)
{
    if (t == NULL || *t == NULL)
        return;
    hwloc_topology_destroy((*t)->topology);
    free(*t);
    *t = NULL;
}

const struct veil_topo_gpu *veil_topo_gpu_by_cuda(const struct veil_topo *t, int cuda_index)
{
    for (unsigned i = 0; t != NULL && i < t->ngpus; i++)
        if (t->gpus[i].cuda_index == cuda_index)
            return &t->gpus[i];
    return NULL;
}

const struct veil_topo_nic *veil_topo_nic_by_name(const struct veil_topo *t, const char *name)
{
    for (unsigned i = 0; t != NULL && name != NULL && i < t->nnics; i++)
        if (strcmp(t->nics[i].name, name) == 0)
            return &t->nics[i];
    return NULL;
}

int veil_topo_print(const struct veil_topo *t, FILE *f)
{
    if (t == NULL || f == NULL)
        return veil_error(VEIL_ERR_INVAL, "topology: nothing to print");
    fprintf(f, "packages %u, NUMA nodes %u, cores %u, PUs %u\n", t->npackages, t->nnuma, t->ncores,
            t->npus);
    fprintf(f, "CUDA GPUs: %u\n", t->ngpus);
    for (unsigned i = 0; i < t->ngpus; i++) {
        const struct veil_topo_gpu *g = &t->gpus[i];
        fprintf(f, "  %-8s pci %-12s numa %2d package %2d", g->name, g->pci[0] ? g->pci : "-",
                g->numa, g->package);
        if (t->nvlink_found) {
            fprintf(f, "  nvlink MB/s:");
            for (unsigned j = 0; j < t->ngpus; j++)
                fprintf(f, " %llu", (unsigned long long)t->nvlink_bw[i][j]);
        }
        fputc('\n', f);
    }
    fprintf(f, "network devices: %u\n", t->nnics);
    for (unsigned i = 0; i < t->nnics; i++) {
        const struct veil_topo_nic *n = &t->nics[i];
        fprintf(f, "  %-8s %-11s pci %-12s numa %2d package %2d\n", n->name,
                n->openfabrics ? "openfabrics" : "network", n->pci[0] ? n->pci : "-", n->numa,
                n->package);
    }
    fprintf(f, "NVLink: %s\n", t->nvlink_found ? "reported" : "not reported");
    return ferror(f) ? veil_error(VEIL_ERR_IO, "topology: write failed") : VEIL_OK;
}

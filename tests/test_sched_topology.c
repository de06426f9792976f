/* Tests hwloc discovery (sched/topology.c) on synthetic XML topologies and on this machine:
 * tests/data/2pkg-8gpu.xml (2 packages x 4 cores, one NUMA node each, 4 CUDA GPUs and one
 * InfiniBand NIC (ib + mlx5 OS devices) behind each package's host bridge, NVLink 75000 MB/s
 * between GPUs of the same package and none across) gives exactly those counts, PCI addresses,
 * NUMA nodes, packages and NVLink matrix, and the nearest NUMA node of each device;
 * tests/data/2pkg-machine-gpu.xml (GPU and NIC attached machine-wide) gives no single locality
 * (-1) and falls back to the first NUMA node; a missing XML is VEIL_ERR_IO; the real machine
 * loads with at least one PU. */
#include "config.h"

#include "sched/sched_internal.h"
#include "test_util.h"

#include <stdlib.h>
#include <string.h>

/* The NIC of that OS-device name, or NULL. */
static const struct veil_topo_nic *nic_by_name(const struct veil_topo *t, const char *name)
{
    for (unsigned i = 0; i < t->nnics; i++)
        if (strcmp(t->nics[i].name, name) == 0)
            return &t->nics[i];
    return NULL;
}

static void data_path(char *buf, size_t len, const char *name)
{
    const char *src = getenv("VEIL_TOP_SRCDIR");
    snprintf(buf, len, "%s/tests/data/%s", src ? src : ".", name);
}

static void check_8gpu(void)
{
    char path[4096];
    struct veil_topo *t = NULL;
    data_path(path, sizeof(path), "2pkg-8gpu.xml");
    int rc = veil_topo_load(path, &t);
    VT_CHECK(rc == VEIL_OK && t != NULL, "load %s: %d %s", path, rc, veil_last_error());
    if (t == NULL)
        return;
    VT_CHECK(t->npackages == 2 && t->nnuma == 2 && t->ncores == 8 && t->npus == 8,
             "counts %u %u %u %u", t->npackages, t->nnuma, t->ncores, t->npus);
    VT_CHECK(t->ngpus == 8, "%u GPUs", t->ngpus);
    for (unsigned i = 0; i < t->ngpus; i++) {
        const struct veil_topo_gpu *g = &t->gpus[i];
        char want_pci[16];
        snprintf(want_pci, sizeof(want_pci), "0000:%02x:00.0", (i / 4) * 0x40 + 1 + i % 4);
        VT_CHECK(g->cuda_index == (int)i, "gpu %u index %d", i, g->cuda_index);
        VT_CHECK(strcmp(g->pci, want_pci) == 0, "gpu %u pci %s, want %s", i, g->pci, want_pci);
        VT_CHECK(g->numa == (int)(i / 4) && g->package == (int)(i / 4), "gpu %u numa %d pkg %d", i,
                 g->numa, g->package);
    }
    VT_CHECK(t->nvlink_found, "NVLink matrix not found");
    for (unsigned i = 0; i < 8; i++)
        for (unsigned j = 0; j < 8; j++) {
            uint64_t want = (i != j && i / 4 == j / 4) ? 75000 : 0;
            VT_CHECK(t->nvlink_bw[i][j] == want, "nvlink %u-%u = %llu", i, j,
                     (unsigned long long)t->nvlink_bw[i][j]);
        }
    VT_CHECK(t->nnics == 4, "%u NICs", t->nnics);
    static const char *names[4] = {"ib0", "mlx5_0", "ib1", "mlx5_1"};
    for (unsigned i = 0; i < 4; i++) {
        const struct veil_topo_nic *nic = nic_by_name(t, names[i]);
        VT_CHECK(nic != NULL, "NIC %s missing", names[i]);
        if (nic == NULL)
            continue;
        int p = (int)(i / 2);
        VT_CHECK(nic->numa == p && nic->package == p, "%s numa %d pkg %d", names[i], nic->numa,
                 nic->package);
        VT_CHECK(nic->openfabrics == (int)(i % 2), "%s openfabrics %d", names[i], nic->openfabrics);
    }
    VT_CHECK(nic_by_name(t, "eth9") == NULL, "no eth9");
    FILE *f = fopen("/dev/null", "w");
    if (f != NULL) {
        VT_CHECK(veil_topo_print(t, f) == VEIL_OK, "print");
        fclose(f);
    }
    if (veil_test_verbose())
        veil_topo_print(t, stderr);
    veil_topo_destroy(&t);
    VT_CHECK(t == NULL, "destroy sets NULL");
    veil_topo_destroy(&t); /* NULL-safe */
}

static void check_machine_wide(void)
{
    char path[4096];
    struct veil_topo *t = NULL;
    data_path(path, sizeof(path), "2pkg-machine-gpu.xml");
    int rc = veil_topo_load(path, &t);
    VT_CHECK(rc == VEIL_OK && t != NULL, "load %s: %d", path, rc);
    if (t == NULL)
        return;
    VT_CHECK(t->ngpus == 1 && t->nnics == 1 && t->nnuma == 2, "counts %u %u %u", t->ngpus, t->nnics,
             t->nnuma);
    if (t->ngpus == 1) {
        VT_CHECK(t->gpus[0].numa == -1 && t->gpus[0].package == -1, "machine-wide GPU locality");
    }
    VT_CHECK(!t->nvlink_found, "no NVLink here");
    veil_topo_destroy(&t);
}

int main(void)
{
    struct veil_topo *t = NULL;
    check_8gpu();
    check_machine_wide();
    VT_CHECK(veil_topo_load("/nonexistent/veil.xml", &t) == VEIL_ERR_IO && t == NULL,
             "missing XML must be VEIL_ERR_IO");
    VT_CHECK(veil_topo_load(NULL, NULL) == VEIL_ERR_INVAL, "NULL out");
    int rc = veil_topo_load(NULL, &t);
    VT_CHECK(rc == VEIL_OK && t != NULL && t->npus >= 1 && t->nnuma >= 1, "this machine: %d", rc);
    if (t != NULL && veil_test_verbose())
        veil_topo_print(t, stderr);
    veil_topo_destroy(&t);
    return veil_test_status();
}

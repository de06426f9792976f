/* Tests pinning near a device (sched/pin.c): on the synthetic 2-package, 8-GPU topology the NUMA
 * node chosen for each GPU and NIC is its package's (and the first node for NULL); on this
 * machine, binding the calling thread near the first network device (or machine-wide) succeeds,
 * the thread's CPU binding afterwards lies within that locality, and staging memory allocated
 * near it, asked page-locked or not, is usable (written and read back) and freed, never
 * page-locked when not asked; bad arguments are refused. */
#include "config.h"

#include "sched/sched_internal.h"
#include "test_util.h"

#include <stdlib.h>
#include <string.h>

static void check_synthetic(void)
{
    char path[4096];
    const char *src = getenv("VEIL_TOP_SRCDIR");
    struct veil_topo *t = NULL;
    snprintf(path, sizeof(path), "%s/tests/data/2pkg-8gpu.xml", src ? src : ".");
    if (veil_topo_load(path, &t) != VEIL_OK) {
        VT_CHECK(0, "load %s: %s", path, veil_last_error());
        return;
    }
    for (unsigned i = 0; i < t->ngpus; i++) {
        hwloc_obj_t n = veil_topo_nearest_numa(t, t->gpus[i].obj);
        VT_CHECK(n != NULL && n->os_index == i / 4, "cuda%u -> NUMA %d", i,
                 n ? (int)n->os_index : -1);
    }
    const struct veil_topo_nic *ib1 = veil_topo_nic_by_name(t, "ib1");
    hwloc_obj_t n = ib1 ? veil_topo_nearest_numa(t, ib1->obj) : NULL;
    VT_CHECK(n != NULL && n->os_index == 1, "ib1 -> NUMA 1");
    n = veil_topo_nearest_numa(t, NULL);
    VT_CHECK(n != NULL && n->os_index == 0, "NULL -> first NUMA node");
    veil_topo_destroy(&t);
}

static void check_real(void)
{
    struct veil_topo *t = NULL;
    if (veil_topo_load(NULL, &t) != VEIL_OK) {
        VT_CHECK(0, "load this machine: %s", veil_last_error());
        return;
    }
    hwloc_obj_t dev = t->nnics > 0 ? t->nics[0].obj : NULL;
    hwloc_cpuset_t before = hwloc_bitmap_alloc(), after = hwloc_bitmap_alloc();
    int have_before = before && hwloc_get_cpubind(t->topology, before, HWLOC_CPUBIND_THREAD) == 0;
    int rc = veil_pin_thread_near(t, dev);
    VT_CHECK(rc == VEIL_OK, "bind near %s: %d %s", dev ? dev->name : "machine", rc,
             veil_last_error());
    if (rc == VEIL_OK && after &&
        hwloc_get_cpubind(t->topology, after, HWLOC_CPUBIND_THREAD) == 0) {
        hwloc_obj_t anc =
            dev ? hwloc_get_non_io_ancestor_obj(t->topology, dev) : hwloc_get_root_obj(t->topology);
        VT_CHECK(hwloc_bitmap_isincluded(after, anc->cpuset), "binding outside the locality");
    }
    if (have_before) /* leave the test thread as it was */
        hwloc_set_cpubind(t->topology, before, HWLOC_CPUBIND_THREAD);
    hwloc_bitmap_free(before);
    hwloc_bitmap_free(after);

    void *p = NULL;
    int bound = -1, registered = -1;
    size_t len = 1 << 20;
    for (int lock = 0; lock <= 1; lock++) {
        rc = veil_pin_alloc_near(t, dev, len, lock, &p, &bound, &registered);
        VT_CHECK(rc == VEIL_OK && p != NULL, "alloc near: %d", rc);
        VT_CHECK(bound == 0 || bound == 1, "bound flag %d", bound);
        VT_CHECK(registered == 0 || registered == lock, "registered flag %d (lock %d)", registered,
                 lock);
        if (p != NULL) {
            memset(p, 0x5a, len);
            VT_CHECK(((unsigned char *)p)[len - 1] == 0x5a, "staging memory not writable");
            veil_test_log("staging: bound %d, page-locked %d", bound, registered);
            veil_pin_free(t, p, len, registered);
        }
    }
    VT_CHECK(veil_pin_alloc_near(t, dev, 0, 0, &p, NULL, NULL) == VEIL_ERR_INVAL, "len 0");
    VT_CHECK(veil_pin_alloc_near(NULL, dev, 8, 0, &p, NULL, NULL) == VEIL_ERR_INVAL, "NULL topo");
    VT_CHECK(veil_pin_thread_near(NULL, NULL) == VEIL_ERR_INVAL, "NULL topo bind");
    veil_pin_free(t, NULL, 0, 0); /* no-op */
    veil_topo_destroy(&t);
}

int main(void)
{
    check_synthetic();
    check_real();
    return veil_test_status();
}

/*
 * veil-topo — prints what Veil sees of a machine through hwloc: packages, NUMA nodes, cores, the
 * CUDA GPUs and network devices with their PCI address and NUMA/package locality, and NVLink
 * bandwidths when reported. `veil-topo` describes this machine; `veil-topo --xml FILE` an hwloc
 * XML export (lstopo --of xml), e.g. tests/data/2pkg-8gpu.xml.
 */
#include "config.h"

#include "sched/sched_internal.h"
#include "veil.h"

#include <stdio.h>
#include <string.h>

static void usage(FILE *f)
{
    fprintf(f, "usage: veil-topo [--xml FILE]\n"
               "Prints the cores, NUMA nodes, CUDA GPUs, network devices and NVLink links that\n"
               "Veil sees, on this machine or in an hwloc XML export.\n");
}

int main(int argc, char **argv)
{
    const char *xml = NULL;
    struct veil_topo *t = NULL;

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--xml") == 0 && i + 1 < argc) {
            xml = argv[++i];
        } else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return 0;
        } else {
            usage(stderr);
            return 2;
        }
    }
    int rc = veil_topo_load(xml, &t);
    if (rc != VEIL_OK) {
        fprintf(stderr, "veil-topo: %s\n", veil_last_error());
        return 1;
    }
    rc = veil_topo_print(t, stdout);
    veil_topo_destroy(&t);
    if (rc != VEIL_OK) {
        fprintf(stderr, "veil-topo: %s\n", veil_last_error());
        return 1;
    }
    return 0;
}

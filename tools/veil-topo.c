/*
 * veil-topo — prints what Veil sees of a machine through hwloc: packages, NUMA nodes, cores, the
 * CUDA GPUs and network devices with their PCI address and NUMA/package locality, and NVLink
 * bandwidths when reported, then the choice a party makes from it (sched/locality.c: its network
 * device, the NUMA node of its network thread and staging buffers, the CUDA devices near it).
 * `veil-topo` describes this machine; `veil-topo --xml FILE` an hwloc XML export (lstopo --of
 * xml), e.g. tests/data/2pkg-8gpu.xml; `--party K` the choice of the K-th party on that host.
 */
#include "config.h"

#include "sched/sched_internal.h"
#include "veil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *f)
{
    fprintf(f, "usage: veil-topo [--xml FILE] [--party K]\n"
               "Prints the cores, NUMA nodes, CUDA GPUs, network devices and NVLink links that\n"
               "Veil sees, on this machine or in an hwloc XML export, and what the K-th party\n"
               "on that host (default 0) chooses: its network device, the NUMA node of its\n"
               "network thread and staging buffers, and the CUDA devices near it.\n");
}

int main(int argc, char **argv)
{
    const char *xml = NULL;
    struct veil_topo *t = NULL;
    int party = 0;

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--xml") == 0 && i + 1 < argc) {
            xml = argv[++i];
        } else if (strcmp(argv[i], "--party") == 0 && i + 1 < argc) {
            char *end;
            long v = strtol(argv[++i], &end, 10);
            if (*argv[i] == '\0' || *end != '\0' || v < 0 || v > 1023) {
                fprintf(stderr, "veil-topo: --party '%s': a party index 0..1023\n", argv[i]);
                return 2;
            }
            party = (int)v;
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
    struct veil_locality c;
    rc = veil_topo_print(t, stdout);
    if (rc == VEIL_OK && (rc = veil_locality_choose(t, party, &c)) == VEIL_OK) {
        printf("party %d chooses:\n", party);
        rc = veil_locality_print(t, &c, stdout);
    }
    veil_topo_destroy(&t);
    if (rc != VEIL_OK) {
        fprintf(stderr, "veil-topo: %s\n", veil_last_error());
        return 1;
    }
    return 0;
}

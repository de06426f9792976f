/*
 * sched_internal.h — what Veil's scheduler layer knows about the machine and how it places work:
 * hwloc discovery of cores, NUMA nodes, CUDA GPUs, NICs and NVLink (sched/topology.c, shown by
 * veil-topo), pinning of threads and host staging memory near a device (sched/pin.c), each
 * party's choice of NIC, NUMA node and GPUs and the session's use of it for the network I/O
 * thread and staging buffers (sched/locality.c), the workers a party places over
 * (sched/devices.c), pipeline partitioning by the
 * bubble cost model of the multi-GPU Piranha report and the tensor-parallel split chooser
 * (sched/partition.c). Internal to libveil; never installed.
 */
#ifndef VEIL_SCHED_INTERNAL_H
#define VEIL_SCHED_INTERNAL_H

#include "veil.h"

#include <hwloc.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* ---------------------------------------------------------------------------------------------
 * Topology (sched/topology.c)
 */
#define VEIL_TOPO_MAX_GPUS 64
#define VEIL_TOPO_MAX_NICS 64
#define VEIL_TOPO_NAME_LEN 32

/** One CUDA device as hwloc reports it (OS device "cudaN" of type COPROC). */
struct veil_topo_gpu {
    int cuda_index;                /* N of "cudaN" */
    char name[VEIL_TOPO_NAME_LEN]; /* "cuda0" */
    char pci[16];                  /* "0000:01:00.0", "" when hwloc gave no PCI parent */
    int numa;        /* OS index of the one NUMA node local to it, -1 when none or several */
    int package;     /* logical index of the package it hangs off, -1 when machine-wide */
    hwloc_obj_t obj; /* the OS device (or, found through the CUDA runtime, its PCI device, NULL
                        if hwloc lacks it), valid while the topology lives */
};

/** One network device: OS device of type NETWORK ("eth0", "ib0") or OPENFABRICS ("mlx5_0"). */
struct veil_topo_nic {
    char name[VEIL_TOPO_NAME_LEN];
    int openfabrics; /* 1 for an OpenFabrics (RDMA) device, 0 for a network interface */
    char pci[16];
    int numa;
    int package;
    hwloc_obj_t obj;
};

/** What Veil sees of the machine. Counts are of hwloc objects after loading. */
struct veil_topo {
    hwloc_topology_t topology;
    unsigned npackages, nnuma, ncores, npus;
    unsigned ngpus;
    struct veil_topo_gpu gpus[VEIL_TOPO_MAX_GPUS]; /* sorted by cuda_index */
    unsigned nnics;
    struct veil_topo_nic nics[VEIL_TOPO_MAX_NICS];
    /* NVLink bandwidth between GPUs i and j (hwloc's "NVLinkBandwidth" distances, MB/s as hwloc
     * reports them), 0 when absent; nvlink_found says whether hwloc had such a matrix at all. */
    int nvlink_found;
    uint64_t nvlink_bw[VEIL_TOPO_MAX_GPUS][VEIL_TOPO_MAX_GPUS];
};

/**
 * Discovers the machine (xml_path NULL) or loads a topology exported as XML (lstopo --of xml),
 * keeping the important I/O devices, and fills *out (caller frees with veil_topo_destroy).
 * Returns VEIL_OK, VEIL_ERR_INVAL (out NULL), VEIL_ERR_NOMEM, VEIL_ERR_IO when hwloc cannot load
 * the topology or the XML (message names the file). Devices past the VEIL_TOPO_MAX_* limits are
 * ignored with a warning. Thread-safe (each call has its own hwloc topology).
 */
int veil_topo_load(const char *xml_path, struct veil_topo **out);

/** Frees the topology and sets *t = NULL; NULL-safe. */
void veil_topo_destroy(struct veil_topo **t);

/** Prints a human-readable summary (tools/veil-topo). Returns VEIL_OK or VEIL_ERR_IO. */
int veil_topo_print(const struct veil_topo *t, FILE *f);

/** The GPU with that CUDA index, or NULL. */
const struct veil_topo_gpu *veil_topo_gpu_by_cuda(const struct veil_topo *t, int cuda_index);

/** The NIC of that OS-device name ("eth0", "mlx5_0"), or NULL. */
const struct veil_topo_nic *veil_topo_nic_by_name(const struct veil_topo *t, const char *name);

/* ---------------------------------------------------------------------------------------------
 * Pinning (sched/pin.c)
 */

/**
 * The NUMA node (hwloc object) nearest a device's OS object dev: the single NUMA node of its
 * first non-I/O ancestor; with several there (device attached machine-wide), the first of them;
 * dev NULL gives the first NUMA node of the machine. Never NULL on a loaded topology.
 */
hwloc_obj_t veil_topo_nearest_numa(const struct veil_topo *t, hwloc_obj_t dev);

/**
 * Binds the calling thread to the cores near dev (the CPU set of dev's non-I/O ancestor; the
 * whole machine when dev is NULL) with hwloc_set_cpubind(HWLOC_CPUBIND_THREAD). Returns VEIL_OK
 * or VEIL_ERR_UNSUPPORTED (the OS refused binding; nothing changed; callers may go on unbound).
 */
int veil_pin_thread_near(const struct veil_topo *t, hwloc_obj_t dev);

/**
 * Allocates len bytes of host staging memory bound to the NUMA node nearest dev
 * (hwloc_alloc_membind, HWLOC_MEMBIND_BIND; falls back to a plain page-aligned allocation when
 * the OS cannot bind, see *bound) and, when lock is non-zero, built for a CUDA StarPU
 * (VEIL_USE_CUDA) and a CUDA device is present, page-locks it with cudaHostRegister so copies to
 * GPUs are DMA (see *registered).
 * Stores the result in *p. Release with veil_pin_free (same t, p, len). Returns VEIL_OK,
 * VEIL_ERR_INVAL, VEIL_ERR_NOMEM.
 */
int veil_pin_alloc_near(const struct veil_topo *t, hwloc_obj_t dev, size_t len, int lock, void **p,
                        int *bound, int *registered);

/** Unregisters (if registered) and frees memory from veil_pin_alloc_near; p NULL is a no-op. */
void veil_pin_free(const struct veil_topo *t, void *p, size_t len, int registered);

/** Page-locks [p, p+len) with cudaHostRegister when built for a CUDA StarPU (VEIL_USE_CUDA) and
 * a device exists: 1 when registered, 0 otherwise (a failure is logged as a warning; the memory
 * stays pageable). */
int veil_pin_register(void *p, size_t len);

/** Undoes veil_pin_register when registered is non-zero. */
void veil_pin_unregister(void *p, int registered);

/* ---------------------------------------------------------------------------------------------
 * Locality: what one party uses of its machine (sched/locality.c)
 */

/** A party's choice, made from the topology alone (so tests check it on synthetic XML). */
struct veil_locality {
    int nic;              /* index in t->nics of its network device, -1 when the machine has none */
    int numa;             /* OS index of the NUMA node of its I/O thread and staging buffers */
    hwloc_obj_t numa_obj; /* that node, valid while the topology lives */
    unsigned npus;        /* PUs of that node: where its network I/O thread may run */
    int ngpus;            /* its CUDA devices: those local to that node, else every GPU */
    int gpus[VEIL_TOPO_MAX_GPUS];
};

/**
 * Chooses for the party-th party on this host: its NIC is the (party mod count)-th network
 * interface (OpenFabrics devices only when there is no interface; loopback never), its NUMA node
 * the NIC's (with no single one: the (party mod nodes)-th node), its GPUs those local to that
 * node (with none there: all). Returns VEIL_OK or VEIL_ERR_INVAL (t or out NULL, party < 0).
 */
int veil_locality_choose(const struct veil_topo *t, int party, struct veil_locality *out);

/** Prints the choice in one paragraph (veil-topo). Returns VEIL_OK or VEIL_ERR_IO. */
int veil_locality_print(const struct veil_topo *t, const struct veil_locality *c, FILE *f);

/**
 * Fills a starpu_conf (from starpu_conf_init) so that StarPU's CUDA workers are c's GPUs: ncuda
 * and the explicit device list. Changes nothing (returns 0) when c names no GPU or when conf
 * already fixes the CUDA devices (STARPU_NCUDA set, or an explicit list); 1 when it set them.
 * StarPU still prefers STARPU_WORKERS_CUDAID to the list.
 */
struct starpu_conf;
int veil_locality_cuda_conf(const struct veil_locality *c, struct starpu_conf *conf);

/**
 * veil_locality_cuda_conf with this process's choice (party 0 of its host, as for the network
 * thread), before starpu_init (veil_party_open). On a machine with one NUMA node nothing is
 * chosen and conf is left as it is. Returns what veil_locality_cuda_conf returned.
 */
int veil_locality_starpu_conf(struct starpu_conf *conf);

/**
 * Binds the calling thread (the network I/O thread) to the cores of this process's NUMA node,
 * chosen once per process as party 0 of the host (one party per host is the deployment; parties
 * sharing a host share its NIC). On a machine with one NUMA node nothing is bound. Never fails:
 * a refusal by the OS is logged and the thread stays unbound. Thread-safe.
 */
void veil_locality_bind_io_thread(void);

/**
 * Host staging memory for the network (net/pool.c): len bytes on this process's NUMA node (on a
 * one-node machine, 64-byte aligned memory), page-locked when StarPU is initialised with at
 * least one CUDA worker. *flags records how, for veil_locality_staging_free. NULL when out of
 * memory. Thread-safe.
 */
void *veil_locality_staging_alloc(size_t len, int *flags);

/** Frees memory from veil_locality_staging_alloc (same len and flags); NULL is a no-op. */
void veil_locality_staging_free(void *p, size_t len, int flags);

/** Flags of veil_locality_staging_alloc. */
enum { VEIL_STAGING_NUMA = 1, VEIL_STAGING_LOCKED = 2 };

/* ---------------------------------------------------------------------------------------------
 * The devices a party places over (sched/devices.c)
 */

/** The first ncuda CUDA workers, then the first ncpu CPU workers, as devices 0, 1, ... */
struct veil_device_set {
    enum veil_device_kind kind; /* resolved: CPU or CUDA (the first device's) */
    int ncuda, ncpu;
};

/**
 * Resolves the device kind asked (AUTO: CUDA when ncuda > 0, else CPU) and the device count ndev
 * (0: every worker of the kind, at most max) against StarPU's ncuda CUDA and ncpu CPU workers.
 * With kind AUTO, exactly one CUDA worker and 1 < ndev <= 1 + ncpu, the set is that GPU and
 * ndev - 1 CPU workers. Returns VEIL_OK, VEIL_ERR_UNSUPPORTED (CUDA asked, no CUDA worker) or
 * VEIL_ERR_INVAL (bad arguments, or more devices asked than there are or than max); the last two
 * leave the message to the caller, who knows which setting to name.
 */
int veil_sched_devices(enum veil_device_kind asked, int ndev, int ncuda, int ncpu, int max,
                       struct veil_device_set *out);

/* ---------------------------------------------------------------------------------------------
 * Pipeline partitioning and tensor-parallel split (sched/partition.c)
 */

/** Per-layer cost of one micro-batch: forward and backward time (any unit), memory (bytes). */
struct veil_layer_cost {
    double fwd, bwd;
    double mem;
};

/**
 * A pipeline partition: layers [first[s], first[s] + count[s]) go to stage (device) s, for
 * s < nstages. time is the modelled pipeline time (see veil_pipeline_time).
 */
#define VEIL_PIPE_MAX_STAGES 64
struct veil_pipeline_plan {
    unsigned nstages;
    unsigned first[VEIL_PIPE_MAX_STAGES], count[VEIL_PIPE_MAX_STAGES];
    double time;
};

/**
 * The pipeline time of the multi-GPU Piranha report (section 3.3): micro-batch m enters stage i
 * after waiting a bubble B_m^i for stage i - 1 to deliver it (eqs. 2-4), so stage i finishes
 * its forward pass at F_i = sum_m B_m^i + M f_i, where f_i sums its layers' fwd; the backward
 * pass runs the stages in reverse order with bubbles likewise (eqs. 5-7), G_i = sum_m Bbar_m^i
 * + M g_i; the iteration takes T = max_i F_i + max_i G_i (eq. 1). Computed by that recursion;
 * it equals the closed form T = sum_l fwd_l + sum_l bwd_l + (M - 1) (max_i f_i + max_i g_i):
 * the fill/drain bubble is the sum of the stage times and the slowest stage sets the rate.
 * Returns T, or -1 for bad arguments (no layers, no micro-batch, a plan that does not cover the
 * layers exactly once in order).
 */
double veil_pipeline_time(const struct veil_layer_cost *layers, unsigned nlayers,
                          const struct veil_pipeline_plan *plan, unsigned micro_batches);

/**
 * Chooses contiguous layer groups for exactly ndevices stages (each >= 1 layer) that minimise
 * veil_pipeline_time subject to every stage's summed mem not exceeding device_mem (mem is what a
 * layer holds on its device for the whole mini-batch: weights, activations kept for the backward
 * pass, and preprocessing material). veil_partition_exhaustive tries every placement of the
 * ndevices - 1 cuts (refuses with VEIL_ERR_RANGE beyond 10^7 candidates); veil_partition_dp
 * solves the same problem by dynamic programming over (layers placed, stages used) keeping the
 * Pareto front of (forward bottleneck, backward bottleneck) pairs, since T depends on both
 * maxima. Both return a plan of minimal time (plans may differ when several tie). Returns VEIL_OK,
 * VEIL_ERR_INVAL (bad arguments, ndevices 0, > nlayers or > VEIL_PIPE_MAX_STAGES, negative
 * costs), VEIL_ERR_RANGE (no partition fits the memory), VEIL_ERR_NOMEM.
 */
int veil_partition_exhaustive(const struct veil_layer_cost *layers, unsigned nlayers,
                              unsigned ndevices, unsigned micro_batches, double device_mem,
                              struct veil_pipeline_plan *out);
int veil_partition_dp(const struct veil_layer_cost *layers, unsigned nlayers, unsigned ndevices,
                      unsigned micro_batches, double device_mem, struct veil_pipeline_plan *out);

/** How a matrix product C = A B is split over devices for tensor parallelism. */
enum veil_tp_split {
    VEIL_TP_ROWS,    /* split A's rows (and C's): each device has all of B, no reduction */
    VEIL_TP_COLUMNS, /* split B's columns (and C's): each device has all of A, no reduction */
    VEIL_TP_INNER,   /* split the inner dimension: partial C on each device, then a sum */
    VEIL_TP_COUNT
};

/** How an operand already lies across the devices. */
enum veil_tp_layout {
    VEIL_TP_REPLICATED,  /* every device has all of it */
    VEIL_TP_ROW_SHARDED, /* device d has a contiguous block of rows */
    VEIL_TP_COL_SHARDED, /* device d has a contiguous block of columns */
    VEIL_TP_LAYOUT_COUNT
};

/**
 * Chooses the split of C (m x n) = A (m x k) B (k x n) over ndevices that moves the fewest
 * elements, given how A and B already lie. ROWS needs A row-sharded and B whole on every device;
 * COLUMNS needs A whole and B column-sharded; INNER needs A column-sharded and B row-sharded,
 * then sums the partial products ((ndevices - 1) m n elements moved). Providing an operand of S
 * elements costs: 0 when it is replicated or already sharded as needed; (ndevices - 1) S when a
 * sharded operand must be whole everywhere; (ndevices - 1) S / ndevices when it is sharded along
 * the other dimension (all-to-all). Ties go to ROWS, then COLUMNS, then INNER; one device is
 * ROWS at cost 0. Stores the moved element count in *cost when not NULL. A pure function.
 */
enum veil_tp_split veil_tp_choose(size_t m, size_t k, size_t n, unsigned ndevices,
                                  enum veil_tp_layout a, enum veil_tp_layout b, double *cost);

/** "rows", "columns", "inner" (or "?"). */
const char *veil_tp_split_name(enum veil_tp_split s);

/* ---------------------------------------------------------------------------------------------
 * Worker thread priority (sched/worker_priority.c)
 * ------------------------------------------------------------------------------------------- */

/**
 * Sets the nice value of every StarPU worker thread of this process (CPU and accelerator driver
 * threads) to nice, 1..19; 0 leaves them as they are. Call after starpu_init, from a thread that
 * is not a worker (it waits for a task on each worker). On a host whose cores are shared by more
 * threads than it has, an idle worker's spinning then yields to the network threads at once.
 * Returns VEIL_OK, VEIL_ERR_INVAL (out of range) or VEIL_ERR_UNSUPPORTED (the OS refused).
 */
int veil_sched_worker_nice(int nice);

#endif /* VEIL_SCHED_INTERNAL_H */

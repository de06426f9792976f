/*
 * place.c — where the tasks of the calling thread run: the placement the protocol layer sets
 * before it submits a node's tasks (tasks/mpc.h, veil_mpc_set_placement), read by every submit
 * helper, which pins its task to a StarPU worker (STARPU_EXECUTE_ON_WORKER) or leaves the choice
 * to the scheduler. A placement never changes which tasks are submitted or what they compute,
 * only which worker runs them. Tiles carry their index in the handle's user data so that a
 * spread placement sends tile t to device t mod D; per-worker counters of pinned tasks let tests
 * check that the tasks ran where they were pinned.
 *
 * With no placement, a process that has CUDA workers and CPU workers runs every task whose output
 * is smaller than VEIL_PLACE_GPU_MIN_BYTES on a CPU worker (tile t on CPU worker t mod n): left
 * to the scheduler, lws handed the protocol's small elementwise and AND-gate tasks to the GPU,
 * where each one's launch and its data's trips over PCIe (every opened value goes through main
 * memory to the network) cost more than the work (LeNet-5 batch 1 on an H200: 120 ms per run
 * against 28 ms with no CUDA worker; bench/README-gpu.md). Large outputs stay the scheduler's to
 * place, and so do products of at least VEIL_PLACE_GPU_MIN_WORK (2^22) multiply-adds whatever
 * their output: the protocol tiles every output below 1 MiB, so by size alone no task reached
 * the GPU (the H200 runs of bench/README-gpu.md), while a product of 2^22 multiply-adds takes
 * milliseconds on a CPU core against microseconds of GPU time and PCIe transfer for its at most
 * a few MiB of operands. The threshold is reasoned, not yet measured on a GPU.
 */
#include "config.h"

#include "codelets/codelets_internal.h"

#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

static _Thread_local struct veil_place current; /* zero: no placement */
static atomic_ullong pinned[STARPU_NMAXWORKERS];

void veil_place_set(const struct veil_place *p)
{
    if (p && p->ndev > 0 && p->ndev <= VEIL_PLACE_MAX_DEV)
        current = *p;
    else
        memset(&current, 0, sizeof current);
}

const struct veil_place *veil_place_get(void)
{
    return &current;
}

void veil_place_tag(starpu_data_handle_t h, int tile)
{
    if (h)
        starpu_data_set_user_data(h, (void *)(intptr_t)(tile + 1));
}

int veil_place_tile_of(starpu_data_handle_t h)
{
    intptr_t v = h ? (intptr_t)starpu_data_get_user_data(h) : 0;
    return v > 0 ? (int)(v - 1) : 0;
}

int veil_place_small_on_cpu(size_t bytes, uint64_t work, int tile, int ncuda, const int *cpu_ids,
                            int ncpu)
{
    if (ncuda <= 0 || ncpu <= 0 || bytes >= VEIL_PLACE_GPU_MIN_BYTES ||
        work >= VEIL_PLACE_GPU_MIN_WORK)
        return -1;
    return cpu_ids[(tile < 0 ? 0 : tile) % ncpu];
}

/* The CPU worker a task writing out (a product of `work` multiply-adds, 0 for other tasks) runs
 * on under no placement, -1 for the scheduler's choice. */
static int auto_cpu(starpu_data_handle_t out, uint64_t work)
{
    if (!out || starpu_worker_get_count_by_type(STARPU_CUDA_WORKER) <= 0)
        return -1;
    int ids[STARPU_NMAXWORKERS];
    /* the array holds every worker: never -ERANGE */
    int n = starpu_worker_get_ids_by_type(STARPU_CPU_WORKER, ids, STARPU_NMAXWORKERS);
    return veil_place_small_on_cpu(starpu_data_get_size(out), work, veil_place_tile_of(out), 1,
                                   ids, n);
}

/* The device a task writing out goes to under the current placement, -1 for none. */
static int chosen(starpu_data_handle_t out)
{
    if (current.ndev <= 0)
        return -1;
    return current.dev[current.spread ? veil_place_tile_of(out) % current.ndev : 0];
}

/* Counts a task pinned to w and returns w. */
static int count_pinned(int w)
{
    if (w >= 0 && w < STARPU_NMAXWORKERS)
        atomic_fetch_add(&pinned[w], 1);
    return w;
}

int veil_place_worker_work(starpu_data_handle_t out, uint64_t work)
{
    const int w = chosen(out);
    return w >= 0 ? count_pinned(w) : auto_cpu(out, work);
}

int veil_place_worker(starpu_data_handle_t out)
{
    return veil_place_worker_work(out, 0);
}

unsigned long long veil_place_pinned(int worker)
{
    return worker >= 0 && worker < STARPU_NMAXWORKERS ? atomic_load(&pinned[worker]) : 0;
}

/* Whether cl has a body for worker w's architecture. */
static int has_body(const struct starpu_codelet *cl, int w)
{
    switch (starpu_worker_get_type(w)) {
    case STARPU_CPU_WORKER:
        return cl->cpu_funcs[0] != NULL;
    case STARPU_CUDA_WORKER:
        return cl->cuda_funcs[0] != NULL;
    case STARPU_OPENCL_WORKER:
        return cl->opencl_funcs[0] != NULL;
    default:
        return 0;
    }
}

void veil_place_pin_task(struct starpu_task *task, starpu_data_handle_t out)
{
    int w = chosen(out);
    /* A codelet with no body for the device's architecture (the material expansion, CPU-only:
     * OpenSSL's AES-CTR) is left to the scheduler, which runs it on a CPU worker; StarPU then
     * moves what it wrote to the device that reads it. */
    if (w >= 0 && task->cl && has_body(task->cl, w)) {
        task->workerid = (unsigned)count_pinned(w);
        task->execute_on_a_specific_worker = 1;
    } else if (w < 0 && task->cl && (w = auto_cpu(out, 0)) >= 0 && has_body(task->cl, w)) {
        task->workerid = (unsigned)w;
        task->execute_on_a_specific_worker = 1;
    }
}

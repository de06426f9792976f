/*
 * place.c — where the tasks of the calling thread run: the placement the protocol layer sets
 * before it submits a node's tasks (tasks/mpc.h, veil_mpc_set_placement), read by every submit
 * helper, which pins its task to a StarPU worker (STARPU_EXECUTE_ON_WORKER) or leaves the choice
 * to the scheduler. A placement never changes which tasks are submitted or what they compute,
 * only which worker runs them. Tiles carry their index in the handle's user data so that a
 * spread placement sends tile t to device t mod D; per-worker counters of pinned tasks let tests
 * check that the tasks ran where they were pinned.
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

int veil_place_worker(starpu_data_handle_t out)
{
    if (current.ndev <= 0)
        return -1;
    int w = current.dev[current.spread ? veil_place_tile_of(out) % current.ndev : 0];
    if (w >= 0 && w < STARPU_NMAXWORKERS)
        atomic_fetch_add(&pinned[w], 1);
    return w;
}

unsigned long long veil_place_pinned(int worker)
{
    return worker >= 0 && worker < STARPU_NMAXWORKERS ? atomic_load(&pinned[worker]) : 0;
}

void veil_place_pin_task(struct starpu_task *task, starpu_data_handle_t out)
{
    int w = veil_place_worker(out);
    if (w >= 0) {
        task->workerid = (unsigned)w;
        task->execute_on_a_specific_worker = 1;
    }
}

/*
 * tiles.c — registration of a contiguous tensor as separate per-tile StarPU handles, and their
 * release after last use (contract in tasks_internal.h).
 */
#include "config.h"
#include "base/base_internal.h"
#include "tasks/tasks_internal.h"

#include <string.h>

int veil_tiled_register(struct veil_tiled *t, uint64_t *data, size_t numel, size_t tile_elems)
{
    memset(t, 0, sizeof *t);
    if (!data || numel == 0 || tile_elems == 0)
        return veil_error(VEIL_ERR_INVAL, "tiles: need data, numel > 0 and tile size > 0 "
                                          "(got numel %zu, tile %zu)", numel, tile_elems);
    size_t ntiles = (numel + tile_elems - 1) / tile_elems;
    if (ntiles > INT32_MAX)
        return veil_error(VEIL_ERR_INVAL, "tiles: %zu tiles is too many; use larger tiles", ntiles);
    t->handles = calloc(ntiles, sizeof *t->handles);
    if (!t->handles)
        return veil_error(VEIL_ERR_NOMEM, "tiles: out of memory for %zu handles", ntiles);
    t->data = data;
    t->numel = numel;
    t->tile_elems = tile_elems;
    t->ntiles = (int)ntiles;
    for (int i = 0; i < t->ntiles; i++)
        starpu_vector_data_register(&t->handles[i], STARPU_MAIN_RAM,
                                    (uintptr_t)(data + (size_t)i * tile_elems),
                                    (uint32_t)veil_tiled_tile_numel(t, i), sizeof(uint64_t));
    return VEIL_OK;
}

size_t veil_tiled_tile_numel(const struct veil_tiled *t, int i)
{
    size_t start = (size_t)i * t->tile_elems;
    size_t left = t->numel - start;
    return left < t->tile_elems ? left : t->tile_elems;
}

void veil_tiled_release(struct veil_tiled *t)
{
    if (!t || !t->handles)
        return;
    for (int i = 0; i < t->ntiles; i++)
        starpu_data_unregister_submit(t->handles[i]);
    free(t->handles);
    memset(t, 0, sizeof *t);
}

void veil_tiled_unregister(struct veil_tiled *t)
{
    if (!t || !t->handles)
        return;
    for (int i = 0; i < t->ntiles; i++)
        starpu_data_unregister(t->handles[i]);
    free(t->handles);
    memset(t, 0, sizeof *t);
}

/*
 * tasks_internal.h — shared pieces of the protocol layer (internal). For now: tiled tensors.
 *
 * A tiled tensor is one contiguous buffer of ring words registered with StarPU as several
 * separate vector handles over disjoint ranges, one per tile. Separate handles (not StarPU
 * partitioning) let each tile carry its own task chain without a parent handle in between
 * (measured cheaper: see STARPU-NOTES.md). A temporary is released after its last use with
 * veil_tiled_release, which queues the unregistration behind the tasks already submitted, so the
 * submitting thread never waits.
 */
#ifndef VEIL_TASKS_INTERNAL_H
#define VEIL_TASKS_INTERNAL_H

#include <starpu.h>
#include <stddef.h>
#include <stdint.h>

struct veil_tiled {
    uint64_t *data;           /* borrowed: the caller keeps it alive until release completes */
    size_t numel;             /* words in the whole tensor */
    size_t tile_elems;        /* words per tile (the last tile may be shorter) */
    int ntiles;
    starpu_data_handle_t *handles; /* ntiles handles, tile t covers [t*tile_elems, ...) */
};

/**
 * Registers data[0, numel) as ceil(numel / tile_elems) vector handles in main RAM. numel and
 * tile_elems must be > 0. Returns VEIL_OK, or VEIL_ERR_INVAL / VEIL_ERR_NOMEM with a message.
 */
int veil_tiled_register(struct veil_tiled *t, uint64_t *data, size_t numel, size_t tile_elems);

/** Number of words in tile i. */
size_t veil_tiled_tile_numel(const struct veil_tiled *t, int i);

/**
 * Releases the handles without waiting: each is unregistered once the tasks submitted on it so
 * far have run (starpu_data_unregister_submit); the data is written back to t->data. The caller
 * must not submit new work on the handles. NULL-safe; leaves t empty.
 */
void veil_tiled_release(struct veil_tiled *t);

/** Unregisters the handles and waits until the data is back in t->data (for tests and ends). */
void veil_tiled_unregister(struct veil_tiled *t);

#endif

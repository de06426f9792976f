/* Tests tiled tensors: a buffer registered as separate per-tile handles runs an independent task
 * chain per tile, the release queued right after submission (without waiting) lets the chains
 * finish and writes the results back, tile sizes are right at the edges, and bad arguments are
 * errors. */
#include "config.h"
#include "tasks/tasks_internal.h"
#include "test_util.h"
#include "veil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void affine_cpu(void *buffers[], void *cl_arg)
{
    (void)cl_arg;
    uint64_t *x = (uint64_t *)STARPU_VECTOR_GET_PTR(buffers[0]);
    size_t n = STARPU_VECTOR_GET_NX(buffers[0]);
    for (size_t i = 0; i < n; i++)
        x[i] = 3 * x[i] + 1;
}

static struct starpu_codelet affine_cl = {
    .cpu_funcs = {affine_cpu}, .nbuffers = 1, .modes = {STARPU_RW}, .name = "test_affine"};

int main(void)
{
    int rc = veil_test_starpu_start();
    if (rc != 0)
        return rc;
    int fails = 0;
    const size_t n = 1000, tile = 64;
    uint64_t *x = malloc(n * 8), *want = malloc(n * 8);
    for (size_t i = 0; i < n; i++) {
        x[i] = i * 0x9e3779b97f4a7c15u;
        want[i] = 3 * (3 * (3 * x[i] + 1) + 1) + 1;
    }
    struct veil_tiled t;
    if (veil_tiled_register(&t, x, n, tile) != VEIL_OK || t.ntiles != 16) {
        fprintf(stderr, "FAIL: register: %s\n", veil_last_error());
        return 1;
    }
    if (veil_tiled_tile_numel(&t, 0) != 64 || veil_tiled_tile_numel(&t, 15) != 1000 - 15 * 64) {
        fprintf(stderr, "FAIL: tile sizes\n");
        fails++;
    }
    for (int rep = 0; rep < 3; rep++)
        for (int i = 0; i < t.ntiles; i++)
            if (starpu_task_insert(&affine_cl, STARPU_RW, t.handles[i], 0) != 0)
                fails++;
    veil_tiled_release(&t); /* queued behind the chains; returns at once */
    if (t.handles != NULL || t.ntiles != 0) {
        fprintf(stderr, "FAIL: release leaves the descriptor empty\n");
        fails++;
    }
    starpu_task_wait_for_all();
    if (memcmp(x, want, n * 8) != 0) {
        fprintf(stderr, "FAIL: results of the tile chains\n");
        fails++;
    }
    /* Bad arguments. */
    if (veil_tiled_register(&t, x, 0, 64) != VEIL_ERR_INVAL ||
        veil_tiled_register(&t, x, 10, 0) != VEIL_ERR_INVAL ||
        veil_tiled_register(&t, NULL, 10, 4) != VEIL_ERR_INVAL) {
        fprintf(stderr, "FAIL: bad arguments accepted\n");
        fails++;
    }
    veil_tiled_release(&t); /* empty: no-op */
    /* Blocking unregister path. */
    veil_tiled_register(&t, x, n, 1000);
    starpu_task_insert(&affine_cl, STARPU_RW, t.handles[0], 0);
    veil_tiled_unregister(&t);
    if (x[0] != 3 * want[0] + 1) {
        fprintf(stderr, "FAIL: unregister writes back\n");
        fails++;
    }
    veil_test_starpu_stop();
    free(x);
    free(want);
    return fails ? 1 : 0;
}

/*
 * marker.c — the marker codelet and its submit helper: a task that does nothing
 * (STARPU_NOWHERE: no body, never scheduled on a worker) and reads a set of handles, so that it
 * completes exactly when the last task writing any of them has. The executor's lookahead bound
 * (graph/secure/lookahead.c) waits on one per linear layer. No perf model: a task that runs nowhere has
 * no time to model.
 */
#include "config.h"

#include "codelets/codelets_internal.h"

#include "base/base_internal.h"
#include "net/idle.h"

#include <stdlib.h>

struct starpu_codelet veil_lookahead_marker_cl = {
    .where = STARPU_NOWHERE,
    .nbuffers = STARPU_VARIABLE_NBUFFERS,
    .name = "veil_lookahead_marker",
};

int veil_task_marker(const starpu_data_handle_t *h, int n, int priority, void (*done)(void *),
                     void *done_arg, struct starpu_task **out)
{
    *out = NULL;
    if (n <= 0 || !h)
        return veil_error(VEIL_ERR_INVAL, "marker: no handle to wait for");
    struct starpu_data_descr *d = calloc((size_t)n, sizeof *d);
    if (!d)
        return veil_error(VEIL_ERR_NOMEM, "marker: out of memory");
    for (int t = 0; t < n; t++)
        d[t] = (struct starpu_data_descr){.handle = h[t], .mode = STARPU_R};
    struct starpu_task *t =
        starpu_task_build(&veil_lookahead_marker_cl, STARPU_DATA_MODE_ARRAY, d, n, 0);
    free(d);
    if (!t)
        return veil_error(VEIL_ERR_STARPU, "marker: cannot build the task");
    t->detach = 0; /* the caller waits for it (starpu_task_wait) */
    t->priority = priority;
    t->callback_func = done;
    t->callback_arg = done_arg;
    if (starpu_task_submit(t) != 0) {
        starpu_task_destroy(t);
        return veil_error(VEIL_ERR_STARPU, "marker: cannot submit the task");
    }
    veil_net_idle_kick(); /* it may be ready: resume paused workers */
    *out = t;
    return VEIL_OK;
}

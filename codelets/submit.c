/*
 * submit.c — plumbing shared by Veil's codelets: the perf-model size base (element counts),
 * handle validation, and the submit path of the elementwise codelets, so every helper checks
 * its input the same way before anything reaches StarPU.
 */
#include "config.h"

#include "codelets/codelets_internal.h"

#include "base/base_internal.h"
#include "base/trace.h"
#include "net/idle.h"

#include <string.h>

size_t veil_codelet_size_base(struct starpu_task *task, unsigned nimpl)
{
    (void)nimpl;
    size_t total = 0;
    unsigned nbuf = STARPU_TASK_GET_NBUFFERS(task);
    for (unsigned i = 0; i < nbuf; i++)
        total += starpu_data_get_size(STARPU_TASK_GET_HANDLE(task, i)) / sizeof(uint64_t);
    return total;
}

int veil_codelet_check_vector(starpu_data_handle_t h, const char *what, size_t *n)
{
    if (h == NULL)
        return veil_error(VEIL_ERR_INVAL, "%s: data handle is NULL", what);
    if (starpu_data_get_interface_id(h) != STARPU_VECTOR_INTERFACE_ID)
        return veil_error(VEIL_ERR_INVAL, "%s: expected a starpu_vector handle", what);
    if (starpu_vector_get_elemsize(h) != sizeof(uint64_t))
        return veil_error(VEIL_ERR_INVAL, "%s: vector element size is %zu bytes, expected 8", what,
                          starpu_vector_get_elemsize(h));
    *n = starpu_vector_get_nx(h);
    if (*n == 0)
        return veil_error(VEIL_ERR_INVAL, "%s: vector is empty", what);
    return VEIL_OK;
}

int veil_codelet_submit_elementwise(struct starpu_codelet *cl, const char *name,
                                    starpu_data_handle_t a, starpu_data_handle_t b,
                                    starpu_data_handle_t out, int has_param, uint64_t param,
                                    int priority)
{
    size_t na, nb = 0, nout;
    int rc;
    char what[64];

    /* The codelet's arity decides whether b is an operand: a NULL b for a binary op is bad
     * input, not a request for the unary form. */
    if (cl->nbuffers == 3 && b == NULL)
        return veil_error(VEIL_ERR_INVAL, "%s: input b: data handle is NULL", name);
    if (cl->nbuffers != 3)
        b = NULL;
    snprintf(what, sizeof(what), "%s: input a", name);
    if ((rc = veil_codelet_check_vector(a, what, &na)) != VEIL_OK)
        return rc;
    if (b != NULL) {
        snprintf(what, sizeof(what), "%s: input b", name);
        if ((rc = veil_codelet_check_vector(b, what, &nb)) != VEIL_OK)
            return rc;
    }
    snprintf(what, sizeof(what), "%s: output", name);
    if ((rc = veil_codelet_check_vector(out, what, &nout)) != VEIL_OK)
        return rc;
    if (out == a || (b != NULL && out == b))
        return veil_error(VEIL_ERR_INVAL, "%s: the output handle must differ from the inputs",
                          name);
    if (b != NULL && nb != na)
        return veil_error(VEIL_ERR_SHAPE, "%s: inputs have %zu and %zu elements", name, na, nb);
    if (nout != na)
        return veil_error(VEIL_ERR_SHAPE, "%s: input has %zu elements, output %zu", name, na, nout);

    if (b != NULL && has_param)
        rc = starpu_task_insert(cl, STARPU_R, a, STARPU_R, b, STARPU_W, out, STARPU_VALUE, &param,
                                sizeof(param), STARPU_PRIORITY, priority, STARPU_EXECUTE_ON_WORKER,
                                veil_place_worker(out), VEIL_TRACE_TASK, 0);
    else if (b != NULL)
        rc = starpu_task_insert(cl, STARPU_R, a, STARPU_R, b, STARPU_W, out, STARPU_PRIORITY,
                                priority, STARPU_EXECUTE_ON_WORKER, veil_place_worker(out), VEIL_TRACE_TASK, 0);
    else if (has_param)
        rc = starpu_task_insert(cl, STARPU_R, a, STARPU_W, out, STARPU_VALUE, &param, sizeof(param),
                                STARPU_PRIORITY, priority, STARPU_EXECUTE_ON_WORKER,
                                veil_place_worker(out), VEIL_TRACE_TASK, 0);
    else
        rc = starpu_task_insert(cl, STARPU_R, a, STARPU_W, out, STARPU_PRIORITY, priority,
                                STARPU_EXECUTE_ON_WORKER, veil_place_worker(out), VEIL_TRACE_TASK, 0);
    veil_net_idle_kick(); /* it may be ready: resume paused workers */
    if (rc != 0)
        return veil_error(VEIL_ERR_STARPU, "%s: starpu_task_insert failed (%s)", name,
                          strerror(-rc));
    return VEIL_OK;
}

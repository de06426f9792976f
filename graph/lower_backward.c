/*
 * lower_backward.c — secure lowerings of the backward ops and the SGD update (see
 * graph_internal.h for their semantics and exec_internal.h for the lowering contract).
 * The training work fills the table; an op without an entry makes the run fail with a message
 * naming it.
 */
#include "config.h"

#include "graph/exec_internal.h"

veil_lower_fn veil_lower_backward(enum veil_op op)
{
    (void)op;
    return NULL;
}

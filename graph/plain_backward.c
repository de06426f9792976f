/*
 * plain_backward.c — plaintext evaluation of the backward ops and the SGD update (semantics in
 * graph_internal.h, executor contract in plain_internal.h). The training work fills the table;
 * an op without an entry makes the plaintext run fail with a message naming it.
 */
#include "config.h"

#include "graph/plain_internal.h"

veil_plain_fn veil_plain_backward(enum veil_op op)
{
    (void)op;
    return NULL;
}

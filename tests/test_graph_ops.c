/* Tests the op table (graph_internal.h's VEIL_OP_TABLE, graph/ops.c, graph/op_elementwise.c):
 * every op has a descriptor with a unique name and an arity within VEIL_NODE_MAX_IN; leaves and only leaves carry the leaf flag and
 * no stage function; every other op has both a plaintext evaluation and a secure lowering (the
 * two executors run the same ops); a gradient rule belongs to a forward op and one that emits the
 * descriptor's grad_op names a backward op; the cost fields are sane (passes > 0, a product only
 * on a linear-region op, operands read as one handle only among 0..1); an out-of-range op gets
 * the descriptor named "?" with no functions, which both executors refuse by name. */
#include "config.h"

#include "graph/graph_internal.h"
#include "test_util.h"

#include <string.h>

int main(void)
{
    for (int op = 0; op < VEIL_OP_COUNT; op++) {
        const struct veil_op_desc *d = veil_op_desc((enum veil_op)op);
        VT_CHECK(d && d->name && d->name[0], "op %d has a named descriptor", op);
        if (!d || !d->name)
            continue;
        VT_CHECK(veil_op_name((enum veil_op)op) == d->name, "%s: veil_op_name", d->name);
        for (int o = 0; o < op; o++)
            VT_CHECK(strcmp(veil_op_name((enum veil_op)o), d->name) != 0,
                     "ops %d and %d share the name %s", o, op, d->name);
        const int leaf = (d->flags & VEIL_OPF_LEAF) != 0;
        VT_CHECK(leaf == (op == VEIL_OP_INPUT || op == VEIL_OP_PARAM || op == VEIL_OP_CONST),
                 "%s: the leaf flag marks exactly input, param and constant", d->name);
        if (leaf)
            VT_CHECK(!d->plain && !d->lower && !d->grad, "%s: a leaf has no stage function",
                     d->name);
        else
            VT_CHECK(d->plain && d->lower, "%s: a plaintext evaluation and a secure lowering",
                     d->name);
        if (d->flags & VEIL_OPF_BACKWARD)
            VT_CHECK(!d->grad, "%s: a backward op has no gradient rule", d->name);
        if (d->grad == veil_grad_saved)
            VT_CHECK(veil_op_is(d->grad_op, VEIL_OPF_BACKWARD) && (int)d->grad_op != op,
                     "%s: its saved-state rule emits a backward op (%s)", d->name,
                     veil_op_name(d->grad_op));
        VT_CHECK(d->nin_min >= 0 && d->nin_min <= d->nin_max && d->nin_max <= VEIL_NODE_MAX_IN &&
                     (!leaf || d->nin_max == 0),
                 "%s: arity %d..%d", d->name, d->nin_min, d->nin_max);
        VT_CHECK(d->passes > 0, "%s: passes %g > 0", d->name, d->passes);
        VT_CHECK(d->region >= 0 && d->region < VEIL_REGION_COUNT, "%s: region %d", d->name,
                 d->region);
        VT_CHECK(d->product == VEIL_PRODUCT_NONE || d->region == VEIL_REGION_LINEAR,
                 "%s: a product only on a linear op", d->name);
        VT_CHECK((d->matrix_in & ~3u) == 0, "%s: matrix operands among 0..1", d->name);
    }
    const struct veil_op_desc *u = veil_op_desc(VEIL_OP_COUNT);
    VT_CHECK(u && strcmp(u->name, "?") == 0 && !u->plain && !u->lower && !u->grad && !u->flags,
             "an out-of-range op: the descriptor named '?' with no functions");
    VT_CHECK(strcmp(veil_op_name((enum veil_op)-1), "?") == 0, "op -1 is named '?'");
    return veil_test_status();
}

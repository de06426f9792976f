/*
 * mpc_allocs.c — the log of a run's tensor buffers as a RECORDER sees them: at every call where a
 * computing party would allocate a share buffer (veil_sec_init and its kin, the parts of a
 * material item, a weight's mask, a convolution's im2col buffers), a recorder that was asked to
 * (veil_mpc_log_allocs) notes the buffer's size in bytes. veil_party_prepare walks the first run
 * so and reserves those buffers in the buffer pool (base/secmem.c), so that the run does not
 * fault in its working set.
 * A prediction: buffers that only one party allocates (an input's owner's shares for its peers,
 * the designated party's correction from the dealer, party 0's D E of a product) are left out;
 * an unsplit product's result, which a party takes over from its material, is counted as well;
 * a buffer the run reuses within itself is counted at each use.
 */
#include "config.h"
#include "base/base_internal.h"
#include "tasks/mpc_internal.h"

#include <stdlib.h>

int veil_mpc_log_allocs(veil_mpc_t *m, int on)
{
    if (!m || m->opt.role != VEIL_MPC_RECORDER)
        return veil_error(VEIL_ERR_INVAL, "veil_mpc_log_allocs: not a recorder");
    m->allocs_on = on != 0;
    return VEIL_OK;
}

const size_t *veil_mpc_allocs(const veil_mpc_t *m, size_t *n)
{
    *n = m->allocs_complete ? m->nallocs : 0;
    return m->allocs_complete ? m->allocs : NULL;
}

void veil_mpc_note_alloc(veil_mpc_t *m, size_t numel)
{
    if (!m->allocs_on || numel == 0)
        return;
    if (m->nallocs == m->allocs_cap) {
        const size_t cap = m->allocs_cap ? 2 * m->allocs_cap : 256;
        size_t *a = realloc(m->allocs, cap * sizeof *a);
        if (!a) { /* a log with holes would mislead: give none */
            m->allocs_on = 0;
            m->allocs_complete = 0;
            return;
        }
        m->allocs = a;
        m->allocs_cap = cap;
    }
    m->allocs[m->nallocs++] = numel * 8;
}

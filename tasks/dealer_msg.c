/*
 * dealer_msg.c — the run acknowledgements from the designated party to the dealer that pace
 * the dealer's material (contract in dealer_msg.h): one word each, session tags disjoint from
 * the protocols'.
 */
#include "config.h"
#include "tasks/dealer_msg.h"
#include "tasks/mpc_internal.h"

int veil_mpc_ack_send(veil_mpc_t *m, starpu_data_handle_t h, uint64_t run)
{
    return veil_net_isend(m->net, h, m->nparties, VEIL_MPC_TAG_SESSION | run);
}

int veil_mpc_ack_recv(veil_mpc_t *m, starpu_data_handle_t h, uint64_t run)
{
    return veil_net_irecv(m->net, h, m->nparties - 1, VEIL_MPC_TAG_SESSION | run);
}

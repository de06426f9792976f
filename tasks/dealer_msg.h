/*
 * dealer_msg.h — the session-level messages between the parties and the dealer that sit above
 * the protocols: the designated party's (N-1) acknowledgement of each run, which paces the
 * dealer (graph/secure/party_run.c's FLOW CONTROL). They go through the protocol context like every
 * other message, so the session layer reaches the network only through tasks/. Never installed.
 */
#ifndef VEIL_TASKS_DEALER_MSG_H
#define VEIL_TASKS_DEALER_MSG_H

#include "tasks/mpc.h"

/**
 * The designated party (N-1): sends the dealer the acknowledgement of run `run`, the one word
 * registered in h (its value is not used), tag VEIL_MPC_TAG_SESSION | run. Detached: the
 * next barrier (veil_mpc_wait) sees it through. Returns the net's status.
 */
int veil_mpc_ack_send(veil_mpc_t *m, starpu_data_handle_t h, uint64_t run);

/**
 * The dealer: posts the receive of run `run`'s acknowledgement from the designated party into
 * h (one word); veil_mpc_wait waits for it. Returns the net's status.
 */
int veil_mpc_ack_recv(veil_mpc_t *m, starpu_data_handle_t h, uint64_t run);

#endif

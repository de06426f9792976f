/*
 * config_env.h — a party's session configuration from the environment the launcher (veil-run)
 * and the harness give each process. Internal; used by programs started under veil-run.
 */
#ifndef VEIL_NET_CONFIG_ENV_H
#define VEIL_NET_CONFIG_ENV_H

#include "net/net_config.h"

/**
 * Fills cfg from the environment: identity, endpoints, session and listening socket from the
 * harness variables (veil_harness_party_from_env), then
 *   VEIL_KEY_DIR              directory holding p<ID>.key (this process's key pair, mode 0600)
 *                             and p<ID>.pub for every process (parties 0..N-1, dealer N)
 *   VEIL_INSECURE_PLAINTEXT=1 no CURVE (then VEIL_KEY_DIR may be absent); any other value is
 *                             an error
 *   VEIL_LINK                 link emulation "LATENCY,BANDWIDTH" (veil_link_parse)
 *   VEIL_NET_TIMEOUT          peer silence timeout in seconds (> 0)
 * Returns VEIL_OK, or VEIL_ERR_INVAL / VEIL_ERR_IO / VEIL_ERR_AUTH naming the variable or file
 * at fault. The plan digest is left zero (the caller sets it). Reads the variables through
 * base/env.c (veil_env_net); not thread-safe against a concurrent setenv.
 */
int veil_net_config_from_env(struct veil_net_config *cfg);

#endif

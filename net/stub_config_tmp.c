/* stub_config_tmp.c — TEMPORARY stand-in for netaux's config.c/keys.c until it is merged. */
#include "config.h"
#include "base/base_internal.h"
#include "net/config.h"

#include <string.h>
#include <zmq.h>

void veil_net_config_defaults(struct veil_net_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->heartbeat_s = 0.5;
    cfg->timeout_s = 10;
}

int veil_net_config_load(const char *path, struct veil_net_config *cfg)
{
    (void)path;
    (void)cfg;
    return veil_error(VEIL_ERR_UNSUPPORTED, "config loading not merged yet");
}

int veil_net_config_nprocs(const struct veil_net_config *cfg)
{
    return cfg->nparties + (cfg->has_dealer ? 1 : 0);
}

int veil_curve_keypair(char public_key[VEIL_Z85_KEY_CHARS + 1],
                       char secret_key[VEIL_Z85_KEY_CHARS + 1])
{
    return zmq_curve_keypair(public_key, secret_key) == 0 ? VEIL_OK : VEIL_ERR_CRYPTO;
}

/*
 * config_env.c — builds a party's net configuration from the VEIL_* environment set by the
 * harness and the veil-run launcher (key directory, link emulation, timeout, plaintext switch):
 * base/env.c reads the variables, this file reads the key files they name and fills the
 * configuration.
 */
#include "config.h"
#include "net/config_env.h"
#include "base/base_internal.h"
#include "base/env.h"
#include "base/harness.h"
#include "net/net_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int veil_net_config_from_env(struct veil_net_config *cfg)
{
    struct veil_harness_party me;
    char pub[VEIL_NET_MAX_PROCS][VEIL_Z85_KEY_CHARS + 1];
    char sec[VEIL_Z85_KEY_CHARS + 1] = "";
    char mine[VEIL_Z85_KEY_CHARS + 1];
    int rc = VEIL_OK;
    if (!cfg)
        return veil_error(VEIL_ERR_INVAL, "veil_net_config_from_env: NULL argument");
    if ((rc = veil_harness_party_from_env(&me)) != VEIL_OK)
        return rc;
    int nprocs = me.nparties + (me.has_dealer ? 1 : 0);
    if (nprocs > VEIL_NET_MAX_PROCS)
        return veil_error(VEIL_ERR_INVAL, "VEIL_NPARTIES: %d processes, at most %d", nprocs,
                          VEIL_NET_MAX_PROCS);
    struct veil_env_net env;
    if ((rc = veil_env_net(&env)) != VEIL_OK)
        return rc;
    const int insecure = env.insecure;
    const char *dir = env.key_dir;
    if (!insecure) {
        if (!dir)
            return veil_error(VEIL_ERR_INVAL, "VEIL_KEY_DIR is not set: start the parties with "
                              "veil-run, or set VEIL_INSECURE_PLAINTEXT=1 (debugging only)");
        char path[4096];
        for (int p = 0; p < nprocs; p++) {
            if (snprintf(path, sizeof path, "%s/p%d.pub", dir, p) >= (int)sizeof path)
                return veil_error(VEIL_ERR_INVAL, "VEIL_KEY_DIR is too long");
            if ((rc = veil_curve_read_key_file(path, pub[p], NULL)) != VEIL_OK)
                return rc;
        }
        snprintf(path, sizeof path, "%s/p%d.key", dir, me.id);
        if ((rc = veil_curve_read_key_file(path, mine, sec)) != VEIL_OK)
            goto done;
        if (strcmp(mine, pub[me.id]) != 0) {
            rc = veil_error(VEIL_ERR_AUTH, "%s does not match p%d.pub in %s", path, me.id, dir);
            goto done;
        }
    }
    const char(*keys)[VEIL_Z85_KEY_CHARS + 1] = insecure ? NULL : (const void *)pub;
    rc = veil_net_config_from_harness(&me, keys, insecure ? NULL : sec, cfg);
    if (rc)
        goto done;
    cfg->insecure_plaintext = insecure;
    if (env.link && (rc = veil_link_parse(env.link, &cfg->link)) != VEIL_OK)
        goto done;
    if (env.timeout_s > 0)
        cfg->timeout_s = env.timeout_s;
done:
    veil_wipe(sec, sizeof sec);
    if (rc)
        veil_wipe(cfg->secret_key, sizeof cfg->secret_key);
    return rc;
}

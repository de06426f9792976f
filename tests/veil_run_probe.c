/*
 * veil_run_probe.c — a tiny program for test_tools_veil_run.sh, run under veil-run: it opens
 * the session from the environment (veil_net_config_from_env + veil_net_open, CURVE keys from
 * VEIL_KEY_DIR), sends one 16-byte message to every other process and checks the one it gets
 * from each, then prints "probe ID/NPROCS ok" and exits 0. After the open it prints
 * "probe ID dumpable D" (prctl(PR_GET_DUMPABLE): 0 unless VEIL_ALLOW_CORE_DUMPS=1).
 *   veil_run_probe exit CODE ID   the process with id ID exits CODE at once (others proceed)
 *   veil_run_probe env            prints VEIL_KEY_DIR, VEIL_LINK and the link it parsed
 *   veil_run_probe late SECONDS   the parties (not the dealer) wait SECONDS after the exchange
 *                                 before closing, so the dealer's close waits for their goodbyes
 *                                 longer than a short VEIL_NET_TIMEOUT
 */
#include "config.h"
#include "base/base_internal.h"
#include "net/config_env.h"
#include "net/net_internal.h"

#include <starpu.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

static uint64_t word(int from, int to, const uint8_t *session)
{
    return 0x5645494c00000000ull ^ (uint64_t)from << 16 ^ (uint64_t)to ^ (uint64_t)session[0] << 40;
}

int main(int argc, char **argv)
{
    struct veil_net_config cfg;
    const char *id_text = getenv("VEIL_PARTY_ID");
    int id = id_text ? atoi(id_text) : -1;
    if (argc == 4 && !strcmp(argv[1], "exit") && id == atoi(argv[3])) {
        printf("probe %d exits %s\n", id, argv[2]);
        return atoi(argv[2]);
    }
    if (veil_net_config_from_env(&cfg) != VEIL_OK) {
        fprintf(stderr, "probe: %s\n", veil_last_error());
        return 10;
    }
    if (argc == 2 && !strcmp(argv[1], "env")) {
        const char *dir = getenv("VEIL_KEY_DIR");
        printf("probe %d keydir %s link %s latency %.6f plaintext %d\n", id, dir ? dir : "-",
               getenv("VEIL_LINK") ? getenv("VEIL_LINK") : "-", cfg.link.latency_s,
               cfg.insecure_plaintext);
        return 0;
    }
    if (starpu_init(NULL) != 0) {
        fprintf(stderr, "probe: starpu_init failed\n");
        return 11;
    }
    veil_net_t *net = NULL;
    int bad = 0, nprocs = veil_net_config_nprocs(&cfg);
    if (veil_net_open(&cfg, NULL, &net) != VEIL_OK) {
        fprintf(stderr, "probe %d: open failed: %s\n", cfg.self, veil_last_error());
        starpu_shutdown();
        return 12;
    }
    printf("probe %d dumpable %d\n", cfg.self, prctl(PR_GET_DUMPABLE, 0, 0, 0, 0));
    static uint64_t out[VEIL_NET_MAX_PROCS][2], in[VEIL_NET_MAX_PROCS][2];
    starpu_data_handle_t ho[VEIL_NET_MAX_PROCS], hi[VEIL_NET_MAX_PROCS];
    for (int p = 0; p < nprocs; p++) {
        if (p == cfg.self)
            continue;
        out[p][0] = word(cfg.self, p, cfg.session);
        out[p][1] = ~out[p][0];
        starpu_vector_data_register(&ho[p], STARPU_MAIN_RAM, (uintptr_t)out[p], 2, 8);
        starpu_vector_data_register(&hi[p], STARPU_MAIN_RAM, (uintptr_t)in[p], 2, 8);
        if (veil_net_irecv(net, hi[p], p, 1) || veil_net_isend(net, ho[p], p, 1)) {
            fprintf(stderr, "probe %d: post: %s\n", cfg.self, veil_last_error());
            bad = 1;
        }
    }
    if (veil_net_wait_all(net) != VEIL_OK) {
        fprintf(stderr, "probe %d: wait_all: %s\n", cfg.self, veil_last_error());
        bad = 1;
    }
    for (int p = 0; p < nprocs; p++) {
        if (p == cfg.self)
            continue;
        starpu_data_unregister(ho[p]);
        starpu_data_unregister(hi[p]);
        uint64_t want = word(p, cfg.self, cfg.session);
        if (in[p][0] != want || in[p][1] != ~want) {
            fprintf(stderr, "probe %d: message from %d is wrong\n", cfg.self, p);
            bad = 1;
        }
    }
    if (argc == 3 && !strcmp(argv[1], "late") && !(cfg.has_dealer && cfg.self == cfg.nparties))
        usleep((useconds_t)(atof(argv[2]) * 1e6));
    if (veil_net_close(&net) != VEIL_OK) {
        fprintf(stderr, "probe %d: close: %s\n", cfg.self, veil_last_error());
        bad = 1;
    }
    starpu_shutdown();
    if (!bad)
        printf("probe %d/%d ok\n", cfg.self, nprocs);
    return bad;
}

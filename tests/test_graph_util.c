/*
 * test_graph_util.c — multi-process runs of the secure executor for tests (see
 * test_graph_util.h): keys in a private directory, the harness's fork mode, outputs on failure.
 */
#include "config.h"
#include "test_graph_util.h"

#include "base/base_internal.h"
#include "net/net_config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void remove_keys(const char *dir, int nprocs)
{
    char path[256];
    for (int p = 0; p < nprocs; p++) {
        snprintf(path, sizeof path, "%s/p%d.key", dir, p);
        unlink(path);
        snprintf(path, sizeof path, "%s/p%d.pub", dir, p);
        unlink(path);
    }
    rmdir(dir);
}

int veil_test_graph_run(const struct veil_test_graph_opts *o, veil_harness_fn fn, void *arg,
                        struct veil_harness_result *results)
{
    const int nprocs = o->nparties + (o->dealer ? 1 : 0);
    char dir[] = "/tmp/veil-test-keys-XXXXXX";
    if (!mkdtemp(dir)) {
        fprintf(stderr, "FAIL: mkdtemp for the keys\n");
        return VEIL_ERR_IO;
    }
    int rc = VEIL_OK;
    for (int p = 0; p < nprocs && rc == VEIL_OK; p++) {
        char pub[VEIL_Z85_KEY_CHARS + 1], sec[VEIL_Z85_KEY_CHARS + 1], path[256];
        snprintf(path, sizeof path, "%s/p%d.key", dir, p);
        rc = veil_curve_keypair(pub, sec);
        if (rc == VEIL_OK)
            rc = veil_curve_write_key_file(path, pub, sec);
    }
    if (rc != VEIL_OK) {
        fprintf(stderr, "FAIL: keys: %s\n", veil_last_error());
        remove_keys(dir, nprocs);
        return rc;
    }
    char env_dir[64];
    snprintf(env_dir, sizeof env_dir, "VEIL_KEY_DIR=%s", dir);
    const char *env[] = {env_dir, NULL};
    struct veil_harness_opts h;
    memset(&h, 0, sizeof h);
    h.nparties = o->nparties;
    h.dealer = o->dealer;
    h.timeout_s = o->timeout_s > 0 ? o->timeout_s : 120;
    h.grace_s = 15;
    h.sched = o->sched;
    h.extra_env = env;
    h.session = o->session;
    struct veil_harness_result local[VEIL_HARNESS_MAX_PROCS];
    struct veil_harness_result *res = results ? results : local;
    memset(res, 0, sizeof *res * (size_t)nprocs);
    rc = veil_harness_run(&h, fn, arg, res);
    if (rc != VEIL_OK && !o->expect_fail) {
        fprintf(stderr, "FAIL: N=%d%s sched=%s: %s\n", o->nparties, o->dealer ? " dealer" : "",
                o->sched ? o->sched : "lws", veil_last_error());
        for (int p = 0; p < nprocs; p++)
            fprintf(stderr, "---- process %d (exit %d):\n%s", p, res[p].exit_code,
                    res[p].output ? res[p].output : "");
    }
    if (!results)
        veil_harness_results_free(res, nprocs);
    remove_keys(dir, nprocs);
    return rc;
}

int veil_test_graph_step_child(const struct veil_harness_party *me, void *arg)
{
    const struct veil_test_graph_step *st = arg;
    veil_party_t *pt = veil_party_open(st->plan, NULL);
    if (!pt) {
        fprintf(stderr, "process %d: open: %s\n", me->id, veil_last_error());
        return 3;
    }
    int code = 0;
    if (st->train) {
        if (veil_train_step(pt, st->feeds, st->nfeeds) != VEIL_OK ||
            veil_party_reveal_param(pt, st->param, VEIL_ALL_PARTIES,
                                    st->w + (size_t)me->id * st->w_stride) != VEIL_OK) {
            fprintf(stderr, "process %d: step: %s\n", me->id, veil_last_error());
            code = 4;
        }
    } else {
        double *outs[1] = {st->y + (size_t)me->id * st->y_stride};
        if (veil_run(pt, st->feeds, st->nfeeds, outs) != VEIL_OK) {
            fprintf(stderr, "process %d: run: %s\n", me->id, veil_last_error());
            code = 4;
        }
        veil_party_last_stats(pt, &st->stats[me->id]);
    }
    if (veil_party_close(&pt) != VEIL_OK && code == 0)
        code = 5;
    return code;
}

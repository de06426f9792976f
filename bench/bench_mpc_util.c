/*
 * bench_mpc_util.c — the timed-call measurement, input sharing and run set-up shared by the
 * protocol benchmarks (see bench_mpc_util.h).
 */
#include "config.h"
#include "bench/bench_mpc_util.h"
#include "base/base_internal.h"

#include <stdio.h>
#include <stdlib.h>

static int report(veil_mpc_t *m, int rc)
{
    if (rc != VEIL_OK)
        fprintf(stderr, "process %d: %s\n", veil_mpc_self(m), veil_last_error());
    return rc;
}

int bench_time_call(veil_mpc_t *m, bench_call_fn fn, void *arg, struct bench_cost *out)
{
    int rc = veil_mpc_wait(m);
    /* a barrier: every process starts the call within a message latency of the others, so a
     * peer that ran ahead cannot have sent its part before party 0's clock starts */
    if (rc == VEIL_OK)
        rc = veil_mpc_agree(m, 0, "bench start");
    if (rc == VEIL_OK)
        rc = veil_mpc_wait(m);
    if (rc != VEIL_OK)
        return report(m, rc);
    struct veil_test_mpc_counters c0, c1;
    veil_test_mpc_counters(m, &c0);
    const double t0 = veil_now();
    rc = fn(m, arg);
    /* wait even after a submission error: the tasks already submitted must drain */
    const int wrc = veil_mpc_wait(m);
    const double t1 = veil_now();
    veil_test_mpc_counters(m, &c1);
    out->secs = t1 - t0;
    out->bytes = c1.bytes - c0.bytes;
    out->rounds = c1.rounds - c0.rounds;
    return report(m, rc != VEIL_OK ? rc : wrc);
}

int bench_share(veil_mpc_t *m, int owner, bench_gen_fn gen, const void *arg, int ndim,
                const size_t *dims, size_t tile, struct veil_sec *x)
{
    size_t numel = 1;
    for (int d = 0; d < ndim; d++)
        numel *= dims[d];
    uint64_t *v = NULL;
    if (veil_mpc_self(m) == owner) {
        if (!(v = malloc(numel * sizeof *v)))
            return report(m, veil_error(VEIL_ERR_NOMEM, "bench: %zu input words", numel));
        for (size_t i = 0; i < numel; i++)
            v[i] = gen(i, arg);
    }
    int rc = veil_mpc_share_input(m, owner, v, ndim, dims, tile, x);
    free(v); /* read at the call */
    if (rc == VEIL_OK)
        rc = veil_mpc_wait(m);
    return report(m, rc);
}

int bench_run(int nparties, size_t tile, double timeout_s, veil_test_mpc_fn body, void *arg)
{
    const struct veil_test_mpc_opts o = {.nparties = nparties,
                                         .material = VEIL_MPC_MAT_DEALER,
                                         .tile = tile,
                                         .frac_bits = -1,
                                         .timeout_s = timeout_s};
    return veil_test_mpc_run(&o, body, arg);
}

size_t bench_pow10(int e)
{
    size_t n = 1;
    while (e-- > 0)
        n *= 10;
    return n;
}

void bench_keep_best(struct bench_cost *best, const struct bench_cost *s)
{
    if (best->secs <= 0 || s->secs < best->secs)
        *best = *s;
}

/* Tests a share / compute / reconstruct round trip across 2 and 3 real party processes started by
 * the harness: the secret is split in the parent (seeded layout: parties 0..N-2 expand their share
 * from a seed, party N-1 receives only the correction), each party runs a StarPU task computing
 * the local linear map y = a*x + c (c added by party 0 only) on its share with Veil's codelets,
 * and the parent
 * reconstructs the parties' printed results and compares with the plaintext answer. */
#include "config.h"
#include "base/harness.h"
#include "codelets/codelets_internal.h"
#include "veil.h"

#include <inttypes.h>
#include <starpu.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N_ELEMS 1000
static const uint64_t A = 0x9e3779b97f4a7c15u, C = 12345;

struct run {
    uint8_t seeds[3][VEIL_SEED_BYTES];
    veil_share_t *last_share; /* the correction, handed to party N-1 (the dealer's message) */
};

static int party_main(const struct veil_harness_party *me, void *arg)
{
    struct run *r = arg;
    const size_t dims[1] = {N_ELEMS};
    veil_share_t *x = veil_share_new(VEIL_SHARE_ARITH, 1, dims);
    if (!x)
        return 2;
    if (me->id < me->nparties - 1) {
        if (veil_share_expand(x, r->seeds[me->id], 0) != VEIL_OK)
            return 2;
    } else {
        memcpy(veil_share_data(x), veil_share_cdata(r->last_share), N_ELEMS * 8);
    }
    if (starpu_init(NULL) != 0)
        return 3;
    veil_share_t *ax = veil_share_new(VEIL_SHARE_ARITH, 1, dims);
    veil_share_t *y = veil_share_new(VEIL_SHARE_ARITH, 1, dims);
    starpu_data_handle_t hx, hax, hy;
    starpu_vector_data_register(&hx, STARPU_MAIN_RAM, (uintptr_t)veil_share_data(x), N_ELEMS, 8);
    starpu_vector_data_register(&hax, STARPU_MAIN_RAM, (uintptr_t)veil_share_data(ax), N_ELEMS, 8);
    starpu_vector_data_register(&hy, STARPU_MAIN_RAM, (uintptr_t)veil_share_data(y), N_ELEMS, 8);
    /* Public constants are added by one party only; multiplication applies to every share. */
    int rc = veil_task_mul_scalar(hx, A, hax, 0);
    if (rc == VEIL_OK)
        rc = veil_task_add_scalar(hax, me->id == 0 ? C : 0, hy, 0);
    starpu_task_wait_for_all();
    starpu_data_unregister(hx);
    starpu_data_unregister(hax);
    starpu_data_unregister(hy);
    starpu_shutdown();
    if (rc != VEIL_OK) {
        fprintf(stderr, "submit: %s\n", veil_last_error());
        return 4;
    }
    for (size_t i = 0; i < N_ELEMS; i++)
        printf("%016" PRIx64 "\n", veil_share_cdata(y)[i]);
    veil_share_destroy(&x);
    veil_share_destroy(&ax);
    veil_share_destroy(&y);
    return 0;
}

static int round_trip(int nparties)
{
    struct run r;
    uint64_t secret[N_ELEMS], back[N_ELEMS];
    const size_t dims[1] = {N_ELEMS};
    veil_share_t *split[3];
    uint8_t master[VEIL_SEED_BYTES];
    veil_seed_random(master);
    veil_prg_t *g = veil_prg_new(master);
    veil_prg_fill(g, secret, N_ELEMS);
    veil_prg_destroy(&g);
    secret[0] = 0;
    secret[1] = UINT64_MAX;
    secret[2] = (uint64_t)1 << 63;
    for (int p = 0; p < nparties; p++)
        veil_seed_random(r.seeds[p]);
    if (veil_share_split(secret, VEIL_SHARE_ARITH, 1, dims, nparties,
                         (const uint8_t(*)[VEIL_SEED_BYTES])r.seeds, 0, split) != VEIL_OK)
        return 1;
    r.last_share = split[nparties - 1];

    struct veil_harness_result res[3];
    struct veil_harness_opts o = {.nparties = nparties, .timeout_s = 60, .grace_s = 5};
    int rc = veil_harness_run(&o, party_main, &r, res);
    int ok = rc == VEIL_OK;
    if (!ok)
        fprintf(stderr, "FAIL: %d parties: %s\n", nparties, veil_last_error());
    /* Parse each party's result share and reconstruct. */
    veil_share_t *ys[3] = {NULL, NULL, NULL};
    for (int p = 0; ok && p < nparties; p++) {
        ys[p] = veil_share_new(VEIL_SHARE_ARITH, 1, dims);
        const char *s = res[p].output;
        for (size_t i = 0; ok && i < N_ELEMS; i++) {
            char *end;
            veil_share_data(ys[p])[i] = strtoull(s, &end, 16);
            if (end == s || *end != '\n') {
                fprintf(stderr, "FAIL: party %d output unreadable at element %zu\n", p, i);
                ok = 0;
            }
            s = end + 1;
        }
    }
    if (ok) {
        veil_share_reconstruct((const veil_share_t *const *)ys, nparties, back);
        for (size_t i = 0; i < N_ELEMS; i++)
            if (back[i] != A * secret[i] + C) {
                fprintf(stderr, "FAIL: %d parties: element %zu wrong\n", nparties, i);
                ok = 0;
                break;
            }
    }
    for (int p = 0; p < nparties; p++) {
        veil_share_destroy(&ys[p]);
        veil_share_destroy(&split[p]);
    }
    veil_harness_results_free(res, nparties);
    return ok ? 0 : 1;
}

int main(void)
{
    int fails = round_trip(2);
    fails += round_trip(3);
    return fails ? 1 : 0;
}

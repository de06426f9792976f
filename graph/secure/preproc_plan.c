/*
 * preproc_plan.c — a plan's correlated randomness: what one run consumes (veil_plan_preproc), and
 * the offline phase for a compiled plan: every party's preprocessing file for R
 * runs of a session, so that the parties then run without a dealer (VEIL_MATERIAL_FILE) and an
 * online figure is the online phase alone. The items are those a RECORDER context requests when
 * it walks the plan R times over one executor state, exactly as a session's runs do (parameters
 * shared at the first run; with weight-stationary preprocessing, the weight masks once), and the
 * files are bound to the session id, the party count and the plan digest, which the parties'
 * readers check (tasks/preproc_read.c). Whoever runs this learns every party's material: it is
 * the dealer's role, played ahead of time. A recorder's walk also gives the share buffers the first
 * run after veil_party_prepare allocates (veil_plan_run_buffers), which prepare reserves.
 */
#include "config.h"

#include "base/base_internal.h"
#include "graph/secure/exec_internal.h"
#include "tasks/preproc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* path_fmt must hold exactly one "%d" (the party id) and no other '%'. */
static int check_format(const char *fmt)
{
    int count = 0;
    for (const char *s = fmt; *s; s++)
        if (*s == '%') {
            if (s[1] != 'd')
                return veil_error(VEIL_ERR_INVAL, "veil_plan_preproc_files: path '%s': only one "
                                  "%%d (the party id) may follow a %% sign", fmt);
            count++;
        }
    if (count != 1)
        return veil_error(VEIL_ERR_INVAL, "veil_plan_preproc_files: path '%s' must hold one %%d "
                          "(the party id), e.g. /tmp/lenet-%%d.pre", fmt);
    return VEIL_OK;
}

/* Records the items `runs` runs of p request (a RECORDER walking p over one executor state, as a
 * session's runs do) into *rec and *x (the caller finishes and destroys both); *list and *n
 * receive the items, *words their correction words. VEIL_OK or the error. */
static int recorder(const veil_plan_t *p, int nparties, veil_mpc_t **rec, struct veil_exec *x)
{
    struct veil_mpc_options mo;
    veil_mpc_options_defaults(&mo);
    mo.role = VEIL_MPC_RECORDER;
    mo.frac_bits = p->opts.frac_bits;
    memset(x, 0, sizeof *x);
    if (!(*rec = veil_mpc_new_recorder(nparties, &mo)))
        return veil_last_error()[0] ? VEIL_ERR_INVAL : VEIL_ERR_NOMEM;
    return veil_exec_init(x, p, *rec);
}

/* Run r (from 0) of a session, walked by the recorder x. */
static int walk_run(const veil_plan_t *p, struct veil_exec *x, int r)
{
    /* run r of a training session is its step r + 1 (weight averaging's schedule) */
    x->average = veil_plan_average_due(p, (uint64_t)r + 1);
    x->step = (uint64_t)r + 1;
    return veil_exec_walk(x, p->opts.training ? p->count : p->nforward, NULL, NULL);
}

static int record(const veil_plan_t *p, int nparties, int runs, veil_mpc_t **rec,
                  struct veil_exec *x, const struct veil_preproc_item **list, size_t *n,
                  uint64_t *words)
{
    int rc = recorder(p, nparties, rec, x);
    for (int r = 0; r < runs && rc == VEIL_OK; r++)
        rc = walk_run(p, x, r);
    *list = veil_mpc_items(*rec, n);
    return rc == VEIL_OK ? veil_preproc_items_size(*list, *n, words, NULL, NULL) : rc;
}

int veil_plan_run_buffers(const veil_plan_t *p, int nparties, size_t **bytes, size_t *n)
{
    *bytes = NULL;
    *n = 0;
    veil_mpc_t *rec = NULL;
    struct veil_exec x;
    /* what veil_party_prepare does before run 0 (the parameters shared, a weight-stationary
     * plan's weight masks opened), then run 0 (a training plan's step 1) logged */
    int rc = recorder(p, nparties, &rec, &x);
    if (rc == VEIL_OK && (rc = veil_exec_share_params(&x, NULL)) == VEIL_OK &&
        (rc = veil_lower_prime_weights(&x)) == VEIL_OK &&
        (rc = veil_mpc_log_allocs(rec, 1)) == VEIL_OK)
        rc = walk_run(p, &x, 0);
    size_t count = 0;
    const size_t *log = rc == VEIL_OK ? veil_mpc_allocs(rec, &count) : NULL;
    if (log && count && (*bytes = malloc(count * sizeof **bytes)) != NULL) {
        memcpy(*bytes, log, count * sizeof **bytes);
        *n = count;
    } else if (log && count) {
        rc = veil_error(VEIL_ERR_NOMEM, "veil_plan_run_buffers: out of memory");
    }
    veil_exec_fini(&x);
    veil_mpc_destroy(&rec);
    return rc;
}

int veil_plan_preproc(const veil_plan_t *p, int nparties, uint64_t *items, uint64_t *dealer_bytes)
{
    return veil_plan_preproc_runs(p, nparties, 1, items, dealer_bytes);
}

int veil_plan_preproc_runs(const veil_plan_t *p, int nparties, int runs, uint64_t *items,
                           uint64_t *dealer_bytes)
{
    if (!p)
        return veil_error(VEIL_ERR_INVAL, "veil_plan_preproc: no plan");
    if (runs < 1 || runs > 1000000)
        return veil_error(VEIL_ERR_INVAL, "veil_plan_preproc: %d runs; give 1 to 1000000", runs);
    veil_mpc_t *rec = NULL;
    struct veil_exec x;
    const struct veil_preproc_item *list = NULL;
    size_t n = 0;
    uint64_t words = 0;
    int rc = record(p, nparties, runs, &rec, &x, &list, &n, &words);
    if (rc == VEIL_OK) {
        if (items)
            *items = n;
        if (dealer_bytes)
            *dealer_bytes = words * 8;
    }
    veil_exec_fini(&x);
    veil_mpc_destroy(&rec);
    return rc;
}

int veil_plan_preproc_files(const veil_plan_t *p, int nparties, int runs,
                            const uint8_t session[16], const char *path_fmt, uint64_t *items,
                            uint64_t *bytes)
{
    if (!p || !session || !path_fmt)
        return veil_error(VEIL_ERR_INVAL, "veil_plan_preproc_files: NULL argument");
    if (nparties < 2 || nparties > VEIL_PREPROC_MAX_PARTIES)
        return veil_error(VEIL_ERR_INVAL, "veil_plan_preproc_files: %d parties; give 2 to %d",
                          nparties, VEIL_PREPROC_MAX_PARTIES);
    if (runs < 1 || runs > 1000000)
        return veil_error(VEIL_ERR_INVAL, "veil_plan_preproc_files: %d runs; give 1 to 1000000",
                          runs);
    int rc = check_format(path_fmt);
    if (rc != VEIL_OK)
        return rc;
    veil_mpc_t *rec = NULL;
    struct veil_exec x;
    const struct veil_preproc_item *list = NULL;
    size_t n = 0;
    uint64_t words = 0;
    rc = record(p, nparties, runs, &rec, &x, &list, &n, &words);
    struct veil_preproc_layout layout;
    if (rc == VEIL_OK)
        rc = veil_preproc_layout_init(&layout, nparties, p->opts.frac_bits, session);
    char(*paths)[4096] = rc == VEIL_OK ? calloc((size_t)nparties, sizeof *paths) : NULL;
    const char *ptrs[VEIL_PREPROC_MAX_PARTIES];
    if (rc == VEIL_OK && !paths)
        rc = veil_error(VEIL_ERR_NOMEM, "veil_plan_preproc_files: out of memory");
    for (int q = 0; q < nparties && rc == VEIL_OK; q++) {
        int len = snprintf(paths[q], sizeof paths[q], path_fmt, q);
        if (len < 0 || (size_t)len >= sizeof paths[q])
            rc = veil_error(VEIL_ERR_INVAL, "veil_plan_preproc_files: path too long");
        ptrs[q] = paths[q];
    }
    if (rc == VEIL_OK)
        rc = veil_preproc_generate_files(&layout, list, n, p->digest, ptrs);
    if (rc == VEIL_OK) {
        if (items)
            *items = n;
        if (bytes)
            *bytes = words * 8;
    }
    free(paths);
    veil_exec_fini(&x);
    veil_mpc_destroy(&rec);
    return rc;
}

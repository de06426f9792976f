/*
 * preproc_offline.c — generation of a whole session's preprocessing ahead of the run, by the
 * dealer offline: fresh seeds, each item's correction, every party's expanded share, one file
 * per party (the format of preproc_store.c). The online phase then reads the files (FILE
 * material) and neither the dealer nor its traffic is needed while the parties compute.
 */
#include "config.h"
#include "base/base_internal.h"
#include "tasks/preproc.h"

#include <string.h>

int veil_preproc_generate_files(const struct veil_preproc_layout *layout,
                                const struct veil_preproc_item *items, size_t nitems,
                                const uint8_t plan_digest[VEIL_PREPROC_DIGEST_BYTES],
                                const char *const *paths)
{
    int rc = veil_preproc_layout_check(layout);
    if (rc != VEIL_OK)
        return rc;
    if (!paths || (nitems && !items) || !plan_digest)
        return veil_error(VEIL_ERR_INVAL, "preproc generate: NULL argument");
    const int n = layout->nparties;
    uint8_t seeds[VEIL_PREPROC_MAX_PARTIES][VEIL_SEED_BYTES];
    veil_preproc_writer_t *w[VEIL_PREPROC_MAX_PARTIES] = {0};
    struct veil_preproc_share share = {0};
    uint64_t *corr = NULL;
    size_t corr_cap = 0;
    for (int p = 0; p < n && rc == VEIL_OK; p++)
        rc = veil_seed_random(seeds[p]);
    for (int p = 0; p < n && rc == VEIL_OK; p++)
        rc = veil_preproc_writer_open(paths[p], layout, p, plan_digest, items, nitems, &w[p]);
    for (size_t i = 0; i < nitems && rc == VEIL_OK; i++) {
        size_t words = veil_preproc_correction_words(&items[i]);
        if (words > corr_cap) {
            veil_aligned_free(corr);
            corr = veil_aligned_alloc(words * 8);
            corr_cap = corr ? words : 0;
            if (!corr) {
                rc = VEIL_ERR_NOMEM;
                break;
            }
        }
        rc = veil_preproc_dealer_correction(layout, &items[i],
                                            (const uint8_t(*)[VEIL_SEED_BYTES])seeds, corr,
                                            corr_cap);
        for (int p = 0; p < n && rc == VEIL_OK; p++) {
            rc = veil_preproc_party_expand(layout, &items[i], p, seeds[p],
                                           p == layout->designated ? corr : NULL, &share);
            if (rc == VEIL_OK)
                rc = veil_preproc_writer_put(w[p], &share);
        }
    }
    for (int p = 0; p < n; p++) {
        if (rc == VEIL_OK)
            rc = veil_preproc_writer_commit(&w[p]);
        else
            veil_preproc_writer_abort(&w[p]);
    }
    veil_preproc_share_clear(&share);
    if (corr) {
        veil_wipe(corr, corr_cap * 8);
        veil_aligned_free(corr);
    }
    veil_wipe(seeds, sizeof seeds);
    return rc;
}

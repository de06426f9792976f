/*
 * preproc_streams.c — the PRG streams of the offline phase (stream layout in preproc.h): the
 * two-level seed derivation of every item and weight stream, and the dealer's view of one item's
 * streams at every party, folded into sums (XORs) over word ranges.
 */
#include "config.h"
#include "base/base_internal.h"
#include "tasks/preproc_streams.h"

#include <string.h>

/* Words of the stack buffer that PRG output is combined through. */
#define STREAM_BUF 2048

/* derive(derive(seed, sid), label, index): the two-level derivation of every stream. */
static int session_derive(const struct veil_preproc_layout *layout,
                          const uint8_t seed[VEIL_SEED_BYTES], uint64_t label, uint64_t index,
                          uint8_t out[VEIL_SEED_BYTES])
{
    uint8_t root[VEIL_SEED_BYTES];
    uint64_t lo = 0, hi = 0;
    for (int i = 0; i < 8; i++) {
        lo = lo << 8 | layout->session_id[i];
        hi = hi << 8 | layout->session_id[8 + i];
    }
    int rc = veil_seed_derive(seed, lo, hi, root);
    if (rc == VEIL_OK)
        rc = veil_seed_derive(root, label, index, out);
    veil_wipe(root, sizeof root);
    return rc;
}

int veil_preproc_item_seed(const struct veil_preproc_layout *layout,
                           const struct veil_preproc_item *item,
                           const uint8_t seed[VEIL_SEED_BYTES], uint8_t out[VEIL_SEED_BYTES])
{
    return session_derive(layout, seed, VEIL_PREPROC_LABEL | (uint64_t)item->kind, item->index,
                          out);
}

int veil_preproc_weight_seed(const struct veil_preproc_layout *layout, uint64_t wid,
                             const uint8_t seed[VEIL_SEED_BYTES], uint8_t out[VEIL_SEED_BYTES])
{
    return session_derive(layout, seed, VEIL_PREPROC_LABEL_WEIGHT, wid, out);
}

void veil_preproc_streams_close(struct veil_preproc_streams *s)
{
    for (int q = 0; q < s->n; q++)
        veil_prg_destroy(&s->prg[q]);
}

int veil_preproc_streams_open(struct veil_preproc_streams *s,
                              const struct veil_preproc_layout *layout,
                              const struct veil_preproc_item *item,
                              const uint8_t (*seeds)[VEIL_SEED_BYTES], int weight)
{
    memset(s, 0, sizeof *s);
    s->n = layout->nparties;
    uint64_t wid = 0;
    if (weight && !veil_preproc_item_wid(item, &wid))
        return veil_error(VEIL_ERR_INVAL, "preproc: kind %d has no weight stream", (int)item->kind);
    for (int q = 0; q < s->n; q++) {
        uint8_t child[VEIL_SEED_BYTES];
        int rc = weight ? veil_preproc_weight_seed(layout, wid, seeds[q], child)
                        : veil_preproc_item_seed(layout, item, seeds[q], child);
        if (rc == VEIL_OK) {
            s->prg[q] = veil_prg_new(child);
            if (!s->prg[q])
                rc = VEIL_ERR_CRYPTO;
        }
        veil_wipe(child, sizeof child);
        if (rc != VEIL_OK) {
            veil_preproc_streams_close(s);
            return rc;
        }
    }
    return VEIL_OK;
}

int veil_preproc_streams_fold(struct veil_preproc_streams *s, int skip, uint64_t off, size_t n,
                              enum veil_share_kind form, enum veil_preproc_fold mode, uint64_t *out)
{
    uint64_t buf[STREAM_BUF];
    int rc = VEIL_OK;
    if (mode == VEIL_FOLD_SET)
        memset(out, 0, n * sizeof *out);
    for (int q = 0; q < s->n && rc == VEIL_OK; q++) {
        if (q == skip)
            continue;
        rc = veil_prg_seek(s->prg[q], off);
        for (size_t done = 0; rc == VEIL_OK && done < n;) {
            size_t w = n - done < STREAM_BUF ? n - done : STREAM_BUF;
            rc = veil_prg_fill(s->prg[q], buf, w);
            if (rc != VEIL_OK)
                break;
            uint64_t *o = out + done;
            if (form == VEIL_SHARE_BINARY)
                for (size_t i = 0; i < w; i++)
                    o[i] ^= buf[i];
            else if (mode == VEIL_FOLD_SET)
                for (size_t i = 0; i < w; i++)
                    o[i] += buf[i];
            else
                for (size_t i = 0; i < w; i++)
                    o[i] -= buf[i];
            done += w;
        }
    }
    veil_wipe(buf, sizeof buf);
    return rc;
}

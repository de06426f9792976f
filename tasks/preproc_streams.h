/*
 * preproc_streams.h — the dealer's view of the offline phase's PRG streams (internal): every
 * party's stream of one item (or of one weight), positioned on demand and folded over word
 * ranges. The seeds' derivation (veil_preproc_item_seed, veil_preproc_weight_seed) is declared in
 * preproc.h; the stream layout is the contract documented there.
 */
#ifndef VEIL_TASKS_PREPROC_STREAMS_H
#define VEIL_TASKS_PREPROC_STREAMS_H

#include "tasks/preproc.h"

/** One PRG per party over one item's (or one weight's) stream. */
struct veil_preproc_streams {
    int n;
    veil_prg_t *prg[VEIL_PREPROC_MAX_PARTIES];
};

/** VEIL_FOLD_SET makes out the sum (XOR for binary) of the streams' words; VEIL_FOLD_SUB subtracts
 * it from out (XORs it in for binary, where subtracting and adding are the same). */
enum veil_preproc_fold { VEIL_FOLD_SET, VEIL_FOLD_SUB };

/** Every party's stream of item, or (weight != 0) every party's weight stream of item's wid,
 * from seeds[0 .. layout->nparties). On error nothing stays open. */
int veil_preproc_streams_open(struct veil_preproc_streams *s,
                              const struct veil_preproc_layout *layout,
                              const struct veil_preproc_item *item,
                              const uint8_t (*seeds)[VEIL_SEED_BYTES], int weight);

/** Destroys the PRGs (which wipe their keys); safe on a closed or zeroed struct. */
void veil_preproc_streams_close(struct veil_preproc_streams *s);

/** Folds words [off, off + n) of every party's stream except party skip (-1: none) into out
 * (mode above). VEIL_OK or the PRG's error. */
int veil_preproc_streams_fold(struct veil_preproc_streams *s, int skip, uint64_t off, size_t n,
                              enum veil_share_kind form, enum veil_preproc_fold mode,
                              uint64_t *out);

#endif

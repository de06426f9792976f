/*
 * mpc_internal.h — what the files of the protocol foundation share (mpc.c, mpc_material.c,
 * mpc_open.c, mpc_release.c) and what protocol files may use beyond mpc.h: the context's layout,
 * the tag space, tensor construction in steps, and deferred release with its cache.
 */
#ifndef VEIL_TASKS_MPC_INTERNAL_H
#define VEIL_TASKS_MPC_INTERNAL_H

#include "tasks/mpc.h"

/* Tag space: protocol messages count up from VEIL_MPC_TAG_FIRST; set-up and material messages
 * live in their own ranges so they can never collide with protocol tags. */
#define VEIL_MPC_TAG_FIRST UINT64_C(1)
#define VEIL_MPC_TAG_SEED (UINT64_C(1) << 62)
#define VEIL_MPC_TAG_MATERIAL ((UINT64_C(1) << 62) | (UINT64_C(1) << 61)) /* | item index */
#define VEIL_MPC_CREDIT_STEP_DEFAULT ((size_t)64 << 20)
#define VEIL_MPC_CREDIT_WINDOW_DEFAULT ((size_t)512 << 20)
/* The designated party's credits to the dealer (mpc_material.c), | credit number below 2^59:
 * bit 60 (session tags) and bit 61 (material) clear, bit 59 set (above the seed tags). */
#define VEIL_MPC_TAG_CREDIT ((UINT64_C(1) << 62) | (UINT64_C(1) << 59))

struct veil_mpc_garbage {
    starpu_data_handle_t *handles; /* owned array */
    int nhandles;
    void *data; /* veil_aligned_alloc'd, wiped then freed */
    size_t bytes;
};

/* Registered tensor memory kept across barriers (mpc_release.c): tensors of at most MAX_BYTES, at
 * most TOTAL_BYTES in all, by element count and tile. */
#define VEIL_MPC_CACHE_MAX_BYTES ((size_t)128 << 10)
#define VEIL_MPC_CACHE_TOTAL_BYTES ((size_t)64 << 20)
#define VEIL_MPC_CACHE_BUCKETS 256
struct veil_mpc_shelf;
struct veil_mpc_cache {
    struct veil_mpc_shelf *bucket[VEIL_MPC_CACHE_BUCKETS];
    size_t bytes, count;
    uint64_t hits, misses;
    int enabled; /* a party or the dealer, whose StarPU has one memory node */
};
struct veil_mpc_cache_stats {
    uint64_t hits;         /* tensors that took a kept buffer and its handles */
    uint64_t misses;       /* cacheable tensors that found none */
    size_t tensors, bytes; /* kept now */
};

struct veil_mpc {
    struct veil_mpc_options opt;
    veil_net_t *net;
    int self;
    int nparties;
    int has_dealer;
    struct veil_preproc_layout layout;
    uint8_t seed[VEIL_SEED_BYTES];       /* a party's own seed */
    uint8_t (*seeds)[VEIL_SEED_BYTES];   /* every party's seed: the dealer, or party 0 in TFP */
    veil_preproc_reader_t *reader;       /* FILE material */
    uint64_t next_tag;
    uint64_t next_item;
    /* Flow control of the dealer's corrections (mpc_material.c): bytes of correction the
     * designated party has posted receives for / the dealer has sent; credit messages sent /
     * received; the bytes granted (designated party: in its last credit; dealer: received). */
    uint64_t mat_bytes;
    uint64_t credits;
    uint64_t granted;
    uint64_t fill_tasks;             /* material expansion (and correction copy) tasks submitted */
    uint64_t mat_words;              /* material words written here (veil_mpc_material_words) */
    struct veil_preproc_item *items; /* every item requested, in order */
    size_t nitems, items_cap;
    struct veil_mpc_garbage *garbage; /* released tensors, collected at the next barrier */
    size_t ngarbage, garbage_cap;
    int priority;   /* StarPU priority of submitted tasks (veil_mpc_set_priority) */
    size_t garbage_bytes; /* data bytes of the queued garbage */
    int task_error; /* first error status of a task body (atomic); reported by veil_mpc_wait */
    struct veil_mpc_cache cache; /* mpc_release.c */
    uint64_t *wids; /* weight ids claimed by weight-stationary states (tasks/wstat.c), forever */
    size_t nwids, wids_cap;
    size_t *allocs; /* a RECORDER's log of buffer sizes (mpc_allocs.c), while allocs_on */
    size_t nallocs, allocs_cap;
    int allocs_on, allocs_complete;
};

/** Called by a task body that failed (out of memory, crypto library): logged, then reported
 * by the next veil_mpc_wait as status. Thread-safe. */
void veil_mpc_task_failed(veil_mpc_t *m, int status, const char *what);

/** Reserves count consecutive tags and returns the first. */
uint64_t veil_mpc_tags(veil_mpc_t *m, uint64_t count);
/** Sends the handle src to every peer with tag (an open's own term). */
int veil_mpc_send_all(veil_mpc_t *m, starpu_data_handle_t src, uint64_t tag);
/** Folds every peer's term sent with tag into dst as it lands (after the writes and sends posted
 * on dst before): dst ends as the sum (XOR for binary shares) of the terms, with no task. */
int veil_mpc_fold_peers(veil_mpc_t *m, enum veil_share_kind kind, starpu_data_handle_t dst,
                        uint64_t tag);
/** Counts an item, and appends it to the log of a RECORDER (the only role that keeps one). */
int veil_mpc_log_item(veil_mpc_t *m, const struct veil_preproc_item *item);
/** Queues handles (owned array, may be NULL) and data (may be NULL) for release at the barrier. */
int veil_mpc_defer(veil_mpc_t *m, starpu_data_handle_t *handles, int nhandles, void *data,
                   size_t bytes);

/** The barrier's collection of the queued releases (mpc_release.c): unregisters and frees them,
 *  or with keep (a barrier that succeeded) keeps tensors' memory and handles for reuse. */
void veil_mpc_collect(veil_mpc_t *m, int keep);
/** Enables the cache where it is sound (not a RECORDER; main memory StarPU's one memory node). */
void veil_mpc_cache_init(veil_mpc_t *m);
/** Gives shaped t a kept buffer (zeroed) and its registered handles if one of its element
 *  count and tile is kept: 1, else 0 (allocate and register as usual). */
int veil_mpc_cache_take(veil_mpc_t *m, struct veil_sec *t);
/** At a barrier (no task can use g): wipes g's buffer and keeps it with its handles if it is a
 *  tensor's (veil_sec_register's layout) within the cache's bounds: 1, else 0 (release it). */
int veil_mpc_cache_keep(veil_mpc_t *m, struct veil_mpc_garbage *g);
/** Unregisters and releases everything kept (the context's end). */
void veil_mpc_cache_drain(veil_mpc_t *m);
void veil_mpc_cache_stats(const veil_mpc_t *m, struct veil_mpc_cache_stats *s);

/** At a RECORDER logging allocations (veil_mpc_log_allocs): notes the share buffer of numel
 *  words that a computing party allocates at this point of the call. Elsewhere nothing. */
void veil_mpc_note_alloc(veil_mpc_t *m, size_t numel);

/** Shape and tiling only (no memory): what veil_sec_init does at the dealer / a recorder. */
int veil_sec_shape(veil_mpc_t *m, struct veil_sec *t, enum veil_share_kind kind, int ndim,
                   const size_t *dims, size_t tile);
/** Allocates t->data (zeroed) for a shaped tensor; a kept buffer comes with its handles
 *  (t->h set, mpc_release.c). */
int veil_sec_alloc(veil_mpc_t *m, struct veil_sec *t);
/** Registers one vector handle per tile over t->data (nothing to do when t->h is set). */
int veil_sec_register(struct veil_sec *t);

#endif

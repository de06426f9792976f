/*
 * mpc.h — the online protocol layer's foundation (internal): the per-process protocol context,
 * secret and public tensors as tiled StarPU handles, correlated randomness delivered as DAG
 * data, deterministic message tags, and the primitives every protocol builds on (input sharing,
 * masked open, reveal, local linear operations).
 *
 * SPMD. Every process of a session (the N parties, and the dealer when there is one) runs the
 * same sequence of protocol calls with the same shapes. Each call submits StarPU tasks and net
 * sends/receives and returns at once; every wait is a DAG dependency. Tags and preprocessing
 * item indices come from counters advanced identically everywhere, so messages match without
 * negotiation. veil_mpc_wait() is the only blocking call (a quiescence barrier).
 *
 * ROLES. A context is a PARTY (holds shares, computes, talks to the other parties), the DEALER
 * (holds no shares: each protocol call only asks for its correlated randomness, which the dealer
 * computes and sends to the designated party — the dealer's tensors carry shapes but no data) or
 * a RECORDER (no network: it only records the list of preprocessing items the calls consume, so
 * the material can be generated ahead of a run and stored). Protocol code branches once:
 * `if (!veil_mpc_computes(m)) return VEIL_OK;` after requesting its material.
 *
 * MATERIAL SOURCES for a PARTY (enum veil_mpc_material):
 *   DEALER — a dealer process (id N) sends each party a 128-bit seed at open and, per item, one
 *            correction tensor to the designated party (N-1); every party expands its shares
 *            with the PRG in a StarPU task (the designated party's task waits for the
 *            correction's receive in the DAG).
 *   TRUSTED_FIRST_PARTY — development only: party 0 generates every seed, sends each party its
 *            seed, and computes the corrections itself (it is the designated party). Party 0
 *            learns every secret value: never use it where that matters.
 *   FILE   — material generated ahead (a RECORDER's item list + veil_preproc_generate_files)
 *            and read from this party's preprocessing file, checked against the session and
 *            plan. The read happens at request time in the calling thread (local disk, never
 *            the network).
 *
 * TENSORS. struct veil_sec is one party's share of a secret tensor (arithmetic or binary),
 * struct veil_pub a public tensor every party holds the same copy of. Both are row-major,
 * split into tiles of `tile` elements, one StarPU vector handle per tile (separate handles, not
 * partitioning); a tile is the unit of the inner-layer pipeline: its messages and tasks are
 * independent of the other tiles'. Tensors own their memory; veil_mpc_release() returns at
 * once and hands the handles and memory to the context, which unregisters and frees them at the
 * next veil_mpc_wait(), when no task can still use them — or, where main memory is StarPU's only
 * memory node, wipes a tensor of at most 128 KiB and keeps it registered for the next tensor of
 * the same element count and tile, which then starts as zeros (tasks/mpc_release.c).
 * (starpu_data_unregister_submit would free earlier, but its completion cannot be observed
 * without a blocking call; a temporary's memory therefore lives until the next barrier, which
 * the compiler places.)
 *
 * CALLING CONVENTION. Inputs are initialised tensors (borrowed); outputs are struct veil_sec the
 * callee initialises (the caller passes an uninitialised or released struct and later releases
 * it). For binary shares "add" means XOR and "mul by public" means AND with the public words.
 * Functions return VEIL_OK or an error with a message (shape mismatch, bad parameter) before
 * submitting anything; errors of the session (a lost peer) surface at veil_mpc_wait().
 *
 * COSTS. Every protocol states its rounds and the bytes each party sends, as formulas, in its
 * header comment; protocol code calls veil_mpc_round() once per communication round it starts
 * (a round = messages that may all be in flight together), and tests compare net's counters
 * with the formulas.
 */
#ifndef VEIL_TASKS_MPC_H
#define VEIL_TASKS_MPC_H

#include "net/comm.h"
#include "tasks/preproc.h"
#include "veil.h"

#include <starpu.h>
#include <stddef.h>
#include <stdint.h>

enum veil_mpc_role { VEIL_MPC_PARTY, VEIL_MPC_DEALER, VEIL_MPC_RECORDER, VEIL_MPC_ROLE_COUNT };
enum veil_mpc_material {
    VEIL_MPC_MAT_DEALER,
    VEIL_MPC_MAT_TRUSTED_FIRST_PARTY,
    VEIL_MPC_MAT_FILE,
    VEIL_MPC_MAT_COUNT
};

/** Default tile size in elements (a tile's task should carry tens of microseconds of work). */
#define VEIL_MPC_TILE_DEFAULT 16384

struct veil_mpc_options {
    enum veil_mpc_role role;
    enum veil_mpc_material material;
    int frac_bits;             /* default VEIL_FIXED_FRAC_BITS_DEFAULT */
    size_t tile;               /* elements per tile of elementwise protocols; default above */
    const char *preproc_path;  /* FILE: this party's preprocessing file */
    uint8_t plan_digest[32];   /* FILE: the plan the file was generated for */
    int use_material_seed;     /* DEALER (tests only): the dealer derives party p's seed as
                                  veil_seed_derive(material_seed, VEIL_MPC_LABEL_MATSEED, p)
                                  instead of drawing it from the CSPRNG, so that a restarted
                                  session reproduces the same masks. Whoever knows the seed can
                                  unmask every opened value: never with real data */
    uint8_t material_seed[16];
    /* DEALER flow control within a run (mpc_material.c, FLOW CONTROL): the designated party
     * grants credit every credit_step bytes of corrections it has posted receives for; the
     * dealer keeps at most credit_window bytes sent beyond the credit granted. 0: a window of
     * half the net's early-arrival cap (VEIL_NET_EARLY_CAP), at most 512 MiB, and a step of an
     * eighth of the window, at most 64 MiB. The window must be at least the step of the
     * designated party and well below the net's early-arrival cap; tests shrink both to
     * exercise the path. */
    size_t credit_step;
    size_t credit_window;
};
#define VEIL_MPC_LABEL_MATSEED UINT64_C(0x4d41545345454431) /* "MATSEED1" */

/** Defaults: PARTY, DEALER material, f = 16, tile VEIL_MPC_TILE_DEFAULT. */
void veil_mpc_options_defaults(struct veil_mpc_options *o);

typedef struct veil_mpc veil_mpc_t;

/**
 * Creates the protocol context of this process over an open session (borrowed; NULL for a
 * RECORDER, which needs nparties/self given through veil_mpc_new_recorder instead). With the
 * DEALER material source, the dealer sends every party its seed here (the only blocking
 * exchange, at set-up); with TRUSTED_FIRST_PARTY, party 0 does. StarPU must be initialised.
 * Returns NULL with veil_last_error() set on failure.
 */
veil_mpc_t *veil_mpc_new(veil_net_t *net, const struct veil_mpc_options *opts);

/** A RECORDER for nparties parties (no network, no StarPU tasks). */
veil_mpc_t *veil_mpc_new_recorder(int nparties, const struct veil_mpc_options *opts);

/** Waits for quiescence (veil_mpc_wait), frees every tensor still queued, destroys *m. NULL-safe. */
void veil_mpc_destroy(veil_mpc_t **m);

/** Quiescence barrier: every submitted task and message done; frees released tensors. Returns
 * the session's error if a peer failed. */
int veil_mpc_wait(veil_mpc_t *m);

/** 1 for a PARTY (it holds data and computes), 0 for the DEALER and a RECORDER. */
int veil_mpc_computes(const veil_mpc_t *m);
int veil_mpc_self(const veil_mpc_t *m);      /* party id; nparties for the dealer */
int veil_mpc_nparties(const veil_mpc_t *m);  /* N (the dealer not counted) */
int veil_mpc_frac_bits(const veil_mpc_t *m);
size_t veil_mpc_tile(const veil_mpc_t *m);
veil_net_t *veil_mpc_net(veil_mpc_t *m);     /* NULL for a RECORDER */

/**
 * The StarPU priority of the tasks protocol calls submit from now on (default 0; larger runs
 * earlier under the schedulers that honour priorities). The compiler's critical-path priority
 * of a node is set here before the node's protocols are called, so sends on long chains go first.
 */
void veil_mpc_set_priority(veil_mpc_t *m, int priority);
int veil_mpc_priority(const veil_mpc_t *m);

struct veil_place; /* codelets/codelets_internal.h */
/**
 * Where the tasks protocol calls submit from now on run (copied; NULL: wherever the scheduler
 * puts them): the executor sets a node's placement next to its priority. It changes which
 * worker runs each task and, for a split, how many local GEMM tasks a Beaver product submits over
 * sub-blocks of the same opened operands — never which protocol calls happen, what they consume
 * or what they open, so the results are bit-identical to the unplaced run. Ignored by the dealer
 * and a recorder. Per thread: set it in the thread that calls the protocols.
 */
void veil_mpc_set_placement(veil_mpc_t *m, const struct veil_place *p);

/** Bytes of released tensors waiting for the next barrier to be freed (see TENSORS). */
size_t veil_mpc_garbage_bytes(const veil_mpc_t *m);

/** Tags of session-level messages above the protocols (the executor's flow control between
 * the dealer and the parties), | an index below 2^60: disjoint from the protocol tags (counting
 * from 1), the seed tag and the material tags (tasks/mpc_internal.h). */
#define VEIL_MPC_TAG_SESSION ((UINT64_C(1) << 62) | (UINT64_C(1) << 60))

/** The counters that place this context in the session's streams: the next preprocessing item
 * index and the next message tag (checkpoints save them so a resumed session continues the same
 * material stream). */
void veil_mpc_counters(const veil_mpc_t *m, uint64_t *next_item, uint64_t *next_tag);
/** Restores both counters (every process of the session restores the values it saved at the
 * same point, SPMD). Call it at quiescence. VEIL_ERR_INVAL for a tag outside the protocol range. */
int veil_mpc_set_counters(veil_mpc_t *m, uint64_t next_item, uint64_t next_tag);
/**
 * A blocking agreement among every process of the session (the dealer too): each sends value
 * to every other and checks that all sent the same. VEIL_OK; VEIL_ERR_MISMATCH naming a process
 * at another value (what prefixes the message); the session's error when a peer is lost (named).
 * Checkpoints use it so that no process commits a state its peers did not reach.
 */
int veil_mpc_agree(veil_mpc_t *m, uint64_t value, const char *what);
/** A blocking all-to-all of words u64 words among every process of the session (the dealer
 * too): got[q * words ...] receives process q's (got[self * words ...] is left alone). The
 * session's error when a peer is lost (named). Checkpoint loading uses it to agree on a step. */
int veil_mpc_exchange(veil_mpc_t *m, uint64_t *mine, size_t words, uint64_t *got);
/**
 * A seed no single process chose (blocking, every process of the session, the dealer too): each
 * draws 16 bytes from the OS CSPRNG and sends them to every other; the seed is the XOR of all, the
 * same everywhere, uniform as long as one process is honest (semi-honest model). Public within
 * the session (e.g. the order in which training data is visited). Without a network (a
 * recorder): this process's own random bytes. The session's error when a peer is lost.
 */
int veil_mpc_joint_seed(veil_mpc_t *m, uint8_t seed[VEIL_SEED_BYTES]);
/** The material bytes a dealer can send, once every correction so far has its receive posted,
 *  before it must wait for a credit that only newly posted receives bring (credit_window -
 *  credit_step); 0 for a recorder. */
size_t veil_mpc_ahead_limit(const veil_mpc_t *m);
/** Marks one communication round in the session's counters (no-op without a network). */
void veil_mpc_round(veil_mpc_t *m);

/** The items a RECORDER recorded, in order, their count in *n. Another role counts the items it
 *  consumed (*n) but keeps no list (NULL): a session's list grew by 112 bytes per item for as
 *  long as it ran (12.6 MB per 1,000 LeNet-5 runs, bench/README-soak.md). */
const struct veil_preproc_item *veil_mpc_items(const veil_mpc_t *m, size_t *n);
/** A RECORDER (else VEIL_ERR_INVAL): with on, from now on it also logs the size in bytes of each
 *  share buffer a computing party would allocate at the same calls (tasks/mpc_allocs.c says
 *  what the log leaves out); with 0 it stops. */
int veil_mpc_log_allocs(veil_mpc_t *m, int on);
/** That log, in call order, its length in *n; NULL and 0 when it could not be kept whole (out of
 *  memory) or there is none. Valid until the context is destroyed. */
const size_t *veil_mpc_allocs(const veil_mpc_t *m, size_t *n);
/** The bytes of dealer corrections so far: at the dealer those it sent, at the designated party
 *  of DEALER material those it posted receives for; 0 elsewhere. */
uint64_t veil_mpc_correction_bytes(const veil_mpc_t *m);
/* PRG parts of at most this many words are expanded by the requesting thread, not a task: at
 * 7 GB/s of AES-CTR 4096 words take about 5 us, less than a task's submission, scheduling and
 * completion (LeNet-5 at batch 1 requests 80 parts per run, most of them this small). */
#define VEIL_MPC_FILL_INLINE_WORDS 4096
/** The material tasks submitted so far (one per tile of a part expanded by a task: a PRG part
 *  over VEIL_MPC_FILL_INLINE_WORDS words, or a tiled corrected part copied from the correction);
 *  0 at the dealer and a recorder. */
uint64_t veil_mpc_fill_tasks(const veil_mpc_t *m);

/* ---- tensors ------------------------------------------------------------------------------ */

struct veil_sec {
    enum veil_share_kind kind;
    int ndim;
    size_t dims[VEIL_MAX_DIMS];
    size_t numel;
    size_t tile;                    /* elements per tile; the last tile may be shorter */
    int ntiles;
    uint64_t *data;                 /* owned; NULL at the dealer / a recorder */
    starpu_data_handle_t *h;        /* ntiles handles; NULL at the dealer / a recorder */
};
/* A public tensor: the same value at every party (same layout as a share). */
#define veil_pub veil_sec

/**
 * Initialises *t as a zero tensor of the given kind and shape, tiled by tile elements (0: the
 * context's default; a tensor that must be one handle, e.g. a matrix, passes SIZE_MAX). At a
 * PARTY the memory is allocated and registered; elsewhere only the shape is kept.
 * VEIL_ERR_SHAPE / VEIL_ERR_NOMEM with a message.
 */
int veil_sec_init(veil_mpc_t *m, struct veil_sec *t, enum veil_share_kind kind, int ndim,
                  const size_t *dims, size_t tile);
/** As veil_sec_init, then the words (numel, copied before any task can see the tensor; NULL:
 * zeros) fill it at a PARTY: public constants, and local sharings of them. */
int veil_sec_init_words(veil_mpc_t *m, struct veil_sec *t, enum veil_share_kind kind, int ndim,
                        const size_t *dims, size_t tile, const uint64_t *words);
/** As veil_sec_init with the shape and tiling of like. */
int veil_sec_init_like(veil_mpc_t *m, struct veil_sec *t, const struct veil_sec *like);
/** Releases t without waiting (see TENSORS above); t is emptied. NULL/empty-safe. */
void veil_mpc_release(veil_mpc_t *m, struct veil_sec *t);
/** Number of elements of tile i. */
size_t veil_sec_tile_numel(const struct veil_sec *t, int i);
/** 1 when a and b have the same shape (kind not compared) and the same tiling. */
int veil_sec_same_layout(const struct veil_sec *a, const struct veil_sec *b);
/**
 * Makes t->data hold t's current value in host memory: each tile acquired for reading on main
 * memory, then released (a tile last written by a task on a GPU is copied back; StarPU never
 * copies back by itself). Results of open, reveal or any task are read through t->data only after
 * a veil_mpc_wait and this call. Blocking: never from a task or a callback. An empty tensor (the
 * dealer's, a reveal meant for another party) is a no-op. VEIL_ERR_STARPU if StarPU refuses.
 */
int veil_sec_to_host(struct veil_sec *t);

/* ---- material ----------------------------------------------------------------------------- */

/**
 * One item of correlated randomness as DAG data: part j of this party's share is tensor
 * part[j] (tiled like the protocol asks, or one handle), written by a task that runs when the
 * material is available. At the dealer / a recorder the parts carry shapes only.
 */
struct veil_mpc_mat {
    struct veil_preproc_item item;
    int nparts;
    struct veil_sec part[VEIL_PREPROC_MAX_PARTS];
};

/**
 * Requests the next item of correlated randomness (kind and params in *item; its index is set
 * here from the session counter). tile: tiling of the parts (0 default, SIZE_MAX one handle);
 * a binary packed part (BIT's bp) is one handle; a CARRY4 item's tile counts records, so its
 * parts tile by 7 tile and 22 tile words; a CMPPROD item tiles by its own tile parameter. Never
 * blocks. Release with veil_mpc_mat_release.
 */
int veil_mpc_material(veil_mpc_t *m, struct veil_preproc_item item, size_t tile,
                      struct veil_mpc_mat *out);
/**
 * As veil_mpc_material, leaving out at a party every part j whose bit (1u << j) is set in skip:
 * such a part is shaped but gets no memory, and its words are neither expanded, received nor read
 * (FILE material skips them in the file), for a party that holds the same words from an earlier
 * item (a weight-stationary product's B, tasks/wstat.h). A corrected part or one the item does
 * not have cannot be left out: VEIL_ERR_INVAL at every process, the item not taken. The dealer
 * and a recorder otherwise ignore skip.
 */
int veil_mpc_material_skip(veil_mpc_t *m, struct veil_preproc_item item, size_t tile, unsigned skip,
                           struct veil_mpc_mat *out);
/** The words of material parts this party has had written so far (expanded, received or read:
 *  every requested part's words but those left out); 0 at the dealer and a recorder. */
uint64_t veil_mpc_material_words(const veil_mpc_t *m);
/** What the party's reading ahead of its preprocessing file did so far (FILE material;
 *  VEIL_PREFETCH_MB; tasks/preproc.h, veil_preproc_reader_prefetch): all 0 without it. */
void veil_mpc_prefetch_stats(const veil_mpc_t *m, struct veil_preproc_prefetch_stats *s);
void veil_mpc_mat_release(veil_mpc_t *m, struct veil_mpc_mat *mat);

/* ---- primitives --------------------------------------------------------------------------- */

/**
 * Input sharing: the owner's plaintext ring words (values, numel words, read at the call; NULL
 * at the other parties) become an arithmetic sharing in *out (initialised here with the shape
 * given). The owner draws a fresh random share for every other party with the CSPRNG and sends
 * it; the others receive. Rounds 1; bytes: owner (N-1)*numel*8, others 0.
 */
int veil_mpc_share_input(veil_mpc_t *m, int owner, const uint64_t *values, int ndim,
                         const size_t *dims, size_t tile, struct veil_sec *out);

/**
 * Input sharing of real values: the owner encodes values (numel doubles) with the context's
 * fractional bits and shares them as veil_mpc_share_input does. The documented input range is
 * enforced here, at the owner, before anything is sent: NaN, infinities and |x| >= max_abs are
 * refused with VEIL_ERR_RANGE naming the element (max_abs <= 0 means the encodable bound
 * 2^(62-f); protocols that multiply want a tighter one, e.g. 2^(31-f) keeps products of two
 * inputs within the truncation's |x| < 2^62). Every party passes the same max_abs. Same costs.
 */
int veil_mpc_share_input_fixed(veil_mpc_t *m, int owner, const double *values, double max_abs,
                               int ndim, const size_t *dims, size_t tile, struct veil_sec *out);

/**
 * Masked open without the round mark (protocols open several tensors in one round): d = x - a
 * (arithmetic) or x XOR a (binary) becomes public in *d (initialised here like x): each party
 * sends its d_p to every peer and sums (XORs) what it receives, per tile. Bytes per party:
 * (N-1)*numel*8. The caller calls veil_mpc_round() once for the round.
 * With a == NULL, opens x itself (a reveal to all).
 */
int veil_mpc_open(veil_mpc_t *m, const struct veil_sec *x, const struct veil_sec *a,
                  struct veil_pub *d);

/**
 * Reveal of x to one party (to >= 0) or to all (to = -1): rounds 1. Bytes per party: to one
 * party, numel*8 from every party but `to` (which sends nothing); to all, (N-1)*numel*8 from
 * every party. The result lands in *out (initialised here) at the receivers; other parties get
 * an empty tensor.
 */
int veil_mpc_reveal(veil_mpc_t *m, const struct veil_sec *x, int to, struct veil_pub *out);

/** z = x + y, x - y (shares, same layout), z = -x: local, 0 rounds. */
int veil_mpc_add(veil_mpc_t *m, const struct veil_sec *x, const struct veil_sec *y,
                 struct veil_sec *z);
int veil_mpc_sub(veil_mpc_t *m, const struct veil_sec *x, const struct veil_sec *y,
                 struct veil_sec *z);
/** z = x * c for a public tensor c: local, 0 rounds. */
int veil_mpc_mul_public(veil_mpc_t *m, const struct veil_sec *x, const struct veil_pub *c,
                        struct veil_sec *z);
/** z = x + c (c added by party 0 only) and z = x * c for a public ring scalar c. */
int veil_mpc_add_scalar(veil_mpc_t *m, const struct veil_sec *x, uint64_t c, struct veil_sec *z);
int veil_mpc_mul_scalar(veil_mpc_t *m, const struct veil_sec *x, uint64_t c, struct veil_sec *z);

#endif

/*
 * veil/party.h — the secure run of a compiled plan (veil/graph.h): a party's session (StarPU, the
 * encrypted mesh to the other parties, the handshake on the plan's digest), secure inference and
 * training runs, reveals, checkpoints, and the busy / overlap profile of a traced run. Every
 * process of a session (each party and the dealer) makes the same sequence of calls (SPMD).
 */
#ifndef VEIL_PARTY_H
#define VEIL_PARTY_H

#include "veil/graph.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct veil_party veil_party_t;

/* ---- secure run ----------------------------------------------------------------------------- */

enum veil_material_source {
    VEIL_MATERIAL_DEALER,  /* a dealer process sends correlated randomness during the run */
    VEIL_MATERIAL_FILE,    /* read from a preprocessing file generated ahead (offline phase) */
    VEIL_MATERIAL_COUNT
};

/**
 * How a party spreads its tasks over its devices (StarPU workers: here the CPU workers that
 * STARPU_NCPU asks for; GPUs where StarPU has them). A placement changes only WHERE tasks run and,
 * for a Beaver product, into how many local GEMM tasks over sub-blocks of the same opened
 * operands its local products are cut: the protocol calls, the material consumed, the values
 * opened and every truncation are those of the single-device plan, so the outputs are
 * bit-identical to it.
 *  - SINGLE: every task on the first device.
 *  - DP (data parallel, Synkhronos): tile t of every elementwise protocol on device t mod D;
 *    the local GEMMs of products cut by batch (rows of a dense input, images of a convolution)
 *    With at least D micro-batches (compile option microbatches) each micro-batch copy runs
 *    whole on one device (copy j on device j mod D; under weight averaging, replica j trains
 *    there), and only the nodes the copies share are spread.
 *  - PP (pipeline parallel, the multi-GPU Piranha report): the plan's nodes grouped into D
 *    contiguous stages by the bubble-model partitioner (per-node costs from the plan's sizes, or
 *    measured by a calibration run: see the option `calibrate`), each stage's tasks on its
 *    device. The executor runs one batch per run, so a single run
 *    gains nothing from it; it pays off across concurrent sessions sharing the devices.
 *  - TP (tensor parallel): elementwise tiles as DP; each product's local GEMMs split by rows,
 *    columns or the inner dimension as the split chooser says for its operand layouts
 *    (weights column-sharded, activations row-sharded), the inner split reduced by a sum;
 *    convolutions by output channels.
 *  - HYBRID (SplitBrain): convolutions data parallel, dense layers and matrix products split in
 *    groups of `group` devices (batch across groups, output columns within a group).
 *  - AUTO: the placement of least modelled time (ties go to the simpler one, in the order
 *    above); SINGLE with one device.
 * veil_party_open logs the choice and the modelled times at INFO level.
 */
enum veil_placement {
    VEIL_PLACEMENT_AUTO,
    VEIL_PLACEMENT_SINGLE,
    VEIL_PLACEMENT_DP,
    VEIL_PLACEMENT_PP,
    VEIL_PLACEMENT_TP,
    VEIL_PLACEMENT_HYBRID,
    VEIL_PLACEMENT_COUNT
};

/** TP's split of every product: the chooser's, or forced. */
enum veil_tp_force {
    VEIL_TP_FORCE_NONE,
    VEIL_TP_FORCE_ROWS,
    VEIL_TP_FORCE_COLUMNS,
    VEIL_TP_FORCE_INNER,
    VEIL_TP_FORCE_COUNT
};

/** Which StarPU workers are a party's devices. AUTO: the CUDA workers when StarPU has any (a
 * CUDA-enabled StarPU on a GPU host), else the CPU workers. CUDA with no CUDA worker is refused
 * at open. Every protocol codelet has a CUDA body; the dealer's material expansion (AES-CTR from
 * OpenSSL's libcrypto) stays on CPU workers, and StarPU moves its output to the GPU that reads it. */
enum veil_device_kind {
    VEIL_DEVICE_AUTO,
    VEIL_DEVICE_CPU,
    VEIL_DEVICE_CUDA,
    VEIL_DEVICE_COUNT
};

/** "auto", "cpu", "cuda" (NULL for a value out of range). */
const char *veil_device_kind_name(enum veil_device_kind k);
/** Parses one of those names (case-insensitive) into *out. VEIL_ERR_INVAL naming the choices. */
int veil_device_kind_parse(const char *name, enum veil_device_kind *out);

/** "auto", "single", "dp", "pp", "tp", "hybrid" (NULL for a value out of range). */
const char *veil_placement_name(enum veil_placement p);
/** Parses one of those names (case-insensitive) into *out. VEIL_ERR_INVAL naming the choices. */
int veil_placement_parse(const char *name, enum veil_placement *out);

struct veil_party_options {
    const char *config_path;  /* network configuration file; NULL: from the environment that
                                 veil-run and Veil's harness set (VEIL_PARTY_ID, ...) */
    enum veil_material_source material;
    const char *preproc_path; /* FILE material: this party's preprocessing file; one "%d" in
                                 it is replaced by the party id */
    const char *material_seed; /* TESTS ONLY: 32 hex digits from which the dealer derives every
                                  party's material seed instead of drawing it from the OS CSPRNG
                                  (NULL: the environment's VEIL_MATERIAL_SEED, else none). With
                                  the same session id and a checkpoint's counters a restarted
                                  session then opens exactly the same masked values, so resumed
                                  training equals an uninterrupted one bit for bit. Anyone who
                                  knows the seed can rebuild every mask and unmask every opened
                                  value: never use it with real data. Every process passes the
                                  same value (only the dealer uses it) */
    /* Tracing (off when NULL and VEIL_TRACE is unset or empty): the party records every StarPU
     * task and every network message of its runs and, at veil_party_close, writes them as
     * Chrome trace JSON (Perfetto, chrome://tracing) to this path, one "%d" in it replaced by
     * the party id (the dealer's is N), all runs of the session in one file. NULL here falls
     * back to the environment variable VEIL_TRACE (e.g. VEIL_TRACE=/tmp/trace-%d.json under
     * veil-run). With tracing on, veil_party_last_profile summarises each run. */
    const char *trace_path;
    /* Placement (see enum veil_placement). When placement is AUTO and the environment has
     * VEIL_PLACEMENT (a name above) or VEIL_DEVICES (a count), those are used. When nothing is
     * asked (AUTO, devices 0, neither variable set), no task is pinned: StarPU's scheduler
     * places every task. The devices are the workers of device_kind. */
    enum veil_placement placement;
    int devices;              /* devices to use: the first `devices` StarPU workers of
                                 device_kind; 0: all of them; more than StarPU has is refused at
                                 open */
    enum veil_device_kind device_kind; /* AUTO: the environment's VEIL_DEVICE_KIND (auto, cpu,
                                          cuda) if set, else CUDA workers when there are any */
    int worker_nice;          /* 1..19: the nice value of this process's StarPU worker threads
                                 (an idle worker spins without yielding its core; where the
                                 host's cores are shared by more threads than it has, a higher
                                 value lets the network threads preempt it at once); 0: the
                                 environment's VEIL_WORKER_NICE, else unchanged (the default:
                                 idle workers sleep while the process waits, and a high value
                                 lets a busy neighbour starve them) */
    int calibrate;            /* 1: the session's first run (or training step) is a calibration
                                 run: the party records each plan node's task time on its
                                 devices (StarPU's profiling, as tracing does), then replaces
                                 the cost model's per-node times by the measured ones and places
                                 again (AUTO chosen again, PP's partition recomputed); logged at
                                 INFO with the stages. Implies placing over the devices. Local to
                                 the party: placement never changes what is sent, so the parties
                                 need not agree. 0: the environment's VEIL_CALIBRATE (0 or 1),
                                 else off. The dealer computes nothing and ignores it */
    int group;                /* HYBRID: devices per tensor-parallel group; 0: all of them */
    enum veil_tp_force tp_split; /* TP: force every product's split (tests, experiments) */
};
void veil_party_options_defaults(struct veil_party_options *o);

/**
 * Opens this process's side of a session for plan p (borrowed: it must outlive the party):
 * StarPU (starpu_init; call it after any fork), the network (handshake with the plan digest: a
 * peer with another plan is refused by name) and the protocol context. The process is a party
 * or the dealer, as its configuration says (o->config_path, or the environment veil-run sets).
 * Refused with a message: owners or reveal targets outside the session's parties, a revealed
 * loss value, dealer material without a dealer, FILE material without a preproc_path or with a
 * file of another session, party or plan (veil_plan_preproc_files writes them).
 * Returns an owned party or NULL with veil_last_error().
 */
veil_party_t *veil_party_open(const veil_plan_t *p, const struct veil_party_options *o);
/** The placement the party runs with (AUTO resolved) and its device count. VEIL_ERR_INVAL for
 * NULL arguments. The dealer computes nothing: SINGLE over its devices. */
int veil_party_placement(const veil_party_t *me, enum veil_placement *placement, int *devices);
/** The kind of the party's devices (AUTO resolved: CPU or CUDA). VEIL_ERR_INVAL for NULL. */
int veil_party_device_kind(const veil_party_t *me, enum veil_device_kind *kind);
/** Closes the session and shuts StarPU down; NULL-safe; sets *me to NULL. Returns VEIL_OK when
 * the session ended cleanly, else its error (a run of this process failed, or a peer aborted or
 * was lost, also while closing; veil_last_error() says which): the dealer, whose work may be done
 * before a party fails, learns here that the session failed. */
int veil_party_close(veil_party_t **me);
int veil_party_id(const veil_party_t *me);       /* 0..N-1, N for the dealer */
int veil_party_nparties(const veil_party_t *me); /* N */
int veil_party_is_dealer(const veil_party_t *me);

/**
 * One secure run of the plan the party was opened with: shares this party's inputs (feeds: by
 * name; only the leaves this party owns are read, others ignored — the dealer feeds nothing),
 * runs the DAG and reveals the outputs. Parameters are shared at the first run only (or by
 * veil_party_prepare before it) and kept for the session (later runs ignore their feeds), so
 * every later run sends inputs and the protocols' own traffic only. Fed values must lie within
 * +-2^(31 - frac_bits) (32768 at 16 bits), so that the product of two stays within the
 * truncation's range; larger ones are
 * refused with VEIL_ERR_RANGE naming the leaf. outputs[i] (may be NULL for outputs not
 * revealed to this party) receives output i's doubles when it is revealed here. Every process
 * of the session (the dealer too) makes the same sequence of veil_run calls. Returns VEIL_OK or
 * the session's error (a lost peer is named, never a hang); after an error the session cannot
 * run again (VEIL_ERR_STATE): close it.
 */
int veil_run(veil_party_t *me, const struct veil_feed *feeds, size_t nfeeds,
             double *const *outputs);

/**
 * A WARM FIRST RUN: shares this party's parameters (params: by name; only the PARAM leaves this
 * party owns are read, inputs and other leaves ignored — the dealer and parties that own no
 * parameter pass NULL, 0) and waits until every parameter of the plan is shared, so that the
 * session's first veil_run or veil_train_step does only what every later one does: it then sends
 * the same bytes in the same rounds as a steady run. On a plan compiled without training (whose
 * first call can only be veil_run) with a dealer, the dealer also deals the first run's material in
 * it and every process waits for one word from the dealer sent after that material, so the first
 * run finds its material arrived, as a steady run does (the dealer deals one run ahead);
 * veil_party_save and veil_party_load are then refused (VEIL_ERR_STATE) until the first run is
 * done. The dealer does so only when that material fits in what the flow control lets it send
 * before any party posts a receive (448 MiB by default; 7/16 of VEIL_NET_EARLY_CAP when that is
 * below 1 GiB); beyond it (LeNet-5 at batch 1000: 682 MB) the first run gets its material as an
 * unprepared one does, and its word says so. A weight-stationary plan's weight-mask opens (the
 * public W - B of every weight, tasks/wstat.h) happen here too, in one round, each party taking
 * its share of B from the weight stream or from its preprocessing file without consuming an item
 * (veil_mpc_wstat_prime). Without it the first run shares the parameters and opens the masks
 * itself; the outputs are bit-identical either way (the parameters are shared exactly as the
 * first run would: the same values, folding and tiles, and no correlated randomness is consumed).
 * A party also reserves the first run's (or step's) share buffers in the process's buffer pool,
 * their pages faulted in here (the sizes from a recorder that does what prepare does and then
 * walks that run; up to the pool's bound, VEIL_POOL_MAX_MB), so that the first run takes its
 * working set from the pool as later runs do instead of faulting it in while it computes
 * (LeNet-5 at batch 100: 298 MB, 0.12-0.19 s here and about as much less in the first run); a
 * buffer the walk did not foresee (a loss reveal's) is allocated by the run as before.
 * veil_party_last_stats then covers the sharing (its seconds, bytes and rounds), and the first
 * run counts from its end. Every process of the session (the dealer too)
 * calls it at the same point, at most once, before the first run or step. Returns VEIL_OK;
 * VEIL_ERR_STATE (nothing done, the session goes on) when called a second time, after a run or
 * step, or after veil_party_load; VEIL_ERR_INVAL for a missing parameter, a wrong element count or
 * a non-finite value (named, as veil_run's feeds), VEIL_ERR_RANGE for a value outside veil_run's
 * range — the session has then failed (the peers stop with this party named, never hang) — or the
 * session's error.
 */
int veil_party_prepare(veil_party_t *me, const struct veil_feed *params, size_t nparams);

/* ---- secure training ------------------------------------------------------------------------ */

/**
 * One training step (SGD, or Adam / AdamW per the plan's optimizer option, its bias corrections
 * from veil_party_steps + 1) on a plan compiled with training = 1: shares this party's inputs (the images and
 * the labels, fed by their owners by name; parameters are shared at the first step or run, as in
 * veil_run, and then updated in place, secret-shared), runs the forward pass, the backward pass
 * and every parameter's update (graph_internal.h's BACKWARD FIXED-POINT SEQUENCES: the result
 * equals veil_plain_trainer in FIXED mode up to the secure truncation's 0/+1 ulp per
 * truncation). Reveals nothing: no outputs, no loss. Every process of the session (the dealer
 * too) makes the same sequence of calls. Returns VEIL_OK; VEIL_ERR_INVAL for a plan compiled
 * without training or a missing feed at its owner (named; the peers then stop with the lost
 * peer named, never hang); VEIL_ERR_UNSUPPORTED with weight-stationary preprocessing (weights
 * change every step); the session's error otherwise (after which the session cannot go on).
 * veil_run on a training plan stays forward-only inference (the loss node keeps its softmax).
 * veil_party_last_stats covers the step.
 */
int veil_train_step(veil_party_t *me, const struct veil_feed *feeds, size_t nfeeds);

/**
 * OPT-IN LOSS REVEAL: veil_train_step, and during it party `to` (or VEIL_ALL_PARTIES) learns
 * each example's probability of its true class, p_r = sum_j s_rj label_rj (s the loss's softmax;
 * one Beaver product, a local row sum and a truncation: 2 more rounds), from which it computes
 * the batch loss -mean(log p_r). THIS REVEALS THE B PER-EXAMPLE CONFIDENCES to that party, more
 * than the mean loss: use it only where that party may see them. At `to`, probs (may be NULL)
 * receives the B values and *loss (may be NULL) -mean(log max(p_r, 2^-f)); elsewhere they are
 * untouched. Every process calls it (same to) where the others call it. Returns as
 * veil_train_step.
 */
int veil_train_step_reveal_loss(veil_party_t *me, const struct veil_feed *feeds, size_t nfeeds,
                                int to, double *probs, double *loss);

/**
 * A 16-byte seed no single party chose, the same at every process: each process of the session
 * (the dealer too) contributes 16 bytes from its OS CSPRNG and the seed is their XOR (uniform
 * while one process is honest). Blocking; every process calls it at the same point (SPMD). For
 * public joint decisions, e.g. the order in which the data owner visits its training data.
 * The first call after veil_party_load returns the seed the checkpoint saved (no drawing, no
 * message), so a resumed run visits the data in the interrupted run's order.
 * VEIL_OK, or the session's error (a lost peer is named).
 */
int veil_party_joint_seed(veil_party_t *me, uint8_t seed[16]);

/** Training steps this session has done (counting those before a loaded checkpoint). */
uint64_t veil_party_steps(const veil_party_t *me);

/**
 * REVEALS parameter `name`'s current value (after the steps so far) to party `to` (or
 * VEIL_ALL_PARTIES): how the model owner gets its trained model. Every process of the session
 * calls it (SPMD). At the receivers out receives numel doubles; elsewhere out is not touched (may
 * be NULL). VEIL_ERR_INVAL for an unknown name or one that is not a parameter, VEIL_ERR_STATE
 * before the parameter was shared (no prepare, run or step yet), or the session's error.
 */
int veil_party_reveal_param(veil_party_t *me, const char *name, int to, double *out);

/**
 * CHECKPOINTS. veil_party_save writes this process's own file at path: its shares of every
 * parameter and SGD velocity (Adam: both moments), the number of steps, the last joint seed (veil_party_joint_seed),
 * and the protocol context's item and tag counters (so the correlated-randomness stream continues
 * where it stopped; the dealer's file holds its counters only), bound to the session id, the
 * party id, the number of parties and the plan digest, with a SHA-256 over the whole content.
 * Two generations are kept: the write goes to a temporary file in the same directory (fsync,
 * mode 0600), then path moves to path.prev and the temporary file to path, so a crash at any
 * point leaves a complete generation. The files hold secret shares: keep them like a key.
 * veil_party_load restores that state into a session opened with the same plan (before its
 * first run, or in place of the current state): every process reads both generations, the
 * processes exchange the steps they hold, and all load the newest step that every process has
 * (a newer path is then replaced by path.prev, and temporary files a crash left are removed);
 * the next veil_party_joint_seed returns the saved seed instead of drawing one. Where no step is
 * common, all refuse with VEIL_ERR_MISMATCH naming the steps each process holds; a file of
 * another session, party id, party count or plan is refused with VEIL_ERR_MISMATCH naming what
 * differs, a damaged one with VEIL_ERR_FORMAT or VEIL_ERR_CRYPTO (a process whose files are all
 * refused returns its own refusal); nothing is changed then. Every process of the session
 * calls them at the same point (SPMD: all save after the same step, all load before the first
 * step). Each waits for the session to be quiescent first; a save then checks with every peer
 * that all reached the same step (one small message each way) and writes nothing when a peer is
 * lost (its error names it) or elsewhere, so no process commits a state its peers did not.
 */
int veil_party_save(veil_party_t *me, const char *path);
int veil_party_load(veil_party_t *me, const char *path);

/** What the last veil_run or veil_train_step cost at this party. */
struct veil_run_stats {
    double online_s;      /* wall time of the run */
    uint64_t bytes_sent;  /* payload bytes this process sent to the other parties (a party's
                             only traffic to the dealer, an 8-byte acknowledgement per run that
                             paces the dealer, is not counted); the dealer's: to the parties */
    uint64_t bytes_recv;
    uint64_t rounds;      /* communication rounds of the run */
    uint64_t dealer_bytes_recv; /* of bytes_recv, those from the dealer (its seed counts
                                   toward the first run; material it deals ahead toward the
                                   run in which it arrived) */
};
int veil_party_last_stats(const veil_party_t *me, struct veil_run_stats *out);

/* ---- profile: busy and overlap, from the trace ---------------------------------------------- */

/** Trace regions: the kind of plan node being lowered when a task or message was submitted. */
enum veil_region {
    VEIL_REGION_OTHER,   /* reshape, add, concat, scale, transpose, slice, mul, exp, sgd update */
    VEIL_REGION_INPUT,   /* sharing inputs and parameters, constants */
    VEIL_REGION_LINEAR,  /* dense, conv2d, matmul and their backward products */
    VEIL_REGION_RELU,    /* relu, relu_grad, gelu, gelu_grad */
    VEIL_REGION_POOLING, /* max / average / global average pooling and their gradients */
    VEIL_REGION_SOFTMAX, /* softmax, softmax cross-entropy and their gradients */
    VEIL_REGION_NORM,    /* batch norm, layer norm and their gradients */
    VEIL_REGION_ARGMAX,  /* argmax */
    VEIL_REGION_COUNT
};
/** "other", "input", "linear", "relu", "pooling", "softmax", "norm", "argmax". */
const char *veil_region_name(enum veil_region r);

/**
 * Busy and overlap over one time window W (seconds, percentages of W):
 *  C = the union of the task intervals [start, end] over all workers, clipped to W;
 *  N = the union of the message intervals (send: first chunk staged to last chunk handed to
 *      ZeroMQ; receive: first chunk arrived to last chunk arrived; all peers), clipped to W;
 *  compute_pct = |C| / |W|, network_pct = |N| / |W|, overlap_pct = |C n N| / |W|,
 *  idle_pct = |W \ (C u N)| / |W|, so compute + network - overlap + idle = 100;
 *  overlap_share = |C n N| / max(|C|, |N|) in [0, 1], higher is better: the share of the
 *  critical resource's (the longer of the two) busy time during which the other was busy too
 *  (1.0: the shorter one hides entirely under the longer; 0 when nothing was busy);
 *  stretch = |W| / max(|C|, |N|) >= 1, lower is better: how much longer the window is than the
 *  longer of the two (1.0: it fills the window; 0 when nothing was busy). Result files written
 *  before this name call stretch "efficiency". Without link emulation a message interval is only
 *  the I/O thread's own time with it (staging, arrival), so network_pct is low on loopback.
 */
struct veil_busy {
    double wall_s, compute_s, network_s, overlap_s;
    double compute_pct, network_pct, overlap_pct, idle_pct;
    double overlap_share; /* |C n N| / max(|C|, |N|), higher is better */
    double stretch;       /* |W| / max(|C|, |N|), lower is better (was "efficiency") */
    uint64_t tasks, messages, bytes; /* events counted, payload bytes of the messages */
};
/** The threads of a party process, by what they do. */
enum veil_cpu_role {
    VEIL_CPU_WORKERS, /* StarPU's workers: the run's tasks */
    VEIL_CPU_SUBMIT,  /* the thread that called veil_run: the walk, the material reads */
    VEIL_CPU_NET,     /* the network's I/O thread: framing, sealing and opening, receive folds */
    VEIL_CPU_ZMQ,     /* ZeroMQ's threads: the sockets (the kernel's TCP copies) */
    VEIL_CPU_WIPER,   /* the buffer pool's wiper: zeroing given-back buffers */
    VEIL_CPU_OTHER,   /* any other thread of the process (StarPU's own, the application's) */
    VEIL_CPU_ROLE_COUNT
};
/** "workers", "submit", "net", "zmq", "wiper", "other". */
const char *veil_cpu_role_name(enum veil_cpu_role r);

/**
 * The CPU time the process's threads used over one window W, from the kernel's per-thread
 * scheduler statistics: what the busy figures above cannot show, since they see tasks and
 * messages only. A worker that is idle while the party's other threads (or other processes)
 * hold the process's CPUs is not waiting for its peer; busy_pct near 100 says so, and
 * wait_s[VEIL_CPU_WORKERS] is how long the workers were ready to run but had no CPU.
 * cpus == 0: not measured (all else zero): a kernel without per-thread scheduler statistics, or a
 * process of more than 128 threads (a warning says which).
 */
struct veil_cpu_use {
    int cpus;                             /* CPUs the process may run on (its affinity mask) */
    double window_s;                      /* W and the two snapshots' own reads (80-90 us each
                                             with a dozen threads, counted as the submitting
                                             thread's CPU time) */
    double cpu_s[VEIL_CPU_ROLE_COUNT];    /* seconds on a CPU in the window, per role */
    double wait_s[VEIL_CPU_ROLE_COUNT];   /* seconds runnable but waiting for a CPU, per role:
                                             behind other threads, and each wake-up's own delay */
    uint64_t slices[VEIL_CPU_ROLE_COUNT]; /* times a thread of the role was put on a CPU */
    double total_s;                       /* the sum of cpu_s */
    double busy_pct;                      /* 100 total_s / (window_s cpus): the CPUs used */
};

/**
 * One run's profile. total: W = the run's wall time (as online_s), every event of the run.
 * region[r]: only the tasks and messages submitted in region r, W = from the first start to the
 * last end of those events (regions overlap in time when the DAG pipelines across layers, so
 * their walls may add up to more than the run's); all zero when the region had no event.
 * cpu: the process's threads over the run (its first snapshot is taken just before the run's
 * clock starts, its second just after it stops).
 */
struct veil_run_profile {
    int run; /* index of the run in the session, from 0 */
    struct veil_busy total;
    struct veil_busy region[VEIL_REGION_COUNT];
    struct veil_cpu_use cpu;
};
/**
 * The profile of the last veil_run, derived from the trace's events. VEIL_ERR_INVAL (NULL),
 * VEIL_ERR_STATE when the party does not trace or has not run yet.
 */
int veil_party_last_profile(const veil_party_t *me, struct veil_run_profile *out);
/** Prints the profile as a table (a line for the run, one per region with events) to file (a
 * FILE*). */
void veil_run_profile_print(const struct veil_run_profile *p, void *file);

#ifdef __cplusplus
}
#endif
#endif

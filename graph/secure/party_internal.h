/*
 * party_internal.h — one process's side of a secure session (struct veil_party), shared by
 * party.c (open, close), party_place.c (devices and placement), party_run.c (veil_run and the
 * walk every run or step goes through), train.c (training steps, parameter and loss reveals)
 * and checkpoint.c (save and load). Never installed.
 */
#ifndef VEIL_GRAPH_PARTY_INTERNAL_H
#define VEIL_GRAPH_PARTY_INTERNAL_H

#include "base/cpu_use.h"
#include "graph/secure/exec_internal.h"
#include "net/net_internal.h"

struct veil_party {
    const veil_plan_t *p; /* borrowed: outlives the party */
    struct veil_party_options o;
    veil_net_t *net;
    veil_mpc_t *m;
    struct veil_exec x;
    int self, nparties, is_dealer, nprocs;
    int starpu_up;
    int has_dealer;
    struct veil_run_stats mark; /* counters at the end of the last run; zero before the first,
                                   so every payload byte of the session counts toward a run
                                   (the dealer's seed and early material: the first run) */
    uint64_t runs;              /* runs and steps begun in this session (dealer pacing) */
    uint64_t ack_word;          /* the acknowledgement's payload (its value is not used) */
    starpu_data_handle_t ack_h; /* registered over ack_word once needed */
    int prepared; /* veil_party_prepare shared the parameters (party_run.c) */
    int ahead;    /* at every process, from prepare to the first veil_run of an inference plan
                     with a dealer: the dealer dealt that run's material in prepare */
    int failed; /* a run failed: the session cannot go on */
    char fail_msg[256];
    struct veil_run_stats last;
    uint64_t steps; /* training steps done (restored by veil_party_load) */
    uint8_t joint_seed[16]; /* the last joint seed (public), saved in checkpoints */
    int seed_state;         /* 0: none; 1: drawn; 2: restored by a load, the next
                               veil_party_joint_seed returns it instead of drawing */
    enum veil_placement placement; /* resolved (never AUTO once open) */
    enum veil_device_kind kind;    /* resolved: CPU or CUDA */
    int ndev;
    int pin; /* a placement was asked for (options or VEIL_PLACEMENT / VEIL_DEVICES), or a
                calibration: tasks are pinned to devices; 0: StarPU's scheduler places every
                task */
    enum veil_placement asked;     /* the placement asked for (AUTO: the cost model's choice) */
    int calibrate;                 /* the next run is the calibration run (party.c, apply_calibration) */
    double *node_s;                /* after the calibration run: seconds per plan node measured
                                      on one device's worth of tasks; NULL before */
    char *trace_path;                /* tracing: the file pattern (owned), NULL when off */
    struct veil_run_profile profile; /* of the last run or step, when tracing */
    struct veil_cpu_snap *cpu_snap;  /* tracing: the threads at a run's start and end (2, owned);
                                        NULL when off or when /proc has no schedstat */
};

/** VEIL_OK when me can run (not NULL, not failed), else the error, prefixed by what. */
int veil_party_usable(veil_party_t *me, const char *what);

/**
 * One walk of nodes [0, end) (p->nforward: a run; p->count: a training step): binds this
 * party's feeds (parameters too while they are not shared yet), walks, waits, reveals the
 * outputs when end is p->nforward (a run; a training step reveals none) and decodes those
 * revealed here into outputs (may be NULL) and, when loss_to >= -1, the
 * per-example true-class probabilities into probs at the receivers; measures the costs into
 * me->last. An error marks the session failed. `what` prefixes messages.
 */
int veil_party_walk(veil_party_t *me, const char *what, size_t end,
                    const struct veil_feed *feeds, size_t nfeeds, double *const *outputs,
                    int loss_to, double *probs);

/**
 * The device kind, placement, device count and calibration asked for: the options, where they
 * defer to the environment e's values (base/env.c), checked against StarPU's workers. AUTO
 * placement is resolved later (veil_party_place). VEIL_ERR_INVAL / VEIL_ERR_UNSUPPORTED naming
 * what to change.
 */
struct veil_env_party;
int veil_party_resolve_placement(veil_party_t *me, const struct veil_env_party *e);

/** Resolves AUTO by the cost model (with the calibrated node times once measured), logs the
 *  choice and fills the executor's per-node placement. */
int veil_party_place(veil_party_t *me);

/** After the calibration run (run index run over nodes [0, end)): the measured node times
 *  replace the model's and the party places again. */
int veil_party_apply_calibration(veil_party_t *me, int run, size_t end);

/** Decodes a public tensor (after a barrier) into numel doubles. */
int veil_party_decode(veil_party_t *me, struct veil_pub *r, double *out);

#endif

/*
 * env.h — the library's one reader of the process environment (CZMQ's zsys habit). Every
 * variable Veil reads is a row of env.c's table, and README.md's "Environment variables" section
 * documents the same rows; the functions here turn the variables into the option structures the
 * harness, the logger, the network and the party session fill, each at the moment its
 * constructor fills its options: read when asked, not cached (a process that changes its
 * environment between two sessions sees the change), except the logger's level and the CPU GEMM
 * kernel, read once per process. Where an option field and a variable both set a value, the
 * field wins and the variable is only read (and checked) when the field holds its "ask the
 * environment" value. No other file of the library reads the environment. Not
 * thread-safe against a concurrent setenv. Never installed.
 */
#ifndef VEIL_BASE_ENV_H
#define VEIL_BASE_ENV_H

#include <stddef.h>
#include <stdint.h>

/**
 * The value of the environment variable name, NULL when it is not set. name must be a row of
 * env.c's table (asserted), so that every variable read is listed and documented.
 */
const char *veil_env_get(const char *name);

/** The i-th name of env.c's table (0-based), NULL past the end: README's table and the tests
 *  check against it. */
const char *veil_env_name(size_t i);

/** The log level index (0 error .. 3 debug) from VEIL_LOG into *level; untouched when the
 *  variable is unset or names no level. */
void veil_env_log_level(int *level);

/** 1 when VEIL_ALLOW_CORE_DUMPS=1 (debugging: party processes stay dumpable), else 0. */
int veil_env_allow_core_dumps(void);

/** VEIL_POOL_MAX_MB: the buffer pool's bound in MiB, VEIL_ENV_POOL_MIN_MB..VEIL_ENV_POOL_MAX_MB;
 *  0 when unset or empty, -1 when set to anything else. */
#define VEIL_ENV_POOL_MIN_MB 16
#define VEIL_ENV_POOL_MAX_MB (1L << 20)
long veil_env_pool_max_mb(void);

/** VEIL_PREFETCH_MB: how many MiB of its preprocessing file a party reads ahead, 0 (off) ..
 *  VEIL_ENV_PREFETCH_MAX_MB; VEIL_ENV_PREFETCH_DEFAULT_MB when unset or empty, -1 when set to
 *  anything else. */
#define VEIL_ENV_PREFETCH_DEFAULT_MB 128
#define VEIL_ENV_PREFETCH_MAX_MB 65536
long veil_env_prefetch_mb(void);

/** 0 when VEIL_IDLE_PAUSE=0 (StarPU's idle workers keep spinning while the process waits),
 *  else 1 (they are paused while no task is ready; net/idle.c). Read at each wait. */
int veil_env_idle_pause(void);

/** What the process harness passes on to its children (read in the parent, before forking). */
struct veil_env_harness {
    int verbose;              /* VEIL_TEST_VERBOSE=1: forward the children's output */
    const char *tmpdir;       /* TMPDIR, else "/tmp" */
    const char *starpu_sched; /* STARPU_SCHED, NULL when unset */
    int starpu_nopencl_set;   /* STARPU_NOPENCL is set (the harness then leaves it) */
};
void veil_env_harness(struct veil_env_harness *h);

/** The network's tuning: each field holds its default on entry and is replaced by its variable
 *  when that is set to a usable value (sizes take a k or M suffix; 0 or garbage keeps the
 *  default; the timeout must be > 0). */
#define VEIL_ENV_SPIN_US_MAX 100000 /* VEIL_NET_SPIN_US's largest value (0.1 s) */
#define VEIL_ENV_INLINE_SEND_MAX 1048576 /* VEIL_NET_INLINE_SEND's largest value (1 MiB) */
struct veil_env_net_tuning {
    size_t chunk_bytes;       /* VEIL_NET_CHUNK */
    size_t pool_bytes;        /* VEIL_NET_POOL */
    size_t early_cap_bytes;   /* VEIL_NET_EARLY_CAP */
    double connect_timeout_s; /* VEIL_NET_CONNECT_TIMEOUT */
    int data_channel;         /* VEIL_NET_DATA_CHANNEL: aes-gcm 1, curve 0, anything else -1 */
    int data_port;            /* VEIL_NET_DATA_PORT: 0..65535, -1 when not such a number */
    int spin_us;              /* VEIL_NET_SPIN_US: 0..100000, -1 when not such a number */
    long inline_send;         /* VEIL_NET_INLINE_SEND: bytes, 0..1048576, -1 when not such a
                                 number */
};
void veil_env_net_tuning(struct veil_env_net_tuning *t);

/** A session's network security and link from the environment veil-run gives each process. */
struct veil_env_net {
    int insecure;        /* VEIL_INSECURE_PLAINTEXT: 1, or 0 when unset, empty or "0" */
    const char *key_dir; /* VEIL_KEY_DIR, NULL when unset or empty */
    const char *link;    /* VEIL_LINK ("LATENCY,BANDWIDTH", parsed by net), NULL unset/empty */
    double timeout_s;    /* VEIL_NET_TIMEOUT, 0 when unset or empty */
};
/** Fills e; VEIL_ERR_INVAL naming the variable for a VEIL_INSECURE_PLAINTEXT other than 1 or 0
 *  or a VEIL_NET_TIMEOUT that is not a number of seconds in (0, 1e6]. */
int veil_env_net(struct veil_env_net *e);

/**
 * The party session's fallbacks (veil_party_options' fields that defer to the environment). On
 * entry each field holds the option's value; where that is the "ask the environment" value
 * (NULL or 0) the variable replaces it, and only then is the variable read and checked:
 *   material_seed  VEIL_MATERIAL_SEED (checked by the party: 32 hex digits); refused with
 *                  VEIL_ERR_INVAL unless VEIL_INSECURE_TEST_HOOKS=1 is also set (then a warning)
 *   trace_path     VEIL_TRACE (empty: no tracing)
 *   worker_nice    VEIL_WORKER_NICE, 0 to 19
 *   calibrate      VEIL_CALIBRATE, 0 or 1
 *   devices        VEIL_DEVICES, 1 to max_devices
 * and, always read, as names the party parses (NULL when unset or empty):
 *   device_kind    VEIL_DEVICE_KIND
 *   placement      VEIL_PLACEMENT
 * Returns VEIL_OK, or VEIL_ERR_INVAL "veil_party_open: NAME='VALUE' is not ... (LO to HI)".
 */
struct veil_env_party {
    const char *material_seed;
    const char *trace_path;
    int worker_nice;
    int calibrate;
    int devices;
    const char *device_kind;
    const char *placement;
};
int veil_env_party(struct veil_env_party *e, int max_devices);

/**
 * The testing hook VEIL_TEST_CRASH="WHERE:STEP:PHASE": when WHERE matches, *step and *phase
 * (1..16) say where the caller kills its own process (SIGKILL); otherwise both are 0. Refused with
 * VEIL_ERR_INVAL unless VEIL_INSECURE_TEST_HOOKS=1 is also set, so a production process never
 * honours it. Checkpoint writing (graph/secure/checkpoint_files.c) is the one WHERE so far.
 */
int veil_env_test_crash(const char *where, uint64_t *step, int *phase);

#endif

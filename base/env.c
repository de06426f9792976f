/*
 * env.c — the library's one reader of the process environment (see env.h): the table of every
 * variable Veil reads (README.md's "Environment variables" section documents the same rows),
 * one integer parser for the bounded values, and the functions that fill the option structures
 * of the harness (its children's identity too: veil_harness_party_from_env), the logger, the
 * network and the party session from the variables.
 */
#include "config.h"
#include "base/env.h"
#include "base/base_internal.h"
#include "base/harness.h"

#include <errno.h>
#include <string.h>

/* Every variable the library reads. A name missing here is an internal error (veil_env_get
 * asserts), so a new variable cannot be read without being listed; README.md's table gives each
 * row's values, default and the option field it stands in for. */
static const char *const known[] = {
    /* base/log.c */
    "VEIL_LOG",
    /* base/harness.c: the parent */
    "VEIL_TEST_VERBOSE",
    "TMPDIR",
    "STARPU_SCHED",
    "STARPU_NOPENCL",
    /* a child's identity, set by the harness (veil_harness_party_from_env) */
    "VEIL_PARTY_ID",
    "VEIL_NPARTIES",
    "VEIL_DEALER",
    "VEIL_SESSION",
    "VEIL_ENDPOINTS",
    "VEIL_LISTEN_FD",
    /* net: security and link (net/config_env.c), tuning (net/mesh.c) */
    "VEIL_INSECURE_PLAINTEXT",
    "VEIL_KEY_DIR",
    "VEIL_LINK",
    "VEIL_NET_TIMEOUT",
    "VEIL_NET_CHUNK",
    "VEIL_NET_POOL",
    "VEIL_NET_EARLY_CAP",
    "VEIL_NET_CONNECT_TIMEOUT",
    "VEIL_NET_DATA_CHANNEL",
    "VEIL_NET_DATA_PORT",
    "VEIL_NET_SPIN_US",
    "VEIL_NET_INLINE_SEND",
    /* codelets/cpu/gemm.c */
    "VEIL_GEMM_KERNEL",
    /* the party session (graph/secure/party.c): fallbacks of veil_party_options */
    "VEIL_MATERIAL_SEED",
    "VEIL_INSECURE_TEST_HOOKS",
    "VEIL_TRACE",
    "VEIL_WORKER_NICE",
    "VEIL_TEST_CRASH",
    "VEIL_CALIBRATE",
    "VEIL_DEVICES",
    "VEIL_DEVICE_KIND",
    "VEIL_PLACEMENT",
    /* base/secmem.c: the core-dump protection's opt-out, the buffer pool's bound */
    "VEIL_ALLOW_CORE_DUMPS",
    "VEIL_POOL_MAX_MB",
    /* tasks/mpc.c: how far a party reads its preprocessing file ahead (tasks/preproc_prefetch.c) */
    "VEIL_PREFETCH_MB",
    /* net/comm.c: idle StarPU workers paused while a process waits on the network */
    "VEIL_IDLE_PAUSE",
    /* net/heap.c: read only to see whether the environment tunes glibc's malloc itself */
    "GLIBC_TUNABLES",
    "MALLOC_TRIM_THRESHOLD_",
    "MALLOC_MMAP_THRESHOLD_",
    "MALLOC_TOP_PAD_",
    "MALLOC_MMAP_MAX_",
};

const char *veil_env_get(const char *name)
{
    size_t i = 0;
    while (i < sizeof known / sizeof known[0] && strcmp(known[i], name) != 0)
        i++;
    VEIL_ASSERT(i < sizeof known / sizeof known[0]);
    return getenv(name);
}

const char *veil_env_name(size_t i)
{
    return i < sizeof known / sizeof known[0] ? known[i] : NULL;
}

/* The value of name, NULL when unset or empty. */
static const char *value_of(const char *name)
{
    const char *v = veil_env_get(name);
    return v && *v ? v : NULL;
}

/* v as a decimal integer in [lo, hi] into *out: 0, or -1 when it is not one (nothing stored). */
static int parse_int(const char *v, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (*v == '\0' || *end != '\0' || errno || x < lo || x > hi)
        return -1;
    *out = x;
    return 0;
}

void veil_env_log_level(int *level)
{
    static const char *names[] = {"error", "warn", "info", "debug"};
    const char *e = veil_env_get("VEIL_LOG");
    for (int i = 0; e && i < VEIL_LOG_LEVEL_COUNT; i++)
        if (strcmp(e, names[i]) == 0)
            *level = i;
}

void veil_env_harness(struct veil_env_harness *h)
{
    const char *verbose = veil_env_get("VEIL_TEST_VERBOSE");
    h->verbose = verbose && strcmp(verbose, "1") == 0;
    h->tmpdir = veil_env_get("TMPDIR") ? veil_env_get("TMPDIR") : "/tmp";
    h->starpu_sched = veil_env_get("STARPU_SCHED");
    h->starpu_nopencl_set = veil_env_get("STARPU_NOPENCL") != NULL;
}

/* An integer of the harness identity: must be set (the launcher sets it). */
static int identity_int(const char *name, int lo, int hi, int *out)
{
    const char *v = veil_env_get(name);
    long x;
    if (!v)
        return veil_error(VEIL_ERR_INVAL, "%s is not set (start parties with veil-run)", name);
    if (parse_int(v, lo, hi, &x) != 0)
        return veil_error(VEIL_ERR_INVAL, "%s=%s: expected an integer in [%d, %d]", name, v, lo,
                          hi);
    *out = (int)x;
    return VEIL_OK;
}

/* VEIL_ENDPOINTS: exactly nprocs comma-separated endpoints. */
static int identity_endpoints(struct veil_harness_party *me, int nprocs)
{
    const char *e = veil_env_get("VEIL_ENDPOINTS");
    for (int i = 0; i < nprocs; i++) {
        if (!e || !*e)
            return veil_error(VEIL_ERR_INVAL, "VEIL_ENDPOINTS lists fewer than %d endpoints",
                              nprocs);
        size_t len = strcspn(e, ",");
        if (len == 0 || len >= sizeof me->endpoints[i])
            return veil_error(VEIL_ERR_INVAL, "VEIL_ENDPOINTS: endpoint %d is empty or too long",
                              i);
        memcpy(me->endpoints[i], e, len);
        me->endpoints[i][len] = '\0';
        e += len;
        if (*e == ',')
            e++;
    }
    if (e && *e)
        return veil_error(VEIL_ERR_INVAL, "VEIL_ENDPOINTS lists more than %d endpoints", nprocs);
    return VEIL_OK;
}

int veil_harness_party_from_env(struct veil_harness_party *me)
{
    memset(me, 0, sizeof *me);
    int rc;
    if ((rc = identity_int("VEIL_NPARTIES", 1, VEIL_HARNESS_MAX_PROCS - 1, &me->nparties)) !=
            VEIL_OK ||
        (rc = identity_int("VEIL_DEALER", 0, 1, &me->has_dealer)) != VEIL_OK ||
        (rc = identity_int("VEIL_PARTY_ID", 0, me->nparties - 1 + me->has_dealer, &me->id)) !=
            VEIL_OK)
        return rc;
    me->is_dealer = me->has_dealer && me->id == me->nparties;
    me->listen_fd = -1;
    const char *lfd = value_of("VEIL_LISTEN_FD");
    long fd;
    if (lfd) {
        if (parse_int(lfd, -1, 65535, &fd) != 0)
            return veil_error(VEIL_ERR_INVAL, "VEIL_LISTEN_FD=%s: expected a file descriptor", lfd);
        me->listen_fd = (int)fd;
    }
    const char *s = veil_env_get("VEIL_SESSION");
    if (!s || strlen(s) != 32 || strspn(s, "0123456789abcdef") != 32)
        return veil_error(VEIL_ERR_INVAL, "VEIL_SESSION must be 32 lowercase hex digits");
    memcpy(me->session, s, 33);
    return identity_endpoints(me, me->nparties + me->has_dealer);
}

int veil_env_idle_pause(void)
{
    const char *v = veil_env_get("VEIL_IDLE_PAUSE");
    return !(v && strcmp(v, "0") == 0);
}

int veil_env_allow_core_dumps(void)
{
    const char *v = veil_env_get("VEIL_ALLOW_CORE_DUMPS");
    return v && strcmp(v, "1") == 0;
}

long veil_env_pool_max_mb(void)
{
    const char *v = value_of("VEIL_POOL_MAX_MB");
    long mb;
    if (!v)
        return 0;
    return parse_int(v, VEIL_ENV_POOL_MIN_MB, VEIL_ENV_POOL_MAX_MB, &mb) == 0 ? mb : -1;
}

long veil_env_prefetch_mb(void)
{
    const char *v = value_of("VEIL_PREFETCH_MB");
    long mb;
    if (!v)
        return VEIL_ENV_PREFETCH_DEFAULT_MB;
    return parse_int(v, 0, VEIL_ENV_PREFETCH_MAX_MB, &mb) == 0 ? mb : -1;
}

/* A byte count with an optional k or M suffix; 0, garbage or unset keep dflt. */
static size_t env_size(const char *name, size_t dflt)
{
    const char *v = value_of(name);
    if (!v)
        return dflt;
    char *end;
    unsigned long long x = strtoull(v, &end, 10);
    if (*end == 'k' || *end == 'K')
        x <<= 10;
    else if (*end == 'm' || *end == 'M')
        x <<= 20;
    return x ? (size_t)x : dflt;
}

void veil_env_net_tuning(struct veil_env_net_tuning *t)
{
    t->chunk_bytes = env_size("VEIL_NET_CHUNK", t->chunk_bytes);
    t->pool_bytes = env_size("VEIL_NET_POOL", t->pool_bytes);
    t->early_cap_bytes = env_size("VEIL_NET_EARLY_CAP", t->early_cap_bytes);
    const char *c = veil_env_get("VEIL_NET_CONNECT_TIMEOUT");
    if (c && atof(c) > 0)
        t->connect_timeout_s = atof(c);
    const char *dc = value_of("VEIL_NET_DATA_CHANNEL");
    if (dc)
        t->data_channel = !strcmp(dc, "aes-gcm") ? 1 : !strcmp(dc, "curve") ? 0 : -1;
    const char *dp = value_of("VEIL_NET_DATA_PORT");
    long port;
    if (dp)
        t->data_port = parse_int(dp, 0, 65535, &port) == 0 ? (int)port : -1;
    const char *sp = value_of("VEIL_NET_SPIN_US");
    long us;
    if (sp)
        t->spin_us = parse_int(sp, 0, VEIL_ENV_SPIN_US_MAX, &us) == 0 ? (int)us : -1;
    const char *is = value_of("VEIL_NET_INLINE_SEND");
    long ib;
    if (is)
        t->inline_send = parse_int(is, 0, VEIL_ENV_INLINE_SEND_MAX, &ib) == 0 ? ib : -1;
}

int veil_env_net(struct veil_env_net *e)
{
    memset(e, 0, sizeof *e);
    const char *plain = value_of("VEIL_INSECURE_PLAINTEXT");
    if (plain) {
        if (strcmp(plain, "1") != 0 && strcmp(plain, "0") != 0)
            return veil_error(VEIL_ERR_INVAL, "VEIL_INSECURE_PLAINTEXT='%s': use 1 or 0", plain);
        e->insecure = plain[0] == '1';
    }
    e->key_dir = value_of("VEIL_KEY_DIR");
    e->link = value_of("VEIL_LINK");
    const char *to = value_of("VEIL_NET_TIMEOUT");
    if (to) {
        char *end = NULL;
        errno = 0;
        double t = strtod(to, &end);
        if (errno || end == to || *end || !(t > 0) || t > 1e6)
            return veil_error(VEIL_ERR_INVAL, "VEIL_NET_TIMEOUT='%s': a number of seconds > 0", to);
        e->timeout_s = t;
    }
    return VEIL_OK;
}

/* The party fallback name into *out when *out is 0 and the variable is set and not empty. */
static int party_int(const char *name, long lo, long hi, const char *what, int *out)
{
    const char *v = value_of(name);
    long x;
    if (*out != 0 || !v)
        return VEIL_OK;
    if (parse_int(v, lo, hi, &x) != 0)
        return veil_error(VEIL_ERR_INVAL, "veil_party_open: %s='%s' is not %s (%ld to %ld)", name,
                          v, what, lo, hi);
    *out = (int)x;
    return VEIL_OK;
}

int veil_env_party(struct veil_env_party *e, int max_devices)
{
    if (!e->material_seed && (e->material_seed = veil_env_get("VEIL_MATERIAL_SEED")) != NULL) {
        /* A fixed material seed lets whoever knows it unmask every opened value: a testing hook
         * that a production process must not honour by accident. */
        const char *hooks = veil_env_get("VEIL_INSECURE_TEST_HOOKS");
        if (!hooks || strcmp(hooks, "1") != 0)
            return veil_error(VEIL_ERR_INVAL,
                              "veil_party_open: VEIL_MATERIAL_SEED is set, a testing hook with "
                              "which anyone who knows the seed can unmask every opened value; "
                              "refused unless VEIL_INSECURE_TEST_HOOKS=1 is also set (tests "
                              "only; unset VEIL_MATERIAL_SEED for a secure session)");
        VEIL_LOG_WARN("INSECURE: VEIL_MATERIAL_SEED with VEIL_INSECURE_TEST_HOOKS=1: the "
                      "dealer's material comes from a fixed seed; anyone who knows it can "
                      "unmask every opened value (tests only)");
    }
    if (!e->trace_path)
        e->trace_path = value_of("VEIL_TRACE");
    e->device_kind = value_of("VEIL_DEVICE_KIND");
    e->placement = value_of("VEIL_PLACEMENT");
    int rc;
    if ((rc = party_int("VEIL_WORKER_NICE", 0, 19, "a nice value", &e->worker_nice)) != VEIL_OK ||
        (rc = party_int("VEIL_CALIBRATE", 0, 1, "0 or 1", &e->calibrate)) != VEIL_OK ||
        (rc = party_int("VEIL_DEVICES", 1, max_devices, "a device count", &e->devices)) !=
            VEIL_OK)
        return rc;
    return VEIL_OK;
}

int veil_env_test_crash(const char *where, uint64_t *step, int *phase)
{
    *step = 0;
    *phase = 0;
    const char *v = value_of("VEIL_TEST_CRASH");
    if (!v)
        return VEIL_OK;
    /* a process that kills itself on request is a testing hook: refused like the material seed */
    const char *hooks = veil_env_get("VEIL_INSECURE_TEST_HOOKS");
    if (!hooks || strcmp(hooks, "1") != 0)
        return veil_error(VEIL_ERR_INVAL, "VEIL_TEST_CRASH is set, a testing hook that kills this "
                          "process on purpose; refused unless VEIL_INSECURE_TEST_HOOKS=1 is also "
                          "set (tests only)");
    const size_t wl = strlen(where);
    if (strncmp(v, where, wl) != 0 || v[wl] != ':')
        return VEIL_OK;
    long s, ph;
    const char *colon = strchr(v + wl + 1, ':');
    char num[32];
    if (!colon || (size_t)(colon - (v + wl + 1)) >= sizeof num)
        return veil_error(VEIL_ERR_INVAL, "VEIL_TEST_CRASH='%s': use WHERE:STEP:PHASE", v);
    memcpy(num, v + wl + 1, (size_t)(colon - (v + wl + 1)));
    num[colon - (v + wl + 1)] = '\0';
    if (parse_int(num, 0, 1L << 30, &s) != 0 || parse_int(colon + 1, 1, 16, &ph) != 0)
        return veil_error(VEIL_ERR_INVAL, "VEIL_TEST_CRASH='%s': use WHERE:STEP:PHASE (a step "
                          "count, a phase 1 to 16)", v);
    *step = (uint64_t)s;
    *phase = (int)ph;
    return VEIL_OK;
}

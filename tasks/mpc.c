/*
 * mpc.c — the protocol context: roles and material sources, seed distribution at set-up,
 * deterministic tags and item indices, the item log, tiled tensors, and the quiescence barrier
 * (contracts in mpc.h). Correlated randomness is in mpc_material.c; opens, reveals, input sharing
 * and local ops in mpc_open.c; released tensors in mpc_release.c.
 */
#include "config.h"
#include "base/base_internal.h"
#include "base/env.h"
#include "base/secmem.h"
#include "codelets/codelets_internal.h"
#include "net/net_internal.h"
#include "tasks/mpc_internal.h"
#include "net/idle.h"

#include <string.h>

void veil_mpc_options_defaults(struct veil_mpc_options *o)
{
    memset(o, 0, sizeof *o);
    o->role = VEIL_MPC_PARTY;
    o->material = VEIL_MPC_MAT_DEALER;
    o->frac_bits = VEIL_FIXED_FRAC_BITS_DEFAULT;
    o->tile = VEIL_MPC_TILE_DEFAULT;
}

/* One 16-byte seed as a 2-word vector exchanged over the mesh at set-up. */
static int seed_exchange(veil_mpc_t *m, int from, int to, uint8_t seed[VEIL_SEED_BYTES])
{
    uint64_t words[2];
    starpu_data_handle_t h;
    memcpy(words, seed, sizeof words);
    starpu_vector_data_register(&h, STARPU_MAIN_RAM, (uintptr_t)words, 2, sizeof words[0]);
    int rc = m->self == from ? veil_net_isend(m->net, h, to, VEIL_MPC_TAG_SEED)
                             : veil_net_irecv(m->net, h, from, VEIL_MPC_TAG_SEED);
    if (rc == VEIL_OK)
        rc = veil_net_wait_all(m->net);
    starpu_data_unregister(h);
    if (m->self == to)
        memcpy(seed, words, sizeof words);
    veil_wipe(words, sizeof words);
    return rc;
}

/* Set-up of the seeds: whoever deals (the dealer, or party 0 in trusted-first-party mode)
 * draws every party's seed and sends each its own over the encrypted channel. */
static int distribute_seeds(veil_mpc_t *m)
{
    const int n = m->nparties;
    const int dealer = m->opt.material == VEIL_MPC_MAT_DEALER ? n : 0;
    int rc = VEIL_OK;
    if (m->self == dealer) {
        m->seeds = calloc((size_t)n, sizeof *m->seeds);
        if (!m->seeds)
            return veil_error(VEIL_ERR_NOMEM, "mpc: out of memory");
        for (int p = 0; p < n && rc == VEIL_OK; p++)
            rc = m->opt.use_material_seed
                     ? veil_seed_derive(m->opt.material_seed, VEIL_MPC_LABEL_MATSEED,
                                        (uint64_t)p, m->seeds[p])
                     : veil_seed_random(m->seeds[p]);
        for (int p = 0; p < n && rc == VEIL_OK; p++)
            if (p != dealer)
                rc = seed_exchange(m, dealer, p, m->seeds[p]);
        if (dealer < n)
            memcpy(m->seed, m->seeds[dealer], VEIL_SEED_BYTES);
    } else {
        rc = seed_exchange(m, dealer, m->self, m->seed);
    }
    return rc;
}

static veil_mpc_t *context_new(const struct veil_mpc_options *opts)
{
    veil_mpc_t *m = calloc(1, sizeof *m);
    if (!m) {
        veil_error(VEIL_ERR_NOMEM, "mpc: out of memory");
        return NULL;
    }
    if (opts)
        m->opt = *opts;
    else
        veil_mpc_options_defaults(&m->opt);
    if (m->opt.tile == 0)
        m->opt.tile = VEIL_MPC_TILE_DEFAULT;
    m->next_tag = VEIL_MPC_TAG_FIRST;
    m->allocs_complete = 1;
    return m;
}

static int check_options(const struct veil_mpc_options *o)
{
    if (o->role < 0 || o->role >= VEIL_MPC_ROLE_COUNT)
        return veil_error(VEIL_ERR_INVAL, "mpc: unknown role %d", (int)o->role);
    if (o->material < 0 || o->material >= VEIL_MPC_MAT_COUNT)
        return veil_error(VEIL_ERR_INVAL, "mpc: unknown material source %d", (int)o->material);
    if (o->frac_bits < 0 || o->frac_bits > VEIL_FIXED_FRAC_BITS_MAX)
        return veil_error(VEIL_ERR_INVAL, "mpc: %d fractional bits; use 0 to %d", o->frac_bits,
                          VEIL_FIXED_FRAC_BITS_MAX);
    if (o->tile > UINT32_MAX)
        return veil_error(VEIL_ERR_INVAL, "mpc: tile of %zu elements; at most 2^32 - 1", o->tile);
    if ((o->credit_step ? o->credit_step : VEIL_MPC_CREDIT_STEP_DEFAULT) >
        (o->credit_window ? o->credit_window : VEIL_MPC_CREDIT_WINDOW_DEFAULT))
        return veil_error(VEIL_ERR_INVAL, "mpc: credit window below the credit step (the dealer "
                          "could wait for a credit the designated party never sends)");
    if (o->material == VEIL_MPC_MAT_FILE && o->role == VEIL_MPC_PARTY && !o->preproc_path)
        return veil_error(VEIL_ERR_INVAL, "mpc: FILE material needs preproc_path");
    return VEIL_OK;
}

/* The flow control's defaults: a window of half the net's cap on early arrivals, at most 512 MiB
 * (so the corrections held early stay well within the cap, whatever VEIL_NET_EARLY_CAP says),
 * and a step of an eighth of it, at most 64 MiB. */
static void credit_defaults(struct veil_mpc_options *o, size_t early_cap)
{
    if (o->credit_window == 0) {
        o->credit_window = early_cap / 2 < VEIL_MPC_CREDIT_WINDOW_DEFAULT
                               ? early_cap / 2
                               : VEIL_MPC_CREDIT_WINDOW_DEFAULT;
        if (o->credit_window < 8)
            o->credit_window = 8;
    }
    if (o->credit_step == 0) {
        o->credit_step = o->credit_window / 8 < VEIL_MPC_CREDIT_STEP_DEFAULT
                             ? o->credit_window / 8
                             : VEIL_MPC_CREDIT_STEP_DEFAULT;
    }
}

/* Reads the preprocessing file ahead (VEIL_PREFETCH_MB, at most half the buffer pool's bound):
 * the parts the cache of released tensors cannot serve, over VEIL_MPC_CACHE_MAX_BYTES. Without
 * it (0, or no thread) every part is read by the walk, as before. */
static void start_prefetch(veil_mpc_t *m)
{
    long mb = veil_env_prefetch_mb();
    if (mb < 0) {
        VEIL_LOG_WARN("VEIL_PREFETCH_MB=%s: not a number of MiB in 0..%d; reading %d MiB ahead",
                      veil_env_get("VEIL_PREFETCH_MB"), VEIL_ENV_PREFETCH_MAX_MB,
                      VEIL_ENV_PREFETCH_DEFAULT_MB);
        mb = VEIL_ENV_PREFETCH_DEFAULT_MB;
    }
    size_t budget = (size_t)mb << 20;
    if (budget > veil_secbuf_max_bytes() / 2)
        budget = veil_secbuf_max_bytes() / 2;
    if (budget &&
        veil_preproc_reader_prefetch(m->reader, budget, VEIL_MPC_CACHE_MAX_BYTES + 1) != VEIL_OK)
        VEIL_LOG_WARN("mpc: %s; the preprocessing file is read as it is used", veil_last_error());
}

veil_mpc_t *veil_mpc_new(veil_net_t *net, const struct veil_mpc_options *opts)
{
    veil_mpc_t *m = context_new(opts);
    if (!m)
        return NULL;
    credit_defaults(&m->opt, net ? veil_net_early_cap(net) : 0);
    int rc = check_options(&m->opt);
    if (rc == VEIL_OK && !net)
        rc = veil_error(VEIL_ERR_INVAL, "mpc: a party or dealer needs an open network session");
    if (rc != VEIL_OK)
        goto fail;
    m->net = net;
    m->self = veil_net_self(net);
    m->nparties = veil_net_nparties(net);
    m->has_dealer = veil_net_has_dealer(net);
    const int dealer_role = m->self == m->nparties;
    if (dealer_role != (m->opt.role == VEIL_MPC_DEALER)) {
        rc = veil_error(VEIL_ERR_INVAL, "mpc: process %d of %d parties must have role %s", m->self,
                        m->nparties, dealer_role ? "DEALER" : "PARTY");
        goto fail;
    }
    if (m->opt.material == VEIL_MPC_MAT_DEALER && !m->has_dealer) {
        rc = veil_error(VEIL_ERR_INVAL, "mpc: DEALER material needs a dealer process in the "
                                        "session (start it, or use FILE or TRUSTED_FIRST_PARTY)");
        goto fail;
    }
    if (m->opt.material != VEIL_MPC_MAT_DEALER && dealer_role) {
        rc = veil_error(VEIL_ERR_INVAL, "mpc: a dealer process serves only DEALER material");
        goto fail;
    }
    rc = veil_preproc_layout_init(&m->layout, m->nparties, m->opt.frac_bits,
                                  veil_net_session_id(net));
    if (rc != VEIL_OK)
        goto fail;
    if (m->opt.material == VEIL_MPC_MAT_TRUSTED_FIRST_PARTY) {
        m->layout.designated = 0;
        VEIL_LOG_WARN("trusted-first-party preprocessing: party 0 learns every secret "
                      "(development only)");
    }
    if (m->opt.use_material_seed && m->self == m->nparties)
        VEIL_LOG_WARN("material seed set: every mask of this session can be rebuilt from it "
                      "(tests only, never with real data)");
    if (m->opt.material == VEIL_MPC_MAT_FILE) {
        rc = veil_preproc_reader_open(m->opt.preproc_path, &m->layout, m->self,
                                      m->opt.plan_digest, &m->reader);
        if (rc == VEIL_OK)
            start_prefetch(m);
    } else
        rc = distribute_seeds(m);
    if (rc != VEIL_OK)
        goto fail;
    veil_mpc_cache_init(m);
    return m;
fail:
    veil_mpc_destroy(&m);
    return NULL;
}

veil_mpc_t *veil_mpc_new_recorder(int nparties, const struct veil_mpc_options *opts)
{
    veil_mpc_t *m = context_new(opts);
    if (!m)
        return NULL;
    m->opt.role = VEIL_MPC_RECORDER;
    int rc = check_options(&m->opt);
    if (rc == VEIL_OK && (nparties < 2 || nparties > VEIL_PREPROC_MAX_PARTIES))
        rc = veil_error(VEIL_ERR_INVAL, "mpc: %d parties; use 2 to %d", nparties,
                        VEIL_PREPROC_MAX_PARTIES);
    if (rc != VEIL_OK) {
        veil_mpc_destroy(&m);
        return NULL;
    }
    m->nparties = nparties;
    m->self = nparties;
    return m;
}

int veil_mpc_wait(veil_mpc_t *m)
{
    if (!m)
        return veil_error(VEIL_ERR_INVAL, "veil_mpc_wait: NULL context");
    int rc = VEIL_OK;
    if (m->net)
        rc = veil_net_wait_all(m->net);
    else if (m->opt.role == VEIL_MPC_PARTY)
        starpu_task_wait_for_all();
    if (rc == VEIL_OK)
        veil_mpc_collect(m, 1);
    int task_rc = __atomic_load_n(&m->task_error, __ATOMIC_ACQUIRE);
    if (rc == VEIL_OK && task_rc != VEIL_OK)
        rc = veil_error(task_rc, "mpc: a protocol task failed (%s); see the log",
                        veil_strerror(task_rc));
    return rc;
}

void veil_mpc_task_failed(veil_mpc_t *m, int status, const char *what)
{
    int expected = VEIL_OK;
    __atomic_compare_exchange_n(&m->task_error, &expected, status, 0, __ATOMIC_ACQ_REL,
                                __ATOMIC_ACQUIRE);
    VEIL_LOG_ERR("protocol task failed: %s: %s (%s)", what, veil_strerror(status),
                 veil_last_error());
}

void veil_mpc_destroy(veil_mpc_t **mp)
{
    if (!mp || !*mp)
        return;
    veil_mpc_t *m = *mp;
    if (veil_mpc_wait(m) != VEIL_OK) {
        /* A failed session released every pending handle; what is left is safe to drop. */
        if (m->opt.role != VEIL_MPC_RECORDER)
            starpu_task_wait_for_all();
        veil_mpc_collect(m, 0);
    }
    veil_mpc_cache_drain(m);
    free(m->garbage);
    if (m->reader) {
        struct veil_preproc_prefetch_stats ps;
        veil_mpc_prefetch_stats(m, &ps);
        if (ps.taken + ps.missed)
            VEIL_LOG_INFO("mpc: preprocessing read ahead: %.1f MB; %llu parts taken, %llu read by "
                          "the walk, %llu dropped",
                          ps.read_bytes / 1e6, (unsigned long long)ps.taken,
                          (unsigned long long)ps.missed, (unsigned long long)ps.dropped);
    }
    veil_preproc_reader_close(&m->reader);
    if (m->seeds) {
        veil_wipe(m->seeds, (size_t)m->nparties * VEIL_SEED_BYTES);
        free(m->seeds);
    }
    veil_wipe(m->seed, sizeof m->seed);
    if (m->opt.role != VEIL_MPC_RECORDER) /* a recorder (prepare's) holds none of them */
        veil_secbuf_drain();              /* the session's pooled tensor buffers, wiped */
    free(m->items);
    free(m->allocs);
    free(m->wids);
    free(m);
    *mp = NULL;
}

int veil_mpc_computes(const veil_mpc_t *m)
{
    return m->opt.role == VEIL_MPC_PARTY;
}

int veil_mpc_self(const veil_mpc_t *m)
{
    return m->self;
}

int veil_mpc_nparties(const veil_mpc_t *m)
{
    return m->nparties;
}

int veil_mpc_frac_bits(const veil_mpc_t *m)
{
    return m->opt.frac_bits;
}

size_t veil_mpc_tile(const veil_mpc_t *m)
{
    return m->opt.tile;
}

veil_net_t *veil_mpc_net(veil_mpc_t *m)
{
    return m->net;
}

void veil_mpc_counters(const veil_mpc_t *m, uint64_t *next_item, uint64_t *next_tag)
{
    *next_item = m->next_item;
    *next_tag = m->next_tag;
}

int veil_mpc_set_counters(veil_mpc_t *m, uint64_t next_item, uint64_t next_tag)
{
    if (next_tag < VEIL_MPC_TAG_FIRST || next_tag >= VEIL_MPC_TAG_SEED ||
        next_item >= (UINT64_C(1) << 61))
        return veil_error(VEIL_ERR_INVAL, "mpc: counters (item %llu, tag %llu) outside their "
                          "ranges", (unsigned long long)next_item, (unsigned long long)next_tag);
    m->next_item = next_item;
    m->next_tag = next_tag;
    return VEIL_OK;
}

/* A blocking all-to-all among every process of the session (the dealer too): mine (words words)
 * goes to every other process, got[q * words ...] receives process q's (got[self] is left alone).
 * A set-up tag of its own: the dealer's protocol tag counter need not match the parties' (it never
 * exchanges protocol messages), and messages of one (peer, tag) stay in order. */
static int all_to_all(veil_mpc_t *m, uint64_t tag, uint64_t *mine, size_t words, uint64_t *got)
{
    const int n = veil_net_nprocs(m->net);
    starpu_data_handle_t hs = NULL, hr[VEIL_NET_MAX_PROCS] = {NULL};
    starpu_vector_data_register(&hs, STARPU_MAIN_RAM, (uintptr_t)mine, (uint32_t)words,
                                sizeof *mine);
    int rc = VEIL_OK;
    for (int q = 0; q < n && rc == VEIL_OK; q++) {
        if (q == m->self)
            continue;
        starpu_vector_data_register(&hr[q], STARPU_MAIN_RAM, (uintptr_t)(got + (size_t)q * words),
                                    (uint32_t)words, sizeof *got);
        rc = veil_net_isend(m->net, hs, q, tag);
        if (rc == VEIL_OK)
            rc = veil_net_irecv(m->net, hr[q], q, tag);
    }
    int wrc = veil_net_wait_all(m->net);
    if (rc == VEIL_OK)
        rc = wrc;
    for (int q = 0; q < n; q++)
        if (hr[q])
            starpu_data_unregister(hr[q]);
    starpu_data_unregister(hs);
    return rc;
}

int veil_mpc_agree(veil_mpc_t *m, uint64_t value, const char *what)
{
    if (!m->net)
        return VEIL_OK;
    uint64_t mine = value, got[VEIL_NET_MAX_PROCS];
    for (int q = 0; q < VEIL_NET_MAX_PROCS; q++)
        got[q] = value;
    int rc = all_to_all(m, VEIL_MPC_TAG_SEED + 1, &mine, 1, got);
    for (int q = 0; q < veil_net_nprocs(m->net) && rc == VEIL_OK; q++)
        if (q != m->self && got[q] != value)
            rc = veil_error(VEIL_ERR_MISMATCH, "%s: process %d is at %llu, this one at %llu", what,
                            q, (unsigned long long)got[q], (unsigned long long)value);
    return rc;
}

int veil_mpc_exchange(veil_mpc_t *m, uint64_t *mine, size_t words, uint64_t *got)
{
    return m->net ? all_to_all(m, VEIL_MPC_TAG_SEED + 3, mine, words, got) : VEIL_OK;
}

int veil_mpc_joint_seed(veil_mpc_t *m, uint8_t seed[VEIL_SEED_BYTES])
{
    uint64_t mine[2], got[2 * VEIL_NET_MAX_PROCS];
    int rc = veil_seed_random((uint8_t *)mine);
    if (rc != VEIL_OK || !m->net) {
        memcpy(seed, mine, VEIL_SEED_BYTES);
        return rc;
    }
    memset(got, 0, sizeof got);
    rc = all_to_all(m, VEIL_MPC_TAG_SEED + 2, mine, 2, got);
    for (int q = 0; q < veil_net_nprocs(m->net); q++)
        if (q != m->self) {
            mine[0] ^= got[2 * q];
            mine[1] ^= got[2 * q + 1];
        }
    memcpy(seed, mine, VEIL_SEED_BYTES);
    veil_wipe(mine, sizeof mine);
    return rc;
}

uint64_t veil_mpc_tags(veil_mpc_t *m, uint64_t count)
{
    uint64_t first = m->next_tag;
    m->next_tag += count;
    return first;
}

void veil_mpc_round(veil_mpc_t *m)
{
    if (m->net && m->opt.role == VEIL_MPC_PARTY)
        veil_net_stats_mark_round(m->net);
}

const struct veil_preproc_item *veil_mpc_items(const veil_mpc_t *m, size_t *n)
{
    if (n)
        *n = m->nitems;
    return m->items;
}

int veil_mpc_log_item(veil_mpc_t *m, const struct veil_preproc_item *item)
{
    if (m->opt.role != VEIL_MPC_RECORDER) {
        m->nitems++;
        return VEIL_OK;
    }
    if (m->nitems == m->items_cap) {
        size_t cap = m->items_cap ? 2 * m->items_cap : 64;
        struct veil_preproc_item *n = realloc(m->items, cap * sizeof *n);
        if (!n)
            return veil_error(VEIL_ERR_NOMEM, "mpc: out of memory for the item log");
        m->items = n;
        m->items_cap = cap;
    }
    m->items[m->nitems++] = *item;
    return VEIL_OK;
}

void veil_mpc_set_priority(veil_mpc_t *m, int priority)
{
    m->priority = priority;
}

void veil_mpc_set_placement(veil_mpc_t *m, const struct veil_place *p)
{
    veil_place_set(veil_mpc_computes(m) ? p : NULL);
}

int veil_mpc_priority(const veil_mpc_t *m)
{
    return m->priority;
}

/* ---- tensors ------------------------------------------------------------------------------ */

int veil_sec_shape(veil_mpc_t *m, struct veil_sec *t, enum veil_share_kind kind, int ndim,
                   const size_t *dims, size_t tile)
{
    memset(t, 0, sizeof *t);
    if (kind < 0 || kind >= VEIL_SHARE_KIND_COUNT)
        return veil_error(VEIL_ERR_INVAL, "tensor: unknown share kind %d", (int)kind);
    if (ndim < 0 || ndim > VEIL_MAX_DIMS || (ndim && !dims))
        return veil_error(VEIL_ERR_SHAPE, "tensor: %d dimensions; use 0 to %d", ndim,
                          VEIL_MAX_DIMS);
    size_t numel = 1;
    for (int i = 0; i < ndim; i++) {
        if (dims[i] == 0)
            return veil_error(VEIL_ERR_SHAPE, "tensor: dimension %d is 0", i);
        if (numel > (SIZE_MAX / 16) / dims[i])
            return veil_error(VEIL_ERR_RANGE, "tensor: shape too large (dimension %d)", i);
        numel *= dims[i];
        t->dims[i] = dims[i];
    }
    t->kind = kind;
    t->ndim = ndim;
    t->numel = numel;
    t->tile = tile == 0 ? m->opt.tile : tile;
    if (t->tile > numel)
        t->tile = numel;
    if (t->tile > UINT32_MAX)
        return veil_error(VEIL_ERR_RANGE, "tensor: a tile of %zu elements does not fit a StarPU "
                                          "vector; tile it", t->tile);
    t->ntiles = (int)((numel + t->tile - 1) / t->tile);
    return VEIL_OK;
}

int veil_sec_alloc(veil_mpc_t *m, struct veil_sec *t)
{
    if (veil_mpc_cache_take(m, t))
        return VEIL_OK;
    t->data = veil_secbuf_get(t->numel * 8); /* zeroed, pooled (base/secmem.c) */
    if (!t->data)
        return veil_error(VEIL_ERR_NOMEM, "tensor: out of memory for %zu elements", t->numel);
    return VEIL_OK;
}

int veil_sec_register(struct veil_sec *t)
{
    if (t->h)
        return VEIL_OK; /* it came with the buffer (mpc_release.c) */
    t->h = calloc((size_t)t->ntiles, sizeof *t->h);
    if (!t->h)
        return veil_error(VEIL_ERR_NOMEM, "tensor: out of memory for %d handles", t->ntiles);
    for (int i = 0; i < t->ntiles; i++)
        starpu_vector_data_register(&t->h[i], STARPU_MAIN_RAM,
                                    (uintptr_t)(t->data + (size_t)i * t->tile),
                                    (uint32_t)veil_sec_tile_numel(t, i), sizeof(uint64_t));
    for (int i = 0; i < t->ntiles; i++)
        veil_place_tag(t->h[i], i); /* a spread placement sends tile i to device i mod D */
    return VEIL_OK;
}

int veil_sec_init(veil_mpc_t *m, struct veil_sec *t, enum veil_share_kind kind, int ndim,
                  const size_t *dims, size_t tile)
{
    int rc = veil_sec_shape(m, t, kind, ndim, dims, tile);
    if (rc == VEIL_OK && !veil_mpc_computes(m))
        veil_mpc_note_alloc(m, t->numel);
    if (rc != VEIL_OK || !veil_mpc_computes(m))
        return rc;
    if ((rc = veil_sec_alloc(m, t)) != VEIL_OK || (rc = veil_sec_register(t)) != VEIL_OK) {
        veil_secbuf_put(t->data, t->numel * 8);
        memset(t, 0, sizeof *t);
    }
    return rc;
}

int veil_sec_init_words(veil_mpc_t *m, struct veil_sec *t, enum veil_share_kind kind, int ndim,
                        const size_t *dims, size_t tile, const uint64_t *words)
{
    int rc = veil_sec_shape(m, t, kind, ndim, dims, tile);
    if (rc == VEIL_OK && !veil_mpc_computes(m))
        veil_mpc_note_alloc(m, t->numel);
    if (rc != VEIL_OK || !veil_mpc_computes(m))
        return rc;
    if ((rc = veil_sec_alloc(m, t)) != VEIL_OK)
        return rc;
    if (words)
        memcpy(t->data, words, t->numel * 8);
    if ((rc = veil_sec_register(t)) != VEIL_OK) {
        veil_secbuf_put(t->data, t->numel * 8); /* wiped: it holds the words */
        memset(t, 0, sizeof *t);
    }
    return rc;
}

int veil_sec_init_like(veil_mpc_t *m, struct veil_sec *t, const struct veil_sec *like)
{
    int rc = veil_sec_init(m, t, like->kind, like->ndim, like->dims, like->tile);
    return rc;
}

size_t veil_sec_tile_numel(const struct veil_sec *t, int i)
{
    size_t start = (size_t)i * t->tile;
    size_t left = t->numel - start;
    return left < t->tile ? left : t->tile;
}

int veil_sec_same_layout(const struct veil_sec *a, const struct veil_sec *b)
{
    if (a->ndim != b->ndim || a->numel != b->numel || a->tile != b->tile)
        return 0;
    for (int i = 0; i < a->ndim; i++)
        if (a->dims[i] != b->dims[i])
            return 0;
    return 1;
}

int veil_sec_to_host(struct veil_sec *t)
{
    for (int i = 0; t && t->h && i < t->ntiles; i++) {
        if (starpu_data_acquire(t->h[i], STARPU_R) != 0)
            return veil_error(VEIL_ERR_STARPU, "cannot bring tile %d of %d to host memory", i,
                              t->ntiles);
        starpu_data_release(t->h[i]);
    }
    veil_net_idle_kick(); /* a release may make a writer ready: resume paused workers */
    return VEIL_OK;
}

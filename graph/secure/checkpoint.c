/*
 * checkpoint.c — veil_party_save / veil_party_load (include/veil/graph.h, CHECKPOINTS): one file
 * per process holding its shares of the parameters and SGD velocities (Adam: both moments), the
 * step count (Adam's t) and the
 * protocol context's item and tag counters and the session's joint seed (the data order), bound
 * to the session id, the party id, the party count and the plan digest, closed by a SHA-256 over
 * everything before it, kept in two generations (checkpoint_files.c). Loading checks each
 * generation's digest, bindings and records against the plan, then the processes exchange the
 * steps they hold and all load the newest step every one of them has (or all refuse, naming who
 * holds what), before anything changes.
 *
 * FORMAT (little-endian): "VEILCKP1", u32 version (2; 3 when a record has flag 4), u32 party,
 * u32 nparties, u32 0,
 * session[16], plan digest[32], model name[64] (NUL-padded), u64 steps, u64 next item,
 * u64 next tag, u32 records, u32 0, u32 1 when a joint seed follows (else 0), u32 0, seed[16];
 * per record (every PARAM node, plan order): u32 node index,
 * u32 flags (1: the parameter is shared, 2: it has a velocity or Adam's first moment, 4: Adam's
 * second moment, version 3 only), u64 numel, then at a party the share words of each flagged
 * tensor in that order (numel u64 each; the dealer holds no shares); SHA-256[32]. Version 2 is
 * what every SGD plan writes, byte for byte as before Adam; this build reads 2 and 3 and refuses
 * any other version (1 included) naming it.
 */
#include "config.h"

#include "base/base_internal.h"
#include "data/data_internal.h"
#include "graph/secure/checkpoint_internal.h"
#include "graph/secure/party_internal.h"
#include "net/idle.h"

#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAGIC "VEILCKP1"
#define CKP_VERSION 2u      /* SGD: no second moments */
#define CKP_VERSION_ADAM 3u /* records may carry flag 4 */
#define HDR (8 + 4 * 4 + 16 + 32 + 64 + 3 * 8 + 2 * 4 + 2 * 4 + 16)
#define NONE UINT64_MAX
#define REC 16

static void hex(const uint8_t *s, size_t n, char *out)
{
    for (size_t i = 0; i < n; i++)
        snprintf(out + 2 * i, 3, "%02x", s[i]);
}

/* Copies the share words of t (quiescent) into p; VEIL_ERR_STARPU when a tile cannot be read. */
static int read_words(const struct veil_sec *t, uint8_t *p)
{
    for (int k = 0; k < t->ntiles; k++)
        if (starpu_data_acquire(t->h[k], STARPU_R) != 0) {
            for (int j = 0; j < k; j++)
                starpu_data_release(t->h[j]);
            return veil_error(VEIL_ERR_STARPU, "checkpoint: cannot read a parameter's share");
        }
    for (size_t e = 0; e < t->numel; e++)
        veil_put_le64(p + 8 * e, t->data[e]);
    for (int k = 0; k < t->ntiles; k++)
        starpu_data_release(t->h[k]);
    veil_net_idle_kick(); /* a release may make a writer ready: resume paused workers */
    return VEIL_OK;
}

/* Size of this process's file. */
static size_t file_size(const veil_party_t *me)
{
    size_t total = HDR + 32;
    for (size_t i = 0; i < me->p->count; i++) {
        if (me->p->nodes[i].op != VEIL_OP_PARAM)
            continue;
        total += REC;
        if (!me->is_dealer)
            total += 8 * me->p->nodes[i].numel *
                     ((me->x.val[i].numel ? 1u : 0u) + (me->x.velocity[i].numel ? 1u : 0u) +
                      (me->x.moment2[i].numel ? 1u : 0u));
    }
    return total;
}

int veil_party_save(veil_party_t *me, const char *path)
{
    int rc = veil_party_usable(me, "veil_party_save");
    if (rc != VEIL_OK)
        return rc;
    if (me->ahead) /* the dealer's counters are a run ahead of the parties' (party_run.c) */
        return veil_error(VEIL_ERR_STATE, "veil_party_save: between veil_party_prepare and the "
                          "first veil_run, whose material the dealer has dealt; save after a run");
    if (!path)
        return veil_error(VEIL_ERR_INVAL, "veil_party_save: no path");
    if ((rc = veil_mpc_wait(me->m)) != VEIL_OK ||
        (rc = veil_mpc_agree(me->m, me->steps, "veil_party_save")) != VEIL_OK) {
        /* a lost peer: the others' state cannot be committed with it, nothing is written */
        me->failed = 1;
        snprintf(me->fail_msg, sizeof me->fail_msg, "%s", veil_last_error());
        return rc;
    }
    const size_t total = file_size(me);
    uint8_t *b = calloc(1, total), *p = b;
    if (!b)
        return veil_error(VEIL_ERR_NOMEM, "veil_party_save %s: out of memory", path);
    uint64_t item, tag;
    veil_mpc_counters(me->m, &item, &tag);
    uint32_t nrec = 0, version = CKP_VERSION;
    for (size_t i = 0; i < me->p->count; i++) {
        nrec += me->p->nodes[i].op == VEIL_OP_PARAM;
        if (me->p->nodes[i].op == VEIL_OP_PARAM && me->x.moment2[i].numel)
            version = CKP_VERSION_ADAM;
    }
    memcpy(p, MAGIC, 8);
    veil_put_le32(p + 8, version);
    veil_put_le32(p + 12, (uint32_t)me->self);
    veil_put_le32(p + 16, (uint32_t)me->nparties);
    memcpy(p + 24, me->net->cfg.session, 16);
    memcpy(p + 40, me->p->digest, 32);
    memcpy(p + 72, me->p->model, strnlen(me->p->model, 63));
    veil_put_le64(p + 136, me->steps);
    veil_put_le64(p + 144, item);
    veil_put_le64(p + 152, tag);
    veil_put_le32(p + 160, nrec);
    veil_put_le32(p + 168, me->seed_state ? 1u : 0u);
    if (me->seed_state)
        memcpy(p + 176, me->joint_seed, 16);
    p += HDR;
    for (size_t i = 0; rc == VEIL_OK && i < me->p->count; i++) {
        const struct veil_node *n = &me->p->nodes[i];
        if (n->op != VEIL_OP_PARAM)
            continue;
        const struct veil_sec *ts[3] = {&me->x.val[i], &me->x.velocity[i], &me->x.moment2[i]};
        veil_put_le32(p, (uint32_t)i);
        veil_put_le32(p + 4, (ts[0]->numel ? 1u : 0u) | (ts[1]->numel ? 2u : 0u) |
                                 (ts[2]->numel ? 4u : 0u));
        veil_put_le64(p + 8, n->numel);
        p += REC;
        for (int k = 0; k < 3 && !me->is_dealer && rc == VEIL_OK; k++) {
            const struct veil_sec *t = ts[k];
            if (t->numel && (rc = read_words(t, p)) == VEIL_OK)
                p += 8 * t->numel;
        }
    }
    if (rc == VEIL_OK)
        rc = veil_data_sha256(b, total - 32, b + total - 32, "checkpoint");
    if (rc == VEIL_OK)
        rc = veil_ckpt_write(path, b, total, me->steps);
    veil_wipe(b, total); /* shares are secret material */
    free(b);
    if (rc == VEIL_OK)
        VEIL_LOG_INFO("checkpoint saved after step %llu", (unsigned long long)me->steps);
    return rc;
}

/* The bindings of the header against this session; VEIL_ERR_MISMATCH naming what differs. */
static int check_binding(const veil_party_t *me, const char *path, const uint8_t *b)
{
    char a[65], e[65];
    if (memcmp(b + 24, me->net->cfg.session, 16) != 0) {
        hex(b + 24, 16, a);
        hex(me->net->cfg.session, 16, e);
        return veil_error(VEIL_ERR_MISMATCH, "checkpoint %s belongs to session %s, not to this "
                          "session %s", path, a, e);
    }
    if (veil_get_le32(b + 16) != (uint32_t)me->nparties)
        return veil_error(VEIL_ERR_MISMATCH, "checkpoint %s was saved with %u parties, this "
                          "session has %d", path, veil_get_le32(b + 16), me->nparties);
    const uint32_t saver = veil_get_le32(b + 12);
    if (saver != (uint32_t)me->self)
        return veil_error(VEIL_ERR_MISMATCH, "checkpoint %s was saved by %s %u, this process is "
                          "%s %d: each process loads its own file", path,
                          saver == (uint32_t)me->nparties ? "the dealer, id" : "party", saver,
                          me->is_dealer ? "the dealer, id" : "party", me->self);
    if (memcmp(b + 40, me->p->digest, 32) != 0) {
        char model[65];
        memcpy(model, b + 72, 64);
        model[64] = '\0';
        hex(b + 40, 8, a);
        hex(me->p->digest, 8, e);
        return veil_error(VEIL_ERR_MISMATCH, "checkpoint %s was saved for model '%s' (plan "
                          "digest %s...), this session runs model '%s' (plan digest %s...): "
                          "another model, shapes or compile options", path, model, a,
                          me->p->model, e);
    }
    return VEIL_OK;
}

/* Walks the records (apply 0: checks them against the plan and the length; 1: installs them). */
static int records(veil_party_t *me, const char *path, const uint8_t *b, size_t len, int apply)
{
    const uint8_t *p = b + HDR, *end = b + len - 32;
    const uint32_t nrec = veil_get_le32(b + 160);
    for (uint32_t r = 0; r < nrec; r++) {
        if ((size_t)(end - p) < REC)
            return veil_error(VEIL_ERR_FORMAT, "checkpoint %s: truncated record %u", path, r);
        const uint32_t i = veil_get_le32(p), flags = veil_get_le32(p + 4);
        const uint64_t numel = veil_get_le64(p + 8);
        p += REC;
        if (i >= me->p->count || me->p->nodes[i].op != VEIL_OP_PARAM ||
            me->p->nodes[i].numel != numel || flags > 7)
            return veil_error(VEIL_ERR_FORMAT, "checkpoint %s: record %u does not match a "
                              "parameter of plan '%s'", path, r, me->p->model);
        const struct veil_node *n = &me->p->nodes[i];
        const size_t tile = veil_exec_leaf_tile(&me->x, (int)i);
        for (int k = 0; k < 3; k++) {
            if (!(flags & (1u << k)))
                continue;
            uint64_t *words = NULL;
            if (!me->is_dealer) {
                if ((uint64_t)(end - p) / 8 < numel)
                    return veil_error(VEIL_ERR_FORMAT, "checkpoint %s: truncated shares of '%s'",
                                      path, n->name);
                if (apply && !(words = malloc((numel ? numel : 1) * 8)))
                    return veil_error(VEIL_ERR_NOMEM, "veil_party_load: out of memory");
                for (size_t e = 0; words && e < numel; e++)
                    words[e] = veil_get_le64(p + 8 * e);
                p += 8 * numel;
            }
            if (!apply)
                continue;
            struct veil_sec *t = k == 2 ? &me->x.moment2[i]
                                 : k ? &me->x.velocity[i] : &me->x.val[i];
            veil_mpc_release(me->m, t);
            int rc = veil_sec_init_words(me->m, t, VEIL_SHARE_ARITH, n->ndim, n->dims, tile,
                                         words);
            if (words) {
                veil_wipe(words, numel * 8);
                free(words);
            }
            if (rc != VEIL_OK)
                return rc;
        }
    }
    if (p != end)
        return veil_error(VEIL_ERR_FORMAT, "checkpoint %s: %zu bytes after the last record",
                          path, (size_t)(end - p));
    return VEIL_OK;
}

int veil_ckpt_check_format(const uint8_t *b, size_t len, const char *path)
{
    uint8_t digest[32];
    if (len < HDR + 32 || memcmp(b, MAGIC, 8) != 0)
        return veil_error(VEIL_ERR_FORMAT, "checkpoint %s: not a Veil checkpoint (%s)", path,
                          len < HDR + 32 ? "too short" : "bad magic");
    int rc = veil_data_sha256(b, len - 32, digest, "checkpoint");
    if (rc != VEIL_OK)
        return rc;
    if (memcmp(digest, b + len - 32, 32) != 0)
        return veil_error(VEIL_ERR_CRYPTO, "checkpoint %s: SHA-256 mismatch: the file is "
                          "corrupted or was altered", path);
    const uint32_t version = veil_get_le32(b + 8);
    if (version != CKP_VERSION && version != CKP_VERSION_ADAM)
        return veil_error(VEIL_ERR_FORMAT, "checkpoint %s: version %u, this build reads %u and %u",
                          path, version, CKP_VERSION, CKP_VERSION_ADAM);
    const uint32_t party = veil_get_le32(b + 12), np = veil_get_le32(b + 16);
    if (np < 1 || np >= VEIL_NET_MAX_PROCS || party > np || veil_get_le32(b + 20) != 0 ||
        veil_get_le32(b + 164) != 0 || veil_get_le32(b + 168) > 1 || veil_get_le32(b + 172) != 0 ||
        veil_get_le64(b + 136) == NONE)
        return veil_error(VEIL_ERR_FORMAT, "checkpoint %s: bad header fields", path);
    /* the records' structure: a party's hold share words, the dealer's none; nothing after */
    const uint8_t *p = b + HDR, *end = b + len - 32;
    const uint32_t nrec = veil_get_le32(b + 160);
    for (uint32_t r = 0; r < nrec; r++) {
        if ((size_t)(end - p) < REC)
            return veil_error(VEIL_ERR_FORMAT, "checkpoint %s: truncated record %u", path, r);
        const uint32_t flags = veil_get_le32(p + 4);
        const uint64_t numel = veil_get_le64(p + 8);
        p += REC;
        if (flags > (version == CKP_VERSION ? 3u : 7u))
            return veil_error(VEIL_ERR_FORMAT, "checkpoint %s: record %u: bad flags", path, r);
        const uint64_t words =
            party == np ? 0 : numel * ((flags & 1) + ((flags >> 1) & 1) + (flags >> 2));
        if (party != np && (numel > (uint64_t)(end - p) / 8 || words > (uint64_t)(end - p) / 8))
            return veil_error(VEIL_ERR_FORMAT, "checkpoint %s: truncated shares in record %u",
                              path, r);
        p += 8 * words;
    }
    if (p != end)
        return veil_error(VEIL_ERR_FORMAT, "checkpoint %s: %zu bytes after the last record",
                          path, (size_t)(end - p));
    return VEIL_OK;
}

/* One generation: its bytes (checked) and its step; b NULL and step NONE when refused. */
struct gen {
    uint8_t *b;
    size_t len;
    uint64_t step;
};

/* Reads and checks the generation in path (digest, version, bindings, records against the
 * plan); VEIL_OK, or the refusal with its message, g left empty. */
static int read_gen(veil_party_t *me, const char *path, struct gen *g)
{
    uint8_t *b = NULL;
    size_t len = 0;
    g->b = NULL;
    g->len = 0;
    g->step = NONE;
    int rc = veil_data_read_file(path, 0, &b, &len);
    if (rc != VEIL_OK)
        return rc;
    rc = veil_ckpt_check_format(b, len, path);
    if (rc == VEIL_OK)
        rc = check_binding(me, path, b);
    if (rc == VEIL_OK)
        rc = records(me, path, b, len, 0);
    if (rc != VEIL_OK) {
        veil_wipe(b, len);
        free(b);
        return rc;
    }
    g->b = b;
    g->len = len;
    g->step = veil_get_le64(b + 136);
    return VEIL_OK;
}

/* The newest step that every process holds (got: two steps per process, NONE for none). */
static uint64_t common_step(const uint64_t *got, int nprocs)
{
    uint64_t best = NONE;
    for (int k = 0; k < 2; k++) {
        const uint64_t s = got[k];
        int all = s != NONE;
        for (int q = 1; q < nprocs && all; q++)
            all = got[2 * q] == s || got[2 * q + 1] == s;
        if (all && (best == NONE || s > best))
            best = s;
    }
    return best;
}

/* VEIL_ERR_MISMATCH: no step every process holds, naming what each holds. */
static int refuse_disagreement(const veil_party_t *me, const char *path, const uint64_t *got)
{
    char what[400];
    size_t at = 0;
    for (int q = 0; q < me->nprocs && at < sizeof what; q++) {
        const uint64_t a = got[2 * q], b = got[2 * q + 1];
        char who[32];
        if (q == me->nparties)
            snprintf(who, sizeof who, "the dealer");
        else
            snprintf(who, sizeof who, "party %d", q);
        if (a == NONE && b == NONE)
            at += (size_t)snprintf(what + at, sizeof what - at, "%s%s none", q ? "; " : "", who);
        else if (a == NONE || b == NONE)
            at += (size_t)snprintf(what + at, sizeof what - at, "%s%s step %llu", q ? "; " : "",
                                   who, (unsigned long long)(a == NONE ? b : a));
        else
            at += (size_t)snprintf(what + at, sizeof what - at, "%s%s steps %llu and %llu",
                                   q ? "; " : "", who, (unsigned long long)a,
                                   (unsigned long long)b);
    }
    return veil_error(VEIL_ERR_MISMATCH, "checkpoint %s: no step that every process holds "
                      "(%s): nothing loaded; restart from the beginning or restore the files",
                      path, what);
}

/* Replaces the session's state by generation g (checked by read_gen). */
static int install(veil_party_t *me, const char *path, const struct gen *g)
{
    const uint8_t *b = g->b;
    int rc = veil_mpc_set_counters(me->m, veil_get_le64(b + 144), veil_get_le64(b + 152));
    if (rc != VEIL_OK)
        return rc;
    /* from here the state is replaced; the checks of read_gen guarantee the records fit */
    for (size_t i = 0; i < me->p->count; i++)
        if (me->p->nodes[i].op == VEIL_OP_PARAM) {
            veil_mpc_release(me->m, &me->x.val[i]);
            veil_mpc_release(me->m, &me->x.velocity[i]);
            veil_mpc_release(me->m, &me->x.moment2[i]);
        }
    rc = records(me, path, b, g->len, 1);
    me->steps = g->step;
    /* the data order goes on from the saved joint seed: the next joint seed call returns it */
    me->seed_state = veil_get_le32(b + 168) ? 2 : 0;
    memcpy(me->joint_seed, b + 176, 16);
    if (rc != VEIL_OK) {
        me->failed = 1;
        snprintf(me->fail_msg, sizeof me->fail_msg, "%s", veil_last_error());
    }
    return rc;
}

/* The load: both generations read, the steps exchanged, the newest common one installed. Over 60
 * lines because each refusal keeps its own message for the caller. */
int veil_party_load(veil_party_t *me, const char *path)
{
    int rc = veil_party_usable(me, "veil_party_load");
    if (rc != VEIL_OK)
        return rc;
    if (me->ahead)
        return veil_error(VEIL_ERR_STATE, "veil_party_load: between veil_party_prepare and the "
                          "first veil_run, whose material the dealer has dealt; load before "
                          "veil_party_prepare");
    if (!path)
        return veil_error(VEIL_ERR_INVAL, "veil_party_load: no path");
    if ((rc = veil_mpc_wait(me->m)) != VEIL_OK)
        return rc;
    char prev[4200], refusal[512] = "";
    if ((rc = veil_ckpt_prev_path(path, prev, sizeof prev)) != VEIL_OK)
        return rc;
    struct gen g[2];
    int refusal_rc = VEIL_OK;
    for (int k = 0; k < 2; k++) {
        const char *f = k ? prev : path;
        if (k && access(f, F_OK) != 0) {
            g[k] = (struct gen){NULL, 0, NONE};
            continue; /* no previous generation: the usual case */
        }
        int grc = read_gen(me, f, &g[k]);
        if (grc != VEIL_OK && (refusal_rc == VEIL_OK || access(path, F_OK) != 0)) {
            /* the newest generation's refusal, unless only the previous one exists */
            refusal_rc = grc;
            snprintf(refusal, sizeof refusal, "%s", veil_last_error());
        }
    }
    uint64_t got[2 * VEIL_NET_MAX_PROCS];
    got[2 * me->self] = g[0].step;
    got[2 * me->self + 1] = g[1].step;
    if ((rc = veil_mpc_exchange(me->m, got + 2 * me->self, 2, got)) != VEIL_OK) {
        me->failed = 1;
        snprintf(me->fail_msg, sizeof me->fail_msg, "%s", veil_last_error());
    }
    const uint64_t s = rc == VEIL_OK ? common_step(got, me->nprocs) : NONE;
    if (rc == VEIL_OK && s == NONE)
        rc = g[0].b || g[1].b || refusal_rc == VEIL_OK
                 ? refuse_disagreement(me, path, got)
                 : veil_error(refusal_rc, "%s", refusal);
    const int k = g[0].step == s ? 0 : 1;
    if (rc == VEIL_OK && (rc = veil_ckpt_promote(path, k)) == VEIL_OK)
        rc = install(me, path, &g[k]);
    for (int j = 0; j < 2; j++)
        if (g[j].b) {
            veil_wipe(g[j].b, g[j].len);
            free(g[j].b);
        }
    if (rc == VEIL_OK)
        VEIL_LOG_INFO("checkpoint loaded: resuming after step %llu",
                      (unsigned long long)me->steps);
    return rc;
}

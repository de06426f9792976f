/*
 * mpc_material.c — correlated randomness as DAG data (contract in mpc.h). Each part of a
 * party's share is a tiled tensor written by per-tile expansion tasks (PRG words of the item's
 * stream, or the designated party's correction; a PRG part of at most VEIL_MPC_FILL_INLINE_WORDS
 * words is expanded at request time instead); the designated party's tasks read the
 * correction, which is a receive from the dealer (DEALER), a local computation task (party 0 in
 * TRUSTED_FIRST_PARTY) or absent (FILE: the stored share is read into the parts at request
 * time). From the dealer the correction lands straight in the corrected parts' tiles (one
 * message, net/comm.h veil_net_irecv_tiles), as the local task's does when it is one tile: no
 * buffer, no copy task. The dealer computes each correction in a task and sends it; a recorder
 * only logs the item.
 *
 * FLOW CONTROL WITHIN A RUN. The dealer walks the plan as fast as it can submit corrections, the
 * designated party only as fast as its own walk goes (which waits at memory barriers), and a
 * correction that arrives before its receive is posted is held as an early arrival, within the
 * net's cap (1 GiB by default). So the designated party grants credit: each time the corrections
 * it has posted receives for pass another credit_step bytes (64 MiB) beyond its last credit, it
 * sends the dealer a credit message holding that cumulative byte count; the dealer sends a
 * correction only while its cumulative bytes sent stay within credit_window (512 MiB, or half the
 * net's cap when that is smaller) of the
 * last count received, and otherwise blocks on the next credit. At most credit_window bytes of
 * corrections are early at the designated party, whatever the plan's material per run
 * (BERT-large's layer: 1.9 GB). No deadlock: the granted count is at least posted - credit_step,
 * so with credit_window >= credit_step every correction whose receive is posted can be sent.
 */
#include "config.h"
#include "base/base_internal.h"
#include "base/secmem.h"
#include "base/trace.h"
#include "codelets/codelets_internal.h"
#include "net/idle.h"
#include "tasks/carry4_common.h"
#include "tasks/mpc_internal.h"

#include <string.h>

struct correction_args {
    veil_mpc_t *m;
    struct veil_preproc_layout layout;
    struct veil_preproc_item item;
    uint8_t seeds[VEIL_PREPROC_MAX_PARTIES][VEIL_SEED_BYTES];
};

static void correction_cpu(void *buffers[], void *cl_arg)
{
    struct correction_args *a = cl_arg;
    uint64_t *out = (uint64_t *)STARPU_VECTOR_GET_PTR(buffers[0]);
    size_t n = STARPU_VECTOR_GET_NX(buffers[0]);
    int rc = veil_preproc_dealer_correction(&a->layout, &a->item,
                                            (const uint8_t(*)[VEIL_SEED_BYTES])a->seeds, out, n);
    if (rc != VEIL_OK)
        veil_mpc_task_failed(a->m, rc, "dealer correction");
}

static struct starpu_perfmodel correction_model = {.type = STARPU_HISTORY_BASED,
                                                   .symbol = "veil_preproc_correction"};
static struct starpu_codelet correction_cl = {
    .cpu_funcs = {correction_cpu},
    .cpu_funcs_name = {"correction_cpu"},
    .nbuffers = 1,
    .modes = {STARPU_W},
    .model = &correction_model,
    .name = "veil_preproc_correction",
};

struct fill_args {
    veil_mpc_t *m;
    struct veil_preproc_layout layout;
    struct veil_preproc_item item;
    uint8_t seed[VEIL_SEED_BYTES];
    int party;
    int part;
    size_t start;
};

static void fill_cpu(void *buffers[], void *cl_arg)
{
    struct fill_args *a = cl_arg;
    uint64_t *dst = (uint64_t *)STARPU_VECTOR_GET_PTR(buffers[0]);
    size_t n = STARPU_VECTOR_GET_NX(buffers[0]);
    const uint64_t *corr = STARPU_TASK_GET_NBUFFERS(starpu_task_get_current()) > 1
                               ? (const uint64_t *)STARPU_VECTOR_GET_PTR(buffers[1])
                               : NULL;
    int rc = veil_preproc_part_fill(&a->layout, &a->item, a->party, a->seed, a->part, a->start, n,
                                    corr, dst);
    veil_wipe(a->seed, sizeof a->seed);
    if (rc != VEIL_OK)
        veil_mpc_task_failed(a->m, rc, "material expansion");
}

static struct starpu_perfmodel fill_model = {.type = STARPU_HISTORY_BASED,
                                             .symbol = "veil_preproc_fill"};
static struct starpu_codelet fill_cl = {
    .cpu_funcs = {fill_cpu},
    .cpu_funcs_name = {"fill_cpu"},
    .nbuffers = 1,
    .modes = {STARPU_W},
    .model = &fill_model,
    .name = "veil_preproc_fill",
};
static struct starpu_codelet fill_corr_cl = {
    .cpu_funcs = {fill_cpu},
    .cpu_funcs_name = {"fill_cpu"},
    .nbuffers = 2,
    .modes = {STARPU_W, STARPU_R},
    .model = &fill_model,
    .name = "veil_preproc_fill",
};

static int submit_args(veil_mpc_t *m, struct starpu_codelet *cl, void *args, size_t size,
                       starpu_data_handle_t h0, starpu_data_handle_t h1, const char *what)
{
    /* Arguments are copied into the task (cl_arg_free) so the caller's stack can go. */
    void *copy = malloc(size);
    if (!copy)
        return veil_error(VEIL_ERR_NOMEM, "mpc: out of memory for a %s task", what);
    memcpy(copy, args, size);
    struct starpu_task *t = starpu_task_create();
    t->cl = cl;
    t->cl_arg = copy;
    t->cl_arg_size = size;
    t->cl_arg_free = 1;
    t->handles[0] = h0;
    if (h1)
        t->handles[1] = h1;
    t->priority = veil_mpc_priority(m);
    veil_trace_task_attach(t);
    veil_place_pin_task(t, h0); /* h0 is the part the task writes */
    int rc = starpu_task_submit(t);
    veil_net_idle_kick(); /* it may be ready: resume paused workers */
    if (rc != 0) {
        t->destroy = 0;
        starpu_task_destroy(t);
        return veil_error(VEIL_ERR_STARPU, "mpc: %s task submission failed (%d)", what, rc);
    }
    return VEIL_OK;
}

/* The whole correction of item as one vector handle, with its buffer, deferred for release: a
 * one-tile tensor's, so that steady runs take the last run's buffer and handle back from the
 * cache of released tensors (mpc_release.c) instead of registering one. */
static int correction_tensor(veil_mpc_t *m, size_t words, starpu_data_handle_t *h)
{
    struct veil_sec t;
    const size_t dims[1] = {words};
    int rc = veil_sec_shape(m, &t, VEIL_SHARE_ARITH, 1, dims, SIZE_MAX);
    if (rc == VEIL_OK && (rc = veil_sec_alloc(m, &t)) == VEIL_OK &&
        (rc = veil_sec_register(&t)) == VEIL_OK)
        *h = t.h[0];
    veil_mpc_release(m, &t); /* deferred: freed or kept at the next barrier */
    return rc;
}

size_t veil_mpc_ahead_limit(const veil_mpc_t *m)
{
    return m && m->opt.credit_window > m->opt.credit_step
               ? m->opt.credit_window - m->opt.credit_step
               : 0;
}

uint64_t veil_mpc_correction_bytes(const veil_mpc_t *m)
{
    return m ? m->mat_bytes : 0;
}

uint64_t veil_mpc_fill_tasks(const veil_mpc_t *m)
{
    return m ? m->fill_tasks : 0;
}

/* The designated party, after posting the receive of a correction of `bytes`: a credit message
 * (an 8-byte detached send of the cumulative posted bytes) once they pass the last grant by
 * credit_step. */
static int grant_credit(veil_mpc_t *m, uint64_t bytes)
{
    m->mat_bytes += bytes;
    if (m->mat_bytes - m->granted < m->opt.credit_step)
        return VEIL_OK;
    uint64_t *word = veil_aligned_alloc(8);
    starpu_data_handle_t *h = malloc(sizeof *h);
    if (!word || !h) {
        veil_aligned_free(word);
        free(h);
        return veil_error(VEIL_ERR_NOMEM, "mpc: out of memory for a credit");
    }
    *word = m->mat_bytes;
    starpu_vector_data_register(h, STARPU_MAIN_RAM, (uintptr_t)word, 1, 8);
    int rc = veil_net_isend(m->net, *h, m->nparties, VEIL_MPC_TAG_CREDIT | m->credits);
    int drc = veil_mpc_defer(m, h, 1, word, 8);
    if (rc != VEIL_OK)
        return rc;
    m->granted = m->mat_bytes;
    m->credits++;
    return drc;
}

/* The dealer, before sending a correction of `bytes`: blocks until the designated party's
 * credit covers it (see FLOW CONTROL). A credit that does not grow is a protocol error; the
 * session's error if the session fails meanwhile. */
static int await_credit(veil_mpc_t *m, uint64_t bytes)
{
    const int from = m->layout.designated;
    while (m->mat_bytes + bytes > m->granted + m->opt.credit_window) {
        uint64_t word = 0;
        starpu_data_handle_t h;
        starpu_vector_data_register(&h, STARPU_MAIN_RAM, (uintptr_t)&word, 1, 8);
        int rc = veil_net_irecv(m->net, h, from, VEIL_MPC_TAG_CREDIT | m->credits);
        if (rc == VEIL_OK && veil_net_idle_acquire(h, STARPU_R) == 0) /* idle workers sleep */
            starpu_data_release(h);
        starpu_data_unregister(h);
        if (rc == VEIL_OK)
            rc = veil_net_status(m->net);
        if (rc == VEIL_OK && word <= m->granted)
            rc = veil_error(VEIL_ERR_PROTO,
                            "mpc: credit %llu from party %d grants %llu bytes of material, not "
                            "more than the %llu granted before",
                            (unsigned long long)m->credits, from, (unsigned long long)word,
                            (unsigned long long)m->granted);
        if (rc != VEIL_OK)
            return rc;
        m->granted = word;
        m->credits++;
    }
    m->mat_bytes += bytes;
    return VEIL_OK;
}

static int submit_correction(veil_mpc_t *m, const struct veil_preproc_item *item,
                             starpu_data_handle_t h)
{
    struct correction_args a = {.m = m, .layout = m->layout, .item = *item};
    memcpy(a.seeds, m->seeds, (size_t)m->nparties * VEIL_SEED_BYTES);
    int rc = submit_args(m, &correction_cl, &a, sizeof a, h, NULL, "correction");
    veil_wipe(&a, sizeof a);
    return rc;
}

/* Whether the designated party gets the correction straight into its corrected parts: from the
 * dealer always (one message scattered over every corrected part's tiles in part order, which is
 * the correction's layout, tasks/preproc.h); computed here (trusted first party) when the item
 * has one corrected part of one tile, since the correction task writes one handle. Otherwise the
 * correction goes to a buffer that a fill task per tile copies from. */
static int direct_ok(const veil_mpc_t *m, const struct veil_preproc_desc *desc,
                     const struct veil_mpc_mat *out)
{
    if (m->opt.material == VEIL_MPC_MAT_DEALER)
        return 1;
    int found = -1;
    for (int j = 0; j < desc->nparts; j++)
        if (desc->part[j].corrected) {
            if (found >= 0)
                return 0;
            found = j;
        }
    return found >= 0 && out->part[found].ntiles == 1;
}

/* Registers the corrected parts of *out and posts their correction: one receive from the dealer
 * over all their tiles, or the correction task into the one tile (direct_ok). */
static int post_direct(veil_mpc_t *m, const struct veil_preproc_item *item,
                       const struct veil_preproc_desc *desc, struct veil_mpc_mat *out, uint64_t tag)
{
    int nh = 0, rc = VEIL_OK;
    for (int j = 0; j < desc->nparts; j++)
        nh += desc->part[j].corrected ? out->part[j].ntiles : 0;
    starpu_data_handle_t *hs = malloc((size_t)nh * sizeof *hs);
    if (!hs)
        return veil_error(VEIL_ERR_NOMEM, "mpc: out of memory for %d handles", nh);
    nh = 0;
    for (int j = 0; j < desc->nparts && rc == VEIL_OK; j++) {
        struct veil_sec *p = &out->part[j];
        if (!desc->part[j].corrected || (rc = veil_sec_register(p)) != VEIL_OK)
            continue;
        memcpy(hs + nh, p->h, (size_t)p->ntiles * sizeof *hs);
        nh += p->ntiles;
    }
    if (rc == VEIL_OK && m->opt.material == VEIL_MPC_MAT_DEALER) {
        rc = veil_net_irecv_tiles(m->net, hs, nh, m->nparties, tag);
        if (rc == VEIL_OK)
            rc = grant_credit(m, desc->correction_words * 8);
    } else if (rc == VEIL_OK) {
        rc = submit_correction(m, item, hs[0]);
    }
    free(hs);
    return rc;
}

uint64_t veil_mpc_material_words(const veil_mpc_t *m)
{
    return m ? m->mat_words : 0;
}

void veil_mpc_prefetch_stats(const veil_mpc_t *m, struct veil_preproc_prefetch_stats *s)
{
    veil_preproc_reader_prefetch_stats(m ? m->reader : NULL, s);
}

int veil_mpc_material(veil_mpc_t *m, struct veil_preproc_item item, size_t tile,
                      struct veil_mpc_mat *out)
{
    return veil_mpc_material_skip(m, item, tile, 0, out);
}

int veil_mpc_material_skip(veil_mpc_t *m, struct veil_preproc_item item, size_t tile, unsigned skip,
                           struct veil_mpc_mat *out)
{
    struct veil_preproc_desc desc;
    memset(out, 0, sizeof *out);
    item.index = m->next_item;
    int rc = veil_preproc_item_describe(&item, &desc);
    if (rc != VEIL_OK)
        return rc;
    if (desc.correction_words > UINT32_MAX)
        return veil_error(VEIL_ERR_RANGE, "mpc: %s needs a correction of %zu words; split it",
                          veil_preproc_kind_name(item.kind), desc.correction_words);
    /* refused at every process alike (SPMD), before the item is taken */
    for (int j = 0; j < VEIL_PREPROC_MAX_PARTS; j++)
        if ((skip & 1u << j) && (j >= desc.nparts || desc.part[j].corrected))
            return veil_error(VEIL_ERR_INVAL, "mpc: %s has no part %d that can be left out (%s)",
                              veil_preproc_kind_name(item.kind), j,
                              j >= desc.nparts ? "no such part" : "it is corrected");
    if (skip >> VEIL_PREPROC_MAX_PARTS)
        return veil_error(VEIL_ERR_INVAL, "mpc: skip mask %#x names no part of %s", skip,
                          veil_preproc_kind_name(item.kind));
    m->next_item++;
    if ((rc = veil_mpc_log_item(m, &item)) != VEIL_OK)
        return rc;
    out->item = item;
    out->nparts = desc.nparts;
    for (int j = 0; j < desc.nparts && rc == VEIL_OK; j++) {
        const size_t dims[1] = {desc.part[j].numel};
        int packed = item.kind == VEIL_PREPROC_BIT && j == VEIL_PRE_BIT_B;
        size_t ptile = packed ? SIZE_MAX : tile;
        /* CMPPROD tiles by its own tile parameter (176 words per block of 64 elements); CARRY4's
         * tile counts records, so each part tiles by its words per record */
        if (item.kind == VEIL_PREPROC_CMPPROD)
            ptile = item.p[VEIL_PRE_CMPPROD_TILE] >= item.p[VEIL_PRE_N]
                        ? SIZE_MAX
                        : VEIL_C4_LEAF_WORDS * (size_t)((item.p[VEIL_PRE_CMPPROD_TILE] + 63) / 64);
        else if (item.kind == VEIL_PREPROC_CARRY4 && tile != 0)
            ptile = tile >= (size_t)item.p[VEIL_PRE_N]
                        ? SIZE_MAX
                        : tile * (desc.part[j].numel / (size_t)item.p[VEIL_PRE_N]);
        rc = veil_sec_shape(m, &out->part[j], desc.part[j].form, 1, dims, ptile);
    }
    if (rc == VEIL_OK && m->opt.role == VEIL_MPC_RECORDER)
        for (int j = 0; j < desc.nparts; j++)
            if (!(skip & 1u << j)) /* what a party allocates below */
                veil_mpc_note_alloc(m, out->part[j].numel);
    if (rc != VEIL_OK || m->opt.role == VEIL_MPC_RECORDER)
        return rc;

    const uint64_t tag = VEIL_MPC_TAG_MATERIAL | item.index;
    const int designated = m->layout.designated;
    starpu_data_handle_t corr = NULL;
    if (m->opt.role == VEIL_MPC_DEALER) {
        if (desc.correction_words == 0)
            return VEIL_OK;
        if ((rc = await_credit(m, desc.correction_words * 8)) != VEIL_OK ||
            (rc = correction_tensor(m, desc.correction_words, &corr)) != VEIL_OK ||
            (rc = submit_correction(m, &item, corr)) != VEIL_OK)
            return rc;
        return veil_net_isend(m->net, corr, designated, tag);
    }

    /* A party: memory for every part it does not leave out; from a file, a part the reader read
     * ahead is taken as it is (tasks/preproc_prefetch.c). */
    unsigned ahead = 0;
    for (int j = 0; j < desc.nparts && rc == VEIL_OK; j++)
        if (!(skip & 1u << j)) {
            const size_t bytes = out->part[j].numel * 8;
            if (m->opt.material == VEIL_MPC_MAT_FILE && bytes > VEIL_MPC_CACHE_MAX_BYTES &&
                (out->part[j].data = veil_preproc_take_prefetched(m->reader, j, bytes)))
                ahead |= 1u << j;
            else
                rc = veil_sec_alloc(m, &out->part[j]);
            m->mat_words += out->part[j].numel;
        }
    if (rc != VEIL_OK)
        goto fail;

    if (m->opt.material == VEIL_MPC_MAT_FILE) { /* read straight into the parts' buffers */
        uint64_t *dst[VEIL_PREPROC_MAX_PARTS] = {0};
        for (int j = 0; j < desc.nparts; j++) /* NULL: skipped in the file, or read ahead */
            dst[j] = (skip | ahead) & 1u << j ? NULL : out->part[j].data;
        rc = veil_preproc_next_into(m->reader, &item, dst);
        for (int j = 0; j < desc.nparts && rc == VEIL_OK; j++)
            if (!(skip & 1u << j))
                rc = veil_sec_register(&out->part[j]);
        if (rc != VEIL_OK)
            goto fail;
        return VEIL_OK;
    }

    /* The designated party: its corrected parts' words are the correction's, which is received
     * from the dealer or computed by a task here (TRUSTED_FIRST_PARTY), straight into the parts
     * when direct_ok, else into a buffer that fill tasks copy from. */
    int direct = 0;
    if (m->self == designated && desc.correction_words > 0) {
        if ((direct = direct_ok(m, &desc, out)))
            rc = post_direct(m, &item, &desc, out, tag);
        else if ((rc = correction_tensor(m, desc.correction_words, &corr)) == VEIL_OK)
            rc = submit_correction(m, &item, corr); /* trusted first party (direct_ok) */
        if (rc != VEIL_OK)
            goto fail;
    }
    for (int j = 0; j < desc.nparts && rc == VEIL_OK; j++) {
        struct veil_sec *p = &out->part[j];
        const int uses_corr = corr && desc.part[j].corrected;
        if ((direct && desc.part[j].corrected) || (skip & 1u << j))
            continue; /* registered, its correction posted; or left out */
        if (!uses_corr && p->numel <= VEIL_MPC_FILL_INLINE_WORDS) {
            /* a small PRG part: expanding it here costs less than a task's round trip through
             * the scheduler (the same words either way) */
            rc = veil_preproc_part_fill(&m->layout, &item, m->self, m->seed, j, 0, p->numel, NULL,
                                        p->data);
            if (rc == VEIL_OK)
                rc = veil_sec_register(p);
            continue;
        }
        if ((rc = veil_sec_register(p)) != VEIL_OK)
            break;
        for (int t = 0; t < p->ntiles && rc == VEIL_OK; t++) {
            struct fill_args a = {.m = m,
                                  .layout = m->layout,
                                  .item = item,
                                  .party = m->self,
                                  .part = j,
                                  .start = (size_t)t * p->tile};
            memcpy(a.seed, m->seed, sizeof a.seed);
            rc = submit_args(m, uses_corr ? &fill_corr_cl : &fill_cl, &a, sizeof a, p->h[t],
                             uses_corr ? corr : NULL, "material expansion");
            veil_wipe(a.seed, sizeof a.seed);
            m->fill_tasks += rc == VEIL_OK;
        }
    }
    if (rc == VEIL_OK)
        return VEIL_OK;
fail:
    veil_mpc_mat_release(m, out);
    return rc;
}

void veil_mpc_mat_release(veil_mpc_t *m, struct veil_mpc_mat *mat)
{
    if (!mat)
        return;
    for (int j = 0; j < mat->nparts; j++)
        veil_mpc_release(m, &mat->part[j]);
    memset(mat, 0, sizeof *mat);
}

/* Tests the protocol foundation with real party processes (N = 2, 3, 4 with a dealer process,
 * and N = 3 in trusted-first-party mode): input sharing from two owners, local add / scalar ops,
 * masked open against a mask, reveal to one party and to all, and correlated randomness
 * delivered as DAG data (Beaver c = a*b, truncation r_hi = r >> f and r_63, shared bits in both
 * forms) — and N = 3 with material generated ahead into per-party files from a recorder's item
 * list — every revealed value checked exactly against plaintext, and every party's bytes and
 * rounds checked against the formulas of mpc.h. Also: bad arguments are refused, and real inputs
 * outside the documented range (NaN, |x| >= the bound) are refused at the owner. Only a recorder
 * keeps the list of items it requested; a party counts them (a list grew for as long as a session
 * ran). A repeated request leaves the tensor pool as it found it (the corrections were freshly
 * allocated at every request and piled up in the pool). */
#include "config.h"
#include "base/base_internal.h"
#include "base/harness.h"
#include "base/secmem.h"
#include "net/net_internal.h"
#include "tasks/mpc.h"
#include "test_util.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define N_ELEMS 1000
#define TILE 256 /* 4 tiles: the last one short */

struct run {
    enum veil_mpc_material material;
    char dir[64];            /* FILE: where the per-party files are */
    uint8_t digest[32];      /* FILE: the plan digest */
    char pub[VEIL_NET_MAX_PROCS][VEIL_Z85_KEY_CHARS + 1];
    char sec[VEIL_NET_MAX_PROCS][VEIL_Z85_KEY_CHARS + 1];
};

/* t's words in host memory (a tile last written on a GPU is copied back); after a wait. */
static void to_host(struct veil_sec *t)
{
    VT_CHECK(veil_sec_to_host(t) == VEIL_OK, "to host memory: %s", veil_last_error());
}

static struct run the_run; /* what every run hands its processes (forked: a copy each) */
static int tfp; /* the run is in trusted-first-party mode */

static void plain_input(uint64_t salt, uint64_t *v)
{
    uint8_t seed[VEIL_SEED_BYTES] = {(uint8_t)salt, 0x5e};
    veil_prg_t *g = veil_prg_new(seed);
    veil_prg_fill(g, v, N_ELEMS);
    veil_prg_destroy(&g);
    v[0] = 0;
    v[1] = UINT64_MAX;
    v[2] = UINT64_C(1) << 63;
}

static uint64_t bytes_sent(veil_mpc_t *m)
{
    uint64_t total = 0;
    veil_net_t *net = veil_mpc_net(m);
    for (int q = 0; q < veil_net_nprocs(net); q++) {
        struct veil_net_stats st;
        if (q != veil_net_self(net) && veil_net_stats_get(net, q, &st) == VEIL_OK)
            total += st.bytes_sent;
    }
    return total;
}

static uint64_t rounds(veil_mpc_t *m)
{
    struct veil_net_stats st;
    veil_net_stats_get(veil_mpc_net(m), veil_net_self(veil_mpc_net(m)) == 0 ? 1 : 0, &st);
    return st.rounds;
}

/* A Beaver item over the inline bound, in `tiles` tiles: a and b are PRG parts, one expansion
 * task per tile each; c is its only corrected part. The designated party (the last; party 0 in
 * trusted-first-party mode) gets c straight into the part: received from the dealer into every
 * tile (one message), or computed there when it is one tile; otherwise a task per tile copies it
 * from the correction, as every other party expands c by a task per tile. No party submits any
 * from FILE material (read at request time). At every party c = a b. */
static void direct_correction(veil_mpc_t *m, int tiles)
{
    enum { BIG = 3 * VEIL_MPC_FILL_INLINE_WORDS };
    const int n = veil_mpc_nparties(m), self = veil_mpc_self(m);
    const uint64_t before = veil_mpc_fill_tasks(m);
    struct veil_mpc_mat mat;
    struct veil_pub pub[3];
    memset(pub, 0, sizeof pub);
    int rc = veil_mpc_material(m, veil_preproc_item_beaver(0, BIG),
                               tiles == 1 ? SIZE_MAX : (size_t)BIG / (size_t)tiles, &mat);
    for (int j = 0; j < 3 && rc == VEIL_OK; j++)
        rc = veil_mpc_reveal(m, &mat.part[j], -1, &pub[j]);
    if (rc == VEIL_OK)
        rc = veil_mpc_wait(m);
    if (rc != VEIL_OK) {
        VT_CHECK(0, "process %d: Beaver item in %d tiles: %s", self, tiles, veil_last_error());
        return;
    }
    if (veil_mpc_computes(m)) {
        const uint64_t tasks = veil_mpc_fill_tasks(m) - before;
        const enum veil_mpc_material mode = the_run.material;
        const int tfp_mode = mode == VEIL_MPC_MAT_TRUSTED_FIRST_PARTY;
        const int designated = tfp_mode ? 0 : n - 1;
        const int direct = self == designated && (!tfp_mode || tiles == 1);
        const uint64_t want = mode == VEIL_MPC_MAT_FILE ? 0 : (uint64_t)(direct ? 2 : 3) * tiles;
        VT_CHECK(tasks == want,
                 "party %d: %" PRIu64
                 " material tasks for a Beaver item in %d tiles, expected %" PRIu64,
                 self, tasks, tiles, want);
        for (int j = 0; j < 3; j++)
            to_host(&pub[j]);
        for (size_t i = 0; i < BIG; i++)
            if (pub[2].data[i] != pub[0].data[i] * pub[1].data[i]) {
                VT_CHECK(0, "party %d: Beaver item in %d tiles: c != a b at %zu", self, tiles, i);
                break;
            }
    }
    for (int j = 0; j < 3; j++)
        veil_mpc_release(m, &pub[j]);
    veil_mpc_mat_release(m, &mat);
    VT_CHECK(veil_mpc_wait(m) == VEIL_OK, "process %d: wait: %s", self, veil_last_error());
}

/* The SPMD sequence every process runs. Returns 0 when every check of this process passed. */
static int sequence(veil_mpc_t *m)
{
    const int n = veil_mpc_nparties(m), self = veil_mpc_self(m), f = veil_mpc_frac_bits(m);
    const int party = veil_mpc_computes(m);
    const size_t dims[1] = {N_ELEMS};
    static uint64_t x[N_ELEMS], y[N_ELEMS];
    plain_input(1, x);
    plain_input(2, y);
    struct veil_sec sx, sy, sum, scaled, d, pub_all, pub_one, mask_open;
    struct veil_mpc_mat beaver, trunc, bit;
    int rc = veil_mpc_share_input(m, 0, self == 0 ? x : NULL, 1, dims, TILE, &sx);
    if (rc == VEIL_OK)
        rc = veil_mpc_share_input(m, 1, self == 1 ? y : NULL, 1, dims, TILE, &sy);
    if (rc == VEIL_OK)
        rc = veil_mpc_add(m, &sx, &sy, &sum);
    if (rc == VEIL_OK)
        rc = veil_mpc_mul_scalar(m, &sum, 3, &scaled);
    struct veil_sec plus;
    if (rc == VEIL_OK)
        rc = veil_mpc_add_scalar(m, &scaled, 7, &plus);
    /* Correlated randomness, then an open of x against the Beaver mask a. */
    if (rc == VEIL_OK)
        rc = veil_mpc_material(m, veil_preproc_item_beaver(0, N_ELEMS), TILE, &beaver);
    /* TRUNC has two corrected parts (4 tiles each; every part under the inline bound): from the
     * dealer one message lands in all 8 tiles, no task; in trusted-first-party mode party 0
     * copies each tile from its computed correction (8 tasks). */
    const uint64_t fill0 = veil_mpc_fill_tasks(m);
    if (rc == VEIL_OK)
        rc = veil_mpc_material(m, veil_preproc_item_trunc(0, N_ELEMS, (uint64_t)f), TILE, &trunc);
    const uint64_t trunc_tasks = veil_mpc_fill_tasks(m) - fill0,
                   trunc_want = tfp && self == 0 ? 2 * ((N_ELEMS + TILE - 1) / TILE) : 0;
    VT_CHECK(!party || trunc_tasks == trunc_want,
             "party %d: %" PRIu64 " material tasks for a TRUNC item, expected %" PRIu64, self,
             trunc_tasks, trunc_want);
    if (rc == VEIL_OK)
        rc = veil_mpc_material(m, veil_preproc_item_bit(0, N_ELEMS), TILE, &bit);
    if (rc == VEIL_OK) {
        veil_mpc_round(m);
        rc = veil_mpc_open(m, &sx, &beaver.part[VEIL_PRE_A], &d);
    }
    if (rc == VEIL_OK)
        rc = veil_mpc_reveal(m, &plus, -1, &pub_all);
    if (rc == VEIL_OK)
        rc = veil_mpc_reveal(m, &sy, n - 1, &pub_one);
    /* Reveal every material part to all (tests only: material is never opened in protocols). */
    struct veil_pub mat[8];
    int nmat = 0;
    struct veil_mpc_mat *mats[3] = {&beaver, &trunc, &bit};
    for (int i = 0; i < 3 && rc == VEIL_OK; i++)
        for (int j = 0; j < mats[i]->nparts && rc == VEIL_OK; j++)
            rc = veil_mpc_reveal(m, &mats[i]->part[j], -1, &mat[nmat++]);
    if (rc == VEIL_OK)
        rc = veil_mpc_reveal(m, &beaver.part[VEIL_PRE_A], 0, &mask_open);
    if (rc != VEIL_OK) {
        fprintf(stderr, "process %d: submission failed: %s\n", self, veil_last_error());
        return 1;
    }
    rc = veil_mpc_wait(m);
    if (rc != VEIL_OK) {
        fprintf(stderr, "process %d: %s\n", self, veil_last_error());
        return 1;
    }
    if (party) {
        struct veil_sec *read[] = {&d, &pub_all, &pub_one, &mask_open};
        for (size_t i = 0; i < sizeof read / sizeof read[0]; i++)
            to_host(read[i]);
        for (int i = 0; i < nmat; i++)
            to_host(&mat[i]);
        for (size_t i = 0; i < N_ELEMS; i++) {
            uint64_t want = 3 * (x[i] + y[i]) + 7;
            if (pub_all.data[i] != want) {
                VT_CHECK(0, "party %d: reveal of 3(x+y)+7 wrong at %zu", self, i);
                break;
            }
        }
        if (self == n - 1)
            VT_CHECK(memcmp(pub_one.data, y, sizeof y) == 0, "reveal to one party");
        else
            VT_CHECK(pub_one.data == NULL, "party %d got a reveal meant for %d", self, n - 1);
        const uint64_t *a = mat[0].data, *b = mat[1].data, *c = mat[2].data;
        const uint64_t *r = mat[3].data, *rhi = mat[4].data, *r63 = mat[5].data;
        const uint64_t *bits = mat[6].data, *packed = mat[7].data;
        for (size_t i = 0; i < N_ELEMS; i++) {
            if (c[i] != a[i] * b[i] || rhi[i] != r[i] >> f || r63[i] != r[i] >> 63 ||
                bits[i] > 1 || ((packed[i / 64] >> (i % 64)) & 1) != bits[i]) {
                VT_CHECK(0, "party %d: material correlation broken at element %zu", self, i);
                break;
            }
            if (self == 0 && d.data[i] + mask_open.data[i] != x[i]) {
                VT_CHECK(0, "open: d + a != x at %zu", i);
                break;
            }
        }
        /* Traffic: share_input (owner: (N-1) n words), open (N-1) n, reveal all (N-1) n per
         * reveal (1 + 7 material parts, the packed bit part is ceil(n/64) words), reveal to one
         * party (everybody else sends n), reveal of a to party 0. */
        const uint64_t w = N_ELEMS, packed_w = (N_ELEMS + 63) / 64;
        uint64_t want = (uint64_t)(n - 1) * (w /* open */ + w /* pub_all */ + 7 * w + packed_w);
        if (self <= 1)
            want += (uint64_t)(n - 1) * w; /* its input */
        if (self != n - 1)
            want += w;
        if (self != 0)
            want += w;
        uint64_t want_bytes = 8 * want;
        if (tfp && self == 0)
            want_bytes += (uint64_t)(n - 1) * VEIL_SEED_BYTES; /* it dealt the seeds */
        VT_CHECK(bytes_sent(m) == want_bytes, "party %d of %d sent %" PRIu64 " bytes, expected %" PRIu64,
              self, n, bytes_sent(m), want_bytes);
        /* Rounds: 2 input sharings, the open, 2 + 8 + 1 reveals. */
        VT_CHECK(rounds(m) == 14, "party %d counted %" PRIu64 " rounds, expected 14", self, rounds(m));
    }
    struct veil_sec *all[] = {&sx, &sy, &sum, &scaled, &plus, &d, &pub_all, &pub_one, &mask_open};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        veil_mpc_release(m, all[i]);
    for (int i = 0; i < nmat; i++)
        veil_mpc_release(m, &mat[i]);
    for (int i = 0; i < 3; i++)
        veil_mpc_mat_release(m, mats[i]);
    size_t nitems;
    /* a party or the dealer counts the items but keeps no list: a session's would only grow */
    const struct veil_preproc_item *list = veil_mpc_items(m, &nitems);
    VT_CHECK(!veil_mpc_net(m) || list == NULL, "party %d keeps an item list", self);
    VT_CHECK(nitems == 3, "3 items logged, got %zu", nitems);
    /* Bad arguments, refused before anything is submitted. */
    struct veil_sec bad;
    VT_CHECK(veil_mpc_share_input(m, n, x, 1, dims, 0, &bad) == VEIL_ERR_INVAL, "owner out of range");
    VT_CHECK(veil_mpc_reveal(m, &sx, n, &bad) == VEIL_ERR_INVAL, "reveal target out of range");
    /* Real inputs: the documented range is enforced at the owner before anything is sent. */
    const size_t four[1] = {4};
    if (party && self == 0) {
        const double with_nan[4] = {1.0, NAN, 2.0, 3.0}, too_big[4] = {1.0, 2.0, 64.0, 3.0};
        VT_CHECK(veil_mpc_share_input_fixed(m, 0, with_nan, 0, 1, four, 0, &bad) ==
                     VEIL_ERR_RANGE && strstr(veil_last_error(), "element 1"),
                 "NaN refused at sharing: %s", veil_last_error());
        VT_CHECK(veil_mpc_share_input_fixed(m, 0, too_big, 64.0, 1, four, 0, &bad) ==
                     VEIL_ERR_RANGE && strstr(veil_last_error(), "element 2"),
                 "|x| >= max_abs refused at sharing: %s", veil_last_error());
    }
    const double real[4] = {-3.5, 0.0, 1.25, 1000.0625};
    struct veil_sec sreal;
    struct veil_pub preal;
    if (veil_mpc_share_input_fixed(m, 1, self == 1 ? real : NULL, 2048.0, 1, four, 0, &sreal) !=
            VEIL_OK ||
        veil_mpc_reveal(m, &sreal, -1, &preal) != VEIL_OK || veil_mpc_wait(m) != VEIL_OK) {
        VT_CHECK(0, "process %d: real input: %s", self, veil_last_error());
    } else if (party) {
        to_host(&preal);
        for (int i = 0; i < 4; i++)
            VT_CHECK(veil_fixed_decode(preal.data[i], f) == real[i], "real input %d", i);
    }
    veil_mpc_release(m, &sreal);
    veil_mpc_release(m, &preal);
    /* Steady memory: the same request three times. From the second on, every buffer (the
     * designated party's and the dealer's correction included) comes from the tensor pool and
     * goes back to it, so the pool holds as many bytes after the third as after the second. */
    size_t pooled[3] = {0};
    for (int it = 0; it < 3; it++) {
        struct veil_mpc_mat again;
        rc = veil_mpc_material(m, veil_preproc_item_beaver(0, N_ELEMS), TILE, &again);
        if (rc == VEIL_OK) {
            veil_mpc_mat_release(m, &again);
            rc = veil_mpc_wait(m);
        }
        if (rc != VEIL_OK) {
            VT_CHECK(0, "process %d: repeated material: %s", self, veil_last_error());
            break;
        }
        pooled[it] = veil_secbuf_pooled_bytes();
    }
    VT_CHECK(pooled[2] == pooled[1],
             "process %d: the tensor pool went from %zu to %zu bytes on a repeated request", self,
             pooled[1], pooled[2]);
    direct_correction(m, 1);
    direct_correction(m, 3);
    return veil_test_failures ? 1 : 0;
}

static int party_main(const struct veil_harness_party *me, void *arg)
{
    struct run *r = arg;
    if (starpu_init(NULL) != 0)
        return 3;
    struct veil_net_config cfg;
    veil_net_t *net = NULL;
    veil_mpc_t *m = NULL;
    int code = 1;
    int rc = veil_net_config_from_harness(me, (const char(*)[VEIL_Z85_KEY_CHARS + 1])r->pub,
                                          r->sec[me->id], &cfg);
    if (rc == VEIL_OK)
        rc = veil_net_open(&cfg, NULL, &net);
    if (rc == VEIL_OK) {
        struct veil_mpc_options o;
        veil_mpc_options_defaults(&o);
        o.role = me->is_dealer ? VEIL_MPC_DEALER : VEIL_MPC_PARTY;
        o.material = r->material;
        o.tile = TILE;
        char path[96];
        snprintf(path, sizeof path, "%s/p%d.pre", r->dir, me->id);
        o.preproc_path = path;
        memcpy(o.plan_digest, r->digest, sizeof o.plan_digest);
        m = veil_mpc_new(net, &o);
        rc = m ? VEIL_OK : VEIL_ERR_STATE;
    }
    if (rc == VEIL_OK)
        code = sequence(m);
    else
        fprintf(stderr, "process %d: set-up: %s\n", me->id, veil_last_error());
    veil_mpc_destroy(&m);
    veil_net_close(&net);
    starpu_shutdown();
    return code;
}

static int run(int nparties, enum veil_mpc_material material, const char *session)
{
    struct run *r = &the_run;
    r->material = material;
    tfp = material == VEIL_MPC_MAT_TRUSTED_FIRST_PARTY;
    const int dealer = material == VEIL_MPC_MAT_DEALER;
    for (int p = 0; p < nparties + dealer; p++)
        if (veil_curve_keypair(r->pub[p], r->sec[p]) != VEIL_OK)
            return 1;
    struct veil_harness_result res[VEIL_HARNESS_MAX_PROCS];
    struct veil_harness_opts o = {
        .nparties = nparties, .dealer = dealer, .timeout_s = 90, .grace_s = 10, .session = session};
    int rc = veil_harness_run(&o, party_main, r, res);
    if (rc != VEIL_OK) {
        static const char *names[] = {"dealer", "trusted first party", "file"};
        fprintf(stderr, "FAIL: N=%d %s material: %s\n", nparties, names[material],
                veil_last_error());
        for (int p = 0; p < nparties + dealer; p++)
            fprintf(stderr, "---- process %d:\n%s", p, res[p].output ? res[p].output : "");
    }
    veil_harness_results_free(res, nparties + dealer);
    return rc == VEIL_OK ? 0 : 1;
}

/* Material ahead of the run: a recorder lists the items the sequence consumes, the offline
 * generator writes one file per party, the parties read them. */
static int run_from_files(int nparties)
{
    static const char session[] = "0123456789abcdef0123456789abcdef";
    struct veil_mpc_options o;
    veil_mpc_options_defaults(&o);
    o.tile = TILE;
    veil_mpc_t *rec = veil_mpc_new_recorder(nparties, &o);
    if (!rec || sequence(rec) != 0) {
        fprintf(stderr, "FAIL: recorder: %s\n", veil_last_error());
        return 1;
    }
    size_t nitems;
    const struct veil_preproc_item *items = veil_mpc_items(rec, &nitems);
    struct veil_preproc_layout layout;
    uint8_t sid[16];
    for (int b = 0; b < 16; b++)
        sid[b] = (uint8_t)strtoul((char[]){session[2 * b], session[2 * b + 1], 0}, NULL, 16);
    veil_preproc_layout_init(&layout, nparties, o.frac_bits, sid);
    char dir[] = "/tmp/veil-preproc-XXXXXX";
    if (!mkdtemp(dir))
        return 1;
    char paths[VEIL_PREPROC_MAX_PARTIES][96];
    const char *pp[VEIL_PREPROC_MAX_PARTIES];
    for (int p = 0; p < nparties; p++) {
        snprintf(paths[p], sizeof paths[p], "%s/p%d.pre", dir, p);
        pp[p] = paths[p];
    }
    int rc = veil_preproc_items_digest(items, nitems, the_run.digest);
    if (rc == VEIL_OK)
        rc = veil_preproc_generate_files(&layout, items, nitems, the_run.digest, pp);
    veil_mpc_destroy(&rec);
    int failed = 1;
    if (rc == VEIL_OK) {
        snprintf(the_run.dir, sizeof the_run.dir, "%s", dir);
        failed = run(nparties, VEIL_MPC_MAT_FILE, session);
    } else {
        fprintf(stderr, "FAIL: generating files: %s\n", veil_last_error());
    }
    for (int p = 0; p < nparties; p++)
        remove(paths[p]);
    rmdir(dir);
    return failed;
}

int main(void)
{
    int failed = 0;
    for (int n = 2; n <= 4; n++)
        failed += run(n, VEIL_MPC_MAT_DEALER, NULL);
    failed += run(3, VEIL_MPC_MAT_TRUSTED_FIRST_PARTY, NULL);
    failed += run_from_files(3);
    return failed ? 1 : 0;
}

/* Tests reading a preprocessing file ahead (tasks/preproc_prefetch.c,
 * veil_preproc_reader_prefetch). On the reader: every part of at least the size asked for is read
 * ahead, and each taken buffer holds exactly the words a plain reader reads (the parts not taken,
 * read by the walk, too); the stats count them and nothing is left held. A bound smaller than any
 * part reads nothing ahead and the walk reads everything. A take of another size gets NULL and the
 * walk reads that part; parts the walk leaves out are given back. A file cut short while open: the
 * parts before the cut are taken, the cut part is not, and the walk's own read reports
 * VEIL_ERR_FORMAT naming the file. A reader closed while it holds parts gives them back (the
 * sanitizer build checks). A second start is VEIL_ERR_STATE, a NULL reader VEIL_ERR_INVAL, a take
 * without a prefetcher NULL. Then two party processes from files (tasks/mpc.h): products of 20,000
 * elements (their parts over the 128 KiB below which the tensor cache serves) revealed equal to the
 * plaintext oracle with parts taken from the prefetcher, and again with VEIL_PREFETCH_MB=0 and none
 * taken. */
#include "config.h"
#include "base/base_internal.h"
#include "base/secmem.h"
#include "codelets/reference.h"
#include "tasks/beaver.h"
#include "tasks/preproc.h"
#include "test_mpc_util.h"
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define NP 2
#define NITEMS 6
#define MIN_BYTES 4096 /* parts read ahead: at least this many bytes */

static struct veil_preproc_layout L;
static uint8_t plan[VEIL_PREPROC_DIGEST_BYTES];
static struct veil_preproc_item items[NITEMS];
static char dir[256], paths[NP][300];

static void sleep_ms(int ms)
{
    struct timespec t = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&t, NULL);
}

/* Bytes of the parts of items[0, upto) of at least MIN_BYTES (every part of these items is
 * stored: none is a weight-stationary product's). */
static size_t big_bytes(int upto, int *nparts)
{
    size_t b = 0;
    *nparts = 0;
    for (int i = 0; i < upto; i++) {
        struct veil_preproc_desc d;
        veil_preproc_item_describe(&items[i], &d);
        for (int j = 0; j < d.nparts; j++)
            if (d.part[j].numel * 8 >= MIN_BYTES) {
                b += d.part[j].numel * 8;
                ++*nparts;
            }
    }
    return b;
}

/* Waits (at most 20 s) until r's prefetcher has read want bytes ahead and ended (so that no take
 * finds its lock taken: a take never waits for it). */
static int wait_read(veil_preproc_reader_t *r, uint64_t want)
{
    struct veil_preproc_prefetch_stats s;
    for (int t = 0; t < 20000; t++) {
        veil_preproc_reader_prefetch_stats(r, &s);
        if (s.read_bytes >= want && s.stopped)
            return 1;
        sleep_ms(1);
    }
    return 0;
}

static veil_preproc_reader_t *open_reader(const char *path)
{
    veil_preproc_reader_t *r = NULL;
    VT_CHECK(veil_preproc_reader_open(path, &L, 0, plan, &r) == VEIL_OK, "open %s: %s", path,
             veil_last_error());
    return r;
}

/* Reads every item from a (prefetching: take first when take is set) and b (plain), comparing
 * each part's words; leave_out: the walk leaves part 1 of item 1 out (no take, no read). */
static void walk_both(veil_preproc_reader_t *a, veil_preproc_reader_t *b, int take, int leave_out,
                      int *taken)
{
    *taken = 0;
    for (int i = 0; i < NITEMS; i++) {
        struct veil_preproc_desc d;
        veil_preproc_item_describe(&items[i], &d);
        uint64_t *da[VEIL_PREPROC_MAX_PARTS] = {0}, *db[VEIL_PREPROC_MAX_PARTS] = {0};
        void *got[VEIL_PREPROC_MAX_PARTS] = {0};
        for (int j = 0; j < d.nparts; j++) {
            const size_t bytes = d.part[j].numel * 8;
            db[j] = calloc(d.part[j].numel, 8);
            if (leave_out && i == 1 && j == 1)
                continue;
            if (take && (got[j] = veil_preproc_take_prefetched(a, j, bytes)))
                ++*taken;
            else
                da[j] = calloc(d.part[j].numel, 8);
        }
        VT_CHECK(veil_preproc_next_into(a, &items[i], da) == VEIL_OK, "item %d: %s", i,
                 veil_last_error());
        VT_CHECK(veil_preproc_next_into(b, &items[i], db) == VEIL_OK, "plain item %d: %s", i,
                 veil_last_error());
        for (int j = 0; j < d.nparts; j++) {
            const void *w = got[j] ? got[j] : (const void *)da[j];
            if (w)
                VT_CHECK(memcmp(w, db[j], d.part[j].numel * 8) == 0,
                         "item %d part %d (%s): words differ from a plain read", i, j,
                         got[j] ? "taken" : "read");
            veil_secbuf_put(got[j], d.part[j].numel * 8);
            free(da[j]);
            free(db[j]);
        }
    }
}

static void reader_cases(void)
{
    int nbig;
    const size_t all = big_bytes(NITEMS, &nbig);
    struct veil_preproc_prefetch_stats s;
    int taken;

    /* everything ahead, then taken: the same words as a plain read */
    veil_preproc_reader_t *a = open_reader(paths[0]), *b = open_reader(paths[0]);
    VT_CHECK(veil_preproc_reader_prefetch(a, 64u << 20, MIN_BYTES) == VEIL_OK, "start: %s",
             veil_last_error());
    VT_CHECK(veil_preproc_reader_prefetch(a, 64u << 20, MIN_BYTES) == VEIL_ERR_STATE,
             "a second start refused");
    VT_CHECK(wait_read(a, all), "the prefetcher read %zu bytes ahead", all);
    walk_both(a, b, 1, 0, &taken);
    veil_preproc_reader_prefetch_stats(a, &s);
    VT_CHECK(taken == nbig && s.taken == (uint64_t)nbig && s.read_bytes == all && s.dropped == 0 &&
                 s.held_bytes == 0,
             "taken %d of %d; stats: read %llu, taken %llu, dropped %llu, held %zu", taken, nbig,
             (unsigned long long)s.read_bytes, (unsigned long long)s.taken,
             (unsigned long long)s.dropped, s.held_bytes);
    veil_preproc_reader_close(&a);
    veil_preproc_reader_close(&b);

    /* a bound below every part: nothing read ahead, the walk reads all */
    a = open_reader(paths[0]);
    b = open_reader(paths[0]);
    VT_CHECK(veil_preproc_reader_prefetch(a, MIN_BYTES - 8, MIN_BYTES) == VEIL_OK, "start small");
    VT_CHECK(wait_read(a, 0), "the thread passes every part and ends");
    walk_both(a, b, 1, 0, &taken);
    veil_preproc_reader_prefetch_stats(a, &s);
    VT_CHECK(taken == 0 && s.read_bytes == 0 && s.taken == 0, "small bound: taken %d, read %llu",
             taken, (unsigned long long)s.read_bytes);
    veil_preproc_reader_close(&a);
    veil_preproc_reader_close(&b);

    /* a take of another size gets NULL; a part left out is given back; nothing stays held */
    a = open_reader(paths[0]);
    b = open_reader(paths[0]);
    VT_CHECK(veil_preproc_reader_prefetch(a, 64u << 20, MIN_BYTES) == VEIL_OK, "start");
    VT_CHECK(wait_read(a, all), "read ahead");
    struct veil_preproc_desc d0;
    veil_preproc_item_describe(&items[0], &d0);
    VT_CHECK(veil_preproc_take_prefetched(a, 0, d0.part[0].numel * 8 + 8) == NULL,
             "a take of another size gets nothing");
    walk_both(a, b, 1, 1, &taken); /* part 0 of item 0 is read by the walk now */
    veil_preproc_reader_prefetch_stats(a, &s);
    VT_CHECK(taken == nbig - 2 && s.dropped == 2 && s.held_bytes == 0,
             "taken %d (want %d), dropped %llu (want 2), held %zu", taken, nbig - 2,
             (unsigned long long)s.dropped, s.held_bytes);
    veil_preproc_reader_close(&a);
    veil_preproc_reader_close(&b);

    /* closed while holding parts: they go back to the pool */
    a = open_reader(paths[0]);
    VT_CHECK(veil_preproc_reader_prefetch(a, 64u << 20, MIN_BYTES) == VEIL_OK, "start");
    VT_CHECK(wait_read(a, all), "read ahead");
    veil_preproc_reader_prefetch_stats(a, &s);
    VT_CHECK(s.held_bytes == all, "held %zu of %zu", s.held_bytes, all);
    veil_preproc_reader_close(&a);

    /* misuse */
    VT_CHECK(veil_preproc_reader_prefetch(NULL, 1, 1) == VEIL_ERR_INVAL, "NULL reader");
    a = open_reader(paths[0]);
    VT_CHECK(veil_preproc_take_prefetched(a, 0, d0.part[0].numel * 8) == NULL,
             "no prefetcher: nothing to take");
    veil_preproc_reader_prefetch_stats(a, &s);
    VT_CHECK(s.read_bytes == 0 && s.taken == 0 && s.missed == 0, "no prefetcher: zero stats");
    veil_preproc_reader_close(&a);
}

/* The file cut inside item 3's first part after it was opened (and checked). */
static void truncated(void)
{
    char cut[320];
    snprintf(cut, sizeof cut, "%s/cut.veilpre", dir);
    size_t n = 0;
    unsigned char *img = veil_test_slurp(paths[0], &n);
    FILE *f = fopen(cut, "wb");
    VT_CHECK(img && f && fwrite(img, 1, n, f) == n, "copy the file");
    if (f)
        fclose(f);
    free(img);
    veil_preproc_reader_t *a = open_reader(cut);
    if (!a)
        return;
    int nbefore;
    const size_t before = big_bytes(3, &nbefore);
    /* header 88, table 128 per item, then the words: 16 bytes into item 3's first part */
    size_t words = 0;
    for (int i = 0; i < 3; i++)
        words += veil_preproc_share_words(&items[i]);
    VT_CHECK(truncate(cut, (off_t)(88 + 128 * NITEMS + 8 * words + 16)) == 0, "truncate");
    VT_CHECK(veil_preproc_reader_prefetch(a, 64u << 20, MIN_BYTES) == VEIL_OK, "start");
    VT_CHECK(wait_read(a, before), "the parts before the cut read ahead, then the thread ends");
    for (int i = 0; i < 4; i++) {
        struct veil_preproc_desc d;
        veil_preproc_item_describe(&items[i], &d);
        uint64_t *dst[VEIL_PREPROC_MAX_PARTS] = {0};
        void *got[VEIL_PREPROC_MAX_PARTS] = {0};
        for (int j = 0; j < d.nparts; j++)
            if (!(got[j] = veil_preproc_take_prefetched(a, j, d.part[j].numel * 8)))
                dst[j] = calloc(d.part[j].numel, 8);
        if (i < 3)
            VT_CHECK(veil_preproc_next_into(a, &items[i], dst) == VEIL_OK, "item %d: %s", i,
                     veil_last_error());
        else {
            VT_CHECK(!got[0], "the cut part is not handed out");
            VT_CHECK(veil_preproc_next_into(a, &items[i], dst) == VEIL_ERR_FORMAT &&
                         strstr(veil_last_error(), "cut.veilpre"),
                     "the walk's read of the cut part: %s", veil_last_error());
        }
        for (int j = 0; j < d.nparts; j++) {
            veil_secbuf_put(got[j], d.part[j].numel * 8);
            free(dst[j]);
        }
    }
    struct veil_preproc_prefetch_stats s;
    veil_preproc_reader_prefetch_stats(a, &s);
    VT_CHECK(s.taken == (uint64_t)nbefore, "taken %llu of the %d parts before the cut",
             (unsigned long long)s.taken, nbefore);
    veil_preproc_reader_close(&a);
    unlink(cut);
}

/* ---- two party processes from files ---- */
#define NUMEL 20000 /* a Beaver part of 160,000 bytes */
static uint64_t x[NUMEL], y[NUMEL];
static uint64_t *out; /* shared: z then w, and party 0's prefetch stats */

static int body(veil_mpc_t *m, void *arg)
{
    const int ahead = *(const int *)arg && veil_mpc_computes(m); /* a recorder reads no file */
    const int self = veil_mpc_self(m);
    const size_t dims[1] = {NUMEL};
    struct veil_sec sx = {0}, sy = {0}, z = {0}, w = {0}, rz = {0}, rw = {0};
    struct veil_preproc_prefetch_stats s;
    if (veil_mpc_share_input(m, 0, self == 0 ? x : NULL, 1, dims, 0, &sx) != VEIL_OK ||
        veil_mpc_share_input(m, 1, self == 1 ? y : NULL, 1, dims, 0, &sy) != VEIL_OK ||
        veil_mpc_wait(m) != VEIL_OK) {
        VT_CHECK(0, "inputs: %s", veil_last_error());
        return 1;
    }
    /* give the prefetcher the time to read both products' parts ahead (held: read and not
     * taken; the inputs' masks are taken by now) */
    for (int t = 0; ahead && t < 1000; t++) {
        veil_mpc_prefetch_stats(m, &s);
        if (s.held_bytes >= 5 * NUMEL * 8 && s.stopped) /* the file's end: nothing after them */
            break;
        sleep_ms(10);
    }
    if (veil_mpc_mul(m, &sx, &sy, &z) != VEIL_OK || veil_mpc_square(m, &sx, &w) != VEIL_OK ||
        veil_mpc_reveal(m, &z, -1, &rz) != VEIL_OK || veil_mpc_reveal(m, &w, -1, &rw) != VEIL_OK ||
        veil_mpc_wait(m) != VEIL_OK) {
        VT_CHECK(0, "mul, square, reveal: %s", veil_last_error());
        return 1;
    }
    if (self == 0) {
        memcpy(out, veil_test_host(&rz), NUMEL * 8);
        memcpy(out + NUMEL, veil_test_host(&rw), NUMEL * 8);
        veil_mpc_prefetch_stats(m, &s);
        out[2 * NUMEL] = s.taken;
        out[2 * NUMEL + 1] = s.read_bytes;
    }
    struct veil_sec *all[] = {&sx, &sy, &z, &w, &rz, &rw};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        veil_mpc_release(m, all[i]);
    return veil_test_failures ? 1 : 0;
}

static void parties(void)
{
    veil_test_random(31, x, NUMEL);
    veil_test_random(32, y, NUMEL);
    veil_test_mix_edges(x, y, NUMEL);
    static uint64_t zref[NUMEL], wref[NUMEL];
    veil_ref_mul(NUMEL, x, y, zref);
    veil_ref_mul(NUMEL, x, x, wref);
    out = veil_test_mpc_shared((2 * NUMEL + 2) * 8);
    if (!out) {
        VT_CHECK(0, "shared memory");
        return;
    }
    for (int off = 0; off < 2; off++) {
        if (off)
            setenv("VEIL_PREFETCH_MB", "0", 1);
        memset(out, 0, (2 * NUMEL + 2) * 8);
        struct veil_test_mpc_opts o = {
            .nparties = 2, .material = VEIL_MPC_MAT_FILE, .frac_bits = -1};
        int ahead = !off;
        if (veil_test_mpc_run(&o, body, &ahead) != 0) {
            VT_CHECK(0, "the run %s read-ahead failed", off ? "without" : "with");
            continue;
        }
        veil_test_compare_u64(off ? "x * y, no read-ahead" : "x * y, read ahead", out, zref, NUMEL);
        veil_test_compare_u64(off ? "x * x, no read-ahead" : "x * x, read ahead", out + NUMEL, wref,
                              NUMEL);
        /* mul: a, b, c of NUMEL words; square: a, c */
        if (off)
            VT_CHECK(out[2 * NUMEL] == 0 && out[2 * NUMEL + 1] == 0,
                     "VEIL_PREFETCH_MB=0: %llu parts taken", (unsigned long long)out[2 * NUMEL]);
        else
            VT_CHECK(out[2 * NUMEL] >= 5, "party 0 took %llu parts read ahead, not the products' 5",
                     (unsigned long long)out[2 * NUMEL]);
    }
    unsetenv("VEIL_PREFETCH_MB");
    veil_test_mpc_shared_free(out, (2 * NUMEL + 2) * 8);
}

int main(void)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/veil-prefetch-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    uint8_t sid[16];
    for (int i = 0; i < 16; i++)
        sid[i] = (uint8_t)(i * 7 + 1);
    veil_preproc_layout_init(&L, NP, 16, sid);
    uint64_t ix = 0;
    items[0] = veil_preproc_item_beaver(ix++, 3000); /* 3 parts of 24,000 bytes */
    items[1] = veil_preproc_item_matmul(ix++, 40, 30, 20);
    items[2] = veil_preproc_item_beaver(ix++, 100); /* parts of 800 bytes: never ahead */
    items[3] = veil_preproc_item_trunc(ix++, 2000, 16);
    items[4] = veil_preproc_item_beaver(ix++, 5000);
    items[5] = veil_preproc_item_square(ix++, 4000);
    VT_CHECK(veil_preproc_items_digest(items, NITEMS, plan) == VEIL_OK, "plan digest");
    const char *pp[NP];
    for (int p = 0; p < NP; p++) {
        snprintf(paths[p], sizeof paths[p], "%s/party%d.veilpre", dir, p);
        pp[p] = paths[p];
    }
    VT_CHECK(veil_preproc_generate_files(&L, items, NITEMS, plan, pp) == VEIL_OK, "files: %s",
             veil_last_error());
    reader_cases();
    truncated();
    for (int p = 0; p < NP; p++)
        unlink(paths[p]);
    rmdir(dir);
    parties();
    return veil_test_status();
}

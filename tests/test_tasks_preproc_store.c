/* Tests the per-party preprocessing file: three parties' files written atomically (no temporary
 * left behind) read back item by item equal to a fresh expansion and still correlated across
 * parties (every kind, the weight-stationary MATMUL_WS / CONV_WS included), also into the
 * caller's buffers with a part skipped (NULL destination: not written, the rest right), a
 * weight mask peeked ahead of its item (the cursor unmoved; an absent or consumed weight, another
 * size and a kind without a mask refused); a weight's mask stored in its first item only (the file
 * that much shorter, a later item of the weight read without it and refused with it, the cursor
 * unmoved, its peek refused once the first is consumed; another kind of the same wid stores its
 * own; a plan whose items disagree on a weight's mask size refused); then every bad case gives its
 * documented error and never a crash: wrong kind, index or params requested (VEIL_ERR_MISMATCH,
 * cursor not advanced), reading past the end (MISMATCH), another session / party / party count /
 * frac bits / plan (MISMATCH on open), truncated files at many lengths and flipped bytes anywhere
 * (VEIL_ERR_FORMAT: digest), bad magic and version, crafted files with a valid digest but a lying
 * table (FORMAT), random header/table damage with a valid digest (FORMAT or MISMATCH), a file
 * shortened while open (FORMAT), a missing file (VEIL_ERR_IO), and writer misuse (MISMATCH / STATE,
 * nothing published). */
#include "config.h"
#include "base/base_internal.h"
#include "tasks/preproc.h"
#include "test_util.h"

#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <unistd.h>

static int failures;
#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                                   \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fprintf(stderr, "\n");                                                                 \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

#define NP 3
#define NITEMS 11

static struct veil_preproc_layout L;
static uint8_t seeds[NP][VEIL_SEED_BYTES];
static uint8_t plan[VEIL_PREPROC_DIGEST_BYTES];
static struct veil_preproc_item items[NITEMS];
static char dir[256];

static int verbose;

static void note(const char *what)
{
    if (verbose)
        fprintf(stderr, "  %s -> %s\n", what, veil_last_error());
}

static void path_of(int p, char *out, size_t size)
{
    snprintf(out, size, "%s/party%d.veilpre", dir, p);
}

/* Writes every party's file; returns VEIL_OK or the first error. */
static int write_files(void)
{
    veil_preproc_writer_t *w[NP] = {0};
    struct veil_preproc_share s = {0};
    int rc = VEIL_OK;
    for (int p = 0; p < NP && rc == VEIL_OK; p++) {
        char path[300];
        path_of(p, path, sizeof path);
        rc = veil_preproc_writer_open(path, &L, p, plan, items, NITEMS, &w[p]);
    }
    for (int i = 0; i < NITEMS && rc == VEIL_OK; i++) {
        size_t cw = veil_preproc_correction_words(&items[i]);
        uint64_t *corr = malloc(cw * sizeof *corr);
        rc = corr ? veil_preproc_dealer_correction(&L, &items[i], (const uint8_t(*)[16])seeds, corr,
                                                   cw)
                  : VEIL_ERR_NOMEM;
        for (int p = 0; p < NP && rc == VEIL_OK; p++) {
            rc = veil_preproc_party_expand(&L, &items[i], p, seeds[p],
                                           p == L.designated ? corr : NULL, &s);
            if (rc == VEIL_OK)
                rc = veil_preproc_writer_put(w[p], &s);
        }
        free(corr);
    }
    veil_preproc_share_clear(&s);
    for (int p = 0; p < NP; p++) {
        if (rc == VEIL_OK)
            rc = veil_preproc_writer_commit(&w[p]);
        else
            veil_preproc_writer_abort(&w[p]);
    }
    return rc;
}

static int count_dir_entries(void)
{
    DIR *d = opendir(dir);
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)))
        n += e->d_name[0] != '.';
    if (d)
        closedir(d);
    return n;
}

static void spit(const char *path, const unsigned char *b, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (f) {
        if (n)
            fwrite(b, 1, n, f);
        fclose(f);
    }
}

/* Recomputes the trailing digest of a whole-file image (for crafted files). */
static void redigest(unsigned char *b, size_t n)
{
    unsigned int len = 0;
    EVP_Digest(b, n - 32, b + n - 32, &len, EVP_sha256(), NULL);
}

/* Opens path as party p with the session's expectation; returns the status. */
static int try_open(const char *path, int p)
{
    veil_preproc_reader_t *r = NULL;
    int rc = veil_preproc_reader_open(path, &L, p, plan, &r);
    veil_preproc_reader_close(&r);
    return rc;
}

/* Opens and consumes every item: the status of the first failure (or VEIL_OK). */
static int try_consume(const char *path, int p)
{
    veil_preproc_reader_t *r = NULL;
    struct veil_preproc_share s = {0};
    int rc = veil_preproc_reader_open(path, &L, p, plan, &r);
    for (int i = 0; rc == VEIL_OK && i < NITEMS; i++)
        rc = veil_preproc_next(r, &items[i], &s);
    veil_preproc_share_clear(&s);
    veil_preproc_reader_close(&r);
    return rc;
}

/* A weight's mask (part B of MATMUL_WS / CONV_WS) is stored with the weight's first item only. */
static void weight_once(void)
{
    struct veil_preproc_item w[5];
    uint8_t wplan[32];
    w[0] = veil_preproc_item_matmul_ws(0, 4, 6, 3, 7);
    w[1] = veil_preproc_item_beaver(1, 10);
    w[2] = veil_preproc_item_matmul_ws(2, 5, 6, 3, 7); /* the same weight, another batch */
    w[3] = veil_preproc_item_conv_ws(3, 1, 2, 5, 5, 3, 3, 3, 1, 1, 7); /* a conv's weight 7 */
    w[4] = veil_preproc_item_matmul_ws(4, 4, 6, 3, 8);
    CHECK(veil_preproc_items_digest(w, 5, wplan) == VEIL_OK, "once: digest");
    char path[300];
    snprintf(path, sizeof path, "%s/once", dir);
    const int p = 1;
    veil_preproc_writer_t *wr = NULL;
    struct veil_preproc_share s = {0}, fresh[5];
    memset(fresh, 0, sizeof fresh);
    int rc = veil_preproc_writer_open(path, &L, p, wplan, w, 5, &wr);
    for (int i = 0; rc == VEIL_OK && i < 5; i++) {
        rc = veil_preproc_party_expand(&L, &w[i], p, seeds[p], NULL, &fresh[i]);
        if (rc == VEIL_OK)
            rc = veil_preproc_writer_put(wr, &fresh[i]);
    }
    rc = rc == VEIL_OK ? veil_preproc_writer_commit(&wr) : rc;
    veil_preproc_writer_abort(&wr);
    CHECK(rc == VEIL_OK, "once: write: %s", veil_last_error());
    size_t n = 0, words = 0;
    unsigned char *img = veil_test_slurp(path, &n);
    for (int i = 0; i < 5; i++)
        words += veil_preproc_share_words(&w[i]);
    const size_t b_words = 6 * 3; /* w[2]'s B, left out */
    CHECK(img && n == 88 + 128 * 5 + 8 * (words - b_words) + 32, "once: file size %zu", n);
    uint64_t tot_f = 0;
    CHECK(veil_preproc_items_size(w, 5, NULL, NULL, &tot_f) == VEIL_OK && tot_f == n,
          "once: planned file size %llu", (unsigned long long)tot_f);
    free(img);
    veil_preproc_reader_t *r = NULL;
    CHECK(veil_preproc_reader_open(path, &L, p, wplan, &r) == VEIL_OK, "once: open: %s",
          veil_last_error());
    if (!r)
        return;
    for (int i = 0; i < 2; i++)
        CHECK(veil_preproc_next(r, &w[i], &s) == VEIL_OK && s.nwords == fresh[i].nwords &&
                  memcmp(s.words, fresh[i].words, s.nwords * 8) == 0,
              "once: item %d: %s", i, veil_last_error());
    uint64_t buf[64];
    CHECK(veil_preproc_peek_weight(r, &w[2], buf) == VEIL_ERR_MISMATCH &&
              strstr(veil_last_error(), "first item only"),
          "once: peek after the weight's first item: %s", veil_last_error());
    CHECK(veil_preproc_next(r, &w[2], &s) == VEIL_ERR_MISMATCH &&
              strstr(veil_last_error(), "first item only") && veil_preproc_reader_remaining(r) == 3,
          "once: a later item read whole: %s", veil_last_error());
    struct veil_preproc_desc d;
    veil_preproc_item_describe(&w[2], &d);
    uint64_t a[5 * 6], c[5 * 3], *const dst[VEIL_PREPROC_MAX_PARTS] = {a, NULL, c};
    CHECK(veil_preproc_next_into(r, &w[2], dst) == VEIL_OK &&
              memcmp(a, fresh[2].words + d.part[0].offset, sizeof a) == 0 &&
              memcmp(c, fresh[2].words + d.part[2].offset, sizeof c) == 0,
          "once: a later item without its mask: %s", veil_last_error());
    for (int i = 3; i < 5; i++)
        CHECK(veil_preproc_next(r, &w[i], &s) == VEIL_OK && s.nwords == fresh[i].nwords &&
                  memcmp(s.words, fresh[i].words, s.nwords * 8) == 0,
              "once: item %d: %s", i, veil_last_error());
    veil_preproc_reader_close(&r);
    unlink(path);
    /* two items of one weight that disagree on its mask: refused before anything is written */
    struct veil_preproc_item bad[2] = {veil_preproc_item_matmul_ws(0, 4, 6, 3, 9),
                                       veil_preproc_item_matmul_ws(1, 4, 7, 3, 9)};
    CHECK(veil_preproc_writer_open(path, &L, p, wplan, bad, 2, &wr) == VEIL_ERR_FORMAT &&
              wr == NULL && access(path, F_OK) != 0,
          "once: a weight's mask of two sizes: %s", veil_last_error());
    for (int i = 0; i < 5; i++)
        veil_preproc_share_clear(&fresh[i]);
    veil_preproc_share_clear(&s);
    note("a weight's mask stored once");
}

static void put_le32(unsigned char *b, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        b[i] = (unsigned char)(v >> (8 * i));
}

static void put_le64(unsigned char *b, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        b[i] = (unsigned char)(v >> (8 * i));
}

static void round_trip(void)
{
    veil_preproc_reader_t *r[NP] = {0};
    struct veil_preproc_share got[NP], fresh = {0};
    memset(got, 0, sizeof got);
    for (int p = 0; p < NP; p++) {
        char path[300];
        path_of(p, path, sizeof path);
        CHECK(veil_preproc_reader_open(path, &L, p, plan, &r[p]) == VEIL_OK, "open party %d: %s", p,
              veil_last_error());
    }
    if (!r[0] || !r[1] || !r[2])
        return;
    CHECK(veil_preproc_reader_remaining(r[0]) == NITEMS, "remaining");
    for (int i = 0; i < NITEMS; i++) {
        size_t cw = veil_preproc_correction_words(&items[i]);
        uint64_t *corr = malloc(cw * sizeof *corr);
        veil_preproc_dealer_correction(&L, &items[i], (const uint8_t(*)[16])seeds, corr, cw);
        for (int p = 0; p < NP; p++) {
            CHECK(veil_preproc_next(r[p], &items[i], &got[p]) == VEIL_OK, "next %d/%d: %s", p, i,
                  veil_last_error());
            veil_preproc_party_expand(&L, &items[i], p, seeds[p], p == L.designated ? corr : NULL,
                                      &fresh);
            CHECK(got[p].nwords == fresh.nwords &&
                      memcmp(got[p].words, fresh.words, fresh.nwords * 8) == 0,
                  "item %d party %d: file differs from a fresh expansion", i, p);
        }
        if (items[i].kind == VEIL_PREPROC_MATMUL_WS) { /* C = A.B, B from the weight stream */
            const size_t m = items[i].p[0], k = items[i].p[1], nn = items[i].p[2];
            size_t bad = 0;
            for (size_t a = 0; a < m; a++)
                for (size_t c = 0; c < nn; c++) {
                    uint64_t acc = 0, want = 0;
                    for (size_t l = 0; l < k; l++) {
                        uint64_t av = 0, bv = 0;
                        for (int p = 0; p < NP; p++) {
                            av += got[p].part[0][a * k + l];
                            bv += got[p].part[1][l * nn + c];
                        }
                        want += av * bv;
                    }
                    for (int p = 0; p < NP; p++)
                        acc += got[p].part[2][a * nn + c];
                    bad += acc != want;
                }
            CHECK(bad == 0, "matmul_ws from files: %zu wrong", bad);
        }
        if (items[i].kind == VEIL_PREPROC_BEAVER) { /* still a triple after the round trip */
            size_t bad = 0;
            for (size_t j = 0; j < got[0].part_numel[0]; j++) {
                uint64_t a = 0, b = 0, c = 0;
                for (int p = 0; p < NP; p++) {
                    a += got[p].part[0][j];
                    b += got[p].part[1][j];
                    c += got[p].part[2][j];
                }
                bad += c != a * b;
            }
            CHECK(bad == 0, "beaver from files: %zu wrong", bad);
        }
        free(corr);
    }
    CHECK(veil_preproc_reader_remaining(r[0]) == 0, "remaining at end");
    /* Reading past the end. */
    struct veil_preproc_item more = veil_preproc_item_beaver(NITEMS, 10);
    CHECK(veil_preproc_next(r[0], &more, &got[0]) == VEIL_ERR_MISMATCH, "past the end");
    CHECK(strstr(veil_last_error(), "expected") != NULL, "past-end message: %s", veil_last_error());
    CHECK(got[0].words == NULL, "failed next leaves the share empty");
    note("past the end");
    for (int p = 0; p < NP; p++) {
        veil_preproc_share_clear(&got[p]);
        veil_preproc_reader_close(&r[p]);
    }
    veil_preproc_share_clear(&fresh);
}

/* veil_preproc_peek_weight: the weight mask of items 9 (MATMUL_WS, wid 42) and 10 (CONV_WS, wid
 * 43) read ahead, equal to a fresh expansion's B, the cursor never moved; an absent weight, another
 * mask size or a kind without a mask refused; past the weight's item, nothing left to peek. */
static void peek_weight(void)
{
    veil_preproc_reader_t *r = NULL;
    struct veil_preproc_share fresh = {0};
    char path[300];
    const int p = 0;
    path_of(p, path, sizeof path);
    CHECK(veil_preproc_reader_open(path, &L, p, plan, &r) == VEIL_OK, "peek: open: %s",
          veil_last_error());
    if (!r)
        return;
    for (int i = 9; i <= 10; i++) {
        struct veil_preproc_desc d;
        veil_preproc_item_describe(&items[i], &d);
        const size_t n = d.part[VEIL_PRE_B].numel;
        uint64_t *got = calloc(n, sizeof *got);
        struct veil_preproc_item like = items[i];
        like.index = 1000; /* not used: the weight stream's words are the same in every item */
        CHECK(got && veil_preproc_peek_weight(r, &like, got) == VEIL_OK, "peek %d: %s", i,
              veil_last_error());
        veil_preproc_party_expand(&L, &items[i], p, seeds[p], NULL, &fresh);
        CHECK(got && memcmp(got, fresh.part[VEIL_PRE_B], n * 8) == 0,
              "peek %d: the mask differs from a fresh expansion", i);
        free(got);
    }
    CHECK(veil_preproc_reader_remaining(r) == NITEMS, "peek: the cursor moved");
    uint64_t buf[64];
    struct veil_preproc_item absent = items[9];
    absent.p[VEIL_PRE_MATMUL_WID] = 7;
    CHECK(veil_preproc_peek_weight(r, &absent, buf) == VEIL_ERR_MISMATCH, "peek: absent weight");
    struct veil_preproc_item wider = veil_preproc_item_matmul_ws(0, 4, 7, 3, 42);
    CHECK(veil_preproc_peek_weight(r, &wider, buf) == VEIL_ERR_MISMATCH, "peek: another size");
    CHECK(veil_preproc_peek_weight(r, &items[0], buf) == VEIL_ERR_INVAL, "peek: a BEAVER item");
    for (int i = 0; i < 10; i++) /* consume items 0-9: weight 42's only item is gone */
        veil_preproc_next(r, &items[i], &fresh);
    CHECK(veil_preproc_peek_weight(r, &items[9], buf) == VEIL_ERR_MISMATCH &&
              strstr(veil_last_error(), "left"),
          "peek: a consumed weight's item: %s", veil_last_error());
    veil_preproc_share_clear(&fresh);
    veil_preproc_reader_close(&r);
    note("peek a weight mask");
}

/* veil_preproc_next_into: every part straight into the caller's buffers, equal to a fresh
 * expansion; a wrong item or a NULL buffer leaves the cursor where it was. */
static void read_into(void)
{
    veil_preproc_reader_t *r = NULL;
    struct veil_preproc_share fresh = {0};
    char path[300];
    const int p = L.designated; /* its parts hold the dealer's corrections */
    path_of(p, path, sizeof path);
    CHECK(veil_preproc_reader_open(path, &L, p, plan, &r) == VEIL_OK, "open: %s",
          veil_last_error());
    if (!r)
        return;
    for (int i = 0; i < NITEMS; i++) {
        struct veil_preproc_desc d;
        uint64_t *dst[VEIL_PREPROC_MAX_PARTS] = {0};
        veil_preproc_item_describe(&items[i], &d);
        for (int j = 0; j < d.nparts; j++)
            dst[j] = calloc(d.part[j].numel + 1, sizeof(uint64_t));
        if (i == 0) {
            struct veil_preproc_item w = items[0];
            w.p[0]++;
            CHECK(veil_preproc_next_into(r, &w, dst) == VEIL_ERR_MISMATCH, "into: wrong params");
            CHECK(veil_preproc_next_into(r, &items[0], NULL) == VEIL_ERR_INVAL, "into: NULL array");
            CHECK(veil_preproc_reader_remaining(r) == NITEMS, "into: cursor not advanced");
        }
        /* item 0 without its part 1 (a NULL destination skips it): the others land right */
        uint64_t *into[VEIL_PREPROC_MAX_PARTS];
        memcpy(into, dst, sizeof into);
        if (i == 0)
            into[1] = NULL;
        CHECK(veil_preproc_next_into(r, &items[i], into) == VEIL_OK, "into %d: %s", i,
              veil_last_error());
        size_t cw = veil_preproc_correction_words(&items[i]);
        uint64_t *corr = malloc((cw ? cw : 1) * sizeof *corr);
        veil_preproc_dealer_correction(&L, &items[i], (const uint8_t(*)[16])seeds, corr, cw);
        veil_preproc_party_expand(&L, &items[i], p, seeds[p], corr, &fresh);
        for (int j = 0; j < d.nparts; j++) {
            if (!into[j]) {
                for (size_t k = 0; k <= d.part[j].numel; k++)
                    CHECK(dst[j][k] == 0, "into: item %d skipped part %d written", i, j);
                free(dst[j]);
                continue;
            }
            CHECK(memcmp(dst[j], fresh.part[j], d.part[j].numel * 8) == 0,
                  "into: item %d part %d differs from a fresh expansion", i, j);
            CHECK(dst[j][d.part[j].numel] == 0, "into: item %d part %d written past its end", i, j);
            free(dst[j]);
        }
        free(corr);
    }
    CHECK(veil_preproc_reader_remaining(r) == 0, "into: remaining at end");
    veil_preproc_share_clear(&fresh);
    veil_preproc_reader_close(&r);
    note("read into the caller's buffers");
}

static void wrong_items(const char *path)
{
    veil_preproc_reader_t *r = NULL;
    struct veil_preproc_share s = {0};
    CHECK(veil_preproc_reader_open(path, &L, 0, plan, &r) == VEIL_OK, "open");
    if (!r)
        return;
    struct veil_preproc_item w = items[0];
    w.kind = VEIL_PREPROC_SQUARE;
    CHECK(veil_preproc_next(r, &w, &s) == VEIL_ERR_MISMATCH, "wrong kind");
    CHECK(strstr(veil_last_error(), "expected square") && strstr(veil_last_error(), "found beaver"),
          "wrong-kind message: %s", veil_last_error());
    note("wrong kind");
    w = items[0];
    w.p[0]++;
    CHECK(veil_preproc_next(r, &w, &s) == VEIL_ERR_MISMATCH, "wrong params");
    note("wrong params");
    w = items[0];
    w.index = 77;
    CHECK(veil_preproc_next(r, &w, &s) == VEIL_ERR_MISMATCH, "wrong index");
    CHECK(veil_preproc_reader_remaining(r) == NITEMS, "cursor not advanced");
    CHECK(veil_preproc_next(r, &items[0], &s) == VEIL_OK, "right item after wrong ones");
    CHECK(veil_preproc_next(r, &items[2], &s) == VEIL_ERR_MISMATCH, "skipping an item");
    veil_preproc_share_clear(&s);
    veil_preproc_reader_close(&r);
}

static void wrong_session(const char *path)
{
    struct veil_preproc_layout keep = L;
    L.session_id[3] ^= 0x10;
    CHECK(try_open(path, 0) == VEIL_ERR_MISMATCH, "wrong session");
    CHECK(strstr(veil_last_error(), "session") != NULL, "session message: %s", veil_last_error());
    note("wrong session");
    L = keep;
    CHECK(try_open(path, 1) == VEIL_ERR_MISMATCH, "wrong party");
    CHECK(strstr(veil_last_error(), "party 0, expected 1") != NULL, "party message: %s",
          veil_last_error());
    note("wrong party");
    L.frac_bits = 12;
    CHECK(try_open(path, 0) == VEIL_ERR_MISMATCH, "wrong frac bits");
    L = keep;
    L.nparties = 4;
    L.designated = 2;
    CHECK(try_open(path, 0) == VEIL_ERR_MISMATCH, "wrong party count");
    L = keep;
    L.designated = 0;
    CHECK(try_open(path, 0) == VEIL_ERR_MISMATCH, "wrong designated party");
    L = keep;
    plan[5] ^= 1;
    CHECK(try_open(path, 0) == VEIL_ERR_MISMATCH, "wrong plan");
    note("wrong plan");
    plan[5] ^= 1;
    CHECK(try_open(path, 0) == VEIL_OK, "expectation restored");
}

static void damaged(const char *path)
{
    char bad[300];
    size_t n = 0;
    snprintf(bad, sizeof bad, "%s/bad.veilpre", dir);
    unsigned char *img = veil_test_slurp(path, &n), *copy = malloc(n);
    if (!img || !copy) {
        CHECK(0, "slurp");
        free(img);
        free(copy);
        return;
    }
    /* Truncated at many lengths. */
    const size_t cut[] = {0,     1,      8,      87,     88,   119, 120, 200, 88 + 128 * NITEMS,
                          n / 2, n - 33, n - 32, n - 31, n - 1};
    for (size_t i = 0; i < sizeof cut / sizeof cut[0]; i++) {
        spit(bad, img, cut[i]);
        int rc = try_open(bad, 0);
        CHECK(rc == VEIL_ERR_FORMAT, "truncated to %zu: status %d (%s)", cut[i], rc,
              veil_last_error());
    }
    note("truncated");
    /* One flipped bit anywhere: every 97th byte, plus the ends. */
    size_t flips = 0;
    for (size_t pos = 0; pos < n; pos += (pos < 8 || pos + 40 > n) ? 1 : 97) {
        memcpy(copy, img, n);
        copy[pos] ^= 0x04;
        spit(bad, copy, n);
        int rc = try_open(bad, 0);
        CHECK(rc == VEIL_ERR_FORMAT, "flipped byte %zu: status %d", pos, rc);
        if (pos >= 12 && rc == VEIL_ERR_FORMAT)
            CHECK(strstr(veil_last_error(), "digest") != NULL, "flip at %zu: %s", pos,
                  veil_last_error());
        flips++;
    }
    note("flipped byte");
    CHECK(flips > 20, "flips tried");
    /* Other magic / version (digest recomputed, so only the field is wrong). */
    memcpy(copy, img, n);
    copy[0] = 'X';
    redigest(copy, n);
    spit(bad, copy, n);
    CHECK(try_open(bad, 0) == VEIL_ERR_FORMAT && strstr(veil_last_error(), "magic"), "magic");
    memcpy(copy, img, n);
    put_le32(copy + 8, 3); /* this build reads version 2 */
    redigest(copy, n);
    spit(bad, copy, n);
    CHECK(try_open(bad, 0) == VEIL_ERR_FORMAT && strstr(veil_last_error(), "version"), "version");
    note("version");
    /* Crafted tables with valid digests. */
    const struct {
        size_t off;
        int width;
        uint64_t value;
        const char *what;
    } lies[] = {
        {80, 8, UINT64_MAX, "item count huge"},
        {80, 8, NITEMS + 1, "item count + 1"},
        {80, 8, NITEMS - 1, "item count - 1"},
        {88 + 120, 8, UINT64_MAX / 8, "words huge"},
        {88 + 120, 8, 1, "words small"},
        {88 + 128 + 112, 8, 0, "offset overlaps"},
        {88 + 128 + 112, 8, UINT64_MAX - 3, "offset huge"},
        {88 + 16, 8, UINT64_C(1) << 40, "param huge"},
        {88 + 16, 8, 0, "param zero"},
        {88, 4, 99, "unknown kind"},
        {88, 4, VEIL_PREPROC_MATMUL, "other kind, same words"},
        {88 + 4, 4, 1, "reserved field"},
        {28, 4, 1, "reserved header field"},
    };
    for (size_t i = 0; i < sizeof lies / sizeof lies[0]; i++) {
        memcpy(copy, img, n);
        if (lies[i].width == 8)
            put_le64(copy + lies[i].off, lies[i].value);
        else
            put_le32(copy + lies[i].off, (uint32_t)lies[i].value);
        redigest(copy, n);
        spit(bad, copy, n);
        int rc = try_consume(bad, 0);
        CHECK(rc == VEIL_ERR_FORMAT || rc == VEIL_ERR_MISMATCH, "%s: status %d", lies[i].what, rc);
        if (verbose)
            fprintf(stderr, "  crafted %s -> %d %s\n", lies[i].what, rc, veil_last_error());
    }
    /* Random damage to the header and table with a recomputed digest: every case is refused
     * with FORMAT or MISMATCH (every byte there is checked), none crashes. */
    {
        uint8_t gs[VEIL_SEED_BYTES] = {7};
        veil_prg_t *g = veil_prg_new(gs);
        size_t meta = 88 + 128 * NITEMS, refused = 0, tries = 300;
        for (size_t t = 0; g && t < tries; t++) {
            uint64_t rnd[3];
            veil_prg_fill(g, rnd, 3);
            memcpy(copy, img, n);
            size_t nflip = 1 + rnd[0] % 3;
            for (size_t k = 0; k < nflip; k++) {
                size_t pos = (size_t)((rnd[1] >> (16 * k)) % meta);
                copy[pos] ^= (unsigned char)(1 + (rnd[2] >> (8 * k)) % 255);
            }
            redigest(copy, n);
            spit(bad, copy, n);
            int rc = try_consume(bad, 0);
            refused += rc == VEIL_ERR_FORMAT || rc == VEIL_ERR_MISMATCH;
        }
        CHECK(refused == tries, "random header/table damage: %zu of %zu refused", refused, tries);
        veil_prg_destroy(&g);
    }
    /* Shortened while open: the read fails cleanly. */
    spit(bad, img, n);
    veil_preproc_reader_t *r = NULL;
    struct veil_preproc_share s = {0};
    CHECK(veil_preproc_reader_open(bad, &L, 0, plan, &r) == VEIL_OK, "open intact copy");
    CHECK(truncate(bad, 88 + 128 * NITEMS + 16) == 0, "truncate");
    if (r) {
        int rc = veil_preproc_next(r, &items[0], &s);
        CHECK(rc == VEIL_ERR_FORMAT, "read after truncation: %d", rc);
        note("shortened while open");
    }
    veil_preproc_share_clear(&s);
    veil_preproc_reader_close(&r);
    unlink(bad);
    /* Missing file, a directory. */
    char missing[300];
    snprintf(missing, sizeof missing, "%s/none.veilpre", dir);
    CHECK(try_open(missing, 0) == VEIL_ERR_IO, "missing file");
    CHECK(try_open(dir, 0) != VEIL_OK, "a directory");
    free(img);
    free(copy);
}

static void writer_misuse(void)
{
    char path[300];
    snprintf(path, sizeof path, "%s/w.veilpre", dir);
    veil_preproc_writer_t *w = NULL;
    struct veil_preproc_share s = {0};
    int before = count_dir_entries();
    CHECK(veil_preproc_writer_open(path, &L, 0, plan, items, 2, &w) == VEIL_OK, "writer open");
    veil_preproc_party_expand(&L, &items[1], 0, seeds[0], NULL, &s);
    CHECK(veil_preproc_writer_put(w, &s) == VEIL_ERR_MISMATCH, "put out of order");
    CHECK(veil_preproc_writer_commit(&w) == VEIL_ERR_STATE && w == NULL, "commit incomplete");
    CHECK(access(path, F_OK) != 0, "incomplete file not published");
    CHECK(count_dir_entries() == before, "temporary removed");
    CHECK(veil_preproc_writer_open(path, &L, 0, plan, items, 1, &w) == VEIL_OK, "writer open");
    veil_preproc_party_expand(&L, &items[0], 0, seeds[0], NULL, &s);
    CHECK(veil_preproc_writer_put(w, &s) == VEIL_OK, "put");
    CHECK(veil_preproc_writer_put(w, &s) == VEIL_ERR_STATE, "put past the end");
    veil_preproc_writer_abort(&w);
    CHECK(count_dir_entries() == before, "abort removes the temporary");
    struct veil_preproc_item badit = veil_preproc_item_beaver(0, 0);
    CHECK(veil_preproc_writer_open(path, &L, 0, plan, &badit, 1, &w) != VEIL_OK && !w,
          "invalid item refused");
    CHECK(count_dir_entries() == before, "no temporary after a refused open");
    char nodir[300];
    snprintf(nodir, sizeof nodir, "%s/no/such/dir/x", dir);
    CHECK(veil_preproc_writer_open(nodir, &L, 0, plan, items, 1, &w) == VEIL_ERR_IO, "bad dir");
    /* An empty plan round-trips. */
    CHECK(veil_preproc_writer_open(path, &L, 0, plan, NULL, 0, &w) == VEIL_OK, "empty open");
    CHECK(veil_preproc_writer_commit(&w) == VEIL_OK, "empty commit");
    veil_preproc_reader_t *r = NULL;
    CHECK(veil_preproc_reader_open(path, &L, 0, plan, &r) == VEIL_OK, "empty read");
    CHECK(veil_preproc_next(r, &items[0], &s) == VEIL_ERR_MISMATCH, "empty has no items");
    veil_preproc_reader_close(&r);
    unlink(path);
    veil_preproc_share_clear(&s);
}

int main(void)
{
    verbose = getenv("VEIL_TEST_VERBOSE") != NULL;
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/veil-preproc-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    uint8_t sid[16];
    for (int i = 0; i < 16; i++)
        sid[i] = (uint8_t)(i * 13 + 5);
    for (int p = 0; p < NP; p++)
        veil_seed_random(seeds[p]);
    veil_preproc_layout_init(&L, NP, 16, sid);
    uint64_t ix = 0;
    items[0] = veil_preproc_item_beaver(ix++, 100);
    items[1] = veil_preproc_item_matmul(ix++, 5, 7, 3);
    items[2] = veil_preproc_item_conv(ix++, 1, 2, 5, 5, 3, 3, 3, 1, 1);
    items[3] = veil_preproc_item_square(ix++, 33);
    items[4] = veil_preproc_item_and(ix++, 20);
    items[5] = veil_preproc_item_trunc(ix++, 50, 16);
    items[6] = veil_preproc_item_bit(ix++, 130);
    items[7] = veil_preproc_item_cmpmask(ix++, 40);
    items[8] = veil_preproc_item_beaver(ix++, 3);
    items[9] = veil_preproc_item_matmul_ws(ix++, 4, 6, 3, 42);
    items[10] = veil_preproc_item_conv_ws(ix++, 2, 2, 5, 5, 3, 3, 3, 1, 1, 43);
    CHECK(veil_preproc_items_digest(items, NITEMS, plan) == VEIL_OK, "plan digest");

    CHECK(write_files() == VEIL_OK, "write: %s", veil_last_error());
    CHECK(count_dir_entries() == NP, "exactly the %d files, no temporaries (%d entries)", NP,
          count_dir_entries());
    char p0[300];
    path_of(0, p0, sizeof p0);
    size_t n = 0;
    unsigned char *img = veil_test_slurp(p0, &n);
    size_t words = 0;
    for (int i = 0; i < NITEMS; i++)
        words += veil_preproc_share_words(&items[i]);
    CHECK(img && n == 88 + 128 * NITEMS + 8 * words + 32, "file size %zu", n);
    uint64_t tot_c = 0, tot_s = 0, tot_f = 0, want_c = 0;
    for (int i = 0; i < NITEMS; i++)
        want_c += veil_preproc_correction_words(&items[i]);
    CHECK(veil_preproc_items_size(items, NITEMS, &tot_c, &tot_s, &tot_f) == VEIL_OK &&
              tot_c == want_c && tot_s == words && tot_f == n,
          "plan sizes %llu %llu %llu", (unsigned long long)tot_c, (unsigned long long)tot_s,
          (unsigned long long)tot_f);
    CHECK(img && memcmp(img, "VEILPRE", 8) == 0, "magic");
    free(img);

    round_trip();
    read_into();
    peek_weight();
    weight_once();
    wrong_items(p0);
    wrong_session(p0);
    damaged(p0);
    writer_misuse();

    for (int p = 0; p < NP; p++) {
        char path[300];
        path_of(p, path, sizeof path);
        unlink(path);
    }
    rmdir(dir);
    if (failures)
        fprintf(stderr, "%d failures\n", failures);
    return failures ? 1 : 0;
}

/*
 * test_data_shares_file.c — per-party share files: a round trip (kind, shape, words, mode 0600),
 * then each refusal on load with its message: another session, party id, party count or name,
 * a flipped byte anywhere (SHA-256), a truncated file, a file that is not a share file.
 */
#include "config.h"
#include "test_util.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *path;

static void refuse(const struct veil_share_file_id *id, const char *needle)
{
    veil_share_t *s = veil_share_load(path, id);
    VT_CHECK(s == NULL, "loaded, expected '%s'", needle);
    veil_share_destroy(&s);
    veil_test_log("%s", veil_last_error());
    VT_CHECK(strstr(veil_last_error(), needle) != NULL, "message '%s' lacks '%s'",
             veil_last_error(), needle);
}

static void rewrite(const uint8_t *b, size_t n)
{
    FILE *f = fopen(path, "wb");
    VT_CHECK(f && fwrite(b, 1, n, f) == n, "rewrite");
    if (f)
        fclose(f);
}

int main(void)
{
    char dir[] = "/tmp/veil-shares-XXXXXX";
    if (!mkdtemp(dir))
        return 1;
    char p[128];
    snprintf(p, sizeof(p), "%s/fc1.weight.p1.share", dir);
    path = p;

    size_t dims[3] = { 3, 4, 5 };
    veil_share_t *s = veil_share_new(VEIL_SHARE_BINARY, 3, dims);
    VT_CHECK(s != NULL, "share_new");
    if (!s)
        return 1;
    veil_test_random(5, veil_share_data(s), 60);
    veil_test_mix_edges(veil_share_data(s), NULL, 60);
    struct veil_share_file_id id = { { 0 }, 1, 3, "lenet5/fc1.weight" };
    for (int i = 0; i < 16; i++)
        id.session[i] = (uint8_t)(0xa0 + i);
    VT_CHECK(veil_share_save(path, s, &id) == VEIL_OK, "save: %s", veil_last_error());
    struct stat st;
    VT_CHECK(stat(path, &st) == 0 && (st.st_mode & 0777) == 0600, "mode %o", st.st_mode & 0777);
    veil_share_t *t = veil_share_load(path, &id);
    VT_CHECK(t != NULL, "load: %s", veil_last_error());
    if (t) {
        VT_CHECK(veil_share_kind(t) == VEIL_SHARE_BINARY && veil_share_same_shape(s, t),
                 "kind or shape");
        veil_test_compare_u64("words", veil_share_cdata(t), veil_share_cdata(s), 60);
        veil_share_destroy(&t);
    }

    struct veil_share_file_id o = id;
    o.session[15] ^= 1;
    refuse(&o, "belongs to session a0a1a2a3a4a5a6a7a8a9aaabacadaeaf, not to this session");
    o = id;
    o.party = 2;
    refuse(&o, "holds party 1's share, this is party 2");
    o = id;
    o.nparties = 2;
    refuse(&o, "was saved for 3 parties, this run has 2");
    o = id;
    o.name = "lenet5/fc2.weight";
    refuse(&o, "holds 'lenet5/fc1.weight', not 'lenet5/fc2.weight'");
    o.name = "";
    refuse(&o, "name of 0 bytes");

    FILE *f = fopen(path, "rb");
    static uint8_t b[4096];
    size_t n = f ? fread(b, 1, sizeof(b), f) : 0;
    if (f)
        fclose(f);
    VT_CHECK(n == 48 + 24 + 17 + 480 + 32, "file size %zu", n);
    size_t where[] = { 9, 30, 50, 80, 200, n - 1 };
    for (size_t k = 0; k < sizeof(where) / sizeof(where[0]); k++) {
        b[where[k]] ^= 0x10;
        rewrite(b, n);
        refuse(&id, "SHA-256 mismatch");
        b[where[k]] ^= 0x10;
    }
    rewrite(b, n - 40);
    refuse(&id, "SHA-256 mismatch");
    rewrite(b, 20);
    refuse(&id, "not a Veil share file (too short)");
    b[0] = 'X';
    rewrite(b, n);
    refuse(&id, "bad magic");
    unlink(path);
    refuse(&id, "cannot open");

    veil_share_destroy(&s);
    rmdir(dir);
    return veil_test_status();
}

/*
 * test_net_keygen.c — the veil-keygen tool, run as a program from the build tree: it writes
 * NAME.key (mode 0600, readable by veil_curve_read_key_file) and NAME.pub (the public line),
 * prints the same public key; a second run without -f fails, names the existing file and
 * leaves both files unchanged; -f replaces them with a new pair; --help succeeds; a missing
 * NAME, an unknown option and an unwritable directory fail with a message and a non-zero exit.
 */
#include "config.h"
#include "net/config_internal.h"

#include "veil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static int failures;
static char dir[256], tool[1024];

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);               \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

static void slurp(const char *path, char *buf, size_t cap)
{
    buf[0] = '\0';
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    size_t n = fread(buf, 1, cap - 1, f);
    buf[n] = '\0';
    fclose(f);
}

/* Runs the tool with args (a shell fragment); returns its exit status, output in out/err. */
static int run(const char *args, char *out, char *err, size_t cap)
{
    char cmd[4096], outp[512], errp[512];
    snprintf(outp, sizeof outp, "%s/stdout", dir);
    snprintf(errp, sizeof errp, "%s/stderr", dir);
    snprintf(cmd, sizeof cmd, "'%s' %s >'%s' 2>'%s'", tool, args, outp, errp);
    int st = system(cmd);
    slurp(outp, out, cap);
    slurp(errp, err, cap);
    if (getenv("VEIL_TEST_VERBOSE"))
        fprintf(stderr, "$ veil-keygen %s\n%s%s", args, out, err);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 255;
}

static mode_t mode_of(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (st.st_mode & 07777) : (mode_t)-1;
}

int main(void)
{
    const char *top = getenv("VEIL_TOP_BUILDDIR");
    char out[4096], err[4096], args[1024], key[512], pubf[512], text[512], text2[512];
    char p[VEIL_Z85_KEY_CHARS + 1], s[VEIL_Z85_KEY_CHARS + 1];

    snprintf(tool, sizeof tool, "%s/tools/veil-keygen", top && *top ? top : ".");
    if (access(tool, X_OK) != 0) {
        fprintf(stderr, "test_net_keygen: %s not built\n", tool);
        return 1;
    }
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/veil-keygen-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    snprintf(key, sizeof key, "%s/alice.key", dir);
    snprintf(pubf, sizeof pubf, "%s/alice.pub", dir);

    /* First run: both files, right modes, printed key == file key. */
    snprintf(args, sizeof args, "'%s/alice'", dir);
    CHECK(run(args, out, err, sizeof out) == 0);
    CHECK(strlen(out) == VEIL_Z85_KEY_CHARS + 1 && out[VEIL_Z85_KEY_CHARS] == '\n');
    out[VEIL_Z85_KEY_CHARS] = '\0';
    CHECK(veil_z85_key_valid(out, strlen(out)));
    CHECK(mode_of(key) == 0600);
    CHECK(mode_of(pubf) == 0644);
    CHECK(veil_curve_read_key_file(key, p, s) == VEIL_OK && strcmp(p, out) == 0);
    slurp(pubf, text, sizeof text);
    snprintf(text2, sizeof text2, "public %s\n", out);
    CHECK(strcmp(text, text2) == 0);
    slurp(key, text, sizeof text);
    CHECK(strncmp(text, text2, strlen(text2)) == 0 && strstr(text, "\nsecret "));

    /* Second run without -f: refused, files untouched. */
    CHECK(run(args, out, err, sizeof out) == 1);
    CHECK(strstr(err, "alice.pub") && strstr(err, "exists") && strstr(err, "-f"));
    CHECK(out[0] == '\0');
    slurp(key, text2, sizeof text2);
    CHECK(strcmp(text, text2) == 0);
    /* Only NAME.pub missing: still refused, because NAME.key exists (atomic link). */
    unlink(pubf);
    CHECK(run(args, out, err, sizeof out) == 1 && strstr(err, "alice.key"));
    slurp(key, text2, sizeof text2);
    CHECK(strcmp(text, text2) == 0);

    /* -f: a new pair replaces both. */
    snprintf(args, sizeof args, "-f '%s/alice'", dir);
    CHECK(run(args, out, err, sizeof out) == 0);
    out[VEIL_Z85_KEY_CHARS] = '\0';
    CHECK(veil_curve_read_key_file(key, p, s) == VEIL_OK && strcmp(p, out) == 0);
    slurp(key, text2, sizeof text2);
    CHECK(strcmp(text, text2) != 0);
    CHECK(veil_curve_read_key_file(pubf, p, NULL) == VEIL_OK && strcmp(p, out) == 0);
    CHECK(mode_of(key) == 0600);

    /* Help and usage errors. */
    CHECK(run("--help", out, err, sizeof out) == 0 && strstr(out, "usage: veil-keygen"));
    CHECK(run("", out, err, sizeof out) == 2 && strstr(err, "missing NAME"));
    CHECK(run("-x a", out, err, sizeof out) == 2 && strstr(err, "unknown option '-x'"));
    CHECK(run("a b", out, err, sizeof out) == 2 && strstr(err, "one NAME only"));
    snprintf(args, sizeof args, "'%s/no/such/dir/bob'", dir);
    CHECK(run(args, out, err, sizeof out) == 1 && strstr(err, "cannot create") &&
          strstr(err, "No such file or directory"));

    snprintf(args, sizeof args, "rm -rf '%s'", dir);
    if (system(args) != 0)
        fprintf(stderr, "could not remove %s\n", dir);
    if (failures)
        fprintf(stderr, "test_net_keygen: %d failure(s)\n", failures);
    return failures ? 1 : 0;
}

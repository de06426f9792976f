/*
 * Tests `veil-onnx check-ranges` (tools/veil-onnx-ranges.c) on a Gemm (64 -> 4, weights 1000) +
 * Relu model written here with veil_onnx_write: inputs of 30000 sum to 1.92e9 before the
 * truncation, beyond 2^30 at f = 16, so the table marks the dense node's accumulation OVER (with
 * the sum printed) and the exit status is 4; inputs of 1 give every row OK and exit 0; with
 * --batch 1 over three examples the one that overflows is found (exit 4, the report over every
 * batch) and three quiet ones in batches of 2 pass (exit 0, "3 examples in 2 batches of 2"); the
 * first run's output equals README.md's, line for line. Bad input: no input file (usage, exit 2),
 * the stripped model (its weights are what is checked: refused, non-zero, naming the missing
 * values).
 */
#include "config.h"

#include "veil/onnx.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static char tool[1024], tmp[] = "/tmp/veil-onnx-ranges-XXXXXX", out[4096 * 4];
static int failures;

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            printf("FAIL: ");                                                                      \
            printf(__VA_ARGS__);                                                                   \
            printf("\n");                                                                          \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

/* Runs veil-onnx with args (stdout and stderr into out); its exit status. */
static int run(const char *args)
{
    char cmd[4096], path[1100];
    snprintf(path, sizeof path, "%s/out.txt", tmp);
    snprintf(cmd, sizeof cmd, "'%s' %s > '%s' 2>&1", tool, args, path);
    fflush(stdout);
    int st = system(cmd);
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(out, 1, sizeof out - 1, f) : 0;
    out[n] = '\0';
    if (f)
        fclose(f);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* x: count examples of 64 values, example e all v[e]. */
static int write_input(const char *name, size_t count, const double *v)
{
    struct veil_onnx_tensor t;
    memset(&t, 0, sizeof t);
    double x[3 * 64];
    t.ndim = 2;
    t.dims[0] = count;
    t.dims[1] = 64;
    t.numel = count * 64;
    t.values = x;
    for (size_t i = 0; i < t.numel; i++)
        x[i] = v[i / 64];
    char path[1100];
    snprintf(path, sizeof path, "%s/%s", tmp, name);
    return veil_onnx_tensor_write(path, &t);
}

/* A line of out holding every one of the words (each a substring of the same line). */
static int line_with(const char *a, const char *b, const char *c)
{
    for (const char *l = out; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
        const char *end = strchr(l, '\n');
        size_t len = end ? (size_t)(end - l) : strlen(l);
        char line[512];
        snprintf(line, sizeof line, "%.*s", (int)(len < sizeof line ? len : sizeof line - 1), l);
        if (strstr(line, a) && strstr(line, b) && strstr(line, c))
            return 1;
    }
    return 0;
}

int main(void)
{
    const char *top = getenv("VEIL_TOP_BUILDDIR");
    snprintf(tool, sizeof tool, "%s/tools/veil-onnx", top ? top : ".");
    if (!mkdtemp(tmp))
        return 1;
    static double w[64 * 4], b[4];
    for (size_t i = 0; i < 64 * 4; i++)
        w[i] = 1000;
    struct veil_onnx_layer layers[2] = {
        {.kind = VEIL_ONNX_LAYER_GEMM,
         .name = "fc",
         .weight = w,
         .bias = b,
         .ndim = 2,
         .dims = {64, 4}},
        {.kind = VEIL_ONNX_LAYER_RELU, .name = "act"},
    };
    char model[1100], args[2400];
    snprintf(model, sizeof model, "%s/big.onnx", tmp);
    const size_t d1[2] = {1, 64}, d3[2] = {3, 64};
    const double big[1] = {30000}, one[1] = {1}, mixed[3] = {1, 30000, -2}, quiet[3] = {1, -2, 3};
    int rc = veil_onnx_write(model, "x", 2, d1, layers, 2, "y");
    CHECK(rc == VEIL_OK, "veil_onnx_write: %s", veil_last_error());
    rc = write_input("big.npy", 1, big) || write_input("one.npy", 1, one) ||
         write_input("mixed.npy", 3, mixed) || write_input("quiet.npy", 3, quiet);
    CHECK(rc == VEIL_OK, "writing the inputs: %s", veil_last_error());

    snprintf(args, sizeof args, "check-ranges '%s' '%s/big.npy'", model, tmp);
    rc = run(args);
    CHECK(rc == 4, "inputs of 30000: exit %d, expected 4:\n%s", rc, out);
    CHECK(line_with(" dense ", "accumulation", "1.92e+09") &&
              line_with(" dense ", "accumulation", " OVER") &&
              strstr(out, "a sum of products passes 2^62") && line_with("x ", "value", "NEAR") &&
              strstr(out, "summary: ") && strstr(out, " 1 OVER"),
          "inputs of 30000: the table does not show the dense node OVER:\n%s", out);
    /* the same run from its folder prints what README.md shows, line for line */
    const char *srcdir = getenv("VEIL_TOP_SRCDIR");
    char cmd[8192];
    snprintf(cmd, sizeof cmd,
             "cd '%s' && '%s' check-ranges big.onnx big.npy > readme.out 2>&1; "
             "sed -n '/^\\$ veil-onnx check-ranges big.onnx big.npy$/,/^```$/p' '%s/README.md' "
             "| sed '1d;$d' > readme.want && [ -s readme.want ] && diff readme.want readme.out",
             tmp, tool, srcdir ? srcdir : "..");
    fflush(stdout);
    rc = system(cmd);
    CHECK(rc == 0, "veil-onnx check-ranges big.onnx big.npy does not print what README.md shows");
    snprintf(args, sizeof args, "check-ranges '%s' '%s/one.npy'", model, tmp);
    rc = run(args);
    CHECK(rc == 0 && strstr(out, " 0 NEAR, 0 OVER, 0 UNREACHED") &&
              line_with(" dense ", "accumulation", " OK"),
          "inputs of 1: exit %d:\n%s", rc, out);

    /* three examples a batch of one at a time: the middle one overflows */
    char model3[1100];
    snprintf(model3, sizeof model3, "%s/big3.onnx", tmp);
    rc = veil_onnx_write(model3, "x", 2, d3, layers, 2, "y");
    CHECK(rc == VEIL_OK, "veil_onnx_write: %s", veil_last_error());
    snprintf(args, sizeof args, "check-ranges '%s' --batch 1 '%s/mixed.npy'", model3, tmp);
    rc = run(args);
    CHECK(rc == 4 && strstr(out, "3 examples in 3 batches of 1") &&
              strstr(out, "3 runs of the fixed-point") &&
              line_with(" dense ", "accumulation", " OVER"),
          "--batch 1, mixed: exit %d:\n%s", rc, out);
    snprintf(args, sizeof args, "check-ranges '%s' --batch 2 '%s/quiet.npy'", model3, tmp);
    rc = run(args);
    CHECK(rc == 0 && strstr(out, "3 examples in 2 batches of 2") && strstr(out, " 0 OVER"),
          "--batch 2, quiet: exit %d:\n%s", rc, out);

    /* bad input */
    snprintf(args, sizeof args, "check-ranges '%s'", model);
    rc = run(args);
    CHECK(rc == 2 && strstr(out, "1 graph inputs, 0 files"), "no input file: exit %d:\n%s", rc,
          out);
    snprintf(args, sizeof args, "strip '%s' -o '%s/pub.onnx'", model, tmp);
    CHECK(run(args) == 0, "strip: %s", out);
    snprintf(args, sizeof args, "check-ranges '%s/pub.onnx' '%s/one.npy'", tmp, tmp);
    rc = run(args);
    CHECK(rc != 0 && rc != 4 && strstr(out, "fc.weight"), "the stripped model: exit %d:\n%s", rc,
          out);

    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
    if (system(cmd) != 0)
        failures++;
    printf("%s\n", failures ? "FAIL" : "PASS: veil-onnx check-ranges");
    return failures ? 1 : 0;
}

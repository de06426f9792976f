/* Tests the Z_2^64 matrix product: veil_gemm_u64 called directly and through StarPU tasks
 * (veil_task_gemm) equals the plaintext reference (veil_ref_gemm) bit for bit, on random matrices
 * salted with the edge values 0, 1, 2^63 and 2^64 - 1, odd shapes and shapes crossing every block
 * boundary of every microkernel, padded leading dimensions, all four transpose combinations,
 * overwrite and accumulate, with each microkernel the CPU supports forced in turn (AVX-512, AVX2,
 * portable, and the unblocked fallback), A read in place and packed (the AVX-512 kernel's two
 * paths); that VEIL_GEMM_KERNEL=generic selects the portable kernel
 * and an unknown kernel name is refused; that the perf model's footprint is the product's
 * (m, n, k); and that the submit helper rejects mismatched shapes with VEIL_ERR_SHAPE and bad
 * handles with VEIL_ERR_INVAL before submitting. */
#include "config.h"
#include "codelets/gemm_internal.h"
#include "codelets/reference.h"
#include "veil.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static int verbose;
static int fails;

#define FAIL(...)                                                                                  \
    do {                                                                                           \
        fprintf(stderr, "FAIL: " __VA_ARGS__);                                                     \
        fputc('\n', stderr);                                                                       \
        fails++;                                                                                   \
    } while (0)

/* xorshift64*: test data only (the library's randomness is the AES-CTR PRG). */
static uint64_t rng_state = 0x9e3779b97f4a7c15u;
static uint64_t rnd(void)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545f4914f6cdd1du;
}

/* Random words, one in four replaced by an edge value of the ring. */
static void fill(uint64_t *x, size_t n)
{
    static const uint64_t edge[] = {0, 1, UINT64_C(1) << 63, UINT64_MAX};
    for (size_t i = 0; i < n; i++) {
        uint64_t r = rnd();
        x[i] = (r & 3) == 0 ? edge[(r >> 2) & 3] : rnd();
    }
}

/* The oracle: C (=|+=) op(A) op(B) with the project's plaintext reference veil_ref_gemm, on
 * contiguous copies of op(A) and op(B). Returns 0, or -1 when out of memory. */
static int oracle_gemm(int ta, int tb, size_t m, size_t n, size_t k, const uint64_t *a, size_t lda,
                       const uint64_t *b, size_t ldb, int acc, uint64_t *c, size_t ldc)
{
    if (m == 0 || n == 0)
        return 0;
    uint64_t *oa = malloc((m * k + 1) * 8), *ob = malloc((k * n + 1) * 8),
             *prod = malloc(m * n * 8);
    int rc = -1;
    if (!oa || !ob || !prod)
        goto done;
    for (size_t i = 0; i < m; i++)
        for (size_t p = 0; p < k; p++)
            oa[i * k + p] = ta ? a[p * lda + i] : a[i * lda + p];
    for (size_t p = 0; p < k; p++)
        for (size_t j = 0; j < n; j++)
            ob[p * n + j] = tb ? b[j * ldb + p] : b[p * ldb + j];
    if (k == 0)
        memset(prod, 0, m * n * 8);
    else
        veil_ref_gemm(m, n, k, oa, ob, prod);
    for (size_t i = 0; i < m; i++)
        for (size_t j = 0; j < n; j++)
            c[i * ldc + j] = (acc ? c[i * ldc + j] : 0) + prod[i * n + j];
    rc = 0;
done:
    free(oa);
    free(ob);
    free(prod);
    return rc;
}

struct shape {
    size_t m, n, k;
};

/* Odd sizes, and sizes crossing the register tiles (8 x 24, 4 x 4, 4 x 8) and each cache block
 * (mc 128; kc 512 or 256; nc 1536) of the kernels. With the AVX-512 kernel, a product of at most
 * 384 columns reads A in place, with the AVX2 kernel one of at most 32; the wider ones pack A:
 * both paths with partial row and column tiles and more than one kc slice, on both sides of
 * either limit (the last four shapes). */
static const struct shape shapes[] = {
    {1, 1, 1},      {7, 13, 5},     {65, 33, 129}, {8, 24, 512},  {9, 25, 513},   {1, 70, 3},
    {70, 1, 3},     {3, 2, 1030},   {260, 30, 20}, {17, 4100, 2}, {129, 49, 257}, {9, 400, 513},
    {13, 385, 600}, {13, 384, 600}, {13, 33, 600}, {13, 32, 600},
};

/* The in-place reading of A covered where the kernel has it: some shape takes each path with A
 * as stored, none reads a transposed A in place. */
static void check_paths_covered(void)
{
    int in_place = 0, packed = 0;
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
        if (veil_gemm_reads_a_in_place(1, shapes[s].n))
            FAIL("%s reads a transposed A in place (n = %zu)", veil_gemm_kernel_name(),
                 shapes[s].n);
        if (veil_gemm_reads_a_in_place(0, shapes[s].n))
            in_place++;
        else
            packed++;
    }
    const char *name = veil_gemm_kernel_name();
    int has_tile = strcmp(name, "avx512") == 0 || strcmp(name, "avx2") == 0;
    if (has_tile && (!in_place || !packed))
        FAIL("%s: %d shapes read A in place, %d pack it: both paths must be tested", name, in_place,
             packed);
    if (!has_tile && in_place)
        FAIL("%s reads A in place: it has no such tile", name);
}

/* One direct call against the oracle. Stored matrices get padded leading dimensions. */
static void check_direct(int ta, int tb, int acc, size_t m, size_t n, size_t k)
{
    size_t ar = ta ? k : m, ac = ta ? m : k, br = tb ? n : k, bc = tb ? k : n;
    size_t lda = ac + 3, ldb = bc + 1, ldc = n + 5;
    size_t na = ar * lda + 1, nb = br * ldb + 1, nc = m * ldc + 1;
    uint64_t *a = malloc(na * 8), *b = malloc(nb * 8), *c = malloc(nc * 8), *want = malloc(nc * 8);
    if (!a || !b || !c || !want) {
        FAIL("out of memory");
        goto done;
    }
    fill(a, na);
    fill(b, nb);
    fill(c, nc);
    memcpy(want, c, nc * 8);
    veil_gemm_u64(ta, tb, m, n, k, a, lda, b, ldb, acc, c, ldc);
    if (oracle_gemm(ta, tb, m, n, k, a, lda, b, ldb, acc, want, ldc) != 0) {
        FAIL("out of memory");
        goto done;
    }
    /* The whole buffers, so the padding columns past n must be untouched too. */
    if (memcmp(c, want, nc * 8) != 0)
        FAIL("direct %s: %zu x %zu x %zu trans_a %d trans_b %d accumulate %d differs",
             veil_gemm_kernel_name(), m, n, k, ta, tb, acc);
done:
    free(a);
    free(b);
    free(c);
    free(want);
}

static void register_rowmajor(starpu_data_handle_t *h, uint64_t *p, size_t rows, size_t cols,
                              size_t ld)
{
    starpu_matrix_data_register(h, STARPU_MAIN_RAM, (uintptr_t)p, (uint32_t)ld, (uint32_t)cols,
                                (uint32_t)rows, sizeof(uint64_t));
}

/* One product through a StarPU task against the oracle. */
static void check_task(int ta, int tb, int acc, size_t m, size_t n, size_t k)
{
    size_t ar = ta ? k : m, ac = ta ? m : k, br = tb ? n : k, bc = tb ? k : n;
    size_t lda = ac + 2, ldb = bc, ldc = n + 1;
    uint64_t *a = malloc(ar * lda * 8), *b = malloc(br * ldb * 8), *c = malloc(m * ldc * 8);
    uint64_t *want = malloc(m * ldc * 8);
    starpu_data_handle_t ha, hb, hc;
    if (!a || !b || !c || !want) {
        FAIL("out of memory");
        goto done;
    }
    fill(a, ar * lda);
    fill(b, br * ldb);
    fill(c, m * ldc);
    memcpy(want, c, m * ldc * 8);
    if (oracle_gemm(ta, tb, m, n, k, a, lda, b, ldb, acc, want, ldc) != 0) {
        FAIL("out of memory");
        goto done;
    }
    register_rowmajor(&ha, a, ar, ac, lda);
    register_rowmajor(&hb, b, br, bc, ldb);
    register_rowmajor(&hc, c, m, n, ldc);
    int rc = veil_task_gemm(ha, hb, hc, ta, tb, acc, 0);
    if (rc != VEIL_OK)
        FAIL("veil_task_gemm: %s", veil_last_error());
    starpu_data_unregister(ha);
    starpu_data_unregister(hb);
    starpu_data_unregister(hc);
    for (size_t i = 0; i < m; i++)
        if (memcmp(c + i * ldc, want + i * ldc, n * 8) != 0) {
            FAIL("task %s: %zu x %zu x %zu trans_a %d trans_b %d accumulate %d differs",
                 veil_gemm_kernel_name(), m, n, k, ta, tb, acc);
            break;
        }
done:
    free(a);
    free(b);
    free(c);
    free(want);
}

/* A^T A with one handle read twice, then a chain of accumulating tasks on one C:
 * C = A^T A; C += A^T A; C += A^T A gives 3 A^T A (sequential consistency orders them). */
static void check_same_handle_chain(void)
{
    enum { R = 37, K = 21 };
    uint64_t a[R * K], c[K * K], want[K * K];
    starpu_data_handle_t ha, hc;
    fill(a, R * K);
    if (oracle_gemm(1, 0, K, K, R, a, K, a, K, 0, want, K) != 0) {
        FAIL("out of memory");
        return;
    }
    for (size_t i = 0; i < K * K; i++)
        want[i] *= 3;
    register_rowmajor(&ha, a, R, K, K);
    register_rowmajor(&hc, c, K, K, K);
    for (int rep = 0; rep < 3; rep++)
        if (veil_task_gemm(ha, ha, hc, 1, 0, rep > 0, rep) != VEIL_OK)
            FAIL("A^T A task %d: %s", rep, veil_last_error());
    starpu_data_unregister(ha);
    starpu_data_unregister(hc);
    if (memcmp(c, want, sizeof c) != 0)
        FAIL("chain C = A^T A; C += A^T A; C += A^T A differs");
}

/* Footprint and size of a GEMM task on these handles, through StarPU's own entry points. */
static uint32_t task_footprint(starpu_data_handle_t a, starpu_data_handle_t b,
                               starpu_data_handle_t c, size_t *macs)
{
    struct starpu_task *task =
        starpu_task_build(&veil_gemm_cl, STARPU_R, a, STARPU_R, b, STARPU_W, c, 0);
    if (!task) {
        FAIL("starpu_task_build failed");
        return 0;
    }
    struct starpu_perfmodel *model = veil_gemm_cl.model;
    uint32_t fp = starpu_task_footprint(model, task, starpu_worker_get_perf_archtype(0, 0), 0);
    *macs = model->size_base ? model->size_base(task, 0) : 0;
    task->destroy = 0;
    starpu_task_destroy(task);
    return fp;
}

/* The perf model is keyed on (m, n, k): the same product stored transposed shares a history,
 * another shape does not, and size_base counts multiply-adds. */
static void check_perfmodel(void)
{
    static uint64_t a[8 * 32], at[32 * 8], b[32 * 16], bt[16 * 32], c[8 * 16];
    static uint64_t a2[32 * 32], c2[32 * 16];
    starpu_data_handle_t ha, hat, hb, hbt, hc, ha2, hc2;
    register_rowmajor(&ha, a, 8, 32, 32);    /* A 8 x 32: m 8, k 32 */
    register_rowmajor(&hat, at, 32, 8, 8);   /* the same A stored transposed */
    register_rowmajor(&hb, b, 32, 16, 16);   /* B 32 x 16: n 16 */
    register_rowmajor(&hbt, bt, 16, 32, 32); /* the same B stored transposed */
    register_rowmajor(&hc, c, 8, 16, 16);
    register_rowmajor(&ha2, a2, 32, 32, 32); /* m 32, k 32 */
    register_rowmajor(&hc2, c2, 32, 16, 16);

    size_t macs1, macs2, macs3;
    uint32_t f1 = task_footprint(ha, hb, hc, &macs1);
    uint32_t f2 = task_footprint(hat, hbt, hc, &macs2);
    uint32_t f3 = task_footprint(ha2, hb, hc2, &macs3);
    if (f1 != f2)
        FAIL("perf model: the same 8 x 16 x 32 product stored transposed has another footprint");
    if (f1 == f3)
        FAIL("perf model: 8 x 16 x 32 and 32 x 16 x 32 share a footprint");
    if (macs1 != 8 * 16 * 32 || macs2 != macs1 || macs3 != 32 * 16 * 32)
        FAIL("perf model: size_base %zu, %zu, %zu; expected 4096, 4096, 16384", macs1, macs2,
             macs3);

    starpu_data_unregister(ha);
    starpu_data_unregister(hat);
    starpu_data_unregister(hb);
    starpu_data_unregister(hbt);
    starpu_data_unregister(hc);
    starpu_data_unregister(ha2);
    starpu_data_unregister(hc2);
}

static void expect_reject(starpu_data_handle_t a, starpu_data_handle_t b, starpu_data_handle_t c,
                          int ta, int tb, int want, const char *needle, const char *what)
{
    int rc = veil_task_gemm(a, b, c, ta, tb, 0, 0);
    if (rc != want)
        FAIL("%s: got %d (%s), expected %s", what, rc, veil_strerror(rc), veil_strerror(want));
    else if (needle && !strstr(veil_last_error(), needle))
        FAIL("%s: message '%s' does not name '%s'", what, veil_last_error(), needle);
    else if (verbose)
        printf("rejected %s: %s\n", what, veil_last_error());
}

static void check_bad_shapes(void)
{
    static uint64_t a[3 * 5], b[5 * 4], c[3 * 4], c2[4 * 3];
    static uint32_t narrow[3 * 4];
    static uint64_t vec[12];
    starpu_data_handle_t ha, hb, hc, hc2, hn, hv;
    register_rowmajor(&ha, a, 3, 5, 5);   /* 3 x 5 */
    register_rowmajor(&hb, b, 5, 4, 4);   /* 5 x 4 */
    register_rowmajor(&hc, c, 3, 4, 4);   /* 3 x 4 */
    register_rowmajor(&hc2, c2, 4, 3, 3); /* 4 x 3 */
    starpu_matrix_data_register(&hn, STARPU_MAIN_RAM, (uintptr_t)narrow, 4, 4, 3, 4);
    starpu_vector_data_register(&hv, STARPU_MAIN_RAM, (uintptr_t)vec, 12, sizeof(uint64_t));

    expect_reject(ha, hb, hc, 0, 0, VEIL_OK, NULL, "valid 3x5 * 5x4 -> 3x4");
    expect_reject(ha, hb, hc, 1, 0, VEIL_ERR_SHAPE, "5 x 3", "A^T (5x3) * B (5x4)");
    expect_reject(ha, hb, hc, 0, 1, VEIL_ERR_SHAPE, "4 x 5", "A (3x5) * B^T (4x5)");
    expect_reject(ha, hb, hc2, 0, 0, VEIL_ERR_SHAPE, "4 x 3", "3x4 product into 4x3 C");
    expect_reject(hb, ha, hc, 0, 0, VEIL_ERR_SHAPE, "5 x 4", "B * A, inner 4 vs 3");
    expect_reject(NULL, hb, hc, 0, 0, VEIL_ERR_INVAL, "NULL", "NULL A");
    expect_reject(ha, hb, hb, 0, 0, VEIL_ERR_INVAL, "distinct", "C aliasing B");
    expect_reject(ha, hb, hn, 0, 0, VEIL_ERR_INVAL, "element size", "4-byte C");
    expect_reject(ha, hb, hv, 0, 0, VEIL_ERR_INVAL, "starpu_matrix", "vector C");

    starpu_data_unregister(ha);
    starpu_data_unregister(hb);
    starpu_data_unregister(hc);
    starpu_data_unregister(hc2);
    starpu_data_unregister(hn);
    starpu_data_unregister(hv);
}

/* VEIL_GEMM_KERNEL is read once per process, so it is checked in a child forked before anything
 * else here has called the kernel (and before starpu_init). */
static void check_env_selection(void)
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        FAIL("fork: %s", strerror(errno));
        return;
    }
    if (pid == 0) {
        setenv("VEIL_GEMM_KERNEL", "generic", 1);
        _exit(strcmp(veil_gemm_kernel_name(), "generic") == 0 ? 0 : 1);
    }
    int status;
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
        FAIL("VEIL_GEMM_KERNEL=generic did not select the generic kernel");
}

int main(void)
{
    verbose = getenv("VEIL_TEST_VERBOSE") && atoi(getenv("VEIL_TEST_VERBOSE"));
    check_env_selection();
    char home[] = "/tmp/veil-test-gemm-XXXXXX";
    if (!mkdtemp(home))
        return 1;
    setenv("STARPU_HOME", home, 1);
    setenv("STARPU_NCPU", "1", 1);
    setenv("STARPU_WORKERS_NOBIND", "1", 1);
    setenv("STARPU_SILENT", "1", 1);
    setenv("STARPU_NOPENCL", "0", 1);
    setenv("STARPU_SCHED", "lws", 1);
    if (starpu_init(NULL) != 0) {
        fprintf(stderr, "starpu_init failed\n");
        return 77;
    }

    static const char *const kernels[] = {"avx512", "avx2", "generic", "unblocked"};
    int tested = 0;
    for (int kr = 0; kr < 4; kr++) {
        if (veil_gemm_force_kernel(kernels[kr]) != VEIL_OK) {
            if (verbose)
                printf("kernel %s: not on this CPU (%s)\n", kernels[kr], veil_last_error());
            continue;
        }
        if (strcmp(veil_gemm_kernel_name(), kernels[kr]) != 0)
            FAIL("forced %s, selected %s", kernels[kr], veil_gemm_kernel_name());
        tested++;
        if (verbose)
            printf("kernel: %s\n", veil_gemm_kernel_name());
        check_paths_covered();
        for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++)
            for (int t = 0; t < 8; t++)
                check_direct(t & 1, (t >> 1) & 1, t >> 2, shapes[s].m, shapes[s].n, shapes[s].k);
        /* The same products with A packed whatever their width (the path before in-place). */
        veil_gemm_pack_a_always(1);
        for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
            if (veil_gemm_reads_a_in_place(0, shapes[s].n))
                FAIL("%s: A read in place while packing is forced", veil_gemm_kernel_name());
            for (int t = 0; t < 8; t++)
                check_direct(t & 1, (t >> 1) & 1, t >> 2, shapes[s].m, shapes[s].n, shapes[s].k);
        }
        veil_gemm_pack_a_always(0);
        /* Every cache block crossed at once (m > mc, n > nc, k > kc). */
        check_direct(0, 1, 1, 129, 1537, 513);
        /* Empty products: nothing to do, or C := 0 when k == 0 and not accumulating. */
        for (int acc = 0; acc < 2; acc++) {
            check_direct(0, 0, acc, 0, 5, 3);
            check_direct(1, 1, acc, 4, 0, 3);
            check_direct(0, 1, acc, 4, 5, 0);
        }
        for (int t = 0; t < 8; t++) {
            check_task(t & 1, (t >> 1) & 1, t >> 2, 65, 33, 129);
            check_task(t & 1, (t >> 1) & 1, t >> 2, 1, 1, 1);
        }
        check_same_handle_chain();
        /* The workers read the flag when a task runs: finish before switching kernels. */
        starpu_task_wait_for_all();
    }
    if (!tested)
        FAIL("not even the generic kernel could be forced");
    veil_gemm_force_generic(1);
    if (strcmp(veil_gemm_kernel_name(), "generic") != 0)
        FAIL("veil_gemm_force_generic(1) selected %s", veil_gemm_kernel_name());
    veil_gemm_force_generic(0);
    if (veil_gemm_force_kernel("avx1024") != VEIL_ERR_UNSUPPORTED)
        FAIL("unknown kernel name accepted");
    check_bad_shapes();
    check_perfmodel();
    starpu_task_wait_for_all();
    starpu_shutdown();
    veil_gemm_release_buffers();

    char cmd[sizeof home + 16];
    snprintf(cmd, sizeof cmd, "rm -rf %s", home);
    if (system(cmd) != 0 && verbose)
        printf("could not remove %s\n", home);
    if (verbose)
        printf("%s (%d failures)\n", fails ? "FAIL" : "PASS", fails);
    return fails ? 1 : 0;
}

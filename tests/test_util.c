/*
 * test_util.c — the shared test helpers declared in test_util.h.
 */
#include "config.h"

#include "test_util.h"

#include <starpu.h>

#include <ftw.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int veil_test_failures;

const uint64_t veil_test_edge[VEIL_TEST_NEDGE] = {0, 1, UINT64_C(0x7fffffffffffffff),
                                                  UINT64_C(0x8000000000000000), UINT64_MAX};

static char starpu_home[64];

int veil_test_verbose(void)
{
    const char *v = getenv("VEIL_TEST_VERBOSE");
    return v != NULL && strcmp(v, "1") == 0;
}

void veil_test_log(const char *fmt, ...)
{
    if (!veil_test_verbose())
        return;
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

size_t veil_test_argmax(const uint64_t *v, size_t k)
{
    size_t best = 0;
    for (size_t i = 1; i < k; i++)
        if ((int64_t)v[i] > (int64_t)v[best])
            best = i;
    return best;
}

int veil_test_random(uint64_t tag, uint64_t *out, size_t n)
{
    uint8_t seed[VEIL_SEED_BYTES];
    for (int i = 0; i < VEIL_SEED_BYTES; i++)
        seed[i] = (uint8_t)(0x5a ^ (tag >> (8 * (i % 8))) ^ (uint64_t)(i * 29));
    veil_prg_t *prg = veil_prg_new(seed);
    if (prg == NULL || veil_prg_fill(prg, out, n) != VEIL_OK) {
        fprintf(stderr, "FAIL: PRG: %s\n", veil_last_error());
        veil_prg_destroy(&prg);
        veil_test_failures++;
        return 1;
    }
    veil_prg_destroy(&prg);
    return 0;
}

void veil_test_mix_edges(uint64_t *a, uint64_t *b, size_t n)
{
    size_t m = n < VEIL_TEST_NEDGE * VEIL_TEST_NEDGE ? n : VEIL_TEST_NEDGE * VEIL_TEST_NEDGE;
    for (size_t t = 0; t < m; t++) {
        a[t] = veil_test_edge[t % VEIL_TEST_NEDGE];
        if (b != NULL)
            b[t] = veil_test_edge[t / VEIL_TEST_NEDGE];
    }
}

int veil_test_compare_u64(const char *what, const uint64_t *got, const uint64_t *want, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (got[i] != want[i]) {
            fprintf(stderr,
                    "FAIL %s: first mismatch at index %zu of %zu: got 0x%016llx, want "
                    "0x%016llx\n",
                    what, i, n, (unsigned long long)got[i], (unsigned long long)want[i]);
            veil_test_failures++;
            return 1;
        }
    }
    return 0;
}

starpu_data_handle_t veil_test_vec(uint64_t *p, size_t n)
{
    starpu_data_handle_t h;
    starpu_vector_data_register(&h, STARPU_MAIN_RAM, (uintptr_t)p, n, sizeof(uint64_t));
    return h;
}

int veil_test_starpu_start(void)
{
    setenv("STARPU_NCPU", "1", 0);
    setenv("STARPU_WORKERS_NOBIND", "1", 1);
    setenv("STARPU_SILENT", "1", 1);
    setenv("STARPU_SCHED", "lws", 0);
    const char *tmp = getenv("TMPDIR");
    snprintf(starpu_home, sizeof(starpu_home), "%s/veil-test-XXXXXX",
             tmp != NULL && strlen(tmp) < 40 ? tmp : "/tmp");
    if (mkdtemp(starpu_home) == NULL) {
        fprintf(stderr, "SKIP: mkdtemp %s failed\n", starpu_home);
        starpu_home[0] = '\0';
        return 77;
    }
    setenv("STARPU_HOME", starpu_home, 1);
    int rc = starpu_init(NULL);
    if (rc != 0) {
        fprintf(stderr, "SKIP: starpu_init failed (%d)\n", rc);
        veil_test_starpu_stop();
        return 77;
    }
    return 0;
}

static int remove_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(path);
}

void veil_test_starpu_stop(void)
{
    if (starpu_is_initialized())
        starpu_shutdown();
    if (starpu_home[0] != '\0')
        nftw(starpu_home, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    starpu_home[0] = '\0';
}

size_t veil_test_resident_pages(const void *p, size_t n, size_t *whole)
{
    const size_t page = (size_t)sysconf(_SC_PAGESIZE);
    const uintptr_t start = ((uintptr_t)p + page - 1) & ~(uintptr_t)(page - 1);
    const uintptr_t end = ((uintptr_t)p + n) & ~(uintptr_t)(page - 1);
    unsigned char vec[4096];
    *whole = end > start ? (end - start) / page : 0;
    if (*whole == 0 || *whole > sizeof vec || mincore((void *)start, end - start, vec) != 0) {
        *whole = 0;
        return 0;
    }
    size_t k = 0;
    for (size_t i = 0; i < *whole; i++)
        k += vec[i] & 1;
    return k;
}

int veil_test_status(void)
{
    return veil_test_failures != 0 ? 1 : 0;
}

unsigned char *veil_test_slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    long len = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
    unsigned char *b = len >= 0 && fseek(f, 0, SEEK_SET) == 0 ? malloc((size_t)len + 1) : NULL;
    if (b && fread(b, 1, (size_t)len, f) != (size_t)len) {
        free(b);
        b = NULL;
    }
    fclose(f);
    *n = b ? (size_t)len : 0;
    return b;
}

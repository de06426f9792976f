/* Tests the share-buffer pool's bound (base/secmem.c): without VEIL_POOL_MAX_MB it is a quarter
 * of the memory the process may use, at least 1 GiB (between 1 GiB and a quarter of the machine's
 * memory); VEIL_POOL_MAX_MB=16 bounds it at 16 MiB, so
 * that of five 4 MiB buffers given back four are kept (and handed out again, zeroed) and the fifth
 * is freed (noted at the info level); values outside 16..1048576 MiB or not numbers fall back to
 * the default with a warning naming the variable. veil_secbuf_reserve under the 16 MiB bound: of
 * 4, 4 MiB, 100 KiB, 300 MiB, 4 and 4 MiB it keeps 4, 4 MiB, 100 KiB and 4 MiB (the 300 MiB
 * buffer is over the largest size pooled, the last one over the bound), every page of them
 * resident (mincore) where a buffer freshly mapped by a get has none (in a sanitizer build a get
 * allocates with malloc and zeroes it, so that half is not checked there); gets of those sizes then
 * take them, zeroed, with no fresh allocation. Each case runs in a child of its own: the bound is
 * read once per process. */
#include "config.h"
#include "test_util.h"
#include "base/secmem.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define MIB ((size_t)1 << 20)

/* The default lies between 1 GiB and a quarter of the machine's memory (a control group's limit
 * may lower it to 1 GiB; this test cannot know the limit it runs under). */
static int default_bound(size_t b)
{
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    const size_t quarter = (size_t)pages / 4 * (size_t)page;
    return b >= 1024 * MIB && b <= (quarter > 1024 * MIB ? quarter : 1024 * MIB) + MIB;
}

/* VEIL_POOL_MAX_MB=16: four 4 MiB buffers fill the pool, a fifth is freed. */
static void check_small_bound(void)
{
    VT_CHECK(veil_secbuf_max_bytes() == 16 * MIB, "VEIL_POOL_MAX_MB=16: bound %zu bytes",
             veil_secbuf_max_bytes());
    enum { N = 5 };
    uint8_t *b[N];
    for (int i = 0; i < N; i++) {
        b[i] = veil_secbuf_get(4 * MIB);
        VT_CHECK(b[i] != NULL, "get 4 MiB");
        if (b[i])
            memset(b[i], 0xa5, 4 * MIB); /* a secret's stand-in */
    }
    uint8_t *given[N];
    for (int i = 0; i < N; i++)
        veil_secbuf_put(given[i] = b[i], 4 * MIB);
    VT_CHECK(veil_secbuf_pooled_bytes() == 16 * MIB, "pool holds %zu bytes, expected 16 MiB",
             veil_secbuf_pooled_bytes());
    for (int i = 0; i < N - 1; i++) {
        uint8_t *again = veil_secbuf_get(4 * MIB);
        int from_pool = 0, zero = again != NULL;
        for (int j = 0; j < N; j++)
            from_pool |= again == given[j];
        for (size_t k = 0; again && k < 4 * MIB; k += 4093)
            zero &= again[k] == 0;
        VT_CHECK(from_pool && zero, "buffer %d: kept by the pool (%d) and zeroed (%d)", i,
                 from_pool, zero);
        b[i] = again;
    }
    VT_CHECK(veil_secbuf_pooled_bytes() == 0, "pool emptied, %zu bytes left",
             veil_secbuf_pooled_bytes());
    for (int i = 0; i < N - 1; i++)
        veil_secbuf_put(b[i], 4 * MIB);
    veil_secbuf_drain();
}

/* VEIL_POOL_MAX_MB=16: veil_secbuf_reserve within the bound, faulted in, then taken by gets. */
static void check_reserve(void)
{
    const size_t want[] = {4 * MIB, 4 * MIB, 100 << 10, 300 * MIB, 4 * MIB, 4 * MIB};
    const size_t kept = 12 * MIB + (100 << 10);
    uint64_t n0, b0, n1, b1;
    veil_secbuf_fresh(&n0, &b0);
    const size_t got = veil_secbuf_reserve(want, sizeof want / sizeof *want);
    VT_CHECK(got == kept && veil_secbuf_pooled_bytes() == kept,
             "reserve: %zu bytes reserved, %zu pooled; expected %zu", got,
             veil_secbuf_pooled_bytes(), kept);
    uint8_t *b[4] = {veil_secbuf_get(4 * MIB), veil_secbuf_get(4 * MIB), veil_secbuf_get(4 * MIB),
                     veil_secbuf_get(100 << 10)};
    veil_secbuf_fresh(&n1, &b1);
    VT_CHECK(n1 == n0 && b1 == b0, "gets of reserved sizes allocated %llu buffers, %llu bytes",
             (unsigned long long)(n1 - n0), (unsigned long long)(b1 - b0));
    VT_CHECK(veil_secbuf_pooled_bytes() == 0, "pool holds %zu bytes after taking all",
             veil_secbuf_pooled_bytes());
    /* before anything reads them: a read maps the zero page, which counts as resident */
    size_t whole = 0, res = b[0] ? veil_test_resident_pages(b[0], 4 * MIB, &whole) : 0;
    VT_CHECK(b[0] && whole > 0 && res == whole,
             "a reserved 4 MiB buffer has %zu of its %zu pages resident", res, whole);
    const size_t sizes[4] = {4 * MIB, 4 * MIB, 4 * MIB, 100 << 10};
    for (int i = 0; i < 4; i++) {
        int zero = b[i] != NULL;
        for (size_t k = 0; b[i] && k < sizes[i]; k += 4093)
            zero &= b[i][k] == 0;
        VT_CHECK(zero, "reserved buffer %d: not all zeros", i);
    }
    uint8_t *fresh = veil_secbuf_get(8 * MIB); /* a size never reserved: mapped, not touched */
    veil_secbuf_fresh(&n1, &b1);
    res = fresh ? veil_test_resident_pages(fresh, 8 * MIB, &whole) : 0;
#ifdef VEIL_SANITIZERS
    res = 0; /* a sanitizer build allocates with malloc and zeroes by memset: all resident */
#endif
    VT_CHECK(fresh && n1 == n0 + 1 && res == 0,
             "a fresh 8 MiB buffer: %llu fresh allocations, %zu of %zu pages resident",
             (unsigned long long)(n1 - n0), res, whole);
    for (int i = 0; i < 4; i++)
        veil_secbuf_put(b[i], sizes[i]);
    veil_secbuf_put(fresh, 8 * MIB);
    veil_secbuf_drain();
}

/* Runs one case in a child with VEIL_POOL_MAX_MB set to value (NULL: unset); when warn is not
 * NULL, the child's stderr must contain it. */
static void in_child(const char *value, void (*check)(void), const char *what, const char *warn)
{
    int fds[2];
    if (pipe(fds) != 0) {
        VT_CHECK(0, "pipe");
        return;
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        veil_test_failures = 0; /* the child's own count */
        close(fds[0]);
        dup2(fds[1], 2);
        if (value)
            setenv("VEIL_POOL_MAX_MB", value, 1);
        else
            unsetenv("VEIL_POOL_MAX_MB");
        check();
        _exit(veil_test_failures ? 1 : 0);
    }
    close(fds[1]);
    char err[4096];
    size_t len = 0;
    ssize_t got;
    while (len < sizeof err - 1 && (got = read(fds[0], err + len, sizeof err - 1 - len)) > 0)
        len += (size_t)got;
    err[len] = '\0';
    close(fds[0]);
    int st = 0;
    VT_CHECK(pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0,
             "%s: the child failed (status %#x): %s", what, st, err);
    if (warn)
        VT_CHECK(strstr(err, warn) != NULL, "%s: no warning naming '%s' (stderr: %s)", what, warn,
                 err);
}

static void check_default(void)
{
    VT_CHECK(default_bound(veil_secbuf_max_bytes()),
             "%s: bound %zu, not in 1 GiB .. a quarter of "
             "the machine's memory",
             getenv("VEIL_POOL_MAX_MB") ? getenv("VEIL_POOL_MAX_MB") : "unset",
             veil_secbuf_max_bytes());
}

int main(void)
{
    in_child(NULL, check_default, "unset", NULL);
    setenv("VEIL_LOG", "info", 1); /* the note that the bound freed a buffer, once */
    in_child("16", check_small_bound, "16 MiB", "the buffer pool holds its bound, 16 MiB");
    unsetenv("VEIL_LOG");
    in_child("16", check_reserve, "reserve", NULL);
    static const char *const bad[] = {"abc", "15", "1048577", "-4", "16M"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char warn[64];
        snprintf(warn, sizeof warn, "VEIL_POOL_MAX_MB=%s: not a number of MiB", bad[i]);
        in_child(bad[i], check_default, bad[i], warn);
    }
    in_child("", check_default, "empty", NULL);
    return veil_test_failures ? 1 : 0;
}

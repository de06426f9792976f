/* Tests that freed receive buffers stay with the process (net/heap.c). A thread other than main
 * (as ZeroMQ's I/O thread is) allocates 16 chunks the size of a received data chunk, writes them
 * and frees them, 100 times; the page faults of cycles 10..99 count how often the kernel had to
 * hand out fresh pages (a cycle whose memory all came back fresh costs 16 x 129 faults).
 * (1) In forked children: after veil_net_keep_heap (which must say it set the thresholds) under
 *     2 % of the pages fault; with MALLOC_TRIM_THRESHOLD_ or a GLIBC_TUNABLES naming glibc.malloc
 *     in the environment Veil leaves malloc alone (veil_net_keep_heap returns 0, and the faults
 *     are those of glibc's defaults, printed: about every page on glibc 2.36), while a
 *     GLIBC_TUNABLES that tunes something else does not count as tuning malloc.
 * (2) 2 real processes open a CURVE session (veil_net_open) and then run the cycles: under 2 %
 *     again, so opening a session sets the thresholds.
 * A sanitizer build has ASan's allocator: veil_net_keep_heap must return 0 there and the fault
 * bounds are not checked. */
#include "config.h"
#include "net_test_util.h"
#include "test_util.h"

#include <pthread.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#define CHUNK (((size_t)512 << 10) + 160) /* a 512 KiB payload, its header, seal, ZeroMQ's own */
#define NCHUNK 16
#define CYCLES 100
#define WARM 10
#define FRESH ((long)(CYCLES - WARM) * NCHUNK * (long)((CHUNK + 4095) / 4096))

#ifdef VEIL_SANITIZERS
#define TUNABLE 0
#else
#define TUNABLE 1
#endif

static void *cycles(void *out)
{
    struct rusage ru;
    long start = 0;
    for (int c = 0; c < CYCLES; c++) {
        if (c == WARM && getrusage(RUSAGE_THREAD, &ru) == 0)
            start = ru.ru_minflt;
        unsigned char *b[NCHUNK];
        for (int i = 0; i < NCHUNK; i++) {
            b[i] = malloc(CHUNK);
            if (!b[i]) {
                *(long *)out = -1;
                return NULL;
            }
            memset(b[i], c, CHUNK);
        }
        for (int i = 0; i < NCHUNK; i++)
            free(b[i]);
    }
    *(long *)out = getrusage(RUSAGE_THREAD, &ru) == 0 ? ru.ru_minflt - start : -1;
    return NULL;
}

/* The page faults of cycles WARM.. on a fresh thread; -1 on failure. */
static long faults(void)
{
    long n = -1;
    pthread_t t;
    if (pthread_create(&t, NULL, cycles, &n) != 0 || pthread_join(t, NULL) != 0)
        return -1;
    return n;
}

/* In a child: mode 0 glibc's defaults, 1 veil_net_keep_heap, 2 MALLOC_TRIM_THRESHOLD_ set,
 * 3 GLIBC_TUNABLES naming glibc.malloc (both then veil_net_keep_heap). Writes the faults (or -2
 * when veil_net_keep_heap's answer was wrong) to fd. */
static void child(int mode, int fd)
{
    long n = 0;
    if (mode == 2)
        setenv("MALLOC_TRIM_THRESHOLD_", "1048576", 1);
    if (mode == 3)
        setenv("GLIBC_TUNABLES", "glibc.malloc.trim_threshold=1048576", 1);
    if (mode >= 1) {
        const int want = mode == 1 ? TUNABLE : 0;
        if (veil_net_keep_heap((size_t)512 << 10) != want)
            n = -2;
    }
    if (n == 0)
        n = faults();
    if (write(fd, &n, sizeof n) != (ssize_t)sizeof n)
        _exit(1);
    _exit(0);
}

static long in_child(int mode)
{
    int fds[2];
    long n = -3;
    if (pipe(fds) != 0)
        return -3;
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        child(mode, fds[1]);
    }
    close(fds[1]);
    if (pid < 0 || read(fds[0], &n, sizeof n) != (ssize_t)sizeof n)
        n = -3;
    close(fds[0]);
    if (pid > 0)
        waitpid(pid, NULL, 0);
    return n;
}

static int party(const struct veil_harness_party *me, void *arg)
{
    struct veil_net_config cfg;
    veil_net_t *net = NULL;
    if (net_test_config(me, arg, 0.2, 10, 0x42, &cfg) != VEIL_OK)
        return 2;
    int rc = net_test_start(&cfg, NULL, &net);
    if (rc)
        return rc;
    const long n = faults();
    printf("party %d: %ld page faults after the session opened (%ld if all fresh)\n", me->id, n,
           FRESH);
    rc = n < 0 ? 5 : (TUNABLE && n > FRESH / 50 ? 6 : 0);
    if (veil_net_close(&net) != VEIL_OK && rc == 0)
        rc = 7;
    starpu_shutdown();
    return rc;
}

int main(void)
{
    if (veil_net_heap_user_tuned()) { /* this process's malloc is then the environment's */
        printf("SKIP: the environment tunes malloc (GLIBC_TUNABLES or MALLOC_*_)\n");
        return 77;
    }
    setenv("GLIBC_TUNABLES", "glibc.rtld.nns=2", 1); /* another namespace's tunable */
    VT_CHECK(!veil_net_heap_user_tuned(), "GLIBC_TUNABLES without glibc.malloc counts as tuned");
    unsetenv("GLIBC_TUNABLES");

    const long plain = in_child(0), kept = in_child(1), env = in_child(2), tun = in_child(3);
    printf("page faults over %d cycles (%ld if all fresh): glibc's defaults %ld, "
           "veil_net_keep_heap %ld, MALLOC_TRIM_THRESHOLD_ set %ld, GLIBC_TUNABLES set %ld\n",
           CYCLES - WARM, FRESH, plain, kept, env, tun);
    VT_CHECK(plain >= 0, "glibc's defaults: %ld", plain);
    VT_CHECK(kept >= 0, "veil_net_keep_heap: %ld (-2: it returned %d's opposite)", kept, TUNABLE);
    VT_CHECK(env >= 0 && tun >= 0, "an environment that tunes malloc: %ld, %ld (-2: Veil tuned)",
             env, tun);
    if (TUNABLE) {
        VT_CHECK(kept <= FRESH / 50, "after veil_net_keep_heap %ld faults (at most %ld)", kept,
                 FRESH / 50);
        VT_CHECK(env >= plain / 2 && tun >= plain / 2,
                 "Veil left malloc alone: %ld and %ld faults against %ld with glibc's defaults",
                 env, tun, plain);
    }
    VT_CHECK(net_test_run(2, party, "a session's open sets the thresholds") == 0, "two processes");
    if (veil_test_failures)
        fprintf(stderr, "test_net_heap: %d failures\n", veil_test_failures);
    return veil_test_failures ? 1 : 0;
}

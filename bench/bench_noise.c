/*
 * bench_noise.c — what the machine itself does to a run's time, measured without Veil, so that the
 * spread and the round latency of Veil's benchmarks can be read against the machine's own floor.
 *
 *   bench/bench_noise [-r R] [-m MS] [-w KIB] [-n PINGS] [work] [wake]
 *
 * work: the same fixed piece of work timed R times (default 200) on one core at a time and on
 *       every core at once (one thread per core, pinned): a compute loop (a chain of dependent
 *       multiply-adds, no memory traffic) and a memory loop (read-modify-write passes over a
 *       working set of KIB KiB, default 2048), each sized to about MS ms (default 10, about a
 *       LeNet-5 batch-1 run) from a calibration pass. Prints the median, 10th and 90th
 *       percentiles, the worst and the coefficient of variation (standard deviation / mean): the
 *       smallest spread any program doing that work can show on this machine now.
 * wake: a 16-byte TCP ping-pong over loopback between two threads pinned to two cores (or to one
 *       core when the machine has one), PINGS round trips (default 2000), both threads blocking in
 *       recv or both spinning on a non-blocking recv, and 0, 200 or 1000 µs between pings (the
 *       pinging thread spins through the gap, so what grows with the gap is the answering side's
 *       wake-up: a core that went idle, under a hypervisor a halted vCPU). Prints the round
 *       trip's median, 10th and 90th percentiles, worst and CV in µs: blocking minus spinning is
 *       what the wake-ups of a round trip cost.
 * Both by default. Also prints the CPU model and, where readable, the guest's cpuidle driver and
 * haltpoll setting. Figures: bench/README-latency.md.
 */
#include "config.h"
#include "base/base_internal.h"

#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define PING_BYTES 16

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int pin_to(int cpu)
{
    cpu_set_t s;
    CPU_ZERO(&s);
    CPU_SET(cpu, &s);
    return pthread_setaffinity_np(pthread_self(), sizeof s, &s);
}

/* The CPUs this process may run on, in order; returns how many (at most max). */
static int allowed_cpus(int *cpus, int max)
{
    cpu_set_t s;
    int n = 0;
    if (sched_getaffinity(0, sizeof s, &s) != 0)
        return 0;
    for (int c = 0; c < CPU_SETSIZE && n < max; c++)
        if (CPU_ISSET(c, &s))
            cpus[n++] = c;
    return n;
}

/* Prints the median, p10, p90, worst and CV of n samples (sorted in place), scaled by scale. */
static void print_stats(const char *what, double *t, int n, double scale, const char *unit)
{
    double mean = 0, var = 0;
    for (int i = 0; i < n; i++)
        mean += t[i];
    mean /= n;
    for (int i = 0; i < n; i++)
        var += (t[i] - mean) * (t[i] - mean);
    qsort(t, (size_t)n, sizeof *t, cmp_double);
    printf("  %-34s median %8.2f  p10 %8.2f  p90 %8.2f  worst %8.2f %s  cv %.3f\n", what,
           scale * t[n / 2], scale * t[n / 10], scale * t[n * 9 / 10], scale * t[n - 1], unit,
           sqrt(var / n) / mean);
}

/* ---- work --------------------------------------------------------------------------------- */

enum { WORK_COMPUTE, WORK_MEMORY };

struct work {
    int kind;
    int cpu;
    long reps; /* loop iterations (compute) or passes (memory) per sample */
    uint64_t *buf;
    size_t words; /* a power of two */
    int samples;
    double *t;
    uint64_t sink;
};

static void work_once(struct work *w)
{
    if (w->kind == WORK_COMPUTE) {
        uint64_t x = w->sink | 1;
        for (long i = 0; i < w->reps; i++)
            x = x * 6364136223846793005ULL + 1442695040888963407ULL;
        w->sink = x;
        return;
    }
    const size_t mask = w->words - 1;
    for (long k = 0; k < w->reps; k++)
        for (size_t j = 0; j < w->words; j++)
            w->buf[j] += w->buf[(j * 7 + 3) & mask]; /* a dependent, strided read per word */
    w->sink += w->buf[w->sink & mask];
}

static void *work_thread(void *arg)
{
    struct work *w = arg;
    if (pin_to(w->cpu) != 0)
        fprintf(stderr, "bench_noise: cannot pin to CPU %d: the figures are unpinned\n", w->cpu);
    work_once(w); /* warm: first touch, caches */
    for (int i = 0; i < w->samples; i++) {
        const double t0 = veil_now();
        work_once(w);
        w->t[i] = veil_now() - t0;
    }
    return NULL;
}

/* Iterations or passes for about ms milliseconds on cpu, from a timed pass. */
static long calibrate(struct work *w, double ms)
{
    const long reps0 = w->kind == WORK_COMPUTE ? 1000000 : 1;
    w->reps = reps0;
    pin_to(w->cpu);
    work_once(w);
    double t = 0;
    for (int i = 0;; i++) { /* at least a millisecond timed, or 8^3 times the first size */
        const double t0 = veil_now();
        work_once(w);
        t = veil_now() - t0;
        if (t >= 1e-3 || i == 3)
            break;
        w->reps *= 8;
    }
    const double reps = (double)w->reps * (ms * 1e-3) / (t > 0 ? t : 1e-6);
    return reps < 1 ? 1 : (long)reps;
}

static int run_work(const int *cpus, int ncpu, int samples, double ms, size_t kib)
{
    const size_t words = (size_t)1 << (63 - __builtin_clzll((unsigned long long)kib * 128));
    printf("work: the same piece of work timed %d times, about %.3g ms each\n", samples, ms);
    struct work w[2][64];
    const int n = ncpu < 64 ? ncpu : 64;
    for (int kind = 0; kind < 2; kind++)
        for (int c = 0; c < n; c++) {
            struct work *x = &w[kind][c];
            memset(x, 0, sizeof *x);
            x->kind = kind;
            x->cpu = cpus[c];
            x->samples = samples;
            x->words = words;
            x->t = calloc((size_t)samples, sizeof *x->t);
            if (kind == WORK_MEMORY) {
                x->buf = veil_aligned_alloc(words * sizeof *x->buf);
                if (x->buf)
                    for (size_t j = 0; j < words; j++)
                        x->buf[j] = j;
            }
            if (!x->t || (kind == WORK_MEMORY && !x->buf)) {
                fprintf(stderr, "bench_noise: out of memory\n");
                return 1;
            }
        }
    for (int kind = 0; kind < 2; kind++) {
        const long reps = calibrate(&w[kind][0], ms);
        char what[96];
        if (kind == WORK_COMPUTE)
            printf(" compute loop (%ld dependent multiply-adds)\n", reps);
        else
            printf(" memory loop (%ld passes over %zu KiB)\n", reps, words * 8 / 1024);
        for (int c = 0; c < n; c++)
            w[kind][c].reps = reps;
        for (int c = 0; c < n; c++) { /* one core at a time, the others idle */
            work_thread(&w[kind][c]);
            snprintf(what, sizeof what, "CPU %d alone", cpus[c]);
            print_stats(what, w[kind][c].t, samples, 1e3, "ms");
        }
        if (n > 1) { /* every core at once */
            pthread_t th[64];
            int started = 0;
            for (int c = 0; c < n; c++)
                if (pthread_create(&th[c], NULL, work_thread, &w[kind][c]) == 0)
                    started = c + 1;
                else
                    break;
            for (int c = 0; c < started; c++)
                pthread_join(th[c], NULL);
            for (int c = 0; c < started; c++) {
                snprintf(what, sizeof what, "CPU %d, all %d at once", cpus[c], n);
                print_stats(what, w[kind][c].t, samples, 1e3, "ms");
            }
        }
    }
    for (int kind = 0; kind < 2; kind++)
        for (int c = 0; c < n; c++) {
            free(w[kind][c].t);
            veil_aligned_free(w[kind][c].buf);
        }
    return 0;
}

/* ---- wake --------------------------------------------------------------------------------- */

struct pong {
    int fd;
    int cpu;
    int spin;
    int count;
    int failed;
};

/* Reads exactly n bytes; spin: never sleeps in the kernel. 0, or -1 on an error or EOF. */
static int read_all(int fd, char *b, size_t n, int spin)
{
    size_t got = 0;
    while (got < n) {
        const ssize_t r = recv(fd, b + got, n - got, spin ? MSG_DONTWAIT : 0);
        if (r > 0)
            got += (size_t)r;
        else if (r == 0) {
            errno = ECONNRESET; /* the other side gave up */
            return -1;
        } else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
            return -1;
        }
    }
    return 0;
}

static int write_all(int fd, const char *b, size_t n)
{
    size_t put = 0;
    while (put < n) {
        const ssize_t r = send(fd, b + put, n - put, MSG_NOSIGNAL);
        if (r > 0)
            put += (size_t)r;
        else if (r < 0 && errno != EINTR && errno != EAGAIN)
            return -1;
    }
    return 0;
}

static void *pong_thread(void *arg)
{
    struct pong *p = arg;
    char b[PING_BYTES];
    pin_to(p->cpu);
    for (int i = 0; i < p->count; i++)
        if (read_all(p->fd, b, sizeof b, p->spin) != 0 || write_all(p->fd, b, sizeof b) != 0) {
            p->failed = 1;
            shutdown(p->fd, SHUT_RDWR); /* ends the pinging thread's wait for an answer */
            break;
        }
    return NULL;
}

/* A connected pair of loopback TCP sockets with Nagle off; 0 or -1. */
static int tcp_pair(int fd[2])
{
    int one = 1, rc = -1;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    const int l = socket(AF_INET, SOCK_STREAM, 0);
    fd[0] = socket(AF_INET, SOCK_STREAM, 0);
    fd[1] = -1;
    if (l >= 0 && fd[0] >= 0 && bind(l, (struct sockaddr *)&a, sizeof a) == 0 &&
        listen(l, 1) == 0 && getsockname(l, (struct sockaddr *)&a, &len) == 0 &&
        connect(fd[0], (struct sockaddr *)&a, sizeof a) == 0 &&
        (fd[1] = accept(l, NULL, NULL)) >= 0)
        rc = 0;
    if (l >= 0)
        close(l);
    for (int i = 0; i < 2; i++)
        if (fd[i] >= 0)
            setsockopt(fd[i], IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (rc != 0) {
        fprintf(stderr, "bench_noise: loopback TCP: %s\n", strerror(errno));
        for (int i = 0; i < 2; i++)
            if (fd[i] >= 0)
                close(fd[i]);
    }
    return rc;
}

/* One configuration: round trips of PING_BYTES with the gap spun through before each. */
static int ping_pong(int cpu_ping, int cpu_pong, int spin, int gap_us, int count)
{
    int fd[2];
    if (tcp_pair(fd) != 0)
        return 1;
    struct pong p = {.fd = fd[1], .cpu = cpu_pong, .spin = spin, .count = count};
    double *t = calloc((size_t)count, sizeof *t);
    pthread_t th;
    if (!t || pthread_create(&th, NULL, pong_thread, &p) != 0) {
        fprintf(stderr, "bench_noise: out of memory or threads\n");
        free(t);
        close(fd[0]);
        close(fd[1]);
        return 1;
    }
    pin_to(cpu_ping);
    char b[PING_BYTES] = {0};
    int rc = 0;
    for (int i = 0; i < count; i++) {
        const double until = veil_now() + gap_us * 1e-6;
        while (veil_now() < until)
            ;
        const double t0 = veil_now();
        if (write_all(fd[0], b, sizeof b) != 0 || read_all(fd[0], b, sizeof b, spin) != 0) {
            fprintf(stderr, "bench_noise: ping-pong: %s\n", strerror(errno));
            rc = 1;
            shutdown(fd[0], SHUT_RDWR); /* ends the other thread's wait */
            break;
        }
        t[i] = veil_now() - t0;
    }
    pthread_join(th, NULL);
    if (rc == 0 && !p.failed) {
        char what[96];
        snprintf(what, sizeof what, "%s, gap %4d us", spin ? "spinning" : "blocking", gap_us);
        print_stats(what, t, count, 1e6, "us");
    }
    free(t);
    close(fd[0]);
    close(fd[1]);
    return rc || p.failed;
}

static int run_wake(const int *cpus, int ncpu, int count)
{
    const int a = cpus[0], b = ncpu > 1 ? cpus[1] : cpus[0];
    printf("wake: %d-byte TCP round trips over loopback, pinging thread on CPU %d, answering "
           "thread on CPU %d (%d each)\n",
           PING_BYTES, a, b, count);
    static const int gaps[] = {0, 200, 1000};
    int rc = 0;
    for (int spin = 0; spin < 2; spin++)
        for (size_t g = 0; g < sizeof gaps / sizeof gaps[0]; g++)
            rc |= ping_pong(a, b, spin, gaps[g], count);
    return rc;
}

/* ---- the machine -------------------------------------------------------------------------- */

/* Prints the first line of path that starts with prefix (or the whole first line when prefix is
 * NULL), after label; nothing when the file cannot be read. */
static void print_line_of(const char *label, const char *path, const char *prefix)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    char line[256];
    while (fgets(line, sizeof line, f))
        if (!prefix || strncmp(line, prefix, strlen(prefix)) == 0) {
            line[strcspn(line, "\n")] = 0;
            const char *v = prefix ? strchr(line, ':') : NULL;
            printf("%s: %s\n", label, v ? v + 2 : line);
            break;
        }
    fclose(f);
}

int main(int argc, char **argv)
{
    int samples = 200, pings = 2000, c;
    double ms = 10;
    long kib = 2048;
    while ((c = getopt(argc, argv, "r:m:w:n:")) != -1) {
        if (c == 'r')
            samples = atoi(optarg);
        else if (c == 'm')
            ms = atof(optarg);
        else if (c == 'w')
            kib = atol(optarg);
        else if (c == 'n')
            pings = atoi(optarg);
        else {
            fprintf(stderr, "usage: %s [-r R] [-m MS] [-w KIB] [-n PINGS] [work] [wake]\n",
                    argv[0]);
            return 2;
        }
    }
    if (samples < 10 || samples > 100000 || !(ms >= 0.01 && ms <= 10000) || kib < 1 ||
        kib > (1L << 22) || pings < 10 || pings > 10000000) {
        fprintf(stderr, "bench_noise: -r 10..100000, -m 0.01..10000, -w 1..4194304, -n "
                        "10..10000000\n");
        return 2;
    }
    int do_work = optind == argc, do_wake = optind == argc;
    for (int i = optind; i < argc; i++) {
        if (!strcmp(argv[i], "work"))
            do_work = 1;
        else if (!strcmp(argv[i], "wake"))
            do_wake = 1;
        else {
            fprintf(stderr, "bench_noise: unknown section '%s' (work, wake)\n", argv[i]);
            return 2;
        }
    }
    int cpus[64];
    const int ncpu = allowed_cpus(cpus, 64);
    if (ncpu < 1) {
        fprintf(stderr, "bench_noise: cannot read this process's CPUs\n");
        return 1;
    }
    print_line_of("cpu", "/proc/cpuinfo", "model name");
    print_line_of("cpuidle driver", "/sys/devices/system/cpu/cpuidle/current_driver", NULL);
    print_line_of("guest_halt_poll_ns", "/sys/module/haltpoll/parameters/guest_halt_poll_ns", NULL);
    print_line_of("load average", "/proc/loadavg", NULL);
    int rc = 0;
    if (do_work)
        rc |= run_work(cpus, ncpu, samples, ms, (size_t)kib);
    if (do_wake)
        rc |= run_wake(cpus, ncpu, pings);
    return rc;
}

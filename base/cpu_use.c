/*
 * cpu_use.c — snapshots of this process's threads' scheduler statistics and the CPU use between
 * two of them, by role (base/cpu_use.h). A thread's CPU clock gives the nanoseconds it ran,
 * /proc/self/task/TID/schedstat the nanoseconds it was runnable but waited for a CPU (as the
 * kernel accounted them at its last switch), both since it began; its comm file holds the name
 * the role is read from. Only a traced run takes snapshots (two per run, three small reads per
 * thread), so nothing here is on an untraced run's path.
 */
#include "config.h"

#include "base/base_internal.h"
#include "base/cpu_use.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

const char *veil_cpu_role_name(enum veil_cpu_role r)
{
    static const char *const names[VEIL_CPU_ROLE_COUNT] = {"workers", "submit", "net",
                                                           "zmq",     "wiper",  "other"};
    return r >= 0 && r < VEIL_CPU_ROLE_COUNT ? names[r] : "?";
}

/* Reads at most cap - 1 bytes of the file at dir/name into buf (NUL-terminated); -1 on failure. */
static int read_small(int dir, const char *name, char *buf, size_t cap)
{
    int fd = openat(dir, name, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, buf, cap - 1);
    close(fd);
    if (n < 0)
        return -1;
    buf[n] = 0;
    return 0;
}

static int starts(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* The role of a thread by its name (the submitting thread is told by its id, not here). */
static int role_of(const char *comm)
{
    if (starts(comm, "CPU ") || starts(comm, "CUDA ") || starts(comm, "OpenCL "))
        return VEIL_CPU_WORKERS;
    if (starts(comm, "veil-net"))
        return VEIL_CPU_NET;
    if (starts(comm, "veil-wipe"))
        return VEIL_CPU_WIPER;
    if (starts(comm, "ZMQbg/"))
        return VEIL_CPU_ZMQ;
    return VEIL_CPU_OTHER;
}

/* Parses "RUN WAIT SLICES" (nanoseconds, nanoseconds, a count) into t; 0 when the line is not
 * that. */
static int parse_schedstat(const char *s, struct veil_cpu_thread *t)
{
    unsigned long long v[3];
    for (int i = 0; i < 3; i++) {
        char *end;
        errno = 0;
        v[i] = strtoull(s, &end, 10);
        if (end == s || errno)
            return 0;
        s = end;
    }
    t->run_ns = v[0];
    t->wait_ns = v[1];
    t->slices = v[2];
    return 1;
}

static double monotonic_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int veil_cpu_snapshot(struct veil_cpu_snap *s)
{
    s->n = 0;
    s->t_begin = monotonic_s();
    DIR *d = opendir("/proc/self/task");
    if (!d)
        return veil_error(VEIL_ERR_IO, "cpu use: cannot list /proc/self/task: %s", strerror(errno));
    const int self = (int)gettid();
    const struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        char *end;
        long tid = strtol(e->d_name, &end, 10);
        if (end == e->d_name || *end || tid <= 0)
            continue; /* "." and ".." */
        int dir = openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dir < 0)
            continue; /* the thread ended meanwhile */
        char stat[128], comm[64] = "";
        struct veil_cpu_thread t = {.tid = (int)tid};
        int ok = read_small(dir, "schedstat", stat, sizeof stat) == 0 && parse_schedstat(stat, &t);
        /* schedstat's run time of a thread running on another CPU lags by up to a tick; its
         * CPU clock includes the pending part (Linux's thread clock id, as pthread_getcpuclockid
         * makes it from a thread id: CPUCLOCK_SCHED | CPUCLOCK_PERTHREAD) */
        struct timespec ts;
        const clockid_t clk = (clockid_t)((~(unsigned int)tid << 3) | 6u); /* no signed shift */
        if (ok && clock_gettime(clk, &ts) == 0)
            t.run_ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
        if (ok && read_small(dir, "comm", comm, sizeof comm) == 0)
            comm[strcspn(comm, "\n")] = 0;
        close(dir);
        if (!ok)
            continue;
        t.role = t.tid == self ? VEIL_CPU_SUBMIT : role_of(comm);
        if (s->n == VEIL_CPU_SNAP_THREADS) { /* a partial count would read as less CPU */
            closedir(d);
            return veil_error(VEIL_ERR_UNSUPPORTED,
                              "cpu use: the process has more than %d "
                              "threads",
                              VEIL_CPU_SNAP_THREADS);
        }
        s->t[s->n++] = t;
    }
    closedir(d);
    s->t_end = monotonic_s();
    return s->n ? VEIL_OK
                : veil_error(VEIL_ERR_IO, "cpu use: no thread of /proc/self/task has scheduler "
                                          "statistics (a kernel without schedstat)");
}

static int cpus_allowed(void)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) != 0)
        return (int)sysconf(_SC_NPROCESSORS_ONLN);
    return CPU_COUNT(&set);
}

void veil_cpu_use_between(const struct veil_cpu_snap *a, const struct veil_cpu_snap *b,
                          struct veil_cpu_use *out)
{
    memset(out, 0, sizeof *out);
    out->cpus = cpus_allowed();
    if (out->cpus < 1)
        out->cpus = 1;
    out->window_s = b->t_end - a->t_begin;
    for (int i = 0; i < b->n; i++) {
        const struct veil_cpu_thread *tb = &b->t[i];
        struct veil_cpu_thread t0 = {0};
        for (int j = 0; j < a->n; j++)
            if (a->t[j].tid == tb->tid) {
                t0 = a->t[j];
                break;
            }
        /* counters only grow; a reused thread id with smaller counts began in the window */
        if (tb->run_ns < t0.run_ns || tb->wait_ns < t0.wait_ns || tb->slices < t0.slices)
            t0 = (struct veil_cpu_thread){0};
        out->cpu_s[tb->role] += 1e-9 * (double)(tb->run_ns - t0.run_ns);
        out->wait_s[tb->role] += 1e-9 * (double)(tb->wait_ns - t0.wait_ns);
        out->slices[tb->role] += tb->slices - t0.slices;
    }
    for (int r = 0; r < VEIL_CPU_ROLE_COUNT; r++)
        out->total_s += out->cpu_s[r];
    out->busy_pct = out->window_s > 0 ? 100.0 * out->total_s / (out->window_s * out->cpus) : 0;
}

/*
 * harness.c — starts N party processes (and a dealer) on this machine, before any of them
 * initialises StarPU, gives each its identity and a loopback endpoint through the environment,
 * captures their output, bounds their run time and reports how each ended (see harness.h).
 */
#include "config.h"
#include "base/base_internal.h"
#include "base/env.h"
#include "base/harness.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#define OUTPUT_CAP (4u << 20) /* bytes of output kept per process */

struct proc {
    pid_t pid;
    int out_fd; /* read end of the child's stdout+stderr pipe; -1 once closed */
    char *out;
    size_t out_len;
    int exited;
    int status;
    double started;
    double ended;
    int timed_out;
    int killed_after_failure;
    int stopped;
    char starpu_home[4200];
    size_t line_start; /* forwarding: offset of the current unfinished line */
};

/* Binds a listening TCP socket to an ephemeral port on 127.0.0.1 and returns it (port in *port).
 * The socket stays open until the party that owns the port adopts it, so the port cannot be
 * taken by anyone else in between. */
static int listen_socket(int *port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        return -1;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = 0};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (bind(fd, (struct sockaddr *)&a, sizeof a) != 0 || listen(fd, 128) != 0 ||
        getsockname(fd, (struct sockaddr *)&a, &len) != 0) {
        close(fd);
        return -1;
    }
    *port = ntohs(a.sin_port);
    return fd;
}

/* Fills every identity; listening sockets are opened into ids[i].listen_fd (-1 on entry). */
static int fill_identities(const struct veil_harness_opts *o, int nprocs,
                           struct veil_harness_party *ids)
{
    uint8_t session[16];
    int rc = veil_seed_random(session);
    if (rc != VEIL_OK)
        return rc;
    if (o->session) {
        if (strlen(o->session) != 32 || strspn(o->session, "0123456789abcdef") != 32)
            return veil_error(VEIL_ERR_INVAL, "harness: session must be 32 lowercase hex digits");
        for (int b = 0; b < 16; b++)
            session[b] = (uint8_t)strtoul((char[]){o->session[2 * b], o->session[2 * b + 1], 0},
                                          NULL, 16);
    }
    for (int i = 0; i < nprocs; i++) {
        int port = 0;
        ids[i].listen_fd = listen_socket(&port);
        if (ids[i].listen_fd < 0)
            return veil_error(VEIL_ERR_IO, "harness: cannot listen on a loopback port: %s",
                              strerror(errno));
        snprintf(ids[0].endpoints[i], sizeof ids[0].endpoints[i], "tcp://127.0.0.1:%d", port);
    }
    for (int i = 0; i < nprocs; i++) {
        if (i > 0)
            memcpy(ids[i].endpoints, ids[0].endpoints, sizeof ids[0].endpoints);
        ids[i].id = i;
        ids[i].nparties = o->nparties;
        ids[i].has_dealer = o->dealer;
        ids[i].is_dealer = o->dealer && i == o->nparties;
        for (int b = 0; b < 16; b++)
            snprintf(ids[i].session + 2 * b, 3, "%02x", session[b]);
    }
    return VEIL_OK;
}

/* Sets the child's environment. Runs in the child, between fork and fn/exec. */
static void child_environment(const struct veil_harness_opts *o, const struct veil_env_harness *env,
                              const struct veil_harness_party *me, const char *starpu_home)
{
    char buf[VEIL_HARNESS_MAX_PROCS * 64 + 16];
    int nprocs = o->nparties + (o->dealer ? 1 : 0);
    snprintf(buf, sizeof buf, "%d", me->id);
    setenv("VEIL_PARTY_ID", buf, 1);
    snprintf(buf, sizeof buf, "%d", o->nparties);
    setenv("VEIL_NPARTIES", buf, 1);
    setenv("VEIL_DEALER", o->dealer ? "1" : "0", 1);
    setenv("VEIL_SESSION", me->session, 1);
    buf[0] = '\0';
    for (int i = 0; i < nprocs; i++) {
        if (i)
            strcat(buf, ",");
        strcat(buf, me->endpoints[i]);
    }
    setenv("VEIL_ENDPOINTS", buf, 1);
    snprintf(buf, sizeof buf, "%d", me->listen_fd);
    setenv("VEIL_LISTEN_FD", buf, 1);
    if (!o->keep_starpu_env) {
        const char *sched = o->sched ? o->sched : env->starpu_sched;
        setenv("STARPU_SCHED", sched ? sched : "lws", 1);
        char ncpu[16];
        snprintf(ncpu, sizeof ncpu, "%d", o->ncpu > 0 ? o->ncpu : 1);
        setenv("STARPU_NCPU", ncpu, 1);
        setenv("STARPU_WORKERS_NOBIND", "1", 1);
        setenv("STARPU_SILENT", "1", 1);
        setenv("STARPU_HOME", starpu_home, 1);
        /* No worker nice value by default: idle workers sleep while their process waits
         * (net/idle.c), and at nice 19 a busy neighbour at nice 0 starved them (LeNet batch 1
         * beside two busy loops: 1.3-2.5 s per run at nice 19 against 0.27-0.31 s at nice 0,
         * bench/README-latency.md). VEIL_WORKER_NICE still sets one. */
        /* A second memory node only when a test asks for it. */
        if (!env->starpu_nopencl_set)
            setenv("STARPU_NOPENCL", "0", 1);
    }
    for (const char *const *e = o->extra_env; e && *e; e++) {
        const char *eq = strchr(*e, '=');
        if (!eq)
            continue;
        char name[128];
        size_t n = (size_t)(eq - *e) < sizeof name - 1 ? (size_t)(eq - *e) : sizeof name - 1;
        memcpy(name, *e, n);
        name[n] = '\0';
        setenv(name, eq + 1, 1);
    }
    snprintf(buf, sizeof buf, me->is_dealer ? "dealer" : "p%d", me->id);
    veil_log_set_prefix(buf);
}

static int remove_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb, (void)flag, (void)ftw;
    remove(path);
    return 0;
}

static void append_output(struct proc *p, const char *data, size_t n, int idx, int forward,
                          const struct veil_harness_party *id)
{
    if (p->out_len + n > OUTPUT_CAP)
        n = OUTPUT_CAP - p->out_len;
    if (n == 0)
        return;
    memcpy(p->out + p->out_len, data, n);
    p->out_len += n;
    p->out[p->out_len] = '\0';
    if (!forward)
        return;
    /* Forward complete lines with a prefix so that parties' lines do not interleave mid-line. */
    char *nl;
    while ((nl = memchr(p->out + p->line_start, '\n', p->out_len - p->line_start)) != NULL) {
        size_t len = (size_t)(nl - (p->out + p->line_start)) + 1;
        if (id->is_dealer)
            fprintf(stderr, "[dealer] %.*s", (int)len, p->out + p->line_start);
        else
            fprintf(stderr, "[p%d] %.*s", idx, (int)len, p->out + p->line_start);
        p->line_start += len;
    }
}

static void kill_group(struct proc *p)
{
    if (p->pid > 0 && !p->exited)
        kill(-p->pid, SIGKILL);
}

static int exit_code_of(const struct proc *p)
{
    if (!p->exited)
        return -1;
    if (WIFEXITED(p->status))
        return WEXITSTATUS(p->status);
    if (WIFSIGNALED(p->status))
        return 128 + WTERMSIG(p->status);
    return -1;
}

static const char *name_of(const struct veil_harness_party *id, char *buf, size_t n)
{
    if (id->is_dealer)
        snprintf(buf, n, "dealer");
    else
        snprintf(buf, n, "party %d", id->id);
    return buf;
}

/* One run of the harness: its options, identities, processes and what the parent read from its
 * own environment for the children. */
struct run {
    const struct veil_harness_opts *opts;
    veil_harness_fn fn;
    void *arg;
    char *const *argv;
    int nprocs;
    double timeout; /* < 0: no limit */
    int forward;
    pid_t parent;   /* the harness's process: a child whose parent is another has lost it */
    struct veil_env_harness env;
    struct veil_harness_party ids[VEIL_HARNESS_MAX_PROCS];
    struct proc procs[VEIL_HARNESS_MAX_PROCS];
};

/* In the child i, after fork: own process group (so the harness can kill its threads and
 * children), output to the pipe fds, identity in the environment; then fn or exec. Never
 * returns. */
static void child_main(struct run *r, int i, const int fds[2])
{
    setpgid(0, 0);
#ifdef __linux__
    /* Die with the harness's process, however it ends (SIGKILL included): no orphan runs on.
     * The parent may have died before this call: then we are already orphaned. */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
#endif
    if (getppid() != r->parent)
        _exit(127);
    dup2(fds[1], STDOUT_FILENO);
    dup2(fds[1], STDERR_FILENO);
    close(fds[0]);
    close(fds[1]);
    for (int j = 0; j < i; j++)
        if (r->procs[j].out_fd >= 0)
            close(r->procs[j].out_fd);
    for (int j = 0; j < r->nprocs; j++)
        if (j != i && r->ids[j].listen_fd >= 0)
            close(r->ids[j].listen_fd);
    child_environment(r->opts, &r->env, &r->ids[i], r->procs[i].starpu_home);
    if (r->opts->pin)
        veil_harness_pin_self(&r->ids[i], r->opts->ncpu);
    if (r->argv) {
        execvp(r->argv[0], r->argv);
        fprintf(stderr, "veil-harness: cannot execute %s: %s\n", r->argv[0], strerror(errno));
        _exit(127);
    }
    int code = r->fn(&r->ids[i], r->arg);
    fflush(stdout);
    fflush(stderr);
    _exit(code & 0xff);
}

/* Forks process i with its output buffer, private StarPU home and output pipe. */
static int start_one(struct run *r, int i)
{
    struct proc *p = &r->procs[i];
    p->out = malloc(OUTPUT_CAP + 1);
    if (!p->out)
        return veil_error(VEIL_ERR_NOMEM, "harness: out of memory");
    p->out[0] = '\0';
    snprintf(p->starpu_home, sizeof p->starpu_home, "%.4000s/veil-starpu-XXXXXX",
             r->opts->scratch_dir ? r->opts->scratch_dir : r->env.tmpdir);
    if (!r->opts->keep_starpu_env && !mkdtemp(p->starpu_home)) {
        int rc = veil_error(VEIL_ERR_IO, "harness: mkdtemp %s: %s", p->starpu_home,
                            strerror(errno));
        p->starpu_home[0] = '\0';
        return rc;
    }
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0)
        return veil_error(VEIL_ERR_IO, "harness: pipe: %s", strerror(errno));
    p->started = veil_now();
    p->pid = fork();
    if (p->pid < 0) {
        close(fds[0]);
        close(fds[1]);
        return veil_error(VEIL_ERR_IO, "harness: fork: %s", strerror(errno));
    }
    if (p->pid == 0)
        child_main(r, i, fds);
    setpgid(p->pid, p->pid); /* also in the parent, to avoid the race with the child */
    close(fds[1]);
    p->out_fd = fds[0];
    return VEIL_OK;
}

/* Reads what is ready on the children's pipes (waiting at most 50 ms for some). */
static void read_outputs(struct run *r)
{
    struct pollfd pfd[VEIL_HARNESS_MAX_PROCS];
    int map[VEIL_HARNESS_MAX_PROCS], npfd = 0;
    for (int i = 0; i < r->nprocs; i++)
        if (r->procs[i].out_fd >= 0) {
            pfd[npfd].fd = r->procs[i].out_fd;
            pfd[npfd].events = POLLIN;
            map[npfd++] = i;
        }
    poll(pfd, (nfds_t)npfd, 50);
    for (int k = 0; k < npfd; k++) {
        if (!(pfd[k].revents & (POLLIN | POLLHUP | POLLERR)))
            continue;
        struct proc *p = &r->procs[map[k]];
        char buf[65536];
        ssize_t n = read(p->out_fd, buf, sizeof buf);
        if (n > 0) {
            append_output(p, buf, (size_t)n, map[k], r->forward, &r->ids[map[k]]);
        } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
            close(p->out_fd);
            p->out_fd = -1;
        }
    }
}

/* Sends sig to the process group of every process still running and marks it stopped. */
static void forward_stop(struct run *r, int sig)
{
    for (int i = 0; i < r->nprocs; i++) {
        struct proc *p = &r->procs[i];
        if (p->pid > 0 && !p->exited) {
            p->stopped = 1;
            kill(-p->pid, sig);
        }
    }
}

/* Collects output and exits until all have ended, killing the rest at the time bound or once
 * the grace after the first failure is over; then drains the pipes. */
static void collect(struct run *r)
{
    const double start = veil_now();
    double first_failure = -1, stopped_at = -1;
    int remaining = r->nprocs;
    while (remaining > 0) {
        read_outputs(r);
        for (int i = 0; i < r->nprocs; i++) {
            struct proc *p = &r->procs[i];
            if (p->exited)
                continue;
            pid_t w = waitpid(p->pid, &p->status, WNOHANG);
            if (w == p->pid) {
                p->exited = 1;
                p->ended = veil_now();
                remaining--;
                if (exit_code_of(p) != 0 && first_failure < 0)
                    first_failure = p->ended;
            }
        }
        double now = veil_now();
        if (stopped_at < 0 && r->opts->stop_signal && *r->opts->stop_signal) {
            forward_stop(r, (int)*r->opts->stop_signal);
            stopped_at = now;
        }
        int over_time = r->timeout >= 0 && now - start > r->timeout;
        int over_grace = first_failure >= 0 && r->opts->grace_s >= 0 &&
                         now - first_failure > r->opts->grace_s;
        int over_stop = stopped_at >= 0 &&
                        now - stopped_at > (r->opts->grace_s >= 0 ? r->opts->grace_s : 5.0);
        if (remaining > 0 && (over_time || over_grace || over_stop)) {
            for (int i = 0; i < r->nprocs; i++)
                if (!r->procs[i].exited) {
                    /* one stopped by a forwarded signal is already marked */
                    if (!over_stop && over_time)
                        r->procs[i].timed_out = 1;
                    else if (!over_stop)
                        r->procs[i].killed_after_failure = 1;
                    kill_group(&r->procs[i]);
                }
            /* Reap them: SIGKILL cannot be ignored, so this terminates promptly. */
            for (int i = 0; i < r->nprocs; i++) {
                struct proc *p = &r->procs[i];
                if (!p->exited && waitpid(p->pid, &p->status, 0) == p->pid) {
                    p->exited = 1;
                    p->ended = veil_now();
                    remaining--;
                }
            }
        }
    }
    /* Drain what is left in the pipes (the children are gone, reads end at EOF). */
    for (int i = 0; i < r->nprocs; i++) {
        struct proc *p = &r->procs[i];
        char buf[65536];
        ssize_t n;
        while (p->out_fd >= 0 && (n = read(p->out_fd, buf, sizeof buf)) > 0)
            append_output(p, buf, (size_t)n, i, r->forward, &r->ids[i]);
        if (r->forward && p->line_start < p->out_len) /* unterminated last line */
            append_output(p, "\n", 1, i, r->forward, &r->ids[i]);
    }
}

/* The verdict: the first process (in time) that failed names the failure. */
static int verdict(const struct run *r)
{
    if (r->opts->stop_signal && *r->opts->stop_signal) {
        const int sig = (int)*r->opts->stop_signal;
        return veil_error(VEIL_ERR_CHILD, "harness: stopped by signal %d (%s), forwarded to every "
                          "process still running", sig, strsignal(sig));
    }
    int culprit = -1;
    for (int i = 0; i < r->nprocs; i++) {
        const struct proc *p = &r->procs[i];
        int bad = p->timed_out || exit_code_of(p) != 0;
        if (bad && !p->killed_after_failure &&
            (culprit < 0 || p->ended < r->procs[culprit].ended))
            culprit = i;
    }
    if (culprit < 0)
        return VEIL_OK;
    const struct proc *p = &r->procs[culprit];
    char who[32];
    name_of(&r->ids[culprit], who, sizeof who);
    if (p->timed_out) {
        /* Name every process the bound killed: the culprit first, then the others. */
        char others[VEIL_HARNESS_MAX_PROCS * 12] = "";
        size_t off = 0;
        for (int i = 0; i < r->nprocs; i++) {
            char name[32];
            if (i == culprit || !r->procs[i].timed_out || off >= sizeof others)
                continue;
            off += (size_t)snprintf(others + off, sizeof others - off, "%s%s", off ? ", " : "",
                                    name_of(&r->ids[i], name, sizeof name));
        }
        return veil_error(VEIL_ERR_TIMEOUT, "harness: %s%s%s%s still running after %.1f s; killed",
                          who, off ? " (and " : "", others, off ? ")" : "", r->timeout);
    }
    if (WIFSIGNALED(p->status))
        return veil_error(VEIL_ERR_CHILD, "harness: %s killed by signal %d (%s)", who,
                          WTERMSIG(p->status), strsignal(WTERMSIG(p->status)));
    return veil_error(VEIL_ERR_CHILD, "harness: %s exited with status %d", who, exit_code_of(p));
}

/* Closes what is still open, kills what still runs (only on the failure path of the fork
 * loop), frees the outputs not handed over and removes the private StarPU homes. */
static void cleanup(struct run *r)
{
    for (int i = 0; i < r->nprocs; i++)
        if (r->ids[i].listen_fd >= 0)
            close(r->ids[i].listen_fd);
    for (int i = 0; i < r->nprocs; i++) {
        struct proc *p = &r->procs[i];
        if (p->pid > 0 && !p->exited) {
            kill_group(p);
            waitpid(p->pid, NULL, 0);
        }
        if (p->out_fd >= 0)
            close(p->out_fd);
        free(p->out);
        if (p->starpu_home[0] && !r->opts->keep_starpu_env)
            nftw(p->starpu_home, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    }
}

/* Forks every process; in each child either calls fn or execs argv. */
static int run_all(const struct veil_harness_opts *opts, veil_harness_fn fn, void *arg,
                   char *const *argv, struct veil_harness_result *results)
{
    if (!opts || opts->nparties < 1 || opts->nparties + (opts->dealer ? 1 : 0) >
                                           VEIL_HARNESS_MAX_PROCS)
        return veil_error(VEIL_ERR_INVAL, "harness: between 1 and %d processes are supported",
                          VEIL_HARNESS_MAX_PROCS);
    struct run *r = calloc(1, sizeof *r);
    if (!r)
        return veil_error(VEIL_ERR_NOMEM, "harness: out of memory");
    r->opts = opts;
    r->fn = fn;
    r->arg = arg;
    r->argv = argv;
    r->nprocs = opts->nparties + (opts->dealer ? 1 : 0);
    r->timeout = opts->timeout_s > 0 ? opts->timeout_s : opts->timeout_s < 0 ? -1.0 : 120.0;
    r->parent = getpid();
    veil_env_harness(&r->env);
    r->forward = opts->forward_output || r->env.verbose;
    for (int i = 0; i < VEIL_HARNESS_MAX_PROCS; i++) {
        r->procs[i].out_fd = -1;
        r->ids[i].listen_fd = -1;
    }
    int rc = fill_identities(opts, r->nprocs, r->ids);
    fflush(stdout);
    fflush(stderr);
    for (int i = 0; rc == VEIL_OK && i < r->nprocs; i++)
        rc = start_one(r, i);
    if (rc == VEIL_OK) {
        /* Each child holds its own listening socket now; the parent's copies would keep the
         * ports bound after a child gives its socket back. */
        for (int i = 0; i < r->nprocs; i++) {
            close(r->ids[i].listen_fd);
            r->ids[i].listen_fd = -1;
        }
        collect(r);
        rc = verdict(r);
        for (int i = 0; results && i < r->nprocs; i++) {
            results[i].exit_code = exit_code_of(&r->procs[i]);
            results[i].timed_out = r->procs[i].timed_out;
            results[i].killed_after_failure = r->procs[i].killed_after_failure;
            results[i].stopped = r->procs[i].stopped;
            results[i].seconds = r->procs[i].ended - r->procs[i].started;
            results[i].output = r->procs[i].out;
            r->procs[i].out = NULL;
        }
    }
    cleanup(r);
    free(r);
    return rc;
}

int veil_harness_run(const struct veil_harness_opts *opts, veil_harness_fn fn, void *arg,
                     struct veil_harness_result *results)
{
    if (!fn)
        return veil_error(VEIL_ERR_INVAL, "harness: NULL party function");
    return run_all(opts, fn, arg, NULL, results);
}

int veil_harness_exec(const struct veil_harness_opts *opts, char *const *argv,
                      struct veil_harness_result *results)
{
    if (!argv || !argv[0])
        return veil_error(VEIL_ERR_INVAL, "harness: no program to execute");
    return run_all(opts, NULL, NULL, argv, results);
}

void veil_harness_results_free(struct veil_harness_result *results, int n)
{
    for (int i = 0; results && i < n; i++) {
        free(results[i].output);
        results[i].output = NULL;
    }
}

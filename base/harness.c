/*
 * harness.c — starts N party processes (and a dealer) on this machine, before any of them
 * initialises StarPU, gives each its identity and a loopback endpoint through the environment,
 * captures their output, bounds their run time and reports how each ended (see harness.h).
 */
#include "config.h"
#include "base/base_internal.h"
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
    char starpu_home[64];
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
static void child_environment(const struct veil_harness_opts *o, const struct veil_harness_party *me,
                              const char *starpu_home)
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
        const char *sched = o->sched ? o->sched : getenv("STARPU_SCHED");
        setenv("STARPU_SCHED", sched ? sched : "lws", 1);
        char ncpu[16];
        snprintf(ncpu, sizeof ncpu, "%d", o->ncpu > 0 ? o->ncpu : 1);
        setenv("STARPU_NCPU", ncpu, 1);
        setenv("STARPU_WORKERS_NOBIND", "1", 1);
        setenv("STARPU_SILENT", "1", 1);
        setenv("STARPU_HOME", starpu_home, 1);
        /* As many spinning workers as cores or more (several processes on one host): let the
         * network threads preempt an idle worker at once (sched/worker_priority.c). */
        const long cores = sysconf(_SC_NPROCESSORS_ONLN);
        if (!getenv("VEIL_WORKER_NICE") && cores > 0 &&
            (long)nprocs * (o->ncpu > 0 ? o->ncpu : 1) >= cores)
            setenv("VEIL_WORKER_NICE", "19", 1);
        /* A second memory node only when a test asks for it. */
        if (!getenv("STARPU_NOPENCL"))
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

/* Forks every process; in each child either calls fn or execs argv. */
static int run_all(const struct veil_harness_opts *opts, veil_harness_fn fn, void *arg,
                   char *const *argv, struct veil_harness_result *results)
{
    if (!opts || opts->nparties < 1 || opts->nparties + (opts->dealer ? 1 : 0) >
                                           VEIL_HARNESS_MAX_PROCS)
        return veil_error(VEIL_ERR_INVAL, "harness: between 1 and %d processes are supported",
                          VEIL_HARNESS_MAX_PROCS);
    const int nprocs = opts->nparties + (opts->dealer ? 1 : 0);
    const double timeout = opts->timeout_s > 0 ? opts->timeout_s : 120.0;
    const int forward = opts->forward_output ||
                        (getenv("VEIL_TEST_VERBOSE") && strcmp(getenv("VEIL_TEST_VERBOSE"), "1") == 0);
    struct veil_harness_party ids[VEIL_HARNESS_MAX_PROCS];
    struct proc procs[VEIL_HARNESS_MAX_PROCS];
    memset(procs, 0, sizeof procs);
    for (int i = 0; i < VEIL_HARNESS_MAX_PROCS; i++) {
        procs[i].out_fd = -1;
        ids[i].listen_fd = -1;
    }
    int rc = fill_identities(opts, nprocs, ids);
    if (rc != VEIL_OK)
        goto fail;

    fflush(stdout);
    fflush(stderr);
    for (int i = 0; i < nprocs; i++) {
        struct proc *p = &procs[i];
        p->out = malloc(OUTPUT_CAP + 1);
        if (!p->out) {
            rc = veil_error(VEIL_ERR_NOMEM, "harness: out of memory");
            goto fail;
        }
        p->out[0] = '\0';
        const char *tmp = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
        snprintf(p->starpu_home, sizeof p->starpu_home, "%.40s/veil-starpu-XXXXXX", tmp);
        if (!opts->keep_starpu_env && !mkdtemp(p->starpu_home)) {
            rc = veil_error(VEIL_ERR_IO, "harness: mkdtemp %s: %s", p->starpu_home, strerror(errno));
            p->starpu_home[0] = '\0';
            goto fail;
        }
        int fds[2];
        if (pipe2(fds, O_CLOEXEC) != 0) {
            rc = veil_error(VEIL_ERR_IO, "harness: pipe: %s", strerror(errno));
            goto fail;
        }
        p->started = veil_now();
        p->pid = fork();
        if (p->pid < 0) {
            close(fds[0]);
            close(fds[1]);
            rc = veil_error(VEIL_ERR_IO, "harness: fork: %s", strerror(errno));
            goto fail;
        }
        if (p->pid == 0) {
            /* Child: own process group (so the harness can kill its threads and children),
             * output to the pipe, identity in the environment. */
            setpgid(0, 0);
            dup2(fds[1], STDOUT_FILENO);
            dup2(fds[1], STDERR_FILENO);
            close(fds[0]);
            close(fds[1]);
            for (int j = 0; j < i; j++)
                if (procs[j].out_fd >= 0)
                    close(procs[j].out_fd);
            for (int j = 0; j < nprocs; j++)
                if (j != i && ids[j].listen_fd >= 0)
                    close(ids[j].listen_fd);
            child_environment(opts, &ids[i], p->starpu_home);
            if (argv) {
                execvp(argv[0], argv);
                fprintf(stderr, "veil-harness: cannot execute %s: %s\n", argv[0], strerror(errno));
                _exit(127);
            }
            int code = fn(&ids[i], arg);
            fflush(stdout);
            fflush(stderr);
            _exit(code & 0xff);
        }
        setpgid(p->pid, p->pid); /* also in the parent, to avoid the race with the child */
        close(fds[1]);
        p->out_fd = fds[0];
    }

    /* Each child holds its own listening socket now; the parent's copies would keep the ports
     * bound after a child gives its socket back. */
    for (int i = 0; i < nprocs; i++) {
        close(ids[i].listen_fd);
        ids[i].listen_fd = -1;
    }

    /* Collect output and exits until all have ended or the bound is hit. */
    const double start = veil_now();
    double first_failure = -1;
    int remaining = nprocs;
    while (remaining > 0) {
        struct pollfd pfd[VEIL_HARNESS_MAX_PROCS];
        int map[VEIL_HARNESS_MAX_PROCS], npfd = 0;
        for (int i = 0; i < nprocs; i++)
            if (procs[i].out_fd >= 0) {
                pfd[npfd].fd = procs[i].out_fd;
                pfd[npfd].events = POLLIN;
                map[npfd++] = i;
            }
        poll(pfd, (nfds_t)npfd, 50);
        for (int k = 0; k < npfd; k++) {
            if (!(pfd[k].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            struct proc *p = &procs[map[k]];
            char buf[65536];
            ssize_t n = read(p->out_fd, buf, sizeof buf);
            if (n > 0) {
                append_output(p, buf, (size_t)n, map[k], forward, &ids[map[k]]);
            } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
                close(p->out_fd);
                p->out_fd = -1;
            }
        }
        for (int i = 0; i < nprocs; i++) {
            struct proc *p = &procs[i];
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
        int over_time = now - start > timeout;
        int over_grace = first_failure >= 0 && opts->grace_s >= 0 &&
                         now - first_failure > opts->grace_s;
        if (remaining > 0 && (over_time || over_grace)) {
            for (int i = 0; i < nprocs; i++)
                if (!procs[i].exited) {
                    if (over_time)
                        procs[i].timed_out = 1;
                    else
                        procs[i].killed_after_failure = 1;
                    kill_group(&procs[i]);
                }
            /* Reap them: SIGKILL cannot be ignored, so this terminates promptly. */
            for (int i = 0; i < nprocs; i++)
                if (!procs[i].exited && waitpid(procs[i].pid, &procs[i].status, 0) == procs[i].pid) {
                    procs[i].exited = 1;
                    procs[i].ended = veil_now();
                    remaining--;
                }
        }
    }
    /* Drain what is left in the pipes (the children are gone, reads end at EOF). */
    for (int i = 0; i < nprocs; i++) {
        struct proc *p = &procs[i];
        char buf[65536];
        ssize_t n;
        while (p->out_fd >= 0 && (n = read(p->out_fd, buf, sizeof buf)) > 0)
            append_output(p, buf, (size_t)n, i, forward, &ids[i]);
        if (forward && p->line_start < p->out_len) /* unterminated last line */
            append_output(p, "\n", 1, i, forward, &ids[i]);
    }

    /* Verdict: the first process (in time) that failed names the failure. */
    rc = VEIL_OK;
    int culprit = -1;
    for (int i = 0; i < nprocs; i++) {
        const struct proc *p = &procs[i];
        int bad = p->timed_out || exit_code_of(p) != 0;
        if (bad && !p->killed_after_failure &&
            (culprit < 0 || p->ended < procs[culprit].ended))
            culprit = i;
    }
    if (culprit >= 0) {
        const struct proc *p = &procs[culprit];
        char who[32];
        name_of(&ids[culprit], who, sizeof who);
        if (p->timed_out)
            rc = veil_error(VEIL_ERR_TIMEOUT, "harness: %s still running after %.1f s; killed",
                            who, timeout);
        else if (WIFSIGNALED(p->status))
            rc = veil_error(VEIL_ERR_CHILD, "harness: %s killed by signal %d (%s)", who,
                            WTERMSIG(p->status), strsignal(WTERMSIG(p->status)));
        else
            rc = veil_error(VEIL_ERR_CHILD, "harness: %s exited with status %d", who,
                            exit_code_of(p));
    }
    if (results)
        for (int i = 0; i < nprocs; i++) {
            results[i].exit_code = exit_code_of(&procs[i]);
            results[i].timed_out = procs[i].timed_out;
            results[i].killed_after_failure = procs[i].killed_after_failure;
            results[i].seconds = procs[i].ended - procs[i].started;
            results[i].output = procs[i].out;
            procs[i].out = NULL;
        }
fail:
    for (int i = 0; i < nprocs; i++)
        if (ids[i].listen_fd >= 0)
            close(ids[i].listen_fd);
    for (int i = 0; i < nprocs; i++) {
        struct proc *p = &procs[i];
        if (p->pid > 0 && !p->exited) { /* only on the failure path of the fork loop */
            kill_group(p);
            waitpid(p->pid, NULL, 0);
        }
        if (p->out_fd >= 0)
            close(p->out_fd);
        free(p->out);
        if (p->starpu_home[0] && !opts->keep_starpu_env)
            nftw(p->starpu_home, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    }
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

static int env_int(const char *name, int lo, int hi, int *out)
{
    const char *v = getenv(name);
    char *end;
    if (!v)
        return veil_error(VEIL_ERR_INVAL, "%s is not set (start parties with veil-run)", name);
    long x = strtol(v, &end, 10);
    if (*v == '\0' || *end != '\0' || x < lo || x > hi)
        return veil_error(VEIL_ERR_INVAL, "%s=%s: expected an integer in [%d, %d]", name, v, lo,
                          hi);
    *out = (int)x;
    return VEIL_OK;
}

int veil_harness_party_from_env(struct veil_harness_party *me)
{
    memset(me, 0, sizeof *me);
    int rc;
    if ((rc = env_int("VEIL_NPARTIES", 1, VEIL_HARNESS_MAX_PROCS - 1, &me->nparties)) != VEIL_OK ||
        (rc = env_int("VEIL_DEALER", 0, 1, &me->has_dealer)) != VEIL_OK ||
        (rc = env_int("VEIL_PARTY_ID", 0, me->nparties - 1 + me->has_dealer, &me->id)) != VEIL_OK)
        return rc;
    me->is_dealer = me->has_dealer && me->id == me->nparties;
    me->listen_fd = -1;
    const char *lfd = getenv("VEIL_LISTEN_FD");
    if (lfd && *lfd) {
        char *end;
        long v = strtol(lfd, &end, 10);
        if (*end != '\0' || v < -1 || v > 65535)
            return veil_error(VEIL_ERR_INVAL, "VEIL_LISTEN_FD=%s: expected a file descriptor", lfd);
        me->listen_fd = (int)v;
    }
    const char *s = getenv("VEIL_SESSION");
    if (!s || strlen(s) != 32 || strspn(s, "0123456789abcdef") != 32)
        return veil_error(VEIL_ERR_INVAL, "VEIL_SESSION must be 32 lowercase hex digits");
    memcpy(me->session, s, 33);
    const char *e = getenv("VEIL_ENDPOINTS");
    int nprocs = me->nparties + me->has_dealer;
    for (int i = 0; i < nprocs; i++) {
        if (!e || !*e)
            return veil_error(VEIL_ERR_INVAL, "VEIL_ENDPOINTS lists fewer than %d endpoints",
                              nprocs);
        size_t len = strcspn(e, ",");
        if (len == 0 || len >= sizeof me->endpoints[i])
            return veil_error(VEIL_ERR_INVAL, "VEIL_ENDPOINTS: endpoint %d is empty or too long", i);
        memcpy(me->endpoints[i], e, len);
        me->endpoints[i][len] = '\0';
        e += len;
        if (*e == ',')
            e++;
    }
    if (e && *e)
        return veil_error(VEIL_ERR_INVAL, "VEIL_ENDPOINTS lists more than %d endpoints", nprocs);
    return VEIL_OK;
}

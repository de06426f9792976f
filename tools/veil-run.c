/*
 * veil-run — starts every process of a Veil session on this machine: N parties (and a dealer)
 * running PROGRAM through the harness's exec mode, each with its identity, endpoints, session
 * and a pre-bound listening socket in its environment, plus fresh CURVE keys made for this run
 * in a private directory (VEIL_KEY_DIR, which also holds the children's StarPU homes). Forwards
 * the children's output with a [pN] / [dealer] prefix and exits with the first failing process's
 * status (124 when the --timeout bound killed the run, 2 for a usage error, 128+SIG when SIGINT,
 * SIGTERM or SIGHUP stopped it: the signal is forwarded to every child). There is no wall-clock
 * bound unless --timeout gives one. The children die with veil-run however it ends (the
 * harness sets PR_SET_PDEATHSIG), and the private directory is removed on every exit path: by
 * veil-run itself, and, should veil-run be killed with SIGKILL, by a reaper process forked
 * first that waits for veil-run's end of a pipe to close and then removes the directory.
 */
#include "config.h"
#include "base/base_internal.h"
#include "base/harness.h"
#include "net/emulate.h"
#include "net/net_config.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define EXIT_USAGE 2
#define EXIT_TIMEOUT 124

static void usage(FILE *out)
{
    fprintf(out,
            "usage: veil-run -n N [--dealer] [--link LATENCY,BANDWIDTH] [--timeout SECONDS]\n"
            "                [--ncpu K] [--no-pin] [--insecure-plaintext] [--session HEX]\n"
            "                -- PROGRAM [ARGS...]\n"
            "\n"
            "Starts N parties (ids 0..N-1) and, with --dealer, a dealer (id N), each running\n"
            "PROGRAM ARGS on this machine over loopback, with fresh CURVE keys for this run.\n"
            "Each process finds its identity in VEIL_PARTY_ID, VEIL_NPARTIES, VEIL_DEALER,\n"
            "VEIL_ENDPOINTS, VEIL_SESSION, VEIL_LISTEN_FD and its keys under VEIL_KEY_DIR.\n"
            "\n"
            "options:\n"
            "  -n, --parties N          number of computing parties, 2..%d\n"
            "  --dealer                 also start the dealer process\n"
            "  --link LAT,BW            emulate every link, e.g. 1ms,1Gbit (VEIL_LINK)\n"
            "  --timeout SECONDS        kill everything still running after this; exit 124.\n"
            "                           Default: no wall-clock limit (a hung session still\n"
            "                           ends: every process detects a silent or lost peer)\n"
            "  --ncpu K                 StarPU CPU workers per process (STARPU_NCPU, default 1):\n"
            "                           the devices a placement spreads over (VEIL_PLACEMENT=\n"
            "                           auto|single|dp|pp|tp|hybrid, VEIL_DEVICES=D)\n"
            "  --no-pin                 let every process use every CPU. By default each\n"
            "                           process runs on its own share of the CPUs veil-run\n"
            "                           may use (the CPUs split evenly; with fewer CPUs than\n"
            "                           processes, split over the parties, the dealer on any),\n"
            "                           as on a machine of its own; not when a share is\n"
            "                           smaller than --ncpu\n"
            "  --insecure-plaintext     no CURVE encryption (debugging only)\n"
            "  --session HEX            the session id (32 hex digits) instead of a fresh one:\n"
            "                           processes restarted from a checkpoint join the same\n"
            "                           session. VEIL_MATERIAL_SEED (tests only) is passed on\n"
            "                           with the rest of the environment\n"
            "  -h, --help               show this help\n"
            "\n"
            "Exit status: 0 when every process exited 0, else the first failing process's\n"
            "status (128+signal when killed), 124 on timeout, 2 for a usage error,\n"
            "128+SIG when veil-run got SIGINT, SIGTERM or SIGHUP (forwarded to every process).\n"
            "The processes die with veil-run, even when it is killed with SIGKILL, and the\n"
            "key directory is removed on every exit path.\n",
            VEIL_NET_MAX_PARTIES);
}

static int usage_error(const char *fmt, const char *arg)
{
    fprintf(stderr, "veil-run: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\nTry 'veil-run --help'.\n");
    return EXIT_USAGE;
}

static int parse_double(const char *s, double *out)
{
    char *end = NULL;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end)
        return -1;
    *out = v;
    return 0;
}

static int remove_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb, (void)flag, (void)ftw;
    remove(path);
    return 0;
}

/* Removes the private directory (keys, StarPU homes) and everything in it: 0, or -1 with errno
 * when it is still there. */
static int remove_dir(const char *dir)
{
    nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    struct stat st;
    return stat(dir, &st) == 0 ? (errno = ENOTEMPTY, -1) : 0;
}

/* The first of SIGINT, SIGTERM, SIGHUP that arrived; the harness forwards it to the children. */
static volatile sig_atomic_t stop_signal;

static void on_stop_signal(int sig)
{
    if (!stop_signal)
        stop_signal = sig;
}

static void catch_stop_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
}

/* Forks the reaper: in its own process group (a signal to veil-run's group spares it), deaf to
 * the stop signals, it blocks reading a pipe whose only writer is veil-run (close-on-exec, so
 * the children never hold it). However veil-run ends, SIGKILL included, the kernel closes that
 * end and the read returns; the reaper then removes dir (retrying for 2 s while the children,
 * killed at the same moment by their death signal, finish dying) and exits. Returns its pid
 * with the pipe's write end in *wfd, or -1 (veil-run then only cleans up after itself). */
static pid_t start_reaper(const char *dir, int *wfd)
{
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0)
        return -1;
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        return -1;
    }
    if (pid == 0) {
        setpgid(0, 0);
        signal(SIGINT, SIG_IGN);
        signal(SIGTERM, SIG_IGN);
        signal(SIGHUP, SIG_IGN);
        signal(SIGTTOU, SIG_IGN);
        close(fds[1]);
        int null = open("/dev/null", O_RDWR);
        if (null >= 0) {
            dup2(null, STDIN_FILENO);
            dup2(null, STDOUT_FILENO);
            close(null);
        }
        char c;
        while (read(fds[0], &c, 1) < 0 && errno == EINTR)
            ;
        for (int i = 0; i < 20 && remove_dir(dir) != 0; i++)
            usleep(100 * 1000);
        _exit(0);
    }
    close(fds[0]);
    *wfd = fds[1];
    return pid;
}

/* The command line. */
struct args {
    int n, dealer, insecure, ncpu, no_pin;
    double timeout;
    const char *link, *session;
    char sess[33];
    int prog; /* argv index of the program */
};

/* Parses the options into r; -1 to go on, else the exit status (help, usage error). */
static int parse_args(int argc, char **argv, struct args *r)
{
    int i;
    memset(r, 0, sizeof *r);
    r->timeout = VEIL_HARNESS_NO_TIMEOUT;
    for (i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--")) {
            i++;
            break;
        } else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "-n") || !strcmp(a, "--parties")) {
            if (++i >= argc)
                return usage_error("%s needs a number", a);
            char *end = NULL;
            long v = strtol(argv[i], &end, 10);
            if (end == argv[i] || *end || v < 2 || v > VEIL_NET_MAX_PARTIES)
                return usage_error("-n '%s': the number of parties is 2..16 (a session needs "
                                   "at least 2)", argv[i]);
            r->n = (int)v;
        } else if (!strcmp(a, "--dealer")) {
            r->dealer = 1;
        } else if (!strcmp(a, "--insecure-plaintext")) {
            r->insecure = 1;
        } else if (!strcmp(a, "--no-pin")) {
            r->no_pin = 1;
        } else if (!strcmp(a, "--session")) {
            if (++i >= argc)
                return usage_error("%s needs 32 hex digits", a);
            size_t k = 0;
            for (; argv[i][k] && k < 32; k++) {
                const char c = argv[i][k];
                if (veil_hex_digit(c) < 0)
                    break;
                r->sess[k] = (char)(c >= 'A' && c <= 'F' ? c - 'A' + 'a' : c);
            }
            if (k != 32 || argv[i][k])
                return usage_error("--session '%s': give exactly 32 hex digits", argv[i]);
            r->sess[32] = '\0';
            r->session = r->sess;
        } else if (!strcmp(a, "--link")) {
            if (++i >= argc)
                return usage_error("%s needs LATENCY,BANDWIDTH", a);
            struct veil_link_params lp;
            if (veil_link_parse(argv[i], &lp) != VEIL_OK) {
                fprintf(stderr, "veil-run: --link '%s': %s\n", argv[i], veil_last_error());
                return usage_error("%s", "--link: give LATENCY,BANDWIDTH such as 1ms,1Gbit");
            }
            r->link = argv[i];
        } else if (!strcmp(a, "--ncpu")) {
            if (++i >= argc)
                return usage_error("%s needs a number of CPU workers", a);
            char *end = NULL;
            long v = strtol(argv[i], &end, 10);
            if (end == argv[i] || *end || v < 1 || v > 64)
                return usage_error("--ncpu '%s': CPU workers per process, 1..64", argv[i]);
            r->ncpu = (int)v;
        } else if (!strcmp(a, "--timeout")) {
            if (++i >= argc)
                return usage_error("%s needs a number of seconds", a);
            if (parse_double(argv[i], &r->timeout) || !(r->timeout > 0) || r->timeout > 1e7)
                return usage_error("--timeout '%s': a number of seconds > 0", argv[i]);
        } else {
            return usage_error("unknown option '%s' (the program goes after '--')", a);
        }
    }
    if (r->n == 0)
        return usage_error("%s", "-n N is required");
    if (i >= argc)
        return usage_error("%s", "no program given: veil-run -n N -- PROGRAM [ARGS...]");
    r->prog = i;
    return -1;
}

/* A fresh CURVE key pair for each of nprocs processes in dir; 0, or 1 with a message. */
static int write_keys(const char *dir, int nprocs)
{
    for (int p = 0; p < nprocs; p++) {
        char pub[VEIL_Z85_KEY_CHARS + 1], sec[VEIL_Z85_KEY_CHARS + 1], path[4200];
        snprintf(path, sizeof path, "%s/p%d.key", dir, p);
        int rc = veil_curve_keypair(pub, sec);
        if (rc == VEIL_OK)
            rc = veil_curve_write_key_file(path, pub, sec);
        veil_wipe(sec, sizeof sec);
        if (rc != VEIL_OK) {
            fprintf(stderr, "veil-run: key pair %d: %s\n", p, veil_last_error());
            return 1;
        }
    }
    return 0;
}

/* Runs the parties (and the dealer) of r with the keys in dir; the exit status. */
static int run_parties(const struct args *r, const char *dir, char **argv)
{
    const int nprocs = r->n + r->dealer;
    int status = 1;
    char env_dir[4200], env_link[300];
    const char *env[6];
    int ne = 0;
    snprintf(env_dir, sizeof env_dir, "VEIL_KEY_DIR=%s", dir);
    env[ne++] = env_dir;
    if (r->link) {
        snprintf(env_link, sizeof env_link, "VEIL_LINK=%s", r->link);
        env[ne++] = env_link;
    }
    if (r->insecure)
        env[ne++] = "VEIL_INSECURE_PLAINTEXT=1";
    env[ne] = NULL;

    struct veil_harness_opts opts;
    memset(&opts, 0, sizeof opts);
    opts.nparties = r->n;
    opts.dealer = r->dealer;
    opts.ncpu = r->ncpu;
    opts.pin = !r->no_pin;
    opts.timeout_s = r->timeout;
    opts.grace_s = 5;
    opts.forward_output = 1;
    opts.extra_env = env;
    opts.session = r->session;
    opts.scratch_dir = dir;
    opts.stop_signal = &stop_signal;
    struct veil_harness_result res[VEIL_HARNESS_MAX_PROCS];
    memset(res, 0, sizeof res);
    int rc = veil_harness_exec(&opts, argv + r->prog, res);
    if (rc == VEIL_OK) {
        status = 0;
    } else {
        fprintf(stderr, "veil-run: %s\n", veil_last_error());
        if (rc == VEIL_ERR_TIMEOUT)
            fprintf(stderr, "veil-run: the bound was --timeout %g; raise it with --timeout "
                            "SECONDS, or leave --timeout out (no wall-clock limit: a hung "
                            "session still ends when a process detects a lost peer)\n",
                    r->timeout);
        /* The first failure is the one that exited earliest on its own (not killed by us). */
        int first = -1, any_timeout = 0;
        for (int p = 0; p < nprocs; p++) {
            any_timeout |= res[p].timed_out;
            if (res[p].exit_code == 0 || res[p].killed_after_failure || res[p].timed_out)
                continue;
            if (first < 0 || res[p].seconds < res[first].seconds)
                first = p;
        }
        if (stop_signal)
            status = 128 + stop_signal;
        else if (first >= 0)
            status = res[first].exit_code < 0 ? 127 : res[first].exit_code;
        else if (any_timeout || rc == VEIL_ERR_TIMEOUT)
            status = EXIT_TIMEOUT;
        else
            status = 1;
        if (status == 0)
            status = 1;
    }
    veil_harness_results_free(res, nprocs);
    return status;
}

int main(int argc, char **argv)
{
    struct args r;
    int status = parse_args(argc, argv, &r);
    if (status >= 0)
        return status;
    const int nprocs = r.n + r.dealer;
    catch_stop_signals();
    char dir[] = "/tmp/veil-run-keys-XXXXXX"; /* mkdtemp: mode 0700 */
    if (!mkdtemp(dir)) {
        fprintf(stderr, "veil-run: cannot create a key directory: %s\n", strerror(errno));
        return 1;
    }
    int reaper_fd = -1;
    const pid_t reaper = start_reaper(dir, &reaper_fd);
    status = write_keys(dir, nprocs);
    if (status == 0 && !stop_signal)
        status = run_parties(&r, dir, argv);
    if (status == 0 && stop_signal) /* arrived before the children started */
        status = 128 + stop_signal;
    if (stop_signal)
        fprintf(stderr, "veil-run: stopped by signal %d (%s); exit status %d\n", (int)stop_signal,
                strsignal(stop_signal), status);
    if (remove_dir(dir) != 0)
        fprintf(stderr, "veil-run: cannot remove key directory %s: %s\n", dir, strerror(errno));
    if (reaper > 0) { /* its pipe closes: it finds the directory gone and exits */
        close(reaper_fd);
        waitpid(reaper, NULL, 0);
    }
    return status;
}

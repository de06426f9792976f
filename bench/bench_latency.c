/*
 * bench_latency.c — the time one protocol round costs on the critical path, against the wire.
 * A chain of R dependent rounds, each a communication followed by a task that uses what it
 * opened, so no round can start before the previous one's consumer ran:
 *   open: d = open(x_r) (every party sends its share to every peer and sums), then
 *         x_{r+1} = x_r * d (veil_mpc_mul_public, a local task on the opened value);
 *   mul:  x_{r+1} = x_r * y (Beaver: masked opens of x_r - a and y - b with the material's masks
 *         in one round, then the local combination task).
 * For 1 and 1,024 elements, with 2 and 3 parties, with a live dealer process or material from
 * preprocessing files generated ahead (not timed), with CURVE and in plain text. Parties (and
 * the dealer) are real processes started by the harness (one StarPU CPU worker each, not bound,
 * lws) on loopback ZeroMQ. Each figure is party 0's wall time from submitting the whole chain
 * to quiescence, divided by R (median and best of the repetitions); the final value is revealed
 * to party 0 and checked against the plaintext chain. In the same run a raw ZeroMQ ping-pong
 * between two processes over the mesh's kind of sockets (each process a ROUTER bound to its
 * endpoint and a DEALER connected to the peer's ROUTER, CURVE or plain) gives the round trip of
 * a message of 8 and 8,192 bytes (x_rtt: the round's time over that round trip, issue 15's
 * measure), and a raw exchange round among as many processes as the row has parties, each sending
 * its message to every other and then receiving one from each, as a masked open does (x_exch: the
 * round over that; with 3 processes on 2 cores this shows what the machine's wake-ups alone cost).
 * Uses only interfaces present at commit 214b4f4 (tasks/mpc.h, tests/test_mpc_util.h, the
 * harness and net's internal config), so the same file builds against that tree.
 *
 * Usage: bench_latency [-R rounds] [-r reps] [-p 2,3] [-m dealer,file] [-s curve,plain]
 *                      [-o open,mul] [-n 1,1024]
 */
#include "config.h"
#include "base/base_internal.h"
#include "base/harness.h"
#include "bench/bench_mpc_util.h"
#include "net/net_internal.h"
#include "tasks/beaver.h"
#include "tasks/mpc.h"
#include "tasks/preproc.h"
#include "tests/test_mpc_util.h"

#include <starpu.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zmq.h>

#define MAXREPS 32
#define MAXROWS 64

enum { OP_OPEN, OP_MUL, OP_COUNT };
static const char *op_names[OP_COUNT] = {"open", "mul"};

/* What the command line chose. */
static int rounds = 200, reps = 5;
static int want_np[2] = {1, 1};       /* 2, 3 parties */
static int want_mat[2] = {1, 1};      /* dealer, file */
static int want_sec[2] = {1, 1};      /* curve, plain */
static int want_op[OP_COUNT] = {1, 1};
static int want_n[2] = {1, 1};        /* 1, 1024 elements */
static const size_t sizes[2] = {1, 1024};

/* One result row, written by party 0 into memory shared across fork. */
struct row {
    int nparties, material, curve, op;
    size_t n;
    int nreps;
    double secs[MAXREPS];
    int ok; /* the revealed chain matched the plaintext */
};
static struct row *rows;
static double *rtt; /* [curve][size]: raw ZeroMQ round trip, seconds (median) */

/* ---- the raw ZeroMQ ping-pong ------------------------------------------------------------- */

struct pp {
    int nprocs;   /* 2: the ping-pong; 2 or 3 with exchange */
    int exchange; /* 0: ping-pong; 1: every process sends to every other, then waits for all */
    int curve;
    size_t bytes;
    int count;
    char pub[3][VEIL_Z85_KEY_CHARS + 1], sec[3][VEIL_Z85_KEY_CHARS + 1];
    double *out; /* shared: one round (trip) per repetition */
};

static int zset(void *s, int opt, const void *v, size_t n)
{
    return zmq_setsockopt(s, opt, v, n);
}

/* Process id of the harness: a ROUTER on its own endpoint (the harness's bound socket, as the
 * mesh adopts it) and a DEALER to each peer's ROUTER; each message goes out on a DEALER and comes
 * in on the peer's ROUTER, as in net/mesh.c. The ping-pong (2 processes): process 0 sends,
 * process 1 answers. The exchange (N processes): each sends its message to every peer, then
 * receives one from each, as a masked open's round does. */
static int pp_child(const struct veil_harness_party *me, void *arg)
{
    struct pp *p = arg;
    const int self = me->id, n = p->nprocs;
    void *ctx = zmq_ctx_new();
    void *r = zmq_socket(ctx, ZMQ_ROUTER), *d[3] = {NULL, NULL, NULL};
    /* the DEALERs linger: the last messages must leave before the context ends */
    int zero = 0, one = 1, linger = 2000;
    char rid[8];
    snprintf(rid, sizeof rid, "p%d", self);
    int bad = !ctx || !r;
    bad |= r && zset(r, ZMQ_LINGER, &zero, sizeof zero);
    if (!bad && p->curve) {
        bad |= zset(r, ZMQ_CURVE_SERVER, &one, sizeof one);
        bad |= zset(r, ZMQ_CURVE_SECRETKEY, p->sec[self], VEIL_Z85_KEY_CHARS);
    }
    if (!bad && me->listen_fd >= 0)
        bad |= zset(r, ZMQ_USE_FD, &me->listen_fd, sizeof me->listen_fd);
    bad |= bad || zmq_bind(r, me->endpoints[self]) != 0;
    for (int q = 0; q < n && !bad; q++) {
        if (q == self)
            continue;
        bad |= !(d[q] = zmq_socket(ctx, ZMQ_DEALER));
        bad |= bad || zset(d[q], ZMQ_LINGER, &linger, sizeof linger);
        bad |= bad || zset(d[q], ZMQ_ROUTING_ID, rid, strlen(rid));
        if (!bad && p->curve) {
            bad |= zset(d[q], ZMQ_CURVE_SERVERKEY, p->pub[q], VEIL_Z85_KEY_CHARS);
            bad |= zset(d[q], ZMQ_CURVE_PUBLICKEY, p->pub[self], VEIL_Z85_KEY_CHARS);
            bad |= zset(d[q], ZMQ_CURVE_SECRETKEY, p->sec[self], VEIL_Z85_KEY_CHARS);
        }
        bad |= bad || zmq_connect(d[q], me->endpoints[q]) != 0;
    }
    char *buf = calloc(1, p->bytes);
    if (bad || !buf) {
        fprintf(stderr, "raw %s %d: set-up: %s\n", p->exchange ? "exchange" : "ping-pong", self,
                zmq_strerror(zmq_errno()));
        free(buf);
        return 1;
    }
    char id[16];
    const int peer = 1 - self; /* the ping-pong's */
    /* a warm-up (connections and CURVE handshakes), then count rounds per repetition */
    for (int k = -1; k < reps && !bad; k++) {
        const int count = k < 0 ? 4 : p->count;
        const double t0 = veil_now();
        for (int i = 0; i < count && !bad; i++) {
            if (p->exchange) {
                for (int q = 0; q < n; q++)
                    if (q != self && zmq_send(d[q], buf, p->bytes, 0) < 0)
                        bad = 1;
                for (int q = 1; q < n; q++)
                    if (zmq_recv(r, id, sizeof id, 0) < 0 || zmq_recv(r, buf, p->bytes, 0) < 0)
                        bad = 1;
                continue;
            }
            if (self == 0 && zmq_send(d[peer], buf, p->bytes, 0) < 0)
                bad = 1;
            if (zmq_recv(r, id, sizeof id, 0) < 0 || zmq_recv(r, buf, p->bytes, 0) < 0)
                bad = 1;
            if (self == 1 && zmq_send(d[peer], buf, p->bytes, 0) < 0)
                bad = 1;
        }
        if (k >= 0 && self == 0)
            p->out[k] = (veil_now() - t0) / count;
    }
    free(buf);
    zmq_close(r);
    for (int q = 0; q < n; q++)
        if (d[q])
            zmq_close(d[q]);
    zmq_ctx_term(ctx);
    return bad;
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(const double *v, int n)
{
    double s[MAXREPS];
    memcpy(s, v, (size_t)n * sizeof *s);
    qsort(s, (size_t)n, sizeof *s, cmp_double);
    return n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
}

/* The raw ping-pong (exchange 0, 2 processes) or exchange round (exchange 1, nprocs processes):
 * the median over the repetitions of process 0's seconds per round (trip). */
static int run_raw(int exchange, int nprocs, int curve, size_t bytes, double *out)
{
    static struct pp p;
    memset(&p, 0, sizeof p);
    p.nprocs = nprocs;
    p.exchange = exchange;
    p.curve = curve;
    p.bytes = bytes;
    p.count = exchange ? 1000 : 2000;
    p.out = veil_test_mpc_shared(MAXREPS * sizeof *p.out);
    for (int q = 0; q < nprocs && p.out; q++)
        if (veil_curve_keypair(p.pub[q], p.sec[q]) != VEIL_OK)
            return 1;
    if (!p.out)
        return 1;
    struct veil_harness_opts o = {.nparties = nprocs, .timeout_s = 120, .grace_s = 5};
    struct veil_harness_result res[3];
    memset(res, 0, sizeof res);
    int rc = veil_harness_run(&o, pp_child, &p, res);
    if (rc != VEIL_OK) {
        fprintf(stderr, "raw %s: %s\n", exchange ? "exchange" : "ping-pong", veil_last_error());
        for (int q = 0; q < nprocs; q++)
            fprintf(stderr, "%s", res[q].output ? res[q].output : "");
    }
    veil_harness_results_free(res, nprocs);
    *out = median(p.out, reps);
    veil_test_mpc_shared_free(p.out, MAXREPS * sizeof *p.out);
    return rc != VEIL_OK;
}

/* ---- the MPC chain ------------------------------------------------------------------------ */

/* Plaintext inputs (odd words, so the products do not collapse to 0), made before the fork. */
static uint64_t xin[1024], yin[1024];

static uint64_t gen_x(size_t i, const void *arg)
{
    (void)arg;
    return xin[i];
}

static uint64_t gen_y(size_t i, const void *arg)
{
    (void)arg;
    return yin[i];
}

struct chain {
    int op;
    const struct veil_sec *x, *y;
    struct veil_sec out;
};

/* Submits the R rounds; never waits (the caller times submission to quiescence). */
static int chain_fn(veil_mpc_t *m, void *arg)
{
    struct chain *c = arg;
    struct veil_sec cur = *c->x, next;
    int rc = VEIL_OK;
    for (int r = 0; r < rounds && rc == VEIL_OK; r++) {
        memset(&next, 0, sizeof next);
        if (c->op == OP_MUL) {
            rc = veil_mpc_mul(m, &cur, c->y, &next);
        } else {
            struct veil_pub d = {0};
            rc = veil_mpc_open(m, &cur, NULL, &d);
            veil_mpc_round(m);
            if (rc == VEIL_OK)
                rc = veil_mpc_mul_public(m, &cur, &d, &next);
            veil_mpc_release(m, &d);
        }
        if (r > 0)
            veil_mpc_release(m, &cur); /* freed at the next wait, when no task uses it */
        cur = next;
    }
    c->out = cur;
    return rc;
}

static uint64_t expect(int op, size_t i)
{
    uint64_t v = xin[i];
    for (int r = 0; r < rounds; r++)
        v = op == OP_MUL ? v * yin[i] : v * v;
    return v;
}

/* Settings of the MPC run in progress (set before the fork). */
static struct {
    int nparties, material, curve;
    int nrows0; /* first row of this run */
} cur_run;

static int body(veil_mpc_t *m, void *arg)
{
    (void)arg;
    const int self = veil_mpc_self(m);
    int k = cur_run.nrows0, rc = VEIL_OK;
    for (int si = 0; si < 2 && rc == VEIL_OK; si++) {
        if (!want_n[si])
            continue;
        const size_t n = sizes[si], dims[1] = {n};
        struct veil_sec x = {0}, y = {0};
        rc = bench_share(m, 0, gen_x, NULL, 1, dims, 0, &x);
        if (rc == VEIL_OK)
            rc = bench_share(m, 1, gen_y, NULL, 1, dims, 0, &y);
        for (int op = 0; op < OP_COUNT && rc == VEIL_OK; op++) {
            if (!want_op[op])
                continue;
            struct row *w = k < MAXROWS ? &rows[k++] : NULL;
            for (int t = 0; t < reps && rc == VEIL_OK; t++) {
                struct chain c = {.op = op, .x = &x, .y = &y};
                struct bench_cost cost = {0};
                rc = bench_time_call(m, chain_fn, &c, &cost);
                struct veil_pub out = {0};
                if (rc == VEIL_OK)
                    rc = veil_mpc_reveal(m, &c.out, 0, &out);
                if (rc == VEIL_OK)
                    rc = veil_mpc_wait(m);
                if (rc == VEIL_OK && self == 0 && w && veil_mpc_net(m)) {
                    int ok = 1;
                    for (size_t i = 0; i < n; i++)
                        ok &= out.data[i] == expect(op, i);
                    w->nparties = cur_run.nparties;
                    w->material = cur_run.material;
                    w->curve = cur_run.curve;
                    w->op = op;
                    w->n = n;
                    w->secs[t] = cost.secs;
                    w->nreps = t + 1;
                    w->ok = t == 0 ? ok : (w->ok && ok);
                }
                veil_mpc_release(m, &out);
                veil_mpc_release(m, &c.out);
            }
        }
        veil_mpc_release(m, &x);
        veil_mpc_release(m, &y);
        if (rc == VEIL_OK)
            rc = veil_mpc_wait(m);
    }
    if (rc != VEIL_OK)
        fprintf(stderr, "process %d: %s\n", self, veil_last_error());
    return rc == VEIL_OK ? 0 : 1;
}

/* The harness child, as tests/test_mpc_util.c's but with CURVE optional (plain: no keys). */
struct mpc_run {
    char pub[VEIL_NET_MAX_PROCS][VEIL_Z85_KEY_CHARS + 1];
    char sec[VEIL_NET_MAX_PROCS][VEIL_Z85_KEY_CHARS + 1];
    uint8_t session[VEIL_PREPROC_SID_BYTES];
    uint8_t digest[VEIL_PREPROC_DIGEST_BYTES];
    char dir[64];
    char path[VEIL_PREPROC_MAX_PARTIES][96];
};

static int mpc_child(const struct veil_harness_party *me, void *arg)
{
    struct mpc_run *r = arg;
    if (starpu_init(NULL) != 0) {
        fprintf(stderr, "process %d: starpu_init failed\n", me->id);
        return 3;
    }
    const int file = cur_run.material == VEIL_MPC_MAT_FILE;
    struct veil_net_config cfg;
    veil_net_t *net = NULL;
    veil_mpc_t *m = NULL;
    int code = 1;
    int rc = veil_net_config_from_harness(
        me, cur_run.curve ? (const char(*)[VEIL_Z85_KEY_CHARS + 1]) r->pub : NULL,
        cur_run.curve ? r->sec[me->id] : NULL, &cfg);
    cfg.insecure_plaintext = !cur_run.curve;
    if (rc == VEIL_OK && file)
        memcpy(cfg.session, r->session, sizeof r->session);
    struct veil_net_options nopt;
    veil_net_options_defaults(&nopt);
    if (rc == VEIL_OK)
        rc = veil_net_open(&cfg, &nopt, &net);
    if (rc == VEIL_OK) {
        struct veil_mpc_options o;
        veil_mpc_options_defaults(&o);
        o.role = me->is_dealer ? VEIL_MPC_DEALER : VEIL_MPC_PARTY;
        o.material = (enum veil_mpc_material)cur_run.material;
        if (file) {
            o.preproc_path = r->path[me->id];
            memcpy(o.plan_digest, r->digest, sizeof o.plan_digest);
        }
        m = veil_mpc_new(net, &o);
        rc = m ? VEIL_OK : VEIL_ERR_STATE;
    }
    if (rc == VEIL_OK) {
        code = body(m, NULL);
        if (veil_mpc_wait(m) != VEIL_OK)
            code = 1;
    } else {
        fprintf(stderr, "process %d: set-up: %s\n", me->id, veil_last_error());
    }
    veil_mpc_destroy(&m);
    if (veil_net_close(&net) != VEIL_OK && code == 0)
        code = 1;
    starpu_shutdown();
    return code;
}

/* FILE material: the body's items recorded on a RECORDER, then every party's file written. */
static int make_files(struct mpc_run *r, int nparties)
{
    struct veil_mpc_options o;
    veil_mpc_options_defaults(&o);
    o.role = VEIL_MPC_RECORDER;
    o.material = VEIL_MPC_MAT_FILE;
    veil_mpc_t *rec = veil_mpc_new_recorder(nparties, &o);
    if (!rec)
        return 1;
    int code = body(rec, NULL);
    size_t n = 0;
    const struct veil_preproc_item *items = veil_mpc_items(rec, &n);
    struct veil_preproc_layout layout;
    const char *paths[VEIL_PREPROC_MAX_PARTIES];
    snprintf(r->dir, sizeof r->dir, "/tmp/veil-bench-lat-XXXXXX");
    int rc = code ? VEIL_ERR_STATE : veil_seed_random(r->session);
    if (rc == VEIL_OK)
        rc = veil_preproc_layout_init(&layout, nparties, o.frac_bits, r->session);
    if (rc == VEIL_OK)
        rc = veil_preproc_items_digest(items, n, r->digest);
    if (rc == VEIL_OK && !mkdtemp(r->dir))
        rc = veil_error(VEIL_ERR_IO, "mkdtemp failed");
    for (int p = 0; p < nparties && rc == VEIL_OK; p++) {
        snprintf(r->path[p], sizeof r->path[p], "%s/party%d.pre", r->dir, p);
        paths[p] = r->path[p];
    }
    if (rc == VEIL_OK)
        rc = veil_preproc_generate_files(&layout, items, n, r->digest, paths);
    if (rc != VEIL_OK)
        fprintf(stderr, "bench_latency: preprocessing files: %s\n", veil_last_error());
    veil_mpc_destroy(&rec);
    return rc == VEIL_OK && !code ? 0 : 1;
}

static void remove_files(struct mpc_run *r, int nparties)
{
    for (int p = 0; p < nparties; p++)
        if (r->path[p][0])
            unlink(r->path[p]);
    if (r->dir[0] && !strstr(r->dir, "XXXXXX"))
        rmdir(r->dir);
}

static int run_mpc(int nparties, int material, int curve, int *nrows)
{
    static struct mpc_run r;
    memset(&r, 0, sizeof r);
    cur_run.nparties = nparties;
    cur_run.material = material;
    cur_run.curve = curve;
    cur_run.nrows0 = *nrows;
    const int dealer = material == VEIL_MPC_MAT_DEALER;
    if (material == VEIL_MPC_MAT_FILE && make_files(&r, nparties) != 0) {
        remove_files(&r, nparties);
        return 1;
    }
    for (int p = 0; p < nparties + dealer; p++)
        if (veil_curve_keypair(r.pub[p], r.sec[p]) != VEIL_OK)
            return 1;
    struct veil_harness_opts o = {
        .nparties = nparties, .dealer = dealer, .timeout_s = 600, .grace_s = 10};
    struct veil_harness_result res[VEIL_HARNESS_MAX_PROCS];
    memset(res, 0, sizeof res);
    int rc = veil_harness_run(&o, mpc_child, &r, res);
    if (rc != VEIL_OK) {
        fprintf(stderr, "bench_latency: N=%d %s %s: %s\n", nparties, dealer ? "dealer" : "file",
                curve ? "curve" : "plain", veil_last_error());
        for (int p = 0; p < nparties + dealer; p++)
            fprintf(stderr, "---- process %d (exit %d):\n%s", p, res[p].exit_code,
                    res[p].output ? res[p].output : "");
    }
    veil_harness_results_free(res, nparties + dealer);
    if (material == VEIL_MPC_MAT_FILE)
        remove_files(&r, nparties);
    while (*nrows < MAXROWS && rows[*nrows].nreps)
        (*nrows)++;
    return rc != VEIL_OK;
}

/* ---- command line and report -------------------------------------------------------------- */

/* Sets flags[i] for each listed name (comma-separated) that matches names[i]. */
static int pick(const char *list, const char *const *names, int count, int *flags)
{
    for (int i = 0; i < count; i++)
        flags[i] = 0;
    char buf[128];
    snprintf(buf, sizeof buf, "%s", list);
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        int found = 0;
        for (int i = 0; i < count; i++)
            if (strcmp(t, names[i]) == 0)
                flags[i] = found = 1;
        if (!found) {
            fprintf(stderr, "bench_latency: unknown value '%s'\n", t);
            return 1;
        }
    }
    return 0;
}

static void usage(void)
{
    fprintf(stderr, "usage: bench_latency [-R rounds] [-r reps] [-p 2,3] [-m dealer,file] "
                    "[-s curve,plain] [-o open,mul] [-n 1,1024]\n");
}

int main(int argc, char **argv)
{
    static const char *const np_names[] = {"2", "3"}, *const mat_names[] = {"dealer", "file"};
    static const char *const sec_names[] = {"curve", "plain"}, *const n_names[] = {"1", "1024"};
    int opt;
    while ((opt = getopt(argc, argv, "R:r:p:m:s:o:n:")) != -1) {
        int bad = 0;
        switch (opt) {
        case 'R': rounds = atoi(optarg); bad = rounds < 1; break;
        case 'r': reps = atoi(optarg); bad = reps < 1 || reps > MAXREPS; break;
        case 'p': bad = pick(optarg, np_names, 2, want_np); break;
        case 'm': bad = pick(optarg, mat_names, 2, want_mat); break;
        case 's': bad = pick(optarg, sec_names, 2, want_sec); break;
        case 'o': bad = pick(optarg, op_names, OP_COUNT, want_op); break;
        case 'n': bad = pick(optarg, n_names, 2, want_n); break;
        default: bad = 1;
        }
        if (bad) {
            usage();
            return 2;
        }
    }
    rows = veil_test_mpc_shared(MAXROWS * sizeof *rows);
    if (!rows)
        return 1;
    double rtts[2][2] = {{0}}, exch[2][2][2] = {{{0}}}; /* [parties - 2][curve][size] */
    uint8_t seed[VEIL_SEED_BYTES] = {42};
    veil_prg_t *g = veil_prg_new(seed);
    if (!g || veil_prg_fill(g, xin, 1024) != VEIL_OK || veil_prg_fill(g, yin, 1024) != VEIL_OK)
        return 1;
    veil_prg_destroy(&g);
    for (int i = 0; i < 1024; i++)
        xin[i] |= 1, yin[i] |= 1;
    int failed = 0, nrows = 0;
    for (int c = 0; c < 2; c++)
        for (int si = 0; si < 2; si++)
            if (want_sec[c] && want_n[si])
                failed |= run_raw(0, 2, c == 0, 8 * sizes[si], &rtts[c][si]);
    for (int pi = 0; pi < 2; pi++)
        for (int c = 0; c < 2; c++)
            for (int si = 0; si < 2; si++)
                if (want_np[pi] && want_sec[c] && want_n[si])
                    failed |= run_raw(1, pi + 2, c == 0, 8 * sizes[si], &exch[pi][c][si]);
    rtt = &rtts[0][0];
    for (int pi = 0; pi < 2; pi++)
        for (int mi = 0; mi < 2; mi++)
            for (int c = 0; c < 2; c++)
                if (want_np[pi] && want_mat[mi] && want_sec[c])
                    failed |= run_mpc(pi + 2, mi == 0 ? VEIL_MPC_MAT_DEALER : VEIL_MPC_MAT_FILE,
                                      c == 0, &nrows);
    printf("rounds per chain R=%d, repetitions %d; times per round in microseconds at party 0\n",
           rounds, reps);
    printf("raw ZeroMQ ROUTER/DEALER ping-pong round trip (2 processes, median):\n");
    for (int c = 0; c < 2; c++)
        for (int si = 0; si < 2; si++)
            if (want_sec[c] && want_n[si])
                printf("  %-5s %5zu bytes  %8.1f us\n", sec_names[c], 8 * sizes[si],
                       1e6 * rtts[c][si]);
    printf("raw ZeroMQ exchange round (N processes, each sends to every other and waits for "
           "all, median):\n");
    for (int pi = 0; pi < 2; pi++)
        for (int c = 0; c < 2; c++)
            for (int si = 0; si < 2; si++)
                if (want_np[pi] && want_sec[c] && want_n[si])
                    printf("  N=%d %-5s %5zu bytes  %8.1f us\n", pi + 2, sec_names[c],
                           8 * sizes[si], 1e6 * exch[pi][c][si]);
    printf("%-3s %-6s %-5s %-4s %5s %10s %10s %9s %6s %9s %6s %s\n", "N", "mat", "sec", "op", "n",
           "median_us", "best_us", "rtt_us", "x_rtt", "exch_us", "x_exch", "check");
    for (int i = 0; i < nrows; i++) {
        const struct row *w = &rows[i];
        if (!w->nreps)
            continue;
        double best = w->secs[0];
        for (int t = 1; t < w->nreps; t++)
            best = w->secs[t] < best ? w->secs[t] : best;
        const double med = median(w->secs, w->nreps) / rounds;
        const double r = rtts[w->curve ? 0 : 1][w->n == 1 ? 0 : 1];
        const double x = exch[w->nparties - 2][w->curve ? 0 : 1][w->n == 1 ? 0 : 1];
        printf("%-3d %-6s %-5s %-4s %5zu %10.1f %10.1f %9.1f %6.2f %9.1f %6.2f %s\n", w->nparties,
               w->material == VEIL_MPC_MAT_DEALER ? "dealer" : "file", w->curve ? "curve" : "plain",
               op_names[w->op], w->n, 1e6 * med, 1e6 * best / rounds, 1e6 * r,
               r > 0 ? med / r : 0.0, 1e6 * x, x > 0 ? med / x : 0.0, w->ok ? "ok" : "WRONG");
        failed |= !w->ok;
    }
    veil_test_mpc_shared_free(rows, MAXROWS * sizeof *rows);
    return failed ? 1 : 0;
}

/* Tests checkpoints of secure training (veil_party_save / veil_party_load) and exact resumption:
 * an MLP trained for 6 steps uninterrupted with a material seed and a fixed session id; then the
 * same with a checkpoint after step 3 and party 1 killed (SIGKILL) during step 4: every other
 * process must exit non-zero naming the lost party (the dealer, which never waits for the
 * parties, learns it at the final checkpoint, which nobody may then commit); then all processes
 * restarted with the same session and seed load their checkpoints and do steps 4..6: the
 * revealed weights must equal the uninterrupted run's bit for bit. Refusals: another party's
 * file, another session, another plan (VEIL_ERR_MISMATCH with a message naming it), a corrupted
 * file (VEIL_ERR_CRYPTO or VEIL_ERR_FORMAT). Every run draws a joint seed (a random one, which
 * orders the data in lenet_fmnist train --secure); a resumed run must get the interrupted run's
 * seed back from the checkpoint.
 * Crashes while writing: with a checkpoint after every step, one process kills itself (the
 * testing hook VEIL_TEST_CRASH, SIGKILL) at each of the five phases of writing the checkpoint of
 * step 3 (after the agreement, half the file written, written, old generation rotated, new one
 * renamed); the resumed run must pick the newest step every process holds (2, or 3 after the
 * last phase), leave no temporary file, and end with the uninterrupted run's weights bit for bit.
 * A process without any file makes every process refuse, naming who holds what. */
#include "config.h"
#include "test_graph_util.h"
#include "test_mpc_util.h"
#include "test_util.h"

#include <dirent.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define STEPS 6
#define SEED "00112233445566778899aabbccddeeff"
#define SESSION "5e55105e55105e55105e55105e55105e"
#define OTHER_SESSION "0123456789abcdef0123456789abcdef"
#define NP 4
#define MAXN 96

static const char *pnames[NP] = {"w1", "b1", "w2", "b2"};
static const size_t pnumel[NP] = {96, 8, 32, 4};

enum mode { UNINTERRUPTED, KILLED, RESUMED, REFUSE, CRASH, CRASH_RESUMED };
#define PHASES 5

struct shared {
    double w[3][NP][MAXN]; /* per mode: the final weights at party 0 */
    double wc[PHASES][NP][MAXN]; /* after a crash at each phase and a resume: party 0's */
    uint8_t seed[CRASH_RESUMED + 1][16]; /* per mode: party 0's joint seed */
    uint64_t resumed_at[PHASES][3];      /* per phase, per process: the step it resumed after */
    char nofile_msg[3][256];             /* the refusal where party 1 has no file */
    int nofile_rc[3];
    int refuse_rc[4][3]; /* per case (another party's file, a corrupted file, another session,
                            another plan), per process */
    char refuse_msg[4][3][256];
};

static struct shared *sh;
static veil_plan_t *plan, *other_plan;
static double xs[STEPS][48], ls[STEPS][16], w0[NP][MAXN];
static char dir[64];
static enum mode mode;
static const veil_plan_t *open_plan;
static int refuse_slot, crash_phase, crash_proc;

static veil_plan_t *mlp(double lr)
{
    veil_graph_t *g = veil_graph_new("mlp_ckpt");
    size_t dx[2] = {4, 12}, dw1[2] = {12, 8}, db1[1] = {8}, dw2[2] = {8, 4}, db2[1] = {4};
    size_t dl[2] = {4, 4};
    veil_node_t *x = veil_input(g, "x", 1, 2, dx), *lab = veil_input(g, "labels", 1, 2, dl);
    veil_node_t *h = veil_relu(g, "r", veil_dense(g, "fc1", x, veil_param(g, "w1", 0, 2, dw1),
                                                  veil_param(g, "b1", 0, 1, db1)));
    veil_node_t *y =
        veil_dense(g, "fc2", h, veil_param(g, "w2", 0, 2, dw2), veil_param(g, "b2", 0, 1, db2));
    veil_softmax_cross_entropy(g, "loss", y, lab);
    struct veil_compile_options o;
    veil_compile_options_defaults(&o);
    o.training = 1;
    o.lr = lr;
    o.momentum = 0.9;
    o.weight_decay = 0.001;
    veil_plan_t *p = veil_compile(g, &o);
    VT_CHECK(p != NULL, "compile: %s", veil_last_error());
    veil_graph_destroy(&g);
    return p;
}

static void ckpt_path(char *out, size_t len, int id)
{
    snprintf(out, len, "%s/ckpt.p%d", dir, id);
}

static int step(veil_party_t *pt, int s)
{
    struct veil_feed f[2 + NP] = {{"x", xs[s], 48}, {"labels", ls[s], 16}};
    for (int i = 0; i < NP; i++)
        f[2 + i] = (struct veil_feed){pnames[i], w0[i], pnumel[i]};
    return veil_train_step(pt, f, 2 + NP);
}

static void *killer(void *arg)
{
    (void)arg;
    usleep(2000); /* well inside step 4 */
    kill(getpid(), SIGKILL);
    return NULL;
}

/* One process of a refusal run: case 0: the file of another process, then (case 1) a
 * corrupted copy of its own; cases 2 and 3: its own file in another session or plan. */
static void refuse(veil_party_t *pt, int id)
{
    char path[128], other[128], bad[160];
    ckpt_path(path, sizeof path, id);
    if (refuse_slot >= 2) {
        sh->refuse_rc[refuse_slot][id] = veil_party_load(pt, path);
        snprintf(sh->refuse_msg[refuse_slot][id], 256, "%s", veil_last_error());
        return;
    }
    ckpt_path(other, sizeof other, id == 0 ? 1 : 0);
    sh->refuse_rc[0][id] = veil_party_load(pt, other);
    snprintf(sh->refuse_msg[0][id], 256, "%s", veil_last_error());
    snprintf(bad, sizeof bad, "%s.bad", path);
    FILE *in = fopen(path, "rb"), *out = fopen(bad, "wb");
    int c, at = 0;
    while (in && out && (c = fgetc(in)) != EOF)
        fputc(at++ == 100 ? c ^ 0x40 : c, out); /* one bit of the model name */
    if (in)
        fclose(in);
    if (out)
        fclose(out);
    sh->refuse_rc[1][id] = veil_party_load(pt, bad);
    snprintf(sh->refuse_msg[1][id], 256, "%s", veil_last_error());
    unlink(bad);
}

static int child(const struct veil_harness_party *me, void *arg)
{
    (void)arg;
    struct veil_party_options po;
    veil_party_options_defaults(&po);
    po.material_seed = SEED;
    veil_party_t *pt = veil_party_open(open_plan, &po);
    if (!pt) {
        fprintf(stderr, "process %d: open: %s\n", me->id, veil_last_error());
        return 3;
    }
    int rc = VEIL_OK, first = 0;
    const int last = STEPS;
    char path[128], final[160];
    ckpt_path(path, sizeof path, me->id);
    snprintf(final, sizeof final, "%s.final", path);
    if (mode == REFUSE) {
        refuse(pt, me->id);
        veil_party_close(&pt);
        return 0;
    }
    if (mode == CRASH && me->id == crash_proc) {
        char spec[64];
        snprintf(spec, sizeof spec, "checkpoint:3:%d", crash_phase);
        setenv("VEIL_INSECURE_TEST_HOOKS", "1", 1);
        setenv("VEIL_TEST_CRASH", spec, 1);
    }
    if (mode == RESUMED || mode == CRASH_RESUMED) {
        rc = veil_party_load(pt, path);
        first = (int)veil_party_steps(pt);
        if (mode == CRASH_RESUMED && crash_phase == 0) {
            /* the refusal run: party 1 has no file */
            sh->nofile_rc[me->id] = rc;
            snprintf(sh->nofile_msg[me->id], 256, "%s", veil_last_error());
            veil_party_close(&pt);
            return 0;
        }
        if (mode == CRASH_RESUMED)
            sh->resumed_at[crash_phase - 1][me->id] = (uint64_t)first;
        else if (rc == VEIL_OK && first != 3)
            rc = VEIL_ERR_STATE;
    }
    uint8_t seed[16];
    if (rc == VEIL_OK)
        rc = veil_party_joint_seed(pt, seed);
    if (rc == VEIL_OK && me->id == 0)
        memcpy(sh->seed[mode], seed, 16);
    for (int s = first; rc == VEIL_OK && s < last; s++) {
        pthread_t th;
        if (mode == KILLED && s == 3 && me->id == 1)
            pthread_create(&th, NULL, killer, NULL);
        rc = step(pt, s);
        /* checkpoints after step 3 and at the end (the end's fails where a peer was lost); after
         * every step in the crash runs */
        if (rc == VEIL_OK && mode == KILLED && (s == 2 || s == STEPS - 1))
            rc = veil_party_save(pt, s == 2 ? path : final);
        if (rc == VEIL_OK && (mode == CRASH || mode == CRASH_RESUMED))
            rc = veil_party_save(pt, path);
        if (mode == KILLED && s == 3 && me->id == 1)
            pause(); /* the killer ends this process */
    }
    for (int i = 0; rc == VEIL_OK && i < NP; i++) {
        double *out = me->id != 0 ? NULL
                      : mode == CRASH_RESUMED ? sh->wc[crash_phase - 1][i] : sh->w[mode][i];
        rc = veil_party_reveal_param(pt, pnames[i], 0, out);
    }
    if (rc != VEIL_OK)
        fprintf(stderr, "process %d: %s\n", me->id, veil_last_error());
    veil_party_close(&pt);
    return rc == VEIL_OK ? 0 : 4;
}

static int run(enum mode m, const veil_plan_t *p, const char *session, int expect_fail,
               struct veil_harness_result *res)
{
    mode = m;
    open_plan = p;
    struct veil_test_graph_opts o = {.nparties = 2, .dealer = 1, .timeout_s = 90,
                                     .expect_fail = expect_fail, .session = session};
    return veil_test_graph_run(&o, child, NULL, res);
}

/* No file named ckpt.p*.tmp.* left in the directory. */
static int stale_files(void)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    int n = 0;
    while (d && (e = readdir(d)) != NULL)
        n += strstr(e->d_name, ".tmp.") != NULL;
    if (d)
        closedir(d);
    return n;
}

static void remove_files(void)
{
    for (int id = 0; id < 3; id++) {
        char path[128], prev[140];
        ckpt_path(path, sizeof path, id);
        snprintf(prev, sizeof prev, "%s.prev", path);
        unlink(path);
        unlink(prev);
    }
}

/* A kill at each phase of writing step 3's checkpoint, a resumption, the weights compared. */
static void check_crashes(void)
{
    for (int ph = 1; ph <= PHASES; ph++) {
        remove_files();
        crash_phase = ph;
        crash_proc = (ph - 1) % 3;
        struct veil_harness_result res[3];
        VT_CHECK(run(CRASH, plan, SESSION, 1, res) != VEIL_OK, "phase %d: the run with a crash "
                 "should fail", ph);
        VT_CHECK(res[crash_proc].exit_code == 128 + SIGKILL, "phase %d: process %d should die "
                 "of SIGKILL (exit %d)", ph, crash_proc, res[crash_proc].exit_code);
        veil_harness_results_free(res, 3);
        VT_CHECK(run(CRASH_RESUMED, plan, SESSION, 0, NULL) == VEIL_OK, "phase %d: the resumed "
                 "run failed", ph);
        const uint64_t want = ph == PHASES ? 3 : 2;
        for (int id = 0; id < 3; id++)
            VT_CHECK(sh->resumed_at[ph - 1][id] == want, "phase %d: process %d resumed after "
                     "step %llu, not %llu", ph, id,
                     (unsigned long long)sh->resumed_at[ph - 1][id], (unsigned long long)want);
        VT_CHECK(memcmp(sh->seed[CRASH_RESUMED], sh->seed[CRASH], 16) == 0,
                 "phase %d: the resumed run's joint seed differs from the checkpoint's", ph);
        VT_CHECK(stale_files() == 0, "phase %d: temporary files left after the resumption", ph);
        for (int i = 0; i < NP; i++)
            VT_CHECK(memcmp(sh->w[UNINTERRUPTED][i], sh->wc[ph - 1][i], pnumel[i] * 8) == 0,
                     "phase %d: '%s' after a crash and a resumption differs from the "
                     "uninterrupted run", ph, pnames[i]);
    }
    /* party 1 without any file: everyone refuses; the others name what each process holds */
    char path[128], prev[140];
    ckpt_path(path, sizeof path, 1);
    snprintf(prev, sizeof prev, "%s.prev", path);
    unlink(path);
    unlink(prev);
    crash_phase = 0;
    VT_CHECK(run(CRASH_RESUMED, plan, SESSION, 0, NULL) == VEIL_OK, "the refusal run failed");
    for (int id = 0; id < 3; id++) {
        VT_CHECK(sh->nofile_rc[id] != VEIL_OK, "process %d loaded although party 1 has no file",
                 id);
        veil_test_log("no file at party 1, process %d: %s", id, sh->nofile_msg[id]);
    }
    for (int id = 0; id < 3; id += 2)
        VT_CHECK(sh->nofile_rc[id] == VEIL_ERR_MISMATCH &&
                     strstr(sh->nofile_msg[id], "party 1 none") &&
                     strstr(sh->nofile_msg[id], "party 0 steps 6 and 5"),
                 "process %d: \"%s\" should name what each process holds", id,
                 sh->nofile_msg[id]);
    remove_files();
}

static void check_refusals(void)
{
    static const char *const says[4] = {"party", "SHA-256", "session", "model"};
    static const char *const what[4] = {"another party's file", "a corrupted file",
                                         "another session", "another plan"};
    refuse_slot = 0;
    VT_CHECK(run(REFUSE, plan, SESSION, 0, NULL) == VEIL_OK, "refusal run (party, corrupt)");
    refuse_slot = 2;
    VT_CHECK(run(REFUSE, plan, OTHER_SESSION, 0, NULL) == VEIL_OK, "refusal run (session)");
    refuse_slot = 3;
    VT_CHECK(run(REFUSE, other_plan, SESSION, 0, NULL) == VEIL_OK, "refusal run (plan)");
    for (int c = 0; c < 4; c++)
        for (int id = 0; id < 3; id++) {
            const int rc = sh->refuse_rc[c][id];
            const int ok = c == 1 ? rc == VEIL_ERR_CRYPTO || rc == VEIL_ERR_FORMAT
                                  : rc == VEIL_ERR_MISMATCH;
            VT_CHECK(ok && strstr(sh->refuse_msg[c][id], says[c]),
                     "process %d loading %s: rc %d, \"%s\" (expected %s naming '%s')", id,
                     what[c], rc, sh->refuse_msg[c][id],
                     c == 1 ? "VEIL_ERR_CRYPTO/FORMAT" : "VEIL_ERR_MISMATCH", says[c]);
            veil_test_log("%s at process %d: %s", what[c], id, sh->refuse_msg[c][id]);
        }
}

int main(void)
{
    sh = veil_test_mpc_shared(sizeof *sh);
    snprintf(dir, sizeof dir, "/tmp/veil-ckpt-XXXXXX");
    if (!sh || !mkdtemp(dir))
        return 1;
    uint64_t r = 88172645463325252u;
    for (int s = 0; s < STEPS; s++) {
        for (int i = 0; i < 48; i++) {
            r ^= r << 13, r ^= r >> 7, r ^= r << 17;
            xs[s][i] = (double)(r % 2000) / 1000.0 - 1.0;
        }
        for (int b = 0; b < 4; b++)
            ls[s][b * 4 + (s + b) % 4] = 1.0;
    }
    for (int i = 0; i < NP; i++)
        for (size_t e = 0; e < pnumel[i]; e++) {
            r ^= r << 13, r ^= r >> 7, r ^= r << 17;
            w0[i][e] = (double)(r % 1000) / 1000.0 * 0.8 - 0.4;
        }
    plan = mlp(0.0625);
    other_plan = mlp(0.125);
    if (!plan || !other_plan)
        return veil_test_status();

    VT_CHECK(run(UNINTERRUPTED, plan, SESSION, 0, NULL) == VEIL_OK, "uninterrupted run failed");
    struct veil_harness_result res[3];
    int rc = run(KILLED, plan, SESSION, 1, res);
    VT_CHECK(rc != VEIL_OK, "the run with a killed party should fail");
    VT_CHECK(res[1].exit_code == 128 + SIGKILL, "party 1 should die of SIGKILL (exit %d)",
             res[1].exit_code);
    for (int q = 0; q < 3; q += 2)
        VT_CHECK(res[q].exit_code != 0 && !res[q].timed_out && res[q].output &&
                     strstr(res[q].output, "party 1"),
                 "process %d after the kill: exit %d%s, said:\n%s", q, res[q].exit_code,
                 res[q].timed_out ? " (time bound)" : "", res[q].output ? res[q].output : "");
    veil_harness_results_free(res, 3);
    VT_CHECK(run(RESUMED, plan, SESSION, 0, NULL) == VEIL_OK, "resumed run failed");
    for (int i = 0; i < NP; i++)
        VT_CHECK(memcmp(sh->w[UNINTERRUPTED][i], sh->w[RESUMED][i], pnumel[i] * 8) == 0,
                 "'%s' after a resumption differs from the uninterrupted run", pnames[i]);
    veil_test_log("w1[0]: uninterrupted %.10f resumed %.10f initial %.10f",
                  sh->w[UNINTERRUPTED][0][0], sh->w[RESUMED][0][0], w0[0][0]);
    VT_CHECK(memcmp(sh->seed[RESUMED], sh->seed[KILLED], 16) == 0 &&
                 memcmp(sh->seed[KILLED], sh->seed[UNINTERRUPTED], 16) != 0,
             "the resumed run's joint seed differs from the checkpoint's (or two fresh draws "
             "were equal)");
    check_refusals();
    check_crashes();

    for (int id = 0; id < 3; id++) {
        char path[128];
        ckpt_path(path, sizeof path, id);
        unlink(path);
        strcat(path, ".final");
        VT_CHECK(access(path, F_OK) != 0, "process %d committed a final checkpoint without its "
                 "lost peer", id);
        unlink(path);
    }
    rmdir(dir);
    veil_plan_destroy(&plan);
    veil_plan_destroy(&other_plan);
    veil_test_mpc_shared_free(sh, sizeof *sh);
    return veil_test_status();
}

/*
 * example_run.c — the secure-inference driver the model examples share. Every process veil-run
 * starts (the parties and the dealer) builds the same graph, compiles the same plan, opens its side
 * of the session and makes the same calls: veil_party_prepare (the parameters shared before the
 * first run, so that run is as fast as the later ones; not with --cold), then the veil_run calls;
 * each party feeds only the leaves it owns. The data owner then checks what was revealed to it
 * against the plaintext executor, and every process prints what its runs cost, the last line as
 * key=value pairs.
 */
#include "models.h"

#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_RUNS 32

int example_parse_int(const char *s, long lo, long hi, long *out)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (*s == '\0' || *end != '\0' || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

static int usage(const struct example_cli *c, int code)
{
    FILE *f = code ? stderr : stdout;
    fprintf(f,
            "usage: veil-run -n N --dealer -- %s %s[OPTIONS]\n"
            "       %s preproc --parties N --session HEX --preproc FILE%%d [OPTIONS]\n"
            "       veil-run -n N --session HEX -- %s --preproc FILE%%d [OPTIONS]\n%s\n\n",
            c->prog, c->flags & CLI_TRAIN ? "[train] " : "", c->prog, c->prog, c->summary);
    if (c->flags & CLI_TRAIN)
        fprintf(f, "  train              secure training (SGD, lr 0.01, momentum 0.9;\n"
                   "                     --optimizer) on synthetic labelled batches instead of\n"
                   "                     inference: party 1 learns each step's loss, party 0 the\n"
                   "                     trained parameters, checked against the plaintext\n"
                   "                     fixed-point trainer\n\n");
    fprintf(f, "  preproc            the offline phase ahead of an inference session: writes every\n"
               "                     party's preprocessing file (FILE%%d, %%d the party id) for\n"
               "                     the session's --runs with the same model and pipeline options;\n"
               "                     the session then runs from them with no dealer\n\n");
    fprintf(f, "options:\n");
    fprintf(f, "  --small            %s\n", c->small_help);
    if (c->big_flag)
        fprintf(f, "  %-18s %s\n", c->big_flag, c->big_help);
    if (c->flags & CLI_WIDTH)
        fprintf(f, "  --width-div D      divide every channel count by D, 1..64 (default 1)\n");
    if (c->flags & CLI_MLP)
        fprintf(f, "  --layers W0,W1,..  layer widths, input first, 2..8 of 1..65536\n");
    if (c->flags & CLI_TRANSFORMER)
        fprintf(f, "  --hidden H --heads A --seq S --ff F   the layer's sizes (A divides H, "
                   "A <= 64)\n");
    fprintf(f,
            "  --batch B          %s per run, 1..64 (default 1)\n"
            "  --runs R           secure runs (train: SGD steps) in the session, 1..%d\n"
            "                     (default 2)\n"
            "  --microbatches K   the inter-batch pipeline: K micro-batches in flight (K divides\n"
            "                     the batch; not for the transformer, whose rows are tokens)\n"
            "  --lookahead L      linear layers submitted at most L ahead (0..64; default: no\n"
            "                     bound)\n"
            "  --serialized       the blocking baseline: no overlap across layers\n"
            "  --cold             no veil_party_prepare before the first run or step, which\n"
            "                     then shares the parameters itself (a cold first run)\n"
            "  --optimizer NAME   train: sgd (default), adam or adamw (lr 0.01, betas 0.9 and\n"
            "                     0.999, eps 1e-4; adamw: decoupled weight decay 0.01)\n"
            "  --preproc FILE%%d   inference: correlated randomness from the files `preproc` wrote\n"
            "                     (the session has no dealer); preproc: the files to write\n"
            "  --parties N        preproc: the session's party count, 2..16\n"
            "  --session HEX      preproc: the session id (32 hex digits; veil-run --session)\n"
            "  --config FILE      this process's session configuration (parties on real hosts;\n"
            "                     default: the environment veil-run sets)\n"
            "  -v                 print the compiled plan\n"
            "  -h, --help         this help\n"
            "Exit status: 0 ok, 1 a failed run or a disagreement, 2 bad usage.\n",
            c->flags & CLI_TRANSFORMER ? "sequences" : "images", MAX_RUNS);
    return code;
}

static int bad(const struct example_cli *c, const char *opt, const char *arg, const char *want)
{
    fprintf(stderr, "%s: %s%s%s%s: expected %s\nTry '%s --help'.\n", c->prog, arg ? "--" : "", opt,
            arg ? " " : "", arg ? arg : "", want, c->prog);
    return 2;
}

/* "784,128,10" into o->mlp. */
static int parse_layers(const char *s, struct model_opts *o)
{
    o->mlp_n = 0;
    while (*s) {
        char *end;
        long v = strtol(s, &end, 10);
        if (end == s || v < 1 || v > 65536 || o->mlp_n == 8 || (*end && *end != ','))
            return -1;
        o->mlp[o->mlp_n++] = (size_t)v;
        s = *end ? end + 1 : end;
    }
    return o->mlp_n >= 2 ? 0 : -1;
}

int example_parse(const struct example_cli *c, int argc, char **argv, struct model_opts *mo,
                  struct example_opts *eo, int *small)
{
    enum {
        O_SMALL = 256,
        O_BIG,
        O_WIDTH,
        O_LAYERS,
        O_HIDDEN,
        O_HEADS,
        O_SEQ,
        O_FF,
        O_BATCH,
        O_RUNS,
        O_CONFIG,
        O_MICRO,
        O_LOOKAHEAD,
        O_SERIALIZED,
        O_PREPROC,
        O_PARTIES,
        O_SESSION,
        O_OPTIMIZER,
        O_COLD
    };
    const struct option opts[] = {
        {"small", no_argument, NULL, O_SMALL},
        {c->big_flag ? c->big_flag + 2 : "big", no_argument, NULL, O_BIG},
        {"width-div", required_argument, NULL, O_WIDTH},
        {"layers", required_argument, NULL, O_LAYERS},
        {"hidden", required_argument, NULL, O_HIDDEN},
        {"heads", required_argument, NULL, O_HEADS},
        {"seq", required_argument, NULL, O_SEQ},
        {"ff", required_argument, NULL, O_FF},
        {"batch", required_argument, NULL, O_BATCH},
        {"runs", required_argument, NULL, O_RUNS},
        {"config", required_argument, NULL, O_CONFIG},
        {"microbatches", required_argument, NULL, O_MICRO},
        {"lookahead", required_argument, NULL, O_LOOKAHEAD},
        {"serialized", no_argument, NULL, O_SERIALIZED},
        {"preproc", required_argument, NULL, O_PREPROC},
        {"parties", required_argument, NULL, O_PARTIES},
        {"session", required_argument, NULL, O_SESSION},
        {"optimizer", required_argument, NULL, O_OPTIMIZER},
        {"cold", no_argument, NULL, O_COLD},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const int allowed[] = {[O_BIG - O_SMALL] = c->big_flag != NULL,
                           [O_WIDTH - O_SMALL] = c->flags & CLI_WIDTH,
                           [O_LAYERS - O_SMALL] = c->flags & CLI_MLP,
                           [O_HIDDEN - O_SMALL] = c->flags & CLI_TRANSFORMER,
                           [O_HEADS - O_SMALL] = c->flags & CLI_TRANSFORMER,
                           [O_SEQ - O_SMALL] = c->flags & CLI_TRANSFORMER,
                           [O_FF - O_SMALL] = c->flags & CLI_TRANSFORMER};
    int opt, idx;
    long v;
    *small = 0;
    eo->lookahead = VEIL_LOOKAHEAD_UNBOUNDED;
    opterr = 0;
    optind = 1;
    if ((c->flags & CLI_TRAIN) && argc > 1 &&
        (!strcmp(argv[1], "train") || !strcmp(argv[1], "infer"))) {
        mo->train = !strcmp(argv[1], "train");
        optind = 2;
    } else if (argc > 1 && !strcmp(argv[1], "preproc")) {
        eo->write_preproc = 1;
        optind = 2;
    }
    while ((opt = getopt_long(argc, argv, "vh", opts, &idx)) != -1) {
        if (opt >= O_BIG && opt <= O_FF && !allowed[opt - O_SMALL]) {
            char nm[32];
            snprintf(nm, sizeof nm, "--%s", opts[idx].name);
            return bad(c, nm, NULL, "one of the options in --help");
        }
        switch (opt) {
        case O_SMALL:
            *small = 1;
            break;
        case O_BIG:
            mo->big = 1;
            break;
        case 'v':
            eo->verbose = 1;
            break;
        case O_CONFIG:
            eo->config = optarg;
            break;
        case O_MICRO:
            if (example_parse_int(optarg, 1, 64, &v) != 0)
                return bad(c, opts[idx].name, optarg, "1..64");
            eo->microbatches = (int)v;
            break;
        case O_LOOKAHEAD:
            if (example_parse_int(optarg, 0, VEIL_LOOKAHEAD_MAX, &v) != 0)
                return bad(c, opts[idx].name, optarg, "0..64");
            eo->lookahead = (int)v;
            break;
        case O_SERIALIZED:
            eo->serialized = 1;
            break;
        case O_COLD:
            eo->cold = 1;
            break;
        case O_PREPROC:
            if (!strstr(optarg, "%d"))
                return bad(c, "preproc", optarg, "a file pattern with %d (the party id)");
            eo->preproc = optarg;
            break;
        case O_PARTIES:
            if (!eo->write_preproc || example_parse_int(optarg, 2, 16, &v) != 0)
                return bad(c, "parties", optarg, "2..16, with the preproc mode");
            eo->parties = (int)v;
            break;
        case O_SESSION:
            if (!eo->write_preproc || example_parse_session(optarg, NULL) != 0)
                return bad(c, "session", optarg, "32 hex digits, with the preproc mode");
            eo->session = optarg;
            break;
        case O_OPTIMIZER:
            eo->optimizer = !strcmp(optarg, "sgd")     ? VEIL_OPTIMIZER_SGD
                            : !strcmp(optarg, "adam")  ? VEIL_OPTIMIZER_ADAM
                            : !strcmp(optarg, "adamw") ? VEIL_OPTIMIZER_ADAMW
                                                       : -1;
            if (eo->optimizer < 0 || !mo->train)
                return bad(c, "optimizer", optarg, "sgd, adam or adamw, with train");
            break;
        case 'h':
            return usage(c, 0);
        case O_LAYERS:
            if (parse_layers(optarg, mo) != 0)
                return bad(c, "layers", optarg, "2..8 comma-separated widths of 1..65536");
            break;
        case O_WIDTH:
        case O_BATCH:
        case O_RUNS:
            if (example_parse_int(optarg, 1, opt == O_RUNS ? MAX_RUNS : 64, &v) != 0)
                return bad(c, opts[idx].name, optarg, opt == O_RUNS ? "1..32" : "1..64");
            *(opt == O_WIDTH ? &mo->width_div : opt == O_BATCH ? &mo->batch : &eo->runs) = (int)v;
            break;
        case O_HIDDEN:
        case O_HEADS:
        case O_SEQ:
        case O_FF:
            if (example_parse_int(optarg, 1, opt == O_HEADS ? 64 : 65536, &v) != 0)
                return bad(c, opts[idx].name, optarg, opt == O_HEADS ? "1..64" : "1..65536");
            *(opt == O_HIDDEN  ? &mo->hidden
              : opt == O_HEADS ? &mo->heads
              : opt == O_SEQ   ? &mo->seq
                               : &mo->ff) = (size_t)v;
            break;
        default:
            return bad(c, argv[optind - 1], NULL, "one of the options in --help");
        }
    }
    if (optind != argc)
        return bad(c, argv[optind], NULL, "no arguments after the options");
    if (eo->write_preproc && (!eo->preproc || !eo->parties || !eo->session))
        return bad(c, "preproc", NULL, "--parties N, --session HEX and --preproc FILE%d");
    if (eo->preproc && mo->train)
        return bad(c, "preproc", eo->preproc, "an inference session (not train)");
    return -1;
}

int example_parse_session(const char *hex, uint8_t sid[16])
{
    if (strlen(hex) != 32)
        return -1;
    for (int i = 0; i < 32; i++) {
        const char ch = hex[i];
        const int d = ch >= '0' && ch <= '9'   ? ch - '0'
                      : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10
                      : ch >= 'A' && ch <= 'F' ? ch - 'A' + 10
                                               : -1;
        if (d < 0)
            return -1;
        if (sid)
            sid[i / 2] = (uint8_t)(i % 2 ? sid[i / 2] | d : d << 4);
    }
    return 0;
}

/* Compiles m with eo's pipeline settings (inference: weight-stationary); NULL after printing why. */
static veil_plan_t *compile(const struct model *m, const struct example_opts *eo, int training)
{
    struct veil_compile_options co;
    veil_compile_options_defaults(&co);
    co.training = training;
    co.weight_stationary = !training; /* inference: each weight's mask opened once per session */
    if (eo->microbatches > 0)
        co.microbatches = eo->microbatches;
    co.lookahead = eo->lookahead;
    co.serialized = eo->serialized;
    co.optimizer = eo->optimizer;
    /* Adam divides by sqrt(vhat + eps): eps 1e-4 (655 ulps at f = 16 under the square root) keeps
     * the truncations' few ulps of gradient error from moving a step by a good part of lr, as
     * the default 1e-8 (6.5 ulps) does (README, "Secure training") */
    co.eps = 1e-4;
    if (eo->optimizer == VEIL_OPTIMIZER_ADAMW)
        co.weight_decay = 0.01;
    veil_plan_t *plan = veil_compile(m->g, &co);
    if (!plan)
        fprintf(stderr, "%s: compile: %s\n", m->name, veil_last_error());
    else if (eo->verbose)
        veil_plan_print(plan, stdout);
    return plan;
}

veil_party_t *example_open(const struct model *m, const struct example_opts *eo, int training,
                           veil_plan_t **plan)
{
    /* Line by line: veil-run forwards each line as it comes, and stops the other processes when
     * one fails, which would lose a block-buffered tail. */
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (!(*plan = compile(m, eo, training)))
        return NULL;
    struct veil_party_options po;
    veil_party_options_defaults(&po);
    po.config_path = eo->config;
    if (eo->preproc && !training) { /* the offline phase was run ahead: no dealer */
        po.material = VEIL_MATERIAL_FILE;
        po.preproc_path = eo->preproc;
    }
    veil_party_t *pt = veil_party_open(*plan, &po);
    if (!pt) {
        fprintf(stderr, "%s: %s\n", m->name, veil_last_error());
        /* the hint only where it applies: neither a configuration file nor veil-run's identity */
        if (!eo->config && !getenv("VEIL_PARTY_ID"))
            fprintf(stderr, "(start every process with the launcher: veil-run -n 2 --dealer -- "
                            "%s%s ..., or give each --config FILE)\n", m->name,
                    training ? " train" : "");
        veil_plan_destroy(plan);
    }
    return pt;
}

static double max_diff(const double *a, const double *b, size_t n)
{
    double worst = 0;
    for (size_t i = 0; i < n; i++) {
        double e = fabs(a[i] - b[i]);
        worst = isnan(e) ? INFINITY : fmax(worst, e);
    }
    return worst;
}

/*
 * The data owner's check of run `run`: the plaintext executor on every party's data, in FIXED
 * mode (what the secure run computes, up to its truncations' 1-ulp errors) and in DOUBLE mode
 * (the float model). Only this demonstration can do this: it made up every party's data, so
 * party 1 can regenerate party 0's weights. A real data owner sees only its revealed output.
 */
static int check_run(const struct model *m, const veil_plan_t *plan, int run, double *const *got,
                     double *fixed_err, double *double_err, double *out_abs)
{
    const size_t nout = veil_plan_output_count(plan);
    struct veil_feed *all = NULL;
    size_t nall = 0;
    double *want[4] = {0}, *flt[4] = {0};
    int rc = model_feeds(m, -1, run, 1, &all, &nall);
    for (size_t k = 0; k < nout && k < 4 && rc == VEIL_OK; k++) {
        want[k] = malloc(veil_plan_output_numel(plan, k) * sizeof(double));
        flt[k] = malloc(veil_plan_output_numel(plan, k) * sizeof(double));
        if (!want[k] || !flt[k])
            rc = VEIL_ERR_NOMEM;
    }
    if (rc == VEIL_OK)
        rc = veil_plain_run(plan, VEIL_PLAIN_FIXED, all, nall, want);
    if (rc == VEIL_OK)
        rc = veil_plain_run(plan, VEIL_PLAIN_DOUBLE, all, nall, flt);
    if (rc == VEIL_OK) {
        for (size_t k = 0; k < nout && k < 4; k++) {
            const size_t n = veil_plan_output_numel(plan, k);
            *fixed_err = fmax(*fixed_err, max_diff(got[k], want[k], n));
            *double_err = fmax(*double_err, max_diff(got[k], flt[k], n));
            for (size_t i = 0; i < n; i++)
                *out_abs = fmax(*out_abs, fabs(flt[k][i]));
        }
    } else {
        fprintf(stderr, "%s: plaintext reference of run %d: %s\n", m->name, run, veil_last_error());
    }
    for (size_t k = 0; k < 4; k++) {
        free(want[k]);
        free(flt[k]);
    }
    model_feeds_free(&all, nall);
    return rc;
}

int example_prepare(const struct model *m, veil_party_t *pt, const char *first, double *secs)
{
    struct veil_feed *feeds = NULL;
    size_t nf = 0;
    int rc =
        veil_party_is_dealer(pt) ? VEIL_OK : model_feeds(m, veil_party_id(pt), 0, 1, &feeds, &nf);
    if (rc == VEIL_OK)
        rc = veil_party_prepare(pt, feeds, nf);
    model_feeds_free(&feeds, nf);
    if (rc != VEIL_OK) {
        fprintf(stderr, "%s: prepare: %s\n", m->name, veil_last_error());
        return rc;
    }
    struct veil_run_stats st;
    veil_party_last_stats(pt, &st);
    *secs = st.online_s;
    printf("prepare: %.3f s, sent %" PRIu64 " bytes, received %" PRIu64 " (%" PRIu64
           " from the dealer), %" PRIu64 " rounds: the parameters shared before the first %s\n",
           st.online_s, st.bytes_sent, st.bytes_recv, st.dealer_bytes_recv, st.rounds, first);
    return VEIL_OK;
}

/* The secure runs; got[run][k] receives output k of each run at the data owner. */
static int secure_runs(const struct model *m, veil_party_t *pt, const veil_plan_t *plan, int runs,
                       int cold, double *(*got)[4], struct veil_run_stats *st,
                       struct veil_run_profile *prof)
{
    const int id = veil_party_id(pt), dealer = veil_party_is_dealer(pt);
    for (int run = 0; run < runs; run++) {
        struct veil_feed *feeds = NULL;
        size_t nf = 0;
        /* the parameters only where this run shares them: the first of a --cold session */
        int rc = dealer ? VEIL_OK : model_feeds(m, id, run, run == 0 && cold, &feeds, &nf);
        if (rc == VEIL_OK)
            rc = veil_run(pt, feeds, nf, got[run]);
        model_feeds_free(&feeds, nf);
        if (rc != VEIL_OK) {
            fprintf(stderr, "%s: secure run %d: %s\n", m->name, run, veil_last_error());
            return rc;
        }
        veil_party_last_stats(pt, &st[run]);
        printf("run %d: online %.4f s, sent %" PRIu64 " bytes, received %" PRIu64 " (%" PRIu64
               " from the dealer), %" PRIu64 " rounds\n",
               run, st[run].online_s, st[run].bytes_sent, st[run].bytes_recv,
               st[run].dealer_bytes_recv, st[run].rounds);
        /* with tracing on (VEIL_TRACE): busy and overlap of the run, from its events */
        example_print_busy(pt, "run", run, prof);
    }
    return VEIL_OK;
}

int example_preproc(const struct model *m, const struct example_opts *eo)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    const int runs = eo->runs > 0 ? (eo->runs < MAX_RUNS ? eo->runs : MAX_RUNS) : 2;
    uint8_t sid[16];
    if (example_parse_session(eo->session, sid) != 0)
        return 1; /* example_parse checked it */
    veil_plan_t *plan = compile(m, eo, 0);
    if (!plan)
        return 1;
    uint64_t items = 0, bytes = 0;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int rc = veil_plan_preproc_files(plan, eo->parties, runs, sid, eo->preproc, &items, &bytes);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    veil_plan_destroy(&plan);
    if (rc != VEIL_OK) {
        fprintf(stderr, "%s: preproc: %s\n", m->name, veil_last_error());
        return 1;
    }
    const double secs = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    printf("%s (%s): offline phase: %d parties' files for %d runs (%" PRIu64 " items, %.1f MB of "
           "correlated randomness) in %.2f s; run the session with the same options and\n"
           "  veil-run -n %d --session %s -- %s --preproc %s --runs %d\n",
           m->name, m->shape, eo->parties, runs, items, (double)bytes / 1e6, secs, eo->parties,
           eo->session, m->name, eo->preproc, runs);
    printf("model=%s parties=%d runs=%d offline_s=%.3f preproc_items=%" PRIu64
           " preproc_bytes=%" PRIu64 "\n",
           m->name, eo->parties, runs, secs, items, bytes);
    return 0;
}

int example_run(struct model *m, const struct model_opts *mo, const struct example_opts *eo)
{
    const int runs = eo->runs > 0 ? (eo->runs < MAX_RUNS ? eo->runs : MAX_RUNS) : 2;
    const int batch = mo->batch > 0 ? mo->batch : 1;
    double *got[MAX_RUNS][4] = {{0}};
    struct veil_run_stats st[MAX_RUNS] = {{0}};
    veil_plan_t *plan = NULL;
    veil_party_t *pt = example_open(m, eo, 0, &plan);
    if (!pt)
        return 1;
    const int id = veil_party_id(pt), nparties = veil_party_nparties(pt);
    const int dealer = veil_party_is_dealer(pt), owner = !dealer && id == DATA_OWNER;
    const size_t nout = veil_plan_output_count(plan);
    int code = 0;
    if (owner)
        for (int r = 0; r < runs; r++)
            for (size_t k = 0; k < nout && k < 4; k++)
                if (!(got[r][k] = calloc(veil_plan_output_numel(plan, k), sizeof(double))))
                    code = 1;
    uint64_t items = 0, dealer_bytes = 0;
    if (veil_plan_preproc(plan, nparties, &items, &dealer_bytes) != VEIL_OK)
        fprintf(stderr, "%s: preprocessing count: %s\n", m->name, veil_last_error());
    printf("%s (%s), batch %d, %d parties%s: %zu plan leaves; preprocessing per run: %" PRIu64
           " items, %.1f MB from the dealer\n",
           m->name, m->shape, batch, nparties, dealer ? ", this is the dealer" : "",
           veil_plan_leaf_count(plan), items, (double)dealer_bytes / 1e6);
    struct veil_run_profile prof = {.run = -1};
    double prepare_s = -1; /* --cold: none */
    if (code == 0 && !eo->cold && example_prepare(m, pt, "run", &prepare_s) != VEIL_OK)
        code = 1;
    if (code == 0 && secure_runs(m, pt, plan, runs, eo->cold, got, st, &prof) != VEIL_OK)
        code = 1;
    if (veil_party_close(&pt) != VEIL_OK && code == 0) { /* the dealer learns it here */
        fprintf(stderr, "%s: %s\n", m->name, veil_last_error());
        code = 1;
    }

    /* Only the data owner learns the outputs; it checks them once StarPU is down, so that the
     * plaintext executor does not compete with the other parties' workers. */
    double fixed_err = 0, double_err = 0, out_abs = 0;
    int agree = 0;
    if (owner && code == 0) {
        for (int r = 0; r < runs && code == 0; r++)
            if (check_run(m, plan, r, got[r], &fixed_err, &double_err, &out_abs) != VEIL_OK)
                code = 1;
        agree = code == 0 && fixed_err <= m->tol;
        printf("check: secure vs plaintext FIXED: max error %.3g (tolerance %.3g): %s; vs DOUBLE:"
               " %.3g (outputs up to %.3g)\n",
               fixed_err, m->tol, agree ? "agree" : "DISAGREE", double_err, out_abs);
        if (!agree)
            code = 1;
        if (code == 0 && !(out_abs > 0)) { /* every output 0: a check of nothing */
            fprintf(stderr,
                    "%s: check: every plaintext output is 0, so the comparison checked "
                    "nothing (degenerate inputs or weights)\n",
                    m->name);
            code = 1;
        }
    }
    if (code == 0) { /* no summary of a failed run: its figures would be zeros, not results */
        const struct veil_run_stats *last = &st[runs - 1];
        char who[16] = "dealer";
        if (!dealer)
            snprintf(who, sizeof who, "%d", id);
        printf("model=%s parties=%d party=%s batch=%d runs=%d", m->name, nparties, who, batch,
               runs);
        if (owner)
            printf(" max_err=%.3g double_err=%.3g agree=%d", fixed_err, double_err, agree);
        printf(" online_s=%.3f first_online_s=%.3f bytes_sent=%" PRIu64 " rounds=%" PRIu64
               " preproc_items=%" PRIu64 " preproc_bytes=%" PRIu64,
               last->online_s, st[0].online_s, last->bytes_sent, last->rounds, items, dealer_bytes);
        if (prepare_s >= 0)
            printf(" prepare_s=%.3f", prepare_s);
        if (prof.run == runs - 1) /* the last run's profile (tracing on) */
            example_print_busy_fields(&prof);
        printf("\n");
    }
    for (int r = 0; r < MAX_RUNS; r++)
        for (int k = 0; k < 4; k++)
            free(got[r][k]);
    veil_plan_destroy(&plan);
    return code;
}

/*
 * veil-onnx — ONNX models in Veil. `check MODEL.onnx`: the graph as Veil imports it (each ONNX
 * node with its op, the DSL node it became and its shape; inputs, parameters and their owners;
 * unsupported nodes) and the compiled plan's cost per inference (veil-onnx-check.c). `strip
 * MODEL.onnx -o PUBLIC.onnx`: the model without its parameters' values. `run MODEL.onnx [--fixed] IN... -o
 * OUT...`: plaintext inference in double or in the secure run's fixed point; with --secure,
 * under veil-run, one party of a secure inference (the model owner reads MODEL.onnx, every other
 * process the stripped model given by --public). IN and OUT are ONNX TensorProto files (.pb) or
 * .npy; inputs bind to the model's graph inputs in order, integer ones (shapes) being public;
 * with --batch N, inputs whose first dimension counts examples run N at a time.
 * `check-ranges MODEL.onnx IN...`: the step before deploying, per node the largest values the
 * sample inputs reach against the ring's limit and each op's domain (veil-onnx-ranges.c).
 * Exit status: 0 done, 1 error, 2 usage, 3 the model uses something Veil does not import, 4 an
 * input is outside the fixed-point range of the secure run (check-ranges: a node is OVER).
 */
#include "config.h"

#include "veil.h"
#include "veil/onnx.h"
#include "tools/veil_onnx_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_IO 64

int usage(void)
{
    fprintf(stderr,
            "usage: veil-onnx check MODEL.onnx [--nparties N] [--batch N]\n"
            "       veil-onnx check-ranges MODEL.onnx [--frac-bits F] [--batch N]\n"
            "            IN.pb|IN.npy...\n"
            "       veil-onnx strip MODEL.onnx -o PUBLIC.onnx\n"
            "       veil-onnx run MODEL.onnx [--fixed] [--frac-bits F] [--batch N]\n"
            "            IN.pb|IN.npy... -o OUT...\n"
            "       veil-run -n N --dealer -- veil-onnx run --secure MODEL.onnx --public "
            "PUBLIC.onnx\n"
            "            [--model-owner I] [--data-owner J] [--config FILE] [--microbatches K]\n"
            "            [--lookahead L] [--batch N [--count M]] [-v] IN... -o OUT...\n"
            "  --batch N: the inputs' first dimension counts examples, run N at a time (the\n"
            "  model's first input dimension taken as N); --count M: the number of examples,\n"
            "  for the parties that do not read the inputs\n"
            "supported ONNX ops: %s\n",
            veil_onnx_supported_ops());
    return 2;
}

int exit_code(int rc)
{
    if (rc == VEIL_ERR_UNSUPPORTED) /* the library's message names the node and its op type */
        fprintf(stderr, "veil-onnx: supported ONNX ops: %s\n", veil_onnx_supported_ops());
    return rc == VEIL_ERR_UNSUPPORTED ? 3 : rc == VEIL_ERR_RANGE ? 4 : 1;
}

static int cmd_strip(int argc, char **argv)
{
    const char *in = NULL, *out = NULL;
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "-o") && i + 1 < argc)
            out = argv[++i];
        else if (!in)
            in = argv[i];
        else
            return usage();
    }
    if (!in || !out)
        return usage();
    int rc = veil_onnx_strip(in, out, NULL);
    if (rc != VEIL_OK) {
        fprintf(stderr, "veil-onnx strip: %s\n", veil_last_error());
        return exit_code(rc);
    }
    return 0;
}

struct run_args {
    const char *model, *pub, *config;
    const char *in[MAX_IO], *out[MAX_IO];
    int nin, nout, fixed, secure, model_owner, data_owner, frac_bits, verbose;
    int microbatches, lookahead; /* the pipeline options of the secure run */
    size_t batch, count;         /* --batch N: runs of N examples; --count M: examples (parties
                                    that do not read the inputs) */
};

/* A size option's value (1 to 2^31), or 0 for a bad one. */
static size_t size_arg(const char *s)
{
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    return *s && *s != '-' && !*end && v >= 1 && v <= (1ULL << 31) ? (size_t)v : 0;
}

static int parse_run(int argc, char **argv, struct run_args *a)
{
    memset(a, 0, sizeof *a);
    a->data_owner = 1;
    a->frac_bits = VEIL_FIXED_FRAC_BITS_DEFAULT;
    a->microbatches = 1;
    a->lookahead = VEIL_LOOKAHEAD_UNBOUNDED;
    for (int i = 0; i < argc; i++) {
        const char *s = argv[i];
        int more = i + 1 < argc;
        if (!strcmp(s, "--fixed"))
            a->fixed = 1;
        else if (!strcmp(s, "--double"))
            a->fixed = 0;
        else if (!strcmp(s, "--secure"))
            a->secure = 1;
        else if (!strcmp(s, "-v"))
            a->verbose = 1;
        else if (!strcmp(s, "--public") && more)
            a->pub = argv[++i];
        else if (!strcmp(s, "--config") && more)
            a->config = argv[++i];
        else if (!strcmp(s, "--model-owner") && more)
            a->model_owner = atoi(argv[++i]);
        else if (!strcmp(s, "--data-owner") && more)
            a->data_owner = atoi(argv[++i]);
        else if (!strcmp(s, "--microbatches") && more)
            a->microbatches = atoi(argv[++i]);
        else if (!strcmp(s, "--lookahead") && more)
            a->lookahead = atoi(argv[++i]);
        else if ((!strcmp(s, "--batch") || !strcmp(s, "--count")) && more) {
            size_t v = size_arg(argv[++i]);
            if (!v)
                return usage();
            *(s[2] == 'b' ? &a->batch : &a->count) = v;
        } else if (!strcmp(s, "--frac-bits") && more)
            a->frac_bits = atoi(argv[++i]);
        else if (!strcmp(s, "-o") && more && a->nout < MAX_IO)
            a->out[a->nout++] = argv[++i];
        else if (s[0] == '-')
            return usage();
        else if (!a->model)
            a->model = s;
        else if (a->nin < MAX_IO)
            a->in[a->nin++] = s;
        else
            return usage();
    }
    if (!a->model || a->frac_bits < 1 || a->frac_bits > 30)
        return usage();
    return 0;
}

/* Reads the input files: integer ones become known (public) tensors for the loader; float ones
 * are kept for the run when read (read_secret). */
int veil_onnx_cli_inputs(const char *model, int nin, char (*names)[128], int *is_int, int max)
{
    int n = veil_onnx_list_inputs(model, names, is_int, max);
    if (n < 0) {
        fprintf(stderr, "veil-onnx: %s\n", veil_last_error());
        return 1;
    }
    if (n != nin) {
        fprintf(stderr, "veil-onnx: the model has %d graph inputs, %d files given\n", n, nin);
        return 2;
    }
    for (int i = 0; i < n; i++)
        if (is_int[i] < 0) {
            fprintf(stderr, "veil-onnx: graph input '%s' is not a tensor\n", names[i]);
            return 3;
        }
    return 0;
}

static int read_inputs(const struct run_args *a, const char *model, int read_secret,
                       struct veil_onnx_tensor *t, int *is_known)
{
    char names[MAX_IO][128];
    int is_int[MAX_IO];
    int n = a->nin, rc0 = veil_onnx_cli_inputs(model, n, names, is_int, MAX_IO);
    if (rc0 != 0)
        return rc0;
    for (int i = 0; i < n; i++) {
        is_known[i] = is_int[i];
        memset(&t[i], 0, sizeof t[i]);
        if (!is_int[i] && !read_secret)
            continue;
        int rc = veil_onnx_tensor_read(a->in[i], &t[i]);
        if (rc != VEIL_OK) {
            fprintf(stderr, "veil-onnx: %s\n", veil_last_error());
            return exit_code(rc);
        }
        snprintf(t[i].name, sizeof t[i].name, "%s", names[i]);
    }
    return 0;
}

/* Writes output i of each (values outs[i]; with --batch, count examples instead of the batch). */
static int write_outputs(const struct run_args *a, veil_onnx_model_t *m, double *const *outs,
                         size_t count)
{
    size_t no = veil_onnx_output_count(m);
    if ((size_t)a->nout > no) {
        fprintf(stderr, "veil-onnx: %d output files for %zu outputs\n", a->nout, no);
        return 2;
    }
    for (size_t i = 0; i < (size_t)a->nout; i++) {
        struct veil_onnx_tensor t;
        memset(&t, 0, sizeof t);
        t.ndim = veil_onnx_output_shape(m, i, t.dims);
        if (a->batch)
            t.dims[0] = count;
        t.numel = 1;
        for (int k = 0; k < t.ndim; k++)
            t.numel *= t.dims[k];
        t.values = outs[i];
        snprintf(t.name, sizeof t.name, "%s", veil_onnx_output_name(m, i));
        if (veil_onnx_tensor_write(a->out[i], &t) != VEIL_OK) {
            fprintf(stderr, "veil-onnx: %s\n", veil_last_error());
            return 1;
        }
    }
    return 0;
}

/* One run over the inputs in batches: the state of the loop over them. */
struct batches {
    size_t count, nb;         /* examples (with --batch), batches */
    size_t in_row[MAX_IO];    /* per secret input file: values per example (0: not batched) */
    size_t out_row[MAX_IO];   /* per output: values per example */
    double *in_buf[MAX_IO];   /* per input file: one batch */
    double *outs[MAX_IO];     /* per output: one batch */
    double *all[MAX_IO];      /* per output: every example */
};

/* With --batch, the examples each secret input holds (its first dimension, the same for all;
 * --count for the parties that do not read them) and the outputs' rows; every output must have
 * the batch as its first dimension. 0, or an exit code after printing why. */
static int plan_batches(const struct run_args *a, veil_onnx_model_t *m, const veil_plan_t *plan,
                        const struct veil_onnx_tensor *t, const int *is_known, struct batches *bt)
{
    size_t no = veil_onnx_output_count(m);
    bt->count = a->count;
    bt->nb = 1;
    for (size_t i = 0; i < no && i < MAX_IO; i++)
        bt->out_row[i] = veil_plan_output_numel(plan, i);
    if (!a->batch)
        return 0;
    for (int i = 0, j = 0; i < a->nin; i++) {
        if (is_known[i])
            continue;
        size_t d[VEIL_MAX_DIMS], per = 1;
        int nd = veil_onnx_input_shape(m, (size_t)j++, d);
        for (int k = 1; k < nd; k++)
            per *= d[k];
        bt->in_row[i] = per;
        if (!t[i].values)
            continue;
        size_t c = t[i].ndim ? t[i].dims[0] : 0;
        if (nd < 1 || t[i].numel != c * per || (bt->count && c != bt->count)) {
            fprintf(stderr, "veil-onnx: %s: %zu values; with --batch %zu it must hold %zu "
                    "values per example%s\n", a->in[i], t[i].numel, a->batch, per,
                    bt->count ? " and as many examples as the other inputs (--count)" : "");
            return 2;
        }
        bt->count = c;
    }
    if (!bt->count) {
        fprintf(stderr, "veil-onnx: --batch: give this party the number of examples (--count "
                "M): it does not read the inputs\n");
        return 2;
    }
    for (size_t i = 0; i < no && i < MAX_IO; i++) {
        size_t d[VEIL_MAX_DIMS];
        int nd = veil_onnx_output_shape(m, i, d);
        if (nd < 1 || d[0] != a->batch) {
            fprintf(stderr, "veil-onnx: --batch %zu: output '%s' does not have the batch as its "
                    "first dimension\n", a->batch, veil_onnx_output_name(m, i));
            return 3;
        }
        bt->out_row[i] /= a->batch;
    }
    bt->nb = (bt->count + a->batch - 1) / a->batch;
    return 0;
}

/* The input feeds of batch b (rows b*N.. of each batched input, zero-padded); the outputs of the
 * batch copied into place by store_batch. */
static void load_batch(const struct run_args *a, const struct veil_onnx_tensor *t,
                       struct batches *bt, size_t b, struct veil_feed *f)
{
    for (int i = 0; i < a->nin; i++) {
        if (!bt->in_row[i] || !t[i].values || !f[i].values)
            continue;
        size_t rows = bt->count - b * a->batch < a->batch ? bt->count - b * a->batch : a->batch;
        memset(bt->in_buf[i], 0, a->batch * bt->in_row[i] * sizeof(double));
        memcpy(bt->in_buf[i], t[i].values + b * a->batch * bt->in_row[i],
               rows * bt->in_row[i] * sizeof(double));
    }
}

static void store_batch(const struct run_args *a, size_t no, struct batches *bt, size_t b)
{
    size_t rows = bt->count - b * a->batch < a->batch ? bt->count - b * a->batch : a->batch;
    for (size_t i = 0; i < no && i < MAX_IO; i++)
        memcpy(bt->all[i] + b * a->batch * bt->out_row[i], bt->outs[i],
               rows * bt->out_row[i] * sizeof(double));
}

/* Runs the plan on every batch: plaintext, or as this party of a secure session; writes the
 * outputs (the data owner, or the plaintext run). Returns the exit code. */
static int run_plan(const struct run_args *a, veil_onnx_model_t *m, veil_plan_t *plan,
                    const struct veil_onnx_tensor *t, const int *is_known, int party)
{
    size_t nf, no = veil_onnx_output_count(m);
    const struct veil_feed *pf = veil_onnx_param_feeds(m, &nf);
    struct veil_feed *feeds = calloc(nf + (size_t)a->nin + 1, sizeof *feeds);
    struct veil_feed inf[MAX_IO] = {{0}}; /* per input file: its feed (values NULL: none) */
    struct batches bt;
    memset(&bt, 0, sizeof bt);
    int rc = feeds ? plan_batches(a, m, plan, t, is_known, &bt) : 1;
    size_t k = 0;
    for (size_t i = 0; !rc && i < nf; i++)
        feeds[k++] = pf[i];
    double lim = ldexp(1.0, 31 - a->frac_bits);
    for (int i = 0, j = 0; !rc && i < a->nin; i++) {
        if (is_known[i])
            continue;
        size_t idx = (size_t)j++;
        if (!t[i].values)
            continue;
        for (size_t e = 0; e < t[i].numel; e++)
            if ((a->fixed || a->secure) && !(fabs(t[i].values[e]) < lim)) {
                fprintf(stderr,
                        "veil-onnx: input %s: value %g is outside +-2^%d, the range of "
                        "the secure run at %d fractional bits\n",
                        a->in[i], t[i].values[e], 31 - a->frac_bits, a->frac_bits);
                rc = 4;
                break;
            }
        size_t per = a->batch ? a->batch * bt.in_row[i] : t[i].numel;
        if (!rc && a->batch && !(bt.in_buf[i] = calloc(per, sizeof(double))))
            rc = 1;
        inf[i] = (struct veil_feed){veil_onnx_input_leaf(m, idx),
                                    a->batch ? bt.in_buf[i] : t[i].values, per};
        feeds[k++] = inf[i];
    }
    for (size_t i = 0; i < no && i < MAX_IO && !rc; i++)
        if (!(bt.outs[i] = calloc(veil_plan_output_numel(plan, i), sizeof(double))) ||
            !(bt.all[i] = a->batch ? calloc(bt.count * bt.out_row[i], sizeof(double))
                                   : bt.outs[i]))
            rc = 1;
    veil_party_t *me = NULL;
    if (!rc && a->secure) {
        struct veil_party_options po;
        veil_party_options_defaults(&po);
        po.config_path = a->config;
        if (!(me = veil_party_open(plan, &po))) {
            fprintf(stderr,
                    "veil-onnx: %s\n(run it under the launcher: veil-run -n 2 --dealer "
                    "-- veil-onnx run --secure ...)\n",
                    veil_last_error());
            rc = 1;
        }
    }
    unsigned long long rounds = 0, sent = 0, recvd = 0;
    double secs = 0;
    for (size_t b = 0; !rc && b < bt.nb; b++) {
        if (a->batch)
            load_batch(a, t, &bt, b, inf);
        int st = me ? veil_run(me, feeds, k, bt.outs)
                    : veil_plain_run(plan, a->fixed ? VEIL_PLAIN_FIXED : VEIL_PLAIN_DOUBLE,
                                     feeds, k, bt.outs);
        struct veil_run_stats rs;
        if (st == VEIL_OK && me && veil_party_last_stats(me, &rs) == VEIL_OK)
            rounds += rs.rounds, sent += rs.bytes_sent, recvd += rs.bytes_recv,
                secs += rs.online_s;
        if (st != VEIL_OK) {
            fprintf(stderr, "veil-onnx: %srun: %s\n", me ? "secure " : "", veil_last_error());
            rc = exit_code(st);
        } else if (a->batch) {
            store_batch(a, no, &bt, b);
        }
    }
    if (me) {
        if (!rc && a->verbose)
            printf("party %d: %.3f s, %llu rounds, %llu bytes sent, %llu received (%zu runs)\n",
                   party, secs, rounds, sent, recvd, bt.nb);
        int cl = veil_party_close(&me);
        if (!rc && cl != VEIL_OK) {
            fprintf(stderr, "veil-onnx: secure run: %s\n", veil_last_error());
            rc = exit_code(cl);
        }
    }
    if (!rc && (!a->secure || party == a->data_owner))
        rc = write_outputs(a, m, bt.all, bt.count);
    for (size_t i = 0; i < MAX_IO; i++) {
        if (bt.all[i] != bt.outs[i])
            free(bt.all[i]);
        free(bt.outs[i]);
        free(bt.in_buf[i]);
    }
    free(feeds);
    return rc;
}

static int cmd_run(int argc, char **argv)
{
    struct run_args a;
    if (parse_run(argc, argv, &a))
        return 2;
    if (!a.secure && !a.batch) {
        int st = veil_onnx_run_files(a.model, a.in, a.nin, a.out, a.nout,
                                     a.fixed ? VEIL_PLAIN_FIXED : VEIL_PLAIN_DOUBLE, a.frac_bits);
        if (st != VEIL_OK)
            fprintf(stderr, "veil-onnx: %s\n", veil_last_error());
        return st == VEIL_OK ? 0 : exit_code(st);
    }
    int party = -1;
    const char *model = a.model;
    if (a.secure) {
        const char *id = getenv("VEIL_PARTY_ID");
        party = id ? atoi(id) : -1;
        if (party != a.model_owner) {
            if (!a.pub) {
                fprintf(stderr,
                        "veil-onnx: party %d is not the model owner: give it the "
                        "stripped model with --public PUBLIC.onnx\n",
                        party);
                return 2;
            }
            model = a.pub;
        }
    }
    struct veil_onnx_tensor t[MAX_IO];
    int is_known[MAX_IO], nk = 0;
    struct veil_onnx_tensor known[MAX_IO];
    int rc = read_inputs(&a, model, !a.secure || party == a.data_owner, t, is_known);
    for (int i = 0; !rc && i < a.nin; i++)
        if (is_known[i])
            known[nk++] = t[i];
    veil_onnx_model_t *m = NULL;
    veil_plan_t *plan = NULL;
    if (!rc) {
        struct veil_onnx_options o;
        veil_onnx_options_defaults(&o);
        o.model_owner = a.model_owner;
        o.data_owner = a.data_owner;
        o.known = known;
        o.nknown = (size_t)nk;
        o.batch = a.batch;
        if (a.secure)
            o.weights = party == a.model_owner;
        int st = veil_onnx_load(model, &o, &m);
        if (st != VEIL_OK) {
            fprintf(stderr, "veil-onnx: %s\n", veil_last_error());
            rc = exit_code(st);
        }
    }
    if (!rc) {
        struct veil_compile_options co;
        veil_compile_options_defaults(&co);
        co.frac_bits = a.frac_bits;
        co.weight_stationary = 1; /* inference: each weight's mask opened once per session */
        co.microbatches = a.microbatches;
        co.lookahead = a.lookahead;
        if (!(plan = veil_compile(veil_onnx_graph(m), &co))) {
            fprintf(stderr, "veil-onnx: compile: %s\n", veil_last_error());
            rc = 3;
        }
    }
    if (!rc)
        rc = run_plan(&a, m, plan, t, is_known, party);
    veil_plan_destroy(&plan);
    veil_onnx_destroy(&m);
    for (int i = 0; i < a.nin; i++)
        veil_onnx_tensor_free(&t[i]);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return usage();
    if (!strcmp(argv[1], "check"))
        return cmd_check(argc - 2, argv + 2); /* veil-onnx-check.c */
    if (!strcmp(argv[1], "check-ranges"))
        return cmd_check_ranges(argc - 2, argv + 2); /* veil-onnx-ranges.c */
    if (!strcmp(argv[1], "strip"))
        return cmd_strip(argc - 2, argv + 2);
    if (!strcmp(argv[1], "run"))
        return cmd_run(argc - 2, argv + 2);
    return usage();
}

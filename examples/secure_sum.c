/*
 * secure_sum — the smallest end-to-end Veil computation, written with the public API only
 * (veil.h), as a template for programs of your own. N parties each hold a private vector of
 * fixed-point values (here: each hospital's monthly costs per department); together they
 * compute the element-wise total without anyone seeing another's figures:
 *
 *   1. a graph: one input per party, owned by that party, added up, the total revealed to all;
 *   2. veil_compile turns it into a plan; veil_party_open starts this process's StarPU and its
 *      encrypted connections to the other parties (identities from veil-run's environment, or
 *      --config FILE on real hosts);
 *   3. veil_run: each party feeds only its own vector; the inputs are secret-shared, added
 *      locally (no traffic), and the total is opened.
 *
 *   build/tools/veil-run -n 3 -- build/examples/secure_sum [-k ELEMENTS] [--out FILE]
 *   build/examples/secure_sum --config FILE --parties N ...   (one process on real hosts)
 *
 * No dealer is needed: a sum consumes no correlated randomness. Every party prints the first
 * totals and what it sent; --out writes the revealed totals, one a line (party 0 only). The last
 * line is machine-readable key=value pairs.
 */
#include "veil.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_ELEMS 4096
#define MAX_PARTIES 16

/* This party's private input: synthetic monthly costs, in thousands, with cents. */
static double private_value(int party, size_t i)
{
    return 100.0 + 37.25 * party + 0.5 * (double)((i * 7919 + (size_t)party * 104729) % 1000);
}

/* The sum of one input per party, revealed to every party. */
static veil_plan_t *compile_sum(int nparties, size_t k)
{
    veil_graph_t *g = veil_graph_new("secure-sum");
    veil_node_t *total = NULL;
    for (int p = 0; p < nparties; p++) {
        char name[32];
        snprintf(name, sizeof name, "costs%d", p);
        veil_node_t *x = veil_input(g, name, p, 1, (size_t[]){k});
        total = total ? veil_add(g, NULL, total, x) : x;
    }
    veil_reveal(g, total, VEIL_ALL_PARTIES);
    veil_plan_t *plan = veil_compile(g, NULL); /* returns the graph's first error, if any */
    if (!plan)
        fprintf(stderr, "secure_sum: %s\n", veil_last_error());
    veil_graph_destroy(&g);
    return plan;
}

static int usage(int code)
{
    fprintf(code ? stderr : stdout,
            "usage: veil-run -n N -- secure_sum [-k ELEMENTS] [--out FILE]\n"
            "       secure_sum --config FILE --parties N [-k ELEMENTS] [--out FILE]\n"
            "  -k ELEMENTS   vector length, 1..%d (default 12)\n"
            "  --parties N   the session's party count (default: VEIL_NPARTIES, set by veil-run)\n"
            "  --out FILE    party 0 writes the revealed totals there, one a line\n"
            "  --config FILE this process's session configuration (real hosts; see veil-config)\n",
            MAX_ELEMS);
    return code;
}

int main(int argc, char **argv)
{
    size_t k = 12;
    int nparties = 0;
    const char *out = NULL, *config = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help"))
            return usage(0);
        if (!v) {
            fprintf(stderr, "secure_sum: unknown option or missing value: '%s'\n", a);
            return usage(2);
        }
        i++;
        if (!strcmp(a, "-k")) {
            char *end;
            unsigned long n = strtoul(v, &end, 10);
            if (*v == '-' || *end || n < 1 || n > MAX_ELEMS) {
                fprintf(stderr, "secure_sum: -k %s: give 1..%d elements\n", v, MAX_ELEMS);
                return 2;
            }
            k = n;
        } else if (!strcmp(a, "--parties")) {
            char *end;
            long n = strtol(v, &end, 10);
            if (*end || n < 2 || n > MAX_PARTIES) {
                fprintf(stderr, "secure_sum: --parties %s: give 2..%d\n", v, MAX_PARTIES);
                return 2;
            }
            nparties = (int)n;
        } else if (!strcmp(a, "--out")) {
            out = v;
        } else if (!strcmp(a, "--config")) {
            config = v;
        } else {
            fprintf(stderr, "secure_sum: unknown option '%s'\n", a);
            return usage(2);
        }
    }

    /* The graph has one input per party, so the party count is needed before the session
     * opens: --parties, else VEIL_NPARTIES (veil-run's environment), else 2; it is checked
     * against the session once that is open. */
    if (!nparties) {
        const char *env = getenv("VEIL_NPARTIES");
        nparties = env ? atoi(env) : 2;
        if (nparties < 2 || nparties > MAX_PARTIES) {
            fprintf(stderr, "secure_sum: VEIL_NPARTIES=%s: give 2..%d\n", env, MAX_PARTIES);
            return 2;
        }
    }
    veil_plan_t *plan = compile_sum(nparties, k);
    if (!plan)
        return 1;
    struct veil_party_options po;
    veil_party_options_defaults(&po);
    po.config_path = config;
    veil_party_t *me = veil_party_open(plan, &po);
    if (!me) {
        fprintf(stderr, "secure_sum: %s\n", veil_last_error());
        veil_plan_destroy(&plan);
        return 1;
    }
    const int self = veil_party_id(me);
    if (veil_party_nparties(me) != nparties) {
        fprintf(stderr, "secure_sum: the session has %d parties, the graph %d inputs: give "
                "--parties %d\n", veil_party_nparties(me), nparties, veil_party_nparties(me));
        veil_party_close(&me);
        veil_plan_destroy(&plan);
        return 2;
    }
    double *mine = malloc(k * sizeof *mine), *total = malloc(k * sizeof *total);
    int code = 1;
    if (!mine || !total)
        goto out;
    char name[32];
    snprintf(name, sizeof name, "costs%d", self);
    for (size_t i = 0; i < k; i++)
        mine[i] = private_value(self, i);
    struct veil_feed feed = {.name = name, .values = mine, .numel = k};
    double *outs[1] = {total};
    if (veil_run(me, &feed, veil_party_is_dealer(me) ? 0 : 1, outs) != VEIL_OK) {
        fprintf(stderr, "secure_sum: %s\n", veil_last_error());
        goto out;
    }
    struct veil_run_stats st;
    veil_party_last_stats(me, &st);
    if (veil_party_is_dealer(me)) { /* it deals nothing here and learns nothing */
        code = 0;
        goto out;
    }
    printf("secure_sum: party %d: totals of %d hospitals' costs, first departments:", self,
           nparties);
    for (size_t i = 0; i < k && i < 4; i++)
        printf(" %.2f", total[i]);
    printf("\n");
    if (out && self == 0) {
        FILE *f = fopen(out, "w");
        for (size_t i = 0; f && i < k; i++)
            fprintf(f, "%.6f\n", total[i]);
        if (!f || fclose(f) != 0) {
            fprintf(stderr, "secure_sum: cannot write '%s'\n", out);
            goto out;
        }
    }
    printf("parties=%d party=%d elements=%zu bytes_sent=%" PRIu64 " rounds=%" PRIu64 "\n",
           nparties, self, k, st.bytes_sent, st.rounds);
    code = 0;
out:
    free(mine);
    free(total);
    if (veil_party_close(&me) != VEIL_OK && code == 0) {
        fprintf(stderr, "secure_sum: %s\n", veil_last_error());
        code = 1;
    }
    veil_plan_destroy(&plan);
    return code;
}

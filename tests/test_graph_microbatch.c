/* Tests the inter-batch pipeline's graph transformation (graph/microbatch.c) with the plaintext
 * executor and trainer; the secure runs are in test_graph_secure (inference) and below in plain
 * form only. The MLP (batch 4; k = 2, 4) and the CNN (batch 2, a batch norm folded into a conv
 * whose weight every micro-batch's copy shares; k = 2) compiled with k micro-batches give outputs
 * with the same names and shapes as with k = 1 and, in FIXED mode, the same words bit for bit
 * (every element is computed by the same operations); one plaintext SGD step of an MLP with a
 * loss, split in 2, updates every parameter as the unsplit batch does (DOUBLE within 1e-12;
 * FIXED within 2 ulp per parameter element; both measured equal). A micro-batched plan takes the
 * secure forms the unsplit batch would (the same correlated randomness: pool_forms_by_batch,
 * argmax_form_by_batch).
 * Refused with a message: an attention block (matmul mixes rows of axis 0), a k that does not
 * divide the batch, a concat along axis 0. */
#include "config.h"
#include "graph/graph_internal.h"
#include "test_graph_nets.h"
#include "test_util.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static void same_outputs(const char *what, struct veil_test_net *one, struct veil_test_net *split)
{
    const veil_plan_t *a = one->plan, *b = split->plan;
    if (!a || !b)
        return;
    VT_CHECK(veil_plan_output_count(a) == veil_plan_output_count(b), "%s: output count", what);
    double *got[VEIL_TEST_NET_MAXOUT] = {0};
    for (size_t k = 0; k < veil_plan_output_count(a); k++) {
        VT_CHECK(!strcmp(veil_plan_output_name(a, k), veil_plan_output_name(b, k)) &&
                     veil_plan_output_numel(a, k) == veil_plan_output_numel(b, k),
                 "%s: output %zu is '%s' (%zu) split, '%s' (%zu) unsplit", what, k,
                 veil_plan_output_name(b, k), veil_plan_output_numel(b, k),
                 veil_plan_output_name(a, k), veil_plan_output_numel(a, k));
        got[k] = calloc(veil_plan_output_numel(a, k), sizeof(double));
    }
    /* the unsplit net's feeds for both: the generator drew different ones for each */
    int rc = veil_plain_run(b, VEIL_PLAIN_FIXED, one->feeds, one->nfeeds, got);
    VT_CHECK(rc == VEIL_OK, "%s: %s", what, veil_last_error());
    for (size_t k = 0; rc == VEIL_OK && k < veil_plan_output_count(a); k++)
        VT_CHECK(memcmp(got[k], one->want[k], veil_plan_output_numel(a, k) * sizeof(double)) == 0,
                 "%s: output '%s' differs from the unsplit plan's", what,
                 veil_plan_output_name(a, k));
    for (size_t k = 0; k < VEIL_TEST_NET_MAXOUT; k++)
        free(got[k]);
    veil_test_log("%s: outputs equal bit for bit", what);
}

/* A micro-batched plan picks the pool's forms by the whole batch (veil_exec_batch_rows): relu +
 * 2 x 2 max pool at batch 4 in 2 micro-batches takes the same correlated randomness as unsplit
 * (the tournament, the ReLU after it), although batch 2 alone takes the pairwise protocol. */
static void pool_forms_by_batch(void)
{
    static struct veil_test_net b2, b4, split;
    uint64_t items[3] = {0}, bytes[3] = {0};
    veil_test_net_relu_maxpool(&b2, 2);
    veil_test_net_relu_maxpool(&b4, 4);
    veil_test_net_microbatches = 2;
    veil_test_net_relu_maxpool(&split, 4);
    veil_test_net_microbatches = 1;
    struct veil_test_net *t[3] = {&b2, &b4, &split};
    for (int i = 0; i < 3; i++)
        VT_CHECK(t[i]->plan && veil_plan_preproc(t[i]->plan, 2, &items[i], &bytes[i]) == VEIL_OK,
                 "relu_maxpool %d: preproc: %s", i, veil_last_error());
    VT_CHECK(2 * bytes[0] != bytes[1],
             "relu_maxpool: batch 2 (%" PRIu64 " B) and 4 (%" PRIu64 " B) should take different "
             "forms (the sizes no longer straddle the pairwise rule)",
             bytes[0], bytes[1]);
    VT_CHECK(bytes[2] == bytes[1],
             "relu_maxpool batch 4 in 2 micro-batches: %" PRIu64 " B of material in %" PRIu64
             " items; unsplit %" PRIu64 " B (the forms should be the whole batch's)",
             bytes[2], items[2], bytes[1]);
    veil_test_net_reference(&b4);
    same_outputs("relu_maxpool, 2 micro-batches", &b4, &split);
    veil_test_log("relu_maxpool: batch 4 unsplit and in 2 micro-batches %" PRIu64
                  " B of material, batch 2 %" PRIu64 " B",
                  bytes[1], bytes[0]);
    for (int i = 0; i < 3; i++)
        veil_test_net_free(t[i]);
}

/* The material of x (rows, 10) of party 1 -> argmax -> revealed, compiled with k micro-batches. */
static uint64_t argmax_material(size_t rows, int k)
{
    veil_graph_t *g = veil_graph_new("argmax");
    size_t dx[2] = {rows, 10};
    veil_reveal(g, veil_argmax(g, "a", veil_input(g, "x", 1, 2, dx)), VEIL_ALL_PARTIES);
    veil_test_net_microbatches = k;
    veil_plan_t *p = veil_test_net_compile(g, 16);
    veil_test_net_microbatches = 1;
    veil_graph_destroy(&g);
    uint64_t items = 0, bytes = 0;
    VT_CHECK(p && veil_plan_preproc(p, 2, &items, &bytes) == VEIL_OK, "argmax %zu rows: %s", rows,
             veil_last_error());
    veil_plan_destroy(&p);
    return bytes;
}

/* The argmax likewise: 512 rows of 10 (23,040 pairs) in 2 micro-batches take the unsplit
 * tournament, although 256 rows alone (11,520 pairs) take the pairwise protocol. */
static void argmax_form_by_batch(void)
{
    const uint64_t b256 = argmax_material(256, 1), b512 = argmax_material(512, 1),
                   split = argmax_material(512, 2);
    VT_CHECK(2 * b256 != b512,
             "argmax: 256 rows (%" PRIu64 " B) and 512 (%" PRIu64 " B) should take different forms",
             b256, b512);
    VT_CHECK(split == b512,
             "argmax, 512 rows in 2 micro-batches: %" PRIu64 " B of material; unsplit %" PRIu64
             " B (the form should be the whole batch's)",
             split, b512);
    veil_test_log("argmax: 512 rows unsplit and in 2 micro-batches %" PRIu64 " B, 256 rows %" PRIu64
                  " B",
                  b512, b256);
}

static void refused(veil_graph_t *g, int k, const char *says)
{
    struct veil_compile_options o;
    veil_compile_options_defaults(&o);
    o.microbatches = k;
    veil_plan_t *p = veil_compile(g, &o);
    VT_CHECK(!p, "%s: compiled with %d micro-batches", veil_graph_name(g), k);
    VT_CHECK(strstr(veil_last_error(), says) != NULL, "%s: message '%s' does not say '%s'",
             veil_graph_name(g), veil_last_error(), says);
    veil_test_log("refused: %s", veil_last_error());
    veil_plan_destroy(&p);
}

static void train_step_equal(enum veil_plain_mode mode, double tol)
{
    static double x[48], labels[24], w1[30], b1[5], w2[15];
    veil_test_train_mlp_values(7, x, w1, b1, w2);
    for (size_t r = 0; r < 8; r++)
        labels[r * 3 + r % 3] = 1;
    const struct veil_feed params[] = {{"w1", w1, 30}, {"b1", b1, 5}, {"w2", w2, 15}};
    const struct veil_feed in[] = {{"x", x, 48}, {"labels", labels, 24}};
    veil_graph_t *g = veil_test_train_mlp("train_mlp");
    double got[2][30];
    double loss[2];
    for (int k = 1; k <= 2; k++) {
        struct veil_compile_options o;
        veil_compile_options_defaults(&o);
        o.training = 1;
        o.microbatches = k;
        veil_plan_t *p = veil_compile(g, &o);
        VT_CHECK(p != NULL, "train_mlp k=%d: %s", k, veil_last_error());
        if (p && k == 2) /* the plan holds the copies and the loss reads their concatenation */
            VT_CHECK(veil_plan_find(p, "fc1@mb1") >= 0 && veil_plan_find(p, "x@mb1") >= 0 &&
                         p->nodes[p->nodes[p->loss].in[0]].op == VEIL_OP_CONCAT,
                     "train_mlp k=2: no micro-batch copies in the plan");
        veil_plain_trainer_t *t = p ? veil_plain_trainer_new(p, mode, params, 3) : NULL;
        VT_CHECK(!p || t, "trainer k=%d: %s", k, veil_last_error());
        if (t) {
            VT_CHECK(veil_plain_trainer_step(t, in, 2, &loss[k - 1]) == VEIL_OK, "step k=%d: %s",
                     k, veil_last_error());
            VT_CHECK(veil_plain_trainer_param(t, "w1", got[k - 1]) == VEIL_OK, "w1: %s",
                     veil_last_error());
        }
        veil_plain_trainer_destroy(&t);
        veil_plan_destroy(&p);
    }
    double worst = 0;
    for (size_t i = 0; i < 30; i++)
        worst = fmax(worst, fabs(got[0][i] - got[1][i]));
    VT_CHECK(worst <= tol, "%s: one SGD step, w1 split in 2 differs from unsplit by %.3g > %.3g",
             mode == VEIL_PLAIN_FIXED ? "FIXED" : "DOUBLE", worst, tol);
    VT_CHECK(fabs(loss[0] - loss[1]) <= tol, "loss %.9f split, %.9f unsplit", loss[1], loss[0]);
    veil_test_log("%s: one step split in 2: w1 within %.3g of the unsplit batch's",
                  mode == VEIL_PLAIN_FIXED ? "FIXED" : "DOUBLE", worst);
    veil_graph_destroy(&g);
}

int main(void)
{
    static struct veil_test_net one[2], split[3];
    veil_test_net_mlp(&one[0]);
    veil_test_net_cnn(&one[1]);
    veil_test_net_microbatches = 2;
    veil_test_net_mlp(&split[0]);
    veil_test_net_cnn(&split[1]);
    veil_test_net_microbatches = 4;
    veil_test_net_mlp(&split[2]);
    veil_test_net_microbatches = 1;
    for (int i = 0; i < 2; i++)
        veil_test_net_reference(&one[i]);
    same_outputs("mlp, 2 micro-batches", &one[0], &split[0]);
    same_outputs("cnn with a folded batch norm, 2 micro-batches", &one[1], &split[1]);
    same_outputs("mlp, 4 micro-batches", &one[0], &split[2]);

    pool_forms_by_batch();
    argmax_form_by_batch();
    train_step_equal(VEIL_PLAIN_DOUBLE, 1e-12);
    train_step_equal(VEIL_PLAIN_FIXED, 2.0 / 65536);

    /* Refusals, each naming the node and the reason. */
    veil_graph_t *g = veil_graph_new("attention");
    size_t dx[2] = {4, 4};
    veil_node_t *x = veil_input(g, "x", 1, 2, dx);
    veil_reveal(g, veil_matmul(g, "qk", x, veil_transpose(g, "xt", x)), 0);
    refused(g, 2, "mixes rows along axis 0");
    veil_graph_destroy(&g);
    g = veil_graph_new("mlp3");
    veil_reveal(g, veil_relu(g, "r", veil_input(g, "x", 1, 2, dx)), 0);
    refused(g, 3, "does not divide the batch of 4 rows");
    veil_graph_destroy(&g);
    g = veil_graph_new("cat0");
    x = veil_input(g, "x", 1, 2, dx);
    veil_reveal(g, veil_concat(g, "c", x, veil_relu(g, "r", x), 0), 0);
    refused(g, 2, "concatenates along axis 0");
    veil_graph_destroy(&g);

    for (int i = 0; i < 2; i++)
        veil_test_net_free(&one[i]);
    for (int i = 0; i < 3; i++)
        veil_test_net_free(&split[i]);
    return veil_test_status();
}

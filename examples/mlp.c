/*
 * mlp — secure inference of a multi-layer perceptron (784-128-128-10 by default, ReLU
 * between dense layers) on synthetic 28x28 images: party 0 owns the weights, party 1 the images
 * and the logits. The test size is --small (196-64-10, two images). `mlp train` instead trains it
 * securely for --runs SGD steps on synthetic labelled batches (party 1 owns images and labels and
 * learns each step's loss; party 0 receives the trained weights and checks them against the
 * plaintext fixed-point trainer).
 *
 * Usage: veil-run -n 2 --dealer -- mlp [train] [--small] [--layers W0,W1,...] [--batch B]
 *        [--runs R]
 */
#include "models.h"

#include <stdio.h>

int main(int argc, char **argv)
{
    static const struct example_cli cli = {
        .prog = "mlp",
        .summary = "Secure inference (or with `train`, secure SGD training) of an MLP\n"
                   "(784-128-128-10) on synthetic images.",
        .small_help = "the test size: 196-64-10, batch 2",
        .big_flag = NULL,
        .big_help = "",
        .flags = CLI_MLP | CLI_TRAIN,
    };
    struct model_opts mo = {0};
    struct example_opts eo = {0};
    int small = 0;
    int rc = example_parse(&cli, argc, argv, &mo, &eo, &small);
    if (rc >= 0)
        return rc;
    if (small && !mo.mlp_n) {
        static const size_t test[] = {196, 64, 10};
        for (mo.mlp_n = 0; mo.mlp_n < 3; mo.mlp_n++)
            mo.mlp[mo.mlp_n] = test[mo.mlp_n];
    }
    if (small && !mo.batch)
        mo.batch = 2;
    return example_build_and_run("mlp", model_mlp, &mo, &eo);
}

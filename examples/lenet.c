/*
 * lenet — secure inference (or, with `train`, secure SGD steps) of LeNet-5 at Fashion-MNIST
 * shapes (1x28x28: conv 5x5 6 pad 2, max pool, conv 5x5 16, max pool, dense 400-120-84-10) with
 * synthetic weights and images: the benchmark suite's LeNet (examples/lenet_fmnist is the one
 * with the real data and a trained model). Party 0 owns the weights, party 1 the images and the
 * logits. The test size is --small (batch 1, the same network).
 *
 * Usage: veil-run -n 2 --dealer -- lenet [train] [--small] [--batch B] [--runs R]
 */
#include "models.h"

#include <stdio.h>

int main(int argc, char **argv)
{
    static const struct example_cli cli = {
        .prog = "lenet",
        .summary = "Secure inference (or with `train`, secure SGD training) of LeNet-5\n"
                   "(1x28x28) on synthetic images.",
        .small_help = "the test size: batch 1",
        .big_flag = NULL,
        .big_help = "",
        .flags = CLI_TRAIN,
    };
    struct model_opts mo = {0};
    struct example_opts eo = {0};
    int small = 0;
    int rc = example_parse(&cli, argc, argv, &mo, &eo, &small);
    if (rc >= 0)
        return rc;
    return example_build_and_run("lenet", model_lenet, &mo, &eo);
}

/*
 * resnet — secure inference of ResNet-18 at CIFAR-10 shapes (a 3x3 stem, four stages
 * of two basic blocks with residual adds, batch norm after every convolution — inference form,
 * folded into the convolution by the compiler —, global average pooling, a dense 10-way head;
 * --resnet50: bottleneck blocks 3,4,6,3) with synthetic weights and statistics: party 0 owns
 * them, party 1 the images and the logits. --width-div D divides every channel count; the test
 * size is --small (width 1/16). `resnet train` runs --runs secure SGD steps instead, with the
 * batch norms left out (folded batch norm is an inference form: it has no gradient in Veil);
 * each convolution then has a bias and its weights the scale the batch norm's gamma gave.
 *
 * Usage: veil-run -n 2 --dealer -- resnet [train] [--small] [--resnet50] [--width-div D]
 * [--batch B] [--runs R]
 */
#include "models.h"

#include <stdio.h>

int main(int argc, char **argv)
{
    static const struct example_cli cli = {
        .prog = "resnet",
        .summary = "Secure inference (or with `train`, secure SGD steps) of ResNet-18 (CIFAR-10\n"
                   "shapes) with synthetic weights; training leaves the batch norms out.",
        .small_help = "the test size: channels / 16 (unless --width-div is given)",
        .big_flag = "--resnet50",
        .big_help = "ResNet-50: bottleneck blocks 3,4,6,3 (expansion 4)",
        .flags = CLI_WIDTH | CLI_TRAIN,
    };
    struct model_opts mo = {0};
    struct example_opts eo = {0};
    int small = 0;
    int rc = example_parse(&cli, argc, argv, &mo, &eo, &small);
    if (rc >= 0)
        return rc;
    if (small && !mo.width_div)
        mo.width_div = 16;
    return example_build_and_run("resnet", model_resnet, &mo, &eo);
}

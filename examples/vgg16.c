/*
 * vgg16 — secure inference of VGG16 at CIFAR-10 shapes (3x32x32 images, the 13 3x3
 * convolutions 64,64,M,128,128,M,256x3,M,512x3,M,512x3,M, dense 512-512-10; --imagenet: 3x224x224
 * and 4096-4096-1000) with synthetic He-scaled weights: party 0 owns the weights, party 1 the
 * images and the logits. --width-div D divides every channel count; the test size is --small
 * (width 1/16). `vgg16 train` runs --runs secure SGD steps instead, party 0 checking the trained
 * weights against the plaintext fixed-point trainer.
 *
 * Usage: veil-run -n 2 --dealer -- vgg16 [train] [--small] [--imagenet] [--width-div D]
 * [--batch B] [--runs R]
 */
#include "models.h"

#include <stdio.h>

int main(int argc, char **argv)
{
    static const struct example_cli cli = {
        .prog = "vgg16",
        .summary = "Secure inference (or with `train`, secure SGD steps) of VGG16 (CIFAR-10 shapes)\n"
                   "with synthetic weights.",
        .small_help = "the test size: channels / 16 (unless --width-div is given)",
        .big_flag = "--imagenet",
        .big_help = "ImageNet shapes: 3x224x224 images, dense 4096-4096-1000",
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
    return example_build_and_run("vgg16", model_vgg16, &mo, &eo);
}

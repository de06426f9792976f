/*
 * transformer — secure inference of one transformer encoder layer: multi-head
 * self-attention written with the DSL's matmul, transpose, scale and softmax per head, heads
 * concatenated and projected, residual adds, layer norms and a GELU feed-forward. The default
 * runs in seconds on a small CPU (H=64, A=4, sequence 16, FF 256); --bert-large is BERT-large's
 * layer (H=1024, A=16, sequence 512, FF 4096). Party 0 owns the synthetic weights, party 1 the
 * sequences and the layer's output. The test size is --small (H=16, A=2, sequence 8, FF 32).
 * `transformer train` runs --runs secure SGD steps of the layer instead, every token classified
 * over the H output features against party 1's one-hot labels (softmax cross-entropy), GELU's
 * backward pass included; party 0 receives the trained weights and checks them against the
 * plaintext fixed-point trainer.
 *
 * Usage: veil-run -n 2 --dealer -- transformer [train] [--small] [--bert-large] [--hidden H
 *        --heads A --seq S --ff F] [--batch B] [--runs R]
 */
#include "models.h"

#include <stdio.h>

int main(int argc, char **argv)
{
    static const struct example_cli cli = {
        .prog = "transformer",
        .summary = "Secure inference (or with `train`, secure SGD steps) of a transformer encoder\n"
                   "layer (H=64, A=4, seq 16, FF 256) with its GELU feed-forward.",
        .small_help = "the test size: H=16, A=2, sequence 8, FF 32",
        .big_flag = "--bert-large",
        .big_help = "BERT-large: H=1024, A=16, sequence 512, FF 4096",
        .flags = CLI_TRANSFORMER | CLI_TRAIN,
    };
    struct model_opts mo = {0};
    struct example_opts eo = {0};
    int small = 0;
    int rc = example_parse(&cli, argc, argv, &mo, &eo, &small);
    if (rc >= 0)
        return rc;
    if (small && !mo.big) {
        mo.hidden = mo.hidden ? mo.hidden : 16;
        mo.heads = mo.heads ? mo.heads : 2;
        mo.seq = mo.seq ? mo.seq : 8;
        mo.ff = mo.ff ? mo.ff : 32;
    }
    {
        const size_t h = mo.hidden ? mo.hidden : mo.big ? 1024 : 64;
        const size_t a = mo.heads ? mo.heads : mo.big ? 16 : 4;
        if (h % a != 0) {
            fprintf(stderr,
                    "transformer: --heads %zu does not divide the hidden size %zu\n"
                    "Try 'transformer --help'.\n",
                    a, h);
            return 2;
        }
    }
    return example_build_and_run("transformer", model_transformer, &mo, &eo);
}

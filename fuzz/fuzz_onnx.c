/*
 * fuzz_onnx.c — libFuzzer target for the ONNX loader: any byte string handed to veil_onnx_parse
 * must yield a model or an error message, never a crash, a leak, a hang or an out-of-bounds read;
 * accepted models are compiled and their accessors read. Build: ./configure --enable-fuzzers
 * CC=clang, then make fuzz/fuzz_onnx; run ./fuzz/fuzz_onnx -max_len=65536 with a corpus of
 * models, e.g. /usr/share/libonnx-testdata/data/node/\*\/model.onnx.
 */
#include "config.h"
#include "veil/onnx.h"

#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct veil_onnx_options o;
    veil_onnx_options_defaults(&o);
    o.max_linmap = (size_t)1 << 16; /* keep each input's work small */
    veil_onnx_model_t *m = NULL;
    if (veil_onnx_parse(data, size, "fuzz", &o, &m) != VEIL_OK)
        return 0;
    for (size_t i = 0; i < veil_onnx_node_count(m); i++)
        (void)veil_onnx_node_op(m, i);
    veil_plan_t *p = veil_compile(veil_onnx_graph(m), NULL);
    veil_plan_destroy(&p);
    veil_onnx_destroy(&m);
    return 0;
}

/*
 * fuzz_weights.c — libFuzzer target for the weights-file reader: any byte string handed to
 * veil_weights_parse must yield a handle or an error message, never a crash, a leak or an
 * out-of-bounds read; accepted inputs are read back in full. Build: ./configure
 * --enable-fuzzers CC=clang, then make data/fuzz_weights; run ./data/fuzz_weights -max_len=4096.
 */
#include "config.h"
#include "veil.h"

#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    veil_weights_t *w = veil_weights_parse(data, size, "fuzz");
    if (!w)
        return 0;
    (void)veil_weights_check_model(w, "m");
    for (size_t i = 0; i < veil_weights_count(w); i++) {
        int nd = 0;
        size_t dims[VEIL_WEIGHTS_MAX_DIMS], numel = 1;
        const char *name = veil_weights_name(w, i);
        if (veil_weights_info(w, name, NULL, &nd, dims) != VEIL_OK)
            abort();
        for (int d = 0; d < nd; d++)
            numel *= dims[d];
        if (numel > (1u << 20))
            continue;
        double *out = malloc((numel ? numel : 1) * sizeof(*out));
        if (out && veil_weights_read_f64(w, name, nd, dims, out) != VEIL_OK)
            abort();
        free(out);
    }
    veil_weights_destroy(&w);
    return 0;
}

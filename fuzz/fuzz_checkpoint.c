/*
 * fuzz_checkpoint.c — libFuzzer target for the checkpoint reader's session-free checks
 * (veil_ckpt_check_format, graph/secure/checkpoint.c): any byte string must be accepted or refused
 * with a message, never a crash or an out-of-bounds read. The input is the file without its
 * SHA-256: the target appends the right digest (otherwise no input would get past it) and also
 * checks the raw input. Build: ./configure --enable-fuzzers CC=clang, make fuzz/fuzz_checkpoint.
 */
#include "config.h"
#include "base/base_internal.h"
#include "data/data_internal.h"
#include "graph/secure/checkpoint_internal.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    (void)veil_ckpt_check_format(data, size, "raw");
    uint8_t *b = malloc(size + 32);
    if (!b)
        return 0;
    memcpy(b, data, size);
    if (veil_data_sha256(b, size, b + size, "fuzz") == VEIL_OK)
        (void)veil_ckpt_check_format(b, size + 32, "fuzz");
    free(b);
    return 0;
}

/*
 * fuzz_config.c — libFuzzer target for the configuration reader (net/config.c): any text must be
 * parsed or refused with a message naming the line, never a crash or an out-of-bounds read. The
 * secret-key-file directive is checked but no file is opened (VEIL_CONFIG_NO_KEY_FILE). Build:
 * ./configure --enable-fuzzers CC=clang, then make fuzz/fuzz_config.
 */
#include "config.h"
#include "net/config_internal.h"
#include "veil.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    struct veil_net_config cfg;
    (void)veil_net_config_parse_text_flags(text, "fuzz.conf", &cfg, VEIL_CONFIG_NO_KEY_FILE);
    free(text);
    return 0;
}

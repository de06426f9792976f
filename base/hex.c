/*
 * hex.c — the one hex decoder of the library: a digit's value, and a run of digits into bytes.
 * Used wherever text carries hex (session ids in net configurations and the harness, the
 * material seed, \u escapes in the weights JSON), so that every parser accepts the same digits
 * (0-9, a-f, A-F) and reports the first bad one the same way.
 */
#include "config.h"
#include "base/base_internal.h"

int veil_hex_digit(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

size_t veil_hex_decode(const char *hex, uint8_t *out, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        int hi = veil_hex_digit(hex[2 * i]);
        if (hi < 0)
            return 2 * i;
        int lo = veil_hex_digit(hex[2 * i + 1]);
        if (lo < 0)
            return 2 * i + 1;
        out[i] = (uint8_t)(hi << 4 | lo);
    }
    return 2 * n;
}

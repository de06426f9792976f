/*
 * fuzz_preproc.c — libFuzzer target for the preprocessing-file reader (tasks/preproc_read.c):
 * any file must open or be refused with a message, never a crash or an out-of-bounds read. So
 * that inputs reach the item table, the
 * target writes the header fields a session checks (magic, version, party 0 of 2, 16 fractional
 * bits, designated party 1, zero session and plan digest) over the input's first 88 bytes,
 * keeping its item count, and appends the right SHA-256; the bytes go to a memfd read by
 * /proc/self/fd. Build: ./configure --enable-fuzzers CC=clang, then make fuzz/fuzz_preproc.
 */
#include "config.h"
#include "data/data_internal.h"
#include "tasks/preproc_file.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int fd = -1;
    if (fd < 0 && (fd = memfd_create("veil-fuzz-preproc", 0)) < 0)
        return 0;
    const size_t hb = VEIL_PREPROC_FILE_HEADER_BYTES, n = size < hb ? hb : size;
    uint8_t *b = calloc(1, n + VEIL_PREPROC_DIGEST_BYTES);
    if (!b)
        return 0;
    memcpy(b, data, size);
    memcpy(b, VEIL_PREPROC_FILE_MAGIC, 8);
    put32(b + 8, VEIL_PREPROC_FILE_VERSION);
    put32(b + 12, 0);  /* party */
    put32(b + 16, 2);  /* party count */
    put32(b + 20, 16); /* fractional bits */
    put32(b + 24, 1);  /* designated party */
    put32(b + 28, 0);
    memset(b + 32, 0, 16 + 32); /* session, plan digest */
    struct veil_preproc_layout layout = {.nparties = 2, .designated = 1, .frac_bits = 16};
    const uint8_t plan[VEIL_PREPROC_DIGEST_BYTES] = {0};
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    veil_preproc_reader_t *r = NULL;
    const size_t total = n + VEIL_PREPROC_DIGEST_BYTES;
    if (veil_data_sha256(b, n, b + n, "fuzz") == VEIL_OK && ftruncate(fd, 0) == 0 &&
        pwrite(fd, b, total, 0) == (ssize_t)total &&
        veil_preproc_reader_open(path, &layout, 0, plan, &r) == VEIL_OK)
        (void)veil_preproc_reader_remaining(r);
    veil_preproc_reader_close(&r);
    free(b);
    return 0;
}

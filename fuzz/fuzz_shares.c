/*
 * fuzz_shares.c — libFuzzer target for the share-file reader (veil_share_load, data/
 * shares_file.c): any file must load (for the expected binding) or be refused with a message,
 * never a crash or an out-of-bounds read. The input is the file without its SHA-256: the target
 * appends the right digest (no input would get past it otherwise), writes the bytes to a memfd
 * and loads it by /proc/self/fd. Build: ./configure --enable-fuzzers CC=clang, then make
 * fuzz/fuzz_shares.
 */
#include "config.h"
#include "data/data_internal.h"
#include "veil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int fd = -1;
    if (fd < 0 && (fd = memfd_create("veil-fuzz-share", 0)) < 0)
        return 0;
    uint8_t digest[32];
    if (veil_data_sha256(data, size, digest, "fuzz") != VEIL_OK || ftruncate(fd, 0) != 0 ||
        pwrite(fd, data, size, 0) != (ssize_t)size || pwrite(fd, digest, 32, (off_t)size) != 32)
        return 0;
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    struct veil_share_file_id id = {.party = 0, .nparties = 2, .name = "w"};
    veil_share_t *s = veil_share_load(path, &id);
    veil_share_destroy(&s);
    return 0;
}

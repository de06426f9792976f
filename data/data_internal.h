/*
 * data_internal.h — helpers shared by the files that write and read Veil's binary files (data/,
 * graph/secure/checkpoint.c): whole-file reading (optionally through zlib), atomic writing (temporary
 * file, fsync, rename), little-endian integers and the SHA-256 that protects a file's content.
 */
#ifndef VEIL_DATA_INTERNAL_H
#define VEIL_DATA_INTERNAL_H

#include "base/base_internal.h"

#include <stddef.h>
#include <stdint.h>

/** Largest file the readers accept (after decompression): 1 GiB. */
#define VEIL_DATA_MAX_FILE ((size_t)1 << 30)

/**
 * Reads all of path into a new malloc'ed buffer (*buf, *len; *buf non-NULL even when empty).
 * gunzip != 0: gzip content is decompressed (plain content is read as is); a corrupt or
 * truncated gzip stream is VEIL_ERR_FORMAT naming the file. VEIL_ERR_IO when it cannot be read.
 */
int veil_data_read_file(const char *path, int gunzip, uint8_t **buf, size_t *len);

/**
 * Writes len bytes to path atomically: path.tmp.XXXXXX in the same directory with mode, fsync,
 * rename over path, fsync of the directory. On failure the temporary file is removed and path
 * is untouched.
 */
int veil_data_write_atomic(const char *path, const void *bytes, size_t len, unsigned mode);

/** SHA-256 of n bytes into out; VEIL_ERR_CRYPTO naming what (the file kind) if OpenSSL fails. */
int veil_data_sha256(const uint8_t *b, size_t n, uint8_t out[32], const char *what);

/** weights.c: each dtype's name in the header ("F64", ...) and its size in bytes, by enum
 *  veil_dtype; shared with the writer (weights_write.c). */
extern const char *const veil_weights_dtype_names[];
extern const size_t veil_weights_dtype_sizes[];

#endif

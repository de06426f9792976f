/*
 * data_internal.h — helpers shared by the files of data/: whole-file reading (optionally through
 * zlib) and atomic writing (temporary file, fsync, rename).
 */
#ifndef VEIL_DATA_INTERNAL_H
#define VEIL_DATA_INTERNAL_H

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

#endif

/*
 * checkpoint_internal.h — the files behind a checkpoint (checkpoint_files.c): two generations per
 * process (PATH, the newest, and PATH.prev, the one before), written so that a crash at any point
 * leaves at least one complete generation, and the clean-up of temporary files a crash left.
 */
#ifndef VEIL_CHECKPOINT_INTERNAL_H
#define VEIL_CHECKPOINT_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

/** PATH.prev into out (len bytes); VEIL_ERR_RANGE when it does not fit. */
int veil_ckpt_prev_path(const char *path, char *out, size_t len);
/** Removes PATH.tmp.* (the temporary files of writes a crash interrupted); best effort, logged. */
void veil_ckpt_remove_stale(const char *path);
/**
 * Writes b (len bytes) as the new generation of path: a temporary file beside it (mode 0600,
 * fsync), then PATH moves to PATH.prev and the temporary file to PATH (the directory fsync'd
 * after each rename). A crash leaves {PATH, PATH.prev} old, or PATH.prev alone (old), or PATH new
 * and PATH.prev old. step is the checkpoint's step, for the testing hook VEIL_TEST_CRASH
 * (base/env.h) that kills the process at one of these phases. VEIL_ERR_IO naming the file.
 */
int veil_ckpt_write(const char *path, const uint8_t *b, size_t len, uint64_t step);
/**
 * After the processes agreed to resume from the generation in PATH.prev (from_prev) or PATH:
 * the newer PATH (another lineage once the session goes on) is removed and PATH.prev becomes
 * PATH; with from_prev 0 nothing moves. Stale temporary files are removed either way.
 */
int veil_ckpt_promote(const char *path, int from_prev);

/**
 * The checks of a checkpoint file's bytes that need no session (checkpoint.c): length, magic,
 * SHA-256, version, header fields, and the records' structure (a party's hold share words, the
 * dealer's none; no byte after the last record). VEIL_ERR_FORMAT or VEIL_ERR_CRYPTO naming path;
 * the libFuzzer target fuzz/fuzz_checkpoint.c drives it.
 */
int veil_ckpt_check_format(const uint8_t *b, size_t len, const char *path);

#endif

/*
 * test_util.h — small helpers shared by the test programs: a failure counter with CHECK, seeded
 * random words from veil_prg (fixed seeds: every run sees the same inputs), the list of ring edge
 * values, array comparison that reports the first mismatch, and the environment and start/stop
 * of an in-process StarPU (1 CPU worker, no binding, lws, a private temporary STARPU_HOME).
 * Quiet unless VEIL_TEST_VERBOSE=1. Exit codes: 0 pass, 1 fail, 77 skip.
 */
#ifndef VEIL_TEST_UTIL_H
#define VEIL_TEST_UTIL_H

#include "veil.h"

#include <starpu.h>

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/** Number of failed checks so far in this process. */
extern int veil_test_failures;

/** Counts and prints a failure (file, line, formatted message) when cond is false. */
#define VT_CHECK(cond, ...)                                                                        \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                                   \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fprintf(stderr, "\n");                                                                 \
            veil_test_failures++;                                                                  \
        }                                                                                          \
    } while (0)

/** 1 when VEIL_TEST_VERBOSE=1 is set. */
int veil_test_verbose(void);
/** Prints a line to stderr only when verbose. */
void veil_test_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/** The ring edge values 0, 1, 2^63 - 1, 2^63, 2^64 - 1. */
#define VEIL_TEST_NEDGE 5
extern const uint64_t veil_test_edge[VEIL_TEST_NEDGE];

/**
 * Fills out[0..n) with PRG words from a fixed seed derived from tag (same tag, same words).
 * Returns 0, or 1 after counting a failure when the PRG cannot be created.
 */
int veil_test_random(uint64_t tag, uint64_t *out, size_t n);
/** The first index of the maximum of v[0..k) read as signed 64-bit words (k >= 1). */
size_t veil_test_argmax(const uint64_t *v, size_t k);
/**
 * Overwrites the first min(n, 25) entries of a (and b when not NULL) with edge values so that
 * every pair (edge[i], edge[j]) occurs once: a[t] = edge[t % 5], b[t] = edge[t / 5].
 */
void veil_test_mix_edges(uint64_t *a, uint64_t *b, size_t n);

/**
 * Compares got with want over n words; on the first mismatch prints what, the index and both
 * values, counts a failure and returns 1. Returns 0 when equal.
 */
int veil_test_compare_u64(const char *what, const uint64_t *got, const uint64_t *want, size_t n);

/**
 * Sets STARPU_NCPU=1, STARPU_WORKERS_NOBIND=1, STARPU_SILENT=1, STARPU_SCHED=lws and a fresh
 * mkdtemp STARPU_HOME (unless already set by the caller's environment for NCPU/SCHED), then calls
 * starpu_init. Returns 0, or 77 (skip) when StarPU cannot start.
 */
int veil_test_starpu_start(void);
/** starpu_shutdown, then removes the temporary STARPU_HOME tree. */
void veil_test_starpu_stop(void);

/** A StarPU vector handle over n words at p in main memory (the tests' own buffers; the caller
 *  unregisters it). */
starpu_data_handle_t veil_test_vec(uint64_t *p, size_t n);

/** How many of the whole pages inside [p, p + n) are resident (mincore), their count in *whole
 *  (0 and 0 when there is none, or more than 4096 of them). Call it before anything reads the
 *  buffer: a read of an untouched page maps the zero page, which counts as resident. */
size_t veil_test_resident_pages(const void *p, size_t n, size_t *whole);

/** The whole file at path in a malloc'd buffer (one byte more, for a terminator the caller may
 *  write), its length in *n; NULL when it cannot be opened or read. */
unsigned char *veil_test_slurp(const char *path, size_t *n);

/** Exit status for main: 1 when any check failed, else 0. */
int veil_test_status(void);

#endif /* VEIL_TEST_UTIL_H */

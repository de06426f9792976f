/*
 * base_internal.h — cross-file helpers of libveil that are not public: error recording, the
 * logger, assertions on internal invariants, aligned allocation and wiping, hex decoding. Never
 * installed.
 */
#ifndef VEIL_BASE_INTERNAL_H
#define VEIL_BASE_INTERNAL_H

#include "veil.h"

#include <stdarg.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#if defined(__GNUC__)
#define VEIL_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define VEIL_PRINTF(a, b)
#endif

/* Eight 64-bit words as one GCC vector (GCC and Clang): `veil_u64x8 a, b; a ^= b` is one AVX-512
 * operation where the function is built for it (tasks/compare_leaf8.c, net/io_core.c's folds). */
typedef uint64_t veil_u64x8 __attribute__((vector_size(64)));
/* On a function whose loops are such vector operations: built for AVX-512, AVX2 and the x86-64
 * baseline, the loader picks one; elsewhere the vectors are what the target's baseline makes of
 * them. Pass vectors to such functions by pointer (by value their ABI differs between the
 * clones). */
#if defined(__x86_64__) && !defined(__clang__)
/* (not with Clang: Clang 14 names the resolver of a function defined with target_clones
 * "NAME.ifunc" and leaves NAME undefined for calls from other files, so a Clang build, the
 * fuzzers' included, did not link; its vectors there are the baseline's) */
#define VEIL_CPU_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define VEIL_CPU_CLONES
#endif

/** Records status and a formatted message as this thread's last error; returns status. */
int veil_error(int status, const char *fmt, ...) VEIL_PRINTF(2, 3);

/** Prints a log line if level is enabled. Never pass secret values. */
void veil_log(enum veil_log_level level, const char *fmt, ...) VEIL_PRINTF(2, 3);
/** 1 when level would be printed. */
int veil_log_enabled(enum veil_log_level level);

#define VEIL_LOG_ERR(...) veil_log(VEIL_LOG_ERROR, __VA_ARGS__)
#define VEIL_LOG_WARN(...) veil_log(VEIL_LOG_WARN, __VA_ARGS__)
#define VEIL_LOG_INFO(...) veil_log(VEIL_LOG_INFO, __VA_ARGS__)
#define VEIL_LOG_DEBUG(...) veil_log(VEIL_LOG_DEBUG, __VA_ARGS__)

/** Aborts with file and line on a broken internal invariant; never for user or peer input. */
#define VEIL_ASSERT(cond)                                                                          \
    do {                                                                                           \
        if (!(cond))                                                                               \
            veil_assert_fail(#cond, __FILE__, __LINE__);                                           \
    } while (0)
_Noreturn void veil_assert_fail(const char *expr, const char *file, int line);

/** 64-byte aligned allocation of n bytes (n may be 0); NULL on failure with the error recorded. */
void *veil_aligned_alloc(size_t n);
void veil_aligned_free(void *p);
/** Overwrites n bytes with zeros in a way the compiler may not elide; from
 * VEIL_WIPE_STREAMING_MIN bytes on (x86-64) with non-temporal stores, which bypass the cache: a
 * large buffer being given up is not worth caching (base/status.c). */
void veil_wipe(void *p, size_t n);
#define VEIL_WIPE_STREAMING_MIN ((size_t)256 << 10)
/** Monotonic clock in seconds. */
double veil_now(void);
/** pthread_cond_timedwait for at most ms milliseconds from now (mu held); its return value. */
int veil_cond_wait_ms(pthread_cond_t *cv, pthread_mutex_t *mu, long ms);

/** hex.c: the value of hex digit c (0-9, a-f, A-F), or -1 when c is not one. */
int veil_hex_digit(int c);
/** hex.c: decodes the 2n hex digits at hex into n bytes at out, stopping at the first character
 *  that is not a hex digit (a NUL included, so a shorter string is never read past its end).
 *  Returns how many characters were hex digits: 2n when all were; bytes before the bad one are
 *  written. */
size_t veil_hex_decode(const char *hex, uint8_t *out, size_t n);

/** Little-endian integers at p (files and the wire are little-endian whatever the host). */
static inline void veil_put_le32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}
static inline void veil_put_le64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}
static inline uint32_t veil_get_le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static inline uint64_t veil_get_le64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

#endif

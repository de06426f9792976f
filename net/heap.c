/*
 * heap.c — keeps glibc's malloc from handing its heap back to the kernel between rounds.
 *
 * ZeroMQ allocates every message it receives with malloc (a data chunk: 512 KiB by default) and
 * Veil frees it once its words are in their tensor. With glibc's defaults the first free of such
 * a chunk raises the mmap threshold to its size and the trim threshold to twice that, so each
 * time a round's chunks are freed, the free top of ZeroMQ's arena beyond about 1 MiB goes back to
 * the kernel (MADV_DONTNEED) and the next round's chunks are received into pages the kernel must
 * fault in and clear again: in the last 1.6 s of a LeNet-5 batch-100 session (perf, both
 * parties) 4.5 % of all CPU samples were the kernel clearing pages under ZeroMQ's recv, 0.7 %
 * with the thresholds below (bench/README-latency.md). So when a session opens, the mmap
 * threshold is set above the session's largest chunk message and the trim threshold to 64 MiB:
 * up to 64 MiB of freed memory per arena stays with the process for the next round.
 *
 * These are process-wide settings of the C library. They are left alone when the process's
 * environment already tunes malloc (GLIBC_TUNABLES naming glibc.malloc, or MALLOC_TRIM_THRESHOLD_,
 * MALLOC_MMAP_THRESHOLD_, MALLOC_TOP_PAD_ or MALLOC_MMAP_MAX_ set), in sanitizer builds (whose
 * allocator is not glibc's), and with any other C library.
 */
#include "config.h"
#include "base/base_internal.h"
#include "base/env.h"
#include "net/net_internal.h"

#include <string.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

#define KEEP_TRIM_BYTES ((size_t)64 << 20)
#define MMAP_MAX_BYTES ((size_t)32 << 20) /* glibc's largest mmap threshold on 64-bit hosts */

int veil_net_heap_user_tuned(void)
{
    const char *t = veil_env_get("GLIBC_TUNABLES");
    if (t && strstr(t, "glibc.malloc."))
        return 1;
    static const char *const vars[] = {"MALLOC_TRIM_THRESHOLD_", "MALLOC_MMAP_THRESHOLD_",
                                       "MALLOC_TOP_PAD_", "MALLOC_MMAP_MAX_"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
        if (veil_env_get(vars[i]))
            return 1;
    return 0;
}

int veil_net_keep_heap(size_t chunk_bytes)
{
#if defined(__GLIBC__) && defined(M_TRIM_THRESHOLD) && defined(M_MMAP_THRESHOLD) &&                \
    !defined(VEIL_SANITIZERS)
    if (veil_net_heap_user_tuned()) {
        VEIL_LOG_DEBUG("net: malloc is tuned by the environment; Veil leaves it as it is");
        return 0;
    }
    /* a received chunk: the payload, the frame header and the seal, and ZeroMQ's own header */
    size_t mmap_min = chunk_bytes + ((size_t)1 << 20);
    if (mmap_min < ((size_t)4 << 20))
        mmap_min = (size_t)4 << 20;
    if (mmap_min > MMAP_MAX_BYTES)
        mmap_min = MMAP_MAX_BYTES;
    if (mallopt(M_MMAP_THRESHOLD, (int)mmap_min) != 1 ||
        mallopt(M_TRIM_THRESHOLD, (int)KEEP_TRIM_BYTES) != 1) {
        VEIL_LOG_WARN("net: glibc refused the malloc thresholds (mmap %zu, trim %zu bytes)",
                      mmap_min, KEEP_TRIM_BYTES);
        return 0;
    }
    return 1;
#else
    (void)chunk_bytes;
    return 0;
#endif
}

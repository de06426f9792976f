/*
 * secmem.c — keeping secrets out of core dumps (see secmem.h): the process-wide protection
 * (PR_SET_DUMPABLE, with the VEIL_ALLOW_CORE_DUMPS opt-out read through env.c) and
 * MADV_DONTDUMP on the page-aligned parts of buffers that hold keys and shares.
 */
#include "config.h"
#include "base/secmem.h"
#include "base/base_internal.h"
#include "base/env.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/mman.h>
#include <sys/prctl.h>
#endif

#define DONTDUMP_MIN (64u << 10)

void veil_secmem_protect_process(void)
{
#ifdef __linux__
    if (veil_env_allow_core_dumps()) {
        VEIL_LOG_DEBUG("VEIL_ALLOW_CORE_DUMPS=1: this process stays dumpable (debugging only: a "
                       "core file would hold keys and shares)");
        return;
    }
    if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0)
        VEIL_LOG_WARN("cannot make the process non-dumpable: a core file could hold secrets");
#endif
}

/* Marks [start, end) rounded inwards to whole pages. */
static void dontdump_pages(void *p, size_t n)
{
#if defined(__linux__) && defined(MADV_DONTDUMP)
    const uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t start = ((uintptr_t)p + page - 1) & ~(page - 1);
    uintptr_t end = ((uintptr_t)p + n) & ~(page - 1);
    if (end > start)
        (void)madvise((void *)start, end - start, MADV_DONTDUMP); /* best effort */
#else
    (void)p, (void)n;
#endif
}

void veil_secmem_dontdump(void *p, size_t n)
{
    if (p && n >= DONTDUMP_MIN)
        dontdump_pages(p, n);
}

void *veil_secmem_calloc_pages(size_t n)
{
    const size_t page = (size_t)sysconf(_SC_PAGESIZE);
    const size_t len = (n + page - 1) / page * page;
    void *p = NULL;
    if (posix_memalign(&p, page, len ? len : page) != 0)
        return NULL;
    memset(p, 0, len ? len : page);
    dontdump_pages(p, len ? len : page);
    return p;
}

/*
 * secmem.h — keeping secrets out of core dumps (internal). A party process is made not dumpable
 * when its session opens (no core file, no ptrace attach by other processes of the same user),
 * unless VEIL_ALLOW_CORE_DUMPS=1 asks otherwise for debugging; and buffers that hold secrets
 * (the network session with its CURVE secret key, share tensors) are marked MADV_DONTDUMP, so
 * that even a process allowed to dump leaves them out. Never installed.
 */
#ifndef VEIL_BASE_SECMEM_H
#define VEIL_BASE_SECMEM_H

#include <stddef.h>

/** Makes this process not dumpable (prctl(PR_SET_DUMPABLE, 0)) unless VEIL_ALLOW_CORE_DUMPS=1.
 *  Idempotent; a no-op off Linux. */
void veil_secmem_protect_process(void);

/** Marks the whole pages inside [p, p + n) MADV_DONTDUMP. Only buffers of at least 64 KiB are
 *  marked (each call may split a heap mapping; small buffers are left to the process-wide
 *  protection); the partial pages at either end stay as they are. */
void veil_secmem_dontdump(void *p, size_t n);

/** A zeroed, page-aligned allocation of n bytes, all of it MADV_DONTDUMP; release it with
 *  free(). NULL when out of memory. */
void *veil_secmem_calloc_pages(size_t n);

#endif

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
#include <stdint.h>

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

/**
 * A zeroed, 64-byte-aligned buffer of `bytes` bytes for share data (pages MADV_DONTDUMP as
 * veil_secmem_dontdump), taken from the process's pool of given-back buffers of exactly that size
 * when one is there, else freshly allocated: one of 256 KiB or more is mapped from the kernel
 * (zero pages, faulted in where they are first written), a smaller one comes from malloc and is
 * zeroed here. NULL when out of memory. Release it with veil_secbuf_put only (a mapped buffer
 * must not reach free()). Thread-safe.
 */
void *veil_secbuf_get(size_t bytes);

/**
 * Gives back a buffer of at least `bytes` bytes: one from veil_secbuf_get, or any 64-byte-aligned
 * malloc-family buffer (the pool frees it, or unmaps what it mapped). While the pool has room (at
 * most 256 sizes, veil_secbuf_max_bytes in all, none over 256 MiB: a run's working set) it is kept
 * for the next veil_secbuf_get of that size and wiped (veil_wipe of `bytes` bytes) by the pool's
 * wiper thread in the background, or by that get if the wiper has not reached it yet; one of at
 * most 16 KiB is wiped here at once (cheaper than waking the wiper). Otherwise it is wiped here
 * and freed. NULL-safe; thread-safe.
 */
void veil_secbuf_put(void *p, size_t bytes);

/**
 * Puts into the pool, ready for veil_secbuf_get, one zeroed buffer of each of the n sizes in
 * bytes[] (repeat a size to reserve several), its pages faulted in now (a buffer of 256 KiB or
 * more mapped with MAP_POPULATE, a smaller one zeroed by memset): a run that then takes them does
 * not pay the page faults. Within the pool's limits, as veil_secbuf_put: a size that does not fit
 * (over 256 MiB, beyond veil_secbuf_max_bytes in all, or a 257th size) is left out. Stops at the
 * first allocation that fails. Returns the bytes reserved. Thread-safe.
 */
size_t veil_secbuf_reserve(const size_t *bytes, size_t n);

/** Wipes what is still dirty and frees every pooled buffer; called when an MPC context closes. */
void veil_secbuf_drain(void);

/** The pool's bound in bytes: VEIL_POOL_MAX_MB MiB when set to 16..1048576, else a quarter of
 *  the memory the process may use (the machine's physical memory, or its control group's limit
 *  when lower), at least 1 GiB (a bad value: a warning and the default). Read once, at the first
 *  call or give-back. */
size_t veil_secbuf_max_bytes(void);

/** Bytes held by the pool now, wiped or not (tests). */
size_t veil_secbuf_pooled_bytes(void);

/** How many veil_secbuf_get calls the pool could not serve since the process started, and their
 *  bytes: fresh allocations, whose pages fault in at first use (tests, benchmarks). */
void veil_secbuf_fresh(uint64_t *count, uint64_t *bytes);

/** Pooled buffers not wiped yet (tests). */
size_t veil_secbuf_dirty(void);

#endif

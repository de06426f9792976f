/* Tests the send staging pool (net/pool.c): a pool of 6 buffers of 1 MiB + 100 bytes hands out 6
 * distinct buffers, then none; each has every whole page resident (mincore) before anything
 * reads or writes it (the pool writes its buffers once when it allocates them, so the I/O thread
 * does not fault them in while it seals the first runs' chunks), and is writable end to end. Giving
 * the first back to an empty pool calls the wake function once; every buffer given back is
 * available again, and the same buffers come out. */
#include "config.h"
#include "test_util.h"
#include "net/net_internal.h"

#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define COUNT 6
#define SIZE (((size_t)1 << 20) + 100)

static int wakes;
static void wake(void *arg)
{
    (void)arg;
    wakes++;
}

/* The resident pages among the whole pages of [p, p + n), their count in *whole. */
static size_t resident_pages(const void *p, size_t n, size_t *whole)
{
    const size_t page = (size_t)sysconf(_SC_PAGESIZE);
    const uintptr_t start = ((uintptr_t)p + page - 1) & ~(uintptr_t)(page - 1);
    const uintptr_t end = ((uintptr_t)p + n) & ~(uintptr_t)(page - 1);
    unsigned char vec[1024];
    *whole = end > start ? (end - start) / page : 0;
    if (*whole == 0 || *whole > sizeof vec || mincore((void *)start, end - start, vec) != 0)
        return 0;
    size_t k = 0;
    for (size_t i = 0; i < *whole; i++)
        k += vec[i] & 1;
    return k;
}

int main(void)
{
    struct veil_net_pool *p = veil_net_pool_new(COUNT, SIZE, wake, NULL);
    VT_CHECK(p != NULL, "pool: %s", veil_last_error());
    if (!p)
        return veil_test_status();
    VT_CHECK(veil_net_pool_available(p) == COUNT, "%zu buffers available, not %d",
             veil_net_pool_available(p), COUNT);
    uint8_t *b[COUNT];
    for (int i = 0; i < COUNT; i++) {
        b[i] = veil_net_pool_get(p);
        VT_CHECK(b[i] != NULL, "buffer %d: none", i);
        if (!b[i])
            return veil_test_status();
        size_t whole = 0;
        const size_t res = resident_pages(b[i], SIZE, &whole);
        VT_CHECK(whole > 0 && res == whole, "buffer %d: %zu of its %zu pages resident", i, res,
                 whole);
        for (int j = 0; j < i; j++)
            VT_CHECK(b[j] != b[i], "buffers %d and %d are the same", j, i);
        memset(b[i], 0xa5, SIZE);
    }
    VT_CHECK(veil_net_pool_get(p) == NULL, "a seventh buffer from a pool of %d", COUNT);
    VT_CHECK(veil_net_pool_available(p) == 0, "%zu available when all are out",
             veil_net_pool_available(p));
    for (int i = 0; i < COUNT; i++)
        veil_net_pool_put(p, b[i]);
    VT_CHECK(wakes == 1, "%d wakes for the give-backs (the first to an empty pool wakes)", wakes);
    VT_CHECK(veil_net_pool_available(p) == COUNT, "%zu available after the give-backs",
             veil_net_pool_available(p));
    for (int i = 0; i < COUNT; i++) {
        uint8_t *again = veil_net_pool_get(p);
        int known = 0;
        for (int j = 0; j < COUNT; j++)
            known |= again == b[j];
        VT_CHECK(known, "buffer %d after the give-backs is not one of the pool's", i);
    }
    veil_net_pool_destroy(&p);
    VT_CHECK(p == NULL, "destroy left the pointer set");
    return veil_test_status();
}

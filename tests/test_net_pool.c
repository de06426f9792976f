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

#define COUNT 6
#define SIZE (((size_t)1 << 20) + 100)

static int wakes;
static void wake(void *arg)
{
    (void)arg;
    wakes++;
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
        const size_t res = veil_test_resident_pages(b[i], SIZE, &whole);
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

/* Tests which StarPU workers a party places over (sched/devices.c, used by
 * graph/secure/party_place.c), from worker counts alone so that no GPU is needed: kind AUTO takes
 * the CUDA workers when there are any, else the CPU workers; no count asked takes every worker of
 * the kind up to the placement's maximum; one GPU with more devices asked takes CPU workers
 * beside it (only with AUTO, and only up to 1 + the CPU workers); two GPUs never mix; explicit
 * CUDA without a CUDA worker is VEIL_ERR_UNSUPPORTED; too many devices, a negative count, an
 * unknown kind or no result are VEIL_ERR_INVAL. */
#include "config.h"

#include "sched/sched_internal.h"
#include "test_util.h"

static void expect(enum veil_device_kind asked, int ndev, int ncuda, int ncpu, int max, int rc,
                   enum veil_device_kind kind, int want_cuda, int want_cpu)
{
    struct veil_device_set s = {VEIL_DEVICE_COUNT, -1, -1};
    int got = veil_sched_devices(asked, ndev, ncuda, ncpu, max, &s);
    VT_CHECK(got == rc, "asked %d ndev %d (%d CUDA, %d CPU, max %d): rc %d, want %d", (int)asked,
             ndev, ncuda, ncpu, max, got, rc);
    if (got == VEIL_OK && rc == VEIL_OK)
        VT_CHECK(s.kind == kind && s.ncuda == want_cuda && s.ncpu == want_cpu,
                 "asked %d ndev %d (%d CUDA, %d CPU): kind %d %d+%d, want %d %d+%d", (int)asked,
                 ndev, ncuda, ncpu, (int)s.kind, s.ncuda, s.ncpu, (int)kind, want_cuda, want_cpu);
}

int main(void)
{
    const enum veil_device_kind A = VEIL_DEVICE_AUTO, C = VEIL_DEVICE_CPU, G = VEIL_DEVICE_CUDA;
    expect(A, 0, 0, 4, 8, VEIL_OK, C, 0, 4); /* no GPU: the CPU workers */
    expect(A, 2, 0, 4, 8, VEIL_OK, C, 0, 2);
    expect(A, 0, 2, 4, 8, VEIL_OK, G, 2, 0); /* GPUs: the CUDA workers */
    expect(A, 1, 4, 4, 8, VEIL_OK, G, 1, 0);
    expect(A, 0, 1, 4, 8, VEIL_OK, G, 1, 0); /* one GPU, nothing asked: just it */
    expect(A, 3, 1, 4, 8, VEIL_OK, G, 1, 2); /* one GPU, 3 asked: CPU workers beside it */
    expect(A, 5, 1, 4, 8, VEIL_OK, G, 1, 4);
    expect(A, 6, 1, 4, 8, VEIL_ERR_INVAL, G, 0, 0); /* more than 1 + 4 */
    expect(A, 3, 2, 4, 8, VEIL_ERR_INVAL, G, 0, 0); /* two GPUs never mix */
    expect(G, 2, 1, 4, 8, VEIL_ERR_INVAL, G, 0, 0); /* CUDA asked explicitly: CUDA only */
    expect(G, 0, 3, 4, 8, VEIL_OK, G, 3, 0);
    expect(G, 0, 0, 4, 8, VEIL_ERR_UNSUPPORTED, G, 0, 0);
    expect(C, 0, 2, 3, 8, VEIL_OK, C, 0, 3);  /* CPU asked: GPUs ignored */
    expect(A, 0, 0, 20, 8, VEIL_OK, C, 0, 8); /* capped at the placement's maximum */
    expect(A, 9, 0, 20, 8, VEIL_ERR_INVAL, C, 0, 0);
    expect(A, 9, 1, 20, 8, VEIL_ERR_INVAL, G, 0, 0);
    expect(A, -1, 0, 4, 8, VEIL_ERR_INVAL, C, 0, 0);
    expect(VEIL_DEVICE_COUNT, 0, 0, 4, 8, VEIL_ERR_INVAL, C, 0, 0);
    VT_CHECK(veil_sched_devices(A, 0, 0, 4, 8, NULL) == VEIL_ERR_INVAL, "NULL result");
    return veil_test_status();
}

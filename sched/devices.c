/*
 * devices.c — which StarPU workers a party places its tasks over (graph/secure/party_place.c),
 * as a function of the device kind and count asked for and of StarPU's worker counts alone, so
 * tests check every case without a GPU. Its CUDA workers when StarPU has any (kind AUTO), else its
 * CPU workers; with exactly one CUDA worker and more devices asked for than that (VEIL_DEVICES),
 * CPU workers join the GPU as a second device class (the CPU and CUDA bodies of every codelet give
 * the same bits, so the placement's results do not change).
 */
#include "config.h"

#include "sched/sched_internal.h"

#include "base/base_internal.h"

int veil_sched_devices(enum veil_device_kind asked, int ndev, int ncuda, int ncpu, int max,
                       struct veil_device_set *out)
{
    if (out == NULL || ndev < 0 || ncuda < 0 || ncpu < 0 || max < 1 ||
        (unsigned)asked >= VEIL_DEVICE_COUNT)
        return veil_error(VEIL_ERR_INVAL, "devices: bad arguments");
    enum veil_device_kind kind = asked;
    if (kind == VEIL_DEVICE_AUTO)
        kind = ncuda > 0 ? VEIL_DEVICE_CUDA : VEIL_DEVICE_CPU;
    if (kind == VEIL_DEVICE_CUDA && ncuda == 0)
        return VEIL_ERR_UNSUPPORTED; /* the caller says why (its build, STARPU_NCUDA) */
    const int n = kind == VEIL_DEVICE_CUDA ? ncuda : ncpu;
    out->kind = kind;
    if (ndev == 0)
        ndev = n < max ? n : max;
    if (ndev <= n && ndev <= max) {
        out->ncuda = kind == VEIL_DEVICE_CUDA ? ndev : 0;
        out->ncpu = kind == VEIL_DEVICE_CPU ? ndev : 0;
        return VEIL_OK;
    }
    if (asked == VEIL_DEVICE_AUTO && kind == VEIL_DEVICE_CUDA && ncuda == 1 && ndev <= max &&
        ndev - 1 <= ncpu) {
        out->ncuda = 1;
        out->ncpu = ndev - 1;
        return VEIL_OK;
    }
    return VEIL_ERR_INVAL; /* more than StarPU has or Veil places over: the caller says which */
}

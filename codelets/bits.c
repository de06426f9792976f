/*
 * bits.c — codelets, perf models and submit helpers of the bit-level layout operations: bit
 * extraction, packing bit k of 64 elements into a word and back, and bit-slicing (64x64
 * bit-matrix transpose per block of 64 words), the layout of the comparison circuit. CPU bodies
 * are in cpu/bits.c (bit extraction's in cpu/elementwise.c).
 */
#include "config.h"

#include "codelets/codelets_internal.h"
#ifdef VEIL_USE_CUDA
#include "codelets/cuda/cuda_internal.h"
#endif

#include "base/base_internal.h"
#include "base/trace.h"
#include "net/idle.h"

#include <string.h>

static struct starpu_perfmodel bit_extract_model = {.type = STARPU_HISTORY_BASED,
                                                    .symbol = "veil_bit_extract",
                                                    .size_base = veil_codelet_size_base};
static struct starpu_perfmodel bit_pack_model = {
    .type = STARPU_HISTORY_BASED, .symbol = "veil_bit_pack", .size_base = veil_codelet_size_base};
static struct starpu_perfmodel bit_unpack_model = {
    .type = STARPU_HISTORY_BASED, .symbol = "veil_bit_unpack", .size_base = veil_codelet_size_base};
static struct starpu_perfmodel bitslice_model = {
    .type = STARPU_HISTORY_BASED, .symbol = "veil_bitslice", .size_base = veil_codelet_size_base};

/* CUDA bodies (codelets/cuda/) are registered when the StarPU found has CUDA (VEIL_USE_CUDA). */
struct starpu_codelet veil_bit_extract_cl = {
    .cpu_funcs = {veil_bit_extract_cpu},
    .cpu_funcs_name = {"veil_bit_extract_cpu"},
#ifdef VEIL_USE_CUDA
    .cuda_funcs = {veil_bit_extract_cuda},
    .cuda_flags = {STARPU_CUDA_ASYNC},
#endif
    .nbuffers = 2,
    .modes = {STARPU_R, STARPU_W},
    .model = &bit_extract_model,
    .name = "veil_bit_extract",
};

struct starpu_codelet veil_bit_pack_cl = {
    .cpu_funcs = {veil_bit_pack_cpu},
    .cpu_funcs_name = {"veil_bit_pack_cpu"},
#ifdef VEIL_USE_CUDA
    .cuda_funcs = {veil_bit_pack_cuda},
    .cuda_flags = {STARPU_CUDA_ASYNC},
#endif
    .nbuffers = 2,
    .modes = {STARPU_R, STARPU_W},
    .model = &bit_pack_model,
    .name = "veil_bit_pack",
};

struct starpu_codelet veil_bit_unpack_cl = {
    .cpu_funcs = {veil_bit_unpack_cpu},
    .cpu_funcs_name = {"veil_bit_unpack_cpu"},
#ifdef VEIL_USE_CUDA
    .cuda_funcs = {veil_bit_unpack_cuda},
    .cuda_flags = {STARPU_CUDA_ASYNC},
#endif
    .nbuffers = 2,
    .modes = {STARPU_R, STARPU_W},
    .model = &bit_unpack_model,
    .name = "veil_bit_unpack",
};

struct starpu_codelet veil_bitslice_cl = {
    .cpu_funcs = {veil_bitslice_cpu},
    .cpu_funcs_name = {"veil_bitslice_cpu"},
#ifdef VEIL_USE_CUDA
    .cuda_funcs = {veil_bitslice_cuda},
    .cuda_flags = {STARPU_CUDA_ASYNC},
#endif
    .nbuffers = 2,
    .modes = {STARPU_R, STARPU_W},
    .model = &bitslice_model,
    .name = "veil_bitslice",
};

static size_t words_for(size_t n)
{
    return n / 64 + (n % 64 != 0);
}

/* Checks a and out as vectors of lengths related by the caller, then submits with k if >= 0. */
static int submit_pair(struct starpu_codelet *cl, const char *name, starpu_data_handle_t a,
                       starpu_data_handle_t out, int has_k, unsigned k, int priority)
{
    size_t na, nout;
    int rc;
    char what[64];

    snprintf(what, sizeof(what), "%s: input", name);
    if ((rc = veil_codelet_check_vector(a, what, &na)) != VEIL_OK)
        return rc;
    snprintf(what, sizeof(what), "%s: output", name);
    if ((rc = veil_codelet_check_vector(out, what, &nout)) != VEIL_OK)
        return rc;
    if (a == out)
        return veil_error(VEIL_ERR_INVAL, "%s: the output handle must differ from the input", name);
    if (cl == &veil_bit_pack_cl && nout != words_for(na))
        return veil_error(VEIL_ERR_SHAPE, "%s: %zu elements pack into %zu words, output has %zu",
                          name, na, words_for(na), nout);
    if (cl == &veil_bit_unpack_cl && na != words_for(nout))
        return veil_error(VEIL_ERR_SHAPE, "%s: %zu elements unpack from %zu words, input has %zu",
                          name, nout, words_for(nout), na);
    if (cl == &veil_bitslice_cl && words_for(na) != words_for(nout))
        return veil_error(VEIL_ERR_SHAPE,
                          "%s: input has %zu blocks of 64 words, output %zu (lengths %zu, %zu)",
                          name, words_for(na), words_for(nout), na, nout);

    uint64_t kv = k;
    if (has_k)
        rc = starpu_task_insert(cl, STARPU_R, a, STARPU_W, out, STARPU_VALUE, &kv, sizeof(kv),
                                STARPU_PRIORITY, priority, STARPU_EXECUTE_ON_WORKER,
                                veil_place_worker(out), VEIL_TRACE_TASK, 0);
    else
        rc = starpu_task_insert(cl, STARPU_R, a, STARPU_W, out, STARPU_PRIORITY, priority,
                                STARPU_EXECUTE_ON_WORKER, veil_place_worker(out), VEIL_TRACE_TASK, 0);
    veil_net_idle_kick(); /* it may be ready: resume paused workers */
    if (rc != 0)
        return veil_error(VEIL_ERR_STARPU, "%s: starpu_task_insert failed (%s)", name,
                          strerror(-rc));
    return VEIL_OK;
}

int veil_task_bit_extract(starpu_data_handle_t a, unsigned k, starpu_data_handle_t out,
                          int priority)
{
    if (k > 63)
        return veil_error(VEIL_ERR_INVAL, "bit_extract: bit index %u is out of range [0, 63]", k);
    return veil_codelet_submit_elementwise(&veil_bit_extract_cl, "bit_extract", a, NULL, out, 1, k,
                                           priority);
}

int veil_task_bit_pack(starpu_data_handle_t a, unsigned k, starpu_data_handle_t out, int priority)
{
    if (k > 63)
        return veil_error(VEIL_ERR_INVAL, "bit_pack: bit index %u is out of range [0, 63]", k);
    return submit_pair(&veil_bit_pack_cl, "bit_pack", a, out, 1, k, priority);
}

int veil_task_bit_unpack(starpu_data_handle_t words, starpu_data_handle_t out, int priority)
{
    return submit_pair(&veil_bit_unpack_cl, "bit_unpack", words, out, 0, 0, priority);
}

int veil_task_bitslice(starpu_data_handle_t a, starpu_data_handle_t out, int priority)
{
    return submit_pair(&veil_bitslice_cl, "bitslice", a, out, 0, 0, priority);
}

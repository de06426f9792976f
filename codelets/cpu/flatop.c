/*
 * cpu/flatop.c — CPU body of the flat relayout operations. Buffers: the nout output tiles, then
 * the nin input tiles; both lists are read as one flat vector each through a cursor that hands
 * out contiguous spans, so copies run as memcpy and the row operations as tight loops.
 */
#include "config.h"

#include "codelets/flatop_internal.h"

#include <string.h>

struct cursor {
    void **bufs;
    int first, count; /* buffers [first, first + count) */
    int cur;          /* current buffer, relative */
    size_t off;       /* words consumed in the current buffer */
};

static void cursor_init(struct cursor *c, void **bufs, int first, int count)
{
    c->bufs = bufs;
    c->first = first;
    c->count = count;
    c->cur = 0;
    c->off = 0;
}

/* Next contiguous span of at most want words; returns its length (0 at the end). */
static size_t cursor_span(struct cursor *c, size_t want, uint64_t **p)
{
    while (c->cur < c->count) {
        void *b = c->bufs[c->first + c->cur];
        size_t n = STARPU_VECTOR_GET_NX(b);
        if (c->off < n) {
            size_t len = n - c->off < want ? n - c->off : want;
            *p = (uint64_t *)STARPU_VECTOR_GET_PTR(b) + c->off;
            c->off += len;
            return len;
        }
        c->cur++;
        c->off = 0;
    }
    return 0;
}

static size_t total(void **bufs, int first, int count)
{
    size_t n = 0;
    for (int i = 0; i < count; i++)
        n += STARPU_VECTOR_GET_NX(bufs[first + i]);
    return n;
}

void veil_flatop_cpu(void *buffers[], void *cl_arg)
{
    struct veil_flatop_args args;
    starpu_codelet_unpack_args(cl_arg, &args);
    const struct veil_flatop_args *a = &args;
    struct cursor out, in;
    uint64_t *po, *pi;
    size_t lo, li;
    cursor_init(&out, buffers, 0, a->nout);
    cursor_init(&in, buffers, a->nout, a->nin);
    const size_t nin = total(buffers, a->nout, a->nin), nout = total(buffers, 0, a->nout);

    switch (a->kind) {
    case VEIL_FLATOP_COPY:
        while ((lo = cursor_span(&out, SIZE_MAX, &po)) != 0)
            for (size_t done = 0; done < lo; done += li) {
                li = cursor_span(&in, lo - done, &pi);
                memcpy(po + done, pi, li * 8);
            }
        break;
    case VEIL_FLATOP_ROWSUM:
        while ((lo = cursor_span(&out, SIZE_MAX, &po)) != 0)
            for (size_t r = 0; r < lo; r++) {
                uint64_t s = 0;
                for (uint64_t j = 0; j < a->k; j += li) {
                    li = cursor_span(&in, (size_t)(a->k - j), &pi);
                    for (size_t e = 0; e < li; e++)
                        s += pi[e];
                }
                po[r] = s;
            }
        break;
    case VEIL_FLATOP_BCAST:
        while ((li = cursor_span(&in, SIZE_MAX, &pi)) != 0)
            for (size_t r = 0; r < li; r++)
                for (uint64_t j = 0; j < a->k; j += lo) {
                    lo = cursor_span(&out, (size_t)(a->k - j), &po);
                    for (size_t e = 0; e < lo; e++)
                        po[e] = pi[r];
                }
        break;
    case VEIL_FLATOP_REPLICATE:
        for (uint64_t i = 0; i < a->k; i++) {
            const uint64_t c = a->add_const ? a->c[i] : 0;
            cursor_init(&in, buffers, a->nout, a->nin);
            for (size_t done = 0; done < nin; done += lo) {
                lo = cursor_span(&out, nin - done, &po);
                for (size_t e = 0; e < lo; e += li) {
                    li = cursor_span(&in, lo - e, &pi);
                    for (size_t q = 0; q < li; q++)
                        po[e + q] = pi[q] + c;
                }
            }
        }
        break;
    case VEIL_FLATOP_WSUM:
        for (uint64_t i = 0; i < a->k; i++) {
            const uint64_t w = a->c[i];
            cursor_init(&out, buffers, 0, a->nout);
            for (size_t done = 0; done < nout; done += lo) {
                lo = cursor_span(&out, nout - done, &po);
                for (size_t e = 0; e < lo; e += li) {
                    li = cursor_span(&in, lo - e, &pi);
                    if (i == 0) {
                        const uint64_t c0 = a->add_const ? a->c0 : 0;
                        for (size_t q = 0; q < li; q++)
                            po[e + q] = c0 + w * pi[q];
                    } else {
                        for (size_t q = 0; q < li; q++)
                            po[e + q] += w * pi[q];
                    }
                }
            }
        }
        break;
    default:
        break;
    }
}

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

/* Skips n words. */
static void cursor_skip(struct cursor *c, size_t n)
{
    uint64_t *p;
    for (size_t done = 0, l; done < n; done += l)
        if ((l = cursor_span(c, n - done, &p)) == 0)
            return;
}

/* Copies n words from in to out, span by span. */
static void cursor_copy(struct cursor *out, struct cursor *in, size_t n)
{
    uint64_t *po, *pi;
    size_t lo, li;
    for (size_t done = 0; done < n; done += lo) {
        if ((lo = cursor_span(out, n - done, &po)) == 0)
            return;
        for (size_t e = 0; e < lo; e += li)
            if ((li = cursor_span(in, lo - e, &pi)) == 0)
                return;
            else
                memcpy(po + e, pi, li * 8);
    }
}

static size_t total(void **bufs, int first, int count)
{
    size_t n = 0;
    for (int i = 0; i < count; i++)
        n += STARPU_VECTOR_GET_NX(bufs[first + i]);
    return n;
}

/* One switch over the nine flat relayouts, each case a few lines over the same two cursors: over
 * 100 lines in all, kept together because every case reads as the same walk and the CUDA body
 * (cuda/flatop.cu) mirrors it case by case. */
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
    case VEIL_FLATOP_TILE:
        /* out index (q nin + e) k + r holds in[e]: the input is walked once per period q */
        for (size_t q = 0; q < nout / (a->k * nin); q++) {
            cursor_init(&in, buffers, a->nout, a->nin);
            while ((li = cursor_span(&in, SIZE_MAX, &pi)) != 0)
                for (size_t e = 0; e < li; e++)
                    for (uint64_t r = 0; r < a->k; r += lo) {
                        lo = cursor_span(&out, (size_t)(a->k - r), &po);
                        for (size_t t = 0; t < lo; t++)
                            po[t] = pi[e];
                    }
        }
        break;
    case VEIL_FLATOP_FOLD: {
        /* in index (q nout + j) k + r adds into out[j]: the output is walked once per period */
        int first = 1;
        for (size_t q = 0; q < nin / (a->k * nout); q++, first = 0) {
            cursor_init(&out, buffers, 0, a->nout);
            while ((lo = cursor_span(&out, SIZE_MAX, &po)) != 0)
                for (size_t j = 0; j < lo; j++) {
                    uint64_t s = first ? 0 : po[j];
                    for (uint64_t r = 0; r < a->k; r += li) {
                        li = cursor_span(&in, (size_t)(a->k - r), &pi);
                        for (size_t t = 0; t < li; t++)
                            s += pi[t];
                    }
                    po[j] = s;
                }
        }
        break;
    }
    case VEIL_FLATOP_INTERLEAVE: {
        /* one input cursor per part, each positioned at its part's first row */
        struct cursor part[VEIL_FLATOP_MAX_COPIES];
        uint64_t row = 0;
        for (uint64_t p = 0; p < a->k; p++)
            row += a->c[p];
        const size_t rows = nin / row;
        size_t start = 0;
        for (uint64_t p = 0; p < a->k; p++) {
            cursor_init(&part[p], buffers, a->nout, a->nin);
            cursor_skip(&part[p], start);
            start += rows * a->c[p];
        }
        for (size_t r = 0; r < rows; r++)
            for (uint64_t p = 0; p < a->k; p++)
                cursor_copy(&out, &part[p], a->c[p]);
        break;
    }
    case VEIL_FLATOP_SLICE:
        for (size_t r = 0; r < nin / a->c[0]; r++) {
            cursor_skip(&in, a->c[1]);
            cursor_copy(&out, &in, a->k);
            cursor_skip(&in, a->c[0] - a->c[1] - a->k);
        }
        break;
    default:
        break;
    }
}

/*
 * bitcirc_build.c — builds the bit-sliced circuits of bitcirc.h: gates appended in topological
 * order, then the gates no output needs dropped, the wires renumbered densely, each gate given
 * its level and the list sorted by level (ANDs first within a level). Plus a plaintext
 * evaluator of a built circuit (the tests' and the models' reference).
 */
#include "config.h"

#include "tasks/bitcirc.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

struct builder {
    struct veil_bitc_op *ops;
    int nops, cap, nwires, failed;
};

static uint16_t emit(struct builder *bd, int kind, int a, int b)
{
    if (bd->failed)
        return 0;
    if (bd->nwires >= UINT16_MAX) {
        bd->failed = 1;
        return 0;
    }
    if (bd->nops == bd->cap) {
        const int cap = bd->cap ? 2 * bd->cap : 256;
        struct veil_bitc_op *n = realloc(bd->ops, sizeof *n * (size_t)cap);
        if (!n) {
            bd->failed = 1;
            return 0;
        }
        bd->ops = n;
        bd->cap = cap;
    }
    const uint16_t dst = (uint16_t)bd->nwires++;
    bd->ops[bd->nops++] = (struct veil_bitc_op){
        .kind = (uint8_t)kind, .dst = dst, .a = (uint16_t)a, .b = (uint16_t)b};
    return dst;
}

static int reads_b_wire(int kind)
{
    return kind == VEIL_BITC_XOR || kind == VEIL_BITC_AND;
}

static int reads_a_wire(int kind)
{
    return kind != VEIL_BITC_RIN;
}

/* Drops dead gates, renumbers the wires, levels and sorts: the circuit, or NULL. */
static struct veil_bitc *finish(struct builder *bd, const uint16_t *out, int nout, int nbits)
{
    struct veil_bitc *b = NULL;
    uint8_t *live = calloc((size_t)bd->nwires, 1);
    int *map = malloc(sizeof *map * (size_t)bd->nwires);
    int *depth = calloc((size_t)bd->nwires, sizeof *depth);
    if (!live || !map || !depth || bd->failed)
        goto out;
    for (int i = 0; i < nout; i++)
        live[out[i]] = 1;
    for (int i = bd->nops - 1; i >= 0; i--) { /* the list is topological: one backward pass */
        const struct veil_bitc_op *o = &bd->ops[i];
        if (!live[o->dst])
            continue;
        if (reads_a_wire(o->kind))
            live[o->a] = 1;
        if (reads_b_wire(o->kind))
            live[o->b] = 1;
    }
    int n = 0, w = 0;
    for (int i = 0; i < bd->nops; i++)
        if (live[bd->ops[i].dst])
            n++;
    b = calloc(1, sizeof *b + sizeof(struct veil_bitc_op) * (size_t)n);
    if (!b)
        goto out;
    int levels = 0;
    for (int i = 0; i < bd->nops; i++) {
        struct veil_bitc_op o = bd->ops[i];
        if (!live[o.dst])
            continue;
        int d = 0;
        if (reads_a_wire(o.kind)) {
            o.a = (uint16_t)map[o.a];
            d = depth[o.a];
        }
        if (reads_b_wire(o.kind)) {
            o.b = (uint16_t)map[o.b];
            if (depth[o.b] > d)
                d = depth[o.b];
        }
        if (o.kind == VEIL_BITC_AND)
            d++;
        if (d > VEIL_BITC_MAX_LEVELS) {
            free(b);
            b = NULL;
            goto out;
        }
        map[o.dst] = w;
        o.dst = (uint16_t)w;
        depth[w++] = d;
        o.level = (uint8_t)d;
        b->ops[b->nops++] = o;
        if (d > levels)
            levels = d;
    }
    /* stable sort by (level, free after AND): insertion sort keeps the topological order */
    for (int i = 1; i < b->nops; i++) {
        const struct veil_bitc_op o = b->ops[i];
        const int key = 2 * o.level + (o.kind != VEIL_BITC_AND);
        int j = i - 1;
        while (j >= 0 && 2 * b->ops[j].level + (b->ops[j].kind != VEIL_BITC_AND) > key) {
            b->ops[j + 1] = b->ops[j];
            j--;
        }
        b->ops[j + 1] = o;
    }
    for (int i = 0; i < b->nops; i++)
        if (b->ops[i].kind == VEIL_BITC_AND) {
            b->nand[b->ops[i].level]++;
            b->nand_total++;
        }
    b->nbits = nbits;
    b->nwires = w;
    b->levels = levels;
    b->nout = nout;
    for (int i = 0; i < nout; i++)
        b->out[i] = (uint16_t)map[out[i]];
out:
    free(live);
    free(map);
    free(depth);
    free(bd->ops);
    return b;
}

/* The circuit of bitcirc.h's "octave circuit". */
static struct veil_bitc *build_octave(int p0, int p1)
{
    struct builder bd = {0};
    uint16_t g[VEIL_BITC_MAX_BITS], p[VEIL_BITC_MAX_BITS], s[VEIL_BITC_MAX_BITS];
    uint16_t a[VEIL_BITC_MAX_OUT], out[VEIL_BITC_MAX_OUT];
    for (int q = 0; q <= p1; q++) { /* leaves: g_q = c_q r_q, p_q = c_q ^ r_q */
        const uint16_t r = emit(&bd, VEIL_BITC_RIN, 0, q);
        g[q] = emit(&bd, VEIL_BITC_CAND, r, q);
        p[q] = emit(&bd, VEIL_BITC_CXOR, r, q);
    }
    /* Sklansky prefix over positions 0..p1-1: after it (g[j], pp[j]) is the group [0, j] */
    uint16_t pp[VEIL_BITC_MAX_BITS];
    memcpy(pp, p, sizeof pp);
    for (int span = 1; span < p1; span <<= 1)
        for (int j = 0; j < p1; j++) {
            if (!(j & span))
                continue;
            const int base = (j & ~(2 * span - 1)) + span - 1;
            const uint16_t t = emit(&bd, VEIL_BITC_AND, pp[j], g[base]);
            const uint16_t np = emit(&bd, VEIL_BITC_AND, pp[j], pp[base]);
            g[j] = emit(&bd, VEIL_BITC_XOR, g[j], t); /* the terms never both hold */
            pp[j] = np;
        }
    const int k = p1 - p0 + 1;
    for (int q = p0; q <= p1; q++) /* s_q = p_q ^ carry into q; ~s_q */
        s[q] = emit(&bd, VEIL_BITC_NOT, emit(&bd, VEIL_BITC_XOR, p[q], g[q - 1]), 0);
    for (int i = 0; i < k; i++) /* node i holds position p1 - i */
        a[i] = s[p1 - i];
    for (int span = 1; span < k; span <<= 1) /* prefix AND over i: suffix over positions */
        for (int i = 0; i < k; i++)
            if (i & span)
                a[i] = emit(&bd, VEIL_BITC_AND, a[i], a[(i & ~(2 * span - 1)) + span - 1]);
    for (int i = 0; i < k; i++) /* o_i = [x < 2^(p0 + i)]: the AND over positions p0+i..p1 */
        out[i] = a[k - 1 - i];
    return finish(&bd, out, k, p1 + 1);
}

static pthread_mutex_t cache_mu = PTHREAD_MUTEX_INITIALIZER;
static struct veil_bitc *cache[VEIL_BITC_MAX_BITS][VEIL_BITC_MAX_BITS];

const struct veil_bitc *veil_bitc_octave(int p0, int p1)
{
    if (p0 < 1 || p1 < p0 || p1 >= VEIL_BITC_MAX_BITS || p1 - p0 >= VEIL_BITC_MAX_OUT)
        return NULL;
    pthread_mutex_lock(&cache_mu);
    if (!cache[p0][p1])
        cache[p0][p1] = build_octave(p0, p1);
    const struct veil_bitc *b = cache[p0][p1];
    pthread_mutex_unlock(&cache_mu);
    return b;
}

void veil_bitc_eval(const struct veil_bitc *b, uint64_t c, uint64_t r, uint8_t *out)
{
    uint64_t *w = calloc((size_t)b->nwires, sizeof *w), cb[64], rb[64];
    if (!w) {
        memset(out, 0, (size_t)b->nout);
        return;
    }
    for (int q = 0; q < 64; q++) {
        cb[q] = (c >> q) & 1;
        rb[q] = (r >> q) & 1;
    }
    for (int i = 0; i < b->nops; i++) /* one bit per word, as the single party: pub = 1 */
        w[b->ops[i].dst] = veil_bitc_gate(&b->ops[i], cb, rb, w, 1, 1);
    for (int i = 0; i < b->nout; i++)
        out[i] = (uint8_t)w[b->out[i]];
    free(w);
}

/*
 * prodk_common.h — the product of k secret ring values in ONE round (k = 2..5; internal). Each
 * value x_i is opened masked, e_i = x_i - a_i with a_i uniform, and
 *     prod_i x_i = prod_i (e_i + a_i) = sum over T in {0..k-1} of (prod_{i notin T} e_i) a_T
 * with a_T = prod_{i in T} a_i: linear in the shares of a_T once the e_i are public. a_{} = 1 is
 * added by party 0 only, a_{i} is the mask share, and the 2^k - k - 1 products with |T| >= 2 are
 * the corrected part of a PRODK item (tasks/preproc.h), row veil_prodk_row(T) (ascending masks).
 * Shared by the dealer (preproc_gen.c), the CPU body (prodk.c) and the CUDA body
 * (cuda/compare.cu): one inline function is the math of every evaluator.
 */
#ifndef VEIL_TASKS_PRODK_COMMON_H
#define VEIL_TASKS_PRODK_COMMON_H

#include "codelets/hd_common.h"

#include <stdint.h>

#define VEIL_PRODK_MIN 2
#define VEIL_PRODK_MAX 5

/* Products a PRODK item holds per record for k factors: the subsets of 2 or more. */
static inline VEIL_HD int veil_prodk_nprods(int k)
{
    return (1 << k) - k - 1;
}

/* Row of the product over set t (|t| >= 2) among them: t minus the sets of fewer than 2 elements
 * up to t (the empty set and 1, 2, 4, ..., 2^floor(log2 t)). */
static inline VEIL_HD int veil_prodk_row(unsigned t)
{
    int l = 0;
    while ((2u << l) <= t)
        l++;
    return (int)t - 2 - l;
}

/* This party's share of prod_i x_i of one record: e[k] the opened words, a[k] its mask shares,
 * pr its product shares; one = 1 at party 0 and 0 elsewhere. v[t] starts as the share of a_t
 * (one, the masks at t = 1, 2, 4, ..., the product rows in ascending t as veil_prodk_row numbers
 * them); folding out input i (from the last) multiplies the sets without i by e_i and adds the
 * sets with i, so v[0] ends as the sum of a_T prod_{i notin T} e_i in 2^k - 1 multiply-adds. */
static inline VEIL_HD uint64_t veil_prodk_finish(const uint64_t *e, const uint64_t *a,
                                                 const uint64_t *pr, int k, uint64_t one)
{
    uint64_t v[1 << VEIL_PRODK_MAX];
    v[0] = one;
    int row = 0, mask = 0;
    for (unsigned t = 1; t < (1u << k); t++)
        v[t] = (t & (t - 1)) == 0 ? a[mask++] : pr[row++];
    for (int i = k - 1; i >= 0; i--)
        for (unsigned t = 0; t < (1u << i); t++)
            v[t] = v[t] * e[i] + v[t | 1u << i];
    return v[0];
}

#endif /* VEIL_TASKS_PRODK_COMMON_H */

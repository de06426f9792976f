/*
 * elementwise_common.h — the element math of the fifteen elementwise codelets (ring arithmetic,
 * bitwise, shifts, bit extraction), shared by the CPU bodies (cpu/elementwise.c) and the CUDA
 * kernels (cuda/elementwise.cu): one operation code per codelet and one function that applies it
 * to one element. Both bodies call veil_ew_apply with the code as a compile-time constant, so the
 * switch folds away and each loop is the plain expression it replaces (vectorised on the CPU), and
 * both compute the same expression bit for bit.
 */
#ifndef VEIL_ELEMENTWISE_COMMON_H
#define VEIL_ELEMENTWISE_COMMON_H

#include "codelets/hd_common.h"
#include "codelets/shift_common.h"

#include <stdint.h>

/*
 * Operation codes, grouped by what the second operand y of veil_ew_apply is: the binary ops read
 * b[i], the unary ops ignore y, the parameter ops read the uint64_t packed by the submit helper.
 */
enum veil_ew_op {
    VEIL_EW_ADD,
    VEIL_EW_SUB,
    VEIL_EW_MUL,
    VEIL_EW_XOR,
    VEIL_EW_AND, /* binary: y = b[i] */
    VEIL_EW_NEG,
    VEIL_EW_NOT, /* unary: y unused */
    VEIL_EW_MUL_SCALAR,
    VEIL_EW_ADD_SCALAR,
    VEIL_EW_XOR_MASK,
    VEIL_EW_AND_MASK,
    VEIL_EW_SHL,
    VEIL_EW_SHR,
    VEIL_EW_SAR,
    VEIL_EW_BIT_EXTRACT, /* parameter: y = the by-value argument (k in [0, 63] for shifts) */
    VEIL_EW_COUNT
};

/** Nonzero when op reads a second vector (b[i]); its codelet then has 3 buffers, otherwise 2. */
static inline VEIL_HD int veil_ew_binary(enum veil_ew_op op)
{
    return op <= VEIL_EW_AND;
}

/** Nonzero when op reads a by-value uint64_t argument. */
static inline VEIL_HD int veil_ew_has_param(enum veil_ew_op op)
{
    return op >= VEIL_EW_MUL_SCALAR;
}

/** Nonzero when op is a shift or bit extraction (its parameter is an amount in [0, 63]). */
static inline VEIL_HD int veil_ew_shift(enum veil_ew_op op)
{
    return op >= VEIL_EW_SHL;
}

/** One element of op: x op y (mod 2^64). Shift amounts are taken mod 64, as the bodies did. */
static inline VEIL_HD uint64_t veil_ew_apply(enum veil_ew_op op, uint64_t x, uint64_t y)
{
    switch (op) {
    case VEIL_EW_ADD:
    case VEIL_EW_ADD_SCALAR:
        return x + y;
    case VEIL_EW_SUB:
        return x - y;
    case VEIL_EW_MUL:
    case VEIL_EW_MUL_SCALAR:
        return x * y;
    case VEIL_EW_XOR:
    case VEIL_EW_XOR_MASK:
        return x ^ y;
    case VEIL_EW_AND:
    case VEIL_EW_AND_MASK:
        return x & y;
    case VEIL_EW_NEG:
        return 0 - x;
    case VEIL_EW_NOT:
        return ~x;
    case VEIL_EW_SHL:
        return x << (unsigned)(y & 63);
    case VEIL_EW_SHR:
        return x >> (unsigned)(y & 63);
    case VEIL_EW_SAR:
        return veil_sar_elem(x, (unsigned)(y & 63));
    case VEIL_EW_BIT_EXTRACT:
    default:
        return (x >> (unsigned)(y & 63)) & 1;
    }
}

#endif /* VEIL_ELEMENTWISE_COMMON_H */

/*
 * fixed.c — fixed-point encoding of reals into Z_2^64 and back (range and rounding in veil.h).
 */
#include "config.h"
#include "base/base_internal.h"

#include <math.h>

double veil_fixed_max_abs(int frac_bits)
{
    return ldexp(1.0, 62 - frac_bits);
}

static int check_frac_bits(int frac_bits)
{
    if (frac_bits < 0 || frac_bits > VEIL_FIXED_FRAC_BITS_MAX)
        return veil_error(VEIL_ERR_INVAL, "fixed point: %d fractional bits; use 0 to %d", frac_bits,
                          VEIL_FIXED_FRAC_BITS_MAX);
    return VEIL_OK;
}

static int encode_one(double x, int frac_bits, uint64_t *out, size_t index)
{
    if (isnan(x))
        return veil_error(VEIL_ERR_RANGE, "fixed point: element %zu is NaN", index);
    if (isinf(x))
        return veil_error(VEIL_ERR_RANGE, "fixed point: element %zu is infinite", index);
    double scaled = round(ldexp(x, frac_bits)); /* ties away from zero */
    if (fabs(scaled) >= ldexp(1.0, 62))
        return veil_error(VEIL_ERR_RANGE,
                          "fixed point: element %zu out of range: |x| must be below 2^%d "
                          "(%.3g) with %d fractional bits",
                          index, 62 - frac_bits, veil_fixed_max_abs(frac_bits), frac_bits);
    *out = (uint64_t)(int64_t)scaled;
    return VEIL_OK;
}

int veil_fixed_encode(double x, int frac_bits, uint64_t *out)
{
    int rc = check_frac_bits(frac_bits);
    if (rc != VEIL_OK)
        return rc;
    if (!out)
        return veil_error(VEIL_ERR_INVAL, "fixed point: NULL output");
    return encode_one(x, frac_bits, out, 0);
}

double veil_fixed_decode(uint64_t v, int frac_bits)
{
    return ldexp((double)(int64_t)v, -frac_bits);
}

int veil_fixed_encode_array(const double *x, size_t n, int frac_bits, uint64_t *out)
{
    int rc = check_frac_bits(frac_bits);
    if (rc != VEIL_OK)
        return rc;
    if (n && (!x || !out))
        return veil_error(VEIL_ERR_INVAL, "fixed point: NULL array");
    for (size_t i = 0; i < n; i++) {
        rc = encode_one(x[i], frac_bits, &out[i], i);
        if (rc != VEIL_OK)
            return rc;
    }
    return VEIL_OK;
}

void veil_fixed_decode_array(const uint64_t *v, size_t n, int frac_bits, double *out)
{
    for (size_t i = 0; i < n; i++)
        out[i] = veil_fixed_decode(v[i], frac_bits);
}

/* Tests fixed-point encoding: round trip, rounding rule, range limits, and refusal of NaN, inf and
 * out-of-range values (an error, never a silent wrap). */
#include "config.h"
#include "test_util.h"
#include "veil.h"

#include <math.h>
#include <stdio.h>
#include <string.h>


int main(void)
{
    uint64_t v;
    const int f = VEIL_FIXED_FRAC_BITS_DEFAULT;
    /* Exact values round-trip exactly. */
    const double exact[] = {0.0, 1.0, -1.0, 0.5, -0.5, 1234.25, -98765.0625, 1.0 / 65536};
    for (size_t i = 0; i < sizeof exact / sizeof exact[0]; i++) {
        VT_CHECK(veil_fixed_encode(exact[i], f, &v) == VEIL_OK, "encode %g", exact[i]);
        VT_CHECK(veil_fixed_decode(v, f) == exact[i], "round trip %g -> %g", exact[i],
              veil_fixed_decode(v, f));
    }
    /* Two's complement layout. */
    veil_fixed_encode(-1.0, f, &v);
    VT_CHECK(v == (uint64_t)0 - 65536, "-1.0 encodes as 2^64 - 2^16");
    veil_fixed_encode(0.0, f, &v);
    VT_CHECK(v == 0, "0 encodes as 0");
    /* Rounding to nearest, ties away from zero, error at most half an ulp. */
    veil_fixed_encode(0.5 / 65536, f, &v);
    VT_CHECK(v == 1, "tie rounds away from zero (+): %llu", (unsigned long long)v);
    veil_fixed_encode(-0.5 / 65536, f, &v);
    VT_CHECK(v == (uint64_t)-1, "tie rounds away from zero (-)");
    veil_fixed_encode(0.49 / 65536, f, &v);
    VT_CHECK(v == 0, "below half rounds down");
    for (int i = 0; i < 10000; i++) {
        double x = sin(i * 12.9898) * pow(10.0, (i % 12) - 3);
        VT_CHECK(veil_fixed_encode(x, f, &v) == VEIL_OK, "encode %g", x);
        VT_CHECK(fabs(veil_fixed_decode(v, f) - x) <= 0.5 / 65536 * (1 + 1e-9), "error > 1/2 ulp at %g",
              x);
    }
    /* Range: |x| < 2^(62-f). */
    double max = veil_fixed_max_abs(f);
    VT_CHECK(max == ldexp(1.0, 46), "max_abs(16) = 2^46");
    VT_CHECK(veil_fixed_encode(max - 1.0, f, &v) == VEIL_OK, "just inside the range");
    VT_CHECK(veil_fixed_encode(-(max - 1.0), f, &v) == VEIL_OK, "just inside the range (negative)");
    VT_CHECK(veil_fixed_encode(max, f, &v) == VEIL_ERR_RANGE, "2^46 refused");
    VT_CHECK(strstr(veil_last_error(), "out of range") != NULL, "message names the range: %s",
          veil_last_error());
    VT_CHECK(veil_fixed_encode(-max, f, &v) == VEIL_ERR_RANGE, "-2^46 refused");
    VT_CHECK(veil_fixed_encode(1e300, f, &v) == VEIL_ERR_RANGE, "1e300 refused");
    VT_CHECK(veil_fixed_encode(NAN, f, &v) == VEIL_ERR_RANGE, "NaN refused");
    VT_CHECK(strstr(veil_last_error(), "NaN") != NULL, "message says NaN: %s", veil_last_error());
    VT_CHECK(veil_fixed_encode(INFINITY, f, &v) == VEIL_ERR_RANGE, "inf refused");
    VT_CHECK(veil_fixed_encode(-INFINITY, f, &v) == VEIL_ERR_RANGE, "-inf refused");
    VT_CHECK(veil_fixed_encode(1.0, -1, &v) == VEIL_ERR_INVAL, "negative frac bits refused");
    VT_CHECK(veil_fixed_encode(1.0, 49, &v) == VEIL_ERR_INVAL, "49 frac bits refused");
    /* Arrays: the bad element's index is reported and nothing past it is written. */
    double xs[4] = {1.0, 2.0, NAN, 4.0};
    uint64_t out[4] = {7, 7, 7, 7};
    VT_CHECK(veil_fixed_encode_array(xs, 4, f, out) == VEIL_ERR_RANGE, "array with NaN refused");
    VT_CHECK(strstr(veil_last_error(), "element 2") != NULL, "index named: %s", veil_last_error());
    VT_CHECK(out[3] == 7, "nothing written past the bad element");
    double back[2];
    xs[2] = 3.0;
    VT_CHECK(veil_fixed_encode_array(xs, 4, 0, out) == VEIL_OK, "f = 0 integers");
    veil_fixed_decode_array(out, 2, 0, back);
    VT_CHECK(back[0] == 1.0 && back[1] == 2.0, "integer round trip");
    /* Other precisions. */
    VT_CHECK(veil_fixed_encode(3.0, 48, &v) == VEIL_OK && veil_fixed_decode(v, 48) == 3.0, "f=48");
    VT_CHECK(veil_fixed_encode(16384.0, 48, &v) == VEIL_ERR_RANGE, "f=48 range is 2^14");
    return veil_test_status();
}

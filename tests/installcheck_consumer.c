/* A program outside the tree built only from the installed veil.h and libveil found through the
 * installed veil.pc (tests/installcheck.sh, run by `make installcheck` and so by distcheck):
 * fixed-point round trip and refusal of NaN, seeded 3-party split and reconstruction, and a
 * status text. Prints "veil installcheck ok" and exits 0 on success. */
#include <veil.h>

#include <math.h>
#include <stdio.h>

int main(void)
{
    uint64_t w = 0;
    if (veil_fixed_encode(-1.5, VEIL_FIXED_FRAC_BITS_DEFAULT, &w) != VEIL_OK ||
        veil_fixed_decode(w, VEIL_FIXED_FRAC_BITS_DEFAULT) != -1.5) {
        fprintf(stderr, "fixed-point round trip failed\n");
        return 1;
    }
    if (veil_fixed_encode(NAN, VEIL_FIXED_FRAC_BITS_DEFAULT, &w) != VEIL_ERR_RANGE) {
        fprintf(stderr, "NaN was not refused\n");
        return 1;
    }
    const uint64_t secret[4] = {0, 1, UINT64_C(1) << 63, UINT64_MAX};
    const size_t dims[1] = {4};
    uint8_t seeds[2][VEIL_SEED_BYTES];
    veil_share_t *sh[3] = {NULL, NULL, NULL};
    uint64_t back[4] = {0};
    if (veil_seed_random(seeds[0]) != VEIL_OK || veil_seed_random(seeds[1]) != VEIL_OK ||
        veil_share_split(secret, VEIL_SHARE_ARITH, 1, dims, 3,
                         (const uint8_t(*)[VEIL_SEED_BYTES])seeds, 0, sh) != VEIL_OK ||
        veil_share_reconstruct((const veil_share_t *const *)sh, 3, back) != VEIL_OK) {
        fprintf(stderr, "split / reconstruct failed: %s\n", veil_last_error());
        return 1;
    }
    for (int p = 0; p < 3; p++)
        veil_share_destroy(&sh[p]);
    for (int i = 0; i < 4; i++)
        if (back[i] != secret[i]) {
            fprintf(stderr, "word %d reconstructed wrongly\n", i);
            return 1;
        }
    printf("veil installcheck ok (%s)\n", veil_strerror(VEIL_ERR_RANGE));
    return 0;
}

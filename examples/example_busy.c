/*
 * example_busy.c — the busy and overlap figures a tracing party (VEIL_TRACE) prints, shared by
 * the inference and training drivers: one line per run or step, and the fields of the last
 * key=value line. bench/suite.sh reads those fields by name from both drivers, so they are
 * written in one place.
 */
#include "models.h"

#include <stdio.h>

int example_print_busy(const veil_party_t *pt, const char *what, int index,
                       struct veil_run_profile *prof)
{
    /* VEIL_ERR_STATE when the party does not trace: nothing to print, and not an error */
    if (veil_party_last_profile(pt, prof) != VEIL_OK)
        return 0;
    printf("%s %d: compute %.1f%%, network %.1f%%, overlap %.1f%%, idle %.1f%%, overlap share "
           "%.2f, stretch %.2f\n",
           what, index, prof->total.compute_pct, prof->total.network_pct, prof->total.overlap_pct,
           prof->total.idle_pct, prof->total.overlap_share, prof->total.stretch);
    return 1;
}

void example_print_busy_fields(const struct veil_run_profile *prof)
{
    printf(" compute_s=%.4f network_s=%.4f compute_pct=%.1f network_pct=%.1f overlap_pct=%.1f "
           "overlap_share=%.3f stretch=%.3f",
           prof->total.compute_s, prof->total.network_s, prof->total.compute_pct,
           prof->total.network_pct, prof->total.overlap_pct, prof->total.overlap_share,
           prof->total.stretch);
}

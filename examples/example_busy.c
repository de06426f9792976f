/*
 * example_busy.c — the busy and overlap figures a tracing party (VEIL_TRACE) prints, shared by
 * the inference and training drivers: one line per run or step, and the fields of the last
 * key=value line. bench/suite.sh reads those fields by name from both drivers, so they are
 * written in one place.
 */
#include "models.h"

#include <stdio.h>

/* Role r's CPU time in percent of what busy_pct is a share of (the window times the CPUs). */
static double role_pct(const struct veil_cpu_use *c, int r)
{
    const double w = c->window_s * c->cpus;
    return w > 0 ? 100.0 * c->cpu_s[r] / w : 0.0;
}

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
    const struct veil_cpu_use *c = &prof->cpu;
    if (c->cpus > 0) { /* the process's threads: a core taken, not a peer waited for */
        printf("%s %d: cpu %.1f%% of %d CPU(s) (", what, index, c->busy_pct, c->cpus);
        for (int r = 0; r < VEIL_CPU_ROLE_COUNT; r++)
            printf("%s%s %.1f%%", r ? ", " : "", veil_cpu_role_name(r), role_pct(c, r));
        printf("), workers waited %.2f ms for a CPU in %llu slices\n",
               1e3 * c->wait_s[VEIL_CPU_WORKERS], (unsigned long long)c->slices[VEIL_CPU_WORKERS]);
    }
    return 1;
}

void example_print_busy_fields(const struct veil_run_profile *prof)
{
    printf(" compute_s=%.4f network_s=%.4f compute_pct=%.1f network_pct=%.1f overlap_pct=%.1f "
           "overlap_share=%.3f stretch=%.3f",
           prof->total.compute_s, prof->total.network_s, prof->total.compute_pct,
           prof->total.network_pct, prof->total.overlap_pct, prof->total.overlap_share,
           prof->total.stretch);
    const struct veil_cpu_use *c = &prof->cpu;
    if (c->cpus > 0)
        printf(" cpu_busy_pct=%.1f cpu_workers_pct=%.1f cpu_workers_wait_ms=%.3f", c->busy_pct,
               role_pct(c, VEIL_CPU_WORKERS), 1e3 * c->wait_s[VEIL_CPU_WORKERS]);
}

/*
 * test_net_emulate.c — link emulation (net/emulate.c): veil_link_parse converts every
 * documented unit exactly and refuses negative numbers, NaN, infinity, exponents, junk, a
 * missing comma and unknown units with VEIL_ERR_INVAL (leaving the output untouched); the
 * pacing model serialises chunks back to back at the bandwidth, adds the latency once per
 * chunk after its last byte, queues chunks that arrive while the wire is busy, and returns
 * monotone release times. Pure arithmetic: no clock, no sleeping.
 */
#include "config.h"
#include "net/emulate.h"

#include "veil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures;
static int verbose;

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);               \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

static int close_to(double a, double b)
{
    return fabs(a - b) <= 1e-12 * (fabs(b) > 1 ? fabs(b) : 1);
}

static void expect_parse(const char *text, double latency_s, double bandwidth_Bps, int line)
{
    struct veil_link_params p = {-1, -1};
    int rc = veil_link_parse(text, &p);
    if (rc != VEIL_OK || !close_to(p.latency_s, latency_s) ||
        !close_to(p.bandwidth_Bps, bandwidth_Bps)) {
        fprintf(stderr, "%s:%d: \"%s\" -> rc %d (%s), latency %.17g bandwidth %.17g\n", __FILE__,
                line, text, rc, veil_last_error(), p.latency_s, p.bandwidth_Bps);
        failures++;
    }
}
#define EXPECT_PARSE(t, l, b) expect_parse((t), (l), (b), __LINE__)

static void expect_reject(const char *text, const char *needle, int line)
{
    struct veil_link_params p = {-1, -1};
    int rc = veil_link_parse(text, &p);
    if (rc != VEIL_ERR_INVAL || !strstr(veil_last_error(), needle) || p.latency_s != -1 ||
        p.bandwidth_Bps != -1) {
        fprintf(stderr, "%s:%d: \"%s\" -> rc %d (%s), wanted VEIL_ERR_INVAL with \"%s\"\n",
                __FILE__, line, text, rc, veil_last_error(), needle);
        failures++;
    } else if (verbose) {
        fprintf(stderr, "ok: %s\n", veil_last_error());
    }
}
#define EXPECT_REJECT(t, n) expect_reject((t), (n), __LINE__)

static void test_parse(void)
{
    EXPECT_PARSE("none", 0, 0);
    EXPECT_PARSE("  none ", 0, 0);
    EXPECT_PARSE("0,0", 0, 0);
    EXPECT_PARSE("0,1Gbit", 0, 125e6);
    EXPECT_PARSE("0.1ms,10Gbit", 1e-4, 1.25e9);
    EXPECT_PARSE("35ms,100Mbit", 0.035, 12.5e6);
    EXPECT_PARSE("35ms, 100Mbit/s", 0.035, 12.5e6);
    EXPECT_PARSE("2s,1KB", 2, 1e3);
    EXPECT_PARSE("250us,1kB", 250e-6, 1e3);
    EXPECT_PARSE("1.5ms,2.5MB", 1.5e-3, 2.5e6);
    EXPECT_PARSE("1ms,3GB", 1e-3, 3e9);
    EXPECT_PARSE("1ms,8000bit", 1e-3, 1e3);
    EXPECT_PARSE("1ms,125B", 1e-3, 125);
    EXPECT_PARSE("1ms,8kbit", 1e-3, 1e3);
    EXPECT_PARSE("1ms,8Kbit", 1e-3, 1e3);
    EXPECT_PARSE("1ms,8mbit", 1e-3, 1e6);
    EXPECT_PARSE("1ms,8gbit", 1e-3, 1e9);
    EXPECT_PARSE(".5s,0", 0.5, 0);
    EXPECT_PARSE("3600s,1Gbit", 3600, 125e6);
}

static void test_reject(void)
{
    EXPECT_REJECT("", "missing ','");
    EXPECT_REJECT("35ms", "missing ','");
    EXPECT_REJECT("35ms 100Mbit", "missing ','");
    EXPECT_REJECT("35ms,100Mbit,1", "more than one ','");
    EXPECT_REJECT(",100Mbit", "latency '' does not start");
    EXPECT_REJECT("35ms,", "bandwidth '' does not start");
    EXPECT_REJECT("-1ms,100Mbit", "non-negative decimal");
    EXPECT_REJECT("1ms,-100Mbit", "non-negative decimal");
    EXPECT_REJECT("+1ms,100Mbit", "non-negative decimal");
    EXPECT_REJECT("nan,100Mbit", "non-negative decimal");
    EXPECT_REJECT("NaNms,100Mbit", "non-negative decimal");
    EXPECT_REJECT("1ms,infGbit", "non-negative decimal");
    EXPECT_REJECT("1e3ms,100Mbit", "unknown latency unit 'e3ms'");
    EXPECT_REJECT("0x10ms,100Mbit", "unknown latency unit 'x10ms'");
    EXPECT_REJECT("35,100Mbit", "latency '35' has no unit");
    EXPECT_REJECT("35ms,100", "bandwidth '100' has no unit");
    EXPECT_REJECT("35 ms,100Mbit", "unknown latency unit ' ms'");
    EXPECT_REJECT("35min,100Mbit", "unknown latency unit 'min'");
    EXPECT_REJECT("35ms,100Mb", "unknown bandwidth unit 'Mb'");
    EXPECT_REJECT("35ms,100mB", "unknown bandwidth unit 'mB'");
    EXPECT_REJECT("35ms,100Mbitxyz", "unknown bandwidth unit");
    EXPECT_REJECT("35ms,100Mbit/", "unknown bandwidth unit 'Mbit/'");
    EXPECT_REJECT("35ms\n,100Mbit", "unknown latency unit");
    EXPECT_REJECT("3601s,1Gbit", "exceeds 3600 s");
    EXPECT_REJECT("1ms,999bit", "below 1kbit");
    EXPECT_REJECT("1ms,0.5B", "below 1kbit");
    EXPECT_REJECT("1s,1B", "below 1kbit");
    EXPECT_REJECT("1ms,8bit", "below 1kbit");
    EXPECT_REJECT("1ms,000000000000000000000000000000000001Gbit", "too long");
    EXPECT_REJECT("none,1Gbit", "non-negative decimal");
    EXPECT_REJECT("..,1Gbit", "non-negative decimal");
    char longtext[300];
    memset(longtext, '1', sizeof longtext - 1);
    longtext[sizeof longtext - 1] = '\0';
    EXPECT_REJECT(longtext, "characters long");

    struct veil_link_params p;
    CHECK(veil_link_parse(NULL, &p) == VEIL_ERR_INVAL);
    CHECK(veil_link_parse("none", NULL) == VEIL_ERR_INVAL);
}

static void test_pacing(void)
{
    struct veil_link_params p;
    struct veil_link_emulator e;

    /* 100 Mbit/s, no latency: 1 MB takes exactly 80 ms on the wire. */
    CHECK(veil_link_parse("0,100Mbit", &p) == VEIL_OK);
    veil_link_emulator_init(&e, &p);
    CHECK(veil_link_emulator_active(&p));
    CHECK(close_to(veil_link_emulator_release_time(&e, 1000000, 10.0), 10.08));
    /* Handed over at the same instant: queues behind the first, back to back. */
    CHECK(close_to(veil_link_emulator_release_time(&e, 1000000, 10.0), 10.16));
    CHECK(close_to(veil_link_emulator_release_time(&e, 500000, 10.05), 10.20));
    /* After the wire went idle the next chunk starts at its own arrival time. */
    CHECK(close_to(veil_link_emulator_release_time(&e, 125, 11.0), 11.00001));
    CHECK(close_to(e.wire_free_at, 11.00001));
    CHECK(close_to(veil_link_emulator_release_time(&e, 0, 12.0), 12.0));

    /* Latency is added once per chunk, relative to its own departure, not accumulated. */
    CHECK(veil_link_parse("35ms,100Mbit", &p) == VEIL_OK);
    veil_link_emulator_init(&e, &p);
    CHECK(close_to(veil_link_emulator_release_time(&e, 1000000, 0.0), 0.115));
    CHECK(close_to(e.wire_free_at, 0.08));
    CHECK(close_to(veil_link_emulator_release_time(&e, 1000000, 0.0), 0.195));
    CHECK(close_to(e.wire_free_at, 0.16));
    CHECK(close_to(veil_link_emulator_release_time(&e, 1000000, 1.0), 1.115));

    /* Latency only: chunks are not serialised, each is held for the latency. */
    CHECK(veil_link_parse("10ms,0", &p) == VEIL_OK);
    veil_link_emulator_init(&e, &p);
    CHECK(close_to(veil_link_emulator_release_time(&e, 1 << 30, 5.0), 5.01));
    CHECK(close_to(veil_link_emulator_release_time(&e, 1 << 30, 5.0), 5.01));
    CHECK(close_to(veil_link_emulator_release_time(&e, 1, 5.5), 5.51));

    /* No emulation: the release time is now. */
    CHECK(veil_link_parse("none", &p) == VEIL_OK);
    CHECK(!veil_link_emulator_active(&p));
    veil_link_emulator_init(&e, &p);
    CHECK(veil_link_emulator_release_time(&e, 123456, 7.25) == 7.25);

    /* 10 Gbit/s = 1.25e9 B/s: 16 MiB takes 16777216 / 1.25e9 s. */
    CHECK(veil_link_parse("0.1ms,10Gbit", &p) == VEIL_OK);
    veil_link_emulator_init(&e, &p);
    CHECK(close_to(veil_link_emulator_release_time(&e, 16u << 20, 2.0),
                   2.0 + 16777216.0 / 1.25e9 + 1e-4));

    /* Monotone over a pseudo-random sequence, even when now goes backwards by a little. */
    CHECK(veil_link_parse("1ms,1Gbit", &p) == VEIL_OK);
    veil_link_emulator_init(&e, &p);
    double now = 100.0, last = 0.0, bytes_total = 0.0;
    unsigned s = 12345;
    for (int i = 0; i < 10000; i++) {
        s = s * 1103515245u + 12345u;
        size_t bytes = (s >> 8) % 200000;
        now += ((s >> 4) % 7 == 0) ? -1e-5 : (double)((s >> 12) % 100) * 1e-6;
        double t = veil_link_emulator_release_time(&e, bytes, now);
        CHECK(t >= last);
        CHECK(t >= now + p.latency_s + (double)bytes / p.bandwidth_Bps - 1e-12);
        last = t;
        bytes_total += (double)bytes;
    }
    /* The wire never carries more than the bandwidth: busy time >= bytes / bandwidth. */
    CHECK(e.wire_free_at - 100.0 >= bytes_total / p.bandwidth_Bps - 1e-6);
}

int main(void)
{
    verbose = getenv("VEIL_TEST_VERBOSE") != NULL;
    test_parse();
    test_reject();
    test_pacing();
    if (failures)
        fprintf(stderr, "test_net_emulate: %d failure(s)\n", failures);
    return failures ? 1 : 0;
}

/*
 * Tests the environment reader (base/env.c): an option field that is set wins and its variable is
 * then neither read nor checked; a field at its "ask the environment" value takes the variable;
 * bad values are refused with the messages the party and the net configuration gave before the
 * reader moved into one file; empty values count as unset where they did; the network tuning
 * keeps its defaults for 0 and garbage; the harness identity needs its variables; the testing hooks
 * VEIL_MATERIAL_SEED and VEIL_TEST_CRASH alone are refused (they take
 * VEIL_INSECURE_TEST_HOOKS=1); VEIL_PREFETCH_MB's range; and README.md's
 * "Environment variables" table has a row for every name of the reader's table.
 */
#include "config.h"

#include "base/base_internal.h"
#include "base/env.h"
#include "base/harness.h"
#include "test_util.h"

#include <stdlib.h>
#include <string.h>

static void check_party(void)
{
    struct veil_env_party e;
    setenv("VEIL_DEVICES", "junk", 1);
    setenv("VEIL_TRACE", "", 1);
    setenv("VEIL_PLACEMENT", "", 1);
    setenv("VEIL_DEVICE_KIND", "cuda", 1);
    memset(&e, 0, sizeof e);
    e.devices = 2; /* the option wins: the bad variable is not checked */
    VT_CHECK(veil_env_party(&e, 16) == VEIL_OK && e.devices == 2, "devices option: %s",
             veil_last_error());
    VT_CHECK(e.trace_path == NULL && e.placement == NULL, "empty VEIL_TRACE / VEIL_PLACEMENT");
    VT_CHECK(e.device_kind && strcmp(e.device_kind, "cuda") == 0, "VEIL_DEVICE_KIND");
    memset(&e, 0, sizeof e);
    VT_CHECK(veil_env_party(&e, 16) == VEIL_ERR_INVAL &&
                 strcmp(veil_last_error(), "veil_party_open: VEIL_DEVICES='junk' is not a device "
                                           "count (1 to 16)") == 0,
             "bad VEIL_DEVICES: %s", veil_last_error());
    setenv("VEIL_DEVICES", "3", 1);
    setenv("VEIL_WORKER_NICE", "20", 1);
    memset(&e, 0, sizeof e);
    VT_CHECK(veil_env_party(&e, 16) == VEIL_ERR_INVAL &&
                 strstr(veil_last_error(), "VEIL_WORKER_NICE='20' is not a nice value (0 to 19)"),
             "bad VEIL_WORKER_NICE: %s", veil_last_error());
    setenv("VEIL_WORKER_NICE", "7", 1);
    setenv("VEIL_TRACE", "/tmp/t-%d.json", 1);
    memset(&e, 0, sizeof e);
    e.trace_path = "mine.json";
    VT_CHECK(veil_env_party(&e, 16) == VEIL_OK && e.devices == 3 && e.worker_nice == 7 &&
                 strcmp(e.trace_path, "mine.json") == 0,
             "variables taken, option kept: %s", veil_last_error());
    unsetenv("VEIL_DEVICES");
    unsetenv("VEIL_WORKER_NICE");
    unsetenv("VEIL_TRACE");
    unsetenv("VEIL_PLACEMENT");
    unsetenv("VEIL_DEVICE_KIND");
}

/* A fixed material seed unmasks every opened value: refused without the insecure flag. */
static void check_material_seed(void)
{
    struct veil_env_party e;
    setenv("VEIL_MATERIAL_SEED", "00112233445566778899aabbccddeeff", 1);
    unsetenv("VEIL_INSECURE_TEST_HOOKS");
    memset(&e, 0, sizeof e);
    VT_CHECK(veil_env_party(&e, 16) == VEIL_ERR_INVAL &&
                 strstr(veil_last_error(), "VEIL_MATERIAL_SEED is set, a testing hook") &&
                 strstr(veil_last_error(), "refused unless VEIL_INSECURE_TEST_HOOKS=1"),
             "seed alone refused: %s", veil_last_error());
    setenv("VEIL_INSECURE_TEST_HOOKS", "yes", 1);
    memset(&e, 0, sizeof e);
    VT_CHECK(veil_env_party(&e, 16) == VEIL_ERR_INVAL, "VEIL_INSECURE_TEST_HOOKS=yes refused");
    memset(&e, 0, sizeof e);
    e.material_seed = "ffeeddccbbaa99887766554433221100"; /* the option (a test's) wins */
    VT_CHECK(veil_env_party(&e, 16) == VEIL_OK, "option seed: %s", veil_last_error());
    setenv("VEIL_INSECURE_TEST_HOOKS", "1", 1);
    memset(&e, 0, sizeof e);
    VT_CHECK(veil_env_party(&e, 16) == VEIL_OK && e.material_seed &&
                 strcmp(e.material_seed, "00112233445566778899aabbccddeeff") == 0,
             "seed with the insecure flag: %s", veil_last_error());
    unsetenv("VEIL_MATERIAL_SEED");
    /* VEIL_TEST_CRASH: parsed with the flag, refused without it */
    uint64_t at;
    int ph;
    setenv("VEIL_TEST_CRASH", "checkpoint:3:4", 1);
    VT_CHECK(veil_env_test_crash("checkpoint", &at, &ph) == VEIL_OK && at == 3 && ph == 4,
             "crash hook with the flag: %s", veil_last_error());
    VT_CHECK(veil_env_test_crash("elsewhere", &at, &ph) == VEIL_OK && ph == 0,
             "crash hook elsewhere: %s", veil_last_error());
    setenv("VEIL_TEST_CRASH", "checkpoint:3", 1);
    VT_CHECK(veil_env_test_crash("checkpoint", &at, &ph) == VEIL_ERR_INVAL, "bad crash spec");
    unsetenv("VEIL_INSECURE_TEST_HOOKS");
    setenv("VEIL_TEST_CRASH", "checkpoint:3:4", 1);
    VT_CHECK(veil_env_test_crash("checkpoint", &at, &ph) == VEIL_ERR_INVAL &&
                 strstr(veil_last_error(), "refused unless VEIL_INSECURE_TEST_HOOKS=1"),
             "crash hook alone refused: %s", veil_last_error());
    unsetenv("VEIL_TEST_CRASH");
}

static void check_net(void)
{
    struct veil_env_net e;
    setenv("VEIL_INSECURE_PLAINTEXT", "yes", 1);
    VT_CHECK(veil_env_net(&e) == VEIL_ERR_INVAL &&
                 strcmp(veil_last_error(), "VEIL_INSECURE_PLAINTEXT='yes': use 1 or 0") == 0,
             "bad VEIL_INSECURE_PLAINTEXT: %s", veil_last_error());
    setenv("VEIL_INSECURE_PLAINTEXT", "1", 1);
    setenv("VEIL_NET_TIMEOUT", "-3", 1);
    VT_CHECK(veil_env_net(&e) == VEIL_ERR_INVAL &&
                 strcmp(veil_last_error(), "VEIL_NET_TIMEOUT='-3': a number of seconds > 0") == 0,
             "bad VEIL_NET_TIMEOUT: %s", veil_last_error());
    setenv("VEIL_NET_TIMEOUT", "2.5", 1);
    setenv("VEIL_KEY_DIR", "", 1);
    VT_CHECK(veil_env_net(&e) == VEIL_OK && e.insecure == 1 && e.timeout_s == 2.5 &&
                 e.key_dir == NULL && e.link == NULL,
             "good net variables: %s", veil_last_error());
    unsetenv("VEIL_INSECURE_PLAINTEXT");
    unsetenv("VEIL_NET_TIMEOUT");
    unsetenv("VEIL_KEY_DIR");

    struct veil_env_net_tuning t = {.chunk_bytes = 1,
                                    .pool_bytes = 2,
                                    .early_cap_bytes = 3,
                                    .connect_timeout_s = 4,
                                    .data_channel = 1,
                                    .data_port = 0};
    setenv("VEIL_NET_CHUNK", "64k", 1);
    setenv("VEIL_NET_POOL", "0", 1);
    setenv("VEIL_NET_EARLY_CAP", "2M", 1);
    setenv("VEIL_NET_CONNECT_TIMEOUT", "soon", 1);
    veil_env_net_tuning(&t);
    VT_CHECK(t.chunk_bytes == 65536 && t.pool_bytes == 2 && t.early_cap_bytes == (2u << 20) &&
                 t.connect_timeout_s == 4,
             "tuning: %zu %zu %zu %g", t.chunk_bytes, t.pool_bytes, t.early_cap_bytes,
             t.connect_timeout_s);
    unsetenv("VEIL_NET_CHUNK");
    unsetenv("VEIL_NET_POOL");
    unsetenv("VEIL_NET_EARLY_CAP");
    unsetenv("VEIL_NET_CONNECT_TIMEOUT");
    VT_CHECK(t.data_channel == 1 && t.data_port == 0, "data channel defaults kept: %d %d",
             t.data_channel, t.data_port);
    setenv("VEIL_NET_DATA_CHANNEL", "curve", 1);
    setenv("VEIL_NET_DATA_PORT", "40000", 1);
    veil_env_net_tuning(&t);
    VT_CHECK(t.data_channel == 0 && t.data_port == 40000, "curve, port 40000: %d %d",
             t.data_channel, t.data_port);
    setenv("VEIL_NET_DATA_CHANNEL", "aes-gcm", 1);
    veil_env_net_tuning(&t);
    VT_CHECK(t.data_channel == 1, "aes-gcm: %d", t.data_channel);
    /* anything else is -1, which opening a session refuses (net/mesh.c) */
    setenv("VEIL_NET_DATA_CHANNEL", "chacha", 1);
    setenv("VEIL_NET_DATA_PORT", "70000", 1);
    veil_env_net_tuning(&t);
    VT_CHECK(t.data_channel == -1 && t.data_port == -1, "bad values: %d %d", t.data_channel,
             t.data_port);
    unsetenv("VEIL_NET_DATA_CHANNEL");
    unsetenv("VEIL_NET_DATA_PORT");
    /* the I/O thread's spin: 0..VEIL_ENV_SPIN_US_MAX microseconds, anything else -1 (refused at
     * open, tests/test_net_spin.c) */
    t.spin_us = 7;
    veil_env_net_tuning(&t);
    VT_CHECK(t.spin_us == 7, "spin default kept: %d", t.spin_us);
    setenv("VEIL_NET_SPIN_US", "250", 1);
    veil_env_net_tuning(&t);
    VT_CHECK(t.spin_us == 250, "spin 250: %d", t.spin_us);
    setenv("VEIL_NET_SPIN_US", "0", 1);
    veil_env_net_tuning(&t);
    VT_CHECK(t.spin_us == 0, "spin 0: %d", t.spin_us);
    static const char *const bad_spin[] = {"-1", "100001", "1ms", "abc"};
    for (size_t i = 0; i < sizeof bad_spin / sizeof bad_spin[0]; i++) {
        setenv("VEIL_NET_SPIN_US", bad_spin[i], 1);
        t.spin_us = 7;
        veil_env_net_tuning(&t);
        VT_CHECK(t.spin_us == -1, "spin '%s': %d", bad_spin[i], t.spin_us);
    }
    unsetenv("VEIL_NET_SPIN_US");
}

static void check_identity_and_log(void)
{
    struct veil_harness_party me;
    unsetenv("VEIL_NPARTIES");
    VT_CHECK(veil_harness_party_from_env(&me) == VEIL_ERR_INVAL &&
                 strcmp(veil_last_error(),
                        "VEIL_NPARTIES is not set (start parties with veil-run)") == 0,
             "identity without VEIL_NPARTIES: %s", veil_last_error());
    setenv("VEIL_NPARTIES", "2", 1);
    setenv("VEIL_DEALER", "1", 1);
    setenv("VEIL_PARTY_ID", "2", 1);
    setenv("VEIL_SESSION", "00112233445566778899aabbccddeeff", 1);
    setenv("VEIL_ENDPOINTS", "tcp://a:1,tcp://b:2,tcp://c:3", 1);
    unsetenv("VEIL_LISTEN_FD");
    VT_CHECK(veil_harness_party_from_env(&me) == VEIL_OK && me.is_dealer && me.listen_fd == -1 &&
                 strcmp(me.endpoints[2], "tcp://c:3") == 0,
             "identity: %s", veil_last_error());
    setenv("VEIL_PARTY_ID", "3", 1);
    VT_CHECK(veil_harness_party_from_env(&me) == VEIL_ERR_INVAL &&
                 strcmp(veil_last_error(), "VEIL_PARTY_ID=3: expected an integer in [0, 2]") == 0,
             "identity with a bad id: %s", veil_last_error());

    int level = 1;
    setenv("VEIL_LOG", "debug", 1);
    veil_env_log_level(&level);
    VT_CHECK(level == 3, "VEIL_LOG=debug: level %d", level);
    setenv("VEIL_LOG", "loud", 1);
    veil_env_log_level(&level);
    VT_CHECK(level == 3, "VEIL_LOG=loud changed the level to %d", level);
}

/* VEIL_PREFETCH_MB: its default when unset or empty, 0..65536 taken, anything else -1. */
static void check_prefetch(void)
{
    unsetenv("VEIL_PREFETCH_MB");
    VT_CHECK(veil_env_prefetch_mb() == VEIL_ENV_PREFETCH_DEFAULT_MB, "unset: the default");
    setenv("VEIL_PREFETCH_MB", "", 1);
    VT_CHECK(veil_env_prefetch_mb() == VEIL_ENV_PREFETCH_DEFAULT_MB, "empty: the default");
    const char *good[] = {"0", "1", "65536"};
    const long want[] = {0, 1, 65536};
    for (int i = 0; i < 3; i++) {
        setenv("VEIL_PREFETCH_MB", good[i], 1);
        VT_CHECK(veil_env_prefetch_mb() == want[i], "VEIL_PREFETCH_MB=%s", good[i]);
    }
    const char *bad[] = {"-1", "65537", "12M", "lots"};
    for (int i = 0; i < 4; i++) {
        setenv("VEIL_PREFETCH_MB", bad[i], 1);
        VT_CHECK(veil_env_prefetch_mb() == -1, "VEIL_PREFETCH_MB=%s refused", bad[i]);
    }
    unsetenv("VEIL_PREFETCH_MB");
}

/* Every name of the reader's table has a row in README.md's table. */
static void check_readme(void)
{
    const char *top = getenv("VEIL_TOP_SRCDIR");
    char path[4096];
    snprintf(path, sizeof path, "%s/README.md", top ? top : ".");
    FILE *f = fopen(path, "r");
    VT_CHECK(f != NULL, "cannot open %s", path);
    if (!f)
        return;
    static char text[1 << 20];
    size_t n = fread(text, 1, sizeof text - 1, f);
    text[n] = '\0';
    fclose(f);
    const char *section = strstr(text, "## Environment variables");
    VT_CHECK(section != NULL, "README.md has no Environment variables section");
    size_t count = 0;
    for (const char *name; section && (name = veil_env_name(count)) != NULL; count++) {
        char row[128];
        snprintf(row, sizeof row, "\n| `%s` |", name);
        VT_CHECK(strstr(section, row) != NULL, "README.md's table has no row for %s", name);
    }
    VT_CHECK(count >= 27, "the reader lists %zu variables", count);
}

int main(void)
{
    check_party();
    check_material_seed();
    check_net();
    check_identity_and_log();
    check_prefetch();
    check_readme();
    return veil_test_failures ? 1 : 0;
}

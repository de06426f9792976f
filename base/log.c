/*
 * log.c — Veil's logger: one line per message on stderr, with level, optional party prefix and
 * a timestamp relative to the first message. The level comes from veil_log_set_level or $VEIL_LOG
 * (read once, through base/env.c).
 */
#include "config.h"
#include "base/base_internal.h"
#include "base/env.h"

#include <pthread.h>
#include <string.h>

static pthread_once_t level_once = PTHREAD_ONCE_INIT;
static enum veil_log_level current_level = VEIL_LOG_WARN;
static char prefix[32];

static void level_from_env(void)
{
    int level = (int)current_level;
    veil_env_log_level(&level);
    current_level = (enum veil_log_level)level;
}

void veil_log_set_level(enum veil_log_level level)
{
    pthread_once(&level_once, level_from_env);
    if (level >= 0 && level < VEIL_LOG_LEVEL_COUNT)
        current_level = level;
}

void veil_log_set_prefix(const char *p)
{
    snprintf(prefix, sizeof prefix, "%s", p ? p : "");
}

int veil_log_enabled(enum veil_log_level level)
{
    pthread_once(&level_once, level_from_env);
    return level <= current_level;
}

void veil_log(enum veil_log_level level, const char *fmt, ...)
{
    static const char *tags[] = {"error", "warn", "info", "debug"};
    if (!veil_log_enabled(level))
        return;
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    /* One fprintf per line so that lines of concurrent threads do not interleave. */
    fprintf(stderr, "veil%s%s %s: %s\n", prefix[0] ? " " : "", prefix, tags[level], line);
}

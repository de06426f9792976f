/*
 * checkpoint_files.c — the files behind veil_party_save / veil_party_load (checkpoint.c): the
 * two generations PATH and PATH.prev, the write order that keeps one complete generation through
 * a crash at any point, the promotion of PATH.prev after the processes agreed to resume from it,
 * the removal of temporary files a crash left, and the testing hook VEIL_TEST_CRASH that kills
 * the process at each phase of a write (refused unless VEIL_INSECURE_TEST_HOOKS=1).
 */
#include "config.h"

#include "base/base_internal.h"
#include "base/env.h"
#include "graph/secure/checkpoint_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum { PHASE_AGREED = 1, PHASE_PARTIAL, PHASE_WRITTEN, PHASE_ROTATED, PHASE_RENAMED };

int veil_ckpt_prev_path(const char *path, char *out, size_t len)
{
    if ((size_t)snprintf(out, len, "%s.prev", path) >= len)
        return veil_error(VEIL_ERR_RANGE, "checkpoint %s: the path is too long", path);
    return VEIL_OK;
}

/* The directory and the base name of path, in two buffers of len bytes. */
static int split(const char *path, char *dir, char *base, size_t len)
{
    char a[4096], b[4096];
    if (strlen(path) >= sizeof a || strlen(path) >= len)
        return veil_error(VEIL_ERR_RANGE, "checkpoint %s: the path is too long", path);
    strcpy(a, path);
    strcpy(b, path);
    snprintf(dir, len, "%s", dirname(a));
    snprintf(base, len, "%s", basename(b));
    return VEIL_OK;
}

/* Best effort: the renames are visible already; the fsync makes them survive a power loss. */
static void sync_dir(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        (void)fsync(fd);
        close(fd);
    }
}

void veil_ckpt_remove_stale(const char *path)
{
    char dir[4096], base[4096], full[8200];
    if (split(path, dir, base, sizeof dir) != VEIL_OK)
        return;
    DIR *d = opendir(dir);
    if (!d)
        return;
    const size_t bl = strlen(base);
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strncmp(e->d_name, base, bl) != 0 || strncmp(e->d_name + bl, ".tmp.", 5) != 0)
            continue;
        snprintf(full, sizeof full, "%s/%s", dir, e->d_name);
        if (unlink(full) == 0)
            VEIL_LOG_INFO("checkpoint: removed %s, left by an interrupted write", full);
        else
            VEIL_LOG_WARN("checkpoint: cannot remove %s: %s", full, strerror(errno));
    }
    closedir(d);
}

/* The testing hook: dies here when VEIL_TEST_CRASH names this step and phase. */
static int maybe_crash(uint64_t step, int phase)
{
    uint64_t at;
    int ph;
    int rc = veil_env_test_crash("checkpoint", &at, &ph);
    if (rc != VEIL_OK)
        return rc;
    if (ph == phase && at == step) {
        VEIL_LOG_WARN("VEIL_TEST_CRASH: killing this process at phase %d of checkpoint %llu",
                      phase, (unsigned long long)step);
        raise(SIGKILL);
    }
    return VEIL_OK;
}

static int write_all(int fd, const uint8_t *p, size_t left, const char *tmp)
{
    while (left) {
        ssize_t w = write(fd, p, left);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return veil_error(VEIL_ERR_IO, "cannot write '%s': %s", tmp, strerror(errno));
        p += w;
        left -= (size_t)w;
    }
    return VEIL_OK;
}

int veil_ckpt_write(const char *path, const uint8_t *b, size_t len, uint64_t step)
{
    char dir[4096], base[4096], tmp[4200], prev[4200];
    int rc = split(path, dir, base, sizeof dir);
    if (rc == VEIL_OK)
        rc = veil_ckpt_prev_path(path, prev, sizeof prev);
    if (rc == VEIL_OK && (rc = maybe_crash(step, PHASE_AGREED)) != VEIL_OK)
        return rc;
    if (rc != VEIL_OK)
        return rc;
    veil_ckpt_remove_stale(path);
    snprintf(tmp, sizeof tmp, "%s.tmp.XXXXXX", path);
    int fd = mkstemp(tmp);
    if (fd < 0)
        return veil_error(VEIL_ERR_IO, "cannot create a temporary file next to '%s': %s", path,
                          strerror(errno));
    if (fchmod(fd, 0600) != 0)
        rc = veil_error(VEIL_ERR_IO, "cannot set the mode of '%s': %s", tmp, strerror(errno));
    if (rc == VEIL_OK)
        rc = write_all(fd, b, len / 2, tmp);
    if (rc == VEIL_OK && fsync(fd) == 0)
        rc = maybe_crash(step, PHASE_PARTIAL);
    if (rc == VEIL_OK)
        rc = write_all(fd, b + len / 2, len - len / 2, tmp);
    if (rc == VEIL_OK && fsync(fd) != 0)
        rc = veil_error(VEIL_ERR_IO, "cannot fsync '%s': %s", tmp, strerror(errno));
    if (close(fd) != 0 && rc == VEIL_OK)
        rc = veil_error(VEIL_ERR_IO, "cannot close '%s': %s", tmp, strerror(errno));
    if (rc == VEIL_OK)
        rc = maybe_crash(step, PHASE_WRITTEN);
    /* PATH -> PATH.prev first: a crash between the renames leaves PATH.prev, complete */
    if (rc == VEIL_OK && rename(path, prev) != 0 && errno != ENOENT)
        rc = veil_error(VEIL_ERR_IO, "cannot rename '%s' to '%s': %s", path, prev,
                        strerror(errno));
    if (rc == VEIL_OK) {
        sync_dir(dir);
        rc = maybe_crash(step, PHASE_ROTATED);
    }
    if (rc == VEIL_OK && rename(tmp, path) != 0)
        rc = veil_error(VEIL_ERR_IO, "cannot rename '%s' to '%s': %s", tmp, path,
                        strerror(errno));
    if (rc != VEIL_OK) {
        unlink(tmp);
        return rc;
    }
    sync_dir(dir);
    return maybe_crash(step, PHASE_RENAMED);
}

int veil_ckpt_promote(const char *path, int from_prev)
{
    char dir[4096], base[4096], prev[4200];
    int rc = split(path, dir, base, sizeof dir);
    if (rc == VEIL_OK)
        rc = veil_ckpt_prev_path(path, prev, sizeof prev);
    if (rc != VEIL_OK)
        return rc;
    veil_ckpt_remove_stale(path);
    if (!from_prev)
        return VEIL_OK;
    if (rename(prev, path) != 0)
        return veil_error(VEIL_ERR_IO, "checkpoint: cannot rename '%s' to '%s': %s", prev, path,
                          strerror(errno));
    sync_dir(dir);
    VEIL_LOG_INFO("checkpoint: %s (a step the other processes did not all reach) replaced by %s",
                  path, prev);
    return VEIL_OK;
}

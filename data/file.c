/*
 * file.c — whole-file input (plain or gzip through zlib) and atomic output for data/.
 */
#include "config.h"
#include "data/data_internal.h"

#include "base/base_internal.h"

#include <openssl/evp.h>

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

int veil_data_read_file(const char *path, int gunzip, uint8_t **buf, size_t *len)
{
    *buf = NULL;
    *len = 0;
    if (!path)
        return veil_error(VEIL_ERR_INVAL, "data: no file name given");
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return veil_error(VEIL_ERR_IO, "cannot open '%s': %s", path, strerror(errno));
    /* gzdopen reads plain files transparently; without gunzip the bytes are taken verbatim. */
    gzFile gz = NULL;
    if (gunzip) {
        gz = gzdopen(fd, "rb"); /* owns fd from here on */
        if (!gz) {
            close(fd);
            return veil_error(VEIL_ERR_NOMEM, "cannot read '%s': zlib could not start", path);
        }
    }
    size_t cap = 1 << 16, n = 0;
    uint8_t *b = malloc(cap);
    int rc = VEIL_OK;
    if (!b) {
        rc = veil_error(VEIL_ERR_NOMEM, "reading '%s': out of memory", path);
        goto fail;
    }
    for (;;) {
        if (n == cap) {
            if (cap >= VEIL_DATA_MAX_FILE) {
                rc = veil_error(VEIL_ERR_RANGE, "'%s' is larger than %zu bytes", path,
                                (size_t)VEIL_DATA_MAX_FILE);
                goto fail;
            }
            uint8_t *nb = realloc(b, cap * 2);
            if (!nb) {
                rc = veil_error(VEIL_ERR_NOMEM, "reading '%s': out of memory", path);
                goto fail;
            }
            b = nb;
            cap *= 2;
        }
        size_t want = cap - n;
        if (want > (1u << 30))
            want = 1u << 30;
        int got;
        if (gunzip) {
            got = gzread(gz, b + n, (unsigned)want);
        } else {
            ssize_t r = read(fd, b + n, want);
            got = r < 0 ? -1 : (int)r;
        }
        if (got < 0) {
            int zerr = 0;
            const char *msg = gunzip ? gzerror(gz, &zerr) : strerror(errno);
            rc = veil_error(zerr == Z_ERRNO || !gunzip ? VEIL_ERR_IO : VEIL_ERR_FORMAT,
                            "cannot read '%s': %s%s", path,
                            gunzip && zerr != Z_ERRNO ? "corrupt gzip data: " : "", msg);
            goto fail;
        }
        if (got == 0)
            break;
        n += (size_t)got;
    }
    if (gunzip) {
        /* gzread returns 0 at a truncated stream too; gzerror tells the difference. */
        int zerr = 0;
        const char *msg = gzerror(gz, &zerr);
        if (zerr != Z_OK && zerr != Z_STREAM_END) {
            rc = veil_error(VEIL_ERR_FORMAT, "cannot read '%s': corrupt gzip data: %s", path,
                            msg);
            goto fail;
        }
    }
    if (gz)
        gzclose_r(gz);
    else
        close(fd);
    *buf = b;
    *len = n;
    return VEIL_OK;
fail:
    free(b);
    if (gz)
        gzclose_r(gz);
    else
        close(fd);
    return rc;
}

int veil_data_write_atomic(const char *path, const void *bytes, size_t len, unsigned mode)
{
    if (!path || (!bytes && len))
        return veil_error(VEIL_ERR_INVAL, "data: write with no file name or no data");
    size_t pl = strlen(path);
    char *tmp = malloc(pl + 16);
    char *dircopy = strdup(path);
    int fd = -1, rc = VEIL_OK;
    if (!tmp || !dircopy) {
        rc = veil_error(VEIL_ERR_NOMEM, "writing '%s': out of memory", path);
        goto fail;
    }
    snprintf(tmp, pl + 16, "%s.tmp.XXXXXX", path);
    fd = mkstemp(tmp);
    if (fd < 0) {
        rc = veil_error(VEIL_ERR_IO, "cannot create a temporary file next to '%s': %s", path,
                        strerror(errno));
        free(tmp);
        tmp = NULL;
        goto fail;
    }
    if (fchmod(fd, (mode_t)mode) != 0) {
        rc = veil_error(VEIL_ERR_IO, "cannot set the mode of '%s': %s", tmp, strerror(errno));
        goto fail;
    }
    const uint8_t *p = bytes;
    size_t left = len;
    while (left) {
        ssize_t w = write(fd, p, left);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            rc = veil_error(VEIL_ERR_IO, "cannot write '%s': %s", tmp, strerror(errno));
            goto fail;
        }
        p += w;
        left -= (size_t)w;
    }
    if (fsync(fd) != 0) {
        rc = veil_error(VEIL_ERR_IO, "cannot fsync '%s': %s", tmp, strerror(errno));
        goto fail;
    }
    if (close(fd) != 0) {
        fd = -1;
        rc = veil_error(VEIL_ERR_IO, "cannot close '%s': %s", tmp, strerror(errno));
        goto fail;
    }
    fd = -1;
    if (rename(tmp, path) != 0) {
        rc = veil_error(VEIL_ERR_IO, "cannot rename '%s' to '%s': %s", tmp, path,
                        strerror(errno));
        goto fail;
    }
    free(tmp);
    tmp = NULL;
    int dfd = open(dirname(dircopy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        (void)fsync(dfd); /* best effort: the rename is already visible */
        close(dfd);
    }
    free(dircopy);
    return VEIL_OK;
fail:
    if (fd >= 0)
        close(fd);
    if (tmp)
        unlink(tmp);
    free(tmp);
    free(dircopy);
    return rc;
}

int veil_data_sha256(const uint8_t *b, size_t n, uint8_t out[32], const char *what)
{
    unsigned len = 0;
    if (EVP_Digest(b, n, out, &len, EVP_sha256(), NULL) != 1 || len != 32)
        return veil_error(VEIL_ERR_CRYPTO, "%s: SHA-256 failed (OpenSSL)", what);
    return VEIL_OK;
}

/*
 * keys.c — CURVE key material on disk: generating a key pair (libzmq's zmq_curve_keypair),
 * validating Z85 keys, and reading and writing the key files of veil-keygen. A key file holds
 * two lines, "public <z85>" and "secret <z85>", and is created with mode 0600 under a temporary
 * name (open with O_CREAT|O_EXCL), fsynced and then renamed (or linked, when an existing file
 * must not be replaced) into place; NAME.pub beside NAME.key holds the public line only. A
 * secret key file that its group or other users can access is refused. Secret bytes are wiped
 * after use and never logged.
 */
#include "config.h"
#include "net/config_internal.h"

#include "base/base_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zmq.h>

#define KEY_FILE_MAX_BYTES 4096

static const char z85_chars[] = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                ".-:+=^!/*?&<>()[]{}@%$#";

int veil_z85_key_valid(const char *s, size_t n)
{
    if (!s || n != VEIL_Z85_KEY_CHARS)
        return 0;
    for (size_t g = 0; g < n; g += 5) {
        uint64_t v = 0;
        for (size_t i = g; i < g + 5; i++) {
            const char *p = s[i] ? strchr(z85_chars, s[i]) : NULL;
            if (!p)
                return 0;
            v = v * 85 + (uint64_t)(p - z85_chars);
        }
        if (v > UINT32_MAX)
            return 0;
    }
    return 1;
}

int veil_curve_keypair(char public_key[VEIL_Z85_KEY_CHARS + 1],
                       char secret_key[VEIL_Z85_KEY_CHARS + 1])
{
    if (!public_key || !secret_key)
        return veil_error(VEIL_ERR_INVAL, "veil_curve_keypair: NULL key buffer");
    if (zmq_curve_keypair(public_key, secret_key) != 0)
        return veil_error(VEIL_ERR_CRYPTO,
                          "zmq_curve_keypair failed: %s (libzmq needs CURVE support, e.g. "
                          "Debian's libzmq3-dev built with libsodium)",
                          zmq_strerror(zmq_errno()));
    return VEIL_OK;
}

/* ---- reading ------------------------------------------------------------------------------ */

/* Parses "public X" / "secret X" lines of buf into the outputs (secret may be NULL). */
static int parse_key_text(const char *path, char *buf, char *public_key, char *secret_key)
{
    int have_public = 0, have_secret = 0, line_no = 0;
    char *save = NULL;
    for (char *line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        line_no++;
        size_t n = strlen(line);
        if (n > 0 && line[n - 1] == '\r')
            line[--n] = '\0';
        char *p = line;
        while (*p == ' ' || *p == '\t')
            p++;
        if (*p == '\0' || *p == '#')
            continue;
        char *sp = p + strcspn(p, " \t");
        size_t wlen = (size_t)(sp - p);
        while (*sp == ' ' || *sp == '\t')
            sp++;
        char *key = sp;
        size_t klen = strcspn(key, " \t");
        if (key[klen + strspn(key + klen, " \t")] != '\0' || !veil_z85_key_valid(key, klen))
            return veil_error(VEIL_ERR_FORMAT,
                              "%s: line %d is not 'public <key>' or 'secret <key>' with a "
                              "40-character Z85 key; regenerate the file with veil-keygen",
                              path, line_no);
        if (wlen == 6 && memcmp(p, "public", 6) == 0) {
            if (have_public++)
                return veil_error(VEIL_ERR_FORMAT, "%s: line %d: second 'public' line", path,
                                  line_no);
            memcpy(public_key, key, VEIL_Z85_KEY_CHARS);
            public_key[VEIL_Z85_KEY_CHARS] = '\0';
        } else if (wlen == 6 && memcmp(p, "secret", 6) == 0) {
            if (have_secret++)
                return veil_error(VEIL_ERR_FORMAT, "%s: line %d: second 'secret' line", path,
                                  line_no);
            if (secret_key) {
                memcpy(secret_key, key, VEIL_Z85_KEY_CHARS);
                secret_key[VEIL_Z85_KEY_CHARS] = '\0';
            }
        } else {
            return veil_error(VEIL_ERR_FORMAT,
                              "%s: line %d: unknown keyword; a key file has only 'public' and "
                              "'secret' lines (written by veil-keygen)",
                              path, line_no);
        }
    }
    if (!have_public)
        return veil_error(VEIL_ERR_FORMAT,
                          "%s: no 'public <key>' line; regenerate with veil-keygen", path);
    if (secret_key && !have_secret)
        return veil_error(VEIL_ERR_FORMAT,
                          "%s: no 'secret <key>' line (is this the .pub file?); give the file "
                          "NAME.key written by veil-keygen",
                          path);
    return VEIL_OK;
}

/*
 * Reads a key file. secret_key may be NULL to read only the public key (a .pub file); then the
 * file's mode is not checked. With secret_key, the file must be a regular file that neither its
 * group nor others may read, and its public key must be the one its secret key derives.
 */
int veil_curve_read_key_file(const char *path, char public_key[VEIL_Z85_KEY_CHARS + 1],
                             char secret_key[VEIL_Z85_KEY_CHARS + 1])
{
    char buf[KEY_FILE_MAX_BYTES + 1];
    char derived[VEIL_Z85_KEY_CHARS + 1];
    struct stat st;
    ssize_t got = 0;
    int rc = VEIL_OK;

    if (!path || !public_key)
        return veil_error(VEIL_ERR_INVAL, "veil_curve_read_key_file: NULL path or key buffer");
    /* O_NONBLOCK: opening a FIFO must not hang; it is refused below as not a regular file. */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0)
        return veil_error(VEIL_ERR_IO, "cannot open key file %s: %s", path, strerror(errno));
    if (fstat(fd, &st) != 0) {
        rc = veil_error(VEIL_ERR_IO, "cannot stat key file %s: %s", path, strerror(errno));
        goto done;
    }
    if (!S_ISREG(st.st_mode)) {
        rc = veil_error(VEIL_ERR_IO, "key file %s is not a regular file", path);
        goto done;
    }
    if (secret_key && (st.st_mode & (S_IRWXG | S_IRWXO)) != 0) {
        rc = veil_error(VEIL_ERR_AUTH,
                        "secret key file %s has mode %04o: its group or other users have access to "
                        "it; run 'chmod 600 %s' (or regenerate it with veil-keygen)",
                        path, (unsigned)(st.st_mode & 07777), path);
        goto done;
    }
    if (st.st_size > KEY_FILE_MAX_BYTES) {
        rc = veil_error(VEIL_ERR_FORMAT, "key file %s is %lld bytes; a key file is under %d bytes",
                        path, (long long)st.st_size, KEY_FILE_MAX_BYTES);
        goto done;
    }
    while (got < KEY_FILE_MAX_BYTES + 1) {
        ssize_t r = read(fd, buf + got, (size_t)(KEY_FILE_MAX_BYTES + 1 - got));
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            rc = veil_error(VEIL_ERR_IO, "cannot read key file %s: %s", path, strerror(errno));
            goto done;
        }
        if (r == 0)
            break;
        got += r;
    }
    if (got > KEY_FILE_MAX_BYTES) {
        rc = veil_error(VEIL_ERR_FORMAT, "key file %s is longer than %d bytes", path,
                        KEY_FILE_MAX_BYTES);
        goto done;
    }
    if (memchr(buf, '\0', (size_t)got)) {
        rc = veil_error(VEIL_ERR_FORMAT, "key file %s contains a NUL byte; regenerate it", path);
        goto done;
    }
    buf[got] = '\0';
    rc = parse_key_text(path, buf, public_key, secret_key);
    if (rc != VEIL_OK)
        goto done;
    if (secret_key) {
        if (zmq_curve_public(derived, secret_key) != 0) {
            rc = veil_error(VEIL_ERR_CRYPTO, "zmq_curve_public failed on %s: %s", path,
                            zmq_strerror(zmq_errno()));
            goto done;
        }
        if (strcmp(derived, public_key) != 0) {
            rc = veil_error(VEIL_ERR_AUTH,
                            "key file %s: its public key is not the one its secret key "
                            "derives (%.8s...); the file was edited or mixed from two key pairs",
                            path, derived);
            goto done;
        }
    }
done:
    veil_wipe(buf, sizeof buf);
    if (rc != VEIL_OK && secret_key)
        veil_wipe(secret_key, VEIL_Z85_KEY_CHARS + 1);
    close(fd);
    return rc;
}

/* ---- writing ------------------------------------------------------------------------------ */

/* fsyncs the directory holding path so that a rename or link survives a crash. */
static void sync_parent_dir(const char *path)
{
    char dir[4096];
    const char *slash = strrchr(path, '/');
    if (!slash) {
        snprintf(dir, sizeof dir, ".");
    } else if (slash == path) {
        snprintf(dir, sizeof dir, "/");
    } else {
        if ((size_t)(slash - path) >= sizeof dir)
            return;
        memcpy(dir, path, (size_t)(slash - path));
        dir[slash - path] = '\0';
    }
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        /* Best effort: some file systems refuse fsync on directories. */
        (void)fsync(fd);
        close(fd);
    }
}

/*
 * Writes len bytes to path with the given mode: temporary file created exclusively, written,
 * fsynced, then renamed over path (overwrite) or linked to path (fails if path exists).
 */
static int write_file_atomic(const char *path, const char *data, size_t len, mode_t mode,
                             int overwrite)
{
    char tmp[4096 + 64];
    int fd = -1, rc = VEIL_OK;
    static unsigned counter;

    if (strlen(path) > 4096)
        return veil_error(VEIL_ERR_INVAL, "key file path is too long (%zu characters)",
                          strlen(path));
    for (int attempt = 0;; attempt++) {
        snprintf(tmp, sizeof tmp, "%s.tmp-%ld-%u", path, (long)getpid(),
                 __atomic_fetch_add(&counter, 1, __ATOMIC_RELAXED));
        fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode);
        if (fd >= 0 || errno != EEXIST || attempt >= 100)
            break;
    }
    if (fd < 0)
        return veil_error(VEIL_ERR_IO, "cannot create %s: %s", tmp, strerror(errno));
    if (fchmod(fd, mode) != 0) {
        rc = veil_error(VEIL_ERR_IO, "cannot set the mode of %s: %s", tmp, strerror(errno));
        goto fail;
    }
    for (size_t done = 0; done < len;) {
        ssize_t w = write(fd, data + done, len - done);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0) {
            rc = veil_error(VEIL_ERR_IO, "cannot write %s: %s", tmp, strerror(errno));
            goto fail;
        }
        done += (size_t)w;
    }
    if (fsync(fd) != 0) {
        rc = veil_error(VEIL_ERR_IO, "cannot fsync %s: %s", tmp, strerror(errno));
        goto fail;
    }
    if (close(fd) != 0) {
        fd = -1;
        rc = veil_error(VEIL_ERR_IO, "cannot close %s: %s", tmp, strerror(errno));
        goto fail;
    }
    fd = -1;
    if (overwrite) {
        if (rename(tmp, path) != 0) {
            rc = veil_error(VEIL_ERR_IO, "cannot rename %s to %s: %s", tmp, path, strerror(errno));
            goto fail;
        }
    } else {
        if (link(tmp, path) != 0) {
            rc = veil_error(VEIL_ERR_IO, "cannot create %s: %s%s", path, strerror(errno),
                            errno == EEXIST ? " (use -f to replace it)" : "");
            goto fail;
        }
        unlink(tmp);
    }
    sync_parent_dir(path);
    return VEIL_OK;
fail:
    if (fd >= 0)
        close(fd);
    unlink(tmp);
    return rc;
}

void veil_curve_pub_path(const char *path, char *out, size_t cap)
{
    size_t n = strlen(path);
    if (n > 4 && strcmp(path + n - 4, ".key") == 0)
        snprintf(out, cap, "%.*s.pub", (int)(n - 4), path);
    else
        snprintf(out, cap, "%s.pub", path);
}

int veil_curve_write_key_file_ex(const char *path, const char *public_key, const char *secret_key,
                                 int overwrite)
{
    char text[2 * (VEIL_Z85_KEY_CHARS + 16)];
    char pub_path[4096 + 8];
    struct stat st;
    int rc;

    if (!path || !public_key || !secret_key || !*path)
        return veil_error(VEIL_ERR_INVAL, "veil_curve_write_key_file: NULL or empty argument");
    if (!veil_z85_key_valid(public_key, strlen(public_key)) ||
        !veil_z85_key_valid(secret_key, strlen(secret_key)))
        return veil_error(VEIL_ERR_INVAL,
                          "veil_curve_write_key_file: keys must be 40-character Z85 strings");
    if (strlen(path) > 4096)
        return veil_error(VEIL_ERR_INVAL, "key file path is too long");
    veil_curve_pub_path(path, pub_path, sizeof pub_path);
    if (!overwrite && lstat(pub_path, &st) == 0)
        return veil_error(VEIL_ERR_IO, "cannot create %s: File exists (use -f to replace it)",
                          pub_path);

    int n = snprintf(text, sizeof text, "public %s\nsecret %s\n", public_key, secret_key);
    rc = write_file_atomic(path, text, (size_t)n, 0600, overwrite);
    veil_wipe(text, sizeof text);
    if (rc != VEIL_OK)
        return rc;
    n = snprintf(text, sizeof text, "public %s\n", public_key);
    rc = write_file_atomic(pub_path, text, (size_t)n, 0644, overwrite);
    if (rc != VEIL_OK && !overwrite) {
        /* Lost a race for NAME.pub: take back NAME.key so that nothing half-made remains. */
        unlink(path);
    }
    return rc;
}

int veil_curve_write_key_file(const char *path, const char *public_key, const char *secret_key)
{
    return veil_curve_write_key_file_ex(path, public_key, secret_key, 1);
}

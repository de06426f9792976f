/*
 * config_internal.h — helpers of net/config.c and net/keys.c that other net files, tools and
 * tests may use but that are not part of the fixed config.h interface: parsing configuration
 * text held in memory, Z85 key validation and key files written without replacing an existing
 * file. Never installed.
 */
#ifndef VEIL_NET_CONFIG_INTERNAL_H
#define VEIL_NET_CONFIG_INTERNAL_H

#include "net/net_config.h"

#include <stddef.h>

/* Flags of veil_net_config_parse_text_flags. */
enum {
    /* Validate the secret-key-file directive's syntax but do not open the file (fuzzing). */
    VEIL_CONFIG_NO_KEY_FILE = 1,
};

/**
 * Parses configuration text (the format of config.h) into cfg, which is first reset to the
 * defaults. name is used in error messages ("NAME:LINE: ...") and, when it contains a '/', its
 * directory is the base of a relative secret-key-file path. The secret key file is read (and its
 * mode checked) unless flags has VEIL_CONFIG_NO_KEY_FILE. Returns VEIL_OK, VEIL_ERR_FORMAT for a
 * malformed or inconsistent configuration, or the error of reading the key file. On error cfg
 * holds no secret key. Thread-safe (no global state).
 * Comments: since Z85 keys may contain '#', a '#' starts a comment only as the first non-blank
 * character of a line or as a word of its own ("party 1 tcp://h:1 KEY # laptop"). A relative
 * secret-key-file path is relative to the configuration file's directory.
 */
int veil_net_config_parse_text_flags(const char *text, const char *name,
                                     struct veil_net_config *cfg, int flags);
/** veil_net_config_parse_text_flags with flags 0. */
int veil_net_config_parse_text(const char *text, const char *name, struct veil_net_config *cfg);

/**
 * 1 when a tcp:// endpoint names a bracketed IPv6 address ("tcp://[::1]:7000"), else 0: ZeroMQ
 * binds and connects such an endpoint only on a socket with ZMQ_IPV6 set (net/mesh.c and
 * net/data_channel.c set it on the sockets of such endpoints). A host name resolves to IPv4
 * addresses, as ZeroMQ does by default.
 */
int veil_net_endpoint_ipv6(const char *endpoint);

/** 1 when s[0..n) is a 40-character Z85 string that decodes to 32 bytes, else 0. */
int veil_z85_key_valid(const char *s, size_t n);

/**
 * The public-key file that goes with key file path: NAME.pub for NAME.key, else path + ".pub".
 * (veil_curve_write_key_file writes it there.)
 */
void veil_curve_pub_path(const char *path, char *out, size_t cap);

/**
 * As veil_curve_write_key_file, but with overwrite 0 refuses (VEIL_ERR_IO, EEXIST named) when
 * path or path.pub exists; the check and the creation are atomic (link(2) of a temporary file),
 * so two concurrent writers cannot both succeed.
 */
int veil_curve_write_key_file_ex(const char *path, const char *public_key, const char *secret_key,
                                 int overwrite);

#endif

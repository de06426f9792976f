/*
 * net_config.h — a party's view of a session (internal to net/): who the parties are, where they
 * listen, their CURVE public keys, this process's identity and secret key, timing and link
 * emulation options. Filled from a configuration file (real deployments) or from the
 * harness's environment (tests and the launcher).
 *
 * Configuration file format (text, one directive per line, '#' starts a comment):
 *   session      <32 hex digits>
 *   parties      <N>                      number of computing parties, 2..16
 *   party <id> <endpoint> <public-key>    one line per party 0..N-1; endpoint tcp://HOST:PORT
 *   dealer <endpoint> <public-key>        optional; the dealer's id is N
 *   self <id>                             this process (N for the dealer)
 *   secret-key-file <path>                file written by veil-keygen (mode 0600 enforced)
 *   heartbeat <seconds>                   default 0.5
 *   timeout <seconds>                     silence after which a peer is declared lost, default 10
 *   link <LATENCY,BANDWIDTH>              link emulation on every outgoing link (emulate.h)
 *   insecure-plaintext yes                disables CURVE: for debugging only, logged loudly
 * Public keys are Z85 (40 characters) as written by veil-keygen. Errors name the file, the
 * line and what to change.
 */
#ifndef VEIL_NET_CONFIG_H
#define VEIL_NET_CONFIG_H

#include "net/emulate.h"
#include "net/frame.h"

#define VEIL_NET_MAX_PARTIES 16
#define VEIL_NET_MAX_PROCS (VEIL_NET_MAX_PARTIES + 1)
#define VEIL_Z85_KEY_CHARS 40

struct veil_net_peer {
    char endpoint[256];
    char public_key[VEIL_Z85_KEY_CHARS + 1];
};

struct veil_net_config {
    int nparties;   /* computing parties */
    int has_dealer; /* the dealer has id nparties */
    int self;       /* this process's id */
    uint8_t session[VEIL_SESSION_BYTES];
    struct veil_net_peer peers[VEIL_NET_MAX_PROCS];
    char secret_key[VEIL_Z85_KEY_CHARS + 1]; /* this process's CURVE secret key (Z85) */
    int insecure_plaintext;                  /* 1: no CURVE (debug only) */
    double heartbeat_s;
    double timeout_s;
    struct veil_link_params link;
    uint8_t plan_digest[VEIL_PLAN_DIGEST_BYTES]; /* caller-supplied until the compiler exists */
    int listen_fd; /* >= 0: an already bound and listening socket for our endpoint; -1: bind */
};

/** Defaults: heartbeat 0.5 s, timeout 10 s, no link emulation, CURVE on, listen_fd -1, zeros
 * elsewhere. */
void veil_net_config_defaults(struct veil_net_config *cfg);
/** Parses a configuration file (format above) into cfg; every field validated. */
int veil_net_config_load(const char *path, struct veil_net_config *cfg);
/** Number of processes in the session (parties + dealer). */
int veil_net_config_nprocs(const struct veil_net_config *cfg);

/** Writes a new CURVE key pair (Z85) with zmq_curve_keypair. */
int veil_curve_keypair(char public_key[VEIL_Z85_KEY_CHARS + 1],
                       char secret_key[VEIL_Z85_KEY_CHARS + 1]);
/** Reads a key file written by veil-keygen (refuses group/world-readable secret files). */
int veil_curve_read_key_file(const char *path, char public_key[VEIL_Z85_KEY_CHARS + 1],
                             char secret_key[VEIL_Z85_KEY_CHARS + 1]);
/** Writes a key file (0600) holding both keys; the public key also goes to path + ".pub". */
int veil_curve_write_key_file(const char *path, const char *public_key, const char *secret_key);

#endif

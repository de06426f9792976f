/*
 * emulate.h — link emulation by pacing at the sender (internal to net/). A link has a one-way
 * latency and a bandwidth; the emulator answers, for each chunk handed to it, the earliest
 * time it may be handed to ZeroMQ so that the receiver observes (approximately) that latency
 * and bandwidth: departure = max(now, busy_until) + bytes / bandwidth serialisation, and the
 * chunk becomes visible to the peer latency later (the sender holds it until then, in order).
 * One emulator per (sender, peer) link; not thread-safe (the I/O thread owns it).
 */
#ifndef VEIL_NET_EMULATE_H
#define VEIL_NET_EMULATE_H

#include <stddef.h>
#include <stdint.h>

struct veil_link_params {
    double latency_s;     /* one-way latency in seconds, >= 0 */
    double bandwidth_Bps; /* bytes per second; 0 means unlimited */
};

/**
 * Parses "LATENCY,BANDWIDTH" such as "0.1ms,10Gbit", "35ms,100Mbit", "0,1Gbit", "none".
 * Latency units: s, ms, us; bandwidth units: bit, kbit, Mbit, Gbit (per second, powers of 10)
 * or B, KB, MB, GB (bytes per second). Returns VEIL_ERR_INVAL with a message on bad text.
 */
int veil_link_parse(const char *text, struct veil_link_params *out);

struct veil_link_emulator {
    struct veil_link_params p;
    double wire_free_at; /* time the emulated wire finishes serialising the last chunk */
};

void veil_link_emulator_init(struct veil_link_emulator *e, const struct veil_link_params *p);
/**
 * Accounts a chunk of bytes entering the link at time now (seconds, veil_now()) and returns
 * the time at which the sender should hand it to ZeroMQ: when its last byte would reach the
 * peer on the emulated link. Times are monotone over successive calls.
 */
double veil_link_emulator_release_time(struct veil_link_emulator *e, size_t bytes, double now);

/** 1 when p asks for any emulation (latency or bandwidth limit), 0 for "none". */
int veil_link_emulator_active(const struct veil_link_params *p);

#endif

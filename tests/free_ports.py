#!/usr/bin/env python3
"""free_ports.py — TCP ports for tests that give processes fixed endpoints: random ones below the
kernel's ephemeral range (ip_local_port_range), free when checked. A port the kernel picks and a
test gives back could become some connection's source port before the process meant to listen on
it binds it; below that range no connection gets one. Usage: free_ports.py N [HOST] prints N
distinct ports free on HOST (default 127.0.0.1; ::1 for IPv6); tests/faults/campaign.py imports
candidate() and free_ports()."""
import random
import socket
import sys

_RNG = random.SystemRandom()


def candidate():
    """A random port below the ephemeral range."""
    lo = 32768
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            lo = int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        pass
    return _RNG.randrange(10000, max(lo, 11000))


def free_ports(n, host="127.0.0.1"):
    """n distinct ports free on host when checked."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    socks = []
    try:
        while len(socks) < n:
            s = socket.socket(family)
            try:
                s.bind((host, candidate()))
                socks.append(s)
            except OSError:
                s.close()
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


if __name__ == "__main__":
    print(" ".join(str(p) for p in free_ports(int(sys.argv[1]), *sys.argv[2:3])))

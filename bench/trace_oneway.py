#!/usr/bin/env python3
"""trace_oneway.py — the one-way latency of the messages one process sent another, from two
VEIL_TRACE files of the same session on ONE machine (their timestamps are CLOCK_MONOTONIC, so
they line up only there).

    bench/trace_oneway.py SENDER.json RECEIVER.json [--from-run K]

A message's one-way latency is the time from the sender's "send" event start (its first chunk
staged by Veil's I/O thread) to the end of the receiver's "recv" event (its last chunk arrived
at the receiver's I/O thread): staging, ZeroMQ and CURVE at both ends, the kernel and every
thread hand-off between them, but not the task that then consumes it. Messages are matched in
order by (tag, bytes): between two processes they arrive in the order they were sent. Only
messages the sender sent in runs >= K (default 1: the steady runs, run 0 and the preparation left
out) count.

Prints one line:
    sender P -> receiver Q, runs >= K: n N, one-way us p10 A p50 B p90 C max D
Exit status: 0 printed, 1 no matched message, 2 bad usage or a file that is not a Veil trace.
"""
import os
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import veil_trace  # noqa: E402  (beside this script)

NAME = "trace_oneway"


def die(code, msg):
    veil_trace.die(NAME, code, msg)


def messages(events, cat, peer):
    """The complete events of category cat (send or recv) with process peer, in time order."""
    out = [e for e in events if e["cat"] == cat and isinstance(e.get("args"), dict) and
           e["args"].get("peer") == peer]
    return sorted(out, key=lambda e: e["ts"])


def pct(v, q):
    return v[min(len(v) - 1, int(q * len(v)))]


def main(argv):
    args = list(argv[1:])
    first = veil_trace.from_run(NAME, args)
    if len(args) != 2 or any(a.startswith("-") for a in args):
        die(2, "usage: trace_oneway.py SENDER.json RECEIVER.json [--from-run K]")
    sender, sev = veil_trace.load(NAME, args[0])
    receiver, rev = veil_trace.load(NAME, args[1])
    if sender == receiver:
        die(2, "both files are process %d's" % sender)
    queue = {}
    for e in messages(rev, "recv", sender):
        queue.setdefault((e["args"].get("tag"), e["args"].get("bytes")), []).append(e)
    lat = []
    for e in messages(sev, "send", receiver):
        key = (e["args"].get("tag"), e["args"].get("bytes"))
        if not queue.get(key):
            continue  # not received (yet) when the receiver's trace was written
        r = queue[key].pop(0)
        if e["args"].get("run", -1) >= first:
            lat.append(r["ts"] + r["dur"] - e["ts"])
    if not lat:
        die(1, "no message from process %d to process %d in runs >= %d" % (sender, receiver,
                                                                            first))
    lat.sort()
    print("sender %d -> receiver %d, runs >= %d: n %d, one-way us p10 %.0f p50 %.0f p90 %.0f "
          "max %.0f" % (sender, receiver, first, len(lat), pct(lat, 0.1), pct(lat, 0.5),
                        pct(lat, 0.9), lat[-1]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

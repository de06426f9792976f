#!/usr/bin/env python3
"""check_lookahead.py RUN TRACE... — for a two-product chain (dense, relu, dense) traced by a party,
prints the time in microseconds from the end of the first product's last receive to the start of
the second product's first send in run RUN (negative: the second product's messages, e.g. its
weight open, started before the first product had its operands). Messages are told apart by their
tags, which the walk allocates in order: the first product's are below the ReLU's, the second's
above. With look-ahead 0 the second product is submitted only once the first has finished, so
the gap is never negative."""
import json
import sys


def gap(path, run):
    events = json.load(open(path))["traceEvents"]
    msgs = [e for e in events if e.get("ph") == "X" and e.get("cat") in ("send", "recv")
            and e["args"].get("run") == run]
    tag = lambda e: int(e["args"]["tag"], 16)
    relu = [tag(e) for e in msgs if e["args"]["region"] == "relu"]
    if not relu:
        raise SystemExit("%s: no ReLU messages in run %d" % (path, run))
    cut = min(relu)
    first = [e for e in msgs if e["args"]["region"] == "linear" and tag(e) < cut]
    second = [e for e in msgs if e["args"]["region"] == "linear" and tag(e) > cut]
    end1 = max(e["ts"] + e["dur"] for e in first if e["cat"] == "recv")
    start2 = min(e["ts"] for e in second if e["cat"] == "send")
    return start2 - end1


if __name__ == "__main__":
    run = int(sys.argv[1])
    for p in sys.argv[2:]:
        print("%.1f" % gap(p, run))

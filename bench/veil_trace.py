"""veil_trace.py — what the trace scripts (trace_oneway.py, trace_gaps.py) share: reading one
process's VEIL_TRACE file (Chrome trace JSON written at veil_party_close) and their common command
line (--from-run K) and exits (one line on stderr naming the script, then the status)."""
import json
import sys


def die(name, code, msg):
    """Prints `name: msg` on stderr and exits with code."""
    print("%s: %s" % (name, msg), file=sys.stderr)
    sys.exit(code)


def load(name, path):
    """(the process id, its complete events) of one process's trace file; exit 2 otherwise."""
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
        events = [e for e in doc["traceEvents"] if isinstance(e, dict) and e.get("ph") == "X"]
        for e in events:
            float(e["ts"]), float(e["dur"]), e["cat"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        die(name, 2, "%s: not a Veil trace (%s)" % (path, e))
    pids = {e.get("pid") for e in events}
    if len(pids) != 1 or None in pids:
        die(name, 2, "%s: expected the events of one process, found process ids %s" % (
            path, sorted(p for p in pids if p is not None)))
    return pids.pop(), events


def from_run(name, args):
    """Removes `--from-run K` from args; K (default 1: the steady runs)."""
    if "--from-run" not in args:
        return 1
    i = args.index("--from-run")
    try:
        first = int(args[i + 1])
    except (IndexError, ValueError):
        die(name, 2, "--from-run needs a run index")
    del args[i:i + 2]
    return first

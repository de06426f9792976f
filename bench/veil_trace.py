"""veil_trace.py — what the trace scripts (trace_oneway.py, trace_gaps.py, trace_cpu.py) share:
reading one process's VEIL_TRACE file (Chrome trace JSON written at veil_party_close), their common
command line (--from-run K; one file and its runs) and exits (one line on stderr naming the script,
then the status)."""
import json
import sys


def die(name, code, msg):
    """Prints `name: msg` on stderr and exits with code."""
    print("%s: %s" % (name, msg), file=sys.stderr)
    sys.exit(code)


def load(name, path, lanes=None):
    """(the process id, its complete events) of one process's trace file; exit 2 otherwise. With
    a dict as lanes, also fills it with {thread id: name} from the thread_name metadata."""
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
        events = [e for e in doc["traceEvents"] if isinstance(e, dict) and e.get("ph") == "X"]
        for e in events:
            float(e["ts"]), float(e["dur"]), e["cat"]
        if lanes is not None:
            lanes.update((e.get("tid"), e.get("args", {}).get("name", ""))
                         for e in doc["traceEvents"] if isinstance(e, dict) and
                         e.get("ph") == "M" and e.get("name") == "thread_name")
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
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


def run_of(e):
    """The run index an event carries in its args, or None."""
    a = e.get("args")
    return a.get("run") if isinstance(a, dict) else None


def one_file_runs(name, argv, usage, lanes=None):
    """The command line `FILE [--from-run K]` of a script that reads one trace: (the file, K, its
    complete events, its run events with index >= K in run order); exit 2 with usage otherwise.
    lanes: as for load."""
    args = list(argv[1:])
    first = from_run(name, args)
    if len(args) != 1 or args[0].startswith("-"):
        die(name, 2, "usage: " + usage)
    _, events = load(name, args[0], lanes)
    runs = sorted((e for e in events if e["cat"] == "run" and isinstance(run_of(e), int) and
                   run_of(e) >= first), key=run_of)
    return args[0], first, events, runs

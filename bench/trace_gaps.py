#!/usr/bin/env python3
"""trace_gaps.py — where one process's run time goes between its tasks, from its VEIL_TRACE file:
how much of each run its tasks computed, and what the time between them was spent on.

    bench/trace_gaps.py TRACE.json [--from-run K]

Per run (runs >= K, default 1: the steady runs), the run's time is split into parts that add up
to it exactly:
  busy     some task of this process ran (the union of the task intervals);
  wait P   no task ran and the process waited for a message from process P: a gap between tasks
           during which messages of the run arrived is counted as waiting up to the arrival of
           the last of them (the "recv" event's end), for the process that sent that last one;
  after    the rest of such a gap: the message was in, the task that followed had not started
           yet (thread hand-offs, StarPU's scheduling, a worker waiting for a core);
  local    gaps no message of the run ended in: the next task waited for the previous ones, for
           its submission, or for a core;
  tail     from the run's last task to its end (the last sends, the run's barrier).
A message "of the run" is a recv event whose run is the run's index (material the dealer sends
ahead for the next run does not count). The attribution is by time, not by dependency: a gap's
last message is taken as what the next task waited for. With one worker per process (the
examples' default) a gap is the worker's idle time.

Prints a table: per run its milliseconds and the parts in percent of it, then the medians over the
runs. Exit status: 0 printed, 1 no run >= K in the trace, 2 bad usage or not a Veil trace.
"""
import os
import signal
import statistics
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import veil_trace  # noqa: E402  (beside this script)

NAME = "trace_gaps"


def die(code, msg):
    veil_trace.die(NAME, code, msg)


run_of = veil_trace.run_of


def split_run(run, tasks, recvs):
    """The parts of one run (dict of microseconds; they add up to the run's duration)."""
    t0, t1 = run["ts"], run["ts"] + run["dur"]
    ivs = sorted((max(e["ts"], t0), min(e["ts"] + e["dur"], t1)) for e in tasks
                 if e["ts"] < t1 and e["ts"] + e["dur"] > t0)
    arrivals = sorted((e["ts"] + e["dur"], e["args"].get("peer")) for e in recvs)
    parts = {"busy": 0.0, "after": 0.0, "local": 0.0, "tail": 0.0}
    cur, k = t0, 0
    for a, b in ivs:
        if a > cur:  # a gap [cur, a): the messages of the run that arrived in it
            while k < len(arrivals) and arrivals[k][0] <= cur:
                k += 1
            last = None
            while k < len(arrivals) and arrivals[k][0] <= a:
                last = arrivals[k]
                k += 1
            if last is None:
                parts["local"] += a - cur
            else:
                key = "wait %s" % last[1]
                parts[key] = parts.get(key, 0.0) + last[0] - cur
                parts["after"] += a - last[0]
            cur = a
        if b > cur:
            parts["busy"] += b - cur
            cur = b
    parts["tail"] += t1 - cur
    return parts


def main(argv):
    path, first, events, runs = veil_trace.one_file_runs(
        NAME, argv, "trace_gaps.py TRACE.json [--from-run K]")
    if not runs:
        die(1, "no run >= %d in %s" % (first, path))
    rows = []
    for run in runs:
        r = run_of(run)
        tasks = [e for e in events if e["cat"] == "task" and run_of(e) == r]
        recvs = [e for e in events if e["cat"] == "recv" and run_of(e) == r]
        parts = split_run(run, tasks, recvs)
        total = sum(parts.values())
        if abs(total - run["dur"]) > 1e-6 * max(1.0, run["dur"]):
            die(2, "run %d: the parts add up to %.3f us, not the run's %.3f" % (r, total,
                                                                              run["dur"]))
        rows.append((r, run["dur"], parts))
    keys = ["busy"] + sorted({k for _, _, p in rows for k in p if k.startswith("wait")}) + [
        "after", "local", "tail"]
    print("%-6s %9s " % ("run", "ms") + " ".join("%9s" % k for k in keys) + "   (% of the run)")
    for r, dur, parts in rows:
        print("%-6d %9.3f " % (r, dur / 1000) + " ".join(
            "%9.1f" % (100 * parts.get(k, 0.0) / dur) for k in keys))
    med = [statistics.median(100 * p.get(k, 0.0) / d for _, d, p in rows) for k in keys]
    print("%-6s %9.3f " % ("median", statistics.median(d for _, d, _ in rows) / 1000) + " ".join(
        "%9.1f" % m for m in med))
    return 0


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # a closed pipe (| head) ends it quietly
    sys.exit(main(sys.argv))

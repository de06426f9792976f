#!/usr/bin/env python3
"""trace_cpu.py — what one process's threads did with its CPUs in each run, from its VEIL_TRACE
file: the CPU use each run event carries (struct veil_cpu_use, include/veil/party.h).

    bench/trace_cpu.py TRACE.json [--from-run K]

Per run (runs >= K, default 1: the steady runs): its milliseconds, the trace's idle share (time
with no task and no message), the share of the process's CPUs its threads used, and per role
(workers, submit, net, zmq, wiper, other) the role's CPU time in percent of the CPUs' time, the
milliseconds it was ready to run but waited for a CPU and the times it was put on one; then the
medians over the runs. An idle share next to a CPU share near 100 % means the worker waited for
a core the process's own threads held, not for a peer.

Exit status: 0 printed, 1 no run >= K with CPU use in the trace (a trace written before the
profile had it, or on a kernel without per-thread scheduler statistics), 2 bad usage or not a
Veil trace.
"""
import os
import signal
import statistics
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import veil_trace  # noqa: E402  (beside this script)

NAME = "trace_cpu"
ROLES = ["workers", "submit", "net", "zmq", "wiper", "other"]  # enum veil_cpu_role


def die(code, msg):
    veil_trace.die(NAME, code, msg)


def row_of(run):
    """(run, ms, idle %, CPU %, {role: (CPU %, wait ms, slices)}) of one run event, or None when
    it carries no CPU use; exit 2 when what it carries is malformed."""
    a = run.get("args")
    if not isinstance(a, dict) or "cpu_ms" not in a:
        return None
    try:
        cpus, window = int(a["cpus"]), float(a["cpu_window_ms"])
        if cpus < 1 or window <= 0:
            raise ValueError("cpus %d, window %.3f ms" % (cpus, window))
        roles = {r: (100 * float(a["cpu_ms"][r]) / (window * cpus), float(a["cpu_wait_ms"][r]),
                     int(a["cpu_slices"][r])) for r in ROLES}
        return (a["run"], float(a["wall_ms"]), float(a["idle_pct"]), float(a["cpu_busy_pct"]),
                roles)
    except (KeyError, TypeError, ValueError) as e:
        die(2, "run %s: malformed CPU use (%s)" % (a.get("run"), e))
    return None


def main(argv):
    path, first, _, runs = veil_trace.one_file_runs(NAME, argv,
                                                    "trace_cpu.py TRACE.json [--from-run K]")
    rows = [r for r in (row_of(e) for e in runs) if r is not None]
    if not rows:
        die(1, "no run >= %d with CPU use in %s" % (first, path))
    print("%-6s %9s %6s %6s " % ("run", "ms", "idle%", "cpu%") +
          " ".join("%22s" % r for r in ROLES))
    print("%-6s %9s %6s %6s " % ("", "", "", "") +
          " ".join("%22s" % "cpu% wait_ms slices" for _ in ROLES))

    def line(label, ms, idle, cpu, roles):
        print("%-6s %9.3f %6.1f %6.1f " % (label, ms, idle, cpu) + " ".join(
            "%6.1f %8.2f %6d" % roles[r] for r in ROLES))

    for r in rows:
        line(str(r[0]), *r[1:])
    med = lambda k: statistics.median(r[k] for r in rows)  # noqa: E731
    roles = {x: (statistics.median(r[4][x][0] for r in rows),
                 statistics.median(r[4][x][1] for r in rows),
                 int(statistics.median(r[4][x][2] for r in rows))) for x in ROLES}
    line("median", med(1), med(2), med(3), roles)
    return 0


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # a closed pipe (| head) ends it quietly
    sys.exit(main(sys.argv))

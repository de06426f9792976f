#!/usr/bin/env python3
"""trace_workers.py — which worker ran what, from one process's VEIL_TRACE file: per worker lane
(StarPU's name for it, e.g. "worker 0 (CUDA 0.0 (NVIDIA H200 139.8 GiB 01:00.0))" or
"worker 1 (CPU 0)"), over the runs >= K, its task count, its busy milliseconds and the three
codelets it spent the most time in. Where the tasks of a run went when a process has CUDA and
CPU workers: the placement rules of codelets/place.c, measured.

    bench/trace_workers.py TRACE.json [--from-run K]

Output: one line per worker that ran a task, `LANE: tasks N, busy MS ms, top: CODELET MS ms, ...`
(LANE the lane's name as above), in lane order; then `total: tasks N, busy MS ms`.

Exit status: 0 printed, 1 no task in runs >= K, 2 bad usage or not a Veil trace.
"""
import os
import sys
from collections import defaultdict

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import veil_trace  # noqa: E402  (beside this script)

NAME = "trace_workers"


def main(argv):
    names = {}  # thread id -> the lane's name, read with the events
    path, first, events, _ = veil_trace.one_file_runs(NAME, argv, "trace_workers.py TRACE.json "
                                                      "[--from-run K]", names)
    count = defaultdict(int)
    busy = defaultdict(float)
    per_codelet = defaultdict(lambda: defaultdict(float))
    for e in events:
        run = veil_trace.run_of(e)
        if e["cat"] != "task" or not isinstance(run, int) or run < first:
            continue
        lane = e.get("tid")
        count[lane] += 1
        busy[lane] += float(e["dur"])
        per_codelet[lane][e.get("name", "?")] += float(e["dur"])
    if not count:
        veil_trace.die(NAME, 1, "%s: no task in runs >= %d" % (path, first))
    for lane in sorted(count, key=lambda t: (t is None, t if isinstance(t, int) else 0)):
        top = sorted(per_codelet[lane].items(), key=lambda kv: -kv[1])[:3]
        print("%s: tasks %d, busy %.1f ms, top: %s" % (
            names.get(lane, "lane %s" % lane), count[lane], busy[lane] / 1e3,
            ", ".join("%s %.1f ms" % (n, us / 1e3) for n, us in top)))
    print("total: tasks %d, busy %.1f ms" % (sum(count.values()), sum(busy.values()) / 1e3))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

#!/usr/bin/env python3
"""check_trace.py — checks Veil's per-party Chrome trace files (test_graph_trace.sh).

Usage: check_trace.py --regions input,linear,... --parties N FILE...
For each file: valid JSON with traceEvents and displayTimeUnit "ms"; every event has the
fields its phase needs; complete events have ts and dur >= 0, pid the file's party; every lane
used is named by a thread_name metadata event; every task event belongs to a run and lies
inside that run's time span; at a party (pid < N) every region listed has at least one event
(task or message) in every run; the send events of the whole session add up to the runs' total
bytes_sent (veil_party_last_stats, carried by each run event), the dealer-pacing
acknowledgements (session tags, 8 bytes a run, not counted in bytes_sent) left out: run
statistics attribute traffic between runs (the dealer's seed, material dealt ahead) to a run,
while an event belongs to the run in which it was posted; every run event carries the profile's
overlap_share in [0, 1] (higher is better) and stretch, 0 or >= 1 (lower is better), and no
longer the old name "efficiency", and its threads' CPU use (check_cpu). Prints one line per
failure, exits 1 then.
"""
import argparse
import json
import sys

EPS_US = 0.002  # ts and dur are written with 3 decimals (nanoseconds)
SESSION_TAG = (1 << 62) | (1 << 60)  # VEIL_MPC_TAG_SESSION | run: dealer pacing (tasks/mpc.h)
ROLES = ["workers", "submit", "net", "zmq", "wiper", "other"]  # enum veil_cpu_role


def check_cpu(path, args, at_party, fail):
    """A run's CPU use: cpus >= 1, cpu_ms and cpu_wait_ms with every role, none negative, the
    workers and the submitting thread on a CPU, and at a party the network's I/O thread too,
    cpu_busy_pct equal to the sum over wall_ms x cpus. The dealer's I/O thread may sleep through
    a run: it deals a run's material ahead of it, and a small send goes out inline from the thread
    that posts it (net/comm.c). A role with one slice and no run time is let pass: a slice that
    begins as the closing snapshot reads is counted before any of its run time is."""
    run = args["run"]
    cpus, busy = args.get("cpus"), args.get("cpu_busy_pct")
    used, wait = args.get("cpu_ms"), args.get("cpu_wait_ms")
    if not isinstance(cpus, int) or cpus < 1 or busy is None or not isinstance(used, dict) \
            or not isinstance(wait, dict):
        fail(f"{path}: run {run}: no cpus / cpu_busy_pct / cpu_ms / cpu_wait_ms")
        return
    slices = args.get("cpu_slices")
    if set(used) != set(ROLES) or set(wait) != set(ROLES) or not isinstance(slices, dict) \
            or set(slices) != set(ROLES):
        fail(f"{path}: run {run}: CPU roles {sorted(used)} / {sorted(wait)} / {slices}, "
             f"not {ROLES}")
        return
    for role in ROLES:  # a thread put on a CPU in the window ran there
        if not isinstance(slices[role], int) or slices[role] < 0 or \
                (slices[role] > 1 and used[role] <= 0):
            fail(f"{path}: run {run}: {role}: {slices[role]} slices, {used[role]} ms")
    if min(used.values()) < 0 or min(wait.values()) < 0:
        fail(f"{path}: run {run}: a negative CPU time: {used} {wait}")
    for role in ("workers", "submit", "net") if at_party else ("workers", "submit"):
        if used[role] <= 0:
            fail(f"{path}: run {run}: no CPU time for the {role} thread(s): {used}")
    window = args.get("cpu_window_ms", 0)
    if not args["wall_ms"] <= window <= args["wall_ms"] + 250:
        fail(f"{path}: run {run}: CPU window {window} ms around a {args['wall_ms']} ms run")
        return
    want = 100 * sum(used.values()) / (window * cpus)
    # what the printed precision allows: cpu_busy_pct 2 decimals, each ms 3 (half a unit each), so
    # a short run's window (a dealer's, a few ms) allows more than a long one's
    tol = 0.005 + 100 * 0.0005 * len(ROLES) / (window * cpus) + want * 0.0005 / window + 1e-6
    if abs(busy - want) > tol or busy > 100.01:
        fail(f"{path}: run {run}: cpu_busy_pct {busy}, the roles' sum gives {want:.2f}")


def check(path, regions, nparties, fail):
    try:
        with open(path) as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        fail(f"{path}: not valid JSON: {e}")
        return
    if not isinstance(doc.get("traceEvents"), list) or doc.get("displayTimeUnit") != "ms":
        fail(f"{path}: traceEvents list or displayTimeUnit 'ms' missing")
        return
    pid = doc.get("otherData", {}).get("party")
    named, runs, tasks, msgs = set(), {}, [], []
    for e in doc["traceEvents"]:
        ph = e.get("ph")
        if "name" not in e or ph not in ("X", "M") or e.get("pid") != pid:
            fail(f"{path}: bad event {e}")
            continue
        if ph == "M":
            if e["name"] == "thread_name":
                named.add(e.get("tid"))
            if "args" not in e:
                fail(f"{path}: metadata without args: {e}")
            continue
        if not all(k in e for k in ("ts", "dur", "tid", "cat", "args")) or e["dur"] < 0:
            fail(f"{path}: complete event lacks a field: {e}")
            continue
        cat, args = e["cat"], e["args"]
        if cat == "run":
            runs[args["run"]] = (e["ts"], e["ts"] + e["dur"], args["bytes_sent"])
            share, stretch = args.get("overlap_share"), args.get("stretch")
            if share is None or stretch is None or "efficiency" in args:
                fail(f"{path}: run {args['run']}: no overlap_share / stretch, or an efficiency")
            elif not (0 <= share <= 1.0005 and (stretch == 0 or stretch >= 0.9995)):
                fail(f"{path}: run {args['run']}: overlap_share {share}, stretch {stretch}")
            check_cpu(path, args, isinstance(pid, int) and pid < nparties, fail)
        elif cat == "task":
            tasks.append(e)
        elif cat in ("send", "recv"):
            if not all(k in args for k in ("peer", "tag", "bytes", "region", "run")):
                fail(f"{path}: message without peer/tag/bytes/region/run: {e}")
            msgs.append(e)
        else:
            fail(f"{path}: unknown category {cat}")
    used = {e["tid"] for e in tasks + msgs} | {0}
    if used - named:
        fail(f"{path}: lanes without a name: {sorted(used - named)}")
    if not runs:
        fail(f"{path}: no run event")
    for e in tasks:
        r = e["args"].get("run", -1)
        if r not in runs:
            fail(f"{path}: task {e['name']} outside any run")
            continue
        t0, t1, _ = runs[r]
        if e["ts"] < t0 - EPS_US or e["ts"] + e["dur"] > t1 + EPS_US:
            fail(f"{path}: task {e['name']} [{e['ts']}, +{e['dur']}] outside run {r} "
                 f"[{t0}, {t1}]")
    def pacing(e):
        return int(str(e["args"]["tag"]), 0) & ~((1 << 60) - 1) == SESSION_TAG
    got = sum(e["args"]["bytes"] for e in msgs if e["cat"] == "send" and not pacing(e))
    sent = sum(r[2] for r in runs.values())
    if got != sent:
        fail(f"{path}: send events carry {got} bytes, the runs' bytes_sent add up to {sent}")
    for r, (t0, t1, _) in sorted(runs.items()):
        if pid < nparties:
            seen = {e["args"]["region"] for e in tasks + msgs if e["args"]["run"] == r}
            for reg in regions:
                if reg not in seen:
                    fail(f"{path}: run {r}: no event in region {reg}")
    print(f"{path}: {len(runs)} runs, {len(tasks)} tasks, {len(msgs)} messages: checked")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--regions", default="")
    ap.add_argument("--parties", type=int, required=True)
    ap.add_argument("files", nargs="+")
    a = ap.parse_args()
    failures = []

    def fail(msg):
        failures.append(msg)
        print("FAIL " + msg, file=sys.stderr)

    for p in a.files:
        check(p, [r for r in a.regions.split(",") if r], a.parties, fail)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

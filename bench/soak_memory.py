#!/usr/bin/env python3
"""soak_memory.py: does a LeNet inference session's resident memory level off? (issue 18, item 10)

Starts a secure LeNet-5 inference session (examples/lenet_fmnist infer, 2 parties and the dealer,
each process in its own directory, as tests/faults/campaign.py does) with --batch images per
batch (default 1: every test image is a batch), going over the --images as many times as the
--minutes need (lenet_fmnist infer --passes), and stops it after --minutes. Every --every
seconds it samples each process's resident memory (VmRSS) and maps the time to a batch count from
party 1's progress lines (one every 5 s). After the warm-up (the first --warmup batches) it fits
a line to each process's RSS against batches and reports the growth per 1,000 batches, and the
RSS at the end of the warm-up and at the end.

usage: bench/soak_memory.py [--build DIR] [--minutes M] [--warmup B] [--every S] [--batch N]
                            [--images N]
"""
import argparse
import os
import re
import shutil
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests",
                                "faults"))
import campaign  # noqa: E402  (Session: keys, configurations, one directory per process)


def rss_kb(pid):
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def fit(xs, ys):
    n = len(xs)
    if n < 2:
        return 0.0
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx if sxx else 0.0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--minutes", type=float, default=30.0)
    ap.add_argument("--warmup", type=int, default=200, help="batches before the fit starts")
    ap.add_argument("--every", type=float, default=1.0, help="seconds between samples")
    ap.add_argument("--images", type=int, default=10000)
    ap.add_argument("--batch", type=int, default=1, help="images per batch")
    o = ap.parse_args()

    class Opts:
        build, timeout, keep, seed, verbose = os.path.abspath(o.build), 30.0, False, 1, False
    camp = campaign.Campaign(Opts)
    s = campaign.Session(camp, 2, "soak")
    # passes enough for the minutes even at 20 batches/s (about 3x the 2-core VM's rate)
    passes = max(1, min(1000, int(o.minutes * 60 * 20 * o.batch / o.images) + 1))
    args = ["infer", "--batch", str(o.batch), "--images", str(o.images), "--passes", str(passes),
            "--data", campaign.DATA]
    procs = [s.start(i, args + (["--predictions", "preds.txt"] if i == 1 else []), quiet=(i != 1))
             for i in range(s.nprocs)]
    load0 = os.getloadavg()
    t0, marks, samples = time.time(), [(0.0, 0)], []  # marks: (time, batches) from progress
    seen = 0
    while time.time() - t0 < o.minutes * 60 and any(p.poll() is None for p in procs):
        time.sleep(o.every)
        now = time.time() - t0
        samples.append((now, [rss_kb(p.pid) for p in procs]))
        with open(procs[1].log_path, errors="replace") as f:
            text = f.read()
        for m in re.finditer(r"(\d+) / \d+ images", text[seen:]):
            marks.append((now, int(m.group(1)) // o.batch))
        seen = len(text)
    for p in procs:
        if p.poll() is None:
            p.kill()
        p.wait()
        p.log.close()
    load1 = os.getloadavg()
    # batches at each sample: linear between progress marks (the rate is steady after warm-up)
    def batches_at(t):
        prev = marks[0]
        for m in marks[1:]:
            if m[0] >= t:
                return prev[1] + (m[1] - prev[1]) * (t - prev[0]) / max(m[0] - prev[0], 1e-9)
            prev = m
        return prev[1]
    done = marks[-1][1]
    print("soak: %d batches of %d image(s) in %.1f min (%.1f batches/s); load average %.2f at the "
          "start, %.2f at the end (%d cores)" % (done, o.batch, (time.time() - t0) / 60,
                                                 done / max(marks[-1][0], 1e-9), load0[0],
                                                 load1[0], os.cpu_count()))
    print("%-8s %12s %12s %22s" % ("process", "RSS warm MB", "RSS end MB", "growth MB/1000 batches"))
    for k, who in enumerate(s.names):
        pts = [(batches_at(t), r[k] / 1024.0) for t, r in samples
               if r[k] is not None and batches_at(t) >= o.warmup]
        if len(pts) < 2:
            print("%-8s (too few samples after the warm-up of %d batches)" % (who, o.warmup))
            continue
        slope = fit([b for b, _ in pts], [m for _, m in pts])
        print("%-8s %12.1f %12.1f %22.3f" % (who, pts[0][1], pts[-1][1], slope * 1000))
    s.cleanup()
    if not camp.keep:  # the campaign's work folder, which held the session's
        shutil.rmtree(camp.work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""suite_report.py — turns bench/suite.sh's TSV into a markdown table and an ablation bar chart.

For every (model, parties, link, material, mode) group the table lists each pipeline setting's
online time, throughput, its throughput relative to the serialized baseline (x) and its latency
change against it, bytes, rounds, compute- and network-busy seconds, the stretch (wall time over
the longer of compute and network busy time, 1.0 = perfect; TSVs written before the rename call
it "efficiency"), the overlap share (the share of the longer one's time the other overlapped,
higher is better; "-" in older TSVs) and
where the correlated randomness came from (a dealer streaming it, or files written ahead, with
the offline phase's seconds). The mode is infer (a row times an inference run) or train (a
secure SGD step, bench/suite.sh -t): a train group's model reads "MODEL train" in the table and
under its bars. TSVs written before the mode column are inference. The SVG draws, per group, one
bar per setting: throughput / serialized throughput (1.0 marked).

Usage: suite_report.py SUITE.tsv [--md OUT.md] [--svg OUT.svg]
"""
import argparse
import csv
import sys
from xml.sax.saxutils import escape

ORDER = ["serialized", "la0", "la1", "all", "mb2"]
LABEL = {
    "serialized": "serialized",
    "la0": "look-ahead 0",
    "la1": "look-ahead 1",
    "all": "all (no bound)",
    "mb2": "all + 2 micro-batches",
}
COLOR = {"serialized": "#888888", "la0": "#6baed6", "la1": "#3182bd", "all": "#08519c",
         "mb2": "#e6550d"}


def load(path):
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    groups = {}
    for r in rows:
        # the older TSVs have no mode column: they are inference
        key = (r["model"], r["parties"], r["link"], r.get("material") or "dealer",
               r.get("mode") or "infer")
        groups.setdefault(key, {})[r["setting"]] = r
    return groups


def fnum(s, default=0.0):
    try:
        return float(s)
    except (TypeError, ValueError):
        return default


def title(model, mode):
    """The model as the table and the chart name it: "lenet", or "lenet train" for a training
    group (its rows are SGD steps, not inference runs)."""
    return model if mode == "infer" else "%s %s" % (model, mode)


def markdown(groups):
    out = ["| model | N | link | setting | online s | images/s | x serialized | latency vs "
           "serialized | bytes sent (p1) | rounds | compute s | network s | stretch | "
           "overlap share | material | offline s |",
           "|---|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|"]
    for (model, n, link, material, mode), settings in groups.items():
        base = settings.get("serialized")
        for s in ORDER:
            r = settings.get(s)
            if not r:
                continue
            t, ips = fnum(r["online_s"]), fnum(r["images_per_s"])
            if base and fnum(base["images_per_s"]) > 0 and fnum(base["online_s"]) > 0:
                ratio = "%.2f" % (ips / fnum(base["images_per_s"]))
                lat = "%+.1f %%" % (100.0 * (t / fnum(base["online_s"]) - 1))
            else:
                ratio = lat = "-"
            # stretch was called efficiency in the TSVs written before it was renamed
            stretch = r.get("stretch") or r.get("efficiency") or "-"
            out.append("| %s | %s | %s | %s | %.3f | %.2f | %s | %s | %s | %s | %s | %s | %s | %s "
                       "| %s | %s |" % (
                           title(model, mode), n, link, LABEL.get(s, s), t, ips, ratio, lat,
                           r["bytes_sent"], r["rounds"], r["compute_s"] or "-",
                           r["network_s"] or "-", stretch, r.get("overlap_share") or "-", material,
                           r.get("offline_s") or "-"))
    return "\n".join(out) + "\n"


def svg(groups):
    bar_w, gap, left, top, height = 14, 18, 50, 30, 220
    keys = list(groups.keys())
    ratios = []
    for k in keys:
        base = groups[k].get("serialized")
        b = fnum(base["images_per_s"]) if base else 0
        ratios.append({s: (fnum(groups[k][s]["images_per_s"]) / b if b > 0 else 0)
                       for s in ORDER if s in groups[k]})
    ymax = max([1.0] + [v for r in ratios for v in r.values()]) * 1.15
    legend_w = left + sum(14 + 7 * len(LABEL[s]) + 12 for s in ORDER)
    width = max(left + sum(len(r) * bar_w + gap for r in ratios) + 20, legend_w)
    total_h = top + height + 90
    y = lambda v: top + height - v / ymax * height
    parts = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" '
             'font-family="sans-serif" font-size="10">' % (width, total_h),
             '<text x="%d" y="16" font-size="12">Throughput relative to the serialized baseline '
             '(bench/suite.sh)</text>' % left]
    for t in range(0, int(ymax * 2) + 1):
        v = t / 2
        parts.append('<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#ddd"/>'
                     % (left, width - 10, y(v), y(v)))
        parts.append('<text x="%d" y="%.1f" text-anchor="end">%.1f</text>' % (left - 4, y(v) + 3, v))
    parts.append('<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#000" stroke-dasharray="4 2"/>'
                 % (left, width - 10, y(1.0), y(1.0)))
    x = left + gap / 2
    for k, r in zip(keys, ratios):
        x0 = x
        for s in ORDER:
            if s not in r:
                continue
            parts.append('<rect x="%.1f" y="%.1f" width="%d" height="%.1f" fill="%s">'
                         '<title>%s: %.2fx</title></rect>'
                         % (x, y(r[s]), bar_w - 2, top + height - y(r[s]), COLOR[s],
                            escape(LABEL[s]), r[s]))
            x += bar_w
        parts.append('<text x="%.1f" y="%d" text-anchor="middle">%s</text>'
                     % ((x0 + x) / 2, top + height + 14, escape(title(k[0], k[4]))))
        parts.append('<text x="%.1f" y="%d" text-anchor="middle">N=%s %s%s</text>'
                     % ((x0 + x) / 2, top + height + 26, escape(k[1]), escape(k[2]),
                        " files" if k[3] == "files" else ""))
        x += gap
    lx = left
    for s in ORDER:
        parts.append('<rect x="%d" y="%d" width="10" height="10" fill="%s"/>'
                     % (lx, top + height + 44, COLOR[s]))
        parts.append('<text x="%d" y="%d">%s</text>' % (lx + 14, top + height + 53, LABEL[s]))
        lx += 14 + 7 * len(LABEL[s]) + 12
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("tsv")
    ap.add_argument("--md")
    ap.add_argument("--svg")
    a = ap.parse_args()
    groups = load(a.tsv)
    if not groups:
        print("suite_report: no rows in %s" % a.tsv, file=sys.stderr)
        return 1
    md = markdown(groups)
    if a.md:
        with open(a.md, "w") as f:
            f.write(md)
    else:
        sys.stdout.write(md)
    if a.svg:
        with open(a.svg, "w") as f:
            f.write(svg(groups))
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""trace_svg.py — draws Veil party traces (Chrome trace JSON) as one SVG timeline.

Usage: trace_svg.py [-o OUT.svg] [--run K] [--width PX] [--title TEXT] TRACE.json...

Reads the files a party writes with trace_path / VEIL_TRACE (one per party and the dealer,
timestamps on one machine's CLOCK_MONOTONIC, so they line up) and draws a row per lane: the
"runs" lane, one per StarPU worker (tasks coloured by region: linear, relu, pooling, ...) and
one per peer and direction (messages as bars, send and receive in two shades). --run K draws
only the time span of run K (union over the files). Python 3 standard library only; the
benchmark suite calls it. Hovering a bar shows its name, duration and bytes (SVG <title>).
"""
import argparse
import json
import sys
from xml.sax.saxutils import escape

REGION_COLOURS = {
    "linear": "#4e79a7", "relu": "#f28e2b", "pooling": "#59a14f", "softmax": "#e15759",
    "norm": "#b07aa1", "argmax": "#edc948", "input": "#9c755f", "other": "#bab0ac",
}
MSG_COLOURS = {"send": "#1b3a5c", "recv": "#17becf", "run": "#dddddd"}
ROW, GAP, LABEL_W, TOP = 14, 3, 190, 40


def load(paths):
    """Returns (lanes {(pid, tid): name}, procs {pid: name}, events [complete events])."""
    lanes, procs, events = {}, {}, []
    for path in paths:
        with open(path) as f:
            doc = json.load(f)
        for e in doc["traceEvents"]:
            if e.get("ph") == "M" and e["name"] == "thread_name":
                lanes[(e["pid"], e["tid"])] = e["args"]["name"]
            elif e.get("ph") == "M" and e["name"] == "process_name":
                procs[e["pid"]] = e["args"]["name"]
            elif e.get("ph") == "X":
                events.append(e)
                lanes.setdefault((e["pid"], e["tid"]), f"lane {e['tid']}")
    return lanes, procs, events


def window(events, run):
    spans = [(e["ts"], e["ts"] + e["dur"]) for e in events
             if run is None or (e["cat"] == "run" and e["args"]["run"] == run)]
    if not spans:
        sys.exit(f"trace_svg: no events{'' if run is None else f' for run {run}'}")
    return min(s[0] for s in spans), max(s[1] for s in spans)


def colour(e):
    if e["cat"] == "task":
        return REGION_COLOURS.get(e["args"].get("region"), REGION_COLOURS["other"])
    return MSG_COLOURS.get(e["cat"], "#888888")


def draw(lanes, procs, events, t0, t1, width, title):
    keys = sorted(lanes)
    row_of = {k: i for i, k in enumerate(keys)}
    plot_w = width - LABEL_W - 10
    scale = plot_w / max(t1 - t0, 1e-9)
    height = TOP + len(keys) * (ROW + GAP) + 60
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'font-family="sans-serif" font-size="10">',
           f'<text x="4" y="14" font-size="13">{escape(title)}</text>']
    for k, i in row_of.items():
        y = TOP + i * (ROW + GAP)
        label = f"{procs.get(k[0], 'process %d' % k[0])}: {lanes[k]}"
        out.append(f'<text x="4" y="{y + ROW - 3}">{escape(label)}</text>')
        out.append(f'<rect x="{LABEL_W}" y="{y}" width="{plot_w}" height="{ROW}" '
                   f'fill="#f7f7f7"/>')
    for e in sorted(events, key=lambda e: e["cat"] != "run"):
        a, b = max(e["ts"], t0), min(e["ts"] + e["dur"], t1)
        if b < a or (e["pid"], e["tid"]) not in row_of:
            continue
        x = LABEL_W + (a - t0) * scale
        w = max((b - a) * scale, 0.5)
        y = TOP + row_of[(e["pid"], e["tid"])] * (ROW + GAP)
        tip = f"{e['name']} {e['dur'] / 1000:.3f} ms"
        if "bytes" in e["args"]:
            tip += f" {e['args']['bytes']} B"
        if "region" in e["args"]:
            tip += f" [{e['args']['region']}]"
        out.append(f'<rect x="{x:.2f}" y="{y}" width="{w:.2f}" height="{ROW}" '
                   f'fill="{colour(e)}"><title>{escape(tip)}</title></rect>')
    axis_y = TOP + len(keys) * (ROW + GAP) + 12
    for i in range(11):  # ticks in milliseconds from the window's start
        x = LABEL_W + plot_w * i / 10
        out.append(f'<line x1="{x:.1f}" y1="{TOP - 4}" x2="{x:.1f}" y2="{axis_y - 8}" '
                   f'stroke="#cccccc" stroke-width="0.5"/>')
        out.append(f'<text x="{x:.1f}" y="{axis_y}" text-anchor="middle">'
                   f'{(t1 - t0) * i / 10 / 1000:.2f} ms</text>')
    x = LABEL_W
    for name, c in list(REGION_COLOURS.items()) + [("send", MSG_COLOURS["send"]),
                                                   ("receive", MSG_COLOURS["recv"])]:
        out.append(f'<rect x="{x}" y="{axis_y + 14}" width="10" height="10" fill="{c}"/>')
        out.append(f'<text x="{x + 13}" y="{axis_y + 23}">{name}</text>')
        x += 75
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-o", "--output", default="-", help="SVG file (default: stdout)")
    ap.add_argument("--run", type=int, default=None, help="draw only this run's span")
    ap.add_argument("--width", type=int, default=1600)
    ap.add_argument("--title", default=None)
    ap.add_argument("traces", nargs="+")
    a = ap.parse_args()
    lanes, procs, events = load(a.traces)
    t0, t1 = window(events, a.run)
    title = a.title or ("Veil trace" + ("" if a.run is None else f", run {a.run}") +
                        f": {(t1 - t0) / 1000:.3f} ms")
    svg = draw(lanes, procs, events, t0, t1, a.width, title)
    if a.output == "-":
        sys.stdout.write(svg)
    else:
        with open(a.output, "w") as f:
            f.write(svg)
    return 0


if __name__ == "__main__":
    sys.exit(main())

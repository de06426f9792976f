#!/bin/sh
# Tests per-party tracing end to end: tests/test_graph_trace runs a small LeNet-like plan twice
# with 2 parties and the dealer (checking the profiles in C) under lws with trace_path, eager
# with the path from VEIL_TRACE (as under veil-run) and dmda, and once with tracing off (nothing
# recorded, no file); then every trace file is parsed with python3's json module and checked
# (tests/check_trace.py: fields, lanes named, tasks inside their run, a region's events in every
# run, send bytes = bytes_sent), and scripts/trace_svg.py draws them into an SVG that
# xml.etree must parse. Skips (77) without python3.
set -u
top="${VEIL_TOP_BUILDDIR:-.}"
src="${VEIL_TOP_SRCDIR:-.}"
command -v python3 >/dev/null 2>&1 ||
    { echo "SKIP: python3 missing (scripts/install-deps.sh)"; exit 77; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/veil-trace-XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
fail=0
for mode in "lws" "eager --env" "dmda" "lws --off"; do
    d="$tmp/$(echo "$mode" | tr -d ' -')"
    mkdir -p "$d"
    # shellcheck disable=SC2086 # mode is "SCHED [FLAG]"
    "$top/tests/test_graph_trace" "$d" $mode || { echo "FAIL: test_graph_trace $mode"; fail=1; }
    case "$mode" in *--off) continue ;; esac
    python3 "$src/tests/check_trace.py" --parties 2 --regions input,linear,relu,pooling,argmax \
        "$d"/trace-0.json "$d"/trace-1.json "$d"/trace-2.json ||
        { echo "FAIL: traces of $mode"; fail=1; }
    python3 "$src/scripts/trace_svg.py" --run 1 -o "$d/trace.svg" "$d"/trace-*.json &&
        python3 -c 'import sys, xml.etree.ElementTree as E
r = E.parse(sys.argv[1]).getroot()
ns = "{http://www.w3.org/2000/svg}"
assert r.tag == ns + "svg" and len(r.findall(ns + "rect")) > 100, "too few bars"' "$d/trace.svg" ||
        { echo "FAIL: trace_svg.py ($mode)"; fail=1; }
done
exit $fail

#!/bin/sh
# Tests the benchmark suite's machinery at its smallest: bench/suite.sh runs LeNet (batch 2, two
# runs) with 2 parties on loopback in the serialized baseline and with every pipeline on; both
# rows must be in the TSV with agree=1 and a positive throughput, the report's table must give
# the baseline 1.00x, and the ablation chart must be an SVG that xml.etree parses with a bar per
# row. With -p (offline ahead) the same two sessions run from preprocessing files with no dealer:
# two more rows with material "files", agree=1 and an offline time, grouped apart in the report.
# With -t (training) the same two settings run 2 SGD steps of batch 1: two rows of mode "train"
# (inference rows say "infer") whose online time, bytes, rounds, compute-busy seconds and
# stretch are numbers above 0 and whose overlap share is a number in [0, 1] (the busy figures
# come from `lenet train` under tracing; the header names stretch and overlap_share), with
# agree=1 from the model owner and "lenet train" in the report; -t with -p is refused (exit 2).
# Timings are not asserted (benchmarks measure, tests check). Skips (77) without python3.
set -u
top="${VEIL_TOP_BUILDDIR:-.}"
src="${VEIL_TOP_SRCDIR:-.}"
command -v python3 >/dev/null 2>&1 || { echo "SKIP: python3 missing (scripts/install-deps.sh)"; exit 77; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/veil-suite-test-XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
fail=0
VEIL_TOP_BUILDDIR=$top sh "$src/bench/suite.sh" -m lenet -n 2 -l loopback -s "serialized all" \
    -b 2 -r 2 -o "$tmp" 2>"$tmp/log" || { echo "FAIL: suite.sh exited $?"; cat "$tmp/log"; fail=1; }
rows=$(awk -F '\t' 'NR > 1 && $1 == "lenet" && $13 == "1" && $7 > 0 && $14 == "dealer" && $16 == "infer"' \
    "$tmp/suite.tsv" | wc -l)
[ "$rows" -eq 2 ] || { echo "FAIL: $rows good rows in suite.tsv, expected 2"; cat "$tmp/suite.tsv"; fail=1; }
VEIL_TOP_BUILDDIR=$top sh "$src/bench/suite.sh" -p -m lenet -n 2 -l loopback -s "serialized all" \
    -b 2 -r 2 -o "$tmp/ahead" 2>"$tmp/log" || { echo "FAIL: suite.sh -p exited $?"; cat "$tmp/log"; fail=1; }
rows=$(awk -F '\t' 'NR > 1 && $1 == "lenet" && $13 == "1" && $7 > 0 && $14 == "files" && $15 > 0' \
    "$tmp/ahead/suite.tsv" | wc -l)
[ "$rows" -eq 2 ] || { echo "FAIL: $rows good rows from files in suite.tsv, expected 2"; cat "$tmp/ahead/suite.tsv"; fail=1; }
grep -q '^| lenet | 2 | loopback | serialized | .* | 1.00 | +0.0 % | .* | files | ' "$tmp/ahead/suite.md" ||
    { echo "FAIL: the report of the files rows"; cat "$tmp/ahead/suite.md"; fail=1; }
grep -q '^| lenet | 2 | loopback | serialized | .* | 1.00 | +0.0 % |' "$tmp/suite.md" ||
    { echo "FAIL: the report does not give the baseline 1.00x"; cat "$tmp/suite.md"; fail=1; }
# training: a positive number in each of online_s ($6), images_per_s ($7), bytes_sent ($8),
# rounds ($9), compute_s ($10) and stretch ($12); network_s ($11) a number (loopback's can
# be tiny); overlap_share ($17) a number in [0, 1]
VEIL_TOP_BUILDDIR=$top sh "$src/bench/suite.sh" -t -m lenet -n 2 -l loopback -s "serialized all" \
    -b 1 -r 2 -o "$tmp/train" 2>"$tmp/log" || { echo "FAIL: suite.sh -t exited $?"; cat "$tmp/log"; fail=1; }
rows=$(awk -F '\t' 'function pos(v) { return v ~ /^[0-9]+(\.[0-9]+)?$/ && v + 0 > 0 }
    NR > 1 && $1 == "lenet" && $16 == "train" && $13 == "1" && $14 == "dealer" && pos($6) &&
    pos($7) && pos($8) && pos($9) && pos($10) && $11 ~ /^[0-9.]+$/ && pos($12) &&
    $17 ~ /^[0-9.]+$/ && $17 + 0 <= 1' \
    "$tmp/train/suite.tsv" | wc -l)
[ "$rows" -eq 2 ] || { echo "FAIL: $rows good training rows in suite.tsv, expected 2"; cat "$tmp/train/suite.tsv"; fail=1; }
head -n 1 "$tmp/train/suite.tsv" | awk -F '\t' '$12 == "stretch" && $17 == "overlap_share" { ok = 1 }
    END { exit !ok }' || { echo "FAIL: suite.tsv's header lacks stretch / overlap_share"; fail=1; }
grep -q '^| lenet train | 2 | loopback | serialized | .* | 1.00 | +0.0 % |' "$tmp/train/suite.md" ||
    { echo "FAIL: the report of the training rows"; cat "$tmp/train/suite.md"; fail=1; }
grep -q '>lenet train</text>' "$tmp/train/ablation.svg" || { echo "FAIL: the chart's training label"; fail=1; }
VEIL_TOP_BUILDDIR=$top sh "$src/bench/suite.sh" -t -p -m lenet -o "$tmp/refused" 2>"$tmp/log"
rc=$?
if [ "$rc" -ne 2 ] || ! grep -q 'no offline phase ahead' "$tmp/log" || [ -e "$tmp/refused" ]; then
    echo "FAIL: suite.sh -t -p exited $rc, expected a refusal (2) before any session"
    cat "$tmp/log"
    fail=1
fi
python3 -c 'import sys, xml.etree.ElementTree as E
r = E.parse(sys.argv[1]).getroot()
bars = [e for e in r.iter("{http://www.w3.org/2000/svg}rect") if e.find("{http://www.w3.org/2000/svg}title") is not None]
assert len(bars) == 2, "%d bars" % len(bars)' "$tmp/ablation.svg" || { echo "FAIL: ablation.svg"; fail=1; }
exit $fail

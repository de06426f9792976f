#!/bin/sh
# Tests the benchmark suite's machinery at its smallest: bench/suite.sh runs LeNet (batch 2, two
# runs) with 2 parties on loopback in the serialized baseline and with every pipeline on; both
# rows must be in the TSV with agree=1 and a positive throughput, the report's table must give
# the baseline 1.00x, and the ablation chart must be an SVG that xml.etree parses with a bar per
# row. With -p (offline ahead) the same two sessions run from preprocessing files with no dealer:
# two more rows with material "files", agree=1 and an offline time, grouped apart in the report.
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
rows=$(awk -F '\t' 'NR > 1 && $1 == "lenet" && $13 == "1" && $7 > 0 && $14 == "dealer"' "$tmp/suite.tsv" | wc -l)
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
python3 -c 'import sys, xml.etree.ElementTree as E
r = E.parse(sys.argv[1]).getroot()
bars = [e for e in r.iter("{http://www.w3.org/2000/svg}rect") if e.find("{http://www.w3.org/2000/svg}title") is not None]
assert len(bars) == 2, "%d bars" % len(bars)' "$tmp/ablation.svg" || { echo "FAIL: ablation.svg"; fail=1; }
exit $fail

#!/bin/sh
# Tests the machinery of issue 15's latency benchmarks at their smallest (timings are not
# asserted: benchmarks measure, tests check): bench/latency_set.sh's models section on LeNet
# batch 1 with 2 runs must print one table row whose first-run, median, best, worst and mean
# seconds are numbers above 0, whose idle share (from the traced session) is a number in
# [0, 100], whose CPU share (the same session) a number in (0, 100], whose workers' wait for a CPU
# a number, and whose check says ok; bench_beaver -o mul_fixed -m 1000 1000 must print exactly one
# row, mul_fixed at 1,000 elements with 24 bytes per element (also from files, in plaintext,
# warm and traced: -f -p -w -t), and refuse an unknown op (exit 2).
# The warm section on LeNet batch 1 with 2 runs must print two rows: prepared ("yes", its prepare
# seconds a number) and cold ("no", prepare "-"), their first-run and median seconds above 0.
# bench_noise at its smallest must print, for both loops, a line per CPU alone (and one per CPU
# for all at once on a machine of several) and six ping-pong lines, each with numbers above 0 and
# p10 <= median <= p90 <= worst, and refuse an unknown section and an out-of-range -r (exit 2).
set -u
top=$(cd "${VEIL_TOP_BUILDDIR:-.}" && pwd) || exit 1
src=$(cd "${VEIL_TOP_SRCDIR:-.}" && pwd) || exit 1
tmp=$(mktemp -d "${TMPDIR:-/tmp}/veil-latset-XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
fail=0
sh "$src/bench/latency_set.sh" -b "$top" -r 2 -m lenet_b1 -o "$tmp/logs" models >"$tmp/out" 2>&1 ||
    { echo "FAIL: latency_set.sh exited $?"; fail=1; }
rows=$(awk -F '|' '$2 ~ /lenet_b1/ && $3 > 0 && $4 > 0 && $5 > 0 && $6 > 0 && $7 > 0 &&
                   $9 ~ /^ *[0-9.]+ *$/ && $9 >= 0 && $9 <= 100 && $10 ~ /^ *[0-9.]+ *$/ &&
                   $10 > 0 && $10 <= 100 && $11 ~ /^ *[0-9.]+ *$/ && $12 ~ /^ *ok *$/' \
    "$tmp/out" | wc -l)
[ "$rows" -eq 1 ] || { echo "FAIL: $rows good lenet_b1 rows, expected 1"; cat "$tmp/out"; fail=1; }
sh "$src/bench/latency_set.sh" -b "$top" -r 2 -m lenet_b1 -o "$tmp/wlogs" warm >"$tmp/warm" 2>&1 ||
    { echo "FAIL: latency_set.sh warm exited $?"; fail=1; }
yes=$(awk -F '|' '$2 ~ /lenet_b1/ && $3 ~ /^ *yes *$/ && $4 ~ /^ *[0-9.]+ *$/ && $5 > 0 &&
                  $6 > 0' "$tmp/warm" | wc -l)
no=$(awk -F '|' '$2 ~ /lenet_b1/ && $3 ~ /^ *no *$/ && $4 ~ /^ *- *$/ && $5 > 0 && $6 > 0' \
    "$tmp/warm" | wc -l)
if [ "$yes" -ne 1 ] || [ "$no" -ne 1 ]; then
    echo "FAIL: warm: $yes prepared and $no cold lenet_b1 rows, expected 1 and 1"
    cat "$tmp/warm"
    fail=1
fi
(cd "$top" && ./bench/bench_beaver -o mul_fixed -m 1000 1000) >"$tmp/beaver" 2>&1 ||
    { echo "FAIL: bench_beaver -o mul_fixed exited $?"; cat "$tmp/beaver"; fail=1; }
rows=$(awk '$1 ~ /^[a-z]/ && $2 ~ /^[0-9]+$/' "$tmp/beaver" | wc -l)
good=$(awk '$1 == "mul_fixed" && $2 == 1000 && $6 == "24.00"' "$tmp/beaver" | wc -l)
if [ "$rows" -ne 1 ] || [ "$good" -ne 1 ]; then
    echo "FAIL: bench_beaver -o mul_fixed: $rows rows, $good good"
    cat "$tmp/beaver"
    fail=1
fi
# the same from files, in plaintext, warm, traced: one good row, the header says so, and each
# party's trace holds the timed window (a run event and the Beaver tasks)
(cd "$top" && ./bench/bench_beaver -f -p -w -t "$tmp/bt-%d.json" -o mul_fixed -m 1000 1000) \
    >"$tmp/beaverfp" 2>&1 || { echo "FAIL: bench_beaver -f -p -w -t exited $?"; fail=1; }
good=$(awk '$1 == "mul_fixed" && $2 == 1000 && $6 == "24.00"' "$tmp/beaverfp" | wc -l)
if [ "$good" -ne 1 ] || ! grep -q "plaintext (no CURVE)" "$tmp/beaverfp" ||
    ! grep -q "after an untimed call" "$tmp/beaverfp"; then
    echo "FAIL: bench_beaver -f -p -w: $good good rows or its header is wrong"
    cat "$tmp/beaverfp"
    fail=1
fi
for p in 0 1; do
    if ! grep -q '"run 1"' "$tmp/bt-$p.json" 2>/dev/null ||
        ! grep -q 'veil_beaver_z' "$tmp/bt-$p.json"; then
        echo "FAIL: bench_beaver -t: party $p's trace lacks the run or its Beaver tasks"
        fail=1
    fi
done
(cd "$top" && ./bench/bench_beaver -o nosuchop 1000) >"$tmp/bad" 2>&1
rc=$?
if [ "$rc" -ne 2 ] || ! grep -q "not one of" "$tmp/bad"; then
    echo "FAIL: bench_beaver -o nosuchop exited $rc"
    cat "$tmp/bad"
    fail=1
fi
(cd "$top" && ./bench/bench_noise -r 10 -m 0.2 -w 64 -n 20) >"$tmp/noise" 2>&1 ||
    { echo "FAIL: bench_noise exited $?"; cat "$tmp/noise"; fail=1; }
ncpu=$(grep -c 'alone' "$tmp/noise")
cpus=$((ncpu / 2))
want=$((cpus > 1 ? 2 * cpus + 2 * cpus : 2 * cpus))
good=$(awk '/median/ && ($1 == "CPU" || $1 == "blocking," || $1 == "spinning,") {
              for (i = 1; i <= NF; i++) v[$i] = $(i + 1)
              if (v["median"] > 0 && v["p10"] <= v["median"] && v["median"] <= v["p90"] &&
                  v["p90"] <= v["worst"] && v["cv"] >= 0) n++ }
            END { print n + 0 }' "$tmp/noise")
work=$(grep -c '^  CPU ' "$tmp/noise")
wake=$(grep -cE '^  (blocking|spinning), gap' "$tmp/noise")
if [ "$cpus" -lt 1 ] || [ "$work" -ne "$want" ] || [ "$wake" -ne 6 ] ||
    [ "$good" -ne $((want + 6)) ]; then
    echo "FAIL: bench_noise: $work work lines (expected $want), $wake wake lines, $good good"
    cat "$tmp/noise"
    fail=1
fi
for bad in "nosuch" "-r 5"; do
    # shellcheck disable=SC2086
    (cd "$top" && ./bench/bench_noise $bad) >"$tmp/bad" 2>&1
    rc=$?
    [ "$rc" -eq 2 ] || { echo "FAIL: bench_noise $bad exited $rc"; cat "$tmp/bad"; fail=1; }
done
exit $fail

#!/bin/sh
# Tests the trace scripts on one real session: LeNet-5 at its small size, 2 parties and the dealer
# under veil-run with VEIL_TRACE, 3 runs.
# bench/trace_oneway.py: each direction between the parties must print one line with n > 0
# matched messages and 0 <= p10 <= p50 <= p90 <= max, and so must the dealer -> party 1 direction
# (the material); runs >= 3 has none (exit 1); one file twice, a file that is not a trace, a
# missing argument and a bad --from-run are refused with exit 2 and a line naming the script.
# bench/trace_gaps.py: for each party's trace a header with busy, "wait P" for the other party
# (and "wait 2" for the dealer when one of its messages ended a gap: timing decides), after, local
# and tail, one row per run >= 1 and a median row, each row's parts adding up to 100 %
# of the run; runs >= 3 has none (exit 1); a file that is not a trace, no file, two files and a
# bad --from-run are refused with exit 2 and a line naming the script.
# bench/trace_cpu.py: for each process's trace the role header, one row per run >= 1 and a median
# row, each with its milliseconds above 0, the idle and CPU shares in range, every role's CPU
# share, wait and slices non-negative, the workers and the I/O thread on a CPU and the roles'
# shares adding up to the run's (within rounding); runs >= 3 has none (exit 1); the same
# refusals as trace_gaps.py.
# bench/trace_workers.py: for each process's trace one line per worker that ran a task (its task
# count and busy milliseconds above 0, its top codelets) and a total equal to their sum; runs >= 3
# has none (exit 1); the same refusals. Timings are not asserted.
set -u
B=${VEIL_TOP_BUILDDIR:-.}
src=$(cd "${VEIL_TOP_SRCDIR:-.}" && pwd) || exit 1
oneway="$src/bench/trace_oneway.py"
gaps="$src/bench/trace_gaps.py"
cpu="$src/bench/trace_cpu.py"
workers="$src/bench/trace_workers.py"
command -v python3 >/dev/null 2>&1 || { echo "SKIP: no python3"; exit 77; }
T=$(mktemp -d "${TMPDIR:-/tmp}/veil-trace-scripts-XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT
fail=0
bad() { echo "FAIL: $*" >&2; fail=1; }
# refused SCRIPT NAME: a one-file script refuses a file that is not a trace, no file, two files
# and a bad --from-run with exit 2 and one line naming it (no traceback)
refused() {
    for args in "$T/g.json" "" "$T/t-0.json $T/t-1.json" "$T/t-0.json --from-run x"; do
        # shellcheck disable=SC2086 # args are several words on purpose
        python3 "$1" $args >"$T/out" 2>&1
        rc=$?
        { [ "$rc" -eq 2 ] && grep -q "^$2: " "$T/out" && ! grep -q Traceback "$T/out"; } ||
            bad "$2 '$args': exit $rc, expected 2 with one line: $(cat "$T/out")"
    done
}
STARPU_SILENT=1 VEIL_TRACE="$T/t-%d.json" "$B/tools/veil-run" -n 2 --dealer --timeout 120 -- \
    "$B/examples/lenet" --small --runs 3 >"$T/run.log" 2>&1 ||
    { cat "$T/run.log" >&2; bad "the traced session failed"; exit 1; }
echo garbage >"$T/g.json"
for pair in "0 1" "1 0" "2 1"; do
    set -- $pair
    python3 "$oneway" "$T/t-$1.json" "$T/t-$2.json" >"$T/out" 2>&1 ||
        { bad "$1 -> $2: exit $?: $(cat "$T/out")"; continue; }
    # sender P -> receiver Q, runs >= 1: n N, one-way us p10 A p50 B p90 C max D
    awk -v s="$1" -v r="$2" '
        $1 == "sender" && $2 == s && $5 + 0 == r && $9 == "n" && $10 + 0 > 0 && $13 == "p10" &&
        $14 + 0 >= 0 && $14 + 0 <= $16 + 0 && $16 + 0 <= $18 + 0 && $18 + 0 <= $20 + 0 { ok = 1 }
        END { exit ok ? 0 : 1 }' "$T/out" || bad "$1 -> $2: $(cat "$T/out")"
done
python3 "$oneway" "$T/t-0.json" "$T/t-1.json" --from-run 3 >"$T/out" 2>&1
[ $? -eq 1 ] && grep -q '^trace_oneway: no message' "$T/out" || bad "runs >= 3: $(cat "$T/out")"
for args in "$T/t-0.json $T/t-0.json" "$T/g.json $T/t-1.json" "$T/t-0.json" \
    "$T/t-0.json $T/t-1.json --from-run x"; do
    python3 "$oneway" $args >"$T/out" 2>&1
    rc=$?
    { [ "$rc" -eq 2 ] && grep -q '^trace_oneway: ' "$T/out" && ! grep -q Traceback "$T/out"; } ||
        bad "'$args': exit $rc, expected 2 with one line: $(cat "$T/out")"
done

for pair in "0 1" "1 0"; do
    set -- $pair
    python3 "$gaps" "$T/t-$1.json" >"$T/out" 2>&1 ||
        { bad "party $1: exit $?: $(cat "$T/out")"; continue; }
    # run ms busy wait P after local tail (% of the run); rows 1, 2 and median; parts sum to 100
    awk -v peer="$2" '
        NR == 1 { ok = $1 == "run" && $2 == "ms" && $3 == "busy" && $(NF - 6) == "after" &&
                  $(NF - 5) == "local" && $(NF - 4) == "tail" && NF % 2 == 0; seen = 0
                  for (i = 4; i < NF - 6; i += 2) { ok = ok && $i == "wait"; seen += $(i + 1) == peer }
                  ok = ok && seen == 1; next }
        { s = 0; for (i = 3; i <= NF; i++) s += $i; if (s < 99.5 || s > 100.5) ok = 0
          rows = rows " " $1 }
        END { exit ok && rows == " 1 2 median" ? 0 : 1 }' "$T/out" ||
        bad "party $1: $(cat "$T/out")"
done
python3 "$gaps" "$T/t-1.json" --from-run 3 >"$T/out" 2>&1
[ $? -eq 1 ] && grep -q '^trace_gaps: no run' "$T/out" || bad "runs >= 3: $(cat "$T/out")"
refused "$gaps" trace_gaps

for q in 0 1 2; do
    python3 "$cpu" "$T/t-$q.json" >"$T/out" 2>&1 ||
        { bad "cpu $q: exit $?: $(cat "$T/out")"; continue; }
    # header (roles), sub-header, rows 1, 2 and median: ms > 0, idle and CPU in [0, 100], per
    # role CPU % in [0, 100], wait >= 0, slices >= 0; the roles' CPU adds up to the run's
    awk -v q="$q" '
        NR == 1 { ok = $1 == "run" && $2 == "ms" && $5 == "workers" && $6 == "submit" &&
                  $7 == "net" && $8 == "zmq" && $9 == "wiper" && $10 == "other"; next }
        NR == 2 { next }
        { good = NF == 22 && $2 > 0 && $3 >= 0 && $3 <= 100 && $4 > 0 && $4 <= 100.01; s = 0
          for (i = 5; i <= NF; i += 3) { good = good && $i >= 0 && $(i + 1) >= 0 && $(i + 2) >= 0
                                         s += $i }
          # the workers and the I/O thread ran (the submitting thread too, but the dealer has
          # nothing to do in run 2 when it dealt run 2 ahead)
          good = good && $5 > 0 && $11 > 0
          if ($1 != "median" && (s < $4 - 0.5 || s > $4 + 0.5)) good = 0
          ok = ok && good; rows = rows " " $1 }
        END { exit ok && rows == " 1 2 median" ? 0 : 1 }' "$T/out" || bad "cpu $q: $(cat "$T/out")"
done
python3 "$cpu" "$T/t-1.json" --from-run 3 >"$T/out" 2>&1
[ $? -eq 1 ] && grep -q '^trace_cpu: no run' "$T/out" || bad "cpu, runs >= 3: $(cat "$T/out")"
refused "$cpu" trace_cpu
for q in 0 1 2; do
    python3 "$workers" "$T/t-$q.json" >"$T/out" 2>&1 ||
        { bad "workers $q: exit $?: $(cat "$T/out")"; continue; }
    # one line per worker that ran a task (here the one CPU worker: tasks > 0, busy > 0, its
    # top codelets with their ms), then the total, equal to the sum of the lines
    awk '
        $1 == "worker" && $2 ~ /^[0-9]+$/ && $3 == "(CPU" {
            for (i = 4; i <= NF; i++) if ($i == "tasks") { n += $(i + 1); t = $(i + 1) }
            for (i = 4; i <= NF; i++) if ($i == "busy") { ms += $(i + 1); b = $(i + 1) }
            ok_w += t + 0 > 0 && b + 0 > 0 && $0 ~ / ms, top: veil_[a-z0-9_]+ [0-9.]+ ms/; w++; next }
        $1 == "total:" { tot_n = $3 + 0; tot_ms = $5 + 0; tot++; next }
        { other++ }
        END { exit w >= 1 && ok_w == w && tot == 1 && !other && tot_n == n &&
              tot_ms - ms < 0.2 * w && ms - tot_ms < 0.2 * w ? 0 : 1 }' "$T/out" ||
        bad "workers $q: $(cat "$T/out")"
done
python3 "$workers" "$T/t-1.json" --from-run 3 >"$T/out" 2>&1
[ $? -eq 1 ] && grep -q '^trace_workers: .*no task' "$T/out" || bad "workers, runs >= 3: $(cat "$T/out")"
refused "$workers" trace_workers
[ "$fail" = 0 ] && echo "PASS: trace_oneway.py, trace_gaps.py, trace_cpu.py and trace_workers.py" \
    "on a traced LeNet-5 session, and their refusals"
exit "$fail"

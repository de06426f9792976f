#!/bin/sh
# Tests bench/trace_oneway.py on a real session: LeNet-5 at its small size, 2 parties and the
# dealer under veil-run with VEIL_TRACE, 3 runs. Each direction between the parties must print
# one line with n > 0 matched messages and 0 <= p10 <= p50 <= p90 <= max, and so must the dealer
# -> party 1 direction (the material); runs >= 3 has none (exit 1); one file twice, a file that
# is not a trace, a missing argument and a bad --from-run are refused with exit 2 and a line
# naming the script. Timings are not asserted.
set -u
B=${VEIL_TOP_BUILDDIR:-.}
src=$(cd "${VEIL_TOP_SRCDIR:-.}" && pwd) || exit 1
script="$src/bench/trace_oneway.py"
command -v python3 >/dev/null 2>&1 || { echo "SKIP: no python3"; exit 77; }
T=$(mktemp -d "${TMPDIR:-/tmp}/veil-oneway-XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT
fail=0
bad() { echo "FAIL: $*" >&2; fail=1; }
STARPU_SILENT=1 VEIL_TRACE="$T/t-%d.json" "$B/tools/veil-run" -n 2 --dealer --timeout 120 -- \
    "$B/examples/lenet" --small --runs 3 >"$T/run.log" 2>&1 ||
    { cat "$T/run.log" >&2; bad "the traced session failed"; exit 1; }
for pair in "0 1" "1 0" "2 1"; do
    set -- $pair
    python3 "$script" "$T/t-$1.json" "$T/t-$2.json" >"$T/out" 2>&1 ||
        { bad "$1 -> $2: exit $?: $(cat "$T/out")"; continue; }
    # sender P -> receiver Q, runs >= 1: n N, one-way us p10 A p50 B p90 C max D
    awk -v s="$1" -v r="$2" '
        $1 == "sender" && $2 == s && $5 + 0 == r && $9 == "n" && $10 + 0 > 0 && $13 == "p10" &&
        $14 + 0 >= 0 && $14 + 0 <= $16 + 0 && $16 + 0 <= $18 + 0 && $18 + 0 <= $20 + 0 { ok = 1 }
        END { exit ok ? 0 : 1 }' "$T/out" || bad "$1 -> $2: $(cat "$T/out")"
done
python3 "$script" "$T/t-0.json" "$T/t-1.json" --from-run 3 >"$T/out" 2>&1
[ $? -eq 1 ] && grep -q '^trace_oneway: no message' "$T/out" || bad "runs >= 3: $(cat "$T/out")"
echo garbage >"$T/g.json"
for args in "$T/t-0.json $T/t-0.json" "$T/g.json $T/t-1.json" "$T/t-0.json" \
    "$T/t-0.json $T/t-1.json --from-run x"; do
    python3 "$script" $args >"$T/out" 2>&1
    rc=$?
    { [ "$rc" -eq 2 ] && grep -q '^trace_oneway: ' "$T/out" && ! grep -q Traceback "$T/out"; } ||
        bad "'$args': exit $rc, expected 2 with one line: $(cat "$T/out")"
done
[ "$fail" = 0 ] && echo "PASS: trace_oneway.py on a traced LeNet-5 session and its refusals"
exit "$fail"

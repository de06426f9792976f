#!/bin/sh
# Tests bench/crypten_side_by_side.py's form (timings are not asserted). Where python3 cannot
# import torch and crypten (CI: neither is installed), the script must exit non-zero with one
# line naming itself and what it needs, not a traceback. Where it can, a run at 100 elements of
# exp and maxpool must print two table rows whose seconds, rounds and bytes sent are above 0 and
# whose maxpool error is at most one ulp (2^-16), and an unknown op must be refused with exit 2.
set -u
src=$(cd "${VEIL_TOP_SRCDIR:-.}" && pwd) || exit 1
tmp=$(mktemp -d "${TMPDIR:-/tmp}/veil-crypten-XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
script="$src/bench/crypten_side_by_side.py"
fail=0
if ! python3 -c 'import torch, crypten' >/dev/null 2>&1; then
    python3 "$script" -s 2 -e 2 -r 1 >"$tmp/out" 2>&1
    rc=$?
    if [ "$rc" -eq 0 ] || ! grep -q '^crypten_side_by_side: .*python3-torch' "$tmp/out" ||
        grep -q Traceback "$tmp/out"; then
        echo "FAIL: without torch / crypten: exit $rc, expected a one-line refusal"
        cat "$tmp/out"
        fail=1
    fi
    [ "$fail" -eq 0 ] && echo "PASS: without torch and crypten the script refuses in one line (exit $rc)"
    exit "$fail"
fi
python3 "$script" -s 2 -e 2 -r 1 -o exp,maxpool >"$tmp/out" 2>&1 ||
    { echo "FAIL: crypten_side_by_side.py exited $?"; fail=1; }
rows=$(awk -F '|' '($2 ~ /^ exp / || $2 ~ /^ maxpool /) && $4 == 100 && $5 > 0 && $7 > 0 &&
                   $8 > 0' "$tmp/out" | wc -l)
pool=$(awk -F '|' '$2 ~ /^ maxpool / && $10 + 0 <= 1.0 / 65536' "$tmp/out" | wc -l)
if [ "$rows" -ne 2 ] || [ "$pool" -ne 1 ]; then
    echo "FAIL: $rows good rows (expected 2), $pool maxpool rows within one ulp (expected 1)"
    cat "$tmp/out"
    fail=1
fi
python3 "$script" -o nosuch >"$tmp/bad" 2>&1
rc=$?
[ "$rc" -eq 2 ] || { echo "FAIL: an unknown op: exit $rc, expected 2"; cat "$tmp/bad"; fail=1; }
[ "$fail" -eq 0 ] && echo "PASS: crypten_side_by_side.py prints its rows and refuses a bad op"
exit "$fail"

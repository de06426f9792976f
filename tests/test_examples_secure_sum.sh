#!/bin/sh
# Tests examples/secure_sum, the public-API template: 2 and 3 real party processes under veil-run
# feed private vectors, add them inside MPC and reveal the total, which must equal the plaintext
# sum of every party's synthetic input within fixed point's rounding (each input rounded to
# 2^-17 at worst: N * 2^-17 per element), with the traffic of input sharing and the reveal
# (each party sends 8 bytes per element to every other party for its input and again for its
# share of the total: 2 (N-1) 8 k bytes) in N + 1 counted rounds; bad arguments give a usage
# error (exit 2), and a --parties that disagrees with the session fails.
set -u
top="${VEIL_TOP_BUILDDIR:-.}"
ex="$top/examples/secure_sum"
run="$top/tools/veil-run"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/veil-sum-XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
fail=0
for n in 2 3; do
    out=$("$run" -n "$n" --dealer --timeout 120 -- "$ex" -k 100 --out "$tmp/total-$n" 2>&1)
    rc=$?
    bytes=$(( 2 * (n - 1) * 100 * 8 ))
    for p in $(seq 0 $((n - 1))); do
        printf '%s\n' "$out" | grep -qxF "[p$p] parties=$n party=$p elements=100 bytes_sent=$bytes rounds=$((n + 1))" ||
            { echo "FAIL: -n $n: party $p's last line"; fail=1; }
    done
    [ "$rc" -eq 0 ] || fail=1
    python3 - "$n" "$tmp/total-$n" <<'PY' || fail=1
import sys
n, path = int(sys.argv[1]), sys.argv[2]
got = [float(l) for l in open(path)]
want = [sum(100.0 + 37.25 * p + 0.5 * ((i * 7919 + p * 104729) % 1000) for p in range(n))
        for i in range(100)]
bad = [(i, g, w) for i, (g, w) in enumerate(zip(got, want)) if abs(g - w) > n * 2.0 ** -17 + 1e-6]
if len(got) != 100 or bad:
    print("FAIL: -n %d: %d totals, first wrong: %s" % (n, len(got), bad[:3]))
    sys.exit(1)
PY
    [ "$fail" -eq 0 ] || { printf '%s\n' "$out"; }
done
for bad in "-k 0" "-k 100000" "-k x" "--parties 1" "--parties 17" "extra"; do
    # shellcheck disable=SC2086
    "$ex" $bad >/dev/null 2>&1
    rc=$?
    [ "$rc" -eq 2 ] || { echo "FAIL: '$bad' exited $rc, expected 2"; fail=1; }
done
out=$("$run" -n 3 --dealer --timeout 120 -- "$ex" --parties 2 2>&1)
rc=$?
if [ "$rc" -eq 0 ] || ! printf '%s' "$out" | grep -q 'give --parties 3'; then
    echo "FAIL: --parties 2 in a 3-party session: rc=$rc"; printf '%s\n' "$out"; fail=1
fi
exit $fail

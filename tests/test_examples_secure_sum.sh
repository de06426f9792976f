#!/bin/sh
# Tests the main example end to end: 2 and 3 real party processes share private vectors over the
# encrypted mesh, add them in StarPU tasks and reveal the total, which must equal the plaintext
# sum exactly with the expected traffic (2 rounds); bad arguments give a usage error (exit 2).
set -u
ex="${VEIL_TOP_BUILDDIR:-.}/examples/secure_sum"
fail=0
for n in 2 3; do
    out=$("$ex" -n "$n" -k 100 2>&1)
    rc=$?
    last=$(printf '%s\n' "$out" | tail -n 1)
    # Each party sends its input shares (k words to each other party) and its share of the total.
    bytes=$(( 2 * (n - 1) * 100 * 8 ))
    case "$last" in
    "parties=$n elements=100 match=1 bytes_sent_p0=$bytes rounds=2") ;;
    *) echo "FAIL: -n $n: rc=$rc, last line: $last"; printf '%s\n' "$out"; fail=1 ;;
    esac
    [ "$rc" -eq 0 ] || { echo "FAIL: -n $n exit status $rc"; fail=1; }
done
for bad in "-n 1" "-n x" "-k 0" "-k 100000" "extra"; do
    # shellcheck disable=SC2086
    "$ex" $bad >/dev/null 2>&1
    rc=$?
    [ "$rc" -eq 2 ] || { echo "FAIL: '$bad' exited $rc, expected 2"; fail=1; }
done
exit $fail

#!/bin/sh
# Tests that the look-ahead bound holds in time: examples/mlp with two products
# (64-64-64: dense, relu, dense; batch 4) runs traced (VEIL_TRACE) with 2 parties and the dealer,
# once with --lookahead 0 and once without a bound. tests/check_lookahead.py measures, in run 0 of
# each party's trace, the time from the first product's last receive to the second product's
# first send. With look-ahead 0 it must be >= 0 at both parties (the second product, its weight
# open included, was submitted after the first finished); without a bound the second product's
# weight open goes ahead of need, so at some party it must be negative (the control, showing the
# check can see the difference). Both runs emulate a 10 ms link (VEIL_LINK): the first product
# then needs at least two 10 ms rounds (input open, truncation) while the second's weight open
# needs only the dealer's material, so the control's margin (measured -12 to -40 ms, idle and
# with three busy loops beside it) dwarfs scheduling noise; on bare loopback the margin was a
# few ms and one run in six, under load, came out positive. The sessions are --cold: a prepared
# one (veil_party_prepare) opens every weight before run 0, leaving the control nothing to see.
# Skips (77) without python3.
set -u
top="${VEIL_TOP_BUILDDIR:-.}"
src="${VEIL_TOP_SRCDIR:-.}"
command -v python3 >/dev/null 2>&1 || { echo "SKIP: python3 missing (scripts/install-deps.sh)"; exit 77; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/veil-lookahead-XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
fail=0
for mode in bounded free; do
    opt=""
    [ "$mode" = bounded ] && opt="--lookahead 0"
    # shellcheck disable=SC2086
    VEIL_LINK=10ms,10Gbit VEIL_TRACE="$tmp/$mode-%d.json" STARPU_SILENT=1 "$top/tools/veil-run" -n 2 --dealer \
        --timeout 120 -- "$top/examples/mlp" --layers 64,64,64 --batch 4 --cold $opt >"$tmp/out" 2>&1 ||
        { echo "FAIL: mlp $opt exited $?"; cat "$tmp/out"; fail=1; continue; }
    gaps=$(python3 "$src/tests/check_lookahead.py" 0 "$tmp/$mode-0.json" "$tmp/$mode-1.json") ||
        { echo "FAIL: check_lookahead.py on the $mode traces"; fail=1; continue; }
    echo "$mode: gaps (us) at parties 0, 1:" $gaps
    neg=$(printf '%s\n' $gaps | awk '$1 < 0' | wc -l)
    if [ "$mode" = bounded ] && [ "$neg" -ne 0 ]; then
        echo "FAIL: with look-ahead 0 the second product started before the first finished"
        fail=1
    fi
    if [ "$mode" = free ] && [ "$neg" -eq 0 ]; then
        echo "FAIL: without a bound the second product never went ahead (the check sees nothing)"
        fail=1
    fi
done
exit $fail

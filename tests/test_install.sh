#!/bin/sh
# Tests `make install` into a fresh prefix as a user meets it: with no environment variable at all
# (env -i: no LD_LIBRARY_PATH, no ldconfig step; a sanitizer build's ASAN_OPTIONS, LSAN_OPTIONS
# and UBSAN_OPTIONS are kept), the installed veil-run starts a session of the
# installed example veil-secure-sum (2 parties and the dealer) that exits 0 with the right total
# on every party; the other installed examples and veil-config answer --help, the trace script is
# installed as veil-trace-svg, the docs and veil.pc are in place; `make uninstall` removes the
# programs again.
set -u
top=$(cd "${VEIL_TOP_BUILDDIR:-.}" && pwd) || exit 1
tmp=$(mktemp -d "${TMPDIR:-/tmp}/veil-install-XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
fail=0
pfx="$tmp/prefix"
mk() { env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL "${MAKE:-make}" -C "$top" "$@" prefix="$pfx" \
    >"$tmp/make.log" 2>&1; }
if ! mk install; then
    echo "FAIL: make install prefix=$pfx"; tail -n 30 "$tmp/make.log"; exit 1
fi
# env -i keeps only the sanitizers' settings (a --enable-sanitizers build: tests/lsan.supp)
out=$(cd "$tmp" && env -i ${ASAN_OPTIONS:+"ASAN_OPTIONS=$ASAN_OPTIONS"} \
    ${LSAN_OPTIONS:+"LSAN_OPTIONS=$LSAN_OPTIONS"} ${UBSAN_OPTIONS:+"UBSAN_OPTIONS=$UBSAN_OPTIONS"} \
    "$pfx/bin/veil-run" -n 2 --dealer --timeout 120 -- "$pfx/bin/veil-secure-sum" -k 10 2>&1)
rc=$?
for p in 0 1; do
    printf '%s\n' "$out" | grep -qxF "[p$p] parties=2 party=$p elements=10 bytes_sent=160 rounds=3" ||
        { echo "FAIL: the installed session: no result line from party $p"; fail=1; }
    printf '%s\n' "$out" | grep -qF "[p$p] secure_sum: party $p: totals of 2 hospitals' costs, first departments: 601.75 1020.75 939.75 858.75" ||
        { echo "FAIL: the installed session: party $p's totals"; fail=1; }
done
[ "$rc" -eq 0 ] || fail=1
[ "$fail" -eq 0 ] || printf '%s\n' "$out"
for prog in veil-lenet-fmnist veil-mlp veil-vgg16 veil-resnet veil-transformer veil-config \
    veil-keygen; do
    env -i "$pfx/bin/$prog" --help >/dev/null 2>&1 || { echo "FAIL: installed $prog --help"; fail=1; }
done
env -i "$pfx/bin/veil-trace-svg" --help >/dev/null 2>&1 || { echo "FAIL: veil-trace-svg --help"; fail=1; }
for f in share/doc/veil/config.md share/doc/veil/gpu.md lib/pkgconfig/veil.pc include/veil.h; do
    [ -f "$pfx/$f" ] || { echo "FAIL: $f not installed"; fail=1; }
done
if ! mk uninstall; then
    echo "FAIL: make uninstall"; tail -n 30 "$tmp/make.log"; fail=1
elif [ -n "$(ls "$pfx/bin" 2>/dev/null)" ]; then
    echo "FAIL: make uninstall left $(ls "$pfx/bin")"; fail=1
fi
exit $fail

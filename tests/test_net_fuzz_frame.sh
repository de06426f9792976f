#!/bin/sh
# test_net_fuzz_frame.sh — fuzzes the wire-format, link and configuration parsers of net/ for a
# bounded time (VEIL_FUZZ_SECONDS, default 15) with libFuzzer + ASan + UBSan via
# scripts/fuzz.sh; fails on any crash, sanitizer report or broken parser invariant. Skips (77)
# when clang with libFuzzer is not installed. Quiet unless VEIL_TEST_VERBOSE=1.
src=${VEIL_TOP_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
build=${VEIL_TOP_BUILDDIR:-.}
work="$build/tests/fuzz-frame-work"
rm -rf "$work"
# The fuzz target brings its own sanitizers; do not inherit the suite's LSan suppressions path.
unset ASAN_OPTIONS LSAN_OPTIONS UBSAN_OPTIONS
if [ -n "${VEIL_TEST_VERBOSE:-}" ]; then
    "$src/scripts/fuzz.sh" -t "${VEIL_FUZZ_SECONDS:-15}" -o "$work"
else
    "$src/scripts/fuzz.sh" -t "${VEIL_FUZZ_SECONDS:-15}" -o "$work" -q >/dev/null
fi
rc=$?
# Keep the work directory (reproducers) only when something failed.
[ "$rc" = 0 ] || [ "$rc" = 77 ] && rm -rf "$work"
exit "$rc"

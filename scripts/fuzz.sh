#!/bin/sh
# fuzz.sh — builds fuzz/fuzz_frame.c with clang's libFuzzer, AddressSanitizer and
# UndefinedBehaviorSanitizer straight from the net/ and base/ sources it needs (no StarPU, no
# configure), writes a seed corpus of valid inputs and fuzzes for a bounded time.
#
# usage: scripts/fuzz.sh [-t SECONDS] [-o WORKDIR] [-q] [-b BUILDDIR] [-- LIBFUZZER-ARGS...]
#   -t SECONDS  fuzzing time (default 60; libFuzzer -max_total_time), per target with -b
#   -b BUILDDIR instead: run every target a build configured with --enable-fuzzers made
#               (fuzz/fuzz_*, data/fuzz_weights) in turn, each for SECONDS, and print its runs
#   -o WORKDIR  build, corpus and crash artifacts go here (default: a new temporary directory)
#   -q          quiet: fuzzer output goes to WORKDIR/fuzz.log, shown only on failure
# environment: CLANG (default clang-14, then clang).
# exit: 0 no crash, 1 a crash or a broken invariant (reproducer in WORKDIR/crash-*),
#       77 clang or libFuzzer unavailable, 2 usage or build error.
set -u

seconds=60
work=
builddir=
quiet=0
while [ $# -gt 0 ]; do
    case "$1" in
    -t) seconds=${2:?-t needs a number of seconds}; shift 2 ;;
    -o) work=${2:?-o needs a directory}; shift 2 ;;
    -q) quiet=1; shift ;;
    -b) builddir=${2:?-b needs a build directory}; shift 2 ;;
    -h|--help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    --) shift; break ;;
    *) echo "fuzz.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
    esac
done
case "$seconds" in
''|*[!0-9]*) echo "fuzz.sh: -t wants a whole number of seconds, got '$seconds'" >&2; exit 2 ;;
esac

src=$(cd "$(dirname "$0")/.." && pwd)

# -b: the targets of a configured build, one after another
if [ -n "$builddir" ]; then
    [ -n "$work" ] || work=$(mktemp -d "${TMPDIR:-/tmp}/veil-fuzz-XXXXXX") || exit 2
    fail=0 found=0
    export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1}"
    export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
    for t in "$builddir"/fuzz/fuzz_* "$builddir"/data/fuzz_weights; do
        case "$t" in *.o|*.c) continue ;; esac
        [ -x "$t" ] || continue
        found=1
        name=$(basename "$t")
        mkdir -p "$work/corpus-$name" || exit 2
        "$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=4096 \
            -print_final_stats=1 -artifact_prefix="$work/$name-" "$@" "$work/corpus-$name" \
            >"$work/$name.log" 2>&1
        rc=$?
        runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/$name.log" | tail -n 1)
        if [ "$rc" != 0 ]; then
            echo "fuzz.sh: $name FAILED after ${runs:-?} runs (log: $work/$name.log)"
            fail=1
        else
            echo "fuzz.sh: $name: ${runs:-?} runs in $seconds s, no crash"
        fi
    done
    [ "$found" = 1 ] ||
        { echo "fuzz.sh: no fuzz target in $builddir (configure --enable-fuzzers)" >&2; exit 77; }
    exit "$fail"
fi
if [ -z "${CLANG:-}" ]; then
    for c in clang-14 clang; do
        if command -v "$c" >/dev/null 2>&1; then CLANG=$c; break; fi
    done
fi
if [ -z "${CLANG:-}" ]; then
    echo "fuzz.sh: clang not found; install clang-14 and libclang-rt-14-dev (skipping)" >&2
    exit 77
fi
if [ -z "$work" ]; then
    work=$(mktemp -d "${TMPDIR:-/tmp}/veil-fuzz-XXXXXX") || exit 2
fi
mkdir -p "$work/corpus" "$work/seeds" || exit 2
work=$(cd "$work" && pwd)

# libFuzzer present? (clang without compiler-rt links nothing with -fsanitize=fuzzer)
printf '#include <stddef.h>\n#include <stdint.h>\nint LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);\nint LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { (void)d; (void)n; return 0; }\n' \
    >"$work/probe.c"
if ! "$CLANG" -fsanitize=fuzzer,address,undefined "$work/probe.c" -o "$work/probe" \
    >"$work/probe.log" 2>&1; then
    echo "fuzz.sh: $CLANG cannot build a libFuzzer target (install libclang-rt-14-dev); skipping" >&2
    exit 77
fi

zmq_cflags=$(pkg-config --cflags libzmq 2>/dev/null)
zmq_libs="$(pkg-config --libs libzmq 2>/dev/null || echo -lzmq) $(pkg-config --libs libcrypto 2>/dev/null || echo -lcrypto)"
# The sources include <config.h>; the fuzz build needs only the feature macro from it.
printf '#define _GNU_SOURCE 1\n' >"$work/config.h"
sources="$src/net/frame.c $src/net/seal.c $src/net/emulate.c $src/net/config.c $src/net/keys.c \
$src/base/status.c $src/base/log.c $src/base/hex.c $src/base/env.c"
common="-std=gnu11 -g -O1 -I$work -I$src/include -I$src $zmq_cflags -Wall -Wextra"

# shellcheck disable=SC2086
if ! "$CLANG" $common -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
    -fno-omit-frame-pointer "$src/fuzz/fuzz_frame.c" $sources $zmq_libs -lm -lpthread \
    -o "$work/fuzz_frame" >"$work/build.log" 2>&1; then
    echo "fuzz.sh: building the fuzz target failed:" >&2
    cat "$work/build.log" >&2
    exit 2
fi
# shellcheck disable=SC2086
if ! "$CLANG" $common -DVEIL_FUZZ_SEEDS "$src/fuzz/fuzz_frame.c" $sources $zmq_libs -lm \
    -lpthread -o "$work/fuzz_seeds" >>"$work/build.log" 2>&1 || ! "$work/fuzz_seeds" "$work/seeds"; then
    echo "fuzz.sh: building or running the seed writer failed:" >&2
    cat "$work/build.log" >&2
    exit 2
fi

cd "$work" || exit 2
set -- -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=4096 \
    -print_final_stats=1 -artifact_prefix="$work/" "$@" "$work/corpus" "$work/seeds"
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
if [ "$quiet" = 1 ]; then
    "$work/fuzz_frame" "$@" >"$work/fuzz.log" 2>&1
    rc=$?
else
    { "$work/fuzz_frame" "$@" 2>&1; echo $? >"$work/rc"; } | tee "$work/fuzz.log"
    rc=$(cat "$work/rc")
fi
runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/fuzz.log" | tail -n 1)
if [ "$rc" != 0 ]; then
    [ "$quiet" = 1 ] && tail -n 60 "$work/fuzz.log" >&2
    echo "fuzz.sh: FAILED after ${runs:-?} runs; reproducers: $(ls "$work"/crash-* "$work"/leak-* "$work"/timeout-* "$work"/oom-* 2>/dev/null | tr '\n' ' ')" >&2
    echo "fuzz.sh: replay with $work/fuzz_frame FILE" >&2
    exit 1
fi
echo "fuzz.sh: ${runs:-?} runs in ${seconds} s, no crash (corpus: $work/corpus)"
exit 0

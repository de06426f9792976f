#!/bin/sh
# test_tools_veil_run.sh — the veil-run launcher: 3 parties and a dealer running
# tests/veil_run_probe open a CURVE mesh from the environment and exchange one message per
# pair (every process's prefixed "ok" line must appear); the key directory is gone afterwards;
# a failing child's exit status propagates; --link 1ms,1Gbit reaches the children; bad options
# and garbage link text exit 2 (-n 1 too: a session needs 2 parties); the --timeout bound exits
# 124 naming the process still running and how to raise the bound; veil-run passes no
# VEIL_PROGRESS; killed with SIGKILL it leaves no child running and no key directory (its reaper
# removes it); SIGTERM and SIGINT reach the children, remove the key directory and show in the
# exit status (128+SIG). Each process runs on its own share of the CPUs, every CPU with --no-pin. Processes are not dumpable after their open (VEIL_ALLOW_CORE_DUMPS=1 opts
# out). The dealer's close waits for the parties' goodbyes as long as they are
# alive: parties that close 4 s after it, with a 2 s peer timeout, end clean (no "closing without
# a goodbye" warning, every process exits 0).
B=${VEIL_TOP_BUILDDIR:-.}
# The 2 s peer timeout below is what a case checks; on a GPU host each process's CUDA set-up can
# take longer than that under make -j, and nothing here needs a GPU: no CUDA workers.
export STARPU_NCUDA=0
RUN=$B/tools/veil-run
PROBE=$B/tests/veil_run_probe
T=$(mktemp -d /tmp/veil-run-test-XXXXXX) || exit 1
trap 'rm -rf "$T"' EXIT
fail=0
say() { [ "${VEIL_TEST_VERBOSE:-0}" = 1 ] && echo "$@" >&2; return 0; }
bad() { echo "FAIL: $*" >&2; fail=1; }

"$RUN" -n 3 --dealer --timeout 60 -- "$PROBE" >"$T/out" 2>&1
rc=$?
say "$(cat "$T/out")"
[ $rc = 0 ] || bad "3 parties + dealer: exit $rc: $(tail -5 "$T/out")"
for tag in p0 p1 p2 dealer; do
    case $tag in dealer) id=3 ;; *) id=${tag#p} ;; esac
    grep -q "^\[$tag\] probe $id/4 ok" "$T/out" || bad "no '[$tag] probe $id/4 ok' line"
done
grep -q "without a goodbye" "$T/out" && bad "goodbye warning in a clean session: $(cat "$T/out")"
# core-dump protection: not dumpable after the open, unless VEIL_ALLOW_CORE_DUMPS=1
[ "$(grep -c '^\[[a-z0-9]*\] probe [0-3] dumpable 0$' "$T/out")" = 4 ] ||
    bad "a process is dumpable after its open: $(grep dumpable "$T/out")"
VEIL_ALLOW_CORE_DUMPS=1 "$RUN" -n 2 -- "$PROBE" >"$T/dump" 2>&1 || bad "opt-out run: $(cat "$T/dump")"
[ "$(grep -c 'probe [01] dumpable 1$' "$T/dump")" = 2 ] ||
    bad "VEIL_ALLOW_CORE_DUMPS=1 not honoured: $(grep dumpable "$T/dump")"

VEIL_NET_TIMEOUT=2 "$RUN" -n 2 --dealer --timeout 60 -- "$PROBE" late 4 >"$T/late" 2>&1
rc=$?
say "$(cat "$T/late")"
[ $rc = 0 ] || bad "parties closing late: exit $rc: $(tail -5 "$T/late")"
[ "$(grep -c 'probe [0-9]/3 ok' "$T/late")" = 3 ] || bad "parties closing late: $(cat "$T/late")"
grep -q "without a goodbye" "$T/late" && bad "the dealer did not wait for the goodbyes: $(cat "$T/late")"

"$RUN" -n 2 --link 1ms,1Gbit -- "$PROBE" env >"$T/env" 2>&1
rc=$?
say "$(cat "$T/env")"
[ $rc = 0 ] || bad "--link 1ms,1Gbit: exit $rc: $(tail -3 "$T/env")"
grep -q "^\[p1\] probe 1 keydir /tmp/veil-run-keys-.* link 1ms,1Gbit latency 0.001000 plaintext 0" \
    "$T/env" || bad "the link did not reach party 1: $(cat "$T/env")"
kd=$(sed -n 's/.*keydir \([^ ]*\) .*/\1/p' "$T/env" | head -1)
[ -n "$kd" ] && [ ! -e "$kd" ] || bad "key directory '$kd' left behind"

# each process on its own share of the CPUs by default (2 parties on 2 or more CPUs: disjoint
# lists), every CPU of veil-run's with --no-pin (Linux: the lists come from /proc)
cpus_of() { sed -n "s/^\[$1\] Cpus_allowed_list:[[:space:]]*//p" "$2"; }
if [ -r /proc/self/status ] && [ "$(nproc)" -ge 2 ]; then
    all=$(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/self/status)
    "$RUN" -n 2 -- sh -c 'grep Cpus_allowed_list /proc/self/status' >"$T/pin" 2>&1 || bad "pin run"
    a=$(cpus_of p0 "$T/pin")
    b=$(cpus_of p1 "$T/pin")
    [ -n "$a" ] && [ -n "$b" ] && [ "$a" != "$all" ] && [ "$b" != "$all" ] && [ "$a" != "$b" ] ||
        bad "parties not pinned to their own CPUs (p0 '$a', p1 '$b', veil-run '$all')"
    "$RUN" -n 2 --no-pin -- sh -c 'grep Cpus_allowed_list /proc/self/status' >"$T/nopin" 2>&1 ||
        bad "--no-pin run"
    [ "$(cpus_of p0 "$T/nopin")" = "$all" ] && [ "$(cpus_of p1 "$T/nopin")" = "$all" ] ||
        bad "--no-pin: $(cat "$T/nopin"), veil-run '$all'"
fi

"$RUN" -n 2 --insecure-plaintext -- "$PROBE" env >"$T/plain" 2>&1 || bad "plaintext run"
grep -q "plaintext 1" "$T/plain" || bad "--insecure-plaintext not passed on"

"$RUN" -n 3 --timeout 60 -- "$PROBE" exit 7 1 >"$T/fail" 2>&1
rc=$?
say "$(cat "$T/fail")"
[ $rc = 7 ] || bad "failing party: exit $rc, expected 7"
grep -q "^\[p1\] probe 1 exits 7" "$T/fail" || bad "no '[p1] probe 1 exits 7' line"

"$RUN" -n 2 --timeout 1 -- sleep 30 >"$T/to" 2>&1
rc=$?
[ $rc = 124 ] || bad "timeout: exit $rc, expected 124"
grep -q "party 0 (and party 1) still running after 1.0 s; killed" "$T/to" ||
    bad "timeout message names no process: $(cat "$T/to")"
grep -q "raise it with --timeout SECONDS, or leave --timeout out" "$T/to" ||
    bad "timeout message gives no hint: $(cat "$T/to")"

"$RUN" -n 2 -- sh -c 'echo "progress=${VEIL_PROGRESS:-unset}"' >"$T/prog" 2>&1 ||
    bad "env run: $(cat "$T/prog")"
[ "$(grep -c 'progress=unset' "$T/prog")" = 2 ] || bad "VEIL_PROGRESS set: $(cat "$T/prog")"

# Signals. Each child records its pid and the key directory, then sleeps in place (exec).
alive() { # pid: running (a zombie counts as gone)
    [ -r "/proc/$1/stat" ] || return 1
    st=$(sed 's/.*) \(.\).*/\1/' "/proc/$1/stat" 2>/dev/null)
    [ -n "$st" ] && [ "$st" != Z ]
}
start_sleepers() { # $1: file for the children's "pid keydir" lines
    : >"$1"
    "$RUN" -n 2 --dealer -- sh -c "echo \$\$ \$VEIL_KEY_DIR >>'$1'; exec sleep 60" \
        >"$1.out" 2>&1 &
    vr=$!
    i=0
    while [ "$(wc -l <"$1")" -lt 3 ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
    [ "$(wc -l <"$1")" = 3 ] || bad "sleepers did not start: $(cat "$1.out")"
}
check_gone() { # $1: the pids file, $2: what happened
    dir=$(head -1 "$1" | cut -d' ' -f2)
    i=0
    while [ $i -lt 50 ]; do
        left=""
        for pid in $(cut -d' ' -f1 "$1"); do
            alive "$pid" && left="$left $pid"
        done
        [ -z "$left" ] && [ ! -e "$dir" ] && break
        sleep 0.1
        i=$((i + 1))
    done
    [ -z "$left" ] || bad "$2: children still running:$left"
    [ -n "$dir" ] && [ ! -e "$dir" ] || bad "$2: key directory '$dir' left behind"
}
start_sleepers "$T/k9"
kill -9 $vr
wait $vr 2>/dev/null
check_gone "$T/k9" "kill -9 veil-run"
for sig in TERM INT; do
    start_sleepers "$T/s$sig"
    kill -$sig $vr
    wait $vr
    rc=$?
    case $sig in TERM) want=143 ;; INT) want=130 ;; esac
    [ $rc = $want ] || bad "SIG$sig: exit $rc, expected $want: $(cat "$T/s$sig.out")"
    grep -q "stopped by signal" "$T/s$sig.out" || bad "SIG$sig: no message: $(cat "$T/s$sig.out")"
    check_gone "$T/s$sig" "SIG$sig"
done

for args in "-n 0 -- true" "-n 1 -- true" "-n 17 -- true" "-n x -- true" "-- true" "-n 2" "-n 2 --bogus -- true" \
    "-n 2 --link garbage -- true" "-n 2 --link 1ms -- true" "-n 2 --timeout -1 -- true" \
    "-n"; do
    # shellcheck disable=SC2086
    "$RUN" $args >"$T/u" 2>&1
    rc=$?
    say "veil-run $args -> $rc: $(head -2 "$T/u")"
    [ $rc = 2 ] || bad "veil-run $args: exit $rc, expected 2"
    grep -q "veil-run" "$T/u" || bad "veil-run $args: no message"
done
"$RUN" --help >"$T/h" 2>&1 && grep -q "usage: veil-run" "$T/h" || bad "--help"
grep -q "Default: no wall-clock limit" "$T/h" || bad "--help: the default is not 'no limit'"
exit $fail

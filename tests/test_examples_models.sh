#!/bin/sh
# Tests the model examples end to end at their small sizes: mlp, vgg16 (width 1/16), resnet
# (ResNet-18, width 1/16) and transformer (H=16, A=2, seq 8, FF 32) each run as 2 parties and a
# dealer under veil-run with three StarPU schedulers (lws, eager, dmda), and vgg16 and the
# transformer also with 3 parties; each run must exit 0 and party 1's last key=value line must
# say agree=1 (the secure output agrees with the plaintext FIXED executor within the example's
# tolerance). Bad arguments exit 2. Measured: 53 s on the shared 2-core VM (load average ~9).
set -u
B=${VEIL_TOP_BUILDDIR:-.}
RUN=$B/tools/veil-run
T=$(mktemp -d /tmp/veil-models-test-XXXXXX) || exit 1
trap 'rm -rf "$T"' EXIT
fail=0
say() { [ "${VEIL_TEST_VERBOSE:-0}" = 1 ] && echo "$@" >&2; return 0; }
bad() { echo "FAIL: $*" >&2; fail=1; }
STARPU_SILENT=1
export STARPU_SILENT

# run N SCHED EXAMPLE MODEL: one secure session; checks the status and party 1's last line.
run() {
    n=$1 sched=$2 ex=$3 model=$4
    STARPU_SCHED=$sched "$RUN" -n "$n" --dealer --timeout 120 -- "$B/examples/$ex" --small \
        >"$T/out" 2>&1
    rc=$?
    last=$(grep '^\[p1\] model=' "$T/out" | tail -n 1)
    say "$ex -n $n $sched: rc=$rc $last"
    case "$last" in
    "[p1] model=$model parties=$n party=1 "*" agree=1 "*) ;;
    *) bad "$ex -n $n STARPU_SCHED=$sched: no agree=1 line"; cat "$T/out" >&2 ;;
    esac
    if [ "$rc" -ne 0 ]; then
        bad "$ex -n $n STARPU_SCHED=$sched: exit status $rc"
        tail -20 "$T/out" >&2
    fi
    for who in p0 dealer; do
        grep -q "^\[$who\] model=$model parties=$n " "$T/out" || bad "$ex: no last line from $who"
    done
}

for sched in lws eager dmda; do
    run 2 $sched mlp mlp
    run 2 $sched vgg16 vgg16
    run 2 $sched resnet resnet18
    run 2 $sched transformer transformer
done
run 3 lws vgg16 vgg16
run 3 eager transformer transformer

# Bad usage: a message and exit 2 (checked before any session is opened).
for args in "mlp --batch 0" "mlp --layers 10" "mlp --imagenet" "vgg16 --width-div x" \
    "vgg16 --runs 99" "resnet --bogus" "resnet extra" "transformer --heads 3" \
    "transformer --seq 0" "transformer --width-div 2"; do
    # shellcheck disable=SC2086
    set -- $args
    ex=$1
    shift
    "$B/examples/$ex" "$@" >"$T/bad" 2>&1
    rc=$?
    [ "$rc" -eq 2 ] || bad "'$args' exited $rc, expected 2"
    [ -s "$T/bad" ] || bad "'$args' said nothing"
done
"$B/examples/vgg16" --help >"$T/help" 2>&1 || bad "vgg16 --help exited $?"
grep -q -- "--imagenet" "$T/help" || bad "vgg16 --help does not mention --imagenet"
exit $fail

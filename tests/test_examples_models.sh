#!/bin/sh
# Tests the model examples end to end at their small sizes: mlp, lenet, vgg16 (width 1/16), resnet
# (ResNet-18, width 1/16) and transformer (H=16, A=2, seq 8, FF 32) each run as 2 parties and a
# dealer under veil-run with three StarPU schedulers (lws, eager, dmda), and vgg16 and the
# transformer also with 3 parties; each run must exit 0 and party 1's last key=value line must
# say agree=1 (the secure output agrees with the plaintext FIXED executor within the example's
# tolerance). `mlp train` (2 and 3 parties), `lenet train`, `transformer train`, `vgg16 train`
# and `resnet train` (2 parties) run 2 secure SGD steps:
# party 0's trained parameters must agree with the plaintext fixed-point trainer (agree=1) and
# party 1 must have learnt a finite loss for each step. The pipeline options (--microbatches,
# --lookahead, --serialized, --cold) run and agree too; LeNet-5 at batch 1 takes 26 rounds (30
# serialized) and its exact bytes, at batch 16 (each ReLU after its pool) 42 rounds (44
# serialized) and its exact bytes; a run prepares (veil_party_prepare) unless
# --cold; a transformer cannot be micro-batched (refused,
# with the reason). `mlp train --optimizer adam` (a 16-8-4 MLP) and `transformer train
# --optimizer adamw` agree with the plaintext trainer within the Adam tolerance. Under tracing
# (VEIL_TRACE) `mlp train` prints each step's busy figures and CPU use and the summary's
# compute_s ... stretch and cpu_busy_pct ... cpu_workers_wait_ms fields. Bad arguments exit 2. Measured: 53 s on the
# shared 2-core VM (load average ~9) before the training runs were added.
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
    shift 4
    STARPU_SCHED=$sched "$RUN" -n "$n" --dealer --timeout 120 -- "$B/examples/$ex" --small "$@" \
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
    run 2 $sched lenet lenet5
    run 2 $sched vgg16 vgg16
    run 2 $sched resnet resnet18
    run 2 $sched transformer transformer
done
run 3 lws vgg16 vgg16
run 3 eager transformer transformer
# pipeline settings: micro-batches (inter-batch), a look-ahead bound, the serialized baseline
run 2 lws vgg16 vgg16 --batch 2 --microbatches 2
run 3 lws resnet resnet18 --batch 2 --microbatches 2 --lookahead 1
run 2 lws mlp mlp --lookahead 0
run 2 lws mlp mlp --serialized
# cost LABEL BYTES ROUNDS: party 1's last line of the run before says exactly these
cost() {
    grep -q "^\[p1\] model=lenet5 .* bytes_sent=$2 rounds=$3 " "$T/out" ||
        bad "$1: not $3 rounds and $2 bytes: $(grep '^\[p1\] model=' "$T/out")"
}
# LeNet-5 at batch 1 in 26 rounds: pairwise pools with the ReLUs inside (5 each, tasks/pool.h
# PAIRWISE) and the convolutions' truncations inside their first round (veil_mpc_maxpool2d_relu_of);
# the dense layers' truncations inside their ReLUs (veil_mpc_relu_trunc: no round, no byte);
# serialized (a barrier after each layer) the convolutions' truncations take their own 2
run 2 lws lenet lenet5 --batch 1
cost "lenet --batch 1" 529456 26
run 2 lws lenet lenet5 --batch 1 --serialized
cost "lenet --batch 1 --serialized" 529456 28
# LeNet-5 at batch 16: too many windows for the pairwise rule, so each pool compares by tournament
# the convolution's untruncated values, and its ReLU runs after it on a quarter of the values
# (relu(max) = max(relu)), truncating the pooled values inside its rounds (veil_mpc_relu_trunc),
# as the dense layers' ReLUs do: 40 rounds, serialized too. The tournament's d beta and the ReLU's
# x beta are local (LTZ's c and an RBETA or CMPTRUNC item, tasks/compare.h): 1731424 bytes
# (4230496 with a Beaver product for each x beta and a truncation of every convolution output,
# 6386464 with the ReLU before the pool too)
run 2 lws lenet lenet5 --batch 16
cost "lenet --batch 16" 1731424 40
run 2 lws lenet lenet5 --batch 16 --serialized
cost "lenet --batch 16 --serialized" 1731424 40
# the warm first run (veil_party_prepare) is the default; --cold leaves the sharing to run 0
grep -q '^\[p1\] prepare: ' "$T/out" || bad "lenet: no prepare line from party 1"
run 2 lws mlp mlp --cold
if grep -q '^\[p[01]\] prepare: ' "$T/out"; then bad "mlp --cold: a party prepared"; fi

# train N EXAMPLE MODEL: 2 secure SGD steps; party 0's check line and party 1's losses.
train() {
    n=$1 ex=$2 model=$3
    "$RUN" -n "$n" --dealer --timeout 120 -- "$B/examples/$ex" train --small --runs 2 \
        >"$T/out" 2>&1
    rc=$?
    last0=$(grep '^\[p0\] model=' "$T/out" | tail -n 1)
    say "$ex train -n $n: rc=$rc $last0"
    case "$last0" in
    "[p0] model=$model parties=$n party=0 batch="*" steps=2 "*" agree=1 "*) ;;
    *) bad "$ex train -n $n: party 0 did not agree with the plaintext trainer"; cat "$T/out" >&2 ;;
    esac
    [ "$(grep -c '^\[p1\] step [01]: .*, loss [0-9][0-9.]*$' "$T/out")" -eq 2 ] ||
        bad "$ex train -n $n: party 1 did not learn a loss for both steps"
    grep -q '^\[p1\] model=.* loss_first=[0-9]' "$T/out" || bad "$ex train -n $n: no loss_first"
    [ "$rc" -eq 0 ] || bad "$ex train -n $n: exit status $rc"
}
train 2 mlp mlp
train 3 mlp mlp
train 2 lenet lenet5
train 2 transformer transformer
train 2 vgg16 vgg16
train 2 resnet resnet18
"$RUN" -n 2 --dealer --timeout 120 -- "$B/examples/mlp" train --small --batch 4 \
    --microbatches 2 >"$T/out" 2>&1 || bad "mlp train --microbatches 2 exited $?"
grep -q '^\[p0\] model=mlp .* agree=1 ' "$T/out" || bad "mlp train in 2 micro-batches: no agree=1"
# training prepares (the parameters shared and the first step's buffers reserved before it)
# unless --cold, whose first step shares the parameters itself; both train to agree=1
grep -q '^\[p1\] prepare: [0-9.]* s, .* the parameters shared before the first step$' "$T/out" ||
    bad "mlp train in 2 micro-batches: no prepare line"
"$RUN" -n 2 --dealer --timeout 120 -- "$B/examples/mlp" train --small --runs 2 --cold \
    >"$T/out" 2>&1 || bad "mlp train --cold exited $?"
grep -q '^\[p0\] model=mlp .* agree=1 ' "$T/out" || bad "mlp train --cold: no agree=1"
if grep -q 'prepare' "$T/out"; then bad "mlp train --cold prepared"; fi
# Adam inside MPC (a small MLP; the update costs about 300 B per parameter element: README)
"$RUN" -n 2 --dealer --timeout 120 -- "$B/examples/mlp" train --small --layers 16,8,4 --runs 2 \
    --optimizer adam >"$T/out" 2>&1 || bad "mlp train --optimizer adam exited $?"
grep -q '^\[p0\] model=mlp .* agree=1 ' "$T/out" || bad "mlp train with Adam: no agree=1"
grep -q '^\[p0\] .*training.*, Adam, lr 0.01, betas 0.9 0.999' "$T/out" ||
    bad "mlp train with Adam: the optimizer is not printed"
"$RUN" -n 2 --dealer --timeout 120 -- "$B/examples/transformer" train --small --runs 2 \
    --optimizer adamw >"$T/out" 2>&1 || bad "transformer train --optimizer adamw exited $?"
grep -q '^\[p0\] model=transformer .* agree=1 ' "$T/out" ||
    bad "transformer train with AdamW: no agree=1"
# with tracing on, each step prints its busy figures and the last line carries the fields a run's
# has, by the same names (bench/suite.sh -t reads them)
VEIL_TRACE="$T/trace-%d.json" "$RUN" -n 2 --dealer --timeout 120 -- "$B/examples/mlp" train \
    --small --runs 2 >"$T/out" 2>&1 || bad "traced mlp train exited $?"
[ "$(grep -c '^\[p1\] step [01]: compute [0-9.]*%, network [0-9.]*%, overlap [0-9.]*%, idle [0-9.]*%, overlap share [0-9.]*, stretch [0-9.]*$' "$T/out")" -eq 2 ] ||
    { bad "traced mlp train: party 1 did not print both steps' busy figures"; cat "$T/out" >&2; }
grep -q '^\[p1\] model=mlp .* step_online_s=[0-9.]* first_step_online_s=[0-9.]* bytes_sent=[0-9]* rounds=[0-9]* prepare_s=[0-9.]* compute_s=[0-9.]* network_s=[0-9.]* compute_pct=[0-9.]* network_pct=[0-9.]* overlap_pct=[0-9.]* overlap_share=[0-9.]* stretch=[0-9.]* cpu_busy_pct=[0-9.]* cpu_workers_pct=[0-9.]* cpu_workers_wait_ms=[0-9.]*$' "$T/out" ||
    { bad "traced mlp train: no busy fields on party 1's last line"; cat "$T/out" >&2; }
# and each step its CPU use: the process's share of its CPUs, each role's, the workers' wait
[ "$(grep -c '^\[p1\] step [01]: cpu [0-9.]*% of [1-9][0-9]* CPU(s) (workers [0-9.]*%, submit [0-9.]*%, net [0-9.]*%, zmq [0-9.]*%, wiper [0-9.]*%, other [0-9.]*%), workers waited [0-9.]* ms for a CPU in [0-9]* slices$' "$T/out")" -eq 2 ] ||
    { bad "traced mlp train: party 1 did not print both steps' CPU use"; cat "$T/out" >&2; }
# a transformer cannot be micro-batched (its rows are tokens): refused at compile, non-zero exit
if "$RUN" -n 2 --dealer --timeout 60 -- "$B/examples/transformer" --small --microbatches 2 \
    >"$T/out" 2>&1; then bad "transformer --microbatches 2 should be refused"; fi
grep -q "mixes rows along axis 0" "$T/out" || bad "transformer --microbatches 2: no reason given"

# Bad usage: a message and exit 2 (checked before any session is opened).
for args in "mlp --batch 0" "mlp --layers 10" "mlp --imagenet" "vgg16 --width-div x" \
    "vgg16 --runs 99" "resnet --bogus" "resnet extra" "transformer --heads 3" \
    "transformer --seq 0" "transformer --width-div 2" "vgg16 train infer" "mlp train --runs 0" \
    "mlp train train" "resnet train --runs 0" "mlp --microbatches 0" "vgg16 --lookahead 65" \
    "vgg16 preproc --parties 2 --preproc /tmp/x-%d" "mlp --preproc no-pattern" \
    "mlp --parties 2" "mlp train --optimizer rmsprop" "mlp --optimizer adam" "mlp preproc --parties 2 --session 12ab --preproc /tmp/x-%d" \
    "mlp train --preproc /tmp/x-%d" "resnet preproc --parties 1 --session \
    00000000000000000000000000000000 --preproc /tmp/x-%d"; do
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
"$B/examples/mlp" --help >"$T/help" 2>&1 || bad "mlp --help exited $?"
grep -q "^  train " "$T/help" || bad "mlp --help does not describe train"
exit $fail

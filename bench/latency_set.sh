#!/bin/sh
# bench/latency_set.sh — issue 15's benchmarks 2, 3 and 4 in one quick pass (bench/README-latency.md).
#   noise   the machine's own floor first (bench/bench_noise, 100 samples): the spread of a fixed
#           10 ms piece of work per core and on both at once, and a loopback TCP round trip with
#           blocking and spinning threads (what a wake-up across cores costs on this host).
#   models  LeNet-5 batch 1 and 16, MLP 784-128-128-10 batch 64 inference and SGD step: party 1's
#           online seconds of R runs (or steps) of one session, the first run apart and the
#           median, best, worst and coefficient of variation of runs 1..R-1 (the steady state);
#           then a second session of 4 runs traced (VEIL_TRACE) for the idle share of the run
#           (the median of runs 1..3 of party 1's profile: time neither computing nor
#           communicating, examples/example_busy.c), the share of the process's CPUs its threads
#           used in those runs and how long its workers were ready to run but had no CPU (the
#           profile's CPU use: a worker idle while its own process holds the CPU is not waiting
#           for a peer).
#   prims   mul + trunc (bench_beaver -o mul_fixed), ReLU (bench_compare) and exp
#           (bench_nonlinear -o exp) at 10^5 and 10^6 elements: seconds and elements per second.
#   busy    LeNet batch 1 (R runs) with two busy loops at nice 0 beside it (`yes > /dev/null`,
#           someone else's load), without a worker nice value (VEIL_WORKER_NICE=0) and with
#           VEIL_WORKER_NICE=19, and the same pair without the busy loops.
#   warm    the first run with and without veil_party_prepare (the examples call it; --cold
#           not): LeNet batch 1 and 16, MLP batch 64 inference and SGD step (those of -m), R runs
#           (steps) each, party 1's prepare seconds, first run (step), steady statistics and
#           first / steady median.
# The models and busy sections run the examples as they are: with veil_party_prepare.
# Every session: 2 parties and the dealer on loopback (veil-run, CURVE), one StarPU CPU worker per
# process, the load average printed before and after each section.
#
# Usage: bench/latency_set.sh [-b BUILD_DIR] [-r RUNS] [-o OUTDIR] [-m "MODEL ..."] [-u] [noise]
#                             [models] [prims] [busy] [warm]
# Defaults: build/ beside bench/, 21 runs, OUTDIR a fresh directory under /tmp (raw logs), every
# model of the models section (-m picks some of lenet_b1 lenet_b16 mlp64_infer mlp64_sgd), every
# section; -u starts the processes unpinned (veil-run --no-pin: every process on every CPU; by
# default each has its own share of the CPUs). Tables go to stdout.
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$here/../build
runs=21
out=""
pick="lenet_b1 lenet_b16 mlp64_infer mlp64_sgd"
pin=""
while getopts b:r:o:m:uh opt; do
    case $opt in
    b) top=$OPTARG ;;
    r) runs=$OPTARG ;;
    o) out=$OPTARG ;;
    m) pick=$OPTARG ;;
    u) pin=--no-pin ;;
    *) sed -n '2,29p' "$0"; exit 2 ;;
    esac
done
shift $((OPTIND - 1))
sections=${*:-noise models prims busy warm}
[ -x "$top/tools/veil-run" ] || { echo "no $top/tools/veil-run: build first (make)" >&2; exit 2; }
[ -n "$out" ] || out=$(mktemp -d "${TMPDIR:-/tmp}/veil-latency-XXXXXX") || exit 1
mkdir -p "$out" || exit 1
echo "raw logs: $out"
load() { printf 'load average %s\n' "$(cut -d' ' -f1-3 /proc/loadavg)"; }

# session LOG TRACE EXAMPLE ARGS...: one veil-run session (VEIL_TRACE when TRACE is not "-")
session() {
    log=$1 trace=$2
    shift 2
    if [ "$trace" = - ]; then
        STARPU_SILENT=1 "$top/tools/veil-run" -n 2 --dealer --timeout 600 $pin -- "$@" \
            </dev/null >"$log" 2>&1
    else
        VEIL_TRACE=$trace STARPU_SILENT=1 "$top/tools/veil-run" -n 2 --dealer --timeout 600 \
            $pin -- "$@" </dev/null >"$log" 2>&1
    fi || { echo "FAILED ($?): $* (log $log)" >&2; return 1; }
}

# stats LOG: "first median best worst mean cv%" of party 1's per-run (per-step) online seconds
# (runs 1.. for all but first)
stats() {
    sed -n 's/^\[p1\] \(run\|step\) \([0-9]*\): online \([0-9.]*\) s.*/\2 \3/p' "$1" |
        awk '$1 == 0 { first = $2; next }
             { v[n++] = $2; s += $2; q += $2 * $2 }
             END { if (!n) { print "- - - - - -"; exit }
                   for (i = 0; i < n; i++) for (j = i + 1; j < n; j++)
                       if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t }
                   med = n % 2 ? v[(n - 1) / 2] : (v[n / 2 - 1] + v[n / 2]) / 2
                   m = s / n; sd = q / n - m * m; sd = sd > 0 ? sqrt(sd) : 0
                   printf "%.4f %.4f %.4f %.4f %.4f %.1f\n", first, med, v[0], v[n - 1], m,
                          100 * sd / m }'
}

# idle LOG: the median idle % of party 1's runs (steps) 1.. in a traced session
idle() {
    sed -n 's/^\[p1\] \(run\|step\) \([1-9][0-9]*\): compute .* idle \([0-9.]*\)%.*/\3/p' "$1" |
        sort -n | awk '{ v[n++] = $1 } END { if (!n) print "-"; else print v[int((n - 1) / 2)] }'
}

# cpu LOG: the medians of party 1's runs (steps) 1.. in a traced session: the CPU share its
# threads used and the milliseconds its workers were ready but waited for a CPU
cpu() {
    pat='^\[p1\] \(run\|step\) [1-9][0-9]*: cpu \([0-9.]*\)% of .*'
    sed -n "s/$pat, workers waited \([0-9.]*\) ms.*/\2 \3/p" "$1" | awk '{ u[n] = $1; w[n++] = $2 }
                    END { if (!n) { print "- -"; exit }
                          for (i = 0; i < n; i++) for (j = i + 1; j < n; j++) {
                              if (u[j] < u[i]) { t = u[i]; u[i] = u[j]; u[j] = t }
                              if (w[j] < w[i]) { t = w[i]; w[i] = w[j]; w[j] = t } }
                          print u[int((n - 1) / 2)], w[int((n - 1) / 2)] }'
}

# check LOG EXIT: what the session's own check said ("ok", "DISAGREE" or "exit N")
check() {
    if grep -q DISAGREE "$1"; then echo DISAGREE; elif [ "$2" -eq 0 ]; then echo ok; else
        echo "exit $2"; fi
}

row() { # row LABEL LOG TRACED_LOG CHECK
    set -- "$1" "$(stats "$2")" "$(idle "$3")" "$4" "$(cpu "$3")"
    echo "$2 $5" | awk -v l="$1" -v i="$3" -v c="$4" \
        '{ printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", l, $1, $2, $3, $4,
                  $5, $6, i, $7, $8, c }'
}

if echo "$sections" | grep -qw noise; then
    echo "## noise: the machine without Veil ($(load))"
    "$top/bench/bench_noise" -r 100 | tee "$out/noise.log"
    echo "($(load))"
fi

if echo "$sections" | grep -qw models; then
    echo "## models: party 1's online seconds, $runs runs per session ($(load))"
    echo "| model | first run s | steady median s | best s | worst s | mean s | CV % |" \
        "idle % (traced) | CPU used % (traced) | workers waiting for a CPU, ms (traced) | check |"
    echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"
    while read -r label args; do
        echo " $pick " | grep -q " $label " || continue
        tag=$(echo "$label" | tr -c 'a-z0-9\n' '_')
        # a failed check (the SGD drift beyond its tolerance) still leaves the timings: say so
        # shellcheck disable=SC2086
        session "$out/$tag.log" - "$top/examples/"$args --runs "$runs"
        rc=$?
        # shellcheck disable=SC2086
        session "$out/$tag.trace.log" "$out/$tag-%d.json" "$top/examples/"$args --runs 4
        row "$label" "$out/$tag.log" "$out/$tag.trace.log" "$(check "$out/$tag.log" $rc)"
    done <<EOF
lenet_b1 lenet --batch 1
lenet_b16 lenet --batch 16
mlp64_infer mlp --batch 64
mlp64_sgd mlp train --batch 64
EOF
    echo "($(load))"
fi

if echo "$sections" | grep -qw prims; then
    echo "## prims: 2 parties + dealer process, material online ($(load))"
    (cd "$top" && ./bench/bench_beaver -o mul_fixed -m 100000 1000000) | tee "$out/beaver.log"
    (cd "$top" && ./bench/bench_compare -s 5 -e 6 -r 1) | tee "$out/compare.log"
    (cd "$top" && ./bench/bench_nonlinear -o exp -s 5 -e 6 -r 1) | tee "$out/exp.log"
    echo "($(load))"
fi

if echo "$sections" | grep -qw busy; then
    echo "## busy: LeNet batch 1, $runs runs, party 1's online seconds"
    echo "| neighbours | VEIL_WORKER_NICE | first run s | steady median s | best s | worst s |" \
        "mean s | CV % |"
    echo "|---|---:|---:|---:|---:|---:|---:|---:|"
    for busy in 0 2; do
        pids=""
        i=0
        while [ $i -lt $busy ]; do
            nice -n 0 yes >/dev/null &
            pids="$pids $!"
            i=$((i + 1))
        done
        sleep 1
        for nv in 0 19; do
            log=$out/busy$busy-nice$nv.log
            export VEIL_WORKER_NICE=$nv # 0: the workers' nice value unchanged
            session "$log" - "$top/examples/lenet" --batch 1 --runs "$runs" &&
                stats "$log" | awk -v b="$busy busy loops" -v n="$nv" \
                    '{ printf "| %s | %s | %s | %s | %s | %s | %s | %s |\n", b, n, $1, $2, $3,
                              $4, $5, $6 }'
        done
        unset VEIL_WORKER_NICE
        for p in $pids; do kill "$p"; done
        wait 2>/dev/null
        echo "($(load))"
    done
fi

if echo "$sections" | grep -qw warm; then
    echo "## warm: party 1's first run with and without veil_party_prepare, $runs runs per" \
        "session ($(load))"
    echo "| model | prepare | prepare s | first run s | steady median s | best s | worst s |" \
        "mean s | CV % | first / median |"
    echo "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"
    while read -r label args; do
        echo " $pick " | grep -q " $label " || continue
        tag=$(echo "$label" | tr -c 'a-z0-9\n' '_')
        for how in yes no; do
            log=$out/warm-$tag-$how.log
            cold=""
            [ $how = no ] && cold=--cold
            # shellcheck disable=SC2086
            session "$log" - "$top/examples/"$args --runs "$runs" $cold || continue
            prep=$(sed -n 's/^\[p1\] prepare: \([0-9.]*\) s.*/\1/p' "$log")
            stats "$log" | awk -v l="$label" -v h="$how" -v p="${prep:--}" \
                '{ printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %.2f |\n", l, h, p, $1,
                          $2, $3, $4, $5, $6, ($2 > 0 ? $1 / $2 : 0) }'
        done
    done <<EOF
lenet_b1 lenet --batch 1
lenet_b16 lenet --batch 16
mlp64_infer mlp --batch 64
mlp64_sgd mlp train --batch 64
EOF
    echo "($(load))"
fi

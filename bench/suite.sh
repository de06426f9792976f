#!/bin/sh
# bench/suite.sh — the overlap benchmark suite: secure inference (or, with -t, secure training
# steps) of the model examples under emulated links and pipeline settings, each a real session
# of N parties and the dealer started by veil-run with tracing on, so every row has the run's
# online time, throughput, bytes, rounds, compute- and network-busy seconds, the stretch
# |W| / max(|C|, |N|) (1.0: the longer of computing and communicating fills the run; lower is
# better; older TSVs call this column "efficiency") and the overlap share |C n N| / max(|C|, |N|)
# (the share of the longer one's busy time the other overlapped; higher is better).
# A row's online time is the median over its session's runs after the first (the steady state:
# weight masks opened in run 0, the parameters shared before it by veil_party_prepare; the first
# run alone when there is one),
# its busy figures those of the last run.
#
# Training (-t): a row is a session of R secure SGD steps (`MODEL train`, batch B per step) and
# its online time the median of steps 1..R-1 by the same rule; images/s = B / that time. Only
# the examples with a `train` mode take part (all four models; an example without one is
# skipped, with the reason); every setting below trains except as noted. The dealer streams each
# step's material (-p is refused with -t: training has no offline phase ahead).
#
# Settings, from the blocking baseline to every pipeline on:
#   serialized  every node's messages and tasks done before the next node is submitted
#   la0         dataflow, inner-layer tiles, weight opens at need (look-ahead 0)
#   la1         + inter-linear: weight opens one layer ahead (MPC-Pipe's schedule)
#   all         no look-ahead bound (the default: priorities order everything)
#   mb2         all + inter-batch: 2 micro-batches (not for the transformer, in inference or
#               training: its rows are tokens, not samples, and veil_compile refuses to split
#               them)
#
# Material: by default a dealer process streams the correlated randomness during the runs (it
# computes every triple's correction, so on a small host it competes with the parties for the
# cores). With -p (offline ahead, as MPC-Pipe measures the online phase) each session's
# preprocessing files are written first (`MODEL preproc`, timed: the offline_s column) and the
# parties run from them with no dealer process.
#
# Usage: bench/suite.sh [-m "lenet vgg16 resnet transformer"] [-n "2 3"]
#                       [-l "loopback lan gbit wan"] [-s "serialized la0 la1 all mb2"]
#                       [-b BATCH] [-r RUNS] [-o OUTDIR] [-x "EXTRA EXAMPLE ARGS"] [-p | -t]
# Writes OUTDIR/suite.tsv (one row per session; its last column, mode, says infer or train),
# OUTDIR/suite.md (the table) and OUTDIR/ablation.svg (throughput per setting, one group per
# model, link, material and mode). Defaults: all models, N = 2, loopback and lan, every setting,
# batch 2, 3 runs (-t: steps), OUTDIR bench/results.
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=${VEIL_TOP_BUILDDIR:-$here/../build}
models="lenet vgg16 resnet transformer"
parties="2"
links="loopback lan"
settings="serialized la0 la1 all mb2"
batch=2
runs=3
out=$here/results
extra=""
ahead=0
mode=infer
while getopts m:n:l:s:b:r:o:x:pth opt; do
    case $opt in
    m) models=$OPTARG ;;
    n) parties=$OPTARG ;;
    l) links=$OPTARG ;;
    s) settings=$OPTARG ;;
    b) batch=$OPTARG ;;
    r) runs=$OPTARG ;;
    o) out=$OPTARG ;;
    x) extra=$OPTARG ;;
    p) ahead=1 ;;
    t) mode=train ;;
    h) sed -n '2,38p' "$0"; exit 0 ;;
    *) sed -n '32,35p' "$0" >&2; exit 2 ;;
    esac
done
if [ "$mode" = train ] && [ "$ahead" = 1 ]; then
    echo "suite: -t cannot take -p: training has no offline phase ahead (\`MODEL train\` takes no" \
        "--preproc; the dealer streams each step's material); drop -p" >&2
    exit 2
fi
[ -x "$top/tools/veil-run" ] || { echo "suite: build first (scripts/build.sh): no $top/tools/veil-run" >&2; exit 2; }
mkdir -p "$out" || exit 1
tsv=$out/suite.tsv
tmp=$(mktemp -d "${TMPDIR:-/tmp}/veil-suite-XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
# mode and overlap_share come last so that readers of the older 15-column TSVs still find every
# column where it was (the 12th, "efficiency" there, is the same figure as stretch)
printf 'model\tparties\tlink\tsetting\tbatch\tonline_s\timages_per_s\tbytes_sent\trounds\tcompute_s\tnetwork_s\tstretch\tagree\tmaterial\toffline_s\tmode\toverlap_share\n' >"$tsv"
session=5e55101d000000000000000000000000 # fixed: the preprocessing files are bound to it

link_spec() {
    case $1 in
    loopback) echo "" ;;
    lan) echo "0.1ms,10Gbit" ;;
    gbit) echo "0.1ms,1Gbit" ;;
    wan) echo "35ms,100Mbit" ;;
    *) echo "suite: unknown link '$1' (loopback lan gbit wan)" >&2; return 1 ;;
    esac
}
setting_args() {
    case $1 in
    serialized) echo "--serialized" ;;
    la0) echo "--lookahead 0" ;;
    la1) echo "--lookahead 1" ;;
    all) echo "" ;;
    mb2) echo "--microbatches 2" ;;
    *) echo "suite: unknown setting '$1' (serialized la0 la1 all mb2)" >&2; return 1 ;;
    esac
}
field() { # key line
    printf '%s\n' "$2" | tr ' ' '\n' | sed -n "s/^$1=//p" | head -n 1
}

# the median of party 1's runs (or steps) 1..R-1 from its lines "[p1] WHAT K: online T s"
median_online() { # what outfile
    sed -n "s/^\[p1\] $1 \([0-9]*\): online \([0-9.]*\) s.*/\1 \2/p" "$2" |
        awk '$1 > 0 { print $2 }' | sort -n |
        awk '{ v[NR] = $1 } END { if (NR) printf "%.3f", NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# what the summary lines call things in each mode: inference's party 1 (the data owner) checks
# the outputs, training's party 0 (the model owner) the trained parameters
if [ "$mode" = train ]; then
    sub=train each=step online_key=step_online_s checker=p0
else
    sub="" each=run online_key=online_s checker=p1
fi

status=0
for model in $models; do
    # only the examples that describe a `train` mode in their help can train; a missing example
    # is left to fail below like any other
    if [ "$mode" = train ] && [ -x "$top/examples/$model" ] &&
        ! "$top/examples/$model" --help 2>/dev/null | grep -q '^  train '; then
        echo "suite: $model: skipped: the example has no training mode (its --help lists no" \
            "train)" >&2
        continue
    fi
    for n in $parties; do
        for link in $links; do
            spec=$(link_spec "$link") || exit 2
            for setting in $settings; do
                args=$(setting_args "$setting") || exit 2
                if [ "$model" = transformer ] && [ "$setting" = mb2 ]; then
                    # inference: "mixes rows along axis 0"; training: the labels' rows are the
                    # tokens' ("every input's axis 0 must be the batch")
                    echo "suite: $model N=$n $link $setting: skipped: its rows are tokens, not" \
                        "samples, so veil_compile refuses to micro-batch it" >&2
                    continue
                fi
                linkopt=""
                [ -n "$spec" ] && linkopt="--link $spec"
                material=dealer offline="" procopt="--dealer" preopt=""
                if [ "$ahead" = 1 ]; then
                    # shellcheck disable=SC2086
                    pre=$(STARPU_SILENT=1 "$top/examples/$model" preproc --parties "$n" \
                        --session "$session" --preproc "$tmp/pre-%d" --batch "$batch" \
                        --runs "$runs" $args $extra 2>&1)
                    offline=$(field offline_s "$(printf '%s\n' "$pre" | grep '^model=' | tail -n 1)")
                    if [ -z "$offline" ]; then
                        echo "suite: $model N=$n $setting: the offline phase failed:" >&2
                        printf '%s\n' "$pre" | tail -n 5 >&2
                        status=1
                        continue
                    fi
                    material=files procopt="--session $session" preopt="--preproc $tmp/pre-%d"
                fi
                # shellcheck disable=SC2086 # word splitting of the option strings is wanted
                VEIL_TRACE="$tmp/trace-%d.json" STARPU_SILENT=1 \
                    "$top/tools/veil-run" -n "$n" $procopt $linkopt --timeout 1800 -- \
                    "$top/examples/$model" $sub --batch "$batch" --runs "$runs" $args $extra \
                    $preopt >"$tmp/out" 2>&1
                rc=$?
                rm -f "$tmp"/pre-*
                line=$(grep '^\[p1\] model=' "$tmp/out" | tail -n 1)
                check=$(grep "^\[$checker\] model=" "$tmp/out" | tail -n 1)
                if [ "$rc" -ne 0 ] || [ -z "$line" ]; then
                    echo "suite: $model N=$n $link $setting ($mode) failed (exit $rc):" >&2
                    tail -n 5 "$tmp/out" >&2
                    status=1
                    continue
                fi
                online=$(median_online "$each" "$tmp/out")
                [ -n "$online" ] || online=$(field "$online_key" "$line") # R = 1: that run
                ips=$(awk -v b="$batch" -v t="$online" 'BEGIN { printf "%.3f", (t > 0 ? b / t : 0) }')
                printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' \
                    "$model" "$n" "$link" "$setting" "$batch" "$online" "$ips" \
                    "$(field bytes_sent "$line")" "$(field rounds "$line")" \
                    "$(field compute_s "$line")" "$(field network_s "$line")" \
                    "$(field stretch "$line")" "$(field agree "$check")" "$material" \
                    "$offline" "$mode" "$(field overlap_share "$line")" >>"$tsv"
                echo "suite: $model N=$n $link $setting ($mode): online $online s, $ips images/s" >&2
            done
        done
    done
done

python3 "$here/../scripts/suite_report.py" "$tsv" --md "$out/suite.md" --svg "$out/ablation.svg" ||
    status=1
exit $status

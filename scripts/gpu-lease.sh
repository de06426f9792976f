#!/bin/sh
# gpu-lease.sh — on a lent GPU host: unpacks the trees scripts/gpu-prebuild.sh made (once per
# machine; they go back to the absolute WORKDIR they were built in) and runs scripts/gpu-check.sh
# with them reused, defaults set for one call of under 10 minutes on 16 cores: the check (tests 8
# at a time, cut at 270 s), LeNet-5 at batch 1, 100 and 1000, VGG16 at batch 1 and 16 and the
# transformer layer, each with and without CUDA workers and traced, and bench_gemm_cuda up to
# 4096, all by 550 s. With --resume (a second call on the same warm machine): only the tests that
# the first call's check did not finish, and PHASES if given. Every default can be overridden
# through the environment (gpu-check.sh's variables). OUT receives gpu-check-report.txt,
# gpu-check-logs.tar.gz, test-suite.log and traces.tar.xz (the traces and their drawings): four
# files, within what such a machine sends back.
#
#   scripts/gpu-lease.sh [--resume] BUNDLE PREBUILT OUT
set -u
RESUME=
if [ "${1:-}" = --resume ]; then RESUME=1; shift; fi
[ $# -eq 3 ] || { echo "usage: $0 [--resume] BUNDLE PREBUILT OUT" >&2; exit 2; }
HERE=$(cd "$(dirname "$0")/.." && pwd)
BUNDLE=$1 PRE=$2 OUT=$3
T0=$(date +%s)
# The trees' paths inside the tarball are WORKDIR's without the leading slash, prefix/ first.
first=$(tar -tJf "$PRE/trees.tar.xz" 2>/dev/null | head -n 1)
case $first in
*/prefix/* | */prefix) WORKDIR=/${first%/prefix*} ;;
*) echo "$0: $PRE/trees.tar.xz is not what scripts/gpu-prebuild.sh makes" >&2; exit 1 ;;
esac
if [ ! -f "$WORKDIR/.unpacked" ]; then
    tar -C / -xJf "$PRE/trees.tar.xz" && touch "$WORKDIR/.unpacked" || exit 1
    echo "unpacked into $WORKDIR in $(($(date +%s) - T0)) s"
fi
mkdir -p "$OUT"
stamp="$WORKDIR/.lease-start"
touch "$stamp"
export WORKDIR CUDA_ARCHS=${CUDA_ARCHS:-90} CHECK_JOBS=${CHECK_JOBS:-8}
if [ -n "$RESUME" ]; then
    export CHECK_RESUME=1 CHECK_TIMEOUT=${CHECK_TIMEOUT:-200} DEADLINE=${DEADLINE:-220} \
        PHASES=${PHASES:-build check}
else
    export CHECK_TIMEOUT=${CHECK_TIMEOUT:-270} DEADLINE=${DEADLINE:-550} \
        LENET_RUNS=${LENET_RUNS:-20:1 200:100 1000:1000} INFER_LIMIT=${INFER_LIMIT:-80} \
        GEMM_MAX=${GEMM_MAX:-4096} MODELS=${MODELS:-vgg16 vgg16:--batch,16 transformer} \
        PHASES=${PHASES:-build check lenet models bench}
fi
sh "$HERE/scripts/gpu-check.sh" "$BUNDLE" "$OUT"
rc=$?
# the check's summary, where this call ran one
[ -z "$(find "$WORKDIR/veil/test-suite.log" -newer "$stamp" 2>/dev/null)" ] ||
    cp "$WORKDIR/veil/test-suite.log" "$OUT/"
# this call's traces and drawings in one file (gpu-check.sh names them without spaces)
(cd "$WORKDIR" && find . -maxdepth 1 -name 'trace-*.json' -newer "$stamp") > "$WORKDIR/traces.list"
if [ -s "$WORKDIR/traces.list" ]; then
    (cd "$OUT" && ls ./*.svg 2>/dev/null) > "$WORKDIR/svgs.list"
    tar -cJf "$OUT/traces.tar.xz" -C "$WORKDIR" -T "$WORKDIR/traces.list" \
        -C "$OUT" -T "$WORKDIR/svgs.list" && rm -f "$OUT"/*.svg
fi
echo "gpu-lease: gpu-check.sh rc=$rc, $(($(date +%s) - T0)) s"
exit $rc

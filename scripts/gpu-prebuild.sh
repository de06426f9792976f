#!/bin/sh
# gpu-prebuild.sh — gets a short GPU lease ready on a Debian 12 machine that has apt and CUDA's nvcc
# but no GPU, so that the GPU host's minutes go to the GPU and not to compiling. Makes the bundle
# (scripts/gpu-bundle.sh) unless BUNDLE already holds one (then only Veil's tarball in it is made
# anew from this tree), then, with scripts/gpu-check.sh's own steps, in WORKDIR (default
# /tmp/veil-gpu: the GPU host must use the same absolute path): the
# dependency prefix, StarPU 1.3.10 with CUDA, Veil with its CUDA kernels for CUDA_ARCHS (default
# "90": the H100 and H200), the test programs (built, none run) and LeNet-5's weights trained on
# the bundle's 6000 images; packs those trees into DIR/trees.tar.xz (about 18 MB) for
# scripts/gpu-lease.sh to unpack there. The builds link with an RPATH to WORKDIR, and pick the CPU
# kernels at run time (no -march), so they run on any x86-64 host with glibc >= 2.34.
#
#   scripts/gpu-prebuild.sh [DIR]        (DIR default: gpu-prebuilt in the repository root)
#   environment: BUNDLE (default gpu-bundle in the repository root), BUILDDIR (gpu-bundle.sh's),
#                WORKDIR, CUDA_ARCHS, JOBS
set -eu
HERE=$(cd "$(dirname "$0")/.." && pwd)
DIR=${1:-$HERE/gpu-prebuilt}
BUNDLE=${BUNDLE:-$HERE/gpu-bundle}
WORKDIR=${WORKDIR:-/tmp/veil-gpu}
CUDA_ARCHS=${CUDA_ARCHS:-90}
case $WORKDIR in /*) ;; *) echo "$0: WORKDIR must be an absolute path (the trees keep it)" >&2; exit 2 ;; esac
export WORKDIR CUDA_ARCHS
if ! command -v nvcc >/dev/null 2>&1 && [ ! -x "${CUDA_DIR:-/usr/local/cuda}/bin/nvcc" ]; then
    echo "$0: no nvcc on PATH or in ${CUDA_DIR:-/usr/local/cuda}/bin: the trees would have no CUDA" >&2
    exit 1
fi
# A bundle made earlier keeps its Debian packages and StarPU source, but Veil's tarball is made
# anew from this tree, so that the trees hold the code here.
if [ -f "$BUNDLE/MANIFEST" ]; then sh "$HERE/scripts/gpu-bundle.sh" --veil-only "$BUNDLE"
else sh "$HERE/scripts/gpu-bundle.sh" "$BUNDLE"; fi
# Only what this script makes is removed: the trees of an earlier run, never WORKDIR itself.
rm -rf "$WORKDIR/prefix" "$WORKDIR/starpu" "$WORKDIR/veil" "$WORKDIR/src" "$WORKDIR/logs" \
    "$WORKDIR/lenet5-fmnist.safetensors"
mkdir -p "$WORKDIR/logs"
check="$HERE/scripts/gpu-check.sh"
PHASES=none sh "$check" "$BUNDLE" "$WORKDIR/prebuild-out" >/dev/null || {
    echo "$0: unpacking the bundle's prefix failed" >&2; exit 1; }
for s in starpu veil buildtests train; do
    t0=$(date +%s)
    if ! sh "$check" --step "$s" "$BUNDLE" "$WORKDIR/prebuild-out" > "$WORKDIR/logs/prebuild-$s.log" 2>&1; then
        tail -n 30 "$WORKDIR/logs/prebuild-$s.log" >&2
        echo "$0: step $s failed (log: $WORKDIR/logs/prebuild-$s.log)" >&2
        exit 1
    fi
    echo "== $s: $(($(date +%s) - t0)) s"
done
grep -q '^#define STARPU_USE_CUDA 1' "$WORKDIR"/starpu/include/starpu/1.3/starpu_config.h || {
    echo "$0: StarPU was built without CUDA" >&2; exit 1; }
grep -E '^  (CUDA kernels built|CUDA codelets used):' "$WORKDIR/logs/prebuild-veil.log" || true
# No test result may travel: make check takes a test with a log as already run.
find "$WORKDIR/veil" -name '*.trs' -delete
rm -f "$WORKDIR/veil/test-suite.log" "$WORKDIR"/veil/tests/*.log
mkdir -p "$DIR"
w=${WORKDIR#/}
tar -C / -cf - "$w/prefix" "$w/starpu" "$w/veil" "$w/lenet5-fmnist.safetensors" |
    xz -T0 -6 > "$DIR/trees.tar.xz"
size=$(($(du -sb "$DIR" | cut -f1) + $(du -sb "$BUNDLE" | cut -f1)))
echo "trees: $DIR/trees.tar.xz ($(du -b "$DIR/trees.tar.xz" | cut -f1) bytes; with the bundle $size)"
if [ "$size" -gt $((60 * 1024 * 1024)) ]; then
    echo "$0: the bundle and the trees are $size bytes: with the working tree that is over the" \
        "64 MiB a lent GPU machine receives" >&2
    exit 1
fi
echo "On the GPU host, with $BUNDLE and $DIR beside the working tree:" \
    "scripts/gpu-lease.sh $(basename "$BUNDLE") $(basename "$DIR") OUT"

#!/bin/sh
# The LeNet ONNX round trip (bench/README-onnx.md): `lenet_fmnist train --onnx` writes the trained
# model as ONNX beside its weights file; `veil-onnx strip` makes the public model; then the first
# N Fashion-MNIST test images are classified securely twice under veil-run with a dealer, by
# `lenet_fmnist infer` (the DSL's LeNet, the weights file) and by `veil-onnx run --secure --batch`
# (the ONNX file), each process in a directory of its own holding only its own files (party 0
# the weights / the full model, party 1 the images, the others the public model), and the two
# lists of classes are compared: exit 0 only when they agree on every image.
#
#   bench/onnx_lenet.sh [--images N] [--batch B] [--parties P] [--limit L] [--epochs E]
#       N test images (default 10000), batches of B (100), P parties (2) and the dealer; the
#       model trained on L training images (default all 60000) for E epochs (default 2).
# Run from the build directory (or set VEIL_TOP_BUILDDIR). Prints the wall time of each secure
# run and a last line of key=value pairs.
set -u
usage="usage: $0 [--images N] [--batch B] [--parties P] [--limit L] [--epochs E]"
images=10000 batch=100 parties=2 limit= epochs=2
while [ $# -gt 1 ]; do
    case "$1" in
    --images) images=$2 ;;
    --batch) batch=$2 ;;
    --parties) parties=$2 ;;
    --limit) limit="--limit $2" ;;
    --epochs) epochs=$2 ;;
    *) echo "$usage" >&2; exit 2 ;;
    esac
    shift 2
done
[ $# -eq 0 ] || { echo "$usage" >&2; exit 2; }
top=$(cd "${VEIL_TOP_BUILDDIR:-.}" && pwd) || exit 1
data=/usr/share/datasets/fashion-mnist
[ -f "$data/t10k-images-idx3-ubyte.gz" ] ||
    { echo "SKIP: $data missing (dataset-fashion-mnist)"; exit 77; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/veil-onnx-lenet-XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
now() { date +%s.%N; }

# train: the weights file and the same model as ONNX
# shellcheck disable=SC2086 # $limit is an option and its value, or nothing
"$top/examples/lenet_fmnist" train --epochs "$epochs" $limit --weights "$tmp/w.safetensors" \
    --onnx "$tmp/lenet.onnx" --quiet > "$tmp/train.log" 2>&1 ||
    { echo "FAIL: lenet_fmnist train --onnx"; cat "$tmp/train.log"; exit 1; }
"$top/tools/veil-onnx" strip "$tmp/lenet.onnx" -o "$tmp/lenet.public.onnx" ||
    { echo "FAIL: veil-onnx strip"; exit 1; }

# one directory per process: p0 the weights and the full model, p1 the images, the others (the
# dealer too) the public model; a process that read another's file would fail
i=0
while [ "$i" -le "$parties" ]; do
    mkdir -p "$tmp/p$i" && cp "$tmp/lenet.public.onnx" "$tmp/p$i/" || exit 1
    i=$((i + 1))
done
cp "$tmp/w.safetensors" "$tmp/p0/lenet5-fmnist.safetensors" || exit 1
cp "$tmp/lenet.onnx" "$tmp/p0/" || exit 1
"$top/bench/onnx_lenet_data" images "$data" "$images" "$tmp/p1/images.npy" || exit 1
printf '%s\n' 'cd "$(dirname "$0")/p$VEIL_PARTY_ID" || exit 1; exec "$@"' > "$tmp/in-own-dir.sh"

t0=$(now)
STARPU_SILENT=1 "$top/tools/veil-run" -n "$parties" --dealer -- sh "$tmp/in-own-dir.sh" \
    "$top/examples/lenet_fmnist" infer --images "$images" --batch "$batch" \
    --predictions "$tmp/pred.txt" --quiet > "$tmp/infer.log" 2>&1 ||
    { echo "FAIL: lenet_fmnist infer"; cat "$tmp/infer.log"; exit 1; }
t1=$(now)
STARPU_SILENT=1 "$top/tools/veil-run" -n "$parties" --dealer -- sh "$tmp/in-own-dir.sh" \
    "$top/tools/veil-onnx" run --secure lenet.onnx --public lenet.public.onnx --model-owner 0 \
    --data-owner 1 --batch "$batch" --count "$images" images.npy -o classes.npy -v \
    > "$tmp/onnx.log" 2>&1 || { echo "FAIL: veil-onnx run --secure"; cat "$tmp/onnx.log"; exit 1; }
t2=$(now)
grep '\[p[01]\] party [01]:' "$tmp/onnx.log"
grep '\[p1\] model=' "$tmp/infer.log"
cmp=$("$top/bench/onnx_lenet_data" compare "$tmp/pred.txt" "$tmp/p1/classes.npy" "$images")
rc=$?
echo "model=lenet5-fmnist-onnx parties=$parties $cmp batch=$batch" \
    "$(awk -v a="$t0" -v b="$t1" -v c="$t2" \
        'BEGIN { printf "infer_s=%.1f onnx_s=%.1f", b - a, c - b }')"
[ $rc -eq 0 ] || echo "FAIL: the two secure runs disagree"
exit $rc

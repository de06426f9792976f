#!/bin/sh
# Tests the LeNet ONNX round trip on a sample: lenet_fmnist train --onnx (640 training images, one
# epoch) writes the model as ONNX, and `veil-onnx run --secure --batch 50` on that file gives the
# same classes as `lenet_fmnist infer` with the same weights on the first 100 Fashion-MNIST test
# images, both secure with 2 parties and a dealer under veil-run, each process in a directory of
# its own: 100 % agreement (bench/onnx_lenet.sh, which runs the full 10,000 for
# bench/README-onnx.md). Bad input: a party that does not read the images and is not given
# --count is refused with a message naming the option. Plaintext --batch 2 gives the classes of
# --batch 1, and check --batch 2 shows the model sized for 2 images. About 30 s here.
set -u
top=$(cd "${VEIL_TOP_BUILDDIR:-.}" && pwd) || exit 1
src=$(cd "${VEIL_TOP_SRCDIR:-..}" && pwd) || exit 1
out=$(sh "$src/bench/onnx_lenet.sh" --images 100 --batch 50 --limit 640 --epochs 1 2>&1)
rc=$?
[ $rc -eq 77 ] && { printf '%s\n' "$out"; exit 77; }
fail=0
last=$(printf '%s\n' "$out" | tail -n 1)
case "$rc:$last" in
"0:model=lenet5-fmnist-onnx parties=2 images=100 agree=100 agreement=100.000 batch=50 "*) ;;
*) echo "FAIL: round trip: rc=$rc"; printf '%s\n' "$out"; fail=1 ;;
esac
# the model owner without --count (it does not read the images) is refused, naming --count
tmp=$(mktemp -d "${TMPDIR:-/tmp}/veil-onnx-lenet-XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
"$top/examples/lenet_fmnist" train --limit 64 --epochs 1 --weights "$tmp/w.safetensors" \
    --onnx "$tmp/lenet.onnx" --quiet > /dev/null 2>&1 &&
    "$top/bench/onnx_lenet_data" images /usr/share/datasets/fashion-mnist 3 "$tmp/img.npy" ||
    { echo "FAIL: train --onnx or the images"; exit 1; }
"$top/tools/veil-onnx" strip "$tmp/lenet.onnx" -o "$tmp/pub.onnx" || exit 1
bad=$(STARPU_SILENT=1 "$top/tools/veil-run" -n 2 --dealer -- "$top/tools/veil-onnx" run --secure \
    "$tmp/lenet.onnx" --public "$tmp/pub.onnx" --batch 2 "$tmp/img.npy" -o "$tmp/c.npy" 2>&1)
case "$?:$bad" in
0:*) echo "FAIL: a party without --count was not refused"; fail=1 ;;
*"--count M"*) ;;
*) echo "FAIL: no message naming --count"; printf '%s\n' "$bad"; fail=1 ;;
esac
# plaintext --batch: 3 images in batches of 2 (the last padded) give the 3 classes of batches of 1
v="$top/tools/veil-onnx"
"$v" run "$tmp/lenet.onnx" --batch 2 "$tmp/img.npy" -o "$tmp/b.npy" &&
    "$v" run "$tmp/lenet.onnx" --batch 1 "$tmp/img.npy" -o "$tmp/a.npy" &&
    cmp -s "$tmp/a.npy" "$tmp/b.npy" ||
    { echo "FAIL: plaintext --batch 2 and --batch 1 differ"; fail=1; }
# check --batch 2 sizes the model as run --batch 2 does
"$v" check "$tmp/lenet.onnx" --batch 2 > "$tmp/check.out" 2>&1 &&
    grep -q '^  input  image  *\[2,1,28,28\] ' "$tmp/check.out" &&
    grep -q '^  output class  *\[2\] ' "$tmp/check.out" ||
    { echo "FAIL: check --batch 2"; cat "$tmp/check.out"; fail=1; }
exit $fail

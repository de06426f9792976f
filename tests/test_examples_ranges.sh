#!/bin/sh
# Tests `lenet_fmnist check --check-ranges` (the range check before deploying, on the model
# owner's weights and sample images): a LeNet-5 trained on 64 images, checked on 20 test images in
# batches of 10, prints a row for every node (conv1's sum of products before its truncation among
# them, OK), a summary with no OVER and the key=value line, and exits 0; without --predictions
# or --check-ranges, check is refused naming both. Needs the Fashion-MNIST files (exit 77
# without them). A few seconds.
set -u
top=$(cd "${VEIL_TOP_BUILDDIR:-.}" && pwd) || exit 1
data=/usr/share/datasets/fashion-mnist
[ -f "$data/t10k-images-idx3-ubyte.gz" ] || { echo "SKIP: $data missing"; exit 77; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/veil-ranges-XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
ex="$top/examples/lenet_fmnist"
fail=0
"$ex" train --limit 64 --epochs 1 --weights "$tmp/w.safetensors" --quiet >"$tmp/train.log" 2>&1 ||
    { echo "FAIL: train"; cat "$tmp/train.log"; exit 1; }
"$ex" check --check-ranges --images 20 --batch 10 --weights "$tmp/w.safetensors" \
    >"$tmp/out" 2>&1
rc=$?
grep -q '^conv1  *conv2d  *accumulation .* OK$' "$tmp/out" &&
    grep -q '^fc3  *dense  *accumulation .* OK$' "$tmp/out" &&
    grep -q '^image  *input  *value .* OK$' "$tmp/out" &&
    grep -q '^range check of lenet5-fmnist: 2 runs' "$tmp/out" &&
    grep -q '^summary: [0-9]* OK, [0-9]* NEAR, 0 OVER, 0 UNREACHED' "$tmp/out" &&
    grep -q '^model=lenet5-fmnist mode=check-ranges images=20 over=0 ' "$tmp/out" ||
    { echo "FAIL: the table"; fail=1; }
[ "$rc" -eq 0 ] || { echo "FAIL: exit $rc"; fail=1; }
[ "$fail" -eq 0 ] || cat "$tmp/out"
# check with neither --predictions nor --check-ranges is refused, naming both
out=$("$ex" check --images 20 2>&1)
case "$?:$out" in
2:*--predictions*--check-ranges*) ;;
*) echo "FAIL: check without --predictions: $out"; fail=1 ;;
esac
exit $fail

#!/bin/sh
# Tests `lenet_fmnist check --check-ranges` (the range check before deploying, on the model
# owner's weights and sample images): a LeNet-5 trained on 64 images, checked on 20 test images in
# batches of 10, prints a row for every node (conv1's sum of products before its truncation among
# them, OK), a summary with no OVER and the key=value line, and exits 0; with conv1's weights
# scaled by 10^5 (beyond the feed range) that parameter is OVER and the exit status 4; without
# --predictions or --check-ranges, check is refused naming both. Needs the Fashion-MNIST files
# (exit 77 without them) and python3. A few seconds.
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
# the same weights with conv1's scaled by 10^5 (beyond the feed range +-32768, rewritten in the
# safetensors file's F64 data): conv1.weight OVER, exit status 4
python3 - "$tmp/w.safetensors" "$tmp/big.safetensors" <<'PY' || { echo "FAIL: rewriting"; exit 1; }
import json, struct, sys
raw = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
head = json.loads(raw[8:8 + n])
a, b = head["conv1.weight"]["data_offsets"]
assert head["conv1.weight"]["dtype"] == "F64"
base = 8 + n
vals = struct.unpack("<%dd" % ((b - a) // 8), raw[base + a:base + b])
data = struct.pack("<%dd" % len(vals), *[v * 1e5 for v in vals])
open(sys.argv[2], "wb").write(raw[:base + a] + data + raw[base + b:])
PY
"$ex" check --check-ranges --images 10 --batch 10 --weights "$tmp/big.safetensors" \
    >"$tmp/big.out" 2>&1
rc=$?
[ "$rc" -eq 4 ] && grep -q '^conv1.weight  *param  *value .* OVER$' "$tmp/big.out" &&
    grep -q '^model=lenet5-fmnist mode=check-ranges images=10 over=[1-9]' "$tmp/big.out" ||
    { echo "FAIL: conv1's weights scaled by 10^5: exit $rc"; cat "$tmp/big.out"; fail=1; }
# check with neither --predictions nor --check-ranges is refused, naming both
out=$("$ex" check --images 20 2>&1)
case "$?:$out" in
2:*--predictions*--check-ranges*) ;;
*) echo "FAIL: check without --predictions: $out"; fail=1 ;;
esac
exit $fail

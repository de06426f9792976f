#!/bin/sh
# Tests that every command the docs show is executed by a test. At test time it reads the fenced
# ```sh (or bash, shell) code blocks of README.md and docs/*.md under $VEIL_TOP_SRCDIR and takes
# each command from them (comment lines, trailing "# ..." comments and here-document bodies left
# out; lines ending in a backslash joined). The table below (cover) says for each command one of:
# run: this test runs it at a small size (the quick start with --limit / --images in a temporary
# directory, veil-keygen, the host list and veil-config of the multi-host walk-through), with the
# docs' build/ replaced by $VEIL_TOP_BUILDDIR; test: an existing test runs it (named, and it must
# be in tests/Makemodule.am's TESTS); build: configuring and building this tree, or `make check`
# itself, did it; not run: the reason (root, a GPU, a 15-minute StarPU build). A command the table
# does not know FAILS the test with its file and line, so the docs cannot grow an untested
# command: extend the table. Needs the Fashion-MNIST files for the quick start (without them that
# entry is reported as not run, not failed). About 30 s here.
set -u
top=$(cd "${VEIL_TOP_BUILDDIR:-.}" && pwd) || exit 1
src=$(cd "${VEIL_TOP_SRCDIR:-.}" && pwd) || exit 1
data=/usr/share/datasets/fashion-mnist
tmp=$(mktemp -d "${TMPDIR:-/tmp}/veil-readme-XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
fail=0
unknown=0

# FILE:LINE:COMMAND for every command of the sh code blocks, LINE the command's first line
for f in "$src/README.md" "$src"/docs/*.md; do
    [ -f "$f" ] || continue
    awk -v name="${f#"$src"/}" '
        /^[ \t]*```/ {
            if (!fence) { fence = 1; sh = $0 ~ /^[ \t]*```[ \t]*(sh|bash|shell)[ \t]*$/ }
            else { fence = 0; sh = 0 }
            cont = ""; heredoc = ""
            next
        }
        !sh { next }
        heredoc != "" { if ($0 ~ "^[ \t]*" heredoc "[ \t]*$") heredoc = ""; next }
        {
            line = $0
            if (cont == "") start = FNR
            sub(/^[ \t]+/, "", line)
            if (line ~ /^#/) next
            sub(/[ \t]+#.*$/, "", line)
            if (line ~ /\\$/) { sub(/\\$/, "", line); cont = cont line " "; next }
            line = cont line; cont = ""
            gsub(/[ \t]+/, " ", line); sub(/ $/, "", line)
            if (line == "") next
            print name ":" start ":" line
            if (match(line, /<<-?[ \t]*["\047]?[A-Za-z_][A-Za-z0-9_]*/)) {
                heredoc = substr(line, RSTART, RLENGTH)
                gsub(/<<-?[ \t]*|["\047]/, "", heredoc)
            }
        }' "$f"
done >"$tmp/commands"
n=$(wc -l <"$tmp/commands")
[ "$n" -gt 5 ] || { echo "FAIL: only $n commands found in $src/README.md and docs/*.md"; exit 1; }

# ---- what the runs do --------------------------------------------------------------------------

# The quick start at a small size, in a directory of its own: plaintext training on 640 images
# writes lenet5-fmnist.safetensors there, the secure inference of 20 test images (2 parties and
# the dealer under veil-run) writes preds.txt, and check must find them all agreeing.
quick_start() {
    if [ ! -f "$data/t10k-images-idx3-ubyte.gz" ]; then
        echo "  not run: $data missing (dataset-fashion-mnist)"
        return 0
    fi
    mkdir -p "$tmp/qs" && cd "$tmp/qs" || return 1
    ex="$top/examples/lenet_fmnist"
    "$ex" train --limit 640 --epochs 1 --batch 32 --quiet >train.log 2>&1 &&
        "$top/tools/veil-run" -n 2 --dealer -- "$ex" infer --images 20 --batch 20 \
            --predictions preds.txt --quiet >infer.log 2>&1 &&
        "$ex" check --predictions preds.txt --images 20 >check.log 2>&1
    rc=$?
    cd "$tmp" || return 1
    if [ "$rc" -ne 0 ] || ! grep -q 'agreement=100.000' "$tmp/qs/check.log"; then
        echo "  quick start failed (exit $rc):"
        tail -n 5 "$tmp/qs/train.log" "$tmp/qs/infer.log" "$tmp/qs/check.log"
        return 1
    fi
}

# the multi-host walk-through's preparation, in $tmp/walk: the documented command, build/ replaced
walk() { # command
    mkdir -p "$tmp/walk" && cd "$tmp/walk" || return 1
    cmd=$(printf '%s\n' "$1" | sed "s|build/|$top/|g")
    sh -c "$cmd" >>out.log 2>&1 </dev/null
    rc=$?
    cd "$tmp" || return 1
    [ "$rc" -eq 0 ] || { echo "  exit $rc:"; tail -n 5 "$tmp/walk/out.log"; }
    return "$rc"
}

# veil-keygen NAME: the documented command, in a directory of its own, must write NAME.key (mode
# 0600) and NAME.pub; they join $tmp/walk, with the pairs the walk-through's other hosts make the
# same way (p0, p1, dealer: whichever the docs' lines did not) for veil-config
keygen() { # line command
    name=${2##* }
    mkdir -p "$tmp/keygen-$1" "$tmp/walk" && cd "$tmp/keygen-$1" || return 1
    sh -c "$(printf '%s\n' "$2" | sed "s|build/|$top/|g")" >out.log 2>&1 </dev/null
    rc=$?
    cd "$tmp" || return 1
    [ "$rc" -eq 0 ] && [ -s "$tmp/keygen-$1/$name.pub" ] &&
        [ "$(stat -c %a "$tmp/keygen-$1/$name.key")" = 600 ] ||
        {
            echo "  exit $rc, or no $name.pub and $name.key (mode 0600):"
            cat "$tmp/keygen-$1/out.log"
            return 1
        }
    cp "$tmp/keygen-$1/$name.key" "$tmp/keygen-$1/$name.pub" "$tmp/walk/" || return 1
    for who in p0 p1 dealer; do
        [ -f "$tmp/walk/$who.pub" ] || walk "build/tools/veil-keygen $who" || return 1
    done
}

# cat > FILE <<'TAG': writes the here-document's body, read from the doc, into $tmp/walk/FILE
heredoc() { # file line command
    tag=$(printf '%s\n' "$3" |
        sed -n "s/.*<<-\{0,1\} *[\"']\{0,1\}\([A-Za-z_][A-Za-z0-9_]*\).*/\1/p")
    out=$(printf '%s\n' "$3" | sed -n 's/^cat > *\([^ <]*\) *<<.*/\1/p')
    [ -n "$tag" ] && [ -n "$out" ] || { echo "  cannot read this here-document"; return 1; }
    mkdir -p "$tmp/walk" || return 1
    awk -v from="$2" -v tag="$tag" 'FNR > from { if ($0 ~ "^[ \t]*" tag "[ \t]*$") exit; print }' \
        "$src/$1" >"$tmp/walk/$out"
    [ -s "$tmp/walk/$out" ] || { echo "  empty here-document"; return 1; }
}

# veil-config HOSTS -o DIR: one configuration per host of the list
vconfig() { # command
    walk "$1" || return 1
    for who in p0 p1 dealer; do
        grep -q "secret-key-file $who.key" "$tmp/walk/confs/$who.conf" 2>/dev/null ||
            { echo "  confs/$who.conf missing or without its key file"; return 1; }
    done
}

# a test the table names (a script, or a C test by its program name) must exist and be one of
# make check's TESTS in some Makemodule.am
named() { # test
    { [ -f "$src/$1" ] || [ -f "$src/$1.c" ]; } && cat "$src"/*/Makemodule.am |
        grep -q "^TESTS += $1\$" ||
        { echo "  the table names $1, which is not in any Makemodule.am's TESTS"; return 1; }
}

# ---- the table: every documented command and who executes it -----------------------------------

cover() { # file line command
    case "$3" in
    # README: quick start
    "scripts/install-deps.sh && scripts/build.sh && build/examples/lenet_fmnist train && build/tools/veil-run -n 2 --dealer -- build/examples/lenet_fmnist infer --predictions preds.txt && build/examples/lenet_fmnist check --predictions preds.txt")
        echo "run (small: train --limit 640, infer and check --images 20; install-deps.sh needs" \
            "root and the package mirror, build.sh built this tree)"
        quick_start ;;
    "scripts/check.sh")
        echo "build: make check itself (scripts/check.sh runs the build and make check)" ;;
    # README: building
    "./autogen.sh" | "mkdir build && cd build")
        echo "build: how this build tree was made (scripts/build.sh)"
        [ -f "$top/config.status" ] ;;
    "../configure [--with-cuda[=DIR]] [--enable-sanitizers] [--enable-fuzzers]")
        echo "build: configure made this build tree; --with-cuda needs a GPU, the sanitizer and" \
            "fuzzer builds are CI's"
        [ -f "$top/config.status" ] ;;
    "make && make check && make install")
        echo "build + test: make built this tree, make check runs this test, make install:" \
            "tests/test_install.sh"
        named tests/test_install.sh ;;
    # README: secure training
    "build/tools/veil-run -n 2 --dealer -- build/examples/lenet_fmnist train --secure --limit 6400 --loss-every 20")
        echo "test: tests/test_examples_lenet.sh (train --secure --limit 64 --loss-every 1)"
        named tests/test_examples_lenet.sh ;;
    # README: parties on several hosts (the sessions: tests/test_examples_lenet.sh's walk-through)
    "build/tools/veil-keygen "[a-z]*)
        echo "run (in a temporary directory)"
        keygen "$2" "$3" ;;
    "cat > hosts.txt <<'HOSTS'")
        echo "run (the host list, from the doc)"
        heredoc "$1" "$2" "$3" ;;
    "build/tools/veil-config hosts.txt -o confs")
        echo "run (with the keys and host list above)"
        vconfig "$3" ;;
    "build/examples/lenet_fmnist infer --config p0.conf" | \
        "build/examples/lenet_fmnist infer --config p1.conf --predictions preds.txt" | \
        "build/examples/lenet_fmnist infer --config dealer.conf")
        echo "test: tests/test_examples_lenet.sh (the walk-through on 127.0.0.1, --images 40)"
        named tests/test_examples_lenet.sh ;;
    # README: bring your own model (ONNX)
    "python3 -c 'import torch; m = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU()); torch.onnx.export(m, torch.zeros(2, 3), \"fc.onnx\", opset_version=13, input_names=[\"x\"], output_names=[\"y\"])'")
        echo "not run: needs PyTorch, which the build machine lacks (tests/test_onnx_secure" \
            "writes the same Gemm + Relu model itself)" ;;
    "build/examples/lenet_fmnist train --onnx lenet.onnx")
        echo "test: tests/test_onnx_lenet.sh (train --onnx, then the secure round trip)"
        named tests/test_onnx_lenet.sh ;;
    "veil-onnx strip fc.onnx -o fc.public.onnx" | \
        "veil-run -n 2 --dealer -- veil-onnx run --secure fc.onnx --public fc.public.onnx --model-owner 0 --data-owner 1 x.npy -o y.npy")
        echo "test: tests/test_onnx_secure (strip, then run --secure with the stripped model)"
        named tests/test_onnx_secure ;;
    "veil-onnx check fc.onnx")
        echo "test: tests/test_onnx_secure (its output equals the README's, line for line)"
        named tests/test_onnx_secure ;;
    "veil-onnx run fc.onnx --fixed x.npy -o y.npy")
        echo "test: tests/test_onnx_conformance (every model through veil-onnx run --fixed)"
        named tests/test_onnx_conformance ;;
    # README: before deploying, the range check
    "build/examples/lenet_fmnist check --check-ranges --images 1000")
        echo "test: tests/test_examples_ranges.sh (a LeNet-5 trained on 64 images, --images 20)"
        named tests/test_examples_ranges.sh ;;
    "veil-onnx check-ranges fc.onnx x.npy")
        echo "test: tests/test_onnx_ranges (a Gemm + Relu model written there, inputs that" \
            "overflow and inputs that do not, --batch)"
        named tests/test_onnx_ranges ;;
    # docs/faults.md
    "make -C build check-faults" | \
        "python3 tests/faults/campaign.py --build build --runs 20 --seed 1 --only kill,stop")
        echo "test: tests/test_faults_sample.sh (a random sample of the campaign)"
        named tests/test_faults_sample.sh ;;
    # README.md and docs/gpu.md: the offline GPU host
    "scripts/gpu-bundle.sh")
        echo "not run: downloads Debian packages and StarPU's source (docs/gpu.md says how it was" \
            "proven: a fresh Debian chroot without network ran the check from the bundle alone)" ;;
    "scripts/gpu-check.sh gpu-bundle /tmp/gpu-out")
        echo "not run: needs the bundle and builds StarPU and Veil (about 40 minutes on 2 cores)" ;;
    "scripts/gpu-prebuild.sh")
        echo "not run: downloads the bundle's packages and builds StarPU and Veil with nvcc (about 4" \
            "minutes on 2 cores; docs/gpu.md gives the run that proved it)" ;;
    "scripts/gpu-lease.sh gpu-bundle gpu-prebuilt /tmp/gpu-out" | \
        "scripts/gpu-lease.sh --resume gpu-bundle gpu-prebuilt /tmp/gpu-out")
        echo "not run: needs the trees of gpu-prebuild.sh, and is meant for a GPU host" ;;
    # docs/gpu.md
    "sudo scripts/build-starpu-cuda.sh /opt/starpu-cuda")
        echo "not run: needs root, the network and a CUDA toolkit, and builds StarPU for 15 minutes" ;;
    "PKG_CONFIG_PATH=/opt/starpu-cuda/lib/pkgconfig ./configure" | \
        "PKG_CONFIG_PATH=/opt/starpu-cuda/lib/pkgconfig ./configure | grep -A3 StarPU")
        echo "not run: needs the CUDA StarPU of build-starpu-cuda.sh (a GPU host)" ;;
    "/opt/starpu-cuda/bin/starpu_machine_display")
        echo "not run: needs the CUDA StarPU of build-starpu-cuda.sh and a GPU" ;;
    *)
        echo "UNKNOWN: no entry in tests/test_readme_commands.sh's table (cover): add one that" \
            "runs it at a small size or names the test that does"
        unknown=1
        return 1 ;;
    esac
}

cd "$tmp" || exit 1
while IFS= read -r rec; do
    file=${rec%%:*}
    rest=${rec#*:}
    line=${rest%%:*}
    cmd=${rest#*:}
    echo "$file:$line: $cmd"
    unknown=0
    cover "$file" "$line" "$cmd" </dev/null
    rc=$?
    cd "$tmp" || exit 1
    if [ "$unknown" = 1 ]; then
        echo "FAIL: $file:$line: command not covered by any test: $cmd"
        fail=1
    elif [ "$rc" -ne 0 ]; then
        echo "FAIL: $file:$line: $cmd"
        fail=1
    fi
done <"$tmp/commands"
echo "$n commands checked"
exit $fail

#!/bin/sh
# gpu-bundle.sh — gathers into one folder (default gpu-bundle/, ignored by git) everything a bare,
# offline GPU host needs to build and test Veil with scripts/gpu-check.sh: StarPU 1.3.10's source
# from Debian's source package with Veil's CUDA 13 patches already applied, Veil itself as a
# `make dist` tarball (configure generated: no autotools there), the build and runtime
# dependencies such a host may lack (hwloc, ZeroMQ with libsodium and its libraries, OpenSSL,
# zlib, protobuf-c and protoc-c, ONNX's onnx.proto, pkgconf, make) as Debian 12 .debs unpacked
# with dpkg-deb -x into a prefix (never into /) and packed as deps.tar.xz, and a Fashion-MNIST
# sample for the LeNet runs. Runs on Debian 12 with apt, as any user: it uses a private apt state
# (its own sources list with deb-src, lists and cache in $TMPDIR/veil-gpu-bundle-apt), so the
# system's apt configuration is neither needed nor changed. The whole folder must stay under
# 64 MiB (the most a lent GPU machine receives); the script fails if it does not.
#
#   scripts/gpu-bundle.sh [DIR]          (DIR default: gpu-bundle in the repository root)
#   scripts/gpu-bundle.sh --veil-only [DIR]   in a bundle made earlier, only Veil's tarball made
#                                             anew from this tree (no download; MANIFEST says so)
#   environment: MIRROR (default: the first URIs of /etc/apt/sources.list.d/debian.sources,
#                else http://deb.debian.org/debian; MIRROR-security serves bookworm-security),
#                BUILDDIR (a configured Veil build for make dist; default build/, configured by
#                scripts/build.sh when missing)
set -eu
HERE=$(cd "$(dirname "$0")/.." && pwd)
VEIL_ONLY=
if [ "${1:-}" = --veil-only ]; then VEIL_ONLY=1; shift; fi
OUTDIR=${1:-$HERE/gpu-bundle}
case $OUTDIR in /*) ;; *) OUTDIR=$(pwd)/$OUTDIR ;; esac
BUILDDIR=${BUILDDIR:-$HERE/build}

# Veil's `make dist` tarball of this tree into OUTDIR, replacing any older one
veil_tarball() {
    echo "== Veil (make dist)"
    [ -f "$BUILDDIR/Makefile" ] || "$HERE/scripts/build.sh"
    make -s -C "$BUILDDIR" dist >/dev/null
    rm -f "$OUTDIR"/veil-*.tar.gz
    mv "$BUILDDIR"/veil-*.tar.gz "$OUTDIR/"
}
if [ -n "$VEIL_ONLY" ]; then
    [ -f "$OUTDIR/MANIFEST" ] || { echo "$0: $OUTDIR holds no bundle (no MANIFEST)" >&2; exit 1; }
    veil_tarball
    echo "veil tarball remade $(date -u +%Y-%m-%dT%H:%MZ): $(cd "$OUTDIR" && ls veil-*.tar.gz)" \
        >> "$OUTDIR/MANIFEST"
    exit 0
fi
STARPU_VER=1.3.10+dfsg-2
LIMIT=$((64 * 1024 * 1024))

# The libraries and headers Veil and StarPU build against, and what they load at run time. A
# host's own copies are not relied on: the check puts this prefix first on every search path.
DEBS="libhwloc15 libhwloc-dev libnuma1 libnuma-dev libltdl7 libltdl-dev libudev1
libzmq5 libzmq3-dev libsodium23 libsodium-dev libpgm-5.3-0 libnorm1 libbsd0 libmd0
libgssapi-krb5-2 libkrb5-3 libk5crypto3 libkrb5support0 libcom-err2 libkeyutils1
libssl3 libssl-dev zlib1g zlib1g-dev
protobuf-c-compiler libprotoc32 libprotobuf32 libprotobuf-c1 libprotobuf-c-dev libonnx-dev
pkgconf pkgconf-bin libpkgconf3 make"

if [ -z "${MIRROR:-}" ]; then
    MIRROR=$(sed -n 's/^URIs: *\([^ ]*debian\)$/\1/p' /etc/apt/sources.list.d/debian.sources \
        2>/dev/null | head -n 1)
    MIRROR=${MIRROR:-http://deb.debian.org/debian}
fi

mkdir -p "$OUTDIR"
APTD=${TMPDIR:-/tmp}/veil-gpu-bundle-apt
WORK="$OUTDIR/.work"
rm -rf "$WORK" "$OUTDIR/deps.tar.xz" "$OUTDIR"/starpu-*.tar.xz "$OUTDIR"/veil-*.tar.gz \
    "$OUTDIR/fashion-mnist"
mkdir -p "$APTD/lists/partial" "$APTD/cache/archives/partial" "$WORK/debs" "$WORK/src"
KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg
cat > "$APTD/sources.list" <<EOF
deb [signed-by=$KEYRING] $MIRROR bookworm main
deb [signed-by=$KEYRING] $MIRROR bookworm-updates main
deb [signed-by=$KEYRING] $MIRROR-security bookworm-security main
deb-src [signed-by=$KEYRING] $MIRROR bookworm main
EOF
APT="apt-get -q -o Dir::Etc::SourceList=$APTD/sources.list -o Dir::Etc::SourceParts=/dev/null
 -o Dir::State::Lists=$APTD/lists -o Dir::Cache=$APTD/cache -o APT::Architecture=amd64
 -o APT::Architectures=amd64 -o Debug::NoLocking=1 -o APT::Sandbox::User=root"
echo "== apt lists ($MIRROR)"
$APT update >/dev/null

echo "== StarPU $STARPU_VER source, patched"
(cd "$WORK/src" && $APT source --download-only "starpu=$STARPU_VER" >/dev/null &&
    dpkg-source --no-check -x starpu_*.dsc starpu-1.3.10 >/dev/null)
for p in "$HERE"/patches/starpu-1.3.10-*.patch; do
    (cd "$WORK/src/starpu-1.3.10" && patch -s -p1 < "$p")
done
# The debian/ folder and the documentation sources are not needed to build the library.
(cd "$WORK/src/starpu-1.3.10" && rm -rf debian doc/doxygen/chapters/images .pc &&
    touch .veil-patched)
tar -C "$WORK/src" -cJf "$OUTDIR/starpu-1.3.10-veil.tar.xz" starpu-1.3.10

echo "== dependencies"
# shellcheck disable=SC2086
(cd "$WORK/debs" && $APT download $DEBS >/dev/null)
mkdir -p "$WORK/prefix"
for d in "$WORK"/debs/*.deb; do dpkg-deb -x "$d" "$WORK/prefix"; done
ls "$WORK"/debs | sed 's/_amd64.deb$//; s/_all.deb$//' > "$WORK/prefix/DEBS"
# Manuals, documentation and static archives are not needed to build shared libraries.
(cd "$WORK/prefix" && rm -rf usr/share/doc usr/share/man usr/share/info usr/share/lintian \
    usr/share/locale usr/share/bug etc lib/systemd usr/lib/x86_64-linux-gnu/*.a)
# The newest glibc symbol version any of these binaries asks for: the host's glibc must be as new.
find "$WORK/prefix" -type f \( -name '*.so*' -o -perm -u+x \) -exec objdump -T {} + 2>/dev/null |
    sed -n 's/.*GLIBC_\([0-9.]*\).*/\1/p' | sort -u -V | tail -n 1 > "$WORK/prefix/GLIBC_NEEDED"
tar -C "$WORK" -cJf "$OUTDIR/deps.tar.xz" prefix

veil_tarball

echo "== Fashion-MNIST sample"
# The test set whole, and the first 6000 training images (a valid IDX file with its count
# rewritten), enough for the LeNet runs; Debian's dataset-fashion-mnist is 30 MB.
FM=/usr/share/datasets/fashion-mnist
if [ ! -f "$FM/train-images-idx3-ubyte.gz" ]; then
    (cd "$WORK" && $APT download dataset-fashion-mnist >/dev/null &&
        dpkg-deb -x dataset-fashion-mnist_*.deb fm)
    FM="$WORK/fm/usr/share/datasets/fashion-mnist"
fi
mkdir -p "$OUTDIR/fashion-mnist"
cp "$FM"/t10k-*.gz "$OUTDIR/fashion-mnist/"
python3 - "$FM" "$OUTDIR/fashion-mnist" 6000 <<'EOF'
import gzip, struct, sys
src, dst, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
for name, hdr, item in (("train-images-idx3-ubyte.gz", 16, 784),
                        ("train-labels-idx1-ubyte.gz", 8, 1)):
    with gzip.open(f"{src}/{name}") as f:
        head = bytearray(f.read(hdr))
        body = f.read(n * item)
    struct.pack_into(">I", head, 4, n)
    with gzip.GzipFile(f"{dst}/{name}", "wb", mtime=0) as g:
        g.write(bytes(head) + body)
EOF

rm -rf "$WORK"
size=$(du -sb "$OUTDIR" | cut -f1)
{
    os=$(. /etc/os-release && echo "$PRETTY_NAME")
    echo "veil gpu bundle, made $(date -u +%Y-%m-%dT%H:%MZ) on $os"
    echo "mirror: $MIRROR"
    echo "starpu: $STARPU_VER with $(cd "$HERE/patches" && ls starpu-1.3.10-*.patch | tr '\n' ' ')"
    echo "size: $size bytes (limit $LIMIT)"
    (cd "$OUTDIR" && ls -l --time-style=+ ./*.tar.* fashion-mnist/* | awk '{print $5, $6}')
} > "$OUTDIR/MANIFEST"
cat "$OUTDIR/MANIFEST"
if [ "$size" -gt "$LIMIT" ]; then
    echo "$0: the bundle is $size bytes, over the 64 MiB a GPU machine receives" >&2
    exit 1
fi
echo "Bundle ready in $OUTDIR: on the GPU host run scripts/gpu-check.sh $OUTDIR OUTPUT_DIR"

#!/bin/sh
# build-starpu-cuda.sh — builds Debian's StarPU 1.3.10 source package with CUDA workers into
# PREFIX, for GPU hosts (Debian's libstarpu-dev has no CUDA). Needs root for apt (deb-src entry,
# build dependencies); the build itself runs as the calling user in WORKDIR.
#
#   scripts/build-starpu-cuda.sh PREFIX [CUDA_DIR]     (CUDA_DIR defaults to /usr/local/cuda)
#   environment: WORKDIR (default /tmp/veil-starpu-cuda), JOBS (default: nproc),
#                MAXCPUS (most CPU workers the library supports, default 128),
#                NO_APT=1 to skip every apt step (source already unpacked in WORKDIR).
#
# Then configure Veil with PKG_CONFIG_PATH=PREFIX/lib/pkgconfig (its summary says
# "CUDA workers: yes"). StarPU 1.3.10 needs two fixes for CUDA >= 13, in
# patches/starpu-1.3.10-cuda13.patch: cudaDeviceProp.computeMode is gone, and the legacy
# cublas.h API (cublasInit/cublasSetKernelStream/cublasShutdown) is gone.
set -eu

usage() { echo "usage: $0 PREFIX [CUDA_DIR]" >&2; exit 2; }
[ $# -ge 1 ] && [ $# -le 2 ] || usage
PREFIX=$1
CUDA_DIR=${2:-/usr/local/cuda}
WORKDIR=${WORKDIR:-/tmp/veil-starpu-cuda}
JOBS=${JOBS:-$(nproc)}
# StarPU's default is the build machine's core count rounded up to a power of two, compiled in:
# a library built on a 2-core machine would give a 64-core GPU host 2 CPU workers.
MAXCPUS=${MAXCPUS:-128}
HERE=$(cd "$(dirname "$0")/.." && pwd)
PATCH="$HERE/patches/starpu-1.3.10-cuda13.patch"

[ -x "$CUDA_DIR/bin/nvcc" ] || { echo "$0: $CUDA_DIR/bin/nvcc not found" >&2; exit 1; }
[ -f "$PATCH" ] || { echo "$0: $PATCH not found" >&2; exit 1; }
case $PREFIX in /*) ;; *) PREFIX=$(pwd)/$PREFIX ;; esac

if [ -z "${NO_APT:-}" ]; then
    SUDO=
    [ "$(id -u)" -eq 0 ] || SUDO=sudo
    # Source entries next to Debian 12's deb822 debian.sources (which lists only "Types: deb").
    if ! grep -qs '^Types:.*deb-src' /etc/apt/sources.list.d/*.sources \
        && ! grep -qs '^deb-src' /etc/apt/sources.list /etc/apt/sources.list.d/*.list; then
        $SUDO sh -c 'cat > /etc/apt/sources.list.d/veil-deb-src.sources' <<'SRC'
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
    fi
    $SUDO apt-get update -qq
    # Only what the configure line below needs (not the full build-dep: no MPI, docs, Fortran).
    $SUDO apt-get install -y -qq --no-install-recommends build-essential dpkg-dev pkg-config \
        libhwloc-dev libnuma-dev patch
    mkdir -p "$WORKDIR"
    (cd "$WORKDIR" && rm -rf starpu-1.3.10+dfsg && apt-get source -qq starpu=1.3.10+dfsg-2)
fi

SRC="$WORKDIR/starpu-1.3.10+dfsg"
[ -d "$SRC" ] || { echo "$0: $SRC not found (run without NO_APT)" >&2; exit 1; }
cd "$SRC"
if [ ! -f .veil-cuda13-patched ]; then
    patch -p1 < "$PATCH"
    touch .veil-cuda13-patched
fi

mkdir -p build-cuda
cd build-cuda
# -fPIC: StarPU's own .cu files end up in the shared library. No FFT (cuFFT error codes CUDA 13
# removed), no MPI, OpenCL, OpenMP runtime, Fortran, examples, tests or documentation.
NVCCFLAGS="-Xcompiler -fPIC" \
../configure --prefix="$PREFIX" \
    --enable-cuda --with-cuda-dir="$CUDA_DIR" --disable-starpufft --enable-maxcpus="$MAXCPUS" \
    --disable-mpi --disable-opencl --disable-socl --disable-openmp --disable-fortran \
    --disable-build-examples --disable-build-tests --disable-build-doc --disable-glpk \
    --disable-static --enable-quick-check
grep -q '^#define STARPU_USE_CUDA 1' include/starpu_config.h \
    || { echo "$0: StarPU configured without CUDA (see build-cuda/config.log)" >&2; exit 1; }
make -j"$JOBS"
make install
echo "StarPU with CUDA installed in $PREFIX."
echo "Configure Veil with: PKG_CONFIG_PATH=$PREFIX/lib/pkgconfig .../configure"

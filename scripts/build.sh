#!/bin/sh
# Builds Veil in build/ (configure options may be passed as arguments; they apply when build/
# is configured for the first time or when arguments are given).
set -eu
cd "$(dirname "$0")/.."
[ -x configure ] || ./autogen.sh
mkdir -p build
cd build
if [ ! -f Makefile ] || [ "$#" -gt 0 ]; then ../configure "$@"; fi
make -j"$(nproc)"

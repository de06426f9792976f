#!/bin/sh
# The README's test command: configure (once) in build/ and run `make check` there.
set -eu
cd "$(dirname "$0")/.."
[ -x configure ] || ./autogen.sh
mkdir -p build
cd build
[ -f Makefile ] || ../configure
make -j"$(nproc)"
make -j"$(nproc)" check

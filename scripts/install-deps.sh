#!/bin/sh
# Installs every Debian 12 package Veil's build, tests, examples and benchmarks need.
# Run as root (or with sudo available). Safe to run again.
set -eu
PKGS="build-essential autoconf automake libtool pkg-config
      libstarpu-dev libhwloc-dev hwloc libzmq3-dev libssl-dev zlib1g-dev
      libopenblas-dev clang libclang-rt-14-dev libpciaccess-dev
      dataset-fashion-mnist gnuplot-nox python3
      libonnx-dev protobuf-c-compiler libprotobuf-c-dev libonnx-testdata"
SUDO=
if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
# shellcheck disable=SC2086
$SUDO apt-get install -y -q --no-install-recommends $PKGS

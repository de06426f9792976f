#!/bin/sh
# Regenerates the autotools build system (configure, Makefile.in) from configure.ac and Makefile.am.
set -e
cd "$(dirname "$0")"
autoreconf --install --force --warnings=all

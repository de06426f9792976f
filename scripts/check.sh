#!/bin/sh
# The README's test command: build in build/ (configuring it if needed) and run `make check`.
# On failure the logs of the failing tests are printed.
set -eu
cd "$(dirname "$0")/.."
scripts/build.sh
cd build
if ! make -j"$(nproc)" check; then
    for log in $(grep -l -E '^:test-result: (FAIL|ERROR)' tests/*.trs 2>/dev/null | sed 's/\.trs$/.log/'); do
        echo "==== $log"; tail -n 60 "$log"
    done
    exit 1
fi

#!/bin/sh
# A small random sample of the fault campaign (tests/faults/campaign.py; the whole campaign is
# `make check-faults`): one kill -9 or SIGSTOP of a random process at a random moment and one
# proxied stream that is cut, flipped, replayed, injected into or truncated, each with 2 or 3
# parties and the dealer; every run must end clean (see campaign.py), with 2 s of slack beyond the
# README's timeout + 1 s because make check runs other tests beside it (the campaign proper,
# make check-faults, allows none). The seed is printed so that a failure can be rerun. About 40 s
# here.
top=$(cd "${VEIL_TOP_BUILDDIR:-.}" && pwd) || exit 1
src=$(cd "$(dirname "$0")/.." && pwd)
seed=${VEIL_FAULT_SEED:-$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')}
signal=$( [ $((seed % 2)) -eq 0 ] && echo kill || echo stop )
exec python3 "$src/tests/faults/campaign.py" --build "$top" --runs 1 --only "$signal,proxy" \
    --seed "$seed" --slack 2

#!/bin/sh
# installcheck.sh — builds tests/installcheck_consumer.c against an installed Veil the way a user
# would, from the installed veil.pc only (pkg-config --cflags --libs veil), once against the
# shared library and once against the static libveil.a, runs both and checks their output.
# Run by `make installcheck` (and so by `make distcheck`).
# usage: installcheck.sh SRCDIR PKGCONFIGDIR LIBDIR   environment: CC, CFLAGS, LDFLAGS
set -u
src=${1:?usage: installcheck.sh SRCDIR PKGCONFIGDIR LIBDIR}
pcdir=${2:?usage: installcheck.sh SRCDIR PKGCONFIGDIR LIBDIR}
libdir=${3:?usage: installcheck.sh SRCDIR PKGCONFIGDIR LIBDIR}
CC=${CC:-cc}
T=$(mktemp -d "${TMPDIR:-/tmp}/veil-installcheck-XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT
fail=0

PKG_CONFIG_PATH="$pcdir${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
export PKG_CONFIG_PATH
if ! pkg-config --exists veil; then
    echo "installcheck: pkg-config finds no veil.pc in $pcdir" >&2
    exit 1
fi
version=$(pkg-config --modversion veil)
cflags=$(pkg-config --cflags veil) || exit 1
libs=$(pkg-config --libs veil) || exit 1
echo "installcheck: veil $version; cflags: $cflags; libs: $libs"

# Shared: only what veil.pc says; the public headers must be clean ISO C11 under strict warnings.
strict="-std=c11 -Wall -Wextra -Wpedantic -Werror"
# shellcheck disable=SC2086
if ! $CC $strict ${CFLAGS:-} $cflags "$src/tests/installcheck_consumer.c" -o "$T/shared" \
    ${LDFLAGS:-} $libs -lm >"$T/shared.log" 2>&1; then
    echo "installcheck: building against the shared library failed:" >&2
    cat "$T/shared.log" >&2
    fail=1
elif ! out=$(LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$T/shared"); then
    echo "installcheck: the shared-library program failed: $out" >&2
    fail=1
else
    echo "installcheck: shared: $out"
fi

# Static libveil.a, its dependencies shared (Debian's libzmq.pc has no usable --static list).
deps=$(pkg-config --libs starpu-1.3 hwloc libzmq libcrypto zlib) || exit 1
# shellcheck disable=SC2086
if [ ! -f "$libdir/libveil.a" ]; then
    echo "installcheck: $libdir/libveil.a is not installed" >&2
    fail=1
elif ! $CC ${CFLAGS:-} $cflags "$src/tests/installcheck_consumer.c" -o "$T/static" \
    ${LDFLAGS:-} "$libdir/libveil.a" $deps -lm -lpthread >"$T/static.log" 2>&1; then
    echo "installcheck: building against libveil.a failed:" >&2
    cat "$T/static.log" >&2
    fail=1
elif ! out=$("$T/static"); then
    echo "installcheck: the static program failed: $out" >&2
    fail=1
else
    echo "installcheck: static: $out"
fi
exit $fail

#!/bin/sh
# Tests what libveil links for CUDA (codelets/Makemodule.am, docs/gpu.md): built for a CUDA StarPU
# (VEIL_USE_CUDA in config.h) its dynamic section needs libcudart and libcublas (the kernels are
# in it); otherwise it needs no CUDA library at all, so that no process of a machine that has the
# toolkit but no CUDA StarPU (Debian, CI) loads libcublas at its start; with the toolkit found
# (VEIL_HAVE_CUDA_TOOLKIT) but no CUDA StarPU, the kernels were still compiled, into
# libveilcuda.la, and bench_gemm_cuda, which calls them, was linked. Skips (77) without readelf.
set -u
B=${VEIL_TOP_BUILDDIR:-.}
command -v readelf >/dev/null 2>&1 || { echo "SKIP: no readelf"; exit 77; }
lib=$B/.libs/libveil.so
[ -f "$lib" ] || { echo "SKIP: no shared libveil ($lib)"; exit 77; }
fail=0
bad() { echo "FAIL: $*" >&2; fail=1; }
needed=$(readelf -d "$lib" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
[ -n "$needed" ] || bad "readelf found no NEEDED entry in $lib"
has() { echo "$needed" | grep -q "^$1"; }
if grep -q '^#define VEIL_USE_CUDA 1' "$B/config.h"; then
    has libcudart || bad "built for a CUDA StarPU, but libveil does not need libcudart"
    has libcublas || bad "built for a CUDA StarPU, but libveil does not need libcublas"
else
    for l in libcudart libcublas libcublasLt 'libcuda\.so'; do
        if has "$l"; then bad "no CUDA StarPU, yet libveil needs $l: $(echo $needed)"; fi
    done
    if grep -q '^#define VEIL_HAVE_CUDA_TOOLKIT 1' "$B/config.h"; then
        [ -f "$B/.libs/libveilcuda.a" ] ||
            bad "the toolkit was found but libveilcuda.la was not built"
        [ -x "$B/bench/bench_gemm_cuda" ] ||
            bad "the toolkit was found but bench_gemm_cuda was not built"
    fi
fi
[ "$fail" = 0 ] && echo "PASS: libveil needs: $(echo $needed)"
exit "$fail"

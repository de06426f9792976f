#!/bin/sh
# gpu-check.sh — one offline run on a GPU host, from the folder scripts/gpu-bundle.sh made: unpacks
# the dependencies into a prefix, builds StarPU 1.3.10 (with CUDA when nvcc is found) into another,
# builds Veil from its `make dist` tarball against them (CUDA kernels when nvcc is found), runs
# `make check` (the CUDA tests included), bench/bench_gemm, secure LeNet-5 inference (2 parties
# and the dealer, all on the one GPU) with and without CUDA workers, and the VGG16 and transformer
# examples with and without CUDA workers. Everything it learns goes into one report file,
# OUT/gpu-check-report.txt, written as it goes (a run cut short still leaves what it reached),
# and the logs of failures into OUT/gpu-check-logs.tar.gz. Nothing is fetched and nothing is
# written outside WORKDIR and OUT. Without nvcc or without a GPU it still completes: StarPU and
# Veil are then built without CUDA or run with zero CUDA workers, the CUDA tests skip, and the
# report says so.
#
#   scripts/gpu-check.sh BUNDLE OUT
#   environment: WORKDIR (default /tmp/veil-gpu; builds there are reused by a second run),
#                JOBS (default nproc), CUDA_DIR (default: the directory of nvcc on PATH, else
#                /usr/local/cuda), CUDA_ARCHS (compute capabilities to compile Veil's kernels
#                for, e.g. "90"; default: those of the GPUs nvidia-smi lists, else Veil's own
#                sm_80 + sm_90), PHASES (default "build check bench lenet models", run in the
#                order given; "cudatests" runs the CUDA, backend, placement and locality tests
#                alone), CHECK_TIMEOUT (seconds for make check, default 300), TIME_SCALE (every
#                phase's limit is multiplied by it, default 1: the limits fit 16 cores; 2 slow
#                cores need about 6), DEADLINE (seconds from the start after which no phase
#                starts and to which every limit is cut; default none), CHECK_TESTS (the tests
#                the check phase runs; default all), CHECK_JOBS (tests run at once, default 4),
#                CHECK_RESUME (1: only the tests a cut check left without a result),
#                LENET_RUNS (the secure LeNet runs as
#                IMAGES:BATCH pairs; default "100:100 20:1"), INFER_LIMIT (seconds for each
#                LeNet, VGG16 or transformer session, default 300), GEMM_MAX (the largest
#                bench_gemm_cuda size, default 8192), MODELS (the examples the models phase
#                runs, each EXAMPLE or EXAMPLE:OPTIONS with commas for spaces, e.g.
#                "vgg16:--batch,16"; default "vgg16 transformer")
set -u
SELF=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")
STEP=
if [ "${1:-}" = --step ]; then STEP=$2; shift 2; fi
[ $# -eq 2 ] || { echo "usage: $0 BUNDLE OUT" >&2; exit 2; }
abs() { case $1 in /*) echo "$1" ;; *) echo "$(pwd)/$1" ;; esac; }
BUNDLE=$(abs "$1")
OUT=$(abs "$2")
WORKDIR=$(abs "${WORKDIR:-/tmp/veil-gpu}")
JOBS=${JOBS:-$(nproc)}
PHASES=${PHASES:-build check bench lenet models}
CHECK_TIMEOUT=${CHECK_TIMEOUT:-300}
TIME_SCALE=${TIME_SCALE:-1}
DEADLINE=${DEADLINE:-0}
mkdir -p "$OUT" "$WORKDIR/logs" || exit 1
R="$OUT/gpu-check-report.txt"
LOGS="$WORKDIR/logs"
P="$WORKDIR/prefix"
SP="$WORKDIR/starpu"
SRC="$WORKDIR/src"
B="$WORKDIR/veil"
NVCC=
if command -v nvcc >/dev/null 2>&1; then NVCC=$(command -v nvcc)
elif [ -x "${CUDA_DIR:-/usr/local/cuda}/bin/nvcc" ]; then NVCC=${CUDA_DIR:-/usr/local/cuda}/bin/nvcc
fi
[ -z "$NVCC" ] || CUDA_DIR=${CUDA_DIR:-$(dirname "$(dirname "$(readlink -f "$NVCC")")")}
# The bundle's libraries and tools: its prefix first on every search path, the host's make first
# (the bundle's where the host has none). Set here so that every step sees the same.
LIBS_P="$P/usr/lib/x86_64-linux-gnu:$P/lib/x86_64-linux-gnu"
export LD_LIBRARY_PATH="$SP/lib:$LIBS_P${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# This host's CUDA runtime and cuBLAS, wherever its toolkit lives (a build made elsewhere has the
# RPATH of that machine's toolkit).
[ -z "$NVCC" ] || export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$CUDA_DIR/lib64"
export PKG_CONFIG="$P/usr/bin/pkgconf"
export PKG_CONFIG_LIBDIR="$SP/lib/pkgconfig:$P/usr/lib/x86_64-linux-gnu/pkgconfig:$P/usr/share/pkgconfig"
export CPPFLAGS="-I$P/usr/include -I$P/usr/include/x86_64-linux-gnu"
# RPATH (not RUNPATH: --disable-new-dtags) so that installed programs started under env -i
# (tests/test_install.sh) find StarPU and the bundle's libraries, and so do their own dependencies.
export LDFLAGS="-L$P/usr/lib/x86_64-linux-gnu -L$P/lib/x86_64-linux-gnu \
-Wl,-rpath-link,$P/usr/lib/x86_64-linux-gnu -Wl,--disable-new-dtags -Wl,-rpath,$SP/lib \
-Wl,-rpath,$P/usr/lib/x86_64-linux-gnu -Wl,-rpath,$P/lib/x86_64-linux-gnu"
export PATH="$PATH:$P/usr/bin"
export STARPU_SILENT=1
VEIL_TGZ=$(ls "$BUNDLE"/veil-*.tar.gz 2>/dev/null | head -n 1)
DATA="$BUNDLE/fashion-mnist"
W="$WORKDIR/lenet5-fmnist.safetensors"

# ---- the steps, each run as `gpu-check.sh --step NAME` under a time limit
step_starpu() {
    rm -rf "$SRC/starpu-1.3.10" "$SP" && mkdir -p "$SRC" &&
        tar -C "$SRC" -xJf "$BUNDLE/starpu-1.3.10-veil.tar.xz" || return 1
    if [ -n "$NVCC" ]; then cuda="--enable-cuda --with-cuda-dir=$CUDA_DIR"; else cuda=--disable-cuda; fi
    mkdir -p "$SRC/starpu-1.3.10/build" && cd "$SRC/starpu-1.3.10/build" &&
        NVCCFLAGS="-Xcompiler -fPIC" ../configure --prefix="$SP" $cuda --disable-starpufft \
            --enable-maxcpus=128 --disable-mpi --disable-opencl --disable-socl --disable-openmp \
            --disable-fortran --disable-build-examples --disable-build-tests --disable-build-doc \
            --disable-glpk --disable-static --enable-quick-check &&
        grep 'STARPU_USE_CUDA \|STARPU_HAVE_HWLOC ' include/starpu_config.h &&
        make -j"$JOBS" && make install && touch "$SP/.veil-built"
}
# The -gencode flags for CUDA_ARCHS ("90" or "80 90"); empty: Veil's default (sm_80, sm_90).
gencode() {
    for a in ${CUDA_ARCHS:-}; do printf -- '-gencode arch=compute_%s,code=[sm_%s,compute_%s] ' \
        "$a" "$a" "$a"; done
}
step_veil() {
    if [ -n "$NVCC" ]; then cuda="--with-cuda=$CUDA_DIR"; else cuda=--without-cuda; fi
    rm -rf "$B" && mkdir -p "$B" && tar -C "$B" --strip-components=1 -xzf "$VEIL_TGZ" && cd "$B" &&
        ./configure $cuda PROTOC_C="$P/usr/bin/protoc-c" \
            ONNX_PROTO="$P/usr/include/onnx/onnx.proto" || return 1
    if [ -n "${CUDA_ARCHS:-}" ]; then make -j"$JOBS" VEIL_CUDA_GENCODE="$(gencode)"
    else make -j"$JOBS"; fi && touch "$B/.veil-built"
}
# The tests' network timeouts (2-5 s) assume the parallelism of the machines CI runs on: on the
# H200 host, make -j16 check starved them (handshakes timed out), so the tests run CHECK_JOBS at a
# time (default 4) while the builds use every core.
# CHECK_RESUME=1 runs only the tests an earlier check cut at its limit did not finish: the log of
# a test without its .trs is removed, and the others are kept (RECHECK_LOGS=).
step_check() {
    set --
    if [ -n "${CHECK_RESUME:-}" ]; then
        for l in "$B"/tests/*.log; do [ ! -f "$l" ] || [ -f "${l%.log}.trs" ] || rm -f "$l"; done
        set -- RECHECK_LOGS=
    fi
    if [ -n "${CHECK_TESTS:-}" ]; then make -C "$B" -j"${CHECK_JOBS:-4}" check TESTS="$CHECK_TESTS" "$@"
    else make -C "$B" -j"${CHECK_JOBS:-4}" check "$@"; fi
}
CUDA_TESTS="tests/test_codelets_backend tests/test_tasks_cuda_beaver tests/test_tasks_cuda_compare \
tests/test_tasks_cuda_pool tests/test_graph_placement tests/test_sched_locality"
step_cudatests() { make -C "$B" -j"${CHECK_JOBS:-4}" check TESTS="$CUDA_TESTS"; }
# the test programs built and none run: a tree prepared on another machine (bench/README-gpu.md)
step_buildtests() { make -C "$B" -j"$JOBS" check TESTS=; }
step_workers() { "$SP/bin/starpu_machine_display"; }
step_bench() { "$B/bench/bench_gemm" 1024; }
step_bench_cuda() { "$B/bench/bench_gemm_cuda" "${GEMM_MAX:-8192}"; }
step_train() {
    "$B/examples/lenet_fmnist" train --limit 6000 --epochs 1 --batch 64 --data "$DATA" --weights "$W"
}
# ncuda all|0: each process's CUDA workers, as StarPU finds them or none (STARPU_NCUDA=0)
ncuda() { if [ "$1" = 0 ]; then export STARPU_NCUDA=0; else unset STARPU_NCUDA; fi; }
# infer all|0 IMAGES BATCH: 2 parties and the dealer, all three on the host's GPU(s)
# With a fourth argument, a trace per process (VEIL_TRACE) and the busy / overlap profile.
step_infer() {
    ncuda "$1"
    [ -z "${4:-}" ] || export VEIL_TRACE="$WORKDIR/trace-$4-%d.json"
    "$B/tools/veil-run" -n 2 --dealer --timeout 300 -- \
        "$B/examples/lenet_fmnist" infer --images "$2" --batch "$3" --data "$DATA" --weights "$W"
}
# model all|0 EXAMPLE NAME [ARGS...]: the example's session, a trace per process (VEIL_TRACE)
step_model() {
    ncuda "$1"
    export VEIL_TRACE="$WORKDIR/trace-$3-%d.json"
    m=$2
    shift 3
    "$B/tools/veil-run" -n 2 --dealer --timeout 300 -- "$B/examples/$m" "$@"
}
if [ -n "$STEP" ]; then
    set -- ${STEP_ARGS:-}
    "step_$STEP" "$@"
    exit $?
fi

T0=$(date +%s)
: > "$R"
say() { echo "$*" | tee -a "$R"; }
elapsed() { echo $(($(date +%s) - T0)); }
# phase NAME SECONDS STEP [ARGS]: one step under a time limit, its output in LOGS/NAME.log
phase() {
    name=$1 limit=$(($2 * TIME_SCALE)) step=$3
    shift 3
    if [ "$DEADLINE" -gt 0 ]; then
        left=$((DEADLINE - $(elapsed) - 5))
        [ "$left" -ge 20 ] || { say "phase $name: not run ($left s before the deadline)"; return 1; }
        [ "$limit" -le "$left" ] || limit=$left
    fi
    s=$(date +%s)
    STEP_ARGS="$*" timeout -k 10 "$limit" "$SELF" --step "$step" "$BUNDLE" "$OUT" \
        > "$LOGS/$name.log" 2>&1
    rc=$?
    say "phase $name: rc=$rc, $(($(date +%s) - s)) s (limit $limit s; $(elapsed) s since start)"
    [ $rc -eq 0 ] || { echo "--- last lines of $name.log" >> "$R"; tail -n 25 "$LOGS/$name.log" >> "$R"; }
    tar -C "$WORKDIR" -czf "$OUT/gpu-check-logs.tar.gz" logs 2>/dev/null
    return $rc
}
finish() {
    say "total: $(elapsed) s"
    tar -C "$WORKDIR" -czf "$OUT/gpu-check-logs.tar.gz" logs 2>/dev/null
    exit "$1"
}
has() { case " $PHASES " in *" $1 "*) return 0 ;; esac; return 1; }

# ---- the host: what it has, whether the bundle's binaries can run on it
say "== host"
say "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
say "kernel: $(uname -srm)"
say "os: $(. /etc/os-release 2>/dev/null && echo "${PRETTY_NAME:-?}")"
say "cores: $(nproc), jobs: $JOBS, time scale: $TIME_SCALE"
say "memory: $(awk '/MemTotal/ {print $2 " kB"}' /proc/meminfo)"
for f in deps.tar.xz starpu-1.3.10-veil.tar.xz; do
    [ -f "$BUNDLE/$f" ] || { say "bundle: $BUNDLE/$f missing (run scripts/gpu-bundle.sh)"; finish 1; }
done
[ -n "$VEIL_TGZ" ] || { say "bundle: no veil-*.tar.gz in $BUNDLE"; finish 1; }
say "bundle: $(head -n 1 "$BUNDLE/MANIFEST" 2>/dev/null); $(basename "$VEIL_TGZ")"
glibc=$(getconf GNU_LIBC_VERSION 2>/dev/null | awk '{print $2}')
say "glibc: ${glibc:-?} (the bundle's binaries need $(tar -xJOf "$BUNDLE/deps.tar.xz" prefix/GLIBC_NEEDED))"
for t in gcc g++ make python3 perl tar xz timeout; do say "tool $t: $(command -v $t || echo MISSING)"; done
if [ -n "$NVCC" ]; then
    say "nvcc: $NVCC ($("$NVCC" --version | sed -n 's/.*release \([0-9.]*\).*/\1/p')), CUDA_DIR=$CUDA_DIR"
else
    say "nvcc: none (StarPU and Veil are built without CUDA)"
fi
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L > "$LOGS/nvidia-smi.log" 2>&1; then
    sed 's/^/gpu: /' "$LOGS/nvidia-smi.log" | tee -a "$R"
    say "driver: $(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -n 1)"
    nvidia-smi --query-gpu=name,memory.total,compute_cap,clocks.max.sm,power.limit \
        --format=csv,noheader 2>/dev/null | sed 's/^/gpu properties: /' | tee -a "$R"
else
    say "gpu: none found (nvidia-smi missing or failing): zero CUDA workers, the CUDA tests skip"
fi

# ---- the dependency prefix: Debian's .pc files name /usr; point them at the prefix. Shared
# linking only, so the private requirements (Kerberos, PGM, NORM for libzmq) are not needed.
if [ ! -f "$P/.veil-fixed" ]; then
    rm -rf "$P" && tar -C "$WORKDIR" -xJf "$BUNDLE/deps.tar.xz" || finish 1
    for pc in "$P"/usr/lib/x86_64-linux-gnu/pkgconfig/*.pc "$P"/usr/share/pkgconfig/*.pc; do
        [ -f "$pc" ] || continue
        sed -i -e "s|=/usr|=$P/usr|g" -e "s| /usr/| $P/usr/|g" -e '/^Requires.private:/d' "$pc"
    done
    touch "$P/.veil-fixed"
fi
say "pkgconf $("$PKG_CONFIG" --version): hwloc $("$PKG_CONFIG" --modversion hwloc), libzmq $("$PKG_CONFIG" --modversion libzmq), libcrypto $("$PKG_CONFIG" --modversion libcrypto)"

# ---- the phases, run in the order PHASES names them
run_build() {
    say "== build"
    if [ -z "${CUDA_ARCHS+set}" ] && [ -n "$NVCC" ] && command -v nvidia-smi >/dev/null 2>&1; then
        CUDA_ARCHS=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null |
            tr -d . | sort -u | tr '\n' ' ')
        export CUDA_ARCHS
    fi
    if [ -f "$SP/.veil-built" ]; then say "phase starpu: reused $SP"
    else phase starpu 420 starpu || finish 1
    fi
    grep 'define STARPU_USE_CUDA\|define STARPU_HAVE_HWLOC' "$LOGS/starpu.log" 2>/dev/null | sed 's/^/starpu: /' | tee -a "$R"
    if [ -f "$B/.veil-built" ]; then say "phase veil: reused $B"
    else
        say "CUDA kernels for: ${CUDA_ARCHS:-sm_80 and sm_90, Veil default}"
        phase veil 420 veil || finish 1
    fi
    grep -E '^  (StarPU|CUDA kernels built|CUDA codelets used): ' "$LOGS/veil.log" | sed 's/^ */veil: /' | tee -a "$R"
    grep -c 'warning:' "$LOGS/veil.log" | sed 's/^/veil: compiler warnings: /' | tee -a "$R"
}
# test_RESULT lines of a make check log into the report, and each failing test's log into LOGS
report_tests() {
    grep -E '^# (TOTAL|PASS|SKIP|XFAIL|FAIL|XPASS|ERROR):' "$B/test-suite.log" 2>/dev/null | tee -a "$R"
    grep -E '^(PASS|SKIP|FAIL|ERROR): tests/test_(tasks_cuda|codelets_backend|graph_placement|sched)' \
        "$LOGS/$1.log" | tee -a "$R"
    grep -E '^(FAIL|ERROR):' "$LOGS/$1.log" | grep -vE 'tests/test_(tasks_cuda|codelets_backend|graph_placement|sched)' | tee -a "$R"
    mkdir -p "$LOGS/tests" && for f in $(grep -E '^(PASS|SKIP|FAIL|ERROR):' "$LOGS/$1.log" |
        grep -E '^(FAIL|ERROR)|tasks_cuda|codelets_backend|graph_placement|sched_locality' | awk '{print $2}'); do
        cp "$B/$f.log" "$LOGS/tests/" 2>/dev/null
    done
}
run_check() {
    say "== make check"
    phase check "$CHECK_TIMEOUT" check
    report_tests check
}
run_cudatests() {
    say "== the CUDA, backend, placement and locality tests"
    phase cudatests 240 cudatests
    report_tests cudatests
}
run_bench() {
    if [ -x "$B/bench/bench_gemm_cuda" ]; then
        say "== bench_gemm_cuda (the ring GEMM's CUDA implementations against cuBLAS DGEMM)"
        phase bench-cuda 120 bench_cuda; grep -E '^(#|\|)' "$LOGS/bench-cuda.log" >> "$R"
    fi
    say "== bench_gemm (the CPU ring GEMM, one core)"
    phase bench 120 bench && grep -v '^#' "$LOGS/bench.log" | tail -n 12 >> "$R"
}
# workers_of NAME PARTY [FROM]: which worker of that party ran what in the traced session NAME,
# runs >= FROM (default 1, the steady runs; 0 where the session has one run)
workers_of() {
    f="$WORKDIR/trace-$1-$2.json"
    [ -f "$f" ] && command -v python3 >/dev/null 2>&1 || return 0
    python3 "$(dirname "$SELF")/../bench/trace_workers.py" "$f" --from-run "${3:-1}" 2>&1 |
        sed "s/^/$1 p$2 /" | tee -a "$R"
}
run_lenet() {
    say "== LeNet-5 on Fashion-MNIST (2 parties + dealer; CUDA workers: all, then none)"
    if [ -f "$W" ]; then say "phase train: reused $W"
    else phase train 120 train && tail -n 1 "$LOGS/train.log" | tee -a "$R" || return 1
    fi
    for nc in all 0; do
        for ib in ${LENET_RUNS:-100:100 20:1}; do
            # shellcheck disable=SC2046 # IMAGES:BATCH into two words on purpose
            set -- $(echo "$ib" | tr : ' ')
            name="infer-b$2-cuda$nc"
            # the batch-100 and larger runs traced: the busy / overlap profile of each party
            tr=; [ "$2" -ge 100 ] && tr=$name
            rm -f "$WORKDIR"/trace-"$name"-*.json # a failed session leaves no older trace behind
            phase "$name" "${INFER_LIMIT:-300}" infer "$nc" "$1" "$2" $tr &&
                grep -E 'model=|batch [0-9]+: compute' "$LOGS/$name.log" | tee -a "$R"
            [ -z "$tr" ] || workers_of "$name" 1 $(($1 / $2 > 1))
            # the traced run drawn: one lane per worker and per peer (scripts/trace_svg.py)
            if [ -n "$tr" ] && command -v python3 >/dev/null 2>&1 &&
                ls "$WORKDIR"/trace-"$name"-*.json >/dev/null 2>&1; then
                python3 "$(dirname "$SELF")/trace_svg.py" -o "$OUT/trace-$name.svg" --run 0 \
                    --title "LeNet-5 batch $2, CUDA workers: $nc" "$WORKDIR"/trace-"$name"-*.json \
                    >> "$LOGS/$name.log" 2>&1 && say "trace: $OUT/trace-$name.svg"
            fi
        done
    done
}
run_models() {
    say "== VGG16 and the transformer layer (2 parties + dealer; CUDA workers: all, then none)"
    for entry in ${MODELS:-vgg16 transformer}; do
        m=${entry%%:*} args=
        case $entry in *:*) args=$(echo "${entry#*:}" | tr , ' ') ;; esac
        for nc in all 0; do
            name="$m$(echo "$args" | tr -cd '[:alnum:]' | sed 's/^./-&/')-cuda$nc"
            rm -f "$WORKDIR"/trace-"$name"-*.json
            # shellcheck disable=SC2086 # the example's options are several words on purpose
            phase "$name" "${INFER_LIMIT:-300}" model "$nc" "$m" "$name" $args &&
                grep -E 'model=|run [0-9]+: compute' "$LOGS/$name.log" | tee -a "$R"
            workers_of "$name" 0
        done
    done
}
workers_known=
for ph in $PHASES; do
    case $ph in
    build) run_build ;;
    check | cudatests | bench | lenet | models)
        [ -f "$B/.veil-built" ] || { say "no Veil build in $B: nothing to run"; finish 1; }
        if [ -z "$workers_known" ]; then
            workers_known=1
            phase workers 60 workers
            grep -E 'CUDA|CPU' "$LOGS/workers.log" | grep -i 'worker' | head -n 8 | sed 's/^/workers: /' | tee -a "$R"
            say "CUDA workers: $(grep -c 'CUDA [0-9.]* (' "$LOGS/workers.log")"
        fi
        "run_$ph" ;;
    none) ;;
    *) say "unknown phase '$ph' (build check cudatests bench lenet models none)"; finish 2 ;;
    esac
done
finish 0

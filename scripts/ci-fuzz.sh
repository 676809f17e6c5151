#!/bin/sh
# Builds the libFuzzer harnesses of tests/fuzz/ with clang and runs each for a bounded
# time on its seed corpus; fails on any crash, sanitizer report, failed check or timeout.
#
#   scripts/ci-fuzz.sh                  every harness, FUZZ_SECONDS (default 30) each
#   scripts/ci-fuzz.sh env              only fuzz_env (or: api)
#
# Environment: FUZZ_SECONDS (per harness), FUZZ_BUILD (build directory, default
# /tmp/gridsync-fuzz), CUDA_INC (the directory holding cuda.h; default: asked of nvcc).
# Needs clang with libFuzzer (Debian: clang, libclang-rt-<version>-dev; installed with
# apt-get when missing) and the CUDA toolkit's headers (cuda.h, cudaTypedefs.h); no GPU,
# no driver: the harnesses run against the fake driver of tests/fake/.
#
# How it is built (tests/fuzz/README.md has more): libgridsync's sources (core/*.c) are
# compiled straight into each harness with -fsanitize=fuzzer-no-link,address,undefined --
# core/error.c through tests/fuzz/fuzz_core_error.c, which lets fuzz_env make the library
# re-read GRIDSYNC_DEBUG for every input. The fake driver (libcuda.so.1) and the fake
# backends are built from tests/fake/ with clang too, without instrumentation.
set -eu

root=$(cd "$(dirname "$0")/.." && pwd)
build=${FUZZ_BUILD:-/tmp/gridsync-fuzz}
seconds=${FUZZ_SECONDS:-30}
harnesses=${*:-env api}
start=$(date +%s)

as_root() {
    if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi
}

# ---- tools ---------------------------------------------------------------------------
CC=${CC:-clang}
fuzzer_works() {
    command -v "$CC" >/dev/null 2>&1 || return 1
    printf 'int LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n) { (void)d; (void)n; return 0; }\n' \
        >"$build/probe.c"
    "$CC" -fsanitize=fuzzer,address,undefined "$build/probe.c" -o "$build/probe" >/dev/null 2>&1
}
mkdir -p "$build"
if ! fuzzer_works; then
    echo "== installing clang and its libFuzzer runtime"
    as_root apt-get update -qq
    command -v clang >/dev/null 2>&1 ||
        as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq clang
    # The runtimes (libFuzzer included) of exactly that clang: bookworm's clang is 14, its
    # runtimes are libclang-rt-14-dev (older releases ship them inside libclang-common-*-dev).
    major=$(clang -dumpversion | cut -d. -f1)
    if apt-cache show "libclang-rt-$major-dev" >/dev/null 2>&1; then
        as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "libclang-rt-$major-dev"
    fi
    CC=clang
    fuzzer_works || { echo "clang cannot build a libFuzzer program (-fsanitize=fuzzer)" >&2; exit 1; }
fi

if [ -z "${CUDA_INC:-}" ]; then
    nvcc=$(command -v nvcc || true)
    [ -n "$nvcc" ] || nvcc=/usr/local/cuda/bin/nvcc
    # As meson.build does: nvcc may be a wrapper, so ask it where its headers are.
    for d in $("$nvcc" --dryrun -x cu -E /dev/null 2>&1 | sed -n 's/^#\$ INCLUDES=//p' | tr -d '"' |
               tr ' ' '\n' | sed -n 's/^-I//p') "$(dirname "$nvcc")/../include" /usr/local/cuda/include; do
        if [ -f "$d/cuda.h" ]; then CUDA_INC=$d; break; fi
    done
fi
if [ -z "${CUDA_INC:-}" ] || [ ! -f "$CUDA_INC/cuda.h" ]; then
    echo "cuda.h not found: install the CUDA toolkit or set CUDA_INC" >&2
    exit 1
fi

# ---- build ---------------------------------------------------------------------------
echo "== building in $build ($CC, CUDA headers in $CUDA_INC)"
fake=$build/fake
rm -rf "$fake" "$build/obj" "$build/gridsync" "$build/configured"
mkdir -p "$fake" "$build/obj" "$build/gridsync" "$build/configured"
inc="-I$root/api -I$root/internal -I$root/core -isystem $CUDA_INC"
warn="-Wall -Wextra -Wno-unused-parameter"
version=$(sed -n "s/^ *version: *'\([^']*\)'.*/\1/p" "$root/meson.build" | head -1)

# The fakes: plain shared objects, as tests/fake/meson.build makes them.
$CC -std=c11 -g -O1 -fPIC -shared -fvisibility=hidden $warn $inc -Werror=incompatible-pointer-types \
    "$root/tests/fake/fake_cuda.c" -o "$fake/libcuda.so.1" -Wl,-soname,libcuda.so.1 -Wl,--no-undefined -pthread
for variant in good wrong_abi_major entry_refuses no_entry entry_fails no_reduce small_struct open_no_image; do
    define=
    [ "$variant" = good ] || define="-DFAKE_$(echo "$variant" | tr a-z A-Z)"
    $CC -std=c11 -g -O1 -fPIC -shared -fvisibility=hidden $warn $inc -DFAKE_BACKEND_NAME="\"fake_$variant\"" \
        $define "$root/tests/fake/fake_backend.c" -o "$fake/gridsync-fake_$variant.so" \
        -Wl,--no-undefined -ldl -pthread
done
# The directory next to "libgridsync" (the harness executables) and the configured one:
# an automatic choice finds a cuda_sm20 without code for the device next to the library,
# skips it, and takes the good cuda_sm11_compat from the configured directory.
cp "$fake/gridsync-fake_open_no_image.so" "$build/gridsync/gridsync-cuda_sm20.so"
cp "$fake/gridsync-fake_good.so" "$build/configured/gridsync-cuda_sm11_compat.so"

# libgridsync's sources, instrumented. (Paths go unquoted into $inc and $san: keep the
# build directory free of spaces.)
san="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
defs_dir="-DGS_BACKEND_DIR=\"$build/configured\""
objs=
for src in "$root"/core/*.c "$root/tests/fuzz/fuzz_core_error.c"; do
    [ "$src" = "$root/core/error.c" ] && continue
    obj=$build/obj/$(basename "$src" .c).o
    $CC -std=c11 -g -O1 $warn $san -fsanitize=fuzzer-no-link $inc -DGS_BUILDING_LIBRARY "$defs_dir" \
        -DGS_VERSION_STRING="\"$version\"" -c "$src" -o "$obj"
    objs="$objs $obj"
done

for h in $harnesses; do
    $CC -std=c11 -g -O1 $warn $san -fsanitize=fuzzer $inc -DFUZZ_FAKE_DIR="\"$fake\"" "$defs_dir" \
        "$root/tests/fuzz/fuzz_$h.c" $objs -o "$build/fuzz_$h" -ldl -pthread
done
echo "   built in $(($(date +%s) - start)) s"

# ---- run -----------------------------------------------------------------------------
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:strict_string_checks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
# fuzz_env's sandboxes go here (one a run; a crashed run cannot remove its own).
rm -rf "$build/tmp"
mkdir -p "$build/tmp"
status=0
for h in $harnesses; do
    corpus=$build/corpus-$h
    artifacts=$build/artifacts-$h
    rm -rf "$corpus" "$artifacts"
    mkdir -p "$corpus" "$artifacts"
    cp "$root/tests/fuzz/corpus/$h"/* "$corpus/"
    extra=
    [ -f "$root/tests/fuzz/$h.dict" ] && extra="-dict=$root/tests/fuzz/$h.dict"
    # fuzz_env turns GRIDSYNC_DEBUG on for many inputs: stderr is closed for the target
    # (libFuzzer keeps its own and the sanitizers' reports); a failure is re-run below
    # with stderr open, to show the harness's own words.
    [ "$h" = env ] && extra="$extra -close_fd_mask=2"
    echo "== fuzz_$h: $seconds s on $(ls "$corpus" | wc -l) seeds"
    if ! TMPDIR=$build/tmp "$build/fuzz_$h" -max_total_time="$seconds" -timeout=20 -rss_limit_mb=2048 -max_len=1024 \
            -print_final_stats=1 -artifact_prefix="$artifacts/" $extra "$corpus" >"$build/fuzz_$h.log" 2>&1; then
        status=1
        echo "FAIL: fuzz_$h found a problem; its log ($build/fuzz_$h.log) ends:" >&2
        tail -40 "$build/fuzz_$h.log" >&2
        for a in "$artifacts"/*; do
            [ -f "$a" ] || continue
            echo "--- re-running $a:" >&2
            od -c "$a" | head -20 >&2
            TMPDIR=$build/tmp "$build/fuzz_$h" -timeout=20 "$a" 2>&1 | grep -v '^gridsync: ' | tail -40 >&2 || true
        done
    else
        grep -E '^(stat::number_of_executed_units|stat::peak_rss_mb|#[0-9]+ *DONE)' "$build/fuzz_$h.log" | tr '\n' ' '
        echo
        echo "   corpus: $(ls "$corpus" | wc -l) inputs"
    fi
done
echo "== ci-fuzz: $(($(date +%s) - start)) s, $([ $status = 0 ] && echo passed || echo FAILED)"
exit $status

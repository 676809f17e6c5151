#!/bin/bash
# Everything that needs a GPU, in one go (for a lent GPU machine with a time budget):
# build (all architectures unless ARCHS is set), every test suite including gpu (auto,
# cuda_sm20 and cuda_sm11_compat forced), `gridsync info`, cuobjdump of the backends,
# and compute-sanitizer over the gpu suite when SANITIZE=1. Logs go to $1.
#   tests/gpu/device-run.sh OUTDIR
set -u
out=${1:?usage: device-run.sh OUTDIR}
mkdir -p "$out"
cd "$(dirname "$0")/../.."
builddir=${BUILDDIR:-build-device}
exec > >(tee "$out/device-run.log") 2>&1

step() { printf '\n=== %s (%s)\n' "$*" "$(date +%T)"; }

step "machine"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv
nvcc --version | tail -2
meson --version

step "build (cuda-archs=${ARCHS:-auto})"
if [ ! -f "$builddir/build.ninja" ]; then
    meson setup "$builddir" -Dcuda-archs="${ARCHS:-auto}" ${MESON_ARGS:-} >"$out/meson-setup.log" 2>&1 ||
        { cat "$out/meson-setup.log"; exit 1; }
fi
time ninja -C "$builddir" >"$out/ninja.log" 2>&1 || { tail -50 "$out/ninja.log"; exit 1; }

step "backends: SASS per architecture"
for so in "$builddir"/backends/gridsync-*.so; do
    echo "$so:"
    cuobjdump --list-elf "$so" | sed 's/^/  /'
    cuobjdump --list-ptx "$so" | sed "s/^/  /"
    [ -n "$(cuobjdump --list-elf "$so" 2>/dev/null)" ] || { echo "  (not seen in the .so; the fatbin it embeds:)"; cuobjdump --list-elf "${so%/*}/$(basename "${so#*gridsync-}" .so).fatbin" | sed "s/^/  /"; }
done
cuobjdump -res-usage "$builddir/backends/gridsync-cuda_sm20.so" 2>&1 | grep -A1 "sm_90" | grep -m4 -B1 REG || true

step "gridsync info"
GRIDSYNC_BACKEND_PATH="$PWD/$builddir/backends" "$builddir/tools/gridsync" info

step "all test suites"
meson test -C "$builddir" --print-errorlogs --num-processes 1 ${SUITES:-} 2>&1 | tail -40
cp "$builddir/meson-logs/testlog.txt" "$out/testlog.txt" 2>/dev/null
grep -E "^(seed|device|backend|matrix|nan|streams|determinism|back-to-back|overlap) " "$out/testlog.txt" || true

if [ "${SANITIZE:-0}" = 1 ]; then
    for b in cuda_sm20 cuda_sm11_compat; do
        for tool in memcheck racecheck synccheck initcheck; do
            step "compute-sanitizer --tool $tool, $b"
            GS_TEST_QUICK=1 GRIDSYNC_BACKEND=$b GRIDSYNC_BACKEND_PATH="$PWD/$builddir/backends" \
                compute-sanitizer --tool "$tool" --error-exitcode 9 \
                "$builddir/tests/gpu/test_gpu_reduce" 2>&1 | tail -4
        done
    done
fi
step "done"

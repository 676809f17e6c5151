#!/bin/bash
# Everything that needs a GPU, in one go (for a lent GPU machine with a time budget):
# build, the CPU suites, the gpu suite three times at once (automatic choice, cuda_sm20
# forced, cuda_sm11_compat forced), the `gridsync` command (info, reduce, selftest),
# cuobjdump of the backends, the concurrency/graph/churn/sticky-error program per backend,
# and with SANITIZE=1 tests/sanitize.sh (compute-sanitizer's memcheck, racecheck,
# synccheck, initcheck over both gpu programs' quick mode, both backends).
#
#   tests/gpu/device-run.sh OUTDIR
#
# Every program runs under `timeout` and writes its own log to OUTDIR, so a run that is
# cut short still says how far each part got. Environment: ARCHS (cuda-archs, default 90:
# the H100's; "auto" builds all of them and takes minutes), BUILDDIR (default
# build-device), GPU_TIMEOUT (seconds per gpu-suite run, default 300), SAN_TIMEOUT
# (seconds per sanitizer run, default 200).
set -u
out=${1:?usage: device-run.sh OUTDIR}
mkdir -p "$out"
out=$(cd "$out" && pwd)
cd "$(dirname "$0")/../.."
builddir=${BUILDDIR:-build-device}
exec > >(tee "$out/device-run.log") 2>&1

step() { printf '\n=== %s (%s)\n' "$*" "$(date +%T)"; }
status=0

step "machine"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv
nvcc --version | tail -2
meson --version
git rev-parse HEAD 2>/dev/null || echo "(no git: a copy of the tree)"

step "build (cuda-archs=${ARCHS:-90})"
if [ ! -f "$builddir/build.ninja" ]; then
    meson setup "$builddir" -Dcuda-archs="${ARCHS:-90}" ${MESON_ARGS:-} >"$out/meson-setup.log" 2>&1 ||
        { cat "$out/meson-setup.log"; exit 1; }
fi
time ninja -C "$builddir" >"$out/ninja.log" 2>&1 || { tail -50 "$out/ninja.log"; exit 1; }
export GRIDSYNC_BACKEND_PATH="$PWD/$builddir/backends"

step "backends: what the embedded fatbins hold"
for so in "$builddir"/backends/gridsync-*.so; do
    echo "$so:"
    cuobjdump --list-elf "$so" 2>&1 | sed 's/^/  /'
    cuobjdump --list-ptx "$so" 2>&1 | sed 's/^/  /'
done
cuobjdump -res-usage "$builddir/backends/gridsync-cuda_sm20.so" 2>&1 | grep -m6 -A1 "gs_reduce_f32_sum" || true

step "gpu suite: auto, cuda_sm20, cuda_sm11_compat (in parallel)"
pids=()
for v in auto cuda_sm20 cuda_sm11_compat; do
    (
        [ "$v" = auto ] || export GRIDSYNC_BACKEND=$v
        timeout -k 5 "${GPU_TIMEOUT:-300}" "$builddir/tests/gpu/test_gpu_reduce" >"$out/gpu-$v.log" 2>&1
        echo "exit status $?" >>"$out/gpu-$v.log"
    ) &
    pids+=($!)
done
wait "${pids[@]}"
for v in auto cuda_sm20 cuda_sm11_compat; do
    echo "--- $v"
    grep -v "^FAIL" "$out/gpu-$v.log"
    nfail=$(grep -c "^FAIL" "$out/gpu-$v.log")
    [ "$nfail" = 0 ] || { echo "$nfail FAIL lines, the first ones:"; grep -m 10 "^FAIL" "$out/gpu-$v.log"; }
    tail -1 "$out/gpu-$v.log" | grep -q "exit status 0" || status=1
done

step "the gridsync command"
tool="$builddir/tools/gridsync"
timeout 60 "$tool" info; echo "info: exit status $?"
timeout 60 "$tool" reduce --dtype f32 --op sum --count 16777216; echo "reduce: exit status $?"
timeout 60 "$tool" reduce --dtype f16 --op max --count 1000003; echo "reduce: exit status $?"
timeout 200 "$tool" selftest >"$out/selftest.log" 2>&1; rc=$?
tail -15 "$out/selftest.log"; echo "selftest: exit status $rc"
[ $rc = 0 ] || status=1

step "the other suites (CPU only; the fake driver stands in for CUDA)"
timeout 300 meson test -C "$builddir" --no-suite gpu --print-errorlogs --num-processes 8 2>&1 | tail -12
cp "$builddir/meson-logs/testlog.txt" "$out/testlog-cpu.txt" 2>/dev/null

step "gpu concurrency, graphs, context churn, then a broken context (one backend at a time)"
for v in auto cuda_sm20 cuda_sm11_compat; do
    for mode in "" sticky; do
        log="$out/gpu-concurrency-$v${mode:+-$mode}.log"
        (
            [ "$v" = auto ] || export GRIDSYNC_BACKEND=$v
            timeout -k 5 "${GPU_TIMEOUT:-300}" "$builddir/tests/gpu/test_gpu_concurrency" $mode >"$log" 2>&1
            echo "exit status $?" >>"$log"
        )
        echo "--- $v ${mode:-concurrency}"
        grep -v "^FAIL" "$log"
        grep -m 10 "^FAIL" "$log"
        tail -1 "$log" | grep -q "exit status 0" || status=1
    done
done

if [ "${SANITIZE:-0}" = 1 ]; then
    step "compute-sanitizer: tests/sanitize.sh (4 tools x 2 backends x 2 programs, quick mode)"
    SAN_TIMEOUT=${SAN_TIMEOUT:-200} bash tests/sanitize.sh "$builddir" "$out/sanitize" || status=1
fi
step "done (status $status)"
exit $status

#!/bin/bash
# Everything that needs a GPU, in one call of about 8 minutes on an H100 (for a lent GPU
# machine with a small time budget):
#   1. one build (build-dev, cuda-archs=90, tests and benchmarks);
#   2. the two benchmarks, alone on the GPU: bench/run.sh (gs_reduce against CUB) and
#      bench/run_segmented.sh (gs_segmented_reduce against CUB);
#   3. then, all at once: the gpu-full suite's programs for the automatic choice and each
#      backend forced (test_gpu_reduce, test_gpu_bounded, test_gpu_concurrency and its
#      sticky mode; not its exact sums' programs, test_gpu_exact and test_gpu_segexact,
#      whose full modes take about 200 s per backend alone on an H100, nor python-gpu:
#      `meson test -C build-dev --suite gpu-full` runs those; test_gpu_lazy is in the
#      quick suite 'gpu' only), the
#      device helpers' test for the four guards, the work-queue example, `gridsync info`, and
#      compute-sanitizer's four tools over the segmented reduction (quick mode) and memcheck
#      over the bad offsets of test_gpu_bounded for both backends (its timings are
#      meaningless here: the GPU is shared); then test_gpu_concurrency's context churn alone, once per choice (its
#      check reads the device's free memory, which the others move: the concurrent runs
#      get GS_TEST_SHARED_GPU=1);
#   4. OUTDIR/summary.txt (what to read first) and three archives: bench.tgz, segbench.tgz,
#      tests.tgz (every log).
#
#   tests/gpu/device-all.sh OUTDIR
#
# Environment: TEST_TIMEOUT (seconds per program in step 3, default 280).
set -u
out=${1:?usage: tests/gpu/device-all.sh OUTDIR}
mkdir -p "$out"
out=$(cd "$out" && pwd)
cd "$(dirname "$0")/../.." || exit 1
export PATH=/usr/local/cuda/bin:$PATH
b=build-dev
t0=$(date +%s)
mkdir -p "$out/tests" "$out/bench" "$out/segbench"
exec > >(tee "$out/summary.txt") 2>&1
el() { echo "[$(($(date +%s) - t0)) s] $*"; }

nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
git rev-parse HEAD 2>/dev/null || echo "(no git)"
if [ ! -f "$b/build.ninja" ]; then
    meson setup "$b" -Dcuda-archs=90 -Dbench=enabled >"$out/tests/setup.log" 2>&1 ||
        { tail -30 "$out/tests/setup.log"; exit 1; }
fi
ninja -C "$b" >"$out/tests/ninja.log" 2>&1 || { tail -40 "$out/tests/ninja.log"; exit 1; }
el "built"

BUILDDIR=$b BENCH_TIMEOUT=170 bash bench/run.sh "$out/bench" >/dev/null 2>&1
el "bench/run.sh exit status $?"
sed -n '1,30p;/^throughput/,/^checks/p' "$out/bench/summary.txt" 2>/dev/null
BUILDDIR=$b bash bench/run_segmented.sh "$out/segbench" >/dev/null 2>&1
el "bench/run_segmented.sh exit status $?"
cat "$out/segbench/segmented_summary.txt" 2>/dev/null

export GRIDSYNC_BACKEND_PATH=$PWD/$b/backends
run() {
    local name=$1
    shift
    (
        timeout -k 5 "${TEST_TIMEOUT:-280}" "$@" >"$out/tests/$name.log" 2>&1
        echo "exit status $?" >>"$out/tests/$name.log"
    ) &
    pids+=($!)
}
# e: the environment that makes choice $1 (auto: none, else GRIDSYNC_BACKEND)
choice_env() {
    e=()
    [ "$1" = auto ] || e=(GRIDSYNC_BACKEND=$1)
}
pids=()
names=()
for v in auto cuda_sm20 cuda_sm11_compat; do
    choice_env "$v"
    run "reduce-$v" env "${e[@]}" GS_TEST_QUICK=0 "$b/tests/gpu/test_gpu_reduce"
    run "bounded-$v" env "${e[@]}" GS_TEST_QUICK=0 "$b/tests/gpu/test_gpu_bounded"
    run "concurrency-$v" env "${e[@]}" GS_TEST_SHARED_GPU=1 "$b/tests/gpu/test_gpu_concurrency"
    run "sticky-$v" env "${e[@]}" "$b/tests/gpu/test_gpu_concurrency" sticky
    names+=("reduce-$v" "bounded-$v" "concurrency-$v" "sticky-$v")
done
for g in sm20 sm11 sm20-acqrel sm11-acqrel; do
    run "device-$g" "$b/tests/gpu/test_gpu_device" --guard "$g"
    names+=("device-$g")
done
run example "$b/examples/work_queue"
names+=(example)
for v in cuda_sm20 cuda_sm11_compat; do
    for t in memcheck racecheck synccheck initcheck; do
        run "san-$t-$v" env GRIDSYNC_BACKEND=$v GS_TEST_QUICK=1 GS_TEST_PARTS=segmented \
            compute-sanitizer --tool "$t" --error-exitcode 9 "$b/tests/gpu/test_gpu_reduce"
        names+=("san-$t-$v")
    done
    run "san-memcheck-bounded-$v" env GRIDSYNC_BACKEND=$v GS_TEST_QUICK=1 GS_TEST_PARTS=adversarial,fuzz \
        GS_TEST_WATCHDOG=120 compute-sanitizer --tool memcheck --error-exitcode 9 "$b/tests/gpu/test_gpu_bounded"
    names+=("san-memcheck-bounded-$v")
done
timeout 60 "$b/tools/gridsync" info >"$out/tests/info.log" 2>&1
wait "${pids[@]}" # (a bare wait would also wait for the tee above)
for v in auto cuda_sm20 cuda_sm11_compat; do
    choice_env "$v"
    pids=()
    run "churn-$v" env "${e[@]}" "$b/tests/gpu/test_gpu_concurrency" churn
    wait "${pids[@]}"
    names+=("churn-$v")
done
el "tests done"

status=0
for n in "${names[@]}"; do
    log="$out/tests/$n.log"
    last=$(tail -1 "$log")
    printf '%-28s %s | %s\n' "$n" "$last" \
        "$(grep -E 'checks, [0-9]+ failed$|ERROR SUMMARY|RACECHECK SUMMARY|speed-up|passed|FAIL' "$log" | tail -2 | tr '\n' ' ')"
    [ "$last" = "exit status 0" ] || status=1
done
for v in auto cuda_sm20 cuda_sm11_compat; do
    echo "--- reduce-$v"
    grep -v '^FAIL' "$out/tests/reduce-$v.log" | tail -14
    grep -m5 '^FAIL' "$out/tests/reduce-$v.log"
done
sed -n '1,12p' "$out/tests/info.log"
tar czf "$out/bench.tgz" -C "$out" bench && rm -rf "$out/bench"
tar czf "$out/segbench.tgz" -C "$out" segbench && rm -rf "$out/segbench"
tar czf "$out/tests.tgz" -C "$out" tests && rm -rf "$out/tests"
el "done (status $status)"
exit $status

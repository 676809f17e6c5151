#!/bin/bash
# The segmented-reduction benchmark of issue 7 in one go, for a GPU machine
# (bench/README.md, "Segmented reduction"): build with -Dbench=enabled, run
# gridsync-bench-segmented (gs_segmented_reduce per backend against
# cub::DeviceSegmentedReduce::Sum on four layouts), plot, and record how it was made.
#
#   bash bench/run_segmented.sh OUTDIR [gridsync-bench-segmented options, e.g. --quick]
#
# OUTDIR receives: segmented.csv (one row per layout x implementation, written as it goes),
# segmented_summary.txt (throughput ratios against issue 7's targets, met / NOT MET per
# layout and backend; checks), segmented.png, env.txt (exact command, GPU, driver, toolkit,
# git commit), run.log (everything printed), build.log. Use an OUTDIR of its own: bench/run.sh
# also writes env.txt and run.log.
# Environment: BUILDDIR (default build-bench, bench/run.sh's: an existing configuration is
# reused), ARCHS (default 90, the H100's), BENCH_TIMEOUT (seconds, default 180; the
# program's own watchdog ends it at --max-seconds, default 150).
# Exit status: the benchmark's (0 all checks passed, 2 a mismatch or error, 3 watchdog or
# aborted, 77 no GPU), 1 when the build fails.
set -u
out=${1:?usage: bash bench/run_segmented.sh OUTDIR [gridsync-bench-segmented options]}
shift
mkdir -p "$out" || exit 1
out=$(cd "$out" && pwd)
cd "$(dirname "$0")/.." || exit 1
root=$PWD
builddir=${BUILDDIR:-build-bench}
archs=${ARCHS:-90}
timeout_s=${BENCH_TIMEOUT:-180}
if ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then
    PATH=/usr/local/cuda/bin:$PATH
    export PATH
fi
exec > >(tee "$out/run.log") 2>&1

step() { printf '\n=== %s (%s)\n' "$*" "$(date +%T)"; }
t_start=$(date +%s)

for tool in meson ninja nvcc; do
    command -v "$tool" >/dev/null 2>&1 || { echo "run_segmented.sh: $tool not found (PATH=$PATH)"; exit 1; }
done

step "machine"
{
    echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "host: $(hostname)"
    echo "command: bash bench/run_segmented.sh $out $*"
    echo "repo: $root"
    if git -C "$root" rev-parse HEAD >/dev/null 2>&1; then
        echo "git commit: $(git -C "$root" rev-parse HEAD)"
        dirty=$(git -C "$root" status --porcelain --untracked-files=no 2>/dev/null | wc -l)
        echo "git: $dirty tracked files modified against that commit"
        git -C "$root" status --porcelain --untracked-files=no 2>/dev/null | sed 's/^/  /'
    else
        echo "git commit: unknown (no .git in this copy of the tree)"
    fi
    # Identifies the exact sources even without git (or with uncommitted changes).
    echo "source checksum (api core backends bench meson files): $(cd "$root" &&
        find api core backends bench meson.build meson_options.txt -type f \( -name '*.c' -o -name '*.h' \
            -o -name '*.cu' -o -name '*.cuh' -o -name '*.py' -o -name '*.sh' -o -name '*.map' -o -name 'meson*' \) \
            -print0 2>/dev/null | sort -z | xargs -0 sha256sum | sha256sum | cut -c1-16)"
    echo "build: BUILDDIR=$builddir ARCHS=$archs"
    echo
    echo "nvidia-smi:"
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem,power.limit,pci.bus_id \
        --format=csv 2>&1 | sed 's/^/  /'
    nvidia-smi 2>&1 | sed 's/^/  /'
    echo "nvcc: $(nvcc --version | tail -2 | tr '\n' ' ')"
    echo "meson: $(meson --version), ninja: $(ninja --version)"
} >"$out/env.txt" 2>&1
cat "$out/env.txt"

step "build (cuda-archs=$archs, -Dbench=enabled)"
# A build folder configured for another source tree (e.g. copied from elsewhere) is redone;
# one configured for this tree (bench/run.sh's, or any other) is reused as it is.
if [ -f "$builddir/build.ninja" ] &&
    ! grep -q "\"source\": \"$root\"" "$builddir/meson-info/meson-info.json" 2>/dev/null; then
    echo "run_segmented.sh: $builddir was configured for another source tree: starting it afresh"
    rm -rf "$builddir"
fi
if [ ! -f "$builddir/build.ninja" ]; then
    meson setup "$builddir" -Dcuda-archs="$archs" -Dbench=enabled -Dtests=false -Dtool=false \
        >"$out/build.log" 2>&1 || { tail -40 "$out/build.log"; echo "run_segmented.sh: meson setup failed"; exit 1; }
else
    echo "reusing $builddir (its cuda-archs as configured there)"
    meson configure "$builddir" -Dbench=enabled >>"$out/build.log" 2>&1 ||
        { tail -40 "$out/build.log"; echo "run_segmented.sh: meson configure failed"; exit 1; }
fi
if ! ninja -C "$builddir" >>"$out/build.log" 2>&1; then
    # Something else in the tree may not build; what this benchmark needs may still.
    tail -30 "$out/build.log"
    targets=$(ninja -C "$builddir" -t targets all 2>/dev/null | grep -o '^backends/gridsync-[A-Za-z0-9_]*\.so' | sort -u)
    echo "run_segmented.sh: the full build failed; building only the benchmark and the backends:" $targets
    ninja -C "$builddir" bench/gridsync-bench-segmented $targets >>"$out/build.log" 2>&1 ||
        { tail -60 "$out/build.log"; echo "run_segmented.sh: build failed"; exit 1; }
fi
case $builddir in /*) builddir_abs=$builddir ;; *) builddir_abs=$root/$builddir ;; esac
[ -x "$builddir/bench/gridsync-bench-segmented" ] ||
    { echo "run_segmented.sh: $builddir/bench/gridsync-bench-segmented was not built"; exit 1; }
echo "built in $(($(date +%s) - t_start)) s: $builddir/bench/gridsync-bench-segmented"

step "benchmark"
bench=("$builddir/bench/gridsync-bench-segmented" --csv "$out/segmented.csv" --summary "$out/segmented_summary.txt" "$@")
echo "bench command: GRIDSYNC_BACKEND_PATH=$builddir_abs/backends ${bench[*]}" | tee -a "$out/env.txt"
unset GRIDSYNC_BACKEND GRIDSYNC_DEBUG
t_bench=$(date +%s)
GRIDSYNC_BACKEND_PATH="$builddir_abs/backends" timeout -k 10 "$timeout_s" "${bench[@]}"
rc=$?
case $rc in
0) verdict="all checks passed" ;;
2) verdict="some result MISMATCHED or a call failed (see segmented_summary.txt and the CSV's check column)" ;;
3) verdict="cut short (watchdog, hung kernel or a broken CUDA context)" ;;
77) verdict="no GPU" ;;
124 | 137) verdict="killed by timeout after $timeout_s s" ;;
*) verdict="failed" ;;
esac
echo "gridsync-bench-segmented exit status: $rc ($verdict), $(($(date +%s) - t_bench)) s" | tee -a "$out/env.txt"

step "plot"
if [ -s "$out/segmented.csv" ] && [ "$(wc -l <"$out/segmented.csv")" -gt 1 ]; then
    python3 bench/plot_segmented.py "$out/segmented.csv" "$out/segmented.png" ||
        echo "run_segmented.sh: plot_segmented.py failed (the CSV is still there)"
else
    echo "run_segmented.sh: no measurements in the CSV: no plot"
fi

step "done in $(($(date +%s) - t_start)) s"
ls -l "$out"
exit $rc

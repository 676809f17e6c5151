#!/bin/bash
# The benchmark of issue 4 in one go, for a GPU machine (bench/README.md):
# build with -Dbench=enabled, run the sweep, plot, and record how it was made.
#
#   bash bench/run.sh OUTDIR [gridsync-bench options, e.g. --quick or --sizes 10-24]
#
# OUTDIR receives: bench.csv (one row per measurement, written as it goes), summary.txt
# (the ratios against issue 4's targets), bench_time.png, bench_gbps.png, bench_ratio.png,
# env.txt (exact command, GPU, driver, toolkit, git commit), run.log (everything printed),
# build.log. Environment: BUILDDIR (default build-bench), ARCHS (default 90, the H100's;
# "auto" builds every architecture and takes much longer), BENCH_TIMEOUT (seconds, default
# 540; the program's own watchdog ends it at --max-seconds, default 420).
# Exit status: the benchmark's (0 all checks passed, 2 a mismatch or error, 3 watchdog or
# aborted sweep, 77 no GPU), 1 when the build fails.
set -u
out=${1:?usage: bash bench/run.sh OUTDIR [gridsync-bench options]}
shift
mkdir -p "$out" || exit 1
out=$(cd "$out" && pwd)
cd "$(dirname "$0")/.." || exit 1
root=$PWD
builddir=${BUILDDIR:-build-bench}
archs=${ARCHS:-90}
if ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then
    PATH=/usr/local/cuda/bin:$PATH
    export PATH
fi
exec > >(tee "$out/run.log") 2>&1

step() { printf '\n=== %s (%s)\n' "$*" "$(date +%T)"; }
t_start=$(date +%s)

for tool in meson ninja nvcc; do
    command -v "$tool" >/dev/null 2>&1 || { echo "run.sh: $tool not found (PATH=$PATH)"; exit 1; }
done

step "machine"
{
    echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "host: $(hostname)"
    echo "command: bash bench/run.sh $out $*"
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
# A build folder configured for another source tree (e.g. copied from elsewhere) is redone.
if [ -f "$builddir/build.ninja" ] &&
    ! grep -q "\"source\": \"$root\"" "$builddir/meson-info/meson-info.json" 2>/dev/null; then
    echo "run.sh: $builddir was configured for another source tree: starting it afresh"
    rm -rf "$builddir"
fi
if [ ! -f "$builddir/build.ninja" ]; then
    meson setup "$builddir" -Dcuda-archs="$archs" -Dbench=enabled -Dtests=false -Dtool=false \
        >"$out/build.log" 2>&1 || { tail -40 "$out/build.log"; echo "run.sh: meson setup failed"; exit 1; }
else
    meson configure "$builddir" -Dbench=enabled >>"$out/build.log" 2>&1 ||
        { tail -40 "$out/build.log"; echo "run.sh: meson configure failed"; exit 1; }
fi
ninja -C "$builddir" >>"$out/build.log" 2>&1 || { tail -60 "$out/build.log"; echo "run.sh: build failed"; exit 1; }
echo "built in $(($(date +%s) - t_start)) s: $builddir/bench/gridsync-bench"

step "sweep"
bench=("$builddir/bench/gridsync-bench" --csv "$out/bench.csv" --summary "$out/summary.txt" "$@")
echo "bench command: GRIDSYNC_BACKEND_PATH=$root/$builddir/backends ${bench[*]}" | tee -a "$out/env.txt"
unset GRIDSYNC_BACKEND GRIDSYNC_DEBUG
GRIDSYNC_BACKEND_PATH="$root/$builddir/backends" timeout -k 10 "${BENCH_TIMEOUT:-540}" "${bench[@]}"
rc=$?
case $rc in
0) verdict="all checks passed" ;;
2) verdict="some result MISMATCHED or a call failed (see summary.txt and the CSV's check column)" ;;
3) verdict="the sweep was cut short (watchdog or a broken CUDA context)" ;;
77) verdict="no GPU" ;;
124 | 137) verdict="killed by timeout after ${BENCH_TIMEOUT:-540} s" ;;
*) verdict="failed" ;;
esac
echo "gridsync-bench exit status: $rc ($verdict)" | tee -a "$out/env.txt"

step "plot"
if [ -s "$out/bench.csv" ]; then
    python3 bench/plot.py "$out/bench.csv" "$out" || echo "run.sh: plot.py failed (the CSV is still there)"
fi

step "done in $(($(date +%s) - t_start)) s"
ls -l "$out"
exit $rc

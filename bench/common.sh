# shellcheck shell=bash disable=SC2034,SC2086,SC2154
# (sourced: the callers set out, root, builddir and archs, and read builddir_abs and t_start;
# $targets below is split on purpose, one word per backend)
# Shared by bench/run.sh and bench/run_segmented.sh (sourced, not run): the setup (OUTDIR,
# the source tree, BUILDDIR and ARCHS), the start (nvcc on PATH, everything printed also to
# OUTDIR/run.log), the tool check, the "machine" step that writes OUTDIR/env.txt, and the
# build step. The callers set out (OUTDIR as given) and call bench_setup, which sets:
#   out       OUTDIR, made, absolute
#   root      the source tree (the current directory from then on)
#   builddir  BUILDDIR as given (relative to root, or absolute; default build-bench)
#   archs     ARCHS (default 90, the H100's)
# and keep their own benchmark, verdict and plot steps.

# OUTDIR made and absolute, the source tree (the script's ../) the current directory, the
# build settings from the environment; then bench_start.
bench_setup() {
    mkdir -p "$out" || exit 1
    out=$(cd "$out" && pwd)
    cd "$(dirname "$0")/.." || exit 1
    root=$PWD
    builddir=${BUILDDIR:-build-bench}
    archs=${ARCHS:-90}
    bench_start
}

# nvcc from /usr/local/cuda/bin when PATH has none; from here on everything printed goes to
# the terminal and to $out/run.log; t_start for the "built in" and "done in" times.
bench_start() {
    if ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then
        PATH=/usr/local/cuda/bin:$PATH
        export PATH
    fi
    exec > >(tee "$out/run.log") 2>&1
    t_start=$(date +%s)
}

step() { printf '\n=== %s (%s)\n' "$*" "$(date +%T)"; }

# bench_check_tools PROG: exits 1 when meson, ninja or nvcc is missing.
bench_check_tools() {
    local tool
    for tool in meson ninja nvcc; do
        command -v "$tool" >/dev/null 2>&1 || { echo "$1: $tool not found (PATH=$PATH)"; exit 1; }
    done
}

# builddir_abs: the build folder as an absolute path (BUILDDIR may be either).
bench_builddir_abs() {
    case $builddir in /*) builddir_abs=$builddir ;; *) builddir_abs=$root/$builddir ;; esac
}

# bench_machine_step PROG ARGS...: the "machine" step: writes $out/env.txt (the command as
# "bash bench/PROG $out ARGS...", date, host, git commit and modified files, a checksum of
# the sources, the build settings, nvidia-smi, nvcc and meson versions) and prints it.
bench_machine_step() {
    local prog=$1
    shift
    step "machine"
    {
        echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
        echo "host: $(hostname)"
        echo "command: bash bench/$prog $out $*"
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
                -print0 2>/dev/null | LC_ALL=C sort -z | xargs -0 sha256sum | sha256sum | cut -c1-16)"
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
}

# bench_build_step PROG EXE [--reuse-note] [--partial]: the build step into $builddir
# (build log: $out/build.log), for bench/EXE. A build folder configured for another source
# tree (e.g. copied from elsewhere) is redone; one configured for this tree is reused as it
# is (meson configure -Dbench=enabled; --reuse-note says so). A failed build exits 1;
# with --partial, a failed full build is followed by one of only bench/EXE and the
# backends, and EXE must then exist. Prints "built in N s: $builddir/bench/EXE".
bench_build_step() {
    local prog=$1 exe=$2 reuse_note=false partial=false targets
    shift 2
    while [ $# -gt 0 ]; do
        case $1 in
        --reuse-note) reuse_note=true ;;
        --partial) partial=true ;;
        esac
        shift
    done
    step "build (cuda-archs=$archs, -Dbench=enabled)"
    if [ -f "$builddir/build.ninja" ] &&
        ! grep -q "\"source\": \"$root\"" "$builddir/meson-info/meson-info.json" 2>/dev/null; then
        echo "$prog: $builddir was configured for another source tree: starting it afresh"
        rm -rf "$builddir"
    fi
    if [ ! -f "$builddir/build.ninja" ]; then
        meson setup "$builddir" -Dcuda-archs="$archs" -Dbench=enabled -Dtests=false -Dtool=false \
            >"$out/build.log" 2>&1 || { tail -40 "$out/build.log"; echo "$prog: meson setup failed"; exit 1; }
    else
        $reuse_note && echo "reusing $builddir (its cuda-archs as configured there)"
        meson configure "$builddir" -Dbench=enabled >>"$out/build.log" 2>&1 ||
            { tail -40 "$out/build.log"; echo "$prog: meson configure failed"; exit 1; }
    fi
    if ! $partial; then
        ninja -C "$builddir" >>"$out/build.log" 2>&1 || { tail -60 "$out/build.log"; echo "$prog: build failed"; exit 1; }
    else
        if ! ninja -C "$builddir" >>"$out/build.log" 2>&1; then
            # Something else in the tree may not build; what this benchmark needs may still.
            tail -30 "$out/build.log"
            targets=$(ninja -C "$builddir" -t targets all 2>/dev/null | grep -o '^backends/gridsync-[A-Za-z0-9_]*\.so' | sort -u)
            echo "$prog: the full build failed; building only the benchmark and the backends:" $targets
            ninja -C "$builddir" "bench/$exe" $targets >>"$out/build.log" 2>&1 ||
                { tail -60 "$out/build.log"; echo "$prog: build failed"; exit 1; }
        fi
        [ -x "$builddir/bench/$exe" ] ||
            { echo "$prog: $builddir/bench/$exe was not built"; exit 1; }
    fi
    echo "built in $(($(date +%s) - t_start)) s: $builddir/bench/$exe"
}

# bench_run NAME LIMIT SUMMARY ARGS...: $builddir/bench/NAME ARGS... with the build tree's
# backends, under a LIMIT-second timeout; sets rc to its exit status and adds the command
# and a verdict to env.txt (SUMMARY names the file that says more about a mismatch).
bench_run() {
    local name=$1 limit=$2 summary=$3
    shift 3
    local cmd=("$builddir/bench/$name" "$@") t0 verdict
    echo "bench command: GRIDSYNC_BACKEND_PATH=$builddir_abs/backends ${cmd[*]}" | tee -a "$out/env.txt"
    unset GRIDSYNC_BACKEND GRIDSYNC_DEBUG
    t0=$(date +%s)
    GRIDSYNC_BACKEND_PATH="$builddir_abs/backends" timeout -k 10 "$limit" "${cmd[@]}"
    rc=$?
    case $rc in
    0) verdict="all checks passed" ;;
    2) verdict="some result MISMATCHED or a call failed (see $summary and the CSV's check column)" ;;
    3) verdict="cut short (watchdog, hung kernel or a broken CUDA context)" ;;
    77) verdict="no GPU" ;;
    124 | 137) verdict="killed by timeout after $limit s" ;;
    *) verdict="failed" ;;
    esac
    echo "$name exit status: $rc ($verdict), $(($(date +%s) - t0)) s" | tee -a "$out/env.txt"
}

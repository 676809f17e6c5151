#!/bin/bash
# Grid-size sweep of the gs_reduce kernels for each launch-policy variant (bench/tune.cu):
#   bash bench/tune.sh OUTDIR [VARIANT...]
# A variant is BACKEND-THREADS-LOADS (cuda_sm20-256-4). BACKEND-THREADS-LOADS-old builds
# the kernels of the copy of backends/ in $TUNE_OLD_BACKENDS instead (a previous version,
# `git archive REV backends | tar x -C DIR` and TUNE_OLD_BACKENDS=DIR/backends, to
# compare; the grid it marks as the default is the current policy's); BACKEND-THREADS-LOADS-NAME with -DNAME=1 (an experiment kept
# behind a macro while it is measured). Writes OUTDIR/tune-<variant>.csv and .log; needs
# nvcc and a GPU (exit 77 without one). TUNE_BUILD_ONLY=1: build OUTDIR/tune-<variant>
# only (bench/ncu.sh); TUNE_SKIP_BUILD=1: run the programs an earlier TUNE_BUILD_ONLY
# call built (so that nothing else loads the machine while they are timed); TUNE_ARCH: the
# compute capability (e.g. 90) when no GPU is asked; TUNE_PROGRAM=placement: build (and
# run) bench/placement.cu the same way, as OUTDIR/placement-<variant>.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
out=${1:?usage: tune.sh OUTDIR [VARIANT...]}
shift
mkdir -p "$out"
variants=("$@")
prog=${TUNE_PROGRAM:-tune}
case $prog in
tune | placement) ;;
*) echo "tune.sh: TUNE_PROGRAM is tune or placement, not '$prog'" >&2; exit 2 ;;
esac
[ ${#variants[@]} -gt 0 ] || variants=(cuda_sm20-256-4 cuda_sm11_compat-256-4)
arch=${TUNE_ARCH:-$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d .)}
[ -n "$arch" ] || { echo "tune.sh: no GPU" >&2; exit 77; }

build() {
    local v=$1 backends=$root/backends backend threads loads extra define=()
    IFS=- read -r backend threads loads extra <<<"$v"
    case "$extra" in
    old) backends=${TUNE_OLD_BACKENDS:?TUNE_OLD_BACKENDS: where the old copy of backends/ is} ;;
    '') ;;
    *) define=("-D$extra=1") ;;
    esac
    # $backends first (an -old variant's kernels), then the current dispatch/grid.h
    [ "$backend" = cuda_sm11_compat ] && define+=(-DGS_BACKEND_COMPAT=1)
    nvcc -std=c++17 -O3 -lineinfo -arch=sm_$arch -I "$backends/common" -I "$root/backends/common" \
        -I "$root/api" -I "$backends" -I "$backends/$backend" -I "$here" -I "$root/hostref" -I "$root/internal" \
        "-DTUNE_KERNELS=\"$backend/kernels.cu\"" "-DTUNE_VARIANT=\"$v\"" \
        -DGS_BACKEND_BLOCK="$threads" -DGS_BACKEND_ITEMS="$loads" "${define[@]}" \
        -o "$out/$prog-$v" "$here/$prog.cu" "$root/hostref/values.c" "$root/hostref/reduce.c"
}
if [ -z "${TUNE_SKIP_BUILD:-}" ]; then
    for v in "${variants[@]}"; do build "$v" & done
    wait
fi
[ -z "${TUNE_BUILD_ONLY:-}" ] || exit 0
for v in "${variants[@]}"; do
    exe=$out/$prog-$v
    [ -x "$exe" ] || { echo "tune.sh: $v did not build" >&2; continue; }
    "$exe" ${TUNE_ARGS:-} >"$exe.csv" 2>"$exe.log" || echo "tune.sh: $v exited $? (see $exe.log)" >&2
done

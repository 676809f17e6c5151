#!/bin/bash
# Nsight Compute profiles of gs_reduce kernels, one launch each at the grid the backend
# would choose (bench/tune.cu --default-grid, a warm launch after 40 others):
#   bash bench/ncu.sh OUTDIR VARIANT LOG2N[,LOG2N...] KERNEL...
# VARIANT as in bench/tune.sh (cuda_sm20-256-4); KERNEL a kernel of tune.cu's list
# (gs_reduce_f32_argmax_i64). Writes, per kernel, OUTDIR/<kernel>-<log2n>.ncu-rep (ncu
# --set full), its details page as CSV (-details.csv: durations, throughputs, warp
# states) and its SASS source page with the samples per instruction (-sass.csv).
# NCU_ARGS: more options for ncu (--cache-control none --clock-control none to profile
# the hot, unlocked case the benchmark times). Needs nvcc, ncu and a GPU (exit 77 without
# one).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:?usage: ncu.sh OUTDIR VARIANT LOG2N[,LOG2N...] KERNEL...}
variant=${2:?usage: ncu.sh OUTDIR VARIANT LOG2N[,LOG2N...] KERNEL...}
sizes=${3:?usage: ncu.sh OUTDIR VARIANT LOG2N[,LOG2N...] KERNEL...}
shift 3
[ $# -gt 0 ] || { echo "ncu.sh: name at least one kernel" >&2; exit 2; }
command -v ncu >/dev/null || { echo "ncu.sh: no ncu" >&2; exit 77; }
mkdir -p "$out"
TUNE_BUILD_ONLY=1 bash "$here/tune.sh" "$out" "$variant"
exe=$out/tune-$variant
[ -x "$exe" ] || { echo "ncu.sh: $variant did not build" >&2; exit 1; }
status=0
for lg in ${sizes//,/ }; do
for k in "$@"; do
    rep=$out/$k-$lg
    # shellcheck disable=SC2086
    if ! ncu --kernel-name "$k" --launch-skip 40 --launch-count 1 --set full --import-source yes ${NCU_ARGS:-} -f -o "$rep" \
        "$exe" --only "$k" --min-log2 "$lg" --max-log2 "$lg" --default-grid >"$rep.log" 2>&1; then
        echo "ncu.sh: profiling $k failed (see $rep.log)" >&2
        status=1
        continue
    fi
    ncu -i "$rep.ncu-rep" --page details --csv >"$rep-details.csv"
    ncu -i "$rep.ncu-rep" --page source --csv --print-source sass >"$rep-sass.csv" 2>&1 ||
        echo "ncu.sh: no SASS source page for $k (see $rep-sass.csv)" >&2
done
done
exit $status

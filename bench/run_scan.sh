#!/bin/bash
# The gs_scan benchmark in one go, for a GPU machine: build with -Dbench=enabled, run
# gridsync-bench-scan (gs_scan against CUB's InclusiveSum and a device-to-device copy,
# bench/bench_scan.cu), plot, and record how it was made.
#
#   bash bench/run_scan.sh [OUTDIR] [gridsync-bench-scan options, e.g. --quick or --dtypes f32]
#
# OUTDIR (default bench/results/<gpu>/scan, <gpu> the name nvidia-smi gives, lower case,
# spaces as dashes, e.g. nvidia-h200) receives: scan.csv (dtype,n,impl,us,gbps, written as
# it goes), command.txt (the command, GPU, driver, toolkit, git commit), scan.png (time
# ratios against n), run.log, build.log. Environment: BUILDDIR (default build-bench), ARCHS
# (default 90), BENCH_TIMEOUT (seconds, default 1500; the program's own watchdog ends it at
# --max-seconds, default 1200). Exit status: the benchmark's (0 all checks passed, 2 a
# mismatch or error, 3 watchdog or a fatal error, 77 no GPU), 1 when the build fails.
set -u
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1 | tr 'A-Z ' 'a-z-')
if [ $# -gt 0 ] && [ "${1#-}" = "$1" ]; then
    out=$1
    shift
else
    out=$(dirname "$0")/results/${gpu:-unknown-gpu}/scan
fi
# shellcheck source=bench/common.sh
. "$(dirname "$0")/common.sh" || exit 1
bench_setup

bench_check_tools run_scan.sh
bench_machine_step run_scan.sh "$@"
bench_build_step run_scan.sh gridsync-bench-scan --partial
bench_builddir_abs

step "sweep"
bench_run gridsync-bench-scan "${BENCH_TIMEOUT:-1500}" scan.csv --csv "$out/scan.csv" "$@"
# command.txt: what env.txt says, led by the exact command that made scan.csv
{
    echo "command: bash bench/run_scan.sh $out $*"
    grep -E '^(bench command|gridsync-bench-scan exit status):' "$out/env.txt"
    grep -vE '^(command|bench command|gridsync-bench-scan exit status):' "$out/env.txt"
} >"$out/command.txt"

step "plot"
if [ -s "$out/scan.csv" ]; then
    python3 bench/plot_scan.py "$out/scan.csv" "$out/scan.png" || echo "run_scan.sh: plot_scan.py failed (the CSV is still there)"
fi

step "done in $(($(date +%s) - t_start)) s"
ls -l "$out"
exit $rc

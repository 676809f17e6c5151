#!/bin/bash
# The gs_reduce benchmark in one go, for a GPU machine (bench/README.md):
# build with -Dbench=enabled, run the sweep, plot, and record how it was made.
#
#   bash bench/run.sh OUTDIR [gridsync-bench options, e.g. --quick or --sizes 10-24]
#
# OUTDIR receives: bench.csv (one row per measurement, written as it goes), summary.txt
# (the ratios against bench/README.md's targets), bench_time.png, bench_gbps.png, bench_ratio.png,
# env.txt (exact command, GPU, driver, toolkit, git commit), run.log (everything printed),
# build.log. Environment: BUILDDIR (default build-bench), ARCHS (default 90, the H100's;
# "auto" builds every architecture and takes much longer), BENCH_TIMEOUT (seconds, default
# 540; the program's own watchdog ends it at --max-seconds, default 420).
# Exit status: the benchmark's (0 all checks passed, 2 a mismatch or error, 3 watchdog or
# aborted sweep, 77 no GPU), 1 when the build fails.
set -u
out=${1:?usage: bash bench/run.sh OUTDIR [gridsync-bench options]}
shift
# shellcheck source=bench/common.sh
. "$(dirname "$0")/common.sh" || exit 1
bench_setup

bench_check_tools run.sh
bench_machine_step run.sh "$@"
bench_build_step run.sh gridsync-bench
bench_builddir_abs

step "sweep"
bench_run gridsync-bench "${BENCH_TIMEOUT:-540}" summary.txt --csv "$out/bench.csv" --summary "$out/summary.txt" "$@"

step "plot"
if [ -s "$out/bench.csv" ]; then
    python3 bench/plot.py "$out/bench.csv" "$out" || echo "run.sh: plot.py failed (the CSV is still there)"
fi

step "done in $(($(date +%s) - t_start)) s"
ls -l "$out"
exit $rc

#!/bin/bash
# The segmented-reduction benchmark in one go, for a GPU machine
# (bench/README.md, "Segmented reduction"): build with -Dbench=enabled, run
# gridsync-bench-segmented (gs_segmented_reduce per backend against
# cub::DeviceSegmentedReduce::Sum on four layouts), plot, and record how it was made.
#
#   bash bench/run_segmented.sh OUTDIR [gridsync-bench-segmented options, e.g. --quick]
#
# OUTDIR receives: segmented.csv (one row per layout x implementation, written as it goes),
# segmented_summary.txt (throughput ratios against bench/README.md's targets, met / NOT MET per
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
timeout_s=${BENCH_TIMEOUT:-180}
# shellcheck source=bench/common.sh
. "$(dirname "$0")/common.sh" || exit 1
bench_setup

bench_check_tools run_segmented.sh
bench_machine_step run_segmented.sh "$@"
# An existing build folder configured for this tree (bench/run.sh's, or any other) is
# reused as it is; if something else in the tree does not build, only the benchmark and
# the backends are.
bench_build_step run_segmented.sh gridsync-bench-segmented --reuse-note --partial
bench_builddir_abs

step "benchmark"
bench_run gridsync-bench-segmented "$timeout_s" segmented_summary.txt --csv "$out/segmented.csv" \
    --summary "$out/segmented_summary.txt" "$@"

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

#!/bin/bash
# compute-sanitizer's four tools (memcheck, racecheck, synccheck, initcheck) over both gpu
# programs in their quick mode (GS_TEST_QUICK=1), for each backend: 16 runs, at most
# SAN_JOBS (default 4) at a time, each under a time limit, each with its own log. One
# device call:
#   tests/sanitize.sh BUILDDIR OUTDIR
# Prints one line per run (the tool's summary and the exit status); exits 1 if any run
# reported an error or failed. SAN_TIMEOUT: seconds per run (default 300); PROGRAMS: which
# of the two programs (default both).
set -u
build=${1:?usage: tests/sanitize.sh BUILDDIR OUTDIR}
out=${2:?usage: tests/sanitize.sh BUILDDIR OUTDIR}
mkdir -p "$out"
build=$(cd "$build" && pwd)
export GRIDSYNC_BACKEND_PATH="$build/backends" GS_TEST_QUICK=1
runs=()
for b in cuda_sm20 cuda_sm11_compat; do
    for t in memcheck racecheck synccheck initcheck; do
        for p in ${PROGRAMS:-test_gpu_reduce test_gpu_concurrency}; do
            runs+=("$t $b $p")
        done
    done
done
one() {
    set -- $1
    log="$out/san-$1-$2-$3.log"
    GRIDSYNC_BACKEND=$2 timeout -k 5 "${SAN_TIMEOUT:-300}" compute-sanitizer --tool "$1" --error-exitcode 9 \
        "$build/tests/gpu/$3" >"$log" 2>&1
    echo "exit status $?" >>"$log"
}
i=0
for r in "${runs[@]}"; do
    one "$r" &
    i=$((i + 1))
    [ $((i % ${SAN_JOBS:-4})) = 0 ] && wait
done
wait
status=0
for r in "${runs[@]}"; do
    set -- $r
    log="$out/san-$1-$2-$3.log"
    printf '%-9s %-16s %-20s %s | %s\n' "$1" "$2" "$3" \
        "$(grep -m1 -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$log" | sed 's/^========= //')" "$(tail -1 "$log")"
    tail -1 "$log" | grep -q "exit status 0" || status=1
done
exit $status

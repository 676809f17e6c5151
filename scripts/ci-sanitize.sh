#!/bin/sh
# The CPU suites (unit, loader) under the sanitizers and under valgrind, for CI (no GPU):
#   1. a build with -Db_sanitize=address,undefined (UBSan fatal: -fno-sanitize-recover=all),
#      its unit and loader suites;
#   2. a plain build, its unit and loader suites under valgrind memcheck: no errors, no
#      definite or indirect leaks (tests/valgrind.supp: suppressions for outside code only).
# Both phases always run; the exit status is non-zero if either failed.
#
#   scripts/ci-sanitize.sh            both
#   scripts/ci-sanitize.sh asan       only the sanitizer build (or: valgrind)
#
# Environment: SAN_BUILD, VG_BUILD (build directories, default /tmp/gridsync-asan and
# /tmp/gridsync-valgrind; reused when they exist), CUDA_ARCHS (default 90: one
# architecture keeps the nvcc part of the build short; no GPU is used).
# Needs meson, ninja, a C compiler, python3 and valgrind (installed with apt-get when
# missing) and the CUDA toolkit's nvcc (not installed by this script).
set -eu

root=$(cd "$(dirname "$0")/.." && pwd)
san_build=${SAN_BUILD:-/tmp/gridsync-asan}
vg_build=${VG_BUILD:-/tmp/gridsync-valgrind}
archs=${CUDA_ARCHS:-90}
phases=${*:-asan valgrind}
jobs=$(nproc 2>/dev/null || echo 2)
start=$(date +%s)

want() {
    case " $phases " in *" $1 "*) return 0 ;; esac
    return 1
}

# ---- tools ---------------------------------------------------------------------------
# shellcheck source=scripts/ci-tools.sh
. "$root/scripts/ci-tools.sh"
need meson:meson ninja:ninja-build cc:gcc python3:python3
! want valgrind || need valgrind:valgrind
need_nvcc

# build DIR OPTIONS...: configures DIR (reused when it exists) and builds it; on failure
# says so with the end of the log.
build() {
    dir=$1
    shift
    if [ -f "$dir/build.ninja" ]; then
        meson setup --reconfigure "$dir" "$root" "$@" >"$dir.setup.log" 2>&1
    else
        rm -rf "$dir"
        meson setup "$dir" "$root" "$@" >"$dir.setup.log" 2>&1
    fi || { cat "$dir.setup.log" >&2; return 1; }
    ninja -C "$dir" >"$dir.build.log" 2>&1 || {
        echo "FAIL: the build in $dir; $dir.build.log ends:" >&2
        tail -30 "$dir.build.log" >&2
        return 1
    }
    echo "   built in $(($(date +%s) - t)) s"
}

# suites WHAT DIR [meson test options...]: the unit and loader suites of DIR; prints the
# counts, or the failures (WHAT names the run) and returns 1.
suites() {
    what=$1 dir=$2
    shift 2
    if meson test -C "$dir" --no-rebuild --suite unit --suite loader --print-errorlogs \
            --num-processes "$jobs" "$@" >"$dir.test.log" 2>&1; then
        grep -E '^(Ok|Fail|Skipped|Timeout):' "$dir.test.log" | tr -s ' ' | tr '\n' ' '
        echo
        return 0
    fi
    echo "FAIL: the unit/loader suites under $what; from $dir.test.log:" >&2
    sed -n '/^Summary of Failures/,$p' "$dir.test.log" >&2
    return 1
}

status=0

# ---- 1. AddressSanitizer + UndefinedBehaviorSanitizer --------------------------------
if want asan; then
    t=$(date +%s)
    echo "== ASan+UBSan build in $san_build"
    # b_lundef=false: shared modules (backends, the fake driver) take the sanitizer
    # runtime from the executable. detect_leaks: LeakSanitizer at every exit;
    # halt_on_error: the first report fails the test (UBSan is fatal at compile time already).
    if ! build "$san_build" -Dbuildtype=debugoptimized -Db_sanitize=address,undefined -Db_lundef=false \
            -Dc_args=-fno-sanitize-recover=all -Dcuda-archs="$archs"; then
        status=1
    elif ! ASAN_OPTIONS=detect_leaks=1:halt_on_error=1:abort_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1 \
           UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 suites ASan+UBSan "$san_build"; then
        status=1
        # each report, from its first line to its SUMMARY line
        awk '/ERROR: [A-Za-z]+Sanitizer|runtime error:/ { p = 1 } p { print } /^SUMMARY: / { p = 0 }' \
            "$san_build/meson-logs/testlog.txt" | head -150 >&2 || true
    fi
    echo "   ASan+UBSan phase: $(($(date +%s) - t)) s"
fi

# ---- 2. valgrind memcheck ------------------------------------------------------------
if want valgrind; then
    t=$(date +%s)
    echo "== valgrind build in $vg_build"
    # --trace-children: the loader suite runs every case in a re-executed child, the
    # tool test runs the gridsync command from a shell script. Skipped: system programs
    # (sh, grep, ...) and the setuid copy the secure test makes (valgrind would run it
    # without its set-user-ID bit, so not in secure mode; that test then skips itself).
    vg="valgrind --tool=memcheck --trace-children=yes"
    vg="$vg --trace-children-skip=/bin/*,/usr/bin/*,/sbin/*,/usr/sbin/*,*/gridsync-secure-*/probe"
    vg="$vg --leak-check=full --show-leak-kinds=definite,indirect --errors-for-leak-kinds=definite,indirect"
    vg="$vg --error-exitcode=1 --num-callers=30 --suppressions=$root/tests/valgrind.supp -q"
    if ! build "$vg_build" -Dbuildtype=debugoptimized -Db_sanitize=none -Dcuda-archs="$archs"; then
        status=1
    # A test that cannot run under memcheck (valgrind computes x87 long double in 64 bits;
    # minutes of arithmetic) adds the suite no-valgrind to its own and is left out here.
    elif ! suites valgrind "$vg_build" --no-suite no-valgrind --timeout-multiplier 10 --wrapper "$vg"; then
        status=1
        grep -E '^==[0-9]+== ' "$vg_build/meson-logs/testlog-valgrind.txt" |
            grep -v -E 'possibly lost|still reachable' | head -120 >&2 || true
    fi
    echo "   valgrind phase: $(($(date +%s) - t)) s"
fi

echo "== ci-sanitize: $(($(date +%s) - start)) s, $([ $status = 0 ] && echo passed || echo FAILED)"
exit $status

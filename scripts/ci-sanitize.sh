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

as_root() {
    if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi
}

# ---- tools ---------------------------------------------------------------------------
missing=
command -v meson >/dev/null 2>&1 || missing="$missing meson"
command -v ninja >/dev/null 2>&1 || missing="$missing ninja-build"
command -v cc >/dev/null 2>&1 || missing="$missing gcc"
command -v python3 >/dev/null 2>&1 || missing="$missing python3"
want valgrind && { command -v valgrind >/dev/null 2>&1 || missing="$missing valgrind"; }
if [ -n "$missing" ]; then
    echo "== installing:$missing"
    as_root apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing
fi
# nvcc: on PATH, else where the toolkit usually is (/usr/local/bin may hold a wrapper).
if ! command -v nvcc >/dev/null 2>&1; then
    for d in /usr/local/bin /usr/local/cuda/bin; do
        [ -x "$d/nvcc" ] && PATH=$d:$PATH && break
    done
fi
command -v nvcc >/dev/null 2>&1 || { echo "nvcc not found: install the CUDA toolkit" >&2; exit 1; }
export PATH

# setup BUILD_DIR OPTIONS...: configures a build directory, reusing it when it exists.
setup() {
    dir=$1
    shift
    if [ -f "$dir/build.ninja" ]; then
        meson setup --reconfigure "$dir" "$root" "$@" >"$dir.setup.log" 2>&1
    else
        rm -rf "$dir"
        meson setup "$dir" "$root" "$@" >"$dir.setup.log" 2>&1
    fi || { cat "$dir.setup.log" >&2; return 1; }
}

status=0

# ---- 1. AddressSanitizer + UndefinedBehaviorSanitizer --------------------------------
if want asan; then
    t=$(date +%s)
    echo "== ASan+UBSan build in $san_build"
    # b_lundef=false: shared modules (backends, the fake driver) take the sanitizer
    # runtime from the executable.
    if setup "$san_build" -Dbuildtype=debugoptimized -Db_sanitize=address,undefined -Db_lundef=false \
            -Dc_args=-fno-sanitize-recover=all -Dcuda-archs="$archs" &&
        ninja -C "$san_build" >"$san_build.build.log" 2>&1; then
        echo "   built in $(($(date +%s) - t)) s"
        # detect_leaks: LeakSanitizer at every exit; halt_on_error: the first report fails
        # the test (UBSan is fatal at compile time already).
        if ASAN_OPTIONS=detect_leaks=1:halt_on_error=1:abort_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1 \
           UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
           meson test -C "$san_build" --no-rebuild --suite unit --suite loader --print-errorlogs \
                --num-processes "$jobs" >"$san_build.test.log" 2>&1; then
            grep -E '^(Ok|Fail|Skipped|Timeout):' "$san_build.test.log" | tr -s ' ' | tr '\n' ' '
            echo
        else
            status=1
            echo "FAIL: the unit/loader suites under ASan+UBSan; from $san_build.test.log:" >&2
            sed -n '/^Summary of Failures/,$p' "$san_build.test.log" >&2
            # each report, from its first line to its SUMMARY line
            awk '/ERROR: [A-Za-z]+Sanitizer|runtime error:/ { p = 1 } p { print } /^SUMMARY: / { p = 0 }' \
                "$san_build/meson-logs/testlog.txt" | head -150 >&2 || true
        fi
    else
        status=1
        echo "FAIL: the ASan+UBSan build; $san_build.build.log ends:" >&2
        tail -30 "$san_build.build.log" >&2
    fi
    echo "   ASan+UBSan phase: $(($(date +%s) - t)) s"
fi

# ---- 2. valgrind memcheck ------------------------------------------------------------
if want valgrind; then
    t=$(date +%s)
    echo "== valgrind build in $vg_build"
    if setup "$vg_build" -Dbuildtype=debugoptimized -Db_sanitize=none -Dcuda-archs="$archs" &&
        ninja -C "$vg_build" >"$vg_build.build.log" 2>&1; then
        echo "   built in $(($(date +%s) - t)) s"
        # --trace-children: the loader suite runs every case in a re-executed child, the
        # tool test runs the gridsync command from a shell script. Skipped: system programs
        # (sh, grep, ...) and the setuid copy the secure test makes (valgrind would run it
        # without its set-user-ID bit, so not in secure mode; that test then skips itself).
        vg="valgrind --tool=memcheck --trace-children=yes"
        vg="$vg --trace-children-skip=/bin/*,/usr/bin/*,/sbin/*,/usr/sbin/*,*/gridsync-secure-*/probe"
        vg="$vg --leak-check=full --show-leak-kinds=definite,indirect --errors-for-leak-kinds=definite,indirect"
        vg="$vg --error-exitcode=1 --num-callers=30 --suppressions=$root/tests/valgrind.supp -q"
        if meson test -C "$vg_build" --no-rebuild --suite unit --suite loader --print-errorlogs \
                --num-processes "$jobs" --timeout-multiplier 10 --wrapper "$vg" >"$vg_build.test.log" 2>&1; then
            grep -E '^(Ok|Fail|Skipped|Timeout):' "$vg_build.test.log" | tr -s ' ' | tr '\n' ' '
            echo
        else
            status=1
            echo "FAIL: the unit/loader suites under valgrind; from $vg_build.test.log:" >&2
            sed -n '/^Summary of Failures/,$p' "$vg_build.test.log" >&2
            grep -E '^==[0-9]+== ' "$vg_build/meson-logs/testlog-valgrind.txt" |
                grep -v -E 'possibly lost|still reachable' | head -120 >&2 || true
        fi
    else
        status=1
        echo "FAIL: the valgrind build; $vg_build.build.log ends:" >&2
        tail -30 "$vg_build.build.log" >&2
    fi
    echo "   valgrind phase: $(($(date +%s) - t)) s"
fi

echo "== ci-sanitize: $(($(date +%s) - start)) s, $([ $status = 0 ] && echo passed || echo FAILED)"
exit $status

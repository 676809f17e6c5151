#!/bin/sh
# The `gridsync` command without a GPU: usage errors exit 2 with a pointer to --help,
# --help and --version exit 0, and info/reduce/selftest on a machine with no CUDA driver
# print one clear line naming the reason and exit 3. Where a driver is installed (a GPU
# machine) the no-driver half is skipped: the gpu suite covers the command there.
#   test_tool.sh PATH-TO-gridsync EXPECTED-VERSION
set -u
tool=$1
version=$2
fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }

# expect RC PATTERN ARGS...: exit status RC and PATTERN (grep -E) in stdout+stderr.
expect() {
    want_rc=$1 pattern=$2
    shift 2
    out=$("$tool" "$@" 2>&1)
    rc=$?
    [ "$rc" = "$want_rc" ] || fail "gridsync $*: exit status $rc, want $want_rc; it printed: $out"
    printf '%s\n' "$out" | grep -Eq -- "$pattern" || fail "gridsync $*: no /$pattern/ in: $out"
}

expect 0 '^usage: gridsync' --help
expect 0 "^gridsync $version \\(libgridsync $version\\)\$" --version
expect 2 "unknown command 'bogus'" bogus
expect 2 "^usage: gridsync" # no command at all
expect 2 "unknown dtype 'nope'" reduce --dtype nope
expect 2 "unknown op" reduce --op median
expect 2 "count" reduce --count 12zz
expect 0 '^usage: gridsync reduce' reduce --help
expect 0 '^usage: gridsync selftest' selftest --help

if ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1 '; then
    echo "a CUDA driver is installed here: the no-driver checks are skipped"
else
    for cmd in info reduce selftest; do
        expect 3 '^gridsync: no CUDA driver: .*libcuda\.so\.1' "$cmd"
        lines=$("$tool" "$cmd" 2>&1 | wc -l)
        [ "$lines" = 1 ] || fail "gridsync $cmd without a driver printed $lines lines, want 1"
    done
fi
[ "$fails" = 0 ] && echo "ok" && exit 0
echo "$fails checks failed" >&2
exit 1

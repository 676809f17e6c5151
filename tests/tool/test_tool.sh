#!/bin/sh
# The `gridsync` command without a GPU: usage errors exit 2 with a pointer to --help,
# --help and --version exit 0; without a CUDA driver info/reduce/segmented/scan/selftest
# exit 3 with one clear line naming the reason (info also prints the library version,
# the backend directories and files, each directory once however many names it has, and a
# hint), GRIDSYNC_DEBUG=1 adds no line of the tool's that repeats the library's trace, and
# --json prints one object python parses.
# Where a driver is installed (a GPU machine) the no-driver half is skipped: the gpu
# suite covers the command there.
#   test_tool.sh PATH-TO-gridsync EXPECTED-VERSION BASH-COMPLETION-FILE [BACKEND-BUILD-DIR]
set -u
tool=$1
version=$2
completion=$3
backend_dir=${4:-}
fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# expect RC PATTERN ARGS...: exit status RC and PATTERN (grep -E) in stdout+stderr.
expect() {
    want_rc=$1 pattern=$2
    shift 2
    out=$("$tool" "$@" 2>&1)
    rc=$?
    [ "$rc" = "$want_rc" ] || fail "gridsync $*: exit status $rc, want $want_rc; it printed: $out"
    printf '%s\n' "$out" | grep -Eq -- "$pattern" || fail "gridsync $*: no /$pattern/ in: $out"
}

# json_check PYTHON-EXPRESSION ARGS...: stdout is one JSON object `o` for which the
# expression holds (stderr is not part of it).
json_check() {
    expr=$1
    shift
    "$tool" "$@" >"$tmp/out.json" 2>/dev/null
    python3 -c "import json, os, sys
o = json.load(open(sys.argv[1]))
sys.exit(0 if ($expr) else 1)" "$tmp/out.json" ||
        fail "gridsync $*: JSON does not parse or does not satisfy $expr: $(cat "$tmp/out.json")"
}

expect 0 '^usage: gridsync' --help
expect 0 "^gridsync $version \\(libgridsync $version\\)\$" --version
expect 2 "unknown command 'bogus'" bogus
expect 2 "^usage: gridsync" # no command at all
expect 2 "unknown dtype 'nope'" reduce --dtype nope
expect 2 "unknown dtype 'f17'" reduce --out-dtype f17
expect 2 "unknown op" reduce --op median
expect 2 "count" reduce --count 12zz
expect 2 "unknown option '--json=1'" info --json=1
expect 2 "unknown --layout 'zipf'" segmented --layout zipf
expect 2 "no offsets" segmented --offsets /dev/null
expect 2 "--offsets $tmp/none: No such file" segmented --offsets "$tmp/none"
printf '0 4 2 9\n' >"$tmp/bad-offsets"
expect 2 "offset 2 \\(2\\) is not within \\[4, 9\\]" segmented --offsets "$tmp/bad-offsets"
expect 2 "leave --segments out" segmented --offsets "$tmp/bad-offsets" --segments 3
expect 0 '^usage: gridsync reduce .*--out-dtype' reduce --help
expect 0 '^  --exact ' reduce --help
expect 2 "--data wide is for float SUM" reduce --data wide --op max
expect 2 "unknown --data 'narrow'" reduce --data narrow
expect 0 '^usage: gridsync segmented' segmented --help
expect 0 '^usage: gridsync segmented' help segmented
expect 0 '^usage: gridsync selftest' selftest --help
expect 0 '^usage: gridsync scan .*--out-dtype' scan --help
expect 0 '^  --exclusive ' scan --help
expect 0 '^usage: gridsync scan' help scan
expect 0 '^  scan ' --help
expect 2 "argmax has no scan" scan --op argmax
expect 2 "argmin has no scan" scan --op argmin --exclusive
expect 2 "unknown dtype 'f17'" scan --out-dtype f17
expect 2 "unknown option '--inclusive'" scan --inclusive
expect 2 "--data nan is for float MIN and MAX" scan --data nan --op sum
expect 2 "--data int is for float SUM" scan --dtype i32 --data int
expect 2 "count" scan --count 1Q
# --exact is GS_SCAN_EXACT's float SUM alone: the rest is refused before any driver is needed
expect 0 '^  --exact ' scan --help
expect 2 "--exact is for float SUM .*, not i32 sum" scan --exact --dtype int32
expect 2 "--exact is for float SUM .*, not u8 sum" scan --exact --dtype u8 --data int
expect 2 "--exact is for float SUM .*, not f32 max" scan --exact --op max
expect 2 "--exact is for float SUM .*, not f64 prod" scan --dtype f64 --op prod --exclusive --exact
expect 2 "--data nan is for float MIN and MAX" scan --exact --data nan

# The layouts (no device needed to print them): S+1 offsets from 0 to n, never
# decreasing; giant holds a segment of n/2; --offsets reads a printed layout back.
for layout in uniform power-law giant; do
    for shape in "0 0" "1 1" "7 13" "1000 1000003"; do
        set -- $shape
        "$tool" segmented --layout "$layout" --segments "$1" --count "$2" --seed 7 --print-offsets >"$tmp/off" ||
            fail "segmented --layout $layout --segments $1 --count $2 --print-offsets: exit status $?"
        python3 -c "import sys
o = [int(x) for x in open(sys.argv[1]).read().split()]
S, n, giant = int(sys.argv[2]), int(sys.argv[3]), sys.argv[4] == 'giant'
lens = [b - a for a, b in zip(o, o[1:])]
assert len(o) == S + 1 and o[0] == 0 and o[-1] == (n if S else 0), o[:3] + o[-3:]
assert min(lens or [0]) >= 0
assert not (giant and S > 1) or n // 2 in lens" "$tmp/off" "$1" "$2" "$layout" ||
            fail "segmented --layout $layout --segments $1 --count $2: bad offsets"
    done
done
"$tool" segmented --layout power-law --segments 50 --count 100000 --seed 3 --print-offsets >"$tmp/pl"
"$tool" segmented --offsets "$tmp/pl" --print-offsets >"$tmp/pl2"
cmp -s "$tmp/pl" "$tmp/pl2" || fail "segmented --offsets does not read back what --print-offsets printed"
[ "$(sort -un "$tmp/pl" | wc -l)" -gt 40 ] || fail "power-law: fewer than 40 distinct offsets of 51"

# Bash completion: the commands, options and values (bash-completion's helpers stubbed).
if command -v bash >/dev/null; then
    got=$(bash -c '
        _init_completion() { words=("${ARGS[@]}"); cword=$((${#words[@]} - 1)); cur=${words[cword]}; prev=${words[cword-1]}; }
        _filedir() { :; }; complete() { :; }
        . "$1"
        for line in "gridsync seg" "gridsync segmented --lay" "gridsync segmented --layout p" \
                    "gridsync reduce --out-dtype bf" "gridsync info --j" "gridsync sc" "gridsync scan --exc" \
                    "gridsync scan --op arg" "gridsync reduce --op arg" "gridsync scan --exa"; do
            read -ra ARGS <<<"$line"; [ "${line% }" != "$line" ] && ARGS+=("")
            COMPREPLY=(); _gridsync; echo "${COMPREPLY[*]}"
        done' _ "$completion")
    want=$(printf 'segmented\n--layout\npower-law\nbf16\n--json\nscan\n--exclusive\n\nargmin argmax\n--exact')
    [ "$got" = "$want" ] || fail "bash completion offered: $(echo "$got" | tr '\n' '|'), want: $(echo "$want" | tr '\n' '|')"
fi

if ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1 '; then
    echo "a CUDA driver is installed here: the no-driver checks are skipped"
else
    for cmd in info reduce segmented scan selftest; do
        expect 3 '^gridsync: no CUDA driver: .*libcuda\.so\.1' "$cmd"
        errs=$("$tool" "$cmd" 2>&1 >/dev/null | wc -l)
        [ "$errs" = 1 ] || fail "gridsync $cmd without a driver printed $errs lines on stderr, want 1"
        # the library traces the reason itself: the tool's own lines must not repeat it
        repeats=$(GRIDSYNC_DEBUG=1 "$tool" "$cmd" 2>&1 >/dev/null | grep -v '^gridsync: \(driver\|error\): ' |
            grep -c 'libcuda\.so\.1')
        [ "$repeats" = 0 ] || fail "gridsync $cmd with GRIDSYNC_DEBUG=1 repeats the library's reason $repeats times"
        json_check "o['command'] == '$cmd' and o['exit_status'] == 3 and 'libcuda.so.1' in o['error']" "$cmd" --json
    done
    for cmd in reduce scan; do
        out=$("$tool" "$cmd" 2>/dev/null)
        [ -z "$out" ] || fail "gridsync $cmd without a driver printed on stdout: $out"
    done
    json_check "o['command'] == 'scan' and o['exclusive'] is True and o['dtype'] == 'i8' and o['op'] == 'max' and o['out_dtype'] == 'i8' and o['count'] == 1000 and o['seed'] == 5 and o['exit_status'] == 3" \
        scan --json --exclusive --dtype int8 --op max --count 1000 --seed 5
    json_check "o['out_dtype'] == 'i64' and o['exclusive'] is False and o['exact'] is False" scan --json --dtype i32 --out-dtype int64
    json_check "o['command'] == 'scan' and o['exact'] is True and o['exclusive'] is True and o['dtype'] == 'bf16' and o['out_dtype'] == 'f32' and o['data'] == 'wide' and o['exit_status'] == 3" \
        scan --json --exact --exclusive --dtype bfloat16 --out-dtype f32 --data wide
    # info says what it can without a driver: versions, where backends are looked for,
    # each file found (a real one, and a file that is not a backend) and a hint.
    mkdir "$tmp/backends"
    echo 'not a shared object' >"$tmp/backends/gridsync-bogus.so"
    dirs="$tmp/backends"
    [ -n "$backend_dir" ] && [ -e "$backend_dir/gridsync-cuda_sm20.so" ] && dirs="$dirs:$backend_dir"
    GRIDSYNC_BACKEND_PATH=$dirs expect 3 "^gridsync $version \\(library\\)" info
    for pattern in "^  $tmp/backends \\(GRIDSYNC_BACKEND_PATH\\)\$" "^  $tmp/backends/gridsync-bogus.so: rejected: cannot load: " \
        '^hint: .*libcuda\.so\.1'; do
        GRIDSYNC_BACKEND_PATH=$dirs expect 3 "$pattern" info
    done
    if [ "$dirs" != "$tmp/backends" ]; then
        GRIDSYNC_BACKEND_PATH=$dirs expect 3 "gridsync-cuda_sm20\\.so: cuda_sm20, backend ABI 1\\.[0-9]+\$" info
        GRIDSYNC_BACKEND_PATH=$dirs json_check "'cuda_sm20' in [b.get('name') for b in o['backends']]" info --json
    fi
    GRIDSYNC_BACKEND_PATH=$dirs json_check \
        "o['library_version'] == '$version' and o['backends'][0]['file'].endswith('gridsync-bogus.so') and 'rejected' in o['backends'][0] and o['hint']" \
        info --json
    # one directory under two names (merged /usr: lib is a link to usr/lib) is listed once,
    # under the name that comes first, and so is each of its files
    mkdir -p "$tmp/root/usr/lib/gridsync"
    ln -s usr/lib "$tmp/root/lib"
    echo 'not a shared object' >"$tmp/root/usr/lib/gridsync/gridsync-bogus.so"
    GRIDSYNC_BACKEND_PATH=$tmp/root/lib/gridsync:$tmp/root/usr/lib/gridsync json_check \
        "[d['path'] for d in o['backend_directories']][0] == '$tmp/root/lib/gridsync' and not any(d['path'] == '$tmp/root/usr/lib/gridsync' for d in o['backend_directories']) and [b['file'] for b in o['backends']].count('$tmp/root/lib/gridsync/gridsync-bogus.so') == 1 and not any('/usr/lib/gridsync/' in b['file'] for b in o['backends'])" \
        info --json
    # strings with quotes, backslashes, control characters and bytes that are not UTF-8
    odd=$(printf '%s/q"b\\\\s\tt\001x\377' "$tmp")
    GRIDSYNC_BACKEND_PATH=$odd json_check \
        "o['GRIDSYNC_BACKEND_PATH'] == os.environb[b'GRIDSYNC_BACKEND_PATH'].decode('utf-8', 'replace') == o['backend_directories'][0]['path']" \
        info --json
fi
[ "$fails" = 0 ] && echo "ok" && exit 0
echo "$fails checks failed" >&2
exit 1

#!/bin/sh
# ABI guard: the library's ABI (libgridsync.so.1) and the backend plugin ABI (as a backend
# exports it: gridsync_backend_entry_v1 and every struct it reaches) against the baselines
# committed in abi/, with libabigail (abidw, abidiff). docs/ABI-policy.md has the rules.
#
#   scripts/ci-abi.sh            build, compare; exit 1 when a symbol or a type was removed
#                                or changed, 0 when nothing changed or there are additions only
#   scripts/ci-abi.sh --update   build and rewrite the baselines (a release, or a deliberate
#                                and reviewed change: see docs/ABI-policy.md)
#
# Passes: new functions (and variables) in a version node the baseline does not have (a
# new node; docs/ABI-policy.md); new enumerators that leave every existing one's value
# alone. Fails: a new symbol in a node the baseline has (a released node), and everything
# else abidiff sees, harmless or not by its own rules -- a removed symbol, a symbol moved to
# another version node, a parameter added, removed or retyped (int32_t -> uint32_t included), a
# struct member inserted, removed, moved or retyped, an enumerator renumbered or removed, a
# new SONAME. Appending a member to a struct that carries struct_size is compatible (the
# policy allows it in a minor release) but fails here on purpose: record it with --update
# in the same change, so that review sees it.
#
# Both sides are abidw dumps made the same way (the baseline then, this build now): only
# exported functions, only types declared in api/ (opaque ones stay opaque, CUDA's own
# types are left out), no paths or source locations.
#
# Environment: ABI_BUILD (build directory, default /tmp/gridsync-abi; reused when it
# exists), CUDA_ARCHS (default 90: one architecture keeps the backend's nvcc step short;
# the host-side ABI does not depend on it).
# Needs meson, ninja, a C compiler, python3, abidw/abidiff (abigail-tools; installed with
# apt-get when missing) and the CUDA toolkit's nvcc (not installed by this script).
set -eu

root=$(cd "$(dirname "$0")/.." && pwd)
build=${ABI_BUILD:-/tmp/gridsync-abi}
archs=${CUDA_ARCHS:-90}
mode=check
case "${1:-}" in
"") ;;
--update) mode=update ;;
*) echo "usage: scripts/ci-abi.sh [--update]" >&2; exit 2 ;;
esac
start=$(date +%s)

# shellcheck source=scripts/ci-tools.sh
. "$root/scripts/ci-tools.sh"
need meson:meson ninja:ninja-build cc:gcc python3:python3 abidiff:abigail-tools
need_nvcc

# ---- build (debug info describes the types; the optimisation level does not matter) --
echo "== building libgridsync and one backend in $build"
opts="-Dbuildtype=debugoptimized -Dtests=false -Dtool=false -Dbench=disabled -Dcuda-archs=$archs"
# shellcheck disable=SC2086
if [ -f "$build/build.ninja" ]; then
    meson setup --reconfigure "$build" "$root" $opts >"$build.setup.log" 2>&1
else
    rm -rf "$build"
    meson setup "$build" "$root" $opts >"$build.setup.log" 2>&1
fi || { cat "$build.setup.log" >&2; exit 1; }
lib=core/libgridsync.so.1.0.0
backend=backends/gridsync-cuda_sm20.so
ninja -C "$build" "$lib" "$backend" >"$build.build.log" 2>&1 || { tail -30 "$build.build.log" >&2; exit 1; }

# One (binary, baseline) per ABI.
set -- "$build/$lib" "$root/abi/libgridsync.so.1.abi" \
       "$build/$backend" "$root/abi/gridsync-backend-v1.abi"

# dump BINARY OUT: abidw's view, with nothing that changes when the ABI did not: no paths
# of the build or the checkout (translation units named from the source root), no source
# locations (line numbers move), no architecture (the LP64 layouts are the same on x86_64
# and aarch64), type ids from hashes.
dump() {
    abidw --headers-dir "$root/api" --drop-private-types --exported-interfaces-only \
          --no-corpus-path --no-comp-dir-path --no-show-locs --no-architecture \
          --type-id-style hash --out-file "$2.tmp" "$1"
    sed -E "s#path='([^']*/)?((core|backends)/[^']*)'#path='\\2'#" "$2.tmp" >"$2"
    rm -f "$2.tmp"
}

if [ "$mode" = update ]; then
    while [ $# -gt 0 ]; do
        dump "$1" "$2"
        echo "   wrote ${2#"$root"/} from ${1#"$build"/}"
        shift 2
    done
    echo "== baselines updated ($(($(date +%s) - start)) s): review the diff of abi/"
    exit 0
fi

# ---- compare -------------------------------------------------------------------------
# new_symbols_in_released_nodes BASELINE NOW: lists (and returns 1 for) each symbol that
# NOW has and BASELINE has not, whose version node BASELINE already has. The baseline is the
# last release, so its nodes are released and closed: a new function belongs in a new node
# (docs/ABI-policy.md). abidiff calls such a symbol an allowed addition; this catches, for
# example, a new gs_ function that the version script's GRIDSYNC_1.0 wildcard takes because
# the new node does not name it. Unversioned symbols (the backend entry point) are not checked.
new_symbols_in_released_nodes() {
    python3 - "$1" "$2" <<'PY'
import sys
import xml.etree.ElementTree as ET

def symbols(path):
    root = ET.parse(path).getroot()
    return {(s.get("name"), s.get("version") or "")
            for tag in ("elf-function-symbols", "elf-variable-symbols")
            for section in root.iter(tag) for s in section.iter("elf-symbol")}

base, now = symbols(sys.argv[1]), symbols(sys.argv[2])
base_names = {n for n, _ in base}
released = {v for _, v in base if v}
bad = sorted((n, v) for n, v in now if n not in base_names and v in released)
for n, v in bad:
    print(f"   not allowed: new symbol {n}@{v}: node {v} is in the baseline, i.e. released and "
          f"closed; name {n} in a new node of api/libgridsync.map")
sys.exit(1 if bad else 0)
PY
}

# only_enum_appends REPORT: true when every change in abidiff's leaf report (made with
# --harmless --no-added-syms) is an enum that gained enumerators and changed no other.
only_enum_appends() {
    awk '
        /^Leaf changes summary|^Changed leaf types summary/ { next }
        /^Removed\/Changed\/Added (functions|variables) summary/ {
            if ($0 !~ /: 0 Removed, 0 Changed/) { print "   not allowed: " $0; bad = 1 }
            next
        }
        /^$/ { next }
        /^'\''enum [^'\'']*'\'' changed:$/ { in_enum = 1; next }
        in_enum && /^  type size hasn'\''t changed$/ { next }
        in_enum && /^  [0-9]+ enumerator insertions?:$/ { next }
        in_enum && /^    '\''[^'\'']*'\'' value '\''[^'\'']*'\''$/ { next }
        { in_enum = 0; if (!bad) print "   not an enumerator append: " $0; bad = 1 }
        END { exit bad }' "$1"
}

# abidiff's exit status is a bit mask: 1 error, 2 usage, 4 some change, 8 an incompatible
# change (a removed symbol). The report shows everything, additions included; the verdict
# comes from a run without the additions (--no-added-syms) and with abidiff's "harmless"
# changes shown (--harmless), since a signedness change or a renamed typedef is harmless
# to abidiff but not to this policy.
status=0
while [ $# -gt 0 ]; do
    bin=$1 base=$2
    shift 2
    name=${base#"$root"/}
    if [ ! -f "$base" ]; then
        echo "FAIL: no baseline $name: scripts/ci-abi.sh --update writes it" >&2
        status=1
        continue
    fi
    now=$build/$(basename "$base")
    dump "$bin" "$now"
    abidiff --harmless --leaf-changes-only "$base" "$now" >"$build/report.txt" 2>&1 && rc=0 || rc=$?
    abidiff --harmless --leaf-changes-only --no-added-syms "$base" "$now" >"$build/verdict.txt" 2>&1 &&
        vrc=0 || vrc=$?
    if [ $((rc & 3)) -ne 0 ] || [ $((vrc & 3)) -ne 0 ]; then
        echo "FAIL: $name: abidiff could not compare (exit status $rc):" >&2
        cat "$build/report.txt" >&2
        status=1
    elif [ "$vrc" -ne 0 ] && { [ $((vrc & 8)) -ne 0 ] || ! only_enum_appends "$build/verdict.txt" >"$build/why.txt"; }; then
        echo "FAIL: $name: ABI removed or changed (abidiff exit status $vrc):" >&2
        sed 's/^/   /' "$build/report.txt" >&2
        [ -s "$build/why.txt" ] && cat "$build/why.txt" >&2
        status=1
    elif ! new_symbols_in_released_nodes "$base" "$now" >"$build/why.txt"; then
        echo "FAIL: $name: new symbols in a released version node:" >&2
        sed 's/^/   /' "$build/report.txt" >&2
        cat "$build/why.txt" >&2
        status=1
    elif [ "$rc" -ne 0 ]; then
        echo "ok: $name: additions only (allowed; --update records them at the next release):"
        sed 's/^/   /' "$build/report.txt"
    else
        echo "ok: $name: no change"
    fi
done
echo "== ABI check: $([ $status = 0 ] && echo passed || echo FAILED) ($(($(date +%s) - start)) s)"
exit $status

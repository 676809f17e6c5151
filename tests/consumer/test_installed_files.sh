#!/bin/sh
# installed_files.sh's rules on a planted tree: an install as meson lays it out, with the
# Python package byte-compiled as meson 1.2 and newer do, must show no stray file; each
# planted stray file (a test program, an archive, a .pyc without its module, a .pyc outside
# __pycache__ or without the interpreter's tag, a file in a subdirectory of __pycache__)
# must be reported, and nothing else.
#
#   test_installed_files.sh SOURCE_DIR
set -u
src=$1
# shellcheck source=tests/consumer/installed_files.sh
. "$src/tests/consumer/installed_files.sh"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/gridsync-installed.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT HUP INT TERM
stage=$tmp/stage
usr=$stage/usr
lib=$usr/lib/x86_64-linux-gnu
py=$usr/lib/python3/dist-packages/gridsync
py2=$usr/local/lib/python3.12/site-packages/gridsync   # a pip-style prefix

plant() {
    for f; do
        mkdir -p "$(dirname "$f")"
        : >"$f"
    done
}

# What an install holds.
plant "$lib/libgridsync.so.1.0.0" "$lib/gridsync/gridsync-cuda_sm20.so" "$lib/gridsync/gridsync-cuda_sm11_compat.so" \
    "$usr/include/gridsync/gridsync.h" "$usr/include/gridsync/gridsync_device.cuh" \
    "$lib/pkgconfig/gridsync.pc" "$lib/cmake/gridsync/gridsyncConfig.cmake" \
    "$lib/cmake/gridsync/gridsyncConfigVersion.cmake" "$usr/bin/gridsync" "$usr/share/man/man1/gridsync.1" \
    "$usr/share/bash-completion/completions/gridsync"
for m in __init__ __main__ _types; do
    plant "$py/$m.py" "$py/__pycache__/$m.cpython-312.pyc" "$py/__pycache__/$m.cpython-312.opt-1.pyc" \
        "$py/__pycache__/$m.cpython-312.opt-2.pyc" "$py2/$m.py" "$py2/__pycache__/$m.cpython-313.pyc"
done
ln -s libgridsync.so.1.0.0 "$lib/libgridsync.so.1"

fails=0
got=$(stray_files "$stage")
if [ -n "$got" ]; then
    echo "FAIL: a clean install (byte-compiled Python included) reported stray files:" >&2
    printf '%s\n' "$got" >&2
    fails=1
fi

# Each stray file alone, then all together: each must be reported, and only it.
strays="$usr/bin/test_unit
$lib/libgridsync.a
$lib/libcuda.so.1
$usr/share/doc/gridsync/notes.txt
$py/__pycache__/_gone.cpython-312.pyc
$py/__pycache__/_gone.cpython-312.opt-1.pyc
$py/_types.cpython-312.pyc
$py/_types.pyc
$py/__pycache__/_types.pyc
$py/__pycache__/_types.cpython-.pyc
$py/__pycache__/_types.cpython-312.opt-x.pyc
$py/__pycache__/_types.cpython-312.txt
$py/__pycache__/sub/_types.cpython-312.pyc
$py/__pycache__/.cpython-312.pyc
$usr/lib/python3/dist-packages/other/__pycache__/x.cpython-312.pyc"
checked=0
while IFS= read -r s; do
    plant "$s"
    got=$(stray_files "$stage")
    if [ "$got" != "$s" ]; then
        echo "FAIL: with $s planted, stray_files reported:" >&2
        printf '%s\n' "${got:-(nothing)}" >&2
        fails=1
    fi
    rm -f "$s"
    checked=$((checked + 1))
done <<EOF
$strays
EOF
while IFS= read -r s; do plant "$s"; done <<EOF
$strays
EOF
got=$(stray_files "$stage" | sort)
want=$(printf '%s\n' "$strays" | sort)
if [ "$got" != "$want" ]; then
    echo "FAIL: with every stray file planted, stray_files reported:" >&2
    printf '%s\n' "$got" >&2
    fails=1
fi

[ "$fails" = 0 ] || exit 1
echo "ok: a byte-compiled install is clean; $checked planted stray files each reported alone and together"

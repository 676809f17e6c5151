#!/bin/sh
# consumer suite: what a distribution and a user of the installed library see.
#   1. `meson install --destdir` of this build into a temporary directory; the layout is
#      checked (library, links, headers, backends, .pc, command, man page);
#   2. tests/consumer/consumer.c is built against it with pkg-config alone
#      (PKG_CONFIG_LIBDIR and PKG_CONFIG_SYSROOT_DIR point into the staged tree), and the
#      flags must be -I, -L and -lgridsync only: nothing CUDA-specific, no rpath;
#   3. it runs as the machine is: without a CUDA driver it must report GS_ERROR_NO_DRIVER
#      as documented (exit 3); with one, reduce random data and match the host (exit 0);
#   4. with the fake driver of tests/fake (a device of compute capability 9.0 that loads
#      the real backends' fatbins but runs nothing), the context must take its backend
#      from the staged tree, found next to the loaded libgridsync (no
#      GRIDSYNC_BACKEND_PATH), and the GRIDSYNC_DEBUG trace must show that directory;
#      the CMake consumer and the C++ example of examples/cmake are built with
#      find_package(gridsync) against the staged tree too;
#   5. the staged tree is moved elsewhere (the old path gone): the same binary, one
#      rebuilt with pkg-config against the new place, and the installed gridsync command
#      must take the backends from the new place (on a GPU machine the consumer also
#      reduces correctly from there).
#
#   test_consumer.sh BUILD_DIR SOURCE_DIR FAKE_DRIVER_DIR MESON VERSION -- CC [CC ARGS...]
set -u
build=$1 src=$2 fake=$3 meson=$4 version=$5
shift 5
[ "${1:-}" = "--" ] && shift
# "$@" is now the C compiler (and sanitizer flags when the build has them).

fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }
note() { echo "-- $*"; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/gridsync-consumer.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT HUP INT TERM

# Nothing from the caller's environment may steer the loader or pkg-config.
unset GRIDSYNC_BACKEND GRIDSYNC_BACKEND_PATH GRIDSYNC_DEBUG PKG_CONFIG_PATH DESTDIR
# meson test puts the build tree's library directories (the fake driver's among them) on
# LD_LIBRARY_PATH; what the caller had besides (a driver in a non-standard place) is kept
# for the runs on the real driver.
sys_ldp=
oldifs=$IFS
IFS=:
for d in ${LD_LIBRARY_PATH:-}; do
    case $d in "$build"/* | "$build" | "") ;; *) sys_ldp=$sys_ldp:$d ;; esac
done
IFS=$oldifs
unset LD_LIBRARY_PATH
# A machine with a real driver reduces for real; one without must say so.
have_driver=0
if ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1 '; then
    have_driver=1
fi
IFS=:
for d in $sys_ldp; do
    [ -n "$d" ] && [ -e "$d/libcuda.so.1" ] && have_driver=1
done
IFS=$oldifs

# ---- 1. install ----------------------------------------------------------------------
stage=$tmp/stage
note "meson install --destdir $stage"
if ! "$meson" install -C "$build" --no-rebuild --quiet --destdir "$stage" >"$tmp/install.log" 2>&1; then
    cat "$tmp/install.log" >&2
    echo "FAIL: meson install" >&2
    exit 1
fi

# pcfile STAGE: the one gridsync.pc under STAGE (whatever prefix and libdir are).
pcfile() {
    n=$(find "$1" -path '*/pkgconfig/gridsync.pc' | wc -l)
    [ "$n" = 1 ] || { echo "FAIL: $n gridsync.pc files under $1" >&2; return 1; }
    find "$1" -path '*/pkgconfig/gridsync.pc'
}
# use_stage STAGE: pkg-config sees that tree only; sets libdir, backenddir, includedir.
use_stage() {
    pc=$(pcfile "$1") || exit 1
    PKG_CONFIG_LIBDIR=$(dirname "$pc")
    PKG_CONFIG_SYSROOT_DIR=$1
    export PKG_CONFIG_LIBDIR PKG_CONFIG_SYSROOT_DIR
    # pkgconf prefixes variables with the sysroot, pkg-config 0.29 does not.
    libdir=$(pkg-config --variable=libdir gridsync)
    backenddir=$(pkg-config --variable=backenddir gridsync)
    includedir=$(pkg-config --variable=includedir gridsync)
    case $libdir in "$1"/*) ;; *) libdir=$1$libdir ;; esac
    case $backenddir in "$1"/*) ;; *) backenddir=$1$backenddir ;; esac
    case $includedir in "$1"/*) ;; *) includedir=$1$includedir ;; esac
}
use_stage "$stage"
note "libdir $libdir"

# ---- layout --------------------------------------------------------------------------
[ "$(pkg-config --modversion gridsync)" = "$version" ] ||
    fail "pkg-config --modversion: $(pkg-config --modversion gridsync), want $version"
# backend_abi is what third-party backends build against: the installed backend header's
# GS_BACKEND_ABI_MAJOR.GS_BACKEND_ABI_MINOR (docs/ABI-policy.md: a new minor bumps both).
hdr=$includedir/gridsync/gridsync_backend.h
abi_major=$(sed -n 's/^#define GS_BACKEND_ABI_MAJOR \([0-9][0-9]*\).*/\1/p' "$hdr" 2>/dev/null)
abi_minor=$(sed -n 's/^#define GS_BACKEND_ABI_MINOR \([0-9][0-9]*\).*/\1/p' "$hdr" 2>/dev/null)
if [ -z "$abi_major" ] || [ -z "$abi_minor" ]; then
    fail "no GS_BACKEND_ABI_MAJOR/MINOR in the installed $hdr"
elif [ "$(pkg-config --variable=backend_abi gridsync)" != "$abi_major.$abi_minor" ]; then
    fail "pkg-config's backend_abi is $(pkg-config --variable=backend_abi gridsync), but the installed gridsync_backend.h says $abi_major.$abi_minor"
fi
[ "$backenddir" = "$libdir/gridsync" ] || fail "backenddir $backenddir is not $libdir/gridsync"
[ -f "$libdir/libgridsync.so.1.0.0" ] || fail "no libgridsync.so.1.0.0 in $libdir"
[ "$(readlink "$libdir/libgridsync.so.1")" = libgridsync.so.1.0.0 ] || fail "libgridsync.so.1 is not a link to libgridsync.so.1.0.0"
[ "$(readlink "$libdir/libgridsync.so")" = libgridsync.so.1 ] || fail "libgridsync.so is not a link to libgridsync.so.1"
for b in cuda_sm20 cuda_sm11_compat; do
    [ -f "$backenddir/gridsync-$b.so" ] || fail "no gridsync-$b.so in $backenddir"
done
for h in gridsync.h gridsync_backend.h gridsync_backend_v1.h gridsync_backend_v1_1.h gridsync_backend_v1_2.h \
         gridsync_backend_v1_3.h gridsync_device.cuh; do
    [ -f "$includedir/gridsync/$h" ] || fail "no $h in $includedir/gridsync"
done
root=${libdir%/lib*}   # the prefix inside the stage
tool=$(find "$stage" -path '*/bin/gridsync' -type f)
if [ -x "$build/tools/gridsync" ]; then
    [ -n "$tool" ] || fail "the gridsync command is not installed in a bin directory"
    [ -f "$root/share/man/man1/gridsync.1" ] || fail "no man page at $root/share/man/man1/gridsync.1"
    [ -f "$root/share/bash-completion/completions/gridsync" ] ||
        fail "no bash completion at $root/share/bash-completion/completions/gridsync"
fi
# Nothing else: no test programs, no fake driver, no static archives. (The Python package,
# -Dpython, is its modules alone, byte-compiled or not: installed_files.sh has the rules.)
# shellcheck source=tests/consumer/installed_files.sh
. "$src/tests/consumer/installed_files.sh"
extra=$(stray_files "$stage")
[ -z "$extra" ] || fail "unexpected files installed: $extra"

# ---- 2. build with pkg-config only -----------------------------------------------------
flags=$(pkg-config --cflags --libs gridsync) || { fail "pkg-config --cflags --libs gridsync"; flags=; }
note "pkg-config --cflags --libs gridsync: $flags"
for f in $flags; do
    case $f in
    -I"$includedir" | -L"$libdir" | -lgridsync) ;;
    *) fail "unexpected flag '$f' from pkg-config (only -I, -L and -lgridsync belong there)" ;;
    esac
done
case $(printf '%s' "$flags" | tr '[:upper:]' '[:lower:]') in *cuda*) fail "pkg-config mentions CUDA: $flags" ;; esac

# build OUTPUT: compiles consumer.c against the tree use_stage chose.
build_consumer() {
    # shellcheck disable=SC2046,SC2086
    if ! "$@" -std=c11 -Wall -Wextra -Werror -o "$out" "$src/tests/consumer/consumer.c" \
            $(pkg-config --cflags --libs gridsync) >"$tmp/cc.log" 2>&1; then
        cat "$tmp/cc.log" >&2
        return 1
    fi
}
out=$tmp/consumer
build_consumer "$@" || { echo "FAIL: building consumer.c with pkg-config's flags" >&2; exit 1; }
if readelf -d "$out" 2>/dev/null | grep -Eq 'RPATH|RUNPATH'; then
    fail "the consumer has an rpath: $(readelf -d "$out" | grep -E 'RPATH|RUNPATH')"
fi

# run EXPECTED-STATUS LOG LD_LIBRARY_PATH DEBUG [ARGS...]: runs the consumer ($exe),
# with GRIDSYNC_DEBUG=1 when DEBUG is 1.
run() {
    want=$1 log=$2 ldp=$3 debug=$4
    shift 4
    if [ "$debug" = 1 ]; then
        LD_LIBRARY_PATH=$ldp GRIDSYNC_DEBUG=1 "$exe" "$@" >"$log" 2>&1
    else
        LD_LIBRARY_PATH=$ldp "$exe" "$@" >"$log" 2>&1
    fi
    rc=$?
    sed 's/^/   /' "$log"
    [ "$rc" = "$want" ] || fail "consumer $* (LD_LIBRARY_PATH=$ldp): exit status $rc, want $want"
}
exe=$out

# ---- 3. as the machine is ------------------------------------------------------------
if [ "$have_driver" = 1 ]; then
    note "a CUDA driver is installed: reducing on device 0"
    run 0 "$tmp/real.log" "$libdir$sys_ldp" 0
    grep -q "from $backenddir/gridsync-" "$tmp/real.log" || fail "the backend did not come from $backenddir"
else
    note "no CUDA driver: expecting GS_ERROR_NO_DRIVER"
    run 3 "$tmp/nodriver.log" "$libdir$sys_ldp" 0
    # (the detail message without the status's words again, or, before that was fixed, with)
    grep -Eq '^consumer: gs_context_create: GS_ERROR_NO_DRIVER: no usable CUDA driver: (no CUDA driver: )?dlopen.*libcuda\.so\.1' \
        "$tmp/nodriver.log" || fail "the no-driver report is not the documented one"
fi

# ---- 4. the fake driver: backends found next to the installed library ------------------
# check_backends LOG DIR: the context's backend is cuda_sm20 from DIR.
check_backends() {
    grep -q "^consumer: backend cuda_sm20 from $2/gridsync-cuda_sm20.so\$" "$1" ||
        fail "the backend did not come from $2 (see above)"
}
if [ -f "$fake/libcuda.so.1" ]; then
    note "fake driver: the backend must come from $backenddir"
    run 0 "$tmp/fake.log" "$libdir:$fake" 1 --context-only
    check_backends "$tmp/fake.log" "$backenddir"
    grep -q "loader: search directory [0-9]*: $backenddir\$" "$tmp/fake.log" ||
        fail "the GRIDSYNC_DEBUG trace does not list $backenddir as a search directory"
else
    note "no fake driver in $fake: the fake-driver checks are skipped"
fi

# ---- 4b. CMake: find_package(gridsync) and the imported target ---------------------------
# build_cmake OUTPUT PREFIX: consumer.c built by CMake against the config under PREFIX, with
# the compiler this suite was given; checks the GRIDSYNC_BACKEND_DIR it reports.
build_cmake() {
    bdir=$tmp/cmake-build-$(basename "$1")
    rm -rf "$bdir"
    # shellcheck disable=SC2086
    if cmake -S "$src/tests/consumer/cmake" -B "$bdir" -DCMAKE_PREFIX_PATH="$2" \
            -DCMAKE_C_COMPILER="$cmake_cc" -DCMAKE_C_FLAGS="$cmake_cflags -Wall -Wextra -Werror" \
            -DCONSUMER_SOURCE="$src/tests/consumer/consumer.c" >"$tmp/cmake.log" 2>&1 &&
            cmake --build "$bdir" >>"$tmp/cmake.log" 2>&1 && cp "$bdir/consumer_cmake" "$1"; then
        grep -qF "gridsync $version: backends in $backenddir" "$tmp/cmake.log" ||
            fail "find_package(gridsync): GRIDSYNC_BACKEND_DIR is not $backenddir ($(grep 'backends in' "$tmp/cmake.log"))"
        return 0
    fi
    sed 's/^/   /' "$tmp/cmake.log"
    return 1
}
cmake_cc=$1
cmake_cflags=$(shift; echo "$*")
if command -v cmake >/dev/null 2>&1 && [ -n "$(find "$stage" -name gridsyncConfig.cmake)" ]; then
    note "CMake: find_package(gridsync) against the installed tree"
    if build_cmake "$tmp/consumer-cmake" "$root"; then
        exe=$tmp/consumer-cmake
        if [ "$have_driver" = 1 ]; then
            run 0 "$tmp/cmake-real.log" "$libdir$sys_ldp" 0
        elif [ -f "$fake/libcuda.so.1" ]; then
            run 0 "$tmp/cmake-fake.log" "$libdir:$fake" 0 --context-only
            check_backends "$tmp/cmake-fake.log" "$backenddir"
        else
            run 3 "$tmp/cmake-nodriver.log" "$libdir$sys_ldp" 0
        fi
        exe=$tmp/consumer
    else
        fail "building consumer.c with CMake's find_package(gridsync)"
    fi
else
    note "no cmake, or no gridsyncConfig.cmake installed: the CMake consumer is skipped"
fi

# ---- 4c. examples/cmake: the C++ example project, as its README-style header says ---------
# It needs the CUDA runtime too (FindCUDAToolkit: nvcc on PATH, /usr/local/cuda, or
# CUDAToolkit_ROOT); the runtime cannot run on the fake driver, so it runs as the machine
# is: with a driver and a GPU it must reduce right (0), without a driver it must say so
# (77, as the gpu suite's programs do).
if command -v cmake >/dev/null 2>&1 && [ -n "$(find "$stage" -name gridsyncConfig.cmake)" ]; then
    note "CMake: examples/cmake against the installed tree"
    ebdir=$tmp/cmake-example
    # shellcheck disable=SC2086
    if cmake -S "$src/examples/cmake" -B "$ebdir" -DCMAKE_PREFIX_PATH="$root" \
            -DCMAKE_CXX_FLAGS="$cmake_cflags -Wall -Wextra -Werror" >"$tmp/cmake-example.log" 2>&1 &&
            cmake --build "$ebdir" >>"$tmp/cmake-example.log" 2>&1; then
        LD_LIBRARY_PATH=$libdir$sys_ldp "$ebdir/reduce_cxx" >"$tmp/example.log" 2>&1
        rc=$?
        sed 's/^/   /' "$tmp/example.log"
        if [ "$have_driver" = 1 ]; then
            [ "$rc" = 0 ] || fail "examples/cmake's reduce_cxx with a CUDA driver: exit status $rc, want 0"
        else
            [ "$rc" = 77 ] || fail "examples/cmake's reduce_cxx without a CUDA driver: exit status $rc, want 77"
        fi
    else
        sed 's/^/   /' "$tmp/cmake-example.log"
        fail "building examples/cmake with find_package(gridsync)"
    fi
fi

# ---- 5. relocation -------------------------------------------------------------------
moved=$tmp/elsewhere/deeper/tree
mkdir -p "$(dirname "$moved")"
mv "$stage" "$moved"
[ ! -e "$stage" ] || fail "$stage still exists after the move"
old_backenddir=$backenddir
use_stage "$moved"
note "moved to $moved: libdir $libdir"
if [ -f "$fake/libcuda.so.1" ]; then
    run 0 "$tmp/moved.log" "$libdir:$fake" 1 --context-only
    check_backends "$tmp/moved.log" "$backenddir"
    if grep -q "$old_backenddir" "$tmp/moved.log"; then
        fail "after the move, the trace still names $old_backenddir"
    fi
    # Rebuilt against the moved tree with pkg-config (the sysroot moved with it).
    out=$tmp/consumer-moved
    if build_consumer "$@"; then
        exe=$out
        run 0 "$tmp/moved2.log" "$libdir:$fake" 0 --context-only
        check_backends "$tmp/moved2.log" "$backenddir"
        exe=$tmp/consumer
    else
        fail "building consumer.c against the moved tree"
    fi
    # find_package against the moved tree: the config's paths are relative to itself.
    if command -v cmake >/dev/null 2>&1 && [ -n "$(find "$moved" -name gridsyncConfig.cmake)" ]; then
        if build_cmake "$tmp/consumer-cmake-moved" "${libdir%/lib*}"; then
            exe=$tmp/consumer-cmake-moved
            run 0 "$tmp/cmake-moved.log" "$libdir:$fake" 0 --context-only
            check_backends "$tmp/cmake-moved.log" "$backenddir"
            exe=$tmp/consumer
        else
            fail "building consumer.c with find_package(gridsync) against the moved tree"
        fi
    fi
    # The installed command, from the moved tree.
    tool=$(find "$moved" -path '*/bin/gridsync' -type f)
    if [ -n "$tool" ]; then
        LD_LIBRARY_PATH=$libdir:$fake "$tool" info >"$tmp/tool.log" 2>&1
        rc=$?
        sed 's/^/   /' "$tmp/tool.log"
        [ "$rc" = 0 ] || fail "gridsync info from the moved tree (fake driver): exit status $rc"
        grep -q "$backenddir/gridsync-cuda_sm20.so" "$tmp/tool.log" ||
            fail "gridsync info from the moved tree does not name $backenddir/gridsync-cuda_sm20.so"
    fi
fi
if [ "$have_driver" = 1 ]; then
    note "moved tree on the real driver"
    run 0 "$tmp/moved-real.log" "$libdir$sys_ldp" 0
    grep -q "from $backenddir/gridsync-" "$tmp/moved-real.log" || fail "the backend did not come from $backenddir"
fi

if [ "$fails" = 0 ]; then
    echo "ok"
    exit 0
fi
echo "$fails checks failed" >&2
exit 1
